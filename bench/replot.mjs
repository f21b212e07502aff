#!/usr/bin/env node
// Draws plots again from their recorded data, measuring nothing: the
// latency spectrum, the pool size and the network plots of DIR/plots
// (default docs) from DIR/data, with the plot code of today (the
// experiments' own plot functions), so that a change of layout reaches the
// recorded figures without a new run.
//   node bench/replot.mjs [DIR]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { plotSpectrum } from './lib/spectrum.mjs';
import { SPECTRUM_TITLE } from './experiments/server.mjs';
import { plot as plotPoolsize } from './experiments/poolsize.mjs';
import { plot as plotNetwork } from './experiments/network.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.resolve(process.argv[2] || path.join(root, 'docs'));
const data = name => path.join(dir, 'data', name);
const drawn = [];
if (fs.existsSync(data('spectrum.dat'))) { plotSpectrum(dir, 'spectrum', SPECTRUM_TITLE, data('spectrum.dat')); drawn.push('spectrum'); }
if (fs.existsSync(data('poolsize.dat'))) {
  const cells = fs.existsSync(data('poolsize.json')) ? JSON.parse(fs.readFileSync(data('poolsize.json'), 'utf8')) : {};
  const defaults = Object.fromEntries(Object.entries(cells).filter(([k, c]) => / default$/.test(k) && Number.isFinite(c.median))
    .map(([k, c]) => [k.replace(/ default$/, ''), c.median]));
  plotPoolsize(dir, data('poolsize.dat'), defaults);
  drawn.push('poolsize', 'poolsize-p99');
}
// the network plot is at c 10 (the recorded run's levels hold it)
if (fs.existsSync(data('network.dat'))) { plotNetwork(dir, data('network.dat'), 10); drawn.push('network'); }
console.log(`replot: ${drawn.map(n => `${n}.svg`).join(', ') || 'nothing'} in ${path.relative(process.cwd(), path.join(dir, 'plots')) || '.'}`);
