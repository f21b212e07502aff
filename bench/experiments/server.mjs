// Experiment 2: the lookup server under load. Answered lookups per second
// of GET /zip/B/{key} for every backend and connection strategy at c 1, 10
// and 100 (loadgen; ab at c 10, the 2008 study's tool), next to nginx
// serving a static file of the size of a typical answer and pgbench on the
// same PostgreSQL and table, in the same run. Beside each rate, the CPU
// each tier spent per answered lookup (loadgen, the server, the database:
// /proc around each run). The c 10 figures (the 2008 study's setting) are
// the headline: they get more runs, so their 95% intervals reach +-5%, and
// every comparison of two cells is a ratio of the same rounds (rank.mjs),
// named a win only where its interval excludes 1. The headline's figures
// go to DIR/data/answer.json, which RESULTS.md's answer is made from. Also:
// the share of each server thread (fresh bursts of connections), one
// backend's rate while another is under load, and HTTPS, keep-alive and a
// full handshake per request, next to nginx's HTTPS on the same certificate.
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell, writeCells } from '../lib/cells.mjs';
import { table, fmtPct } from '../lib/table.mjs';
import { draw, writeData, errorBar } from '../lib/plot.mjs';
import { drawSpectrum } from '../lib/spectrum.mjs';
import { run, runJSON, sleep } from '../lib/run.mjs';
import { get, getJSON } from '../lib/http.mjs';
import { BACKENDS, benchSets, benchSqlite, benchTables, loadBenchTables, startServer } from '../lib/benchdb.mjs';
import { nginx, dbEnv, dbPids, benchPort } from '../lib/services.mjs';
import { ab, loadgen, warmRun } from '../lib/clients.mjs';
import { rateRun, serverSplit, splitDelta, fmtErrors, errorNote, cellErrors } from '../lib/goodput.mjs';
import { keysFile, countLines } from '../lib/dataset.mjs';
import { median } from '../lib/stats.mjs';
import { ratioOf, verdict, ranking, rankingText, extraSummary, fmtRatioCI } from '../lib/rank.mjs';
import { provenance } from '../lib/provenance.mjs';
import { ticksToUs, nproc, pidInFile, processTicks, threadTicks, treeTicks } from '../lib/proc.mjs';
import { findProgram, programs } from '../lib/machine.mjs';
import { explain, loadCalibration } from '../lib/calibration.mjs';

// The connection strategies of each backend, as the server names them
// (?strategy=): pipelining is PostgreSQL's alone (the server's --help).
const strategiesOf = b => ['pooled', 'per-request', ...(b === 'pg' ? ['pipelined'] : [])];

// The headline: the cells at this concurrency (the 2008 study's) are
// repeated until their 95% interval is within the target, up to this many
// runs; the others stop at the experiment's --max-runs. A cell runs a few
// times back to back when its turn comes (one warm-up first). The rates of
// the database-backed cells drift with the machine over minutes, the same
// way for every such cell (docs/DECISIONS.md, Precision), so runs of one
// visit share its level: the headline's runs are spread over many visits,
// one at a time, for its interval to sample the drift (effective samples
// are visits, not runs).
const HEADLINE_C = 10;
// The spectrum plot's title (bench/replot.mjs draws it again from its data).
export const SPECTRUM_TITLE = `Latency by percentile at c=${HEADLINE_C}, every run of each cell merged (loadgen -k, closed loop)`;
const HEADLINE_RUNS = { minRuns: 10, maxRuns: 90, runsPerVisit: 1 };
const OTHER_RUNS = { runsPerVisit: 3 };

// The concurrencies of a run. ZB_BENCH_SERVER_LEVELS (say 10, the
// headline) narrows a long one; a list without the headline's is refused.
export function serverLevels(text = '1,10,100') {
  const levels = text.split(',').map(Number);
  if (!levels.every(c => Number.isInteger(c) && c > 0) || !levels.includes(HEADLINE_C))
    throw new Error(`ZB_BENCH_SERVER_LEVELS: '${text}' is not a list of concurrencies with ${HEADLINE_C} in it`);
  return levels;
}


export default {
  title: 'the lookup server under load',
  // Each plot's caption, under this section in RESULTS.md.
  plots: {
    lookups: "Answered random-key lookups per second against the concurrency (1, 10, 100), per backend and connection strategy, with nginx serving a file of the same size as the ceiling. Bars: the 95% interval of the median.",
    spectrum: "Latency by percentile of the c=10 headline cells, from loadgen's HdrHistogram logs (x: 1/(1-p), log scale; closed loop): the tail each strategy gives.",
  },
  async run(ctx) {
    const port = benchPort(null);
    const work = path.join(ctx.build, 'bench-server');
    const seconds = ctx.quick ? 0.5 : 2;
    const levels = ctx.quick ? [HEADLINE_C] : serverLevels(process.env.ZB_BENCH_SERVER_LEVELS || undefined);
    const keys = keysFile(ctx);
    const { avail, skipped } = await loadBenchTables(ctx, 'lookup', BACKENDS);
    if (!avail.length) throw new Error('no backend to measure');
    fs.mkdirSync(work, { recursive: true });
    fs.writeFileSync(path.join(work, 'server.log'), '');
    const srv = await startServer(ctx, 'lookup', port, avail, { log: path.join(work, 'server.log') });
    let tlsSrv = null;
    try {
      return await measureAll(ctx, { port, work, seconds, levels, keys, avail, skipped, srv,
                                     startTls: async tls => (tlsSrv = await startServer(ctx, 'lookup', port + 1, avail,
                                                                                   { log: path.join(work, 'server-tls.log'), tls })) });
    } finally {
      if (tlsSrv) await tlsSrv.stop();
      await srv.stop();
    }
  },
};

