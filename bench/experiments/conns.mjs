// Experiment: the cost as the connections grow. c = 100, 1,000 and 10,000
// keep-alive connections (loadgen -k) against the server, SQLite pooled and
// PostgreSQL pooled, and against nginx serving a file of the size of a
// lookup's answer, all in the same rounds: answered req/s, p50 and p99,
// the CPU per request of the server (nginx: master and workers), its
// resident memory during the run, and how long loadgen's connections took
// to open (so that a slow ramp is not read as the server's latency). Each
// zipbench / nginx figure is a same-round ratio with its interval. Beside
// them, the memory an idle keep-alive connection costs each server: a
// fresh server, its RSS, then c connections that each made one request
// and stay open doing nothing, its RSS again; (after - before) / c.
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell, writeCells, roundRatios } from '../lib/cells.mjs';
import { table } from '../lib/table.mjs';
import { barPlot, draw, writeData, errorBar } from '../lib/plot.mjs';
import { run, sleep } from '../lib/run.mjs';
import { get, getJSON } from '../lib/http.mjs';
import { loadBenchTables, startServer } from '../lib/benchdb.mjs';
import { benchPort, nginx } from '../lib/services.mjs';
import { loadgen, warmRun } from '../lib/clients.mjs';
import { rateRun, serverSplit, splitDelta, fmtErrors, errorNote } from '../lib/goodput.mjs';
import { keysFile } from '../lib/dataset.mjs';
import { median, summarize } from '../lib/stats.mjs';
import { ratioOf, extraSummary, extraRatio, fmtRatioCI } from '../lib/rank.mjs';
import { ticksToUs, pidInFile, processTicks, rssKiB, treeTicks } from '../lib/proc.mjs';
import { holdConnections } from '../lib/hold.mjs';

// The backends measured (pooled), beside nginx.
const BACKENDS = ['sqlite', 'pg'];
// The goals the section judges: zipbench / nginx at these levels and p99
// no worse than nginx's, for SQLite (the server at the machine's floor,
// whose figures issue 51 set them by); the memory of an idle connection.
const GOAL = { ratio: 0.95, ratioAt: [1000, 10000], memoryKiB: 2, backends: ['sqlite'] };
// The fds each process needs besides its connections.
const FD_SLACK = 512;
// How long a request may wait for a pooled database connection here.
const ACQUIRE_MS = 60000;

// The concurrencies of a run: ZB_BENCH_CONNS_LEVELS narrows or widens it.
export function connsLevels(text = '100,1000,10000') {
  const levels = text.split(',').map(Number);
  if (!levels.length || !levels.every(c => Number.isInteger(c) && c > 0))
    throw new Error(`ZB_BENCH_CONNS_LEVELS: '${text}' is not a list of concurrencies`);
  return levels;
}

const label = t => (t === 'nginx' ? 'nginx (static)' : `zipbench ${t} pooled`);

export default {
  title: 'keep-alive connections by the thousand: zipbench against nginx',
  plots: {
    conns: 'Answered requests per second against the number of keep-alive connections (loadgen -k), zipbench SQLite and PostgreSQL pooled and nginx serving a file of the same size, in the same rounds. Bars: the 95% interval of the median.',
    'conns-memory': 'Resident memory per idle keep-alive connection after one request, a fresh server each run: (RSS with c connections - RSS before) / c. Bars: the 95% interval of the median.',
  },
  async run(ctx) {
    const port = benchPort('CONNS', 20);
    const work = path.join(ctx.build, 'bench-conns');
    fs.mkdirSync(work, { recursive: true });
    const hard = await fdHardLimit();
    let levels = ctx.quick ? [100, 1000] : connsLevels(process.env.ZB_BENCH_CONNS_LEVELS || undefined);
    const tooMany = levels.filter(c => c + FD_SLACK > hard);
    if (tooMany.length)
      ctx.warn(`conns: c=${tooMany.join(', ')} skipped: the fd limit (ulimit -Hn) is ${hard}, and loadgen and each ` +
               `server need about c + ${FD_SLACK} (raise it: ulimit -n)`);
    levels = levels.filter(c => !tooMany.includes(c));
    if (!levels.length) throw new Error('conns: no level fits the fd limit');
    const maxC = Math.max(...levels);
    const memLevels = levels.filter(c => c >= 1000);
    const keys = keysFile(ctx);
    const { avail, skipped } = await loadBenchTables(ctx, 'lookup', BACKENDS);
    if (!avail.length) throw new Error('conns: no backend to measure');
    // A request waits for a pooled connection as long as it takes: at
    // c=10,000 the queue is what is measured, not the pool's timeout (503).
    const serverSets = ['--set', `server.max_connections=${maxC + FD_SLACK}`,
                        ...avail.filter(b => b !== 'sqlite').flatMap(b => ['--set', `${b}.acquire_timeout_ms=${ACQUIRE_MS}`])];
    const ng = await nginxFor(ctx, maxC);
    const srv = await startServer(ctx, 'lookup', port, avail, { log: path.join(work, 'server.log'), extra: serverSets });
    try {
      return await measureAll(ctx, { port, work, levels, memLevels, keys, avail, skipped, srv, ng, serverSets });
    } finally {
      await srv.stop();
      await ng.restore();
    }
  },
};

