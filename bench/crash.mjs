// The crash experiment's driver (scripts/crash; docs/CRASH.md): what each
// durability setting loses in a crash, and what it recovers to. For each
// backend, setting and kind of crash asked for, one run:
//   1. the database up on powerfs (scripts/crashdb start; SQLite: its file
//      on the mount), the dataset loaded once, the C server started with
//      writes = yes (it makes {table}_hits), the setting applied, and all of
//      it made durable (a checkpoint or FLUSH TABLES, then powerfs --sync):
//      the baseline every run starts from, read whole ({table}_hits);
//   2. powerfs's fault mode for the kind (clear-cache, torn-op, torn-seq,
//      no-dir-sync; fsync-eio is set later), then loadgen --threads 1 POSTs
//      /update/B/{key} with --ledger (the acknowledged writes, in the order
//      they were acknowledged);
//   3. after a random 1-3 s (from --seed), the crash: "process" SIGKILLs
//      every process of the database (SQLite: the server, which is its
//      database); every other kind does that and cuts powerfs's power with
//      its fault mode. fsync-eio sets its fault then, and cuts FAULT_S later:
//      what did the database do once an fsync failed?
//   4. loadgen ends, the server is stopped, the database restarted on what
//      survived (SQLite: opened by sqlite3), timed: does it start, and how
//      long does its recovery take?
//   5. the whole table is audited against the baseline and the ledger
//      (bench/lib/ledger.mjs checkLedger: acknowledged writes lost, rows
//      missing or no write explains, later writes kept while an earlier one
//      is lost), and the engine's own check runs: PRAGMA integrity_check
//      (SQLite), amcheck (PostgreSQL), CHECK TABLE (MariaDB).
// Each run's result is a JSON line appended to OUT/results.jsonl; tables
// of them end the output (and OUT/summary.md).
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { run, runJSON, background, runMain, atCleanup, sleep, isStopping } from './lib/run.mjs';
import { waitFor } from './lib/http.mjs';
import { parseLedger, parseRows, checkLedger, parseCheckTable } from './lib/ledger.mjs';
import { provenance, provenanceLine } from './lib/provenance.mjs';
import { CRASH_SETTINGS, DURABLE, KINDS, crashCells, crashMatrix, parseSetting, settingSql, pgSettingCheck, sqliteSets,
         startEnv } from './lib/durability.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);
// The programs of the build (ZB_BUILD, as make's BUILD: build/asan...).
const bin = name => path.join(process.env.ZB_BUILD || 'build', 'bin', name);

export const BACKENDS = ['sqlite', 'pg', 'innodb', 'myisam'];
const engineOf = b => ({ sqlite: null, pg: 'pg', innodb: 'mariadb', myisam: 'mariadb' })[b];
const tableOf = b => ({ sqlite: 'crash_zip', pg: 'crash_zip', innodb: 'crash_zip_innodb', myisam: 'crash_zip_myisam' })[b];
// fsync-eio: how long the run goes on once its fault is set, before the
// cut; torn-op: how long it waits for the write that cuts the power.
const FAULT_S = 1.5;

