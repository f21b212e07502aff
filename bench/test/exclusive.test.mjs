// A bench measures only what it started: one bench per tree (lib/lock.mjs),
// and a lookup server that fails to listen is an error even when another
// process answers on its port (lib/benchdb.mjs startServer). Run by
// `node --test bench/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { takeLock, holderPid } from '../lib/lock.mjs';
import { startServer } from '../lib/benchdb.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const tmp = prefix => fs.mkdtempSync(path.join(os.tmpdir(), prefix));

// A child process that takes the lock on file and keeps it until killed.
async function holder(file) {
  const code = `import { takeLock } from ${JSON.stringify(path.join(root, 'bench/lib/lock.mjs'))};
                const r = takeLock(${JSON.stringify(file)}, 'the test holder');
                process.stdout.write(r.ok ? 'held\\n' : 'refused\\n');
                setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise(resolve => child.stdout.once('data', d => resolve(String(d).trim())));
  assert.equal(line, 'held');
  return child;
}

test('lock: a second taker is refused and told the holder; the lock ends with its process', async () => {
  const file = path.join(tmp('zb-lock-'), 'bench.lock');
  const child = await holder(file);
  const r = takeLock(file);
  assert.equal(r.ok, false);
  assert.equal(holderPid(r.holder), child.pid);
  assert.match(r.holder, /the test holder/);
  const gone = new Promise(resolve => child.on('exit', resolve));
  child.kill('SIGKILL');              // no chance to clean up: the kernel drops the lock
  await gone;
  assert.equal(takeLock(file).ok, true);
});

test('scripts/bench: a second bench in the tree exits 1 naming the first, before touching anything', () => {
  const build = tmp('zb-build-');
  assert.equal(takeLock(path.join(build, 'bench.lock')).ok, true);   // this process plays the first bench
  const r = spawnSync(process.execPath, [path.join(root, 'bench/main.mjs'), '--quick', '--only', 'calibrate'],
                      { env: { ...process.env, ZB_BUILD: build }, encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`another bench holds .*bench\\.lock: pid ${process.pid} `));
  assert.match(r.stderr, new RegExp(`kill ${process.pid}`));
  assert.deepEqual(fs.readdirSync(build), ['bench.lock']);          // no output, no log, no quick dir
});

// A stand-in for build/bin/server: listens on --port and answers, or
// (fail) cannot listen and exits a moment later, as a server whose port
// is taken does.
function stub(dir, fail) {
  const file = path.join(dir, fail ? 'server-fails' : 'server-listens');
  fs.writeFileSync(file, `#!${process.execPath}
const port = Number(process.argv[process.argv.indexOf('--port') + 1]);
${fail ? "setTimeout(() => process.exit(1), 1500);"
       : "require('node:http').createServer((q, r) => r.end('ok')).listen(port, '127.0.0.1');"}
`, { mode: 0o755 });
  return file;
}

const listen = srv => new Promise(resolve => srv.listen(0, '127.0.0.1', () => resolve(srv.address().port)));

test('startServer: a port answered by another process is an error naming it, not a server', async () => {
  const dir = tmp('zb-srv-');
  const other = http.createServer((q, r) => r.end('ok'));
  const port = await listen(other);
  const ctx = { work: dir, conf: 'unused.conf', bin: () => stub(dir, true) };
  try {
    await assert.rejects(startServer(ctx, 'x', port, ['sqlite'], { log: path.join(dir, 'server.log') }),
                         e => new RegExp(`127\\.0\\.0\\.1:${port} is held by pid ${process.pid}: `).test(e.message));
  } finally {
    other.close();
  }
});

test('startServer: the server that listens on its own port is taken', async () => {
  const dir = tmp('zb-srv-');
  const probe = http.createServer();
  const port = await listen(probe);
  await new Promise(resolve => probe.close(resolve));
  const srv = await startServer({ work: dir, conf: 'unused.conf', bin: () => stub(dir, false) }, 'x', port, ['sqlite'],
                                { log: path.join(dir, 'server.log') });
  assert.equal(srv.alive(), true);
  await srv.stop();
});
