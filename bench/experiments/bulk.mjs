// Experiment: bulk loading. Per backend and dataset, in the same
// run, zipbench's bulk mode against the backend's own loader (psql \copy,
// MariaDB's LOAD DATA LOCAL INFILE as mariadb-import runs it, the sqlite3
// shell's .import) and pgloader for PostgreSQL; then what each tool does
// with bad rows.
//
// Each run replaces a table as a user of that tool would (drop it, create
// it with the same columns and indexes as zipbench's, load), timed from the
// tool's start to its exit: rows/s and MB/s come from that wall time; peak
// memory is the client's maximum RSS (GNU time), for SQLite the database
// too, for the servers only the client. zipbench loads the postal list
// with --raw, so every tool loads the same 126,441 lines; --quick loads a
// 5,000-line prefix of each file, where fixed costs weigh most, and judges
// no target.
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell, writeCells } from '../lib/cells.mjs';
import { table, fmtRatio } from '../lib/table.mjs';
import { barPlot } from '../lib/plot.mjs';
import { run } from '../lib/run.mjs';
import { dbEnv } from '../lib/services.mjs';

const BACKENDS = ['sqlite', 'pg', 'innodb', 'myisam'];
export const NATIVE = { sqlite: 'sqlite3 .import', pg: 'psql \\copy', innodb: 'LOAD DATA', myisam: 'LOAD DATA' };

