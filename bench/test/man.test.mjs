// The man pages (bench/man.mjs) as a user meets them: after `make install
// PREFIX=DIR`, `man zipbench-run` finds its page through PATH (no man -l),
// and `zipbench` runs from anywhere through its link; every page has a
// SYNOPSIS section of its own and no line over 80 columns as man renders
// it. Run by `node --test bench/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { wrapLine, splitSynopsis, NF_WIDTH } from '../man.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const hasMan = spawnSync('man', ['--version']).status === 0;

test('wrapLine: a long option line goes on under its description; short lines stay', () => {
  const line = '      --against DIR       also measure another build\'s server (DIR/bin/server or DIR/build/bin/server)';
  const out = wrapLine(line);
  assert.ok(out.length > 1);
  for (const l of out) assert.ok(l.length <= NF_WIDTH, l);
  assert.ok(out.slice(1).every(l => l.startsWith(' '.repeat(26)) && l[26] !== ' '), out.join('\n'));
  assert.equal(out.join(' ').replace(/\s+/g, ' ').trim(), line.replace(/\s+/g, ' ').trim());
  assert.deepEqual(wrapLine('  short'), ['  short']);
});

test('splitSynopsis: "Usage:" lines, or a script\'s first invocations, become the synopsis', () => {
  const u = splitSynopsis('Usage: loadgen [OPTIONS] URL\n       loadgen merge LOG...\n\nAn HTTP client.\n', ['loadgen']);
  assert.deepEqual(u.synopsis, ['loadgen [OPTIONS] URL', 'loadgen merge LOG...']);
  assert.ok(u.rest.includes('An HTTP client.'));
  const s = splitSynopsis('The databases.\n\n  scripts/db start [pg]    start\n  scripts/db stop\n\nMore.\n', ['scripts/db']);
  assert.deepEqual(s.synopsis, ['scripts/db start [pg]    start', 'scripts/db stop']);
  assert.deepEqual(s.rest.filter(Boolean), ['The databases.', 'More.']);
});

test('make install PREFIX=DIR: man zipbench-run works, every page has a SYNOPSIS and fits 80 columns', { skip: !hasMan && 'no man' }, () => {
  const prefix = fs.mkdtempSync(path.join(os.tmpdir(), 'zb-install-'));
  const mk = spawnSync('make', ['-s', '-C', root, `BUILD=${process.env.ZB_BUILD || 'build'}`, 'install', `PREFIX=${prefix}`], { encoding: 'utf8' });
  assert.equal(mk.status, 0, mk.stderr);
  const env = { ...process.env, PATH: `${prefix}/bin:${process.env.PATH}`, MANWIDTH: '80', MANPAGER: 'cat', PAGER: 'cat' };
  delete env.MANPATH;
  const where = spawnSync('man', ['-w', 'zipbench-run'], { encoding: 'utf8', env });
  assert.equal(where.status, 0, where.stderr);
  assert.equal(where.stdout.trim(), path.join(prefix, 'share/man/man1/zipbench-run.1'));
  const v = spawnSync('zipbench', ['--version'], { encoding: 'utf8', env, cwd: os.tmpdir() });
  assert.match(v.stdout, /^zipbench \d/);
  assert.ok(fs.existsSync(path.join(prefix, 'share/bash-completion/completions/zipbench')));
  const pages = fs.readdirSync(path.join(prefix, 'share/man/man1')).map(f => f.replace(/\.1$/, ''));
  assert.ok(pages.length > 10 && pages.includes('zipbench'));
  for (const p of pages) {
    const r = spawnSync('man', [p], { encoding: 'utf8', env });
    assert.equal(r.status, 0, `man ${p}: ${r.stderr}`);
    const text = r.stdout.replace(/.\x08/g, '');   // overstrike bold and underline
    assert.match(text, /^SYNOPSIS$/m, `man ${p}: no SYNOPSIS`);
    const long = text.split('\n').filter(l => l.length > 80);
    assert.deepEqual(long, [], `man ${p}: lines over 80 columns`);
  }
  const un = spawnSync('make', ['-s', '-C', root, `BUILD=${process.env.ZB_BUILD || 'build'}`, 'uninstall', `PREFIX=${prefix}`], { encoding: 'utf8' });
  assert.equal(un.status, 0, un.stderr);
  assert.ok(!fs.existsSync(path.join(prefix, 'bin/zipbench')));
  assert.deepEqual(fs.readdirSync(path.join(prefix, 'share/man/man1')), []);
});
