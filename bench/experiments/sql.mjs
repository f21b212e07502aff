// Experiments 4-6: the SQL micro-benchmarks of build/bin/sqlbench (--json)
// on every backend of the config, next to the published figures they
// reproduce: the 2001 speed tests, separate vs single transaction (2005),
// concurrent writers and the job queue (2022).
import { fmtNum, machineNote, writeCells } from '../lib/cells.mjs';
import { barPlot } from '../lib/plot.mjs';
import { table, fmtRatio } from '../lib/table.mjs';
import { SQL_BACKENDS, sqlbenchCells, secCell, backendsLine } from '../lib/sqlbench.mjs';
import { median } from '../lib/stats.mjs';
import { explain } from '../lib/calibration.mjs';

export default {
  title: 'SQL micro-benchmarks (sqlbench)',
  // Each plot's caption, under this section in RESULTS.md.
  plots: {
    'sql-speed': "Seconds per test of the 2001 speed comparison's tests, per backend (log scale); lower is faster.",
    'sql-writers': "Seconds per workload with concurrent writers and the job queue, per backend (log scale); lower is faster.",
  },
  async run(ctx) {
    // The experiment's budget, shared: speed a fifth, txn and writers two fifths each.
    const budget = share => ctx.repeat.budgetS * share;
    const lines = ['## Experiments 4-6: SQL micro-benchmarks', '',
      `Command: \`${ctx.command('sql')}\`: \`build/bin/sqlbench EXPERIMENT --json --repeat 3${ctx.quick ? ' --quick' : ''} ` +
      '--backends B` per backend, in rounds until every figure\'s 95% interval is within the target ' +
      '(the runs of all rounds pooled). Client and servers share the machine: read ratios within one table.', ''];

    // ---- 4: speed ----
    const speed = await sqlbenchCells(ctx, 'speed', SQL_BACKENDS, { budgetS: budget(0.2) });
    const backendsSeen = SQL_BACKENDS.filter(b => speed.figures.some(f => f.backend === b));
    const tests = [...new Set(speed.figures.map(f => f.test))];
    const find = (figs, b, t) => figs.find(f => f.backend === b && f.test === t);
    lines.push('### Experiment 4: the 2001 speed comparison (real seconds)', '',
      `Backends: ${backendsLine(speed.figures)}.`, '',
      table(['test', ...backendsSeen], tests.map(t => [t, ...backendsSeen.map(b => secCell(find(speed.figures, b, t)))])),
      '### Experiment 4: client CPU, user + sys seconds (median)', '',
      table(['test', ...backendsSeen], tests.map(t => [t, ...backendsSeen.map(b => {
        const f = find(speed.figures, b, t);
        return f ? `${median(f.users).toFixed(3)} + ${median(f.syss).toFixed(3)}` : '-';
      })])),
      'user/sys are sqlbench\'s own getrusage deltas: for the client/server backends (pg, innodb,',
      'myisam) the server\'s CPU is not in them, as the 2001 page noted for PostgreSQL; for SQLite',
      'they are the whole cost.', '', REF_2001);

    // ---- 5: txn ----
    const txn = await sqlbenchCells(ctx, 'txn', SQL_BACKENDS, { budgetS: budget(0.4) });
    const txnRows = [];
    for (const b of SQL_BACKENDS) for (const sep of txn.figures.filter(f => f.backend === b && f.test === 'separate')) {
      const one = txn.figures.find(f => f.backend === b && f.test === 'single' && f.n === sep.n && f.sync === sep.sync);
      const r = one && sep.cell.values.length && one.cell.values.length ? sep.cell.summary.median / one.cell.summary.median : NaN;
      txnRows.push([b, sep.sync, sep.n, secCell(sep, 1000), secCell(one, 1000), (sep.extrapolated ? '~' : '') + fmtRatio(r, 1)]);
    }
    lines.push('### Experiment 5: separate vs single transaction (ms)', '',
      table(['backend', 'durability', 'inserts', 'separate ms', 'single ms', 'separate/single'], txnRows, 'llrrrr'),
      '"separate": every INSERT its own transaction (autocommit); "single": BEGIN, the INSERTs,',
      'COMMIT; both with one prepared INSERT. \'~\' marks a figure extrapolated from the inserts',
      'done before the case\'s time cap (sqlbench --max-seconds).', '', REF_2005);

    // ---- 6: writers, and the file system beside the databases ----
    const targets = [...SQL_BACKENDS, 'files', 'files_sync'];
    const wr = await sqlbenchCells(ctx, 'writers', targets, { budgetS: budget(0.4) });
    const wrRows = [];
    const rate = f => (f && f.cell.values.length ? f.n / f.cell.summary.median : NaN);
    for (const b of targets) for (const f of wr.figures.filter(x => x.backend === b))
      wrRows.push([b, f.test, `${f.n} ${f.test.includes('job') ? 'tasks' : 'inserts'}`, secCell(f), fmtNum(rate(f)),
                   f.retries, `${median(f.users).toFixed(2)} + ${median(f.syss).toFixed(2)}`, f.sync]);
    // Each target's rate against SQLite's, workload by workload, as 2022 compared them.
    const workloads = [...new Set(wr.figures.map(f => f.test))];
    const vsSqlite = workloads.map(w => {
      const base = rate(wr.figures.find(f => f.backend === 'sqlite' && f.test === w));
      return [w, ...targets.filter(t => t !== 'sqlite').map(t => fmtRatio(rate(wr.figures.find(f => f.backend === t && f.test === w)) / base))];
    });
    lines.push('### Experiment 6: concurrent writers and the job queue, next to the file system', '',
      table(['target', 'test', 'ops', 'seconds', 'ops/s', 'busy retries', 'client user+sys s', 'durability'], wrRows, 'llrrrrrl'),
      'Rate against SQLite\'s (ops/s over SQLite\'s ops/s, the same workload, same run):', '',
      table(['workload', ...targets.filter(t => t !== 'sqlite')], vsSqlite),
      'Every statement autocommits. Writers: one thread and one connection each, all inserting at',
      'once. Job queue: each task is an INSERT, an UPDATE of status, 10 UPDATEs of progress and a',
      'DELETE, on a table indexed on status and scheduled_at. SQLite runs in WAL mode with a busy',
      'timeout; a statement that still gets SQLITE_BUSY is retried and counted (summed over the runs).',
      'files: one file per record in the scratch directory, as the 2022 test did; an insert writes a',
      'file, an update rewrites it whole, a delete unlinks it; files_sync writes NAME.tmp, fsyncs it',
      'and renames it over NAME (the directory is not fsync\'ed, as the test did not).', '',
      REF_2022);
    const all = [...speed.cells.cells.values(), ...txn.cells.cells.values(), ...wr.cells.cells.values()];
    lines.push(machineNote(all, ctx.repeat.target, true), explain(ctx, 'sql'));
    writeCells(ctx.out, 'sql', all);
    // The plots: seconds of each 2001 test, and of each writers' workload,
    // per backend, with the 95% interval of each median.
    const bars = (figs, names, t) => Object.fromEntries(names.map(b => [b, find(figs, b, t)?.cell?.summary]));
    barPlot(ctx.out, 'sql-speed', { title: 'The 2001 speed tests: seconds per test (log scale); bars: 95% CI of the median',
      ylabel: 'seconds', log: true, series: backendsSeen, groups: tests.map(t => ({ label: t, bars: bars(speed.figures, backendsSeen, t) })) });
    barPlot(ctx.out, 'sql-writers', { title: 'Concurrent writers and the job queue: seconds per workload (log scale); bars: 95% CI of the median',
      ylabel: 'seconds', log: true, series: targets, groups: workloads.map(w => ({ label: w, bars: bars(wr.figures, targets, w) })) });
    return lines.join('\n');
  },
};

