// ab's report, parsed by lib/clients.mjs, against the recorded real reports
// in tests/data/ab (the same files tests/helpers.c's parser is held to):
// every figure of expected.json, and the rate rule on top (lib/goodput.mjs).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAb } from '../lib/clients.mjs';
import { goodput } from '../lib/goodput.mjs';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../tests/data/ab');
const expected = JSON.parse(fs.readFileSync(path.join(dir, 'expected.json'), 'utf8'));
const files = Object.keys(expected).filter(k => !k.startsWith('_'));

test('every recorded ab report has its expected figures, and every file is listed', () => {
  const onDisk = fs.readdirSync(dir).filter(f => f.endsWith('.txt')).sort();
  assert.deepEqual(onDisk, [...files].sort());
});

for (const f of files)
  test(`parseAb: ${f}`, () => {
    const r = parseAb(fs.readFileSync(path.join(dir, f), 'utf8'));
    const want = expected[f];
    if (want === null) { assert.equal(r, null); return; }
    assert.equal(r.rps, want.rps);
    assert.equal(r.seconds, want.seconds);
    assert.equal(r.complete, want.complete);
    assert.equal(r.failedTotal, want.failed);
    assert.deepEqual([r.failed.connect, r.failed.receive, r.failed.length, r.failed.exceptions],
                     [want.connect, want.receive, want.length, want.exceptions]);
    assert.equal(r.non2xx, want.non2xx);
    assert.equal(r.keepalive, want.keepalive);
    // answers read whole: complete less the receive failures; Length
    // failures are answers (lookup bodies differ in length)
    assert.equal(r.completed, want.complete - want.receive);
    const g = goodput(r);
    assert.equal(g.answered, want.complete - want.receive - want.non2xx);
    assert.equal(g.errors.connect, want.connect + want.receive + want.exceptions);
    // the time from ab's rate (more precise than its printed seconds)
    assert.ok(Math.abs(g.value - want.rps * (g.answered / want.complete)) < 1e-6);
  });

test('goodput of a report of 404s: nothing answered, unless misses were asked for', () => {
  const r = parseAb(fs.readFileSync(path.join(dir, 'nginx-404-keepalive.txt'), 'utf8'));
  assert.equal(goodput(r).value, 0);
  assert.ok(Math.abs(goodput(r, { miss: true }).value - 29176.64) < 1e-6);   // ab's own rate: all answered
});
