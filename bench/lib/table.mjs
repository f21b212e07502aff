// The one table renderer: Markdown, columns aligned left ('l') or right
// ('r'), padded so that the text reads as a table too (a terminal, a diff).
export function table(head, rows, align = '') {
  const a = i => (align[i] || (i ? 'r' : 'l'));
  const text = c => (c === undefined || c === null ? '' : String(c));
  const width = head.map((h, i) => Math.max(3, text(h).length, ...rows.map(r => text(r[i]).length)));
  const pad = (c, i) => (a(i) === 'r' ? text(c).padStart(width[i]) : text(c).padEnd(width[i]));
  const line = cells => '| ' + head.map((_, i) => pad(cells[i], i)).join(' | ') + ' |';
  const rule = '|' + head.map((_, i) => (a(i) === 'r' ? '-'.repeat(width[i] + 1) + ':' : '-'.repeat(width[i] + 2))).join('|') + '|';
  return [line(head), rule, ...rows.map(line)].join('\n') + '\n';
}

// "1.23x", or "-" when either side is missing.
export function fmtRatio(x, digits = 2) {
  return Number.isFinite(x) ? `${x.toFixed(digits)}x` : '-';
}

// "3.41x [3.20-3.66]": a same-round ratio with its 95% interval (or the
// range and count of its rounds where they are too few).
export function fmtSameRound(r) {
  const s = r.summary;
  if (!s) return `${fmtRatio(r.value)} (medians of separate rounds)`;
  if (!Number.isNaN(s.lo)) return `${fmtRatio(r.value)} [${s.lo.toFixed(2)}-${s.hi.toFixed(2)}]`;
  return `${fmtRatio(r.value)} (${s.n} round${s.n === 1 ? '' : 's'})`;
}

export function fmtPct(x, digits = 1) {
  return Number.isFinite(x) ? `${(100 * x).toFixed(digits)}%` : '-';
}
