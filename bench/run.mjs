// The main job (make run, scripts/run, ./zipbench run): the real
// postal-code list loaded into each backend asked for (SQLite by default),
// the lookup server started on it, and random-key lookups for every
// backend, strategy and concurrency, each a cell of repeated runs:
// warmed up, interleaved round by round (lib/cells.mjs), reported as the
// median with its 95% interval, the CPU each tier spent per answered
// lookup, the pooled / per-request ratio of the same rounds, and a
// ranking that names a winner only where the intervals separate. With
// --against DIR another build's server is measured beside this one, both
// in every round (a run of each, one after the other), and each cell says
// this / against from the runs of the same rounds, which a host whose
// speed drifts over minutes leaves alone (two separate runs it does not). With
// --csv FILE --key COLUMN the dataset is a CSV of one's own instead: the
// loader's --csv writes its config overlay and keys, the server serves it
// (--datasets NAME) and the lookups are GET /NAME/BACKEND/{key}. With
// --url TEMPLATE any HTTP server is measured the same way (and
// --against-url a second one beside it): nothing is loaded or started.
// Every run is saved in build/runs/ (lib/saved.mjs) for zipbench compare;
// on a terminal a line says how far it is (lib/progress.mjs), and the
// report ends with where the wall time went. Ctrl-C ends the clients at
// once and prints what was measured so far (exit 130). What it started
// is stopped at the end, whatever happens.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { run, background, runMain, isStopping } from './lib/run.mjs';
import { waitFor } from './lib/http.mjs';
import { loadgen, warmRun } from './lib/clients.mjs';
import { table, fmtRatio } from './lib/table.mjs';
import { rateRun, fmtErrors, cellErrors } from './lib/goodput.mjs';
import { Cells } from './lib/cells.mjs';
import { summarize } from './lib/stats.mjs';
import { ticksToUs, processTicks, treeTicks, nproc, listensOn } from './lib/proc.mjs';
import { databases, dbPids } from './lib/services.mjs';
import { provenance, provenanceLine, gitState, commitText } from './lib/provenance.mjs';
import { RATE_FOLLOWS } from './lib/hostprobe.mjs';
import { Progress } from './lib/progress.mjs';
import { runsDir, savedRunFile, savedRuns, shownPath, cellNames } from './lib/saved.mjs';
import { writeColumnKeys } from './lib/csvkeys.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// A path on the command line is the caller's: scripts/run, which runs
// from the tree, says where the caller was (ZB_CALLER_DIR).
const callerDir = process.env.ZB_CALLER_DIR || process.cwd();
const callersPath = p => (p === undefined ? p : path.resolve(callerDir, p));
process.chdir(root);

