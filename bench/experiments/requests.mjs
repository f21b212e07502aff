// Experiment: the rest of a web app's requests (docs/REQUEST-TYPES.md),
// one server, every backend, pooled, c 10, in one Cells so that every
// comparison is a same-round ratio:
// - the listing page (/list/B/{jis}: every town of one municipality,
//   sorted, escaped, rendered), against the single lookup;
// - cached lookups (/cached/B/{key}) against uncached (/zip/B/{key}), keys
//   drawn uniform and Zipfian (loadgen --dist zipf:0.99), with the cache's
//   hit rate from the server's /stats;
// - updates (POST /update/B/{key}: a read, then a committed write of the
//   bench's own {table}_hits) at c 1, 10 and 100, Zipfian keys, each
//   backend under its default durability: MyISAM's table locks against
//   InnoDB's rows, the 2008 study's pair, under writes; SQLite's one writer.
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell, fmtNum, writeCells } from '../lib/cells.mjs';
import { table, fmtPct } from '../lib/table.mjs';
import { draw, writeData, errorBar, gpString } from '../lib/plot.mjs';
import { loadgen, warmRun } from '../lib/clients.mjs';
import { rateRun, fmtErrors, errorNote } from '../lib/goodput.mjs';
import { getJSON } from '../lib/http.mjs';
import { keysFile } from '../lib/dataset.mjs';
import { BACKENDS, loadBenchTables, startServer } from '../lib/benchdb.mjs';
import { ratioText } from '../lib/rank.mjs';
import { benchPort } from '../lib/services.mjs';

const C = 10;
const WRITE_LEVELS = [1, 10, 100];
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

export default {
  title: 'the rest of a web app\'s requests: a listing page, cached lookups, updates',
  plots: {
    updates: 'Acknowledged updates per second (POST /update/B/{key}: a read, then a committed write) per backend at c 1, 10 and 100, Zipfian keys, each backend under its default durability (log y). Bars: the 95% interval of the median.',
  },
  async run(ctx) {
    const port = benchPort('REQUESTS', 5);
    const seconds = ctx.quick ? 0.5 : 2;
    const levels = ctx.quick ? [C] : WRITE_LEVELS;
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
    const cache = x => x?.routes?.cached ?? { hits: 0, misses: 0 };
    const h = cache(after).hits - cache(before).hits, m = cache(after).misses - cache(before).misses;
    return { ...g, hitRate: h / (h + m) };
  }, { warm: () => warmRun(ctx, { url, c, keys: k, extra }), runsPerVisit: 3 });

  for (const b of avail) {
    add(`lookup ${b}`, { url: `${base}/zip/${b}/{key}` });
    add(`list ${b}`, { url: `${base}/list/${b}/{key}`, k: jis });
    for (const dist of ['uniform', ZIPF]) {
      add(`zip ${b} ${dist}`, { url: `${base}/zip/${b}/{key}`, extra: ['--dist', dist] });
      add(`cached ${b} ${dist}`, { url: `${base}/cached/${b}/{key}`, extra: ['--dist', dist], hits: b });
    }
    for (const c of levels)
      add(`update ${b} ${c}`, { url: `${base}/update/${b}/{key}`, c, extra: ['-m', 'POST', '--dist', ZIPF] });
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

  lines.push('### Updates: a read, then a committed write, Zipfian keys', '',
    `\`loadgen -m POST --dist ${ZIPF} --keys KEYS 'http://127.0.0.1:PORT/update/B/{key}'\`: each request reads the code's stamp ` +
    'in the bench\'s own `{table}_hits`, then writes a new one, autocommitted before the answer (docs/REQUEST-TYPES.md), ' +
    'under each backend\'s default durability (SQLite synchronous=FULL in WAL, PostgreSQL synchronous_commit=on, ' +
    'InnoDB innodb_flush_log_at_trx_commit=1, MyISAM no transactions). Acknowledged updates per second.', '');
  lines.push(table(['backend', ...levels.map(c => `c=${c}`), 'errors'],
    avail.map(b => [b, ...levels.map(c => fmtCell(cell(`update ${b} ${c}`))),
                    levels.map(c => { const e = fmtErrors(cell(`update ${b} ${c}`)); return e && `c=${c}: ${e}`; }).filter(Boolean).join('; ')]),
    'l' + 'r'.repeat(levels.length) + 'l'));
  if (avail.includes('innodb') && avail.includes('myisam')) {
    lines.push('InnoDB / MyISAM, same rounds (row locks against table locks):', '');
    lines.push(table(['', ...levels.map(c => `c=${c}`)],
      [['updates', ...levels.map(c => ratioText(cells.sameRoundRatio(`update innodb ${c}`, `update myisam ${c}`)))]],
      'l' + 'r'.repeat(levels.length)));
  }
  lines.push(errorNote(cells.keys().map(cell)), '', cells.machineNote(), '');

  const bars = x => (x && x.values.length ? errorBar(x.summary).map(v => v.toFixed(1)) : ['NaN', 'NaN', 'NaN']);
  const file = writeData(ctx.out, 'updates.dat', [
    ['#c', ...avail.flatMap(b => [`${b}`, 'lo', 'hi'])],
    ...levels.map(c => [c, ...avail.flatMap(b => bars(cell(`update ${b} ${c}`)))])]);
  draw(ctx.out, 'updates', 900, 520, [
    "set xlabel 'concurrency'", "set ylabel 'acknowledged updates/s'", 'set logscale xy', "set format y '%g'", 'set grid',
    'set xrange [0.8:130]',
    'plot ' + avail.map((b, i) => `'${file}' using 1:${2 + 3 * i}:${3 + 3 * i}:${4 + 3 * i} with yerrorlines lc ${i + 1} ` +
                                  `title ${gpString(b)}`).join(', '),
  ].join('\n'), { title: 'POST /update/B/{key} (Zipfian keys): acknowledged updates/s against the concurrency', legend: avail });
  return lines.join('\n');
}
