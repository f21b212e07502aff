// Experiment 3: the 2008 stack (Apache + mod_php, scripts/apache.d/zip.php)
// next to the zipbench server, same lookups, same run: req/s per backend,
// persistent and per-request connections, at c 1, 10 and 100, with ab and
// loadgen, and the ratio zipbench/PHP. Apache and the server are restarted
// for every backend and connection mode, so connections left by one never
// count against the next (--quick starts each once).
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell, machineNote, writeCells } from '../lib/cells.mjs';
import { barPlot } from '../lib/plot.mjs';
import { rateRun, fmtErrors, errorNote } from '../lib/goodput.mjs';
import { table, fmtRatio } from '../lib/table.mjs';
import { run } from '../lib/run.mjs';
import { apache, dbEnv } from '../lib/services.mjs';
import { ab, loadgen, warmRun } from '../lib/clients.mjs';
import { keysFile, countLines } from '../lib/dataset.mjs';
import { BACKENDS, benchSqlite, benchTables, loadBenchTables, startServer } from '../lib/benchdb.mjs';
import { versions } from '../lib/machine.mjs';
import { explain } from '../lib/calibration.mjs';

const LABEL = { sqlite: 'SQLite', pg: 'PostgreSQL', innodb: 'InnoDB', myisam: 'MyISAM' };
const Y2008 = { pg: '947.58', sqlite: '1096.00', myisam: '1190.35', innodb: '1245.85' };

