// zipbench compare: two runs of the bench (or of loadgen) cell by cell.
// Each side is what the bench wrote (a DIR/data/PART.json file, or the
// directory of them), what `zipbench run --json` wrote, or loadgen's --json
// reports (one JSON object a line, one per run). Per cell: B/A, the Hodges-Lehmann ratio of B's runs to
// A's with its 95% interval (stats.mjs ratioCI), and a verdict that names
// a difference only where the interval excludes 1. Each cell carries the
// provenance of its files, and is flagged when the machines or commits of
// A and B differ.
import fs from 'node:fs';
import path from 'node:path';
import { ratioCI, median, summarize } from './stats.mjs';
import { machineKey } from './provenance.mjs';
import { SLOW_HOST, quickest, slowHost } from './hostprobe.mjs';
import { roundRatios } from './cells.mjs';
import { runCellName, savedRuns, runsDir, shownPath } from './saved.mjs';

// The data files whose figures are times (seconds, µs): lower is faster.
// Every other part's figures are rates (requests/s, rows/s). A cell (or a
// file, at its top level) may say so itself: better: 'higher' | 'lower'.
const TIME_PARTS = new Set(['sql', 'as3ap', 'calibrate-cells']);

export class InputError extends Error {}

const isCell = c => c && typeof c === 'object' && Array.isArray(c.values);

// One bench data file: {name, provenance, cells: Map(key -> {values, better, errors})},
// or null when the object holds no cells.
function benchFile(name, data) {
  const cells = new Map();
  const fileBetter = data.better === 'lower' || data.better === 'higher' ? data.better : null;
  for (const [key, c] of Object.entries(data)) {
    if (!isCell(c)) continue;
    const better = c.better === 'lower' || c.better === 'higher' ? c.better
      : fileBetter ?? (TIME_PARTS.has(name) ? 'lower' : 'higher');
    cells.set(key, { values: c.values.filter(Number.isFinite), better, errors: c.errors?.total ?? 0, source: 'runs' });
  }
  // the host probe of every run (lib/hostprobe.mjs), counted or set aside
  const probes = Object.values(data).filter(isCell)
    .flatMap(c => [...(c.probes || []), ...(c.slowHost || []).map(r => r.probe)]).filter(Number.isFinite);
  return cells.size ? { name, kind: 'bench', provenance: data.provenance ?? null, cells, probes } : null;
}

// `zipbench run --json FILE` (bench/run.mjs; build/runs/ keeps each):
// {provenance, cells: [{cell, backend, strategy, concurrency (or url),
// runs: [req/s...], errors}]}, one cell each; of a run with --against,
// this build's cells (the other's: againstSides).
function runFile(name, data) {
  const cells = new Map();
  for (const c of data.cells) {
    if (!c || !Array.isArray(c.runs) || c.build === 'against') continue;
    cells.set(runCellName(c), { values: c.runs.filter(Number.isFinite), better: 'higher', errors: c.errors?.total ?? 0, source: 'runs' });
  }
  const probes = data.cells.flatMap(c => (Array.isArray(c?.host_probe_ms) ? c.host_probe_ms : [])).filter(Number.isFinite);
  return cells.size ? { name, kind: 'bench', provenance: data.provenance ?? null, cells, probes } : null;
}

// loadgen --json reports: one cell group per target (method, URL,
// concurrency, keep-alive). Several runs: each run is one sample. One
// run: its full intervals are the samples where every answer counted
// (no errors: an interval's rate counts every answer), else the run alone.
function loadgenFile(name, runs) {
  const groups = new Map();
  for (const r of runs) {
    const g = `${r.method || 'GET'} ${r.url} -c ${r.concurrency}${r.keepalive ? ' -k' : ''}`;
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push(r);
  }
  const cells = new Map();
  for (const [g, rs] of groups) {
    const one = rs.length === 1 ? rs[0] : null;
    const full = one && !(one.errors?.total > 0) ? (one.intervals || []).filter(iv => iv.rps !== null && iv.completed > 0) : [];
    const byInterval = full.length >= 2;
    const pick = (fromRun, fromIv) => (byInterval ? full.map(fromIv) : rs.map(fromRun)).filter(Number.isFinite);
    const errors = rs.reduce((s, r) => s + (r.errors?.total || 0), 0);
    const source = byInterval ? 'intervals of one run' : 'runs';
    cells.set(`${g}: goodput req/s`, { values: pick(r => r.goodput_rps, iv => iv.rps), better: 'higher', errors, source });
    cells.set(`${g}: latency p50 µs`, { values: pick(r => r.latency_us?.p50, iv => iv.p50_us), better: 'lower', errors, source });
    cells.set(`${g}: latency p99 µs`, { values: pick(r => r.latency_us?.p99, iv => iv.p99_us), better: 'lower', errors, source });
  }
  return { name, kind: 'loadgen', provenance: runs[0].provenance ?? null, cells };
}

