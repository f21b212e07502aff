// The driver's own arithmetic: the median, its 95% interval, the stopping
// rule of a cell, and how a cell prints. Run by `node --test bench/test/`
// (test_bench runs it).
import test from 'node:test';
import assert from 'node:assert/strict';
import { median, medianCI, summarize, ratioCI } from '../lib/stats.mjs';
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

test('ratioCI: the Hodges-Lehmann ratio and the exact order statistics of the pairwise ratios', () => {
  // k, the ratios cut from each end, from the exact U distribution (checked
  // against a full enumeration of rank orders and Hollander & Wolfe's table).
  for (const [m, n, k] of [[4, 4, 1], [6, 6, 6], [3, 5, 1], [2, 8, 1], [5, 7, 6], [8, 8, 14], [15, 15, 65]]) {
    const a = Array.from({ length: m }, (_, i) => 100 + 7 * i * i);
    const b = Array.from({ length: n }, (_, j) => 101 + 3 * j + j * j);
    const r = a.flatMap(x => b.map(y => y / x)).sort((p, q) => p - q);
    const got = ratioCI(a, b);
    assert.equal(got.lo, r[k - 1], `${m}x${n}`);
    assert.equal(got.hi, r[m * n - k], `${m}x${n}`);
    assert.equal(got.ratio, median(r));
  }
  // Too few runs for a 95% interval: the estimate alone.
  for (const [m, n] of [[3, 3], [2, 7], [1, 30]]) {
    const got = ratioCI(Array(m).fill(10), Array(n).fill(20));
    assert.equal(got.ratio, 2);
    assert.ok(Number.isNaN(got.lo) && Number.isNaN(got.hi), `${m}x${n}`);
  }
});

test('ratioCI: a 10% shift is found, the same distribution is not; zeros, many runs', () => {
  const a = [100, 101, 99, 100, 102, 98], b = a.map(x => x * 1.1);
  const up = ratioCI(a, b);
  assert.ok(Math.abs(up.ratio - 1.1) < 1e-12 && up.lo > 1 && up.hi > up.lo);
  const same = ratioCI(a, [99, 100, 103, 97, 101, 100]);
  assert.ok(same.lo < 1 && same.hi > 1);
  assert.equal(ratioCI([0, 0, 0, 0], [0, 0, 0, 0]).ratio, 1);            // nothing against nothing
  assert.equal(ratioCI([0, 0, 0, 0], [5, 5, 5, 5]).lo, Infinity);
  // Beyond the exact table (m n > 40000): the normal approximation of U.
  const big = Array.from({ length: 250 }, (_, i) => 100 + (i % 13));
  const r = ratioCI(big, big.map(x => x * 0.9));
  assert.ok(r.lo <= 0.9 && r.hi >= 0.9 && r.hi < 1, JSON.stringify(r));
  // Coverage: of 400 pairs of samples from one distribution, about 95%
  // (at least 93%) of the intervals hold 1.
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  let held = 0;
  for (let t = 0; t < 400; t++) {
    const s = () => Array.from({ length: 6 }, () => 1000 * Math.exp(0.1 * (rnd() + rnd() + rnd() - 1.5)));
    const ci = ratioCI(s(), s());
    if (ci.lo <= 1 && ci.hi >= 1) held++;
  }
  assert.ok(held >= 372, `${held} of 400`);
});
