// A reproduction: the answer's headline measured on another machine (or
// again), held against the recorded one (./zipbench reproduce). Rates and
// same-round ratios alike: the recorded figure and interval, this one's,
// now / recorded with the interval the two give (now's low end over the
// recorded high, now's high over the recorded low), and "carried" where
// the two intervals overlap. The machine's own costs (calibrate.json) are
// set side by side, and each ratio that moved more than MOVED is held
// against the cost it follows (FOLLOWS): explained where that cost moved
// the same way, unexplained where it did not or was not measured there.
import fs from 'node:fs';
import path from 'node:path';
import { commitText, machineKey } from './provenance.mjs';

// A ratio moved when now / recorded is outside 1 +- this.
export const MOVED = 0.10;
const HEADLINE = '10';

const fin = x => Number.isFinite(x);
const overlap = (a, b) => fin(a?.lo) && fin(b?.lo) && a.lo <= b.hi && b.lo <= a.hi;

// now / recorded of two figures {median|value, lo, hi}.
function quotient(rec, now) {
  const v = f => (fin(f?.median) ? f.median : f?.value);
  if (!fin(v(rec)) || !fin(v(now)) || !v(rec)) return null;
  return { value: v(now) / v(rec), lo: fin(now.lo) && fin(rec.hi) ? now.lo / rec.hi : null,
           hi: fin(now.hi) && fin(rec.lo) && rec.lo ? now.hi / rec.lo : null };
}

const brief = f => (f ? { median: f.median ?? f.value, lo: f.lo ?? null, hi: f.hi ?? null, n: f.n ?? null } : null);

// The headline's rates of an answer: key -> figure.
function rates(ans) {
  const out = {};
  for (const [b, per] of Object.entries(ans?.backends || {}))
    for (const [s, levels] of Object.entries(per))
      if (levels[HEADLINE]) out[`${b} ${s}`] = levels[HEADLINE];
  if (ans?.nginx?.[HEADLINE]) out['nginx'] = ans.nginx[HEADLINE];
  for (const [b, n] of Object.entries(ans?.native || {})) if (n?.fig) out[`native ${b}`] = { ...n.fig, label: n.label };
  return out;
}

// The headline's same-round ratios of an answer: key -> {value, lo, hi}.
function ratios(ans) {
  const out = {};
  for (const [b, per] of Object.entries(ans?.backends || {}))
    for (const [s, levels] of Object.entries(per)) {
      const c = levels[HEADLINE];
      if (c?.over_nginx) out[`${b} ${s} / nginx`] = c.over_nginx;
      if (c?.over_per_request) out[`${b} ${s} / ${b} per-request`] = c.over_per_request;
    }
  for (const [b, n] of Object.entries(ans?.native || {}))
    for (const [s, r] of Object.entries(n?.over || {})) out[`${b} ${s} / native`] = r;
  return out;
}

// The strict order of a ranking at the headline: key -> its group's place.
function places(ans) {
  const list = ans?.ranking?.[HEADLINE] || [];
  const out = {};
  let g = 0;
  for (const r of list) {
    out[r.key] = g;
    if (r.next === '>') g++;
  }
  return out;
}

// The machine's own costs of a calibration, µs each.
export function costs(cal) {
  if (!cal) return {};
  const c = { fsync: cal.fsync_us, 'TCP round trip': cal.tcp_rtt_us, spawn: cal.spawn_us, 'wake-up': cal.wake_us,
              'context switch': cal.switch_us, 'fork + exit': cal.fork_us, 'cache miss': cal.memory_load_us,
              'nginx request': cal.nginx_us };
  for (const [b, v] of Object.entries(cal.connect_us || {})) c[`${b} connect`] = v;
  return Object.fromEntries(Object.entries(c).filter(([, v]) => fin(v)));
}