// The JSON objects of a file: the whole file as one, or one a line.
function jsonObjects(file) {
  let text;
  try { text = fs.readFileSync(file, 'utf8'); } catch (e) { throw new InputError(`${file}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`); }
  try { return [JSON.parse(text)]; } catch { /* one a line, then */ }
  const objs = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    try { objs.push(JSON.parse(line)); } catch { throw new InputError(`${file}:${i + 1}: not JSON. ${whatToGive()}`); }
  });
  if (!objs.length) throw new InputError(`${file}: empty`);
  return objs;
}

// What compare reads, said where it was given something else.
const latestRun = () => savedRuns().at(-1);
const whatToGive = () => 'Give it the JSON a run saved: make run and ./zipbench run save each run in ' +
  `${shownPath(runsDir())}/ and print the file's name` + (latestRun() ? ` (the latest: ${shownPath(latestRun())})` : '') +
  '; or a bench data directory (docs/data) or file, or loadgen --json output. With no arguments it compares the last two saved runs.';

// One side: a file or a directory, as {label, kind, files: [benchFile|loadgenFile]}.
export function readSide(p) {
  let st;
  try { st = fs.statSync(p); } catch { throw new InputError(`${p}: no such file or directory`); }
  const names = st.isDirectory()
    ? fs.readdirSync(p).filter(f => f.endsWith('.json')).sort().map(f => path.join(p, f)) : [p];
  const files = [];
  for (const f of names) {
    const objs = jsonObjects(f);
    const name = path.basename(f).replace(/\.json$/, '');
    const one = objs.length === 1 ? objs[0] : null;
    if (objs.every(o => o && typeof o === 'object' && 'goodput_rps' in o)) {
      files.push(loadgenFile(name, objs));
    } else if (one && typeof one === 'object' && !Array.isArray(one)) {
      const b = Array.isArray(one.cells) ? runFile(name, one) : benchFile(name, one);
      if (b) files.push(b);
      else if (!st.isDirectory()) throw new InputError(`${f}: neither a bench data file (cells with "values"), zipbench run --json, nor loadgen --json reports. ${whatToGive()}`);
    } else {
      throw new InputError(`${f}: neither a bench data file (cells with "values"), zipbench run --json, nor loadgen --json reports. ${whatToGive()}`);
    }
  }
  if (!files.length) throw new InputError(`${p}: no bench data files (*.json with cells) in it. ${whatToGive()}`);
  return { label: p, dir: st.isDirectory(), files };
}

// One `zipbench run --against DIR --json FILE`: both builds measured in the
// same rounds. A is the other build (the baseline), B this one; per cell
// B/A is the median of the ratios of the runs of one round, with the order
// statistics' 95% interval of that median (what the run printed): the
// host's drift between rounds cancels. Returns {A, B, rows, onlyA, onlyB}
// as compareSides does; null when the file is not such a run.
export function againstSides(file, { threshold = 0 } = {}) {
  if (fs.statSync(file, { throwIfNoEntry: false })?.isDirectory()) return null;
  const [data] = jsonObjects(file);
  if (!data || typeof data !== 'object' || !data.against || !Array.isArray(data.cells)) return null;
  const pb = data.provenance ?? null;
  const pa = pb ? { ...pb, commit: data.against.commit ?? null, dirty: data.against.dirty ?? null } : null;
  const side = (label, build, provenance) => {
    const cells = data.cells.filter(c => c && (c.build ?? 'this') === build && Array.isArray(c.runs));
    return { label, dir: false, cells: new Map(cells.map(c => [runCellName(c), c])),
             files: [{ name: path.basename(file), provenance, probes: cells.flatMap(c => c.host_probe_ms || []).filter(Number.isFinite) }] };
  };
  const other = data.against.url ? `the --against-url target: ${data.against.url}` : `the other build: ${data.against.dir}`;
  const A = side(`${file}, ${other}`, 'against', pa), B = side(`${file}, ${data.against.url ? 'the --url target' : 'this build'}`, 'this', pb);
  const flags = provenanceFlags(pa, pb);
  const rows = [];
  for (const [key, b] of B.cells) {
    const a = A.cells.get(key);
    if (!a) continue;
    const paired = roundRatios({ values: b.runs, rounds: b.rounds || [] }, { values: a.runs, rounds: a.rounds || [] });
    const s = summarize(paired);
    const ci = { ratio: s.median, lo: s.lo, hi: s.hi };
    const v = verdict(ci, 'higher', threshold);
    rows.push({ file: A.files[0].name, cell: key, better: 'higher',
                a: { median: median(a.runs), n: a.runs.length, errors: a.errors?.total ?? 0, source: 'runs' },
                b: { median: median(b.runs), n: b.runs.length, errors: b.errors?.total ?? 0, source: 'runs' },
                ratio: ci.ratio, lo: ci.lo, hi: ci.hi, verdict: v, flags, host: NaN, rounds: paired.length,
                needed: v === 'no change' ? runsNeeded(ci, paired.length) : null });
  }
  const onlyA = [...A.cells.keys()].filter(k => !B.cells.has(k)), onlyB = [...B.cells.keys()].filter(k => !A.cells.has(k));
  return { A, B, rows, onlyA, onlyB };
}

