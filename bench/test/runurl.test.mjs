// `zipbench run --url` against a small HTTP server of the test's own (no
// database, no build of the server needed: loadgen and hostprobe only):
// the report, the run saved in ZB_RUNS and the compare command it prints,
// `zipbench compare` with no arguments, the progress line on a terminal
// (and none off one), and Ctrl-C: what was measured so far, exit 130, no
// client left. Run by `node --test bench/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const build = path.resolve(root, process.env.ZB_BUILD || 'build');
const built = fs.existsSync(path.join(build, 'bin', 'loadgen')) && fs.existsSync(path.join(build, 'bin', 'hostprobe'));
const skip = !built && 'loadgen and hostprobe not built (make)';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'zb-runurl-'));
const keys = path.join(tmp, 'k.keys');
fs.writeFileSync(keys, 'a\nb\nc\n');

// A server answering every GET, on a free loopback port.
async function server() {
  const srv = http.createServer((req, res) => res.end(`{"key":"${req.url}"}`));
  await new Promise(resolve => srv.listen(0, '127.0.0.1', resolve));
  return { srv, url: `http://127.0.0.1:${srv.address().port}` };
}

// bench/run.mjs with args, its runs saved in runs (a directory of the
// test's), asynchronously (the server above answers meanwhile). Resolves
// {code, out, err, ms}; onStart(child) is given the child.
function runDriver(args, { runs, onStart, detached = false, command = null } = {}) {
  return new Promise(resolve => {
    const t0 = Date.now();
    const [cmd, argv] = command ?? [process.execPath, [path.join(root, 'bench/run.mjs'), ...args]];
    const child = spawn(cmd, argv, { cwd: root, detached, env: { ...process.env, ZB_RUNS: runs } });
    let out = '', err = '';
    child.stdout.on('data', d => { out += d; });
    child.stderr.on('data', d => { err += d; });
    child.on('close', (code, signal) => resolve({ code, signal, out, err, ms: Date.now() - t0 }));
    if (onStart) onStart(child);
  });
}
const quick = ['--runs', '6', '--duration', '0.2', '--concurrency', '2'];
const literally = text => new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));

