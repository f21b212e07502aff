// The one plot writer: gnuplot commands rendered as SVG and PNG into
// DIR/plots/NAME.{svg,png}, from data files the caller wrote.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { provenance } from './provenance.mjs';

export function draw(dir, name, width, height, body) {
  const out = path.join(dir, 'plots');
  fs.mkdirSync(out, { recursive: true });
  const script = `set terminal svg size ${width},${height} dynamic background rgb 'white' font 'sans,12' noenhanced
set output '${out}/${name}.svg'
${body}
set terminal pngcairo size ${width},${height} background rgb 'white' font 'sans,10' noenhanced
set output '${out}/${name}.png'
replot
`;
  const r = spawnSync('gnuplot', [], { input: script, encoding: 'utf8' });
  if (r.error || r.status !== 0)
    throw new Error(`gnuplot ${name}: ${r.error ? r.error.message : r.stderr.trim()}`);
  return `${out}/${name}.svg`;
}

// Whitespace-separated rows into DIR/data/NAME (for gnuplot and for a
// later --only run), returning the path. The first line is a comment
// (gnuplot skips it) holding the provenance as JSON.
export function writeData(dir, name, rows) {
  const d = path.join(dir, 'data');
  fs.mkdirSync(d, { recursive: true });
  const file = path.join(d, name);
  fs.writeFileSync(file, `# provenance: ${JSON.stringify(provenance())}\n` +
                         rows.map(r => r.join(' ')).join('\n') + (rows.length ? '\n' : ''));
  return file;
}

// A point and its error bar: [median, lo, hi] of a cell's summary, the 95%
// interval of the median; with too few runs for one (n < 6) the bar is
// empty (lo = hi = median), never the range of the runs.
export function errorBar(summary) {
  const m = summary.median;
  return Number.isFinite(summary.lo) ? [m, summary.lo, summary.hi] : [m, m, m];
}

// A clustered bar chart with each bar's 95% interval as an error bar:
// groups [{label, bars: {series: summary|undefined}}], series names in
// order. Writes DIR/data/NAME.dat and DIR/plots/NAME.{svg,png}. bmargin:
// lines below the plot for long group labels (gnuplot's own, else).
export function barPlot(dir, name, { title, ylabel, series, groups, log = false, width = 900, height = 480, bmargin = null }) {
  const rows = groups.map(g => [JSON.stringify(g.label.replace(/"/g, "'")), ...series.flatMap(s => {
    const x = g.bars[s];
    return x && Number.isFinite(x.median) ? errorBar(x).map(v => v.toPrecision(6)) : ['NaN', 'NaN', 'NaN'];
  })]);
  if (!rows.length) return null;
  const file = writeData(dir, `${name}.dat`, [['#group', ...series.flatMap(s => [s.replace(/ /g, '_'), 'lo', 'hi'])], ...rows]);
  const cols = series.map((s, i) => `'${file}' using ${2 + 3 * i}:${3 + 3 * i}:${4 + 3 * i}:xtic(1) title '${s.replace(/'/g, '')}'`);
  return draw(dir, name, width, height, `set title '${title.replace(/'/g, '')}'
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.8 border -1
set bars front
${log ? 'set logscale y' : 'set yrange [0:*]'}
set ylabel '${ylabel}'
set grid ytics
set key outside right
set xtics rotate by -30
${bmargin ? `set bmargin ${bmargin}\n` : ''}plot ${cols.join(', \\\n     ')}`);
}
