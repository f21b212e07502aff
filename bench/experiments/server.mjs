// Experiment 2: the lookup server under load. req/s of GET /zip/B/random
// for every backend and connection strategy at c 1, 10 and 100, with ab
// and loadgen, next to nginx serving a static file of the size of a
// typical answer, in the same run; and what the server's own targets
// (issue 12) ask for: the server's and the database's CPU per request
// (/proc around each run), the share of each server thread (20 fresh
// bursts of connections), the spread of the pooled cells, pgbench on the
// same PostgreSQL, and one backend's rate while another is under load;
// and the server over HTTPS (--tls-cert/--tls-key), keep-alive and a full
// handshake per request, next to nginx's HTTPS on the same certificate.
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell, writeCells } from '../lib/cells.mjs';
import { table, fmtRatio, fmtPct } from '../lib/table.mjs';
import { draw, writeData, errorBar } from '../lib/plot.mjs';
import { run, sleep } from '../lib/run.mjs';
import { get, getJSON, status } from '../lib/http.mjs';
import { BACKENDS, benchSqlite, benchTables, loadBenchTables, startServer } from '../lib/benchdb.mjs';
import { nginx, dbEnv, dbPids } from '../lib/services.mjs';
import { ab, loadgen, warmRun } from '../lib/clients.mjs';
import { rateRun, serverSplit, splitDelta, fmtErrors, errorNote } from '../lib/goodput.mjs';
import { keysFile, countLines } from '../lib/dataset.mjs';
import { median } from '../lib/stats.mjs';
import { clockTicks, pidInFile, processTicks, threadTicks, treeTicks } from '../lib/proc.mjs';
import { programs } from '../lib/machine.mjs';
import { explain } from '../lib/calibration.mjs';

// The connection strategies the running server offers, per backend: the
// query parameter that picks each. A server that knows ?strategy= answers
// an unknown one with 400; one that does not has ?persistent= only.
async function strategies(port, backends) {
  const known = (await status(port, `/zip/${backends[0]}/random?strategy=no-such-strategy`)) === 400;
  const out = {};
  for (const b of backends) {
    if (!known) { out[b] = [['pooled', 'persistent=1'], ['per-request', 'persistent=0']]; continue; }
    out[b] = [['pooled', 'strategy=pooled'], ['per-request', 'strategy=per-request']];
    if ((await status(port, `/zip/${b}/random?strategy=pipelined`)) === 200) out[b].push(['pipelined', 'strategy=pipelined']);
  }
  return out;
}

const ticksToUs = (ticks, requests) => (requests > 0 ? ticks / clockTicks() * 1e6 / requests : NaN);

