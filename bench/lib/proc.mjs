// The /proc sampler: how busy the machine was during a measurement (load
// average, CPU steal and iowait from /proc/stat) and what a process or
// each of its threads spent (/proc/PID/stat, /proc/PID/task/*/stat).
import fs from 'node:fs';
import os from 'node:os';
import { execFileSync } from 'node:child_process';

let tck = 0;
// Clock ticks per second of the times in /proc (USER_HZ).
export function clockTicks() {
  if (!tck) {
    try { tck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100; }
    catch { tck = 100; }
  }
  return tck;
}

// CPU ticks over n events, in µs each (NaN for none).
export const ticksToUs = (ticks, n) => (n > 0 ? ticks / clockTicks() * 1e6 / n : NaN);

export const nproc = () => os.availableParallelism ? os.availableParallelism() : os.cpus().length;

export function loadavg() {
  return fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
}

// CPU time so far, in ticks, from /proc/stat: the whole machine's ("cpu"
// line), or one CPU's (cpuTimes(0): the "cpu0" line).
export function cpuTimes(cpu = '') {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n').find(l => l.startsWith(`cpu${cpu} `)) || '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal = 0] = v;
  // guest time is already counted in user
  return { user, nice, system, idle, iowait, irq, softirq, steal,
           total: user + nice + system + idle + iowait + irq + softirq + steal };
}

// Shares of the machine's CPU time between two cpuTimes() samples.
export function cpuShares(a, b) {
  const t = b.total - a.total;
  if (t <= 0) return { steal: 0, iowait: 0, busy: 0, ticks: 0 };
  return {
    ticks: t,
    steal: (b.steal - a.steal) / t,
    iowait: (b.iowait - a.iowait) / t,
    busy: 1 - (b.idle - a.idle + b.iowait - a.iowait) / t,
  };
}

// utime + stime (ticks) of one /proc/.../stat line; comm may hold spaces
// and parentheses, so fields are counted from the last ')'.
function statTicks(text) {
  const close = text.lastIndexOf(')');
  const f = text.slice(close + 2).split(' ');
  // after comm: state(0) ppid(1) ... utime(11) stime(12)
  return { ticks: Number(f[11]) + Number(f[12]), ppid: Number(f[1]),
           comm: text.slice(text.indexOf('(') + 1, close) };
}

function readStat(path) {
  try { return statTicks(fs.readFileSync(path, 'utf8')); } catch { return null; }
}

// CPU ticks of a whole process (all its threads); 0 if it is gone.
export function processTicks(pid) {
  const s = readStat(`/proc/${pid}/stat`);
  return s ? s.ticks : 0;
}

// Each thread of pid: [{tid, comm, ticks}].
export function threadTicks(pid) {
  let tids = [];
  try { tids = fs.readdirSync(`/proc/${pid}/task`); } catch { return []; }
  const out = [];
  for (const tid of tids) {
    const s = readStat(`/proc/${pid}/task/${tid}/stat`);
    if (s) out.push({ tid: Number(tid), comm: s.comm, ticks: s.ticks });
  }
  return out;
}

// The children of pid (one scan of /proc), e.g. PostgreSQL's backends.
export function childrenOf(pid) {
  const kids = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const s = readStat(`/proc/${d}/stat`);
    if (s && s.ppid === pid) kids.push(Number(d));
  }
  return kids;
}

// CPU ticks of pid and every child it has now (children that exited
// since are counted in its cutime, which /proc/PID/stat also has).
export function treeTicks(pid) {
  let t = 0;
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    t = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  } catch { return 0; }
  for (const k of childrenOf(pid)) t += processTicks(k);
  return t;
}

