// Calibration: the machine's own costs, measured first, so every other
// figure can be read against them (lib/calibration.mjs says which cost
// explains which experiment). The same experiment gives very different
// absolute figures on two machines; these say why.
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell, machineNote, writeCells } from '../lib/cells.mjs';
import { rateRun } from '../lib/goodput.mjs';
import { barPlot } from '../lib/plot.mjs';
import { table } from '../lib/table.mjs';
import { run } from '../lib/run.mjs';
import { nginx, dbEnv } from '../lib/services.mjs';
import { loadgen } from '../lib/clients.mjs';
import { sqlbenchCells } from '../lib/sqlbench.mjs';
import { programs } from '../lib/machine.mjs';
import { provenance } from '../lib/provenance.mjs';

const us = x => (Number.isFinite(x) ? (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)) : '-');

// pg_test_fsync's one-8kB-write lines: {method: µs per op}.
export function parsePgTestFsync(text) {
  const out = {};
  const part = text.split(/Compare file sync methods using two/)[0];
  for (const m of part.matchAll(/^\s+(\w+)\s+[\d.]+ ops\/sec\s+(\d+) usecs\/op/gm)) out[m[1]] = Number(m[2]);
  return out;
}

export default {
  title: "the machine's own costs",
  // Each plot's caption, under this section in RESULTS.md.
  plots: {
    calibrate: "What this machine's basic operations cost, in µs (log scale): an fsync, a loopback round trip, a process spawn, a connection to each database, an SQLite open, one request to nginx. The figures above are read against these.",
  },
  async run(ctx) {
    const env = await dbEnv(ctx);
    const dbdir = env.ZB_DB_DIR || path.join(ctx.root, 'build/db');
    const scratch = path.join(dbdir, 'sqlbench-scratch');
    const lines = ['## Calibration: the machine\'s own costs', '',
      `Command: \`${ctx.command('calibrate')}\`. What every figure below is made of, measured on this`,
      'machine in this run; each experiment says which of these explains its figures.', ''];

    // sqlbench calibrate: fsync, TCP round trip, spawn, connections.
    const sb = await sqlbenchCells(ctx, 'calibrate', ['sqlite', 'pg', 'innodb'],
                                   { args: ['--scratch', scratch], budgetS: ctx.repeat.budgetS / 3, name: 'calibrate' });
    fs.rmSync(scratch, { recursive: true, force: true });
    const fig = (backend, prefix) => sb.figures.find(f => f.backend === backend && f.test.startsWith(prefix));
    // per operation, µs: a run's seconds over its n operations
    const perOp = f => {
      if (!f || !f.cell || !f.cell.values.length) return { text: '-', us: NaN };
      const k = 1e6 / f.n, s = f.cell.summary;
      return { text: fmtCell(f.cell, x => us(x * k)), us: s.median * k, summary: { median: s.median * k, lo: s.lo * k, hi: s.hi * k } };
    };

    // nginx serving a static file, one request at a time, as loadgen sees it.
    const ng = await nginx(ctx);
    const url = `http://127.0.0.1:${ng.port}/400.html`;
    const cells = new Cells(ctx, 'calibrate');
    const n = ctx.quick ? 2000 : 20000;
    for (const ka of [true, false])
      cells.add(`nginx ${ka ? 'keep-alive' : 'close'}`, async () => {
        // µs per answered request (lib/goodput.mjs: errors apart, never in it)
        const g = rateRun(await loadgen(ctx, { url, c: 1, requests: ka ? n : n / 4, seconds: 10, keepalive: ka }));
        return typeof g === 'object' && g.value > 0 ? { ...g, value: 1e6 / g.value } : NaN;
      });
    // pgbench -C: PostgreSQL's own client, a new connection per transaction.
    const pgbench = programs.pgbench();
    const script = path.join(ctx.work, 'select1.sql');
    fs.writeFileSync(script, 'SELECT 1;\n');
    if (pgbench)
      cells.add('pgbench -C', async () => {
        const r = await run(pgbench, ['-n', '-C', '-c', '1', '-T', ctx.quick ? '1' : '2', '-f', script],
                            { env, log: ctx.logFile });
        const m = r.stdout.match(/average connection time = ([\d.]+) ms/);
        return m ? Number(m[1]) * 1000 : NaN;
      });
    await cells.measure();

    // pg_test_fsync itself, once (about 15 s), for the reference figures.
    let pgtf = {};
    const ptf = programs.pgTestFsync();
    if (ptf && !ctx.quick) {
      const file = path.join(dbdir, 'pg_test_fsync.tmp');
      const r = await run(ptf, ['-f', file, '-s', '1'], { log: ctx.logFile, timeoutS: 120 });
      fs.rmSync(file, { force: true });
      pgtf = parsePgTestFsync(r.stdout);
    }

    const fsync = perOp(fig('machine', 'fsync')), tcp = perOp(fig('machine', 'tcp')),
          spawn = perOp(fig('machine', 'spawn')), pg = perOp(fig('pg', 'connect')),
          my = perOp(fig('innodb', 'connect')), lite = perOp(fig('sqlite', 'open'));
    // A round trip is two wake-ups (two switches): each figure per one.
    const half = x => (x.summary ? { us: x.us / 2,
                                     summary: { median: x.summary.median / 2, lo: x.summary.lo / 2, hi: x.summary.hi / 2 } } : x);
    const wake = half(perOp(fig('machine', 'wake'))), swtch = half(perOp(fig('machine', 'switch'))),
          fork = perOp(fig('machine', 'fork')), mem = perOp(fig('machine', 'memory'));
    const usText = x => (x.summary ? `${us(x.summary.median)} [${us(x.summary.lo)}-${us(x.summary.hi)}]` : '-');
    const c = k => cells.get(k);
    const cellUs = k => (c(k) && c(k).values.length ? fmtCell(c(k), us) : '-');
    const rows = [
      ['fsync: 8 kB write + fdatasync', `\`sqlbench calibrate\` in the database directory (${path.isAbsolute(dbdir) && dbdir.startsWith(ctx.root + '/') ? path.relative(ctx.root, dbdir) : dbdir})`, fsync.text, perSec(fsync.us)],
      ...Object.entries(pgtf).map(([m, v]) => [`fsync: ${m}, one 8 kB write`, '`pg_test_fsync -s 1`, the same directory, one run', `${v}`, perSec(v)]),
      ['loopback TCP round trip (1 byte)', '`sqlbench calibrate`: two threads, TCP_NODELAY', tcp.text, perSec(tcp.us)],
      ['process spawn', '`sqlbench calibrate`: posix_spawn /bin/true + waitpid', spawn.text, perSec(spawn.us)],
      ['wake-up', '`sqlbench calibrate`: a thread asleep in epoll_wait woken through an eventfd (half a round trip)', usText(wake), perSec(wake.us)],
      ['context switch', '`sqlbench calibrate`: two processes on one CPU, a pipe round trip (half of it)', usText(swtch), perSec(swtch.us)],
      ['fork and exit', '`sqlbench calibrate`: fork + _exit + waitpid', fork.text, perSec(fork.us)],
      ['memory-bound load', '`sqlbench calibrate`: a dependent load through 64 MiB (µs; a cache miss)', usText(mem), perSec(mem.us)],
      ['PostgreSQL connection', '`sqlbench calibrate`: connect + close (libpq, unix socket)', pg.text, perSec(pg.us)],
      ...(pgbench ? [['PostgreSQL connection, pgbench -C', '`pgbench -n -C -c 1 -f select1.sql`: "average connection time"', cellUs('pgbench -C'), perSec(c('pgbench -C')?.summary?.median)]] : []),
      ['MariaDB connection', '`sqlbench calibrate`: connect + close (Connector/C, unix socket)', my.text, perSec(my.us)],
      ['SQLite open', '`sqlbench calibrate`: sqlite3_open_v2 + close', lite.text, perSec(lite.us)],
      ['HTTP request to nginx, static 400 B', `\`loadgen -k -c 1 -n ${n}\` on scripts/nginx`, cellUs('nginx keep-alive'), perSec(c('nginx keep-alive')?.summary?.median)],
      ['the same, a new TCP connection each', `\`loadgen -c 1 -n ${n / 4}\` (no keep-alive)`, cellUs('nginx close'), perSec(c('nginx close')?.summary?.median)],
    ];
    lines.push(table(['cost', 'how', 'µs: median [95% CI]', 'per second'], rows, 'llrr'),
      machineNote([...sb.cells.cells.values(), ...cells.cells.values()], ctx.repeat.target));

    const med = k => (c(k) && c(k).values.length ? c(k).summary.median : undefined);
    const data = {
      fsync_us: fsync.us, tcp_rtt_us: tcp.us, spawn_us: spawn.us,
      wake_us: wake.us, switch_us: swtch.us, fork_us: fork.us, memory_load_us: mem.us,
      connect_us: { pg: pg.us, innodb: my.us, sqlite: lite.us, pgbench: med('pgbench -C') },
      nginx_us: med('nginx keep-alive'), nginx_conn_us: med('nginx close'), pg_test_fsync_us: pgtf,
    };
    fs.mkdirSync(path.join(ctx.out, 'data'), { recursive: true });
    fs.writeFileSync(path.join(ctx.out, 'data/calibrate.json'), JSON.stringify({ provenance: provenance(), ...data }, null, 1) + '\n');
    writeCells(ctx.out, 'calibrate-cells', [...sb.cells.cells.values(), ...cells.cells.values()]);
    const sumOf = k => (c(k) && c(k).values.length ? c(k).summary : undefined);
    barPlot(ctx.out, 'calibrate', {
      title: "The machine's own costs: µs per operation, bars: 95% CI of the median", ylabel: 'µs (log scale)', log: true,
      series: ['µs'], groups: [['fsync', fsync.summary], ['TCP round trip', tcp.summary], ['spawn', spawn.summary],
        ['pg connect', pg.summary], ['pgbench -C connect', sumOf('pgbench -C')], ['MariaDB connect', my.summary],
        ['SQLite open', lite.summary], ['nginx request', sumOf('nginx keep-alive')], ['nginx + new TCP', sumOf('nginx close')]]
        .map(([label, x]) => ({ label, bars: { 'µs': x } })),
    });
    return lines.join('\n');
  },
};

function perSec(usPerOp) {
  return Number.isFinite(usPerOp) && usPerOp > 0 ? Math.round(1e6 / usPerOp).toLocaleString('en-US') : '-';
}
