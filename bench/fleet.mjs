// The measurement of `scripts/fleet run` (./zipbench fleet run), on the
// controller, against a fleet that `scripts/fleet up` started: the cells of
// `make run` (backend x strategy x concurrency; with --php, nginx + PHP-FPM
// and Apache + mod_php on the app host beside them, as scripts/bench's php
// experiment; with
// --cells network, the network experiment's strategies), each run one
// loadgen agent per client host, started together (--start-at) over SSH,
// their HdrHistogram logs merged (loadgen merge) into the run's figure;
// cells interleaved round by round (lib/cells.mjs), the median with its
// 95% interval. Before the first run: the clock offset between the client
// hosts (refused above --max-clock-offset) and the round-trip time between
// the tiers. Beside each cell: every agent's own rate, the client hosts'
// CPU (a cell whose client hosts were above 70% busy is flagged: the
// client, not the app, was then the bottleneck) and the server's CPU per
// answered lookup. The inventory (roles, hosts, each host's CPU model and
// cores, the RTTs, the clock offsets) is in the provenance of the report,
// of --json and of --section. With --lab-loadgen (the fleet being the lab,
// scripts/lab up --ssh), every cell is measured a second way in the same
// rounds, by `scripts/lab loadgen` (agents started in the lab's namespaces,
// no SSH), and the two intervals are compared: the orchestration should add
// no error of its own.
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { run, runMain } from './lib/run.mjs';
import { loadgenReport } from './lib/clients.mjs';
import { table, fmtRatio } from './lib/table.mjs';
import { rateRun, fmtErrors, cellErrors } from './lib/goodput.mjs';
import { Cells, fmtCell } from './lib/cells.mjs';
import { median, summarize } from './lib/stats.mjs';
import { provenance, provenanceLine } from './lib/provenance.mjs';
import { STRATEGIES as NETWORK, PHP_STRATEGIES as NETWORK_PHP } from './experiments/network.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const callerDir = process.env.ZB_CALLER_DIR || process.cwd();
const callersPath = p => (p === undefined ? p : path.resolve(callerDir, p));
process.chdir(root);

// Above this share of their CPUs busy, the client hosts were the bottleneck.
export const CLIENT_BUSY = 0.7;

const usage = `Usage: ./zipbench fleet run [-i INVENTORY] [--ansible ARG]... [OPTIONS]   (scripts/fleet run)

Measures random-key lookups against the fleet's app host as scripts/run
does on one machine: every cell (backend x strategy x concurrency) repeated,
the runs of all cells interleaved round by round, each run after a warm-up,
reported as the median with its 95% interval. Each run is one loadgen agent
per client host, started together (--start-at) and merged (loadgen merge);
a cell's concurrency is the agents' total, split among them.

Options:
  -i, --inventory FILE    the fleet (default conf/fleet.ini; ./zipbench
                          fleet --help)
      --ansible ARG       one argument for ansible-playbook (repeat it)
      --backends LIST     sqlite, pg, innodb, myisam (default sqlite,pg)
      --strategies LIST   pooled, per-request, pipelined (default
                          pooled,per-request; pipelined is pg only)
      --concurrency LIST  total concurrent connections (default "1 10 100")
      --php               also PHP on the app host (zip.php, persistent and
                          per-request), per backend: nginx + PHP-FPM and
                          Apache + mod_php
      --cells network     the network experiment's cells instead: its pg and
                          innodb strategies and PHP-FPM's through the poolers
      --duration S        seconds of one measured run (default 1)
      --runs N            measured runs per cell (default 10)
      --max-clock-offset MS  refuse when two client hosts' clocks differ
                          by more (default 5)
      --json FILE         also write every cell, its runs and agents, and
                          the provenance with the inventory, as JSON
      --section FILE      also write the report as a Markdown section
      --title TEXT        the section's title
      --lab-loadgen       on the lab's inventory (scripts/lab up --ssh):
                          each cell also measured by scripts/lab loadgen on
                          client1..N (N: the fleet's client hosts), in the
                          same rounds, interleaved; prints both intervals,
                          whether they overlap, and fleet / lab from the
                          same rounds (--runs 6 at least; each level of
                          --concurrency a multiple of N)
  -h, --help              this text

Exit status: 0 when every cell was measured without errors (and, with
--lab-loadgen, every cell's two intervals overlap); 1 when a run failed or
answered errors; 2 on bad usage; 3 when a host could not be reached; 4
when the client hosts' clocks disagree; 5 when --lab-loadgen found a cell
whose two intervals do not overlap.`;

