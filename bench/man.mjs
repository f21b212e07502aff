// Man pages from the help texts (make man): build/man/zipbench.1 from
// `./zipbench help`, and zipbench-CMD.1 from each command's --help, so the
// page and the help never disagree. Laid out as man pages are: NAME, then
// SYNOPSIS (the help's "Usage:" lines, or a script's first lines of
// invocations), DESCRIPTION, then a section for each line of the help in
// capitals (OPTIONS...) or ending in ':' at the margin (Options:). Prose
// (lines at the margin) is filled to the reader's width; indented lines
// (options, examples, tables) keep their layout, a line too long for 80
// columns wrapped under its own text. roff's special characters are
// escaped. `make install` puts the pages where man finds them
// (man zipbench-run); in the tree: man -l build/man/zipbench-run.1.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// The columns a preformatted line may take: 80, less man's indent of 7.
export const NF_WIDTH = 73;

const esc = line => line.replace(/\\/g, '\\e').replace(/^([.'])/, '\\&$1');
const isHeading = line => /^[A-Z][A-Z ]+$/.test(line.trim()) && line === line.trimStart() ||
                          /^[A-Z][A-Za-z ()]*:$/.test(line);

// A preformatted line in lines of at most width columns: broken at
// spaces, each further line indented to where the first one's text
// starts (an option's description, else its own indent and 4 more).
export function wrapLine(line, width = NF_WIDTH) {
  if (line.length <= width) return [line];
  const lead = line.length - line.trimStart().length;
  const desc = /^(\s*\S.*?\s{2,})\S/.exec(line);
  const hang = ' '.repeat(desc && desc[1].length <= 40 ? desc[1].length : lead + 4);
  const out = [];
  let text = line;
  while (text.length > width) {
    const start = text.length - text.trimStart().length;   // never cut in the indent
    let cut = text.lastIndexOf(' ', width);
    if (cut <= start) cut = text.indexOf(' ', width);     // a word longer than the line
    if (cut < 0) break;
    out.push(text.slice(0, cut).trimEnd());
    text = hang + text.slice(cut + 1).trimStart();
  }
  out.push(text);
  return out;
}

// The synopsis of a help text and the rest of it: the "Usage:" line and
// the indented ones after it; else the first block of lines that invoke
// one of names (scripts/db start..., their continuation lines with it).
export function splitSynopsis(text, names) {
  const lines = text.replace(/\s+$/, '').split('\n');
  const first = lines.findIndex(l => l.trim() !== '');
  if (first >= 0 && /^usage:\s/i.test(lines[first])) {
    const m = /^usage:\s+/i.exec(lines[first]);
    const syn = [lines[first].slice(m[0].length)];
    let i = first + 1;
    for (; i < lines.length && /^\s+\S/.test(lines[i]); i++) syn.push(lines[i].slice(Math.min(m[0].length, lines[i].length - lines[i].trimStart().length)));
    return { synopsis: syn, rest: [...lines.slice(0, first), ...lines.slice(i)] };
  }
  const invokes = l => names.some(n => l.trim().startsWith(`${n} `) || l.trim() === n);
  const at = lines.findIndex(invokes);
  if (at < 0) return { synopsis: [], rest: lines };
  let end = at;
  while (end < lines.length && lines[end].trim() !== '') end++;
  const block = lines.slice(at, end);
  const lead = Math.min(...block.filter(invokes).map(l => l.length - l.trimStart().length));
  return { synopsis: block.map(l => l.slice(Math.min(lead, l.length - l.trimStart().length))), rest: [...lines.slice(0, at), ...lines.slice(end)] };
}

// One page: name (zipbench-run), its one-line summary, the help text, and
// the names a script's synopsis lines begin with.
export function page(name, summary, text, { version, date = new Date().toISOString().slice(0, 10), names = [] } = {}) {
  const lines = [`.TH ${name.toUpperCase()} 1 ${date} "zipbench ${version}" "zipbench manual"`, '.nh', '.ad l'];
  const own = text.split('\n').some(l => l.trim() === 'NAME');
  const { synopsis, rest } = own ? { synopsis: [], rest: text.replace(/\s+$/, '').split('\n') } : splitSynopsis(text, names);
  if (!own) {
    lines.push('.SH NAME', `${esc(name)} \\- ${esc(summary)}`);
    if (synopsis.length) lines.push('.SH SYNOPSIS', '.nf', ...synopsis.flatMap(l => wrapLine(l)).map(esc), '.fi');
    lines.push('.SH DESCRIPTION');
  }
  // The body in blocks: a heading, prose (lines at the margin: filled,
  // one paragraph a block) or preformatted lines (indented: their common
  // indent dropped, man's own stands for it; blank lines inside kept).
  let body = rest;
  while (body.length && body[0].trim() === '') body = body.slice(1);
  const blocks = [];
  for (const raw of body) {
    const last = blocks.at(-1);
    if (isHeading(raw)) blocks.push({ kind: 'heading', lines: [raw] });
    else if (raw.trim() === '') { if (last && last.kind === 'nf') last.lines.push(''); else if (last) last.closed = true; }
    else if (raw === raw.trimStart()) {
      if (last && last.kind === 'fill' && !last.closed) last.lines.push(raw);
      else blocks.push({ kind: 'fill', lines: [raw] });
    } else if (last && last.kind === 'nf') last.lines.push(raw);
    else blocks.push({ kind: 'nf', lines: [raw] });
  }
  for (const b of blocks) {
    if (b.kind === 'heading') { lines.push(`.SH ${esc(b.lines[0].replace(/:$/, '').trim().toUpperCase())}`); continue; }
    if (b.kind === 'fill') { lines.push('.PP', ...b.lines.map(esc)); continue; }
    while (b.lines.at(-1) === '') b.lines.pop();
    const drop = Math.min(...b.lines.filter(Boolean).map(l => l.length - l.trimStart().length));
    lines.push('.nf', ...b.lines.flatMap(l => (l ? wrapLine(l.slice(drop)) : [''])).map(esc), '.fi');
  }
  lines.push('.SH SEE ALSO', 'zipbench(1), and the docs/ folder of the tree: README.md, docs/*.md');
  return lines.join('\n') + '\n';
}

// Every page into dir: zipbench.1 and zipbench-CMD.1 for each command of
// `./zipbench help`. Returns the files written.
export function writePages(dir, root) {
  const version = fs.readFileSync(path.join(root, 'VERSION'), 'utf8').trim();
  const door = path.join(root, 'zipbench');
  const helpOf = args => {
    const r = spawnSync(door, args, { encoding: 'utf8', cwd: root });
    if (r.status !== 0) throw new Error(`./zipbench ${args.join(' ')}: exit ${r.status}: ${r.stderr.trim()}`);
    return r.stdout;
  };
  fs.mkdirSync(dir, { recursive: true });
  const index = helpOf(['help']);
  const files = [path.join(dir, 'zipbench.1')];
  fs.writeFileSync(files[0], page('zipbench', 'which database and connection strategy serves a web app fastest', index,
                                  { version, names: ['./zipbench', 'zipbench'] }));
  for (const m of index.matchAll(/^ {2}([a-z][\w-]*) +(.*)$/gm)) {
    const file = path.join(dir, `zipbench-${m[1]}.1`);
    // a script's help names it scripts/NAME; a program's, by its own name
    const names = [`scripts/${m[1]}`, `./zipbench ${m[1]}`, `zipbench ${m[1]}`, m[1]];
    fs.writeFileSync(file, page(`zipbench-${m[1]}`, m[2], helpOf(['help', m[1]]), { version, names }));
    files.push(file);
  }
  return files;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const out = path.resolve(process.argv[2] || path.join(root, 'build/man'));
  const files = writePages(out, root);
  const rel = path.relative(process.cwd(), out) || '.';
  console.log(`man: ${files.length} pages in ${rel} (man -l ${rel}/zipbench-run.1; make install puts them where man finds them)`);
}
