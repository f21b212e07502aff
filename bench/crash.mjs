// The crash experiment's driver (scripts/crash; docs/CRASH.md): what each
// durability setting loses in a crash. For each backend, setting and kind
// of crash asked for, one run:
//   1. the database up on powerfs (scripts/crashdb start; SQLite: its file
//      on the mount), the dataset loaded once, the C server started with
//      writes = yes (it makes {table}_hits), the setting applied, and all of
//      it made durable (a checkpoint or FLUSH TABLES, then powerfs --sync):
//      the baseline every run starts from;
//   2. loadgen POSTs /update/B/{key} with --ledger (the acknowledged writes);
//   3. after a random 1-3 s (from --seed), the crash: "process" SIGKILLs
//      every process of the database (SQLite: the server, which is its
//      database), "power" does that and cuts powerfs's power (every write
//      not fsynced is lost);
//   4. loadgen ends, the server is stopped, the database restarted on what
//      survived (SQLite: opened by sqlite3);
//   5. every (code, stamp) of the ledger is checked against {table}_hits
//      (bench/lib/ledger.mjs): an acknowledged write whose row holds a
//      smaller stamp was lost; plus PRAGMA integrity_check (SQLite), CHECK
//      TABLE (MariaDB).
// Each run's result is a JSON line appended to OUT/results.jsonl; a table
// of them ends the output (and OUT/summary.md).
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { run, runJSON, background, runMain, atCleanup, sleep, isStopping } from './lib/run.mjs';
import { waitFor } from './lib/http.mjs';
import { parseLedger, parseRows, checkLedger, parseCheckTable } from './lib/ledger.mjs';
import { provenance, provenanceLine } from './lib/provenance.mjs';
import { SETTINGS, crashCells, parseSetting, settingSql, pgSettingCheck, sqliteSets } from './lib/durability.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);
// The programs of the build (ZB_BUILD, as make's BUILD: build/asan...).
const bin = name => path.join(process.env.ZB_BUILD || 'build', 'bin', name);

export const BACKENDS = ['sqlite', 'pg', 'innodb', 'myisam'];
export const KINDS = ['process', 'power'];
const engineOf = b => ({ sqlite: null, pg: 'pg', innodb: 'mariadb', myisam: 'mariadb' })[b];
const tableOf = b => ({ sqlite: 'crash_zip', pg: 'crash_zip', innodb: 'crash_zip_innodb', myisam: 'crash_zip_myisam' })[b];

const usage = `Usage: scripts/crash [OPTIONS]

The crash experiment (docs/CRASH.md): for each backend, durability setting
and kind of crash, a run of acknowledged updates (loadgen --ledger), a crash
after a random 1-3 s, a restart, and the count of acknowledged writes the
database lost. The databases are scripts/crashdb's, on powerfs.

Options:
  --backend LIST   sqlite, pg, innodb, myisam, comma-separated (default all)
  --setting S      one setting, NAME=VALUE[,NAME=VALUE] (one backend only);
                   default: every setting of each backend:
                     sqlite  journal_mode=delete|wal,synchronous=full|normal|off
                     pg      synchronous_commit=on|off,fsync=on|off
                     innodb  innodb_flush_log_at_trx_commit=1|2|0
                     myisam  as-is
  --kind LIST      process, power (default both)
  --runs N         runs of each (backend, setting, kind) (default 1)
  --seed S         seed of the crash moments and the keys (default 38)
  -c N             loadgen's concurrency (default 8)
  --rows N         a generated dataset of N rows (default 20000)
  --dataset FILE   a KEN_ALL-layout file instead
  --out DIR        results.jsonl and summary.md go there (default build/crash/out)
  -h, --help       this text

Environment: ZB_CRASH_DIR (default build/crash), ZB_CRASH_PORT (the
server's port, default 18270), and scripts/crashdb's ZB_CRASH_PG_PORT,
ZB_CRASH_MY_PORT. What it starts (the server, loadgen, the databases, the
powerfs mount) is stopped and unmounted at the end, also on failure or ^C.
Exit status: 0 when every run completed (whatever it lost), 1 otherwise, 2
on bad usage.
`;

// A seeded draw in [0, 1) (splitmix64).
function rng(seed) {
  let s = BigInt.asUintN(64, BigInt(seed));
  return () => {
    s = BigInt.asUintN(64, s + 0x9e3779b97f4a7c15n);
    let z = s;
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    z ^= z >> 31n;
    return Number(z >> 11n) / 2 ** 53;
  };
}

