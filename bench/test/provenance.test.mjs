// Every figure says where and when it was made (lib/provenance.mjs): the
// data files (writeCells, writeData), the sections' last line, and the
// answer of RESULTS.md, which says when its sources' machines differ. Run
// by `node --test bench/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { provenance, gitState, provenanceLine, sectionProvenance, machineKey } from '../lib/provenance.mjs';
import { Cells, writeCells } from '../lib/cells.mjs';
import { writeData } from '../lib/plot.mjs';
import { answer } from '../lib/summary.mjs';

const tmp = prefix => fs.mkdtempSync(path.join(os.tmpdir(), prefix));

test('provenance: the commit, the machine, the versions and the date', () => {
  const p = provenance();
  assert.match(p.date, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.match(p.commit, /^[0-9a-f]{40}$/);          // the tests run in the tree
  assert.equal(typeof p.dirty, 'boolean');
  assert.ok(p.machine.cpu && p.machine.cpu !== '?');
  assert.equal(p.machine.cores, os.availableParallelism());
  assert.ok(p.machine.kernel.startsWith(`${os.type()} ${os.release()}`));
  assert.equal(p.machine.hostname, os.hostname());
  assert.match(p.versions.node, /^Node v\d+/);
});

test('gitState: dirty means tracked files outside docs/ changed; no git tree, no commit', () => {
  const dir = tmp('zb-git-');
  const git = (...a) => assert.equal(spawnSync('git', ['-C', dir, ...a], { encoding: 'utf8' }).status, 0);
  git('init', '-q');
  fs.mkdirSync(path.join(dir, 'docs'));
  fs.writeFileSync(path.join(dir, 'code.c'), 'int x;\n');
  fs.writeFileSync(path.join(dir, 'docs/RESULTS.md'), 'old\n');
  git('add', '.');
  git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'x');
  const clean = gitState(dir);
  assert.match(clean.commit, /^[0-9a-f]{40}$/);
  assert.equal(clean.dirty, false);
  fs.writeFileSync(path.join(dir, 'docs/RESULTS.md'), 'new results\n');   // the bench's own output
  fs.writeFileSync(path.join(dir, 'scratch.txt'), 'untracked\n');
  assert.equal(gitState(dir).dirty, false);
  fs.writeFileSync(path.join(dir, 'code.c'), 'int y;\n');
  assert.equal(gitState(dir).dirty, true);
  assert.deepEqual(gitState(tmp('zb-nogit-')), { commit: null, dirty: null });
});

test('data files: writeCells and writeData record the provenance', async () => {
  const dir = tmp('zb-prov-');
  const ctx = { repeat: { minRuns: 1, maxRuns: 1, target: 0.05, budgetS: 10 }, log() {}, warn() {} };
  const cells = new Cells(ctx, 't');
  cells.add('a', () => 5);
  await cells.measure();
  const data = JSON.parse(fs.readFileSync(writeCells(dir, 't', [cells.get('a')]), 'utf8'));
  assert.equal(data.provenance.commit, provenance().commit);
  assert.equal(data.provenance.machine.cpu, provenance().machine.cpu);
  assert.equal(data.a.median, 5);
  const first = fs.readFileSync(writeData(dir, 't.dat', [['x', 1]]), 'utf8').split('\n');
  assert.match(first[0], /^# provenance: \{/);             // a comment: gnuplot skips it
  assert.equal(JSON.parse(first[0].slice('# provenance: '.length)).commit, provenance().commit);
  assert.equal(first[1], 'x 1');
});

test('sections: the last line names commit, machine and versions, and reads back', () => {
  const line = provenanceLine();
  assert.match(line, /^Commit [0-9a-f]{12}( \(dirty[^)]*\))?; machine: \d+ cores \(/);
  assert.match(line, /versions: .*Node v/);
  const back = sectionProvenance(`## A section\n\nMeasured 2024-01-01 00:00 UTC in 5 s.\n${line}\n`);
  assert.equal(back.commit, provenance().commit.slice(0, 12));
  assert.match(back.machine, /^\d+ cores \(.*\), \d+ GiB, /);
  assert.equal(sectionProvenance('## A section without one\n'), null);
  // a section's text is wrapped: the same machine over a line break is the same machine
  const wrapped = line.replace(/, (\d+ GiB)/, ',\n$1');
  assert.notEqual(wrapped, line);
  assert.deepEqual(sectionProvenance(`## Wrapped\n\n${wrapped}\n`), back);
  const unknown = provenanceLine({ ...provenance(), commit: null, dirty: null });
  assert.equal(sectionProvenance(unknown).commit, 'unknown');
});

test('answer: names its sources, and says when they come from different machines', () => {
  const dir = tmp('zb-answer-');
  const p = provenance();
  const cell = m => ({ n: 1, median: m, lo: null, hi: null, values: [m], errors: { total: 0 } });
  const write = (f, d) => fs.writeFileSync(path.join(dir, f), JSON.stringify(d));
  write('answer.json', { provenance: p, tool: 'loadgen', levels: [10], headline: 10, backends: {}, nginx: {}, ranking: {}, best: {} });
  write('bulk.json', { provenance: p, 'postal sqlite zipbench': cell(5) });
  let text = answer(dir).join('\n');
  assert.match(text, new RegExp(`Made from answer\\.json .* UTC, commit ${p.commit.slice(0, 12)}`));
  assert.doesNotMatch(text, /different machines/);
  const other = { ...p, machine: { ...p.machine, hostname: 'elsewhere', cpu: 'Intel Xeon' } };
  assert.notEqual(machineKey(other), machineKey(p));
  write('bulk.json', { provenance: other, 'postal sqlite zipbench': cell(5) });
  text = answer(dir).join('\n');
  assert.match(text, /\*\*Measured on 2 different machines\*\*.*bulk\.json on elsewhere \(\d+ cores, Intel Xeon/);
  write('php.json', { 'zipbench loadgen sqlite 1 10': cell(7) });
  assert.match(answer(dir).join('\n'), /php\.json \(no provenance recorded\)/);
});
