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

// The file's non-empty lines, read a MiB at a time (a file of 10^7 rows
// is 1.4 GB, past the longest string Node makes).
export function countLines(file) {
  const fd = fs.openSync(file, 'r'), buf = Buffer.alloc(1 << 20);
  let lines = 0, inLine = false;
  try {
    for (let n; (n = fs.readSync(fd, buf, 0, buf.length, null)) > 0;)
      for (let i = 0; i < n; i++)
        if (buf[i] === 10) { if (inLine) lines++; inLine = false; } else inLine = true;
  } finally {
    fs.closeSync(fd);
  }
  return lines + (inLine ? 1 : 0);
}
