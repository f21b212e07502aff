// Cells: the figures of an experiment, each measured by repeating a run
// until the 95% confidence interval of its median lies within +-target of
// the median (stats.mjs), or a cap on runs or time is hit. Runs are
// interleaved: every round runs each unfinished cell once, in an order
// that rotates, so drift of the machine hits all cells alike. Around each
// run the machine is sampled (proc.mjs), and a cell that ran while the
// machine was busy with other work is flagged; the host's speed is probed
// before and after (hostprobe.mjs: the probe after one run serves as the
// next one's before, the warm-up coming after it), and with --slow-host a
// run made while the host ran slow is set aside, not counted.
import fs from 'node:fs';
import path from 'node:path';
import { summarize } from './stats.mjs';
import { machineSample, machineDelta } from './proc.mjs';
import { cellErrors, ERROR_KINDS } from './goodput.mjs';
import { provenance } from './provenance.mjs';
import { probeHost, quickest, slowHost, SLOW_HOST } from './hostprobe.mjs';
import { isStopping } from './run.mjs';

export class Cells {
  // opts: minRuns, maxRuns, target (0.05), budgetS (seconds for all rounds),
  // ownIo (the runs themselves wait on the disk: iowait is theirs, see busyFlag)
  constructor(ctx, name, opts = {}) {
    this.ctx = ctx;
    this.name = name;
    this.ownIo = !!opts.ownIo;
    const r = ctx.repeat;
    this.minRuns = opts.minRuns ?? r.minRuns;
    this.maxRuns = Math.max(this.minRuns, opts.maxRuns ?? r.maxRuns);
    this.target = opts.target ?? r.target;
    this.budgetS = opts.budgetS ?? r.budgetS;
    this.units = [];
    this.cells = new Map();
  }

  // One cell measured by its own run: run() gives a number (NaN or null:
  // the run failed, and is not counted). meta.warm: the cell's warm-up (see
  // addBatch); meta.minRuns, meta.maxRuns: this cell's bounds on its runs;
  // meta.runsPerVisit: runs back to back each time a round comes to it
  // (one warm-up before them), paired by their place in the visit for
  // same-round ratios. A cell measured alone for a few runs varies less
  // than one whose every run follows another backend's.
  add(key, run, meta = {}) {
    this.addBatch([key], async () => ({ [key]: await run() }), meta);
  }

  // Cells measured together by one run (e.g. one sqlbench invocation
  // that times many tests): run(pendingKeys) gives {key: number}, or
  // {key: [numbers]} when one run repeats each figure itself.
  // A key run() returns that was not declared becomes a cell then.
  // meta.warm: an async function run before every measured run of the unit
  // (a short run at the cell's concurrency that grows the pools serving it,
  // lib/clients.mjs warmRun): never timed, never in a cell's values; what
  // it gave is kept apart in each cell's warmups, logged, and written with
  // the cells' data (writeCells).
  addBatch(keys, run, meta = {}) {
    const unit = { keys: new Set(keys), run, warm: meta.warm, visit: Math.max(1, meta.runsPerVisit ?? 1) };
    this.units.push(unit);
    for (const k of keys) this.#cell(k, meta);
  }

