// The dataset the experiments load and the lookup keys they ask for.
import fs from 'node:fs';
import path from 'node:path';

// Rows of the dataset, from the .meta file datasets/fetch writes beside it.
export function datasetRows(ctx) {
  try {
    const m = fs.readFileSync(ctx.dataset.replace(/\.csv$/, '.meta'), 'utf8').match(/^rows=(\d+)/m);
    if (m) return Number(m[1]);
  } catch { /* counted below */ }
  return fs.readFileSync(ctx.dataset, 'utf8').split('\n').filter(Boolean).length;
}

// The file of distinct 7-digit codes (one a line) for loadgen --keys:
// ken_all.keys beside the dataset, or made from its third column.
export function keysFile(ctx) {
  if (fs.existsSync(ctx.keys) && fs.statSync(ctx.keys).size > 0) return ctx.keys;
  const file = path.join(ctx.work, 'keys');
  const codes = new Set();
  for (const line of fs.readFileSync(ctx.dataset, 'utf8').split('\n')) {
    const m = line.match(/^[^,]*,[^,]*,"?(\d{7})"?,/);
    if (m) codes.add(m[1]);
  }
  fs.writeFileSync(file, [...codes].sort().join('\n') + '\n');
  return file;
}

export function countLines(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
}