export default {
  title: 'Apache + mod_php next to the server',
  async run(ctx) {
    const requests = ctx.quick ? 500 : 10000;
    const seconds = ctx.quick ? 1 : 5;
    const levels = ctx.quick ? [10] : [1, 10, 100];
    const srvPort = Number(process.env.ZB_PHP_SERVER_PORT || 18081);
    const keys = path.resolve(keysFile(ctx));
    const haveLoadgen = fs.existsSync(ctx.bin('loadgen'));
    const log = path.join(ctx.work, 'php-server.log');
    fs.writeFileSync(log, '');
    // The lookup tables the server experiment serves (loaded once a run).
    const { avail, skipped } = await loadBenchTables(ctx, 'lookup', BACKENDS);
    if (avail.length < BACKENDS.length) throw new Error(`the load failed for ${skipped.join(', ')}: see ${ctx.logFile}`);
    const tables = benchTables('lookup');
    // --quick measures at c 10 only: 20 prefork processes start faster than 110.
    const env = { ZB_KEYS: keys, ZB_CONF: ctx.conf, ZB_SQLITE_PATH: benchSqlite(ctx, 'lookup'),
                  ZB_SQLITE_TABLE: tables.sqlite, ZB_PG_TABLE: tables.pg, ZB_INNODB_TABLE: tables.innodb,
                  ZB_MYISAM_TABLE: tables.myisam, ...(ctx.quick ? { ZB_APACHE_WORKERS: '20' } : {}) };

    const all = new Map();   // key -> cell, over every group
    const groups = BACKENDS.length * 2 * 2;
    const t0 = Date.now();
    // Each group on a fresh Apache or server; --quick keeps one of each.
    const fresh = !ctx.quick;
    let phpPort = 0, srv = null;
    try {
      for (const b of BACKENDS) for (const p of [1, 0]) for (const stack of ['php', 'zipbench']) {
        let base;
        if (stack === 'php') {
          if (fresh || !phpPort) phpPort = await apache.restart(ctx, env);
          base = `http://127.0.0.1:${phpPort}/zip.php?backend=${b}&persistent=${p}&code=`;
        } else {
          srv ??= await startServer(ctx, 'lookup', srvPort, fresh ? [b] : BACKENDS, { log });
          base = `http://127.0.0.1:${srvPort}/zip/${b}/`;
        }
        const url = code => stack === 'php' ? `${base}${code}` : `${base}${code}?persistent=${p}`;
        const urlMiss = stack === 'php' ? `${base}random&miss=0.99` : `${base}random?persistent=${p}&miss=0.99`;
        try {
          const cells = new Cells(ctx, `php ${stack} ${b} p=${p}`,
                                  { budgetS: Math.max(30, ctx.repeat.budgetS / groups) });
          // Every run is its goodput (lib/goodput.mjs), errors apart; each is
          // preceded by a warm-up at its concurrency (Apache's processes and
          // their persistent connections, the server's pool).
          const add = (key, c, fn, { miss = false, keepalive = true, warmUrl = url('{key}') } = {}) =>
            cells.add(key, async () => rateRun(await fn(), { miss }),
                      { warm: () => warmRun(ctx, { url: warmUrl, c, keys, keepalive, miss }) });
          let seed = 1;
          for (const c of levels) {
            add(`${stack} ab ${b} ${p} ${c}`, c, () => ab(ctx, { url: url('random'), c, seconds, requests }));
            if (haveLoadgen)
              add(`${stack} loadgen ${b} ${p} ${c}`, c, () => loadgen(ctx, { url: url('{key}'), c, seconds, requests, keys, seed: seed++ }));
          }
          // The 2008 command as it was: no keep-alive, -n 10000 -c 10, codes
          // from mt_rand, so nearly every lookup misses (404 is an answer here).
          if (p === 1)
            add(`${stack} ab2008 ${b} 1 10`, 10, () => ab(ctx, { url: urlMiss, c: 10, seconds, requests, keepalive: false }),
                { miss: true, keepalive: false, warmUrl: urlMiss });
          await cells.measure();
          for (const k of cells.keys()) all.set(k, cells.get(k));
        } finally {
          if (fresh && srv) { await srv.stop(); srv = null; }
          if (fresh && stack === 'php') await apache.stop(ctx);
        }
        ctx.log(`${stack} ${b} persistent=${p} done`);
      }
    } finally {
      if (srv) await srv.stop();
      if (phpPort) await apache.stop(ctx);
    }
    const elapsed = Math.round((Date.now() - t0) / 1000);

    const cell = k => fmtCell(all.get(k));
    const med = k => (all.get(k) && all.get(k).values.length ? all.get(k).summary.median : NaN);
    const ratio = (tool, b, p, c) => fmtRatio(med(`zipbench ${tool} ${b} ${p} ${c}`) / med(`php ${tool} ${b} ${p} ${c}`));
    const env2 = await dbEnv(ctx);
    const psql = env2.ZB_PG_BIN ? path.join(env2.ZB_PG_BIN, 'psql') : 'psql';
    const pgmax = (await run(psql, ['-X', '-Atc', 'SHOW max_connections'], { env: env2 })).stdout.trim() || '?';
    const v = versions();
    const lines = ['## Experiment 3: Apache + mod_php next to zipbench', '',
      `Command: \`${ctx.command('php')}\`, ${elapsed} s of runs.`,
      `Versions: ${v.php}, ${v.apache} (mpm_prefork, mod_php, OPcache as Debian ships it), ${v.pg}, ${v.mariadb}, ${v.sqlite}.`,
      `Data: \`${ctx.dataset}\` in the bench's own tables (\`bench_lookup*\`, as experiment 2), ${countLines(keys)} codes; keys \`${keys}\`.`, '',
      `Client, Apache (${ctx.quick ? 20 : 110} prefork processes), the C server and the databases share the same`,
      'cores; 2008 ran ab from another PC. Each figure is answered req/s; each run is `-n ' + requests + '` capped at ' +
      `${seconds} s. ${fresh ? 'Apache and the server are restarted for each backend and connection mode.' : 'One Apache and one server for all (--quick).'}`, '',
      '### The 2008 setting: ab -c 10, persistent connections', '',
      '2008: Apache 2.2.6 + PHP 5.2.4 on a Pentium D 2.8 GHz, `ab -n 10000 -c 10` from another PC,',
      'codes from mt_rand (nearly all misses). *as 2008* repeats that command (no keep-alive,',
      '`miss=0.99`); *ab -k* asks for loaded codes on keep-alive connections.', '',
      table(['backend', '2008 PHP', 'PHP as 2008', 'zipbench as 2008', 'PHP ab -k', 'zipbench ab -k', 'zipbench/PHP (ab -k)'],
            BACKENDS.map(b => [LABEL[b], Y2008[b], cell(`php ab2008 ${b} 1 10`), cell(`zipbench ab2008 ${b} 1 10`),
                               cell(`php ab ${b} 1 10`), cell(`zipbench ab ${b} 1 10`), ratio('ab', b, 1, 10)])),
    ];
    // The server's target (issue 12): >= 3x PHP at ab -k -c 10, persistent, every backend.
    const at10 = BACKENDS.map(b => [b, med(`zipbench ab ${b} 1 10`) / med(`php ab ${b} 1 10`)]);
    if (levels.includes(10))
      lines.push(`Target: zipbench/PHP at \`ab -k -c 10\`, persistent, >= 3x for every backend: ` +
                 at10.map(([b, r]) => `${LABEL[b]} ${fmtRatio(r)}`).join(', ') + ': ' +
                 (at10.every(([, r]) => r >= 3) ? 'met' : 'NOT met') + '.', '');
    for (const tool of haveLoadgen ? ['ab', 'loadgen'] : ['ab']) {
      if (tool === 'ab')
        lines.push('### Every backend, mode and concurrency: ab -k, code=random', '',
          `\`ab -k -n ${requests} -t ${seconds} -c C 'http://127.0.0.1:${phpPort}/zip.php?backend=B&code=random&persistent=P'\``,
          `and \`.../zip/B/random?persistent=P\` on the server (\`build/bin/server --port ${srvPort} --backends B\`).`, '');
      else
        lines.push('### Every backend, mode and concurrency: loadgen --keys, the same codes for both', '',
          `\`loadgen -k -n ${requests} -t ${seconds} -c C --seed RUN --keys ${keys} 'http://127.0.0.1:${phpPort}/zip.php?backend=B&code={key}&persistent=P'\``,
          'and `.../zip/B/{key}?persistent=P` on the server.', '');
      const rows = [];
      for (const b of BACKENDS) for (const p of [1, 0]) for (const c of levels)
        rows.push([LABEL[b], p ? 'persistent' : 'per-request', c, cell(`php ${tool} ${b} ${p} ${c}`),
                   cell(`zipbench ${tool} ${b} ${p} ${c}`), ratio(tool, b, p, c),
                   ['php', 'zipbench'].map(st => { const e = fmtErrors(all.get(`${st} ${tool} ${b} ${p} ${c}`)); return e && `${st === 'php' ? 'PHP' : st}: ${e}`; })
                     .filter(Boolean).join('; ')]);
      lines.push(table(['backend', 'connection', 'c', 'PHP', 'zipbench', 'zipbench/PHP', 'errors'], rows, 'llrrrrl'));
    }
    const as2008Errors = BACKENDS.flatMap(b => ['php', 'zipbench'].map(st => [st, b, fmtErrors(all.get(`${st} ab2008 ${b} 1 10`))]))
      .filter(([, , e]) => e).map(([st, b, e]) => `${st} ${b}: ${e}`);
    lines.push(errorNote([...all.values()]),
      ...(as2008Errors.length ? ['', `Errors of the *as 2008* runs (their 404s are answers, not errors): ${as2008Errors.join('; ')}.`] : []),
      // ab has no count per status: a miss run's non-2xx are taken as its 404s
      ...([...all.values()].some(c => c.extras.some(e => e && e.missUnsplit))
        ? ['', 'ab counts non-2xx answers without their status: in the *as 2008* runs all of them are taken as ' +
           'the 404s asked for (a 503 there would count as an answer; no other run asks for misses).'] : []),
      '', machineNote([...all.values()], ctx.repeat.target));
    lines.push(`PostgreSQL max_connections: ${pgmax}.`, '',
      explain(ctx, 'php'), '',
      'What each PHP request does (scripts/apache.d/zip.php): pg: pg_pconnect and a statement',
      'prepared once per connection, or pg_connect + pg_query_params; sqlite: PDO,',
      'read-only, persistent or not, prepared per request; innodb/myisam: PDO mysql over',
      'the unix socket, ATTR_PERSISTENT true/false, native prepares (prepare, execute and',
      'close: PDO keeps no statement across requests). code=random reads one line of the',
      'key file at a random offset.');
    writeCells(ctx.out, 'php', [...all.values()]);
    // The plot: PHP against zipbench, persistent, per backend and c, with
    // loadgen where it ran (the same codes for both), else ab.
    const tool = haveLoadgen ? 'loadgen' : 'ab';
    const sum = k => all.get(k)?.values.length ? all.get(k).summary : undefined;
    barPlot(ctx.out, 'php', {
      title: `Apache + mod_php against zipbench (${tool} -k, persistent connections): answered req/s, bars: 95% CI`,
      ylabel: 'answered requests/s (log scale)', log: true, series: ['PHP', 'zipbench'],
      groups: BACKENDS.flatMap(b => levels.map(c => ({ label: `${LABEL[b]} c=${c}`,
        bars: { PHP: sum(`php ${tool} ${b} 1 ${c}`), zipbench: sum(`zipbench ${tool} ${b} 1 ${c}`) } }))),
    });
    return lines.join('\n');
  },
};
