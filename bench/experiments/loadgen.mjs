// The bundled load generator against ab and wrk, on the project's nginx
// (scripts/nginx: a 400-byte file): -c 1, 10 and 100, with and without
// keep-alive; req/s and each client's own user+sys CPU per request (GNU
// time). loadgen and ab get the same -n and -c; wrk has no -n, so it runs
// for as long as loadgen took (rounded up to a second).
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell } from '../lib/cells.mjs';
import { table, fmtRatio } from '../lib/table.mjs';
import { run } from '../lib/run.mjs';
import { nginx } from '../lib/services.mjs';
import { parseAb } from '../lib/clients.mjs';
import { median } from '../lib/stats.mjs';
import { nproc, childrenOf } from '../lib/proc.mjs';
import { versions } from '../lib/machine.mjs';
import { explain } from '../lib/calibration.mjs';

const CAP = 2;   // -t: only caps a run on a busy machine, the same for loadgen and ab

export default {
  title: 'loadgen against ab and wrk',
  async run(ctx) {
    const scale = ctx.quick ? 2 : 1;
    const ng = await nginx(ctx);
    const url = `http://127.0.0.1:${ng.port}/400.html`;
    const timeFile = path.join(ctx.work, 'loadgen.time');
    const cpus = nproc();
    const lgThreads = cpus >= 4 ? cpus / 2 : 1;          // loadgen's own default
    const alt = `loadgen-t${cpus > lgThreads ? cpus : 2}`;
    const requests = (c, ka) => ({ '1yes': 60000, '1no': 20000 }[`${c}${ka}`] ?? (ka === 'yes' ? 150000 : 50000)) / scale;
    const wrkSecs = {};      // "c ka" -> seconds loadgen took last

    // One client run: {value: req/s, cpu: µs per request} or NaN.
    const runOne = async (client, c, ka) => {
      const n = requests(c, ka);
      let args, parse;
      if (client.startsWith('loadgen')) {
        args = [ctx.bin('loadgen'), '-q', ...(client === 'loadgen' ? [] : ['--threads', client.slice(9)]),
                ...(ka === 'yes' ? ['-k'] : []), '-t', String(CAP), '-n', String(n), '-c', String(c), url];
        parse = t => parseAb(t);
      } else if (client === 'ab') {
        args = ['ab', '-q', '-r', ...(ka === 'yes' ? ['-k'] : []), '-t', String(CAP), '-n', String(n), '-c', String(c), url];
        parse = t => parseAb(t);
      } else {
        const th = client === 'wrk-t1' ? 1 : Math.min(c, 2);
        args = ['wrk', '-t', String(th), '-c', String(c), '-d', `${wrkSecs[`${c} ${ka}`] || 1}s`,
                ...(ka === 'no' ? ['-H', 'Connection: close'] : []), url];
        parse = t => {
          const rps = (t.match(/^Requests\/sec:\s+([\d.]+)/m) || [])[1];
          const done = (t.match(/^\s*(\d+) requests in/m) || [])[1];
          return rps ? { rps: Number(rps), completed: Number(done) } : null;
        };
      }
      const r = await run('/usr/bin/time', ['-f', '%U %S', '-o', timeFile, ...args], { log: ctx.logFile });
      const p = parse(r.stdout);
      if (!p || !p.completed) { ctx.log(`${client} -c ${c} keep-alive=${ka} failed: ${r.stdout.trim().split('\n').pop()}`); return NaN; }
      const [u, s] = fs.readFileSync(timeFile, 'utf8').trim().split('\n').pop().split(' ').map(Number);
      if (client === 'loadgen') wrkSecs[`${c} ${ka}`] = Math.max(1, Math.ceil(Math.min(n / p.rps, CAP)));
      return { value: p.rps, cpu: (u + s) * 1e6 / p.completed };
    };

    const cells = new Cells(ctx, 'loadgen');
    const rows = [];
    for (const ka of ['yes', 'no']) for (const c of [1, 10, 100]) {
      const clients = c > 1 ? ['loadgen', alt, 'ab', 'wrk', 'wrk-t1'] : ['loadgen', 'ab', 'wrk'];
      for (const cl of clients) {
        cells.add(`${cl} ${c} ${ka}`, () => runOne(cl, c, ka));
        rows.push([cl, c, ka]);
      }
    }
    const t0 = Date.now();
    const load0 = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    await cells.measure();
    const elapsed = Math.round((Date.now() - t0) / 1000);

    const med = k => cells.median(k);
    const cpu = k => { const c = cells.get(k); return c && c.extras.length ? median(c.extras.map(e => e.cpu)) : NaN; };
    const bestWrk = (c, ka) => Math.max(...['wrk', 'wrk-t1'].map(w => med(`${w} ${c} ${ka}`)).filter(Number.isFinite), 0);
    const wrkCpu = (c, ka) => {
      const w = ['wrk', 'wrk-t1'].filter(x => med(`${x} ${c} ${ka}`) === bestWrk(c, ka))[0];
      return w ? cpu(`${w} ${c} ${ka}`) : NaN;
    };
    const name = (cl, c) => cl === 'loadgen' ? `loadgen (${lgThreads} thread${lgThreads === 1 ? '' : 's'})`
      : cl.startsWith('loadgen-t') ? `loadgen --threads ${cl.slice(9)}`
      : cl === 'wrk' && c > 1 ? 'wrk -t 2' : cl === 'wrk-t1' ? 'wrk -t 1' : cl;
    const body = rows.map(([cl, c, ka]) => {
      const k = `${cl} ${c} ${ka}`;
      const lg = cl.startsWith('loadgen');
      return [name(cl, c), c, ka, fmtCell(cells.get(k)), Number.isFinite(cpu(k)) ? cpu(k).toFixed(2) : '-',
              lg ? fmtRatio(med(k) / bestWrk(c, ka)) : '', lg ? fmtRatio(med(k) / med(`ab ${c} ${ka}`)) : ''];
    });
    const targets = ['yes', 'no'].map(ka => {
      const lg = med(`loadgen 10 ${ka}`), a = med(`ab 10 ${ka}`), w = bestWrk(10, ka);
      const rw = lg / w, ra = lg / a, lc = cpu(`loadgen 10 ${ka}`), wc = wrkCpu(10, ka);
      return `- ${ka === 'yes' ? 'with' : 'without'} keep-alive: req/s ${rw.toFixed(3)}x wrk (target 1.0x: ${rw >= 1 ? 'met' : 'not met'}), ` +
        `${ra.toFixed(3)}x ab (target 1.1x: ${ra >= 1.1 ? 'met' : 'not met'}); CPU ${lc.toFixed(2)} µs/req against wrk ` +
        `${wc.toFixed(2)} (target at most: ${lc <= wc ? 'met' : 'not met'})`;
    });
    let workers = '?';
    try { workers = childrenOf(Number(fs.readFileSync(ng.pidFile, 'utf8'))).length; } catch { /* unknown */ }
    const v = versions();
    const lgv = (await run(ctx.bin('loadgen'), ['-V'])).stdout.trim().split(' ')[1] || '?';
    return ['## loadgen against ab and wrk', '',
      `Command: \`${ctx.command('loadgen')}\`, ${elapsed} s of runs. ${v.nginx} with ${workers} worker(s)`,
      `(\`scripts/nginx start\`: a 400-byte file on 127.0.0.1:${ng.port}, keep-alive, access log off), ${v.ab}, ${v.wrk}, loadgen ${lgv}.`,
      `Load average at the start: ${load0}. CPU is the client's own user+sys time (GNU time) per completed request:`,
      'on loopback that includes the kernel\'s TCP work done in the client\'s context.', '',
      table(['client', 'c', 'keep-alive', 'req/s median [95% CI]', 'CPU µs/req', 'loadgen/wrk', 'loadgen/ab'], body, 'lrlrrrr'),
      cells.machineNote(),
      'The ratios of both loadgen rows are to ab and to the better of the two wrk rows.', '',
      'Targets at -c 10 (loadgen as it comes, same run, same -n and -c):', '', ...targets, '',
      `Commands (N: ${requests(1, 'yes')}/${requests(1, 'no')} at -c 1, ${requests(10, 'yes')}/${requests(10, 'no')} otherwise, keep-alive/not;`,
      `wrk runs for loadgen's time rounded up to a second, T is 2, or 1 at -c 1 and in the -t 1 rows; -t ${CAP}`,
      'only caps a run on a busy machine, the same for loadgen and ab):', '',
      '```',
      `/usr/bin/time -f '%U %S' build/bin/loadgen -q [--threads ${alt.slice(9)}] [-k] -t ${CAP} -n N -c C ${url}`,
      `/usr/bin/time -f '%U %S' ab -q -r [-k] -t ${CAP} -n N -c C ${url}`,
      `/usr/bin/time -f '%U %S' wrk -t T -c C -d Ss [-H 'Connection: close'] ${url}`,
      '```', '', explain(ctx, 'loadgen'), '',
      'Why the figures look as they do, and what else was tried: docs/LOADGEN.md.'].join('\n');
  },
};
