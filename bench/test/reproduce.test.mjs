// ./zipbench reproduce's comparison (bench/lib/reproduction.mjs): rates
// and same-round ratios held against the recorded answer, carried where
// the intervals overlap, the ranking's swaps, and a moved ratio held
// against the machine cost it follows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import { compareAnswers, reproductionText, spread, MOVED } from '../lib/reproduction.mjs';

const recorded = {
  answer: JSON.parse(fs.readFileSync('docs/data/answer.json', 'utf8')),
  calibrate: { connect_us: { pg: 2000, innodb: 190, sqlite: 24 }, wake_us: 5, memory_load_us: 0.1, nginx_us: 60 },
};

// The recorded answer with every figure of key scaled by f.
function scaled(ans, f) {
  const a = structuredClone(ans);
  for (const per of Object.values(a.backends))
    for (const levels of Object.values(per))
      for (const c of Object.values(levels)) {
        for (const k of ['median', 'lo', 'hi']) c[k] *= f('rate');
        for (const r of ['over_nginx', 'over_per_request'])
          if (c[r]) for (const k of ['value', 'lo', 'hi']) c[r][k] *= f(r);
      }
  return a;
}

test('the same answer again: everything carried, the ranking held', () => {
  const r = compareAnswers(recorded, recorded);
  assert.ok(r.rates.length >= 10 && r.rates.every(x => x.carried), 'every rate carried');
  assert.ok(r.ratios.length >= 10 && r.ratios.every(x => x.carried && !x.moved), 'every ratio carried');
  assert.equal(r.ranking.held, true);
  assert.ok(r.rates.every(x => Math.abs(x.now_over_recorded.value - 1) < 1e-12));
});

test('a machine 30% slower: the rates moved, the ratios carried', () => {
  const now = { answer: scaled(recorded.answer, k => (k === 'rate' ? 0.7 : 1)), calibrate: recorded.calibrate };
  const r = compareAnswers(recorded, now);
  const pg = r.rates.find(x => x.key === 'pg pooled');
  assert.equal(pg.carried, false);
  assert.ok(Math.abs(pg.now_over_recorded.value - 0.7) < 1e-9);
  assert.ok(pg.now_over_recorded.lo < 0.7 && pg.now_over_recorded.hi > 0.7, 'its interval spans the two');
  assert.ok(r.ratios.every(x => x.carried));
});

test('pooled / per-request moved with the connect cost: explained; against it: unexplained', () => {
  const moved = { answer: scaled(recorded.answer, k => (k === 'over_per_request' ? 0.75 : 1)) };
  const cheaper = compareAnswers(recorded, { ...moved, calibrate: { ...recorded.calibrate, connect_us: { pg: 1400, innodb: 130, sqlite: 17 } } });
  const pg = cheaper.ratios.find(x => x.key === 'pg pooled / pg per-request');
  assert.equal(pg.moved, true);
  assert.match(pg.explanation.verdict, /^follows pg connect \(-30%\)/);
  const dearer = compareAnswers(recorded, { ...moved, calibrate: { ...recorded.calibrate, connect_us: { pg: 3000, innodb: 300, sqlite: 30 } } });
  assert.match(dearer.ratios.find(x => x.key === 'pg pooled / pg per-request').explanation.verdict, /^unexplained \(pg connect moved \+50%\)/);
  const unmeasured = compareAnswers({ ...recorded, calibrate: null }, moved);
  assert.match(unmeasured.ratios.find(x => x.key === 'pg pooled / pg per-request').explanation.verdict,
               /not measured on the recording machine/);
  assert.ok(MOVED === 0.1);
});

test('a swap in the ranking is named', () => {
  const a = structuredClone(recorded.answer);
  const list = a.ranking['10'];
  const i = list.findIndex(x => x.key === 'pg pipelined'), j = list.findIndex(x => x.key === 'pg pooled');
  [list[i].key, list[j].key] = [list[j].key, list[i].key];
  const r = compareAnswers(recorded, { answer: a, calibrate: recorded.calibrate });
  assert.equal(r.ranking.held, false);
  assert.ok(r.ranking.swaps.some(s => s.includes('pg pipelined > pg pooled recorded')), r.ranking.swaps.join('; '));
  const text = reproductionText(r).join('\n');
  assert.match(text, /did not hold/);
  assert.match(text, /\| pg pooled +\|/);
});

test('a ratio\'s spread across machines', () => {
  const reps = [{ ratios: [{ key: 'k', now: { median: 51.2 } }] }, { ratios: [{ key: 'k', now: { median: 70 } }] }];
  const s = spread('k', 67.9, reps);
  assert.deepEqual([s.lo, s.hi, s.machines], [51.2, 70, 3]);
  assert.ok(Math.abs(s.moved - (1 - 51.2 / 67.9)) < 1e-9);
  assert.equal(spread('k', 67.9, []), null);
});

test('bad usage exits 2 and says what', () => {
  const r = spawnSync('node', ['bench/reproduce.mjs', '--budget', 'x'], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--budget: 'x'/);
  const n = spawnSync('node', ['bench/reproduce.mjs', '--recorded', '/nonexistent'], { encoding: 'utf8' });
  assert.equal(n.status, 2);
  assert.match(n.stderr, /no \/nonexistent\/data\/answer.json/);
});
