// Each backend's durability settings: the rows of the crash experiment
// (bench/crash.mjs, docs/CRASH.md) and of the durability experiment
// (experiments/durability.mjs), so that the two tables join.
// Every backend's settings, the experiment's rows (docs/REQUEST-TYPES.md).
export const SETTINGS = {
  sqlite: ['delete', 'wal'].flatMap(j => ['full', 'normal', 'off'].map(s => `journal_mode=${j},synchronous=${s}`)),
  pg: ['on', 'off'].flatMap(f => ['on', 'off'].map(c => `synchronous_commit=${c},fsync=${f}`)),
  innodb: [1, 2, 0].map(n => `innodb_flush_log_at_trx_commit=${n}`),
  myisam: ['as-is'],
};
// The crash experiment's settings: the durability experiment's, and InnoDB
// at 1 without its doublewrite buffer (what guards its pages against a
// torn write; a server start setting, bench/crash.mjs restarts for it).
export const CRASH_SETTINGS = { ...SETTINGS, innodb: [...SETTINGS.innodb, 'innodb_flush_log_at_trx_commit=1,innodb_doublewrite=off'] };
export const KEYS = {
  sqlite: { journal_mode: ['delete', 'wal'], synchronous: ['full', 'normal', 'off'] },
  pg: { synchronous_commit: ['on', 'off', 'local', 'remote_write'], fsync: ['on', 'off'] },
  innodb: { innodb_flush_log_at_trx_commit: ['0', '1', '2'], innodb_doublewrite: ['on', 'off'] },
  myisam: {},
};
// "k=v,k=v" of backend b as {k: v}, checked against KEYS; "as-is" or "": {}.
export function parseSetting(b, text) {
  const out = {};
  if (!text || text === 'as-is') return out;
  for (const kv of text.split(',')) {
    const m = kv.trim().match(/^([a-z_]+)=([a-z0-9_]+)$/i);
    if (!m) throw new Error(`--setting: '${kv}' is not NAME=VALUE`);
    const allowed = KEYS[b][m[1]];
    if (!allowed) throw new Error(`--setting: ${b} has no setting ${m[1]} (${Object.keys(KEYS[b]).join(', ') || 'none: as-is'})`);
    if (!allowed.includes(m[2].toLowerCase())) throw new Error(`--setting: ${m[1]} is one of ${allowed.join(', ')}`);
    out[m[1]] = m[2].toLowerCase();
  }
  return out;
}

// The settings that promise every acknowledged write survives a crash
// (docs/CRASH.md): a loss under them is a finding.
export const DURABLE = new Set(['sqlite journal_mode=delete,synchronous=full', 'sqlite journal_mode=wal,synchronous=full',
                                'pg synchronous_commit=on,fsync=on', 'innodb innodb_flush_log_at_trx_commit=1',
                                'innodb innodb_flush_log_at_trx_commit=1,innodb_doublewrite=off']);

// The environment a database server of the crash experiment starts with
// for a setting (scripts/db's ZB_MY_SETTINGS): what cannot change while it
// runs. {} when nothing.
export function startEnv(b, setting) {
  const st = parseSetting(b, setting);
  return st.innodb_doublewrite === 'off' ? { ZB_MY_SETTINGS: 'innodb_doublewrite = 0' } : {};
}


// The setting as the server's --set arguments (SQLite's keys are the
// server's; the others are the database server's, set by SQL).
export const sqliteSets = setting =>
  Object.entries(parseSetting('sqlite', setting)).flatMap(([k, v]) => ['--set', `sqlite.${k}=${v}`]);

// The SQL that puts a setting in force on a running database server, as
// its administrator (the names and values are KEYS', never a request's):
// PostgreSQL ALTER SYSTEM and a reload, InnoDB SET GLOBAL. RESET_SQL puts
// the servers' own configuration back.
export function settingSql(b, setting) {
  const st = parseSetting(b, setting);
  if (b === 'pg')
    return [...Object.entries(st).map(([n, v]) => `ALTER SYSTEM SET ${n} = '${v}'`), 'SELECT pg_reload_conf()'];
  if (b === 'innodb') return [`SET GLOBAL innodb_flush_log_at_trx_commit = ${st.innodb_flush_log_at_trx_commit ?? '1'}`];
  return [];
}
export const RESET_SQL = {
  pg: ['ALTER SYSTEM RESET synchronous_commit', 'ALTER SYSTEM RESET fsync', 'SELECT pg_reload_conf()'],
  innodb: ['SET GLOBAL innodb_flush_log_at_trx_commit = 1'],
};

// PostgreSQL's reload is the postmaster's, a moment after pg_reload_conf():
// the query a new session asks, and the answer once the setting is in force.
export function pgSettingCheck(setting) {
  const st = parseSetting('pg', setting);
  return { sql: `SELECT ${Object.keys(st).map(n => `current_setting('${n}')`).join(" || ',' || ")}`,
           want: Object.values(st).join(',') };
}

