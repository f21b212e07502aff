// Experiment: what each durability setting buys, and what it costs.
// Acknowledged updates per second (POST /update/B/{key}: a read, then a
// committed write) under every setting of every backend (lib/durability.mjs:
// SQLite journal_mode x synchronous, PostgreSQL synchronous_commit x fsync,
// InnoDB innodb_flush_log_at_trx_commit, MyISAM as it is) at c 1 and 10,
// uniform keys, in one Cells so that each setting's gain over its backend's
// durable one is a same-round ratio; beside it, what the crash experiment
// (scripts/crash, docs/CRASH.md) recorded each setting losing in a process
// crash and a power cut.
// PostgreSQL's and InnoDB's settings are the running servers' own (ALTER
// SYSTEM and a reload, SET GLOBAL), put in force before each visit of a
// cell and reset when the experiment ends, also on failure; SQLite's are
// the server's keys: one server per setting, each on a file of its own.
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell, writeCells } from '../lib/cells.mjs';
import { table } from '../lib/table.mjs';
import { draw, writeData, errorBar, gpString } from '../lib/plot.mjs';
import { loadgen, warmRun } from '../lib/clients.mjs';
import { rateRun, fmtErrors, errorNote } from '../lib/goodput.mjs';
import { keysFile } from '../lib/dataset.mjs';
import { BACKENDS, loadBenchTables, startServer } from '../lib/benchdb.mjs';
import { ratioText } from '../lib/rank.mjs';
import { run, atCleanup, sleep } from '../lib/run.mjs';
import { sectionProvenance } from '../lib/provenance.mjs';
import { SETTINGS, DURABLE, settingSql, RESET_SQL, pgSettingCheck, sqliteSets, crashCells } from '../lib/durability.mjs';
import { benchPort } from '../lib/services.mjs';

const LEVELS = [1, 10];
// The crash experiment's recorded runs and table (scripts/crash --out docs/data/crash).
const CRASH_DIR = 'docs/data/crash';

// psql or mariadb as the database's administrator (scripts/db admin).
async function admin(ctx, engine, statements) {
  const args = engine === 'pg' ? ['admin', 'pg', '-d', 'postgres', '-tA', ...statements.flatMap(q => ['-c', q])]
                               : ['admin', 'mariadb', '-N', '-B', '-e', statements.join('; ')];
  const r = await run(path.join(ctx.root, 'scripts/db'), args, { log: ctx.logFile, timeoutS: 60 });
  if (r.code !== 0) throw new Error(`scripts/db ${args.slice(0, 2).join(' ')}: ${(r.stderr || r.stdout).trim().split('\n').pop()}`);
  return r.stdout.trim();
}

// Puts the setting of backend b in force on its database server (a no-op
// when it already is, or for SQLite and MyISAM).
async function apply(ctx, state, b, setting) {
  if ((b !== 'pg' && b !== 'innodb') || state[b] === setting) return;
  state[b] = null;
  if (b === 'innodb') {
    await admin(ctx, 'mariadb', settingSql(b, setting));
  } else {
    await admin(ctx, 'pg', settingSql(b, setting));
    const check = pgSettingCheck(setting);
    for (let i = 0; (await admin(ctx, 'pg', [check.sql])) !== check.want; i++) {
      if (i > 50) throw new Error(`pg: ${setting} not in force 5 s after the reload`);
      await sleep(100);
    }
  }
  state[b] = setting;
}

// The recorded crash runs, grouped (lib/durability.mjs crashCells), and
// the commit and machine they were made on; null when none are recorded.
function crashRecord(ctx) {
  const file = path.join(ctx.root, CRASH_DIR, 'results.jsonl');
  if (!fs.existsSync(file)) return null;
  const results = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map(l => JSON.parse(l));
  const summary = path.join(ctx.root, CRASH_DIR, 'summary.md');
  const prov = fs.existsSync(summary) ? sectionProvenance(fs.readFileSync(summary, 'utf8')) : null;
  return { cells: crashCells(results), prov };
}

