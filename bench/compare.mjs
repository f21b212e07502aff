#!/usr/bin/env node
// zipbench compare A B: was B faster than A? Reads two bench outputs, or
// two sets of loadgen --json reports, and prints per cell B/A with its 95%
// interval and a verdict (lib/compare.mjs). ./zipbench compare runs it.
import { parseArgs } from 'node:util';
import { readSide, compareSides, againstSides, InputError, lastTwoRuns, busyShare, sideProbes, probeReference } from './lib/compare.mjs';
import { cellNames, shownPath } from './lib/saved.mjs';
import { SLOW_HOST } from './lib/hostprobe.mjs';
import { table } from './lib/table.mjs';
import { commitText, machineKey } from './lib/provenance.mjs';
import { RATE_FOLLOWS } from './lib/hostprobe.mjs';

const usage = `Usage: zipbench compare [OPTIONS] A B
       zipbench compare [OPTIONS] FILE.json
       zipbench compare [OPTIONS]

Compares two runs cell by cell and says, for each, whether B is faster
than A, slower, or not measurably different: B/A, the ratio of B's runs to
A's, with its 95% confidence interval.

With no arguments, the last two runs saved in build/runs/ (make run and
zipbench run save each run there): the last as B, and as A the latest
before it that measured the same cells.

With one FILE, what \`zipbench run --against DIR --json FILE\` wrote: both
builds measured in the same rounds, A the other build (DIR), B this one.
B/A is then the median of the ratios of the runs of one round, with its
95% interval (order statistics), and the host's drift between rounds
cancels: on a host whose speed moves over minutes (see "host" below) it is
the comparison to trust. Two separate runs of one commit, minutes apart,
can differ by more than their intervals on such a host.

A and B are each one of:
  FILE.json   a data file of the bench (docs/data/PART.json, or
              build/bench/quick/data/PART.json of a --quick run): its cells
              and each cell's runs
  DIR         a directory of them (docs/data): files are paired by name
  FILE.json   what \`zipbench run --json FILE.json\` wrote (make run): one
              cell per backend, strategy and concurrency
  FILE        loadgen --json reports, one JSON object a line, one per run
              (e.g. for i in 1 2 3 4 5 6; do loadgen --json ... ; done >
              a.json): one cell per target (method, URL, -c, -k) and
              measure (goodput req/s, latency p50 and p99 in µs), each run
              one sample; a file of one run without errors is compared by
              its full --interval rates, which are not independent runs
Cells are paired by file and key. Two single files are paired whatever
their names, and so are two loadgen files of one target each (one server
against another).

How B/A is judged:
  The ratio is the Hodges-Lehmann estimate, the median of every pairwise
  ratio B_j/A_i of the runs; its interval is the distribution-free one of
  the order statistics of those ratios (the Mann-Whitney U distribution,
  exact up to 40000 pairs), which assumes only that B's runs are A's scaled
  by one factor. It needs 4 runs a side (or 3 and 5, 2 and 8); with fewer
  the cell says "too few runs". Rates (req/s, rows/s) are faster when
  higher; times (the sql, as3ap and calibrate-cells parts, latencies) when
  lower; a cell or file of the bench may say which with better: "higher" or
  "lower". The verdict is "faster" or "slower" only when the whole interval
  lies beyond 1 (and beyond --threshold), else "no change".

Each cell is flagged when A's and B's provenance (docs/BENCH.md) differ:
"machine" (host name, CPU model or kernel), "commit", "dirty" (either tree
had changed tracked files), or "no provenance" (a file records none).
Differences across machines measure the machines as much as the code.
"host": both sides timed the host's CPU probe around their runs (the
bench's recorded runs and zipbench run do; build/bin/hostprobe) and the
medians differ by more than 4%: the host itself ran at another speed
(a guest's host can, with no steal shown), and the lookups' rates move
${RATE_FOLLOWS} as the probe, so such a ratio measures the host too;
ratios taken within one run (make run's pooled / per-request, or run
--against) hold better.

Where a cell says "no change" its interval may still be wide: the
column "runs a side for 5% / 10%" says how many runs a side would tell a
change of 5% and of 10% from none at the spread seen (the interval
narrows as the square root of the runs), as benchstat and Maricq et al.
("Taming performance variability", OSDI 2018) advise; a quieter machine
narrows it too. A warning says when a side's host probe found the machine
busy (more than a quarter of its runs more than 4% slower than the
quickest probe of either side).

Options:
      --threshold PCT  call a difference only when the interval lies more
                       than PCT% away from 1 (default 0: any interval that
                       excludes 1); on a noisy machine 2-5 keeps drift from
                       being called a change
      --changed        list only the cells judged faster or slower (the
                       counts and the exit status still cover every cell)
      --filter TEXT    compare only the cells whose name holds TEXT: the
                       list, the counts and the exit status are theirs
      --json           one JSON object on stdout: both sides' provenance,
                       every cell (medians, runs, ratio, lo, hi, verdict,
                       flags), the cells found on one side only, the counts
  -h, --help           this text

Exit status: 0 when no cell is slower, 1 when at least one cell is slower
(a regression: a script can stop on it), 2 on bad usage, an input that
cannot be read, or no cell in common.

Examples:
  zipbench compare docs/data build/bench/quick/data
  zipbench compare --threshold 3 old/server.json docs/data/server.json
  zipbench compare --changed --filter 'pooled 10' before/ after/
  zipbench compare a.json b.json          # loadgen --json runs, one a line
  git worktree add /tmp/base HEAD~1 && make -C /tmp/base
  zipbench run --against /tmp/base --json ab.json && zipbench compare ab.json`;

