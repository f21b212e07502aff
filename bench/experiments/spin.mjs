// Experiment: the MariaDB lookup path. The server's CPU per pooled lookup
// on InnoDB and MyISAM against PostgreSQL's (issue 51's goal: at most
// 1.2x), each with the loops sleeping as soon as they have nothing to do
// (spin_us 0, the default) and spinning before they sleep ([server]
// spin_us N: a loop that just had work polls epoll_wait(0) that long),
// one server per spin, every cell in the same rounds. Each run: the
// server's CPU (utime + stime, /proc) and its loops' spinning (/stats
// server.loops[].spin_s) around `loadgen -k -c 10`, and the database's
// CPU, over the lookups answered.
import path from 'node:path';
import { Cells, fmtCell, writeCells } from '../lib/cells.mjs';
import { table } from '../lib/table.mjs';
import { getJSON } from '../lib/http.mjs';
import { loadBenchTables, startServer } from '../lib/benchdb.mjs';
import { benchPort, dbPids } from '../lib/services.mjs';
import { loadgen, warmRun } from '../lib/clients.mjs';
import { rateRun, errorNote } from '../lib/goodput.mjs';
import { keysFile } from '../lib/dataset.mjs';
import { ratioOf, extraSummary, extraRatio, fmtRatioCI } from '../lib/rank.mjs';
import { processTicks, treeTicks, ticksToUs } from '../lib/proc.mjs';

const BACKENDS = ['pg', 'innodb', 'myisam'];
const LABEL = { pg: 'PostgreSQL', innodb: 'InnoDB', myisam: 'MyISAM' };
const C = 10;
// Server CPU per MariaDB lookup over pg's (issue 51).
const GOAL = 1.2;

// The spins of a run (µs): ZB_BENCH_SPIN_US narrows or widens it; 0 first.
export function spinLevels(text = '0,20,50') {
  const levels = text.split(',').map(Number);
  if (!levels.length || !levels.every(n => Number.isInteger(n) && n >= 0))
    throw new Error(`ZB_BENCH_SPIN_US: '${text}' is not a list of microseconds`);
  return [...new Set([0, ...levels])];
}

const key = (b, us) => `${b} spin ${us}`;
const spinOf = stats => (stats?.server?.loops || []).reduce((s, l) => s + (l.spin_s || 0), 0);

export default {
  title: 'the MariaDB lookup path: server CPU per lookup against PostgreSQL\'s, with and without a spin',
  async run(ctx) {
    const levels = ctx.quick ? [0, 20] : spinLevels(process.env.ZB_BENCH_SPIN_US || undefined);
    const { avail, skipped } = await loadBenchTables(ctx, 'lookup', BACKENDS);
    if (!avail.includes('pg') || avail.length < 2) throw new Error('spin: needs pg and a MariaDB engine');
    const keys = keysFile(ctx);
    const base = benchPort('SPIN', 24);
    const servers = [];
    try {
      for (const [i, us] of levels.entries())
        servers.push(await startServer(ctx, 'lookup', base + i, avail, {
          log: path.join(ctx.work, `spin-${us}.log`), extra: ['--set', `server.spin_us=${us}`] }));
      const pids = await dbPids(ctx);
      const dbTicks = b => (b === 'pg' ? treeTicks(pids.pg) : processTicks(pids.mariadb));
      const cells = new Cells(ctx, 'spin');
      for (const [i, us] of levels.entries()) for (const b of avail) {
        const srv = servers[i], port = base + i;
        const url = `http://127.0.0.1:${port}/zip/${b}/{key}?strategy=pooled`;
        cells.add(key(b, us), async () => {
          const s0 = processTicks(srv.pid), d0 = dbTicks(b), spin0 = spinOf(await getJSON(port, '/stats'));
          const r = await loadgen(ctx, { url, c: C, seconds: ctx.quick ? 0.5 : 3, keys });
          const g = rateRun(r);
          if (!r) return g;
          const answered = g.value * r.seconds;
          const spinUs = (spinOf(await getJSON(port, '/stats')) - spin0) * 1e6 / (answered || NaN);
          const serverUs = ticksToUs(processTicks(srv.pid) - s0, answered);
          // The cell's figure: the server's CPU per answered lookup.
          return { ...g, rate: g.value, value: serverUs, spinUs, awakeUs: serverUs - spinUs,
                   dbUs: ticksToUs(dbTicks(b) - d0, answered) };
        }, { warm: () => warmRun(ctx, { url, c: C, keys }) });
      }
      await cells.measure();
      return report(ctx, { cells, levels, avail, skipped });
    } finally {
      for (const s of servers) await s.stop();
    }
  },
};