  #cell(key, meta = {}) {
    if (!this.cells.has(key))
      this.cells.set(key, { key, meta, values: [], extras: [], machine: [], rounds: [], probes: [], failed: 0,
                            slowHost: [], warmups: [], done: false, capped: false });
    return this.cells.get(key);
  }

  #pending(unit) {
    return [...unit.keys].filter(k => !this.cells.get(k).done);
  }

  // A cell's own bounds on its runs (meta.minRuns, meta.maxRuns: the
  // headline figures get more), else the experiment's.
  #settle(c) {
    const s = summarize(c.values, this.target);
    const minRuns = c.meta.minRuns ?? this.minRuns, maxRuns = Math.max(minRuns, c.meta.maxRuns ?? this.maxRuns);
    if (c.values.length >= minRuns && s.within) c.done = true;
    else if (c.values.length >= maxRuns || c.failed > maxRuns) {
      c.done = true;
      c.capped = !s.within;
    }
  }

  // Runs the rounds until every cell is done, the budget is spent, or a
  // signal stops the driver (isStopping: the cells keep what they had,
  // this.interrupted says so). ctx.spent, when given, adds up where the
  // time went: {runs, warmups, probes} in seconds; ctx.progress, when
  // given, is called before each run with {key, round, done, total} (runs
  // made and planned, the planned being at least minRuns a cell).
  #lastProbe = NaN;

  async measure() {
    const t0 = Date.now();
    this.#lastProbe = NaN;
    let order = [...this.units];
    for (let round = 1; ; round++) {
      if (isStopping()) { this.interrupted = true; break; }
      const todo = order.filter(u => !u.ran || this.#pending(u).length);
      if (!todo.length) break;
      if ((Date.now() - t0) / 1000 > this.budgetS) {
        for (const u of todo) for (const k of this.#pending(u)) {
          const c = this.cells.get(k);
          c.done = true;
          c.capped = !summarize(c.values, this.target).within;
          c.timeCap = true;
        }
        break;
      }
      for (const u of todo) for (let i = 0; i < u.visit; i++) {
        const pending = this.#pending(u);
        if (!pending.length && u.ran) break;
        if (isStopping()) break;
        u.ran = true;
        if (this.ctx.progress) this.ctx.progress({ key: pending[0], round, ...this.#counts() });
        // The host's speed before the run: the probe that ended the run
        // before, where nothing came between, else one taken now, before
        // the warm-up (a run's own probe is the mean of the two around it).
        const before = Number.isFinite(this.#lastProbe) ? this.#lastProbe : await this.#timed('probes', () => this.#probe());
        this.#lastProbe = NaN;
        if (u.warm && i === 0) await this.#timed('warmups', () => this.#warm(u, pending, round));
        const roots = this.ctx.ownRoots ? this.ctx.ownRoots() : [process.pid];
        const a = machineSample(roots);
        let got = {};
        try { got = (await this.#timed('runs', () => u.run(pending))) || {}; }
        catch (e) { this.ctx.log(`${this.name}: run failed: ${e.message}`); }
        // A run a signal cut short is no run: not counted, not failed.
        if (isStopping()) break;
        const m = machineDelta(a, machineSample(roots));
        const after = await this.#timed('probes', () => this.#probe());
        this.#lastProbe = after;
        const probe = (before + after) / 2;
        // --slow-host (ctx.slowHostTolerance); never with --quick's one run a cell
        const aside = !this.ctx.quick && this.#tolerance() > 0 &&
                      slowHost(probe, quickest(this.ctx.hostProbes || []), this.#tolerance());
        for (const k of pending) if (!(k in got)) got[k] = NaN;
        for (const [k, v] of Object.entries(got)) {
          u.keys.add(k);
          const c = this.#cell(k);
          // a number, {value, ...extra}, or {values: [...], ...extra}
          const extra = v !== null && typeof v === 'object' && !Array.isArray(v) ? v : {};
          const values = Array.isArray(v) ? v : 'values' in extra ? extra.values : 'value' in extra ? [extra.value] : [v];
          for (const value of values) {
            if (typeof value !== 'number' || Number.isNaN(value)) { c.failed++; continue; }
            if (aside) { c.slowHost.push({ value, probe, round: round + i / 1000, extra }); continue; }
            c.values.push(value);
            c.extras.push(extra);
            c.machine.push(m);
            c.rounds.push(round + i / 1000);   // the i-th run of the round's visit
            c.probes.push(probe);
          }
          if (aside) this.ctx.log(`${this.name}: ${k}: run set aside, the host ran slow ` +
                                  `(probe ${probe.toFixed(1)} ms, quickest ${quickest(this.ctx.hostProbes).toFixed(1)})`);
          this.#settle(c);
        }
      }
      order = [...order.slice(1), order[0]];
    }
    this.#setAsideLate();
    for (const c of this.cells.values()) {
      c.summary = summarize(c.values, this.target);
      c.busy = busyFlag(this.ctx, c.machine, this.ownIo);
      const n = c.machine.length || 1;
      c.load1 = c.machine.reduce((s, m) => s + m.load1, 0) / n;
      c.steal = c.machine.reduce((s, m) => s + m.steal, 0) / n;
      c.iowait = c.machine.reduce((s, m) => s + m.iowait, 0) / n;
      // --quick caps every cell at one run by design: no warning then.
      if (c.capped && !this.ctx.quick && !this.interrupted)
        this.ctx.warn(`${this.name}: ${c.key}: ` + (c.values.length >= 6
          ? `95% CI of the median is +-${(100 * c.summary.halfWidth).toFixed(1)}% after ${c.values.length} runs`
          : c.values.length ? `${c.values.length} runs, too few for a 95% interval` : `no run succeeded (${c.failed} failed)`) +
          ` (cap: ${c.timeCap ? Math.round(this.budgetS) + ' s' : Math.max(c.meta.minRuns ?? 0, c.meta.maxRuns ?? this.maxRuns) + ' runs'})`);
    }
    return this;
  }

  // The host's speed now (ms of the probe's loop), kept for the whole bench
  // run in ctx.hostProbes: the quickest of them is the reference. Only where
  // ctx.hostProbe asks for it (scripts/bench without --quick, and make run:
  // the probes and their waits for an idle machine cost about 0.4 s a run);
  // ctx.probeHost: a stand-in for the tests.
  async #probe() {
    if (!this.ctx.hostProbe && !this.ctx.probeHost) return NaN;
    const ms = this.ctx.probeHost ? this.ctx.probeHost() : await probeHost(this.ctx);
    (this.ctx.hostProbes ||= []).push(ms);
    return ms;
  }

  // A run counted while the reference was still high (early in the bench
  // run, or before the host's quick spell) is set aside now against the
  // final reference; the cell's figures are those of the runs left.
  #setAsideLate() {
    for (const c of this.cells.values()) c.slowHostTolerance = this.#tolerance();
    if (this.ctx.quick || !(this.#tolerance() > 0)) return;
    const ref = quickest(this.ctx.hostProbes || []);
    for (const c of this.cells.values()) {
      const keep = c.probes.map(p => !slowHost(p, ref, this.#tolerance()));
      if (keep.every(Boolean)) continue;
      keep.forEach((k, i) => { if (!k) c.slowHost.push({ value: c.values[i], probe: c.probes[i], round: c.rounds[i], extra: c.extras[i] }); });
      for (const f of ['values', 'extras', 'machine', 'rounds', 'probes']) c[f] = c[f].filter((_, i) => keep[i]);
      const s = summarize(c.values, this.target);
      c.capped = !s.within && c.values.length > 0;
    }
  }

  // fn's seconds added to ctx.spent[what] (where it is kept), and one to
  // ctx.spent.counts[what].
  async #timed(what, fn) {
    const t0 = process.hrtime.bigint();
    try { return await fn(); }
    finally {
      const sp = this.ctx.spent;
      if (sp) {
        sp[what] = (sp[what] || 0) + Number(process.hrtime.bigint() - t0) / 1e9;
        sp.counts = { ...sp.counts, [what]: (sp.counts?.[what] || 0) + 1 };
      }
    }
  }

  // Runs made so far and planned in all (each cell at least its minRuns,
  // or the runs it has made where it went on).
  #counts() {
    let done = 0, total = 0;
    for (const c of this.cells.values()) {
      const n = c.values.length + c.failed + c.slowHost.length;
      done += n;
      total += c.done ? n : Math.max(n + 1, c.meta.minRuns ?? this.minRuns);
    }
    return { done, total };
  }

  // --slow-host PCT as a share (0: set nothing aside, only report)
  #tolerance() { return this.ctx.slowHostTolerance ?? 0; }

  // The unit's warm-up before a measured run: its goodput and errors go to
  // the cells' warmups and the log ("warm-up ..."), nowhere else.
  async #warm(u, pending, round) {
    let w = null;
    try { w = await u.warm(); } catch (e) { this.ctx.log(`${this.name}: warm-up failed: ${e.message}`); }
    const rec = { round, value: w && typeof w === 'object' ? w.value : w, errors: w?.errors ?? null };
    const errs = rec.errors ? ERROR_KINDS.reduce((s, [k]) => s + (rec.errors[k] || 0), 0) : 0;
    this.ctx.log(`warm-up ${this.name}: ${pending.join(', ')}: ${Number.isFinite(rec.value) ? rec.value.toFixed(0) : '-'}/s` +
                 `${errs ? `, ${errs} errors` : ''} (not measured)`);
    for (const k of pending) this.cells.get(k).warmups.push(rec);
  }

  get(key) { return this.cells.get(key); }

  // a/b per round in which both cells ran: a same-round ratio cancels
  // what drifts between rounds (the machine's state), which a ratio of
  // two cells' medians keeps.
  pairedRatios(keyA, keyB) {
    const a = this.cells.get(keyA), b = this.cells.get(keyB);
    return a && b ? roundRatios(a, b) : [];
  }

  // The median of pairedRatios(a, b) with its summary, or the ratio of the
  // two cells' medians (summary null) where no round ran both.
  sameRoundRatio(keyA, keyB) {
    const r = this.pairedRatios(keyA, keyB);
    if (!r.length) return { value: this.median(keyA) / this.median(keyB), summary: null };
    const summary = summarize(r);
    return { value: summary.median, summary };
  }
  median(key) { const c = this.cells.get(key); return c && c.values.length ? c.summary.median : NaN; }
  keys() { return [...this.cells.keys()]; }

  // What the cells saw of the machine, for the report's notes.
  machineNote() { return machineNote([...this.cells.values()], this.target, this.ownIo); }
}

// a/b of two cells' runs ({values, rounds}) per round in which both ran:
// the same-round ratios, also of cells read back from a file (compare),
// where a run with no figure is null.
export function roundRatios(a, b) {
  const byRound = new Map(b.rounds.map((r, i) => [r, b.values[i]]));
  return a.rounds.flatMap((r, i) => byRound.get(r) > 0 && Number.isFinite(a.values[i]) ? [a.values[i] / byRound.get(r)] : []);
}

export function machineNote(cells, target = 0.05, ownIo = false) {
  const all = cells.flatMap(c => c.machine);
  if (!all.length) return '';
  const loads = all.map(m => m.load1);
  const busy = cells.filter(c => c.busy).length;
  const capped = cells.filter(c => c.capped).length;
  const aside = cells.reduce((n, c) => n + (c.slowHost?.length || 0), 0);
  const counted = cells.reduce((n, c) => n + c.values.length, 0);
  const probes = cells.flatMap(c => [...(c.probes || []), ...(c.slowHost || []).map(r => r.probe)]);
  const ref = quickest(probes);
  const pct = x => (100 * x).toFixed(1) + '%';
  const avg = k => all.reduce((s, m) => s + m[k], 0) / all.length;
  return `Machine during the runs: load average (1 min) ${Math.min(...loads).toFixed(2)}-${Math.max(...loads).toFixed(2)}, ` +
    `CPU taken by other work than the benchmark's ${pct(avg('other'))}, steal ${pct(avg('steal'))}, iowait ${pct(avg('iowait'))}` +
    `${ownIo ? ' (the runs\' own flushes: not judged)' : ''}; ` +
    `${busy} of ${cells.length} cells flagged busy (*), ${capped} stopped by the cap (!) before ` +
    `their 95% interval was within +-${(100 * target).toFixed(0)}%` +
    hostNote(cells, probes, ref, aside, counted) + '.\n';
}

// What the host probe saw (lib/hostprobe.mjs): its range against the
// quickest, and the runs set aside where --slow-host asked for it.
function hostNote(cells, probes, ref, aside, counted) {
  if (!Number.isFinite(ref)) return '';
  const tol = Math.max(0, ...cells.map(c => c.slowHostTolerance || 0));
  const worst = Math.max(...probes.filter(Number.isFinite));
  const over = probes.filter(p => slowHost(p, ref, SLOW_HOST)).length;
  return `; the host's CPU probe ${ref.toFixed(1)}-${worst.toFixed(1)} ms (quickest to slowest), ` +
    `${over} of ${probes.length} runs over +${(100 * SLOW_HOST).toFixed(0)}% of the quickest` +
    (tol > 0 ? `; ${aside} of ${aside + counted} runs set aside because the host ran more than ` +
               `${(100 * tol).toFixed(0)}% slow` : ' (none set aside: --slow-host)');
}

// A cell ran on a busy machine when, over its runs, other work than the
// benchmark's own processes took more than a quarter of the CPU (the load
// average cannot tell: the benchmark's own clients, server threads and
// database backends make it), or steal or iowait took a noticeable share.
// Where the runs themselves flush to disk (ownIo: sqlbench, the loads),
// iowait is their own waiting, the very thing measured: not judged.
export function busyFlag(ctx, machine, ownIo = false) {
  if (!machine.length) return false;
  const avg = k => machine.reduce((s, m) => s + (m[k] || 0), 0) / machine.length;
  return avg('other') > (ctx.busyOther ?? 0.25) || avg('steal') > 0.05 || (!ownIo && avg('iowait') > 0.10);
}

// "58032 [55100-60800]": the median and its 95% interval; with fewer runs
// than an interval needs, the median and the count (never a range). '!'
// the cap stopped it before the interval was within the target, '*' a busy
// machine, 'E' some run had errors (lib/goodput.mjs: not in the rate).
// digits: decimals, or a function that formats a number.
export function fmtCell(c, digits = 0) {
  if (!c || !c.values.length) return '-';
  const s = c.summary;
  const f = typeof digits === 'function' ? digits : x => fmtNum(x, digits);
  let text;
  if (!Number.isNaN(s.lo)) text = `${f(s.median)} [${f(s.lo)}-${f(s.hi)}]`;
  else text = `${f(s.median)} (n=${s.n})`;
  if (c.capped && !Number.isNaN(s.lo)) text += ' !';
  if (c.busy) text += ' *';
  if (cellErrors(c).total) text += ' E';
  return text;
}

export function fmtNum(x, digits = 0) {
  if (x === null || x === undefined || Number.isNaN(x)) return '-';
  return x.toFixed(digits);
}

export const cellLegend =
  'Each cell: the median of its runs and, in brackets, the 95% confidence interval of the ' +
  'median (order statistics; a cell is repeated until that interval lies within +-5% of the ' +
  'median, or a cap on runs or time is hit). With fewer than 6 runs no 95% interval exists: ' +
  'the count of runs is shown instead. A rate of requests counts answers only (2xx, and 404s where ' +
  'misses were asked for); `E` some runs had errors, counted apart by kind. Every cell of requests ' +
  'was warmed up at its concurrency before each measured run (not counted). `!` the cap stopped the cell first; ' +
  '`*` the machine was busy with other work during the cell (processes other than the ' +
  'benchmark\'s own took more than a quarter of the CPU, or steal was above 5%, or iowait above 10%). ' +
  'A fixed CPU loop is timed before and after every run; the machine line says how far the host\'s ' +
  'speed moved, and how many runs `--slow-host` set aside (not counted, run again).';

// Every cell's runs, summary, errors and warm-ups into DIR/data/NAME.json:
// the figures a later --only run and RESULTS.md's summary read.
export function writeCells(dir, name, cellList) {
  const d = path.join(dir, 'data');
  fs.mkdirSync(d, { recursive: true });
  const num = x => (Number.isFinite(x) ? x : null);
  const out = { provenance: provenance() };   // when, where, at which commit
  for (const c of cellList) {
    if (!c) continue;
    const s = c.summary || summarize(c.values);
    out[c.key] = { n: s.n, median: num(s.median), lo: num(s.lo), hi: num(s.hi), values: c.values,
                   rounds: c.rounds || [], probes: (c.probes || []).map(num),
                   slowHost: (c.slowHost || []).map(({ value, probe, round }) => ({ value, probe: num(probe), round })),
                   busy: !!c.busy, capped: !!c.capped, errors: cellErrors(c), warmups: c.warmups || [] };
  }
  const file = path.join(d, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(out, null, 1) + '\n');
  return file;
}
