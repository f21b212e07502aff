// `zipbench run`'s refusals before it starts anything (bench/run.mjs), the
// port check that places its --against server, and the server experiment's
// concurrency list. Run by `node --test bench/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { serverLevels } from '../experiments/server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const runScript = args => spawnSync(process.execPath, [path.join(root, 'bench/run.mjs'), ...args], { cwd: root, encoding: 'utf8' });

test('run refuses an --against tree with no server, and bad numbers, with exit 2 and the way out', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zb-against-'));
  let r = runScript(['--against', dir]);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, new RegExp(`--against ${dir}: no bin/server or build/bin/server in it \\(build that tree with make first\\)`));
  assert.match(r.stderr, /\(scripts\/run --help\)/);
  r = runScript(['--runs', '0']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--runs: '0' is not a whole number 1-1000/);
  r = runScript(['--backends', 'oracle']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--backends: no backend 'oracle' \(known: /);
  fs.rmSync(dir, { recursive: true });
});

// A port below 32768 (port-check's range) that this test could listen on.
async function listenBelowEphemeral(from) {
  for (let p = from; p < from + 200; p++) {
    const srv = net.createServer();
    const ok = await new Promise(resolve => {
      srv.once('error', () => resolve(false));
      srv.listen(p, '127.0.0.1', () => resolve(true));
    });
    if (ok) return { srv, port: p };
  }
  throw new Error(`no free port in ${from}-${from + 199}`);
}

test('port-check --offset suggests a value whose two ports are both free', async () => {
  const { srv, port } = await listenBelowEphemeral(19460);
  try {
    // The taken port is the second server's: ZB_RUN_PORT + 1.
    const r = spawnSync(path.join(root, 'scripts/port-check'), ['--offset', '1', 'the --against lookup server', String(port), 'ZB_RUN_PORT'], { encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`the --against lookup server: 127\\.0\\.0\\.1:${port} is already taken by `));
    const m = /ZB_RUN_PORT=(\d+), which puts the --against lookup server on ZB_RUN_PORT \+ 1 /.exec(r.stderr);
    assert.ok(m, r.stderr);
    // Neither the suggested port nor the one above it is the taken one.
    assert.ok(Number(m[1]) > port, r.stderr);
    const usage = spawnSync(path.join(root, 'scripts/port-check'), ['--offset', 'x', 'w', '1', 'V'], { encoding: 'utf8' });
    assert.equal(usage.status, 2);
    assert.match(usage.stderr, /--offset takes a whole number/);
  } finally { srv.close(); }
});

test('the server experiment takes a list of concurrencies with the headline in it', () => {
  assert.deepEqual(serverLevels(), [1, 10, 100]);
  assert.deepEqual(serverLevels('10'), [10]);
  assert.deepEqual(serverLevels('10,200'), [10, 200]);
  for (const bad of ['1,100', '10,x', '10,,100', '', '10,-1', '10,2.5'])
    assert.throws(() => serverLevels(bad), new RegExp(`ZB_BENCH_SERVER_LEVELS: '${bad}' is not a list of concurrencies with 10 in it`));
});