function usageError(msg) {
  console.error(`scripts/fleet run: ${msg}\n(./zipbench fleet run --help)`);
  process.exit(2);
}

let args;
try {
  args = parseArgs({ options: {
    fleet: { type: 'string' }, backends: { type: 'string', default: 'sqlite,pg' },
    strategies: { type: 'string', default: 'pooled,per-request' }, concurrency: { type: 'string', default: '1 10 100' },
    php: { type: 'boolean' }, cells: { type: 'string' }, duration: { type: 'string', default: '1' },
    runs: { type: 'string', default: '10' }, 'max-clock-offset': { type: 'string', default: '5' },
    json: { type: 'string' }, section: { type: 'string' }, title: { type: 'string' },
    'lab-loadgen': { type: 'boolean' }, 'check-usage': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } }).values;
} catch (e) { usageError(e.message); }
if (args.help) { console.log(usage); process.exit(0); }
const list = s => s.trim().split(/[\s,]+/).filter(Boolean);
const backends = list(args.backends), strategies = list(args.strategies);
const levels = list(args.concurrency).map(Number);
const seconds = Number(args.duration), runs = Number(args.runs), maxOffsetMs = Number(args['max-clock-offset']);
for (const b of backends) if (!['sqlite', 'pg', 'innodb', 'myisam'].includes(b)) usageError(`--backends: no backend '${b}'`);
for (const s of strategies) if (!['pooled', 'per-request', 'pipelined'].includes(s)) usageError(`--strategies: no strategy '${s}'`);
if (!levels.length || !levels.every(c => Number.isInteger(c) && c >= 1 && c <= 10000)) usageError(`--concurrency: '${args.concurrency}' is not whole numbers 1-10000`);
if (!(seconds > 0 && seconds <= 3600)) usageError(`--duration: '${args.duration}' is not seconds in (0, 3600]`);
if (!(Number.isInteger(runs) && runs >= 1 && runs <= 1000)) usageError(`--runs: '${args.runs}' is not a whole number 1-1000`);
if (!(maxOffsetMs > 0)) usageError(`--max-clock-offset: '${args['max-clock-offset']}' is not milliseconds > 0`);
if (args.cells !== undefined && args.cells !== 'network') usageError(`--cells: '${args.cells}' is not network`);
// Where the report goes must be there before minutes of measuring (a
// missing directory once lost a run's JSON and section at the end).
for (const [opt, file] of [['--json', args.json], ['--section', args.section]]) {
  if (file === undefined) continue;
  const dir = path.dirname(callersPath(file));
  try { fs.accessSync(dir, fs.constants.W_OK); } catch { usageError(`${opt} ${file}: no directory ${dir} to write it in (or not writable)`); }
}
// scripts/fleet checks the options (--check-usage) before it asks the hosts anything.
if (args['check-usage']) process.exit(0);
if (!args.fleet) usageError('--fleet FILE is given by scripts/fleet run (fleet/run.yml writes it)');
const fleet = JSON.parse(fs.readFileSync(args.fleet, 'utf8'));
// --lab-loadgen: the lab's directory, for scripts/lab (its inventory names it).
const labDir = args['lab-loadgen'] ? Object.values(fleet.hosts).map(h => h.lab_dir).find(Boolean) : undefined;
if (args['lab-loadgen']) {
  if (!labDir) usageError('--lab-loadgen: the inventory is not a lab\'s (scripts/lab up --ssh writes one, with zipbench_lab_dir)');
  if (runs < 6) usageError(`--lab-loadgen: --runs ${runs} gives no 95% interval to compare: 6 at least`);
  const n = fleet.roles.client.length;
  const odd = levels.filter(c => c % n);
  if (odd.length) usageError(`--lab-loadgen: --concurrency ${odd.join(' ')}: not a multiple of the ${n} client hosts (scripts/lab loadgen gives every agent the same -c)`);
}
const jsonOut = callersPath(args.json), sectionOut = callersPath(args.section);

const build = process.env.ZB_BUILD || 'build';
const work = path.join(path.dirname(args.fleet), 'run');
const cpDir = process.env.ZB_FLEET_CP_DIR || path.dirname(args.fleet);
const ctx = {
  root, build, quick: false, work, logFile: path.join(work, 'fleet.log'),
  bin: name => path.join(build, 'bin', name),
  repeat: { minRuns: runs, maxRuns: runs, target: 0.05, budgetS: Infinity },
  log: line => fs.appendFileSync(ctx.logFile, `${line}\n`), warn: line => console.error(line),
};

