#!/usr/bin/env node
// The benchmark driver: runs the experiments (bench/experiments/*.mjs),
// each into DIR/RESULTS-PART.md with its raw runs in DIR/data, then
// assembles DIR/RESULTS.md: the machine, the calibration table first, the
// plots, every experiment's section. scripts/bench (make bench) runs it.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { run, runCleanups, isStopping } from './lib/run.mjs';
import { databases, daemonPidFiles } from './lib/services.mjs';
import { provenance, provenanceLine, sectionProvenance } from './lib/provenance.mjs';
import { netnsPids, pidInFile } from './lib/proc.mjs';
import { cellLegend } from './lib/cells.mjs';
import { answer, relPaths } from './lib/summary.mjs';
import { wrapProse } from './lib/prose.mjs';
import { takeLock, holderPid } from './lib/lock.mjs';
import { erroredCells } from './lib/goodput.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);

// The experiments, in the order they run and appear.
const PARTS = ['calibrate', 'load', 'bulk', 'rows', 'server', 'queries', 'requests', 'mix', 'durability', 'php', 'poolsize', 'conns', 'spin', 'sql', 'as3ap', 'loadgen', 'network'];

const usage = `Usage: scripts/bench [OPTIONS]

Runs zipbench's experiments and writes DIR/RESULTS.md (default docs/), the
calibration table first, then one section per experiment, with plots in
DIR/plots and every run's raw figures in DIR/data.

Experiments (PART):
  calibrate  the machine's own costs: fsync latency of the database
             directory (pg_test_fsync), a loopback TCP round trip, a process
             spawn, a connection to PostgreSQL and MariaDB, an SQLite open,
             one HTTP request to nginx serving a static file
  load       loading the postal codes: rows/s per backend and load mode
  rows       the cost as the rows grow: the postal layout generated at 10^5,
             10^6 and 10^7 rows and the real list; per backend the bulk
             load against the native loader (same rounds), each loader's
             peak memory, the table's size on disk, lookups at uniform and
             Zipfian keys (ZB_BENCH_ROWS_SIZES picks the sizes)
  server     the lookup server: req/s per backend and connection strategy at
             c 1, 10, 100 next to nginx serving a file of the same size, the
             server's CPU per request and per thread, pgbench on the same
             PostgreSQL, isolation of one backend from another
  queries    multiple queries per request (TechEmpower's): lookups/s of
             /queries/B?queries=N against N (1-20) per backend and strategy,
             pipelined against pooled on PostgreSQL in the same rounds
  requests   the rest of a web app's requests: the listing page against the
             lookup, cached against uncached at uniform and Zipfian keys,
             updates (read, then a committed write) per backend at c 1-100
  mix        reads and writes together: YCSB workloads A (50/50) and B
             (95/5) over HTTP, Zipfian keys, per backend at c 1, 10, 100;
             InnoDB against MyISAM in the same rounds
  durability acknowledged updates/s under every durability setting of every
             backend (SQLite journal_mode x synchronous, PostgreSQL
             synchronous_commit x fsync, InnoDB flush at commit 1/2/0) at c 1
             and 10, beside what each lost in the crash experiment's runs
             (scripts/crash, docs/data/crash)
  php        PHP next to the server, same lookups, same run: Apache +
             mod_php and nginx + PHP-FPM (scripts/php-fpm), persistent and
             per request, and PHP per request through pgbouncer and
             pgpool-II (scripts/pooler) beside the server's strategies
  poolsize   the pool-sizing curve: pooled req/s and p99 against the pool
             size (1-64) at c 100 for pg, InnoDB and MyISAM, and the
             server's default pool settings against the peak
  conns      keep-alive connections by the thousand (c 100, 1,000, 10,000):
             zipbench SQLite and PostgreSQL pooled against nginx static,
             same rounds: req/s, p50/p99, CPU per request, memory under
             load, and each server's memory per idle connection
  spin       the MariaDB lookup path: the server's CPU per pooled lookup on
             InnoDB and MyISAM against PostgreSQL's, one server per
             [server] spin_us (0, 20, 50; ZB_BENCH_SPIN_US), same rounds: the
             CPU spent spinning apart, the database's CPU beside it
  sql        sqlbench: the 2001 speed tests, separate vs single transaction,
             concurrent writers and the job queue, next to the file system
  as3ap      an AS3AP-style run over the postal data: single-user queries
             and a multi-user mixed phase at c 10, on four backends and two
             durability settings of one
  loadgen    the bundled load generator against ab and wrk, on nginx
  bulk       bulk loading of both datasets (the postal list, GeoNames'
             cities): zipbench against psql \\copy, LOAD DATA LOCAL, sqlite3
             .import and pgloader; rows/s, MB/s, peak memory, bad rows
  network    connection strategies across a network: the tiers on hosts of
             their own (scripts/lab, root), RTT 0, 0.2 and 1 ms between them,
             pooled, per-request direct and through pgbouncer and pgpool-II,
             at c 1, 10, 100, next to plain loopback; skipped where network
             namespaces cannot be made

Options:
      --quick          every experiment briefly (a smoke run of a few minutes)
                       into build/bench/quick; docs/ is never touched
      --out DIR        where RESULTS.md and the rest go (default docs, or
                       build/bench/quick with --quick)
      --only PARTS     rerun these parts (comma-separated); RESULTS.md is
                       assembled from their new sections and the others'
                       sections already in DIR
      --min-runs N     runs of a cell before its interval counts (default 6,
                       the fewest a 95% interval of a median needs; 1 with
                       --quick)
      --max-runs N     cap on runs of a cell (default 15; 1 with --quick)
      --target PCT     stop repeating a cell once the 95% confidence interval
                       of its median lies within +-PCT% of it (default 5)
      --budget S       cap on seconds of runs per experiment, shared among its
                       parts (default 900; 60 with --quick); a cell the cap
                       stops before its interval is narrow enough is marked
      --slow-host PCT  set aside (keep in the data, do not count, run again) a
                       run made while the host ran more than PCT% slower than
                       its quickest, by a CPU probe before and after it
                       (default 0: probe and report, set nothing aside; not
                       with --quick)
      --assemble       run nothing: assemble DIR/RESULTS.md again from the
                       sections, data and plots already in DIR
      --allow-errors   exit 0 even when some cells had errors (non-2xx
                       answers, timeouts, resets: marked E, never in a rate)
      --list           print the parts and exit
  -h, --help           this text

Each figure is the median of repeated runs with the 95% confidence interval
of the median; load average, CPU steal and iowait are sampled around every
run and a cell that ran on a busy machine is flagged. A fixed CPU loop
(BUILD/bin/hostprobe) is timed before and after every run (not with
--quick), and each section says how far the host's speed moved.

One bench at a time per tree: it holds BUILD/bench.lock while it runs, and a
second one exits 1 naming the first's pid. A lookup server that cannot take
its port (another process listens there) stops its experiment with an error
naming that process. Environment: ZB_BUILD
(build), ZB_DATA (build: the dataset), ZB_CONF (conf/zipbench.conf).

Exit status: 0 when every experiment produced its table and no cell had
errors; 1 when an experiment failed, another bench holds the tree, or a cell
had errors (each one named on stderr and in DIR/data/warnings.log;
--allow-errors accepts them); 2 on bad usage. The cells of poolsize's small
pools are not counted: their 503s at c 100 are what that experiment
measures (its default pool's are).`;