const REF_2001 = `The 2001 figures (real seconds; 550 MHz Athlon, 256 MB, IDE disk, RedHat 6.0;
test 1 loaded with COPY, tests 5, 8, 9 sent 1,000 separate SQL texts):

| test | PostgreSQL 6.4.2 | SQLite 1.0.32 | SQLite 2.0-alpha-2 |
|---|---:|---:|---:|
| 1 CREATE TABLE + 30000 rows | 1.84 | 3.29 | 0.77 |
| 2 SELECT aggregates, no index | 1.22 | 0.80 | 0.65 |
| 3 CREATE INDEX x2 | 2.24 | 5.37 | 3.71 |
| 4 SELECT aggregates, indexed | 0.19 | 0.77 | 0.62 |
| 5 1000 SELECTs by key | 0.95 | 15.70 | 0.20 |
| 6 UPDATE 5001-row key range | 6.56 | 3.54 | 2.70 |
| 7 INSERT ... SELECT | 2.05 | 1.80 | 0.69 |
| 8 1000 INSERTs, autocommit | 5.28 | 2.20 | 10.99 |
| 9 1000 INSERTs in 1 txn | 0.68 | 1.72 | 0.10 |
| 10 DELETE | 7.25 | 6.98 | 5.89 |
| 11 DROP TABLE x4 | 0.06 | 0.03 | 3.12 |

Then, test 8 vs test 9 was 110x for SQLite 2.0 and 7.8x for PostgreSQL; the
page's user/sys for PostgreSQL were "meaningless" (client only), as ours are
for pg, innodb and myisam.
`;

const REF_2005 = `The 2005 figures (SQLite 3.2.7 on Windows XP, AMD 2500+, NTFS; ms):

| inserts | separate, flushing | single, flushing | ratio | separate, no flush | single, no flush | ratio |
|---:|---:|---:|---:|---:|---:|---:|
| 1 | 79 | 78 | 1.0x | 0 | 0 | - |
| 10 | 672 | 79 | 8.5x | 16 | 0 | - |
| 100 | 6,719 | 78 | 86x | 156 | 0 | - |
| 1,000 | 77,359 | 156 | 496x | 969 | 78 | 12x |
| 10,000 | 789,453 | 781 | 1,011x | 9,828 | 594 | 17x |

The "80x" of that post is separate transactions with flushing vs without
(789,453 / 9,828 ms at 10,000 inserts): about 79 ms per flushed commit then.
`;

const REF_2022 = `The 2022 figures (Go, mattn/go-sqlite3 with WAL, synchronous=NORMAL and a
5 s busy timeout, btrfs on a laptop SSD; the file system: one file per record):

| test | SQLite runs | btrfs runs | rate |
|---|---|---|---:|
| 10,000 inserts in a loop, one writer | 0.647, 0.809, 0.708 s | 0.393, 0.371, 0.382 s | SQLite ~14,000 inserts/s |
| 100 writers x 1,000 inserts | 8.2, 8.1, 8.5 s | 3.1, 3.4, 3.4 s | SQLite ~12,000, btrfs ~30,000/s |
| job queue, 100 workers x 100 tasks | 11.5, 10.3, 7.8 s (later runs 6.5-10.8 s) | 3.3, 3.2, 2.4 s | ~1,000 tasks/s |
| the same, files written tmp + rename | 9.6, 9.6, 7.9 s | 13.5, 13.3, 10.2 s | |
| same on ext4, $5 Linode | 8.0-8.7 s | 15.7-18.3 s (tmp + rename) | ~1,200 tasks/s |

The post also found PostgreSQL on the same machine "roughly the same as
SQLite's worst performance".
`;
