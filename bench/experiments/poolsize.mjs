// Experiment: the pool-sizing curve (HikariCP's "About Pool Sizing",
// measured here). For pg, InnoDB and MyISAM, pooled: goodput and p99
// against the pool size (1, 2, 4, 8, 16, 32, 64 connections in all) at
// c 100, next to the server as conf/zipbench.conf configures it (its
// default pool_min/soft_max/hard_max). Per backend, one server per pool
// size (pool_min = pool_soft_max = pool_hard_max = N, through --set) and
// one with the defaults all run at once, so every size is measured in the
// same rounds (Cells interleave them) and the default's distance to the
// peak is a same-round ratio.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Cells, fmtCell, fmtNum, writeCells } from '../lib/cells.mjs';
import { table } from '../lib/table.mjs';
import { draw, writeData, errorBar, gpString } from '../lib/plot.mjs';
import { rateRun, serverSplit, splitDelta, fmtErrors, errorNote } from '../lib/goodput.mjs';
import { getJSON } from '../lib/http.mjs';
import { loadgen, warmRun, warmSeconds } from '../lib/clients.mjs';
import { keysFile } from '../lib/dataset.mjs';
import { loadBenchTables, startServer } from '../lib/benchdb.mjs';
import { median } from '../lib/stats.mjs';
import { benchPort } from '../lib/services.mjs';

const BACKENDS = ['pg', 'innodb', 'myisam'];
const LABEL = { pg: 'PostgreSQL', innodb: 'InnoDB', myisam: 'MyISAM' };
const SIZES = [1, 2, 4, 8, 16, 32, 64];
const C = 100;

// A port from `from` up that nothing listens on now.
async function freePort(from, taken) {
  for (let p = from; p < from + 200; p++) {
    if (taken.has(p)) continue;
    const ok = await new Promise(res => {
      const s = net.createServer().once('error', () => res(false))
        .once('listening', () => s.close(() => res(true))).listen(p, '127.0.0.1');
    });
    if (ok) { taken.add(p); return p; }
  }
  throw new Error(`no free port in ${from}-${from + 199}`);
}

// The pool keys of [backend NAME] in the config: {pool_min, pool_soft_max, pool_hard_max}.
function confPool(file, name) {
  const out = {};
  let section = '';
  for (const raw of fs.readFileSync(file, 'utf8').split('\n')) {
    const line = raw.replace(/\s;.*$/, '').trim();
    const s = line.match(/^\[(.*)\]$/);
    if (s) { section = s[1].trim().replace(/\s+/g, ' '); continue; }
    const kv = line.match(/^(pool_min|pool_soft_max|pool_hard_max)\s*=\s*(\d+)$/);
    if (kv && section === `backend ${name}`) out[kv[1]] = Number(kv[2]);
  }
  return out;
}

