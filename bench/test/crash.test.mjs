// The crash experiment's checker (lib/ledger.mjs) on hand-made ledgers and
// tables. Run by `node --test bench/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { parseLedger, parseRows, checkLedger, parseCheckTable } from '../lib/ledger.mjs';

// Stamps past 2^53, as PHP's (microseconds times 1000 plus a pid's digits):
// a JSON number would round them.
const BIG = 1764923456123456789n;

const ledger = [
  `{"backend":"pg","code":"1000001","was":0,"stamp":${BIG}}`,
  `{"backend":"pg","code":"1000002","was":0,"stamp":${BIG + 1n}}`,
  `{"backend":"pg","code":"1000001","was":${BIG},"stamp":${BIG + 2n}}`,
  `{"backend":"pg","queries":2,"written":[{"code":"1000003","was":0,"stamp":${BIG + 3n}},` +
    `{"code":"1000004","was":0,"stamp":${BIG + 4n}}]}`,
  '',
].join('\n');

test('parseLedger reads /update and /updates answers, stamps whole', () => {
  const { writes, bad } = parseLedger(ledger);
  assert.deepEqual(bad, []);
  assert.deepEqual(writes.map(w => [w.code, w.stamp]), [
    ['1000001', BIG], ['1000002', BIG + 1n], ['1000001', BIG + 2n], ['1000003', BIG + 3n], ['1000004', BIG + 4n]]);
});

test('parseLedger names the lines that are no update answer', () => {
  const { writes, bad } = parseLedger('{"backend":"pg","code":"1","was":0,"stamp":5}\nnot json\n{"error":"x"}\n' +
                                      '{"written":[{"code":"2","stamp":7},{"code":"3"}]}\n');
  assert.deepEqual(bad, [2, 3, 4]);
  assert.equal(writes.length, 2);   // line 1, and the good half of line 4
});

test('checkLedger: a row with the stamp or a later one keeps the write; less, or none, lost it', () => {
  const { writes } = parseLedger(ledger);
  const baseline = parseRows(['1000001', '1000002', '1000003', '1000004', '1000005'].map(c => `${c}\t0`).join('\n'));
  const rows = parseRows([
    `1000001\t${BIG + 2n}`,    // both writes of 1000001 kept (the row holds the later)
    `1000002\t${BIG + 9n}`,    // a later write (unacknowledged) is there: kept
    '1000003\t0',              // lost: the row never got it
    // 1000004: no row at all: lost, and counted missing
    '1000005\t0',
  ].join('\n') + '\n');
  const r = checkLedger(writes, rows, baseline);
  assert.equal(r.acknowledged, 5);
  assert.equal(r.codes, 4);
  assert.equal(r.lost, 2);
  assert.equal(r.lostCodes, 2);
  assert.equal(r.missing, 1);
  assert.equal(r.newest, String(BIG + 4n));
  assert.equal(r.lostOldest, String(BIG + 3n));
  assert.equal(r.lostNewest, String(BIG + 4n));
  assert.equal(r.lostFirstAt, 3);
  assert.deepEqual(r.examples[0], { code: '1000003', stamp: String(BIG + 3n), row: '0' });
  assert.deepEqual(r.examples[1], { code: '1000004', stamp: String(BIG + 4n), row: null });
});

test('checkLedger: the older of two writes of a code is lost with the newer', () => {
  const writes = [{ code: '7', stamp: 10n }, { code: '7', stamp: 20n }];
  const r = checkLedger(writes, new Map([['7', 10n]]));
  assert.equal(r.lost, 1);
  assert.equal(r.lostFirstAt, 1);
  assert.equal(checkLedger(writes, new Map([['7', 5n]])).lost, 2);
  assert.equal(checkLedger([], new Map()).lost, 0);
});

// Issue 47, item 10: the checker looked only at the codes the ledger
// named, so a row no write touched could vanish, or go back, unseen.
test('checkLedger audits the whole table against its baseline: a row no write touched that vanished or changed', () => {
  const baseline = parseRows('1\t100\n2\t100\n3\t100\n4\t90\n5\t100\n');
  const writes = [{ code: '1', stamp: 1000n }, { code: '2', stamp: 1001n }];
  const whole = checkLedger(writes, parseRows('1\t1000\n2\t1001\n3\t100\n4\t90\n5\t100\n'), baseline);
  assert.equal(whole.lost, 0);
  assert.equal(whole.stateExisted, true);
  assert.deepEqual(whole.findings, []);
  // Row 3 gone, row 4 holding a stamp no write of the run made (another
  // row's, from before the run), row 5 back to an older stamp, row 6 new:
  // every acknowledged write is there all the same.
  const r = checkLedger(writes, parseRows('1\t1000\n2\t1001\n4\t95\n5\t50\n6\t1\n'), baseline);
  assert.equal(r.lost, 0);
  assert.equal(r.missing, 1);
  assert.equal(r.older, 1);
  assert.equal(r.unknown, 1);
  assert.equal(r.added, 1);
  assert.equal(r.rows, 5);
  assert.equal(r.baselineRows, 5);
  assert.equal(r.stateExisted, false);
  assert.match(r.findings.join('\n'), /1 rows of the baseline missing: \{"code":"3","was":"100"\}/);
  assert.match(r.findings.join('\n'), /1 rows older than the baseline/);
});