export default {
  title: 'durability: acknowledged updates/s per setting, beside what each loses in a crash',
  plots: {
    durability: 'Acknowledged updates per second (POST /update/B/{key}, uniform keys) under each durability setting of each backend, at c 1 and c 10 (log y). Bars: the 95% interval of the median.',
  },
  async run(ctx) {
    const base = benchPort('DURABILITY', 7);
    const seconds = ctx.quick ? 0.5 : 2;
    const levels = ctx.quick ? [10] : LEVELS;
    const keys = keysFile(ctx);
    const servers = [];
    const state = {};
    const reset = async () => {
      for (const [b, engine] of [['pg', 'pg'], ['innodb', 'mariadb']])
        if (b in state) await admin(ctx, engine, RESET_SQL[b]).catch(e => ctx.warn(`durability: reset ${b}: ${e.message}`));
    };
    const unhook = atCleanup(reset);
    try {
      // The database servers' backends: one server, their settings switched.
      const { avail } = await loadBenchTables(ctx, 'lookup', BACKENDS.filter(b => b !== 'sqlite'));
      const ports = {};
      if (avail.length) {
        servers.push(await startServer(ctx, 'lookup', base, avail, {
          log: path.join(ctx.work, 'server-durability.log'), extra: avail.flatMap(b => ['--set', `${b}.writes=yes`]) }));
        for (const b of avail) for (const s of SETTINGS[b]) ports[`${b} ${s}`] = base;
      }
      // SQLite: a server per setting, on a file of its own (journal_mode is the file's).
      let sqlite = false;
      for (const [i, s] of SETTINGS.sqlite.entries()) {
        const name = `durability_${i}`;
        const { avail: ok } = await loadBenchTables(ctx, name, ['sqlite']);
        if (!ok.length) break;
        servers.push(await startServer(ctx, name, base + 1 + i, ['sqlite'], {
          log: path.join(ctx.work, `server-durability-${i}.log`), extra: ['--set', 'sqlite.writes=yes', ...sqliteSets(s)] }));
        ports[`sqlite ${s}`] = base + 1 + i;
        sqlite = true;
      }
      const backends = [...(sqlite ? ['sqlite'] : []), ...avail];
      if (!backends.length) throw new Error('no backend to measure');
      return await measure(ctx, { seconds, levels, keys, backends, ports, state });
    } finally {
      for (const s of servers) await s.stop();
      await reset();
      unhook();
    }
  },
};

