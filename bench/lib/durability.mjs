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
export const KEYS = {
  sqlite: { journal_mode: ['delete', 'wal'], synchronous: ['full', 'normal', 'off'] },
  pg: { synchronous_commit: ['on', 'off', 'local', 'remote_write'], fsync: ['on', 'off'] },
  innodb: { innodb_flush_log_at_trx_commit: ['0', '1', '2'] },
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

// The settings that promise every acknowledged write survives both kinds
// of crash (docs/CRASH.md): a loss under them is a finding.
export const DURABLE = new Set(['sqlite journal_mode=delete,synchronous=full', 'sqlite journal_mode=wal,synchronous=full',
                                'pg synchronous_commit=on,fsync=on', 'innodb innodb_flush_log_at_trx_commit=1']);


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

// "median [min-max]" of whole numbers or shares ('' for none).
export function spread(xs) {
  if (!xs.length) return '';
  const s = [...xs].sort((a, b) => a - b);
  const med = s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  const f = x => (Number.isInteger(x) ? String(x) : x.toFixed(1));
  return s[0] === s.at(-1) ? f(med) : `${f(med)} [${f(s[0])}-${f(s.at(-1))}]`;
}

// The crash experiment's runs (its results.jsonl objects) grouped by
// backend, setting and kind: Map "B SETTING KIND" -> {backend, setting,
// kind, durable, runs (completed), errors, losing (runs that lost an
// acknowledged write), acknowledged, lost, lostPct (per run, spread()),
// integrity (text)}.
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
    const ok = rs.filter(r => !r.error);
    const checked = ok.filter(r => r.integrity), bad = checked.filter(r => !r.integrity.ok);
    out.set(k, {
      backend, setting, kind, durable: DURABLE.has(`${backend} ${setting}`), runs: ok.length, errors: rs.length - ok.length,
      losing: ok.filter(r => r.lost > 0).length,
      acknowledged: spread(ok.map(r => r.acknowledged)), lost: spread(ok.map(r => r.lost)),
      lostPct: spread(ok.filter(r => r.acknowledged > 0).map(r => 100 * r.lost / r.acknowledged)),
      integrity: !checked.length ? '' : bad.length ? `${bad.length} of ${checked.length} failed: ${bad[0].integrity.messages.join('; ').slice(0, 120)}`
                                                   : `${checked.length} ok`,
    });
  }
  return out;
}