export default {
  title: 'the lookup server under load',
  async run(ctx) {
    const port = Number(process.env.ZB_BENCH_PORT || 18280);
    const work = path.join(ctx.build, 'bench-server');
    const seconds = ctx.quick ? 1 : 2;
    const levels = ctx.quick ? [10] : [1, 10, 100];
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
  const strat = await strategies(port, avail);
  const pids = await dbPids(ctx);
  // CPU ticks of what serves each target: the server or nginx, and the database.
  const serverTicks = target => (target === 'nginx' ? treeTicks(nginxPid) : processTicks(srv.pid));
  const dbTicks = target => (target === 'pg' ? treeTicks(pids.pg)
    : target === 'innodb' || target === 'myisam' ? processTicks(pids.mariadb) : 0);

  const tools = fs.existsSync(ctx.bin('loadgen')) ? ['ab', 'loadgen'] : ['ab'];
  const cells = new Cells(ctx, 'server');
  // The server's own count of why it gave 503s (overload, down), per
  // backend, where its /stats has those counters.
  const split = async (p, b) => serverSplit((await getJSON(p, '/stats'))?.backends?.find(x => x.name === b));
  const measure = (key, tool, target, url, c) => cells.add(key, async () => {
    const s0 = serverTicks(target), d0 = dbTicks(target);
    const before = target === 'nginx' ? null : await split(port, target);
    const r = tool === 'ab' ? await ab(ctx, { url: url.replace('{key}', 'random'), c, seconds })
                            : await loadgen(ctx, { url, c, seconds, keys });
    const server = before ? splitDelta(before, await split(port, target)) : null;
    return rateRun(r, { server }, r && { serverUs: ticksToUs(serverTicks(target) - s0, r.completed),
                                         dbUs: ticksToUs(dbTicks(target) - d0, r.completed) });
  }, { warm: () => warmRun(ctx, { url, c, keys }) });
  for (const tool of tools) for (const c of levels) {
    measure(`${tool} nginx - ${c}`, tool, 'nginx', nginxUrl, c);
    for (const b of avail) for (const [s, q] of strat[b])
      measure(`${tool} ${b} ${s} ${c}`, tool, b, `http://127.0.0.1:${port}/zip/${b}/{key}?${q}`, c);
  }
  // HTTPS: a second server with --tls-cert/--tls-key on scripts/nginx's
  // certificate (self-signed P-256), SQLite and pg pooled at c 10, with
  // keep-alive and with a new connection (a full handshake) per request,
  // next to nginx's HTTPS listener serving the same static file.
  const https = await httpsCells(ctx, { cells, startTls, port, avail, keys, seconds, nginxPid });
  // pgbench on the same PostgreSQL, interleaved with the cells above.
  const pgb = avail.includes('pg') ? await pgbenchCells(ctx, cells, work, keys, seconds) : null;
  // Isolation: SQLite pooled while pg per-request runs at c 10 on the same server.
  const iso = avail.includes('sqlite') && avail.includes('pg') && tools.includes('loadgen');
  if (iso)
    cells.add('isolation sqlite pooled 10', async () => {
      const [, q] = strat.pg.find(x => x[0] === 'per-request');
      const [, qs] = strat.sqlite.find(x => x[0] === 'pooled');
      const other = loadgen(ctx, { url: `http://127.0.0.1:${port}/zip/pg/{key}?${q}`, c: 10, seconds: seconds + 1, keys });
      await sleep(300);
      const r = await loadgen(ctx, { url: `http://127.0.0.1:${port}/zip/sqlite/{key}?${qs}`, c: 10, seconds, keys });
      await other;
      return rateRun(r);
    }, { warm: () => warmRun(ctx, { url: `http://127.0.0.1:${port}/zip/sqlite/{key}?${strat.sqlite.find(x => x[0] === 'pooled')[1]}`, c: 10, keys }) });
  await cells.measure();
  const stats = await getJSON(port, '/stats');
  const threads = stats?.server?.threads ?? 2;
  const balance = await balanceRuns(ctx, port, srv, avail.filter(b => b === 'sqlite' || b === 'pg'), strat, keys, threads);
  const version = (await run(ctx.bin('server'), ['-V'])).stdout.trim();

  const cell = k => cells.get(k);
  const med = k => cells.median(k);
  const lines = ['## Experiment 2: the lookup server (build/bin/server), req/s', '',
    `Command: \`${ctx.command('server')}\`. Server: \`${version}\`, ${threads} threads; ` +
    'client, server and databases share the machine.',
    `Data: \`${ctx.dataset}\` loaded into the bench's own tables (\`bench_lookup*\`, \`${path.relative(ctx.root, benchSqlite(ctx, 'lookup'))}\`); ` +
    `keys \`${keys}\` (${countLines(keys)} codes). Backends: ${avail.join(', ')}.` +
    (skipped.length ? ` Skipped (database not up): ${skipped.join(', ')}.` : ''),
    `Each run: ${seconds} s, HTTP keep-alive; the runs of all cells interleaved. Strategies: ` +
    [...new Set(avail.flatMap(b => strat[b].map(([s, q]) => `${s} = \`?${q}\``)))].join(', ') + '.',
    `- ab: \`ab -q -k -c C -t ${seconds} -n 50000000 'http://127.0.0.1:${port}/zip/B/random?STRATEGY'\` ` +
    '(the server draws the key; ab counts bodies of another length than the first as failed: ignored, non-2xx shown).',
    `- loadgen: \`build/bin/loadgen -q -k -c C -t ${seconds} --keys ${keys} --json 'http://127.0.0.1:${port}/zip/B/{key}?STRATEGY'\`.`,
    `- nginx (\`scripts/nginx\`, one worker per core, keep-alive) serving a static ${size}-byte file ` +
    '(the median size of a lookup answer here), same clients, same run.', ''];
  const rowsOf = b => (b === 'nginx' ? [['nginx', '-']] : strat[b].map(([s]) => [b, s]));
  const targets = ['nginx', ...avail];
  // The errors column: per level, the errors of the row's cells by kind.
  const errCol = keysByLevel => keysByLevel.map(([c, k]) => (fmtErrors(cell(k)) ? `c=${c}: ${fmtErrors(cell(k))}` : ''))
    .filter(Boolean).join('; ');
  const rateCells = [];
  for (const tool of tools) {
    lines.push(`### ${tool}: answered lookups per second (goodput)`, '');
    const head = ['backend', 'connection', ...levels.map(c => `c=${c}`)];
    const rows = [], ratios = [];
    for (const t of targets) for (const [b, s] of rowsOf(t)) {
      const label = b === 'nginx' ? `nginx (static ${size} B)` : b;
      const k = c => `${tool} ${b} ${s} ${c}`;
      rateCells.push(...levels.map(c => cell(k(c))));
      rows.push([label, s, ...levels.map(c => fmtCell(cell(k(c)))), errCol(levels.map(c => [c, k(c)]))]);
      if (b !== 'nginx')
        ratios.push([b, s, ...levels.map(c => fmtRatio(med(`${tool} ${b} ${s} ${c}`) / med(`${tool} nginx - ${c}`)))]);
    }
    lines.push(table([...head, 'errors'], rows, 'll' + 'r'.repeat(levels.length) + 'l'),
               'Ratio server/nginx (medians):', '', table(head, ratios, 'll' + 'r'.repeat(levels.length)));
  }
  lines.push(errorNote(rateCells.filter(Boolean)), '', cells.machineNote(), '');

  // CPU per request, from /proc around each run (loadgen's runs where it ran).
  const tool = tools[tools.length - 1];
  const cpuOf = (k, field) => { const c = cell(k); return c && c.extras.length ? median(c.extras.map(e => e[field])) : NaN; };
  const us = x => (Number.isFinite(x) ? x.toFixed(1) : '-');
  const c10 = levels.includes(10) ? 10 : levels[0];
  const cpuRows = [];
  for (const t of targets) for (const [b, s] of rowsOf(t))
    cpuRows.push([b, s, ...levels.map(c => `${us(cpuOf(`${tool} ${b} ${s} ${c}`, 'serverUs'))} / ${b === 'sqlite' || b === 'nginx' ? '-' : us(cpuOf(`${tool} ${b} ${s} ${c}`, 'dbUs'))}`)]);
  lines.push(`### CPU per request: the server's / the database's (µs, ${tool}, median over the runs)`, '',
    'From /proc around each run: the server process\'s utime + stime (nginx: master and workers), the',
    'database\'s (PostgreSQL: the postmaster and its backends, those that exited included; MariaDB:',
    'mariadbd), over the requests completed. SQLite runs inside the server.', '',
    table(['backend', 'connection', ...levels.map(c => `c=${c}`)], cpuRows, 'll' + 'r'.repeat(levels.length)));

  // Spread of the pooled cells at c >= 10.
  const spreadRows = [];
  for (const tl of tools) for (const b of avail) for (const c of levels.filter(x => x >= 10)) {
    const cl = cell(`${tl} ${b} pooled ${c}`);
    if (cl && cl.values.length) spreadRows.push([tl, b, c, cl.values.length, (cl.summary.max / cl.summary.min).toFixed(2)]);
  }
  lines.push('### Spread of the pooled cells at c >= 10: max/min over all their interleaved runs', '',
             table(['tool', 'backend', 'c', 'runs', 'max/min'], spreadRows));

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

  // pgbench next to the server, and isolation.
  if (pgb) {
    const rows = [['pgbench -S -M prepared -c 10 -j 2 (select-only)', fmtCell(cell('pgbench select-only 10'))],
                  ['pgbench -M prepared -c 10 -j 2, the server\'s lookup (custom script)', fmtCell(cell('pgbench lookup 10'))]];
    for (const [s] of strat.pg) rows.push([`zipbench pg ${s}, loadgen -c 10`, fmtCell(cell(`loadgen pg ${s} 10`))]);
    lines.push('### pgbench on the same PostgreSQL, same run (transactions or requests per second, c 10)', '',
      table(['client', 'per second'], rows),
      `pgbench: \`${pgb.selectCmd}\` and \`${pgb.lookupCmd}\` with ${pgb.scriptFile}:`, '', '```', pgb.script.trim(), '```',
      'The custom script asks for a random loaded code as the server\'s lookup does; the code comes from a',
      'key table by id in the same statement (pgbench has no list of strings to draw from).', '');
  }
  if (iso)
    lines.push('### Isolation: SQLite pooled at c 10 while pg per-request runs at c 10 on the same server', '',
      table(['SQLite pooled, loadgen -c 10', 'req/s'], [['alone', fmtCell(cell('loadgen sqlite pooled 10'))],
                                                         ['while pg per-request runs at c 10', fmtCell(cell('isolation sqlite pooled 10'))]]),
      `Kept: ${fmtPct(med('isolation sqlite pooled 10') / med('loadgen sqlite pooled 10'), 0)} of the solo rate (both clients share the cores).`, '');

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
              return [t, fmtCell(cell(ka)), us(cpuOf(ka, 'serverUs')), fmtCell(cell(nw)),
                      us(cpuOf(nw, 'serverUs')), fmtRatio(med(nw) / med(ka)),
                      [fmtErrors(cell(ka)) && `keep-alive: ${fmtErrors(cell(ka))}`, fmtErrors(cell(nw)) && `new: ${fmtErrors(cell(nw))}`].filter(Boolean).join('; ')];
            }), 'lrrrrrl'), '');

  lines.push(targetsOfIssue12(ctx, { cells, tools, avail, strat, balance, pgb, iso, c10, cpuOf, tool }));
  lines.push(statsTable(stats), explain(ctx, 'server'), '');

  // Raw runs and the plot's data: medians per backend, strategy and c,
  // from the bundled load generator where it ran (ab otherwise).
  const raw = [];
  for (const k of cells.keys()) for (const v of cell(k).values) raw.push([...k.split(' '), v.toFixed(0)]);
  writeData(ctx.out, 'server-runs.tsv', raw);
  writeCells(ctx.out, 'server', cells.keys().map(cell));
  const dat = [];
  for (const b of avail) for (const [s] of strat[b]) for (const c of levels) {
    const x = cell(`${tool} ${b} ${s} ${c}`);
    if (x && x.values.length) dat.push([b, s, c, ...errorBar(x.summary).map(v => v.toFixed(0))]);
  }
  writeData(ctx.out, 'lookups.dat', dat);
  plot(ctx.out, dat);
  return lines.join('\n');
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