// "median [min-max]" of whole numbers or shares ('' for none); the
// fractions with `digits` decimals.
export function spread(xs, digits = 1) {
  if (!xs.length) return '';
  const s = [...xs].sort((a, b) => a - b);
  const med = s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  const f = x => (Number.isInteger(x) ? String(x) : x.toFixed(digits));
  return s[0] === s.at(-1) ? f(med) : `${f(med)} [${f(s[0])}-${f(s.at(-1))}]`;
}

// The crash experiment's kinds of crash: a process crash (SIGKILL), and a
// power cut with each of powerfs's fault modes (docs/CRASH.md; power is
// clear-cache's).
export const KINDS = ['process', 'power', 'torn-op', 'torn-seq', 'no-dir-sync', 'fsync-eio'];

// The crash experiment's runs (its results.jsonl objects) grouped by
// backend, setting and kind: Map "B SETTING KIND" -> {backend, setting,
// kind, durable, runs (completed: errors apart), errors, startedRuns (the
// database came back), checked (runs whose table was read), losing (runs
// that lost an acknowledged write), audited (runs whose table was audited
// against its baseline), existed (of them, those that recovered to a state
// that existed), acknowledged, lost, lostPct, recovery (seconds; per run,
// spread()), integrity (text), corrupt (runs whose check failed),
// faultOutcomes (text: torn-op's variants, fsync-eio's verdicts)}. Runs
// recorded before the audit (no stateExisted) count as not audited.
export function crashCells(results) {
  const groups = new Map();
  for (const r of results) {
    const k = `${r.backend} ${r.setting} ${r.kind}`;
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(r);
  }
  const out = new Map();
  for (const [k, rs] of groups) {
    const { backend, setting, kind } = rs[0];
    const ok = rs.filter(r => !r.error), read = ok.filter(r => r.started !== false);
    const checked = read.filter(r => r.integrity), bad = checked.filter(r => !r.integrity.ok);
    const audited = read.filter(r => typeof r.stateExisted === 'boolean');
    const counts = xs => [...xs.reduce((m, x) => m.set(x, (m.get(x) || 0) + 1), new Map())].map(([x, n]) => `${x}: ${n}`).join(', ');
    out.set(k, {
      backend, setting, kind, durable: DURABLE.has(`${backend} ${setting}`), runs: ok.length, errors: rs.length - ok.length,
      startedRuns: read.length, checked: read.length, losing: read.filter(r => r.lost > 0).length,
      audited: audited.length, existed: audited.filter(r => r.stateExisted).length,
      acknowledged: spread(ok.map(r => r.acknowledged)), lost: spread(read.map(r => r.lost)),
      lostPct: spread(read.filter(r => r.acknowledged > 0).map(r => 100 * r.lost / r.acknowledged)),
      recovery: spread(ok.filter(r => r.recoveryS != null).map(r => r.recoveryS), 2),
      corrupt: bad.length,
      integrity: !checked.length ? '' : bad.length ? `${bad.length} of ${checked.length} failed: ${bad[0].integrity.messages.join('; ').slice(0, 120)}`
                                                   : `${checked.length} ok`,
      faultOutcomes: kind === 'fsync-eio' ? counts(read.map(r => `${/always/.test(r.fault) ? 'always' : 'once'}: ${r.faultOutcome}`))
        : kind === 'torn-op' ? counts(read.map(r => (/:any/.test(r.fault) ? 'anywhere' : 'at a sector'))) : '',
    });
  }
  return out;
}

// The runs as a row per backend and setting and a column per kind of
// crash: {kinds (those run, in KINDS' order), rows: [{backend, setting,
// durable, cells: text per kind}]}. A cell: "L of N lost", and what else
// went wrong (a state that never existed, no start, a failed integrity
// check), in bold where the setting promises durability.
export function crashMatrix(results) {
  const cells = crashCells(results);
  const kinds = KINDS.filter(k => results.some(r => r.kind === k));
  const rows = new Map();
  for (const g of cells.values()) {
    const key = `${g.backend} ${g.setting}`;
    if (!rows.has(key)) rows.set(key, { backend: g.backend, setting: g.setting, durable: g.durable, cells: kinds.map(() => '') });
    const bad = [g.losing && `${g.losing} lost writes`, g.existed < g.audited && `${g.audited - g.existed} never existed`,
                 g.startedRuns < g.runs && `${g.runs - g.startedRuns} did not start`, g.corrupt && `${g.corrupt} corrupt`].filter(Boolean);
    const text = `${bad.length ? bad.join(', ') : 'all kept'} (${g.runs} runs${g.errors ? `, +${g.errors} errors` : ''})`;
    rows.get(key).cells[kinds.indexOf(g.kind)] = g.durable && bad.length ? `**${text}**` : text;
  }
  return { kinds, rows: [...rows.values()] };
}
