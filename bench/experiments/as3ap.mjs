// Experiment 7: an AS3AP-style run over the postal data (sqlbench as3ap),
// in the two parts of the 2002 OSDB run that compared PostgreSQL 7.2 with
// 7.3: populate + single user, with a time per query kind, and a
// multi-user mixed phase with elapsed, client CPU and the table's size.
// On the four backends, and between two settings of one backend each for
// PostgreSQL (synchronous_commit on/off) and InnoDB
// (innodb_flush_log_at_trx_commit 1/2), as OSDB compared two builds.
import path from 'node:path';
import { machineNote, writeCells } from '../lib/cells.mjs';
import { barPlot } from '../lib/plot.mjs';
import { run } from '../lib/run.mjs';
import { table, fmtRatio } from '../lib/table.mjs';
import { SQL_BACKENDS, sqlbenchCells, secCell, rateCell } from '../lib/sqlbench.mjs';
import { median } from '../lib/stats.mjs';
import { explain } from '../lib/calibration.mjs';

// The second setting of a backend: the sqlbench --sync level and its name.
const SETTINGS = [['pg', 'off', 'synchronous_commit=off'], ['innodb', 'normal', 'innodb_flush_log_at_trx_commit=2']];

export default {
  title: 'AS3AP-style run over the postal data',
  // Each plot's caption, under this section in RESULTS.md.
  plots: {
    as3ap: "Seconds per query kind of the AS3AP-style run (populate and single user), log scale, per backend; lower is faster. Bars: the 95% interval of the median.",
  },
  async run(ctx) {
    const users = 10;
    // --quick: a generated set of the same layout, a tenth of the size.
    let dataset = ctx.dataset;
    if (ctx.quick) {
      dataset = path.join(ctx.work, 'as3ap-quick.csv');
      const g = await run(ctx.bin('gen'), ['--rows', '12000', '--seed', '2002', '-o', dataset], { log: ctx.logFile });
      if (g.code !== 0) throw new Error('build/bin/gen failed: see ' + ctx.logFile);
    }
    const args = ['--dataset', dataset, '--users', String(users)];
    // The experiment's budget: half for the four backends, a quarter for each second setting.
    const budgetS = ctx.repeat.budgetS;
    const base = await sqlbenchCells(ctx, 'as3ap', SQL_BACKENDS, { args, budgetS: budgetS / 2, name: 'as3ap' });
    const alt = [];
    for (const [b, level] of SETTINGS)
      alt.push(await sqlbenchCells(ctx, 'as3ap', [b], { args: [...args, '--sync', level], budgetS: budgetS / 4,
                                                        name: `as3ap ${b} --sync ${level}` }));
    const figs = [...base.figures];
    const tests = [...new Set(figs.map(f => f.test))].filter(t => !t.startsWith('size'));
    const backends = SQL_BACKENDS.filter(b => figs.some(f => f.backend === b));
    const find = (list, b, t) => list.find(f => f.backend === b && f.test === t);
    const mib = f => (f && f.bytes ? `${(f.bytes / 1048576).toFixed(1)} MiB` : '-');
    const single = tests.filter(t => !t.startsWith('mu_'));
    const multi = tests.filter(t => t.startsWith('mu_'));

    const lines = ['## Experiment 7: an AS3AP-style run over the postal data', '',
      `Command: \`${ctx.command('as3ap')}\`: \`build/bin/sqlbench as3ap --json --repeat 3 --users ${users} --dataset ${dataset}\`` +
      ' per backend, and with `--sync off` on pg and `--sync normal` on innodb; in rounds until each figure\'s 95%' +
      ' interval is within the target (populate runs once per invocation, so its figures have fewer runs).', '',
      'The 2002 OSDB run (PostgreSQL 7.2 vs 7.3, 400 MB on a Pentium III) timed each AS3AP query of a',
      '"populate + single user" part and a "multi user" mixed part with ten users; here the same kinds of',
      'query run on the postal data: `_cl` goes through the index on zip_code, `_ncl` through no index',
      '(trim(zip_code) hides it and gives the same rows), the self-join joins the table to itself on',
      'zip_code for one prefecture, bulk_modify updates the largest prefecture\'s rows in one statement.', '',
      '### Populate and single user: seconds for the statements of each kind (n)', '',
      table(['test', 'n', ...backends],
            single.map(t => [t, find(figs, backends[0], t)?.n ?? '-', ...backends.map(b => secCell(find(figs, b, t)))])),
      `### Multi user: ${users} connections at once, statements per second`, '',
      table(['mix', 'n', ...backends],
            multi.map(t => [t, find(figs, backends[0], t)?.n ?? '-', ...backends.map(b => rateCell(find(figs, b, t)))])),
      table(['', ...backends], [
        ['client CPU, user + sys s (mu_oltp)', ...backends.map(b => {
          const f = figs.find(x => x.backend === b && x.test.startsWith('mu_oltp'));
          return f ? `${median(f.users).toFixed(2)} + ${median(f.syss).toFixed(2)}` : '-';
        })],
        ['lock retries (mu_ir + mu_oltp)', ...backends.map(b => figs.filter(x => x.backend === b && x.test.startsWith('mu_'))
          .reduce((s, x) => s + x.retries, 0))],
        ['table + indexes after', ...backends.map(b => mib(figs.find(x => x.backend === b && x.test.startsWith('size'))))],
        ['durability', ...backends.map(b => figs.find(x => x.backend === b)?.sync ?? '-')],
      ]),
      '### Two settings of one backend', '',
      'As OSDB compared two builds of one server: each query kind at the server\'s default and at the',
      'second setting, and the ratio of their times (below 1: the second setting is faster).', ''];
    for (let i = 0; i < SETTINGS.length; i++) {
      const [b, , name] = SETTINGS[i];
      const other = alt[i].figures;
      const defSync = figs.find(f => f.backend === b)?.sync ?? 'default';
      const rows = tests.map(t => {
        const a = find(figs, b, t), o = find(other, b, t);
        const r = a && o && a.cell.values.length && o.cell.values.length ? o.cell.summary.median / a.cell.summary.median : NaN;
        return [t, secCell(a), secCell(o), fmtRatio(r)];
      });
      rows.push(['table + indexes after', mib(figs.find(x => x.backend === b && x.test.startsWith('size'))),
                 mib(other.find(x => x.test.startsWith('size'))), '']);
      lines.push(`${b}: ${defSync} against ${name}:`, '', table(['test', `${b} default (s)`, `${name} (s)`, 'ratio'], rows));
    }
    const all = [base, ...alt].flatMap(x => [...x.cells.cells.values()]);
    lines.push(machineNote(all, ctx.repeat.target, true), explain(ctx, 'as3ap'), '',
      'The 2002 figures for the same kinds of query (seconds, PostgreSQL 7.2.1 / CVS 7.3 snapshot):',
      'sel_1_cl 0.08 / 0.09, sel_1_ncl 0.07 / 0.14, sel_100_cl 2.54 / 2.59, sel_100_ncl 2.53 / 2.60,',
      'sel_10pct_ncl 133.47 / 51.50, table_scan 37.74 / 36.72, agg_simple_report 13,132.75 / 8,734.76,',
      'agg_scal 37.69 / 37.93, join_2_cl 0.08 / 0.12, bulk_modify 2,552.16 / 2,464.31. Multi user, ten',
      'users (7.2.1 had not finished; the 7.3 snapshot / the same with the old tuple header): Mixed IR',
      '101.32 / 98.97 tup/s, Mixed OLTP 32.03 / 28.69 tup/s.');
    writeCells(ctx.out, 'as3ap', all);
    barPlot(ctx.out, 'as3ap', { title: 'AS3AP-style, populate and single user: seconds per query kind (log scale); bars: 95% CI of the median',
      ylabel: 'seconds', log: true, series: backends, width: 1000,
      groups: single.map(t => ({ label: t, bars: Object.fromEntries(backends.map(b => [b, find(figs, b, t)?.cell?.summary])) })) });
    return lines.join('\n');
  },
};