// The verdict on B against A from the interval of B/A: 'faster' or
// 'slower' only when the interval lies wholly beyond 1 (and beyond the
// threshold, a share: 0.02 = 2% either way), 'no change' when it does not,
// 'too few runs' when no interval exists.
export function verdict(ci, better, threshold = 0) {
  if (!Number.isFinite(ci.lo) && ci.lo !== Infinity) return 'too few runs';
  const up = 1 + threshold, down = 1 / (1 + threshold);
  const above = ci.lo > up, below = ci.hi < down;
  if (!above && !below) return 'no change';
  return (above === (better === 'higher')) ? 'faster' : 'slower';
}

// What differs between the provenances of A's and B's file: ['machine',
// 'commit', 'dirty'] as they apply; 'unknown' when either has none.
export function provenanceFlags(pa, pb) {
  if (!pa || !pb) return ['no provenance'];
  const flags = [];
  const ka = machineKey(pa), kb = machineKey(pb);
  if (ka && kb && ka !== kb) flags.push('machine');
  if (pa.commit && pb.commit && pa.commit !== pb.commit) flags.push('commit');
  if (pa.dirty || pb.dirty) flags.push('dirty');
  return flags;
}

// The host's speed during B against A: the median of B's host probes over
// A's (above 1: B's host ran slower), or NaN where either has too few.
export function hostRatio(fa, fb) {
  const pa = fa.probes || [], pb = fb.probes || [];
  return pa.length >= 3 && pb.length >= 3 ? median(pb) / median(pa) : NaN;
}

// The cells of two sides, paired: by file name and key; a single file on
// each side is paired whatever its name (the same part from two places),
// and so is a single loadgen target on each side (one server against
// another). Returns {rows, onlyA, onlyB}.
export function compareSides(A, B, { threshold = 0 } = {}) {
  const pairs = [];
  if (A.files.length === 1 && B.files.length === 1) pairs.push([A.files[0], B.files[0]]);
  else for (const fa of A.files) { const fb = B.files.find(f => f.name === fa.name); if (fb) pairs.push([fa, fb]); }
  const rows = [], onlyA = [], onlyB = [];
  const prefix = (f, k) => (A.files.length > 1 || B.files.length > 1 ? `${f.name}: ${k}` : k);
  for (const [fa, fb] of pairs) {
    const flags = provenanceFlags(fa.provenance, fb.provenance);
    // the host ran at another speed: the rates move more than the probe
    const host = hostRatio(fa, fb);
    if (Math.abs(Math.log(host)) > Math.log(1 + SLOW_HOST)) flags.push('host');
    let keyPairs = [...fa.cells.keys()].filter(k => fb.cells.has(k)).map(k => [k, k]);
    const targets = f => [...new Set([...f.cells.keys()].map(k => k.replace(/: [^:]+$/, '')))];
    if (!keyPairs.length && fa.kind === 'loadgen' && fb.kind === 'loadgen' && targets(fa).length === 1 && targets(fb).length === 1) {
      const ta = targets(fa)[0], tb = targets(fb)[0];
      keyPairs = [...fa.cells.keys()].map(k => [k, tb + k.slice(ta.length)]).filter(([, kb]) => fb.cells.has(kb));
    }
    const paired = new Set(keyPairs.map(([, kb]) => kb));
    for (const [ka, kb] of keyPairs) {
      const a = fa.cells.get(ka), b = fb.cells.get(kb);
      const ci = ratioCI(a.values, b.values);
      const v = verdict(ci, a.better, threshold);
      rows.push({ file: fa.name, cell: prefix(fa, ka), cellB: ka === kb ? undefined : kb, better: a.better,
                  a: { median: median(a.values), n: a.values.length, errors: a.errors, source: a.source },
                  b: { median: median(b.values), n: b.values.length, errors: b.errors, source: b.source },
                  ratio: ci.ratio, lo: ci.lo, hi: ci.hi, verdict: v, flags, host,
                  needed: v === 'no change' ? runsNeeded(ci, ci.m, ci.n) : null });
    }
    for (const k of fa.cells.keys()) if (!keyPairs.some(([x]) => x === k)) onlyA.push(prefix(fa, k));
    for (const k of fb.cells.keys()) if (!paired.has(k)) onlyB.push(prefix(fb, k));
  }
  for (const fa of A.files) if (!pairs.some(([x]) => x === fa)) onlyA.push(`${fa.name}: (the whole file)`);
  for (const fb of B.files) if (!pairs.some(([, y]) => y === fb)) onlyB.push(`${fb.name}: (the whole file)`);
  return { rows, onlyA, onlyB };
}

