// The driver's own arithmetic: the median, its 95% interval, the stopping
// rule of a cell, and how a cell prints. Run by `node --test bench/test/`
// (test_bench runs it).
import test from 'node:test';
import assert from 'node:assert/strict';
import { median, medianCI, summarize } from '../lib/stats.mjs';
import { Cells, fmtCell } from '../lib/cells.mjs';

test('median: odd, even, unsorted, empty', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.ok(Number.isNaN(median([])));
});

test('medianCI: order statistics of the binomial method', () => {
  assert.equal(medianCI([1, 2, 3, 4, 5]), null);                        // n = 5: none at 95%
  assert.deepEqual(medianCI([6, 1, 5, 2, 4, 3]), { lo: 1, hi: 6 });       // n = 6: min..max
  assert.deepEqual(medianCI([1, 2, 3, 4, 5, 6, 7, 8]), { lo: 1, hi: 8 }); // n = 8: still
  assert.deepEqual(medianCI([1, 2, 3, 4, 5, 6, 7, 8, 9]), { lo: 2, hi: 8 });
  const xs = Array.from({ length: 15 }, (_, i) => i + 1);
  assert.deepEqual(medianCI(xs), { lo: 4, hi: 12 });                      // n = 15
});

test('summarize: within the target or not', () => {
  assert.equal(summarize([100, 101, 99, 100, 102, 98]).within, true);
  assert.equal(summarize([100, 101, 99, 100, 102, 80]).within, false);
  assert.equal(summarize([100, 100, 100]).within, false);                 // no interval yet
});

const ctx = { repeat: { minRuns: 6, maxRuns: 10, target: 0.05, budgetS: 60 }, warnings: [],
              log() {}, warn(m) { this.warnings.push(m); } };

test('cells: a steady cell stops at 6 runs, a noisy one at the cap with a warning', async () => {
  let i = 0;
  const cells = new Cells(ctx, 'test');
  cells.add('steady', () => 100 + (i++ % 2));
  let j = 0;
  cells.add('noisy', () => (j++ % 2 ? 50 : 150));
  await cells.measure();
  assert.equal(cells.get('steady').values.length, 6);
  assert.equal(cells.get('steady').capped, false);
  assert.equal(cells.get('noisy').values.length, 10);
  assert.equal(cells.get('noisy').capped, true);
  assert.match(ctx.warnings.join('\n'), /noisy: 95% CI/);
  assert.match(fmtCell(cells.get('steady')), /^101 \[100-101\]/);
  assert.match(fmtCell(cells.get('noisy')), / !/);
});

test('cells: a batch gives several figures at once, failed runs do not count', async () => {
  const cells = new Cells(ctx, 'batch');
  let n = 0;
  cells.addBatch([], async () => ({ a: [1, 1, 1], b: n++ % 2 ? 2 : NaN }));
  await cells.measure();
  assert.equal(cells.get('a').values.length >= 6, true);
  assert.equal(cells.get('b').values.every(v => v === 2), true);
  assert.ok(cells.get('b').failed > 0);
  assert.equal(fmtCell(undefined), '-');
});

test('cells: same-round ratios pair the runs of one round', async () => {
  // The machine swings between a fast and a slow state from round to round;
  // b is 1.2x a within every round, and each ratio says exactly that.
  const state = [100, 50, 100, 50, 50, 50, 100];
  let ra = 0, rb = 0;
  const cells = new Cells({ ...ctx, repeat: { ...ctx.repeat, minRuns: 7, maxRuns: 7 } }, 'paired');
  cells.add('a', () => state[ra++]);
  cells.add('b', () => 1.2 * state[rb++]);
  await cells.measure();
  const r = cells.pairedRatios('b', 'a');
  assert.equal(r.length, 7);
  assert.ok(r.every(x => Math.abs(x - 1.2) < 1e-9));
  assert.deepEqual(cells.get('a').rounds, [1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(cells.pairedRatios('b', 'missing'), []);
  assert.ok(Math.abs(cells.sameRoundRatio('b', 'a').value - 1.2) < 1e-9);
  assert.equal(cells.sameRoundRatio('b', 'a').summary.n, 7);
});
