// Experiment: connection strategies across a network. The tiers on hosts
// of their own (scripts/lab: client1, app, db as network namespaces on one
// bridge), with a round-trip time on the client-app and app-db links,
// against the same lookups on plain loopback in the same run. Per strategy
// (pg pooled, pipelined, per-request direct, per-request through pgbouncer
// and through pgpool-II; MariaDB pooled and per-request), c 1, 10, 100, and where the
// tiers are: loopback, the lab with no delay, the lab through the delay
// relay at RTT 0, 0.2 and 1 ms. At RTT 0 and 1 ms also PHP (nginx +
// PHP-FPM on app, scripts/lab php) on pg: persistent, and per-request
// direct and through each pooler, the 2008 study's advice with PHP itself. req/s and p50/p99 latency; a plot of req/s
// against the RTT, a line per strategy. The relay's own cost is measured in
// the same run at every relayed setting (a round trip to app's /stats
// through the relay against the same straight to app) and shown with every
// figure that went through it.
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell, fmtNum, writeCells } from '../lib/cells.mjs';
import { loadgenReport, warmSeconds } from '../lib/clients.mjs';
import { rateRun, fmtErrors, errorNote } from '../lib/goodput.mjs';
import { table, fmtRatio, fmtSameRound } from '../lib/table.mjs';
import { lineStyle, draw, writeData, errorBar, logAxis, gpString } from '../lib/plot.mjs';
import { run, runJSON, background, atCleanup } from '../lib/run.mjs';
import { waitFor } from '../lib/http.mjs';
import { median } from '../lib/stats.mjs';
import { benchSets, benchTables, loadBenchTables } from '../lib/benchdb.mjs';
import { benchPort } from '../lib/services.mjs';

// label, backend, query: what picks each strategy.
export const STRATEGIES = [
  ['pg pooled', 'pg', 'strategy=pooled'],
  ['pg pipelined', 'pg', 'strategy=pipelined'],
  ['pg per-request direct', 'pg', 'strategy=per-request'],
  ['pg per-request via pgbouncer', 'pg_bouncer', 'strategy=per-request'],
  ['pg per-request via pgpool-II', 'pg_pool', 'strategy=per-request'],
  ['innodb pooled', 'innodb', 'strategy=pooled'],
  ['innodb per-request', 'innodb', 'strategy=per-request'],
];
// PHP-FPM on app (the page of experiment 3): label, zip.php's query.
export const PHP_STRATEGIES = [
  ['PHP-FPM pg persistent', 'backend=pg&code=random'],
  ['PHP-FPM pg per-request direct', 'backend=pg&code=random&persistent=0'],
  ['PHP-FPM pg per-request via pgbouncer', 'backend=pg&code=random&persistent=0&via=pgbouncer'],
  ['PHP-FPM pg per-request via pgpool-II', 'backend=pg&code=random&persistent=0&via=pgpool'],
];
// Where the tiers are. rtt: null, the lab with no relay (the lab's own
// cost); a number, through the relay (its own cost at 0). php: PHP-FPM's
// cells too (on loopback PHP is experiment 3's).
const SETTINGS = [
  { name: 'loopback', lab: false },
  { name: 'lab, no relay', lab: true, rtt: null },
  { name: 'relay, RTT 0', lab: true, rtt: 0, php: true },
  { name: 'relay, RTT 0.2 ms', lab: true, rtt: 0.2 },
  { name: 'relay, RTT 1 ms', lab: true, rtt: 1, php: true },
];
// The loopback server's port: ZB_BENCH_NETWORK_PORT, else two above
// ZB_BENCH_PORT (experiment 2 uses it and the next one for HTTPS), so that
// moving ZB_BENCH_PORT moves every port the bench listens on.
const PORT = benchPort('NETWORK', 2);
// What the strategies use, in the lab and on loopback alike.
const BACKENDS = [...new Set(STRATEGIES.map(([, b]) => b))].join(',');
// Every row of the tables and line of the plot: the server's, then PHP's.
const ALL = [...STRATEGIES, ...PHP_STRATEGIES];
// pgpool-II's children (scripts/pooler): each opens its backend connection
// on its first client, so every one serves once before anything is timed.
// More than the highest c; --quick, whose c is 10, starts fewer.
const pgpoolChildren = ctx => (ctx.quick ? 32 : 128);

const script = (ctx, name, args, env) =>
  run(path.join(ctx.root, 'scripts', name), args, { env, log: ctx.logFile, timeoutS: 600 });
