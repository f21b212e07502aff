// What RESULTS.md opens with: the answer on one screen, made from the
// data the experiments wrote (DIR/data/*.json, lib/cells.mjs writeCells),
// never typed by hand. Each line says "not measured in this run" where its
// data is missing. And the one rule for paths in a results file: relative
// to the tree, never the machine's.
import fs from 'node:fs';
import path from 'node:path';
import { commitText, machineKey } from './provenance.mjs';

const LABEL = { sqlite: 'SQLite', pg: 'PostgreSQL', innodb: 'InnoDB (MariaDB)', myisam: 'MyISAM (MariaDB)' };
const NOT = 'not measured in this run';
const LEVELS = [1, 10, 100];

const readJSON = file => { try { return JSON.parse(fs.readFileSync(file, 'utf8')); } catch { return null; } };

const big = x => Math.round(x).toLocaleString('en-US');
// "12,345 [11,900-12,700]", "12,345 (n=1)"; E when a run had errors.
export function fmtFigure(f, digits = big) {
  if (!f || !Number.isFinite(f.median)) return NOT;
  const text = Number.isFinite(f.lo) ? `${digits(f.median)} [${digits(f.lo)}-${digits(f.hi)}]` : `${digits(f.median)} (n=${f.n})`;
  return text + (f.errors && f.errors.total ? ' E' : '');
}
const ratio = (a, b) => (a && b && Number.isFinite(a.median) && Number.isFinite(b.median) && b.median > 0
  ? `${(a.median / b.median).toFixed(2)}x` : NOT);

// The answer: markdown lines, from the data files in dataDir.
export function answer(dataDir) {
  const server = readJSON(path.join(dataDir, 'server.json')) || {};
  const php = readJSON(path.join(dataDir, 'php.json')) || {};
  const bulk = readJSON(path.join(dataDir, 'bulk.json')) || {};
  const calib = readJSON(path.join(dataDir, 'calibrate.json')) || {};
  const tool = Object.keys(server).some(k => k.startsWith('loadgen ')) ? 'loadgen' : 'ab';
  const at = (b, s, c) => server[`${tool} ${b} ${s} ${c}`];
  const backends = ['sqlite', 'pg', 'innodb', 'myisam'];
  const strategiesOf = b => [...new Set(Object.keys(server).filter(k => k.startsWith(`${tool} ${b} `)).map(k => k.split(' ')[2]))];
  // The best strategy: the highest answered req/s at c 10 (else at the
  // highest c measured).
  const best = b => {
    const ss = strategiesOf(b);
    const c = LEVELS.filter(l => ss.some(s => at(b, s, l))).sort((x, y) => (x === 10 ? -1 : y === 10 ? 1 : y - x))[0];
    return ss.reduce((top, s) => ((at(b, s, c)?.median ?? -1) > (at(b, top, c)?.median ?? -1) ? s : top), ss[0]);
  };
  const lines = ['## The answer', '',
    `Answered lookups per second (goodput: 2xx only, errors apart), ${tool === 'loadgen' ? '`loadgen -k`' : '`ab -k`'} ` +
    'at concurrency c (experiment 2), ' +
    'random loaded keys, median [95% confidence interval of the median] (n: runs, where too few for an interval; ' +
    '`E`: some runs had errors, not counted). Client, server and database share the machine: read ratios, ' +
    'measured in the same run, before absolute figures.', ''];
  // Experiment 3's keys: "STACK TOOL BACKEND PERSISTENT C", STACK apache
  // (mod_php; "php" in data written before PHP-FPM was measured), fpm or
  // zipbench.
  const phpTool = Object.keys(php).some(k => / loadgen /.test(k)) ? 'loadgen' : 'ab';
  const phpAt = (stack, b) => php[`${stack} ${phpTool} ${b} 1 10`] ?? (stack === 'apache' ? php[`php ${phpTool} ${b} 1 10`] : undefined);
  const rows = backends.map(b => {
    const s = best(b);
    const overPhp = [ratio(phpAt('zipbench', b), phpAt('apache', b)), ratio(phpAt('zipbench', b), phpAt('fpm', b))];
    if (!s) return [LABEL[b], NOT, '', '', '', '', ...overPhp];
    return [LABEL[b], s, ...LEVELS.map(c => fmtFigure(at(b, s, c))), ratio(at(b, s, 10), server[`${tool} nginx - 10`]), ...overPhp];
  });
  lines.push('| backend | best strategy | c=1 | c=10 | c=100 | / nginx static, c=10 | / Apache+mod_php, c=10 | / PHP-FPM, c=10 |',
             '|---|---|---:|---:|---:|---:|---:|---:|', ...rows.map(r => `| ${r.join(' | ')} |`), '',
    '*/ nginx static*: the best strategy over nginx serving a file of the same size (experiment 2, same client, ' +
    'same run). */ Apache+mod_php*, */ PHP-FPM*: zipbench pooled over PHP with persistent connections behind ' +
    'Apache (mod_php) and behind nginx (PHP-FPM), the same lookups, the ratio of the medians (experiment 3).', '');
  // The cost of a connection: pooled against a connection per request.
  const conn = backends.filter(b => b !== 'sqlite').map(b => {
    const pooled = at(b, 'pooled', 10), per = at(b, 'per-request', 10);
    const us = calib.connect_us?.[b === 'myisam' ? 'innodb' : b];
    const connect = `one connect + close: ${Number.isFinite(us) ? `${big(us)} µs` : NOT} (calibration)`;
    if (!pooled && !per) return `- ${LABEL[b]}: pooled against per-request ${NOT}; ${connect}.`;
    return `- ${LABEL[b]}: pooled ${fmtFigure(pooled)}, per-request ${fmtFigure(per)} req/s: ` +
      `pooled is ${ratio(pooled, per)} per-request; ${connect}.`;
  });
  lines.push('The cost of a connection (per-request against pooled, c=10; experiment 2 and the calibration):', '', ...conn, '');
  // Bulk: zipbench against the backend's own loader, the postal list.
  const bl = backends.map(b => {
    const ours = bulk[`postal ${b} zipbench`];
    const nativeKey = Object.keys(bulk).find(k => k.startsWith(`postal ${b} `) && !/ (zipbench|pgloader)$/.test(k));
    const nat = nativeKey ? bulk[nativeKey] : null;
    if (!ours && !nat) return `- ${LABEL[b]}: ${NOT}.`;
    return `- ${LABEL[b]}: zipbench ${fmtFigure(ours)} rows/s, ${nativeKey ? nativeKey.split(' ').slice(2).join(' ') : 'the native loader'} ` +
      `${fmtFigure(nat)} rows/s: ${ratio(ours, nat)}.`;
  });
  lines.push('Bulk load of the postal list against the native loader (rows/s; the bulk experiment):', '', ...bl, '');
  lines.push(...sources({ 'server.json': server, 'php.json': php, 'bulk.json': bulk, 'calibrate.json': calib }), '');
  return lines;
}

