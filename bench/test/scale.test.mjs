// The conns, rows and spin experiments' pieces: idle connections held open
// (lib/hold.mjs), the levels and sizes they take, and the answer's line on
// scale (lib/summary.mjs) from their data. Run by `node --test bench/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { holdConnections } from '../lib/hold.mjs';
import { answer } from '../lib/summary.mjs';
import { connsLevels } from '../experiments/conns.mjs';
import { rowsSizes } from '../experiments/rows.mjs';
import { spinLevels } from '../experiments/spin.mjs';
import { countLines } from '../lib/dataset.mjs';

test('holdConnections: each connection makes one request, stays open until close()', async () => {
  let open = 0;
  const paths = [];
  const srv = http.createServer((req, res) => { paths.push(req.url); res.end('{"ok":true}'); });
  srv.on('connection', s => { open++; s.on('close', () => open--); });
  await new Promise(r => srv.listen(0, '127.0.0.1', r));
  const port = srv.address().port;
  const h = await holdConnections({ port, n: 40, batch: 16, path: i => `/k/${i}` });
  assert.deepEqual(h.statuses, { 200: 40 });
  assert.equal(open, 40);
  assert.equal(paths.length, 40);
  assert.ok(paths.includes('/k/0') && paths.includes('/k/39'));
  h.close();
  for (let i = 0; i < 200 && open; i++) await new Promise(r => setTimeout(r, 10));
  assert.equal(open, 0);
  await assert.rejects(holdConnections({ port: 1, n: 2, path: '/' }), /connection 1 of 2/);
  srv.close();
});

test('the levels and sizes: lists of positive integers, else an error naming the variable', () => {
  assert.deepEqual(connsLevels(), [100, 1000, 10000]);
  assert.deepEqual(connsLevels('10,20000'), [10, 20000]);
  assert.throws(() => connsLevels('100,x'), /ZB_BENCH_CONNS_LEVELS/);
  assert.deepEqual(rowsSizes(), [100000, 1000000, 10000000]);
  assert.throws(() => rowsSizes('0'), /ZB_BENCH_ROWS_SIZES/);
  assert.deepEqual(spinLevels(), [0, 20, 50]);
  assert.deepEqual(spinLevels('10'), [0, 10], 'no spin is always measured, first');
  assert.throws(() => spinLevels('-1'), /ZB_BENCH_SPIN_US/);
});

test("the answer's scale line: same-round ratios at the most connections, memory, loads per million rows", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zb-scale-'));
  const cell = (values, rounds) => ({ n: values.length, median: values[values.length >> 1], values, rounds });
  // Medians alone would say 1.00x; round by round sqlite is half of nginx.
  fs.writeFileSync(path.join(dir, 'conns.json'), JSON.stringify({
    'nginx 100': cell([9, 9], [1, 2]), 'sqlite 100': cell([9, 9], [1, 2]),
    'nginx 10000': cell([10, 20, 40], [1, 2, 3]), 'sqlite 10000': cell([5, 10, 20], [1, 2, 3]),
    'memory zipbench 10000': cell([5018, 5020, 5030], [1, 2, 3]), 'memory nginx 10000': cell([410, 420, 430], [1, 2, 3]),
  }));
  fs.writeFileSync(path.join(dir, 'rows-scale.json'), JSON.stringify({ rows: 10000000, backends: {
    pg: { native: 'psql \\copy', zipbench_s_per_m: 4.25, native_s_per_m: 4.5, over_native: { value: 1.06, lo: 1.01, hi: 1.1, n: 6 } } } }));
  const text = answer(dir).join('\n');
  const line = text.split('\n').find(l => l.startsWith('Scale'));
  assert.ok(line, text);
  assert.match(line, /SQLite pooled \/ nginx 0\.50x \(n=3\) at 10,000 keep-alive connections/);
  assert.match(line, /zipbench 4\.9 KiB, nginx 0\.4 KiB \(10,000 connections\)/);
  assert.match(line, /10,000,000 generated rows.*PostgreSQL 4\.3 against 4\.5 \(1\.06x \[1\.01-1\.10\]\)/);
  fs.rmSync(dir, { recursive: true });
  // Nothing measured: said so.
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'zb-scale-'));
  assert.match(answer(empty).join('\n'), /Scale .*not measured in this run \(`scripts\/bench --only conns`\)/);
  fs.rmSync(empty, { recursive: true });
});

test('countLines: the non-empty lines, a file read in pieces (10^7 rows is past the longest string)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zb-lines-'));
  const f = path.join(dir, 'x.csv');
  fs.writeFileSync(f, 'a\n\nb\r\nc');
  assert.equal(countLines(f), 3);
  fs.writeFileSync(f, 'x,y\r\n'.repeat(400000));   // 2.4 MB: more than one piece
  assert.equal(countLines(f), 400000);
  fs.rmSync(dir, { recursive: true });
});