async function measureAll(ctx, { port, work, seconds, levels, keys, avail, skipped, srv, startTls }) {
  // A typical answer: the median body size of 51 random pooled lookups.
  const sizes = [];
  for (let i = 0; i < 51; i++) sizes.push((await get(port, `/zip/${avail[0]}/random`)).body.length);
  const size = median(sizes);
  const ng = await nginx(ctx);
  fs.writeFileSync(path.join(ng.html, 'lookup.json'), 'x'.repeat(size));
  const nginxUrl = `http://127.0.0.1:${ng.port}/lookup.json`;
  const nginxPid = pidInFile(ng.pidFile);
  if (!nginxPid) throw new Error(`nginx: no pid in ${ng.pidFile}`);
  const pids = await dbPids(ctx);
  // CPU ticks of what serves each target: the server or nginx, and the database.
  const serverTicks = target => (target === 'nginx' ? treeTicks(nginxPid) : processTicks(srv.pid));
  const dbTicks = target => (target === 'pg' ? treeTicks(pids.pg)
    : target === 'innodb' || target === 'myisam' ? processTicks(pids.mariadb) : 0);

  const haveLoadgen = fs.existsSync(ctx.bin('loadgen'));
  const tool = haveLoadgen ? 'loadgen' : 'ab';
  const cells = new Cells(ctx, 'server');
  // The server's own count of why it gave 503s (overload, down), per
  // backend, where its /stats has those counters.
  const split = async (p, b) => serverSplit((await getJSON(p, '/stats'))?.backends?.find(x => x.name === b));
  // The headline's loadgen runs keep their HdrHistogram logs: the spectrum.
  const hdrLogs = {};
  fs.mkdirSync(path.join(work, 'hdr'), { recursive: true });
  const hdrArgs = (key, c) => {
    if (c !== HEADLINE_C) return [];
    const file = path.join(work, 'hdr', `${key.replace(/\W+/g, '-')}-${(hdrLogs[key] ??= []).length + 1}.hlog`);
    hdrLogs[key].push(file);
    return ['--hdr-log', file];
  };
  const measure = (key, client, target, url, c) => cells.add(key, async () => {
    const s0 = serverTicks(target), d0 = dbTicks(target);
    const before = target === 'nginx' ? null : await split(port, target);
    const r = client === 'ab' ? await ab(ctx, { url: url.replace('{key}', 'random'), c, seconds })
                              : await loadgen(ctx, { url, c, seconds, keys, extra: hdrArgs(key, c) });
    const server = before ? splitDelta(before, await split(port, target)) : null;
    const g = rateRun(r, { server });
    if (!r) return g;
    const answered = g.value * r.seconds;
    return { ...g, serverUs: ticksToUs(serverTicks(target) - s0, answered),
             dbUs: target === 'nginx' || target === 'sqlite' ? NaN : ticksToUs(dbTicks(target) - d0, answered),
             clientUs: Number.isFinite(r.cpuUsPerReq) ? r.cpuUsPerReq * r.completed / (answered || NaN) : NaN };
  }, { warm: () => warmRun(ctx, { url, c, keys }), ...(ctx.quick ? {} : c === HEADLINE_C && client === tool ? HEADLINE_RUNS : OTHER_RUNS) });
  const targets = ['nginx', ...avail];
  const rowsOf = t => (t === 'nginx' ? [['nginx', '-']] : strategiesOf(t).map(s => [t, s]));
  const urlOf = (b, s) => (b === 'nginx' ? nginxUrl : `http://127.0.0.1:${port}/zip/${b}/{key}?strategy=${s}`);
  // loadgen at every level; ab, the 2008 study's client, at c 10 beside it.
  for (const c of levels) for (const t of targets) for (const [b, s] of rowsOf(t)) {
    measure(`${tool} ${b} ${s} ${c}`, tool, b, urlOf(b, s), c);
    if (tool !== 'ab' && c === HEADLINE_C) measure(`ab ${b} ${s} ${c}`, 'ab', b, urlOf(b, s), c);
  }
  // HTTPS: a second server with --tls-cert/--tls-key on scripts/nginx's
  // certificate (self-signed P-256), SQLite and pg pooled at c 10, with
  // keep-alive and with a new connection (a full handshake) per request,
  // next to nginx's HTTPS listener serving the same static file.
  const https = await httpsCells(ctx, { cells, startTls, port, avail, keys, seconds, nginxPid });
  // pgbench on the same PostgreSQL and table, interleaved with the cells above.
  const pgb = avail.includes('pg') ? await pgbenchCells(ctx, cells, work, keys, seconds, pids) : null;
  // Each other backend's own client on the same query and table: sysbench
  // for MariaDB, sqlbench's loop of sqlite3_step for SQLite.
  const natives = await nativeCells(ctx, cells, keys, seconds, pids, avail);
  // Isolation: SQLite pooled while pg per-request runs at c 10 on the same server.
  const iso = avail.includes('sqlite') && avail.includes('pg') && haveLoadgen;
  if (iso)
    cells.add('isolation sqlite pooled 10', async () => {
      const other = loadgen(ctx, { url: urlOf('pg', 'per-request'), c: 10, seconds: seconds + 1, keys });
      await sleep(300);
      const r = await loadgen(ctx, { url: urlOf('sqlite', 'pooled'), c: 10, seconds, keys });
      await other;
      return rateRun(r);
    }, { warm: () => warmRun(ctx, { url: urlOf('sqlite', 'pooled'), c: 10, keys }) });
  await cells.measure();
  spectrum(ctx, hdrLogs, targets.flatMap(rowsOf).map(([b, s]) => [`${tool} ${b} ${s} ${HEADLINE_C}`, b, s]));
  const stats = await getJSON(port, '/stats');
  const threads = stats?.server?.threads ?? 2;
  const balance = await balanceRuns(ctx, port, srv, avail.filter(b => b === 'sqlite' || b === 'pg'), keys, threads);
  const version = (await run(ctx.bin('server'), ['-V'])).stdout.trim();

  const cell = k => cells.get(k);
  const key = (b, s, c, t = tool) => `${t} ${b} ${s} ${c}`;
  const lines = ['## Experiment 2: the lookup server (build/bin/server), req/s', '',
    `Command: \`${ctx.command('server', ['ZB_BENCH_SERVER_LEVELS'])}\`. Server: \`${version}\`, ${threads} threads; ` +
    'client, server and databases share the machine.',
    `Data: \`${ctx.dataset}\` loaded into the bench's own tables (\`bench_lookup*\`, \`${path.relative(ctx.root, benchSqlite(ctx, 'lookup'))}\`); ` +
    `keys \`${keys}\` (${countLines(keys)} codes). Backends: ${avail.join(', ')}.` +
    (skipped.length ? ` Skipped (database not up): ${skipped.join(', ')}.` : ''),
    `Each run: ${seconds} s, HTTP keep-alive, after a warm-up at its concurrency; the runs of all cells interleaved, ` +
    `round by round. The c=${HEADLINE_C} cells are repeated until their 95% interval is within ` +
    `+-${Math.round(100 * ctx.repeat.target)}% or they reach ${HEADLINE_RUNS.maxRuns} runs (at least ` +
    `${HEADLINE_RUNS.minRuns}, ${HEADLINE_RUNS.runsPerVisit} per visit), the others up to ` +
    `${ctx.repeat.maxRuns}. Strategies: \`?strategy=pooled\`, \`per-request\`, \`pipelined\` (pg only).`,
    `- loadgen: \`build/bin/loadgen -q -k -c C -t ${seconds} --keys ${keys} --json 'http://127.0.0.1:${port}/zip/B/{key}?strategy=S'\`.`,
    `- ab (c ${HEADLINE_C}): \`ab -q -k -c ${HEADLINE_C} -t ${seconds} -n 50000000 'http://127.0.0.1:${port}/zip/B/random?strategy=S'\` ` +
    '(the server draws the key; ab counts bodies of another length than the first as failed: ignored, non-2xx shown).',
    `- nginx (\`scripts/nginx\`, one worker per core, keep-alive) serving a static ${size}-byte file ` +
    '(the median size of a lookup answer here), same clients, same run.', ''];
  const rateCells = [];
  const errCol = keysByLevel => keysByLevel.map(([c, k]) => (fmtErrors(cell(k)) ? `c=${c}: ${fmtErrors(cell(k))}` : ''))
    .filter(Boolean).join('; ');
  const width = c => (c && c.values.length && Number.isFinite(c.summary.halfWidth) ? `+-${(100 * c.summary.halfWidth).toFixed(1)}%` : '-');
  lines.push(`### ${tool}: answered lookups per second (goodput)`, '');
  const head = ['backend', 'strategy', ...levels.flatMap(c => [`c=${c}`, 'width'])];
  const rows = [];
  for (const t of targets) for (const [b, s] of rowsOf(t)) {
    const label = b === 'nginx' ? `nginx (static ${size} B)` : b;
    rateCells.push(...levels.map(c => cell(key(b, s, c))));
    rows.push([label, s, ...levels.flatMap(c => [fmtCell(cell(key(b, s, c))), width(cell(key(b, s, c)))]),
               errCol(levels.map(c => [c, key(b, s, c)]))]);
  }
  lines.push(table([...head, 'errors'], rows, 'll' + 'rr'.repeat(levels.length) + 'l'),
    '*width*: the wider side of the 95% interval, as a share of the median.', '');

  // The ranking at each level: a '>' only where the same-round ratio of a
  // cell over the next one excludes 1.
  const backendKeys = c => targets.flatMap(t => rowsOf(t).map(([b, s]) => key(b, s, c)));
  const label = k => { const [, b, s] = k.split(' '); return b === 'nginx' ? 'nginx (static)' : `${b} ${s}`; };
  const ranks = Object.fromEntries(levels.map(c => [c, ranking(cells, backendKeys(c))]));
  lines.push('### Ranking, from the same rounds', '',
    '`>`: faster than the next, the 95% interval of their same-round ratio above 1; `~`: no clear difference.', '',
    ...levels.map(c => `- c=${c}: ${rankingText(ranks[c], label)}`), '');

  // Against nginx, and each backend's pooled against per-request, same rounds.
  const ratioRows = [];
  for (const b of avail) for (const s of strategiesOf(b))
    ratioRows.push([b, s, ...levels.map(c => fmtRatioCI(ratioOf(cells, key(b, s, c), key('nginx', '-', c))))]);
  lines.push('### Over nginx serving the same bytes (same-round ratio [95% CI])', '',
             table(['backend', 'strategy', ...levels.map(c => `c=${c}`)], ratioRows, 'll' + 'r'.repeat(levels.length)));
  const connRows = avail.map(b => [b, ...levels.map(c => {
    const r = ratioOf(cells, key(b, 'pooled', c), key(b, 'per-request', c));
    return `${fmtRatioCI(r)}${verdict(r) === '~' ? ' (no clear difference)' : ''}`;
  })]);
  lines.push('### Pooled over per-request (same-round ratio [95% CI]): what a connection per request costs', '',
             table(['backend', ...levels.map(c => `c=${c}`)], connRows, 'l' + 'r'.repeat(levels.length)));

  // CPU per answered lookup, per tier, with intervals; the capacity they imply.
  const us = x => (Number.isFinite(x) ? x.toFixed(1) : '-');
  const usCI = x => (Number.isFinite(x.lo) ? `${us(x.median)} [${us(x.lo)}-${us(x.hi)}]` : us(x.median));
  const cores = nproc();
  const cpuRow = (lab, s, k) => {
    const c = cell(k);
    const cl = extraSummary(c, 'clientUs'), sv = extraSummary(c, 'serverUs'), db = extraSummary(c, 'dbUs');
    const own = sv.median + (Number.isFinite(db.median) ? db.median : 0);
    const bound = cores * 1e6 / (own + (Number.isFinite(cl.median) ? cl.median : 0));
    return [lab, s, usCI(cl), usCI(sv), Number.isFinite(db.median) ? usCI(db) : (lab === 'sqlite' ? 'in the server' : '-'),
            fmtK(1e6 / own), fmtK(bound), Number.isFinite(bound) && c?.values.length ? `${Math.round(100 * c.summary.median / bound)}%` : '-'];
  };
  const cpuRows = [];
  for (const t of targets) for (const [b, s] of rowsOf(t)) cpuRows.push(cpuRow(b === 'nginx' ? 'nginx' : b, s, key(b, s, HEADLINE_C)));
  if (pgb) for (const [k, lab] of [['pgbench lookup 10', 'pgbench, the same query'], ['pgbench select-only 10', 'pgbench -S']])
    cpuRows.push(cpuRow(lab, '-', k));
  for (const [b, n] of Object.entries(natives)) cpuRows.push(cpuRow(`${b}: ${n.label}`, '-', n.key));
  lines.push(`### CPU per answered lookup at c=${HEADLINE_C}, per tier (µs, median [95% CI] over the runs)`, '',
    'From /proc around each run: loadgen\'s own (or pgbench\'s) utime + stime, the server\'s (nginx: master and ' +
    'workers), the database\'s (PostgreSQL: the postmaster and its backends, those that exited included; MariaDB: ' +
    'mariadbd), over the lookups answered. SQLite runs inside the server. *per core*: lookups per second one core ' +
    `could serve at the server's and the database's cost; *bound*: the rate at which all three tiers fill this ` +
    `machine's ${cores} cores; *of bound*: the measured rate's share of it. CPU per lookup holds still where rates ` +
    'swing: carry it to your own machine, not the rate.', '',
    table(['target', 'strategy', 'client µs', 'server µs', 'database µs', 'per core', `bound (${cores} cores)`, 'of bound'],
          cpuRows, 'llrrrrrr'));

  // ab beside loadgen at the headline level.
  if (tool !== 'ab') {
    const abRows = [];
    for (const t of targets) for (const [b, s] of rowsOf(t))
      abRows.push([b, s, fmtCell(cell(key(b, s, HEADLINE_C, 'ab'))), fmtCell(cell(key(b, s, HEADLINE_C))),
                   fmtRatioCI(ratioOf(cells, key(b, s, HEADLINE_C, 'ab'), key(b, s, HEADLINE_C)))]);
    lines.push(`### ab, the 2008 study's client, beside loadgen at c=${HEADLINE_C}`, '',
               table(['backend', 'strategy', 'ab req/s', 'loadgen req/s', 'ab / loadgen'], abRows, 'llrrr'));
  }
  lines.push(errorNote([...rateCells, ...cells.keys().filter(k => k.startsWith('ab ')).map(cell)].filter(Boolean)), '',
             cells.machineNote(), '');

  // Thread balance.
  if (balance.length) {
    lines.push(`### Thread balance: ${balance[0].runs.length} runs of \`loadgen -k -c 10 -t 1\`, each a fresh burst of connections`, '',
      'Each server thread\'s share of the server\'s CPU in the run (from /proc/PID/task/*/stat around it),',
      `largest first; "lowest" is the lowest share of a loop thread (named loopN; else the ${threads} busiest).`, '');
    for (const bal of balance) {
      lines.push(table(['run', 'req/s', 'thread shares', 'lowest'],
        bal.runs.map((r, i) => [i + 1, Math.round(r.rps), r.shares.map(x => fmtPct(x, 0)).join(' '), fmtPct(r.lowest, 0)])),
        `${bal.backend} pooled: ${bal.runs.filter(r => r.lowest >= 0.3).length} of ${bal.runs.length} runs with every loop thread at 30% or more.`, '');
    }
  }

  // pgbench next to the server.
  if (pgb) {
    const rows2 = [['pgbench -M prepared -c 10 -j 2, the server\'s lookup (custom script)', fmtCell(cell('pgbench lookup 10')), '-'],
                   ['pgbench -S -M prepared -c 10 -j 2 (select-only, pgbench_accounts)', fmtCell(cell('pgbench select-only 10')), '-']];
    for (const s of strategiesOf('pg'))
      rows2.push([`zipbench pg ${s} over HTTP, loadgen -c 10`, fmtCell(cell(key('pg', s, 10))),
                  fmtRatioCI(ratioOf(cells, key('pg', s, 10), 'pgbench lookup 10'))]);
    lines.push('### pgbench on the same PostgreSQL and table, same run (lookups or transactions per second, c 10)', '',
      table(['client', 'per second', 'zipbench / pgbench, the same query'], rows2, 'lrr'),
      `pgbench: \`${pgb.lookupCmd}\` with ${pgb.scriptFile}, and \`${pgb.selectCmd}\`:`, '', '```', pgb.script.trim(), '```',
      'The custom script asks for a random loaded code as the server\'s lookup does; the code comes from a',
      'key table by id in the same statement (pgbench has no list of strings to draw from).', '');
  }
  if (Object.keys(natives).length) {
    const nrows = [];
    for (const [b, n] of Object.entries(natives))
      for (const s of strategiesOf(b).filter(x => x !== 'per-request'))
        nrows.push([b, n.label, fmtCell(cell(n.key)), `zipbench ${s}: ${fmtCell(cell(key(b, s, 10)))}`,
                    fmtRatioCI(ratioOf(cells, key(b, s, 10), n.key))]);
    lines.push('### Each backend\'s own client on the same query and table, same run (c 10)', '',
      table(['backend', 'native client', 'lookups/s', 'zipbench over HTTP, loadgen -c 10', 'zipbench / native'], nrows, 'llrrr'),
      ...Object.entries(natives).map(([b, n]) => `- ${b}: \`${n.cmd}\``), '',
      'The CPU table above splits each side\'s cost per lookup by tier: (server + client) against the native client\'s. ' +
      'Where the database spends more per lookup under zipbench than under its own client, or the server more per MariaDB ' +
      'lookup than per PostgreSQL one, docs/DECISIONS.md shows what forces it: "InnoDB\'s cost per lookup under zipbench ' +
      'above sysbench\'s" and "The MariaDB lookup path".', '');
  }
  if (iso) {
    const r = ratioOf(cells, 'isolation sqlite pooled 10', key('sqlite', 'pooled', 10));
    lines.push('### Isolation: SQLite pooled at c 10 while pg per-request runs at c 10 on the same server', '',
      table(['SQLite pooled, loadgen -c 10', 'req/s'], [['alone', fmtCell(cell(key('sqlite', 'pooled', 10)))],
                                                         ['while pg per-request runs at c 10', fmtCell(cell('isolation sqlite pooled 10'))]]),
      `Kept: ${fmtRatioCI(r)} of the solo rate, same rounds (both clients share the cores).`, '');
  }

  if (https)
    lines.push('### HTTPS: the server with --tls-cert/--tls-key, next to nginx (loadgen, c 10)', '',
      `A second server on port ${https.port}, \`--tls-cert ${https.tls.cert} --tls-key ${https.tls.key}\` ` +
      `(scripts/nginx's self-signed P-256 certificate), and nginx's HTTPS listener on ${https.nginxPort} with the same ` +
      `certificate and the ${size}-byte file; \`loadgen -q [-k] -c 10 -t ${seconds} URL\`: keep-alive, or a new TLS ` +
      'connection with a full handshake per request (what ab does, and a first visit costs). Server CPU per request ' +
      'from /proc around each run.', '',
      table(['target', 'keep-alive req/s', 'µs CPU/req', 'new connection req/s', 'µs CPU/req', 'new/keep-alive', 'errors'],
            https.targets.map(t => {
              const ka = `https ${t} keep-alive`, nw = `https ${t} new`;
              return [t, fmtCell(cell(ka)), us(extraSummary(cell(ka), 'serverUs').median), fmtCell(cell(nw)),
                      us(extraSummary(cell(nw), 'serverUs').median), fmtRatioCI(ratioOf(cells, nw, ka)),
                      [fmtErrors(cell(ka)) && `keep-alive: ${fmtErrors(cell(ka))}`, fmtErrors(cell(nw)) && `new: ${fmtErrors(cell(nw))}`].filter(Boolean).join('; ')];
            }), 'lrrrrrl'), '');

  lines.push(statsTable(stats), explain(ctx, 'server'), '');

  // Raw runs, the answer's figures and the plot's data.
  const raw = [];
  for (const k of cells.keys()) for (const v of cell(k).values) raw.push([...k.split(' '), v.toFixed(0)]);
  writeData(ctx.out, 'server-runs.tsv', raw);
  writeCells(ctx.out, 'server', cells.keys().map(cell));
  writeAnswer(ctx, { cells, avail, levels, tool, key, ranks, pgb, natives, size });
  const dat = [];
  for (const b of avail) for (const s of strategiesOf(b)) for (const c of levels) {
    const x = cell(key(b, s, c));
    if (x && x.values.length) dat.push([b, s, c, ...errorBar(x.summary).map(v => v.toFixed(0))]);
  }
  writeData(ctx.out, 'lookups.dat', dat);
  plot(ctx.out, dat);
  return lines.join('\n');
}