function fail(msg) {
  process.stderr.write(`bench: ${msg} (see --help)\n`);
  process.exit(2);
}

let args;
try {
  args = parseArgs({
    options: {
      quick: { type: 'boolean' }, out: { type: 'string' }, only: { type: 'string' },
      'min-runs': { type: 'string' }, 'max-runs': { type: 'string' }, target: { type: 'string' },
      budget: { type: 'string' }, list: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
      'allow-errors': { type: 'boolean' }, assemble: { type: 'boolean' }, 'slow-host': { type: 'string' },
    },
  }).values;
} catch (e) { fail(e.message); }
if (args.help) { process.stdout.write(usage + '\n'); process.exit(0); }
if (args.list) { process.stdout.write(PARTS.join('\n') + '\n'); process.exit(0); }

function num(name, lo, hi, dflt) {
  if (args[name] === undefined) return dflt;
  const v = Number(args[name]);
  if (!Number.isFinite(v) || v < lo || v > hi) fail(`--${name}: '${args[name]}' is not a number in [${lo}, ${hi}]`);
  return v;
}

const build = process.env.ZB_BUILD || 'build';
const quick = !!args.quick;
const only = args.only ? args.only.split(',').filter(Boolean) : null;
for (const p of only || []) if (!PARTS.includes(p)) fail(`--only: no part '${p}' (one of: ${PARTS.join(', ')})`);
const out = args.out || (quick ? path.join(build, 'bench/quick') : 'docs');