const tail = r => (r.stderr || r.stdout).trim().split('\n').slice(-3).join(' | ');

function shellEnv(text) {
  const env = {};
  for (const m of text.matchAll(/^export (\w+)=(.*)$/gm))
    env[m[1]] = m[2].replace(/^'(.*)'$/, '$1').replace(/\\(.)/g, '$1');
  return env;
}

// One run of loadgen, on client1 in the lab (through scripts/lab exec) or
// here, for `seconds` or (requests) that many requests: {value: answered
// req/s (lib/goodput.mjs), errors by kind, p50, p99 (us)}, or NaN when
// loadgen gave no report.
async function clientRun(ctx, { inLab, env, url, c, seconds, requests }) {
  const prefix = inLab ? [path.join(ctx.root, 'scripts/lab'), 'exec', 'client1'] : [];
  const span = requests ? ['-n', String(requests)] : ['-t', String(seconds), '-n', '50000000'];
  const cmd = [...prefix, ctx.bin('loadgen'), '-q', '--json', '-k', '-c', String(c), ...span, url];
  const r = await runJSON(cmd[0], cmd.slice(1), { env, log: ctx.logFile, timeoutS: (seconds || 60) * 4 + 60 });
  const j = r.json[0];
  if (!j) { ctx.log(`${url} -c ${c}: no report: ${tail(r)}`); return NaN; }
  const res = rateRun(loadgenReport(j), {}, { completed: j.completed, p50: j.latency_us?.p50, p99: j.latency_us?.p99 });
  if (!res.value) ctx.log(`${url} -c ${c}: nothing answered (${j.completed} answers, ${j.failed} failed, ${j.non2xx} non-2xx)`);
  return res;
}

// The relay's own cost in a relayed lab, in ms: the p50 of a keep-alive
// round trip from client1 to app's /stats (answered by the server alone, no
// database) through the relay, less the same straight to app's own
// address, less the RTT it was asked to add.
// At RTT 0 that is all the relay's doing; at a given RTT it also holds its
// timers' lateness.
async function relayCost(ctx, env, lab, rtt) {
  const p50 = async addr => {
    const r = await clientRun(ctx, { inLab: true, env, url: `http://${addr}:${lab.ZB_LAB_APP_PORT}/stats`,
                                     c: 1, requests: ctx.quick ? 500 : 3000 });
    return Number.isFinite(r?.p50) ? r.p50 / 1000 : NaN;
  };
  const straight = await p50(lab.ZB_LAB_ADDR_APP), relayed = await p50(lab.ZB_LAB_APP);
  return relayed - straight - rtt;
}

