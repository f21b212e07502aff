// The one rate rule (lib/goodput.mjs): answers per second, errors apart by
// kind; the cells that carry it (warm-ups apart, errors marked); RESULTS.md's
// answer and its paths. Run by `node --test bench/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { goodput, rateRun, serverSplit, splitDelta, cellErrors, fmtErrors, erroredCells } from '../lib/goodput.mjs';
import { Cells, fmtCell, writeCells } from '../lib/cells.mjs';
import { answer, relPaths } from '../lib/summary.mjs';

const report = (o = {}) => ({ rps: 1000, seconds: 2, completed: 2000, non2xx: 0, status: null,
                              failed: { connect: 0, receive: 0, send: 0, timeout: 0, exceptions: 0 }, ...o });

test('goodput: 503s are not answers; the client rate that counted them is kept apart', () => {
  const g = goodput(report({ non2xx: 400 }));
  assert.equal(g.value, 800);                 // (2000 - 400) / 2
  assert.equal(g.errors.non2xx, 400);
  assert.equal(g.errors.overload, null);      // no /stats split: n/a
  assert.equal(g.total, 400);
  const r = rateRun(report({ non2xx: 400 }));
  assert.equal(r.value, 800);
  assert.equal(r.clientRps, 1000);
});

test('goodput: failures by kind, the server\'s split of its 503s', () => {
  const g = goodput(report({ non2xx: 100, failed: { connect: 3, receive: 2, timeout: 5 } }),
                    { server: { overload: 60, down: 30 } });
  assert.deepEqual(g.errors, { overload: 60, down: 30, non2xx: 10, timeout: 5, connect: 5 });
  assert.equal(g.total, 110);
  assert.equal(g.value, 950);
});

test('goodput: a --miss run counts its 404s as answers, a 503 still is not', () => {
  assert.equal(goodput(report({ non2xx: 500 }), { miss: true }).value, 1000);
  assert.equal(goodput(report({ non2xx: 500 }), { miss: true }).missUnsplit, true);
  const byStatus = report({ non2xx: 600, status: { 200: 1400, 404: 500, 503: 100 } });
  const g = goodput(byStatus, { miss: true });
  assert.equal(g.answered, 1900);
  assert.equal(g.errors.non2xx, 100);
  assert.equal(goodput(byStatus).answered, 1400);      // no misses asked for: 404 is an error
});

test('goodput: no report is NaN, a run with nothing answered is 0', () => {
  assert.ok(Number.isNaN(rateRun(null)));
  assert.equal(rateRun(report({ non2xx: 2000 })).value, 0);
});

test('serverSplit: the counters found by name, n/a without them', () => {
  assert.deepEqual(serverSplit({ name: 'pg', errors_5xx: 9, pool: { timeouts: 4 } }), { overload: null, down: null });
  assert.deepEqual(serverSplit({ name: 'pg', errors_503_overload: 7, errors_503_down: 2 }), { overload: 7, down: 2 });
  assert.deepEqual(serverSplit({ name: 'pg', unavailable: { overload: 1, down: 5 } }), { overload: 1, down: 5 });
  assert.deepEqual(serverSplit({ name: 'pg', shutdowns: 3, overloaded_503: 4 }), { overload: 4, down: null });
  assert.deepEqual(splitDelta({ overload: 7, down: null }, { overload: 10, down: null }), { overload: 3, down: null });
});

const ctx = { repeat: { minRuns: 1, maxRuns: 2, target: 0.05, budgetS: 60 }, warnings: [], logged: [],
              log(m) { this.logged.push(m); }, warn(m) { this.warnings.push(m); } };

test('cells: a warm-up runs before every measured run and is never in the cell', async () => {
  const order = [];
  const cells = new Cells({ ...ctx, repeat: { ...ctx.repeat, minRuns: 3, maxRuns: 3 } }, 'warm');
  cells.add('a', async () => { order.push('run'); return rateRun(report({ non2xx: 2 })); },
            { warm: async () => { order.push('warm'); return rateRun(report({ completed: 10, seconds: 1 })); } });
  await cells.measure();
  const c = cells.get('a');
  assert.deepEqual(order, ['warm', 'run', 'warm', 'run', 'warm', 'run']);
  assert.deepEqual(c.values, [999, 999, 999]);
  assert.equal(c.warmups.length, 3);
  assert.equal(c.warmups[0].value, 10);
  assert.equal(cellErrors(c).total, 6);
  assert.match(fmtCell(c), / E$/);
  assert.equal(fmtErrors(c), '6 (503 overload n/a, 503 down n/a, other non-2xx 6)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zb-cells-'));
  const data = JSON.parse(fs.readFileSync(writeCells(dir, 'x', [c]), 'utf8'));
  assert.equal(data.a.errors.total, 6);
  assert.equal(data.a.warmups.length, 3);
  assert.equal(data.a.median, 999);
});

test('fmtCell: fewer runs than an interval needs show the count, never a range', async () => {
  let i = 0;
  const cells = new Cells({ ...ctx, repeat: { ...ctx.repeat, minRuns: 3, maxRuns: 3 } }, 'few');
  cells.add('a', () => [10, 20, 30][i++]);
  await cells.measure();
  assert.match(fmtCell(cells.get('a')), /^20 \(n=3\)( \*)?$/);   // * if this box is busy
});

