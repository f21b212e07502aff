// The one plot writer: gnuplot commands rendered as SVG and PNG into
// DIR/plots/NAME.{svg,png}, from data files the caller wrote.
//
// Layout, so that every text fits the picture (lib/svgtext.mjs checks it
// with the same estimate of a text's width): a title is wrapped to the
// width; legends go below the plot, where they take the picture's width
// instead of half the plot's; a bar chart's group labels are wrapped into
// lines under their group, or slanted with the margins they need; a log
// axis that spans less than three decades gets 1-2-5 tics, so it shows
// more than two labels. Every axis names its unit (the caller's ylabel,
// xlabel).
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { provenance } from './provenance.mjs';
import { CHAR_WIDTH } from './svgtext.mjs';

const FONT = 12;                      // the SVG's font size (px)
const CHAR = FONT * CHAR_WIDTH;       // one character's estimated width

// A gnuplot string: double-quoted, so a quote or an apostrophe stays as
// written, and a newline starts a line.
export function gpString(s) {
  return `"${String(s).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

// A tic's label as gnuplot reads it: a format, where % must be doubled.
export const ticLabel = s => gpString(String(s).replace(/%/g, '%%'));

// text broken at spaces into lines of at most `chars` characters (a word
// longer than that is a line of its own).
export function wrap(text, chars) {
  const lines = [];
  let line = '';
  for (const word of String(text).split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > chars) { lines.push(line); line = word; }
    else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

// The title as gnuplot's `set title`, wrapped so that it fits even when
// gnuplot centres it over a plot area off the picture's centre.
export function titleCommand(title, width) {
  return `set title ${gpString(wrap(title, Math.floor((width - 140) / CHAR)).join('\n'))}`;
}

// Tics for a log axis from lo to hi: 1, 2 and 5 of each decade when the
// range spans less than three decades (gnuplot would label the decades
// alone, two of them), else the decades. `axis` is y or x.
export function logTics(lo, hi, axis = 'y') {
  if (!(lo > 0 && hi > 0)) return '';
  const d0 = Math.floor(Math.log10(lo)), d1 = Math.ceil(Math.log10(hi));
  if (d1 - d0 >= 3) return '';
  const tics = [];
  for (let d = d0; d <= d1; d++)
    for (const m of [1, 2, 5]) {
      const v = Number((m * 10 ** d).toPrecision(1));
      if (v >= 10 ** d0 && v <= 10 ** d1) tics.push(v);
    }
  return `set ${axis}tics (${tics.map(v => `${ticLabel(v.toLocaleString('en-US', { maximumFractionDigits: 6 }))} ${v}`).join(', ')})`;
}

// The legend below the plot, for its entries' titles: the columns that
// fit the width and the rows they take. An entry is its title, the line's
// sample and the gaps around them (12 characters: gnuplot's own estimate
// of an SVG font is wider than ours, and it puts fewer columns side by
// side than 8 would say); draw tells gnuplot the columns (maxcols).
export function legendLayout(titles, width) {
  if (!titles.length) return { cols: 0, rows: 0 };
  const entry = (Math.max(...titles.map(t => t.length)) + 12) * CHAR;
  const cols = Math.min(titles.length, Math.max(1, Math.floor((width - 40) / entry)));
  return { cols, rows: Math.ceil(titles.length / cols) };
}
export const legendRows = (titles, width) => legendLayout(titles, width).rows;

// A log y axis over whole decades around values, with logTics.
export function logAxis(values, axis = 'y') {
  const v = values.filter(x => Number.isFinite(x) && x > 0);
  if (!v.length) return `set logscale ${axis}`;
  const lo = 10 ** Math.floor(Math.log10(Math.min(...v))), hi = 10 ** Math.ceil(Math.log10(Math.max(...v)) + 1e-9);
  // A hair beyond both ends: gnuplot drops a tic that falls on the end.
  // Decades gnuplot labels itself print as 0.001 and 10, not 10.00000.
  return `set logscale ${axis}\nset ${axis}range [${lo * 0.999}:${hi * 1.001}]\n` +
         (logTics(lo, hi, axis) || `set format ${axis} '%g'`);
}

// Renders body (gnuplot commands: the plot and its axes) into
// DIR/plots/NAME.svg and .png; `title` (optional) is laid out here. A
// legend goes below the plot unless body places it; given its entries'
// titles (`legend`), the bottom margin is made for it and an x axis's
// label (gnuplot's own would put the legend over the label). Returns the
// SVG's path.
export function draw(dir, name, width, height, body, { title, legend } = {}) {
  const out = path.join(dir, 'plots');
  fs.mkdirSync(out, { recursive: true });
  const lay = legend ? legendLayout(legend, width) : null;
  const bmargin = lay ? `set bmargin ${4 + lay.rows}` : '';
  const script = `set terminal svg size ${width},${height} dynamic background rgb 'white' font 'sans,${FONT}' noenhanced
set output '${out}/${name}.svg'
set key below width 1${lay ? ` maxcols ${lay.cols}` : ''}
${bmargin}
${title ? titleCommand(title, width) : ''}
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

// Twelve colours apart from one another (Tableau's ten, black and a dark
// yellow): a plot with many lines gives each its own, each also its own
// point type (for readers who tell colours apart poorly), and a dash type
// of its own after twelve.
export const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
  '#bcbd22', '#17becf', '#000000', '#b8860b'];