// Which cost a ratio follows: pooled / per-request a backend's connect
// (a per-request lookup is a connect more); zipbench / a native client
// the wake-ups (zipbench's loops sleep and wake per answer, a native
// client's thread less: DECISIONS.md, InnoDB's cost per lookup); a cell
// over nginx the cache miss (a database's lookup is memory-bound, nginx's
// file is not). The sign: the ratio moves with the cost (+1) or against
// it (-1).
export const FOLLOWS = [
  { match: /^(\w+) \S+ \/ \1 per-request$/, cost: m => `${m[1] === 'sqlite' ? 'sqlite' : m[1] === 'myisam' ? 'innodb' : m[1]} connect`, sign: +1 },
  { match: /^(\w+) \S+ \/ native$/, cost: () => 'wake-up', sign: -1 },
  { match: /^(\w+) \S+ \/ nginx$/, cost: () => 'cache miss', sign: -1 },
];

function explain(key, move, recCosts, nowCosts) {
  const rule = FOLLOWS.find(f => f.match.test(key));
  if (!rule) return { cost: null, verdict: 'unexplained (no cost it follows is named)' };
  const name = rule.cost(key.match(rule.match));
  const r = recCosts[name], n = nowCosts[name];
  if (!fin(r) || !fin(n)) return { cost: name, verdict: `unexplained (${name} was not measured on ${!fin(r) ? 'the recording machine' : 'this one'})` };
  const costMove = n / r;
  const same = Math.sign(Math.log(costMove)) * rule.sign === Math.sign(Math.log(move)) && Math.abs(Math.log(costMove)) >= 0.05;
  return { cost: name, cost_move: costMove,
           verdict: same ? `follows ${name} (${pct(costMove)})` : `unexplained (${name} moved ${pct(costMove)})` };
}

const pct = x => `${x >= 1 ? '+' : ''}${Math.round((x - 1) * 100)}%`;

// The recorded and this machine's answers (and calibrations) held together.
export function compareAnswers(recorded, now) {
  const recR = rates(recorded.answer), nowR = rates(now.answer);
  const rateRows = Object.keys(recR).filter(k => nowR[k]).map(k => {
    const q = quotient(recR[k], nowR[k]);
    return { key: k, recorded: brief(recR[k]), now: brief(nowR[k]), now_over_recorded: q,
             carried: overlap(recR[k], nowR[k]) };
  });
  const recC = costs(recorded.calibrate), nowC = costs(now.calibrate);
  const recQ = ratios(recorded.answer), nowQ = ratios(now.answer);
  const ratioRows = Object.keys(recQ).filter(k => nowQ[k]).map(k => {
    const q = quotient(recQ[k], nowQ[k]);
    const moved = q && Math.abs(q.value - 1) > MOVED;
    return { key: k, recorded: brief(recQ[k]), now: brief(nowQ[k]), now_over_recorded: q,
             carried: overlap(recQ[k], nowQ[k]), moved: !!moved,
             ...(moved ? { explanation: explain(k, q.value, recC, nowC) } : {}) };
  });
  const rp = places(recorded.answer), np = places(now.answer);
  const keys = Object.keys(rp).filter(k => k in np);
  const swaps = [];
  for (const a of keys) for (const b of keys)
    if (rp[a] < rp[b] && np[a] > np[b]) swaps.push(`${a} > ${b} recorded, ${b} > ${a} now`);
  const costRows = [...new Set([...Object.keys(recC), ...Object.keys(nowC)])].map(k =>
    ({ cost: k, recorded_us: recC[k] ?? null, now_us: nowC[k] ?? null,
       now_over_recorded: fin(recC[k]) && fin(nowC[k]) ? nowC[k] / recC[k] : null }));
  return {
    recorded: { provenance: recorded.answer?.provenance || null },
    now: { provenance: now.answer?.provenance || null },
    rates: rateRows, ratios: ratioRows, costs: costRows,
    ranking: { held: swaps.length === 0, swaps },
  };
}

