// The /proc sampler's pieces (lib/proc.mjs). Run by `node --test bench/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pidInFile } from '../lib/proc.mjs';

test('pidInFile reads the pid whatever ends it', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zb-pid-'));
  const write = (name, text) => { fs.writeFileSync(path.join(dir, name), text); return path.join(dir, name); };
  assert.equal(pidInFile(write('pg', '26781\n/work/main/build/db/pg\n')), 26781);   // postmaster.pid
  assert.equal(pidInFile(write('pgpool', '26967\0')), 26967);                      // pgpool-II's NUL
  assert.equal(pidInFile(write('empty', '')), 0);
  assert.equal(pidInFile(path.join(dir, 'absent')), 0);
  fs.rmSync(dir, { recursive: true });
});
