// Every run kept: `make run` and `zipbench run` write their JSON into
// BUILD/runs/ (or $ZB_RUNS) as TIME-COMMIT-NAME.json (UTC time, so that the names sort
// as the runs were made; the commit's first 7 digits, "+" when the tree
// had changed tracked files; a short name of what was measured), and
// `zipbench compare` with no arguments reads the last two of them.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// The directory of the saved runs: ZB_RUNS (the tests' own), else runs/
// of the build (ZB_BUILD, default build) under the tree.
export function runsDir(build = process.env.ZB_BUILD || 'build') {
  return process.env.ZB_RUNS ? path.resolve(process.env.ZB_RUNS) : path.resolve(ROOT, build, 'runs');
}

// The file a run is saved in: "20250302-004512-a9a1e4a-sqlite.json".
// name: what was measured, in a few characters (letters, digits, '.',
// '-', '+'; anything else becomes '-').
export function savedRunFile(provenance, name, dir = runsDir()) {
  const t = new Date(provenance.date || Date.now()).toISOString();
  const stamp = `${t.slice(0, 10).replace(/-/g, '')}-${t.slice(11, 19).replace(/:/g, '')}`;
  const commit = provenance.commit ? provenance.commit.slice(0, 7) + (provenance.dirty ? '+' : '') : 'nocommit';
  const short = String(name).replace(/[^A-Za-z0-9.+-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 60) || 'run';
  let file = path.join(dir, `${stamp}-${commit}-${short}.json`);
  // two runs in one second: the second gets a suffix
  for (let i = 2; fs.existsSync(file); i++) file = path.join(dir, `${stamp}-${commit}-${short}-${i}.json`);
  return file;
}

// The saved runs, oldest first (their names sort by time).
export function savedRuns(dir = runsDir()) {
  let names = [];
  try { names = fs.readdirSync(dir); } catch { return []; }
  return names.filter(f => /^\d{8}-\d{6}-.*\.json$/.test(f)).sort().map(f => path.join(dir, f));
}

// A path as the user typed it would work from where they are: relative
// to the caller's directory when inside it, else absolute.
export function shownPath(file, from = process.env.ZB_CALLER_DIR || process.cwd()) {
  const rel = path.relative(from, file);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
}

// The names of the cells a saved run measured (of this build, where it
// measured another beside it); none when it cannot be read. A run saved
// before cells had names is named as zipbench compare names its cells.
export function cellNames(file) {
  try {
    const d = JSON.parse(fs.readFileSync(file, 'utf8'));
    return (d.cells || []).filter(c => c && (c.build ?? 'this') === 'this').map(runCellName);
  } catch { return []; }
}

// One cell of a `zipbench run` JSON: its name.
export const runCellName = c => c.cell ?? `${c.backend} ${c.strategy} c=${c.concurrency}`;