const fmtK = x => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-');

// What RESULTS.md's answer is made of (lib/summary.mjs renders it): per
// backend, strategy and level the rate and its interval, the CPU of each
// tier, the ratios over nginx, over per-request and over pgbench, all of
// the same rounds, and the ranking at each level.
function writeAnswer(ctx, { cells, avail, levels, tool, key, ranks, pgb, natives, size }) {
  const fig = k => { const c = cells.get(k); if (!c || !c.values.length) return null;
    const s = c.summary; return { median: s.median, lo: s.lo, hi: s.hi, n: s.n, halfWidth: s.halfWidth, errors: cellErrors(c) }; };
  const calib = loadCalibration(ctx);
  const out = { provenance: provenance(), tool, levels, headline: HEADLINE_C, size, backends: {}, nginx: {},
                connect_us: calib?.connect_us ?? null, ranking: {}, best: {} };
  for (const c of levels) {
    out.nginx[c] = fig(key('nginx', '-', c));
    out.ranking[c] = ranks[c].map(x => ({ key: x.key.split(' ').slice(1, 3).join(' '), next: x.next }));
  }
  for (const b of avail) {
    out.backends[b] = {};
    for (const s of strategiesOf(b)) {
      const per = {};
      for (const c of levels) {
        const k = key(b, s, c);
        per[c] = fig(k) && { ...fig(k), cpu: { client: extraSummary(cells.get(k), 'clientUs'), server: extraSummary(cells.get(k), 'serverUs'),
                                               db: extraSummary(cells.get(k), 'dbUs') },
                             over_nginx: ratioOf(cells, k, key('nginx', '-', c)),
                             over_per_request: s === 'per-request' ? null : ratioOf(cells, k, key(b, 'per-request', c)) };
      }
      out.backends[b][s] = per;
    }
    // Its strategies ranked at each level: "pooled ~ pipelined > per-request".
    out.best[b] = Object.fromEntries(levels.map(c => [c, rankingText(ranking(cells, strategiesOf(b).map(s => key(b, s, c))),
                                                                     k => k.split(' ')[2])]));
  }
  if (pgb) out.pgbench = { lookup: fig('pgbench lookup 10'), select_only: fig('pgbench select-only 10'),
                           over: Object.fromEntries(strategiesOf('pg').map(s => [s, ratioOf(cells, key('pg', s, 10), 'pgbench lookup 10')])) };
  // Each backend against its own client, same query, same rounds.
  out.native = {};
  if (pgb) out.native.pg = { label: 'pgbench -M prepared -c 10 -j 2', fig: fig('pgbench lookup 10'),
                             over: Object.fromEntries(strategiesOf('pg').filter(s => s !== 'per-request')
                               .map(s => [s, ratioOf(cells, key('pg', s, 10), 'pgbench lookup 10')])) };
  for (const [b, n] of Object.entries(natives))
    out.native[b] = { label: n.label, fig: fig(n.key),
                      over: Object.fromEntries(strategiesOf(b).filter(s => s !== 'per-request')
                        .map(s => [s, ratioOf(cells, key(b, s, 10), n.key)])) };
  fs.mkdirSync(path.join(ctx.out, 'data'), { recursive: true });
  fs.writeFileSync(path.join(ctx.out, 'data', 'answer.json'), JSON.stringify(out, null, 1) + '\n');
}

