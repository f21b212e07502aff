// Where the text of an SVG that gnuplot wrote lies, and whether all of it
// is inside the picture: a text's box is estimated from its font size
// (width: characters x size x CHAR_WIDTH, height: the size), placed by its
// transform (translate, then rotate about that point) and text-anchor.
// lib/plot.mjs lays titles and labels out with the same estimate, and the
// plot tests hold every plot to it. As a command, it checks SVG files:
//   node bench/lib/svgtext.mjs FILE.svg...   (exit 1 when a text is cut)
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

// Of the font size, the width of one character: generous for sans-serif
// digits and lower case (about 0.55), so a box is rather too wide.
export const CHAR_WIDTH = 0.6;

const unescape = s => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"')
  .replace(/&apos;/g, "'").replace(/&#(\d+);/g, (_, n) => String.fromCodePoint(Number(n))).replace(/&amp;/g, '&');

// The picture's size: the viewBox, else width and height.
export function svgSize(svg) {
  const vb = svg.match(/viewBox="\s*([-\d.]+)[\s,]+([-\d.]+)[\s,]+([-\d.]+)[\s,]+([-\d.]+)\s*"/);
  if (vb) return { width: Number(vb[3]), height: Number(vb[4]) };
  const w = svg.match(/<svg[^>]*\swidth="([\d.]+)/), h = svg.match(/<svg[^>]*\sheight="([\d.]+)/);
  return { width: w ? Number(w[1]) : NaN, height: h ? Number(h[1]) : NaN };
}

// Every non-empty text: {text, size, x0, y0, x1, y1}, the box in the
// picture's coordinates. gnuplot writes each text as a <g> holding its
// transform, font-size and text-anchor around one <text>.
export function textBoxes(svg) {
  const boxes = [];
  const re = /<g\s+transform="translate\(([-\d.]+),([-\d.]+)\)(?:\s*rotate\(([-\d.]+)\))?"([^>]*)>\s*<text[^>]*>([\s\S]*?)<\/text>/g;
  for (let m; (m = re.exec(svg));) {
    const text = unescape(m[5].replace(/<[^>]*>/g, '')).replace(/^\s+|\s+$/g, '');
    if (!text) continue;
    const attrs = m[4];
    const size = Number((attrs.match(/font-size="([\d.]+)"/) || [])[1] || 12);
    const anchor = (attrs.match(/text-anchor="(\w+)"/) || [])[1] || 'start';
    const w = [...text].length * size * CHAR_WIDTH;
    const left = anchor === 'middle' ? -w / 2 : anchor === 'end' ? -w : 0;
    // Around the baseline: the ascent above it, a descent below.
    const corners = [[left, -size], [left + w, -size], [left, size * 0.25], [left + w, size * 0.25]];
    const a = (Number(m[3] || 0) * Math.PI) / 180, x = Number(m[1]), y = Number(m[2]);
    const pts = corners.map(([dx, dy]) => [x + dx * Math.cos(a) - dy * Math.sin(a), y + dx * Math.sin(a) + dy * Math.cos(a)]);
    boxes.push({ text, size, x0: Math.min(...pts.map(p => p[0])), x1: Math.max(...pts.map(p => p[0])),
                 y0: Math.min(...pts.map(p => p[1])), y1: Math.max(...pts.map(p => p[1])) });
  }
  return boxes;
}

// The texts whose box leaves the picture, each with how far (px).
export function clippedTexts(svg) {
  const { width, height } = svgSize(svg);
  return textBoxes(svg).map(b => ({ ...b, by: Math.max(-b.x0, b.x1 - width, -b.y0, b.y1 - height) }))
    .filter(b => b.by > 0.5);
}

// The texts whose box overlaps that of a text of `names` (an axis's label,
// the title): [{text, over}], over the text it lies on.
export function overlapping(svg, names) {
  const boxes = textBoxes(svg);
  const hit = (a, b) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
  const out = [];
  for (const a of boxes.filter(b => names.includes(b.text)))
    for (const b of boxes) if (b !== a && hit(a, b)) out.push({ text: b.text, over: a.text });
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let bad = 0;
  for (const file of process.argv.slice(2)) {
    for (const b of clippedTexts(fs.readFileSync(file, 'utf8'))) {
      bad++;
      console.log(`${file}: "${b.text}" leaves the picture by ${b.by.toFixed(0)} px`);
    }
  }
  process.exit(bad ? 1 : 0);
}
