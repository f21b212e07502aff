// Experiment 2: the lookup server under load. req/s of GET /zip/B/random
// for every backend and connection strategy at c 1, 10 and 100, with ab
// and loadgen, next to nginx serving a static file of the size of a
// typical answer, in the same run; the server's counters (/stats) after.
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell } from '../lib/cells.mjs';
import { table, fmtRatio } from '../lib/table.mjs';
import { draw, writeData } from '../lib/plot.mjs';
import { run, background } from '../lib/run.mjs';
import { get, getJSON, waitFor } from '../lib/http.mjs';
import { nginx } from '../lib/services.mjs';
import { ab, loadgen } from '../lib/clients.mjs';
import { keysFile, countLines } from '../lib/dataset.mjs';
import { median } from '../lib/stats.mjs';
import { explain } from '../lib/calibration.mjs';

export const BACKENDS = ['sqlite', 'pg', 'innodb', 'myisam'];
// Connection strategies: the query parameter that picks each.
export const STRATEGIES = [['pooled', 'persistent=1'], ['per-request', 'persistent=0']];

// The bench's own tables and SQLite file, so the served table is never
// touched: --set arguments for the loader and the server alike.
export function benchSets(work) {
  return ['--set', `sqlite.path=${path.join(work, 'zip.sqlite')}`, '--set', 'sqlite.table=bench_server',
          '--set', 'pg.table=bench_server', '--set', 'innodb.table=bench_server_innodb',
          '--set', 'myisam.table=bench_server_myisam'];
}

// Loads the dataset into the bench tables of each backend; the ones that
// loaded. --quick keeps a load of the same dataset made by an earlier run.
export async function loadBenchTables(ctx, work, backends) {
  fs.mkdirSync(work, { recursive: true });
  const avail = [], skipped = [];
  for (const b of backends) {
    const stamp = path.join(work, `loaded.${b}`);
    if (ctx.quick && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === ctx.dataset &&
        fs.statSync(stamp).mtimeMs > fs.statSync(ctx.dataset).mtimeMs) {
      ctx.log(`load ${b}: kept from an earlier run (${stamp})`);
      avail.push(b);
      continue;
    }
    fs.rmSync(stamp, { force: true });
    const r = await run(ctx.bin('loader'), ['-q', '--conf', ctx.conf, '--backend', b, '--mode', 'bulk',
                                            '--dataset', ctx.dataset, ...benchSets(work)], { log: ctx.logFile });
    if (r.code === 0) { avail.push(b); fs.writeFileSync(stamp, ctx.dataset); }
    else { skipped.push(b); ctx.warn(`server: ${b} skipped: the load failed (is its database up?)`); }
  }
  return { avail, skipped };
}

// Starts build/bin/server on the bench tables; stopped at cleanup at the latest.
export async function startServer(ctx, work, port, backends, extra = []) {
  const srv = background(ctx.bin('server'), ['--conf', ctx.conf, '--port', String(port),
                                             '--backends', backends.join(','), ...benchSets(work), ...extra],
                         { log: path.join(work, 'server.log') });
  if (!(await waitFor(port, '/health', { want: 0, alive: srv.alive })) || !srv.alive())
    throw new Error(`the server did not start: see ${path.join(work, 'server.log')}`);
  return srv;
}

