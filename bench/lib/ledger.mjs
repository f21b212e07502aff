// The crash experiment's checker (docs/CRASH.md): loadgen's --ledger (one
// acknowledged update answer per line, docs/REQUEST-TYPES.md "The ledger")
// against the rows of {table}_hits read after the restart. A row holds the
// largest stamp committed to it, so an acknowledged (code, stamp) whose
// row holds a smaller stamp, or no row at all, is a write the crash lost.
// Stamps are 63-bit: they are BigInts here (JSON's numbers would round).

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

// Each acknowledged write against the rows: {acknowledged, codes (distinct
// codes written), lost (writes whose row holds less, or has no row),
// lostCodes, missing (lost writes whose code has no row), newest (the
// largest acknowledged stamp, as text), lostNewest, lostOldest (as text),
// examples: up to 5 lost writes {code, stamp, row}}. With ack order known
// (the ledger's), lostFirstAt is the index of the first lost write among
// the acknowledged ones in stamp order: how far back the loss reached.
export function checkLedger(writes, rows) {
  const codes = new Set(), lostCodes = new Set(), examples = [];
  let lost = 0, missing = 0, newest = null, lostNewest = null, lostOldest = null;
  const sorted = [...writes].sort((a, b) => (a.stamp < b.stamp ? -1 : a.stamp > b.stamp ? 1 : 0));
  let lostFirstAt = -1;
  sorted.forEach((w, i) => {
    codes.add(w.code);
    if (newest === null || w.stamp > newest) newest = w.stamp;
    const row = rows.get(w.code);
    if (row !== undefined && row >= w.stamp) return;
    lost++;
    lostCodes.add(w.code);
    if (row === undefined) missing++;
    if (lostFirstAt < 0) lostFirstAt = i;
    if (lostNewest === null || w.stamp > lostNewest) lostNewest = w.stamp;
    if (lostOldest === null || w.stamp < lostOldest) lostOldest = w.stamp;
    if (examples.length < 5) examples.push({ code: w.code, stamp: String(w.stamp), row: row === undefined ? null : String(row) });
  });
  const s = x => (x === null ? null : String(x));
  return { acknowledged: writes.length, codes: codes.size, lost, lostCodes: lostCodes.size, missing,
           newest: s(newest), lostNewest: s(lostNewest), lostOldest: s(lostOldest),
           lostFirstAt, examples };
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