// Runs a side that would tell a change of 5% and of 10% from none at the
// spread this interval shows (benchstat's advice, and Maricq et al.'s,
// "Taming performance variability", OSDI 2018: repeat until the interval
// is narrower than the effect sought). The interval's half-width in log
// scale shrinks as the square root of the runs: with m and n runs a side
// (n undefined: one sample of paired ratios, m rounds), N runs a side
// bring it to w * sqrt((2/N) / (1/m + 1/n)), or w * sqrt(m/N); N is the
// fewest that brings it within log(1 + change). {5: N, 10: N}, each at
// least the runs there are; null where no interval exists.
export function runsNeeded(ci, m, n) {
  if (!(ci.lo > 0) || !Number.isFinite(ci.hi) || !(m > 0)) return null;
  const w = (Math.log(ci.hi) - Math.log(ci.lo)) / 2;
  const now = n === undefined ? m : Math.max(m, n);
  const per = d => {
    const target = Math.log(1 + d);
    if (w <= target) return now;
    const N = n === undefined ? m * (w / target) ** 2 : 2 / ((target / w) ** 2 * (1 / m + 1 / n));
    return Math.max(now, Math.ceil(N));
  };
  return { 5: per(0.05), 10: per(0.10) };
}

// Whether a side's host probe says its machine was busy: the share of its
// runs whose probe ran more than SLOW_HOST over the quickest of both
// sides' probes. {share, runs} (share NaN without probes).
export function busyShare(probes, ref) {
  const ps = probes.filter(Number.isFinite);
  if (!ps.length || !Number.isFinite(ref)) return { share: NaN, runs: ps.length, slow: 0 };
  const slow = ps.filter(p => slowHost(p, ref)).length;
  return { share: slow / ps.length, runs: ps.length, slow };
}

// The host probes of a side's files, and the reference of two sides (the
// quickest of all their probes).
export const sideProbes = side => side.files.flatMap(f => f.probes || []);
export const probeReference = (A, B) => quickest([...sideProbes(A), ...sideProbes(B)]);

// The saved runs compare reads with no arguments: the last run of
// build/runs/, and the latest before it that measured a cell of its (A);
// {a, b}, or {b} alone for a run with --against of its own, or an
// InputError saying what is missing.
export function lastTwoRuns(cellsOf) {
  const runs = savedRuns();
  if (!runs.length)
    throw new InputError(`no run saved in ${shownPath(runsDir())}/ yet: make run or ./zipbench run saves one each time (or give A and B)`);
  const b = runs.at(-1), mine = new Set(cellsOf(b));
  const a = runs.slice(0, -1).reverse().find(f => cellsOf(f).some(c => mine.has(c)));
  if (a) return { a, b };
  try { if (JSON.parse(fs.readFileSync(b, 'utf8')).against) return { b }; } catch { /* said below */ }
  throw new InputError(`${shownPath(b)}, the last saved run, has no run before it of the same cells in ${shownPath(runsDir())}/ ` +
                       `(${runs.length} saved): run it again to compare, or give A and B`);
}
