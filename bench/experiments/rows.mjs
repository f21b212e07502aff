// Experiment: the cost as the rows grow. The postal layout made by
// build/bin/gen at 10^5, 10^6 and 10^7 rows, and the real list: at each
// size, per backend, zipbench's bulk load against the database's own
// loader (psql \copy, LOAD DATA LOCAL, sqlite3 .import; the bulk
// experiment's tools) in the same rounds, with each loader's peak memory
// (the loader must stream: flat as the rows grow); each table's size on
// disk; and the lookup rate over HTTP at uniform and Zipfian keys, where
// the largest size outgrows the databases' own caches (shared_buffers,
// the InnoDB buffer pool, MyISAM's key buffer, SQLite's page cache).
// One size at a time: its loads, then a server on its tables for the
// lookups, then its tables dropped (10^7 rows take gigabytes per table).
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell, writeCells } from '../lib/cells.mjs';
import { table, fmtRatio } from '../lib/table.mjs';
import { draw, writeData, errorBar } from '../lib/plot.mjs';
import { run, isStopping } from '../lib/run.mjs';
import { benchPort, dbEnv } from '../lib/services.mjs';
import { startServer } from '../lib/benchdb.mjs';
import { loadgen, warmRun } from '../lib/clients.mjs';
import { rateRun, fmtErrors, errorNote } from '../lib/goodput.mjs';
import { countLines } from '../lib/dataset.mjs';
import { ratioOf, extraSummary, fmtRatioCI } from '../lib/rank.mjs';
import { provenance } from '../lib/provenance.mjs';
import { tools, NATIVE } from './bulk.mjs';

const BACKENDS = ['sqlite', 'pg', 'innodb', 'myisam'];
// The backends whose loader sizes text columns from the data (MariaDB's).
const SIZED = ['innodb', 'myisam'];
const DISTS = ['uniform', 'zipf:0.99'];
// zipbench's bulk load against the native loader, at every size.
const GOAL = 0.9;
// Sizes from which each load runs once (a round of 10^7 rows: ~40 min).
const ONCE_ROWS = 5e6;

// The generated sizes of a run (rows): ZB_BENCH_ROWS_SIZES narrows it.
export function rowsSizes(text = '100000,1000000,10000000') {
  const sizes = text.split(',').map(Number);
  if (!sizes.length || !sizes.every(n => Number.isInteger(n) && n > 0))
    throw new Error(`ZB_BENCH_ROWS_SIZES: '${text}' is not a list of row counts`);
  return sizes;
}

const mega = n => (n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n));

export default {
  title: 'the cost as the rows grow: loads, lookups and size on disk from 10^5 to 10^7 rows',
  plots: {
    rows: 'Rows per second of a bulk load against the rows loaded (log scale), zipbench beside each database\'s own loader, same rounds. Bars: the 95% interval of the median.',
    'rows-lookups': 'Answered lookups per second (loadgen -k -c 10, pooled) against the rows in the table (log scale), at uniform and Zipfian keys: where the table leaves the database\'s cache. Bars: the 95% interval of the median.',
  },
  async run(ctx) {
    const work = path.join(ctx.work, 'rows');
    fs.mkdirSync(work, { recursive: true });
    const env = await dbEnv(ctx);
    // Ten million rows take minutes per load, more on a busy machine.
    const t = tools(ctx, work, env, { timeoutS: 7200 });
    const sizes = ctx.quick ? [10000] : rowsSizes(process.env.ZB_BENCH_ROWS_SIZES || undefined);
    const sets = [...sizes.map(n => ({ name: `rows${n}`, rows: n })),
                  ...(ctx.quick ? [] : [{ name: 'rowsreal', rows: 0, file: ctx.dataset, real: true }])];
    const caches = await defaultCaches(t);
    const port = benchPort('ROWS', 22);
    // The budget: 70% for the loads, each set's share by its rows (the
    // real list's as 10^5), at least a twentieth; 30% for the lookups,
    // shared evenly (a lookup run takes as long at any size).
    // A set of ONCE_ROWS or more is loaded once per backend and loader,
    // outside the budget: one round of ten million rows takes 40 minutes.
    const weight = s => (s.rows >= ONCE_ROWS ? 0 : Math.max(s.rows || 126431, 1));
    const total = sets.reduce((a, s) => a + weight(s), 0) || 1;
    const B = ctx.repeat.budgetS;
    const budget = s => ({ loadsS: Math.max(B * 0.7 / 20, B * 0.7 * weight(s) / total),
                           lookupsS: B * 0.3 / sets.length, once: s.rows >= ONCE_ROWS });
    const done = [], failures = [];
    try {
      // A size that fails is named, and the others are still measured and
      // reported (the part then fails: ctx.partFailed).
      for (const s of sets) {
        try {
          if (!s.real) s.file = await generate(ctx, work, s.rows);
          s.lines = countLines(s.file);
          s.bytes = fs.statSync(s.file).size;
          done.push(await oneSet(ctx, { t, s, port, work, ...budget(s) }));
        } catch (e) {
          if (isStopping()) throw e;
          ctx.partFailed = `rows ${s.name}: ${e.message}`;
          ctx.warn(ctx.partFailed);
          failures.push(ctx.partFailed);
        }
        if (!s.real && s.bytes > 100 * 1048576) fs.rmSync(s.file, { force: true });   // made again by gen, the same bytes
      }
      if (!done.length) throw new Error(ctx.partFailed || 'rows: no size measured');
    } finally {
      fs.rmSync(t.sqliteDb, { force: true });
    }
    return report(ctx, { done, caches, failures });
  },
};

