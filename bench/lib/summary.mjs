// What RESULTS.md opens with: the answer on one screen, made from the
// data the experiments wrote (DIR/data/*.json, lib/cells.mjs writeCells),
// never typed by hand. Each line says "not measured in this run" where its
// data is missing. And the one rule for paths in a results file: relative
// to the tree, never the machine's.
import fs from 'node:fs';
import path from 'node:path';
import { commitText, machineKey } from './provenance.mjs';
import { SETTINGS, CRASH_SETTINGS, DURABLE, KINDS, crashCells } from './durability.mjs';
import { roundRatios } from './cells.mjs';
import { summarize } from './stats.mjs';
import { readReproductions, spread } from './reproduction.mjs';

const LABEL = { sqlite: 'SQLite', pg: 'PostgreSQL', innodb: 'InnoDB (MariaDB)', myisam: 'MyISAM (MariaDB)' };
const NOT = 'not measured in this run';
const label = k => { const [b, s] = k.split(' '); return b === 'nginx' ? 'nginx (static)' : `${LABEL[b] || b} ${s}`; };

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

// "12,345 [11,900-12,700]" and, where the interval is wider than +-5%,
// its width: "(+-12%)".
function fmtRate(f) {
  const t = fmtFigure(f);
  return f && Number.isFinite(f.halfWidth) && f.halfWidth > 0.05 ? `${t} (+-${Math.round(100 * f.halfWidth)}%)` : t;
}
// "3.41x [3.20-3.66]" of a same-round ratio {value, lo, hi, n}.
function fmtRatioCI(r) {
  if (!r || !Number.isFinite(r.value)) return NOT;
  const d = r.value >= 100 ? 0 : r.value >= 10 ? 1 : 2;
  return Number.isFinite(r.lo) ? `${r.value.toFixed(d)}x [${r.lo.toFixed(d)}-${r.hi.toFixed(d)}]` : `${r.value.toFixed(d)}x (n=${r.n})`;
}
const usText = x => (x && Number.isFinite(x.median) ? x.median.toFixed(1) : '-');

