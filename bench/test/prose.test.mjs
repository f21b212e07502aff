import test from 'node:test';
import assert from 'node:assert/strict';
import { wrapProse } from '../lib/prose.mjs';

test('prose wraps at the width, lists keep their indent, tables and code stay', () => {
  const long = 'word '.repeat(50).trim();
  const text = [long, `- ${long}`, `| ${long} |`, '```', long, '```', `# ${long}`, `${long}  `].join('\n');
  const lines = wrapProse(text, 40).split('\n');
  const fence = lines.indexOf('```');
  for (const l of lines.slice(0, fence)) if (!l.startsWith('|')) assert.ok(l.length <= 40, l);
  assert.ok(lines.includes(`| ${long} |`) && lines.includes(long) && lines.includes(`# ${long}`));
  const item = lines.findIndex(l => l.startsWith('- '));
  assert.ok(lines[item + 1].startsWith('  word'));
  assert.ok(lines[lines.length - 1].endsWith('word  '), 'a hard break stays at the end');
  assert.equal(wrapProse(text, 40).replace(/\s+/g, ' '), text.replace(/\s+/g, ' ').replace(/ {2}$/, '  ').replace(/\s+/g, ' '));
});

test('a word longer than the width is left whole', () => {
  const w = 'x'.repeat(60);
  assert.equal(wrapProse(`a ${w} b`, 20), `a\n${w}\nb`);
});