function usageError(msg) {
  process.stderr.write(`zipbench compare: ${msg}\nTry 'zipbench compare --help' for more information.\n`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: { threshold: { type: 'string' }, changed: { type: 'boolean' }, filter: { type: 'string' },
               json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  });
} catch (e) { usageError(e.message); }
const { values: opt, positionals } = parsed;
if (opt.help) { process.stdout.write(usage + '\n'); process.exit(0); }
if (positionals.length > 2)
  usageError(`two runs to compare, A and B, or one run with --against, or none (the last two saved) are needed (${positionals.length} given)`);
const threshold = opt.threshold === undefined ? 0 : Number(opt.threshold);
if (!Number.isFinite(threshold) || threshold < 0 || threshold > 100)
  usageError(`--threshold: '${opt.threshold}' is not a percentage in 0..100`);

let A, B, result;
try {
  if (!positionals.length) {
    const { a, b } = lastTwoRuns(cellNames);
    process.stderr.write(`zipbench compare: ${a ? `the last two saved runs: ${shownPath(a)} (A) and ${shownPath(b)} (B)`
                                                 : `the last saved run, its two sides: ${shownPath(b)}`}\n`);
    positionals.push(...(a ? [a, b] : [b]));
  }
  if (positionals.length === 1) {
    result = againstSides(positionals[0], { threshold: threshold / 100 });
    if (!result) usageError(`${positionals[0]}: not a run with --against (zipbench run --against DIR --json FILE); two runs to compare need A and B (1 given)`);
    ({ A, B } = result);
  } else {
    A = readSide(positionals[0]);
    B = readSide(positionals[1]);
    result = compareSides(A, B, { threshold: threshold / 100 });
  }
} catch (e) {
  if (!(e instanceof InputError)) throw e;
  process.stderr.write(`zipbench compare: ${e.message}\n`);
  process.exit(2);
}
if (!result.rows.length) {
  process.stderr.write(`zipbench compare: ${A.label} and ${B.label} have no cell in common\n`);
  process.exit(2);
}
// --filter picks the cells compared (the counts and the exit status are
// theirs); --changed only shortens the list.
const compared = opt.filter ? result.rows.filter(r => r.cell.includes(opt.filter)) : result.rows;
if (!compared.length) {
  process.stderr.write(`zipbench compare: no cell in common holds '${opt.filter}'\n`);
  process.exit(2);
}
const rows = opt.changed ? compared.filter(r => r.verdict === 'faster' || r.verdict === 'slower') : compared;
const count = v => compared.filter(r => r.verdict === v).length;
const counts = { faster: count('faster'), slower: count('slower'), no_change: count('no change'),
                 too_few_runs: count('too few runs') };

