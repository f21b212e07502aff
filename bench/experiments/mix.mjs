// Experiment: reads and writes together, per backend, across concurrencies.
// loadgen --mix sends YCSB's workloads over HTTP (ycsb-b: 95% lookups, 5%
// updates; ycsb-a: 50/50), Zipfian keys (YCSB's default, zipf:0.99), at c
// 1, 10 and 100, each backend under its default durability. Requests per
// second of the whole mix, and apart per template (reads, updates), from
// loadgen's per-template report. MyISAM against InnoDB in the same rounds:
// the 2008 study's pair, where MyISAM's table locks make reads wait behind
// writes and InnoDB's row locks do not.
import path from 'node:path';
import { Cells, fmtCell, fmtNum, writeCells } from '../lib/cells.mjs';
import { table } from '../lib/table.mjs';
import { draw, writeData, errorBar, gpString } from '../lib/plot.mjs';
import { loadgen, warmRun } from '../lib/clients.mjs';
import { rateRun, fmtErrors, errorNote } from '../lib/goodput.mjs';
import { keysFile } from '../lib/dataset.mjs';
import { BACKENDS, loadBenchTables, startServer } from '../lib/benchdb.mjs';
import { ratioText } from '../lib/rank.mjs';
import { benchPort } from '../lib/services.mjs';

const LEVELS = [1, 10, 100];
const MIXES = ['ycsb-b', 'ycsb-a'];
const ZIPF = 'zipf:0.99';

export default {
  title: 'reads and writes together: YCSB mixes per backend across concurrencies',
  plots: {
    mix: 'Requests per second of YCSB workload A (50% lookups, 50% updates) and B (95/5) over HTTP, Zipfian keys, per backend against the concurrency (log-log). Bars: the 95% interval of the median.',
  },
  async run(ctx) {
    const port = benchPort('MIX', 6);
    const seconds = ctx.quick ? 0.5 : 2;
    const levels = ctx.quick ? [10] : LEVELS;
    const keys = keysFile(ctx);
    const { avail, skipped } = await loadBenchTables(ctx, 'lookup', BACKENDS);
    if (!avail.length) throw new Error('no backend to measure');
    const srv = await startServer(ctx, 'lookup', port, avail, {
      log: path.join(ctx.work, 'server-mix.log'), extra: avail.flatMap(b => ['--set', `${b}.writes=yes`]) });
    try {
      return await measure(ctx, { port, seconds, levels, keys, avail, skipped });
    } finally {
      await srv.stop();
    }
  },
};

async function measure(ctx, { port, seconds, levels, keys, avail, skipped }) {
  const cells = new Cells(ctx, 'mix', { ownIo: true });
  const key = (b, m, c) => `${b} ${m} ${c}`;
  const url = `http://127.0.0.1:${port}/`;
  for (const c of levels) for (const m of MIXES) for (const b of avail) {
    const extra = ['--mix', `${m}:${b}`, '--keys', keys, '--dist', ZIPF];
    cells.add(key(b, m, c), async () => {
      const r = await loadgen(ctx, { url, c, seconds, extra: [...extra, '--seed', String(Math.floor(Math.random() * 1e6))] });
      const t = r?.json?.templates || [];
      const rate = method => t.filter(x => x.method === method).reduce((a, x) => a + (x.goodput_rps || 0), 0);
      return rateRun(r, {}, { reads: rate('GET'), updates: rate('POST') });
    }, { warm: () => warmRun(ctx, { url, c, extra }), runsPerVisit: 3 });
  }
  await cells.measure();
  writeCells(ctx.out, 'mix', cells.keys().map(k => cells.get(k)));
  const cell = k => cells.get(k);
  const med = (k, f) => {
    const xs = (cell(k)?.extras || []).map(e => e[f]).filter(Number.isFinite).sort((a, b) => a - b);
    return xs.length ? xs[xs.length >> 1] : NaN;
  };

  const lines = ['## Reads and writes together: YCSB mixes', '',
    `Command: \`${ctx.command('mix')}\`. One server (\`--set B.writes=yes\`), pooled, each backend under its default ` +
    `durability; every run \`build/bin/loadgen -q -k -c C -t ${seconds} --mix ycsb-X:B --keys KEYS --dist ${ZIPF} ` +
    '--json http://127.0.0.1:PORT/` after a warm-up at its load, the runs of all cells interleaved, round by round, ' +
    '3 at a time. ycsb-b: 95% `GET /zip/B/{key}`, 5% `POST /update/B/{key}` (a read, then a committed write); ' +
    'ycsb-a: 50/50. Requests per second of the whole mix (2xx answers); reads/s and updates/s apart (medians, from ' +
    `loadgen's per-template report). Backends: ${avail.join(', ')}.` +
    (skipped.length ? ` Skipped (database not up): ${skipped.join(', ')}.` : ''), ''];
  for (const m of MIXES) {
    lines.push(`### ${m} (${m === 'ycsb-a' ? '50% reads, 50% updates' : '95% reads, 5% updates'})`, '');
    lines.push(table(['backend', ...levels.map(c => `req/s c=${c}`), ...levels.map(c => `reads/s : updates/s c=${c}`), 'errors'],
      avail.map(b => [b, ...levels.map(c => fmtCell(cell(key(b, m, c)))),
                      ...levels.map(c => `${fmtNum(med(key(b, m, c), 'reads'))} : ${fmtNum(med(key(b, m, c), 'updates'))}`),
                      levels.map(c => { const e = fmtErrors(cell(key(b, m, c))); return e && `c=${c}: ${e}`; }).filter(Boolean).join('; ')]),
      'l' + 'r'.repeat(2 * levels.length) + 'l'));
  }
  if (avail.includes('innodb') && avail.includes('myisam')) {
    lines.push('InnoDB / MyISAM, requests per second of the mix, same rounds (row locks against table locks):', '');
    lines.push(table(['mix', ...levels.map(c => `c=${c}`)],
      MIXES.map(m => [m, ...levels.map(c => ratioText(cells.sameRoundRatio(key('innodb', m, c), key('myisam', m, c))))]),
      'l' + 'r'.repeat(levels.length)));
  }
  lines.push(errorNote(cells.keys().map(cell)), '', cells.machineNote(), '');

  const bars = x => (x && x.values.length ? errorBar(x.summary).map(v => v.toFixed(1)) : ['NaN', 'NaN', 'NaN']);
  const series = MIXES.flatMap(m => avail.map(b => [b, m]));
  const file = writeData(ctx.out, 'mix.dat', [
    ['#c', ...series.flatMap(([b, m]) => [`${b}-${m}`, 'lo', 'hi'])],
    ...levels.map(c => [c, ...series.flatMap(([b, m]) => bars(cell(key(b, m, c))))])]);
  const titles = series.map(([b, m]) => `${b} ${m}`);
  draw(ctx.out, 'mix', 900, 560, [
    "set xlabel 'concurrency'", "set ylabel 'requests/s (2xx)'", 'set logscale xy', "set format y '%g'", 'set grid',
    'set xrange [0.8:130]',
    'plot ' + series.map(([b, m], i) => `'${file}' using 1:${2 + 3 * i}:${3 + 3 * i}:${4 + 3 * i} with yerrorlines ` +
                                        `lc ${avail.indexOf(b) + 1} dt ${m === 'ycsb-a' ? 2 : 1} title ${gpString(titles[i])}`).join(', '),
  ].join('\n'), { title: 'YCSB A and B over HTTP (Zipfian keys): requests/s against the concurrency', legend: titles });
  return lines.join('\n');
}