async function fdHardLimit() {
  const r = await run('bash', ['-c', 'ulimit -Hn']);
  const n = Number(r.stdout.trim());
  return r.stdout.trim() === 'unlimited' ? Infinity : Number.isFinite(n) && n > 0 ? n : 1024;
}

// nginx with room for maxC connections per worker (scripts/nginx reloads it
// when it runs with fewer); restore() puts back what was there: stopped if
// it was not running, else its default connections.
async function nginxFor(ctx, maxC) {
  const script = path.join(ctx.root, 'scripts/nginx');
  const was = (await run(script, ['status'], { log: ctx.logFile })).code === 0;
  const env = { ZB_NGINX_CONNECTIONS: String(Math.max(4096, maxC + FD_SLACK)) };
  const start = async () => {
    const r = await run(script, ['start'], { env, log: ctx.logFile, timeoutS: 120 });
    if (r.code !== 0) throw new Error(`scripts/nginx start failed: ${(r.stderr || r.stdout).trim()}`);
  };
  await start();
  ctx.nginxInfo = null;
  const info = await nginx(ctx);
  return {
    ...info, env, start,
    pid: () => pidInFile(info.pidFile),
    // A fresh nginx: stopped and started again (the memory cells).
    async fresh() {
      await run(script, ['stop'], { log: ctx.logFile, timeoutS: 120 });
      await start();
    },
    async restore() {
      if (!was) await run(script, ['stop'], { log: ctx.logFile, timeoutS: 120 });
      else await run(script, ['start'], { log: ctx.logFile, timeoutS: 120 });
      ctx.nginxInfo = null;
    },
  };
}

async function measureAll(ctx, { port, work, levels, memLevels, keys, avail, skipped, srv, ng, serverSets }) {
  // The file nginx serves: the median size of 51 lookups' answers.
  const sizes = [];
  for (let i = 0; i < 51; i++) sizes.push((await get(port, `/zip/${avail[0]}/random`)).body.length);
  const size = median(sizes);
  fs.writeFileSync(path.join(ng.html, 'conns.json'), 'x'.repeat(size));
  const targets = ['nginx', ...avail];
  const urlOf = t => (t === 'nginx' ? `http://127.0.0.1:${ng.port}/conns.json`
                                    : `http://127.0.0.1:${port}/zip/${t}/{key}?strategy=pooled`);
  const ticks = t => (t === 'nginx' ? treeTicks(ng.pid()) : processTicks(srv.pid));
  const rss = t => (t === 'nginx' ? rssKiB(ng.pid(), { tree: true }) : rssKiB(srv.pid));
  const split = async b => serverSplit((await getJSON(port, '/stats'))?.backends?.find(x => x.name === b));
  // Long enough at c=10,000 for the ramp (loadgen's connections_open) to
  // be a small part of the run.
  const secondsAt = c => (ctx.quick ? 0.5 : c >= 10000 ? 8 : 3);

  const cells = new Cells(ctx, 'conns');
  for (const c of levels) for (const t of targets) {
    const url = urlOf(t), seconds = secondsAt(c);
    cells.add(`${t} ${c}`, async () => {
      const s0 = ticks(t);
      const before = t === 'nginx' ? null : await split(t);
      // The memory in the middle of the run, every connection open.
      let rssMid = NaN;
      const timer = setTimeout(() => { rssMid = rss(t); }, seconds * 600);
      const r = await loadgen(ctx, { url, c, seconds, keys: t === 'nginx' ? undefined : keys });
      clearTimeout(timer);
      if (!Number.isFinite(rssMid)) rssMid = rss(t);
      const g = rateRun(r, { server: before ? splitDelta(before, await split(t)) : null });
      if (!r) return g;
      const answered = g.value * r.seconds;
      const open = r.json.connections_open || {};
      return { ...g, serverUs: ticksToUs(ticks(t) - s0, answered), clientUs: r.cpuUsPerReq,
               p50Us: r.json.latency_us?.p50, p99Us: r.json.latency_us?.p99, rssKiB: rssMid,
               allOpenS: open.all_open_s ?? NaN, openP99Ms: open.open_ms?.p99, openMaxMs: open.open_ms?.max };
    }, { warm: () => warmRun(ctx, { url, c, keys: t === 'nginx' ? undefined : keys }) });
  }
  // Memory per idle connection: a fresh server each run. zipbench's at the
  // config's max_request_bytes, and at 1024, the least it takes (the pool
  // libmicrohttpd gives each connection is that size).
  const memPort = port + 1;
  const memTargets = ctx.quick ? ['nginx', 'zipbench'] : ['nginx', 'zipbench', 'zipbench-1024'];
  const memPath = onePath(keys, avail[0]);
  for (const c of memLevels) for (const t of memTargets)
    cells.add(`memory ${t} ${c}`, () => idleMemory(ctx, { t, c, ng, memPort, avail, serverSets, work, memPath }),
              { minRuns: Math.min(ctx.repeat.minRuns, 6), maxRuns: Math.min(ctx.repeat.maxRuns, 8) });
  await cells.measure();
  const version = (await run(ctx.bin('server'), ['-V'])).stdout.trim();
  return report(ctx, { cells, levels, memLevels, memTargets, targets, avail, skipped, size, version, secondsAt, keys, ng });
}