export default {
  title: 'connection strategies across a network (scripts/lab)',
  // Each plot's caption, under this section in RESULTS.md.
  plots: {
    network: "Answered lookups per second against the round-trip time between the lab's hosts (0, 0.2, 1 ms), per connection strategy: where a connection per request stops paying. Bars: the 95% interval of the median.",
  },
  async run(ctx) {
    const seconds = ctx.quick ? 0.5 : 2;
    const levels = ctx.quick ? [10] : [1, 10, 100];
    // --quick: what every code path needs, loopback and the relay at 0.
    const settings = ctx.quick ? SETTINGS.filter(s => !s.lab || s.rtt === 0) : SETTINGS;
    const work = path.resolve(ctx.build, 'bench-network');
    fs.mkdirSync(work, { recursive: true });
    // The run's own lab (named after its directory: a lab of yours in
    // build/lab is left alone).
    const children = pgpoolChildren(ctx);
    const env = { ZB_LAB_DIR: path.join(work, 'lab'), ZB_PGPOOL_CHILDREN: String(children) };
    ctx.labDir = env.ZB_LAB_DIR;   // its processes are the benchmark's own (main.mjs ownRoots)
    const head = ['## Connection strategies across a network', ''];

    if (process.getuid() !== 0 || (await run('unshare', ['--net', 'true'])).code !== 0) {
      ctx.warn('network: skipped: this run cannot make network namespaces (root, unshare --net)');
      return head.concat(['Skipped: the run could not make network namespaces (it needs root).', '']).join('\n');
    }
    // The poolers on loopback, for the loopback cells; the lab runs its own.
    let r = await script(ctx, 'pooler', ['status']);
    if (r.code !== 0) {
      r = await script(ctx, 'pooler', ['start'], env);
      if (r.code !== 0) throw new Error(`scripts/pooler start failed: ${tail(r)}`);
      atCleanup(() => script(ctx, 'pooler', ['stop']));
    }
    r = await script(ctx, 'lab', ['up', '--clients', '1'], env);
    if (r.code !== 0) throw new Error(`scripts/lab up failed: ${tail(r)}`);
    atCleanup(() => script(ctx, 'lab', ['down'], env));
    // --quick: a sample of the list, which loads in a second.
    let dataset = path.resolve(ctx.dataset);
    if (ctx.quick) {
      dataset = path.join(work, 'sample.csv');
      r = await run(ctx.bin('gen'), ['--rows', '5000', '--seed', '14', '-o', dataset]);
      if (r.code !== 0) throw new Error(`gen failed: ${tail(r)}`);
    }
    r = await script(ctx, 'lab', ['load', '--dataset', dataset, '--backends', 'pg,innodb'], env);
    if (r.code !== 0) throw new Error(`scripts/lab load failed: ${tail(r)}`);
    // PHP on app draws code=random from a key file of the loaded dataset;
    // rtt restarts it with the lab's new addresses.
    env.ZB_KEYS = path.join(work, 'lab.keys');
    r = await run(ctx.bin('loader'), ['-q', '--dataset', dataset, '--write-keys', env.ZB_KEYS]);
    if (r.code !== 0) throw new Error(`loader --write-keys failed: ${tail(r)}`);
    r = await script(ctx, 'lab', ['php', 'start'], env);
    if (r.code !== 0) throw new Error(`scripts/lab php start failed: ${tail(r)}`);
    const phpChildren = (r.stdout.match(/(\d+) static children/) || [])[1] || '?';
    const status = (await script(ctx, 'lab', ['status'], env)).stdout.trim();

    const cellsOf = s => levels.length * (STRATEGIES.length + (s.php ? PHP_STRATEGIES.length : 0));
    const allCells = settings.reduce((n, s) => n + cellsOf(s), 0);
    const results = {}, relayMs = {};
    let delayKind = 'relay';
    for (const s of settings) {
      let base, phpUrl, srv = null;
      if (s.lab) {
        r = await script(ctx, 'lab', ['rtt', s.rtt === null ? 'off' : String(s.rtt)], env);
        if (r.code !== 0) throw new Error(`scripts/lab rtt: ${tail(r)}`);
        await script(ctx, 'lab', ['server', 'stop'], env);
        r = await script(ctx, 'lab', ['server', 'start', '--backends', BACKENDS], env);
        if (r.code !== 0) throw new Error(`scripts/lab server start: ${tail(r)}`);
        const e = shellEnv((await script(ctx, 'lab', ['env'], env)).stdout);
        base = e.ZB_LAB_URL;
        phpUrl = e.ZB_LAB_PHP_URL;
        if (e.ZB_LAB_DELAY === 'netem') delayKind = 'netem';
        if (e.ZB_LAB_DELAY === 'relay') relayMs[s.name] = await relayCost(ctx, env, e, s.rtt);
      } else {
        // The bench's own tables (as experiment 2's), through the poolers too:
        // the tables users serve may not exist, and are never the bench's.
        const { avail } = await loadBenchTables(ctx, 'lookup', ['pg', 'innodb']);
        if (avail.length < 2) throw new Error(`the bench's lookup tables could not be loaded: see ${ctx.logFile}`);
        const t = benchTables('lookup');
        srv = background(ctx.bin('server'), ['--conf', ctx.conf, '--port', String(PORT),
                                             '--backends', BACKENDS, ...benchSets(ctx, 'lookup'),
                                             '--set', `pg_bouncer.table=${t.pg}`, '--set', `pg_pool.table=${t.pg}`],
                         { log: path.join(work, 'server.log') });
        if (!(await waitFor(PORT, '/health', { want: 0, alive: srv.alive })))
          throw new Error(`the server did not start: see ${path.join(work, 'server.log')}`);
        base = `http://127.0.0.1:${PORT}`;
      }
      try {
        const go = (url, c, requests) => clientRun(ctx, { inLab: s.lab, env, url, c, seconds, requests });
        // Every request answered before the cells start (a run cut by -t
        // leaves requests in flight that the next run would wait behind).
        await go(`${base}/zip/pg_pool/random?strategy=per-request`, children, 2 * children);
        // The budget split by cells, not settings: a setting with PHP's rows
        // has more cells, and an even split stopped them short of 6 rounds.
        const cells = new Cells(ctx, `network ${s.name}`,
                                { budgetS: ctx.repeat.budgetS * cellsOf(s) / allCells });
        // Each run after a warm-up at its c (the pool, pgpool-II's children).
        for (const c of levels) for (const [label, b, q] of STRATEGIES)
          cells.add(`${label} ${c}`, () => go(`${base}/zip/${b}/random?${q}`, c),
                    { warm: () => clientRun(ctx, { inLab: s.lab, env, url: `${base}/zip/${b}/random?${q}`, c,
                                                   seconds: warmSeconds(ctx, c) }) });
        if (s.php) for (const c of levels) for (const [label, q] of PHP_STRATEGIES)
          cells.add(`${label} ${c}`, () => go(`${phpUrl}?${q}`, c),
                    { warm: () => clientRun(ctx, { inLab: true, env, url: `${phpUrl}?${q}`, c,
                                                   seconds: warmSeconds(ctx, c) }) });
        await cells.measure();
        results[s.name] = cells;
      } finally {
        if (srv) await srv.stop();
        else await script(ctx, 'lab', ['server', 'stop'], env);
      }
    }

    // The latency medians of a cell's runs, in ms.
    const ms = (cell, k) => {
      const v = (cell?.extras || []).map(e => e[k]).filter(Number.isFinite);
      return v.length ? median(v) / 1000 : NaN;
    };
    const lines = [...head,
      `Command: \`${ctx.command('network')}\`. The lab: \`scripts/lab up --clients 1\` in ` +
      `\`${path.relative(ctx.root, env.ZB_LAB_DIR)}\`, client1, app (the server) and db (PostgreSQL, ` +
      'MariaDB, pgbouncer, pgpool-II) as network namespaces on one bridge, every host on every CPU; ' +
      (delayKind === 'netem' ? 'the RTT is sch_netem\'s, RTT/2 on each host\'s interface. '
                             : 'the RTT through `build/bin/relay` on the bridge\'s namespace (this kernel has no sch_netem): ' +
                               'every chunk held RTT/2 each way, a new connection one RTT. ') +
      'Loopback: the same server, poolers and databases on 127.0.0.1, in the same run, serving the bench\'s own tables (`bench_lookup*`, as experiment 2).',
      `Each run: ${seconds} s, HTTP keep-alive, \`GET /zip/B/random?strategy=S\` (the server draws the key) ` +
      'from `loadgen -k` (on client1 in the lab, here on loopback). ' +
      'Strategies: ' + STRATEGIES.map(([l, b, q]) => `${l} = \`${b}\`, \`${q}\``).join('; ') + '. ' +
      `PHP (at RTT 0 and 1 ms): nginx + PHP-FPM on app (\`scripts/lab php start\`: \`scripts/php-fpm\`, pm = static, ${phpChildren} children), ` +
      '`GET /zip.php?QUERY` with the page reaching PostgreSQL and the poolers on db by TCP: ' +
      PHP_STRATEGIES.map(([l, q]) => `${l} = \`${q}\``).join('; ') + '. On loopback PHP is experiment 3\'s. ' +
      `pgpool-II's ${children} children (the lab's; loopback's as \`scripts/pooler\` started them) ` +
      'were each given a client before the runs.',
      'What the lab costs: "loopback" against "lab, no relay". What the relay itself costs, measured in ' +
      'this run at each relayed setting: the p50 of a keep-alive round trip from client1 to app\'s `/stats` ' +
      'through the relay, less the same straight to app\'s own address, less the RTT asked for; its ' +
      'zero-delay cost (at RTT 0) is in the header of every relayed column, and every figure there carries ' +
      'it once per round trip on each relayed link (client-app, app-db).', '',
      '```', status, '```', ''];
    const zero = relayMs['relay, RTT 0'];
    const column = s => !(s.name in relayMs) ? s.name
      : `${s.name} (relay's own: +${fmtNum(zero, 3)} ms at RTT 0` +
        (s.rtt ? `, +${fmtNum(relayMs[s.name], 3)} ms here)` : ')');
    for (const c of levels) {
      lines.push(`### c = ${c}: req/s, and p50 / p99 latency in ms`, '');
      lines.push(table(['strategy', ...settings.map(column)],
        ALL.map(([label]) => [label, ...settings.map(s => {
          const cell = results[s.name]?.get(`${label} ${c}`);
          if (!cell) return '-';
          const e = fmtErrors(cell);
          return `${fmtCell(cell)}${e ? ` · errors: ${e}` : ''} · ${fmtNum(ms(cell, 'p50'), 2)} / ${fmtNum(ms(cell, 'p99'), 2)}`;
        })])));
      // The target: per-request through pgbouncer at c 10 at least
      // 5x direct; same-round ratios where both ran in a round.
      const ratio = (s, a, b) => fmtSameRound(results[s.name].sameRoundRatio(`${a} ${c}`, `${b} ${c}`));
      for (const s of settings) {
        const x = results[s.name].median(`pg per-request via pgbouncer ${c}`) /
                  results[s.name].median(`pg per-request direct ${c}`);
        lines.push(`- ${s.name}: per-request via pgbouncer / direct: ${fmtRatio(x)}` +
                   (c === 10 && Number.isFinite(x) ? `, target >= 5x: ${x >= 5 ? 'reached' : 'missed'}` : '') +
                   (s.php ? `; PHP-FPM per-request via pgbouncer / direct: ${ratio(s, 'PHP-FPM pg per-request via pgbouncer', 'PHP-FPM pg per-request direct')}` +
                            `, via pgpool-II / direct: ${ratio(s, 'PHP-FPM pg per-request via pgpool-II', 'PHP-FPM pg per-request direct')}` +
                            `; zipbench pg pooled / PHP-FPM pg persistent: ${ratio(s, 'pg pooled', 'PHP-FPM pg persistent')}` : ''));
      }
      lines.push('');
    }
    const every = settings.flatMap(s => results[s.name].keys().map(k => results[s.name].get(k)));
    lines.push(errorNote(every), '');
    for (const s of settings) lines.push(`${s.name}: ${results[s.name].machineNote()}`);
    writeCells(ctx.out, 'network', settings.flatMap(s => results[s.name].keys().map(k => ({ ...results[s.name].get(k), key: `${s.name}: ${k}` }))));
    if (Object.keys(relayMs).length)
      lines.push('', 'The relay\'s own cost per round trip, this run (ms, p50; at RTT > 0 its timers\' lateness ' +
                 'included): ' + Object.entries(relayMs).map(([n, v]) => `${n}: +${fmtNum(v, 3)}`).join('; ') + '.');

    // req/s against the RTT through the relay, a line per strategy, at c 10.
    const c = levels.includes(10) ? 10 : levels[0];
    const relayed = settings.filter(s => Number.isFinite(s.rtt));
    const bar = (s, l) => { const x = results[s.name].get(`${l} ${c}`); return x && x.values.length ? errorBar(x.summary).map(v => v.toFixed(1)) : ['NaN', 'NaN', 'NaN']; };
    const file = writeData(ctx.out, 'network.dat', [
      ['#rtt_ms', ...ALL.flatMap(([l]) => [l.replace(/ /g, '_'), 'lo', 'hi'])],
      ...relayed.map(s => [s.rtt, ...ALL.flatMap(([l]) => bar(s, l))])]);
    plot(ctx.out, file, c);
    lines.push('', 'Plot: `plots/network.svg` (data: `data/network.dat`).', '');
    return lines.join('\n');
  },
};

