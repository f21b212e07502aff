// The crash experiment's checker (docs/CRASH.md): loadgen's --ledger (one
// acknowledged update answer per line, docs/REQUEST-TYPES.md "The ledger")
// and the whole {table}_hits before the run against the table read after
// the restart. A row holds the largest stamp committed to it, so an
// acknowledged (code, stamp) whose row holds a smaller stamp, or no row at
// all, is a write the crash lost; a row no write explains is a state that
// never existed. Stamps are 63-bit: they are BigInts here (JSON's numbers
// would round).

// The acknowledged writes of a ledger's text: {writes: [{code, stamp}],
// bad: [line numbers that are not an update's answer]}. An /update answer
// gives one write, an /updates answer one per element of "written".
export function parseLedger(text) {
  const writes = [], bad = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let obj;
    try {
      // Whole numbers as text first, so that none is rounded.
      obj = JSON.parse(line.replace(/"(stamp|was)":(\d+)/g, '"$1":"$2"'));
    } catch {
      bad.push(i + 1);
      return;
    }
    const items = Array.isArray(obj?.written) ? obj.written : [obj];
    let ok = items.length > 0;
    for (const w of items) {
      if (typeof w?.code === 'string' && /^\d+$/.test(w?.stamp ?? '')) writes.push({ code: w.code, stamp: BigInt(w.stamp) });
      else ok = false;
    }
    if (!ok) bad.push(i + 1);
  });
  return { writes, bad };
}

// The rows of a tab-separated dump "code<TAB>stamp" (psql -tA -F '\t',
// mariadb -N -B, sqlite3 -tabs): Map code -> BigInt stamp. A line that is
// not two such fields throws: the dump must be whole.
export function parseRows(text) {
  const rows = new Map();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const m = line.trim().match(/^(\S+)\t(\d+)$/);
    if (!m) throw new Error(`not a row "code<TAB>stamp": ${JSON.stringify(line.slice(0, 80))}`);
    rows.set(m[1], BigInt(m[2]));
  }
  return rows;
}