// A side's provenance in a few words: its commits, dates and machines.
function sideText(side) {
  const ps = side.files.map(f => f.provenance);
  const known = ps.filter(Boolean);
  const uniq = xs => [...new Set(xs)];
  const files = side.dir ? `${side.files.length} file${side.files.length === 1 ? '' : 's'}; ` : '';
  if (!known.length) return `${side.label} (${files}no provenance recorded)`;
  const commits = uniq(known.map(p => (p.commit ? commitText(p) : p.loadgen ? `loadgen ${p.loadgen}` : 'unknown')));
  const dates = uniq(known.map(p => (p.date || '').slice(0, 16).replace('T', ' '))).filter(Boolean).sort();
  const machines = uniq(known.map(p => {
    const m = p.machine ?? { hostname: p.hostname, cpu: p.cpu_model, kernel: p.kernel };
    return `${m.hostname}: ${m.cpu}, ${m.kernel}`;
  }));
  const when = dates.length > 1 ? `${dates[0]} to ${dates[dates.length - 1]} UTC` : dates.length ? `${dates[0]} UTC` : 'date unknown';
  return `${side.label} (${files}${commits.length > 1 ? 'commits' : 'commit'} ${commits.join(', ')}; ${when}; ` +
    `${machines.join('; ')}${known.length < ps.length ? `; ${ps.length - known.length} without provenance` : ''})`;
}