const BACKENDS = ['sqlite', 'pg', 'innodb', 'myisam'];
// The server's strategies, from the server: its list is the one list
// (null before it is built: the server then refuses an unknown one).
const STRATEGIES = (() => {
  const r = spawnSync(path.join(process.env.ZB_BUILD || 'build', 'bin', 'server'), ['--list-strategies'],
                      { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.split('\n').filter(Boolean) : null;
})();
const usage = `Usage: scripts/run [OPTIONS]   (./zipbench run, make run)
       scripts/run --url TEMPLATE (--keys FILE | --csv FILE --key COLUMN)
                   [OPTIONS]

Loads the postal-code list (or, with --csv, a CSV of one's own) into each
backend, starts the lookup server on it and measures random-key lookups
over HTTP for every backend, connection strategy and concurrency: each
figure is the median of repeated runs, the runs of all cells interleaved
round by round, each run after a warm-up.
Prints, per cell, answered lookups per second with the 95% confidence
interval of the median, its width, and the CPU each tier spent per answered
lookup; then, per backend and concurrency, pooled / per-request measured in
the same rounds; then a ranking that names a winner only where the
intervals separate ("~": no clear difference). With --url, any HTTP
server of one's own is measured the same way (see "Your own app" below).

Every run is saved as JSON in build/runs/ (its time, commit and a short
name in the file's name); the report ends with the file and the
\`zipbench compare\` command that compares it with the run before. On a
terminal a line on stderr says how far the run is (runs made of all,
time elapsed and left, the cell measured); the report says where the
wall time went. Ctrl-C stops the clients and servers at once, prints what
was measured so far, and exits 130.

Options:
      --backends LIST     sqlite, pg, innodb, myisam (default sqlite; the
                          others start the project's databases, scripts/db,
                          and stop them again if they were down)
      --strategies LIST   pooled, per-request, pipelined (default
                          pooled,per-request; pipelined is pg only)
      --concurrency LIST  concurrent connections, e.g. "1 10 100" (default)
      --duration S        seconds of one measured run (default 1)
      --runs N            measured runs per cell (default 10; 6 is the
                          fewest a 95% interval of a median needs)
      --json FILE         also write every cell, with its runs, as JSON to
                          FILE (build/runs/ has it anyway)
      --against DIR       also measure another build's server
                          (DIR/bin/server or DIR/build/bin/server: e.g. a
                          git worktree of
                          the commit before, built with make) on the same
                          data and client, with its tree's own
                          conf/zipbench.conf (the same config as this
                          build's with --conf or --csv, or where it has
                          none), in the same rounds: a
                          run of each in every round, their order
                          alternating; prints this / against per cell with
                          its 95% interval and says faster, slower or no
                          change only where the interval excludes 1
                          (zipbench compare FILE reads the --json of such a
                          run). The other server listens on ZB_RUN_PORT + 1
      --csv FILE          benchmark a CSV of one's own, its first line
                          naming the columns: loader --csv loads it (types
                          inferred, its section written to
                          build/conf.d/NAME.conf, its
                          keys beside it; no tracked file is edited), the
                          server serves it (--datasets NAME), and each
                          lookup is GET /NAME/BACKEND/{key}; with --url:
                          only the keys are read from it (--key's column)
      --key COLUMN        with --csv: the column lookups go by
      --name NAME         with --csv: the dataset's name (default: the
                          file's base name); with --url: the saved run's
                          short name (default url)
      --conf FILE         the config (default conf/zipbench.conf)
  -h, --help              this text

Your own app:
      --url TEMPLATE      measure GET TEMPLATE on any HTTP server instead
                          (http or https, any host): {key} in it is filled
                          with random keys of --keys FILE or of --csv FILE's
                          --key column; nothing is loaded or started, and
                          --backends, --strategies and --against do not
                          apply
      --against-url TEMPLATE
                          with --url: a second target measured beside the
                          first in the same rounds, their order
                          alternating; prints first / second per cell with
                          its 95% interval, as --against does
      --keys FILE         with --url: the keys, one a line
  e.g. scripts/php-fpm start, then
      ./zipbench run --keys build/ken_all.keys --concurrency 10 --url \\
        'http://127.0.0.1:8082/zip.php?backend=sqlite&code={key}'

Environment: ZB_RUN_PORT (the server's port, 18180), ZB_BUILD, ZB_DATA,
ZB_RUNS (where runs are saved, default build/runs), ZB_RUN_DEFAULTS (options
taken before the command line's, e.g. '--runs 3 --duration 0.3': the
command line's own win).
Exit status: 0 when every cell was measured without errors, 1 when a run
failed or answered errors (shown in the errors column), 2 on bad usage,
130 when interrupted (Ctrl-C, SIGTERM).`;

function usageError(msg) {
  console.error(`scripts/run: ${msg}\n(scripts/run --help)`);
  process.exit(2);
}

let args;
try {
  // ZB_RUN_DEFAULTS: options taken before the command line's, which win
  // over them (a test's or CI's shorter runs of the same commands).
  const defaults = (process.env.ZB_RUN_DEFAULTS || '').split(/\s+/).filter(Boolean);
  args = parseArgs({ args: [...defaults, ...process.argv.slice(2)], options: {
    backends: { type: 'string' }, strategies: { type: 'string' },
    concurrency: { type: 'string', default: '1 10 100' }, duration: { type: 'string', default: '1' },
    runs: { type: 'string', default: '10' }, json: { type: 'string' }, help: { type: 'boolean', short: 'h' },
    csv: { type: 'string' }, key: { type: 'string' }, name: { type: 'string' },
    conf: { type: 'string' }, against: { type: 'string' },
    url: { type: 'string' }, 'against-url': { type: 'string' }, keys: { type: 'string' } } }).values;
} catch (e) { usageError(e.message); }
if (args.help) { console.log(usage); process.exit(0); }
const list = s => s.trim().split(/[\s,]+/).filter(Boolean);
const urlMode = args.url !== undefined;
if (urlMode) {
  for (const o of ['backends', 'strategies', 'against', 'conf'])
    if (args[o] !== undefined) usageError(`--${o} does not go with --url: it measures the server of the URL as it is`);
  if (!/^https?:\/\/[^/]/.test(args.url)) usageError(`--url: '${args.url}' is not an http:// or https:// URL`);
  if (args['against-url'] !== undefined && !/^https?:\/\/[^/]/.test(args['against-url']))
    usageError(`--against-url: '${args['against-url']}' is not an http:// or https:// URL`);
  const keyed = [args.url, args['against-url']].some(u => u && u.includes('{key}'));
  if (keyed && !args.keys && !args.csv) usageError('--url has {key} in it: give the keys, --keys FILE (one a line) or --csv FILE --key COLUMN');
  if (args.keys && args.csv) usageError('--keys and --csv both give keys: give one of them');
  if (args.csv && !args.key) usageError(`--csv ${args.csv} needs --key COLUMN, the column the keys are in`);
} else {
  if (args['against-url'] !== undefined) usageError('--against-url goes with --url TEMPLATE (to measure another build\'s server: --against DIR)');
  if (args.keys !== undefined) usageError('--keys goes with --url TEMPLATE (the postal list\'s keys and a CSV\'s are found by themselves)');
}
const backends = list(args.backends ?? 'sqlite'), strategies = list(args.strategies ?? 'pooled,per-request');
for (const b of backends) if (!BACKENDS.includes(b)) usageError(`--backends: no backend '${b}' (known: ${BACKENDS.join(', ')})`);
for (const s of strategies) if (STRATEGIES && !STRATEGIES.includes(s)) usageError(`--strategies: no strategy '${s}' (known: ${STRATEGIES.join(', ')})`);
const seconds = Number(args.duration), runs = Number(args.runs);
const levels = list(args.concurrency).map(Number);
if (!backends.length || !strategies.length) usageError('--backends and --strategies take at least one name');
if (!(seconds > 0 && seconds <= 3600)) usageError(`--duration: '${args.duration}' is not seconds in (0, 3600]`);
if (!(Number.isInteger(runs) && runs >= 1 && runs <= 1000)) usageError(`--runs: '${args.runs}' is not a whole number 1-1000`);
if (!levels.length || !levels.every(c => Number.isInteger(c) && c >= 1 && c <= 10000))
  usageError(`--concurrency: '${args.concurrency}' is not whole numbers 1-10000`);
if (!args.csv && args.key) usageError('--key goes with --csv FILE');
if (!urlMode && !args.csv && args.name) usageError('--name goes with --csv FILE or --url');
if (!urlMode && args.csv && !args.key) usageError(`--csv ${args.csv} needs --key COLUMN, the column lookups go by`);
const csv = callersPath(args.csv), jsonOut = callersPath(args.json), keysIn = callersPath(args.keys);
if (keysIn && !fs.existsSync(keysIn)) usageError(`--keys ${args.keys}: no such file`);
if (csv && !fs.existsSync(csv)) usageError(`--csv ${args.csv}: no such file`);
const confFile = args.conf ? callersPath(args.conf) : 'conf/zipbench.conf';
const against = args.against === undefined ? null : againstBuild(callersPath(args.against));
const againstUrl = args['against-url'] ?? null;
const paired = !!(against || againstUrl);

const build = process.env.ZB_BUILD || 'build';
const data = process.env.ZB_DATA || 'build';
const port = Number(process.env.ZB_RUN_PORT || 18180);
const progress = new Progress();
const ctx = {
  root, build, quick: false, work: path.join(build, 'run'), logFile: null,
  bin: name => path.join(build, 'bin', name),
  repeat: { minRuns: runs, maxRuns: runs, target: 0.05, budgetS: Infinity },
  warmS: 0.5,
  // the host's speed timed around every run (lib/hostprobe.mjs): kept in
  // --json, where zipbench compare reads it
  hostProbe: true,
  // The width column says what a capped cell's warning would.
  log: () => {},
  warn: () => {},
  // where the time goes, and the line on a terminal (lib/progress.mjs)
  spent: progress.spent,
  progress: p => progress.update(p),
};

// The strategies a backend offers: pipelined is PostgreSQL's alone.
const offers = (b, s) => s !== 'pipelined' || b === 'pg';

async function main() {
  provenance();   // the tree and machine as they are at the start
  fs.mkdirSync(ctx.work, { recursive: true });
  ctx.logFile = path.join(ctx.work, 'run.log');
  fs.writeFileSync(ctx.logFile, '');
  const servers = urlMode ? [] : backends.filter(b => b !== 'sqlite');
  if (servers.length) await progress.time('starts', () => databases(ctx));
  const pids = servers.length ? await dbPids(ctx) : {};
  const dbPid = b => (b === 'pg' ? pids.pg : b === 'innodb' || b === 'myisam' ? pids.mariadb : 0);
  const dbTicks = b => (b === 'pg' ? treeTicks(pids.pg) : dbPid(b) ? processTicks(dbPid(b)) : 0);
  // what the host probe waits to settle: this driver's tree and the databases
  ctx.ownRoots = () => [process.pid, pids.pg, pids.mariadb].filter(Boolean);

  const loaded = await progress.time('loads', () => (urlMode ? urlKeys() : csv ? loadCsv() : loadPostal()));
  if (!loaded) return isStopping() ? 130 : 1;
  const { route, keys, serverArgs } = loaded;

  const log = path.join(build, 'run-server.log');
  let srv = null, srvB = null;
  if (!urlMode) {
    srv = await progress.time('starts', () => startServer(ctx.bin('server'), confFile, 0, 'the lookup server', log, serverArgs));
    if (!srv) return isStopping() ? 130 : 1;
    srvB = against && await progress.time('starts', () => startServer(against.server, against.conf, 1, 'the --against lookup server',
      path.join(build, 'run-server-against.log'), serverArgs));
    if (against && !srvB) return isStopping() ? 130 : 1;
  }

  const cells = new Cells(ctx, 'run');
  const cellsOf = [];
  for (const c of levels) for (const b of urlMode ? ['url'] : backends) for (const s of urlMode ? ['-'] : strategies) {
    if (!urlMode && !offers(b, s)) continue;
    // the cell's name, as the saved JSON and zipbench compare give it
    const name = urlMode ? `${args.url} c=${c}` : `${csv ? `${route} ` : ''}${b} ${s} c=${c}`;
    const k = name, kb = `${name} against`;
    cellsOf.push({ b, s, c, k, kb, name });
    const urlOn = p => `http://127.0.0.1:${p}/${route}/${b}/{key}?strategy=${s}`;
    const mineUrl = urlMode ? args.url : urlOn(port), theirUrl = urlMode ? againstUrl : urlOn(port + 1);
    // One lookup run against one target, and what each tier spent on it.
    const measureOn = (url, server) => async () => {
      const s0 = server ? processTicks(server.pid) : 0, d0 = dbTicks(b);
      const r = await loadgen(ctx, { url, c, seconds, keys });
      const s1 = server ? processTicks(server.pid) : 0, d1 = dbTicks(b);
      const g = rateRun(r);
      if (!r) return g;
      const answered = g.value * r.seconds;
      return { ...g, serverUs: server ? ticksToUs(s1 - s0, answered) : NaN, dbUs: dbPid(b) ? ticksToUs(d1 - d0, answered) : NaN,
               clientUs: r.cpuUsPerReq * r.completed / (answered || NaN) };
    };
    const warmOn = url => () => warmRun(ctx, { url, c, keys });
    // One run per visit: the runs of one visit share the host's speed of
    // the moment, so each cell's runs are spread over the whole measurement
    // (docs/DECISIONS.md, Precision: the visits are the samples).
    if (!paired) {
      cells.add(k, measureOn(mineUrl, srv), { warm: warmOn(mineUrl), runsPerVisit: 1 });
      continue;
    }
    // With --against both builds run in every visit, one after the other,
    // the order alternating, so that a same-round ratio sees one host speed.
    const mine = measureOn(mineUrl, srv), theirs = measureOn(theirUrl, srvB);
    let visit = 0;
    cells.addBatch([k, kb], async pending => {
      const order = visit++ % 2 ? [[kb, theirs], [k, mine]] : [[k, mine], [kb, theirs]];
      const got = {};
      for (const [x, measure] of order) if (pending.includes(x)) got[x] = await measure();
      return got;
    }, { warm: async () => { await warmOn(mineUrl)(); return warmOn(theirUrl)(); }, runsPerVisit: 1 });
  }
  const n = cellsOf.length;
  const what = urlMode ? `GET ${args.url}${againstUrl ? `, each beside GET ${againstUrl}` : ''}` : '';
  console.log(urlMode
    ? `== ${what}: ${n} cell${n === 1 ? '' : 's'} (concurrency ${levels.join(', ')}), ${runs} runs of ${seconds} s each, interleaved; ` +
      `${keys ? `random keys from ${keys}, ` : ''}keep-alive${againstUrl ? ', in the same rounds' : ''}\n`
    : `== lookups: ${n} cells (backend x strategy x concurrency), ${runs} runs of ${seconds} s each, ` +
      `interleaved; random keys from ${keys}, keep-alive` +
      (against ? `;\n   each beside the server of ${against.dir} (${againstText()}, config ${against.conf}), in the same rounds` : '') + '\n');
  await cells.measure();
  progress.clear();
  const interrupted = cells.interrupted || isStopping();
  if (srv) await srv.stop();
  if (srvB) await srvB.stop();
  if (interrupted) {
    const made = cellsOf.reduce((t, { k, kb }) => t + cells.get(k).values.length + (paired ? cells.get(kb).values.length : 0), 0);
    console.log(`Interrupted: ${made} of ${n * runs * (paired ? 2 : 1)} runs made. What was measured so far:\n`);
  }
  const bad = report(cells, cellsOf);
  console.log(`\n${provenanceLine()}${urlMode ? '' : `\nThe server's log: ${log}.`}`);
  console.log(progress.breakdown());
  save(cells, cellsOf, interrupted);
  if (interrupted) return 130;
  if (bad) console.error(`scripts/run: ${bad} cell(s) had errors or failed runs (see the errors column)`);
  return bad ? 1 : 0;
}

// The tables: one row per cell, then the same-round ratios and the
// ranking. Returns the count of cells with errors or failed runs.
function report(cells, cellsOf) {
  const pct = x => (Number.isFinite(x) ? `+-${(100 * x).toFixed(1)}%` : '-');
  const us = x => (Number.isFinite(x) ? x.toFixed(1) : '-');
  const cpu = (c, f) => { const v = c.extras.map(e => e[f]).filter(Number.isFinite); return v.length ? summarize(v).median : NaN; };
  const rows = [];
  let bad = 0;
  const row = (b, s, c, cl, side) => {
    const sm = cl.summary;
    const errs = fmtErrors(cl);
    if (cl.values.length < runs || cellErrors(cl).total) bad++;
    if (urlMode) {
      rows.push([side === 'this' ? args.url : againstUrl, c, fmtRate(sm), pct(sm.halfWidth), us(cpu(cl, 'clientUs')), errs || '0']);
      return;
    }
    const total = cpu(cl, 'serverUs') + cpu(cl, 'clientUs') + (Number.isFinite(cpu(cl, 'dbUs')) ? cpu(cl, 'dbUs') : 0);
    // What the machine's cores could serve if every tier's CPU per lookup
    // stayed as measured: the cell's bound here, and its share of it.
    const bound = nproc() * 1e6 / total;
    rows.push([b, s, c, ...(against ? [side] : []), fmtRate(sm), pct(sm.halfWidth), us(cpu(cl, 'clientUs')), us(cpu(cl, 'serverUs')),
               b === 'sqlite' ? 'in server' : us(cpu(cl, 'dbUs')), fmtK(bound), Number.isFinite(bound) ? `${Math.round(100 * sm.median / bound)}%` : '-',
               errs || '0']);
  };
  for (const { b, s, c, k, kb } of cellsOf) {
    row(b, s, c, cells.get(k), 'this');
    if (paired) row(b, s, c, cells.get(kb), 'against');
  }
  if (urlMode) {
    console.log(table(['target', 'c', 'answered req/s [95% CI]', 'width', 'client µs', 'errors'], rows, 'lrrrrl'));
    console.log('µs: CPU per answered request (median over the runs) of loadgen; the server\'s is its own (not seen from here).\n');
  } else {
    console.log(table(['backend', 'strategy', 'c', ...(against ? ['build'] : []), 'answered req/s [95% CI]', 'width', 'client µs', 'server µs', 'db µs',
                       `bound (${nproc()} cores)`, 'of bound', 'errors'], rows, against ? 'llllrrrrrrrl' : 'lllrrrrrrrl'));
    console.log('µs: CPU per answered lookup (median over the runs) of loadgen, the server and the database;\n' +
                'bound: the rate at which those costs fill every core of this machine.\n');
  }

  // This build against the other (or the URL against the other), same rounds.
  if (paired) {
    const vs = cellsOf.map(({ b, s, c, k, kb }) => {
      const r = cells.sameRoundRatio(k, kb);
      return [...(urlMode ? [] : [b, s]), c, fmtRatioCI(r), verdict(r, 'faster', 'slower', 'no change')];
    });
    console.log(urlMode
      ? `--url / --against-url, from the runs of the same rounds:\n\n${table(['c', 'ratio [95% CI]', '--url is'], vs, 'lrl')}`
      : `this / against (${againstText()}), from the runs of the same rounds:\n\n` +
        table(['backend', 'strategy', 'c', 'ratio [95% CI]', 'this build is'], vs, 'lllrl'));
  }
  if (urlMode) { probeLine(cells, cellsOf); return bad; }

  // Pooled / per-request, same rounds.
  const ratioRows = [];
  const key = (b, s, c) => cellsOf.find(x => x.b === b && x.s === s && x.c === c)?.k;
  for (const b of backends) for (const c of levels) {
    if (!strategies.includes('pooled') || !strategies.includes('per-request')) break;
    const r = cells.sameRoundRatio(key(b, 'pooled', c), key(b, 'per-request', c));
    ratioRows.push([b, c, fmtRatioCI(r), verdict(r, 'pooled', 'per-request')]);
  }
  if (ratioRows.length)
    console.log('pooled / per-request, from the runs of the same rounds:\n\n' +
                table(['backend', 'c', 'ratio [95% CI]', 'which is faster'], ratioRows, 'lrrl'));

  // The ranking per concurrency: a '>' only where the same-round ratio's
  // interval excludes 1.
  console.log('Ranking (">": faster, its 95% interval clear of the next; "~": no clear difference):\n');
  for (const c of levels) {
    const here = cellsOf.filter(x => x.c === c && cells.get(x.k).values.length)
      .sort((x, y) => cells.median(y.k) - cells.median(x.k));
    let text = here.length ? `${here[0].b} ${here[0].s}` : '-';
    for (let i = 1; i < here.length; i++) {
      const r = cells.sameRoundRatio(here[i - 1].k, here[i].k);
      text += ` ${r.summary && r.summary.lo > 1 ? '>' : '~'} ${here[i].b} ${here[i].s}`;
    }
    console.log(`  c=${String(c).padEnd(4)} ${text}`);
  }
  probeLine(cells, cellsOf);
  return bad;
}

// The host probe's range over the run (the against cells share it).
function probeLine(cells, cellsOf) {
  const probes = cellsOf.flatMap(({ k }) => cells.get(k).probes).filter(Number.isFinite);
  if (probes.length)
    console.log(`\nThe host's CPU probe (build/bin/hostprobe, timed around every run): ${Math.min(...probes).toFixed(1)}-` +
                `${Math.max(...probes).toFixed(1)} ms; a slower host slows the lookups ${RATE_FOLLOWS}.`);
}

// The postal list (make dataset fetches it when missing) loaded into each
// backend: what the lookups of /zip/ read.
async function loadPostal() {
  const dataset = path.join(data, 'ken_all.csv'), keys = path.join(data, 'ken_all.keys');
  if (!fs.existsSync(dataset) || !fs.existsSync(keys)) {
    const mk = await run('make', ['-s', 'dataset'], { inherit: true });
    if (mk.code !== 0) return null;
  }
  for (const b of backends) {
    console.log(`== load: ${dataset} into ${b}`);
    // The loader's own report and progress, as it prints them.
    const ld = await run(ctx.bin('loader'), ['--conf', confFile, '--backend', b, '--mode', 'bulk', '--dataset', dataset], { inherit: true });
    if (ld.code !== 0) return null;
  }
  return { route: 'zip', keys, serverArgs: [] };
}

// A CSV of one's own through loader --csv: loaded into every backend at
// once, its overlay and keys written; the loader's --json says where.
async function loadCsv() {
  console.log(`== load: ${csv} into ${backends.join(', ')} (loader --csv, key ${args.key})`);
  const ld = await run(ctx.bin('loader'), ['--conf', confFile, '--csv', csv, '--key', args.key,
    ...(args.name ? ['--name', args.name] : []), '--backend', backends.join(','), '--mode', 'bulk', '--json'], { inherit: 'stderr' });
  const reports = (ld.stdout || '').split('\n').filter(Boolean).map(l => JSON.parse(l));
  for (const r of reports)
    console.log(`   ${r.backend}: ${r.rows.toLocaleString('en-US')} rows in ${r.seconds.toFixed(3)} s into ${r.table}`);
  if (ld.code !== 0 || !reports.length) return null;
  const { dataset, overlay, keys_file: keys, columns } = reports[0];
  console.log(`   dataset ${dataset}: ${columns}; section in ${overlay}, keys in ${keys}\n`);
  return { route: dataset, keys, serverArgs: ['--datasets', dataset] };
}

// --url's keys: --keys FILE as it is, or --csv FILE's --key column
// written one a line beside the run's log.
async function urlKeys() {
  if (!csv) return { route: null, keys: keysIn ?? null, serverArgs: [] };
  const keys = path.join(ctx.work, 'url.keys');
  try {
    const count = writeColumnKeys(csv, args.key, keys);
    console.log(`== keys: ${count.toLocaleString('en-US')} of column ${args.key} of ${csv}, in ${keys}`);
  } catch (e) {
    console.error(`scripts/run: --csv ${e.message}`);
    return null;
  }
  return { route: null, keys, serverArgs: [] };
}

function fmtK(x) { return Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-'; }
function fmtRate(s) {
  if (!s.n) return '-';
  return Number.isNaN(s.lo) ? `${fmtK(s.median)} (n=${s.n})` : `${fmtK(s.median)} [${fmtK(s.lo)}-${fmtK(s.hi)}]`;
}
function fmtRatioCI(r) {
  const s = r.summary;
  if (!s || Number.isNaN(s.lo)) return `${fmtRatio(r.value)} (n=${s ? s.n : 0})`;
  return `${fmtRatio(r.value)} [${s.lo.toFixed(2)}-${s.hi.toFixed(2)}]`;
}
// "a" or "b" where the interval of a/b excludes 1, else `neither`.
function verdict(r, a, b, neither = 'no clear difference') {
  const s = r.summary;
  if (!s || Number.isNaN(s.lo)) return 'too few rounds';
  return s.lo > 1 ? a : s.hi < 1 ? b : neither;
}

// The run as JSON: into build/runs/ always (a name of its own), and into
// --json FILE where asked; then the compare command that reads it.
function save(cells, cellsOf, interrupted) {
  const cell = ({ b, s, c, name }, cl, side) => ({
    cell: name, ...(urlMode ? { url: side === 'this' ? args.url : againstUrl } : { backend: b, strategy: s }), concurrency: c,
    ...(paired ? { build: side } : {}), runs: cl.values, ...cl.summary,
    errors: cellErrors(cl), cpu_us: cl.extras.map(e => ({ client: e.clientUs, server: e.serverUs, db: e.dbUs })),
    host_probe_ms: cl.probes.map(p => (Number.isFinite(p) ? p : null)), rounds: cl.rounds });
  const out = cellsOf.flatMap(x =>
    [cell(x, cells.get(x.k), 'this'), ...(paired ? [cell(x, cells.get(x.kb), 'against')] : [])]);
  const text = JSON.stringify({ provenance: provenance(), seconds, runs, ...(interrupted ? { interrupted: true } : {}),
    ...(urlMode ? { url: args.url } : {}), ...(againstUrl ? { against: { url: againstUrl } } : {}),
    ...(against ? { against: { dir: against.dir, server: against.server, conf: against.conf, commit: against.commit, dirty: against.dirty } } : {}),
    cells: out }, null, 1) + '\n';
  const short = urlMode ? (args.name || 'url') : `${csv ? `${cellsOf[0] ? cellsOf[0].name.split(' ')[0] : 'csv'}-` : ''}${backends.join('+')}`;
  const dir = runsDir(build);
  const before = savedRuns(dir);
  fs.mkdirSync(dir, { recursive: true });
  const file = savedRunFile(provenance(), short + (paired ? '-against' : '') + (interrupted ? '-interrupted' : ''), dir);
  fs.writeFileSync(file, text);
  if (jsonOut) fs.writeFileSync(jsonOut, text);
  // the latest run before this one that measured a cell of this one's
  const mine = new Set(cellsOf.map(x => x.name));
  const prev = before.reverse().find(f => cellNames(f).some(nm => mine.has(nm)));
  console.log(`\nSaved: ${shownPath(file)}${jsonOut ? ` (and ${shownPath(jsonOut)})` : ''}`);
  if (paired) console.log(`Compare the two sides again: ./zipbench compare ${shownPath(file)}`);
  if (prev) console.log(`Compare with the run before: ./zipbench compare ${shownPath(prev)} ${shownPath(file)}` +
                        ` (or ./zipbench compare: the last two runs)`);
  else console.log('Compare with the next run of the same cells: ./zipbench compare (the last two runs)');
  return file;
}

// The server to measure beside this build's (--against DIR): DIR/bin/server
// or DIR/build/bin/server, and the commit of the tree it was built in.
function againstBuild(dir) {
  const server = [path.join(dir, 'bin', 'server'), path.join(dir, 'build', 'bin', 'server')].find(f => fs.existsSync(f));
  if (!server) usageError(`--against ${dir}: no bin/server or build/bin/server in it (build that tree with make first)`);
  const top = spawnSync('git', ['-C', path.dirname(server), 'rev-parse', '--show-toplevel'], { encoding: 'utf8' });
  const git = top.status === 0 ? gitState(top.stdout.trim()) : { commit: null, dirty: null };
  // A commit's config is part of it (a key the other server does not know
  // would stop it); a config or dataset of one's own is the same for both.
  const own = top.status === 0 && path.join(top.stdout.trim(), 'conf', 'zipbench.conf');
  const conf = args.conf || args.csv || !own || !fs.existsSync(own) ? confFile : own;
  return { dir, server: path.resolve(server), conf, ...git };
}
function againstText() {
  return against.commit ? `commit ${commitText(against)}` : 'commit unknown';
}

// A lookup server started on port + offset, answering /health, and the one
// started here (not another that held the port); null, said why, when not.
async function startServer(bin, conf, offset, what, log, serverArgs) {
  const p = port + offset;
  const pc = await run('scripts/port-check', ['--offset', String(offset), what, String(p), 'ZB_RUN_PORT']);
  if (pc.code !== 0) { process.stderr.write(pc.stderr); return null; }
  if (isStopping()) return null;
  const srv = background(bin, ['--conf', conf, '--backends', backends.join(','), '--port', String(p), ...serverArgs], { log });
  if (!(await waitFor(p, '/health', { alive: srv.alive })) || !srv.alive() || !listensOn(srv.pid, p)) {
    if (!isStopping()) console.error(`scripts/run: the server ${bin} did not start on 127.0.0.1:${p}: see ${log} (ZB_RUN_PORT picks another port)`);
    return null;
  }
  return srv;
}

await runMain('scripts/run', main);