function report(ctx, { cells, levels, avail, skipped }) {
  const cell = k => cells.get(k);
  const us = (c, f) => { const s = extraSummary(c, f); return Number.isFinite(s.lo) ? `${s.median.toFixed(1)} [${s.lo.toFixed(1)}-${s.hi.toFixed(1)}]` : Number.isFinite(s.median) ? s.median.toFixed(1) : '-'; };
  const rows = [];
  for (const n of levels) for (const b of avail) {
    const c = cell(key(b, n));
    if (!c?.values.length) continue;
    const rate = extraSummary(c, 'rate');
    rows.push([String(n), LABEL[b], Number.isFinite(rate.median) ? Math.round(rate.median).toLocaleString('en-US') : '-',
               fmtCell(c, 1), us(c, 'spinUs'), us(c, 'awakeUs'), us(c, 'dbUs')]);
  }
  const mariadb = avail.filter(b => b !== 'pg');
  const ratioRows = [];
  for (const n of levels) for (const b of mariadb)
    ratioRows.push([String(n), `${LABEL[b]} / PostgreSQL`, fmtRatioCI(ratioOf(cells, key(b, n), key('pg', n))),
                    fmtRatioCI(extraRatio(cells, key(b, n), key('pg', n), 'awakeUs')),
                    fmtRatioCI(extraRatio(cells, key(b, n), key('pg', n), 'dbUs'))]);
  const spinRows = [];
  for (const n of levels.filter(x => x > 0)) spinRows.push([String(n), ...avail.map(b => fmtRatioCI(ratioOf(cells, key(b, n), key(b, 0))))]);

  const lines = ['## The MariaDB lookup path: the server\'s CPU per lookup, and a spin before the loops sleep', '',
    `Command: \`${ctx.command('spin', ['ZB_BENCH_SPIN_US'])}\`. One server per spin (\`--set server.spin_us=N\`, ` +
    `N = ${levels.join(', ')} µs), each serving ${avail.join(', ')} pooled; every (spin, backend) cell in the same rounds: ` +
    `\`loadgen -q -k -c ${C} -t 3 --keys KEYS\` after a warm-up. Server µs: its utime + stime from /proc over the lookups ` +
    'answered; of it spinning: the loops\' `spin_s` in `/stats` (a loop that just had work polls `epoll_wait(0)` for up to ' +
    'spin_us before it sleeps); awake: the rest. Database µs: PostgreSQL\'s postmaster and backends, or mariadbd.' +
    (skipped.length ? ` Not measured: ${skipped.join(', ')}.` : ''), '',
    '### CPU per answered lookup (µs, median [95% CI])', '',
    table(['spin_us', 'backend', 'lookups/s', 'server µs', 'of it spinning', 'server awake µs', 'database µs'], rows, 'llrrrrr'), '',
    '### Against PostgreSQL, same-round ratios [95% CI]', '',
    `Goal: the server's CPU per MariaDB lookup at most ${GOAL}x PostgreSQL's.`, '',
    table(['spin_us', 'backend', 'server CPU', 'server awake CPU', 'database CPU'], ratioRows, 'llrrr'), ''];
  if (spinRows.length)
    lines.push('### Each spin against none, same-round ratio of the server\'s CPU per lookup [95% CI]', '',
      table(['spin_us', ...avail.map(b => LABEL[b])], spinRows, 'l' + 'r'.repeat(avail.length)), '');
  // What bounds it: the database's CPU per lookup, and the server's own
  // work once the loops do not sleep between answers (the largest spin).
  const top = Math.max(...levels);
  const goals = mariadb.map(b => {
    const r = ratioOf(cells, key(b, 0), key('pg', 0));
    const verdict = Number.isFinite(r.hi) ? (r.hi <= GOAL ? 'reached' : r.lo > GOAL ? 'missed' : 'not shown either way') : 'too few rounds to say';
    return `- ${LABEL[b]} / PostgreSQL, server CPU per lookup, spin_us 0: ${fmtRatioCI(r)}, ${verdict}; ` +
      `the database's CPU per lookup ${fmtRatioCI(extraRatio(cells, key(b, 0), key('pg', 0), 'dbUs'))} of PostgreSQL's` +
      (top > 0 ? `; the server awake (not spinning) at spin_us ${top}: ${fmtRatioCI(extraRatio(cells, key(b, top), key('pg', top), 'awakeUs'))}` : '') + '.';
  });
  lines.push('### Against the goal', '', ...goals, '', errorNote(cells.keys().map(cell)), '', cells.machineNote(), '');
  writeCells(ctx.out, 'spin', cells.keys().map(cell));
  return lines.join('\n');
}
