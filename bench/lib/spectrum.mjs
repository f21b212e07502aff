// A latency percentile spectrum, as wrk2's and HdrHistogram's plotter draw
// it: x is the percentile on a log scale of 1/(1-p), so 0%, 90%, 99%,
// 99.9%, 99.99% stand equally far apart and the tail gets the room; y is
// the latency in ms; one line per cell.
//
// The figures are exact to the histogram loadgen recorded: each line is
// `loadgen merge --percentiles` of the cell's --hdr-log files (the
// distribution HdrHistogram itself prints, 5 points per halving of the
// distance to 100%), its last point the largest value, placed at the
// count of values (where 1/(1-p) ends for that many). Under --rate the
// latencies count from each request's intended start (no coordinated
// omission); without, they are closed-loop.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { draw, writeData, gpString, logAxis, ticLabel, lineStyle } from './plot.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// The percentile distribution of one or more --hdr-log files (merged as
// agents): [{ms, p, count, x}], x = 1/(1-p), the last row's x the count.
export function percentiles(hdrLogs) {
  const logs = [].concat(hdrLogs);
  const loadgen = path.resolve(root, process.env.ZB_BUILD || 'build', 'bin', 'loadgen');
  const r = spawnSync(loadgen, ['merge', '--percentiles', ...logs], { encoding: 'utf8' });
  if (r.error || !r.stdout)
    throw new Error(`loadgen merge --percentiles ${logs.join(' ')}: ${r.error ? r.error.message : r.stderr.trim()}`);
  const rows = [];
  for (const line of r.stdout.split('\n')) {
    const f = line.trim().split(/\s+/).map(Number);
    if (f.length < 3 || !f.every(Number.isFinite)) continue;
    const [ms, p, count] = f;
    rows.push({ ms, p, count, x: p < 1 ? 1 / (1 - p) : count });
  }
  if (!rows.length) throw new Error(`${logs.join(' ')}: no latencies recorded`);
  return rows;
}

// The x axis's tics: 0%, 90%, 99%, ... up to what the lines reach.
function percentTics(maxX) {
  const tics = [['0%', 1]];
  for (let k = 1, x = 10; x <= maxX * 1.0001; k++, x *= 10)
    tics.push([`${(100 - 100 / x).toFixed(Math.max(0, k - 2))}%`, x]);
  // A tic's label is a format for its value: % is written %%.
  return `set xtics (${tics.map(([l, x]) => `${ticLabel(l)} ${x}`).join(', ')})`;
}

// Draws DIR/plots/NAME.svg (and .png) from series [{label, hdrLog}] (hdrLog:
// a path, or several agents' paths), its data in DIR/data/NAME.dat (one
// block per series: 1/(1-p), ms, p). Returns the SVG's path.
export function drawSpectrum(dir, name, title, series) {
  const lines = series.map(s => ({ label: s.label, rows: percentiles(s.hdrLog) }));
  const rows = [['#one_over_1_minus_p', 'ms', 'percentile']];
  lines.forEach((l, i) => {
    if (i) rows.push([], []);           // gnuplot's index: blocks apart
    rows.push([`# ${l.label}`], ...l.rows.map(r => [r.x.toPrecision(8), r.ms, r.p]));
  });
  return plotSpectrum(dir, name, title, writeData(dir, `${name}.dat`, rows));
}

// The plot of a spectrum's data file (drawSpectrum's, or a recorded one):
// each block's "# label" line names its line.
export function plotSpectrum(dir, name, title, file) {
  const blocks = fs.readFileSync(file, 'utf8').split('\n\n\n');
  const lines = blocks.map(b => {
    const label = (b.split('\n').find(l => /^# /.test(l) && !l.startsWith('# provenance:')) || '# ?').slice(2);
    const rows = b.split('\n').filter(l => l && !l.startsWith('#')).map(l => l.split(' ').map(Number))
      .map(([x, ms]) => ({ x, ms }));
    return { label, rows };
  });
  const xs = lines.flatMap(l => l.rows.map(r => r.x)), ms = lines.flatMap(l => l.rows.map(r => r.ms));
  const maxX = Math.max(...xs), lo = Math.min(...ms.filter(v => v > 0)), hi = Math.max(...ms);
  const y = hi / lo > 50 ? logAxis(ms) : 'set yrange [0:*]';
  return draw(dir, name, 900, 480, [
    "set xlabel 'percentile (log scale of 1/(1-p))'",
    `set ylabel ${gpString(`latency (ms${hi / lo > 50 ? ', log scale' : ''})`)}`,
    'set logscale x', `set xrange [1:${maxX * 1.05}]`, percentTics(maxX), y, 'set grid',
    'plot ' + lines.map((l, i) => `'${file}' index ${i} using 1:2 with steps lw 2 ${lineStyle(i)} title ${gpString(l.label)}`).join(', '),
  ].join('\n'), { title, legend: lines.map(l => l.label) });
}