// The path of one loaded key's lookup: every held connection asks for the
// same row, so that the database's cache does not grow with them.
function onePath(keys, backend) {
  const key = fs.readFileSync(keys, 'utf8').split('\n').find(Boolean);
  return `/zip/${backend}/${encodeURIComponent(key)}?strategy=pooled`;
}

// One run of a memory cell: bytes per idle connection.
async function idleMemory(ctx, { t, c, ng, memPort, avail, serverSets, work, memPath }) {
  let pid, tree = false, p = memPort, stop = async () => {}, pathOf = memPath;
  if (t === 'nginx') {
    await ng.fresh();
    pid = ng.pid();
    tree = true;
    p = ng.port;
    pathOf = '/conns.json';
  } else {
    const extra = t === 'zipbench-1024' ? [...serverSets, '--set', 'server.max_request_bytes=1024'] : serverSets;
    const s = await startServer(ctx, 'lookup', memPort, avail, { log: path.join(work, 'server-memory.log'), extra });
    pid = s.pid;
    stop = () => s.stop();
  }
  try {
    await get(p, pathOf);   // what a first request allocates, before the baseline
    await sleep(200);
    const before = rssKiB(pid, { tree });
    const h = await holdConnections({ port: p, path: pathOf, n: c });
    await sleep(200);
    const after = rssKiB(pid, { tree });
    h.close();
    const ok = h.statuses[200] || 0;
    if (ok !== c) { ctx.log(`memory ${t} ${c}: ${c - ok} answers were not 200: ${JSON.stringify(h.statuses)}`); return NaN; }
    return { value: (after - before) * 1024 / c, beforeKiB: before, afterKiB: after, holdS: h.seconds };
  } catch (e) {
    ctx.log(`memory ${t} ${c}: ${e.message}`);
    return NaN;
  } finally {
    await stop();
  }
}

// The same-round ratio of one extra figure of two cells (p99 of zipbench
// over nginx's): {value, lo, hi, n}.
const num = (x, d = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }) : '-');
const ciText = (s, f) => (Number.isFinite(s.lo) ? `${f(s.median)} [${f(s.lo)}-${f(s.hi)}]` : Number.isFinite(s.median) ? `${f(s.median)} (n=${s.n})` : '-');