// ---- the hosts, over SSH as Ansible reaches them --------------------------

const hostsOf = role => fleet.roles[role].map(name => ({ name, ...fleet.hosts[name] }));
const q = s => `'${String(s).replace(/'/g, "'\\''")}'`;
// A word as a shell reads it back: quoted only where it must be (a
// section's Command line is copied into a shell).
const shellWord = s => (/^[\w@%+=:,./-]+$/.test(s) ? s : q(s));

// The argv that runs a bash script on host (as its login user, in its
// project directory): ssh with the inventory's own options (bash splits
// them, as Ansible does), sharing Ansible's connection; or bash here.
function onHost(host, script) {
  const remote = `cd ${q(host.dir)} && exec bash -c ${q(script)}`;
  if (host.connection === 'local') return ['bash', ['-c', remote]];
  const opts = ['-o', 'ControlMaster=auto', '-o', `ControlPath=${cpDir}/%C`, '-o', 'ControlPersist=300', '-o', 'BatchMode=yes',
                ...(host.ssh_key ? ['-i', host.ssh_key] : []), ...(host.ssh_port ? ['-p', String(host.ssh_port)] : []),
                ...(host.ssh_user ? ['-l', host.ssh_user] : [])];
  return ['bash', ['-c', `exec ssh ${host.ssh_args} "$@"`, 'ssh', ...opts, host.ssh_host, remote]];
}
async function sh(host, script, timeoutS = 120) {
  const [cmd, a] = onHost(host, script);
  const r = await run(cmd, a, { log: ctx.logFile, timeoutS });
  if (r.code === 0) return r.stdout;
  const e = new Error(`${host.name}: exit ${r.code}: ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' | ')}`);
  e.unreachable = host.connection !== 'local' && r.code === 255;   // ssh's own failure
  throw e;
}

// The clock of each client host against the controller's: over one SSH
// session per host, a line out and the host's $EPOCHREALTIME back, 20
// times; the sample of the shortest round trip gives offset = host's time
// - the middle of the round trip, known to +- half that round trip.
async function clockOf(host) {
  const [cmd, a] = onHost(host, 'while read -r _; do echo "$EPOCHREALTIME"; done');
  const child = spawn(cmd, a, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', d => { stderr = (stderr + d).slice(-2000); });
  const lines = [];
  let waiting = null, buf = '';
  child.stdout.on('data', d => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) { lines.push(buf.slice(0, i)); buf = buf.slice(i + 1); if (waiting) waiting(); }
  });
  // The condition is the session: an answer, or its end (ssh's own
  // ConnectTimeout bounds a host that cannot be reached). The bound on top
  // only stops a session that hangs: the first answer carries the login,
  // which a busy machine stretches (30 s was once not enough).
  let ended = null, endCode = null;
  child.on('exit', code => {
    endCode = code;
    ended = `the SSH session ended (exit ${code}${stderr.trim() ? `: ${stderr.trim().split('\n').slice(-2).join(' | ')}` : ''})`;
    if (waiting) waiting();
  });
  const now = () => performance.timeOrigin + performance.now();
  const next = first => new Promise((resolve, reject) => {
    const s = first ? 300 : 30;
    const t = setTimeout(() => reject(new Error(`${host.name}: no answer to the clock probe in ${s} s`)), s * 1000);
    waiting = () => {
      if (lines.length) { clearTimeout(t); waiting = null; resolve(lines.shift()); }
      else if (ended) {
        clearTimeout(t); waiting = null;
        const e = new Error(`${host.name}: clock probe: ${ended}`);
        e.sshFailed = endCode === 255 && host.connection !== 'local';   // ssh's own failure, not the script's
        reject(e);
      }
    };
    waiting();
  });
  let best = null;
  try {
    for (let i = 0; i < 21; i++) {
      const t0 = now();
      child.stdin.write('\n');
      const remote = Number(await next(i === 0)) * 1000;
      const t1 = now();
      if (i === 0) continue;   // the session's first answer carries its start
      if (!best || t1 - t0 < best.rttMs) best = { rttMs: t1 - t0, offsetMs: remote - (t0 + t1) / 2 };
    }
  } finally { child.stdin.end(); child.kill(); }
  return best;
}

// A round trip between tiers, in ms: min and median of the samples.
const spread = xs => (xs.length ? { min: Math.min(...xs), median: median(xs), n: xs.length } : null);

