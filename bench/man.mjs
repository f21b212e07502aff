// Man pages from the help texts (make man): build/man/zipbench.1 from
// `./zipbench help`, and zipbench-CMD.1 from each command's --help, so the
// page and the help never disagree. A help text's lines in capitals (NAME,
// SYNOPSIS, OPTIONS...) or ending in ':' at the margin (Options:) become
// sections; the rest is kept as it is laid out (.nf), roff's special
// characters escaped. Read one with `man -l build/man/zipbench-run.1`.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.resolve(process.argv[2] || path.join(root, 'build/man'));
const version = fs.readFileSync(path.join(root, 'VERSION'), 'utf8').trim();
const door = path.join(root, 'zipbench');

function helpOf(args) {
  const r = spawnSync(door, args, { encoding: 'utf8', cwd: root });
  if (r.status !== 0) throw new Error(`./zipbench ${args.join(' ')}: exit ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

// roff: a backslash is \e; a line starting with . or ' is protected by \&.
const esc = line => line.replace(/\\/g, '\\e').replace(/^([.'])/, '\\&$1');
const isHeading = line => /^[A-Z][A-Z ]+$/.test(line.trim()) && line === line.trimStart() ||
                          /^[A-Z][A-Za-z ()]*:$/.test(line);

function page(name, summary, text) {
  const date = new Date().toISOString().slice(0, 10);
  const lines = [`.TH ${name.toUpperCase()} 1 ${date} "zipbench ${version}" "zipbench manual"`];
  let body = text.replace(/\s+$/, '').split('\n');
  if (!body.some(l => l.trim() === 'NAME')) lines.push('.SH NAME', `${esc(name)} \\- ${esc(summary)}`, '.SH DESCRIPTION');
  let pre = false;
  for (const raw of body) {
    if (isHeading(raw)) {
      if (pre) lines.push('.fi');
      lines.push(`.SH ${esc(raw.replace(/:$/, '').trim().toUpperCase())}`, '.nf');
      pre = true;
      continue;
    }
    if (!pre) { lines.push('.nf'); pre = true; }
    lines.push(raw === '' ? '' : esc(raw));
  }
  if (pre) lines.push('.fi');
  lines.push('.SH SEE ALSO', 'zipbench(1), and the docs/ folder of the tree: README.md, docs/*.md');
  return lines.join('\n') + '\n';
}

fs.mkdirSync(out, { recursive: true });
const index = helpOf(['help']);
fs.writeFileSync(path.join(out, 'zipbench.1'), page('zipbench', 'which database and connection strategy serves a web app fastest', index));
let n = 1;
for (const m of index.matchAll(/^ {2}([a-z][\w-]*) +(.*)$/gm)) {
  fs.writeFileSync(path.join(out, `zipbench-${m[1]}.1`), page(`zipbench-${m[1]}`, m[2], helpOf(['help', m[1]])));
  n++;
}
console.log(`man: ${n} pages in ${path.relative(process.cwd(), out) || '.'} (man -l ${path.relative(process.cwd(), out)}/zipbench-run.1)`);