// The HTTPS cells (loadgen only): null when loadgen is not built or the
// TLS server does not start.
async function httpsCells(ctx, { cells, startTls, port, avail, keys, seconds, nginxPid }) {
  if (!fs.existsSync(ctx.bin('loadgen'))) return null;
  const build = path.isAbsolute(ctx.build) ? ctx.build : path.join(ctx.root, ctx.build);
  const tls = { cert: path.join(build, 'nginx/tls/cert.pem'), key: path.join(build, 'nginx/tls/key.pem') };
  let tlsSrv;
  try {
    tlsSrv = await startTls(tls);
  } catch (e) {
    ctx.warn(`server: no HTTPS rows: ${e.message}`);
    return null;
  }
  const nginxPort = Number(process.env.ZB_NGINX_TLS_PORT || 8443);
  const targets = ['nginx', ...avail.filter(b => b === 'sqlite' || b === 'pg').map(b => `${b} pooled`)];
  for (const t of targets) for (const ka of [true, false]) {
    const key = `https ${t} ${ka ? 'keep-alive' : 'new'}`;
    const url = t === 'nginx' ? `https://127.0.0.1:${nginxPort}/lookup.json`
      : `https://127.0.0.1:${port + 1}/zip/${t.split(' ')[0]}/{key}?strategy=pooled`;
    const ticks = () => (t === 'nginx' ? treeTicks(nginxPid) : processTicks(tlsSrv.pid));
    cells.add(key, async () => {
      const s0 = ticks();
      const r = await loadgen(ctx, { url, c: 10, seconds, keys, keepalive: ka });
      return rateRun(r, {}, r && { serverUs: ticksToUs(ticks() - s0, r.completed) });
    }, { warm: () => warmRun(ctx, { url, c: 10, keys, keepalive: ka }) });
  }
  return { tls, targets, port: port + 1, nginxPort };
}

