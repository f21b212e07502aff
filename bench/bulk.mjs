#!/usr/bin/env node
// The bulk-loading experiment (issue 16): per backend and dataset, in the
// same run, zipbench's bulk mode against the backend's own loader (psql
// \copy, MariaDB's LOAD DATA LOCAL INFILE as mariadb-import runs it, the
// sqlite3 shell's .import) and pgloader for PostgreSQL; then what each does
// with bad rows.
//
//   node bench/bulk.mjs [--quick] [--repeat N]
//
// Each run replaces a table the way a user of that tool would (drop it,
// create it with the same columns and indexes, load), timed from the tool's
// start to its exit; rows/s and MB/s come from that wall time, peak memory
// is the client's maximum RSS (GNU time): for SQLite that is the database
// too, for the servers only the client. zipbench loads the postal list with
// --raw, so every tool loads the same 126,441 lines. Medians of --repeat
// runs (3; --quick: 1 run of a 5,000-row prefix of each file).
//
// Writes $ZB_RESULTS_DIR/RESULTS-bulk.md (default docs) and data/bulk.dat
// (rows/s per case and tool, for scripts/plot). Environment: ZB_BUILD,
// ZB_DATA, ZB_RESULTS_DIR, as the other experiments. Exit status 0 when
// every tool ran, 1 otherwise.
//
// The module's default export has the shape of an experiment of the Node
// bench driver (bench/experiments/NAME.mjs: { title, run(ctx) } returning
// the section); run directly, it makes its own ctx.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export default { title: 'bulk loading against the native loaders', run };

