// Experiment 3: PHP next to the zipbench server, same lookups, same run:
// the 2008 stack (Apache + mod_php) and today's (nginx + PHP-FPM, pm =
// static), both serving scripts/apache.d/zip.php, against the server: req/s
// per backend, persistent and per-request connections, at c 1, 10 and 100,
// with ab and loadgen, and the ratio zipbench/PHP. On pg also the seed's
// pooler advice with PHP itself: PHP-FPM per request through pgbouncer and
// pgpool-II (scripts/pooler, on loopback) beside PHP persistent and the
// server's strategies (pooled, pipelined, per request direct and through
// either pooler). Every stack of a backend is measured in the same rounds
// (Cells interleave them), so the ratios are same-round ratios; Apache,
// PHP-FPM and the server are restarted for every backend (--quick starts
// each once).
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell, machineNote, writeCells } from '../lib/cells.mjs';
import { table, fmtSameRound } from '../lib/table.mjs';
import { barPlot } from '../lib/plot.mjs';
import { rateRun, serverSplit, splitDelta, fmtErrors, errorNote } from '../lib/goodput.mjs';
import { run } from '../lib/run.mjs';
import { getJSON } from '../lib/http.mjs';
import { apache, phpFpm, poolers, dbEnv } from '../lib/services.mjs';
import { ab, loadgen, warmRun } from '../lib/clients.mjs';
import { keysFile, countLines } from '../lib/dataset.mjs';
import { BACKENDS, benchSqlite, benchTables, loadBenchTables, startServer } from '../lib/benchdb.mjs';
import { versions } from '../lib/machine.mjs';
import { explain } from '../lib/calibration.mjs';

const LABEL = { sqlite: 'SQLite', pg: 'PostgreSQL', innodb: 'InnoDB', myisam: 'MyISAM' };
const Y2008 = { pg: '947.58', sqlite: '1096.00', myisam: '1190.35', innodb: '1245.85' };
const STACKS = ['apache', 'fpm', 'zipbench'];
const STACK = { apache: 'Apache + mod_php', fpm: 'nginx + PHP-FPM', zipbench: 'zipbench' };
// pg only, loadgen only: [key suffix, label, stack, url parts]. The seed's
// advice: per-request PostgreSQL through a pooler.
const PG_EXTRA = [
  ['fpm pgbouncer', 'PHP-FPM per-request via pgbouncer', 'fpm', { p: 0, via: 'pgbouncer' }],
  ['fpm pgpool', 'PHP-FPM per-request via pgpool-II', 'fpm', { p: 0, via: 'pgpool' }],
  ['zipbench pipelined', 'zipbench pipelined', 'zipbench', { backend: 'pg', query: 'strategy=pipelined' }],
  ['zipbench pgbouncer', 'zipbench per-request via pgbouncer', 'zipbench', { backend: 'pg_bouncer', query: 'strategy=per-request' }],
  ['zipbench pgpool', 'zipbench per-request via pgpool-II', 'zipbench', { backend: 'pg_pool', query: 'strategy=per-request' }],
];