const usage = `Usage: scripts/crash [OPTIONS]

The crash experiment (docs/CRASH.md): for each backend, durability setting
and kind of crash, a run of acknowledged updates (loadgen --ledger), a crash
after a random 1-3 s, a restart, the acknowledged writes the database lost,
and an audit of what it recovered to. The databases are scripts/crashdb's,
on powerfs.

Options:
  --backend LIST   sqlite, pg, innodb, myisam, comma-separated (default all)
  --setting S      one setting, NAME=VALUE[,NAME=VALUE] (one backend only);
                   default: every setting of each backend:
                     sqlite  journal_mode=delete|wal,synchronous=full|normal|off
                     pg      synchronous_commit=on|off,fsync=on|off
                     innodb  innodb_flush_log_at_trx_commit=1|2|0, and 1 with
                             innodb_doublewrite=off
                     myisam  as-is
  --durable        only the settings that promise durability (SQLite FULL in
                   both journal modes, PostgreSQL synchronous_commit=on with
                   fsync=on, InnoDB at 1 with its doublewrite on and off), and
                   MyISAM, which promises least
  --non-durable    the settings --durable leaves out
  --kind LIST      ${KINDS.join(', ')}
                   (default process,power): process is a SIGKILL of the
                   database; the others a SIGKILL and a power cut with that
                   fault of powerfs (power: clear-cache; docs/CRASH.md)
  --runs N         runs of each (backend, setting, kind) (default 1)
  --seed S         seed of the crash moments, the keys and the faults (default 38)
  -c N             loadgen's concurrency (default 8)
  --rows N         a generated dataset of N rows (default 20000)
  --dataset FILE   a KEN_ALL-layout file instead
  --out DIR        each run is appended to DIR/results.jsonl, the command to
                   DIR/commands.txt, and DIR/summary.md is made of every run
                   there (default build/crash/out)
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

// The settings of backend b a run goes through: --durable's are those that
// promise durability and MyISAM's; --non-durable's the others.
function settingsOf(b, o) {
  if (o.setting) return [o.setting];
  const durable = s => b === 'myisam' || DURABLE.has(`${b} ${s}`);
  return CRASH_SETTINGS[b].filter(s => (o.durable ? durable(s) : o['non-durable'] ? !durable(s) : true));
}

async function main() {
  const { values: o } = parseArgs({
    options: {
      backend: { type: 'string' }, setting: { type: 'string' }, kind: { type: 'string' }, durable: { type: 'boolean' },
      'non-durable': { type: 'boolean' },
      runs: { type: 'string' }, seed: { type: 'string' }, c: { type: 'string', short: 'c' },
      rows: { type: 'string' }, dataset: { type: 'string' }, out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (o.help) { process.stdout.write(usage); return 0; }
  const fail = msg => { process.stderr.write(`crash: ${msg}\n`); return 2; };
  const backends = (o.backend || BACKENDS.join(',')).split(',').filter(Boolean);
  for (const b of backends) if (!BACKENDS.includes(b)) return fail(`--backend: no backend ${b}`);
  const kinds = (o.kind || 'process,power').split(',').filter(Boolean);
  for (const k of kinds) if (!KINDS.includes(k)) return fail(`--kind: ${k} is not one of ${KINDS.join(', ')}`);
  if (o.setting && backends.length !== 1) return fail('--setting goes with one --backend');
  if ([o.setting, o.durable, o['non-durable']].filter(Boolean).length > 1) return fail('one of --setting, --durable, --non-durable');
  try { if (o.setting) parseSetting(backends[0], o.setting); } catch (e) { return fail(e.message); }
  const runs = Number(o.runs || 1), seed = Number(o.seed || 38), c = Number(o.c || 8), rows = Number(o.rows || 20000);
  if (![runs, c, rows].every(n => Number.isInteger(n) && n > 0) || !Number.isInteger(seed)) return fail('--runs, -c, --rows, --seed: whole numbers');

  const crashDir = path.resolve(process.env.ZB_CRASH_DIR || 'build/crash');
  const ctx = {
    crashDir, mnt: path.join(crashDir, 'mnt'), work: path.join(crashDir, 'work'),
    out: path.resolve(o.out || path.join(crashDir, 'out')),
    port: Number(process.env.ZB_CRASH_PORT || 18270),
    pgPort: Number(process.env.ZB_CRASH_PG_PORT || 25442), myPort: Number(process.env.ZB_CRASH_MY_PORT || 23316),
    c, seed, draw: rng(seed), loaded: new Set(), runNo: 0, started: {},
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
    for (const setting of settingsOf(b, o))
      for (const kind of kinds)
        for (let i = 0; i < runs; i++) {
          if (isStopping()) return 130;   // ^C: the cleanup is under way, nothing more is written
          const r = await oneRun(ctx, b, setting, kind, i);
          if (isStopping()) return 130;
          results.push(r);
          fs.appendFileSync(path.join(ctx.out, 'results.jsonl'), JSON.stringify(r) + '\n');
          console.log(`crash: ${line(r)}`);
          if (r.error) bad++;
        }
  // The summary is of every run OUT holds: a recording may take more than
  // one command (the durable settings under every kind, the others under
  // some), each named.
  fs.appendFileSync(path.join(ctx.out, 'commands.txt'),
                    `\`scripts/crash ${process.argv.slice(2).join(' ')}\` (${results.length} run${results.length === 1 ? '' : 's'}, ` +
                    `${Math.round((Date.now() - startedAt) / 1000)} s, seed ${seed}, c ${c})\n`);
  const commands = fs.readFileSync(path.join(ctx.out, 'commands.txt'), 'utf8').trim().split('\n');
  const all = fs.readFileSync(path.join(ctx.out, 'results.jsonl'), 'utf8').split('\n').filter(Boolean).map(l => JSON.parse(l));
  const summary = [`${commands.length > 1 ? 'Commands' : 'Command'}: ${commands.join('; ')}.`, '',
                   matrixTable(all), '', summaryTable(all), '', provenanceLine(prov)].join('\n');
  fs.writeFileSync(path.join(ctx.out, 'summary.md'), summary + '\n');
  console.log('\n' + summary);
  return bad ? 1 : 0;
}