// client -> app: loadgen's p50 of keep-alive GET /stats (the server alone).
async function clientAppRtt(host) {
  const out = await sh(host, `build/bin/loadgen -q --json -k -c 1 -n 300 http://${app.addr}:${fleet.ports.app}/stats`);
  const j = JSON.parse(out.trim().split('\n').pop());
  return { p50: j.latency_us?.p50 / 1000, min: j.latency_us?.min / 1000 };
}
// app -> PostgreSQL host: psql's \timing of SELECT 1 on one connection.
async function appDbRtt(addr) {
  const out = await sh(app, `PGPASSFILE=build/fleet/db.pgpass psql -X -w -h ${addr} -p ${fleet.ports.pg} -U zipbench -d zipbench ` +
                            `-c '\\timing on' ${' -c "SELECT 1"'.repeat(30)}`);
  return spread([...out.matchAll(/^Time: ([\d.]+) ms/gm)].map(m => Number(m[1])).slice(1));
}

// ---- one run: an agent per client host ----------------------------------

const app = hostsOf('app')[0];
const clients = hostsOf('client');
const baseUrl = `http://${app.addr}:${fleet.ports.app}`;
const phpUrl = `http://${app.addr}:${fleet.ports.php}/zip.php`;
const apacheUrl = `http://${app.addr}:${fleet.ports.apache}/zip.php`;
let startMarginMs = 500;

// Each agent's share of the cell's concurrency c (at least 1 each).
const shares = c => clients.map((_, i) => Math.max(1, Math.floor(c / clients.length) + (i < c % clients.length ? 1 : 0)));

// The host's time printed beside a /proc/stat sample ("t EPOCH.US").
const stamp = text => Number((text.match(/^t ([\d.]+)$/m) || [])[1]);
// The busy share of the CPUs this process may use, from /proc/stat lines
// before and after, `secs` apart (the agent's whole window: the wait for
// --start-at, which is short, included).
function busyShare(allowed, before, after, secs, hz = 100) {
  const cpus = new Set();
  for (const part of allowed.split(',')) {
    const [a, b] = part.split('-').map(Number);
    for (let i = a; i <= (Number.isFinite(b) ? b : a); i++) cpus.add(`cpu${i}`);
  }
  const busy = text => {
    let sum = 0;
    for (const line of text.split('\n')) {
      const f = line.trim().split(/\s+/);
      if (!cpus.has(f[0])) continue;
      const v = f.slice(1).map(Number);
      sum += v.reduce((s, x) => s + x, 0) - v[3] - v[4] - (v[7] || 0);   // less idle, iowait, steal
    }
    return sum;
  };
  return cpus.size && secs > 0 ? (busy(after) - busy(before)) / hz / (cpus.size * secs) : NaN;
}

async function serverTicks() {
  const out = await sh(app, 'cut -d" " -f14,15 /proc/$(cat build/fleet/server.pid)/stat; getconf CLK_TCK');
  const [ticks, hz] = out.trim().split('\n');
  return ticks.split(' ').map(Number).reduce((a, b) => a + b, 0) / Number(hz);
}

let runNo = 0, runsRedone = 0;
// One run of url at total concurrency c: the merged report's rate (rateRun)
// with each agent's rate, the client hosts' busy share and the server's
// CPU per answered lookup; NaN when an agent gave no log. The merged run
// lasts from the first agent's start to the last one's end, so a run
// whose latest agent started more than 1% of the run (2 ms at least)
// after --start-at is measured again with twice the margin, up to 3 tries.
async function fleetRun(url, c, { warm = false } = {}) {
  for (let attempt = 1; ; attempt++) {
    const r = await fleetRunOnce(url, c, { warm });
    if (warm || !r || !(r.startLateMs > Math.max(2, 10 * seconds)) || attempt === 3) return r;
    ctx.log(`${url} c=${c}: an agent started ${r.startLateMs.toFixed(1)} ms after --start-at ` +
            `(margin ${startMarginMs} ms): measured again with twice the margin`);
    startMarginMs = Math.min(5000, startMarginMs * 2);
    runsRedone++;
  }
}