// The gnuplot style of a plot's i-th line: its colour, and its dash type
// and point type (dashed is the caller's, by passing dt).
export const lineStyle = (i, dt = 1 + Math.floor(i / PALETTE.length)) =>
  `lc rgb '${PALETTE[i % PALETTE.length]}' dt ${dt} pt ${1 + (i % 13)}`;

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

// Where a bar chart's group labels go: wrapped into lines under their
// group when every word fits its share of the width, else slanted by 45
// degrees, right-aligned at the tic, with the left margin the first label
// needs. Returns gnuplot commands and the labels to print.
function groupLabels(labels, width) {
  const left = 90, right = 20;
  const share = (width - left - right) / labels.length;
  const chars = Math.floor(share / CHAR) - 1;
  if (labels.every(l => l.split(/\s+/).every(w => w.length <= chars)))
    return { commands: [], labels: labels.map(l => wrap(l, chars).join('\n')), lines: Math.max(...labels.map(l => wrap(l, chars).length)) };
  // Slanted: a label reaches len x CHAR x cos 45 left of its tic, and the
  // first tic stands half a share right of the plot's left edge.
  // (plus the text's height, slanted too).
  const reach = labels[0].length * CHAR * Math.SQRT1_2 + FONT - share / 2 + 10;
  const lmargin = Math.min(0.45, Math.max(left, reach) / width);
  return { commands: ['set xtics rotate by 45 right', `set lmargin at screen ${lmargin.toFixed(3)}`,
                      `set rmargin at screen ${(1 - right / width).toFixed(3)}`], labels, lines: 1 };
}

// The longest group label, in characters.
const maxLabel = groups => Math.max(...groups.map(g => g.label.length));

// A clustered bar chart with each bar's 95% interval as an error bar:
// groups [{label, bars: {series: summary|undefined}}], series names in
// order. Writes DIR/data/NAME.dat and DIR/plots/NAME.{svg,png}. ylabel
// names the unit.
export function barPlot(dir, name, { title, ylabel, series, groups, log = false, width = 900, height = 480 }) {
  const rows = groups.map((g, i) => [String(i), ...series.flatMap(s => {
    const x = g.bars[s];
    return x && Number.isFinite(x.median) ? errorBar(x).map(v => v.toPrecision(6)) : ['NaN', 'NaN', 'NaN'];
  })]);
  if (!rows.length) return null;
  const file = writeData(dir, `${name}.dat`, [['#group', ...series.flatMap(s => [s.replace(/ /g, '_'), 'lo', 'hi'])], ...rows]);
  const values = rows.flatMap(r => r.slice(1).map(Number)).filter(v => Number.isFinite(v) && v > 0);
  const lay = groupLabels(groups.map(g => g.label), width);
  const xtics = `set xtics (${lay.labels.map((l, i) => `${ticLabel(l)} ${i}`).join(', ')}) scale 0`;
  const cols = series.map((s, i) =>
    `'${file}' using ${2 + 3 * i}:${3 + 3 * i}:${4 + 3 * i} ${series.length > 1 ? `title ${gpString(s)}` : 'notitle'}`);
  // The bottom margin (in lines): the labels' lines and, below them, the
  // legend's rows (gnuplot sizes neither when the labels are set by hand).
  const keyRows = series.length > 1 ? legendRows(series, width) : 0;
  const bmargin = lay.lines + 1.5 + (keyRows ? keyRows + 1 : 0) + (lay.commands.length ? maxLabel(groups) * 0.35 : 0);
  return draw(dir, name, width, height, `set bmargin ${bmargin.toFixed(1)}
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.8 border -1
set bars front
${log ? logAxis(values) : 'set yrange [0:*]'}
set ylabel ${gpString(ylabel)}
set grid ytics
set xrange [-0.5:${groups.length - 0.5}]
${xtics}
${lay.commands.join('\n')}
plot ${cols.join(', \\\n     ')}`, { title });
}