function line(r) {
  const what = `${r.backend} ${r.setting} ${r.kind}${r.fault && r.kind !== 'process' ? ` (${r.fault})` : ''} crash after ${r.crashAfterS} s`;
  if (r.error) return `${what}: ERROR ${r.error}`;
  if (r.started === false) return `${what}: ${r.acknowledged} writes acknowledged; THE DATABASE DID NOT START: ${r.startError}`;
  return `${what}: ${r.acknowledged} writes acknowledged, ${r.lost} lost (${r.lostCodes} codes), ` +
         `${r.stateExisted ? 'a state that existed' : `A STATE THAT NEVER EXISTED: ${r.findings.join('; ')}`}, ` +
         `recovery ${r.recoveryS} s${r.integrity ? `, ${r.integrity.ok ? 'integrity ok' : `INTEGRITY: ${r.integrity.messages.join('; ')}`}` : ''}` +
         `${r.faultOutcome ? `, ${r.faultOutcome}` : ''}`;
}

// A row per backend and setting, a column per kind of crash (the runs'
// results; lib/durability.mjs crashMatrix).
export function matrixTable(results) {
  const m = crashMatrix(results);
  const rows = [['backend', 'setting', ...m.kinds.map(k => (k === 'power' ? 'power (clear-cache)' : k))],
                ['---', '---', ...m.kinds.map(() => '---')]];
  for (const r of m.rows) rows.push([r.backend, r.setting + (r.durable ? ' (durable)' : ''), ...r.cells]);
  return rows.map(r => `| ${r.join(' | ')} |`).join('\n');
}

// One row per (backend, setting, kind) of the runs' results (lib/durability.mjs crashCells).
export function summaryTable(results) {
  const rows = [['backend', 'setting', 'crash', 'runs', 'runs that lost writes', 'acknowledged per run', 'lost per run',
                 'lost % per run', 'state that existed', 'started', 'recovery s', 'integrity', 'fault'],
                ['---', '---', '---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---', '---']];
  for (const g of crashCells(results).values())
    rows.push([g.backend, g.setting + (g.durable ? ' (durable)' : ''), g.kind, `${g.runs}${g.errors ? ` (+${g.errors} errors)` : ''}`,
               `${g.losing} of ${g.checked}${g.durable && g.losing ? ' **LOST ACKNOWLEDGED WRITES**' : ''}`,
               g.acknowledged, g.lost, g.lostPct,
               `${g.existed} of ${g.audited}${g.durable && g.existed < g.audited ? ' **A STATE THAT NEVER EXISTED**' : ''}`,
               `${g.startedRuns} of ${g.runs}${g.durable && g.startedRuns < g.runs ? ' **DID NOT START**' : ''}`,
               g.recovery, g.integrity, g.faultOutcomes]);
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

// The database of b started (SQLite: the mount) with what setting needs
// at start (InnoDB's doublewrite): a server started with other such
// settings is stopped first. Returns the start's command result.
async function start(ctx, b, setting, { check = true } = {}) {
  const e = engineOf(b);
  if (!e) return crashdb(ctx, ['mount'], { check });
  const env = startEnv(b, setting), key = JSON.stringify(env);
  if (ctx.started[e] !== undefined && ctx.started[e] !== key) await crashdb(ctx, ['stop', e]);
  const r = await crashdb(ctx, ['start', e], { env, check });
  ctx.started[e] = r.code === 0 ? key : undefined;
  return r;
}

// The database of b up, its table loaded once.
async function up(ctx, b, setting) {
  await start(ctx, b, setting);
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
    r = await crashdb(ctx, ['admin', 'pg', '-d', 'zipbench', '-tA', '-F', '\t', '-v', 'ON_ERROR_STOP=1', '-c', query], { check: false });
  else
    r = await crashdb(ctx, ['admin', 'mariadb', '-N', '-B', 'zipbench', '-e', query], { check: false });
  if (r.code !== 0) throw new Error(`${b}: ${query.slice(0, 60)}: ${(r.stderr || r.stdout).trim().split('\n').slice(-2).join(' | ')}`);
  return r.stdout;
}

// The whole write table: Map code -> stamp.
const dumpTable = async (ctx, b) => parseRows(await sql(ctx, b, `SELECT zip_code, stamp FROM ${tableOf(b)}_hits`));

// InnoDB's page cleaner under the faults that act on its tablespace
// writes (torn-op, torn-seq): every dirty page flushed as soon as it can
// be (innodb_max_dirty_pages_pct = 0), so that a run of 1-3 s writes its
// tablespace at all; its default (90) under the others.
const flushesPages = kind => kind === 'torn-op' || kind === 'torn-seq';

// The setting applied to the running database, and everything made
// durable: the run's baseline. SQLite's are the server's keys.
async function applySetting(ctx, b, setting, kind) {
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
    await crashdb(ctx, ['admin', 'mariadb', '-e', `${settingSql(b, setting).join('; ')}; ` +
                        `SET GLOBAL innodb_max_dirty_pages_pct = ${flushesPages(kind) ? 0 : 90}; FLUSH TABLES`]);
  } else if (b === 'myisam') {
    await crashdb(ctx, ['admin', 'mariadb', '-e', 'FLUSH TABLES']);
  }
  await crashdb(ctx, ['sync']);
}