// The native references besides pgbench: {backend: {key, label, cmd}} for
// the cells it adds. SQLite: `sqlbench lookup` (the server's statement in a
// loop of sqlite3_step, one thread per core; its CPU is the database's
// whole cost). InnoDB, MyISAM: sysbench's MySQL client running the same
// statement prepared (bench/sysbench/lookup.lua), 10 threads; its CPU by
// /usr/bin/time, the database's from /proc around the run.
async function nativeCells(ctx, cells, keys, seconds, pids, avail) {
  const out = {};
  const runs = ctx.quick ? {} : HEADLINE_RUNS;
  const secs = Math.max(1, Math.round(seconds));
  if (avail.includes('sqlite')) {
    const args = ['lookup', '--json', '--conf', ctx.conf, '--backends', 'sqlite', '--users', String(nproc()),
                  '--max-seconds', String(secs), '--repeat', '1', '--keys', keys, ...benchSets(ctx, 'lookup')];
    cells.add('native sqlite 10', async () => {
      const r = await runJSON(ctx.bin('sqlbench'), args, { log: ctx.logFile });
      const f = r.json.find(j => j.experiment === 'lookup');
      if (!f || !(f.median_s > 0)) return NaN;
      return { value: f.n / f.median_s, dbUs: (f.user_s + f.sys_s) * 1e6 / f.n, clientUs: NaN };
    }, runs);
    out.sqlite = { key: 'native sqlite 10', label: `sqlbench lookup, ${nproc()} threads (sqlite3_step in a loop)`,
                   cmd: `build/bin/sqlbench ${args.map(a => (a === keys ? 'KEYS' : a)).join(' ')}` };
  }
  const my = avail.filter(b => b === 'innodb' || b === 'myisam');
  const sysbench = findProgram('/usr/bin/sysbench', 'sysbench');
  if (my.length && !sysbench) ctx.warn('server: no sysbench (scripts/setup installs it): MariaDB has no native reference');
  if (my.length && sysbench) {
    const cnf = fs.readFileSync((await dbEnv(ctx)).ZB_MY_CNF || path.join(ctx.root, 'build/db/client.cnf'), 'utf8');
    const opt = k => (cnf.match(new RegExp(`^${k}\\s*=\\s*(.*)$`, 'm')) || [])[1]?.trim();
    const tables = benchTables('lookup');
    for (const b of my) {
      const args = [path.join(ctx.root, 'bench/sysbench/lookup.lua'), '--db-driver=mysql', `--mysql-socket=${opt('socket')}`,
                    `--mysql-user=${opt('user')}`, `--mysql-password=${opt('password')}`, '--mysql-db=zipbench',
                    `--table=${tables[b]}`, `--keys=${keys}`, '--threads=10', `--time=${secs}`, 'run'];
      cells.add(`native ${b} 10`, async () => {
        const d0 = processTicks(pids.mariadb);
        const r = await run('/usr/bin/time', ['-f', 'cpu %U %S', sysbench, ...args], { log: ctx.logFile });
        const d1 = processTicks(pids.mariadb);
        const q = r.stdout.match(/queries:\s+(\d+)\s+\(([\d.]+) per sec/);
        const errs = r.stdout.match(/ignored errors:\s+(\d+)/);
        const t = r.stderr.match(/^cpu ([\d.]+) ([\d.]+)$/m);
        if (r.code !== 0 || !q || (errs && Number(errs[1]) > 0)) { ctx.log(`sysbench ${b}: exit ${r.code}: ${r.stderr.trim().split('\n').pop()}`); return NaN; }
        const n = Number(q[1]);
        return { value: Number(q[2]), clientUs: t ? (Number(t[1]) + Number(t[2])) * 1e6 / n : NaN, dbUs: ticksToUs(d1 - d0, n) };
      }, runs);
      out[b] = { key: `native ${b} 10`, label: 'sysbench, 10 threads (the same statement, prepared)',
                 cmd: `sysbench bench/sysbench/lookup.lua --db-driver=mysql --mysql-socket=... --table=${tables[b]} --keys=KEYS --threads=10 --time=${secs} run` };
    }
  }
  return out;
}

// pgbench -S and a custom script with the server's lookup, as cells of
// the same run; null when pgbench or its tables cannot be had.
async function pgbenchCells(ctx, cells, work, keys, seconds, pids) {
  const pgbench = programs.pgbench();
  if (!pgbench) return null;
  const env = await dbEnv(ctx);
  const psql = env.ZB_PG_BIN ? path.join(env.ZB_PG_BIN, 'psql') : 'psql';
  const init = await run(pgbench, ['-i', '-s', '1', '-q'], { env, log: ctx.logFile, timeoutS: 300 });
  // The keys, numbered, for the custom script to draw from.
  const codes = fs.readFileSync(keys, 'utf8').split('\n').filter(Boolean);
  const keyFile = path.resolve(work, 'keys.tsv');
  fs.writeFileSync(keyFile, codes.map((c, i) => `${i + 1}\t${c}`).join('\n') + '\n');
  const ld = await run(psql, ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c',
    'DROP TABLE IF EXISTS bench_server_keys; CREATE TABLE bench_server_keys (id int PRIMARY KEY, code text NOT NULL)',
    '-c', `\\copy bench_server_keys FROM '${keyFile}'`], { env, log: ctx.logFile });
  if (init.code !== 0 || ld.code !== 0) { ctx.warn('server: pgbench tables could not be made: see ' + ctx.logFile); return null; }
  const script = `\\set i random(1, ${codes.length})\n` +
    `SELECT * FROM ${benchTables('lookup').pg} WHERE zip_code = (SELECT code FROM bench_server_keys WHERE id = :i);\n`;
  const scriptFile = path.join(work, 'lookup.sql');
  fs.writeFileSync(scriptFile, script);
  const common = ['-n', '-M', 'prepared', '-c', '10', '-j', '2', '-T', String(seconds)];
  // Its rate, and the CPU per transaction of pgbench itself (the client:
  // /usr/bin/time) and of the database (/proc around the run).
  const tps = async extra => {
    const d0 = treeTicks(pids.pg);
    const r = await run('/usr/bin/time', ['-f', 'cpu %U %S', pgbench, ...common, ...extra], { env, log: ctx.logFile });
    const d1 = treeTicks(pids.pg);
    const m = r.stdout.match(/tps = ([\d.]+) \(without initial connection time\)/);
    const done = r.stdout.match(/number of transactions actually processed: (\d+)/);
    const t = r.stderr.match(/^cpu ([\d.]+) ([\d.]+)$/m);
    if (!m || !done) return NaN;
    const n = Number(done[1]);
    return { value: Number(m[1]), clientUs: t ? (Number(t[1]) + Number(t[2])) * 1e6 / n : NaN, dbUs: ticksToUs(d1 - d0, n) };
  };
  const runs = ctx.quick ? {} : HEADLINE_RUNS;
  cells.add('pgbench select-only 10', () => tps(['-S']), runs);
  cells.add('pgbench lookup 10', () => tps(['-f', scriptFile]), runs);
  return { script, scriptFile, selectCmd: `pgbench ${['-S', ...common].join(' ')}`,
           lookupCmd: `pgbench ${[...common, '-f', 'lookup.sql'].join(' ')}` };
}