export default {
  title: 'bulk loading against the native loaders',
  // Each plot's caption, under this section in RESULTS.md.
  plots: {
    bulk: "Rows per second of a bulk load of each dataset: zipbench's loader beside each database's own loader (psql \\copy, LOAD DATA LOCAL, sqlite3 .import) and pgloader. Bars: the 95% interval of the median.",
  },
  async run(ctx) {
    const work = path.join(ctx.work, 'bulk');
    fs.mkdirSync(work, { recursive: true });
    const env = await dbEnv(ctx);
    const t = tools(ctx, work, env);
    const datasets = prepare(ctx, work);
    t.citiesColumns = await columnsOf(ctx, 'cities');

    const cells = new Cells(ctx, 'bulk', { ownIo: true });
    const rows = {};   // cell key -> rows the table held after its last run
    for (const d of datasets) for (const b of BACKENDS) {
      const model = `bench_bulk_${d.name}_${b}`;
      const each = [['zipbench', model, () => t.zipbench(b, d, d.file)],
                    [NATIVE[b], `${model}_native`, () => t.native(b, d, d.file, model)]];
      if (b === 'pg') each.push(['pgloader', `${model}_pgloader`, () => t.pgloader(d, d.file, model)]);
      for (const [tool, target, go] of each) {
        const key = `${d.name} ${b} ${tool}`;
        cells.add(key, async () => {
          const r = await go();
          if (r.code !== 0) { ctx.log(`${key}: exit ${r.code}: ${tail(r)}`); return NaN; }
          rows[key] = await t.count(b, target);
          return { value: rows[key] / r.seconds, seconds: r.seconds, kib: r.kib };
        });
      }
    }
    await cells.measure();

    const lines = [
      '## Bulk loading: zipbench against the native loaders', '',
      `Command: \`${ctx.command('bulk')}\`: per dataset and backend, \`build/bin/loader --mode bulk\`` +
        ' (the postal list with `--raw`), the native loader, and pgloader for PostgreSQL' +
        (ctx.quick ? ', each on a 5,000-line prefix of the file.' : '.'),
      `Datasets: ${datasets.map(d => `${d.name} \`${d.file}\` (${d.lines.toLocaleString('en-US')} lines, ` +
        `${(d.bytes / 1048576).toFixed(1)} MiB)`).join('; ')}.`, '',
      'Each tool replaces a table with the same columns and indexes (drop, create, load), timed from its',
      'start to its exit; zipbench also checks the row count before it swaps its table in. Peak memory is',
      "the client process's (for SQLite the database's too).", '',
    ];
    const body = [], targets = [];
    for (const d of datasets) for (const b of BACKENDS) {
      const rate = k => cells.median(k);
      for (const tool of ['zipbench', NATIVE[b], ...(b === 'pg' ? ['pgloader'] : [])]) {
        const key = `${d.name} ${b} ${tool}`, c = cells.get(key);
        const secs = c.values.length ? median(c.extras.map(e => e.seconds)) : NaN;
        const kib = c.values.length ? median(c.extras.map(e => e.kib)) : NaN;
        const ratio = rate(`${d.name} ${b} zipbench`) / rate(key);
        body.push([d.name, b, tool, rows[key] ?? '-', fmtCell(c), (d.bytes / 1048576 / secs).toFixed(1),
                   (kib / 1024).toFixed(1), tool === 'zipbench' ? '' : fmtRatio(ratio)]);
        if (tool === NATIVE[b]) targets.push({ d: d.name, b, ratio });
      }
    }
    lines.push(table(['dataset', 'backend', 'tool', 'rows', 'rows/s median [95% CI]', 'MB/s', 'peak MiB',
                      'zipbench / this'], body, 'lllrrrrr'), cells.machineNote(), '');
    for (const x of targets)
      lines.push(`zipbench bulk / ${NATIVE[x.b]} on ${x.b}, ${x.d}: ${fmtRatio(x.ratio, 3)}` +
                 `${ctx.quick ? ' (--quick: one run)' : x.ratio >= 1 ? ', as fast or faster' : ', slower'}.  `);
    lines.push('', 'On MariaDB both sides run the same LOAD DATA, so the server decides; where the time goes and what',
               'was tried to beat it: docs/LOADER.md.');
    lines.push('', ...(await badRows(ctx, t, datasets)));
    writeCells(ctx.out, 'bulk', cells.keys().map(k => cells.get(k)));
    const series = ['zipbench', 'native', 'pgloader'];
    barPlot(ctx.out, 'bulk', {
      title: 'Bulk loading: rows per second, zipbench against the native loaders and pgloader; bars: 95% CI of the median',
      ylabel: 'rows/s', series,
      groups: datasets.flatMap(d => BACKENDS.map(b => ({ label: `${b}/${d.name}`, bars: Object.fromEntries(
        [['zipbench', 'zipbench'], ['native', NATIVE[b]], ['pgloader', 'pgloader']]
          .map(([sname, tool]) => [sname, cells.get(`${d.name} ${b} ${tool}`)?.summary])) }))),
    });
    return lines.join('\n');
  },
};

const median = a => { const s = [...a].sort((x, y) => x - y), m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const tail = r => (r.stdout + r.stderr).trim().split('\n').slice(-2).join(' ').slice(0, 200);

// The two datasets (a prefix of each with --quick), with their sizes.
function prepare(ctx, work) {
  const all = [{ name: 'postal', file: path.join(ctx.data, 'ken_all.csv'), csv: true },
               { name: 'cities', file: path.join(ctx.data, 'cities1000.txt'), csv: false }];
  for (const d of all) {
    if (!fs.existsSync(d.file)) throw new Error(`${d.file} missing: run make dataset`);
    if (ctx.quick) {
      const text = fs.readFileSync(d.file, 'utf8');
      let at = 0;
      for (let i = 0; i < 5000 && at >= 0; i++) at = text.indexOf('\n', at) + 1 || -1;
      d.file = path.join(work, `${d.name}-5000.txt`);
      fs.writeFileSync(d.file, at > 0 ? text.slice(0, at) : text);
    }
    d.bytes = fs.statSync(d.file).size;
    d.lines = fs.readFileSync(d.file, 'utf8').split('\n').length - 1;
  }
  return all;
}

// A dataset's column names, as the config gives them (loader --describe).
async function columnsOf(ctx, dataset) {
  const r = await run(ctx.bin('loader'), ['--describe', '--conf', ctx.conf, '-f', dataset]);
  const m = /^columns\s+(.*)$/m.exec(r.stdout);
  if (!m) throw new Error(`loader --describe -f ${dataset}: ${tail(r)}`);
  return m[1].split(', ').map(c => c.split(' ')[0]);
}

// Each tool, replacing its table; {code, stdout, stderr, seconds, kib}. A
// dataset d is {name, csv}: csv, a file in the postal layout (loaded
// --raw, the table bench_bulk_NAME_B), else the cities' tab-separated one.
// The rows experiment loads its generated files through the same tools
// (timeoutS: the longest a load may take before it is killed).
export function tools(ctx, work, env, { timeoutS = 900 } = {}) {
  const sqliteDb = path.resolve(work, 'bulk.sqlite');
  // Where the databases have passwords (scripts/db keeps them in ZB_DB_DIR),
  // MariaDB's client reads its option file and pgloader gets libpq's.
  const myCnf = path.join(env.ZB_DB_DIR || '', 'client.cnf');
  const mariadb = ['mariadb', ...(fs.existsSync(myCnf) ? [`--defaults-file=${myCnf}`]
                                   : ['--no-defaults', '-S', env.ZB_MY_SOCKET, '-u', env.ZB_MY_USER]),
                   '--local-infile=1', env.ZB_MY_DATABASE];
  const pgPassword = (() => {
    try {
      const line = fs.readFileSync(env.PGPASSFILE, 'utf8').split('\n')
        .find(l => l.split(':')[3] === env.PGUSER);
      return line ? line.split(':').slice(4).join(':') : '';
    } catch { return ''; }
  })();
  const opts = { env, log: ctx.logFile, timeoutS };
  // GNU time for the peak RSS; the wall time is run()'s own clock.
  async function timed(argv, input, extraEnv) {
    const rss = path.join(work, 'rss');
    fs.rmSync(rss, { force: true });
    const r = await run('/usr/bin/time', ['-f', '%M', '-o', rss, ...argv],
                        { ...opts, input, env: extraEnv ? { ...env, ...extraEnv } : env });
    r.kib = fs.existsSync(rss) ? Number(fs.readFileSync(rss, 'utf8').trim().split('\n').pop()) : NaN;
    return r;
  }
  const self = {
    citiesColumns: [],
    sqliteDb,
    // One statement's answer, as text, in backend b's database.
    async scalar(b, q) {
      const r = b === 'pg' ? await run('psql', ['-X', '-q', '-tA', '-c', q], opts)
              : b === 'sqlite' ? await run('sqlite3', [sqliteDb, q], opts)
              : await run(mariadb[0], [...mariadb.slice(1), '-N', '-e', q], opts);
      return r.stdout.trim();
    },
    async count(b, tableName) {
      return Number(await self.scalar(b, `SELECT count(*) FROM ${tableName}`)) || 0;
    },
    zipbench(b, d, file) {
      const argv = [ctx.bin('loader'), '-q', '--json', '--conf', ctx.conf, '--mode', 'bulk', '-b', b,
                    '--allow-shrink', '--set', `sqlite.path=${sqliteDb}`];
      if (d.csv)
        argv.push('--raw', '-f', file, '--set', `${b}.table=bench_bulk_${d.name}_${b}`);
      else
        argv.push('-f', 'cities', '--set', `dataset.cities.file=${file}`, '--set', 'dataset.cities.table=bench_bulk_cities');
      return timed(argv);
    },
    native(b, d, file, model) {
      const t = `${model}_native`;
      if (b === 'pg') {
        const how = d.csv ? '(FORMAT csv)' : "(FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01')";
        return timed(['psql', '-X', '-q', '-1', '-v', 'ON_ERROR_STOP=1',
                      '-c', `DROP TABLE IF EXISTS ${t}; CREATE TABLE ${t} (LIKE ${model} INCLUDING ALL)`,
                      '-c', `\\copy ${t} FROM '${file}' ${how}`]);
      }
      if (b === 'sqlite') {
        return (async () => {
          const schema = (await run('sqlite3', [sqliteDb, `.schema ${model}`], opts)).stdout
            .replaceAll(model, t).replace(/CREATE INDEX (\S+)/g, 'CREATE INDEX n$1');
          const mode = d.csv ? '.import --csv' : '.mode ascii\n.separator "\\t" "\\n"\n.import';
          return timed(['sqlite3', sqliteDb], `DROP TABLE IF EXISTS ${t};\n${schema}\n${mode} ${file} ${t}\n`);
        })();
      }
      // MariaDB: empty fields NULL as in the others (NULLIF), as a careful user writes it.
      const fields = d.csv
        ? `FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' ESCAPED BY '' LINES TERMINATED BY '\\r\\n'`
        : `FIELDS TERMINATED BY '\\t' ESCAPED BY '' LINES TERMINATED BY '\\n' ` +
          `(${self.citiesColumns.map((_, i) => `@v${i}`).join(',')}) SET ` +
          self.citiesColumns.map((c, i) => `${c} = NULLIF(@v${i}, '')`).join(', ');
      return timed([...mariadb, '-e', `DROP TABLE IF EXISTS ${t}; CREATE TABLE ${t} LIKE ${model}; ` +
                    `LOAD DATA LOCAL INFILE '${path.resolve(file)}' INTO TABLE ${t} CHARACTER SET utf8mb4 ` +
                    `${fields}; SHOW WARNINGS LIMIT 3`]);
    },
    pgloader(d, file, model) {
      const t = `${model}_pgloader`, cmd = path.join(work, `${d.name}.load`);
      const fields = d.csv
        ? "fields optionally enclosed by '\"', fields escaped by double-quote, fields terminated by ','"
        : "fields not enclosed, fields terminated by '\\t'";
      // No password in the command file (it stays in build/ after the run):
      // pgloader takes it from PGPASSWORD, given to its process alone; the
      // file is 0600 all the same (created anew, so the mode holds).
      fs.rmSync(cmd, { force: true });
      fs.writeFileSync(cmd, `LOAD CSV FROM '${path.resolve(file)}'
  INTO postgresql://${env.PGUSER}@unix:${env.PGHOST}:${env.PGPORT}/${env.PGDATABASE}
  TARGET TABLE ${t}
  WITH ${fields}
  BEFORE LOAD DO $$ DROP TABLE IF EXISTS ${t}; $$, $$ CREATE TABLE ${t} (LIKE ${model} INCLUDING ALL); $$;
`, { mode: 0o600 });
      return timed(['pgloader', '--quiet', cmd], undefined, pgPassword ? { PGPASSWORD: pgPassword } : null);
    },
  };
  return self;
}

