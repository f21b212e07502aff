// The one plot writer: gnuplot commands rendered as SVG and PNG into
// DIR/plots/NAME.{svg,png}, from data files the caller wrote.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

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
// later --only run), returning the path.
export function writeData(dir, name, rows) {
  const d = path.join(dir, 'data');
  fs.mkdirSync(d, { recursive: true });
  const file = path.join(d, name);
  fs.writeFileSync(file, rows.map(r => r.join(' ')).join('\n') + (rows.length ? '\n' : ''));
  return file;
}
