// The bundled load generator against ab, wrk and h2load (--h1), on the
// project's nginx (scripts/nginx: a 400-byte file, and over TLS on 8443).
// Three tables, each client's req/s and its own user+sys CPU per request
// (GNU time):
//   1. as they come: nginx with a worker per core, nothing pinned; -c 1, 10
//      and 100, keep-alive and not
//   2. pinned: nginx's one worker on CPU 0, each client on CPU 1 (taskset),
//      so that the client's own efficiency decides
//   3. https: a new TLS connection (full handshake) per request against
//      keep-alive, and loadgen --tls-resume
// loadgen, ab and h2load get the same -n and -c; wrk has no -n, so it runs
// for as long as loadgen took (rounded up to a second). h2load gets -n, not
// -D: its timed mode never ends without keep-alive.
import fs from 'node:fs';
import path from 'node:path';
import { Cells, fmtCell, writeCells } from '../lib/cells.mjs';
import { rateRun, fmtErrors, errorNote } from '../lib/goodput.mjs';
import { barPlot } from '../lib/plot.mjs';
import { table, fmtRatio } from '../lib/table.mjs';
import { run, atCleanup } from '../lib/run.mjs';
import { nginx } from '../lib/services.mjs';
import { parseAb } from '../lib/clients.mjs';
import { median } from '../lib/stats.mjs';
import { nproc, childrenOf, cpuTimes, cpuShares, pidInFile } from '../lib/proc.mjs';
import { versions } from '../lib/machine.mjs';
import { explain } from '../lib/calibration.mjs';

const CAP = 2;   // -t: only caps a run on a busy machine, the same for loadgen and ab

// The parsers of the clients without --json: a report as lib/clients.mjs
// gives (rps, seconds, completed, non2xx, failed), or null.
const secondsOf = (v, unit) => Number(v) * ({ us: 1e-6, ms: 1e-3, s: 1, m: 60 }[unit] ?? 1);
export const parseWrk = t => {
  const rps = (t.match(/^Requests\/sec:\s+([\d.]+)/m) || [])[1];
  const done = t.match(/^\s*(\d+) requests in ([\d.]+)(us|ms|s|m)\b/m);
  if (!rps || !done) return null;
  const sock = t.match(/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/) || [0, 0, 0, 0, 0];
  return { rps: Number(rps), seconds: secondsOf(done[2], done[3]), complete: Number(done[1]), completed: Number(done[1]),
           non2xx: Number((t.match(/Non-2xx or 3xx responses: (\d+)/) || [])[1] || 0), status: null,
           failed: { connect: Number(sock[1]), receive: Number(sock[2]), send: Number(sock[3]), timeout: Number(sock[4]) } };
};
export const parseH2load = t => {
  const m = t.match(/^finished in ([\d.]+)(us|ms|s|m), ([\d.]+) req\/s/m);
  const q = t.match(/^requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/m);
  const codes = t.match(/^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/m);
  if (!m || !q) return null;
  const [done, , , errored, timeout] = q.slice(1).map(Number);
  const non2xx = codes ? Number(codes[2]) + Number(codes[3]) + Number(codes[4]) : 0;
  // h2load's "done" holds the errored and timed-out requests too
  return { rps: Number(m[3]), seconds: secondsOf(m[1], m[2]), complete: done, completed: done - errored - timeout, non2xx, status: null,
           failed: { connect: errored, timeout } };
};