// The answer: markdown lines, from the data files in dataDir: the server
// experiment's answer.json (one run, one machine: its figures, intervals,
// CPU per tier and same-round ratios), then the other experiments' figures,
// each under the run it comes from.
export function answer(dataDir) {
  const ans = readJSON(path.join(dataDir, 'answer.json'));
  const php = readJSON(path.join(dataDir, 'php.json')) || {};
  const bulk = readJSON(path.join(dataDir, 'bulk.json')) || {};
  const backends = ['sqlite', 'pg', 'innodb', 'myisam'];
  const lines = ['## The answer', ''];
  if (!ans) lines.push(`Lookups over HTTP: ${NOT} (\`scripts/bench --only calibrate,server\`).`, '');
  else lines.push(...lookups(ans, readReproductions(dataDir)));
  // PHP: experiment 3's own run.
  const phpTool = Object.keys(php).some(k => / loadgen /.test(k)) ? 'loadgen' : 'ab';
  const phpAt = (stack, b) => php[`${stack} ${phpTool} ${b} 1 10`];
  const phpLines = backends.filter(b => phpAt('zipbench', b)).map(b =>
    `- ${LABEL[b]}: zipbench pooled ${fmtFigure(phpAt('zipbench', b))}, Apache + mod_php ${fmtFigure(phpAt('apache', b))}, ` +
    `nginx + PHP-FPM ${fmtFigure(phpAt('fpm', b))} req/s: ${ratio(phpAt('zipbench', b), phpAt('apache', b))} and ` +
    `${ratio(phpAt('zipbench', b), phpAt('fpm', b))} (ratios of medians).`);
  if (phpLines.length)
    lines.push('Against PHP with persistent connections, c=10 (the php experiment, its own run; its section has the same-round ratios):', '',
               ...phpLines, '');
  // The other request types (docs/REQUEST-TYPES.md): the queries and
  // requests experiments' own runs, at c 10.
  const queries = readJSON(path.join(dataDir, 'queries.json')) || {};
  const requests = readJSON(path.join(dataDir, 'requests.json')) || {};
  const typeLines = [];
  if (queries['pg pooled 20'])
    typeLines.push(`- Multiple queries (20 per request), PostgreSQL lookups/s: pooled ${fmtFigure(queries['pg pooled 20'])}, ` +
      `pipelined ${fmtFigure(queries['pg pipelined 20'])}: ${ratio(queries['pg pipelined 20'], queries['pg pooled 20'])}.`);
  for (const b of backends.filter(x => requests[`list ${x}`]))
    typeLines.push(`- ${LABEL[b]}: the listing page ${fmtFigure(requests[`list ${b}`])} pages/s; cached lookups at Zipfian keys ` +
      `${fmtFigure(requests[`cached ${b} zipf:0.99`])} against ${fmtFigure(requests[`zip ${b} zipf:0.99`])} uncached req/s ` +
      `(${ratio(requests[`cached ${b} zipf:0.99`], requests[`zip ${b} zipf:0.99`])}); updates ${fmtFigure(requests[`update ${b} 10`])}/s.`);
  const mix = readJSON(path.join(dataDir, 'mix.json')) || {};
  for (const m of ['ycsb-a', 'ycsb-b'].filter(x => mix[`innodb ${x} 10`] || mix[`sqlite ${x} 10`]))
    typeLines.push(`- YCSB ${m.slice(-1).toUpperCase()} (${m === 'ycsb-a' ? '50% updates' : '5% updates'}, Zipfian keys), req/s: ` +
      backends.filter(b => mix[`${b} ${m} 10`]).map(b => `${LABEL[b]} ${fmtFigure(mix[`${b} ${m} 10`])}`).join(', ') +
      (mix[`innodb ${m} 10`] && mix[`myisam ${m} 10`] ? `; InnoDB / MyISAM ${ratio(mix[`innodb ${m} 10`], mix[`myisam ${m} 10`])}` : '') + '.');
  if (typeLines.length)
    lines.push('The other request types at c=10 (docs/REQUEST-TYPES.md; the queries, requests and mix experiments, their own runs, ' +
               'ratios of medians here, same-round ratios in their sections):', '', ...typeLines, '');
  lines.push(...durability(dataDir, backends));
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
  const conns = readJSON(path.join(dataDir, 'conns.json')) || {};
  const rowsScale = readJSON(path.join(dataDir, 'rows-scale.json')) || {};
  lines.push(...scale(conns, rowsScale));
  lines.push(...sources({ 'answer.json': ans || {}, 'php.json': php, 'queries.json': queries, 'requests.json': requests,
                         'mix.json': mix, 'durability.json': readJSON(path.join(dataDir, 'durability.json')) || {},
                         'bulk.json': bulk, 'conns.json': conns, 'rows-scale.json': rowsScale }), '');
  return lines;
}

// The crash experiment's kinds of crash, as the answer names them.
const CRASH_WORDS = { process: 'process crashes', power: 'power cuts (clear-cache)', 'torn-op': 'torn-op cuts',
                      'torn-seq': 'torn-seq cuts', 'no-dir-sync': 'no-dir-sync cuts', 'fsync-eio': 'fsync-eio runs' };

