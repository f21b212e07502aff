// Running the tools: a program to completion (its output captured, its
// JSON parsed), or in the background (a server) with a stop that the
// driver's cleanup calls whatever happens, so a benchmark never leaves
// what it started behind.
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import { AsyncLocalStorage } from 'node:async_hooks';

const cleanups = [];
// Once the cleanup has begun (a signal, a failure, the end), nothing new
// is started but by the cleanup itself: the experiment that was running
// when a signal came may go on for a moment, but it can start no server
// that nobody would stop. The clients still running are ended; a lifecycle
// script still running (scripts/: a start under way) is waited for, so
// that what it starts is registered and then stopped.
let stopping = false;
// A child ended by Ctrl-C (SIGINT, or exit 130 as the loader reports it):
// the terminal signalled the whole process group, and this process's own
// SIGINT may be handled after that child's end is seen.
let interruptedByChild = false;
const inCleanup = new AsyncLocalStorage();
const live = new Map();   // child -> {done: its promise, lifecycle}
const refused = () => stopping && !inCleanup.getStore();
const isLifecycle = cmd => /(^|\/)scripts\/[^/]+$/.test(cmd);

// true once the cleanup has begun: a driver writes no more results then.
export const isStopping = () => stopping;

// fn runs at the end of the driver, also on failure or a signal; latest first.
export function atCleanup(fn) {
  cleanups.push(fn);
  return () => { const i = cleanups.indexOf(fn); if (i >= 0) cleanups.splice(i, 1); };
}

// Once: a second call (the end of main and a signal both come) waits for
// the first, so that nobody exits while a stop is still under way.
let cleaning = null;
export function runCleanups() {
  cleaning ??= cleanUp();
  return cleaning;
}

async function cleanUp() {
  stopClients();
  await Promise.all([...live.values()].map(x => x.done));
  await new Promise(resolve => setImmediate(resolve));   // their callers register their stops
  await inCleanup.run(true, async () => {
    while (cleanups.length) {
      const fn = cleanups.pop();
      try { await fn(); } catch (e) { process.stderr.write(`bench: cleanup: ${e.message}\n`); }
    }
  });
}

// A command line as a log may show it: a password given as an argument
// (sysbench reads no option file) becomes ***.
export const redacted = line => line.replace(/(password=)\S+/gi, '$1***');

// Runs cmd to completion: {code, stdout, stderr, seconds}. A run longer
// than timeoutS (default 30 min) is killed: every loop stops by itself.
// inherit: the program writes to this process's stdout and stderr (a
// loader's own report and progress), nothing captured; 'stderr': to its
// stderr only, its stdout captured.
export function run(cmd, args = [], { env, cwd, input, log, timeoutS = 1800, inherit = false } = {}) {
  let child;
  const done = new Promise(resolve => {
    const t0 = process.hrtime.bigint();
    if (refused()) { resolve({ code: 130, stdout: '', stderr: `${cmd}: not started: stopping`, seconds: 0 }); return; }
    try {
      child = spawn(cmd, args, { env: env ? { ...process.env, ...env } : process.env, cwd,
                                 stdio: ['pipe', inherit === true ? 'inherit' : 'pipe', inherit ? 'inherit' : 'pipe'] });
    } catch (e) {
      resolve({ code: 127, stdout: '', stderr: e.message, seconds: 0 });
      return;
    }
    const out = [], err = [];
    if (child.stdout) child.stdout.on('data', d => out.push(d));
    if (child.stderr) child.stderr.on('data', d => err.push(d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutS * 1000);
    child.on('error', e => err.push(Buffer.from(e.message)));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      live.delete(child);
      if (signal === 'SIGINT' || code === 130) { interruptedByChild = true; stopping = true; }
      const stderr = Buffer.concat(err).toString('utf8');
      if (log) fs.appendFileSync(log, `$ ${redacted([cmd, ...args].join(' '))}\n${stderr}`);
      resolve({ code: code ?? 128, signal, stdout: Buffer.concat(out).toString('utf8'), stderr,
                seconds: Number(process.hrtime.bigint() - t0) / 1e9 });
    });
    child.stdin.on('error', () => {});
    if (input !== undefined) child.stdin.end(input); else child.stdin.end();
  });
  if (child && !inCleanup.getStore()) live.set(child, { done, lifecycle: isLifecycle(cmd) });
  return done;
}

// The JSON objects a tool printed one per line (--json).
export function jsonLines(text) {
  const objs = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t.startsWith('{')) continue;
    try { objs.push(JSON.parse(t)); } catch { /* not JSON: a message */ }
  }
  return objs;
}

export async function runJSON(cmd, args, opts) {
  const r = await run(cmd, args, opts);
  return { ...r, json: jsonLines(r.stdout) };
}

// A program left running (a server): stop() sends SIGTERM, waits up to
// 10 s, then SIGKILL; it is also stopped at cleanup.
export function background(cmd, args = [], { env, log } = {}) {
  if (refused()) throw new Error(`${cmd}: not started: stopping`);
  const fd = log ? fs.openSync(log, 'a') : 'ignore';
  const child = spawn(cmd, args, { env: env ? { ...process.env, ...env } : process.env,
                                   stdio: ['ignore', fd, fd] });
  if (typeof fd === 'number') fs.closeSync(fd);
  let exited = false;
  const done = new Promise(resolve => child.on('exit', (code, signal) => { exited = true; resolve({ code, signal }); }));
  child.on('error', () => { exited = true; });
  const handle = {
    pid: child.pid,
    alive: () => !exited,
    exited: done,
    async stop() {
      unregister();
      if (exited) return done;
      child.kill('SIGTERM');
      const timer = setTimeout(() => { if (!exited) child.kill('SIGKILL'); }, 10000);
      const r = await done;
      clearTimeout(timer);
      return r;
    },
  };
  const unregister = atCleanup(() => handle.stop());
  return handle;
}

export const sleep = ms => new Promise(r => setTimeout(r, ms));

// How long a driver's main() may go on after Ctrl-C to report what it had
// measured (its clients are ended at once, nothing new starts): the stop
// as a whole stays within 2 s.
export const GRACE_MS = 1200;

// A script's main(): its exit code is the process's, and what it started
// is stopped first, also on an exception. On SIGINT or SIGTERM the clients
// running are ended at once and nothing new starts (isStopping()); main()
// then has GRACE_MS to report what it had measured, after which what was
// started is stopped and the process exits 130. A second signal does not
// wait for main().
export async function runMain(name, main) {
  let code = 1, interrupted = false;
  const done = (async () => {
    try {
      code = await main();
    } catch (e) {
      // A failure says what failed; a bug shows where.
      const bug = e instanceof TypeError || e instanceof ReferenceError || e instanceof RangeError;
      process.stderr.write(`${name}: ${bug ? e.stack : e.message}\n`);
      code = 1;
    }
  })();
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, async () => {
    const again = interrupted;
    interrupted = true;
    if (!again) {
      stopClients();
      const timer = new Promise(resolve => setTimeout(resolve, GRACE_MS).unref());
      await Promise.race([done, timer]);
    }
    await runCleanups();
    process.exit(130);
  });
  await done;
  await runCleanups();
  process.exit(interrupted || interruptedByChild ? 130 : code);
}

// Nothing new starts, and the clients running now (not the lifecycle
// scripts: what they start must be registered, then stopped) are ended.
function stopClients() {
  stopping = true;
  for (const [child, { lifecycle }] of live) if (!lifecycle) child.kill('SIGTERM');
}