// powerfs's fault for a run of kind (its i-th in its cell: the variants
// alternate), drawn from seed: its SPEC. torn-op and fsync-eio are set at
// the crash moment (AT_CRASH) and aimed at one file of each backend:
// torn-op cuts the power at the next write to the file a torn write hurts
// (SQLite's database file, guarded by its journal, or its WAL; PostgreSQL's
// WAL; InnoDB's tablespace, guarded by its doublewrite buffer; MyISAM's
// data file), tearing it; fsync-eio fails the fsyncs of the file each
// syncs to commit (SQLite's database file or WAL, PostgreSQL's WAL,
// InnoDB's redo log; MyISAM syncs nothing).
export const AT_CRASH = new Set(['torn-op', 'fsync-eio']);
export function faultSpec(b, setting, kind, i, seed) {
  if (kind === 'process' || kind === 'power') return 'clear-cache';
  const wal = setting.includes('journal_mode=wal');
  if (kind === 'torn-op') {
    const file = { sqlite: wal ? 'crash.sqlite-wal$' : 'crash.sqlite$', pg: 'pg_wal/', innodb: '.ibd$', myisam: '.MYD$' }[b];
    return `torn-op:${i % 2 ? 'any' : 'sector'},seed=${seed},file=${file},at=1`;
  }
  if (kind !== 'fsync-eio') return `${kind},seed=${seed}`;
  const file = { sqlite: wal ? 'crash.sqlite-wal$' : 'crash.sqlite$', pg: 'pg_wal/', innodb: 'ib_logfile0$', myisam: '.MYD$' }[b];
  return `fsync-eio:${i % 2 ? 'always' : 'once'},seed=${seed},file=${file}`;
}

const lineCount = file => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(l => l.trim()).length : 0);
const fileSize = file => (fs.existsSync(file) ? fs.statSync(file).size : 0);
// The bytes of file from offset `from` on, as text.
function tail(file, from) {
  if (!fs.existsSync(file)) return '';
  const fd = fs.openSync(file, 'r');
  const n = Math.max(0, fs.fstatSync(fd).size - from), buf = Buffer.alloc(n);
  fs.readSync(fd, buf, 0, n, from);
  fs.closeSync(fd);
  return buf.toString('utf8');
}

