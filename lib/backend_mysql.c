/* MySQL/MariaDB through libmariadb; InnoDB and MyISAM are the same driver
 * with a different ENGINE= on CREATE TABLE. Statements use the binary
 * protocol with string binds; results are fetched into growable buffers.
 *
 * The asynchronous side (the server's) uses Connector/C's non-blocking API
 * (MYSQL_OPT_NONBLOCK; mysql_real_connect_start/_cont,
 * mysql_stmt_prepare/execute/store_result_start/_cont): each call runs the
 * library's own coroutine until it would block and says which socket event
 * it waits for. One statement at a time: the API has no pipelining. */
#include <mysql.h>
#include <sys/socket.h>
#include <mysqld_error.h>
#include <errmsg.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"

enum my_op { OP_NONE, OP_CONNECT, OP_PREPARE, OP_EXECUTE, OP_STORE };

struct db {
    MYSQL *h;
    bool broken;
    /* The asynchronous side's: the operation under way, what it waits for,
     * and the statement it is for. */
    enum my_op op;
    int wait;                  /* MYSQL_WAIT_* bits of the last _start/_cont */
    int status;                /* the operation's own result once it ends */
    MYSQL *connected;          /* mysql_real_connect's result */
    struct stmt *cur;          /* the statement being prepared or run */
    bool execute_after;        /* cur: prepare, then run (a one-shot query) */
    bool answered;             /* cur's operations are done, not yet reported */
    bool executed;             /* ... and it ran: its rows are stored */
    const char *const *params; /* cur's parameters (the caller keeps them) */
    const char *sql;           /* cur's SQL while it is being prepared */
    struct stmt *prepared, *oneshot;  /* freed on close */
    unsigned read_timeout_s;   /* per read from the server: query_timeout_ms rounded up */
    char engine[16];
    char suffix[64];
    char version[64];
    int saved_flush;     /* innodb_flush_log_at_trx_commit to put back on close, or -1 */
    char sync_lock[64];  /* the GET_LOCK that marks its record in SETTINGS_TABLE live */
};

struct stmt {
    struct db *db;
    MYSQL_STMT *s;
    int nparams, ncols;
    MYSQL_BIND *pbind, *rbind;
    unsigned long *plen, *rlen;
    my_bool *rnull, *rerr;
    char **rbuf;
    unsigned long *rcap;
};

extern const struct backend_driver backend_mysql;

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
static enum zb_err_kind my_connect_kind(unsigned e)
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

static int my_fail(struct db *db, struct zb_err *err, const char *what)
{
    return my_fail_code(db, err, what, mysql_errno(db->h), mysql_error(db->h));
}

static int stmt_fail(struct stmt *st, struct zb_err *err, const char *what)
{
    return my_fail_code(st->db, err, what, mysql_stmt_errno(st->s), mysql_stmt_error(st->s));
}

/* A handle with the options both sides share; NULL when out of memory. */
static struct db *my_new(const struct backend_conf *bc)
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

static const char *my_host(const struct backend_conf *bc)
{
    return bc->socket ? "localhost" : (bc->host ? bc->host : "127.0.0.1");
}

static int my_connect_failed(struct db *db, const struct backend_conf *bc, enum zb_err_kind kind,
                             struct zb_err *err)
{
    char why[600];
    return zb_fail(err, kind, "mysql: cannot connect to %s: %s (%u)%s",
                   bc->socket ? bc->socket : my_host(bc), mysql_error(db->h), mysql_errno(db->h),
                   zb_password_file_problem(bc, why, sizeof why));
}

static void my_connected(struct db *db)
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

static int my_exec(struct db *db, const char *sql, struct zb_err *err)
{
    if (mysql_real_query(db->h, sql, strlen(sql)) != 0)
        return my_fail(db, err, sql);
    /* Drain a result, if the statement had one (SET, SHOW...). */
    MYSQL_RES *r = mysql_store_result(db->h);
    if (r)
        mysql_free_result(r);
    return 0;
}

/* innodb_flush_log_at_trx_commit is global: scripts/db lets zipbench change
 * it only through a procedure that runs with root's rights (zipbench has
 * no SUPER). A server without that procedure gets SET GLOBAL, which works
 * for an account that has SUPER. */