async function fleetRunOnce(url, c, { warm = false } = {}) {
  const dir = path.join(work, `run-${++runNo}`);
  fs.mkdirSync(dir, { recursive: true });
  const secs = warm ? Math.min(1, seconds) : seconds;
  const keys = url.includes('{key}') ? '--keys build/fleet/dataset.keys' : '';
  const share = shares(c);
  const cpu0 = warm ? 0 : await serverTicks();
  // After the probe of the server's CPU, which is an SSH round trip of its
  // own: set before it, --start-at left the agents less than the margin.
  const at = Math.round(Date.now() + startMarginMs);
  const outs = await Promise.all(clients.map((h, i) => sh(h, [
    'grep ^Cpus_allowed_list /proc/self/status; echo "t $EPOCHREALTIME"; grep "^cpu[0-9]" /proc/stat; echo =====',
    `build/bin/loadgen -q --json --start-at ${at} --hdr-log build/fleet/agent.hlog ${keys} --seed ${runNo * 100 + i} ` +
    `-k -c ${share[i]} -t ${secs} -n 50000000 ${q(url)}; echo "===== $?"`,
    'echo "t $EPOCHREALTIME"; grep "^cpu[0-9]" /proc/stat; echo =====; cat build/fleet/agent.hlog'].join('\n'), secs * 4 + 60)
    .catch(e => { ctx.log(e.message); return ''; })));
  const cpu1 = warm ? 0 : await serverTicks();
  const agents = [];
  for (const [i, out] of outs.entries()) {
    const parts = out.split(/^=====.*$/m);
    const j = parts[1] && parts[1].trim().split('\n').filter(l => l.startsWith('{')).pop();
    if (!j || parts.length < 4) { ctx.log(`${clients[i].name}: no report for ${url}: ${out.slice(-300)}`); return NaN; }
    const report = JSON.parse(j);
    const allowed = (parts[0].match(/Cpus_allowed_list:\s*(\S+)/) || [])[1] || '';
    fs.writeFileSync(path.join(dir, `${clients[i].name}.hlog`), parts[3].replace(/^\n/, ''));
    agents.push({ host: clients[i].name, c: share[i], rps: report.rps, completed: report.completed,
                  late_ms: report.start_epoch_s * 1000 - at,
                  busy: busyShare(allowed, parts[0], parts[2], stamp(parts[2]) - stamp(parts[0])) });
  }
  const merged = await run(ctx.bin('loadgen'), ['merge', '--json', ...clients.map(h => path.join(dir, `${h.name}.hlog`))],
                           { log: ctx.logFile });
  const line = merged.stdout.trim().split('\n').filter(l => l.startsWith('{')).pop();
  if (!line) { ctx.log(`loadgen merge: ${merged.stderr.trim()}`); return NaN; }
  const m = JSON.parse(line);
  const g = rateRun(loadgenReport(m));
  const answered = g.value * (m.seconds || 0);
  if (!warm) fs.rmSync(dir, { recursive: true, force: true });
  return { ...g, agents, clientBusy: Math.max(...agents.map(a => a.busy)),
           startLateMs: Math.max(...agents.map(a => a.late_ms)), startSkewMs: (m.start_skew_s ?? 0) * 1000,
           serverUs: answered > 0 ? (cpu1 - cpu0) * 1e6 / answered : NaN,
           clientUs: m.cpu_us_per_req ?? NaN, p50: m.latency_us?.p50, p99: m.latency_us?.p99 };
}

// One run of url at total concurrency c by `scripts/lab loadgen` (the same
// agents, started in the lab's namespaces without SSH, merged by the same
// loadgen merge): the merged report's rate (rateRun); NaN when it gave none.
async function labRun(url, c, { warm = false } = {}) {
  const secs = warm ? Math.min(1, seconds) : seconds;
  const keys = url.includes('{key}') ? ['--keys', path.join(path.dirname(args.fleet), 'dataset.keys')] : [];
  const r = await run(path.join(root, 'scripts', 'lab'),
                      ['loadgen', '--clients', String(clients.length), '--json', ...keys, '-k', '-c', String(c / clients.length),
                       '-t', String(secs), '-n', '50000000', url],
                      { env: { ZB_LAB_DIR: labDir }, log: ctx.logFile, timeoutS: secs * 4 + 60 });
  const line = r.stdout.trim().split('\n').filter(l => l.startsWith('{')).pop();
  if (!line) { ctx.log(`scripts/lab loadgen: exit ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`); return NaN; }
  const m = JSON.parse(line);
  return { ...rateRun(loadgenReport(m)), p50: m.latency_us?.p50, p99: m.latency_us?.p99 };
}
const LAB = ' (scripts/lab loadgen)';

// ---- the cells ---------------------------------------------------------------

