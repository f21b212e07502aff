// The HTTP load clients every experiment drives: the bundled loadgen
// (--json) and ab (whose report is parsed: it has no JSON), one run each.
// Both give the same report, which lib/goodput.mjs turns into a rate:
//   {rps: the client's own rate (every answer), seconds, completed (answers
//    of any status), non2xx, status: {code: count} or null,
//    failed: {connect, receive, send, timeout, exceptions, length}, ...}
import fs from 'node:fs';
import { run, runJSON, isStopping } from './run.mjs';
import { rateRun } from './goodput.mjs';

// loadgen: the report (cpuUsPerReq and the JSON beside it) or null when it failed.
export async function loadgen(ctx, { url, c, seconds, requests, keepalive = true, keys, seed, threads, miss, extra = [] }) {
  const args = ['-q', '--json', '-c', String(c)];
  if (keepalive) args.push('-k');
  if (seconds) args.push('-t', String(seconds));
  if (requests) args.push('-n', String(requests));
  if (threads) args.push('--threads', String(threads));
  if (keys && url.includes('{key}')) args.push('--keys', keys, '--seed', String(seed ?? Math.floor(Math.random() * 1e6)));
  if (miss) args.push('--miss', String(miss));
  args.push(...extra, url);
  const r = await runJSON(ctx.bin('loadgen'), args, { log: ctx.logFile, timeoutS: (seconds || 60) * 4 + 60 });
  const j = r.json[0];
  // (a run a signal refused or ended is no failure worth a line)
  if (!j) { if (!isStopping()) ctx.log(`loadgen ${url} -c ${c}: exit ${r.code}: ${r.stderr.trim().split('\n').pop()}`); return null; }
  return loadgenReport(j);
}

// loadgen's --json as a report. A per-status count and a goodput of its own
// are taken where this loadgen prints them (status_counts / statuses /
// status; goodput_rps / goodput), detected at run time.
export function loadgenReport(j) {
  const statusOf = [j.status_counts, j.statuses, j.status].find(x => x && typeof x === 'object' && !Array.isArray(x));
  const own = [j.goodput_rps, j.goodput].find(x => typeof x === 'number');
  return { rps: j.rps, seconds: j.seconds, complete: j.completed, completed: j.completed, non2xx: j.non2xx || 0,
           status: statusOf || null,
           failed: { connect: j.failed_connect || 0, receive: j.failed_receive || 0, send: j.failed_send || 0,
                     timeout: j.failed_timeout || 0, exceptions: j.failed_exceptions || 0,
                     length: j.length_mismatch || 0 },
           ownGoodput: own ?? null, cpuUsPerReq: j.cpu_us_per_req, json: j,
           // the old fields, for the callers that read them
           errors: (j.failed || 0) + (j.non2xx || 0) };
}

// ab: the report, or null when ab printed none. ab counts answers of
// another length than the first as failed ("Length"); lookup bodies differ
// in length, so those count as answers.
export async function ab(ctx, { url, c, seconds, requests = 50000000, keepalive = true }) {
  const args = ['-q'];
  if (keepalive) args.push('-k');
  if (seconds) args.push('-t', String(Math.max(1, Math.round(seconds))));   // -t before -n: ab resets -n otherwise
  args.push('-n', String(requests), '-c', String(c), url);
  const r = await run('ab', args, { log: ctx.logFile, timeoutS: (seconds || 60) * 4 + 60 });
  return parseAb(r.stdout);
}

// ab's report (its text) as a report. "Complete requests" counts a
// request whose receive failed too (ab closes it as done): those are taken
// out of completed, so that completed holds the answers ab read whole.
export function parseAb(text) {
  const num = re => { const m = text.match(re); return m ? Number(m[1]) : 0; };
  const rps = num(/^Requests per second:\s+([\d.]+)/m);
  if (!/^Requests per second:/m.test(text)) return null;
  const m = text.match(/\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)/);
  const [connect, receive, length, exceptions] = m ? m.slice(1).map(Number) : [0, 0, 0, 0];
  const complete = num(/^Complete requests:\s+(\d+)/m);
  const non2xx = num(/^Non-2xx responses:\s+(\d+)/m);
  return { rps, seconds: num(/^Time taken for tests:\s+([\d.]+) seconds/m), complete,
           completed: Math.max(0, complete - receive), non2xx, status: null,
           failed: { connect, receive, send: 0, timeout: 0, exceptions, length },
           failedTotal: num(/^Failed requests:\s+(\d+)/m),
           keepalive: num(/^Keep-Alive requests:\s+(\d+)/m),
           // the old fields, for the callers that read them
           errors: non2xx + connect + receive + exceptions };
}

// How long a warm-up at concurrency c runs: long enough for a pool to grow
// from its minimum (2) to its hard maximum (32) at PostgreSQL's 26-57 ms of
// CPU per connect (1-1.7 s of it at c 100, DECISIONS.md): 2 s at c >= 32,
// else 1 s; 0.3 s with --quick, which only proves the path.
export const warmSeconds = (ctx, c = 1) => ctx.warmS ?? (ctx.quick ? 0.3 : c >= 32 ? 2 : 1);

// A short run at the cell's concurrency that grows what serves it (the
// server's pool, pgpool-II's children, PHP's persistent connections) before
// a measured run: loadgen where it is built, else ab. Its goodput and
// errors (rateRun), or NaN. For Cells' meta.warm: never a measured value.
// extra: loadgen's own arguments of the measured runs (-m POST, --dist).
export async function warmRun(ctx, { url, c, keys, keepalive = true, miss, extra = [] }) {
  const seconds = warmSeconds(ctx, c);
  const useLoadgen = fs.existsSync(ctx.bin('loadgen'));
  const r = useLoadgen
    ? await loadgen(ctx, { url: keys ? url : url.replace('{key}', 'random'), c, seconds, keys, keepalive, seed: 1, extra })
    : await ab(ctx, { url: url.replace('{key}', 'random'), c, seconds: 1, requests: Math.max(c * 50, 500), keepalive });
  return rateRun(r, { miss: !!miss });
}