const ctx = {
  root, build, quick, out,
  data: process.env.ZB_DATA || 'build',
  conf: process.env.ZB_CONF || 'conf/zipbench.conf',
  work: path.join(build, 'bench'),
  bin: name => path.join(build, 'bin', name),
  repeat: {
    minRuns: num('min-runs', 1, 1000, quick ? 1 : 6),
    maxRuns: num('max-runs', 1, 1000, quick ? 1 : 15),
    target: num('target', 0.1, 100, 5) / 100,
    budgetS: num('budget', 1, 86400, quick ? 60 : 900),
  },
  busyOther: 0.25,
  hostProbe: !quick,   // lib/hostprobe.mjs: the host's speed beside every run
  slowHostTolerance: num('slow-host', 0, 100, 0) / 100,
  warnings: [],
  logFile: null,
  log(msg) {
    process.stderr.write(`   ${msg}\n`);
    if (this.logFile) fs.appendFileSync(this.logFile, msg + '\n');
  },
  warn(msg) {
    this.warnings.push(msg);
    this.log(`warning: ${msg}`);
  },
  // "ZB_X=1 scripts/bench --quick --only X --budget 900": how a section says
  // it was made, with the options given and the variables (envNames) that
  // shaped it, so that the line remakes it.
  command(part, envNames = []) {
    const envs = envNames.filter(n => process.env[n]).map(n => `${n}=${process.env[n]} `).join('');
    const opts = ['min-runs', 'max-runs', 'target', 'budget', 'slow-host'].filter(o => args[o] !== undefined)
      .map(o => ` --${o} ${args[o]}`).join('');
    return `${envs}scripts/bench${quick ? ' --quick' : ''} --only ${part}${opts}`;
  },
};
// The benchmark's own processes, whose CPU is not "other work" (lib/proc.mjs):
// the driver and what it runs, and the daemons of the project's scripts
// (ctx.daemonPidFiles: the databases, nginx, Apache, nginx + PHP-FPM, the
// poolers; not below the driver), their pid files read at each call.
ctx.ownRoots = () => [process.pid, ...(ctx.daemonPidFiles || []).map(pidInFile), ...labPids()]
  .filter(Boolean);
// The lab's hosts (ctx.labDir, set by the network experiment): every
// process in their namespaces.
function labPids() {
  if (!ctx.labDir) return [];
  const hosts = path.join(ctx.labDir, 'hosts');
  let files = [];
  try { files = fs.readdirSync(hosts).filter(f => f.endsWith('.pid')); } catch { return []; }
  return netnsPids(files.map(f => pidInFile(path.join(hosts, f))).filter(Boolean));
}
ctx.dataset = path.join(ctx.data, 'ken_all.csv');
ctx.keys = path.join(ctx.data, 'ken_all.keys');

// Whatever happens (a signal, a reader of our output gone, a bug), what
// was started is stopped before the driver exits.
let stopping = false;
async function abort(why, code) {
  if (stopping) return;
  stopping = true;
  try { process.stderr.write(`bench: ${why}: stopping what was started\n`); } catch { /* no reader */ }
  await runCleanups();
  process.exit(code);
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => abort(sig, 130));
for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
process.on('uncaughtException', e => abort(`internal error: ${e.stack || e}`, 1));
process.on('unhandledRejection', e => abort(`internal error: ${e && e.stack ? e.stack : e}`, 1));