// The plot of network.dat (written by run, or recorded): req/s against the
// RTT, a line per strategy, at concurrency c, into DIR/plots/network.svg.
export function plot(dir, file, c) {
  const rows = fs.readFileSync(file, 'utf8').split('\n').filter(l => l && !l.startsWith('#'));
  const rates = rows.flatMap(r => r.split(' ').slice(1).map(Number));
  draw(dir, 'network', 900, 560, [
    "set xlabel 'RTT (ms), through the relay'", "set ylabel 'answered requests/s (log scale)'", logAxis(rates),
    // a setting not measured (PHP-FPM's at 0.2 ms) is skipped, its line drawn on
    "set grid\nset datafile missing 'NaN'",
    // each line a colour of its own; PHP-FPM's dashed beside the server's
    'plot ' + ALL.map(([l], i) => `'${file}' using 1:${3 * i + 2}:${3 * i + 3}:${3 * i + 4} with yerrorlines lw 1.5 ` +
                                  `${lineStyle(i, /^PHP-FPM/.test(l) ? 2 : 1)} title ${gpString(l)}`).join(', '),
  ].join('\n'), { title: `Lookups across a network: answered req/s against the RTT (c ${c}; bars: 95% CI of the median)`,
                  legend: ALL.map(([l]) => l) });
}
