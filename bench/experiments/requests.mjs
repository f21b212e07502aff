// Experiment: the rest of a web app's requests (docs/REQUEST-TYPES.md),
// one server, every backend, pooled, c 10, in one Cells so that every
// comparison is a same-round ratio:
// - the listing page (/list/B/{jis}: every town of one municipality,
//   sorted, escaped, rendered), against the single lookup;
// - cached lookups (/cached/B/{key}) against uncached (/zip/B/{key}), keys
//   drawn uniform and Zipfian (loadgen --dist zipf:0.99), with the cache's
//   hit rate from the server's /stats;
// - read/write mixes (loadgen --mix ycsb-c, ycsb-b, ycsb-a: 0, 5 and 50%
//   read-then-write updates) at c 1, 10 and 100: MyISAM's table locks
//   against InnoDB's rows, the 2008 study's pair, under writes.
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell, fmtNum, writeCells } from '../lib/cells.mjs';
import { table, fmtSameRound, fmtPct } from '../lib/table.mjs';
import { draw, writeData, errorBar, gpString } from '../lib/plot.mjs';
import { loadgen, warmRun } from '../lib/clients.mjs';
import { rateRun, fmtErrors, errorNote } from '../lib/goodput.mjs';
import { getJSON } from '../lib/http.mjs';
import { keysFile } from '../lib/dataset.mjs';
import { BACKENDS, loadBenchTables, startServer } from '../lib/benchdb.mjs';
import { verdict } from '../lib/rank.mjs';

const C = 10;
const MIX_LEVELS = [1, 10, 100];
const MIXES = ['ycsb-c', 'ycsb-b', 'ycsb-a'];
const WRITE_SHARE = { 'ycsb-c': 0, 'ycsb-b': 0.05, 'ycsb-a': 0.5 };
const ZIPF = 'zipf:0.99';

// The 5-digit local government codes of the dataset (its first column), one a line.
function jisFile(ctx) {
  const file = path.join(ctx.work, 'jis.keys');
  const codes = new Set();
  for (const line of fs.readFileSync(ctx.dataset, 'utf8').split('\n')) {
    const m = line.match(/^"?(\d{5})"?,/);
    if (m) codes.add(m[1]);
  }
  fs.writeFileSync(file, [...codes].sort().join('\n') + '\n');
  return file;
}

const ratioText = r => {
  const s = r.summary;
  const v = s && Number.isFinite(s.lo) ? verdict({ lo: s.lo, hi: s.hi }) : '~';
  return `${fmtSameRound(r)}${v === '~' ? ' (no clear difference)' : ''}`;
};

export default {
  title: 'the rest of a web app\'s requests: a listing page, cached lookups, read/write mixes',
  // The mixes' writes are the experiment: their errors are not (see goodput).
  plots: {
    mixes: 'Answered requests per second of the YCSB mixes C (reads only), B (5% updates) and A (50% updates) per backend at c 1, 10 and 100, pooled (log y). Bars: the 95% interval of the median.',
  },
  async run(ctx) {
    const port = Number(process.env.ZB_BENCH_REQUESTS_PORT || Number(process.env.ZB_BENCH_PORT || 18280) + 5);
    const seconds = ctx.quick ? 1 : 2;
    const levels = ctx.quick ? [C] : MIX_LEVELS;
    const keys = keysFile(ctx), jis = jisFile(ctx);
    const { avail, skipped } = await loadBenchTables(ctx, 'lookup', BACKENDS);
    if (!avail.length) throw new Error('no backend to measure');
    const writes = avail.flatMap(b => ['--set', `${b}.writes=yes`]);
    const srv = await startServer(ctx, 'lookup', port, avail, { log: path.join(ctx.work, 'server-requests.log'), extra: writes });
    try {
      return await measure(ctx, { port, seconds, levels, keys, jis, avail, skipped });
    } finally {
      await srv.stop();
    }
  },
};