async function measure(ctx, { seconds, levels, keys, backends, ports, state }) {
  const cells = new Cells(ctx, 'durability', { ownIo: true });
  const rows = backends.flatMap(b => SETTINGS[b].filter(s => ports[`${b} ${s}`]).map(s => [b, s]));
  const key = (b, s, c) => `${b} ${s} ${c}`;
  for (const c of levels) for (const [b, s] of rows) {
    const url = `http://127.0.0.1:${ports[`${b} ${s}`]}/update/${b}/{key}`;
    const extra = ['-m', 'POST'];
    cells.add(key(b, s, c), async () => rateRun(await loadgen(ctx, { url, c, seconds, keys, extra })),
              { warm: async () => { await apply(ctx, state, b, s); return warmRun(ctx, { url, c, keys, extra }); }, runsPerVisit: 3 });
  }
  await cells.measure();
  writeCells(ctx.out, 'durability', cells.keys().map(k => cells.get(k)));
  const cell = k => cells.get(k);
  const durableOf = b => SETTINGS[b].find(s => DURABLE.has(`${b} ${s}`));
  const crash = crashRecord(ctx);
  const lostText = (b, s, kind) => {
    const g = crash?.cells.get(`${b} ${s} ${kind}`);
    if (!g) return '';
    return g.losing ? `${g.losing} of ${g.runs} runs: ${g.lost} (${g.lostPct}%)` : `0 of ${g.runs} runs`;
  };

  const lines = ['## Durability: what each setting buys, and what it loses', '',
    `Command: \`${ctx.command('durability')}\`. \`loadgen -k -m POST -c C -t ${seconds} --keys KEYS ` +
    `'http://127.0.0.1:PORT/update/B/{key}'\` (uniform keys): each request reads the code's stamp in the bench's own ` +
    '`{table}_hits`, then writes a new one, committed before the answer (docs/REQUEST-TYPES.md). PostgreSQL\'s and ' +
    'InnoDB\'s settings are put in force on the running servers (ALTER SYSTEM and a reload; SET GLOBAL) before each ' +
    'visit of a cell and reset at the end; SQLite\'s are the server\'s keys, a server and a file per setting. ' +
    'The ratio is each setting\'s updates/s over its backend\'s durable setting (marked *), in the same rounds.', ''];
  const crashNote = crash
    ? `Lost in a crash: acknowledged writes the database no longer held after a crash and a restart, from the crash ` +
      `experiment's recorded runs (${CRASH_DIR}/summary.md, docs/RESULTS-crash.md: ` +
      `${crash.prov ? `commit ${crash.prov.commit}, ${crash.prov.machine}` : 'provenance not recorded'}): runs that lost ` +
      'any, then the lost writes per run and their share of the acknowledged, median [min-max].'
    : 'Lost in a crash: no crash experiment recorded yet (scripts/crash --runs 20 --out docs/data/crash).';
  lines.push(table(['backend', 'setting', ...levels.map(c => `updates/s c=${c}`), ...levels.map(c => `/ durable, c=${c}`),
                    'lost: process crash', 'lost: power cut'],
    rows.map(([b, s]) => {
      const d = durableOf(b);
      return [b, `${s}${s === d ? ' *' : ''}`, ...levels.map(c => fmtCell(cell(key(b, s, c)))),
              ...levels.map(c => (d && s !== d ? ratioText(cells.sameRoundRatio(key(b, s, c), key(b, d, c))) : '')),
              lostText(b, s, 'process'), lostText(b, s, 'power')];
    }), 'll' + 'r'.repeat(2 * levels.length) + 'rr'));
  lines.push(crashNote, '');
  const errs = cells.keys().map(k => [k, fmtErrors(cell(k))]).filter(([, e]) => e);
  if (errs.length) lines.push(`Errors: ${errs.map(([k, e]) => `${k}: ${e}`).join('; ')}.`, '');
  lines.push(errorNote(cells.keys().map(cell)), '', cells.machineNote(), '');

  const bars = x => (x && x.values.length ? errorBar(x.summary).map(v => v.toFixed(1)) : ['NaN', 'NaN', 'NaN']);
  const labels = rows.map(([b, s]) => shortLabel(b, s));
  const file = writeData(ctx.out, 'durability.dat', [
    ['#i', 'setting', ...levels.flatMap(c => [`c${c}`, 'lo', 'hi'])],
    ...rows.map(([b, s], i) => [i, JSON.stringify(labels[i]), ...levels.flatMap(c => bars(cell(key(b, s, c))))])]);
  plot(ctx.out, file, labels, levels);
  return lines.join('\n');
}

// "pg commit off, fsync on": a setting short enough for a tic.
const shortLabel = (b, s) => `${b} ${s.replace('journal_mode=', '').replace('synchronous=', '').replace('synchronous_commit=', 'commit ')
  .replace('innodb_flush_log_at_trx_commit=', 'flush ').replace('fsync=', 'fsync ').replace(',', ', ')}`;

// The plot of the rates in FILE (durability.dat): a point per setting and level, the settings' names as tics.
export function plot(out, file, labels, levels) {
  draw(out, 'durability', 1000, 560, [
    "set ylabel 'acknowledged updates/s'", 'set logscale y', "set format y '%g'", 'set grid ytics',
    `set xtics rotate by -40 font ",9" (${labels.map((l, i) => `${gpString(l)} ${i}`).join(', ')})`,
    `set xrange [-0.6:${labels.length - 0.4}]`, 'set bmargin 12',
    'plot ' + levels.map((c, i) => `'${file}' using ($1+${(i - (levels.length - 1) / 2) * 0.2}):${3 + 3 * i}:${4 + 3 * i}:${5 + 3 * i} ` +
                                   `with yerrorbars pt 7 lc ${i + 1} title ${gpString(`c=${c}`)}`).join(', '),
  ].join('\n'), { title: 'POST /update/B/{key}: acknowledged updates/s per durability setting', legend: levels.map(c => `c=${c}`) });
}
