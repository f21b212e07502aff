// The plots (lib/plot.mjs, lib/spectrum.mjs) rendered by gnuplot into SVG
// and held to their text's geometry (lib/svgtext.mjs): every text's box
// (font size x characters x 0.6 wide) inside the picture, whatever the
// title's, labels' and legend's lengths; titles as written (an apostrophe
// too); every axis naming its unit; a log axis with more than two labels;
// the percentile spectrum from a real loadgen --hdr-log run against a
// small HTTP server. Run by `node --test bench/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { spawnSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { barPlot, draw, writeData, logAxis, gpString } from '../lib/plot.mjs';
import { drawSpectrum, percentiles } from '../lib/spectrum.mjs';
import { textBoxes, clippedTexts, overlapping } from '../lib/svgtext.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const build = path.resolve(root, process.env.ZB_BUILD || 'build');
const dir = path.join(build, 'test', 'plots');
fs.rmSync(dir, { recursive: true, force: true });
fs.mkdirSync(dir, { recursive: true });

const cell = m => ({ median: m, lo: m * 0.9, hi: m * 1.1, n: 10 });
const texts = svg => textBoxes(svg).map(b => b.text);

// The SVG at file fits: no text leaves it; ylabel and xlabel (if given)
// are there as written.
function fits(file, { ylabel, xlabel, title } = {}) {
  const svg = fs.readFileSync(file, 'utf8');
  const cut = clippedTexts(svg);
  assert.deepEqual(cut.map(b => `"${b.text}" by ${b.by.toFixed(0)} px`), [], `${file}: text cut`);
  const t = texts(svg);
  if (ylabel) assert.ok(t.includes(ylabel), `${file}: no y label '${ylabel}' in ${JSON.stringify(t)}`);
  if (xlabel) assert.ok(t.includes(xlabel), `${file}: no x label '${xlabel}'`);
  // no text (a legend's entry) over an axis's label
  const over = overlapping(svg, [xlabel, ylabel].filter(Boolean));
  assert.deepEqual(over.map(o => `"${o.text}" over "${o.over}"`), [], `${file}: texts overlap`);
  if (title) assert.equal(t.filter(x => x.length > 8 && title.includes(x)).join(' '), title, `${file}: the title, wrapped`);
  return svg;
}

const numbers = svg => texts(svg).filter(x => /^[\d,.]+%?$/.test(x));

test('the check finds a title gnuplot cuts at the edge', () => {
  const long = 'Lookups across a network: answered req/s against the RTT (c 10; bars: 95% CI of the median), and more';
  const file = draw(dir, 'cut', 500, 300, `set title ${gpString(long)}\nset key outside right\nplot x title 'a rather long legend entry'`);
  assert.ok(clippedTexts(fs.readFileSync(file, 'utf8')).length > 0);
});

test('bar chart, many series, long group labels: wrapped under their groups, legend below', () => {
  const series = ['loadgen', 'ab', 'wrk', 'h2load', 'loadgen-t2', 'wrk-t1'];
  const title = 'Load generators on nginx (a 400-byte file, as they come): answered req/s, bars: 95% CI of the median';
  const file = barPlot(dir, 'bars-wrapped', {
    title, ylabel: 'answered requests/s (log scale)', log: true, series,
    groups: ['c=1 keep-alive yes', 'c=10 keep-alive yes', 'c=100 keep-alive yes', 'c=1 keep-alive no', 'c=10 keep-alive no',
      'c=100 keep-alive no'].map((label, i) => ({ label, bars: Object.fromEntries(series.map((s, j) => [s, cell(12000 + 9000 * i + 900 * j)])) })),
  });
  const svg = fits(file, { ylabel: 'answered requests/s (log scale)', title });
  // A log axis within one decade still gets labels between its ends.
  assert.ok(numbers(svg).filter(x => /^\d/.test(x)).length >= 4, `too few y labels: ${numbers(svg)}`);
});

test('bar chart, words too long to wrap: slanted labels with the margins they need; an apostrophe kept', () => {
  const title = "The machine's own costs: µs per operation, bars: 95% CI of the median";
  const file = barPlot(dir, 'bars-slanted', {
    title, ylabel: 'µs (log scale)', log: true, series: ['µs'],
    groups: ['PHP-FPM persistent (pg_pconnect)', 'zipbench per-request via pgpool-II', 'agg_simple_report_by_prefecture',
      'fsync', 'TCP round trip'].map((label, i) => ({ label, bars: { 'µs': cell(3 * 10 ** i) } })),
  });
  fits(file, { ylabel: 'µs (log scale)', title });
});