async function main() {
  const { values: o } = parseArgs({
    options: {
      backend: { type: 'string' }, setting: { type: 'string' }, kind: { type: 'string' },
      runs: { type: 'string' }, seed: { type: 'string' }, c: { type: 'string', short: 'c' },
      rows: { type: 'string' }, dataset: { type: 'string' }, out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (o.help) { process.stdout.write(usage); return 0; }
  const fail = msg => { process.stderr.write(`crash: ${msg}\n`); return 2; };
  const backends = (o.backend || BACKENDS.join(',')).split(',').filter(Boolean);
  for (const b of backends) if (!BACKENDS.includes(b)) return fail(`--backend: no backend ${b}`);
  const kinds = (o.kind || KINDS.join(',')).split(',').filter(Boolean);
  for (const k of kinds) if (!KINDS.includes(k)) return fail(`--kind: ${k} is not process or power`);
  if (o.setting && backends.length !== 1) return fail('--setting goes with one --backend');
  try { if (o.setting) parseSetting(backends[0], o.setting); } catch (e) { return fail(e.message); }
  const runs = Number(o.runs || 1), seed = Number(o.seed || 38), c = Number(o.c || 8), rows = Number(o.rows || 20000);
  if (![runs, c, rows].every(n => Number.isInteger(n) && n > 0) || !Number.isInteger(seed)) return fail('--runs, -c, --rows, --seed: whole numbers');

  const crashDir = path.resolve(process.env.ZB_CRASH_DIR || 'build/crash');
  const ctx = {
    crashDir, mnt: path.join(crashDir, 'mnt'), work: path.join(crashDir, 'work'),
    out: path.resolve(o.out || path.join(crashDir, 'out')),
    port: Number(process.env.ZB_CRASH_PORT || 18270),
    pgPort: Number(process.env.ZB_CRASH_PG_PORT || 25442), myPort: Number(process.env.ZB_CRASH_MY_PORT || 23316),
    c, seed, draw: rng(seed), loaded: new Set(), runNo: 0,
  };
  ctx.env = { ZB_CRASH_DIR: crashDir };
  ctx.log = path.join(ctx.work, 'crash.log');
  fs.mkdirSync(ctx.work, { recursive: true });
  fs.mkdirSync(ctx.out, { recursive: true });
  fs.writeFileSync(ctx.log, '');

  const pc = await run('scripts/port-check', ["the crash experiment's server", String(ctx.port), 'ZB_CRASH_PORT']);
  if (pc.code !== 0) throw new Error(pc.stderr.trim());
  // Whatever happens: the databases stopped, powerfs unmounted.
  atCleanup(() => crashdb(ctx, ['unmount']));

  ctx.dataset = o.dataset ? path.resolve(o.dataset) : path.join(ctx.work, `gen-${rows}.csv`);
  if (!o.dataset) {
    const g = await run(bin('gen'), ['--rows', String(rows), '--seed', '38', '-o', ctx.dataset], { log: ctx.log });
    if (g.code !== 0) throw new Error(`gen failed: ${g.stderr.trim()}`);
  }
  ctx.keys = path.join(ctx.work, 'crash.keys');
  const k = await run(bin('loader'), ['--dataset', ctx.dataset, '--write-keys', ctx.keys], { log: ctx.log });
  if (k.code !== 0) throw new Error(`loader --write-keys failed: ${k.stderr.trim()}`);

  const prov = provenance();   // the tree and machine, read before the first run
  const startedAt = Date.now();
  const results = [];
  let bad = 0;
  for (const b of backends)
    for (const setting of o.setting ? [o.setting] : SETTINGS[b])
      for (const kind of kinds)
        for (let i = 0; i < runs; i++) {
          if (isStopping()) return 130;   // ^C: the cleanup is under way, nothing more is written
          const r = await oneRun(ctx, b, setting, kind);
          if (isStopping()) return 130;
          results.push(r);
          fs.appendFileSync(path.join(ctx.out, 'results.jsonl'), JSON.stringify(r) + '\n');
          console.log(`crash: ${line(r)}`);
          if (r.error) bad++;
        }
  const summary = [`Command: \`scripts/crash ${process.argv.slice(2).join(' ')}\` (${results.length} run${results.length === 1 ? '' : 's'}, ` +
                   `${Math.round((Date.now() - startedAt) / 1000)} s, seed ${seed}, c ${c}).`, '',
                   summaryTable(results), '', provenanceLine(prov)].join('\n');
  fs.writeFileSync(path.join(ctx.out, 'summary.md'), summary + '\n');
  console.log('\n' + summary);
  return bad ? 1 : 0;
}

function line(r) {
  const what = `${r.backend} ${r.setting} ${r.kind} crash after ${r.crashAfterS} s`;
  if (r.error) return `${what}: ERROR ${r.error}`;
  return `${what}: ${r.acknowledged} writes acknowledged, ${r.lost} lost (${r.lostCodes} codes, ${r.missing} rows missing)` +
         `${r.integrity ? `, ${r.integrity.ok ? 'integrity ok' : `INTEGRITY: ${r.integrity.messages.join('; ')}`}` : ''}`;
}

// One row per (backend, setting, kind) of the runs' results (lib/durability.mjs crashCells).
export function summaryTable(results) {
  const rows = [['backend', 'setting', 'crash', 'runs', 'runs that lost writes', 'acknowledged per run', 'lost per run',
                 'lost % per run', 'integrity'], ['---', '---', '---', '---:', '---:', '---:', '---:', '---:', '---']];
  for (const g of crashCells(results).values())
    rows.push([g.backend, g.setting + (g.durable ? ' (durable)' : ''), g.kind, `${g.runs}${g.errors ? ` (+${g.errors} errors)` : ''}`,
               `${g.losing} of ${g.runs}${g.durable && g.losing ? ' **LOST ACKNOWLEDGED WRITES**' : ''}`,
               g.acknowledged, g.lost, g.lostPct, g.integrity]);
  return rows.map(r => `| ${r.join(' | ')} |`).join('\n');
}

async function crashdb(ctx, args, { env = {}, check = true } = {}) {
  const r = await run(path.join(root, 'scripts/crashdb'), args, { env: { ...ctx.env, ...env }, log: ctx.log, timeoutS: 300 });
  if (check && r.code !== 0)
    throw new Error(`scripts/crashdb ${args.join(' ')} failed: ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' | ')}`);
  return r;
}

// --set arguments that point the loader and the server at backend b of the
// crash instances.
function sets(ctx, b) {
  const db = path.join(ctx.crashDir, 'db');
  const s = [`${b}.table=${tableOf(b)}`];
  if (b === 'sqlite') s.push(`sqlite.path=${path.join(ctx.mnt, 'crash.sqlite')}`);
  else if (b === 'pg') s.push(`pg.socket=${db}/run`, `pg.port=${ctx.pgPort}`, `pg.password_file=${db}/pgpass`);
  else s.push(`${b}.socket=${db}/run/mysqld.sock`, `${b}.port=${ctx.myPort}`, `${b}.password_file=${db}/client.cnf`);
  return s.flatMap(x => ['--set', x]);
}

// The database of b up (SQLite: the mount), its table loaded once.
async function up(ctx, b) {
  const e = engineOf(b);
  await crashdb(ctx, e ? ['start', e] : ['mount']);
  if (ctx.loaded.has(b)) return;
  const r = await run(bin('loader'), ['-q', '--conf', 'conf/zipbench.conf', '--backend', b, '--mode', 'bulk',
                                           '--dataset', ctx.dataset, ...sets(ctx, b)], { log: ctx.log, timeoutS: 600 });
  if (r.code !== 0) throw new Error(`the load into ${b} failed: ${r.stderr.trim().split('\n').slice(-2).join(' | ')}`);
  ctx.loaded.add(b);
}

// SQL on a crash instance as its administrator: the rows as text (tab-separated).
async function sql(ctx, b, query) {
  let r;
  if (b === 'sqlite')
    r = await run('sqlite3', ['-batch', '-tabs', '-bail', path.join(ctx.mnt, 'crash.sqlite'), query], { log: ctx.log, timeoutS: 120 });
  else if (b === 'pg')
    r = await crashdb(ctx, ['admin', 'pg', '-d', 'zipbench', '-tA', '-F', '\t', '-c', query], { check: false });
  else
    r = await crashdb(ctx, ['admin', 'mariadb', '-N', '-B', 'zipbench', '-e', query], { check: false });
  if (r.code !== 0) throw new Error(`${b}: ${query.slice(0, 60)}: ${(r.stderr || r.stdout).trim().split('\n').slice(-2).join(' | ')}`);
  return r.stdout;
}

// The setting applied to the running database, and everything made
// durable: the run's baseline. SQLite's are the server's keys.
async function applySetting(ctx, b, setting) {
  if (b === 'pg') {
    await crashdb(ctx, ['admin', 'pg', '-d', 'postgres', '-tA', ...settingSql(b, setting).flatMap(q => ['-c', q])]);
    const check = pgSettingCheck(setting);
    for (let i = 0; ; i++) {
      const now = (await sql(ctx, b, check.sql)).trim();
      if (now === check.want) break;
      if (i > 50) throw new Error(`pg: the settings are ${now} after the reload, not ${check.want}`);
      await sleep(100);
    }
    await sql(ctx, b, 'CHECKPOINT');
  } else if (b === 'innodb') {
    await crashdb(ctx, ['admin', 'mariadb', '-e', `${settingSql(b, setting).join('; ')}; FLUSH TABLES`]);
  } else if (b === 'myisam') {
    await crashdb(ctx, ['admin', 'mariadb', '-e', 'FLUSH TABLES']);
  }
  await crashdb(ctx, ['sync']);
}

async function oneRun(ctx, b, setting, kind) {
  const n = ++ctx.runNo;
  const crashAfterS = Math.round((1 + 2 * ctx.draw()) * 1000) / 1000;
  const seed = ctx.seed * 1000 + n;
  const result = { backend: b, setting, kind, seed, crashAfterS, at: new Date().toISOString() };
  const ledger = path.join(ctx.work, `ledger-${n}.jsonl`);
  fs.rmSync(ledger, { force: true });
  let srv = null;
  try {
    await up(ctx, b);
    const extra = b === 'sqlite' ? sqliteSets(setting) : [];
    srv = background(bin('server'), ['--conf', 'conf/zipbench.conf', '--port', String(ctx.port), '--backends', b,
                                          ...sets(ctx, b), '--set', `${b}.writes=yes`, ...extra],
                     { log: path.join(ctx.work, `server-${n}.log`) });
    if (!(await waitFor(ctx.port, '/health', { timeoutS: 60, alive: srv.alive })))
      throw new Error(`the server did not start (see ${path.join(ctx.work, `server-${n}.log`)})`);
    await applySetting(ctx, b, setting);

    const lg = runJSON(bin('loadgen'), ['-q', '-k', '-c', String(ctx.c), '-t', String(Math.ceil(crashAfterS + 2)),
                                             '-m', 'POST', '--keys', ctx.keys, '--seed', String(seed), '--ledger', ledger,
                                             '--json', `http://127.0.0.1:${ctx.port}/update/${b}/{key}`],
                       { log: ctx.log, timeoutS: 120 });
    await sleep(crashAfterS * 1000);
    const e = engineOf(b);
    if (e) {
      await crashdb(ctx, ['crash', kind, e]);
    } else {
      process.kill(srv.pid, 'SIGKILL');   // the server is SQLite's database
      if (kind === 'power') await crashdb(ctx, ['cut']);
    }
    const l = await lg;
    const rep = l.json[0] || {};
    // loadgen's view: answers (2xx among them), failures (the crash's
    // refused and reset connections), its exit (1 once any failed).
    result.loadgen = { completed: rep.completed ?? null, ok2xx: rep.completed != null ? rep.completed - (rep.non2xx ?? 0) : null,
                       non2xx: rep.non2xx ?? null, failed: rep.failed ?? null, exit: l.code };
    await srv.stop();
    srv = null;

    // The restart, on what survived.
    try {
      await crashdb(ctx, e ? ['start', e] : ['mount']);
    } catch (err) {
      result.restarted = false;
      throw new Error(`no restart: ${err.message}`);
    }
    result.restarted = true;
    const { writes, bad } = parseLedger(fs.existsSync(ledger) ? fs.readFileSync(ledger, 'utf8') : '');
    if (bad.length) result.ledgerBadLines = bad.length;
    Object.assign(result, checkLedger(writes, parseRows(await sql(ctx, b, `SELECT zip_code, stamp FROM ${tableOf(b)}_hits`))));
    if (b === 'sqlite') {
      const ic = (await sql(ctx, b, 'PRAGMA integrity_check')).trim();
      result.integrity = { ok: ic === 'ok', messages: ic.split('\n').slice(0, 5) };
    } else if (b === 'pg') {
      // amcheck: the primary key's B-tree whole, and every row of the heap in it.
      try {
        await sql(ctx, b, `CREATE EXTENSION IF NOT EXISTS amcheck; SELECT bt_index_check('${tableOf(b)}_hits_pkey'::regclass, true)`);
        result.integrity = { ok: true, messages: ['amcheck: ok'] };
      } catch (err) {
        result.integrity = { ok: false, messages: [err.message.slice(0, 200)] };
      }
    } else {
      result.integrity = parseCheckTable(await sql(ctx, b, `CHECK TABLE ${tableOf(b)}_hits`));
    }
  } catch (err) {
    result.error = err.message;
    if (srv) await srv.stop();
    if (isStopping()) return result;
    // A database that cannot come back (or whose table cannot be read) is
    // made anew for the runs after this one.
    await crashdb(ctx, ['destroy'], { check: false });
    ctx.loaded.clear();
  }
  return result;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  await runMain('crash', main);