const num = x => (fin(x) ? (x >= 100 ? Math.round(x).toLocaleString('en-US') : x >= 10 ? x.toFixed(1) : x.toFixed(2)) : '-');
const fig = f => (f && fin(f.median) ? `${num(f.median)}${fin(f.lo) ? ` [${num(f.lo)}-${num(f.hi)}]` : ''}` : '-');
const quot = q => (q ? `${q.value.toFixed(2)}${fin(q.lo) ? ` [${q.lo.toFixed(2)}-${q.hi.toFixed(2)}]` : ''}` : '-');

function table(head, rows) {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map(r => String(r[i]).length)));
  const line = r => `| ${r.map((c, i) => String(c).padEnd(w[i])).join(' | ')} |`;
  return [line(head), `|${w.map(n => '-'.repeat(n + 2)).join('|')}|`, ...rows.map(line)];
}

// The result as text: markdown tables a person reads.
export function reproductionText(r) {
  const who = p => (p ? `${commitText(p)}, ${machineKey(p)}` : 'unknown');
  const carried = rows => rows.filter(x => x.carried).length;
  // "moved" only where both sides have an interval: a side with too few
  // runs for one shows nothing either way.
  const open = x => !x.carried && !(fin(x.recorded?.lo) && fin(x.now?.lo));
  const verdict = x => (x.carried ? 'carried' : open(x) ? 'no interval' : 'moved');
  const unknown = rows => (rows.some(open) ? `; ${rows.filter(open).length} with no interval on one side (too few runs), neither carried nor moved` : '');
  const lines = [`## Reproduction of the answer's c=${HEADLINE} headline`, '',
    `Recorded: ${who(r.recorded.provenance)}. This run: ${who(r.now.provenance)}${r.seconds ? `, ${r.seconds} s` : ''}.`, '',
    `Rates (answered lookups/s, median [95% CI]): ${carried(r.rates)} of ${r.rates.length} carried (the intervals overlap)${unknown(r.rates)}.`, '',
    ...table(['cell', 'recorded', 'now', 'now / recorded', ''],
             r.rates.map(x => [x.key, fig(x.recorded), fig(x.now), quot(x.now_over_recorded), verdict(x)])), '',
    `Same-round ratios: ${carried(r.ratios)} of ${r.ratios.length} carried${unknown(r.ratios)}; ${r.ratios.filter(x => x.moved).length} moved more than ${MOVED * 100}%.`, '',
    ...table(['ratio', 'recorded', 'now', 'now / recorded', '', 'why it moved'],
             r.ratios.map(x => [x.key, fig(x.recorded), fig(x.now), quot(x.now_over_recorded), verdict(x),
                                x.explanation?.verdict || ''])), '',
    `The ranking at c=${HEADLINE} ${r.ranking.held ? 'held' : `did not hold: ${r.ranking.swaps.join('; ')}`}.`, '',
    "The machines' own costs (µs; `scripts/bench --only calibrate`):", '',
    ...table(['cost', 'recorded', 'now', 'now / recorded'],
             r.costs.map(x => [x.cost, num(x.recorded_us), num(x.now_us), fin(x.now_over_recorded) ? x.now_over_recorded.toFixed(2) : '-']))];
  return lines;
}

// Every reproduction kept (docs/data/reproductions/*.json), oldest first.
export function readReproductions(dataDir) {
  const dir = path.join(dataDir, 'reproductions');
  let names = [];
  try { names = fs.readdirSync(dir).filter(n => n.endsWith('.json')).sort(); } catch { return []; }
  return names.map(n => { try { return { file: n, ...JSON.parse(fs.readFileSync(path.join(dir, n), 'utf8')) }; } catch { return null; } })
    .filter(Boolean);
}

// A ratio's spread across machines: its recorded value and each
// reproduction's, "5.74x here; 5.7-7.0x on 3 machines of this kind".
export function spread(key, recordedValue, reproductions) {
  const vals = [recordedValue, ...reproductions.map(r => r.ratios?.find(x => x.key === key)?.now?.median)].filter(fin);
  if (vals.length < 2) return null;
  return { lo: Math.min(...vals), hi: Math.max(...vals), machines: vals.length,
           moved: Math.max(...vals.map(v => Math.abs(v / recordedValue - 1))) };
}
