// Ranking figures you can trust: a winner is named only where the 95%
// interval of the same-round ratio of two cells excludes 1 (the runs of
// one round share the machine's state, so their ratio cancels what drifts
// between rounds). Elsewhere: "no clear difference".
import { summarize } from './stats.mjs';
import { fmtSameRound } from './table.mjs';
import { roundRatios } from './cells.mjs';

// {value, lo, hi, n} of a/b from the rounds in which both ran (Cells'
// sameRoundRatio), lo/hi NaN where the rounds are too few for an interval.
export function ratioOf(cells, a, b) {
  const r = cells.sameRoundRatio(a, b);
  const s = r.summary;
  return { value: r.value, lo: s ? s.lo : NaN, hi: s ? s.hi : NaN, n: s ? s.n : 0 };
}

// "3.41x [3.20-3.66]" of a ratioOf: with too few rounds for an interval,
// the count ("3.41x (n=4)"); '-' when there is none.
export function fmtRatioCI(r) {
  if (!r || !Number.isFinite(r.value)) return '-';
  return Number.isFinite(r.lo) ? `${r.value.toFixed(2)}x [${r.lo.toFixed(2)}-${r.hi.toFixed(2)}]` : `${r.value.toFixed(2)}x (n=${r.n})`;
}

// 'a' where a is faster than b (the interval above 1), 'b' where slower,
// '~' where the interval holds 1 or there is none.
export function verdict(r) {
  if (!Number.isFinite(r.lo)) return '~';
  return r.lo > 1 ? 'a' : r.hi < 1 ? 'b' : '~';
}

// The keys ordered by median, fastest first, each with the relation to
// the next one: [{key, next: '>' | '~', ratio}], the last with next null.
// '>' only where the key's same-round ratio over the next excludes 1.
export function ranking(cells, keys) {
  const here = keys.filter(k => cells.get(k) && cells.get(k).values.length)
    .sort((x, y) => cells.median(y) - cells.median(x));
  return here.map((key, i) => {
    if (i === here.length - 1) return { key, next: null, ratio: null };
    const r = ratioOf(cells, key, here[i + 1]);
    return { key, next: verdict(r) === 'a' ? '>' : '~', ratio: r };
  });
}

// "a > b ~ c": a ranking as text, each key through label().
export function rankingText(rank, label = k => k) {
  return rank.map(x => label(x.key) + (x.next ? ` ${x.next} ` : '')).join('');
}

// The median and 95% interval of one number the runs of a cell carried
// beside its rate (extras: serverUs, dbUs, clientUs...).
export function extraSummary(cell, field) {
  const xs = (cell?.extras || []).map(e => e && e[field]).filter(Number.isFinite);
  if (!xs.length) return { median: NaN, lo: NaN, hi: NaN, n: 0 };
  const s = summarize(xs);
  return { median: s.median, lo: s.lo, hi: s.hi, n: s.n, halfWidth: s.halfWidth };
}

// The same-round ratio a/b of one number the runs carried beside their
// figure (extras: serverUs, p99Us...): {value, lo, hi, n}, as ratioOf.
export function extraRatio(cells, a, b, field) {
  const pick = k => { const c = cells.get(k); return c && { values: c.extras.map(e => e[field]), rounds: c.rounds }; };
  const x = pick(a), y = pick(b);
  const r = x && y ? roundRatios(x, y) : [];
  if (!r.length) return { value: NaN, lo: NaN, hi: NaN, n: 0 };
  const s = summarize(r);
  return { value: s.median, lo: s.lo, hi: s.hi, n: s.n };
}

// A same-round ratio as a table prints it, "(no clear difference)" where
// its 95% interval holds 1 (or there is none).
export function ratioText(r) {
  const s = r.summary;
  const v = s && Number.isFinite(s.lo) ? verdict({ lo: s.lo, hi: s.hi }) : '~';
  return `${fmtSameRound(r)}${v === '~' ? ' (no clear difference)' : ''}`;
}
