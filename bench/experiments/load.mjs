// Experiment 1: loading the postal codes, rows/s per backend and load mode
// (build/bin/loader --json), next to the 2008 figures.
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell, writeCells } from '../lib/cells.mjs';
import { table, fmtRatio } from '../lib/table.mjs';
import { barPlot, writeData } from '../lib/plot.mjs';
import { runJSON } from '../lib/run.mjs';
import { explain } from '../lib/calibration.mjs';
import { benchSets, benchSqlite } from '../lib/benchdb.mjs';

const BACKENDS = ['sqlite', 'sqlite_mem', 'pg', 'innodb', 'myisam'];
const MODES = ['autocommit', 'transaction', 'prepared', 'bulk'];

export default {
  title: 'loading the postal codes',
  // Each plot's caption, under this section in RESULTS.md.
  plots: {
    load: "Rows per second loading the postal list, per backend and load mode (log scale). Bars: the 95% interval of the median.",
  },
  async run(ctx) {
    // The per-row modes are timed on the first rows of the file: autocommit
    // commits (and so flushes) per row, transaction sends one statement per
    // row; their rate is what the 2008 table compares.
    const sample = { autocommit: ctx.quick ? 500 : 3000, transaction: ctx.quick ? 2000 : 20000 };
    const modes = ctx.quick ? ['autocommit', 'bulk'] : MODES;
    const meta = fs.existsSync(ctx.dataset.replace(/\.csv$/, '.meta'))
      ? (fs.readFileSync(ctx.dataset.replace(/\.csv$/, '.meta'), 'utf8').match(/^rows=(\d+)/m) || [])[1] : null;
    const total = Number(meta) || 126431;
    const info = {};
    const cells = new Cells(ctx, 'load', { ownIo: true });
    for (const b of BACKENDS) for (const m of modes) {
      cells.add(`${b} ${m}`, async () => {
        // The bench's own tables (bench_load*): samples never replace a served table.
        const args = ['-q', '--json', '--conf', ctx.conf, '--mode', m, '--dataset', ctx.dataset, ...benchSets(ctx, 'load')];
        if (sample[m]) args.push('--limit', String(sample[m]));
        if (m === 'prepared') args.push('--batch', '100');
        if (b === 'sqlite_mem') args.push('--backend', 'sqlite', '--set', 'sqlite.path=:memory:');
        else args.push('--backend', b);
        const r = await runJSON(ctx.bin('loader'), args, { log: ctx.logFile });
        const j = r.json[0];
        if (r.code !== 0 || !j) { ctx.log(`loader ${b} ${m}: exit ${r.code}`); return NaN; }
        info[`${b} ${m}`] = j;
        return { value: j.rows_per_s, seconds: j.seconds };
      });
    }
    await cells.measure();

    const rows = [], dat = [], bulk = {}, auto = {};
    for (const b of BACKENDS) for (const m of modes) {
      const k = `${b} ${m}`, c = cells.get(k), j = info[k];
      if (!c.values.length) { rows.push([b, m, '-', '-', '-', '-', '-']); continue; }
      const rate = c.summary.median;
      if (m === 'bulk') bulk[b] = rate;
      if (m === 'autocommit') auto[b] = rate;
      dat.push([b, m, rate.toFixed(1)]);
      rows.push([b, m, j.rows, (j.rows / rate).toFixed(3), fmtCell(c), (total / rate).toFixed(1),
                 `${j.version}; ${j.sync}`]);
    }
    const lines = [
      '## Experiment 1: loading the postal codes', '',
      `Command: \`${ctx.command('load')}\`: \`build/bin/loader --json --mode MODE --backend B\` per cell, into the` +
        ` bench's own tables (\`bench_load*\`, \`${path.relative(ctx.root, benchSqlite(ctx, 'load'))}\`)` +
        ` (autocommit timed on the first ${sample.autocommit} rows, transaction on the first ${sample.transaction};` +
        ' the other modes load the whole file; sqlite_mem is `--set sqlite.path=:memory:`).',
      `Dataset: \`${ctx.dataset}\` (${total} rows).`, '',
      table(['backend', 'mode', 'rows loaded', 'seconds (median)', 'rows/s median [95% CI]',
             `est. s for ${total} rows`, 'durability'], rows, 'llrrrrl'),
      cells.machineNote(), '',
    ];
    const ratios = BACKENDS.filter(b => bulk[b] && auto[b])
      .map(b => [b, bulk[b].toFixed(0), auto[b].toFixed(0), fmtRatio(bulk[b] / auto[b], 1)]);
    if (ratios.length)
      lines.push(table(['backend', 'bulk rows/s', 'autocommit rows/s', 'bulk / autocommit'], ratios));
    for (const b of ['pg', 'sqlite']) {
      const c = cells.get(`${b} bulk`), j = info[`${b} bulk`];
      if (c && c.values.length && j && j.rows >= total) {
        const s = j.rows / c.summary.median;
        lines.push(`Bulk load of the real list into ${b}: ${s.toFixed(3)} s (median), ${s < 2 ? 'under' : 'over'} 2 s.  `);
      }
    }
    lines.push('', explain(ctx, 'load'), '',
               'The 2008 figures (122,000 one-by-one INSERTs from PHP, untuned servers, PentiumD, PATA disk):',
               'InnoDB 130.7 s, MyISAM 131.2 s, PostgreSQL 159.5 s, SQLite 676.4 s.');

    writeData(ctx.out, 'load.dat', dat);
    writeCells(ctx.out, 'load', cells.keys().map(k => cells.get(k)));
    barPlot(ctx.out, 'load', {
      title: 'Loading the postal codes: rows per second by backend and mode (log scale); bars: 95% CI of the median',
      ylabel: 'rows/s', log: true, series: modes,
      groups: BACKENDS.map(b => ({ label: b, bars: Object.fromEntries(modes.map(m => [m, cells.get(`${b} ${m}`)?.summary])) })),
    });
    return lines.join('\n');
  },
};
