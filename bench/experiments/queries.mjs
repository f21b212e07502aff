// Experiment: multiple queries per request (TechEmpower's "multiple
// queries"). GET /queries/B?queries=N asks N lookups of codes the server
// draws, all in flight at once on the request's strategy: pooled takes up
// to N connections, pipelined sends them down one connection in one
// write, per-request connects N times. Lookups per second against N (1, 5,
// 20) per backend and strategy at c 10, the CPU each tier spends per
// lookup, and on PostgreSQL the same-round ratio pipelined / pooled at
// each N (where pipelining should pull away: one round trip for N).
import path from 'node:path';
import { Cells, fmtCell, fmtNum, writeCells } from '../lib/cells.mjs';
import { table, fmtSameRound } from '../lib/table.mjs';
import { draw, writeData, errorBar, gpString } from '../lib/plot.mjs';
import { loadgen, warmRun } from '../lib/clients.mjs';
import { rateRun, fmtErrors, errorNote } from '../lib/goodput.mjs';
import { BACKENDS, loadBenchTables, startServer } from '../lib/benchdb.mjs';
import { dbPids, benchPort } from '../lib/services.mjs';
import { verdict } from '../lib/rank.mjs';
import { ticksToUs, processTicks, treeTicks } from '../lib/proc.mjs';

const NS = [1, 5, 20];
// Per-request opens N connections per request: at N = 20 and c 10 that is
// 200 connects in flight, a few requests a second; measured up to N = 5.
const PER_REQUEST_MAX_N = 5;
const C = 10;
const strategiesOf = b => ['pooled', 'per-request', ...(b === 'pg' ? ['pipelined'] : [])];

export default {
  title: 'multiple queries per request: lookups/s against N, per strategy',
  plots: {
    queries: 'Lookups per second (requests/s times N) of GET /queries/B?queries=N at c 10, against N, per backend and strategy (log y). Bars: the 95% interval of the median.',
  },
  async run(ctx) {
    const port = benchPort('QUERIES', 4);
    const seconds = ctx.quick ? 0.5 : 2;
    const ns = ctx.quick ? [1, 20] : NS;
    const { avail, skipped } = await loadBenchTables(ctx, 'lookup', BACKENDS);
    if (!avail.length) throw new Error('no backend to measure');
    const srv = await startServer(ctx, 'lookup', port, avail, { log: path.join(ctx.work, 'server-queries.log') });
    try {
      return await measure(ctx, { port, seconds, ns, avail, skipped, srv });
    } finally {
      await srv.stop();
    }
  },
};