// The same files with three bad rows; what each tool did, and what its
// table held afterwards.
async function badRows(ctx, t, datasets) {
  const out = [];
  for (const d of datasets) {
    const lines = fs.readFileSync(d.file, 'utf8').split('\n');
    const sep = d.csv ? ',' : '\t';
    const f = n => lines[n - 1].split(sep);
    const a = f(100); a[d.csv ? 9 : 14] = '12x'; lines[99] = a.join(sep);     // an integer column
    lines[199] = f(200).slice(0, 3).join(sep);                               // three fields
    const c = f(300); c[1] = d.csv ? '"x"y' : 'x "y'; lines[299] = c.join(sep); // a stray quote
    const file = path.join(ctx.work, 'bulk', `${d.name}-bad.txt`);
    fs.writeFileSync(file, lines.join('\n'));
    for (const b of BACKENDS) {
      const model = `bench_bulk_${d.name}_${b}`;
      const tries = [['zipbench', model, () => t.zipbench(b, d, file)],
                     [NATIVE[b], `${model}_native`, () => t.native(b, d, file, model)]];
      if (b === 'pg') tries.push(['pgloader', `${model}_pgloader`, () => t.pgloader(d, file, model)]);
      for (const [tool, target, go] of tries) {
        const r = await go();
        const said = (r.stdout + r.stderr).split('\n').map(l => l.trim())
          .filter(l => /-bad\.txt|error|warn|invalid|expected|fail|truncat|unterminated|column/i.test(l))
          .slice(0, 2).join(' / ').replaceAll('|', '\\|').slice(0, 260);
        out.push([d.name, b, tool, r.code, await t.count(b, target), said || '(nothing)']);
      }
    }
  }
  return ['### Bad rows', '',
    'The same files with three bad rows: line 100 has `12x` in an integer column, line 200 only three',
    'fields, line 300 a stray quote (text in the tab-separated cities, which has no quoting: that row is',
    'good). Each tool replaces its table as above; "rows" is what the table holds afterwards. zipbench',
    'fails the load at the first bad row, keeps the table it had, and names every bad row.', '',
    table(['dataset', 'backend', 'tool', 'exit', 'rows', 'what it said'], out, 'lllrrl')];
}