// What a setting survived in the crash experiment's runs (lib/durability.mjs
// crashCells), naming each kind of crash: ", survived N process crashes,
// ...; under KIND: what went wrong". '' when it was not run.
export function survivedText(crash, b, s) {
  const kinds = KINDS.map(k => crash?.get(`${b} ${s} ${k}`)).filter(Boolean);
  if (!kinds.length) return '';
  const wrong = g => [g.losing && `lost acknowledged writes in ${g.losing} of ${g.checked} (median ${g.lostPct}%)`,
                      g.existed < g.audited && `recovered to a state that never existed in ${g.audited - g.existed} of ${g.audited}`,
                      g.startedRuns < g.runs && `did not start after ${g.runs - g.startedRuns} of ${g.runs}`,
                      g.corrupt && `failed its integrity check after ${g.corrupt}`].filter(Boolean);
  const kept = kinds.filter(g => !wrong(g).length), hurt = kinds.filter(g => wrong(g).length);
  const parts = [];
  if (kept.length) parts.push(`survived ${kept.map(g => `${g.runs} ${CRASH_WORDS[g.kind]}`).join(', ')}`);
  for (const g of hurt) {
    const text = `under ${CRASH_WORDS[g.kind]}: ${wrong(g).join(', ')}`;
    parts.push(DURABLE.has(`${b} ${s}`) ? `**${text}**` : text);
  }
  return `, ${parts.join('; ')}`;
}

// Scale: zipbench / nginx at the most connections the conns experiment
// measured (the same-round ratio of its runs), the memory an idle
// connection costs each, and the rows experiment's largest load, seconds
// per million rows against the native loader.
function scale(conns, rowsScale) {
  const levels = Object.keys(conns).map(k => /^nginx (\d+)$/.exec(k)).filter(Boolean).map(m => Number(m[1]));
  const top = levels.length ? Math.max(...levels) : null;
  const sameRound = (a, b) => {
    if (!a?.values?.length || !b?.values?.length) return null;
    const r = roundRatios({ values: a.values, rounds: a.rounds || [] }, { values: b.values, rounds: b.rounds || [] });
    if (!r.length) return null;
    const s = summarize(r);
    return { value: s.median, lo: s.lo, hi: s.hi, n: s.n };
  };
  const kib = f => (f && Number.isFinite(f.median) ? `${(f.median / 1024).toFixed(1)} KiB` : NOT);
  const secs = x => (Number.isFinite(x) ? x.toFixed(1) : '-');
  const conn = top === null ? `${NOT} (\`scripts/bench --only conns\`)`
    : ['sqlite', 'pg'].filter(b => conns[`${b} ${top}`]).map(b =>
      `${LABEL[b]} pooled / nginx ${fmtRatioCI(sameRound(conns[`${b} ${top}`], conns[`nginx ${top}`]))}`).join(', ') +
      ` at ${top.toLocaleString('en-US')} keep-alive connections (same-round ratios of answered req/s)`;
  const memC = Object.keys(conns).map(k => /^memory zipbench (\d+)$/.exec(k)).filter(Boolean).map(m => Number(m[1]));
  const mc = memC.length ? Math.max(...memC) : null;
  const mem = mc === null ? `memory per idle connection ${NOT}`
    : `memory per idle keep-alive connection: zipbench ${kib(conns[`memory zipbench ${mc}`])}, nginx ${kib(conns[`memory nginx ${mc}`])} ` +
      `(${mc.toLocaleString('en-US')} connections)`;
  const bs = Object.entries(rowsScale.backends || {});
  const load = !bs.length ? `bulk load per million rows ${NOT} (\`scripts/bench --only rows\`)`
    : `bulk load of ${Number(rowsScale.rows).toLocaleString('en-US')} generated rows, seconds per million, zipbench against ` +
      'the native loader (and the same-round ratio of their rates): ' +
      bs.map(([b, x]) => `${LABEL[b]} ${secs(x.zipbench_s_per_m)} against ${secs(x.native_s_per_m)} (${fmtRatioCI(x.over_native)})`).join(', ');
  return ['Scale (the conns and rows experiments, their own runs): ' + `${conn}; ${mem}; ${load}.`, ''];
}