async function main() {
  // One bench per tree (lib/lock.mjs), taken before anything is written.
  const lockFile = path.join(build, 'bench.lock');
  const lock = takeLock(lockFile, `scripts/bench ${process.argv.slice(2).join(' ')}`.trim());
  if (!lock.ok) {
    const pid = holderPid(lock.holder);
    process.stderr.write(`bench: another bench holds ${lockFile}: ${lock.holder || 'a process that is still starting'}\n` +
                         '  One bench at a time per tree: they would share the servers\' ports and the output files. ' +
                         `Wait for it to end${pid ? `, or stop it (kill ${pid})` : ''}.\n`);
    return 1;
  }
  provenance();      // the tree's state fixed now, before the run writes anything
  if (args.assemble) {
    await assemble();
    return 0;
  }
  fs.mkdirSync(out, { recursive: true });
  fs.mkdirSync(ctx.work, { recursive: true });
  const mk = await run('make', ['-s', 'all', 'dataset'], { timeoutS: 1800 });
  if (mk.code !== 0) throw new Error(`make failed: ${mk.stderr.trim().split('\n').slice(-5).join('\n')}`);
  await databases(ctx);
  ctx.daemonPidFiles = await daemonPidFiles(ctx);

  let failed = 0;
  const errored = [];
  for (const part of PARTS) {
    if (only && !only.includes(part)) continue;
    if (isStopping()) return 1;      // a signal: no more parts, no report
    const mod = (await import(`./experiments/${part}.mjs`)).default;
    ctx.logFile = path.join(ctx.work, `${part}.log`);
    fs.writeFileSync(ctx.logFile, '');
    process.stderr.write(`== ${part}${quick ? ' --quick' : ''}: ${mod.title}\n`);
    const t0 = Date.now();
    const file = path.join(out, `RESULTS-${part}.md`);
    try {
      const md = await mod.run(ctx);
      if (isStopping()) return 1;    // cut short by a signal: nothing written
      const secs = Math.round((Date.now() - t0) / 1000);
      // No machine path in a results file: paths relative to the tree.
      fs.writeFileSync(file, wrapProse(relPaths(`${md.trimEnd()}\n\nMeasured ${utcNow()} in ${secs} s` +
                                      `${quick ? ' (--quick: one short run per cell)' : ''}.\n` +
                                      `${provenanceLine()}\n`, root)));
      process.stderr.write(`   done in ${Math.round((Date.now() - t0) / 1000)} s: ${file}\n`);
      // Written with what it measured, and still a failure: a piece of it failed.
      if (ctx.partFailed) {
        failed = 1;
        process.stderr.write(`   FAILED in part: ${ctx.partFailed}\n   see ${ctx.logFile}\n`);
        ctx.partFailed = null;
      }
      errored.push(...partErrors(part, mod, t0));
    } catch (e) {
      if (isStopping()) return 1;
      failed = 1;
      ctx.partFailed = null;   // said by the error itself
      process.stderr.write(`   FAILED: ${e.stack || e.message}\n   see ${ctx.logFile}\n`);
      fs.appendFileSync(ctx.logFile, `FAILED: ${e.stack || e.message}\n`);
      if (fs.existsSync(file) && !only) fs.rmSync(file);
    }
  }
  ctx.logFile = null;
  if (isStopping()) return 1;
  await assemble();
  if (errored.length && !args['allow-errors']) {
    process.stderr.write(`bench: ${errored.length} cell${errored.length === 1 ? '' : 's'} had errors: exit 1 ` +
                         '(--allow-errors accepts them)\n');
    return 1;
  }
  return failed;
}

// The cells with errors in the data files a part wrote (DIR/data/*.json
// written since t0), each also a warning of the run; a part's
// errorsMeasured(key) leaves out the cells whose errors it measures.
function partErrors(part, mod, t0) {
  const dir = path.join(out, 'data');
  let files = [];
  try { files = fs.readdirSync(dir).filter(f => f.endsWith('.json')); } catch { return []; }
  const found = [];
  for (const f of files) {
    const file = path.join(dir, f);
    if (fs.statSync(file).mtimeMs < t0) continue;
    let data = null;
    try { data = JSON.parse(fs.readFileSync(file, 'utf8')); } catch { continue; }
    for (const c of erroredCells(data, mod.errorsMeasured)) found.push(`${part}: ${c.key} (${c.total} errors)`);
  }
  if (found.length)
    ctx.warn(`${found.length} cell${found.length === 1 ? '' : 's'} of ${part} had errors (marked E, not in their rates): ` +
             found.map(x => x.slice(part.length + 2)).join('; '));
  return found;
}

function utcNow() {
  return new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
}

// A section's plots, each with the caption its experiment gives (the
// module's plots: { NAME: caption }), placed under the section.
function figures(names, captions) {
  const lines = [];
  for (const name of names) {
    const cap = captions[name] || name;
    const dat = fs.existsSync(path.join(out, 'data', `${name}.dat`)) ? ` Data: \`data/${name}.dat\`.` : '';
    lines.push(`![${name}](plots/${name}.svg)`, '', `*${cap}*${dat}`, '');
  }
  return lines;
}