async function oneRun(ctx, b, setting, kind, i) {
  const n = ++ctx.runNo;
  const crashAfterS = Math.round((1 + 2 * ctx.draw()) * 1000) / 1000;
  const seed = ctx.seed * 1000 + n;
  const fault = faultSpec(b, setting, kind, i, seed);
  const result = { backend: b, setting, kind, fault, seed, crashAfterS, at: new Date().toISOString() };
  const ledger = path.join(ctx.work, `ledger-${n}.jsonl`);
  const fsLog = path.join(ctx.crashDir, 'powerfs.log');
  const engineLog = path.join(ctx.crashDir, 'db', { pg: 'pg.log', mariadb: 'mariadb.err' }[engineOf(b)] || 'none');
  fs.rmSync(ledger, { force: true });
  let srv = null;
  try {
    await up(ctx, b, setting);
    const extra = b === 'sqlite' ? sqliteSets(setting) : [];
    srv = background(bin('server'), ['--conf', 'conf/zipbench.conf', '--port', String(ctx.port), '--backends', b,
                                          ...sets(ctx, b), '--set', `${b}.writes=yes`, ...extra],
                     { log: path.join(ctx.work, `server-${n}.log`) });
    if (!(await waitFor(ctx.port, '/health', { timeoutS: 60, alive: srv.alive })))
      throw new Error(`the server did not start (see ${path.join(ctx.work, `server-${n}.log`)})`);
    await applySetting(ctx, b, setting, kind);
    const baseline = await dumpTable(ctx, b);
    const fsFrom = fileSize(fsLog);
    await crashdb(ctx, ['fault', AT_CRASH.has(kind) ? 'clear-cache' : fault]);

    const eio = kind === 'fsync-eio';
    // One loadgen thread: the ledger's lines are then in the order the answers came.
    const lg = runJSON(bin('loadgen'), ['-q', '-k', '-c', String(ctx.c), '--threads', '1',
                                             '-t', String(Math.ceil(crashAfterS + (AT_CRASH.has(kind) ? FAULT_S : 0) + 2)),
                                             '-m', 'POST', '--keys', ctx.keys, '--seed', String(seed), '--ledger', ledger,
                                             '--json', `http://127.0.0.1:${ctx.port}/update/${b}/{key}`],
                       { log: ctx.log, timeoutS: 120 });
    await sleep(crashAfterS * 1000);
    let atFault = null;
    if (eio) {
      atFault = { acked: lineCount(ledger), beforeS: crashAfterS, afterS: FAULT_S, fsLog: fileSize(fsLog),
                  engineLog: fileSize(engineLog) };
      await crashdb(ctx, ['fault', fault]);
      await sleep(FAULT_S * 1000);
    } else if (kind === 'torn-op') {
      // The power goes at the next write to the file (within FAULT_S, or
      // the cut comes then, tearing that file's last write not synced).
      await crashdb(ctx, ['fault', fault]);
      const pidfile = path.join(ctx.crashDir, 'powerfs.pid');
      for (const end = Date.now() + FAULT_S * 1000; fs.existsSync(pidfile) && Date.now() < end;) await sleep(10);
    }
    const e = engineOf(b);
    let alive;
    if (e) {
      const k = await crashdb(ctx, ['crash', kind === 'process' ? 'process' : 'power', e]);
      alive = !/not running/.test(k.stdout);
    } else {
      alive = srv.alive();
      if (alive) process.kill(srv.pid, 'SIGKILL');   // the server is SQLite's database
      if (kind !== 'process') await crashdb(ctx, ['cut']);
    }
    const l = await lg;
    const rep = l.json[0] || {};
    // loadgen's view: answers (2xx among them), failures (the crash's
    // refused and reset connections), its exit (1 once any failed).
    result.loadgen = { completed: rep.completed ?? null, ok2xx: rep.completed != null ? rep.completed - (rep.non2xx ?? 0) : null,
                       non2xx: rep.non2xx ?? null, failed: rep.failed ?? null, exit: l.code };
    await srv.stop();
    srv = null;
    const { writes, bad } = parseLedger(fs.existsSync(ledger) ? fs.readFileSync(ledger, 'utf8') : '');
    if (bad.length) result.ledgerBadLines = bad.length;
    result.acknowledged = writes.length;

    if (!eio && kind !== 'process') result.faultLog = faultLines(tail(fsLog, fsFrom)).slice(-3);

    // The restart, on what survived, timed: the database's recovery (SQLite:
    // sqlite3's first query, which rolls back a hot journal or replays the WAL).
    const engineFrom = fileSize(engineLog), t0 = Date.now();
    const r = await start(ctx, b, setting, { check: false });
    let first = null;
    if (r.code === 0) first = await dumpTable(ctx, b).catch(err => err);
    result.recoveryS = Math.round(Date.now() - t0) / 1000;
    result.started = r.code === 0 && !(first instanceof Error);
    if (!result.started) {
      result.startError = r.code !== 0 ? (r.stderr || r.stdout).trim().split('\n').slice(-2).join(' | ') : first.message;
      result.engineSaid = engineWords(tail(engineLog, engineFrom));
      // Made anew for the runs after this one.
      await crashdb(ctx, ['destroy'], { check: false });
      ctx.loaded.clear();
      ctx.started = {};
      return result;
    }
    Object.assign(result, checkLedger(writes, first, baseline, { inFlight: ctx.c }));
    result.integrity = await integrity(ctx, b);
    if (eio) Object.assign(result, faultEffect(writes, first, atFault, alive, tail(fsLog, atFault.fsLog),
                                               tail(engineLog, atFault.engineLog)));
  } catch (err) {
    result.error = err.message;
    if (srv) await srv.stop();
    if (isStopping()) return result;
    // A database whose table cannot be read is made anew for the runs after this one.
    await crashdb(ctx, ['destroy'], { check: false });
    ctx.loaded.clear();
    ctx.started = {};
  }
  return result;
}

