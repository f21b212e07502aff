/* SQLite: the embedded default. One sqlite3 handle per connection; the
 * server opens them read-only, one per loop (SQLITE_OPEN_NOMUTEX: a
 * connection is only ever used by one thread at a time).
 *
 * The server reads the file while the loader writes it, so a load puts
 * the file in WAL mode before it writes (sqlite_try_load_lock): readers
 * then read their snapshot and never wait for the writer, and a loader
 * killed mid-load leaves only WAL frames no commit owns, which every
 * reader ignores. A file whose writer kept a rollback journal and died
 * mid-transaction has a hot journal, which a read-only connection cannot
 * roll back ("attempt to write a readonly database", for good): it opens
 * the file read-write once to have it rolled back, then reads on
 * (hot_journal_rolled_back).
 *
 * Its own config keys:
 *   busy_timeout_ms  how long a writer's statement (the loader's,
 *                    sqlbench's) waits for another connection's lock before
 *                    it fails with ZB_ERR_BUSY (default 2000); a read-only
 *                    connection never waits (see sqlite_open)
 *   cache_mib        the page cache of a read-only connection, MiB (default
 *                    64). With SQLite's 2 MiB, random lookups on the real
 *                    list (~38 MB on disk) keep re-reading pages with pread:
 *                    the bigger cache took pooled lookups from ~24-42k to
 *                    ~62-64k req/s here. It fills only as pages are read.
 *   journal_mode     delete or wal, synchronous  full, normal or off: applied
 *                    to the server's writing connections (never_wait: the
 *                    writes of POST /update/, docs/REQUEST-TYPES.md), the
 *                    durability the crash experiment's rows run under;
 *                    unset, the file's own and SQLite's default (full). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "names.h"
#include "number.h"

struct db {
    sqlite3 *h;
    int lock_fd;         /* the load locks' file (try_load_lock), or -1 */
    char version[64];
};

struct stmt {
    struct db *db;
    sqlite3_stmt *s;
    int nparams;
};

/* SQLITE_BUSY and SQLITE_LOCKED (primary codes) are lock conflicts; so is
 * a hot journal not rolled back yet (hot_journal_rolled_back met a lock):
 * the statement may be tried again. */
static enum zb_err_kind kind_of(sqlite3 *h)
{
    int code = sqlite3_errcode(h) & 0xff;
    return code == SQLITE_BUSY || code == SQLITE_LOCKED ||
                   sqlite3_extended_errcode(h) == SQLITE_READONLY_ROLLBACK
               ? ZB_ERR_BUSY
               : ZB_ERR_SQL;
}

static int sql_fail(struct db *db, struct zb_err *err, const char *what)
{
    char brief[ZB_SQL_BRIEF + 1];
    return zb_fail(err, kind_of(db->h), "sqlite: %s: %s", zb_sql_brief(what, brief, sizeof brief),
                   sqlite3_errmsg(db->h));
}

/* How long the rollback of a hot journal waits for other connections'
 * locks: a caller that must not block (the server's loops) is held this
 * long once, and tries again later if it was not enough. */
#define ROLLBACK_WAIT_MS 100

/* The last statement of a read-only connection failed on a hot journal
 * (SQLITE_READONLY_ROLLBACK): a read-write connection of our own reads the
 * schema, which rolls the journal back (SQLite does it before any read),
 * and closes. true: done, the statement may be run again. */
static bool hot_journal_rolled_back(struct db *db)
{
    if (sqlite3_extended_errcode(db->h) != SQLITE_READONLY_ROLLBACK)
        return false;
    const char *path = sqlite3_db_filename(db->h, "main");
    sqlite3 *rw = NULL;
    bool done = path && *path &&
                sqlite3_open_v2(path, &rw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) ==
                    SQLITE_OK &&
                sqlite3_busy_timeout(rw, ROLLBACK_WAIT_MS) == SQLITE_OK &&
                sqlite3_exec(rw, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL) ==
                    SQLITE_OK;
    sqlite3_close_v2(rw);
    return done;
}

