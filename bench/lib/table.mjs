// The one table renderer: Markdown, columns aligned left ('l') or right ('r').
export function table(head, rows, align = '') {
  const a = i => (align[i] || (i ? 'r' : 'l'));
  const line = cells => '| ' + cells.map(c => (c === undefined || c === null ? '' : String(c))).join(' | ') + ' |';
  const out = [line(head), '|' + head.map((_, i) => (a(i) === 'r' ? '---:' : '---')).join('|') + '|'];
  for (const r of rows) out.push(line(r));
  return out.join('\n') + '\n';
}

// "1.23x", or "-" when either side is missing.
export function fmtRatio(x, digits = 2) {
  return Number.isFinite(x) ? `${x.toFixed(digits)}x` : '-';
}

export function fmtPct(x, digits = 1) {
  return Number.isFinite(x) ? `${(100 * x).toFixed(digits)}%` : '-';
}