export default {
  title: 'PHP (Apache + mod_php, nginx + PHP-FPM) next to the server',
  // Each plot's caption, under this section in RESULTS.md.
  plots: {
    php: "Answered lookups per second of PHP (Apache + mod_php, nginx + PHP-FPM; persistent and per request) beside zipbench's server, per backend, same run. Bars: the 95% interval.",
    'php-pooler': "PostgreSQL lookups per second: PHP-FPM per request directly and through pgbouncer and pgpool-II, beside zipbench's strategies, same run. Bars: the 95% interval.",
  },
  async run(ctx) {
    const requests = ctx.quick ? 500 : 10000;
    const seconds = ctx.quick ? 1 : 5;
    // ZB_BENCH_PHP_LEVELS (say 10, where the targets are) narrows a long run.
    const levels = ctx.quick ? [10] : (process.env.ZB_BENCH_PHP_LEVELS || '1,10,100').split(',').map(Number);
    const srvPort = Number(process.env.ZB_PHP_SERVER_PORT || 18081);
    const keys = path.resolve(keysFile(ctx));
    const haveLoadgen = fs.existsSync(ctx.bin('loadgen'));
    if (!haveLoadgen) throw new Error(`no ${ctx.bin('loadgen')}: make first`);
    const log = path.join(ctx.work, 'php-server.log');
    fs.writeFileSync(log, '');
    // The lookup tables the server experiment serves (loaded once a run).
    const { avail, skipped } = await loadBenchTables(ctx, 'lookup', BACKENDS);
    if (avail.length < BACKENDS.length) throw new Error(`the load failed for ${skipped.join(', ')}: see ${ctx.logFile}`);
    const tables = benchTables('lookup');
    // pgpool-II's children: more than the highest c (--quick's is 10).
    const pgpoolChildren = ctx.quick ? 32 : 128;
    await poolers(ctx, { ZB_PGPOOL_CHILDREN: String(pgpoolChildren) });
    // --quick measures at c 10 only: 20 prefork processes start faster than 110.
    const env = { ZB_KEYS: keys, ZB_CONF: ctx.conf, ZB_SQLITE_PATH: benchSqlite(ctx, 'lookup'),
                  ZB_SQLITE_TABLE: tables.sqlite, ZB_PG_TABLE: tables.pg, ZB_INNODB_TABLE: tables.innodb,
                  ZB_MYISAM_TABLE: tables.myisam, ...(ctx.quick ? { ZB_APACHE_WORKERS: '20' } : {}) };
    const srvBackends = [...BACKENDS, 'pg_bouncer', 'pg_pool'];
    const srvExtra = ['--set', `pg_bouncer.table=${tables.pg}`, '--set', `pg_pool.table=${tables.pg}`];

    const all = new Map();        // key -> cell, over every backend
    const measured = [];          // the Cells of each backend: same-round ratios are taken within one
    // The server's own count of why it gave 503s (overload, down), per
    // backend, where its /stats has those counters.
    const split = async backend => serverSplit((await getJSON(srvPort, '/stats'))?.backends?.find(x => x.name === backend));
    // [key prefix, stack, opts]: every url of a backend
    const variantsOf = b => {
      const v = [];
      for (const stack of STACKS) for (const p of [1, 0]) v.push([`${stack} %t ${b} ${p}`, stack, { p }]);
      if (b === 'pg') for (const [k, , stack, o] of PG_EXTRA) v.push([`${k} %t pg 0`, stack, o]);
      return v;
    };
    const allVariants = BACKENDS.reduce((n, b) => n + variantsOf(b).length, 0);
    const t0 = Date.now();
    // Each backend on a fresh Apache, PHP-FPM and server; --quick keeps one of each.
    const fresh = !ctx.quick;
    let apachePort = 0, fpm = null, srv = null;
    try {
      for (const b of BACKENDS) {
        if (fresh || !apachePort) apachePort = await apache.restart(ctx, env);
        if (fresh || !fpm) fpm = await phpFpm.restart(ctx, env);
        srv ??= await startServer(ctx, 'lookup', srvPort, srvBackends, { log, extra: srvExtra });
        // url(stack, code, {p, via, backend, query})
        const url = (stack, code, o) => {
          if (stack === 'zipbench')
            return `http://127.0.0.1:${srvPort}/zip/${o.backend || b}/${code}?${o.query || `strategy=${o.p ? 'pooled' : 'per-request'}`}`;
          const port = stack === 'apache' ? apachePort : fpm.port;
          return `http://127.0.0.1:${port}/zip.php?backend=${b}&persistent=${o.p}${o.via ? `&via=${o.via}` : ''}&code=${code}`;
        };
        const variants = variantsOf(b);
        // The budget split by variants, not backends: pg's pooler rows made
        // its cells stop a round short of the others under an even split.
        const share = variants.length / allVariants;
        const cells = new Cells(ctx, `php ${b}`, { budgetS: Math.max(60, ctx.repeat.budgetS * share) });
        // Every run is its goodput (lib/goodput.mjs), errors apart by kind
        // (the server's 503s split by its own /stats); each is preceded by
        // a warm-up at its concurrency (Cells' meta.warm: Apache's
        // processes, PHP-FPM's children and their persistent connections,
        // pgpool-II's children, the server's pool), never measured.
        const add = (key, stack, o, c, fn, { miss = false, keepalive = true, warmUrl } = {}) =>
          cells.add(key, async () => {
            const target = stack === 'zipbench' ? o.backend || b : null;
            const before = target ? await split(target) : null;
            const r = await fn();
            const server = before ? splitDelta(before, await split(target)) : null;
            return rateRun(r, { miss, server }, r?.json ? { p99: r.json.latency_us?.p99 } : {});
          }, { warm: () => warmRun(ctx, { url: warmUrl ?? url(stack, '{key}', o), c, keys, keepalive, miss }) });
        let seed = 1;
        for (const c of levels) for (const [k, stack, o] of variants) {
          add(`${k.replace('%t', 'loadgen')} ${c}`, stack, o, c,
              () => loadgen(ctx, { url: url(stack, '{key}', o), c, seconds, requests, keys, seed: seed++ }));
          if (PG_EXTRA.some(([pre]) => k.startsWith(pre + ' '))) continue;   // the pooler cells: loadgen only
          add(`${k.replace('%t', 'ab')} ${c}`, stack, o, c,
              () => ab(ctx, { url: url(stack, 'random', o), c, seconds, requests }));
        }
        // The 2008 command as it was: no keep-alive, -n 10000 -c 10, codes
        // from mt_rand, so nearly every lookup misses (404 is an answer here).
        for (const stack of STACKS) {
          const urlMiss = url(stack, 'random', { p: 1 }) + '&miss=0.99';
          add(`${stack} ab2008 ${b} 1 10`, stack, { p: 1 }, 10,
              () => ab(ctx, { url: urlMiss, c: 10, seconds, requests, keepalive: false }),
              { miss: true, keepalive: false, warmUrl: urlMiss });
        }
        await cells.measure();
        for (const k of cells.keys()) all.set(k, cells.get(k));
        measured.push(cells);
        if (fresh) {
          await srv.stop(); srv = null;
          await apache.stop(ctx);
          await phpFpm.stop(ctx, env);
        }
        ctx.log(`php ${b} done`);
      }
    } finally {
      if (srv) await srv.stop();
      if (apachePort) await apache.stop(ctx);
      if (fpm) await phpFpm.stop(ctx, env);
    }
    const elapsed = Math.round((Date.now() - t0) / 1000);

    const cell = k => fmtCell(all.get(k));
    const med = k => (all.get(k) && all.get(k).values.length ? all.get(k).summary.median : NaN);
    // a/z: the median of their same-round ratios (both in one backend's Cells).
    const sr = (a, z) => {
      const cells = measured.find(x => x.get(a) && x.get(z));
      return cells ? cells.sameRoundRatio(a, z) : { value: med(a) / med(z), summary: null };
    };
    const env2 = await dbEnv(ctx);
    const psql = env2.ZB_PG_BIN ? path.join(env2.ZB_PG_BIN, 'psql') : 'psql';
    const pgmax = (await run(psql, ['-X', '-Atc', 'SHOW max_connections'], { env: env2 })).stdout.trim() || '?';
    const v = versions();
    const children = fpm ? fpm.children : '?';
    const lines = ['## Experiment 3: PHP (Apache + mod_php, nginx + PHP-FPM) next to zipbench', '',
      `Command: \`${ctx.command('php', ['ZB_BENCH_PHP_LEVELS', 'ZB_FPM_CHILDREN'])}\`, ${elapsed} s of runs.`,
      `Versions: ${v.php}, ${v.apache} (mpm_prefork, mod_php), nginx + php8.2-fpm (Debian's; \`scripts/php-fpm\`), ` +
      `OPcache on in both, ${v.pg}, ${v.mariadb}, ${v.sqlite}.`,
      `Data: \`${ctx.dataset}\` in the bench's own tables (\`bench_lookup*\`, as experiment 2), ${countLines(keys)} codes; keys \`${keys}\`.`, '',
      `Client, Apache (${ctx.quick ? 20 : 110} prefork processes), PHP-FPM (pm = static, **${children} children**: ` +
      `${process.env.ZB_FPM_CHILDREN ? 'ZB_FPM_CHILDREN' : '2 x the cores'}), the C server and the databases share the same cores; 2008 ran ab from another PC. ` +
      'Each figure is answered req/s (goodput, lib/goodput.mjs: 2xx, and the 404s the *as 2008* runs ask for; ' +
      'errors apart by kind, `E`); each run is `-n ' + requests + '` capped at ' +
      `${seconds} s, after a warm-up at its concurrency (not counted). All stacks of a backend are measured in the same rounds; ` +
      'ratios are the median of same-round ratios with their 95% interval. ' +
      `${fresh ? 'Apache, PHP-FPM and the server are restarted for each backend.' : 'One Apache, one PHP-FPM and one server for all (--quick).'}`, '',
      '### Same-run ratios (`loadgen -k -c 10`)', ''];
    const target = (what, r) => `- ${what}: ${Number.isFinite(r.value) ? fmtSameRound(r) : 'not measured'}.`;
    if (levels.includes(10)) {
      for (const b of BACKENDS)
        lines.push(target(`zipbench pooled / PHP-FPM persistent, ${LABEL[b]}`,
                          sr(`zipbench loadgen ${b} 1 10`, `fpm loadgen ${b} 1 10`)));
      lines.push(target('PHP-FPM per-request via pgbouncer / PHP-FPM per-request direct, PostgreSQL',
                        sr('fpm pgbouncer loadgen pg 0 10', 'fpm loadgen pg 0 10')));
      lines.push(`- PHP-FPM per-request via pgpool-II / direct, PostgreSQL: ` +
                 `${fmtSameRound(sr('fpm pgpool loadgen pg 0 10', 'fpm loadgen pg 0 10'))}.`, '');
    }
    lines.push('### The 2008 setting: ab -c 10, persistent connections', '',
      '2008: Apache 2.2.6 + PHP 5.2.4 on a Pentium D 2.8 GHz, `ab -n 10000 -c 10` from another PC,',
      'codes from mt_rand (nearly all misses). *as 2008* repeats that command (no keep-alive,',
      '`miss=0.99`; its 404s are asked for and counted); *ab -k* asks for loaded codes on keep-alive connections.', '',
      table(['backend', '2008 PHP', 'Apache as 2008', 'PHP-FPM as 2008', 'zipbench as 2008', 'Apache ab -k', 'PHP-FPM ab -k',
             'zipbench ab -k', 'zipbench/Apache', 'zipbench/PHP-FPM'],
            BACKENDS.map(b => [LABEL[b], Y2008[b], cell(`apache ab2008 ${b} 1 10`), cell(`fpm ab2008 ${b} 1 10`),
                               cell(`zipbench ab2008 ${b} 1 10`), cell(`apache ab ${b} 1 10`), cell(`fpm ab ${b} 1 10`),
                               cell(`zipbench ab ${b} 1 10`),
                               fmtSameRound(sr(`zipbench ab ${b} 1 10`, `apache ab ${b} 1 10`)),
                               fmtSameRound(sr(`zipbench ab ${b} 1 10`, `fpm ab ${b} 1 10`))])));
    // An errors column: each of [label, key] whose cell had errors, by kind.
    const errorsOf = list => list.map(([l, k]) => { const e = fmtErrors(all.get(k)); return e && `${l}: ${e}`; })
      .filter(Boolean).join('; ');
    for (const tool of ['ab', 'loadgen']) {
      if (tool === 'ab')
        lines.push('### Every backend, mode and concurrency: ab -k, code=random', '',
          `\`ab -k -n ${requests} -t ${seconds} -c C 'http://127.0.0.1:PORT/zip.php?backend=B&code=random&persistent=P'\``,
          `(Apache's port, PHP-FPM's nginx) and \`.../zip/B/random?strategy=S\` on the server (\`build/bin/server --port ${srvPort}\`;`,
          'S pooled where P is 1, per-request where it is 0).', '');
      else
        lines.push('### Every backend, mode and concurrency: loadgen --keys, the same codes for all', '',
          `\`loadgen -k -n ${requests} -t ${seconds} -c C --seed RUN --keys ${keys} 'http://127.0.0.1:PORT/zip.php?backend=B&code={key}&persistent=P'\``,
          'and `.../zip/B/{key}?strategy=S` on the server (S pooled where P is 1, per-request where it is 0).', '');
      const rows = [];
      for (const b of BACKENDS) for (const p of [1, 0]) for (const c of levels)
        rows.push([LABEL[b], p ? 'persistent' : 'per-request', c, cell(`apache ${tool} ${b} ${p} ${c}`),
                   cell(`fpm ${tool} ${b} ${p} ${c}`), cell(`zipbench ${tool} ${b} ${p} ${c}`),
                   fmtSameRound(sr(`zipbench ${tool} ${b} ${p} ${c}`, `apache ${tool} ${b} ${p} ${c}`)),
                   fmtSameRound(sr(`zipbench ${tool} ${b} ${p} ${c}`, `fpm ${tool} ${b} ${p} ${c}`)),
                   errorsOf(STACKS.map(st => [STACK[st], `${st} ${tool} ${b} ${p} ${c}`]))]);
      lines.push(table(['backend', 'connection', 'c', 'Apache + mod_php', 'nginx + PHP-FPM', 'zipbench',
                        'zipbench/Apache', 'zipbench/PHP-FPM', 'errors'], rows, 'llrrrrrrl'));
    }
    // The seed's advice with PHP itself.
    lines.push('### PostgreSQL per request through a pooler, with PHP itself (loopback)', '',
      '`scripts/pooler`: pgbouncer (transaction pooling, default_pool_size 20) and pgpool-II (connection cache, ' +
      `${pgpoolChildren} children) on 127.0.0.1, in front of the same PostgreSQL; PHP reaches them with ` +
      '`zip.php?via=pgbouncer|pgpool` (pg_connect + pg_query_params, scram-sha-256 over TCP as the poolers ' +
      'ask; direct is peer auth over the unix socket), the server with its backends `pg_bouncer` and `pg_pool`. ' +
      'loadgen -k --keys; answered req/s (goodput), p99 in ms below. The lab (RTT 0 and 1 ms) is not measured here: ' +
      'the network experiment has the server\'s strategies there.', '');
    const p99 = k => {
      const c = all.get(k), v = (c?.extras || []).map(e => e.p99).filter(Number.isFinite).sort((x, y) => x - y);
      return v.length ? (v[v.length >> 1] / 1000).toFixed(1) : '-';
    };
    const poolRows = [
      ['PHP-FPM persistent (pg_pconnect)', 'fpm loadgen pg 1'],
      ['PHP-FPM per-request direct', 'fpm loadgen pg 0'],
      ...PG_EXTRA.slice(0, 2).map(([pre, label]) => [label, `${pre} loadgen pg 0`]),
      ['zipbench pooled', 'zipbench loadgen pg 1'],
      ...PG_EXTRA.slice(2, 3).map(([pre, label]) => [label, `${pre} loadgen pg 0`]),
      ['zipbench per-request direct', 'zipbench loadgen pg 0'],
      ...PG_EXTRA.slice(3).map(([pre, label]) => [label, `${pre} loadgen pg 0`]),
    ];
    lines.push(table(['strategy', ...levels.map(c => `c ${c}: req/s`), ...levels.map(c => `c ${c}: p99 ms`),
                      ...levels.map(c => `c ${c}: / PHP-FPM per-request direct`), 'errors'],
      poolRows.map(([label, k]) => [label, ...levels.map(c => cell(`${k} ${c}`)), ...levels.map(c => p99(`${k} ${c}`)),
                                    ...levels.map(c => fmtSameRound(sr(`${k} ${c}`, `fpm loadgen pg 0 ${c}`))),
                                    errorsOf(levels.map(c => [`c ${c}`, `${k} ${c}`]))]),
      'l' + 'r'.repeat(3 * levels.length) + 'l'));
    const every = [...all.values()];
    const as2008Errors = errorsOf(BACKENDS.flatMap(b => STACKS.map(st => [`${STACK[st]} ${LABEL[b]}`, `${st} ab2008 ${b} 1 10`])));
    lines.push(errorNote(every),
      ...(as2008Errors ? ['', `Errors of the *as 2008* runs (their 404s are answers, not errors): ${as2008Errors}.`] : []),
      // ab has no count per status: a miss run's non-2xx are taken as its 404s
      ...(every.some(c => c.extras.some(e => e && e.missUnsplit))
        ? ['', 'ab counts non-2xx answers without their status: in the *as 2008* runs all of them are taken as ' +
           'the 404s asked for (a 503 there would count as an answer; no other run asks for misses).'] : []),
      '', machineNote(every, ctx.repeat.target));
    lines.push(`PostgreSQL max_connections: ${pgmax}.`, '',
      explain(ctx, 'php'), '',
      'What each PHP request does (scripts/apache.d/zip.php, the same page for both fronts): pg: pg_pconnect and a',
      'statement prepared once per connection, or pg_connect + pg_query_params (through a pooler always the',
      'latter, unnamed); sqlite: PDO, read-only, persistent or not, prepared per request; innodb/myisam: mysqli',
      'over the unix socket, `p:` (persistent, reset by mysqlnd on each reuse) or not, prepare, execute and close',
      '(a statement dies with its request). code=random reads one line of the key file at a random offset.');

    writeCells(ctx.out, 'php', every);
    // The plots: loadgen -k at c 10 (or the first level), per backend, a bar
    // per stack and mode; and pg's pooler strategies; each bar's 95% interval.
    const c = levels.includes(10) ? 10 : levels[0];
    const series = [['zipbench', 1, 'zipbench pooled'], ['fpm', 1, 'PHP-FPM persistent'], ['fpm', 0, 'PHP-FPM per-request'],
                    ['apache', 1, 'mod_php persistent'], ['apache', 0, 'mod_php per-request']];
    const sum = k => (all.get(k)?.values.length ? all.get(k).summary : undefined);
    barPlot(ctx.out, 'php', {
      title: `PHP next to zipbench: answered req/s per backend (loadgen -k -c ${c}; bars: 95% CI)`,
      ylabel: 'answered requests/s (log scale)', log: true, series: series.map(([, , l]) => l),
      groups: BACKENDS.map(b => ({ label: LABEL[b],
        bars: Object.fromEntries(series.map(([st, p, l]) => [l, sum(`${st} loadgen ${b} ${p} ${c}`)])) })),
    });
    barPlot(ctx.out, 'php-pooler', {
      title: `PostgreSQL: PHP-FPM and zipbench, direct and through a pooler (loadgen -k -c ${c}; bars: 95% CI)`,
      ylabel: 'answered requests/s (log scale)', log: true, series: ['answered req/s'], height: 560,
      groups: poolRows.map(([label, k]) => ({ label, bars: { 'answered req/s': sum(`${k} ${c}`) } })),
    });
    lines.push('', 'Plots: `plots/php.svg` (data: `data/php.dat`), `plots/php-pooler.svg` (data: `data/php-pooler.dat`).', '');
    return lines.join('\n');
  },
};
