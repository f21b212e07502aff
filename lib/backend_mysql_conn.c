/* MySQL/MariaDB through libmariadb, what both sides of the driver stand on:
 * handles and their connection options, statements (binary protocol, string
 * binds, results in growable buffers), errors classified from MariaDB's
 * error numbers, and plain queries. The synchronous driver
 * (backend_mysql.c), the asynchronous calls (backend_mysql_async.c) and the
 * durability knob (backend_mysql_settings.c) use these; this file uses
 * none of them. */
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
long long row_named_in(const char *msg)
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

int my_prepare(struct db *db, const char *sql, int nparams, struct stmt **out,
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
    return statement_rows(st, fn, arg, err);
}

int statement_rows(struct stmt *st, row_fn fn, void *arg, struct zb_err *err)
{
    if (st->ncols)
        return fetch_rows(st, fn, arg, err);
    unsigned long long id = mysql_stmt_insert_id(st->s);
    if (!fn || !id || mysql_stmt_affected_rows(st->s) != 1)
        return 0;
    char text[24];
    snprintf(text, sizeof text, "%llu", id);
    const char *vals[] = { text };
    size_t lens[] = { strlen(text) };
    fn(arg, 1, vals, lens);
    return 0;
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
int my_run(struct stmt *st, const char *const *params, row_fn fn, void *arg,
           long long *affected, struct zb_err *err)
{
    uint64_t t0 = zb_now_ns();
    int rc = run_stmt(st, params, fn, arg, affected, err);
    if (rc < 0 && err && err->kind == ZB_ERR_CONN && st->db->read_timeout_s &&
        zb_failure_kind(t0, (uint64_t)st->db->read_timeout_s * 1000000000u) == ZB_ERR_TIMEOUT) {
        char was[sizeof err->msg];
        memcpy(was, err->msg, sizeof was);
        zb_fail(err, ZB_ERR_TIMEOUT, "mysql: no answer within %u s (read timeout): %.400s",
                st->db->read_timeout_s, was);
    }
    return rc;
}

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
