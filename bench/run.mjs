// The main job (make run, scripts/run): the real postal-code list loaded
// into SQLite, the lookup server started on it, random-key lookups at a
// few concurrencies, persistent and per-request, and their table. The
// server is stopped at the end, whatever happens.
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { run, background, runMain } from './lib/run.mjs';
import { waitFor } from './lib/http.mjs';
import { loadgen } from './lib/clients.mjs';
import { table } from './lib/table.mjs';
import { rateRun, ERROR_KINDS } from './lib/goodput.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);
const usage = 'usage: scripts/run [--duration S] [--concurrency "1 10 100"] (scripts/run --help)';
let args;
try {
  args = parseArgs({ options: { duration: { type: 'string', default: '5' },
                                concurrency: { type: 'string', default: '1 10 100' } } }).values;
} catch (e) {
  console.error(`scripts/run: ${e.message}\n${usage}`);
  process.exit(2);
}
const seconds = Number(args.duration);
const levels = args.concurrency.trim().split(/[\s,]+/).map(Number);
if (!(seconds > 0 && seconds <= 3600) || !levels.length || !levels.every(c => Number.isInteger(c) && c >= 1 && c <= 10000)) {
  console.error(`scripts/run: --duration takes seconds (0-3600], --concurrency whole numbers 1-10000\n${usage}`);
  process.exit(2);
}
const build = process.env.ZB_BUILD || 'build';
const data = process.env.ZB_DATA || 'build';
const port = Number(process.env.ZB_RUN_PORT || 18180);
const ctx = { bin: name => path.join(build, 'bin', name), logFile: null, log: msg => console.error(msg) };

async function main() {
  const dataset = path.join(data, 'ken_all.csv'), keys = path.join(data, 'ken_all.keys');
  console.log(`== load: ${dataset} into SQLite (${build}/zipbench.sqlite)`);
  // The loader's own report and progress, as it prints them.
  const ld = spawnSync(ctx.bin('loader'), ['--backend', 'sqlite', '--mode', 'bulk', '--dataset', dataset], { stdio: 'inherit' });
  if (ld.status !== 0) return 1;

  const pc = await run('scripts/port-check', ['the lookup server', String(port), 'ZB_RUN_PORT']);
  if (pc.code !== 0) { process.stderr.write(pc.stderr); return 1; }
  const log = path.join(build, 'run-server.log');
  const srv = background(ctx.bin('server'), ['--backends', 'sqlite', '--port', String(port)], { log });
  if (!(await waitFor(port, '/health', { alive: srv.alive }))) { console.error(`scripts/run: the server did not start: see ${log}`); return 1; }

  console.log(`== lookups: random keys from ${keys}, keep-alive, ${seconds} s each\n`);
  const rows = [];
  let failed = 0;
  for (const persistent of [1, 0]) for (const c of levels) {
    const r = await loadgen(ctx, { url: `http://127.0.0.1:${port}/zip/sqlite/{key}?persistent=${persistent}`,
                                   c, seconds, keys, seed: 1 });
    if (!r) { failed++; continue; }
    const lat = r.json.latency_us;
    const us = x => Math.round(x);
    // the bench's one rate rule: answered lookups per second, errors apart
    const g = rateRun(r);
    const errs = ERROR_KINDS.filter(([k]) => g.errors[k]).map(([k, label]) => `${label} ${g.errors[k]}`).join(', ');
    rows.push([persistent ? 'persistent' : 'per-request', c, g.value.toFixed(0), us(lat.p50), us(lat.p99), us(lat.max), errs || '0']);
  }
  console.log(table(['connection', 'c', 'answered req/s', 'p50 µs', 'p99 µs', 'max µs', 'errors'], rows, 'lrrrrrl'));
  await srv.stop();
  return failed ? 1 : 0;
}

await runMain('scripts/run', main);