export default {
  title: 'loadgen against ab, wrk and h2load',
  // Each plot's caption, under this section in RESULTS.md.
  plots: {
    loadgen: "Answered requests per second that each load generator (loadgen, ab, wrk, h2load) gets from the same nginx file, per concurrency and keep-alive. Bars: the 95% interval of the median.",
  },
  async run(ctx) {
    const scale = ctx.quick ? 20 : 1;   // --quick: a twentieth of the requests
    const ng = await nginx(ctx);
    const httpUrl = `http://127.0.0.1:${ng.port}/400.html`;
    const tlsPort = Number(process.env.ZB_NGINX_TLS_PORT || 8443);
    const httpsUrl = `https://127.0.0.1:${tlsPort}/400.html`;
    const timeFile = path.join(ctx.work, 'loadgen.time');
    const cpus = nproc();
    const lgThreads = cpus >= 4 ? cpus / 2 : 1;          // loadgen's own default
    const alt = `loadgen-t${cpus > lgThreads ? cpus : 2}`;
    const requests = (url, c, ka) => (url.startsWith('https') && ka === 'no' ? 4000 / scale
      : ({ '1yes': 60000, '1no': 20000 }[`${c}${ka}`] ?? (ka === 'yes' ? 150000 : 50000))) / scale;
    const wrkSecs = {};      // "url c ka" -> seconds loadgen took last

    // One client run: {value: req/s, cpu: µs per request} or NaN.
    const runOne = async (client, c, ka, { url, pin = [] }) => {
      const n = requests(url, c, ka);
      const close = ka === 'no' ? ['-H', 'Connection: close'] : [];
      let args, parse = parseAb;
      if (client.startsWith('loadgen')) {
        const extra = client === 'loadgen-resume' ? ['--tls-resume']
          : client.startsWith('loadgen-t') ? ['--threads', client.slice(9)] : [];
        args = [ctx.bin('loadgen'), '-q', ...extra, ...(ka === 'yes' ? ['-k'] : []), '-t', String(CAP),
                '-n', String(n), '-c', String(c), url];
      } else if (client === 'ab') {
        args = ['ab', '-q', '-r', ...(ka === 'yes' ? ['-k'] : []), '-t', String(CAP), '-n', String(n), '-c', String(c), url];
      } else if (client === 'h2load') {
        args = ['h2load', '--h1', '-t', '1', '-c', String(c), '-n', String(n), ...close, url];
        parse = parseH2load;
      } else {
        const th = client === 'wrk-t1' ? 1 : Math.min(c, 2);
        args = ['wrk', '-t', String(th), '-c', String(c), '-d', `${wrkSecs[`${url} ${c} ${ka}`] || 1}s`, ...close, url];
        parse = parseWrk;
      }
      const core0 = pin.length ? cpuTimes(0) : null;   // pinned: nginx's core
      const r = await run(pin.length ? pin[0] : '/usr/bin/time',
                          [...pin.slice(1), ...(pin.length ? ['/usr/bin/time'] : []), '-f', '%U %S %w', '-o', timeFile, ...args],
                          { log: ctx.logFile, timeoutS: 120 });
      const p = parse(r.stdout);
      if (!p || !p.completed) { ctx.log(`${client} -c ${c} keep-alive=${ka} ${url} failed: ${r.stdout.trim().split('\n').pop()}`); return NaN; }
      const [u, s, waits] = fs.readFileSync(timeFile, 'utf8').trim().split('\n').pop().split(' ').map(Number);
      if (client === 'loadgen') wrkSecs[`${url} ${c} ${ka}`] = Math.max(1, Math.ceil(Math.min(n / p.rps, CAP)));
      const serverCore = core0 ? cpuShares(core0, cpuTimes(0)).busy : NaN;
      return rateRun(p, {}, { cpu: (u + s) * 1e6 / p.completed, serverCore, sleeps: waits / p.completed });
    };

    // A section: every client at each -c and keep-alive, measured together
    // (interleaved); its own share of the experiment's time budget.
    const section = async (name, { cs, clients, url, pin, share }) => {
      const cells = new Cells(ctx, `loadgen ${name}`, { budgetS: ctx.repeat.budgetS * share });
      const rows = [];
      for (const ka of ['yes', 'no']) for (const c of cs)
        for (const cl of clients(c)) {
          cells.add(`${cl} ${c} ${ka}`, () => runOne(cl, c, ka, { url, pin }));
          rows.push([cl, c, ka]);
        }
      await cells.measure();
      return { cells, rows };
    };

    const t0 = Date.now();
    const load0 = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    let workers = '?';
    const nginxPid = pidInFile(ng.pidFile);
    if (nginxPid) workers = childrenOf(nginxPid).length;

    // 1. As they come. Each tool as it comes (loadgen: half the CPUs; wrk:
    // -t 2), and with c > 1 the other choice too: loadgen on every CPU, wrk
    // on one, so the ratios are against wrk's better figure. --quick (the
    // smoke run of make test): -c 10 and one client of each kind.
    const unpinned = await section('as they come', {
      cs: ctx.quick ? [10] : [1, 10, 100], url: httpUrl, share: 0.5,
      clients: c => ctx.quick ? ['loadgen', 'ab', 'wrk-t1', 'h2load']
        : c > 1 ? ['loadgen', alt, 'ab', 'wrk', 'wrk-t1', 'h2load'] : ['loadgen', 'ab', 'wrk', 'h2load'],
    });

    // 2. Pinned: nginx with one worker, it and its master on CPU 0; the
    // client on CPU 1. Put back as it was afterwards, also on failure.
    const nginxScript = path.join(ctx.root, 'scripts/nginx');
    const setNginx = async (workersWanted, cpuList) => {
      await run(nginxScript, ['start'], { env: { ZB_NGINX_WORKERS: workersWanted }, log: ctx.logFile, timeoutS: 60 });
      const master = pidInFile(ng.pidFile);
      if (!master) throw new Error(`nginx: no pid in ${ng.pidFile}`);
      for (const pid of [master, ...childrenOf(master)])
        await run('taskset', ['-a', '-p', '-c', cpuList, String(pid)], { log: ctx.logFile, timeoutS: 10 });
    };
    const allCpus = `0-${cpus - 1}`;
    const unpin = atCleanup(() => setNginx('auto', allCpus));
    await setNginx('1', '0');
    let pinned;
    try {
      pinned = await section('pinned', {
        cs: ctx.quick ? [10] : [10, 100], url: httpUrl, pin: ['taskset', '-c', '1'], share: 0.25,
        clients: () => ['loadgen', 'wrk-t1', 'h2load'],
      });
    } finally {
      await setNginx('auto', allCpus);
      await setNginx('auto', allCpus);      // again: workers forked during the first are pinned too
      unpin();
    }

    // 3. https, as they come.
    const tls = await section('https', {
      cs: [10], url: httpsUrl, share: 0.25,
      clients: () => ctx.quick ? ['loadgen', 'wrk-t1'] : ['loadgen', 'loadgen-resume', 'wrk-t1', 'h2load'],
    });
    const elapsed = Math.round((Date.now() - t0) / 1000);

    // The median of one figure a cell's runs recorded beside req/s (cpu,
    // serverCore, sleeps), over the runs that have it; NaN when none do.
    const extraMedian = (cells, k, f) => {
      const c = cells.get(k);
      const v = c ? c.extras.map(f).filter(Number.isFinite) : [];
      return v.length ? median(v) : NaN;
    };
    // A section's table, with loadgen's ratios to the better wrk, to h2load
    // and to ab (same -c and keep-alive).
    const render = ({ cells, rows }) => {
      const med = k => cells.median(k);
      const extra = (k, f) => extraMedian(cells, k, f);
      const cpu = k => extra(k, e => e.cpu);
      const best = (names, c, ka) => Math.max(...names.map(w => med(`${w} ${c} ${ka}`)).filter(Number.isFinite), 0);
      const name = (cl, c) => cl === 'loadgen' ? `loadgen (${lgThreads} thread${lgThreads === 1 ? '' : 's'})`
        : cl === 'loadgen-resume' ? 'loadgen --tls-resume'
        : cl.startsWith('loadgen-t') ? `loadgen --threads ${cl.slice(9)}`
        : cl === 'wrk' && c > 1 ? 'wrk -t 2' : cl === 'wrk-t1' ? 'wrk -t 1' : cl === 'h2load' ? 'h2load --h1 -t 1' : cl;
      const core = k => { const v = extra(k, e => e.serverCore); return Number.isFinite(v) ? `${(100 * v).toFixed(0)}%` : ''; };
      const sleeps = k => { const v = extra(k, e => e.sleeps); return Number.isFinite(v) ? v.toFixed(2) : ''; };
      const pinnedRows = rows.some(([cl, c, ka]) => core(`${cl} ${c} ${ka}`));
      const body = rows.map(([cl, c, ka]) => {
        const k = `${cl} ${c} ${ka}`;
        const lg = cl.startsWith('loadgen');
        const ratio = names => { const b = best(names, c, ka); return lg && b ? fmtRatio(med(k) / b) : ''; };
        return [name(cl, c), c, ka, fmtCell(cells.get(k)), Number.isFinite(cpu(k)) ? cpu(k).toFixed(2) : '-',
                ...(pinnedRows ? [core(k), sleeps(k)] : []), ratio(['wrk', 'wrk-t1']), ratio(['h2load']), ratio(['ab'])];
      });
      body.forEach((row, i) => row.push(fmtErrors(cells.get(rows[i].join(' ')))));
      return [table(['client', 'c', 'keep-alive', 'answered req/s median [95% CI]', 'CPU µs/req',
                     ...(pinnedRows ? ['nginx core busy', 'client sleeps/req'] : []), 'loadgen/wrk', 'loadgen/h2load',
                     'loadgen/ab', 'errors'], body, pinnedRows ? 'lrlrrrrrrrl' : 'lrlrrrrrl'),
              errorNote(rows.map(r => cells.get(r.join(' ')))), '', cells.machineNote()].join('\n');
    };

    // From the pinned table: loadgen's rate over wrk's and h2load's, its CPU
    // per request against theirs.
    const targets = [];
    for (const c of ctx.quick ? [10] : [10, 100]) for (const ka of ['yes', 'no']) {
      const u = k => extraMedian(pinned.cells, `${k} ${c} ${ka}`, e => e.cpu);
      // Same-round ratios: the pinned rate without keep-alive swings between
      // runs with the machine's state for every client alike (docs/LOADGEN.md).
      const paired = peer => {
        const { value, summary: s } = pinned.cells.sameRoundRatio(`loadgen ${c} ${ka}`, `${peer} ${c} ${ka}`);
        return { median: value, text: !s ? 'no paired rounds' : `${s.n} rounds, range ${s.min.toFixed(2)}-${s.max.toFixed(2)}` +
                 (Number.isFinite(s.lo) ? `, 95% CI ${s.lo.toFixed(2)}-${s.hi.toFixed(2)}` : '') };
      };
      const pw = paired('wrk-t1'), ph = paired('h2load');
      const rw = pw.median, rh = ph.median;
      const ok = x => x >= 1 ? 'as fast or faster' : 'slower';
      targets.push(`- -c ${c}, keep-alive ${ka}: req/s ${rw.toFixed(3)}x wrk (${ok(rw)}; ${pw.text}), ` +
        `${rh.toFixed(3)}x h2load (${ok(rh)}; ${ph.text}); ` +
        `CPU ${u('loadgen').toFixed(2)} µs/req against wrk ${u('wrk-t1').toFixed(2)} and h2load ${u('h2load').toFixed(2)} ` +
        `(${u('loadgen') <= u('wrk-t1') && u('loadgen') <= u('h2load') ? 'at most theirs' : 'more than one of theirs'})`);
    }

    // Data and the plot: every client's answered req/s with its 95% interval,
    // as they come, keep-alive and not, per -c.
    const sections = { 'as they come': unpinned, pinned, https: tls };
    writeCells(ctx.out, 'loadgen', Object.entries(sections).flatMap(([nm, sec]) =>
      sec.cells.keys().map(k => ({ ...sec.cells.get(k), key: `${nm}: ${k}` }))));
    const clientsSeen = [...new Set(unpinned.rows.map(r => r[0]))];
    barPlot(ctx.out, 'loadgen', {
      title: 'Load generators on nginx (a 400-byte file, as they come): answered req/s, bars: 95% CI of the median',
      ylabel: 'answered requests/s (log scale)', log: true, series: clientsSeen,
      groups: [...new Set(unpinned.rows.map(r => `${r[1]} ${r[2]}`))].map(ck => {
        const [c, ka] = ck.split(' ');
        return { label: `c=${c} keep-alive ${ka}`,
                 bars: Object.fromEntries(clientsSeen.map(cl => [cl, unpinned.cells.get(`${cl} ${c} ${ka}`)?.summary])) };
      }),
    });

    const v = versions();
    const h2v = (await run('h2load', ['--version'])).stdout.trim().split('\n')[0] || 'h2load: not found';
    const lgv = (await run(ctx.bin('loadgen'), ['-V'])).stdout.trim().split(' ')[1] || '?';
    const n = (url, c, ka) => requests(url, c, ka);
    return ['## loadgen against ab, wrk and h2load', '',
      `Command: \`${ctx.command('loadgen')}\`, ${elapsed} s of runs. ${v.nginx} (\`scripts/nginx start\`: a 400-byte`,
      `file on 127.0.0.1:${ng.port} and, over TLS 1.3 with a self-signed P-256 certificate, on ${tlsPort}; keep-alive,`,
      `access log off), ${v.ab}, ${v.wrk}, ${h2v}, loadgen ${lgv}.`,
      `Load average at the start: ${load0}. CPU is the client's own user+sys time (GNU time) per completed request:`,
      'on loopback that includes the kernel\'s TCP work done in the client\'s context. The ratios are loadgen\'s',
      'req/s to the better wrk row, to h2load and to ab, at the same -c and keep-alive.', '',
      '### As they come', '',
      `nginx with a worker per core (${workers} here), nothing pinned.`, '',
      render(unpinned), '',
      '### Pinned', '',
      'nginx with one worker, pinned with its master to CPU 0; each client on CPU 1 (`taskset -c 1`). The server',
      'gets one core whatever the client does, so the client\'s own cost decides.', '',
      render(pinned), '',
      'nginx core busy: the share of CPU 0 (nginx\'s) that was busy during the run, median over runs; below 100%',
      'the client, not nginx, was the limit. Client sleeps/req: the client\'s voluntary context switches (GNU time',
      '%w) per request. Each sleep costs the server\'s core a wake-up of the client on the other CPU, an',
      'interrupt that on this virtual machine takes a visible share of nginx\'s time (docs/LOADGEN.md).', '',
      'loadgen against wrk and h2load, pinned: req/s as a ratio, and CPU per request. The req/s ratio is the',
      'median of same-round ratios (loadgen\'s run over the peer\'s in the same round of the interleaving):', '',
      ...targets, '',
      '### HTTPS', '',
      'nginx as in the first table, on its TLS port. Without keep-alive every request opens a TLS connection',
      'with a full handshake (ECDHE X25519, ECDSA P-256), as ab does and a first visit costs; --tls-resume',
      'resumes the thread\'s last session instead. wrk keeps each connection\'s SSL object across reconnects',
      '(SSL_clear), which offers its last session: its rows without keep-alive are resumed handshakes, to be',
      'read against --tls-resume.', '',
      render(tls), '',
      `Commands (N: ${n(httpUrl, 1, 'yes')}/${n(httpUrl, 1, 'no')} at -c 1, ${n(httpUrl, 10, 'yes')}/${n(httpUrl, 10, 'no')} otherwise, keep-alive/not,`,
      `${n(httpsUrl, 10, 'no')} for https without keep-alive; wrk runs for loadgen's time rounded up to a second, S; T is 2,`,
      `or 1 at -c 1 and in the -t 1 rows; -t ${CAP} only caps a run on a busy machine, the same for loadgen and ab):`, '',
      '```',
      `[taskset -c 1] /usr/bin/time -f '%U %S %w' build/bin/loadgen -q [--threads ${alt.slice(9)}] [--tls-resume] [-k] -t ${CAP} -n N -c C URL`,
      `/usr/bin/time -f '%U %S %w' ab -q -r [-k] -t ${CAP} -n N -c C URL`,
      `[taskset -c 1] /usr/bin/time -f '%U %S %w' wrk -t T -c C -d Ss [-H 'Connection: close'] URL`,
      `[taskset -c 1] /usr/bin/time -f '%U %S %w' h2load --h1 -t 1 -c C -n N [-H 'Connection: close'] URL`,
      'ZB_NGINX_WORKERS=1 scripts/nginx start; taskset -a -p -c 0 <nginx master and worker>   # pinned',
      '```', '', explain(ctx, 'loadgen'), '',
      'Why the figures look as they do, and what else was tried: docs/LOADGEN.md.'].join('\n');
  },
};