// [label, url, c] of every cell.
function cellList() {
  const out = [];
  for (const c of levels) {
    if (args.cells === 'network') {
      for (const [label, b, query] of NETWORK) out.push([label, `${baseUrl}/zip/${b}/{key}?${query}`, c]);
      for (const [label, query] of NETWORK_PHP) out.push([label, `${phpUrl}?${query}`, c]);
      continue;
    }
    for (const b of backends) for (const s of strategies) {
      if (s === 'pipelined' && b !== 'pg') continue;
      out.push([`${b} ${s}`, `${baseUrl}/zip/${b}/{key}?strategy=${s}`, c]);
    }
    if (args.php) for (const [front, url] of [['PHP-FPM', phpUrl], ['Apache', apacheUrl]])
      for (const b of backends) for (const [p, what] of [[1, 'persistent'], [0, 'per-request']])
        out.push([`${front} ${b} ${what}`, `${url}?backend=${b}&code=random&persistent=${p}`, c]);
  }
  return out;
}

async function main() {
  provenance();
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true });
  fs.writeFileSync(ctx.logFile, '');
  const t0 = Date.now();

  // Clocks first: --start-at means nothing across clocks that disagree.
  const clocks = {};
  // An SSH login that fails (exit 255: a busy host's sshd may drop a
  // login) is tried again, twice; what the script itself says is not.
  for (const h of clients) {
    for (let attempt = 1; ; attempt++) {
      try { clocks[h.name] = await clockOf(h); break; } catch (e) {
        if (!e.sshFailed || attempt === 3) throw e;
        console.error(`fleet: ${e.message}; trying again (${attempt + 1} of 3)`);
      }
    }
  }
  const names = clients.map(h => h.name);
  let worst = { ms: 0, pair: '-', pm: 0 };
  for (const a of names) for (const b of names) if (a < b) {
    const ms = Math.abs(clocks[a].offsetMs - clocks[b].offsetMs);
    if (ms >= worst.ms) worst = { ms, pair: `${a}-${b}`, pm: (clocks[a].rttMs + clocks[b].rttMs) / 2 };
  }
  const slowest = Math.max(...Object.values(clocks).map(x => x.rttMs));
  startMarginMs = Math.max(500, 10 * slowest);
  const clockText = names.length < 2 ? 'one client host: no offset to measure'
    : `largest offset between client hosts ${worst.ms.toFixed(2)} ms (${worst.pair}, +-${worst.pm.toFixed(2)} ms), bound ${maxOffsetMs} ms`;
  console.log(`== clocks: ${clockText}`);
  if (worst.ms > maxOffsetMs) {
    console.error(`scripts/fleet run: the client hosts' clocks differ by ${worst.ms.toFixed(2)} ms (${worst.pair}), more than ` +
                  `--max-clock-offset ${maxOffsetMs} ms: synchronise them (chrony) before measuring`);
    return 4;
  }
  // The round trips between the tiers.
  const rtt = { client_app: {}, app_db: {} };
  for (const h of clients) rtt.client_app[h.name] = await clientAppRtt(h);
  for (const h of [...hostsOf('db'), ...hostsOf('db_replica')]) rtt.app_db[h.name] = await appDbRtt(h.addr);
  const inventory = { file: fleet.inventory, roles: fleet.roles, ports: fleet.ports, clocks, rtt_ms: rtt,
    hosts: Object.fromEntries(Object.entries(fleet.hosts).map(([n, h]) =>
      [n, { roles: h.roles, addr: h.addr, listen: h.listen, hostname: h.hostname, cpu: h.cpu, cores: h.cores, kernel: h.kernel, lab: h.lab || undefined }])) };

  const cells = new Cells(ctx, 'fleet');
  const list = cellList();
  for (const [label, url, c] of list) {
    cells.add(`${label} ${c}`, () => fleetRun(url, c), { warm: () => fleetRun(url, c, { warm: true }), runsPerVisit: 1 });
    if (labDir) cells.add(`${label} ${c}${LAB}`, () => labRun(url, c), { warm: () => labRun(url, c, { warm: true }), runsPerVisit: 1 });
  }
  console.log(`== lookups through the fleet: ${list.length} cells, ${runs} runs of ${seconds} s each, interleaved; ` +
              `${clients.length} agent(s) per run (${names.join(', ')}), started together, merged` +
              (labDir ? `; each cell also by scripts/lab loadgen on client1..${clients.length} in the same rounds` : '') + '\n');
  await cells.measure();

  const lines = report(cells, list, inventory, clockText);
  console.log(lines.join('\n'));
  console.log(`Measured in ${Math.round((Date.now() - t0) / 1000)} s; the log: ${ctx.logFile}.`);
  const prov = { ...provenance(), inventory };
  const runsOf = cl => ({ runs: cl.values, ...cl.summary, errors: cellErrors(cl), rounds: cl.rounds });
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ provenance: prov, seconds, runs, runs_redone: runsRedone,
                                                          start_margin_ms: startMarginMs, cells: list.map(([label, url, c]) => {
    const cl = cells.get(`${label} ${c}`);
    return { cell: label, url, concurrency: c, ...runsOf(cl),
             agents: cl.extras.map(e => e.agents), client_busy: cl.extras.map(e => e.clientBusy),
             server_us: cl.extras.map(e => e.serverUs),
             start_late_ms: cl.extras.map(e => e.startLateMs), start_skew_ms: cl.extras.map(e => e.startSkewMs),
             ...(labDir ? { lab_loadgen: runsOf(cells.get(`${label} ${c}${LAB}`)) } : {}) };
  }) }, null, 1) + '\n');
  if (sectionOut) {
    const title = args.title || 'Lookups through the fleet';
    fs.writeFileSync(sectionOut, [`## ${title}`, '', `Command: \`./zipbench fleet run -i ${fleet.inventory} ` +
      `${process.argv.slice(2).filter(a => !a.startsWith('--fleet') && a !== args.fleet).map(shellWord).join(' ')}\`.`, '', ...lines, ''].join('\n'));
  }
  const bad = cells.keys().filter(k => { const cl = cells.get(k); return cl.values.length < runs || cellErrors(cl).total; }).length;
  if (bad) {
    console.error(`scripts/fleet run: ${bad} cell(s) had errors or failed runs (see the errors column and ${ctx.logFile})`);
    return 1;
  }
  const apart = labDir ? agreement(cells, list).filter(a => a.overlap === false) : [];
  if (apart.length) {
    console.error(`scripts/fleet run: --lab-loadgen: the two intervals do not overlap for ${apart.map(a => `${a.cell} ${a.c}`).join(', ')}`);
    return 5;
  }
  return 0;
}