test('run --url: rounds, intervals, same-round ratios, probe and provenance; saved, with the compare command', { skip }, async () => {
  const { srv, url } = await server();
  const runs = fs.mkdtempSync(path.join(tmp, 'runs-'));
  try {
    const r = await runDriver(['--url', `${url}/a/{key}`, '--against-url', `${url}/b/{key}`, '--keys', keys, '--name', 'mine', ...quick], { runs });
    assert.equal(r.code, 0, r.err + r.out);
    assert.match(r.out, new RegExp(`\\| ${url}/a/\\{key\\} +\\| +2 \\| +[\\d,]+ \\[[\\d,]+-[\\d,]+\\] \\|`));
    assert.match(r.out, /--url \/ --against-url, from the runs of the same rounds:/);
    assert.match(r.out, /\| 2 +\| +\d\.\d\dx \[\d\.\d\d-\d\.\d\d\] \| (faster|slower|no change)/);
    assert.match(r.out, /The host's CPU probe \(build\/bin\/hostprobe, timed around every run\): [\d.]+-[\d.]+ ms/);
    assert.match(r.out, /^Commit \S+.*; machine: /m);
    assert.match(r.out, /^Where the \d+ s went: the measured runs [\d.]+ s, warm-ups [\d.]+ s, host probes [\d.]+ s/m);
    const files = fs.readdirSync(runs);
    assert.equal(files.length, 1);
    assert.match(files[0], /^\d{8}-\d{6}-[0-9a-f]{7}\+?-mine-against\.json$/);
    assert.match(r.out, literally(`Saved: ${path.join(runs, files[0])}`));
    assert.match(r.out, literally(`Compare the two sides again: ./zipbench compare ${path.join(runs, files[0])}`));
    const saved = JSON.parse(fs.readFileSync(path.join(runs, files[0]), 'utf8'));
    assert.equal(saved.url, `${url}/a/{key}`);
    assert.equal(saved.against.url, `${url}/b/{key}`);
    assert.equal(saved.cells.length, 2);
    assert.equal(saved.cells[0].cell, `${url}/a/{key} c=2`);
    assert.equal(saved.cells[0].runs.length, 6);
    assert.equal(saved.cells[0].host_probe_ms.length, 6);
    assert.ok(saved.provenance.machine);
    // Not on a terminal: no progress line.
    assert.doesNotMatch(r.err, /\r|runs, .* elapsed/);
  } finally { srv.close(); }
});

test('run --url takes its keys from a CSV column, and says what is wrong with one', { skip }, async () => {
  const { srv, url } = await server();
  const runs = fs.mkdtempSync(path.join(tmp, 'runs-'));
  const csv = path.join(tmp, 'p.csv');
  fs.writeFileSync(csv, 'sku,name\r\nA1,"one, two"\r\nB2,"say ""hi"""\r\nA1,again\r\n');
  try {
    const r = await runDriver(['--url', `${url}/p/{key}`, '--csv', csv, '--key', 'sku', '--runs', '1', '--duration', '0.2', '--concurrency', '1'], { runs });
    assert.equal(r.code, 0, r.err + r.out);
    assert.match(r.out, new RegExp(`== keys: 2 of column sku of ${csv}`));
    assert.equal(fs.readFileSync(path.join(build, 'run', 'url.keys'), 'utf8'), 'A1\nB2\n');
    const bad = await runDriver(['--url', `${url}/p/{key}`, '--csv', csv, '--key', 'id', '--runs', '1'], { runs });
    assert.equal(bad.code, 1);
    assert.match(bad.err, new RegExp(`--csv ${csv}:1: no column 'id' \\(the columns: sku, name\\)`));
  } finally { srv.close(); }
  const usage = spawnSync(process.execPath, [path.join(root, 'bench/run.mjs'), '--url', 'http://127.0.0.1:1/{key}'], { encoding: 'utf8' });
  assert.equal(usage.status, 2);
  assert.match(usage.stderr, /--url has \{key\} in it: give the keys, --keys FILE/);
  const mixed = spawnSync(process.execPath, [path.join(root, 'bench/run.mjs'), '--url', 'http://x/', '--backends', 'pg'], { encoding: 'utf8' });
  assert.equal(mixed.status, 2);
  assert.match(mixed.stderr, /--backends does not go with --url/);
});

test('compare with no arguments: the last two saved runs of the same cells; a file that is not JSON says what to give', { skip }, async () => {
  const { srv, url } = await server();
  const runs = fs.mkdtempSync(path.join(tmp, 'runs-'));
  try {
    for (let i = 0; i < 2; i++) {
      const r = await runDriver(['--url', `${url}/c/{key}`, '--keys', keys, ...quick], { runs });
      assert.equal(r.code, 0, r.err);
      if (i === 0) assert.match(r.out, /Compare with the next run of the same cells: \.\/zipbench compare \(the last two runs\)/);
      else assert.match(r.out, /Compare with the run before: \.\/zipbench compare \S+-url\.json \S+-url\.json/);
    }
    // a run of other cells since: compare still pairs the two of the same
    const other = await runDriver(['--url', `${url}/d`, '--runs', '1', '--duration', '0.2', '--concurrency', '1'], { runs });
    assert.equal(other.code, 0, other.err);
    const env = { ...process.env, ZB_RUNS: runs };
    const c = spawnSync(process.execPath, [path.join(root, 'bench/compare.mjs')], { encoding: 'utf8', env });
    assert.equal(c.status, 2, c.stdout + c.stderr);    // the last one has no twin
    assert.match(c.stderr, /the last saved run, has no run before it of the same cells/);
    fs.rmSync(path.join(runs, fs.readdirSync(runs).sort().at(-1)));
    const c2 = spawnSync(process.execPath, [path.join(root, 'bench/compare.mjs')], { encoding: 'utf8', env });
    assert.ok(c2.status === 0 || c2.status === 1, c2.stderr);
    assert.match(c2.stderr, /the last two saved runs: .*-url\.json \(A\) and .*-url\.json \(B\)/);
    assert.match(c2.stdout, new RegExp(`\\| ${url}/c/\\{key\\} c=2 +\\| higher \\|`));
    const notJson = path.join(tmp, 'report.txt');
    fs.writeFileSync(notJson, '== lookups: 6 cells\n');
    const c3 = spawnSync(process.execPath, [path.join(root, 'bench/compare.mjs'), notJson, notJson], { encoding: 'utf8', env });
    assert.equal(c3.status, 2);
    assert.match(c3.stderr, /report\.txt:1: not JSON\. Give it the JSON a run saved: make run and \.\/zipbench run save each run in .* \(the latest: .*-url\.json\)/);
  } finally { srv.close(); }
});

test('progress on a terminal: runs made of all, elapsed, time left and the cell; cleared before the report', { skip: skip || (!fs.existsSync('/usr/bin/script') && 'no script(1)') }, async () => {
  const { srv, url } = await server();
  const runs = fs.mkdtempSync(path.join(tmp, 'runs-'));
  try {
    // script(1) gives the driver a terminal of its own.
    const line = 'stty cols 200; ' + [process.execPath, path.join(root, 'bench/run.mjs'), '--url', `${url}/t/{key}`, '--keys', keys, ...quick]
      .map(a => `'${a}'`).join(' ');
    const r = await runDriver([], { runs, command: ['script', ['-qefc', line, '/dev/null']] });
    assert.equal(r.code, 0, r.out + r.err);
    assert.match(r.out, /\r\x1b\[K {2}0\/6 runs, 0:0\d elapsed, estimating what is left: http:\/\/127\.0\.0\.1:\d+\/t\/\{key\} c=2/);
    assert.match(r.out, /\r\x1b\[K {2}5\/6 runs, 0:\d\d elapsed, ~0:0\d left: /);
    assert.match(r.out, /\r\x1b\[K\r?\n?[^]*answered req\/s/);
  } finally { srv.close(); }
});

// The processes whose command line holds text (the driver's clients: the
// keys file is the test's own).
function processesWith(text) {
  return fs.readdirSync('/proc').filter(d => /^\d+$/.test(d)).filter(d => {
    try { return fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(text); } catch { return false; }
  });
}

test('Ctrl-C: the clients end at once, what was measured is printed with its intervals and saved, exit 130', { skip }, async () => {
  const { srv, url } = await server();
  const runs = fs.mkdtempSync(path.join(tmp, 'runs-'));
  const mine = path.join(tmp, 'ctrl-c.keys');
  fs.copyFileSync(keys, mine);
  // What starting node takes on this machine now: the bound on the stop
  // grows with it on a busy machine.
  const t0 = Date.now();
  spawnSync(process.execPath, ['-e', '0']);
  const nodeStart = Date.now() - t0;
  let child, signalled = 0;
  const log = path.join(build, 'run', 'run.log');
  try {
    const done = runDriver(['--url', `${url}/i/{key}`, '--keys', mine, '--runs', '100', '--duration', '0.3', '--concurrency', '1'],
                           { runs, detached: true, onStart: c => { child = c; } });
    // Until 6 runs are made (an interval exists) and a client runs: the
    // driver logs each client run when it ends.
    const runsMade = () => { try { return (fs.readFileSync(log, 'utf8').match(/^\$ \S*loadgen /gm) || []).length; } catch { return 0; } };
    while (runsMade() < 14 || !processesWith(mine).some(p => p !== String(child.pid))) await new Promise(r => setTimeout(r, 20));
    // as a terminal's Ctrl-C: SIGINT to the whole process group
    signalled = Date.now();
    process.kill(-child.pid, 'SIGINT');
    const r = await done;
    const took = Date.now() - signalled;
    assert.equal(r.code, 130, r.err);
    assert.ok(took < 2000 + 10 * nodeStart, `stopped in ${took} ms (node starts in ${nodeStart} ms here)`);
    assert.match(r.out, /^Interrupted: \d+ of 100 runs made\. What was measured so far:/m);
    assert.match(r.out, /\| +1 \| +[\d,]+ \[[\d,]+-[\d,]+\] \| /);
    assert.deepEqual(processesWith(mine), [], 'a client outlived the driver');
    const files = fs.readdirSync(runs);
    assert.equal(files.length, 1);
    assert.match(files[0], /-url-interrupted\.json$/);
    const saved = JSON.parse(fs.readFileSync(path.join(runs, files[0]), 'utf8'));
    assert.equal(saved.interrupted, true);
    assert.ok(saved.cells[0].runs.length >= 6);
  } finally {
    srv.close();
    if (child && child.exitCode === null) try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
  }
});

test('compare says how many runs would resolve 5% and 10% where it says no change, and warns of a busy host', () => {
  const dir = fs.mkdtempSync(path.join(tmp, 'advice-'));
  const prov = { date: '2026-01-02T03:04:05Z', commit: 'a'.repeat(40), dirty: false,
                 machine: { cpu: 'AMD EPYC', cores: 2, mem_gib: 8, kernel: 'Linux 6.1.0', os: 'Debian', hostname: 'box' }, versions: {} };
  // +-20% noise, 6 runs a side: no change, far from telling 5%
  const noisy = [0.8, 1.2, 0.9, 1.1, 1.0, 0.85].map(x => 1000 * x);
  const side = (probes) => ({ provenance: prov, seconds: 1, runs: 6,
    cells: [{ cell: 'sqlite pooled c=10', backend: 'sqlite', strategy: 'pooled', concurrency: 10, runs: noisy, rounds: [1, 2, 3, 4, 5, 6],
              errors: { total: 0 }, host_probe_ms: probes }] });
  const quiet = [10, 10.1, 10, 10.2, 10, 10.1], busy = [10, 13, 12, 14, 11, 13];
  fs.writeFileSync(path.join(dir, 'a.json'), JSON.stringify(side(quiet)));
  fs.writeFileSync(path.join(dir, 'b.json'), JSON.stringify(side(busy)));
  const r = spawnSync(process.execPath, [path.join(root, 'bench/compare.mjs'), path.join(dir, 'a.json'), path.join(dir, 'b.json')], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const m = /\| sqlite pooled c=10 \| higher \| .* \| no change +\| +(\d+) \/ (\d+) \|/.exec(r.stdout);
  assert.ok(m, r.stdout);
  // the interval's log half-width over log(1.05), squared, times the runs
  const [n5, n10] = [Number(m[1]), Number(m[2])];
  assert.ok(n5 > 6 && n10 > 6 && n5 > 3 * n10 && n5 < 5 * n10, `${n5} / ${n10}`);
  assert.match(r.stdout, /1 cells say no change, at the spread seen: to tell a 5% change from none would take up to \d+ runs a side, a 10% change \d+/);
  assert.match(r.stderr, /warning: B's host probe found the machine busy: 5 of its 6 runs ran more than 4% slower than the quickest probe/);
  assert.doesNotMatch(r.stderr, /A's host probe/);
  const j = JSON.parse(spawnSync(process.execPath, [path.join(root, 'bench/compare.mjs'), '--json', path.join(dir, 'a.json'), path.join(dir, 'b.json')], { encoding: 'utf8' }).stdout);
  assert.deepEqual(j.cells[0].runs_needed, { pct5: n5, pct10: n10 });
});
