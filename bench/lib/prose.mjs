// Markdown prose wrapped to a width, as a person would write it: every
// line of a paragraph or list item at most WIDTH characters where a space
// allows, tables, headings, images and fenced code left as they are. The
// rendered page is the same (a single newline joins a paragraph).
export const WIDTH = 100;

export function wrapProse(text, width = WIDTH) {
  let fenced = false;
  const out = [];
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced || /^\s*```/.test(line) || line.length <= width || /^\s*(\||#|!\[)/.test(line)) {
      out.push(line);
      continue;
    }
    const hardBreak = / {2}$/.test(line) ? '  ' : '';
    const lead = line.match(/^(\s*)([-*] |\d+\. )?/);
    const indent = lead[1] + ' '.repeat((lead[2] || '').length);
    let rest = line.trimEnd(), first = true;
    while (rest.length > width) {
      let cut = rest.lastIndexOf(' ', width);
      if (cut <= (first ? lead[0].length : indent.length)) cut = rest.indexOf(' ', width);  // a long word, whole
      if (cut < 0) break;
      out.push(rest.slice(0, cut));
      rest = indent + rest.slice(cut + 1).trimStart();
      first = false;
    }
    out.push(rest + hardBreak);
  }
  return out.join('\n');
}
