// Running build/bin/sqlbench (--json) as cells: one invocation per target
// per round, its figures' runs pooled across rounds until each figure's
// 95% interval is narrow enough (lib/cells.mjs).
import { Cells, fmtCell } from './cells.mjs';
import { runJSON } from './run.mjs';

export const SQL_BACKENDS = ['sqlite', 'pg', 'innodb', 'myisam'];

// Runs one sqlbench experiment in rounds (each round one invocation with
// --repeat R on the backends that still have unfinished figures) until
// every figure's interval is narrow enough: the cells, and the last JSON
// object of each figure (version, sync, n, CPU).
export async function sqlbenchCells(ctx, experiment, backends, { budgetS, repeat = 3, args = [], name } = {}) {
  const info = new Map();
  const cells = new Cells(ctx, name || `sqlbench ${experiment}`, { budgetS, ownIo: true });
  const keyOf = j => [j.experiment, j.backend, j.test, j.sync, j.n].join('|');
  const runOnce = async pendingBackends => {
    const r = await runJSON(ctx.bin('sqlbench'), [experiment, '--json', '--conf', ctx.conf,
      '--backends', pendingBackends.join(','), '--repeat', String(ctx.quick ? 1 : repeat),
      ...(ctx.quick ? ['--quick'] : []), ...args], { log: ctx.logFile, timeoutS: 3600 });
    if (r.code !== 0) ctx.log(`sqlbench ${experiment}: exit ${r.code}: ${r.stderr.trim().split('\n').slice(-2).join(' | ')}`);
    const got = {};
    for (const j of r.json) {
      const k = keyOf(j);
      const prev = info.get(k);
      // CPU and retries: kept per invocation, medians taken at the end
      info.set(k, { ...j, users: [...(prev?.users || []), j.user_s], syss: [...(prev?.syss || []), j.sys_s],
                    retries: (prev?.retries || 0) + (j.busy_retries || 0),
                    extrapolated: (prev?.extrapolated || false) || j.extrapolated });
      got[k] = j.runs_s;
    }
    return got;
  };
  // One unit per backend: its figures are the cells it reports.
  for (const b of backends) cells.addBatch([], () => runOnce([b]));
  await cells.measure();
  const figures = [...info.values()].map(j => ({ ...j, cell: cells.get(keyOf(j)) }));
  return { cells, figures };
}

// The header sqlbench's own report prints: per backend version and durability.
export function backendsLine(figures) {
  const seen = new Map();
  for (const f of figures) if (!seen.has(f.backend)) seen.set(f.backend, `${f.backend}: ${f.version}`);
  return [...seen.values()].join('; ');
}

export const secs = x => (x >= 100 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x >= 0.001 ? x.toFixed(4) : x.toFixed(6));

// A cell of seconds (or ms with mult 1000), '~' when extrapolated.
export function secCell(f, mult = 1) {
  if (!f || !f.cell || !f.cell.values.length) return '-';
  return (f.extrapolated ? '~' : '') + fmtCell(f.cell, x => secs(x * mult));
}


// The same figure as a rate: n over the seconds, its interval turned round.
export function rateCell(f, digits = 0) {
  if (!f || !f.cell || !f.cell.values.length) return '-';
  const s = f.cell.summary, r = x => f.n / x;
  const summary = { ...s, median: r(s.median), lo: r(s.hi), hi: r(s.lo), min: r(s.max), max: r(s.min) };
  return fmtCell({ ...f.cell, summary }, digits);
}