// What a durability setting buys (the durability experiment's updates/s
// at c 10, over the backend's durable setting) and what it survives (the
// crash experiment's recorded runs, DIR/data/crash/results.jsonl).
function durability(dataDir, backends) {
  const dur = readJSON(path.join(dataDir, 'durability.json')) || {};
  let crash = null;
  try {
    crash = crashCells(fs.readFileSync(path.join(dataDir, 'crash', 'results.jsonl'), 'utf8').split('\n').filter(Boolean).map(l => JSON.parse(l)));
  } catch { /* not recorded */ }
  const out = [];
  for (const b of backends) {
    const durable = SETTINGS[b].find(s => DURABLE.has(`${b} ${s}`)) || SETTINGS[b][0];
    const base = dur[`${b} ${durable} 10`];
    if (!base && !crash) continue;
    const rows = CRASH_SETTINGS[b].filter(s => SETTINGS[b].includes(s) || survivedText(crash, b, s)).map(s => {
      const f = dur[`${b} ${s} 10`];
      const rate = f ? `${fmtFigure(f)}${s === durable || !base ? '' : ` (${ratio(f, base)})`}` : 'updates/s not measured';
      return `${s === 'as-is' ? 'as it is' : s}: ${rate}${survivedText(crash, b, s)}`;
    });
    out.push(`- ${LABEL[b]}: ${rows.join('; ')}.`);
  }
  if (!out.length) return [];
  return ['Durability: acknowledged updates per second at c=10 under each setting (over the durable one, ratio of medians) and ' +
          'what each survived in the crash experiment\'s runs, by kind of crash: a process crash, a power cut that loses what ' +
          'was not fsynced (clear-cache), and one that also tears the last write (torn-op), keeps any subset of the writes ' +
          'since each fsync (torn-seq), undoes names whose directory was not fsynced (no-dir-sync), or follows a failed ' +
          'fsync (fsync-eio) (docs/RESULTS-durability.md, docs/RESULTS-crash.md, docs/CRASH.md):', '', ...out, ''];
}

// What the reproductions showed of carrying to another machine (none: it
// is not known, and the answer claims nothing).
function carryText(reps) {
  if (!reps.length)
    return 'Whether they carry to another machine: no reproduction is recorded (`./zipbench reproduce`).';
  const moved = reps.flatMap(r => (r.ratios || []).map(x => x.now_over_recorded?.value).filter(Number.isFinite))
    .map(v => Math.abs(v - 1));
  const max = moved.length ? Math.round(100 * Math.max(...moved)) : null;
  const held = reps.filter(r => r.ranking?.held !== false).length;
  return `On ${reps.length + 1} machines of this kind (this one and ${reps.length} reproduction${reps.length > 1 ? 's' : ''}, ` +
    `docs/data/reproductions): the ranking carried on ${held} of ${reps.length}` +
    (max === null ? '' : `; the same-round ratios moved up to ${max}% (each ratio's spread below)`) + '.';
}