// Where the answer's figures come from: each data file's date, commit and
// machine (its provenance), and a warning when they were measured on
// different machines.
function sources(files) {
  const have = Object.entries(files).filter(([, d]) => Object.keys(d).length);
  if (!have.length) return [];
  const line = ([f, d]) => (d.provenance
    ? `${f} ${(d.provenance.date || '').slice(0, 16).replace('T', ' ')} UTC, commit ${commitText(d.provenance)}`
    : `${f} (no provenance recorded)`);
  const out = [`Made from ${have.map(line).join('; ')}.`];
  const machines = new Map();
  for (const [f, d] of have) if (d.provenance) {
    const k = machineKey(d.provenance);
    machines.set(k, [...(machines.get(k) || []), f]);
  }
  if (machines.size > 1)
    out.push('', `**Measured on ${machines.size} different machines**, so ratios across them mean little: ` +
      [...machines.values()].map(fs_ => {
        const m = files[fs_[0]].provenance.machine;
        return `${fs_.join(', ')} on ${m.hostname} (${m.cores} cores, ${m.cpu}, ${m.kernel})`;
      }).join('; ') + '.');
  return out;
}

// Paths in a results file, relative to the tree: the tree's own prefix
// taken off, and any other absolute path into a tree's build/ (a run from
// another checkout) cut to build/...
export function relPaths(text, root) {
  let out = root ? text.split(root.replace(/\/$/, '') + '/').join('') : text;
  out = out.replace(/(^|[\s`'"(=,:])\/(?:[^\s`'"()/]+\/)+?(build|docs|conf|scripts|tests|bench)\//g, '$1$2/');
  return out;
}