test('a group label with a percent sign is printed as it is (gnuplot reads tic labels as formats)', () => {
  const file = barPlot(dir, 'bars-percent', {
    title: 'Seconds per query kind', ylabel: 's', series: ['s'],
    groups: ['sel_10pct_cl: 10% range, index', 'table_scan'].map((label, i) => ({ label, bars: { s: cell(i + 1) } })),
  });
  assert.ok(texts(fs.readFileSync(file, 'utf8')).some(t => t.includes('10% range')));
});

test('bar chart on a linear axis, one series: no legend', () => {
  const file = barPlot(dir, 'bars-linear', {
    title: 'Bulk loading: rows per second, zipbench against the native loaders and pgloader; bars: 95% CI of the median',
    ylabel: 'rows/s', series: ['rows/s'],
    groups: ['sqlite/postal', 'pg/postal', 'innodb/postal', 'myisam/postal'].map((label, i) => ({ label, bars: { 'rows/s': cell(1e5 * (i + 1)) } })),
  });
  const svg = fits(file, { ylabel: 'rows/s' });
  assert.ok(!texts(svg).includes('rows/s ') && texts(svg).filter(t => t === 'rows/s').length === 1, 'a legend for one series');
});

test('lines with error bars, a long title and a legend of long entries below', () => {
  const labels = ['pg pooled', 'pg per-request via pgbouncer', 'PHP-FPM pg per-request via pgpool-II', 'innodb per-request',
    'PHP-FPM pg persistent', 'pg pipelined', 'innodb pooled'];
  const rows = [0, 0.2, 1, 5].map((rtt, k) => [rtt, ...labels.flatMap((_, i) => { const m = 5000 / (i + 1) / (k + 1); return [m, m * 0.9, m * 1.1]; })]);
  const file = writeData(dir, 'lines.dat', rows);
  const title = 'Lookups across a network: answered req/s against the RTT (c 10; bars: 95% CI of the median)';
  const svg = fits(draw(dir, 'lines', 800, 460, [
    "set xlabel 'RTT (ms), through the relay'", "set ylabel 'answered requests/s (log scale)'",
    logAxis(rows.flatMap(r => r.slice(1))), 'set grid',
    'plot ' + labels.map((l, i) => `'${file}' using 1:${3 * i + 2}:${3 * i + 3}:${3 * i + 4} with yerrorlines title ${gpString(l)}`).join(', '),
  ].join('\n'), { title, legend: labels }), { xlabel: 'RTT (ms), through the relay', ylabel: 'answered requests/s (log scale)', title });
  for (const l of labels) assert.ok(texts(svg).includes(l), `legend entry ${l}`);
  // The legend is below the x axis's label, not over it.
  const boxes = textBoxes(svg), xl = boxes.find(b => b.text === 'RTT (ms), through the relay');
  for (const l of labels) assert.ok(boxes.find(b => b.text === l).y0 >= xl.y1 - 1, `${l} overlaps the x label`);
});

