/* MySQL/MariaDB through libmariadb, the synchronous side (the loader's and
 * sqlbench's: open, close, bulk load, table size, swap, load lock) and the
 * driver's one struct backend_driver; InnoDB and MyISAM are the same driver
 * with a different ENGINE= on CREATE TABLE. It stands on
 * backend_mysql_conn.c (handles, statements, errors), and names the
 * asynchronous calls (backend_mysql_async.c) and the crash-safe change of
 * the global durability knob (backend_mysql_settings.c) in its table; what
 * they share is backend_mysql.h. */
#include <mysql.h>
#include <mysqld_error.h>
#include <errmsg.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_mysql.h"
#include "names.h"

/* Its own config key: engine, the storage engine of the tables it
 * creates (and what set_sync may tune). */
static int my_check_key(const char *key, const char *value, char *why, size_t len)
{
    if (strcmp(key, "engine"))
        return -1;
    if (strcasecmp(value, "InnoDB") && strcasecmp(value, "MyISAM")) {
        snprintf(why, len, "'%s' is not InnoDB or MyISAM", value);
        return -2;
    }
    return 0;
}

static int my_open(const struct backend_conf *bc, struct db **out, struct zb_err *err)
{
    struct db *db = my_new(bc);
    if (!db)
        return zb_fail(err, ZB_ERR_SYS, "mysql: out of memory");
    unsigned timeout = bc->connect_timeout_s > 0 ? (unsigned)bc->connect_timeout_s : 5;
    /* The library's timeouts are whole seconds, per read or write; none
     * for query_timeout_ms 0 (the loader's and sqlbench's, as with pg): a
     * LOAD DATA of ten million rows into MyISAM sends nothing while it
     * builds the indexes, minutes at a time. */
    unsigned rw_timeout = bc->query_timeout_ms > 0 ? (unsigned)(bc->query_timeout_ms + 999) / 1000 : 0;
    db->read_timeout_s = rw_timeout;
    my_bool on = 1;
    mysql_options(db->h, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    if (rw_timeout) {
        mysql_options(db->h, MYSQL_OPT_READ_TIMEOUT, &rw_timeout);
        mysql_options(db->h, MYSQL_OPT_WRITE_TIMEOUT, &rw_timeout);
    }
    mysql_options(db->h, MYSQL_OPT_LOCAL_INFILE, &on);
    uint64_t t0 = zb_now_ns();
    if (!mysql_real_connect(db->h, my_host(bc), bc->user ? bc->user : "zipbench", bc->password,
                            bc->database ? bc->database : "zipbench",
                            (unsigned)(bc->port > 0 ? bc->port : 3306), bc->socket, 0)) {
        /* Refused at once, or accepted and then never answered (frozen). */
        enum zb_err_kind kind = zb_failure_kind(t0, (uint64_t)timeout * 1000000000u);
        my_connect_failed(db, bc, kind == ZB_ERR_CONN ? my_connect_kind(mysql_errno(db->h)) : kind,
                          err);
        mysql_close(db->h);
        free(db);
        return -1;
    }
    my_connected(db);
    *out = db;
    return 0;
}

static void my_close(struct db *db)
{
    if (db->saved_flush >= 0 && !db->broken)
        my_release_sync(db);
    /* An operation still under way (given up): make its I/O fail first, so
     * that closing never waits on the database. */
    if (db->op != OP_NONE)
        mariadb_cancel(db->h);
    stmt_free(db->prepared);
    stmt_free(db->oneshot);
    mysql_close(db->h);
    free(db);
}

static bool my_alive(struct db *db) { return !db->broken; }

static void my_finalize(struct stmt *st) { stmt_free(st); }

/* LOAD DATA LOCAL INFILE reads its "file" through these callbacks, which
 * pull rows from the loader: nothing is written to disk on the way. */
struct infile {
    int ncols;
    rows_fn next;
    void *arg;
    struct zb_err *err;
    char *row;           /* current row, formatted */
    size_t cap, len, off;
    long long rows;
    bool started, failed;
};

static int infile_init(void **ptr, const char *filename, void *userdata)
{
    (void)filename;
    struct infile *in = userdata;
    in->started = true;
    *ptr = in;
    return 0;
}

static int infile_read(void *ptr, char *buf, unsigned int buf_len)
{
    struct infile *in = ptr;
    unsigned int out = 0;
    while (out < buf_len) {
        if (in->off == in->len) {
            const char *const *fields;
            int rc = in->next(in->arg, &fields, in->err);
            if (rc <= 0) {
                if (rc < 0)
                    in->failed = true;
                return rc < 0 ? -1 : (int)out;
            }
            size_t need = zb_tsv_row_max(in->ncols, fields);
            if (need > in->cap) {
                char *bigger = realloc(in->row, need);
                if (!bigger) {
                    in->failed = true;
                    zb_fail(in->err, ZB_ERR_SYS, "out of memory");
                    return -1;
                }
                in->row = bigger;
                in->cap = need;
            }
            in->len = zb_tsv_row(in->row, in->ncols, fields);
            in->off = 0;
            in->rows++;
        }
        size_t n = in->len - in->off;
        if (n > buf_len - out)
            n = buf_len - out;
        memcpy(buf + out, in->row + in->off, n);
        in->off += n;
        out += (unsigned)n;
    }
    return (int)out;
}

static void infile_end(void *ptr) { (void)ptr; }

static int infile_error(void *ptr, char *msg, unsigned int len)
{
    struct infile *in = ptr;
    snprintf(msg, len, "%s", in->err && in->err->msg[0] ? in->err->msg : "zipbench: load aborted");
    return CR_UNKNOWN_ERROR;
}

/* Fails with the first of the warnings the last statement left, and the
 * row it names. */
static int first_warning(struct db *db, struct zb_err *err, const char *what)
{
    unsigned count = mysql_warning_count(db->h);
    if (mysql_real_query(db->h, "SHOW WARNINGS LIMIT 1", 21) != 0)
        return my_fail(db, err, "SHOW WARNINGS");
    MYSQL_RES *r = mysql_store_result(db->h);
    MYSQL_ROW w = r ? mysql_fetch_row(r) : NULL;  /* Level, Code, Message */
    if (w && w[0] && w[1] && w[2]) {
        zb_fail(err, ZB_ERR_SQL, "mysql: %s: %s: %s (%s; %u warning%s in all)", what, w[0], w[2],
                w[1], count, count == 1 ? "" : "s");
        if (err)
            err->row = row_named_in(w[2]);
    } else {
        zb_fail(err, ZB_ERR_SQL, "mysql: %s: %u warnings", what, count);
    }
    if (r)
        mysql_free_result(r);
    return -1;
}

static long long my_bulk_load(struct db *db, const struct zb_table *table, rows_fn next,
                              void *arg, struct zb_err *err)
{
    struct infile in = { .ncols = table->ncols, .next = next, .arg = arg, .err = err };
    mysql_set_local_infile_handler(db->h, infile_init, infile_read, infile_end, infile_error, &in);
    char sql[512];
    snprintf(sql, sizeof sql,
             "LOAD DATA LOCAL INFILE 'zipbench-rows' INTO TABLE %s CHARACTER SET utf8mb4 "
             "FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n'", table->name);
    int rc = mysql_real_query(db->h, sql, strlen(sql));
    mysql_set_local_infile_default(db->h);
    free(in.row);
    if (rc != 0) {
        unsigned e = mysql_errno(db->h);
        if (!in.started && (e == ER_NOT_ALLOWED_COMMAND || e == ER_LOAD_INFILE_CAPABILITY_DISABLED))
            /* The server refuses LOCAL INFILE: multi-row prepared INSERTs. */
            return zb_insert_batches(&backend_mysql, db, table, 100, next, arg, err);
        if (in.failed)
            return -1; /* err already says which row */
        return my_fail(db, err, "LOAD DATA");
    }
    if (in.failed)   /* the server took the rows before it; the caller drops them */
        return -1;
    long long loaded = (long long)mysql_affected_rows(db->h);
    /* LOCAL input cannot be stopped half way, so even in strict mode the
     * server takes a value that does not fit with a warning (as IGNORE
     * would): any warning fails the load. */
    if (mysql_warning_count(db->h) > 0)
        return first_warning(db, err, "LOAD DATA");
    if (loaded != in.rows)
        return zb_fail(err, ZB_ERR_SQL, "mysql: LOAD DATA took %lld of %lld rows", loaded, in.rows);
    return loaded;
}

static long long my_table_bytes(struct db *db, const char *table)
{
    const char *params[] = { table };
    long long bytes = -1;
    struct stmt *st;
    /* InnoDB's sizes in information_schema are estimates refreshed by ANALYZE. */
    char sql[256];
    snprintf(sql, sizeof sql, "ANALYZE TABLE %s", table);
    my_exec(db, sql, NULL);
    if (my_prepare(db, "SELECT data_length + index_length FROM information_schema.TABLES "
                       "WHERE table_schema = DATABASE() AND table_name = ?", 1, &st, NULL) < 0)
        return -1;
    if (my_run(st, params, zb_first_number, &bytes, NULL, NULL) < 0)
        bytes = -1;
    stmt_free(st);
    return bytes;
}

static const char *my_version(struct db *db) { return db->version; }
static const char *my_create_suffix(struct db *db) { return db->suffix; }

/* The generation of the last load of table: the larger of its record's
 * and its comment's (a swap whose record a crash lost), 0 if neither. */
static long long last_generation(struct db *db, const char *table, struct zb_err *err)
{
    struct text_out t = { 0 }, c = { 0 };
    const char *params[] = { table };
    if (my_query(db, "SELECT COALESCE(MAX(generation), 0) FROM " ZB_LOADS_TABLE
                 " WHERE name = ?", 1, params, first_text, &t, NULL, err) < 0 ||
        my_query(db, "SELECT COALESCE(MAX(CAST(SUBSTRING(TABLE_COMMENT, 15) AS UNSIGNED)), 0) FROM "
                 "information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? "
                 "AND TABLE_COMMENT LIKE 'zipbench load %'", 1, params, first_text, &c, NULL,
                 err) < 0)
        return -1;
    long long a = t.found ? atoll(t.v) : 0, b = c.found ? atoll(c.v) : 0;
    return a > b ? a : b;
}

/* DDL commits on its own here, so the generation goes into the new
 * table's comment, which RENAME carries in its one atomic step (what the
 * server reads: generation_sql); the record in ZB_LOADS_TABLE follows. */
static int my_swap_table(struct db *db, const char *from, const char *to, long long rows,
                         long long *generation, struct zb_err *err)
{
    char sql[512];
    if (my_exec(db, "CREATE TABLE IF NOT EXISTS " ZB_LOADS_TABLE " (name VARCHAR(64) NOT NULL "
                "PRIMARY KEY, generation BIGINT NOT NULL, `rows` BIGINT NOT NULL, loaded_at "
                "DATETIME(3) NOT NULL) ENGINE=InnoDB", err) < 0)
        return -1;
    long long g = last_generation(db, to, err);
    if (g < 0)
        return -1;
    g++;
    snprintf(sql, sizeof sql, "ALTER TABLE %s COMMENT = 'zipbench load %lld'", from, g);
    if (my_exec(db, sql, err) < 0)
        return -1;
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s" ZB_SWAP_SUFFIX, to);
    if (my_exec(db, sql, err) < 0)
        return -1;
    snprintf(sql, sizeof sql, "CREATE TABLE IF NOT EXISTS %s LIKE %s", to, from);
    if (my_exec(db, sql, err) < 0)
        return -1;
    /* RENAME TABLE swaps both names in one atomic step. */
    snprintf(sql, sizeof sql, "RENAME TABLE %s TO %s" ZB_SWAP_SUFFIX ", %s TO %s", to, to, from,
             to);
    if (my_exec(db, sql, err) < 0)
        return -1;
    snprintf(sql, sizeof sql, "DROP TABLE %s" ZB_SWAP_SUFFIX, to);
    if (my_exec(db, sql, err) < 0)
        return -1;
    snprintf(sql, sizeof sql, "INSERT INTO " ZB_LOADS_TABLE " VALUES ('%s', %lld, %lld, "
             "UTC_TIMESTAMP(3)) ON DUPLICATE KEY UPDATE generation = VALUES(generation), "
             "`rows` = VALUES(`rows`), loaded_at = VALUES(loaded_at)", to, g, rows);
    if (my_exec(db, sql, err) < 0)
        return -1;
    if (generation)
        *generation = g;
    return 0;
}

/* The stamp: the next value of a sequence of the table's, taken after
 * the row's lock (InnoDB updates what it locked), and handed back through
 * LAST_INSERT_ID(expr), which the OK packet carries (statement_rows):
 * MariaDB has no UPDATE ... RETURNING. */
static int my_stamp_sql(const char *table, char *write, size_t len)
{
    int n = snprintf(write, len, "UPDATE %s SET stamp = LAST_INSERT_ID(NEXTVAL(%s_stamp)) "
                     "WHERE zip_code = ?", table, table);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int my_stamp_setup(struct db *db, const char *table, struct zb_err *err)
{
    char sql[512];
    struct text_out t = { 0 };
    snprintf(sql, sizeof sql, "CREATE SEQUENCE IF NOT EXISTS %s_stamp", table);
    if (my_exec(db, sql, err) < 0)
        return -1;
    snprintf(sql, sizeof sql, "SELECT COALESCE(MAX(stamp), 0) FROM %s", table);
    if (my_query(db, sql, 0, NULL, first_text, &t, NULL, err) < 0)
        return -1;
    /* SETVAL never moves a sequence back: a writer already past it stays so. */
    snprintf(sql, sizeof sql, "SELECT SETVAL(%s_stamp, %lld)", table,
             t.found ? atoll(t.v) : 0LL);
    return my_query(db, sql, 0, NULL, first_text, &t, NULL, err);
}

/* GET_LOCK is server-wide (names up to 64 characters): one per target
 * table name, released when the session ends, however the loader ended. */
static int my_try_load_lock(struct db *db, const char *table, struct zb_err *err)
{
    char name[128];
    snprintf(name, sizeof name, "zipbench.load.%s", table);
    if (strlen(name) > 64)
        return zb_fail(err, ZB_ERR_INPUT, "mysql: table name %s too long for a lock name", table);
    const char *params[] = { name };
    struct text_out t = { 0 };
    if (my_query(db, "SELECT GET_LOCK(?, 0)", 1, params, first_text, &t, NULL, err) < 0)
        return -1;
    if (!t.found || !t.v[0])
        return zb_fail(err, ZB_ERR_SQL, "mysql: GET_LOCK(%s) failed", name);
    return t.v[0] == '1';
}

const struct backend_driver backend_mysql = {
    .name = "mysql",
    .analyze = "ANALYZE TABLE ",
    .check_key = my_check_key,
    .open = my_open,
    .close = my_close,
    .alive = my_alive,
    .exec = my_exec,
    .query = my_query,
    .prepare = my_prepare,
    .run = my_run,
    .finalize = my_finalize,
    .bulk_load = my_bulk_load,
    .set_sync = my_set_sync,
    .table_bytes = my_table_bytes,
    .version = my_version,
    .create_suffix = my_create_suffix,
    .sized_text = true,
    .text_widths_sql = "SELECT COLUMN_NAME, CASE WHEN DATA_TYPE = 'varchar' THEN "
                       "CHARACTER_MAXIMUM_LENGTH WHEN DATA_TYPE IN ('tinytext', 'text', "
                       "'mediumtext', 'longtext') THEN 0 END FROM information_schema.COLUMNS "
                       "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
    /* The tables' utf8mb4_general_ci ignores case and trailing spaces
     * (PAD SPACE); the key's index is still used (EXPLAIN: ref). */
    .text_key_exact = " COLLATE utf8mb4_nopad_bin",
    .swap_table = my_swap_table,
    .stamp_sql = my_stamp_sql,
    .stamp_setup = my_stamp_setup,
    /* The comment the swap gave the table (my_swap_table). */
    .generation_sql = "SELECT SUBSTRING(TABLE_COMMENT, 15) FROM information_schema.TABLES "
                      "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? "
                      "AND TABLE_COMMENT LIKE 'zipbench load %'",
    .recover = my_recover,
    .ident_max = 64,
    .try_load_lock = my_try_load_lock,
    .async = &my_async,
};
