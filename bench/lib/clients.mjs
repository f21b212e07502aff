// The HTTP load clients every experiment drives: the bundled loadgen
// (--json) and ab (whose report is parsed: it has no JSON), one run each.
import { run, runJSON } from './run.mjs';

// loadgen: {rps, errors, completed, cpuUsPerReq, json} or null when it failed.
export async function loadgen(ctx, { url, c, seconds, requests, keepalive = true, keys, seed, threads, extra = [] }) {
  const args = ['-q', '--json', '-c', String(c)];
  if (keepalive) args.push('-k');
  if (seconds) args.push('-t', String(seconds));
  if (requests) args.push('-n', String(requests));
  if (threads) args.push('--threads', String(threads));
  if (keys && url.includes('{key}')) args.push('--keys', keys, '--seed', String(seed ?? Math.floor(Math.random() * 1e6)));
  args.push(...extra, url);
  const r = await runJSON(ctx.bin('loadgen'), args, { log: ctx.logFile, timeoutS: (seconds || 60) * 4 + 60 });
  const j = r.json[0];
  if (!j) { ctx.log(`loadgen ${url} -c ${c}: exit ${r.code}: ${r.stderr.trim().split('\n').pop()}`); return null; }
  return { rps: j.rps, errors: (j.failed || 0) + (j.non2xx || 0), non2xx: j.non2xx || 0,
           completed: j.completed, cpuUsPerReq: j.cpu_us_per_req, json: j };
}

// ab: {rps, errors, non2xx, completed}. ab counts answers of another length
// than the first as failed; lookup bodies differ in length, so only
// connect, receive and exception failures count as errors here.
export async function ab(ctx, { url, c, seconds, requests = 50000000, keepalive = true }) {
  const args = ['-q'];
  if (keepalive) args.push('-k');
  if (seconds) args.push('-t', String(seconds));   // -t before -n: ab resets -n otherwise
  args.push('-n', String(requests), '-c', String(c), url);
  const r = await run('ab', args, { log: ctx.logFile, timeoutS: (seconds || 60) * 4 + 60 });
  return parseAb(r.stdout);
}

export function parseAb(text) {
  const num = re => { const m = text.match(re); return m ? Number(m[1]) : 0; };
  const rps = num(/^Requests per second:\s+([\d.]+)/m);
  if (!rps) return null;
  const m = text.match(/\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)/);
  const non2xx = num(/^Non-2xx responses:\s+(\d+)/m);
  const exc = m ? Number(m[1]) + Number(m[2]) + Number(m[4]) : 0;
  return { rps, non2xx, errors: non2xx + exc, completed: num(/^Complete requests:\s+(\d+)/m) };
}