// A small HTTP server whose answers take longer now and then, on the first
// free port from 18486, for a real loadgen run.
async function server() {
  let n = 0;
  const srv = http.createServer((req, res) => {
    const wait = ++n % 200 === 0 ? 5 : 0;
    setTimeout(() => res.end('hello'), wait);
  });
  for (let port = 18486; port < 18586; port++) {
    const ok = await new Promise(resolve => {
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (ok) return { srv, port };
  }
  throw new Error('no free port in 18486-18585');
}

function loadgenRun(port, c, hdrLog) {
  return new Promise((resolve, reject) => {
    const p = spawn(path.join(build, 'bin', 'loadgen'), ['-q', '-k', '-c', String(c), '-n', '3000', '--hdr-log', hdrLog,
      `http://127.0.0.1:${port}/`], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', d => { err += d; });
    p.on('exit', code => (code === 0 ? resolve() : reject(new Error(`loadgen exit ${code}: ${err}`))));
  });
}

test('the percentile spectrum of real loadgen --hdr-log runs: exact, one line per cell, fits', async () => {
  const { srv, port } = await server();
  const logs = [1, 4].map(c => path.join(dir, `c${c}.hlog`));
  try {
    await loadgenRun(port, 1, logs[0]);
    await loadgenRun(port, 4, logs[1]);
  } finally {
    srv.close();
  }
  // The distribution: rising, from p 0 to the largest value at p 1, as
  // loadgen merge's own percentiles have it.
  const rows = percentiles(logs[1]);
  assert.equal(rows[0].p, 0);
  assert.equal(rows.at(-1).p, 1);
  assert.equal(rows.at(-1).count, 3000);
  for (let i = 1; i < rows.length; i++) assert.ok(rows[i].ms >= rows[i - 1].ms && rows[i].x > rows[i - 1].x);
  const merged = JSON.parse(spawnSync(path.join(build, 'bin', 'loadgen'), ['merge', '--json', logs[1]], { encoding: 'utf8' }).stdout);
  // merge's p50 is a row; its p99 lies between the rows around 0.99.
  const at = p => rows.find(r => r.p >= p).ms, before = p => rows.filter(r => r.p < p).at(-1).ms;
  assert.ok(Math.abs(at(0.5) - merged.latency_us.p50 / 1000) <= 0.0011, `p50 ${at(0.5)} ms, merge ${merged.latency_us.p50} µs`);
  const p99 = merged.latency_us.p99 / 1000;
  assert.ok(before(0.99) <= p99 + 0.0011 && p99 <= at(0.99) + 0.0011, `p99 ${p99} ms not within ${before(0.99)}-${at(0.99)}`);
  // The same largest value, rounded twice: the percentile list prints ms
  // to 3 decimals (a µs: +-0.5 µs), the JSON µs to 1 decimal (+-0.05 µs),
  // so the two agree within 0.55 µs (59.096 ms beside 59096.5 µs).
  const maxUs = rows.at(-1).ms * 1000;
  assert.ok(Math.abs(maxUs - merged.latency_us.max) <= 0.55 + 1e-6, `max ${rows.at(-1).ms} ms, merge ${merged.latency_us.max} µs`);

  const title = 'Latency by percentile: a node HTTP server, loadgen -k at c 1 and c 4, closed loop (no --rate)';
  const file = drawSpectrum(dir, 'spectrum', title, [{ label: 'c=1', hdrLog: logs[0] }, { label: 'c=4', hdrLog: logs[1] }]);
  const svg = fits(file, { xlabel: 'percentile (log scale of 1/(1-p))', title });
  const t = texts(svg);
  assert.ok(t.some(x => /^latency \(ms/.test(x)), `no y label in ${JSON.stringify(t)}`);
  for (const tic of ['0%', '90%', '99%', '99.9%']) assert.ok(t.includes(tic), `no tic ${tic}`);
  assert.ok(t.includes('c=1') && t.includes('c=4'), 'one line per cell, in the legend');
  const data = fs.readFileSync(path.join(dir, 'data', 'spectrum.dat'), 'utf8');
  assert.equal(data.split('\n\n\n').length, 2, 'one data block per cell');
});

test('the recorded plots drawn again (bench/replot.mjs): every text inside, no legend over a label, titles true to the data', () => {
  const copy = path.join(dir, 'recorded');
  fs.rmSync(copy, { recursive: true, force: true });
  fs.mkdirSync(path.join(copy, 'data'), { recursive: true });
  for (const f of ['spectrum.dat', 'poolsize.dat', 'poolsize.json', 'network.dat'])
    fs.copyFileSync(path.join(root, 'docs', 'data', f), path.join(copy, 'data', f));
  const r = spawnSync(process.execPath, [path.join(root, 'bench', 'replot.mjs'), copy], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const plot = n => path.join(copy, 'plots', `${n}.svg`);
  fits(plot('spectrum'), { xlabel: 'percentile (log scale of 1/(1-p))' });
  const network = fits(plot('network'), { xlabel: 'RTT (ms), through the relay', ylabel: 'answered requests/s (log scale)' });
  // eleven lines, eleven colours
  const colours = new Set([...network.matchAll(/rgb\(\s*\d+,\s*\d+,\s*\d+\)/g)].map(m => m[0].replace(/\s/g, '')));
  assert.ok(colours.size >= 11, `only ${colours.size} colours: ${[...colours]}`);
  // The recorded pool sizes have 5 runs a cell: no interval, and the title says so.
  const pool = fits(plot('poolsize'), { xlabel: 'pool size (connections in all)', ylabel: 'answered requests/s' });
  assert.match(texts(pool).join(' '), /no bars: too few runs a cell for a 95%/);
  // With intervals in the data, the bars are promised.
  const rows = fs.readFileSync(path.join(copy, 'data', 'poolsize.dat'), 'utf8').split('\n')
    .map(l => (l && !l.startsWith('#') ? l.split(' ').map((v, i) => (i % 4 === 2 ? v * 0.97 : i % 4 === 3 ? v * 1.03 : v)).join(' ') : l));
  fs.writeFileSync(path.join(copy, 'data', 'poolsize.dat'), rows.join('\n'));
  spawnSync(process.execPath, [path.join(root, 'bench', 'replot.mjs'), copy], { encoding: 'utf8' });
  assert.match(texts(fs.readFileSync(plot('poolsize'), 'utf8')).join(' '), /bars: 95% CI of the median/);
});
