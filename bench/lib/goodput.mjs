// The one rule for every rate the bench records: answered lookups per
// second (goodput). An answer is a 2xx, or a 404 when the run asked for
// misses (--miss, ?miss=); everything else is an error, counted apart by
// kind and never inside the rate. Every experiment that records a rate of
// requests turns its client's report into a cell's run through rateRun().

// The error kinds, in the order tables print them.
export const ERROR_KINDS = [
  ['overload', '503 overload'],   // the server's /stats: a request waited past acquire_timeout_ms
  ['down', '503 down'],           // the server's /stats: the backend was down
  ['non2xx', 'other non-2xx'],    // every other answer that is not one (all non-2xx without /stats)
  ['timeout', 'timeouts'],        // the client gave up waiting (loadgen's failed_timeout)
  ['connect', 'connect/reset'],   // connect, send or receive failed, the connection was reset
];

const n = x => (Number.isFinite(Number(x)) ? Number(x) : 0);

// report: one client run, as lib/clients.mjs gives it:
//   {seconds, completed (answers of any status), non2xx, rps and complete
//    (the client's rate and the count it is of, for the exact time),
//    status: {code: count} or null (a per-status count, where the client has one),
//    failed: {connect, receive, send, timeout, exceptions}}
// opts.miss: 404s were asked for and count as answers.
// opts.server: {overload, down} 503s the server counted during the run (deltas
// of /stats), or null where /stats has no such counters: those two kinds
// are then null ("n/a") and every non-2xx stands in 'non2xx'.
// Returns {value: goodput (answers/s), answered, errors: {kind: count|null},
// total: the errors, missUnsplit: a --miss run whose non-2xx could not be
// told from 404s (all taken as answers)}.
export function goodput(report, { miss = false, server = null } = {}) {
  const completed = n(report.completed), non2xx = n(report.non2xx);
  let answered, other, missUnsplit = false;
  if (report.status && typeof report.status === 'object' && Object.keys(report.status).length) {
    answered = 0;
    for (const [code, count] of Object.entries(report.status)) {
      const c = Number(code);
      if ((c >= 200 && c < 300) || (miss && c === 404)) answered += n(count);
    }
    other = Math.max(0, completed - answered);
  } else if (miss) {
    // no per-status count: a miss run's non-2xx are its 404s
    answered = completed;
    other = 0;
    missUnsplit = non2xx > 0;
  } else {
    answered = Math.max(0, completed - non2xx);
    other = completed - answered;
  }
  const f = report.failed || {};
  const errors = { overload: null, down: null, non2xx: other, timeout: n(f.timeout),
                   connect: n(f.connect) + n(f.receive) + n(f.send) + n(f.exceptions) };
  if (server && (Number.isFinite(server.overload) || Number.isFinite(server.down))) {
    errors.overload = Math.min(other, n(server.overload));
    errors.down = Math.min(other - errors.overload, n(server.down));
    errors.non2xx = other - errors.overload - errors.down;
  }
  const total = ERROR_KINDS.reduce((s, [k]) => s + (errors[k] || 0), 0);
  // The client's own time where its rate gives it more precisely (ab prints
  // the time to the ms): rps = complete / seconds.
  const seconds = n(report.rps) > 0 && n(report.complete) > 0 ? report.complete / report.rps : n(report.seconds);
  return { value: seconds > 0 ? answered / seconds : NaN, answered, errors, total, missUnsplit };
}

// A cell's run from a client's report: {value: goodput, errors, clientRps:
// the rate the client printed (every answer), ...extra}, or NaN when the
// client gave no report. A run whose every request failed is a goodput of 0.
export function rateRun(report, opts = {}, extra = {}) {
  if (!report) return NaN;
  const g = goodput(report, opts);
  return { value: Number.isFinite(g.value) ? g.value : 0, errors: g.errors, clientRps: report.rps,
           missUnsplit: g.missUnsplit, ...extra };
}

// The counters of one backend in the server's /stats that say why a 503
// was given: {overload, down}, each a number, or null when this server's
// /stats has no such counter. Names looked for: a key with the word
// "overload(ed)" and one with "down" (e.g. errors_503_overload, down_503;
// not shutdown),
// in the backend's object or one level below it.
export function serverSplit(backendStats) {
  if (!backendStats || typeof backendStats !== 'object') return { overload: null, down: null };
  const found = { overload: null, down: null };
  const scan = (obj, depth) => {
    for (const [k, v] of Object.entries(obj)) {
      if (typeof v === 'number') {
        for (const kind of ['overload', 'down'])
          if (new RegExp(`(^|_)${kind}(ed)?(_|$)`).test(k.toLowerCase()) && found[kind] === null && !/_ms$|_s$|timeout/.test(k))
            found[kind] = v;
      } else if (v && typeof v === 'object' && !Array.isArray(v) && depth < 1 && !/latency|pool/.test(k)) {
        scan(v, depth + 1);
      }
    }
  };
  scan(backendStats, 0);
  return found;
}

// The difference of two serverSplit()s (after - before), null kinds kept null.
export function splitDelta(before, after) {
  const d = k => (Number.isFinite(before?.[k]) && Number.isFinite(after?.[k]) ? after[k] - before[k] : null);
  return { overload: d('overload'), down: d('down') };
}

// The errors of a cell summed over its runs, the runs set aside for a slow
// host among them (lib/hostprobe.mjs): {kind: count, or null when no run
// could split it}, and total.
export function cellErrors(cell) {
  const sum = Object.fromEntries(ERROR_KINDS.map(([k]) => [k, null]));
  let total = 0, runs = 0;
  for (const e of [...(cell?.extras || []), ...(cell?.slowHost || []).map(r => r.extra)]) {
    if (!e || !e.errors) continue;
    let any = 0;
    for (const [k] of ERROR_KINDS) {
      const v = e.errors[k];
      if (v === null || v === undefined) continue;
      sum[k] = (sum[k] || 0) + v;
      any += v;
    }
    total += any;
    if (any) runs++;
  }
  return { ...sum, total, runs };
}

// "12 (503 overload n/a, 503 down n/a, other non-2xx 12)" for a cell with
// errors, '' for one without: the text of an errors column.
export function fmtErrors(cell) {
  const e = cellErrors(cell);
  if (!e.total) return '';
  const parts = ERROR_KINDS.filter(([k]) => e[k] !== 0).map(([k, label]) => `${label} ${e[k] === null ? 'n/a' : e[k]}`);
  return `${e.total} (${parts.join(', ')})`;
}

// How many cells of a list had errors in any run, and the sentence a table
// prints under it.
export function errorNote(cells) {
  const bad = cells.filter(c => cellErrors(c).total > 0);
  const total = bad.reduce((s, c) => s + cellErrors(c).total, 0);
  return `${bad.length} of ${cells.length} cells had errors (${total} requests in all), marked \`E\`: ` +
    'their rate counts only the answers (2xx, and 404s where misses were asked for); the errors column ' +
    'splits the others by kind (n/a: the server\'s /stats does not tell that kind apart).';
}

// The cells of a data file (the object writeCells wrote) whose runs had
// errors: [{key, total}]. expected(key): true for a cell whose errors are
// what its experiment measures (a pool too small for its load), left out.
export function erroredCells(data, expected = () => false) {
  return Object.entries(data || {})
    .filter(([key, c]) => c && Array.isArray(c.values) && c.errors?.total > 0 && !expected(key))
    .map(([key, c]) => ({ key, total: c.errors.total }));
}