// The lookups over HTTP (the server experiment's answer.json): the ranking
// at the headline level, every backend and strategy with its intervals,
// ratios and CPU per tier, the cost of a connection, the native client.
function lookups(ans, reps = []) {
  const backends = ['sqlite', 'pg', 'innodb', 'myisam'];
  const lines = [];
  // A ratio's spread on the machines that reproduced the answer.
  const across = (key, r) => {
    const sp = Number.isFinite(r?.value) ? spread(key, r.value, reps) : null;
    if (!sp) return '';
    const d = x => (x >= 100 ? 0 : x >= 10 ? 1 : 2);
    return `; ${sp.lo.toFixed(d(sp.lo))}-${sp.hi.toFixed(d(sp.hi))}x on ${sp.machines} machines`;
  };
  const H = ans.headline, levels = ans.levels;
  const tool = ans.tool === 'loadgen' ? '`loadgen -k`' : '`ab -k`';
  lines.push(`Answered lookups per second over HTTP (2xx only; errors counted apart), ${tool} at concurrency c, ` +
    `random loaded keys; median [95% confidence interval of the median], and the interval's width where it is wider ` +
    `than +-5%. c=${H} is the 2008 study's setting and the headline: its cells are repeated toward ` +
    '+-5%, one run per visit (the server section says how many runs at most); the rates of the database-backed ' +
    'cells drift with the machine over minutes, so on a drifting host some ' +
    'stay wider (docs/DECISIONS.md, Precision), and the ranking below rests on same-round ratios, which the drift ' +
    'leaves alone. Client, server and database share this machine\'s cores, so read the ratios (taken from runs of ' +
    'the same rounds) and the CPU per lookup before the rates. ' + carryText(reps), '',
    `At c=${H}, fastest first (\`>\`: faster than the next, the same-round ratio's 95% interval above 1; ` +
    `\`~\`: no clear difference): ${(ans.ranking[H] || []).map(x => label(x.key) + (x.next ? ` ${x.next} ` : '')).join('')}.`, '');
  const head = ['backend', 'strategy', ...levels.map(c => `c=${c}`), `/ nginx static, c=${H}`, `/ per-request, c=${H}`,
                `client / server / database µs per lookup, c=${H}`, 'lookups/s per core (server + database)'];
  const rows = [];
  for (const b of backends) {
    const strategies = ans.backends[b];
    if (!strategies) { rows.push([LABEL[b], NOT, ...levels.map(() => ''), '', '', '', '']); continue; }
    for (const [s, per] of Object.entries(strategies)) {
      const h = per[H];
      const cpu = h?.cpu;
      const own = cpu ? cpu.server.median + (Number.isFinite(cpu.db.median) ? cpu.db.median : 0) : NaN;
      rows.push([LABEL[b], s, ...levels.map(c => fmtRate(per[c])), fmtRatioCI(h?.over_nginx),
                 s === 'per-request' ? '-' : fmtRatioCI(h?.over_per_request) + across(`${b} ${s} / ${b} per-request`, h?.over_per_request),
                 cpu ? `${usText(cpu.client)} / ${usText(cpu.server)} / ${b === 'sqlite' ? 'in the server' : usText(cpu.db)}` : NOT,
                 Number.isFinite(own) ? big(1e6 / own) : '-']);
    }
  }
  const nginxRow = ['nginx, a static file of the same size', '-', ...levels.map(c => fmtRate(ans.nginx[c])), '1x', '-', '', ''];
  lines.push(`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i < 2 ? '---' : '---:')).join('|')}|`,
             ...[...rows, nginxRow].map(r => `| ${r.join(' | ')} |`), '');
  lines.push(`The best strategy of each backend, per concurrency (same-round ratios, as above): ` +
    Object.entries(ans.best || {}).map(([b, per]) => `${LABEL[b]}: ${levels.map(c => `c=${c} ${per[c]}`).join(', ')}`).join('; ') + '.', '');
  // The cost of a connection, with the calibration that explains it here.
  const conn = backends.filter(b => ans.backends[b]?.pooled && b !== 'sqlite').map(b => {
    const r = ans.backends[b].pooled[H]?.over_per_request;
    const us = ans.connect_us?.[b === 'myisam' ? 'innodb' : b];
    return `- ${LABEL[b]}: pooled is ${fmtRatioCI(r)} per-request here, where one connect + close costs ` +
      `${Number.isFinite(us) ? (us >= 1000 ? `${(us / 1000).toFixed(1)} ms` : `${big(us)} µs`) : 'what the calibration did not measure'} ` +
      '(calibration, same machine): the ratio belongs to this machine\'s connect cost, not to the database alone.';
  });
  if (conn.length) lines.push(`The cost of a connection per request (c=${H}):`, '', ...conn, '');
  const natives = Object.entries(ans.native || {});
  if (natives.length)
    lines.push(`What HTTP and the server cost: each backend over HTTP against its own client on the same query and table ` +
      `(c=${H}, same rounds):`, '',
      ...natives.map(([b, n]) => `- ${LABEL[b]}: ${n.label} ${fmtFigure(n.fig)} lookups/s; ` +
        Object.entries(n.over).map(([s, r]) => `zipbench ${s} / native ${fmtRatioCI(r)}${across(`${b} ${s} / native`, r)}`).join(', ') + '.'), '');
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
