/* MySQL/MariaDB through libmariadb, the synchronous side (the loader's and
 * sqlbench's) and the driver's one struct backend_driver; InnoDB and
 * MyISAM are the same driver with a different ENGINE= on CREATE TABLE.
 * Statements use the binary protocol with string binds; results are
 * fetched into growable buffers. The asynchronous side (the server's) is
 * backend_mysql_async.c, the crash-safe change of the global durability
 * knob backend_mysql_settings.c; what they share is backend_mysql.h. */
#include <mysql.h>
#include <mysqld_error.h>
#include <errmsg.h>
#include <pthread.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_mysql.h"

static pthread_once_t library_once = PTHREAD_ONCE_INIT;
static void library_init(void) { mysql_library_init(0, NULL, NULL); }

static bool conn_errno(unsigned e)
{
    return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST || e == CR_CONNECTION_ERROR ||
           e == CR_CONN_HOST_ERROR || e == CR_SERVER_LOST_EXTENDED || e == ER_CONNECTION_KILLED ||
           e == ER_SERVER_SHUTDOWN;
}

/* A failed connect's kind: refused for good (nothing listens, no socket
 * file, access denied, no such database, shutting down) is ZB_ERR_REFUSED,
 * the backend is down; anything else ("too many connections", a reset
 * under load) is ZB_ERR_CONN. */
enum zb_err_kind my_connect_kind(unsigned e)
{
    return e == CR_CONNECTION_ERROR || e == CR_CONN_HOST_ERROR || e == ER_ACCESS_DENIED_ERROR ||
                   e == ER_DBACCESS_DENIED_ERROR || e == ER_BAD_DB_ERROR || e == ER_SERVER_SHUTDOWN
               ? ZB_ERR_REFUSED
               : ZB_ERR_CONN;
}

/* MariaDB names the row of a multi-row statement (or of LOAD DATA's input)
 * only in its message: "... for column 'town' at row 11". */
static long long row_named_in(const char *msg)
{
    const char *at = strstr(msg, " at row ");
    return at ? strtoll(at + 8, NULL, 10) : 0;
}

static int my_fail_code(struct db *db, struct zb_err *err, const char *what, unsigned e,
                        const char *msg)
{
    if (conn_errno(e))
        db->broken = true;
    /* ER_NEED_REPREPARE: the table changed under a prepared statement (a
     * reload swapped it) and the server gave up re-preparing it itself. */
    enum zb_err_kind kind = conn_errno(e) ? ZB_ERR_CONN
                            : e == ER_LOCK_DEADLOCK || e == ER_LOCK_WAIT_TIMEOUT ? ZB_ERR_BUSY
                            : e == ER_NEED_REPREPARE                            ? ZB_ERR_STALE
                                                                               : ZB_ERR_SQL;
    char brief[ZB_SQL_BRIEF + 1];
    zb_fail(err, kind, "mysql: %s: %s (%u)", zb_sql_brief(what, brief, sizeof brief), msg, e);
    if (err)
        err->row = row_named_in(msg);
    return -1;
}

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

int my_fail(struct db *db, struct zb_err *err, const char *what)
{
    return my_fail_code(db, err, what, mysql_errno(db->h), mysql_error(db->h));
}

int stmt_fail(struct stmt *st, struct zb_err *err, const char *what)
{
    return my_fail_code(st->db, err, what, mysql_stmt_errno(st->s), mysql_stmt_error(st->s));
}