export default {
  // A pool smaller than the load sheds it: the 503s of the sized pools at
  // c 100 are what is measured. The default pool's would be a fault.
  errorsMeasured: key => !/ default$/.test(key),
  title: 'the pool-sizing curve: req/s and p99 against the pool size',
  // Each plot's caption, under this section in RESULTS.md.
  plots: {
    poolsize: "Pooled lookups per second at c 100 against the pool size (1-64), per backend; dashed: the default config. Where the curve flattens is the pool size to use.",
    'poolsize-p99': "The p99 latency of the same runs against the pool size, in ms: what a pool too small costs in waiting.",
  },
  async run(ctx) {
    const seconds = ctx.quick ? 0.5 : 5;
    const keys = path.resolve(keysFile(ctx));
    const { avail, skipped } = await loadBenchTables(ctx, 'lookup', BACKENDS);
    if (avail.length < BACKENDS.length) throw new Error(`the load failed for ${skipped.join(', ')}: see ${ctx.logFile}`);
    const base = benchPort('POOLSIZE', 40);
    const variants = [...SIZES.map(n => ({ name: String(n), n })), { name: 'default', n: null }];
    const results = {}, defaults = {};
    const t0 = Date.now();
    for (const b of BACKENDS) {
      defaults[b] = confPool(ctx.conf, b);
      const taken = new Set(), servers = [];
      try {
        for (const v of variants) {
          const port = await freePort(base, taken);
          const set = v.n === null ? [] : ['pool_min', 'pool_soft_max', 'pool_hard_max'].flatMap(k => ['--set', `${b}.${k}=${v.n}`]);
          const srv = await startServer(ctx, 'lookup', port, [b],
                                        { log: path.join(ctx.work, `poolsize-${b}-${v.name}.log`), extra: set });
          servers.push({ ...v, port, srv });
        }
        const url = s => `http://127.0.0.1:${s.port}/zip/${b}/{key}?strategy=pooled`;
        // The server's own count of why it gave 503s (overload: a request
        // waited past acquire_timeout_ms for one of too few connections).
        const split = async s => serverSplit((await getJSON(s.port, '/stats'))?.backends?.find(x => x.name === b));
        const cells = new Cells(ctx, `poolsize ${b}`, { budgetS: Math.max(60, ctx.repeat.budgetS / BACKENDS.length) });
        // Each run is its goodput (lib/goodput.mjs), errors apart by kind,
        // after a warm-up at c 100 (Cells' meta.warm: the pool opened to
        // its size, the tables in cache), never measured.
        for (const s of servers)
          cells.add(s.name, async () => {
            const before = await split(s);
            const r = await loadgen(ctx, { url: url(s), c: C, seconds, requests: 50000000, keys });
            const server = before ? splitDelta(before, await split(s)) : null;
            return rateRun(r, { server }, r ? { p99: r.json?.latency_us?.p99 } : {});
          }, { warm: () => warmRun(ctx, { url: url(s), c: C, keys }) });
        await cells.measure();
        results[b] = cells;
      } finally {
        for (const s of servers) await s.srv.stop();
      }
    }
    const elapsed = Math.round((Date.now() - t0) / 1000);

    const ms = (cell, k) => {
      const v = (cell?.extras || []).map(e => e[k]).filter(Number.isFinite);
      return v.length ? median(v) / 1000 : NaN;
    };
    const lines = ['## The pool-sizing curve', '',
      `Command: \`${ctx.command('poolsize')}\`, ${elapsed} s of runs. For each backend, ${SIZES.length + 1} servers at once ` +
      `(\`build/bin/server --backends B --set B.pool_min=N --set B.pool_soft_max=N --set B.pool_hard_max=N\`, N = ` +
      `${SIZES.join(', ')}, and one with conf/zipbench.conf's own pool settings, "default"), measured in the same rounds, ` +
      `each run after a warm-up of ${warmSeconds(ctx, C)} s at its load (not counted): \`loadgen -k -c ${C} -t ${seconds} --keys ${keys} ` +
      "'http://127.0.0.1:PORT/zip/B/{key}?strategy=pooled'`. Each figure is answered req/s (goodput, lib/goodput.mjs: " +
      '2xx only; errors apart by kind, `E`, the 503s split by the server\'s /stats); p99 latency in ms, the median of the runs\' p99s. The server splits pool_min and pool_soft_max ' +
      'over its loops (one per core) and holds at most pool_hard_max connections per backend in all.', ''];
    const rows = variants.map(v => [v.n === null ? 'default' : v.n, ...BACKENDS.flatMap(b => {
      const cell = results[b].get(v.name);
      return [fmtCell(cell), `${fmtNum(ms(cell, 'p99'), 1)}`];
    }), BACKENDS.map(b => { const e = fmtErrors(results[b].get(v.name)); return e && `${LABEL[b]}: ${e}`; }).filter(Boolean).join('; ')]);
    lines.push(table(['pool size', ...BACKENDS.flatMap(b => [`${LABEL[b]} req/s`, `${LABEL[b]} p99 ms`]), 'errors'], rows,
                     'l' + 'r'.repeat(2 * BACKENDS.length) + 'l'));
    writeCells(ctx.out, 'poolsize', BACKENDS.flatMap(b => results[b].keys().map(k => ({ ...results[b].get(k), key: `${b} ${k}` }))));
    lines.push('"default": ' + BACKENDS.map(b => `${LABEL[b]} pool_min ${defaults[b].pool_min}, soft_max ` +
                                                `${defaults[b].pool_soft_max}, hard_max ${defaults[b].pool_hard_max}`).join('; ') + '.', '');
    const every = BACKENDS.flatMap(b => results[b].keys().map(k => results[b].get(k)));
    lines.push(errorNote(every), '');
    lines.push('### Where req/s peaks, and the default against the peak (target: within 10%, same rounds)', '');
    for (const b of BACKENDS) {
      const cells = results[b];
      const med = SIZES.map(n => cells.median(String(n)));
      const i = med.reduce((best, x, j) => (x > med[best] || !Number.isFinite(med[best]) ? j : best), 0);
      const peak = SIZES[i];
      // Sizes whose same-round ratio to the peak is within 10%.
      const near = SIZES.filter(n => cells.sameRoundRatio(String(n), String(peak)).value >= 0.9);
      const r = cells.sameRoundRatio('default', String(peak));
      const s = r.summary, ci = s && !Number.isNaN(s.lo) ? ` [${s.lo.toFixed(2)}-${s.hi.toFixed(2)}]` : s ? ` (${s.n} round${s.n === 1 ? '' : 's'})` : '';
      const busy = [...cells.keys()].some(k => cells.get(k).busy);
      lines.push(`- ${LABEL[b]}: req/s peaks at pool size ${peak} (${fmtNum(med[i])} req/s); sizes within 10% of it: ` +
                 `${near.join(', ')}. Default / peak: ${Number.isFinite(r.value) ? r.value.toFixed(2) : '-'}${ci}, target >= 0.90: ` +
                 `${Number.isFinite(r.value) ? (r.value >= 0.9 ? 'reached' : 'missed') : 'not measured'}` +
                 `${busy ? ' (machine busy during these cells: *)' : ''}.`);
    }
    lines.push('');
    for (const b of BACKENDS) lines.push(`${LABEL[b]}: ${results[b].machineNote()}`);

    // Two plots: req/s (95% interval as error bars, lib/plot.mjs errorBar)
    // and p99 against the size.
    const bars = cell => (cell && cell.values.length ? errorBar(cell.summary).map(x => x.toFixed(1)) : ['NaN', 'NaN', 'NaN']);
    const file = writeData(ctx.out, 'poolsize.dat', [
      ['#size', ...BACKENDS.flatMap(b => [`${b}_rps`, 'lo', 'hi', `${b}_p99_ms`])],
      ...SIZES.map(n => [n, ...BACKENDS.flatMap(b => {
        const cell = results[b].get(String(n));
        return [...bars(cell), fmtNum(ms(cell, 'p99'), 2)];
      })])]);
    const dflt = b => results[b].median('default');
    plot(ctx.out, file, Object.fromEntries(BACKENDS.map(b => [b, dflt(b)]).filter(([, v]) => Number.isFinite(v))));
    lines.push('', 'Plots: `plots/poolsize.svg`, `plots/poolsize-p99.svg` (data: `data/poolsize.dat`).', '');
    return lines.join('\n');
  },
};