// pgbench -S and a custom script with the server's lookup, as cells of
// the same run; null when pgbench or its tables cannot be had.
async function pgbenchCells(ctx, cells, work, keys, seconds) {
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
  const tps = async extra => {
    const r = await run(pgbench, [...common, ...extra], { env, log: ctx.logFile });
    const m = r.stdout.match(/tps = ([\d.]+) \(without initial connection time\)/);
    return m ? Number(m[1]) : NaN;
  };
  cells.add('pgbench select-only 10', () => tps(['-S']));
  cells.add('pgbench lookup 10', () => tps(['-f', scriptFile]));
  return { script, scriptFile, selectCmd: `pgbench ${['-S', ...common].join(' ')}`,
           lookupCmd: `pgbench ${[...common, '-f', 'lookup.sql'].join(' ')}` };
}

// Per-thread CPU shares of the server over runs of loadgen -k -c 10 -t 1,
// each a new process and so a fresh burst of connections.
async function balanceRuns(ctx, port, srv, backends, strat, keys, threads) {
  const out = [];
  const runs = ctx.quick ? 3 : 20;
  for (const b of backends) {
    const [, q] = strat[b].find(x => x[0] === 'pooled');
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

// The targets of issue 12, met or not, from this run's figures.
function targetsOfIssue12(ctx, { cells, tools, avail, strat, balance, pgb, iso, c10, cpuOf, tool }) {
  const med = k => cells.median(k);
  // a/b from the runs of one round (both cells are interleaved in the same
  // rounds), so the box's swings between rounds cancel.
  const ratio = (a, b) => {
    const { value, summary: x } = cells.sameRoundRatio(a, b);
    return { value, how: !x ? 'ratio of medians' : `same-round median of ${x.n}, range ${fmtRatio(x.min)}-${fmtRatio(x.max)}` };
  };
  const lines = ['### The server\'s targets (issue 12), from this run', ''];
  const say = (text, ok) => lines.push(`- ${text}: ${ok === null ? 'not measured' : ok ? 'met' : 'NOT met'}.`);
  for (const bal of balance)
    say(`Balance, ${bal.backend} pooled: every loop thread at >= 30% of the server's CPU in ${bal.runs.filter(r => r.lowest >= 0.3).length} of ${bal.runs.length} runs (target: all)`,
        bal.runs.every(r => r.lowest >= 0.3));
  let worst = 0, worstAt = '';
  for (const tl of tools) for (const b of avail) for (const c of [10, 100]) {
    const cl = cells.get(`${tl} ${b} pooled ${c}`);
    if (cl && cl.values.length > 1 && cl.summary.max / cl.summary.min > worst) {
      worst = cl.summary.max / cl.summary.min;
      worstAt = `${tl} ${b} c=${c}`;
    }
  }
  if (worst)
    say(`Spread: the widest pooled cell at c >= 10 has max/min ${worst.toFixed(2)} (${worstAt}; target <= 1.3 over 5 or more interleaved runs)`, worst <= 1.3);
  else
    say('Spread of the pooled cells at c >= 10 (target: max/min <= 1.3 over 5 or more interleaved runs): one run per cell here (--min-runs 5 measures it)', null);
  if (pgb) {
    for (const [s, want] of [['pooled', 0.8], ['pipelined', 1.0]]) {
      if (!strat.pg.some(x => x[0] === s)) { say(`pg ${s} at c 10 >= ${want}x pgbench -S: the server has no ${s} strategy`, null); continue; }
      const r = ratio(`loadgen pg ${s} 10`, 'pgbench select-only 10');
      const l = ratio(`loadgen pg ${s} 10`, 'pgbench lookup 10');
      say(`pg ${s} at c 10: ${fmtRatio(r.value)} pgbench -S -M prepared -c 10 -j 2 (${r.how}; target >= ${want}x); ` +
          `${fmtRatio(l.value)} pgbench with the lookup script`, Number.isFinite(r.value) ? r.value >= want : null);
    }
  }
  if (avail.includes('sqlite')) {
    const r = ratio(`${tool} sqlite pooled ${c10}`, `${tool} nginx - ${c10}`);
    say(`SQLite pooled at c ${c10}: ${fmtRatio(r.value)} nginx serving a static file of the same size (${r.how}; target >= 0.7x)`,
        Number.isFinite(r.value) ? r.value >= 0.7 : null);
  }
  if (avail.includes('pg')) {
    const x = cpuOf(`${tool} pg pooled ${c10}`, 'serverUs');
    say(`Server CPU per request, pg pooled at c ${c10}: ${Number.isFinite(x) ? x.toFixed(1) : '-'} µs (target <= 20)`, Number.isFinite(x) ? x <= 20 : null);
  }
  if (iso) {
    const r = ratio('isolation sqlite pooled 10', 'loadgen sqlite pooled 10');
    say(`Isolation: SQLite pooled keeps ${fmtPct(r.value, 0)} of its solo req/s while pg per-request runs at c 10 (${r.how}; target >= 90%)`,
        Number.isFinite(r.value) ? r.value >= 0.9 : null);
  }
  lines.push('- The Apache + mod_php ratio (>= 3x at `ab -k -c 10`, persistent): experiment 3.', '');
  return lines.join('\n');
}

function statsTable(stats) {
  if (!stats || !stats.backends) return 'Server counters: /stats did not answer.\n';
  const rows = stats.backends.map(b => [b.name, b.requests, b.errors_5xx, b.connects, b.connects_per_request,
                                        b.reconnects, b.latency_us?.p50, b.latency_us?.p99]);
  let text = 'Server counters after the runs (`GET /stats`), per backend: requests, 5xx, connects, ' +
             'reconnects, p50/p99 latency inside the server (µs):\n\n' +
             table(['backend', 'requests', '5xx', 'connects', 'per-request connects', 'reconnects', 'p50 µs', 'p99 µs'], rows);
  const n5 = stats.backends.reduce((s, b) => s + (b.errors_5xx || 0), 0);
  const nre = stats.backends.reduce((s, b) => s + (b.reconnects || 0), 0);
  if (n5 || nre)
    text += `\nNote: the server answered ${n5} requests with 5xx and replaced ${nre} lost pool connections ` +
            'during this run (warm-ups included). No rate above counts a 5xx: cells marked `E` show them ' +
            'in their errors column.\n';
  return text;
}

function plot(dir, dat) {
  if (!dat.length) return;
  const file = path.join(dir, 'data', 'lookups.dat');
  const backends = [...new Set(dat.map(r => r[0]))];
  const strategies = [...new Set(dat.map(r => r[1]))];
  const plots = [];
  strategies.forEach((s, si) => backends.forEach((b, bi) =>
    plots.push(`'< awk ''$1=="${b}" && $2=="${s}"'' ${file}' using 3:4:5:6 with yerrorlines lw 2 dt ${si + 1} lc ${bi + 1} title '${b} ${s}'`)));
  draw(dir, 'lookups', 900, 520, `set title 'Random-key lookups over HTTP: answered requests/s vs concurrency, bars: 95% CI of the median'
set logscale xy
set xlabel 'concurrency (-c)'
set ylabel 'answered requests/s (log scale)'
set grid
set key outside right
plot ${plots.join(', \\\n     ')}`);
}
