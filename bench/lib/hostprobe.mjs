// The host's speed beside every run (docs/DECISIONS.md, "Precision: the
// host's speed probed beside every run"). This machine is a guest:
// over minutes its CPUs slow down by 5-40% while /proc shows no steal and
// no other process, and the lookups slow 1.3-4 times as much as a plain
// CPU loop does. build/bin/hostprobe times a fixed loop on each
// CPU before and after every run (their mean is the run's probe). With
// `scripts/bench --slow-host PCT`, a run whose probe is more than PCT% over
// the host's quickest is kept in the data but not counted in its cell, and
// the cell runs again in a later round. SLOW_HOST is the share the
// sections report runs over.
import fs from 'node:fs';
import { run, sleep, isStopping } from './run.mjs';
import { ownTicks, clockTicks, childrenOf } from './proc.mjs';

export const SLOW_HOST = 0.04;

// How much more than the probe the lookups' rates move, as measured on
// this machine kind (docs/DECISIONS.md, the probe's entries): the words
// every report that puts the probe beside a rate uses.
export const RATE_FOLLOWS = '1.3-4 times as much';

// Milliseconds of the CPUs' loop (their mean), or NaN where the probe is
// not built (or a signal stops the driver meanwhile). It first waits for
// what a run leaves behind (PostgreSQL ending a hundred backends) to end,
// so that it is not taken for a slow host: until the benchmark's own
// processes (ctx.ownRoots, default this process's tree; this process's
// own CPU left out, its judging costs some) stay idle for a 100-ms window
// (waitIdle), or the whole machine does, ten windows at most. Work of
// others, which no wait would end, does not hold it up.
export async function probeHost(ctx) {
  if (typeof ctx.bin !== 'function') return NaN;
  const bin = ctx.bin('hostprobe');
  if (!fs.existsSync(bin)) return NaN;
  // not this process itself: reading /proc to judge takes CPU of its own
  const roots = (ctx.ownRoots ? ctx.ownRoots() : [process.pid]).flatMap(r => (r === process.pid ? childrenOf(r) : [r]));
  await waitIdle(roots);
  const r = await run(bin, [], { timeoutS: 10 });
  if (r.code !== 0) return NaN;
  const ms = r.stdout.trim().split('\n').map(l => Number(l.split(' ')[1])).filter(Number.isFinite);
  return ms.length ? ms.reduce((a, b) => a + b, 0) / ms.length : NaN;
}

// Until a 100-ms window in which the machine is 90% idle, or the
// processes below roots took under a tenth of one CPU (one clock tick of
// /proc at most); ten windows at most.
async function waitIdle(roots) {
  const cpu = () => fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  for (let i = 0; i < 10 && !isStopping(); i++) {
    const a = cpu(), ownA = ownTicks(roots), t0 = Date.now();
    await sleep(100);
    const b = cpu(), d = b.map((x, j) => x - a[j]);
    const total = d.reduce((s, x) => s + x, 0), idle = d[3] + (d[4] || 0);
    const ownShare = (ownTicks(roots) - ownA) / clockTicks() / ((Date.now() - t0) / 1000);
    if (total > 0 && idle / total >= 0.9 || ownShare < 0.1) return;
  }
}

// The host at its quickest: the 10th percentile of the probes so far (not
// the minimum, which one lucky probe would set); NaN under 5 probes.
export function quickest(probes) {
  const s = probes.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length < 5 ? NaN : s[Math.floor((s.length - 1) * 0.1)];
}

// Whether a run's probe says the host ran slow: never where either is unknown.
export function slowHost(probe, ref, tolerance = SLOW_HOST) {
  return Number.isFinite(probe) && Number.isFinite(ref) && probe > ref * (1 + tolerance);
}