const pct = x => (Number.isFinite(x) ? `${Math.round(100 * x)}%` : '-');
const ms = x => (Number.isFinite(x) ? x.toFixed(3) : '-');
const med = (cl, f) => { const v = cl.extras.map(f).filter(Number.isFinite); return v.length ? median(v) : NaN; };

// --lab-loadgen: each cell's two measurements (its Cells' cells), whether
// their 95% intervals overlap (null: either has none), and fleet / lab
// from the same rounds.
function agreement(cells, list) {
  return list.map(([label, , c]) => {
    const key = `${label} ${c}`, fleetCell = cells.get(key), labCell = cells.get(key + LAB);
    const f = fleetCell.summary, l = labCell.summary;
    const overlap = [f.lo, f.hi, l.lo, l.hi].some(Number.isNaN) ? null : f.lo <= l.hi && l.lo <= f.hi;
    return { cell: label, c, fleet: fleetCell, lab: labCell, overlap, ratio: cells.sameRoundRatio(key, key + LAB) };
  });
}

// How together the agents started, over every run: the latest agent's
// start after --start-at and the spread between the agents, at worst.
function startLine(cells, list) {
  const all = list.flatMap(([label, , c]) => cells.get(`${label} ${c}`).extras);
  const worst = f => Math.max(0, ...all.map(f).filter(Number.isFinite));
  return `Start: every agent started within ${worst(e => e.startLateMs).toFixed(1)} ms of --start-at, ` +
    `the agents of a run within ${worst(e => e.startSkewMs).toFixed(1)} ms of each other; ${runsRedone} run(s) measured again ` +
    `for a late start (margin now ${startMarginMs} ms). The merged rate counts from the first start to the last end.`;
}