const json = x => (Number.isFinite(x) ? x : null);
// Each side's runs on a host its probe found slow (lib/hostprobe.mjs).
const ref = probeReference(A, B);
const busyA = busyShare(sideProbes(A), ref), busyB = busyShare(sideProbes(B), ref);
const needed = r => (r.needed ? `${r.needed[5] > 9999 ? '>9999' : r.needed[5]} / ${r.needed[10] > 9999 ? '>9999' : r.needed[10]}` : '');
if (opt.json) {
  process.stdout.write(JSON.stringify({
    a: { input: A.label, provenance: Object.fromEntries(A.files.map(f => [f.name, f.provenance])) },
    b: { input: B.label, provenance: Object.fromEntries(B.files.map(f => [f.name, f.provenance])) },
    threshold_pct: threshold, level: 0.95, counts,
    cells: rows.map(r => ({ cell: r.cell, ...(r.cellB ? { cell_b: r.cellB } : {}), better: r.better,
                            a: { median: json(r.a.median), runs: r.a.n, errors: r.a.errors, samples: r.a.source },
                            b: { median: json(r.b.median), runs: r.b.n, errors: r.b.errors, samples: r.b.source },
                            ratio: json(r.ratio), lo: json(r.lo), hi: json(r.hi), verdict: r.verdict, flags: r.flags,
                            host_probe_ratio: json(r.host), ...(r.needed ? { runs_needed: { pct5: r.needed[5], pct10: r.needed[10] } } : {}) })),
    busy: { a: json(busyA.share), b: json(busyB.share) },
    only_a: result.onlyA, only_b: result.onlyB,
  }) + '\n');
} else {
  const num = x => (!Number.isFinite(x) ? (x === Infinity ? 'inf' : '-') : Math.abs(x) >= 1000 ? Math.round(x).toLocaleString('en-US')
    : Number(x.toPrecision(4)).toString());
  const fig = s => `${num(s.median)} (n=${s.n})${s.errors ? ' E' : ''}`;
  const x3 = x => (Number.isFinite(x) ? x.toFixed(3) : x === Infinity ? 'inf' : '-');
  const ratio = r => (Number.isFinite(r.lo) || r.lo === Infinity ? `${x3(r.ratio)} [${x3(r.lo)}-${x3(r.hi)}]` : x3(r.ratio));
  const out = [`A: ${sideText(A)}`, `B: ${sideText(B)}`, ''];
  const advice = rows.some(r => r.needed);
  const rounds = result.rows.some(r => r.rounds !== undefined);   // one run --against file: its rounds
  if (rows.length)
    out.push(table(['cell', 'better', 'A: median (runs)', 'B: median (runs)', 'B/A [95% interval]', 'verdict',
                    ...(advice ? [rounds ? 'rounds for 5% / 10%' : 'runs a side for 5% / 10%'] : []), 'differs'],
                   rows.map(r => [r.cell + (r.cellB ? ` (B: ${r.cellB})` : ''), r.better, fig(r.a), fig(r.b), ratio(r), r.verdict,
                                  ...(advice ? [needed(r)] : []), r.flags.join(', ')]),
                   advice ? 'llrrrlrl' : 'llrrrll'));
  else out.push('(no cell to show)', '');
  out.push(`${compared.length} cells compared: ${counts.faster} faster, ${counts.slower} slower, ${counts.no_change} no change, ` +
           `${counts.too_few_runs} too few runs for an interval${threshold ? ` (threshold ${threshold}%)` : ''}.`);
  const flagged = f => compared.filter(r => r.flags.includes(f)).length;
  if (flagged('machine'))
    out.push(`${flagged('machine')} cells were measured on different machines: their ratios measure the machines too.`);
  const hosts = [...new Set(compared.filter(r => r.flags.includes('host')).map(r => r.host))];
  if (hosts.length)
    out.push(`${flagged('host')} cells were measured while the host ran at another speed: its CPU probe took ` +
             `${hosts.map(h => h.toFixed(2)).join(', ')}x as long during B as during A (above 1: B's host slower); ` +
             `the lookups move ${RATE_FOLLOWS}, so these ratios measure the host too.`);
  const unresolved = compared.filter(r => r.needed);
  if (unresolved.length) {
    const most = k => Math.max(...unresolved.map(r => r.needed[k]));
    out.push(`${unresolved.length} cells say no change, at the spread seen: to tell a 5% change from none would take up to ` +
             `${most(5) > 9999 ? 'more than 9999' : most(5)} ${rounds ? 'rounds' : 'runs a side'}, a 10% change ${most(10) > 9999 ? 'more than 9999' : most(10)} ` +
             `(the column says per cell); or a quieter machine, where the runs spread less.`);
  }
  if (compared.some(r => r.a.source !== 'runs' || r.b.source !== 'runs'))
    out.push('Some cells compare the intervals of a single run: they are not independent runs, so their interval is too narrow; repeat the runs.');
  if (rows.some(r => r.a.errors || r.b.errors))
    out.push('E: some runs of the cell had errors (not in its rate).');
  const some = xs => (xs.length > 8 ? `${xs.slice(0, 8).join('; ')}; and ${xs.length - 8} more` : xs.join('; '));
  if (result.onlyA.length) out.push(`Only in A (${result.onlyA.length}): ${some(result.onlyA)}.`);
  if (result.onlyB.length) out.push(`Only in B (${result.onlyB.length}): ${some(result.onlyB)}.`);
  process.stdout.write(out.join('\n') + '\n');
}
// A side measured on a busy machine: its runs are noisier and slower.
// (One file of both sides: its rounds are both sides', said once.)
for (const [side, b] of positionals.length === 1 ? [['the run', busyB]] : [['A', busyA], ['B', busyB]])
  if (b.share > 0.25)
    process.stderr.write(`zipbench compare: warning: ${side}'s host probe found the machine busy: ${b.slow} of its ${b.runs} runs ` +
                         `ran more than ${(100 * SLOW_HOST).toFixed(0)}% slower than the quickest probe; its figures are ` +
                         'noisier and slower than a quiet machine\'s (run again when it is quiet' +
                         `${positionals.length === 1 ? '' : ', or measure both in the same rounds: run --against'})\n`);
// Provenance of A and B as whole: stated once more on stderr when the
// machines differ, the most likely misreading.
const machinesOf = side => new Set(side.files.map(f => machineKey(f.provenance)).filter(Boolean));
const ma = machinesOf(A), mb = machinesOf(B);
if (ma.size && mb.size && ![...ma].some(k => mb.has(k)))
  process.stderr.write('zipbench compare: warning: A and B were measured on different machines\n');
// exitCode, not exit(): a report longer than a pipe's buffer is written
// to the end first.
process.exitCode = counts.slower ? 1 : 0;
