// Where the run-to-run noise comes from (docs/DECISIONS.md, Bench): the same
// cells measured three ways on the tables of `make run` and the loader's
// defaults: alone (a cell's runs back to back), interleaved run by run with a
// warm-up before each, and alone with the server on CPU 0 (one loop) and
// loadgen on CPU 1. Prints per cell the median, the 95% interval's half
// width, the sd of the runs and of the CPU per lookup of each tier.
//   node bench/noise.mjs   (N runs, SEC seconds each, CELLS b:s:c,...,
//                           VARIANTS alone,interleaved,pinned; the databases up)
import path from 'node:path';
import { background, runMain, run, sleep } from './lib/run.mjs';
import { waitFor } from './lib/http.mjs';
import { loadgen } from './lib/clients.mjs';
import { rateRun } from './lib/goodput.mjs';
import { summarize } from './lib/stats.mjs';
import { clockTicks, processTicks, treeTicks } from './lib/proc.mjs';
import { dbPids } from './lib/services.mjs';
process.chdir(path.resolve(path.dirname(new URL(import.meta.url).pathname), '..'));
const ctx = { root: process.cwd(), build: 'build', bin: n => path.join('build/bin', n), logFile: null, log: m => console.error(m) };
const keys = 'build/ken_all.keys';
const port = 18390;
const N = Number(process.env.N || 15), SEC = Number(process.env.SEC || 2);
const cellsWanted = (process.env.CELLS || 'sqlite:pooled:10,pg:pooled:10,innodb:pooled:10').split(',').map(s => s.split(':'));
const variants = (process.env.VARIANTS || 'alone,interleaved,pinned').split(',');
const sd = xs => { const m = xs.reduce((a, b) => a + b, 0) / xs.length; return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1)) / m; };

async function server(pinned) {
  const args = ['--backends', 'sqlite,pg,innodb,myisam', '--port', String(port)];
  const srv = pinned ? background('taskset', ['-c', '0', ctx.bin('server'), '--threads', '1', ...args], { log: 'build/noise-server.log' })
                     : background(ctx.bin('server'), args, { log: 'build/noise-server.log' });
  if (!(await waitFor(port, '/health', { alive: srv.alive }))) throw new Error('no server');
  return srv;
}
async function one(srv, pids, [b, s, c], pinned, seconds = SEC) {
  const url = `http://127.0.0.1:${port}/zip/${b}/{key}?strategy=${s}`;
  const dbt = () => (b === 'pg' ? treeTicks(pids.pg) : b === 'sqlite' ? 0 : processTicks(pids.mariadb));
  const s0 = processTicks(srv.pid), d0 = dbt();
  const r = await loadgen(pinned ? { ...ctx, bin: n => n === 'loadgen' ? 'bench/noise-loadgen-cpu1' : ctx.bin(n) } : ctx,
                          { url, c: Number(c), seconds, keys, threads: pinned ? 1 : undefined });
  const g = rateRun(r);
  const n = g.value * r.seconds;
  return { v: g.value, srvUs: (processTicks(srv.pid) - s0) / clockTicks() * 1e6 / n, dbUs: (dbt() - d0) / clockTicks() * 1e6 / n, cliUs: r.cpuUsPerReq };
}
function report(name, res) {
  for (const [k, xs] of Object.entries(res)) {
    const v = xs.map(x => x.v), s = summarize(v);
    const f = a => `${(100 * sd(a)).toFixed(1)}%`;
    console.log(`${name.padEnd(12)} ${k.padEnd(20)} n=${v.length} med=${s.median.toFixed(0)} ci=+-${(100 * s.halfWidth).toFixed(1)}% sd=${f(v)} min/max=${(s.min / s.median).toFixed(2)}-${(s.max / s.median).toFixed(2)} | srvUs ${summarize(xs.map(x => x.srvUs)).median.toFixed(1)} sd ${f(xs.map(x => x.srvUs))} | dbUs ${summarize(xs.map(x => x.dbUs)).median.toFixed(1)} sd ${f(xs.map(x => x.dbUs))} | cliUs ${summarize(xs.map(x => x.cliUs)).median.toFixed(1)} sd ${f(xs.map(x => x.cliUs))}`);
  }
}
async function main() {
  const pids = await dbPids(ctx);
  for (const variant of variants) {
    const pinned = variant.startsWith('pinned');
    const srv = await server(pinned);
    const res = {};
    for (const cell of cellsWanted) res[cell.join(' ')] = [];
    if (variant === 'interleaved') {
      for (let r = 0; r < N; r++) for (const cell of cellsWanted) { await one(srv, pids, cell, false, 1); res[cell.join(' ')].push(await one(srv, pids, cell, false)); }
    } else {
      for (const cell of cellsWanted) { await one(srv, pids, cell, pinned, 1); for (let r = 0; r < N; r++) res[cell.join(' ')].push(await one(srv, pids, cell, pinned)); }
    }
    await srv.stop();
    report(variant, res);
  }
  return 0;
}
await runMain('noise', main);