// The postal layout at n rows (gen's seed 1: the same bytes every time),
// kept under the work directory while it is there.
async function generate(ctx, work, n) {
  const file = path.join(work, `gen-${n}.csv`);
  if (fs.existsSync(file) && fs.statSync(file).size > 0) return file;
  const r = await run(ctx.bin('gen'), ['--rows', String(n), '--seed', '1', '-o', file], { log: ctx.logFile, timeoutS: 3600 });
  if (r.code !== 0) throw new Error(`gen --rows ${n}: exit ${r.code}: ${r.stderr.trim()}`);
  return file;
}

// What each database keeps in memory by default here: the caches the
// largest size should outgrow.
async function defaultCaches(t) {
  const pg = await t.scalar('pg', 'SHOW shared_buffers');
  const my = (await t.scalar('innodb', 'SELECT @@innodb_buffer_pool_size, @@key_buffer_size')).split(/\s+/).map(Number);
  return { pg: `shared_buffers ${pg || '?'}`, innodb: `innodb_buffer_pool_size ${mib(my[0])}`,
           myisam: `key_buffer_size ${mib(my[1])} (rows: the OS page cache)`, sqlite: 'the config\'s cache_mib per connection' };
}

const mib = bytes => (Number.isFinite(bytes) && bytes > 0 ? `${(bytes / 1048576).toFixed(0)} MiB` : '?');

// One set: its loads (zipbench and the native loader, same rounds), each
// table's size, the lookups on a server of its own, then its tables dropped.
async function oneSet(ctx, { t, s, port, work, loadsS, lookupsS, once }) {
  const d = { name: s.name, csv: true };
  const model = b => `bench_bulk_${s.name}_${b}`;
  const loads = new Cells(ctx, `rows ${s.name}`, { ownIo: true, budgetS: loadsS, ...(once ? { minRuns: 1, maxRuns: 1 } : {}) });
  const counts = {};
  // Every timed load replaces a table, as in every round after the first:
  // on MariaDB a first load makes a pass over the file to size the text
  // columns, which a reload takes from the table it replaces (DECISIONS.md),
  // and the native loader is handed those types (CREATE TABLE ... LIKE).
  for (const b of SIZED) {
    const r = await t.zipbench(b, d, s.file);
    if (r.code !== 0) ctx.log(`${s.name} ${b} first load: exit ${r.code}: ${(r.stdout + r.stderr).trim().split('\n').slice(-2).join(' ')}`);
  }
  for (const b of BACKENDS)
    for (const [tool, target, go] of [['zipbench', model(b), () => t.zipbench(b, d, s.file)],
                                      ['native', `${model(b)}_native`, () => t.native(b, d, s.file, model(b))]]) {
      const key = `${s.name} ${b} ${tool}`;
      loads.add(key, async () => {
        const r = await go();
        if (r.code !== 0) { ctx.log(`${key}: exit ${r.code}: ${(r.stdout + r.stderr).trim().split('\n').slice(-2).join(' ')}`); return NaN; }
        counts[key] = await t.count(b, target);
        // The native's copy is only timed: dropped at once (disk).
        if (tool === 'native') await t.scalar(b, `DROP TABLE IF EXISTS ${target}`);
        return { value: counts[key] / r.seconds, seconds: r.seconds, kib: r.kib };
      });
    }
  await loads.measure();
  const loaded = BACKENDS.filter(b => counts[`${s.name} ${b} zipbench`] > 0);
  const disk = {};
  for (const b of loaded) disk[b] = await diskBytes(t, b, model(b));

  // Lookups of the loaded keys, on a server serving these tables.
  const keys = path.join(work, `${s.name}.keys`);
  const kr = await run(ctx.bin('loader'), ['-q', '--conf', ctx.conf, '-f', s.file, '--write-keys', keys], { log: ctx.logFile, timeoutS: 3600 });
  const lookups = new Cells(ctx, `rows lookups ${s.name}`, { budgetS: lookupsS });
  let srv = null;
  if (kr.code === 0 && loaded.length) {
    const sets = ['--set', `sqlite.path=${t.sqliteDb}`, ...loaded.flatMap(b => ['--set', `${b}.table=${model(b)}`])];
    srv = await startServer(ctx, 'rows', port, loaded, { log: path.join(work, 'server.log'), extra: sets });
  } else {
    ctx.warn(`rows ${s.name}: no lookups (${kr.code !== 0 ? `loader --write-keys: exit ${kr.code}` : 'nothing loaded'})`);
  }
  try {
    if (srv) {
      for (const b of loaded) for (const dist of DISTS) {
        const url = `http://127.0.0.1:${port}/zip/${b}/{key}?strategy=pooled`;
        const extra = ['--dist', dist];
        lookups.add(`${s.name} ${b} lookup ${dist}`,
          async () => rateRun(await loadgen(ctx, { url, c: 10, seconds: ctx.quick ? 0.5 : 3, keys, extra })),
          { warm: () => warmRun(ctx, { url, c: 10, keys, extra }) });
      }
      await lookups.measure();
    }
  } finally {
    if (srv) await srv.stop();
    for (const b of BACKENDS) await t.scalar(b, `DROP TABLE IF EXISTS ${model(b)}`);
    fs.rmSync(keys, { force: true });
  }
  return { s, loads, lookups, counts, disk, loaded };
}

