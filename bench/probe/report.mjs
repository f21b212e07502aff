// What the host probe explains in a recorded experiment (docs/DECISIONS.md,
// "Precision: the host's speed probed beside every run"): per cell,
// the 95% interval of the median over all its runs and over the runs kept
// (probe within SLOW_HOST, +4%, of the quickest), and how the rate follows the probe
// (the correlation of their logs and the slope, the rate's elasticity).
//   node bench/probe/report.mjs docs/data/hostprobe/server.json [REGEX]
import fs from 'node:fs';
import { summarize } from '../lib/stats.mjs';
import { quickest, slowHost, SLOW_HOST } from '../lib/hostprobe.mjs';

const [file, pattern = ' 10$'] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/probe/report.mjs DATA.json [REGEX of cell keys, default " 10$"]\n');
  process.exit(2);
}
const data = JSON.parse(fs.readFileSync(file, 'utf8'));
const cells = Object.entries(data).filter(([k, c]) => c && Array.isArray(c.probes) && new RegExp(pattern).test(k));
const runsOf = c => [...c.values.map((v, i) => ({ v, p: c.probes[i] })), ...c.slowHost.map(r => ({ v: r.value, p: r.probe }))]
  .filter(r => Number.isFinite(r.p));
const every = Object.values(data).filter(c => c && Array.isArray(c.probes)).flatMap(runsOf);
const ref = quickest(every.map(r => r.p));
const width = s => (Number.isFinite(s.halfWidth) ? `+-${(100 * s.halfWidth).toFixed(1)}%` : 'no interval');
const fig = s => `${s.median.toFixed(0)} ${width(s)} (n ${s.n})`;

function fit(runs) {
  const x = runs.map(r => Math.log(r.p)), y = runs.map(r => Math.log(r.v));
  const mean = a => a.reduce((s, v) => s + v, 0) / a.length, mx = mean(x), my = mean(y);
  const sxy = x.reduce((s, v, i) => s + (v - mx) * (y[i] - my), 0);
  const sxx = x.reduce((s, v) => s + (v - mx) ** 2, 0), syy = y.reduce((s, v) => s + (v - my) ** 2, 0);
  return { r: sxy / Math.sqrt(sxx * syy), slope: sxy / sxx };
}

const kept = every.filter(r => !slowHost(r.p, ref)).length;
console.log(`${file}: commit ${data.provenance?.commit?.slice(0, 12) ?? '?'}, ${data.provenance?.machine?.cpu ?? '?'}; ` +
            `probe quickest ${ref.toFixed(2)} ms, ${every.length - kept} of ${every.length} runs over +${(100 * SLOW_HOST).toFixed(0)}%`);
console.log('| cell | all runs | runs kept | r (log rate, log probe) | slope |');
console.log('|---|---|---|---:|---:|');
for (const [k, c] of cells) {
  const runs = runsOf(c);
  if (runs.length < 3) continue;
  const f = fit(runs);
  console.log(`| ${k} | ${fig(summarize(runs.map(r => r.v)))} | ${fig(summarize(runs.filter(r => !slowHost(r.p, ref)).map(r => r.v)))} ` +
              `| ${f.r.toFixed(2)} | ${f.slope.toFixed(1)} |`);
}