// Per-thread CPU shares of the server over runs of loadgen -k -c 10 -t 1,
// each a new process and so a fresh burst of connections.
async function balanceRuns(ctx, port, srv, backends, keys, threads) {
  const out = [];
  const runs = ctx.quick ? 3 : 20;
  for (const b of backends) {
    const q = 'strategy=pooled';
    const res = [];
    for (let i = 0; i < runs; i++) {
      const before = new Map(threadTicks(srv.pid).map(t => [t.tid, t.ticks]));
      const r = await loadgen(ctx, { url: `http://127.0.0.1:${port}/zip/${b}/{key}?${q}`, c: 10, seconds: 1, keys });
      const after = threadTicks(srv.pid).map(t => ({ ...t, d: t.ticks - (before.get(t.tid) || 0) }));
      const total = after.reduce((s, t) => s + t.d, 0) || 1;
      // The loop threads: named loopN where the server names them, else
      // the busiest `threads` of them; shares are of the whole process.
      const named = after.filter(t => /^loop\d+$/.test(t.comm));
      const loops = named.length ? named.map(t => t.d / total)
                                 : after.map(t => t.d / total).sort((x, y) => y - x).slice(0, threads);
      while (loops.length < threads) loops.push(0);
      const shares = after.filter(t => t.d > 0).map(t => t.d / total).sort((x, y) => y - x);
      const g = rateRun(r);
      res.push({ rps: typeof g === 'object' ? g.value : NaN, shares, lowest: Math.min(...loops) });
    }
    out.push({ backend: b, runs: res });
  }
  return out;
}