function report(ctx, { cells, levels, memLevels, memTargets, targets, avail, skipped, size, version, secondsAt, keys, ng }) {
  const cell = k => cells.get(k);
  const lines = ['## Connections by the thousand: zipbench against nginx', '',
    `Command: \`${ctx.command('conns', ['ZB_BENCH_CONNS_LEVELS'])}\`. Server: \`${version}\`, ` +
    `\`--set server.max_connections=${Math.max(...levels) + FD_SLACK}\` and \`B.acquire_timeout_ms=${ACQUIRE_MS}\` ` +
    '(a request waits for a pooled connection as long as it takes: the queue is measured, not a 503), ' +
    `pooled lookups of random loaded keys (\`${keys}\`) ` +
    `on ${avail.join(', ')}${skipped.length ? ` (skipped, database not up: ${skipped.join(', ')})` : ''}; nginx ` +
    `(\`scripts/nginx\`, one worker per core, \`ZB_NGINX_CONNECTIONS=${ng.env.ZB_NGINX_CONNECTIONS}\`) serving a ` +
    `${size}-byte file (the median size of an answer), same rounds.`,
    `Each run: \`build/bin/loadgen -q -k -c C -t T --json URL\` (T = ${[...new Set(levels.map(secondsAt))].join(' or ')} s: ` +
    `${levels.map(c => `${secondsAt(c)} s at c=${c}`).join(', ')}), after a warm-up at its concurrency; a new set of connections ` +
    'each run. The server\'s CPU per answered request from /proc around the run (nginx: master and workers); its ' +
    'resident memory (VmRSS; nginx: master and workers) 60% into the run, every connection open; p50 and p99 ' +
    'closed-loop, from each request\'s start (its connect included, for the first on a connection).', ''];

  // Rates and ratios.
  const rateRows = [];
  for (const t of targets)
    rateRows.push([label(t), ...levels.map(c => fmtCell(cell(`${t} ${c}`))),
                   levels.map(c => fmtErrors(cell(`${t} ${c}`)) && `c=${c}: ${fmtErrors(cell(`${t} ${c}`))}`).filter(Boolean).join('; ')]);
  lines.push('### Answered requests per second (goodput)', '',
    table(['target', ...levels.map(c => `c=${c}`), 'errors'], rateRows, 'l' + 'r'.repeat(levels.length) + 'l'));
  const ratioRows = avail.map(b => [label(b), ...levels.map(c => fmtRatioCI(ratioOf(cells, `${b} ${c}`, `nginx ${c}`)))]);
  lines.push('### zipbench / nginx, same-round ratio [95% CI]', '',
    table(['target', ...levels.map(c => `c=${c}`)], ratioRows, 'l' + 'r'.repeat(levels.length)));

  // Latency, CPU, memory under load, the ramp.
  const us = x => num(x / 1000, 1);
  const detail = [];
  for (const c of levels) for (const t of targets) {
    const k = `${t} ${c}`, x = cell(k);
    if (!x?.values.length) continue;
    const p99r = t === 'nginx' ? '1x' : fmtRatioCI(extraRatio(cells, k, `nginx ${c}`, 'p99Us'));
    detail.push([c, label(t), ciText(extraSummary(x, 'p50Us'), us), ciText(extraSummary(x, 'p99Us'), us), p99r,
                 ciText(extraSummary(x, 'serverUs'), v => num(v, 1)), ciText(extraSummary(x, 'clientUs'), v => num(v, 1)),
                 num(extraSummary(x, 'rssKiB').median / 1024, 1),
                 `${num(extraSummary(x, 'allOpenS').median, 3)} / ${num(extraSummary(x, 'openMaxMs').median, 1)}`]);
  }
  lines.push('### Latency, CPU per request, memory under load, and the ramp (medians [95% CI] over the runs)', '',
    'p50 and p99 in ms; p99 / nginx: the same-round ratio of the p99s; server and loadgen µs of CPU per answered ' +
    'request; RSS in MiB during the run (the process\'s: memory an earlier run at a higher c left in its heap stays); ' +
    'ramp: when the last of the c connections had opened, in s from the run\'s start, and the slowest open in ms ' +
    '(loadgen\'s `connections_open`): a second or more there is a SYN the listen backlog dropped and the kernel ' +
    'retried, and the p99 of those runs holds it.', '',
    table(['c', 'target', 'p50 ms', 'p99 ms', 'p99 / nginx', 'server µs/req', 'loadgen µs/req', 'RSS MiB', 'ramp s / slowest open ms'],
          detail, 'rlrrrrrrr'));

  // Memory per idle connection.
  const kib = v => num(v / 1024, 2);
  const memLabel = t => (t === 'nginx' ? 'nginx' : t === 'zipbench' ? 'zipbench (the config\'s max_request_bytes)'
                                                                    : 'zipbench, max_request_bytes = 1024');
  if (memLevels.length) {
    const memRows = memTargets.map(t => [memLabel(t), ...memLevels.map(c => fmtCell(cell(`memory ${t} ${c}`), v => kib(v)))]);
    lines.push('### Memory per idle keep-alive connection (KiB, median [95% CI])', '',
      'A fresh server each run (nginx stopped and started again; zipbench on its own port); one request, then its RSS; ' +
      'then c connections each make one request (the same key: no database cache grows with them) and stay open, ' +
      'idle; RSS again: (after - before) / c. libmicrohttpd gives each connection a memory pool of ' +
      '`max_request_bytes` and clears all of it after every request, so the pool is resident whatever the request.', '',
      table(['server', ...memLevels.map(c => `c=${c}`)], memRows, 'l' + 'r'.repeat(memLevels.length)));
  }

  // The goals.
  const goals = [];
  for (const b of avail) for (const c of GOAL.ratioAt.filter(x => levels.includes(x))) {
    const r = ratioOf(cells, `${b} ${c}`, `nginx ${c}`);
    if (!GOAL.backends.includes(b)) {
      if (Number.isFinite(r.value))
        goals.push(`- ${label(b)} / nginx at c=${c}: ${fmtRatioCI(r)}, not judged: each lookup waits for ` +
          'the database\'s own process, which the server experiment sets beside pgbench -S.');
      continue;
    }
    if (Number.isFinite(r.value))
      goals.push(`- ${label(b)} / nginx at c=${c} >= ${GOAL.ratio}: ${fmtRatioCI(r)}, ` +
        `${Number.isFinite(r.lo) ? (r.lo >= GOAL.ratio ? 'reached' : r.hi < GOAL.ratio ? 'missed' : 'not shown either way') : 'too few rounds to say'}.`);
    const p = extraRatio(cells, `${b} ${c}`, `nginx ${c}`, 'p99Us');
    if (Number.isFinite(p.value))
      goals.push(`- ${label(b)} p99 no worse than nginx's at c=${c}: ${fmtRatioCI(p)} of it, ` +
        `${Number.isFinite(p.lo) ? (p.hi <= 1 ? 'reached' : p.lo > 1 ? 'missed' : 'not shown either way') : 'too few rounds to say'}.`);
  }
  for (const c of memLevels) {
    const m = cell(`memory zipbench ${c}`);
    if (m?.values.length)
      goals.push(`- zipbench's memory per idle connection at c=${c} <= ${GOAL.memoryKiB} KiB: ${kib(m.summary.median)} KiB, ` +
        `${m.summary.median <= GOAL.memoryKiB * 1024 ? 'reached' : 'missed'}` +
        (cell(`memory zipbench-1024 ${c}`)?.values.length ? `; at max_request_bytes = 1024, ${kib(cell(`memory zipbench-1024 ${c}`).summary.median)} KiB` : '') +
        (cell(`memory nginx ${c}`)?.values.length ? `; nginx ${kib(cell(`memory nginx ${c}`).summary.median)} KiB` : '') + '.');
  }
  if (goals.length) lines.push('### Against the goals', '', ...goals, '');
  lines.push(errorNote(cells.keys().map(cell)), '', cells.machineNote(), '');

  writeCells(ctx.out, 'conns', cells.keys().map(cell));
  const dat = [];
  for (const t of targets) for (const c of levels) {
    const x = cell(`${t} ${c}`);
    if (x?.values.length) dat.push([t, c, ...errorBar(x.summary).map(v => v.toFixed(0))]);
  }
  writeData(ctx.out, 'conns.dat', dat);
  plotRates(ctx.out, dat, targets);
  if (memLevels.length)
    barPlot(ctx.out, 'conns-memory', {
      title: 'Memory per idle keep-alive connection after one request (KiB); bars: 95% CI of the median',
      ylabel: 'KiB per connection', series: memTargets.map(memLabel),
      groups: memLevels.map(c => ({ label: `c=${c}`, bars: Object.fromEntries(memTargets.map(t => {
        const s = cell(`memory ${t} ${c}`)?.summary;
        return [memLabel(t), s && { median: s.median / 1024, lo: s.lo / 1024, hi: s.hi / 1024 }];
      })) })),
    });
  return lines.join('\n');
}

function plotRates(dir, dat, targets) {
  if (!dat.length) return;
  const file = path.join(dir, 'data', 'conns.dat');
  const legend = [], plots = [];
  targets.forEach((t, i) => {
    if (!dat.some(r => r[0] === t)) return;
    legend.push(label(t));
    plots.push(`'< awk ''$1=="${t}"'' ${file}' using 2:3:4:5 with yerrorlines lw 2 lc ${i + 1} title '${label(t)}'`);
  });
  draw(dir, 'conns', 900, 560, `set logscale x
set xlabel 'keep-alive connections (-c)'
set ylabel 'answered requests/s'
set yrange [0:*]
set grid
plot ${plots.join(', \\\n     ')}`, { title: 'Keep-alive connections against answered requests/s, zipbench pooled and nginx static; bars: 95% CI of the median', legend });
}