async function run(ctx) {
    const { build, data, out: outDir, quick, repeat } = ctx;
    const work = path.join(build, 'bench', 'bulk');
    fs.mkdirSync(work, { recursive: true });
    const sqliteDb = path.resolve(work, 'bulk.sqlite');
    const loader = path.join(build, 'bin', 'loader');

    // The databases' connection settings, as scripts/db gives them to clients.
    const env = { ...process.env };
    for (const line of spawnSync('scripts/db', ['env'], { encoding: 'utf8' }).stdout.split('\n')) {
        const m = /^export (\w+)=(.*)$/.exec(line);
        if (m) env[m[1]] = m[2].replace(/^'(.*)'$/, '$1');
    }
    const mariadb = ['mariadb', '--no-defaults', '-S', env.ZB_MY_SOCKET, '-u', env.ZB_MY_USER,
                     '--local-infile=1', env.ZB_MY_DATABASE];

    function exec(cmd, argv, input) {
        const res = spawnSync(cmd, argv, { env, input, encoding: 'utf8', maxBuffer: 1 << 26 });
        return { status: res.status, out: (res.stdout || '') + (res.stderr || '') };
    }

    // Runs argv under GNU time: wall seconds (our clock), peak RSS in KiB.
    function timed(argv, input) {
        const rss = path.join(work, 'rss');
        const t0 = process.hrtime.bigint();
        const r = exec('/usr/bin/time', ['-f', '%M', '-o', rss, ...argv], input);
        const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
        const kib = Number(fs.readFileSync(rss, 'utf8').trim().split('\n').pop());
        return { ...r, seconds, kib };
    }

    function sql(backend, text) {
        const r = backend === 'pg' ? exec('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-tA', '-c', text])
                : backend === 'sqlite' ? exec('sqlite3', [sqliteDb, text])
                : exec(mariadb[0], [...mariadb.slice(1), '-N', '-e', text]);
        return r.out.trim();
    }

    // ---- the datasets, and files with bad rows ----

    function prefix(file, lines, name) {
        const out = path.join(work, name);
        const text = fs.readFileSync(file, 'utf8');
        let at = 0;
        for (let i = 0; i < lines && at >= 0; i++) at = text.indexOf('\n', at) + 1 || -1;
        fs.writeFileSync(out, at > 0 ? text.slice(0, at) : text);
        return out;
    }

    const datasets = [
        { name: 'postal', file: path.join(data, 'ken_all.csv'), csv: true },
        { name: 'cities', file: path.join(data, 'cities1000.txt'), csv: false },
    ];
    for (const d of datasets) {
        if (!fs.existsSync(d.file))
            throw new Error(`${d.file} missing: run make dataset`);
        if (quick) d.file = prefix(d.file, 5000, `${d.name}-5000.txt`);
        d.bytes = fs.statSync(d.file).size;
        d.lines = fs.readFileSync(d.file, 'utf8').split('\n').length - 1;
    }
    // The columns of cities, for MariaDB's NULLIF list (its config gives them).
    const described = exec(loader, ['--describe', '-f', 'cities']).out;
    const citiesColumns = (/^columns\s+(.*)$/m.exec(described) || [, ''])[1]
        .split(', ').map((c) => c.split(' ')[0]).filter(Boolean);

    // ---- each tool: replace `table` (whose twin `model` zipbench made) ----

    function zipbench(backend, d, file) {
        const table = `bench_bulk_${d.name}`;
        const argv = [loader, '-q', '--json', '--mode', 'bulk', '-b', backend, '--allow-shrink',
                      '--set', `sqlite.path=${sqliteDb}`];
        if (d.name === 'postal')
            argv.push('--raw', '-f', file, '--set', `${backend}.table=${table}_${backend}`);
        else
            argv.push('-f', 'cities', '--set', `dataset.cities.file=${file}`,
                      '--set', `dataset.cities.table=${table}`);
        return timed(argv);
    }

    function native(backend, d, file, model) {
        const t = `${model}_native`;
        if (backend === 'pg') {
            const opts = d.csv ? "(FORMAT csv)" : "(FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01')";
            return timed(['psql', '-X', '-q', '-1', '-v', 'ON_ERROR_STOP=1',
                          '-c', `DROP TABLE IF EXISTS ${t}; CREATE TABLE ${t} (LIKE ${model} INCLUDING ALL)`,
                          '-c', `\\copy ${t} FROM '${file}' ${opts}`]);
        }
        if (backend === 'sqlite') {
            const schema = exec('sqlite3', [sqliteDb, `.schema ${model}`]).out
                .replaceAll(model, t).replace(/CREATE INDEX (\S+)/g, 'CREATE INDEX n$1');
            const mode = d.csv ? '.import --csv' : '.mode ascii\n.separator "\\t" "\\n"\n.import';
            return timed(['sqlite3', sqliteDb], `DROP TABLE IF EXISTS ${t};\n${schema}\n${mode} ${file} ${t}\n`);
        }
        // MariaDB: empty fields become NULL as in the others (NULLIF), as a careful user writes it.
        const load = d.csv
            ? `FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' ESCAPED BY '' LINES TERMINATED BY '\\r\\n'`
            : `FIELDS TERMINATED BY '\\t' ESCAPED BY '' LINES TERMINATED BY '\\n' ` +
              `(${citiesColumns.map((_, i) => `@v${i}`).join(',')}) SET ` +
              citiesColumns.map((c, i) => `${c} = NULLIF(@v${i}, '')`).join(', ');
        return timed([...mariadb, '-e', `DROP TABLE IF EXISTS ${t}; CREATE TABLE ${t} LIKE ${model}; ` +
                      `LOAD DATA LOCAL INFILE '${path.resolve(file)}' INTO TABLE ${t} CHARACTER SET utf8mb4 ${load}; ` +
                      `SHOW WARNINGS LIMIT 3`]);
    }

    function pgloader(d, file, model) {
        const t = `${model}_pgloader`;
        const cmd = path.join(work, `${d.name}.load`);
        const fields = d.csv ? "fields optionally enclosed by '\"', fields escaped by double-quote, fields terminated by ','"
                             : "fields not enclosed, fields terminated by '\\t'";
        fs.writeFileSync(cmd, `LOAD CSV FROM '${path.resolve(file)}'
      INTO postgresql://${env.PGUSER}@unix:${env.PGHOST}:${env.PGPORT}/${env.PGDATABASE}
      TARGET TABLE ${t}
      WITH ${fields}
      BEFORE LOAD DO $$ DROP TABLE IF EXISTS ${t}; $$, $$ CREATE TABLE ${t} (LIKE ${model} INCLUDING ALL); $$;
    `);
        return timed(['pgloader', '--quiet', cmd]);
    }

    // ---- the runs ----

    const backends = ['sqlite', 'pg', 'innodb', 'myisam'];
    const nativeName = { sqlite: 'sqlite3 .import', pg: 'psql \\copy', innodb: 'LOAD DATA', myisam: 'LOAD DATA' };
    const results = []; // { backend, dataset, tool, rows, runs: [{seconds, kib}] }

    function count(backend, table) {
        return Number(sql(backend, `SELECT count(*) FROM ${table}`)) || 0;
    }

    function record(backend, d, tool, table, r) {
        let entry = results.find((e) => e.backend === backend && e.dataset === d.name && e.tool === tool);
        if (!entry) results.push(entry = { backend, dataset: d.name, tool, runs: [], rows: 0, note: '' });
        if (r.status !== 0) {
            ctx.failed = true;
            entry.note = `exit ${r.status}: ${r.out.trim().split('\n').slice(-2).join(' ').slice(0, 200)}`;
            return;
        }
        entry.rows = count(backend, table);
        entry.runs.push({ seconds: r.seconds, kib: r.kib });
    }

    for (const d of datasets) {
        for (const backend of backends) {
            const model = d.name === 'postal' ? `bench_bulk_postal_${backend}` : `bench_bulk_cities_${backend}`;
            for (let i = 0; i < repeat; i++) {
                record(backend, d, 'zipbench', model, zipbench(backend, d, d.file));
                record(backend, d, nativeName[backend], `${model}_native`, native(backend, d, d.file, model));
                if (backend === 'pg')
                    record(backend, d, 'pgloader', `${model}_pgloader`, pgloader(d, d.file, model));
            }
            ctx.log(`bulk: ${d.name} on ${backend} done`);
        }
    }

    // ---- bad rows: the same file with a non-integer, a short row, a stray quote ----

    function badFile(d) {
        const lines = fs.readFileSync(d.file, 'utf8').split('\n');
        const sep = d.csv ? ',' : '\t';
        const f = (n) => lines[n - 1].split(sep);
        const col = d.csv ? 9 : 14;   // a flag / population: integer columns
        const a = f(100); a[col] = '12x'; lines[99] = a.join(sep);
        lines[199] = f(200).slice(0, 3).join(sep);
        const c = f(300); c[1] = d.csv ? '"x"y' : 'x "y'; lines[299] = c.join(sep);
        const out = path.join(work, `${d.name}-bad.txt`);
        fs.writeFileSync(out, lines.join('\n'));
        return out;
    }

    const badRows = [];
    for (const d of datasets) {
        const file = badFile(d);
        for (const backend of backends) {
            const model = `bench_bulk_${d.name}_${backend}`;
            const tries = [['zipbench', model, zipbench(backend, d, file)],
                           [nativeName[backend], `${model}_native`, native(backend, d, file, model)]];
            if (backend === 'pg') tries.push(['pgloader', `${model}_pgloader`, pgloader(d, file, model)]);
            for (const [tool, table, r] of tries) {  /* zipbench's failed: its model table stays */
                const said = r.out.split('\n').map((l) => l.trim())
                    .filter((l) => /error|warn|invalid|expected|fail|truncat|unescaped|unterminated|not an|column|line/i.test(l))
                    .slice(0, 2).join(' / ').replaceAll('|', '\\|').slice(0, 260);
                badRows.push({ dataset: d.name, backend, tool, status: r.status, rows: count(backend, table),
                               said: said || '(nothing)' });
            }
        }
    }

    // ---- the report ----

    const median = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1;
        return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
    const fmt = (n) => Math.round(n).toLocaleString('en-US');
    const rate = (e) => e.runs.length ? e.rows / median(e.runs.map((r) => r.seconds)) : NaN;
    const lines = [];
    const say = (s = '') => lines.push(s);
    say('## The bulk-loading experiment: zipbench against the native loaders');
    say();
    say(`Command: \`node bench/bulk.mjs${quick ? ' --quick' : ''}\` (repeat ${repeat}${quick ? ', a 5,000-row prefix of each file' : ''}).`);
    say(`Machine: ${spawnSync('nproc').stdout.toString().trim()} cores, ${spawnSync('uname', ['-sr']).stdout.toString().trim()}, ${new Date().toISOString().slice(0, 10)}.`);
    say(`Datasets: ${datasets.map((d) => `${d.name} \`${d.file}\` (${d.lines.toLocaleString('en-US')} lines, ${(d.bytes / 1048576).toFixed(1)} MiB)`).join('; ')}.`);
    say();
    say('Each tool replaces a table with the same columns and indexes (drop, create, load), timed from its start to its exit;');
    say('zipbench also counts the rows before it swaps its table in. Peak memory is the client process\'s (for SQLite the database too).');
    say();
    say('| dataset | backend | tool | rows | seconds (median) | rows/s | MB/s | peak MiB | zipbench / this |');
    say('|---|---|---|---:|---:|---:|---:|---:|---:|');
    const targets = [];
    for (const d of datasets) {
        for (const backend of backends) {
            const group = results.filter((e) => e.dataset === d.name && e.backend === backend);
            const ours = group.find((e) => e.tool === 'zipbench');
            for (const e of group) {
                const secs = e.runs.length ? median(e.runs.map((r) => r.seconds)) : NaN;
                const ratio = rate(ours) / rate(e);
                say(`| ${d.name} | ${backend} | ${e.tool} | ${fmt(e.rows)} | ${secs.toFixed(3)} | ${fmt(rate(e))} | ` +
                    `${(d.bytes / 1048576 / secs).toFixed(1)} | ${(median(e.runs.map((r) => r.kib)) / 1024).toFixed(1)} | ` +
                    `${e.tool === 'zipbench' ? '' : `${ratio.toFixed(2)}x`}${e.note ? ` ${e.note}` : ''} |`);
                if (e.tool !== 'zipbench' && e.tool !== 'pgloader')
                    targets.push({ d: d.name, backend, ratio });
            }
        }
    }
    say();
    for (const t of targets)
        say(`Target: zipbench bulk ≥ 1.0x ${nativeName[t.backend]} on ${t.backend}, ${t.d}: ${t.ratio.toFixed(3)}x, ` +
            `${quick ? 'not judged (--quick: on a prefix, fixed costs weigh most)' : t.ratio >= 1 ? 'met' : 'NOT met'}.  `);
    say();
    say('### Bad rows');
    say();
    say('The same files with three bad rows: line 100 has `12x` in an integer column, line 200 only three fields,');
    say('line 300 a stray quote. Each tool replaces its table; "rows" is what the table holds afterwards');
    say(`(of ${datasets.map((d) => `${d.lines - (d.csv ? 3 : 2)} good rows in ${d.name}`).join(', ')}:`);
    say('a quote inside a tab-separated field without quoting is text, and that row is good).');
    say();
    say('| dataset | backend | tool | exit | rows | what it said |');
    say('|---|---|---|---:|---:|---|');
    for (const b of badRows)
        say(`| ${b.dataset} | ${b.backend} | ${b.tool} | ${b.status} | ${fmt(b.rows)} | ${b.said} |`);

    fs.mkdirSync(path.join(outDir, 'data'), { recursive: true });
    const tools = ['zipbench', 'native', 'pgloader'];
    fs.writeFileSync(path.join(outDir, 'data', 'bulk.dat'), ['case ' + tools.join(' '),
        ...datasets.flatMap((d) => backends.map((b) => {
            const g = results.filter((e) => e.dataset === d.name && e.backend === b);
            const pick = (t) => g.find((e) => t === 'native' ? e.tool === nativeName[b] : e.tool === t);
            return `${b}/${d.name} ` + tools.map((t) => pick(t) ? rate(pick(t)).toFixed(1) : 'NaN').join(' ');
        }))].join('\n') + '\n');
    return lines.join('\n');
}

// Run directly: today's scripts/bench-bulk.
if (process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
    process.chdir(root);
    const args = process.argv.slice(2);
    const quick = args.includes('--quick');
    const repeat = args.includes('--repeat') ? Number(args[args.indexOf('--repeat') + 1]) : quick ? 1 : 3;
    if (args.includes('-h') || args.includes('--help') || !(repeat >= 1)) {
        const text = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1);
        console.log(text.slice(0, text.findIndex((l) => !l.startsWith('//'))).map((l) => l.slice(3)).join('\n'));
        process.exit(repeat >= 1 ? 0 : 2);
    }
    const ctx = { build: process.env.ZB_BUILD || 'build', data: process.env.ZB_DATA || 'build',
                  out: process.env.ZB_RESULTS_DIR || 'docs', quick, repeat, failed: false,
                  log: (m) => process.stderr.write(m + '\n') };
    const section = await run(ctx);
    fs.writeFileSync(path.join(ctx.out, 'RESULTS-bulk.md'), section + '\n');
    process.stdout.write(section + '\n');
    process.exit(ctx.failed ? 1 : 0);
}