async function measure(ctx, { port, seconds, levels, keys, jis, avail, skipped }) {
  const cells = new Cells(ctx, 'requests');
  const base = `http://127.0.0.1:${port}`;
  const stats = async b => (await getJSON(port, '/stats'))?.backends?.find(x => x.name === b) || {};
  const add = (key, { url, c = C, k = keys, extra = [], hits = null }) => cells.add(key, async () => {
    const before = hits ? await stats(hits) : null;
    const r = await loadgen(ctx, { url, c, seconds, keys: k, extra });
    const g = rateRun(r);
    if (!before || !r) return g;
    const after = await stats(hits);
    const h = (after.cache_hits ?? NaN) - (before.cache_hits ?? NaN), m = (after.cache_misses ?? NaN) - (before.cache_misses ?? NaN);
    return { ...g, hitRate: h / (h + m) };
  }, { warm: () => warmRun(ctx, { url, c, keys: k }), runsPerVisit: 3 });

  for (const b of avail) {
    add(`lookup ${b}`, { url: `${base}/zip/${b}/{key}` });
    add(`list ${b}`, { url: `${base}/list/${b}/{key}`, k: jis });
    for (const dist of ['uniform', ZIPF]) {
      add(`zip ${b} ${dist}`, { url: `${base}/zip/${b}/{key}`, extra: ['--dist', dist] });
      add(`cached ${b} ${dist}`, { url: `${base}/cached/${b}/{key}`, extra: ['--dist', dist], hits: b });
    }
    for (const mix of MIXES) for (const c of levels)
      add(`mix ${b} ${mix} ${c}`, { url: `${base}/`, c, extra: ['--mix', `${mix}:${b}`, '--dist', ZIPF] });
  }
  await cells.measure();
  writeCells(ctx.out, 'requests', cells.keys().map(k => cells.get(k)));
  const cell = k => cells.get(k);
  const med = (k, f) => {
    const xs = (cell(k)?.extras || []).map(e => e[f]).filter(Number.isFinite).sort((a, b) => a - b);
    return xs.length ? xs[xs.length >> 1] : NaN;
  };

  const lines = ['## The rest of a web app\'s requests', '',
    `Command: \`${ctx.command('requests')}\`. One server (\`--set B.writes=yes\` for every backend), pooled; every run ` +
    `\`build/bin/loadgen -q -k -c C -t ${seconds} --json ...\` after a warm-up at its load, the runs of all cells interleaved, ` +
    `round by round, 3 at a time. Request types: docs/REQUEST-TYPES.md. Backends: ${avail.join(', ')}.` +
    (skipped.length ? ` Skipped (database not up): ${skipped.join(', ')}.` : ''), ''];

  lines.push(`### The listing page against the single lookup (c ${C})`, '',
    `\`/list/B/{key}\` with \`--keys ${jis}\` (the dataset's local government codes), against \`/zip/B/{key}\` with the postal codes.`, '');
  lines.push(table(['backend', 'lookups/s', 'pages/s', 'page / lookup (same rounds)', 'errors'],
    avail.map(b => [b, fmtCell(cell(`lookup ${b}`)), fmtCell(cell(`list ${b}`)),
                    ratioText(cells.sameRoundRatio(`list ${b}`, `lookup ${b}`)),
                    [fmtErrors(cell(`lookup ${b}`)), fmtErrors(cell(`list ${b}`))].filter(Boolean).join('; ')]), 'lrrrl'));

  lines.push(`### Cached lookups against uncached, uniform and Zipfian keys (c ${C})`, '',
    `\`/cached/B/{key}\` (the server's cache, \`cache_entries\` per loop) against \`/zip/B/{key}\`, keys drawn \`--dist uniform\` ` +
    `and \`--dist ${ZIPF}\`; hit rate from the server's /stats over each run.`, '');
  const cacheRows = [];
  for (const b of avail) for (const dist of ['uniform', ZIPF])
    cacheRows.push([b, dist, fmtCell(cell(`zip ${b} ${dist}`)), fmtCell(cell(`cached ${b} ${dist}`)),
                    fmtPct(med(`cached ${b} ${dist}`, 'hitRate')),
                    ratioText(cells.sameRoundRatio(`cached ${b} ${dist}`, `zip ${b} ${dist}`))]);
  lines.push(table(['backend', 'keys', 'uncached req/s', 'cached req/s', 'hit rate', 'cached / uncached (same rounds)'], cacheRows, 'llrrrr'));

  lines.push('### Read/write mixes (YCSB C, B, A), Zipfian keys', '',
    `\`loadgen --mix ycsb-X:B --dist ${ZIPF}\`: C reads only, B 5% and A 50% \`POST /update/B/{key}\` (read, then a committed ` +
    'write of the bench\'s own `{table}_hits`), the rest `GET /zip/B/{key}`. Answered requests/s (reads and writes).', '');
  const mixRows = [];
  for (const b of avail) for (const mix of MIXES)
    mixRows.push([b, `${mix} (${Math.round(100 * WRITE_SHARE[mix])}% writes)`, ...levels.map(c => fmtCell(cell(`mix ${b} ${mix} ${c}`))),
                  levels.map(c => { const e = fmtErrors(cell(`mix ${b} ${mix} ${c}`)); return e && `c=${c}: ${e}`; }).filter(Boolean).join('; ')]);
  lines.push(table(['backend', 'mix', ...levels.map(c => `c=${c}`), 'errors'], mixRows, 'll' + 'r'.repeat(levels.length) + 'l'));
  if (avail.includes('innodb') && avail.includes('myisam')) {
    lines.push('InnoDB / MyISAM, same rounds (row locks against table locks):', '');
    lines.push(table(['mix', ...levels.map(c => `c=${c}`)],
      MIXES.map(mix => [mix, ...levels.map(c => ratioText(cells.sameRoundRatio(`mix innodb ${mix} ${c}`, `mix myisam ${mix} ${c}`)))]),
      'l' + 'r'.repeat(levels.length)));
  }
  lines.push(errorNote(cells.keys().map(cell)), '', cells.machineNote(), '');

  const series = avail.flatMap(b => MIXES.map(m => [b, m]));
  const bars = x => (x && x.values.length ? errorBar(x.summary).map(v => v.toFixed(1)) : ['NaN', 'NaN', 'NaN']);
  const file = writeData(ctx.out, 'mixes.dat', [
    ['#c', ...series.flatMap(([b, m]) => [`${b}_${m}`, 'lo', 'hi'])],
    ...levels.map(c => [c, ...series.flatMap(([b, m]) => bars(cell(`mix ${b} ${m} ${c}`)))])]);
  draw(ctx.out, 'mixes', 900, 520, [
    "set xlabel 'concurrency'", "set ylabel 'answered requests/s'", 'set logscale xy', "set format y '%g'", 'set grid',
    'set xrange [0.8:130]',
    'plot ' + series.map(([b, m], i) => `'${file}' using 1:${2 + 3 * i}:${3 + 3 * i}:${4 + 3 * i} with yerrorlines lc ${1 + avail.indexOf(b)} ` +
                                        `dt ${1 + MIXES.indexOf(m)} title ${gpString(`${b} ${m}`)}`).join(', '),
  ].join('\n'), { title: 'YCSB mixes C, B, A (Zipfian keys): answered requests/s against the concurrency', legend: series.map(([b, m]) => `${b} ${m}`) });
  return lines.join('\n');
}
