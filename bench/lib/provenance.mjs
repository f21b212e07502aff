// Where and when a figure was made: the commit of the tree and whether it
// was dirty, the machine (CPU model, cores, memory, kernel, OS, host
// name), the versions of the programs and libraries measured, and the
// date. Every data file the bench writes (DIR/data: writeCells, writeData,
// calibrate.json) and every section of RESULTS*.md records it, so that a
// figure is never read as one of another machine or commit; `zipbench
// compare` flags cells whose provenance differs.
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { machineInfo, versions } from './machine.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// {commit, dirty} of the tree at root; null for both outside a git tree.
// Dirty: a tracked file outside docs/ differs from the commit (docs/ holds
// the results, which the bench itself rewrites; untracked files are
// build output).
export function gitState(root = ROOT) {
  const git = args => spawnSync('git', ['-C', root, ...args], { encoding: 'utf8', timeout: 10000 });
  const head = git(['rev-parse', 'HEAD']);
  if (head.error || head.status !== 0) return { commit: null, dirty: null };
  const st = git(['status', '--porcelain', '--untracked-files=no', '--', '.', ':(exclude)docs']);
  return { commit: head.stdout.trim(), dirty: st.status === 0 ? st.stdout.trim() !== '' : null };
}

let fixed = null;
// The provenance of what this process measures: the tree's state, the
// machine and the versions are read once (at the first call: the run's
// start, before it writes anything), the date at each call.
export function provenance() {
  if (!fixed) fixed = { ...gitState(), machine: machineInfo(), versions: versions() };
  return { date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), ...fixed };
}

// "662a113" or "662a113 (dirty: ...)", or "unknown".
export function commitText(p) {
  if (!p?.commit) return 'unknown';
  return `${p.commit.slice(0, 12)}${p.dirty ? ' (dirty: tracked files changed)' : ''}`;
}

// The sentence a results section ends with.
export function provenanceLine(p = provenance()) {
  const m = p.machine || {};
  const v = Object.values(p.versions || {}).filter(x => x && !/not found/.test(x));
  return `Commit ${commitText(p)}; machine: ${m.cores} cores (${m.cpu}), ${m.mem_gib} GiB, ${m.kernel}, ${m.os}` +
    (v.length ? `; versions: ${v.join(', ')}` : '') + '.';
}

// What tells two machines apart, as one comparable string ('' unknown):
// host name, CPU model and kernel, from the bench's provenance or from
// loadgen's (--json: hostname, cpu_model, kernel).
export function machineKey(p) {
  const m = p?.machine ?? (p && (p.hostname || p.cpu_model) ? { hostname: p.hostname, cpu: p.cpu_model, kernel: p.kernel } : null);
  return m ? [m.hostname, m.cpu, m.kernel].join(' | ') : '';
}

// The commit and machine a section's provenanceLine names ({commit,
// machine} as written, short), or null when it has none.
export function sectionProvenance(markdown) {
  const m = /^Commit (\S+)(?: \(dirty[^)]*\))?; machine: ([^;]*)[;.]/m.exec(markdown);
  // a section wraps its lines: the machine may run over a line break
  return m ? { commit: m[1], machine: m[2].replace(/\s+/g, ' ') } : null;
}