// The report's lines: the cells, the same-round ratios, the fleet.
function report(cells, list, inventory, clockText) {
  const rows = list.map(([label, , c]) => {
    const cl = cells.get(`${label} ${c}`);
    const agents = clients.map(h => Math.round(med(cl, e => e.agents.find(a => a.host === h.name)?.rps)).toLocaleString('en-US'));
    const busy = med(cl, e => e.clientBusy);
    return [label, c, fmtCell(cl), `+-${(100 * (cl.summary.halfWidth || 0)).toFixed(1)}%`, agents.join(' / '),
            pct(busy) + (busy > CLIENT_BUSY ? ' CLIENT-BOUND' : ''), Number.isFinite(med(cl, e => e.serverUs)) ? med(cl, e => e.serverUs).toFixed(1) : '-',
            `${ms(med(cl, e => e.p50) / 1000)} / ${ms(med(cl, e => e.p99) / 1000)}`, fmtErrors(cl) || '0'];
  });
  const out = [table(['cell', 'c', 'answered req/s [95% CI] (merged)', 'width', `each agent (${clients.map(h => h.name).join(' / ')})`,
                      'client hosts busy', 'server µs', 'p50 / p99 ms', 'errors'], rows, 'lrrrrrrrl'), '',
    `Merged: loadgen merge of the agents' HdrHistogram logs, one figure per run; each agent: its own rate (median over the runs). ` +
    `Client hosts busy: the busiest client host's CPUs (those its agent may use) over the run; above ${pct(CLIENT_BUSY)} ` +
    'the cell says CLIENT-BOUND: the clients, not the app, were the bottleneck. Server µs: CPU per answered lookup of the server on the app host. ' +
    `Marks after the interval: \`!\` the runs (--runs) ran out before the interval was within +-5% (the width column says how wide); ` +
    '`*` this machine, the controller, was busy with other work during the cell (not the hosts: in the lab, whose hosts share this machine, ' +
    'their processes are that other work); `E` some runs had errors (the errors column).', ''];
  const ratios = [];
  for (const c of levels) for (const b of backends) {
    const a = `${b} pooled ${c}`, r = `${b} per-request ${c}`;
    if (!cells.get(a) || !cells.get(r)) continue;
    const x = cells.sameRoundRatio(a, r), s = x.summary;
    ratios.push([b, c, s && !Number.isNaN(s.lo) ? `${fmtRatio(x.value)} [${s.lo.toFixed(2)}-${s.hi.toFixed(2)}]` : fmtRatio(x.value)]);
  }
  if (ratios.length) out.push('pooled / per-request, from the runs of the same rounds:', '', table(['backend', 'c', 'ratio [95% CI]'], ratios, 'lrr'), '');
  if (labDir) {
    out.push('The same cells by scripts/lab loadgen, in the same rounds (--lab-loadgen):', '',
      table(['cell', 'c', 'fleet run [95% CI]', 'scripts/lab loadgen [95% CI]', 'overlap', 'fleet / lab, same rounds [95% CI]'],
            agreement(cells, list).map(a => [a.cell, a.c, fmtCell(a.fleet), fmtCell(a.lab), a.overlap === null ? '- (no interval)' : a.overlap ? 'yes' : 'NO',
              a.ratio.summary && !Number.isNaN(a.ratio.summary.lo)
                ? `${fmtRatio(a.ratio.value)} [${a.ratio.summary.lo.toFixed(3)}-${a.ratio.summary.hi.toFixed(3)}]` : fmtRatio(a.ratio.value)]), 'lrrrlr'), '',
      'The orchestration adds no error of its own when the two intervals of a cell overlap (and fleet / lab is about 1): ' +
      'the same agents, the same server, the same rounds; one started over SSH by the fleet, the other in the lab\'s namespaces.', '');
  }
  out.push('The fleet (the inventory as Ansible read it):', '',
    table(['host', 'roles', 'address', 'CPU', 'cores', 'kernel'], Object.entries(inventory.hosts).map(([n, h]) =>
      [n, h.roles.join(', '), h.addr, h.cpu, h.cores, h.kernel]), 'llllrl'), '',
    'Round trips: ' + [...Object.entries(inventory.rtt_ms.client_app).map(([n, r]) => `${n} -> app ${ms(r.p50)} ms (HTTP /stats, p50)`),
      ...Object.entries(inventory.rtt_ms.app_db).map(([n, r]) => `app -> ${n} ${ms(r?.median)} ms (SELECT 1, median; min ${ms(r?.min)})`)].join('; ') + '.',
    `Clocks: ${clockText}.`, startLine(cells, list), '', provenanceLine(), '');
  return out;
}

// A host SSH cannot reach: exit 3, as scripts/fleet's playbooks.
await runMain('scripts/fleet run', () => main().catch(e => {
  if (!e.unreachable) throw e;
  console.error(`scripts/fleet run: a host could not be reached over SSH: ${e.message}`);
  return 3;
}));