async function assemble() {
  const when = utcNow();
  // The answer first, on one screen, from the data the parts wrote.
  const lines = ['# zipbench results', '', ...answer(path.join(out, 'data')), '## How these figures were made', ''];
  if (args.assemble)
    lines.push(`Assembled by \`scripts/bench --assemble\` on ${when}: no part was rerun; each section dates its own run.`);
  else if (only)
    lines.push(`Assembled by \`scripts/bench${quick ? ' --quick' : ''} --only ${only.join(',')}\` on ${when}:`,
               'those parts were rerun, the others are from the run each section dates.');
  else
    lines.push(`Made by \`scripts/bench${quick ? ' --quick' : ''}\` (\`make bench\`) on ${when}.`);
  lines.push(`This assembly: ${provenanceLine()}`, '');
  // Each section ends with its own provenance: say which differ from this one.
  const sections = PARTS.map(p => path.join(out, `RESULTS-${p}.md`)).filter(f => fs.existsSync(f));
  const here = sectionProvenance(provenanceLine());
  const of = sections.map(f => [path.basename(f), sectionProvenance(fs.readFileSync(f, 'utf8'))]);
  const unknown = of.filter(([, p]) => !p).map(([f]) => f);
  const otherMachine = of.filter(([, p]) => p && p.machine !== here.machine).map(([f, p]) => `${f} (${p.machine})`);
  const otherCommit = of.filter(([, p]) => p && p.commit !== here.commit).map(([f, p]) => `${f} (${p.commit})`);
  if (otherMachine.length) lines.push(`**Measured on another machine:** ${otherMachine.join('; ')}.`, '');
  if (otherCommit.length) lines.push(`Measured at another commit: ${otherCommit.join(', ')}.`, '');
  if (unknown.length) lines.push(`No provenance recorded (machine and commit unknown): ${unknown.join(', ')}.`, '');
  lines.push('Client and server share the same cores: every comparison below is a ratio measured in',
             'the same run. ' + cellLegend,
             '');
  const plots = new Set(fs.existsSync(path.join(out, 'plots'))
    ? fs.readdirSync(path.join(out, 'plots')).filter(f => f.endsWith('.svg')).map(f => f.slice(0, -4)) : []);
  for (const part of PARTS) {
    const file = path.join(out, `RESULTS-${part}.md`);
    if (!fs.existsSync(file)) continue;
    const captions = (await import(`./experiments/${part}.mjs`)).default.plots || {};
    const mine = Object.keys(captions).filter(n => plots.has(n));
    mine.forEach(n => plots.delete(n));
    lines.push(fs.readFileSync(file, 'utf8').trimEnd(), '', ...figures(mine, captions));
  }
  if (plots.size) lines.push('### Other plots', '', ...figures([...plots].sort(), {}));
  // A section from an older run may name a command that no longer exists.
  for (const s of sections) {
    const gone = [...new Set([...fs.readFileSync(s, 'utf8').matchAll(/\bscripts\/([\w-]+)/g)].map(m => m[1]))]
      .filter(x => !fs.existsSync(path.join(root, 'scripts', x)));
    if (gone.length)
      ctx.warn(`${path.basename(s)} names ${gone.map(x => `scripts/${x}`).join(', ')}, which no longer exist: ` +
               `rerun it with \`scripts/bench --only ${path.basename(s).replace(/^RESULTS-|\.md$/g, '')}\``);
  }
  // What the run warned about goes to its own log; the page says where.
  const warnLog = path.join(out, 'data', 'warnings.log');
  if (ctx.warnings.length) {
    fs.mkdirSync(path.dirname(warnLog), { recursive: true });
    fs.writeFileSync(warnLog, relPaths(ctx.warnings.map(w => `${when}: ${w}`).join('\n') + '\n', root));
    lines.push(`This assembly warned ${ctx.warnings.length} time${ctx.warnings.length === 1 ? '' : 's'}: ` +
               '`data/warnings.log`.', '');
  }
  fs.writeFileSync(path.join(out, 'RESULTS.md'), wrapProse(relPaths(lines.join('\n'), root)));
  process.stderr.write(`bench: wrote ${path.join(out, 'RESULTS.md')}\n`);
}

let code = 1;
try {
  code = await main();
} catch (e) {
  process.stderr.write(`bench: ${e.stack || e.message}\n`);
} finally {
  await runCleanups();
}
process.exit(code);