test('checkLedger: a row changed by an unanswered write is a write in flight, up to inFlight of them', () => {
  const baseline = parseRows('1\t100\n2\t100\n3\t100\n');
  const writes = [{ code: '1', stamp: 1000n }];
  // Rows 2 and 3 hold stamps of this run that were never acknowledged.
  const rows = parseRows('1\t1000\n2\t1005\n3\t1006\n');
  assert.equal(checkLedger(writes, rows, baseline, { inFlight: 2 }).stateExisted, true);
  const over = checkLedger(writes, rows, baseline, { inFlight: 1 });
  assert.equal(over.unacknowledged, 2);
  assert.equal(over.stateExisted, false);
  // A stamp between two acknowledged ones of its code is not in flight:
  // the later acknowledged write is lost, and the row is no write's.
  const mid = checkLedger([{ code: '1', stamp: 1000n }, { code: '1', stamp: 1010n }], parseRows('1\t1005\n2\t100\n3\t100\n'),
                          baseline);
  assert.equal(mid.lost, 1);
  assert.equal(mid.unknown, 1);
});

test('checkLedger: acknowledged writes may be lost as a suffix, give or take those in flight, not more', () => {
  const baseline = new Map([...Array(20).keys()].map(i => [String(i), 1n]));
  const writes = [...Array(20).keys()].map(i => ({ code: String(i), stamp: BigInt(100 + i) }));
  const upTo = (n, extra = []) => new Map([...Array(20).keys()].map(i => [String(i), i < n || extra.includes(i) ? BigInt(100 + i) : 1n]));
  // The last 6 lost: a suffix.
  let r = checkLedger(writes, upTo(14), baseline, { inFlight: 4 });
  assert.equal(r.lost, 6);
  assert.equal(r.lostFirstAt, 14);
  assert.equal(r.keptAfterLost, 0);
  assert.equal(r.stateExisted, true);
  // Three kept after the first lost one: they may have been in flight beside it.
  r = checkLedger(writes, upTo(10, [12, 15, 19]), baseline, { inFlight: 4 });
  assert.equal(r.keptAfterLost, 3);
  assert.equal(r.stateExisted, true);
  // Four: one of them was sent after the lost write was acknowledged.
  r = checkLedger(writes, upTo(10, [12, 15, 17, 19]), baseline, { inFlight: 4 });
  assert.equal(r.keptAfterLost, 4);
  assert.equal(r.stateExisted, false);
  assert.match(r.findings[0], /4 acknowledged writes kept after the first lost one \(10 110, acknowledged #11\)/);
});

test('parseRows refuses a dump that is not code<TAB>stamp', () => {
  assert.throws(() => parseRows('1000001|5\n'), /not a row/);
  assert.equal(parseRows('\n').size, 0);
});

test('parseCheckTable: the last status row is the verdict', () => {
  assert.deepEqual(parseCheckTable('zipbench.t\tcheck\tstatus\tOK\n'), { ok: true, messages: ['status: OK'] });
  const crashed = parseCheckTable('zipbench.t\tcheck\twarning\t1 client is using or hasn\'t closed the table properly\n' +
                                  'zipbench.t\tcheck\terror\tSize of datafile is: 480 Should be: 560\n' +
                                  'zipbench.t\tcheck\terror\tCorrupt\n');
  assert.equal(crashed.ok, false);
  assert.equal(crashed.messages.length, 3);
});

// A table made by sqlite3 itself, dumped as the driver dumps it.
test('the checker on a SQLite table dumped by sqlite3 -tabs', { skip: !hasSqlite3() && 'no sqlite3' }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zb-crash-'));
  const db = path.join(dir, 't.sqlite');
  execFileSync('sqlite3', [db, 'CREATE TABLE t_hits (zip_code VARCHAR(7) PRIMARY KEY, stamp BIGINT NOT NULL DEFAULT 0);' +
    `INSERT INTO t_hits VALUES ('1000001', ${BIG + 2n}), ('1000002', ${BIG + 1n}), ('1000003', 0), ('1000004', ${BIG});`]);
  const dump = execFileSync('sqlite3', ['-batch', '-tabs', db, 'SELECT zip_code, stamp FROM t_hits'], { encoding: 'utf8' });
  const r = checkLedger(parseLedger(ledger).writes, parseRows(dump));
  assert.equal(r.acknowledged, 5);
  assert.equal(r.lost, 2);          // 1000003 (0) and 1000004 (BIG < BIG + 4)
  assert.equal(r.missing, 0);
  fs.rmSync(dir, { recursive: true });
});

function hasSqlite3() {
  try { execFileSync('sqlite3', ['-version'], { stdio: 'ignore' }); return true; } catch { return false; }
}

// A recorded run as the driver writes it (only the fields the tables read).
const runOf = (kind, { lost = 0, existed = true, started = true, ok = true, setting = 'journal_mode=delete,synchronous=full' } = {}) => ({
  backend: 'sqlite', setting, kind, fault: kind === 'fsync-eio' ? 'fsync-eio:once' : 'clear-cache', acknowledged: 100,
  ...(started ? { lost, stateExisted: existed, integrity: { ok, messages: [ok ? 'ok' : 'bad'] }, recoveryS: 0.25 }
              : { started: false, recoveryS: 3, startError: 'no' }),
  ...(kind === 'fsync-eio' ? { faultOutcome: 'went on, lost nothing' } : {}),
});

test('the tables: a column per kind of crash, what went wrong per cell, in bold under a durable setting', async () => {
  const { crashMatrix, crashCells } = await import('../lib/durability.mjs');
  const results = [runOf('process'), runOf('process'), runOf('no-dir-sync', { lost: 1 }), runOf('no-dir-sync'),
                   runOf('torn-seq', { existed: false }), runOf('torn-op', { started: false }), runOf('fsync-eio', { ok: false }),
                   runOf('power', { setting: 'journal_mode=delete,synchronous=off', lost: 100 })];
  const m = crashMatrix(results);
  assert.deepEqual(m.kinds, ['process', 'power', 'torn-op', 'torn-seq', 'no-dir-sync', 'fsync-eio']);
  const full = m.rows.find(r => r.setting.endsWith('full'));
  assert.equal(full.durable, true);
  assert.deepEqual(full.cells, ['all kept (2 runs)', '', '**1 did not start (1 runs)**', '**1 never existed (1 runs)**',
                                '**1 lost writes (2 runs)**', '**1 corrupt (1 runs)**']);
  assert.equal(m.rows.find(r => r.setting.endsWith('off')).cells[1], '1 lost writes (1 runs)');
  const c = crashCells(results).get('sqlite journal_mode=delete,synchronous=full fsync-eio');
  assert.equal(c.faultOutcomes, 'once: went on, lost nothing: 1');
  assert.equal(c.recovery, '0.25');
});

test("the answer's durability rows name what a setting survived, kind by kind", async () => {
  const { crashCells } = await import('../lib/durability.mjs');
  const { survivedText } = await import('../lib/summary.mjs');
  const cells = crashCells([runOf('process'), runOf('power'), runOf('no-dir-sync', { lost: 1 }), runOf('no-dir-sync')]);
  assert.equal(survivedText(cells, 'sqlite', 'journal_mode=delete,synchronous=full'),
               ', survived 1 process crashes, 1 power cuts (clear-cache); **under no-dir-sync cuts: lost acknowledged writes in 1 of 2 ' +
               '(median 0.5 [0-1]%)**');
  assert.equal(survivedText(cells, 'pg', 'synchronous_commit=on,fsync=on'), '');
});

test("fsync-eio's verdict: lost after the failed fsync, stopped, restarted, refused, or went on", async () => {
  const { faultEffect } = await import('../crash.mjs');
  const writes = [...Array(100).keys()].map(i => ({ code: String(i), stamp: BigInt(100 + i) }));
  const kept = new Map(writes.map(w => [w.code, w.stamp]));
  const at = { acked: 90, beforeS: 2, afterS: 1.5 };   // 45 a second before the fault
  const failed = 'powerfs[1] 01:00:00.000: fsync-eio: fsync 1 of /pg/pg_wal/1 failed (EIO): 3 pages left cached\n';
  const verdict = (w, rows, alive, engine = '') => faultEffect(w, rows, at, alive, failed, engine);
  assert.equal(faultEffect(writes, kept, at, true, '', '').faultOutcome, 'no fsync failed');
  const lost = new Map(kept).set('95', 1n);
  const r = verdict(writes, lost, true);
  assert.equal(r.faultOutcome, 'acknowledged writes after the failed fsync, then lost them');
  assert.equal(r.acknowledgedAfterFault, 10);
  assert.equal(r.lostAfterFault, 1);
  assert.equal(r.failedFsyncs, 1);
  assert.equal(verdict(writes, kept, false).faultOutcome, 'stopped');
  const panic = 'LOG x PANIC:  could not fdatasync file "1": Input/output error\n';
  const p = verdict(writes, kept, true, panic);
  assert.equal(p.faultOutcome, 'restarted');
  assert.deepEqual(p.engineSaid, ['LOG x PANIC:  could not fdatasync file "1": Input/output error']);
  assert.equal(verdict(writes.slice(0, 95), kept, true).faultOutcome, 'refused writes');   // 3 a second
  assert.equal(verdict(writes, kept, true).faultOutcome, 'went on, lost nothing');         // 7 a second
});