// The whole write table after a crash, audited against the table before
// the run (baseline) and the acknowledged writes (ledger order: loadgen
// --threads 1 appends the answers in the order they came). Rows are Maps
// code -> BigInt stamp (parseRows). Stamps are unique and grow with every
// write, whoever draws them (the server's counter or the database's
// sequence), so a stamp of this run is larger than every stamp of the
// baseline. opts.inFlight: how many writes may have been sent and not
// acknowledged when the crash came (loadgen's connections, -c: each has
// one request at a time).
//
// Per row: the baseline's stamp, an acknowledged stamp of its code, or a
// stamp of this run newer than every acknowledged one of its code (a write
// in flight at the crash, committed, its answer lost). Anything else is a
// state that never existed:
//   missing   a row of the baseline that is gone
//   added     a row that was not in the baseline
//   older     a row older than its baseline (a durable state undone)
//   unknown   a stamp that is not the baseline's and no write of this run
//             can have made (not newer than the baseline's stamps, or
//             older than an acknowledged stamp of its code while not one)
//   unacknowledged (more than opts.inFlight of them): more rows changed by
//             unanswered writes than requests can have been in flight
// An acknowledged write is lost when its row holds a smaller stamp (or is
// gone). Acknowledged writes may be lost only as a suffix of the
// acknowledgement order, give or take the writes in flight: a write
// acknowledged after a lost one committed before it only if it was in
// flight when the lost one was acknowledged, so more than inFlight - 1
// writes kept after the first lost one is a recovery to a state that never
// existed (outOfOrder).
//
// Returns {acknowledged, codes (distinct codes written), lost, lostCodes,
// newest, lostNewest, lostOldest (stamps as text), lostFirstAt (the first
// lost write's place in the acknowledgement order, -1: none), examples (up
// to 5 lost writes {code, stamp, row}), rows, baselineRows, missing, added,
// older, unknown, unacknowledged, inFlight, keptAfterLost (acknowledged
// writes kept after the first lost one), stateExisted, findings (a
// sentence each, up to 5 examples in each)}.
export function checkLedger(writes, rows, baseline, opts = {}) {
  const inFlight = opts.inFlight ?? 8;
  const s = x => (x === null ? null : String(x));
  const codes = new Set(), lostCodes = new Set(), examples = [], acked = new Map();
  let lost = 0, newest = null, lostNewest = null, lostOldest = null, lostFirstAt = -1, keptAfterLost = 0;
  let keptExample = null;
  writes.forEach((w, i) => {
    codes.add(w.code);
    if (!acked.has(w.code)) acked.set(w.code, new Set());
    acked.get(w.code).add(w.stamp);
    if (newest === null || w.stamp > newest) newest = w.stamp;
    const row = rows.get(w.code);
    if (row !== undefined && row >= w.stamp) {
      if (lostFirstAt >= 0) {
        keptAfterLost++;
        keptExample ??= { code: w.code, stamp: String(w.stamp), row: String(row), at: i };
      }
      return;
    }
    lost++;
    lostCodes.add(w.code);
    if (lostFirstAt < 0) lostFirstAt = i;
    if (lostNewest === null || w.stamp > lostNewest) lostNewest = w.stamp;
    if (lostOldest === null || w.stamp < lostOldest) lostOldest = w.stamp;
    if (examples.length < 5) examples.push({ code: w.code, stamp: String(w.stamp), row: row === undefined ? null : String(row) });
  });

  // The rows against the baseline.
  let baselineMax = -1n;
  for (const v of (baseline ?? new Map()).values()) if (v > baselineMax) baselineMax = v;
  const kinds = { missing: [], added: [], older: [], unknown: [], unacknowledged: [] };
  if (baseline) {
    for (const [code, was] of baseline) {
      const row = rows.get(code);
      if (row === undefined) { kinds.missing.push({ code, was: String(was) }); continue; }
      if (row === was || acked.get(code)?.has(row)) continue;
      const e = { code, was: String(was), row: String(row) };
      if (row < was) kinds.older.push(e);
      else if (row <= baselineMax || [...(acked.get(code) ?? [])].some(a => a > row)) kinds.unknown.push(e);
      else kinds.unacknowledged.push(e);
    }
    for (const [code, row] of rows) if (!baseline.has(code)) kinds.added.push({ code, row: String(row) });
  }
  const findings = [];
  const say = (list, what) => {
    if (list.length) findings.push(`${list.length} ${what}: ${list.slice(0, 5).map(e => JSON.stringify(e)).join(', ')}`);
  };
  say(kinds.missing, 'rows of the baseline missing');
  say(kinds.added, 'rows not in the baseline');
  say(kinds.older, 'rows older than the baseline');
  say(kinds.unknown, 'rows holding a stamp no write of the run made');
  if (kinds.unacknowledged.length > inFlight)
    say(kinds.unacknowledged, `rows changed by unanswered writes, more than the ${inFlight} that can be in flight`);
  if (keptAfterLost > inFlight - 1)
    findings.push(`${keptAfterLost} acknowledged writes kept after the first lost one (${examples[0].code} ` +
                  `${examples[0].stamp}, acknowledged #${lostFirstAt + 1}), more than the ${inFlight - 1} in flight ` +
                  `beside it: e.g. ${JSON.stringify(keptExample)}`);
  return {
    acknowledged: writes.length, codes: codes.size, lost, lostCodes: lostCodes.size,
    newest: s(newest), lostNewest: s(lostNewest), lostOldest: s(lostOldest), lostFirstAt, examples,
    rows: rows.size, baselineRows: baseline ? baseline.size : null,
    missing: kinds.missing.length, added: kinds.added.length, older: kinds.older.length, unknown: kinds.unknown.length,
    unacknowledged: kinds.unacknowledged.length, inFlight, keptAfterLost,
    stateExisted: findings.length === 0, findings,
  };
}

// MariaDB's CHECK TABLE output (mariadb -N -B: Table, Op, Msg_type,
// Msg_text a line): {ok, messages: ["Msg_type: Msg_text", ...]}. ok when
// the last status says OK, as CHECK TABLE's verdict is its last row.
export function parseCheckTable(text) {
  const messages = [];
  let verdict = '';
  for (const line of text.split('\n')) {
    const f = line.split('\t');
    if (f.length < 4) continue;
    messages.push(`${f[2]}: ${f.slice(3).join('\t')}`);
    if (f[2] === 'status') verdict = f.slice(3).join('\t');
  }
  return { ok: verdict === 'OK', messages };
}
