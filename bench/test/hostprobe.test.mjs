// The host probe beside every run, and --slow-host's runs set aside
// (lib/hostprobe.mjs, docs/DECISIONS.md "Precision: the host's speed probed
// beside every run"): the reference, the rule, and what a cell keeps.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { probeHost, quickest, slowHost, SLOW_HOST } from '../lib/hostprobe.mjs';
import { Cells, machineNote } from '../lib/cells.mjs';
import { cellErrors } from '../lib/goodput.mjs';

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..', process.env.ZB_BUILD || 'build', 'bin/hostprobe');

test('quickest: the 10th percentile, none under 5 probes, unknown probes ignored', () => {
  assert.ok(Number.isNaN(quickest([100, 101, 102, 103])));
  assert.equal(quickest([105, 100, 101, 102, NaN, 103]), 100);
  const xs = Array.from({ length: 21 }, (_, i) => 100 + i);   // 100..120
  assert.equal(quickest(xs), 102);
});

test('slowHost: over the tolerance only, never with an unknown probe', () => {
  assert.equal(SLOW_HOST, 0.04);
  assert.equal(slowHost(104, 100), false);
  assert.equal(slowHost(104.1, 100), true);
  assert.equal(slowHost(NaN, 100), false);
  assert.equal(slowHost(120, NaN), false);
});

test('cells: a run on a slow host is kept apart and run again; its errors still count', async () => {
  // the host is quick (100 ms) but for the probe between the 5th and 6th
  // runs (130 ms), which ends the one and begins the other (after five
  // probes: the reference is known by then)
  let probe = 0;
  const ctx = { repeat: { minRuns: 6, maxRuns: 6, target: 0.05, budgetS: 60 }, warnings: [],
                log() {}, warn(m) { this.warnings.push(m); },
                slowHostTolerance: 0.04, probeHost: () => (probe++ === 5 ? 130 : 100) };
  let run = 0;
  const cells = new Cells(ctx, 'host');
  cells.add('cell', () => {
    run++;
    return { value: run >= 5 && run <= 6 ? 50 : 100, errors: { non2xx: run === 5 ? 3 : 0 } };
  });
  await cells.measure();
  const c = cells.get('cell');
  assert.equal(c.values.length, 6);
  assert.ok(c.values.every(v => v === 100));
  assert.deepEqual(c.slowHost.map(r => r.value), [50, 50]);
  assert.equal(cellErrors(c).non2xx, 3);
  assert.match(machineNote([c]), /2 of 8 runs set aside because the host ran more than 4% slow/);
});

test('cells: without --slow-host the probes are kept and reported, nothing set aside', async () => {
  let probe = 0;
  const ctx = { repeat: { minRuns: 6, maxRuns: 6, target: 0.05, budgetS: 60 }, warnings: [],
                log() {}, warn(m) { this.warnings.push(m); },
                probeHost: () => (probe++ === 3 ? 130 : 100) };
  const cells = new Cells(ctx, 'report');
  cells.add('cell', () => 100);
  await cells.measure();
  const c = cells.get('cell');
  assert.equal(c.values.length, 6);
  assert.equal(c.slowHost.length, 0);
  // one probe between two runs: 7 probes for 6 runs, each run the mean of its two
  assert.equal(probe, 7);
  assert.deepEqual(c.probes, [100, 100, 115, 115, 100, 100]);
  assert.match(machineNote([c]), /probe 100\.0-115\.0 ms \(quickest to slowest\), 2 of 6 runs over \+4% of the quickest \(none set aside: --slow-host\)/);
});

test('cells: runs counted before the host showed its quickest are set aside at the end', async () => {
  // slow (120) for the first three probes, then quick (100): the first
  // three runs are slow (the third half so)
  let probe = 0;
  const ctx = { repeat: { minRuns: 6, maxRuns: 9, target: 0.05, budgetS: 60 }, warnings: [],
                log() {}, warn(m) { this.warnings.push(m); },
                slowHostTolerance: 0.04, probeHost: () => (probe++ < 3 ? 120 : 100) };
  let run = 0;
  const cells = new Cells(ctx, 'late');
  cells.add('cell', () => (++run <= 3 ? 60 : 100));
  await cells.measure();
  const c = cells.get('cell');
  assert.ok(c.values.every(v => v === 100));
  assert.equal(c.slowHost.length, 3);
});

test('cells: no probe unless asked (--quick), and nothing set aside', async () => {
  const ctx = { repeat: { minRuns: 6, maxRuns: 6, target: 0.05, budgetS: 60 }, warnings: [],
                log() {}, warn(m) { this.warnings.push(m); }, bin: () => { throw new Error('probed'); } };
  const cells = new Cells(ctx, 'off');
  cells.add('cell', () => 100);
  await cells.measure();
  assert.equal(cells.get('cell').values.length, 6);
  assert.ok(cells.get('cell').probes.every(Number.isNaN));
  assert.doesNotMatch(machineNote([cells.get('cell')]), /probe|set aside/);
});

test('hostprobe: one line per CPU, a positive time each (where it is built)', { skip: !fs.existsSync(BIN) && 'not built' }, async () => {
  const out = execFileSync(BIN, ['100000', '2'], { encoding: 'utf8' }).trim().split('\n');
  assert.ok(out.length >= 1);
  for (const line of out) assert.match(line, /^\d+ \d+\.\d{3}$/);
  assert.ok(await probeHost({ bin: () => BIN }) > 0);
});

test('hostprobe: a bad argument is exit 2 with a message naming it (where it is built)', { skip: !fs.existsSync(BIN) && 'not built' }, () => {
  for (const [args, msg] of [[['x'], /ITERATIONS: 'x' is not a whole number/], [['1000', '0'], /REPEATS/], [['1', '2', '3'], /usage: hostprobe/]]) {
    const r = spawnSync(BIN, args, { encoding: 'utf8' });
    assert.equal(r.status, 2, args.join(' '));
    assert.match(r.stderr, msg);
  }
});
