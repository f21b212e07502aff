// The guides read as a reference: no issue numbers or "NOT met" lines (the
// measured history is DECISIONS.md's), no line over 300 characters outside
// a table, no <br> in a table; every study they name is cited in the
// README's References; every port variable of the scripts, the bench and
// the config is in the README's port table. Run by `node --test bench/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = f => fs.readFileSync(path.join(root, f), 'utf8');
const GUIDES = ['README.md', 'docs/LOADER.md', 'docs/SERVER.md', 'docs/LOADGEN.md', 'docs/BENCH.md',
  'docs/RELIABILITY.md', 'docs/RELIABILITY-server.md', 'docs/RELIABILITY-tools.md', 'docs/SCALING.md', 'docs/DESIGN.md', 'bench/README.md'];
// The bench's output, held to the same rules.
const RESULTS = fs.readdirSync(path.join(root, 'docs')).filter(f => /^RESULTS.*\.md$/.test(f)).map(f => `docs/${f}`);
// Every doc: the hand-written ones and the bench's.
const DOCS = [...GUIDES, 'docs/DECISIONS.md', ...RESULTS];

// Lines outside fenced code blocks, with their numbers.
function prose(text) {
  let fenced = false;
  return text.split('\n').map((line, i) => ({ line, n: i + 1 })).filter(({ line }) => {
    if (/^\s*```/.test(line)) { fenced = !fenced; return false; }
    return !fenced;
  });
}

test('the guides and results hold no issue numbers, "NOT met" lines or tries before a fix', () => {
  const found = [];
  for (const f of [...GUIDES, ...RESULTS])
    for (const { line, n } of prose(read(f)))
      if (/\bissues? #?\d+|\bNOT met\b|tries before the fix|one run gave/i.test(line)) found.push(`${f}:${n}: ${line.trim()}`);
  assert.deepEqual(found, []);
});

test('no doc line over 300 characters outside a table, no <br> in a table', () => {
  const found = [];
  for (const f of DOCS)
    for (const { line, n } of prose(read(f))) {
      const table = line.trimStart().startsWith('|');
      if (!table && line.length > 300) found.push(`${f}:${n}: ${line.length} characters`);
      if (table && /<br\s*\/?>/i.test(line)) found.push(`${f}:${n}: <br> in a table cell`);
    }
  assert.deepEqual(found, []);
});

test('every study the docs name is cited in the README, and the citations are linked', () => {
  const readme = read('README.md');
  const refs = readme.slice(readme.indexOf('\n## References'));
  assert.ok(refs.length > 20, 'README.md has no References section');
  const studies = { 'The 2008 benchmark': 'Ohgaki', 'The 2001 speed comparison': 'Hipp', 'The 2022 test': 'Davies',
    'The 2002 OSDB run': 'Koizar', 'The 2005 SQLite post': 'Tegel' };
  for (const [name, author] of Object.entries(studies)) {
    const entry = refs.split(/\n\d+\. /).find(e => e.includes(name));
    assert.ok(entry, `no reference for ${name}`);
    assert.ok(entry.includes(author) && /\b(19|20)\d\d\b/.test(entry), `${name}: author and year`);
  }
  // A guide that names one links to the References.
  for (const f of GUIDES.filter(g => g !== 'README.md')) {
    const text = read(f);
    if (/\b(2008 benchmark|2001 speed|2001 SQLite vs PostgreSQL)/.test(text))
      assert.ok(text.includes('README.md#references'), `${f} names a study without citing it`);
  }
});

test("the README's port table has every port variable of the scripts, the bench and the config", () => {
  const readme = read('README.md');
  const table = readme.slice(readme.indexOf('\n## Ports'), readme.indexOf('\n## The parts'));
  const vars = new Set();
  const walk = d => {
    for (const e of fs.readdirSync(path.join(root, d), { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) { if (e.name !== 'node_modules') walk(p); continue; }
      for (const m of read(p).matchAll(/ZB_[A-Z_]*PORT\b/g)) vars.add(m[0]);
    }
  };
  for (const d of ['scripts', 'bench', 'conf']) walk(d);
  const missing = [...vars].filter(v => !table.includes(`\`${v}\``));
  assert.deepEqual(missing, [], 'ports missing from the README\'s table');
});