async function measure(ctx, { port, seconds, ns, avail, skipped, srv }) {
  const pids = await dbPids(ctx);
  const dbTicks = b => (b === 'pg' ? treeTicks(pids.pg) : b === 'innodb' || b === 'myisam' ? processTicks(pids.mariadb) : 0);
  const cells = new Cells(ctx, 'queries');
  const key = (b, s, n) => `${b} ${s} ${n}`;
  const url = (b, s, n) => `http://127.0.0.1:${port}/queries/${b}?queries=${n}&strategy=${s}`;
  const runs = (s, n) => s !== 'per-request' || n <= PER_REQUEST_MAX_N;
  for (const n of ns) for (const b of avail) for (const s of strategiesOf(b).filter(x => runs(x, n)))
    cells.add(key(b, s, n), async () => {
      const s0 = processTicks(srv.pid), d0 = dbTicks(b);
      const r = await loadgen(ctx, { url: url(b, s, n), c: C, seconds });
      const g = rateRun(r);
      if (!r) return g;
      const lookups = g.value * r.seconds * n;
      return { ...g, value: g.value * n, requests: g.value,
               serverUs: ticksToUs(processTicks(srv.pid) - s0, lookups),
               dbUs: b === 'sqlite' ? NaN : ticksToUs(dbTicks(b) - d0, lookups) };
    }, { warm: () => warmRun(ctx, { url: url(b, s, n), c: C }), runsPerVisit: 3 });
  await cells.measure();
  writeCells(ctx.out, 'queries', cells.keys().map(k => cells.get(k)));

  const us = (cell, f) => {
    const xs = (cell?.extras || []).map(e => e[f]).filter(Number.isFinite).sort((a, b) => a - b);
    return xs.length ? xs[xs.length >> 1] : NaN;
  };
  const rows = [];
  for (const b of avail) for (const s of strategiesOf(b))
    rows.push([b, s, ...ns.map(n => fmtCell(cells.get(key(b, s, n)))),
               ...ns.slice(-1).flatMap(n => [fmtNum(us(cells.get(key(b, s, n)), 'serverUs'), 1),
                                             fmtNum(us(cells.get(key(b, s, n)), 'dbUs'), 1)]),
               ns.map(n => { const e = fmtErrors(cells.get(key(b, s, n))); return e && `N=${n}: ${e}`; }).filter(Boolean).join('; ')]);
  const last = ns[ns.length - 1];
  const lines = ['## Multiple queries per request', '',
    `Command: \`${ctx.command('queries')}\`. Each run: \`build/bin/loadgen -q -k -c ${C} -t ${seconds} --json ` +
    `'http://127.0.0.1:${port}/queries/B?queries=N&strategy=S'\`, after a warm-up at its load; the server draws the N codes ` +
    `from its key set and answers them as one JSON array (docs/REQUEST-TYPES.md). The runs of all cells interleaved, ` +
    `round by round, 3 at a time. Backends: ${avail.join(', ')}.` + (skipped.length ? ` Skipped (database not up): ${skipped.join(', ')}.` : ''), '',
    '### Lookups per second (answered requests/s x N)', '',
    table(['backend', 'strategy', ...ns.map(n => `N=${n}`), `server µs/lookup N=${last}`, `database µs/lookup N=${last}`, 'errors'], rows,
          'll' + 'r'.repeat(ns.length + 2) + 'l'),
    errorNote(cells.keys().map(k => cells.get(k))), ''];
  if (avail.includes('pg')) {
    lines.push('### PostgreSQL: pipelined and per-request against pooled, same rounds', '');
    const rr = ['pipelined', 'per-request'].map(s => [`${s} / pooled`, ...ns.map(n => {
      if (!runs(s, n)) return '-';
      const r = cells.sameRoundRatio(key('pg', s, n), key('pg', 'pooled', n));
      const v = r.summary && Number.isFinite(r.summary.lo) ? verdict({ lo: r.summary.lo, hi: r.summary.hi }) : '~';
      return `${fmtSameRound(r)}${v === '~' ? ' (no clear difference)' : ''}`;
    })]);
    lines.push(table(['ratio', ...ns.map(n => `N=${n}`)], rr, 'l' + 'r'.repeat(ns.length)));
    const r = cells.sameRoundRatio(key('pg', 'pipelined', last), key('pg', 'pooled', last));
    const lo = r.summary?.lo;
    lines.push(`Target: pipelined at least 2x pooled at N=${last} on PostgreSQL (same run): ` +
               `${Number.isFinite(lo) ? (lo >= 2 ? 'reached' : r.value >= 2 ? 'reached by the median, not by the interval' : 'missed') : 'not measured'} ` +
               `(${fmtSameRound(r)}).`, '');
  }
  lines.push(cells.machineNote(), '');

  const series = avail.flatMap(b => strategiesOf(b).map(s => [b, s]));
  const bars = cell => (cell && cell.values.length ? errorBar(cell.summary).map(x => x.toFixed(1)) : ['NaN', 'NaN', 'NaN']);
  const file = writeData(ctx.out, 'queries.dat', [
    ['#N', ...series.flatMap(([b, s]) => [`${b}_${s}`, 'lo', 'hi'])],
    ...ns.map(n => [n, ...series.flatMap(([b, s]) => bars(cells.get(key(b, s, n))))])]);
  draw(ctx.out, 'queries', 900, 520, [
    "set xlabel 'queries per request (N)'", "set ylabel 'lookups/s'", 'set logscale y', "set format y '%g'", 'set grid',
    `set xrange [0:${last + 1}]`,
    'plot ' + series.map(([b, s], i) => `'${file}' using 1:${2 + 3 * i}:${3 + 3 * i}:${4 + 3 * i} with yerrorlines lc ${i + 1}` +
                                        `${i >= 8 ? ' dt 2' : ''} title ${gpString(`${b} ${s}`)}`).join(', '),
  ].join('\n'), { title: `GET /queries/B?queries=N at c ${C}: lookups per second (bars: 95% CI)`, legend: series.map(([b, s]) => `${b} ${s}`) });
  return lines.join('\n');
}