// powerfs's lines about its fault (the log of the mount that was cut).
const faultLines = text => text.split('\n').filter(l => /(torn-op|torn-seq|no-dir-sync|fsync-eio): /.test(l))
  .map(l => l.replace(/^powerfs\[\d+\] [\d:.]+: /, ''));

// fsync-eio: what the database did once an fsync failed. The writes it
// acknowledged after the fault was set (the ledger's lines past those
// there then, within 10 ms), how many of them were lost, its own log's
// words, and a verdict: acknowledged then lost, stopped, restarted,
// refused (acknowledging at less than a tenth of its rate before the
// fault), or went on losing nothing. atFault: {acked (ledger lines when
// the fault was set), beforeS (seconds of load then), afterS (after)}.
export function faultEffect(writes, rows, atFault, alive, fsText, engineText) {
  const after = writes.slice(atFault.acked);
  const slowed = after.length / atFault.afterS < 0.1 * atFault.acked / atFault.beforeS;
  const lostAfter = after.filter(w => !(rows.get(w.code) >= w.stamp)).length;
  const failed = fsText.split('\n').filter(l => /fsync-eio: fsync \d+ of .* failed/.test(l)).length;
  const words = engineWords(engineText);
  const outcome = !failed ? 'no fsync failed'
    : lostAfter ? 'acknowledged writes after the failed fsync, then lost them'
    : !alive ? 'stopped'
    : /PANIC|terminated by signal|restart/i.test(engineText) ? 'restarted'
    : slowed ? 'refused writes' : 'went on, lost nothing';
  return { failedFsyncs: failed, acknowledgedAfterFault: after.length, lostAfterFault: lostAfter, aliveAtCut: alive,
           engineSaid: words, faultOutcome: outcome };
}

// The first lines of a database's log that say something went wrong, its
// errors first.
const engineWords = text => {
  const lines = text.split('\n');
  const errors = lines.filter(l => /PANIC|FATAL|\[ERROR\]|Assertion/i.test(l));
  const more = lines.filter(l => !errors.includes(l) && /fsync|abort|corrupt|terminated by signal/i.test(l));
  return [...errors, ...more].slice(0, 3).map(l => l.slice(0, 200));
};

// The engine's own check of the write table: {ok, messages}.
async function integrity(ctx, b) {
  const t = `${tableOf(b)}_hits`;
  if (b === 'sqlite') {
    const ic = (await sql(ctx, b, 'PRAGMA integrity_check')).trim();
    return { ok: ic === 'ok', messages: ic.split('\n').slice(0, 5) };
  }
  if (b === 'pg') {
    // amcheck: the primary key's B-tree whole and every row of the heap in
    // it (bt_index_check with heapallindexed), and the heap's own pages
    // and tuples (verify_heapam: one row per corruption).
    try {
      const out = await sql(ctx, b, `CREATE EXTENSION IF NOT EXISTS amcheck; SELECT bt_index_check('${t}_pkey'::regclass, true); ` +
                                    `SELECT blkno, offnum, msg FROM verify_heapam('${t}') LIMIT 5`);
      const bad = out.split('\n').filter(l => l.includes('\t'));
      return bad.length ? { ok: false, messages: bad.map(l => `verify_heapam: ${l}`) } : { ok: true, messages: ['amcheck: ok'] };
    } catch (err) {
      return { ok: false, messages: [err.message.slice(0, 200)] };
    }
  }
  return parseCheckTable(await sql(ctx, b, `CHECK TABLE ${t}`));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  await runMain('crash', main);
