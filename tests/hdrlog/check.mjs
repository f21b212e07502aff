// Reads loadgen --hdr-log files with the reference HdrHistogram decoder
// (npm's hdr-histogram-js, installed by `make hdrjs` into $ZB_HDRJS) and
// prints what it finds as one JSON object, for tests/test_loadgen.c to
// compare with loadgen's own report:
//   node tests/hdrlog/check.mjs LOG...
// The untagged interval histograms of every log are added into one; the
// tagged ones (Tag=connect ...) are loadgen's whole-run extras and are
// only counted. Values are reported in microseconds.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

const dir = process.env.ZB_HDRJS;
if (!dir) {
  console.error('check.mjs: ZB_HDRJS is not set (make hdrjs installs the decoder there)');
  process.exit(2);
}
const require = createRequire(resolve(dir, 'package.json'));
const hdr = require('hdr-histogram-js');

let sum = null;
const perInterval = [];
let tagged = 0;
for (const file of process.argv.slice(2)) {
  const reader = new hdr.HistogramLogReader(readFileSync(file, 'utf8'));
  for (let h; (h = reader.nextIntervalHistogram()) !== null;) {
    if (h.tag !== 'NO TAG') {
      tagged++;
      continue;
    }
    perInterval.push(h.totalCount);
    if (!sum) {
      sum = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: h.highestTrackableValue,
                        numberOfSignificantValueDigits: h.numberOfSignificantValueDigits,
                        bitBucketSize: 64 });
    }
    sum.add(h);
  }
}
const us = (ns) => ns / 1000;
console.log(JSON.stringify({
  intervals: perInterval.length,
  per_interval: perInterval,
  tagged,
  count: sum ? sum.totalCount : 0,
  p50_us: sum ? us(sum.getValueAtPercentile(50)) : 0,
  p90_us: sum ? us(sum.getValueAtPercentile(90)) : 0,
  p99_us: sum ? us(sum.getValueAtPercentile(99)) : 0,
  max_us: sum ? us(sum.maxValue) : 0,
}));