// Bytes a table and its indexes take on disk.
async function diskBytes(t, b, name) {
  if (b === 'pg') return Number(await t.scalar(b, `SELECT pg_total_relation_size('${name}')`));
  if (b === 'sqlite')
    return Number(await t.scalar(b, `SELECT sum(pgsize) FROM dbstat WHERE name IN (SELECT name FROM sqlite_schema WHERE tbl_name = '${name}')`));
  // MariaDB: the table's files (InnoDB .ibd, MyISAM .MYD + .MYI), else
  // what information_schema estimates.
  const where = (await t.scalar(b, 'SELECT @@datadir, DATABASE()')).split(/\s+/);
  const files = b === 'innodb' ? ['.ibd'] : ['.MYD', '.MYI'];
  const sizes = files.map(ext => { try { return fs.statSync(path.join(where[0], where[1], name + ext)).size; } catch { return NaN; } });
  if (sizes.every(Number.isFinite)) return sizes.reduce((x, y) => x + y, 0);
  await t.scalar(b, `ANALYZE TABLE ${name}`);
  return Number(await t.scalar(b, `SELECT data_length + index_length FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = '${name}'`));
}

function report(ctx, { done, caches, failures }) {
  const lines = ['## Rows by the million: loads, lookups and size on disk', '',
    `Command: \`${ctx.command('rows', ['ZB_BENCH_ROWS_SIZES'])}\`. Data: the postal layout made by ` +
    '`build/bin/gen --rows N --seed 1` (KEN_ALL\'s 15 columns, UTF-8, CRLF; split records as Japan Post writes them), ' +
    `and the real list (\`${ctx.dataset}\`): ${done.map(x => `${x.s.real ? 'real' : mega(x.s.rows)} ` +
      `(${x.s.lines.toLocaleString('en-US')} lines, ${(x.s.bytes / 1048576).toFixed(0)} MiB)`).join(', ')}.`,
    'Each load replaces a table with the same columns and indexes (the bulk experiment\'s tools): ' +
    '`build/bin/loader --mode bulk --raw` against psql `\\copy`, `LOAD DATA LOCAL INFILE`, the sqlite3 shell\'s ' +
    '`.import`, timed from start to exit, in the same rounds; peak memory is the client process\'s maximum RSS ' +
    '(GNU time; for SQLite the database\'s too). Then a server on the loaded tables: `loadgen -q -k -c 10 -t 3 ' +
    '--keys KEYS --dist D` per backend (pooled), the keys every code of the file (`loader --write-keys`). ' +
    'A size\'s tables are dropped before the next is loaded. On MariaDB zipbench\'s first load of a size is not timed: ' +
    'it sizes the text columns in a pass over the file (its cost: docs/DECISIONS.md), where a reload, every timed one, ' +
    'takes them from the table it replaces, as the native loader is handed them (`CREATE TABLE ... LIKE`).' +
      (done.some(x => x.s.rows >= ONCE_ROWS) ? ` Sizes of ${mega(ONCE_ROWS)} rows or more are loaded once per backend and loader ` +
        '(one round, so no interval: a round of 10^7 rows takes about 40 minutes on 2 vCPUs); their lookups are repeated as the others\'.' : ''),
    `The databases' own caches here: ${Object.entries(caches).map(([b, c]) => `${b} ${c}`).join('; ')}.`,
    ...failures.map(f => `**Not measured:** ${f}.`), ''];

  const loadRows = [], memory = {};
  for (const x of done) for (const b of BACKENDS) {
    const k = `${x.s.name} ${b}`, z = x.loads.get(`${k} zipbench`), n = x.loads.get(`${k} native`);
    if (!z?.values.length && !n?.values.length) continue;
    const rows = x.counts[`${k} zipbench`] || x.counts[`${k} native`] || 0;
    const perM = c => (c?.values.length ? (extraSummary(c, 'seconds').median / (rows / 1e6)).toFixed(2) : '-');
    const kib = c => extraSummary(c, 'kib').median;
    (memory[b] ||= []).push([x.s, kib(z)]);
    loadRows.push([x.s.real ? 'real' : mega(x.s.rows), b, rows.toLocaleString('en-US'), fmtCell(z), fmtCell(n),
                   fmtRatioCI(ratioOf(x.loads, `${k} zipbench`, `${k} native`)), perM(z), perM(n),
                   Number.isFinite(kib(z)) ? (kib(z) / 1024).toFixed(1) : '-', Number.isFinite(kib(n)) ? (kib(n) / 1024).toFixed(1) : '-']);
  }
  lines.push('### Bulk loads: rows/s, zipbench against the native loader', '',
    `The ratio is zipbench's rate over the native loader's in the same round, its 95% interval in brackets (goal: >= ${GOAL} ` +
    'at every size); s/M: seconds per million rows (medians); MiB: peak memory of each loader.', '',
    table(['rows', 'backend', 'rows loaded', 'zipbench rows/s', 'native rows/s', 'zipbench / native', 'zipbench s/M',
           'native s/M', 'zipbench MiB', 'native MiB'], loadRows, 'llrrrrrrrr'));
  const goals = [];
  for (const x of done) for (const b of BACKENDS) {
    const r = ratioOf(x.loads, `${x.s.name} ${b} zipbench`, `${x.s.name} ${b} native`);
    if (!Number.isFinite(r.value)) continue;
    const verdict = Number.isFinite(r.lo) ? (r.lo >= GOAL ? 'reached' : r.hi < GOAL ? 'missed' : 'not shown either way')
                                          : r.value >= GOAL ? `${r.n} round${r.n === 1 ? '' : 's'}, too few for an interval` : 'missed';
    goals.push(`- ${b}, ${x.s.real ? 'the real list' : `${mega(x.s.rows)} rows`}: ${fmtRatioCI(r)} of ${NATIVE[b]}: ${verdict}.`);
  }
  if (goals.length) lines.push(`zipbench's bulk load within ${GOAL}x of the native loader:`, '', ...goals, '');
  const flat = Object.entries(memory).map(([b, xs]) => {
    const gen = xs.filter(([s, k]) => !s.real && Number.isFinite(k)).sort((p, q) => p[0].rows - q[0].rows);
    if (gen.length < 2) return null;
    const [lo, hi] = [gen[0], gen[gen.length - 1]];
    return `- ${b}: ${(lo[1] / 1024).toFixed(1)} MiB at ${mega(lo[0].rows)} rows, ${(hi[1] / 1024).toFixed(1)} MiB at ` +
      `${mega(hi[0].rows)} (${fmtRatio(hi[1] / lo[1])} for ${fmtRatio(hi[0].rows / lo[0].rows, 0)} the rows).`;
  }).filter(Boolean);
  if (flat.length) lines.push('The loader\'s peak memory as the rows grow (it streams the file: flat):', '', ...flat, '');

  const lookRows = [];
  for (const x of done) for (const b of x.loaded)
    lookRows.push([x.s.real ? 'real' : mega(x.s.rows), b, ...DISTS.map(dist => fmtCell(x.lookups.get(`${x.s.name} ${b} lookup ${dist}`))),
                   Number.isFinite(x.disk[b]) ? (x.disk[b] / 1048576).toFixed(0) : '-',
                   DISTS.map(dist => fmtErrors(x.lookups.get(`${x.s.name} ${b} lookup ${dist}`))).filter(Boolean).join('; ')]);
  lines.push('### Lookups and size on disk', '',
    'Answered lookups per second (loadgen -k -c 10, pooled) at uniform keys and at Zipfian ones (YCSB\'s, theta ' +
    '0.99), and the table with its indexes on disk (PostgreSQL: pg_total_relation_size; InnoDB: its .ibd file; ' +
    'MyISAM: .MYD + .MYI; SQLite: its pages, dbstat).', '',
    table(['rows', 'backend', 'uniform req/s', 'Zipfian req/s', 'on disk MiB', 'errors'], lookRows, 'llrrrl'));
  const allCells = done.flatMap(x => [...x.loads.keys().map(k => x.loads.get(k)), ...x.lookups.keys().map(k => x.lookups.get(k))]);
  lines.push(errorNote(done.flatMap(x => x.lookups.keys().map(k => x.lookups.get(k)))), '',
             ...done.map(x => `${x.s.real ? 'Real list' : `${mega(x.s.rows)} rows`}: loads: ${x.loads.machineNote().trim()} ` +
                              `Lookups: ${x.lookups.machineNote().trim() || 'none.'}`), '');

  writeCells(ctx.out, 'rows', allCells);
  // The answer's line (lib/summary.mjs): per backend, the largest size's
  // seconds per million rows and the same-round ratio.
  const largest = done.filter(x => !x.s.real).sort((a, b) => b.s.rows - a.s.rows)[0];
  if (largest) {
    const scale = { provenance: provenance(), rows: largest.s.rows, backends: {} };
    for (const b of largest.loaded) {
      const k = `${largest.s.name} ${b}`, rows = largest.counts[`${k} zipbench`];
      const perM = c => extraSummary(c, 'seconds').median / (rows / 1e6);
      const r = ratioOf(largest.loads, `${k} zipbench`, `${k} native`);
      scale.backends[b] = { native: NATIVE[b], zipbench_s_per_m: perM(largest.loads.get(`${k} zipbench`)),
                            native_s_per_m: perM(largest.loads.get(`${k} native`)), over_native: r };
    }
    fs.mkdirSync(path.join(ctx.out, 'data'), { recursive: true });
    fs.writeFileSync(path.join(ctx.out, 'data', 'rows-scale.json'), JSON.stringify(scale, null, 1) + '\n');
  }
  plots(ctx, done);
  return lines.join('\n');
}