export default {
  title: 'the lookup server under load',
  async run(ctx) {
    const port = Number(process.env.ZB_BENCH_PORT || 18280);
    const work = path.join(ctx.build, 'bench-server');
    const seconds = ctx.quick ? 1 : 2;
    const levels = ctx.quick ? [10] : [1, 10, 100];
    const keys = keysFile(ctx);
    const { avail, skipped } = await loadBenchTables(ctx, work, BACKENDS);
    if (!avail.length) throw new Error('no backend to measure');
    fs.writeFileSync(path.join(work, 'server.log'), '');
    const srv = await startServer(ctx, work, port, avail);
    try {
      // A typical answer: the median body size of 51 random pooled lookups.
      const sizes = [];
      for (let i = 0; i < 51; i++) sizes.push((await get(port, `/zip/${avail[0]}/random`)).body.length);
      const size = median(sizes);
      const ng = await nginx(ctx);
      fs.writeFileSync(path.join(ng.html, 'lookup.json'), 'x'.repeat(size));
      const nginxUrl = `http://127.0.0.1:${ng.port}/lookup.json`;

      const tools = fs.existsSync(ctx.bin('loadgen')) ? ['ab', 'loadgen'] : ['ab'];
      const cells = new Cells(ctx, 'server');
      const errors = {};
      const measure = (key, tool, url, c) => cells.add(key, async () => {
        const r = tool === 'ab' ? await ab(ctx, { url: url.replace('{key}', 'random'), c, seconds })
                                : await loadgen(ctx, { url, c, seconds, keys });
        if (!r) return NaN;
        errors[key] = (errors[key] || 0) + r.errors;
        return r.rps;
      });
      for (const tool of tools) for (const c of levels) {
        measure(`${tool} nginx ${c}`, tool, nginxUrl, c);
        for (const b of avail) for (const [s, q] of STRATEGIES)
          measure(`${tool} ${b} ${s} ${c}`, tool, `http://127.0.0.1:${port}/zip/${b}/{key}?${q}`, c);
      }
      await cells.measure();
      const stats = await getJSON(port, '/stats');
      const version = (await run(ctx.bin('server'), ['-V'])).stdout.trim();

      const lines = ['## Experiment 2: the lookup server (build/bin/server), req/s', '',
        `Command: \`${ctx.command('server')}\`. Server: \`${version}\`, ${stats?.server?.threads ?? '?'} threads; ` +
        'client, server and databases share the machine.',
        `Data: \`${ctx.dataset}\` loaded into the bench's own tables (\`bench_server*\`, \`${work}/zip.sqlite\`); ` +
        `keys \`${keys}\` (${countLines(keys)} codes). Backends: ${avail.join(', ')}.` +
        (skipped.length ? ` Skipped (database not up): ${skipped.join(', ')}.` : ''),
        `Each run: ${seconds} s, HTTP keep-alive; runs of all cells interleaved. Pooled = \`?persistent=1\` ` +
        '(a connection from the backend\'s pool, statement prepared once); per-request = `?persistent=0` ' +
        '(connect, query and close in every request).',
        `- ab: \`ab -q -k -c C -t ${seconds} -n 50000000 'http://127.0.0.1:${port}/zip/B/random?persistent=P'\` ` +
        '(the server draws the key; ab counts bodies of another length than the first as failed: ignored, non-2xx shown).',
        `- loadgen: \`build/bin/loadgen -q -k -c C -t ${seconds} --keys ${keys} --json 'http://127.0.0.1:${port}/zip/B/{key}?persistent=P'\`.`,
        `- nginx (\`scripts/nginx\`, one worker per core, keep-alive) serving a static ${size}-byte file ` +
        '(the median size of a lookup answer here), same clients, same run.', ''];
      const label = s => s;
      for (const tool of tools) {
        lines.push(`### ${tool}`, '');
        const head = ['backend', 'connection', ...levels.map(c => `c=${c}`)];
        const err = k => (errors[k] ? ` [${errors[k]} errors]` : '');
        const rows = [[`nginx (static ${size} B)`, '-', ...levels.map(c => fmtCell(cells.get(`${tool} nginx ${c}`)) + err(`${tool} nginx ${c}`))]];
        const ratios = [];
        for (const b of avail) for (const [s] of STRATEGIES) {
          rows.push([b, label(s), ...levels.map(c => fmtCell(cells.get(`${tool} ${b} ${s} ${c}`)) + err(`${tool} ${b} ${s} ${c}`))]);
          ratios.push([b, label(s), ...levels.map(c => fmtRatio(cells.median(`${tool} ${b} ${s} ${c}`) / cells.median(`${tool} nginx ${c}`)))]);
        }
        lines.push(table(head, rows, 'll' + 'r'.repeat(levels.length)));
        lines.push('Ratio server/nginx (medians):', '', table(head, ratios, 'll' + 'r'.repeat(levels.length)));
      }
      lines.push(cells.machineNote(), '');
      lines.push(statsTable(stats), explain(ctx, 'server'), '');

      // Raw runs and the plot's data: medians per backend, strategy and c,
      // from the bundled load generator where it ran (ab otherwise).
      const raw = [];
      for (const k of cells.keys()) for (const v of cells.get(k).values) raw.push([...k.split(' '), v.toFixed(0)]);
      writeData(ctx.out, 'server-runs.tsv', raw);
      const tool = tools[tools.length - 1];
      const dat = [];
      for (const b of avail) for (const [s] of STRATEGIES) for (const c of levels) {
        const m = cells.median(`${tool} ${b} ${s} ${c}`);
        if (Number.isFinite(m)) dat.push([b, s, c, m.toFixed(0)]);
      }
      writeData(ctx.out, 'lookups.dat', dat);
      plot(ctx.out, dat);
      return lines.join('\n');
    } finally {
      await srv.stop();
    }
  },
};

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
            'during this run: a database was restarted or refused connections meanwhile. Cells marked ' +
            '[errors] include those fast 503s in their req/s.\n';
  return text;
}

function plot(dir, dat) {
  if (!dat.length) return;
  const file = path.join(dir, 'data', 'lookups.dat');
  const backends = [...new Set(dat.map(r => r[0]))];
  const strategies = [...new Set(dat.map(r => r[1]))];
  const dash = ['1', '2', '3'];
  const plots = [];
  strategies.forEach((s, si) => backends.forEach((b, bi) =>
    plots.push(`'< awk ''$1=="${b}" && $2=="${s}"'' ${file}' using 3:4 with linespoints lw 2 dt ${dash[si] || 1} lc ${bi + 1} title '${b} ${s}'`)));
  draw(dir, 'lookups', 900, 520, `set title 'Random-key lookups over HTTP: requests/s vs concurrency (solid: pooled, dashed: per-request)'
set logscale xy
set xlabel 'concurrency (-c)'
set ylabel 'requests/s (log scale)'
set grid
set key outside right
plot ${plots.join(', \\\n     ')}`);
}