static int set_flush_log(struct db *db, int value, struct zb_err *err)
{
    char sql[96];
    snprintf(sql, sizeof sql, "CALL zipbench_admin.set_innodb_flush_log_at_trx_commit(%d)", value);
    struct zb_err call_err = { 0 };
    if (my_exec(db, sql, &call_err) == 0)
        return 0;
    unsigned e = mysql_errno(db->h);
    if (e != ER_SP_DOES_NOT_EXIST && e != ER_BAD_DB_ERROR && e != ER_DBACCESS_DENIED_ERROR &&
        e != ER_PROCACCESS_DENIED_ERROR) {
        if (err)
            *err = call_err;
        return -1;
    }
    snprintf(sql, sizeof sql, "SET GLOBAL innodb_flush_log_at_trx_commit = %d", value);
    return my_exec(db, sql, err);
}

static void stmt_free(struct stmt *st);

static void release_sync(struct db *db);

static void my_close(struct db *db)
{
    if (db->saved_flush >= 0 && !db->broken)
        release_sync(db);
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

static void stmt_free(struct stmt *st)
{
    if (!st)
        return;
    if (st->s)
        mysql_stmt_close(st->s);
    for (int i = 0; st->rbuf && i < st->ncols; i++)
        free(st->rbuf[i]);
    free(st->pbind); free(st->rbind); free(st->plen); free(st->rlen);
    free(st->rnull); free(st->rerr); free(st->rbuf); free(st->rcap);
    free(st);
}

static struct stmt *stmt_new(struct db *db)
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

/* Once prepared: bind buffers for the parameters and result columns. */
static int stmt_setup(struct stmt *st, int nparams, struct zb_err *err);

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

static int stmt_setup(struct stmt *st, int nparams, struct zb_err *err)
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
    if (!st->pbind || !st->plen || !st->rbind || !st->rlen || !st->rnull || !st->rerr ||
        !st->rbuf || !st->rcap)
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

static int bind_params(struct stmt *st, const char *const *params, struct zb_err *err)
{
    for (int i = 0; i < st->nparams; i++) {
        MYSQL_BIND *b = &st->pbind[i];
        memset(b, 0, sizeof *b);
        if (params[i]) {
            b->buffer_type = MYSQL_TYPE_STRING;
            b->buffer = (void *)params[i];
            st->plen[i] = strlen(params[i]);
            b->buffer_length = st->plen[i];
            b->length = &st->plen[i];
        } else {
            b->buffer_type = MYSQL_TYPE_NULL;
        }
    }
    if (st->nparams && mysql_stmt_bind_param(st->s, st->pbind))
        return stmt_fail(st, err, "bind");
    return 0;
}

/* The rows of an executed statement to fn, read as they come or from the
 * stored result; then the result is freed, so the statement can run again. */
static int fetch_rows(struct stmt *st, row_fn fn, void *arg, struct zb_err *err);

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

static int fetch_rows(struct stmt *st, row_fn fn, void *arg, struct zb_err *err)
{
    bind_results(st);
    if (mysql_stmt_bind_result(st->s, st->rbind))
        return stmt_fail(st, err, "bind result");
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

static int my_query(struct db *db, const char *sql, int nparams, const char *const *params,
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

static int my_variable(struct db *db, const char *name, char *out, size_t len)
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

/* ---- the global durability knob, put back whatever happens ----
 *
 * innodb_flush_log_at_trx_commit is server-wide and outlives the session
 * that set it, so a session that changes it first records, in
 * SETTINGS_TABLE of its database, the value to put back (the one found
 * when no record was there: the server's own), under a GET_LOCK name that
 * it holds until it ends, and who changed it ("pid N on HOST"). close()
 * deletes its record and puts the value back unless another live record
 * still needs the change. A record is abandoned when its lock is free (its
 * session ended without close(): a loader killed with SIGKILL, a server
 * restart) or when its process is gone from this host while MariaDB still
 * ends its session (rolling back a big transaction can take seconds, the
 * lock held all along): no one will put its value back but the next
 * loader's recover() (and `scripts/db start`, for free locks), which do,
 * and say so. A record of a process on another host counts as live while
 * its lock is held: there is no telling whether that process is gone. */
#define SETTINGS_TABLE "zipbench_global_settings"
#define FLUSH_KNOB "innodb_flush_log_at_trx_commit"

struct text_out { char v[256]; bool found; };

static int first_text(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)l;
    struct text_out *t = arg;
    t->found = true;
    snprintf(t->v, sizeof t->v, "%s", n > 0 && v[0] ? v[0] : "");
    return 1;
}


/* Records and releases of the knob take turns (GET_LOCK as a mutex), so
 * that two sessions starting at once cannot both take the other's changed
 * value for the server's own. */
#define SYNC_MUTEX "'zipbench.sync.records'"

static int record_sync_locked(struct db *db, struct zb_err *err);

static int record_sync(struct db *db, struct zb_err *err)
{
    struct text_out t = { 0 };
    if (my_query(db, "SELECT GET_LOCK(" SYNC_MUTEX ", 30)", 0, NULL, first_text, &t, NULL, err) < 0)
        return -1;
    if (strcmp(t.v, "1"))
        return zb_fail(err, ZB_ERR_BUSY, "mysql: another session held %s for 30 s", SYNC_MUTEX);
    int rc = record_sync_locked(db, err);
    my_exec(db, "DO RELEASE_LOCK(" SYNC_MUTEX ")", NULL);
    return rc;
}

/* Records that this session changes the knob, and what to put back. */
static int record_sync_locked(struct db *db, struct zb_err *err)
{
    struct text_out t = { 0 };
    if (my_query(db, "SELECT CONCAT('zipbench.sync.', CONNECTION_ID())", 0, NULL, first_text, &t,
                 NULL, err) < 0)
        return -1;
    snprintf(db->sync_lock, sizeof db->sync_lock, "%.63s", t.v);
    const char *lock[] = { db->sync_lock };
    t.found = false;
    if (my_query(db, "SELECT GET_LOCK(?, 0)", 1, lock, first_text, &t, NULL, err) < 0)
        return -1;
    if (strcmp(t.v, "1"))
        return zb_fail(err, ZB_ERR_SQL, "mysql: GET_LOCK(%s) refused", db->sync_lock);
    if (my_exec(db, "CREATE TABLE IF NOT EXISTS " SETTINGS_TABLE " (lock_name VARCHAR(64) "
                "PRIMARY KEY, setting VARCHAR(64) NOT NULL, restore_to VARCHAR(32) NOT NULL, "
                "changed_by VARCHAR(200) NOT NULL, since TIMESTAMP NOT NULL DEFAULT "
                "CURRENT_TIMESTAMP) ENGINE=InnoDB COMMENT 'zipbench: global settings a session "
                "changed, to put back (lib/backend_mysql.c)'", err) < 0)
        return -1;
    /* The value to put back: an earlier record's (the server's own, while
     * another session has it changed), else the one in force now. */
    t.found = false;
    if (my_query(db, "SELECT restore_to FROM " SETTINGS_TABLE " WHERE setting = '" FLUSH_KNOB
                 "' LIMIT 1", 0, NULL, first_text, &t, NULL, err) < 0)
        return -1;
    if (!t.found && my_query(db, "SELECT @@global." FLUSH_KNOB, 0, NULL, first_text, &t, NULL,
                             err) < 0)
        return -1;
    char who[128], host[64] = "?";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    snprintf(who, sizeof who, "pid %ld on %s", (long)getpid(), host);
    const char *row[] = { db->sync_lock, t.v, who };
    if (my_query(db, "REPLACE INTO " SETTINGS_TABLE " (lock_name, setting, restore_to, "
                 "changed_by) VALUES (?, '" FLUSH_KNOB "', ?, ?)", 3, row, NULL, NULL, NULL,
                 err) < 0)
        return -1;
    db->saved_flush = atoi(t.v);
    return 0;
}

/* Whether "pid N on HOST" (a record's changed_by) is a process of this
 * host that no longer runs: none has the pid, or a zombie (killed, and
 * not yet reaped: an orphan's reaper may take its time). A pid that runs
 * again (reused) reads as live: its record then waits for its lock to be
 * free, which is safe. */
static bool process_gone(const char *changed_by)
{
    long pid;
    char host[256], here[256] = "";
    if (sscanf(changed_by, "pid %ld on %255s", &pid, host) != 2 || pid <= 0)
        return false;
    gethostname(here, sizeof here);
    here[sizeof here - 1] = 0;
    if (strcmp(host, here))
        return false;
    if (kill((pid_t)pid, 0) < 0)
        return errno == ESRCH;
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
    if (f)
        fclose(f);
    stat[n] = 0;
    const char *state = strrchr(stat, ')');   /* "pid (comm) S ...": comm may hold ')' */
    return state && (state[1] == ' ') && (state[2] == 'Z' || state[2] == 'X');
}

/* The records of the knob, as record_sync wrote them. */
enum { MAX_RECORDS = 64 };
struct records {
    int n, live, abandoned;   /* live: needed by a running session (its own counted apart) */
    bool own_live;
    struct record {
        char lock[72], restore_to[32], changed_by[208], since[32];
        bool abandoned;
    } r[MAX_RECORDS];
};

static int add_record(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)l;
    struct records *rs = arg;
    if (n < 6 || rs->n == MAX_RECORDS)
        return 0;
    struct record *r = &rs->r[rs->n++];
    snprintf(r->lock, sizeof r->lock, "%s", v[0] ? v[0] : "");
    snprintf(r->restore_to, sizeof r->restore_to, "%s", v[1] ? v[1] : "");
    snprintf(r->changed_by, sizeof r->changed_by, "%s", v[2] ? v[2] : "");
    snprintf(r->since, sizeof r->since, "%s", v[3] ? v[3] : "");
    bool held = v[4] != NULL, own = held && !strcmp(v[5], "1");
    r->abandoned = !held || (!own && process_gone(r->changed_by));
    if (r->abandoned)
        rs->abandoned++;
    else if (own)
        rs->own_live = true;
    else
        rs->live++;
    return 0;
}

/* Reads the records, oldest first, each marked abandoned or not. */
static int read_records(struct db *db, struct records *rs, struct zb_err *err)
{
    memset(rs, 0, sizeof *rs);
    return my_query(db, "SELECT lock_name, restore_to, changed_by, since, IS_USED_LOCK(lock_name), "
                    "IS_USED_LOCK(lock_name) = CONNECTION_ID() FROM " SETTINGS_TABLE " WHERE "
                    "setting = '" FLUSH_KNOB "' ORDER BY since", 0, NULL, add_record, rs, NULL, err);
}

static void release_sync(struct db *db)
{
    const char *lock[] = { db->sync_lock };
    struct records rs;
    my_exec(db, "DO GET_LOCK(" SYNC_MUTEX ", 30)", NULL);
    if (read_records(db, &rs, NULL) == 0 && rs.live == 0) {
        if (set_flush_log(db, db->saved_flush, NULL) == 0)
            my_exec(db, "DELETE FROM " SETTINGS_TABLE, NULL);
    } else {
        my_query(db, "DELETE FROM " SETTINGS_TABLE " WHERE lock_name = ?", 1, lock, NULL, NULL,
                 NULL, NULL);
    }
    my_query(db, "SELECT RELEASE_LOCK(?)", 1, lock, NULL, NULL, NULL, NULL);
    my_exec(db, "DO RELEASE_LOCK(" SYNC_MUTEX ")", NULL);
    db->saved_flush = -1;
}

/* recover() with SYNC_MUTEX held: records and releases wait, so the live
 * records it counts are all there are. */
static int recover_locked(struct db *db, char *note, size_t notelen, struct zb_err *err)
{
    struct records rs;
    struct text_out now = { 0 };
    if (read_records(db, &rs, err) < 0)
        return -1;
    const struct record *first = NULL;
    for (int i = 0; i < rs.n && !first; i++)
        if (rs.r[i].abandoned)
            first = &rs.r[i];
    if (!first)
        return 0;
    if (my_query(db, "SELECT @@global." FLUSH_KNOB, 0, NULL, first_text, &now, NULL, err) < 0)
        return -1;
    int restore_to = atoi(first->restore_to);
    bool live = rs.live > 0 || rs.own_live;
    char by[300];
    snprintf(by, sizeof by, "%s since %s%s", first->changed_by, first->since,
             rs.abandoned > 1 ? ", and others" : "");
    if (!live && atoi(now.v) != restore_to) {
        if (set_flush_log(db, restore_to, err) < 0)
            return -1;
        snprintf(note, notelen, FLUSH_KNOB " was %s, left so by a load that did not end (%s): "
                 "put back to %d", now.v, by, restore_to);
    } else {
        snprintf(note, notelen, "removed the record of a load that did not end (%s); "
                 FLUSH_KNOB " is %s%s", by, now.v, live ? ", changed by a load still running" : "");
    }
    /* By name: an abandoned record's lock may still be held by its session. */
    for (int i = 0; i < rs.n; i++) {
        const char *lock[] = { rs.r[i].lock };
        if (rs.r[i].abandoned && my_query(db, "DELETE FROM " SETTINGS_TABLE " WHERE lock_name = ?",
                                          1, lock, NULL, NULL, NULL, err) < 0)
            return -1;
    }
    return 1;
}

static int my_recover(struct db *db, char *note, size_t notelen, struct zb_err *err)
{
    struct text_out t = { 0 };
    /* No table (nothing was ever changed here) is nothing to do. */
    if (my_query(db, "SELECT COUNT(*) FROM information_schema.TABLES WHERE table_schema = "
                 "DATABASE() AND table_name = '" SETTINGS_TABLE "'", 0, NULL, first_text, &t, NULL,
                 err) < 0)
        return -1;
    if (atoll(t.v) == 0)
        return 0;
    t.found = false;
    if (my_query(db, "SELECT GET_LOCK(" SYNC_MUTEX ", 30)", 0, NULL, first_text, &t, NULL, err) < 0)
        return -1;
    if (strcmp(t.v, "1"))
        return zb_fail(err, ZB_ERR_BUSY, "mysql: another session held %s for 30 s", SYNC_MUTEX);
    int rc = recover_locked(db, note, notelen, err);
    my_exec(db, "DO RELEASE_LOCK(" SYNC_MUTEX ")", NULL);
    return rc;
}

static int my_set_sync(struct db *db, enum zb_sync level, char *desc, size_t desclen,
                       struct zb_err *err)
{
    char flush[16];
    bool innodb = strcasecmp(db->engine, "InnoDB") == 0;
    if (innodb && level != ZB_SYNC_DEFAULT) {
        /* The knob is global: record what to put back, and put it back on close. */
        if (db->saved_flush < 0 && record_sync(db, err) < 0)
            return -1;
        static const int value[] = { [ZB_SYNC_FULL] = 1, [ZB_SYNC_NORMAL] = 2, [ZB_SYNC_OFF] = 0 };
        if (set_flush_log(db, value[level], err) < 0)
            return -1;
    }
    my_variable(db, "innodb_flush_log_at_trx_commit", flush, sizeof flush);
    if (innodb)
        snprintf(desc, desclen, "innodb_flush_log_at_trx_commit=%s", flush);
    else
        snprintf(desc, desclen, "MyISAM: no fsync per commit%s", level != ZB_SYNC_DEFAULT
                                                                    ? " (no knob to set)" : "");
    return 0;
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

/* ---- asynchronous ---- */

/* What the library waits for, as the server's epoll understands it. */
static int my_wants(struct db *db, int status)
{
    db->wait = status;
    int w = (status & MYSQL_WAIT_READ ? ZB_WANT_READ : 0) |
            (status & MYSQL_WAIT_WRITE ? ZB_WANT_WRITE : 0);
    return w ? w : ZB_WANT_READ;
}

static int my_connect_start(const struct backend_conf *bc, struct db **out, struct zb_err *err)
{
    struct db *db = my_new(bc);
    if (!db)
        return zb_fail(err, ZB_ERR_SYS, "mysql: out of memory");
    *out = db;
    /* No timeouts of the library's: the server bounds every wait itself. */
    mysql_options(db->h, MYSQL_OPT_NONBLOCK, 0);
    db->op = OP_CONNECT;
    int status = mysql_real_connect_start(&db->connected, db->h, my_host(bc),
                                          bc->user ? bc->user : "zipbench", bc->password,
                                          bc->database ? bc->database : "zipbench",
                                          (unsigned)(bc->port > 0 ? bc->port : 3306), bc->socket, 0);
    if (status)
        return my_wants(db, status);
    db->op = OP_NONE;
    if (!db->connected)
        return my_connect_failed(db, bc, my_connect_kind(mysql_errno(db->h)), err);
    my_connected(db);
    return 0;
}

static int my_connect_step(struct db *db, struct zb_err *err)
{
    int status = mysql_real_connect_cont(&db->connected, db->h, db->wait);
    if (status)
        return my_wants(db, status);
    db->op = OP_NONE;
    if (!db->connected) {
        db->broken = true;
        return zb_fail(err, my_connect_kind(mysql_errno(db->h)), "mysql: cannot connect: %s (%u)",
                       mysql_error(db->h), mysql_errno(db->h));
    }
    my_connected(db);
    return 0;
}

static int my_sock(struct db *db) { return (int)mysql_get_socket(db->h); }

/* The current statement's operation ended (its status in db->status): on
 * to the next one of its chain (prepare, execute, store the result), until
 * one has to wait. 0 once the whole chain is done. */
static int my_next(struct db *db, int status, struct zb_err *err)
{
    struct stmt *st = db->cur;
    while (!status) {
        if (db->status) {
            enum my_op op = db->op;
            db->op = OP_NONE;
            return stmt_fail(st, err, op == OP_PREPARE ? "prepare" : op == OP_EXECUTE ? "execute"
                                                                                   : "store result");
        }
        switch (db->op) {
        case OP_PREPARE:
            if (stmt_setup(st, st->nparams, err) < 0 ||
                (db->execute_after && bind_params(st, db->params, err) < 0)) {
                db->op = OP_NONE;
                return -1;
            }
            if (!db->execute_after) {
                db->op = OP_NONE;
                db->answered = true;
                db->executed = false;
                return 0;
            }
            db->op = OP_EXECUTE;
            status = mysql_stmt_execute_start(&db->status, st->s);
            break;
        case OP_EXECUTE:
            db->op = OP_STORE;
            status = mysql_stmt_store_result_start(&db->status, st->s);
            break;
        default:
            db->op = OP_NONE;
            db->answered = db->executed = true;
            return 0;
        }
    }
    return my_wants(db, status);
}

static int my_cont(struct db *db)
{
    switch (db->op) {
    case OP_PREPARE: return mysql_stmt_prepare_cont(&db->status, db->cur->s, db->wait);
    case OP_EXECUTE: return mysql_stmt_execute_cont(&db->status, db->cur->s, db->wait);
    default: return mysql_stmt_store_result_cont(&db->status, db->cur->s, db->wait);
    }
}

static int my_start_prepare(struct db *db, struct stmt *st, const char *sql, int nparams,
                            struct zb_err *err)
{
    st->nparams = nparams;
    db->cur = st;
    db->op = OP_PREPARE;
    return my_next(db, mysql_stmt_prepare_start(&db->status, st->s, sql, strlen(sql)), err);
}

static int my_async_prepare(struct db *db, const char *sql, int nparams, struct stmt **out,
                            struct zb_err *err)
{
    if (db->prepared || !(db->prepared = stmt_new(db)))
        return zb_fail(err, ZB_ERR_SYS, db->prepared ? "mysql: one prepared statement only"
                                                     : "mysql: out of memory");
    *out = db->prepared;
    db->execute_after = false;
    return my_start_prepare(db, db->prepared, sql, nparams, err);
}

static int my_send(struct db *db, struct stmt *st, const char *sql, int nparams,
                   const char *const *params, struct zb_err *err)
{
    db->params = params;
    db->answered = false;
    if (!st) {   /* one-shot: prepared, run, and kept until the next one */
        stmt_free(db->oneshot);
        if (!(db->oneshot = stmt_new(db)))
            return zb_fail(err, ZB_ERR_SYS, "mysql: out of memory");
        db->execute_after = true;
        return my_start_prepare(db, db->oneshot, sql, nparams, err);
    }
    if (bind_params(st, params, err) < 0)
        return -1;
    db->cur = st;
    db->op = OP_EXECUTE;
    return my_next(db, mysql_stmt_execute_start(&db->status, st->s), err);
}

static int my_async_result(struct db *db, row_fn fn, void *arg, struct zb_err *err)
{
    if (db->op != OP_NONE) {
        int rc = my_next(db, my_cont(db), err);
        if (rc != 0)
            return rc;
    }
    if (!db->answered) {
        /* Idle: the server closing its end is the only thing to read. */
        char c;
        ssize_t n = recv(my_sock(db), &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || n > 0) {
            db->broken = true;
            return zb_fail(err, ZB_ERR_CONN, "mysql: the server closed the connection");
        }
        return ZB_WANT_READ;
    }
    db->answered = false;
    return db->executed && db->cur->ncols ? fetch_rows(db->cur, fn, arg, err) : 0;
}

static void my_abort(struct db *db)
{
    db->broken = true;
    mariadb_cancel(db->h);
}

static const struct backend_async my_async = {
    .connect_start = my_connect_start,
    .connect_step = my_connect_step,
    .socket = my_sock,
    .prepare = my_async_prepare,
    .send = my_send,
    .result = my_async_result,
    .abort = my_abort,
};

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