function plots(ctx, done) {
  const gen = done.filter(x => !x.s.real);
  const loadDat = [], lookDat = [];
  for (const x of gen) for (const b of BACKENDS) {
    for (const tool of ['zipbench', 'native']) {
      const c = x.loads.get(`${x.s.name} ${b} ${tool}`);
      if (c?.values.length) loadDat.push([`${b}-${tool}`, x.s.rows, ...errorBar(c.summary).map(v => v.toFixed(0))]);
    }
    for (const dist of DISTS) {
      const c = x.lookups.get(`${x.s.name} ${b} lookup ${dist}`);
      if (c?.values.length) lookDat.push([`${b}-${dist.split(':')[0]}`, x.s.rows, ...errorBar(c.summary).map(v => v.toFixed(0))]);
    }
  }
  const line = (name, dat, title, ylabel) => {
    if (!dat.length) return;
    const file = writeData(ctx.out, `${name}.dat`, dat);
    const series = [...new Set(dat.map(r => r[0]))];
    draw(ctx.out, name, 900, 560, `set logscale xy
set xlabel 'rows in the table (log scale)'
set ylabel '${ylabel}'
set grid
plot ${series.map((sr, i) => `'< awk ''$1=="${sr}"'' ${file}' using 2:3:4:5 with yerrorlines lw 2 dt ${i % 2 + 1} lc ${(i >> 1) + 1} title '${sr}'`).join(', \\\n     ')}`,
    { title, legend: series });
  };
  line('rows', loadDat, 'Bulk loads as the rows grow: rows/s, zipbench and the native loader; bars: 95% CI of the median', 'rows/s (log scale)');
  line('rows-lookups', lookDat, 'Lookups as the rows grow: answered req/s at c=10, uniform and Zipfian keys; bars: 95% CI of the median', 'answered requests/s (log scale)');
}