static int int_key(const char *value, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(value, &end, 10);
    if (end == value || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* The values of journal_mode and synchronous, as the pragmas take them. */
static const char *const journal_modes[] = { "delete", "wal", NULL };
static const char *const sync_modes[] = { "full", "normal", "off", NULL };

static int sqlite_check_key(const char *key, const char *value, char *why, size_t len)
{
    long v, hi;
    const char *const *modes = !strcmp(key, "journal_mode") ? journal_modes
                               : !strcmp(key, "synchronous") ? sync_modes : NULL;
    if (modes) {
        if (conf_choice(modes, value) >= 0)
            return 0;
        char names[64];
        conf_choice_list(modes, names, sizeof names);
        snprintf(why, len, "'%s' is not %s", value, names);
        return -2;
    }
    if (!strcmp(key, "busy_timeout_ms"))
        hi = 600000;
    else if (!strcmp(key, "cache_mib"))
        hi = 65536;
    else
        return -1;
    if (int_key(value, 0, hi, &v) < 0) {
        snprintf(why, len, "'%s' is not an integer in 0..%ld", value, hi);
        return -2;
    }
    return 0;
}

/* A key's value (checked already), or def. */
static long key_or(const struct backend_conf *bc, const char *key, long def)
{
    const char *v = conf_option(bc, key);
    long n;
    return v && int_key(v, 0, LONG_MAX, &n) == 0 ? n : def;
}

/* Process-wide, before SQLite's first use: no memory statistics. They
 * take one mutex around every allocation and free of every connection, so
 * the loops' per-request opens (schema parsing allocates hundreds of
 * times) queue on it (DECISIONS.md: SQLite per-request at c=10). */
static void sqlite_configure(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/* The server's writing connection: its journal_mode and synchronous keys.
 * journal_mode is the file's: the first writing connection (the server's
 * setup of its _hits table, before any lookup opens one) changes it; a
 * later one that cannot (other connections open) finds it changed. */
static void apply_write_modes(struct db *db, const struct backend_conf *bc)
{
    char pragma[64];
    const char *v = conf_option(bc, "journal_mode");
    if (v && conf_choice(journal_modes, v) >= 0) {
        snprintf(pragma, sizeof pragma, "PRAGMA journal_mode = %s", v);
        sqlite3_exec(db->h, pragma, NULL, NULL, NULL);
    }
    v = conf_option(bc, "synchronous");
    if (v && conf_choice(sync_modes, v) >= 0) {
        snprintf(pragma, sizeof pragma, "PRAGMA synchronous = %s", v);
        sqlite3_exec(db->h, pragma, NULL, NULL, NULL);
    }
}

static int sqlite_open(const struct backend_conf *bc, struct db **out, struct zb_err *err)
{
    static pthread_once_t configured = PTHREAD_ONCE_INIT;
    pthread_once(&configured, sqlite_configure);
    struct db *db = calloc(1, sizeof *db);
    if (!db)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    db->lock_fd = -1;
    const char *path = bc->path ? bc->path : "build/zipbench.sqlite";
    int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
    flags |= bc->read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    if (sqlite3_open_v2(path, &db->h, flags, NULL) != SQLITE_OK) {
        zb_fail(err, ZB_ERR_CONN, "sqlite: cannot open %s: %s", path,
                db->h ? sqlite3_errmsg(db->h) : "out of memory");
        sqlite3_close(db->h);
        free(db);
        return -1;
    }
    /* A writer waits for another's lock (two loads) instead of failing; a
     * reader (the server's, whose loops must not block) never waits: it
     * fails with ZB_ERR_BUSY and its caller tries again later. */
    sqlite3_busy_timeout(db->h, bc->read_only || bc->never_wait
                                    ? 0 : (int)key_or(bc, "busy_timeout_ms", 2000));
    if (!bc->read_only && bc->never_wait)
        apply_write_modes(db, bc);
    long cache_mib = key_or(bc, "cache_mib", 64);
    if (bc->read_only && cache_mib > 0) {
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA cache_size = -%ld", cache_mib * 1024);
        sqlite3_exec(db->h, pragma, NULL, NULL, NULL);
    }
    snprintf(db->version, sizeof db->version, "SQLite %s", sqlite3_libversion());
    *out = db;
    return 0;
}

static void sqlite_close(struct db *db)
{
    if (db->lock_fd >= 0)
        close(db->lock_fd);   /* releases its load locks */
    sqlite3_close_v2(db->h);
    free(db);
}

static bool sqlite_alive(struct db *db) { return db && db->h; }

static int sqlite_exec(struct db *db, const char *sql, struct zb_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(db->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
        char brief[ZB_SQL_BRIEF + 1];
        zb_fail(err, kind_of(db->h), "sqlite: %s: %s", zb_sql_brief(sql, brief, sizeof brief),
                msg ? msg : sqlite3_errmsg(db->h));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static int sqlite_prepare(struct db *db, const char *sql, int nparams, struct stmt **out,
                          struct zb_err *err)
{
    struct stmt *st = calloc(1, sizeof *st);
    if (!st)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    int rc = sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->s, NULL);
    if (rc != SQLITE_OK && hot_journal_rolled_back(db))
        rc = sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->s, NULL);
    if (rc != SQLITE_OK) {
        free(st);
        return sql_fail(db, err, sql);
    }
    st->db = db;
    st->nparams = nparams;
    *out = st;
    return 0;
}

static int sqlite_run(struct stmt *st, const char *const *params, row_fn fn, void *arg,
                      long long *affected, struct zb_err *err)
{
    sqlite3_stmt *s = st->s;
    for (int i = 0; i < st->nparams; i++) {
        int rc = params[i] ? sqlite3_bind_text(s, i + 1, params[i], -1, SQLITE_STATIC)
                           : sqlite3_bind_null(s, i + 1);
        if (rc != SQLITE_OK) {
            sqlite3_reset(s);
            return sql_fail(st->db, err, "bind");
        }
    }
    int ncols = sqlite3_column_count(s);
    const char *vals[64];
    size_t lens[64];
    char reals[64][ZB_REAL_TEXT_MAX];
    if (ncols > 64)
        ncols = 64;
    int rc = sqlite3_step(s), stop = 0;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE && hot_journal_rolled_back(st->db)) {
        sqlite3_reset(s);   /* no row came: run it again from the start */
        rc = sqlite3_step(s);
    }
    while (rc == SQLITE_ROW) {
        if (fn) {
            for (int c = 0; c < ncols; c++) {
                if (sqlite3_column_type(s, c) == SQLITE_FLOAT) {
                    /* The double itself: SQLite's text of it keeps 15 digits
                     * (0.30000000000000004 would be 0.3). */
                    lens[c] = zb_real_text(sqlite3_column_double(s, c), reals[c]);
                    vals[c] = reals[c];
                    continue;
                }
                vals[c] = (const char *)sqlite3_column_text(s, c);
                lens[c] = (size_t)sqlite3_column_bytes(s, c);
            }
            if ((stop = fn(arg, ncols, vals, lens)))
                break;
        }
        rc = sqlite3_step(s);
    }
    if (!stop && rc != SQLITE_DONE) {
        sql_fail(st->db, err, sqlite3_sql(s));
        sqlite3_reset(s);
        return -1;
    }
    if (affected)
        *affected = sqlite3_changes64(st->db->h);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return 0;
}

static void sqlite_finalize(struct stmt *st)
{
    if (st) {
        sqlite3_finalize(st->s);
        free(st);
    }
}

/* One-shot: prepare, run, finalize, the way a page that does not cache
 * statements pays for parsing every time. */
static int sqlite_query(struct db *db, const char *sql, int nparams, const char *const *params,
                        row_fn fn, void *arg, long long *affected, struct zb_err *err)
{
    struct stmt st = { .db = db, .nparams = nparams };
    int rc = sqlite3_prepare_v2(db->h, sql, -1, &st.s, NULL);
    if (rc != SQLITE_OK && hot_journal_rolled_back(db))
        rc = sqlite3_prepare_v2(db->h, sql, -1, &st.s, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(db, err, sql);
    rc = sqlite_run(&st, params, fn, arg, affected, err);
    sqlite3_finalize(st.s);
    return rc;
}

static long long sqlite_bulk_load(struct db *db, const struct zb_table *table, rows_fn next,
                                  void *arg, struct zb_err *err)
{
    char sql[512];
    struct stmt *st;
    if (zb_insert_sql(sql, sizeof sql, table, 1) < 0)
        return zb_fail(err, ZB_ERR_INPUT, "table name too long");
    if (sqlite_prepare(db, sql, table->ncols, &st, err) < 0)
        return -1;
    long long rows = 0;
    const char *const *fields;
    int rc;
    while ((rc = next(arg, &fields, err)) == 1) {
        if (sqlite_run(st, fields, NULL, NULL, NULL, err) < 0) {
            if (err && err->kind == ZB_ERR_SQL)
                err->row = rows + 1;
            rc = -1;
            break;
        }
        rows++;
    }
    sqlite_finalize(st);
    return rc < 0 ? -1 : rows;
}

static int pragma_text(struct db *db, const char *sql, char *out, size_t len)
{
    sqlite3_stmt *s;
    out[0] = 0;
    if (sqlite3_prepare_v2(db->h, sql, -1, &s, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
        snprintf(out, len, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return 0;
}

static int sqlite_set_sync(struct db *db, enum zb_sync level, char *desc, size_t desclen,
                           struct zb_err *err)
{
    static const char *const pragma[] = {
        [ZB_SYNC_FULL] = "PRAGMA synchronous=FULL",
        [ZB_SYNC_NORMAL] = "PRAGMA synchronous=NORMAL",
        [ZB_SYNC_OFF] = "PRAGMA synchronous=OFF",
    };
    if (level != ZB_SYNC_DEFAULT && sqlite_exec(db, pragma[level], err) < 0)
        return -1;
    static const char *const names[] = { "OFF", "NORMAL", "FULL", "EXTRA" };
    char sync[32], journal[32];
    pragma_text(db, "PRAGMA synchronous", sync, sizeof sync);
    pragma_text(db, "PRAGMA journal_mode", journal, sizeof journal);
    int s = atoi(sync);
    snprintf(desc, desclen, "synchronous=%s journal_mode=%s", s >= 0 && s <= 3 ? names[s] : sync,
             journal);
    return 0;
}

static long long sqlite_table_bytes(struct db *db, const char *table)
{
    /* dbstat is compiled into Debian's SQLite; fall back to the whole file. */
    char out[32];
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db->h,
                           "SELECT sum(d.pgsize) FROM dbstat d JOIN sqlite_schema m "
                           "ON d.name = m.name WHERE m.tbl_name = ?",
                           -1, &s, NULL) == SQLITE_OK) {
        sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
        long long bytes = -1;
        if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
            bytes = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        if (bytes >= 0)
            return bytes;
    }
    if (pragma_text(db, "PRAGMA page_count", out, sizeof out) < 0)
        return -1;
    long long pages = atoll(out);
    pragma_text(db, "PRAGMA page_size", out, sizeof out);
    return pages * atoll(out);
}

static const char *sqlite_version(struct db *db) { return db->version; }

/* The stamp: one more than the largest the table holds (its index makes
 * that one step), unique as SQLite has one writer at a time; RETURNING is
 * SQLite 3.35's. */
static int sqlite_stamp_sql(const char *table, char *write, size_t len)
{
    int n = snprintf(write, len, "UPDATE %s SET stamp = (SELECT COALESCE(MAX(stamp), 0) + 1 FROM "
                     "%s) WHERE zip_code = ? RETURNING stamp", table, table);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int sqlite_stamp_setup(struct db *db, const char *table, struct zb_err *err)
{
    char sql[512];
    snprintf(sql, sizeof sql, "CREATE INDEX IF NOT EXISTS %s_stamp ON %s (stamp)", table, table);
    return sqlite_exec(db, sql, err);
}

static const char *sqlite_create_suffix(struct db *db)
{
    (void)db;
    return "";
}

/* The swap and its record, one transaction (names are plain identifiers,
 * conf.c's, so they go into the SQL as they are). */
static int sqlite_swap_table(struct db *db, const char *from, const char *to, long long rows,
                             long long *generation, struct zb_err *err)
{
    char sql[1024];
    snprintf(sql, sizeof sql,
             "BEGIN IMMEDIATE; CREATE TABLE IF NOT EXISTS " ZB_LOADS_TABLE " (name TEXT PRIMARY KEY, "
             "generation INTEGER NOT NULL, rows INTEGER NOT NULL, loaded_at TEXT NOT NULL); "
             "DROP TABLE IF EXISTS %s; ALTER TABLE %s RENAME TO %s; "
             "INSERT INTO " ZB_LOADS_TABLE " VALUES ('%s', 1, %lld, "
             "strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', 'now')) ON CONFLICT (name) DO UPDATE SET "
             "generation = generation + 1, rows = excluded.rows, loaded_at = excluded.loaded_at",
             to, from, to, to, rows);
    long long g = 0;
    if (sqlite_exec(db, sql, err) < 0 ||
        sqlite_query(db, "SELECT generation FROM " ZB_LOADS_TABLE " WHERE name = ?", 1,
                     (const char *const[]){ to }, zb_first_number, &g, NULL, err) < 0 ||
        sqlite_exec(db, "COMMIT", err) < 0) {
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    if (generation)
        *generation = g;
    return 0;
}

/* A load's writer puts the file in WAL mode first (a mode the file keeps):
 * the server's readers then never wait for it nor, after it was killed,
 * need to write. The WAL and its index (-wal, -shm) are kept when the
 * writer closes (SQLITE_FCNTL_PERSIST_WAL): a reader that may not create
 * files beside the database (PHP as www-data) can read a WAL file only
 * while they exist. The WAL is cut to nothing when the writer closes last
 * (journal_size_limit 0, all of it in the file then): such a reader, its
 * WAL index read-only, reads the whole WAL at each transaction. (A
 * checkpoint that empties the WAL while readers read makes them wait.) A
 * file that cannot be put in WAL mode (a file system without shared
 * memory) keeps its journal: the server then rolls a hot one back itself
 * (hot_journal_rolled_back). */
static void journal_for_readers(struct db *db)
{
    char mode[16];
    pragma_text(db, "PRAGMA journal_mode = WAL", mode, sizeof mode);
    sqlite3_exec(db->h, "PRAGMA journal_size_limit = 0", NULL, NULL, NULL);
    int persist = 1;
    sqlite3_file_control(db->h, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
}

/* SQLite has no lock a session holds across transactions (a load in
 * autocommit mode is thousands of them), so the load lock is an open file
 * description lock (F_OFD_SETLK) on one byte of a file beside the
 * database, "<path>-loadlock", at an offset hashed from the table's name:
 * released when the connection closes it or the process dies, and, unlike
 * a POSIX record lock, not by SQLite closing its own descriptors of other
 * files. Two tables whose hashes meet merely load one after the other. */
static int sqlite_try_load_lock(struct db *db, const char *table, struct zb_err *err)
{
    const char *path = sqlite3_db_filename(db->h, "main");
    if (!path || !*path)
        return 1;   /* in memory or temporary: nobody else can see it */
    if (db->lock_fd < 0) {
        char lock_path[PATH_MAX];
        snprintf(lock_path, sizeof lock_path, "%s-loadlock", path);
        db->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (db->lock_fd < 0)
            return zb_fail(err, ZB_ERR_SYS, "sqlite: %s: %s", lock_path, strerror(errno));
    }
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (const char *p = table; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = h & 0x3fffffff,
                        .l_len = 1 };
    if (fcntl(db->lock_fd, F_OFD_SETLK, &fl) == 0) {
        journal_for_readers(db);
        return 1;
    }
    if (errno == EAGAIN || errno == EACCES)
        return 0;
    return zb_fail(err, ZB_ERR_SYS, "sqlite: load lock: %s", strerror(errno));
}

const struct backend_driver backend_sqlite = {
    .name = "sqlite",
    .in_process = true,
    .analyze = "ANALYZE ",
    .check_key = sqlite_check_key,
    .open = sqlite_open,
    .close = sqlite_close,
    .alive = sqlite_alive,
    .exec = sqlite_exec,
    .query = sqlite_query,
    .prepare = sqlite_prepare,
    .run = sqlite_run,
    .finalize = sqlite_finalize,
    .bulk_load = sqlite_bulk_load,
    .set_sync = sqlite_set_sync,
    .table_bytes = sqlite_table_bytes,
    .version = sqlite_version,
    .create_suffix = sqlite_create_suffix,
    .stamp_sql = sqlite_stamp_sql,
    .stamp_setup = sqlite_stamp_setup,
    .swap_table = sqlite_swap_table,
    .generation_sql = "SELECT generation FROM " ZB_LOADS_TABLE " WHERE name = ?",
    .ident_max = 0,   /* no limit */
    .try_load_lock = sqlite_try_load_lock,
};
