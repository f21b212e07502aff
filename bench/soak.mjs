// The soak's run and verdict (scripts/soak builds the programs and runs
// this under scripts/with-servers): the ASan+UBSan server serves mixed
// lookups on every backend for SOAK_SECONDS; then it must show zero errors,
// zero sanitizer reports, a clean exit and end RSS within 10% of warm.
import fs from 'node:fs';
import path from 'node:path';
import { run, runJSON, background, runMain, sleep } from './lib/run.mjs';
import { getJSON, waitFor } from './lib/http.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
process.chdir(root);
const env = process.env;
const secs = Number(env.SOAK_SECONDS || 300);
const warm = Number(env.SOAK_WARMUP || 30);
const c = Number(env.SOAK_C || 25);
const port = Number(env.ZB_SOAK_PORT || 18095);
const out = 'build/soak';
const asanServer = 'build/asan/bin/server';
const backends = ['sqlite', 'pg', 'innodb', 'myisam'];
const sets = ['--set', `sqlite.path=${out}/soak.sqlite`, '--set', 'sqlite.table=zt_soak', '--set', 'pg.table=zt_soak',
              '--set', 'innodb.table=zt_soak_innodb', '--set', 'myisam.table=zt_soak_myisam'];
const say = msg => console.log(`soak: ${msg}`);

// The server's resident set in KiB (/proc/PID/status VmRSS).
function rss(pid) {
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  return m ? Number(m[1]) : NaN;
}

async function main() {
  fs.mkdirSync(out, { recursive: true });
  for (const f of fs.readdirSync(out))
    if (f.startsWith('asan.') || f.startsWith('lg-') || f === 'rss.txt') fs.rmSync(path.join(out, f));

  if (!env.SOAK_SKIP_LOAD)
    for (const b of backends) {
      say(`loading build/ken_all.csv into ${b}`);
      const r = await run('build/bin/loader', ['-q', '--backend', b, '--mode', 'bulk', '--dataset', 'build/ken_all.csv', ...sets]);
      if (r.code !== 0) throw new Error(`the load into ${b} failed: ${r.stderr.trim()}`);
    }

  say(`starting the ASan server on :${port}`);
  const pc = await run('scripts/port-check', ["the soak's server", String(port), 'ZB_SOAK_PORT']);
  if (pc.code !== 0) throw new Error(pc.stderr.trim());
  const san = `log_path=${path.join(root, out, 'asan')}`;
  const srv = background(asanServer, ['--port', String(port), ...sets], {
    log: path.join(out, 'server.log'),
    env: { ASAN_OPTIONS: `detect_leaks=1:${san}:halt_on_error=1`, UBSAN_OPTIONS: `print_stacktrace=1:${san}` },
  });
  // Up, and every backend's keys loaded (/health answers 200 then).
  if (!(await waitFor(port, '/health', { timeoutS: 60, alive: srv.alive })))
    throw new Error(`the server did not come up: see ${out}/server.log`);

  say(`${secs} s of loadgen -k -c ${c} on each of ${backends.join(' ')}`);
  const loads = backends.map(b => runJSON('build/bin/loadgen', ['-q', '-k', '-c', String(c), '-t', String(secs), '-s', '10',
    '--keys', 'build/ken_all.keys', '--miss', '0.05', '--seed', '7', '--json', `http://127.0.0.1:${port}/zip/${b}/{key}`],
    { timeoutS: secs + 120 }));
  const samples = [];
  const sample = t => { samples.push([t, rss(srv.pid)]); fs.appendFileSync(path.join(out, 'rss.txt'), `${t} ${samples.at(-1)[1]}\n`); };
  await sleep(warm * 1000);
  sample(warm);
  say(`RSS after ${warm} s warm-up: ${samples[0][1]} KiB`);
  for (let t = warm + 30; t < secs; t += 30) {
    await sleep(30000);
    sample(t);
  }
  const results = await Promise.all(loads);
  sample(secs);
  const stats = await getJSON(port, '/stats');
  fs.writeFileSync(path.join(out, 'stats.json'), JSON.stringify(stats));
  const exit = await srv.stop();

  const lines = [`soak: ${secs} s, ${backends.length} loadgens -k -c ${c} (${backends.length}x${c} connections), ` +
                 `keys build/ken_all.keys, 5% misses, ASan+UBSan server (${asanServer})`];
  let total = 0, errors = 0, failed = 0, lgExit = 0;
  backends.forEach((b, i) => {
    const lg = results[i].json[0] || {};
    if (results[i].code !== 0 || !results[i].json[0]) lgExit = 1;
    const st = (stats?.backends || []).find(x => x.name === b) || {};
    const e4other = (st.errors_4xx ?? 0) - (st.not_found ?? 0);
    total += lg.completed || 0;
    failed += lg.failed || 0;
    errors += (lg.failed || 0) + (st.errors_5xx ?? 0) + e4other;
    lines.push(`soak: ${b.padEnd(7)} ${String(lg.completed ?? 0).padStart(9)} requests ${(lg.rps ?? 0).toFixed(0).padStart(8)} req/s  ` +
               `failed ${lg.failed ?? 0}  5xx ${st.errors_5xx ?? '?'}  4xx other than 404 ${e4other}  (404 misses ${st.not_found ?? '?'})`);
  });
  if (!stats) { errors++; lines.push('soak: /stats did not answer'); }
  const reports = fs.readdirSync(out).filter(f => f.startsWith('asan.')).map(f => fs.readFileSync(path.join(out, f), 'utf8'))
    .join('\n').match(/ERROR: (Address|Leak)Sanitizer|runtime error/g)?.length ?? 0;
  const ratio = samples.at(-1)[1] / samples[0][1];
  const serverLog = fs.readFileSync(path.join(out, 'server.log'), 'utf8').trim().split('\n').pop();
  lines.push(`soak: total ${total} requests, ${errors} errors (${failed} failed), loadgen exit ${lgExit}`,
    `soak: RSS after warm-up ${samples[0][1]} KiB, at the end ${samples.at(-1)[1]} KiB, ratio ${ratio.toFixed(3)} ` +
    `(samples s:KiB: ${samples.map(([t, k]) => `${t}:${k}`).join(' ')})`,
    `soak: server exit ${exit.code ?? exit.signal}, sanitizer reports ${reports}${reports ? ` (see ${out}/asan.*)` : ''}`,
    `soak: server log: ${serverLog}`);
  fs.writeFileSync(path.join(out, 'summary.txt'), lines.join('\n') + '\n');
  console.log(lines.join('\n'));
  const ok = errors === 0 && lgExit === 0 && reports === 0 && exit.code === 0 && ratio <= 1.10;
  console.log(ok ? 'soak: passed' : 'soak: FAILED');
  return ok ? 0 : 1;
}

await runMain('soak', main);