// The two plots of poolsize.dat (written by run, or recorded): req/s with
// the 95% interval of each cell's median as bars, and p99, against the
// pool size, into DIR/plots/poolsize.svg and poolsize-p99.svg; defaults:
// {backend: req/s of the default config}, drawn dashed. The title says
// bars only where a cell has them (6 runs at least): else it says why
// there are none. Two plots, not a multiplot: draw's PNG is a replot,
// which a multiplot does not survive.
export function plot(dir, file, defaults) {
  const rows = fs.readFileSync(file, 'utf8').split('\n').filter(l => l && !l.startsWith('#')).map(l => l.split(' ').map(Number));
  const withBars = rows.some(r => BACKENDS.some((_, i) => r[3 + 4 * i] > r[2 + 4 * i]));
  const common = ["set xlabel 'pool size (connections in all)'", 'set logscale x 2', 'set grid',
                  'set xrange [0.8:80]'];
  const withDefault = BACKENDS.filter(b => Number.isFinite(defaults[b]));
  const bars = withBars ? 'bars: 95% CI of the median' : 'no bars: too few runs a cell for a 95% interval';
  draw(dir, 'poolsize', 900, 500, [...common,
    "set ylabel 'answered requests/s'",
    'plot ' + BACKENDS.map((b, i) => `'${file}' using 1:${2 + 4 * i}:${3 + 4 * i}:${4 + 4 * i} with yerrorlines lc ${i + 1} title ${gpString(LABEL[b])}`)
      .concat(withDefault.map(b => `${defaults[b].toFixed(1)} with lines dt 2 lc ${BACKENDS.indexOf(b) + 1} title ${gpString(`${LABEL[b]} default`)}`)).join(', '),
  ].join('\n'), { title: `Pooled lookups at c ${C}: answered req/s against the pool size (${bars}; dashed: the default config)`,
                  legend: [...BACKENDS.map(b => LABEL[b]), ...withDefault.map(b => `${LABEL[b]} default`)] });
  draw(dir, 'poolsize-p99', 900, 500, [...common,
    "set ylabel 'p99 latency (ms)'",
    'plot ' + BACKENDS.map((b, i) => `'${file}' using 1:${5 + 4 * i} with linespoints lc ${i + 1} title ${gpString(LABEL[b])}`).join(', '),
  ].join('\n'), { title: `Pooled lookups at c ${C}: p99 latency against the pool size`, legend: BACKENDS.map(b => LABEL[b]) });
}