// An answer.json as the server experiment writes it: pg only, two levels.
function answerFixture(dir) {
  const f = (median, lo, hi, n = 10) => ({ median, lo, hi, n, halfWidth: Math.max(median - lo, hi - median) / median, errors: { total: 0 } });
  const r = (value, lo, hi) => ({ value, lo, hi, n: 10 });
  const cpu = { client: { median: 9 }, server: { median: 16 }, db: { median: 22 } };
  fs.writeFileSync(path.join(dir, 'answer.json'), JSON.stringify({
    tool: 'loadgen', levels: [1, 10], headline: 10, size: 400, connect_us: { pg: 14384 },
    nginx: { 1: f(20000, 19500, 20500), 10: f(40000, 39000, 41000) },
    ranking: { 1: [{ key: 'nginx -', next: '>' }, { key: 'pg pooled', next: null }],
               10: [{ key: 'nginx -', next: '>' }, { key: 'pg pooled', next: '~' }, { key: 'pg pipelined', next: '>' }, { key: 'pg per-request', next: null }] },
    best: { pg: { 1: 'pooled > per-request', 10: 'pooled ~ pipelined > per-request' } },
    backends: { pg: {
      pooled: { 1: f(9000, 8800, 9100), 10: { ...f(20000, 19500, 20400), cpu, over_nginx: r(0.5, 0.49, 0.51), over_per_request: r(366, 350, 380) } },
      pipelined: { 1: f(8000, 7000, 9000), 10: { ...f(19800, 19000, 21000), cpu, over_nginx: r(0.49, 0.47, 0.52), over_per_request: r(360, 340, 390) } },
      'per-request': { 1: f(50, 48, 52), 10: { ...f(54, 50, 58), cpu, over_nginx: r(0.001, 0.001, 0.001), over_per_request: null } } } },
    native: { pg: { label: 'pgbench -M prepared -c 10 -j 2', fig: f(30000, 29000, 31000), over: { pooled: r(0.66, 0.64, 0.7) } } },
  }));
}

test('answer: every strategy with its interval, its width past +-5%, same-round ratios and CPU; a missing part says so', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zb-answer-'));
  answerFixture(dir);
  const text = answer(dir).join('\n');
  assert.match(text, /At c=10, fastest first .*: nginx \(static\) > PostgreSQL pooled ~ PostgreSQL pipelined > PostgreSQL per-request\./);
  assert.match(text, /\| PostgreSQL \| pooled \| 9,000 \[8,800-9,100\] \| 20,000 \[19,500-20,400\] \| 0\.50x \[0\.49-0\.51\] \| 366x \[350-380\] \| 9\.0 \/ 16\.0 \/ 22\.0 \| 26,316 \|/);
  assert.match(text, /\| PostgreSQL \| pipelined \| 8,000 \[7,000-9,000\] \(\+-13%\) \|/);      // wider than +-5%: its width
  assert.match(text, /PostgreSQL: c=1 pooled > per-request, c=10 pooled ~ pipelined > per-request/);
  assert.match(text, /- PostgreSQL: pooled is 366x \[350-380\] per-request here, where one connect \+ close costs 14\.4 ms/);
  assert.match(text, /- PostgreSQL: pgbench -M prepared -c 10 -j 2 30,000 \[29,000-31,000\] lookups\/s; zipbench pooled \/ native 0\.66x \[0\.64-0\.70\]\./);
  assert.match(text, /\| SQLite \| not measured in this run \|/);
  assert.match(text, /- SQLite: not measured in this run\./);      // no bulk data
  fs.rmSync(path.join(dir, 'answer.json'));
  assert.match(answer(dir).join('\n'), /Lookups over HTTP: not measured in this run/);
});

test('answer: zipbench over Apache + mod_php and over PHP-FPM, from the php experiment\'s keys', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zb-answer-'));
  const f = median => ({ n: 1, median, lo: null, hi: null, errors: { total: 0 } });
  fs.writeFileSync(path.join(dir, 'php.json'), JSON.stringify({
    'zipbench loadgen pg 1 10': f(9000), 'apache loadgen pg 1 10': f(3000), 'fpm loadgen pg 1 10': f(4500),
    'zipbench ab pg 1 10': f(1), 'apache ab pg 1 10': f(1) }));
  const text = answer(dir).join('\n');
  assert.match(text, /- PostgreSQL: zipbench pooled 9,000 \(n=1\), Apache \+ mod_php 3,000 \(n=1\), nginx \+ PHP-FPM 4,500 \(n=1\) req\/s: 3\.00x and 2\.00x/);
  assert.doesNotMatch(text, /InnoDB \(MariaDB\): zipbench pooled/);
});

test('relPaths: no machine path in a results file', () => {
  const root = '/home/u/zipbench';
  assert.equal(relPaths('keys `/home/u/zipbench/build/ken_all.keys`', root), 'keys `build/ken_all.keys`');
  assert.equal(relPaths('dir (/srv/other/checkout/build/db)', root), 'dir (build/db)');
  assert.equal(relPaths('config: /x/y/build/bench-network/lab/zipbench.conf', root), 'config: build/bench-network/lab/zipbench.conf');
  assert.equal(relPaths('/usr/bin/time -f', root), '/usr/bin/time -f');
});

test('erroredCells: the cells of a data file whose runs had errors, but those an experiment measures', () => {
  const data = {
    provenance: { commit: 'x' },
    'pg 1': { values: [1, 2], errors: { total: 40 } },
    'pg default': { values: [1, 2], errors: { total: 3 } },
    'pg 64': { values: [1, 2], errors: { total: 0 } },
    fsync_us: 105,
  };
  assert.deepEqual(erroredCells(data), [{ key: 'pg 1', total: 40 }, { key: 'pg default', total: 3 }]);
  assert.deepEqual(erroredCells(data, k => !/ default$/.test(k)), [{ key: 'pg default', total: 3 }]);
  assert.deepEqual(erroredCells(null), []);
});
