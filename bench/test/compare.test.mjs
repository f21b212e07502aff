// zipbench compare (bench/compare.mjs, lib/compare.mjs): B/A per cell with
// its interval, a verdict only where the interval excludes 1, rates and
// times each the right way up, provenance flags, loadgen reports, and exit
// codes a script can trust. Run by `node --test bench/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { verdict, provenanceFlags, readSide } from '../lib/compare.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'zb-compare-'));
const write = (dir, f, data) => {
  fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
  fs.writeFileSync(path.join(dir, f), typeof data === 'string' ? data : JSON.stringify(data));
  return path.join(dir, f);
};
const compare = (...args) => {
  const r = spawnSync(process.execPath, [path.join(root, 'bench/compare.mjs'), ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
};
const json = (...args) => {
  const r = compare('--json', ...args);
  return { ...r, data: r.out ? JSON.parse(r.out) : null };
};

const noise = [1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.00];
const cell = (base, k = 1, n = 8) => ({ n, median: base * k, values: noise.slice(0, n).map(x => x * base * k), errors: { total: 0 } });
const prov = (o = {}) => ({ date: '2026-01-02T03:04:05Z', commit: 'a'.repeat(40), dirty: false,
                            machine: { cpu: 'AMD EPYC', cores: 2, mem_gib: 8, kernel: 'Linux 6.1.0 x86_64', os: 'Debian', hostname: 'box' },
                            versions: {}, ...o });

function twoRuns() {
  const dir = tmp();
  write(dir, 'a/server.json', { provenance: prov(), 'up 10': cell(1000), 'down 10': cell(1000), 'same 10': cell(1000),
                                'few 10': cell(1000, 1, 2), 'gone 10': cell(5) });
  write(dir, 'b/server.json', { provenance: prov(), 'up 10': cell(1000, 1.2), 'down 10': cell(1000, 0.8),
                                'same 10': { ...cell(1000), values: [...noise].reverse().map(x => 1000 * x) },
                                'few 10': cell(1000, 1.5, 2), 'new 10': cell(5) });
  write(dir, 'a/sql.json', { provenance: prov(), 'speed|pg|insert': cell(2.0) });          // seconds: lower is faster
  write(dir, 'b/sql.json', { provenance: prov({ commit: 'b'.repeat(40) }), 'speed|pg|insert': cell(1.5) });
  write(dir, 'a/calibrate.json', { provenance: prov(), fsync_us: 100 });                // no cells: skipped
  write(dir, 'b/calibrate.json', { provenance: prov(), fsync_us: 90 });
  return dir;
}

test('compare: per cell B/A, its interval and a verdict; rates up, times down; exit 1 on a slower cell', () => {
  const dir = twoRuns();
  const { code, data } = json(path.join(dir, 'a'), path.join(dir, 'b'));
  assert.equal(code, 1);                                              // 'down 10' is slower
  const by = Object.fromEntries(data.cells.map(c => [c.cell, c]));
  assert.equal(by['server: up 10'].verdict, 'faster');
  assert.ok(Math.abs(by['server: up 10'].ratio - 1.2) < 1e-9 && by['server: up 10'].lo > 1);
  assert.equal(by['server: down 10'].verdict, 'slower');
  assert.equal(by['server: same 10'].verdict, 'no change');
  assert.ok(by['server: same 10'].lo < 1 && by['server: same 10'].hi > 1);
  assert.equal(by['server: few 10'].verdict, 'too few runs');
  assert.equal(by['server: few 10'].lo, null);
  assert.equal(by['sql: speed|pg|insert'].better, 'lower');
  assert.equal(by['sql: speed|pg|insert'].verdict, 'faster');         // 1.5 s against 2 s
  assert.deepEqual(by['sql: speed|pg|insert'].flags, ['commit']);
  assert.deepEqual(by['server: up 10'].flags, []);
  assert.deepEqual(data.only_a, ['server: gone 10']);
  assert.deepEqual(data.only_b, ['server: new 10']);
  assert.deepEqual(data.counts, { faster: 2, slower: 1, no_change: 1, too_few_runs: 1 });
  assert.equal(data.a.provenance.server.commit, 'a'.repeat(40));
});

test('compare: text for people; --threshold, --changed, --filter; no slower cell exits 0', () => {
  const dir = twoRuns();
  const t = compare(path.join(dir, 'a'), path.join(dir, 'b'));
  assert.equal(t.code, 1);
  assert.match(t.out, /^A: .*\/a \(2 files; commit a{12}; 2026-01-02 03:04 UTC; box: AMD EPYC, Linux 6\.1\.0 x86_64\)$/m);
  assert.match(t.out, /^B: .*\/b \(2 files; commits a{12}, b{12}; /m);
  assert.match(t.out, /\| server: up 10 +\| higher \| +1,000 \(n=8\) \| +1,200 \(n=8\) \| 1\.200 \[1\.\d{3}-1\.\d{3}\] \| faster/);
  assert.match(t.out, /5 cells compared: 2 faster, 1 slower, 1 no change, 1 too few runs/);
  assert.match(t.out, /Only in A \(1\): server: gone 10\./);
  // A threshold past every change (20% up or down, a time 2 s -> 1.5 s:
  // 1/0.75 = 1.33x): nothing is called a change, exit 0.
  const wide = json('--threshold', '40', path.join(dir, 'a'), path.join(dir, 'b'));
  assert.equal(wide.code, 0);
  assert.equal(wide.data.counts.slower + wide.data.counts.faster, 0);
  const changed = json('--changed', '--filter', 'server', path.join(dir, 'a'), path.join(dir, 'b'));
  assert.deepEqual(changed.data.cells.map(c => c.cell).sort(), ['server: down 10', 'server: up 10']);
  // Two single files pair whatever their names.
  const one = json(path.join(dir, 'a/server.json'), path.join(dir, 'b/server.json'));
  assert.ok(one.data.cells.some(c => c.cell === 'up 10'));
});

test('compare: cells from other machines are flagged, and stderr says so', () => {
  const dir = tmp();
  write(dir, 'a.json', { provenance: prov(), x: cell(100) });
  write(dir, 'b.json', { provenance: prov({ machine: { ...prov().machine, hostname: 'other', cpu: 'Intel Xeon' } }), x: cell(100) });
  const r = json(path.join(dir, 'a.json'), path.join(dir, 'b.json'));
  assert.equal(r.code, 0);
  assert.deepEqual(r.data.cells[0].flags, ['machine']);
  assert.match(r.err, /measured on different machines/);
  write(dir, 'old.json', { x: cell(100) });
  assert.deepEqual(json(path.join(dir, 'old.json'), path.join(dir, 'a.json')).data.cells[0].flags, ['no provenance']);
});

// loadgen --json reports as loadgen writes them (the fields compare reads).
const run = (url, goodput, p50, { errors = 0, intervals = [] } = {}) => ({
  url, method: 'GET', concurrency: 10, keepalive: true, rps: goodput, goodput_rps: goodput, answered: goodput,
  errors: { total: errors }, latency_us: { p50, p99: p50 * 3 }, intervals,
  provenance: { date: '2026-01-02T03:04:05Z', hostname: 'box', cpu_model: 'AMD EPYC', kernel: 'Linux 6.1.0 x86_64', loadgen: '1.1' } });

test('compare: loadgen reports, one run a line, one server against another', () => {
  const dir = tmp();
  const lines = (url, k) => noise.slice(0, 6).map(x => JSON.stringify(run(url, 5000 * x * k, 200 / k))).join('\n') + '\n';
  const a = write(dir, 'a.json', lines('http://127.0.0.1:8080/zip/pg/{key}', 1));
  const b = write(dir, 'b.json', lines('http://127.0.0.1:8081/zip/pg/{key}', 1.25));
  const r = json(a, b);
  assert.equal(r.code, 0);
  const by = Object.fromEntries(r.data.cells.map(c => [c.cell.replace(/^.*: /, ''), c]));
  assert.equal(by['goodput req/s'].verdict, 'faster');
  assert.equal(by['goodput req/s'].a.runs, 6);
  assert.equal(by['latency p50 µs'].better, 'lower');
  assert.equal(by['latency p50 µs'].verdict, 'faster');              // 160 µs against 200: lower is faster
  assert.match(r.data.cells[0].cell_b, /:8081\//);
  // One run a side without errors: its full intervals are the samples.
  const ivs = k => noise.map((x, i) => ({ t: i, len: 1, completed: 5000, failed: 0, rps: 5000 * x * k, p50_us: 200 / k, p99_us: 600 }))
    .concat([{ t: 8, len: 0.3, completed: 10, failed: 0, rps: null, p50_us: 1, p99_us: 1 }]);
  const a1 = write(dir, 'a1.json', JSON.stringify(run('http://h/', 5000, 200, { intervals: ivs(1) })) + '\n');
  const b1 = write(dir, 'b1.json', JSON.stringify(run('http://h/', 4000, 200, { intervals: ivs(0.8) })) + '\n');
  const one = json(a1, b1);
  assert.equal(one.code, 1);
  const g = one.data.cells.find(c => c.cell.endsWith('goodput req/s'));
  assert.equal(g.a.samples, 'intervals of one run');
  assert.equal(g.a.runs, 8);                                          // the partial interval left out
  assert.equal(g.verdict, 'slower');
  assert.match(compare(a1, b1).out, /not independent runs/);
});

test('compare: exit 2 on bad usage, unreadable input, nothing in common; --help', () => {
  const dir = twoRuns();
  assert.equal(compare(path.join(dir, 'a')).code, 2);
  assert.match(compare(path.join(dir, 'a')).err, /two runs to compare/);
  assert.equal(compare(path.join(dir, 'a'), path.join(dir, 'nope')).code, 2);
  assert.equal(compare('--threshold', 'x', path.join(dir, 'a'), path.join(dir, 'b')).code, 2);
  assert.equal(compare('--bogus', path.join(dir, 'a'), path.join(dir, 'b')).code, 2);
  write(dir, 'bad.json', 'not json\n');
  const bad = compare(path.join(dir, 'bad.json'), path.join(dir, 'a'));
  assert.equal(bad.code, 2);
  assert.match(bad.err, /bad\.json:1: not JSON/);
  write(dir, 'c/other.json', { provenance: prov(), z: cell(1) });
  write(dir, 'c/more.json', { provenance: prov(), z: cell(1) });
  const none = compare(path.join(dir, 'a'), path.join(dir, 'c'));
  assert.equal(none.code, 2);
  assert.match(none.err, /no cell in common/);
  const help = compare('--help');
  assert.equal(help.code, 0);
  for (const s of ['Usage: zipbench compare', 'Hodges-Lehmann', 'Exit status', 'Examples', '--threshold'])
    assert.ok(help.out.includes(s), s);
});

test('verdict and flags: the interval decides, the threshold widens "no change"', () => {
  assert.equal(verdict({ lo: 1.01, hi: 1.1 }, 'higher'), 'faster');
  assert.equal(verdict({ lo: 1.01, hi: 1.1 }, 'lower'), 'slower');
  assert.equal(verdict({ lo: 0.9, hi: 0.99 }, 'lower'), 'faster');
  assert.equal(verdict({ lo: 0.99, hi: 1.01 }, 'higher'), 'no change');
  assert.equal(verdict({ lo: 1.01, hi: 1.1 }, 'higher', 0.02), 'no change');
  assert.equal(verdict({ lo: 1.03, hi: 1.1 }, 'higher', 0.02), 'faster');
  assert.equal(verdict({ lo: NaN, hi: NaN }, 'higher'), 'too few runs');
  assert.deepEqual(provenanceFlags(prov(), prov({ dirty: true })), ['dirty']);
  assert.deepEqual(provenanceFlags(prov(), null), ['no provenance']);
});

test('./zipbench compare: the front door, paths taken from where it is called, exit status passed on', () => {
  const dir = twoRuns();
  const r = spawnSync(path.join(root, 'zipbench'), ['compare', '--json', 'a', 'b'], { cwd: dir, encoding: 'utf8' });
  assert.equal(r.status, 1, r.stderr);
  assert.equal(JSON.parse(r.stdout).counts.slower, 1);
  const help = spawnSync(path.join(root, 'zipbench'), ['help'], { encoding: 'utf8' });
  assert.match(help.stdout, /^  compare +was B faster than A\?/m);
});

test('compare --filter: the exit status and counts are the filtered cells\'; none matching is exit 2', () => {
  const dir = twoRuns();
  const up = json('--filter', 'up 10', path.join(dir, 'a'), path.join(dir, 'b'));
  assert.equal(up.code, 0);                                           // the slower 'down 10' left out
  assert.deepEqual(up.data.counts, { faster: 1, slower: 0, no_change: 0, too_few_runs: 0 });
  const none = compare('--filter', 'no such cell', path.join(dir, 'a'), path.join(dir, 'b'));
  assert.equal(none.code, 2);
  assert.match(none.err, /no cell in common holds 'no such cell'/);
});

test('compare reads zipbench run --json: one cell per backend, strategy and concurrency', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zb-run-json-'));
  const file = path.join(dir, 'run.json');
  fs.writeFileSync(file, JSON.stringify({ provenance: { commit: 'abc' }, seconds: 1, runs: 6, cells: [
    { backend: 'sqlite', strategy: 'pooled', concurrency: 10, runs: [1, 2, 3, 4, 5, 6], errors: { total: 2 } },
    { backend: 'sqlite', strategy: 'per-request', concurrency: 10, runs: [7, 8, 9, 10, 11, 12] }] }));
  const side = readSide(file);
  const cells = side.files[0].cells;
  assert.deepEqual([...cells.keys()], ['sqlite pooled c=10', 'sqlite per-request c=10']);
  assert.deepEqual(cells.get('sqlite pooled c=10'), { values: [1, 2, 3, 4, 5, 6], better: 'higher', errors: 2, source: 'runs' });
  assert.equal(side.files[0].provenance.commit, 'abc');
  fs.rmSync(dir, { recursive: true });
});

test('compare flags "host" where the two sides\' host probes differ by more than 4%, and says how much', () => {
  const dir = tmp();
  const probed = (base, ms) => ({ ...cell(base), probes: noise.map(x => x * ms) });
  write(dir, 'a/server.json', { provenance: prov(), 'x 10': probed(1000, 10), 'y 10': probed(500, 10) });
  write(dir, 'b/server.json', { provenance: prov(), 'x 10': probed(800, 11), 'y 10': probed(500, 11) });
  write(dir, 'c/server.json', { provenance: prov(), 'x 10': probed(1000, 10.2), 'y 10': probed(500, 10.2) });
  const slow = json(path.join(dir, 'a/server.json'), path.join(dir, 'b/server.json'));
  assert.deepEqual(slow.data.cells.map(c => c.flags), [['host'], ['host']]);
  assert.ok(Math.abs(slow.data.cells[0].host_probe_ratio - 1.1) < 1e-9);
  assert.equal(slow.data.cells[0].verdict, 'slower');   // the verdict stands; the flag says why
  const text = compare(path.join(dir, 'a/server.json'), path.join(dir, 'b/server.json'));
  assert.match(text.out, /2 cells were measured while the host ran at another speed: its CPU probe took 1\.10x as long during B/);
  const near = json(path.join(dir, 'a/server.json'), path.join(dir, 'c/server.json'));
  assert.deepEqual(near.data.cells.map(c => c.flags), [[], []]);
  // zipbench run --json keeps each cell's probes in host_probe_ms
  const run = write(dir, 'run.json', { provenance: prov(), cells: [
    { backend: 'sqlite', strategy: 'pooled', concurrency: 10, runs: [1, 2, 3, 4], host_probe_ms: [10, 11, null, 12] }] });
  assert.deepEqual(readSide(run).files[0].probes, [10, 11, 12]);
  fs.rmSync(dir, { recursive: true });
});

test('compare FILE: a run with --against, judged by the ratios of the same rounds, where the host\'s drift cancels', () => {
  const dir = tmp();
  // the host's speed moves by up to 1.6x from round to round, the same for both builds
  const host = [1.0, 1.4, 0.8, 1.2, 0.9, 1.6, 1.1, 0.85];
  const side = (build, base, jitter) => ({ backend: 'sqlite', strategy: 'pooled', concurrency: 10, build,
    runs: host.map((h, i) => base * h * jitter[i]), rounds: host.map((_, i) => i + 1), errors: { total: 0 } });
  const same = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01], other = [...same].reverse();
  const file = (name, k) => write(dir, name, { provenance: prov(), seconds: 1, runs: 8,
    against: { dir: '/tmp/base', server: '/tmp/base/build/bin/server', commit: 'b'.repeat(40), dirty: false },
    cells: [side('this', 1000 * k, same), side('against', 1000, other)] });
  const nochange = json(file('same.json', 1));
  assert.equal(nochange.code, 0);
  assert.equal(nochange.data.cells.length, 1);
  assert.equal(nochange.data.cells[0].verdict, 'no change');
  assert.deepEqual(nochange.data.cells[0].flags, ['commit']);
  const faster = json(file('faster.json', 1.1));
  assert.equal(faster.data.cells[0].verdict, 'faster');
  assert.ok(faster.data.cells[0].lo > 1.05 && faster.data.cells[0].hi < 1.15, JSON.stringify(faster.data.cells[0]));
  // the same runs as two separate sides: the drift swamps a 10% change
  const apart = readSide(file('apart.json', 1.1)).files[0].cells;
  assert.deepEqual([...apart.keys()], ['sqlite pooled c=10']);   // only this build's cells
  const slower = compare(file('slower.json', 0.9));
  assert.equal(slower.code, 1);
  assert.match(slower.out, /the other build: \/tmp\/base/);
  assert.match(slower.out, /sqlite pooled c=10 .* slower/);
  // one file that is not such a run: bad usage
  const plain = write(dir, 'plain.json', { provenance: prov(), cells: [side('this', 1000, same)] });
  const bad = compare(plain);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /not a run with --against/);
  fs.rmSync(dir, { recursive: true });
});