/* A handle with the options both sides share; NULL when out of memory. */
struct db *my_new(const struct backend_conf *bc)
{
    pthread_once(&library_once, library_init);
    struct db *db = calloc(1, sizeof *db);
    if (!db || !(db->h = mysql_init(NULL))) {
        free(db);
        return NULL;
    }
    db->saved_flush = -1;
    const char *engine = conf_option(bc, "engine");
    snprintf(db->engine, sizeof db->engine, "%s", engine ? engine : "InnoDB");
    mysql_options(db->h, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    /* Strict for every table, MyISAM's too: a value that does not fit is an
     * error, never cut to fit with a warning (STRICT_TRANS_TABLES, the
     * default, cuts on MyISAM past a statement's first row). ANSI_QUOTES:
     * "name" quotes a column name, as in PostgreSQL and SQLite. Set on
     * every connect, whatever the server's own sql_mode. */
    mysql_options(db->h, MYSQL_INIT_COMMAND, "SET SESSION sql_mode = 'STRICT_ALL_TABLES,"
                  "ANSI_QUOTES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'");
    if (bc->password_file)   /* its [client] password, as MariaDB's own clients read it */
        mysql_options(db->h, MYSQL_READ_DEFAULT_FILE, bc->password_file);
    return db;
}

const char *my_host(const struct backend_conf *bc)
{
    return bc->socket ? "localhost" : (bc->host ? bc->host : "127.0.0.1");
}

int my_connect_failed(struct db *db, const struct backend_conf *bc, enum zb_err_kind kind,
                             struct zb_err *err)
{
    char why[600];
    return zb_fail(err, kind, "mysql: cannot connect to %s: %s (%u)%s",
                   bc->socket ? bc->socket : my_host(bc), mysql_error(db->h), mysql_errno(db->h),
                   zb_password_file_problem(bc, why, sizeof why));
}

void my_connected(struct db *db)
{
    snprintf(db->suffix, sizeof db->suffix, " ENGINE=%s DEFAULT CHARSET=utf8mb4", db->engine);
    snprintf(db->version, sizeof db->version, "MariaDB %s", mysql_get_server_info(db->h));
}

static int my_open(const struct backend_conf *bc, struct db **out, struct zb_err *err)
{
    struct db *db = my_new(bc);
    if (!db)
        return zb_fail(err, ZB_ERR_SYS, "mysql: out of memory");
    unsigned timeout = bc->connect_timeout_s > 0 ? (unsigned)bc->connect_timeout_s : 5;
    /* The library's timeouts are whole seconds, per read or write. */
    unsigned rw_timeout = bc->query_timeout_ms > 0 ? (unsigned)(bc->query_timeout_ms + 999) / 1000 : 30;
    db->read_timeout_s = rw_timeout;
    my_bool on = 1;
    mysql_options(db->h, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    mysql_options(db->h, MYSQL_OPT_READ_TIMEOUT, &rw_timeout);
    mysql_options(db->h, MYSQL_OPT_WRITE_TIMEOUT, &rw_timeout);
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

int my_exec(struct db *db, const char *sql, struct zb_err *err)
{
    if (mysql_real_query(db->h, sql, strlen(sql)) != 0)
        return my_fail(db, err, sql);
    /* Drain a result, if the statement had one (SET, SHOW...). */
    MYSQL_RES *r = mysql_store_result(db->h);
    if (r)
        mysql_free_result(r);
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

void stmt_free(struct stmt *st)
{
    if (!st)
        return;
    if (st->s)
        mysql_stmt_close(st->s);
    for (int i = 0; st->rbuf && i < st->ncols; i++)
        free(st->rbuf[i]);
    for (int i = 0; st->pbuf && i < st->nparams; i++)
        free(st->pbuf[i]);
    free(st->pbuf); free(st->pcap);
    free(st->pbind); free(st->rbind); free(st->plen); free(st->rlen);
    free(st->rnull); free(st->rerr); free(st->rbuf); free(st->rcap);
    free(st);
}

struct stmt *stmt_new(struct db *db)
{
    struct stmt *st = calloc(1, sizeof *st);
    if (st && !(st->s = mysql_stmt_init(db->h))) {
        free(st);
        st = NULL;
    }
    if (st)
        st->db = db;
    return st;
}

static int my_prepare(struct db *db, const char *sql, int nparams, struct stmt **out,
                      struct zb_err *err)
{
    struct stmt *st = stmt_new(db);
    if (!st)
        return zb_fail(err, ZB_ERR_SYS, "mysql: out of memory");
    if (mysql_stmt_prepare(st->s, sql, strlen(sql)) != 0) {
        stmt_fail(st, err, sql);
        stmt_free(st);
        return -1;
    }
    if (stmt_setup(st, nparams, err) < 0) {
        stmt_free(st);
        return -1;
    }
    *out = st;
    return 0;
}

int stmt_setup(struct stmt *st, int nparams, struct zb_err *err)
{
    st->nparams = nparams;
    MYSQL_RES *meta = mysql_stmt_result_metadata(st->s);
    st->ncols = meta ? (int)mysql_num_fields(meta) : 0;
    if (meta)
        mysql_free_result(meta);
    int np = nparams ? nparams : 1, nc = st->ncols ? st->ncols : 1;
    st->pbind = calloc((size_t)np, sizeof *st->pbind);
    st->plen = calloc((size_t)np, sizeof *st->plen);
    st->rbind = calloc((size_t)nc, sizeof *st->rbind);
    st->rlen = calloc((size_t)nc, sizeof *st->rlen);
    st->rnull = calloc((size_t)nc, sizeof *st->rnull);
    st->rerr = calloc((size_t)nc, sizeof *st->rerr);
    st->rbuf = calloc((size_t)nc, sizeof *st->rbuf);
    st->rcap = calloc((size_t)nc, sizeof *st->rcap);
    st->pbuf = calloc((size_t)np, sizeof *st->pbuf);
    st->pcap = calloc((size_t)np, sizeof *st->pcap);
    if (!st->pbind || !st->plen || !st->rbind || !st->rlen || !st->rnull || !st->rerr ||
        !st->rbuf || !st->rcap || !st->pbuf || !st->pcap)
        return zb_fail(err, ZB_ERR_SYS, "mysql: out of memory");
    for (int c = 0; c < st->ncols; c++) {
        st->rcap[c] = 256;
        if (!(st->rbuf[c] = malloc(st->rcap[c] + 1)))
            return zb_fail(err, ZB_ERR_SYS, "mysql: out of memory");
    }
    return 0;
}

static void bind_results(struct stmt *st)
{
    for (int c = 0; c < st->ncols; c++) {
        MYSQL_BIND *b = &st->rbind[c];
        memset(b, 0, sizeof *b);
        b->buffer_type = MYSQL_TYPE_STRING;
        b->buffer = st->rbuf[c];
        b->buffer_length = st->rcap[c];
        b->length = &st->rlen[c];
        b->is_null = &st->rnull[c];
        b->error = &st->rerr[c];
    }
}

int bind_params(struct stmt *st, const char *const *params, struct zb_err *err)
{
    /* Each value is copied into the parameter's own buffer, which stays
     * bound: a run whose values are all text, as the last one's were, and
     * fit, binds nothing (mysql_stmt_bind_param would send the types
     * again with the next run). */
    bool rebind = !st->pbound;
    for (int i = 0; i < st->nparams; i++) {
        MYSQL_BIND *b = &st->pbind[i];
        if (!params[i]) {
            rebind |= b->buffer_type != MYSQL_TYPE_NULL;
            memset(b, 0, sizeof *b);
            b->buffer_type = MYSQL_TYPE_NULL;
            continue;
        }
        size_t len = strlen(params[i]);
        if (len + 1 > st->pcap[i] || b->buffer_type != MYSQL_TYPE_STRING) {
            size_t cap = len + 1 > 64 ? len + 1 : 64;
            char *buf = len + 1 > st->pcap[i] ? realloc(st->pbuf[i], cap) : st->pbuf[i];
            if (!buf)
                return zb_fail(err, ZB_ERR_SYS, "mysql: out of memory");
            if (buf != st->pbuf[i]) {
                st->pbuf[i] = buf;
                st->pcap[i] = cap;
            }
            memset(b, 0, sizeof *b);
            b->buffer_type = MYSQL_TYPE_STRING;
            b->buffer = st->pbuf[i];
            b->buffer_length = st->pcap[i];
            b->length = &st->plen[i];
            rebind = true;
        }
        memcpy(st->pbuf[i], params[i], len + 1);
        st->plen[i] = len;
    }
    if (st->nparams && rebind) {
        st->pbound = false;
        if (mysql_stmt_bind_param(st->s, st->pbind))
            return stmt_fail(st, err, "bind");
        st->pbound = true;
    }
    return 0;
}

static int run_stmt(struct stmt *st, const char *const *params, row_fn fn, void *arg,
                    long long *affected, struct zb_err *err)
{
    if (bind_params(st, params, err) < 0)
        return -1;
    if (mysql_stmt_execute(st->s))
        return stmt_fail(st, err, "execute");
    if (affected)
        *affected = (long long)mysql_stmt_affected_rows(st->s);
    return st->ncols ? fetch_rows(st, fn, arg, err) : 0;
}

int fetch_rows(struct stmt *st, row_fn fn, void *arg, struct zb_err *err)
{
    if (!st->rbound) {
        bind_results(st);
        if (mysql_stmt_bind_result(st->s, st->rbind))
            return stmt_fail(st, err, "bind result");
        st->rbound = true;
    }
    const char *vals[64];
    size_t lens[64];
    int ncols = st->ncols < 64 ? st->ncols : 64, stop = 0, rc;
    while ((rc = mysql_stmt_fetch(st->s)) == 0 || rc == MYSQL_DATA_TRUNCATED) {
        if (stop)
            continue; /* drain, so the statement can run again */
        for (int c = 0; c < ncols; c++) {
            if (st->rlen[c] > st->rcap[c]) { /* value longer than the buffer: grow, refetch */
                char *bigger = realloc(st->rbuf[c], st->rlen[c] + 1);
                if (!bigger)
                    return zb_fail(err, ZB_ERR_SYS, "mysql: out of memory");
                st->rbuf[c] = bigger;
                st->rcap[c] = st->rlen[c];
                bind_results(st);
                if (mysql_stmt_fetch_column(st->s, &st->rbind[c], (unsigned)c, 0))
                    return stmt_fail(st, err, "fetch column");
                mysql_stmt_bind_result(st->s, st->rbind);
            }
            st->rbuf[c][st->rlen[c]] = 0;
            vals[c] = st->rnull[c] ? NULL : st->rbuf[c];
            lens[c] = st->rlen[c];
        }
        if (fn)
            stop = fn(arg, ncols, vals, lens);
    }
    if (rc != MYSQL_NO_DATA)
        return stmt_fail(st, err, "fetch");
    mysql_stmt_free_result(st->s);
    return 0;
}

/* A read that timed out looks like any lost connection (CR_SERVER_LOST);
 * the time it took tells them apart, so the server does not retry it. */
static int my_run(struct stmt *st, const char *const *params, row_fn fn, void *arg,
                  long long *affected, struct zb_err *err)
{
    uint64_t t0 = zb_now_ns();
    int rc = run_stmt(st, params, fn, arg, affected, err);
    if (rc < 0 && err && err->kind == ZB_ERR_CONN &&
        zb_failure_kind(t0, (uint64_t)st->db->read_timeout_s * 1000000000u) == ZB_ERR_TIMEOUT) {
        char was[sizeof err->msg];
        memcpy(was, err->msg, sizeof was);
        zb_fail(err, ZB_ERR_TIMEOUT, "mysql: no answer within %u s (read timeout): %.400s",
                st->db->read_timeout_s, was);
    }
    return rc;
}

static void my_finalize(struct stmt *st) { stmt_free(st); }

int my_query(struct db *db, const char *sql, int nparams, const char *const *params,
                    row_fn fn, void *arg, long long *affected, struct zb_err *err)
{
    struct stmt *st;
    if (my_prepare(db, sql, nparams, &st, err) < 0)
        return -1;
    int rc = my_run(st, params, fn, arg, affected, err);
    stmt_free(st);
    return rc;
}

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

int my_variable(struct db *db, const char *name, char *out, size_t len)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT @@%s", name);
    out[0] = '?';
    out[1] = 0;
    if (mysql_real_query(db->h, sql, strlen(sql)) != 0)
        return -1;
    MYSQL_RES *r = mysql_store_result(db->h);
    MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
    if (row && row[0])
        snprintf(out, len, "%s", row[0]);
    if (r)
        mysql_free_result(r);
    return row ? 0 : -1;
}

int first_text(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)l;
    struct text_out *t = arg;
    t->found = true;
    snprintf(t->v, sizeof t->v, "%s", n > 0 && v[0] ? v[0] : "");
    return 1;
}

static int first_number(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)l;
    if (n > 0 && v[0])
        *(long long *)arg = atoll(v[0]);
    return 1;
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
    if (my_run(st, params, first_number, &bytes, NULL, NULL) < 0)
        bytes = -1;
    stmt_free(st);
    return bytes;
}

static const char *my_version(struct db *db) { return db->version; }
static const char *my_create_suffix(struct db *db) { return db->suffix; }

static int my_swap_table(struct db *db, const char *from, const char *to, struct zb_err *err)
{
    char sql[512];
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
    return my_exec(db, sql, err);
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
    /* The tables' utf8mb4_general_ci ignores case and trailing spaces
     * (PAD SPACE); the key's index is still used (EXPLAIN: ref). */
    .text_key_exact = " COLLATE utf8mb4_nopad_bin",
    .swap_table = my_swap_table,
    /* The table's create time (InnoDB's is its .frm's change time, which
     * RENAME sets), with its row count. */
    .table_version_sql = "SELECT CONCAT_WS(' ', CREATE_TIME, TABLE_ROWS) FROM "
                         "information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
                         "AND TABLE_NAME = ?",
    .recover = my_recover,
    .ident_max = 64,
    .try_load_lock = my_try_load_lock,
    .async = &my_async,
};