function statsTable(stats) {
  if (!stats || !stats.backends) return 'Server counters: /stats did not answer.\n';
  const rows = stats.backends.map(b => [b.name, b.requests, b.errors_5xx, b.connects,
                                        b.strategies?.['per-request']?.connects ?? 0,
                                        b.strategies?.pooled?.reconnects ?? 0, b.latency_us?.p50, b.latency_us?.p99]);
  let text = 'Server counters after the runs (`GET /stats`), per backend: requests, 5xx, connects, ' +
             'reconnects, p50/p99 latency inside the server (µs):\n\n' +
             table(['backend', 'requests', '5xx', 'connects', 'per-request connects', 'reconnects', 'p50 µs', 'p99 µs'], rows);
  const n5 = stats.backends.reduce((s, b) => s + (b.errors_5xx || 0), 0);
  const nre = stats.backends.reduce((s, b) => s + (b.strategies?.pooled?.reconnects || 0), 0);
  if (n5 || nre)
    text += `\nNote: the server answered ${n5} requests with 5xx and replaced ${nre} lost pool connections ` +
            'during this run (warm-ups included). No rate above counts a 5xx: cells marked `E` show them ' +
            'in their errors column.\n';
  return text;
}

// The latency spectrum of the headline cells, from their runs' HdrHistogram
// logs merged per cell (closed loop: no --rate).
function spectrum(ctx, hdrLogs, rows) {
  const series = rows.filter(([key]) => hdrLogs[key]?.some(f => fs.existsSync(f)))
    .map(([key, b, s]) => ({ label: b === 'nginx' ? 'nginx (static)' : `${b} ${s}`,
                             hdrLog: hdrLogs[key].filter(f => fs.existsSync(f)) }));
  if (!series.length) return;
  try {
    drawSpectrum(ctx.out, 'spectrum', SPECTRUM_TITLE, series);
  } catch (e) {
    ctx.warn(`the latency spectrum: ${e.message}`);
  }
}

export function plot(dir, dat) {
  if (!dat.length) return;
  const file = path.join(dir, 'data', 'lookups.dat');
  const backends = [...new Set(dat.map(r => r[0]))];
  const strategies = [...new Set(dat.map(r => r[1]))];
  const plots = [], legend = [];
  strategies.forEach((s, si) => backends.forEach((b, bi) => {
    if (!dat.some(r => r[0] === b && r[1] === s)) return;
    legend.push(`${b} ${s}`);
    plots.push(`'< awk ''$1=="${b}" && $2=="${s}"'' ${file}' using 3:4:5:6 with yerrorlines lw 2 dt ${si + 1} lc ${bi + 1} title '${b} ${s}'`);
  }));
  draw(dir, 'lookups', 900, 560, `set logscale xy
set xlabel 'concurrency (-c)'
set ylabel 'answered requests/s (log scale)'
set grid
plot ${plots.join(', \\\n     ')}`, { title: 'Random-key lookups over HTTP: answered requests/s against concurrency; bars: 95% CI of the median', legend });
}