// CPU ticks of the processes below the given roots (one scan of /proc):
// each one's utime + stime + cutime + cstime, so a child reaped between
// two samples moves from its own count to its parent's, and is counted
// once. What the benchmark itself spends: the driver and what it runs,
// the databases, nginx, Apache.
export function ownTicks(roots) {
  const procs = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const text = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
      procs.set(Number(d), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]) });
    } catch { /* gone meanwhile */ }
  }
  const kids = new Map();
  for (const [pid, p] of procs) {
    if (!kids.has(p.ppid)) kids.set(p.ppid, []);
    kids.get(p.ppid).push(pid);
  }
  let total = 0;
  const seen = new Set();
  const todo = roots.filter(r => procs.has(r));
  while (todo.length) {
    const pid = todo.pop();
    if (seen.has(pid)) continue;
    seen.add(pid);
    total += procs.get(pid).ticks;
    for (const k of kids.get(pid) || []) todo.push(k);
  }
  return total;
}

// The pid a pid file names (its first line), 0 if none. parseInt, not
// Number: pgpool-II ends its pid with a NUL byte, which Number reads as NaN.
export function pidInFile(file) {
  try { return parseInt(fs.readFileSync(file, 'utf8'), 10) || 0; } catch { return 0; }
}

// Every process in the network namespaces that these pids are in: the
// lab's hosts (scripts/lab), whose daemons are nobody's children here.
export function netnsPids(holders) {
  const netOf = pid => { try { return fs.readlinkSync(`/proc/${pid}/ns/net`); } catch { return null; } };
  const self = netOf('self');
  const nets = new Set(holders.map(netOf).filter(n => n && n !== self));
  if (!nets.size) return [];
  return fs.readdirSync('/proc').filter(d => /^\d+$/.test(d) && nets.has(netOf(d))).map(Number);
}

// The inodes of the TCP sockets listening on port, on any local address
// (/proc/net/tcp and tcp6 of this network namespace).
export function listenInodes(port) {
  const inodes = new Set();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try { text = fs.readFileSync(f, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      const v = line.trim().split(/\s+/);
      if (v.length > 9 && v[3] === '0A' && parseInt(v[1].split(':')[1], 16) === port) inodes.add(v[9]);
    }
  }
  return inodes;
}

// The processes (of those this user may look into) that hold a socket
// listening on port.
export function listenerPids(port) {
  const inodes = listenInodes(port);
  if (!inodes.size) return [];
  return fs.readdirSync('/proc').filter(d => /^\d+$/.test(d) && holdsSocket(Number(d), inodes)).map(Number);
}

// Whether pid itself listens on port: the test that the server answering
// there is the one started, not another that held the port already.
export function listensOn(pid, port) {
  return holdsSocket(pid, listenInodes(port));
}

function holdsSocket(pid, inodes) {
  if (!inodes.size) return false;
  let fds = [];
  try { fds = fs.readdirSync(`/proc/${pid}/fd`); } catch { return false; }
  for (const fd of fds) {
    let link = '';
    try { link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`); } catch { continue; }
    const m = /^socket:\[(\d+)\]$/.exec(link);
    if (m && inodes.has(m[1])) return true;
  }
  return false;
}

// "pid N: its command line", for a message.
export function describePid(pid) {
  let cmd = '';
  try { cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' '); } catch { /* gone */ }
  return `pid ${pid}${cmd ? `: ${cmd}` : ''}`;
}

// A sample of the machine's state, and the difference of two: what a
// cell records around each of its runs. roots: the benchmark's own
// processes (ownTicks), so the CPU that other work took can be told apart.
export function machineSample(roots = [process.pid]) {
  return { at: Date.now(), load: loadavg(), cpu: cpuTimes(), own: ownTicks(roots) };
}

export function machineDelta(a, b) {
  const shares = cpuShares(a.cpu, b.cpu);
  // other work: the machine's busy time less the benchmark's own
  const other = shares.ticks ? Math.max(0, shares.busy - (b.own - a.own) / shares.ticks) : 0;
  return { seconds: (b.at - a.at) / 1000, load1: a.load[0], ...shares, other };
}

// Resident memory in KiB (VmRSS) of pid, 0 if it is gone; with tree, of
// pid and its children too (nginx: its master and workers).
export function rssKiB(pid, { tree = false } = {}) {
  const one = p => {
    try { return Number(/^VmRSS:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] || 0); }
    catch { return 0; }
  };
  return one(pid) + (tree ? childrenOf(pid).reduce((s, k) => s + one(k), 0) : 0);
}
