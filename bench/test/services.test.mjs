// The daemons' pid files come from their scripts (lib/services.mjs). Run
// by `node --test bench/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { daemonPidFiles, pidFiles } from '../lib/services.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('the scripts name every daemon pid file, nothing started', async () => {
  const ctx = { root, logFile: null };
  const files = await daemonPidFiles(ctx);
  assert.equal(files.length, 8, files.join('\n'));
  for (const f of files) assert.ok(path.isAbsolute(f) && f.endsWith('.pid'), f);
  assert.match((await pidFiles(ctx, 'db', 'pg'))[0], /\/postmaster\.pid$/);
  assert.match((await pidFiles(ctx, 'nginx'))[0], /\/nginx\.pid$/);
  assert.deepEqual((await pidFiles(ctx, 'php-fpm')).map(f => path.basename(f)), ['php-fpm.pid', 'nginx.pid']);
});
