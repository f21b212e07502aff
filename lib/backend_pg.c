/* PostgreSQL through libpq. Values go as text parameters; the server infers
 * their types from the columns. Results come back in text format.
 *
 * The asynchronous side (the server's) uses libpq's non-blocking connect
 * (PQconnectStartParams, PQconnectPoll) and queries (PQsendQueryPrepared,
 * PQconsumeInput, PQisBusy, PQgetResult) on a non-blocking connection, and
 * pipeline mode for the pipelined strategy. libpq 15's PQpipelineSync
 * flushes as it sends the Sync (PQsendPipelineSync, which does not, is
 * PostgreSQL 17), so a Sync per query would cost a send() each: flush()
 * ends a batch instead, one Sync and one write for every query sent since
 * the last. A statement that fails aborts the rest of its batch until that
 * Sync; those come back as failed (PGRES_PIPELINE_ABORTED).
 *
 * Several hosts (host = primary,replica,...; one port for all): libpq tries
 * them in order. A writer (the loader: not read_only) takes the one that
 * accepts writes (target_session_attrs=read-write). Read-only connections
 * (the server's) take the hosts in turn, each connection starting at the
 * next one and falling back to the others when it refuses, so lookups
 * spread over a primary and its replicas and go on when one is down: a
 * host that failed is in effect marked down, and tried again by the next
 * connection whose turn it is. A connection that had to fall back is
 * alive() for FALLBACK_NS only, then replaced by its owner, so a host that
 * comes back gets its share again. What was in flight on a host that went
 * away fails with its connection (the server answers 503 or retries).
 *
 * Its own keys: prepare = no makes prepare() keep the statement text and
 * run() send it as an unnamed statement (parse, bind, execute in one round
 * trip), for a pooler that hands each transaction to whichever server
 * connection is free, where a named statement of an earlier one does not
 * exist (pgbouncer's transaction pooling). application_name: what the
 * server sees (pgpool-II routes by it). */
#include <ctype.h>
#include <errno.h>
#include <libpq-fe.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "backend.h"
#include "names.h"

#define FALLBACK_NS (1000u * 1000u * 1000u)

struct db {
    PGconn *conn;
    int next_stmt;       /* names s1, s2, ... per connection */
    int timeout_ms;      /* query_timeout_ms, 0: wait as long as it takes */
    bool given_up;       /* a query timed out: the protocol state is unknown */
    bool named;          /* prepare = yes: server-side named statements */
    bool prepared_here;  /* async prepare() of an unnamed statement: nothing to wait for */
    uint64_t fallback_until_ns; /* connected to another host than its turn's: alive until then */
    char first[256];     /* the host of its turn */
    char version[64];
    /* The asynchronous side's. */
    struct stmt *async_stmt;   /* its one prepared statement, freed on close */
    PGresult *last;      /* the statement being read: its result so far */
    int sent;            /* statements sent whose answer is not yet delivered */
    int unsynced;        /* pipeline: statements sent since the last Sync */
    bool pipelined;
    const struct backend_conf *conf; /* what it was opened with (outlives it) */
    char where[2 * PATH_MAX + 32]; /* "HOSTS port N", for messages */
};

struct stmt {
    struct db *db;
    char name[16];
    char *sql;           /* unnamed (prepare = no): the text, sent at each run */
    int nparams;
};

/* A failed call on a connection that is no longer CONNECTION_OK means the
 * server went away: report it as such so the pool drops the connection. */
static int pg_fail(struct db *db, struct zb_err *err, const char *what)
{
    enum zb_err_kind kind = PQstatus(db->conn) == CONNECTION_OK ? ZB_ERR_SQL : ZB_ERR_CONN;
    char msg[400], brief[ZB_SQL_BRIEF + 1];
    snprintf(msg, sizeof msg, "%s", PQerrorMessage(db->conn));
    msg[strcspn(msg, "\n")] = 0;
    return zb_fail(err, kind, "pg: %s: %s", zb_sql_brief(what, brief, sizeof brief), msg);
}

static void ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* Its own config keys. */
static int pg_check_key(const char *key, const char *value, char *why, size_t len)
{
    if (!strcmp(key, "application_name"))
        return 0;
    if (strcmp(key, "prepare"))
        return -1;
    if (strcmp(value, "yes") && strcmp(value, "no")) {
        snprintf(why, len, "'%s' is not yes or no", value);
        return -2;
    }
    return 0;
}

/* The connection parameters of bc, for PQconnectdbParams and
 * PQconnectStartParams alike. */
struct pg_params {
    const char *keys[11], *vals[11];
    char port[16], timeout[16], socket_dir[PATH_MAX];
    char hosts[2 * PATH_MAX]; /* the host list, starting at this connection's turn */
};

/* Which host the next read-only connection tries first. */
static _Atomic unsigned next_turn;

/* p's host list: bc's, rotated for a read-only connection to start at its
 * turn; first gets the host of its turn. */
static void pg_hosts(const struct backend_conf *bc, const char *host, struct pg_params *p,
                     char *first, size_t firstlen, int *nhosts)
{
    *nhosts = 1;
    for (const char *c = host; *c; c++)
        *nhosts += *c == ',';
    int turn = bc->read_only && *nhosts > 1
                   ? (int)(atomic_fetch_add_explicit(&next_turn, 1, memory_order_relaxed) %
                           (unsigned)*nhosts)
                   : 0;
    const char *start = host;
    for (int i = 0; i < turn; i++)
        start = strchr(start, ',') + 1;
    snprintf(first, firstlen, "%.*s", (int)strcspn(start, ","), start);
    if (turn)
        snprintf(p->hosts, sizeof p->hosts, "%s,%.*s", start, (int)(start - host - 1), host);
    else
        snprintf(p->hosts, sizeof p->hosts, "%s", host);
}

static void pg_params(const struct backend_conf *bc, struct pg_params *p, struct db *db)
{
    snprintf(p->port, sizeof p->port, "%d", bc->port > 0 ? bc->port : 5432);
    snprintf(p->timeout, sizeof p->timeout, "%d",
             bc->connect_timeout_s > 0 ? bc->connect_timeout_s : 5);
    /* A socket directory wins over a TCP host, as libpq's own host= does. */
    const char *host = bc->socket ? bc->socket : (bc->host ? bc->host : "127.0.0.1");
    /* libpq takes a socket directory only as an absolute path. */
    if (bc->socket && bc->socket[0] != '/' && realpath(bc->socket, p->socket_dir))
        host = p->socket_dir;
    int n = 0, nhosts;
    pg_hosts(bc, host, p, db->first, sizeof db->first, &nhosts);
    const char *app = conf_option(bc, "application_name");
#define KV(k, v) do { const char *v_ = (v); if (v_) { p->keys[n] = (k); p->vals[n] = v_; n++; } } while (0)
    KV("host", p->hosts);
    KV("port", p->port);
    KV("dbname", bc->database ? bc->database : "zipbench");
    KV("user", bc->user ? bc->user : "zipbench");
    KV("password", bc->password);
    KV("passfile", bc->password_file);
    KV("connect_timeout", p->timeout);
    KV("application_name", app ? app : "zipbench");
    if (nhosts > 1)
        KV("target_session_attrs", bc->read_only ? "any" : "read-write");
#undef KV
    p->keys[n] = p->vals[n] = NULL;
    snprintf(db->where, sizeof db->where, "%s port %s", p->hosts, p->port);
}

/* libpq's message of a failed or lost connection, whole, on one line.
 * libpq goes on over indented lines: its hint ("failed: Connection
 * refused\n\tIs the server running on that host and accepting TCP/IP
 * connections?") or the rest of a sentence ("terminated abnormally\n\t
 * before or while processing the request."); an indented line is joined
 * with a space (". " before a new sentence), and a line of its own (the
 * next host of a list) with "; ". */
static void whole_message(char *out, size_t len, const char *msg)
{
    size_t n = 0;
    for (const char *p = msg; *p && n + 1 < len;) {
        bool indented = p > msg && (*p == '\t' || *p == ' ');
        p += strspn(p, "\t ");
        size_t line = strcspn(p, "\n");
        while (line && (p[line - 1] == ' ' || p[line - 1] == '\r'))
            line--;
        if (line) {
            const char *sep = !n ? "" : !indented ? "; "
                            : strchr(".?!:;", out[n - 1]) || !isupper((unsigned char)*p) ? " "
                            : ". ";
            n += (size_t)snprintf(out + n, len - n, "%s%.*s", sep, (int)line, p);
        }
        p += strcspn(p, "\n");
        p += *p == '\n';
    }
    out[n < len ? n : len - 1] = 0;
}

/* A connection that is up: NOTICEs ("table does not exist, skipping") are
 * not errors, keep them off the terminal. */
static void pg_connected(struct db *db)
{
    PQsetNoticeProcessor(db->conn, ignore_notice, NULL);
    const char *at = PQhost(db->conn);
    if (at && strcmp(at, db->first))
        db->fallback_until_ns = zb_now_ns() + FALLBACK_NS;
    int v = PQserverVersion(db->conn);
    snprintf(db->version, sizeof db->version, "PostgreSQL %d.%d", v / 10000, v % 10000);
}

/* A connection not yet made, with its parameters; NULL when out of memory. */
static struct db *pg_new(const struct backend_conf *bc, struct pg_params *p)
{
    struct db *db = calloc(1, sizeof *db);
    if (db) {
        pg_params(bc, p, db);
        db->conf = bc;
        db->timeout_ms = bc->query_timeout_ms;
        const char *prepare = conf_option(bc, "prepare");
        db->named = !prepare || strcmp(prepare, "no");
    }
    return db;
}

/* A failed connect's kind, from libpq's message (libpq gives no SQLSTATE
 * for a connect): refused for good (nothing listens, no socket file,
 * authentication, a database or role that does not exist, shutting down
 * or starting up) is ZB_ERR_REFUSED, the backend is down; anything else
 * ("too many clients already", a reset under load) is ZB_ERR_CONN. */
static enum zb_err_kind pg_connect_kind(const char *msg)
{
    static const char *const refusals[] = {
        "Connection refused", "No such file or directory", "authentication failed",
        "does not exist", "the database system is shutting down",
        "the database system is starting up", "the database system is in recovery mode",
        "the database system is not yet accepting connections",
    };
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++)
        if (strstr(msg, refusals[i]))
            return ZB_ERR_REFUSED;
    return ZB_ERR_CONN;
}

static int pg_open(const struct backend_conf *bc, struct db **out, struct zb_err *err)
{
    struct pg_params p;
    struct db *db = pg_new(bc, &p);
    if (!db)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    uint64_t t0 = zb_now_ns();
    db->conn = PQconnectdbParams(p.keys, p.vals, 0);
    if (!db->conn) {
        free(db);
        return zb_fail(err, ZB_ERR_SYS, "pg: out of memory");
    }
    if (PQstatus(db->conn) != CONNECTION_OK) {
        char msg[400];
        whole_message(msg, sizeof msg, PQerrorMessage(db->conn));
        /* Refused at once, or accepted and then never answered (frozen). */
        char why[600];
        enum zb_err_kind kind = zb_failure_kind(t0, (uint64_t)atoi(p.timeout) * 1000000000u);
        if (kind == ZB_ERR_CONN)
            kind = pg_connect_kind(PQerrorMessage(db->conn));
        zb_fail(err, kind, "pg: cannot connect to %s: %s%s", db->where, msg,
                zb_password_file_problem(bc, why, sizeof why));
        PQfinish(db->conn);
        free(db);
        return -1;
    }
    pg_connected(db);
    *out = db;
    return 0;
}

static void pg_close(struct db *db)
{
    PQclear(db->last);
    if (db->async_stmt)
        free(db->async_stmt->sql);
    free(db->async_stmt);
    PQfinish(db->conn);
    free(db);
}

static bool pg_alive(struct db *db)
{
    return !db->given_up && PQstatus(db->conn) == CONNECTION_OK &&
           (!db->fallback_until_ns || zb_now_ns() < db->fallback_until_ns);
}

/* The result of the query just sent, waited for at most db->timeout_ms
 * (0: as long as it takes, as libpq's blocking calls do). libpq's own calls
 * wait forever, and a database that is frozen rather than gone (stopped,
 * swapping, a full disk) never closes the socket, so the wait is ours:
 * poll on the socket until libpq has the whole answer. On timeout the
 * connection is given up (alive() is then false, and the server's pool
 * drops it), as the query may still be running. Like PQexec, keeps the
 * last result of the statement. */
static PGresult *pg_await(struct db *db, struct zb_err *err, const char *what)
{
    uint64_t deadline = db->timeout_ms > 0 ? zb_now_ns() + (uint64_t)db->timeout_ms * 1000000u
                                           : UINT64_MAX;
    PGresult *last = NULL;
    for (;;) {
        int pending = PQflush(db->conn);   /* 1: request not all sent yet */
        if (pending < 0)
            break;
        if (!pending && !PQisBusy(db->conn)) {
            PGresult *r = PQgetResult(db->conn);
            if (!r)
                return last;               /* the statement is over */
            PQclear(last);
            last = r;
            continue;
        }
        uint64_t now = zb_now_ns();
        if (now >= deadline) {
            PQclear(last);
            db->given_up = true;
            zb_fail(err, ZB_ERR_TIMEOUT, "pg: %s: no answer within %d ms", what, db->timeout_ms);
            return NULL;
        }
        struct pollfd p = { PQsocket(db->conn), (short)(POLLIN | (pending ? POLLOUT : 0)), 0 };
        int ms = deadline == UINT64_MAX ? -1 : (int)((deadline - now + 999999) / 1000000);
        int n = poll(&p, 1, ms);
        if (n < 0 && errno != EINTR)
            break;
        if (n > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)) && !PQconsumeInput(db->conn))
            break;
    }
    PQclear(last);
    pg_fail(db, err, what);
    return NULL;
}

static int pg_exec(struct db *db, const char *sql, struct zb_err *err)
{
    PGresult *r = PQexec(db->conn, sql);
    ExecStatusType s = PQresultStatus(r);
    int ok = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
    PQclear(r);
    return ok ? 0 : pg_fail(db, err, sql);
}

/* "?" placeholders become "$1".. ; zipbench's SQL never has "?" in strings. */
static char *pg_placeholders(const char *sql)
{
    size_t len = strlen(sql);
    char *out = malloc(len * 6 + 1);
    if (!out)
        return NULL;
    char *o = out;
    int n = 0;
    for (const char *p = sql; *p; p++) {
        if (*p == '?')
            o += sprintf(o, "$%d", ++n);
        else
            *o++ = *p;
    }
    *o = 0;
    return out;
}

/* What a failed statement's error means. A FATAL or PANIC error ends the
 * session (the server was stopped, the backend terminated) even while
 * libpq has not seen the socket close yet: the connection is lost. Lock
 * conflicts are ZB_ERR_BUSY: the statement may simply be run again.
 * 0A000 on a lookup is "cached plan must not change result type": the
 * table was swapped for one whose columns differ (a reload), and the
 * statement fails until prepared again: ZB_ERR_STALE. */
static enum zb_err_kind pg_error_kind(struct db *db, const PGresult *r)
{
    const char *sev = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (PQstatus(db->conn) != CONNECTION_OK || (sev && (!strcmp(sev, "FATAL") ||
                                                        !strcmp(sev, "PANIC"))))
        return ZB_ERR_CONN;
    if (state && (!strcmp(state, "40P01") || !strcmp(state, "55P03") ||
                  !strcmp(state, "40001")))
        return ZB_ERR_BUSY;   /* deadlock, lock not available, serialization failure */
    if (state && !strcmp(state, "0A000"))
        return ZB_ERR_STALE;
    return ZB_ERR_SQL;
}

/* Feeds the rows of a result to fn; returns 0 or -1. */
static int pg_result(struct db *db, PGresult *r, row_fn fn, void *arg, long long *affected,
                     struct zb_err *err, const char *what)
{
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        char msg[400], brief[ZB_SQL_BRIEF + 1];
        snprintf(msg, sizeof msg, "%s", PQresultErrorMessage(r));
        msg[strcspn(msg, "\n")] = 0;
        enum zb_err_kind kind = pg_error_kind(db, r);
        PQclear(r);
        if (kind == ZB_ERR_CONN)
            db->given_up = true;
        return zb_fail(err, kind, "pg: %s: %s", zb_sql_brief(what, brief, sizeof brief),
                       msg[0] ? msg : PQerrorMessage(db->conn));
    }
    if (fn) {
        int rows = PQntuples(r), ncols = PQnfields(r);
        const char *vals[64];
        size_t lens[64];
        if (ncols > 64)
            ncols = 64;
        for (int i = 0; i < rows; i++) {
            for (int c = 0; c < ncols; c++) {
                vals[c] = PQgetisnull(r, i, c) ? NULL : PQgetvalue(r, i, c);
                lens[c] = (size_t)PQgetlength(r, i, c);
            }
            if (fn(arg, ncols, vals, lens))
                break;
        }
    }
    if (affected)
        *affected = atoll(PQcmdTuples(r));
    PQclear(r);
    return 0;
}

static int pg_query(struct db *db, const char *sql, int nparams, const char *const *params,
                    row_fn fn, void *arg, long long *affected, struct zb_err *err)
{
    char *q = pg_placeholders(sql);
    if (!q)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    int sent = PQsendQueryParams(db->conn, q, nparams, NULL, params, NULL, NULL, 0);
    free(q);
    if (!sent)
        return pg_fail(db, err, sql);
    PGresult *r = pg_await(db, err, sql);
    return r ? pg_result(db, r, fn, arg, affected, err, sql) : -1;
}

static int pg_prepare(struct db *db, const char *sql, int nparams, struct stmt **out,
                      struct zb_err *err)
{
    struct stmt *st = calloc(1, sizeof *st);
    char *q = pg_placeholders(sql);
    if (!st || !q) {
        free(st);
        free(q);
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    }
    st->db = db;
    st->nparams = nparams;
    if (!db->named) {
        st->sql = q;
        snprintf(st->name, sizeof st->name, "unnamed");
        *out = st;
        return 0;
    }
    snprintf(st->name, sizeof st->name, "s%d", ++db->next_stmt);
    PGresult *r = PQprepare(db->conn, st->name, q, nparams, NULL);
    free(q);
    if (!r || pg_result(db, r, NULL, NULL, NULL, err, sql) < 0) {
        if (!r)
            pg_fail(db, err, sql);
        free(st);
        return -1;
    }
    *out = st;
    return 0;
}

/* Sends one run of st: by its name, or (unnamed) its text. */
static int pg_send_stmt(struct db *db, const struct stmt *st, const char *const *params)
{
    return st->sql ? PQsendQueryParams(db->conn, st->sql, st->nparams, NULL, params, NULL, NULL, 0)
                   : PQsendQueryPrepared(db->conn, st->name, st->nparams, params, NULL, NULL, 0);
}

static int pg_run(struct stmt *st, const char *const *params, row_fn fn, void *arg,
                  long long *affected, struct zb_err *err)
{
    struct db *db = st->db;
    if (!pg_send_stmt(db, st, params))
        return pg_fail(db, err, st->name);
    PGresult *r = pg_await(db, err, st->name);
    return r ? pg_result(db, r, fn, arg, affected, err, st->name) : -1;
}

static void pg_finalize(struct stmt *st)
{
    if (!st)
        return;
    if (st->sql) {
        free(st->sql);
    } else if (pg_alive(st->db)) {         /* a given-up one would block here */
        char sql[32];
        snprintf(sql, sizeof sql, "DEALLOCATE %s", st->name);
        PQclear(PQexec(st->db->conn, sql));
    }
    free(st);
}

static long long pg_bulk_load(struct db *db, const struct zb_table *table, rows_fn next,
                              void *arg, struct zb_err *err)
{
    char sql[256];
    snprintf(sql, sizeof sql, "COPY %s FROM STDIN", table->name);
    PGresult *r = PQexec(db->conn, sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        PQclear(r);
        return pg_fail(db, err, sql);
    }
    PQclear(r);
    /* Rows are batched into a 64 KiB buffer so libpq sends few large messages. */
    size_t cap = 1 << 16, used = 0;
    char *buf = malloc(cap);
    long long rows = 0;
    int rc = 0;
    const char *const *fields;
    while (buf && (rc = next(arg, &fields, err)) == 1) {
        size_t need = zb_tsv_row_max(table->ncols, fields);
        if (used + need + 1 > cap) {
            if (used && PQputCopyData(db->conn, buf, (int)used) != 1) {
                rc = -1;
                pg_fail(db, err, "COPY data");
                break;
            }
            used = 0;
            if (need + 1 > cap) {
                char *bigger = realloc(buf, need + 1);
                if (!bigger) { rc = -1; zb_fail(err, ZB_ERR_SYS, "out of memory"); break; }
                buf = bigger;
                cap = need + 1;
            }
        }
        used += zb_tsv_row(buf + used, table->ncols, fields);
        rows++;
    }
    if (!buf)
        rc = zb_fail(err, ZB_ERR_SYS, "out of memory");
    if (rc >= 0 && used && PQputCopyData(db->conn, buf, (int)used) != 1)
        rc = pg_fail(db, err, "COPY data");
    free(buf);
    /* On a failed row source, abort the COPY so nothing half-loaded commits. */
    if (PQputCopyEnd(db->conn, rc < 0 ? "zipbench: load aborted" : NULL) != 1 && rc >= 0)
        rc = pg_fail(db, err, "COPY end");
    /* The COPY's own verdict comes last: a bad row or a lost server. */
    while ((r = PQgetResult(db->conn)) != NULL) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK && rc >= 0) {
            /* "COPY t, line 11, column town: ...": line counts COPY's rows. */
            const char *context = PQresultErrorField(r, PG_DIAG_CONTEXT);
            const char *line = context ? strstr(context, ", line ") : NULL;
            long long row = line ? strtoll(line + 7, NULL, 10) : 0;
            rc = pg_result(db, r, NULL, NULL, NULL, err, sql);
            if (err)
                err->row = row;
        } else {
            /* COPY's own count of the rows it stored must be what was sent. */
            long long stored = strtoll(PQcmdTuples(r), NULL, 10);
            if (rc >= 0 && stored != rows)
                rc = zb_fail(err, ZB_ERR_SQL, "pg: COPY stored %lld of %lld rows", stored, rows);
            PQclear(r);
        }
    }
    return rc < 0 ? -1 : rows;
}

static int pg_setting(struct db *db, const char *name, char *out, size_t len)
{
    const char *params[] = { name };
    PGresult *r = PQexecParams(db->conn, "SELECT current_setting($1)", 1, NULL, params, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    snprintf(out, len, "%s", ok ? PQgetvalue(r, 0, 0) : "?");
    PQclear(r);
    return ok ? 0 : -1;
}

static int pg_set_sync(struct db *db, enum zb_sync level, char *desc, size_t desclen,
                       struct zb_err *err)
{
    /* A standalone server has only on/off for commits that matter here:
     * FULL and NORMAL both wait for the WAL flush, OFF does not. */
    if (level != ZB_SYNC_DEFAULT &&
        pg_exec(db, level == ZB_SYNC_OFF ? "SET synchronous_commit = off"
                                         : "SET synchronous_commit = on", err) < 0)
        return -1;
    char commit[32], fsync[32];
    pg_setting(db, "synchronous_commit", commit, sizeof commit);
    pg_setting(db, "fsync", fsync, sizeof fsync);
    snprintf(desc, desclen, "synchronous_commit=%s fsync=%s", commit, fsync);
    return 0;
}

static long long pg_table_bytes(struct db *db, const char *table)
{
    const char *params[] = { table };
    PGresult *r = PQexecParams(db->conn, "SELECT pg_total_relation_size($1::regclass)", 1, NULL,
                               params, NULL, NULL, 0);
    long long bytes = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        bytes = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return bytes;
}

static const char *pg_version(struct db *db) { return db->version; }

static const char *pg_create_suffix(struct db *db)
{
    (void)db;
    return "";
}

/* The stamp: nextval of a sequence of the table's, in the UPDATE's own
 * target list, which a concurrent writer of the row makes it evaluate
 * again once that commits (READ COMMITTED's recheck), so the later commit
 * holds the larger stamp. */
static int pg_stamp_sql(const char *table, char *write, size_t len)
{
    int n = snprintf(write, len, "UPDATE %s SET stamp = nextval('%s_stamp') WHERE zip_code = ? "
                     "RETURNING stamp", table, table);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int pg_stamp_setup(struct db *db, const char *table, struct zb_err *err)
{
    char sql[512];
    snprintf(sql, sizeof sql, "CREATE SEQUENCE IF NOT EXISTS %s_stamp", table);
    if (pg_exec(db, sql, err) < 0)
        return -1;
    /* Above every stamp the table holds (stamps of before the sequence);
     * never back: only when the table is ahead of it. */
    snprintf(sql, sizeof sql, "SELECT setval('%s_stamp', m) FROM (SELECT max(stamp) AS m FROM %s) x "
             "WHERE m > (SELECT last_value FROM %s_stamp)", table, table, table);
    return pg_query(db, sql, 0, NULL, NULL, NULL, NULL, err);
}

/* The swap and its record, one transaction (PostgreSQL's DDL is
 * transactional; names are plain identifiers, conf.c's). */
static int pg_swap_table(struct db *db, const char *from, const char *to, long long rows,
                         long long *generation, struct zb_err *err)
{
    char sql[1024];
    snprintf(sql, sizeof sql,
             "BEGIN; CREATE TABLE IF NOT EXISTS " ZB_LOADS_TABLE " (name TEXT PRIMARY KEY, "
             "generation BIGINT NOT NULL, rows BIGINT NOT NULL, loaded_at TIMESTAMPTZ NOT NULL); "
             "DROP TABLE IF EXISTS %s; ALTER TABLE %s RENAME TO %s", to, from, to);
    long long g = 0;
    char rec[512], nrows[24];
    snprintf(nrows, sizeof nrows, "%lld", rows);
    snprintf(rec, sizeof rec, "%s", "INSERT INTO " ZB_LOADS_TABLE " VALUES (?, 1, ?, now()) "
             "ON CONFLICT (name) DO UPDATE SET generation = " ZB_LOADS_TABLE ".generation + 1, "
             "rows = excluded.rows, loaded_at = excluded.loaded_at RETURNING generation");
    if (pg_exec(db, sql, err) < 0 ||
        pg_query(db, rec, 2, (const char *const[]){ to, nrows }, zb_first_number, &g, NULL, err) < 0 ||
        pg_exec(db, "COMMIT", err) < 0) {
        PQclear(PQexec(db->conn, "ROLLBACK"));
        return -1;
    }
    if (generation)
        *generation = g;
    return 0;
}

/* The load lock is a session advisory lock on a hash of the table's name
 * (advisory locks are per database): released when the connection ends,
 * however the loader ended. */
static int pg_try_load_lock(struct db *db, const char *table, struct zb_err *err)
{
    char name[160];
    snprintf(name, sizeof name, "zipbench.load.%s", table);
    const char *params[] = { name };
    PGresult *r = PQexecParams(db->conn, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", 1,
                               NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return pg_result(db, r, NULL, NULL, NULL, err, "pg_try_advisory_lock");
    if (PQntuples(r) != 1) {
        PQclear(r);
        return zb_fail(err, ZB_ERR_SQL, "pg: pg_try_advisory_lock: no answer");
    }
    int taken = !strcmp(PQgetvalue(r, 0, 0), "t");
    PQclear(r);
    return taken;
}

/* ---- asynchronous ---- */


/* The connection went away (or was never there): everything sent is lost. */
static int pg_lost(struct db *db, struct zb_err *err, const char *what)
{
    char msg[400];
    whole_message(msg, sizeof msg, PQerrorMessage(db->conn));
    db->given_up = true;
    return zb_fail(err, ZB_ERR_CONN, "pg: %s: %s", what, msg[0] ? msg : "connection lost");
}

static int pg_connect_start(const struct backend_conf *bc, struct db **out, struct zb_err *err)
{
    struct pg_params p;
    struct db *db = pg_new(bc, &p);
    if (!db)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    *out = db;
    db->conn = PQconnectStartParams(p.keys, p.vals, 0);
    if (!db->conn)
        return zb_fail(err, ZB_ERR_SYS, "pg: out of memory");
    if (PQstatus(db->conn) == CONNECTION_BAD) {
        pg_lost(db, err, "cannot connect");
        if (err)
            err->kind = pg_connect_kind(PQerrorMessage(db->conn));
        return -1;
    }
    return ZB_WANT_WRITE;   /* as if PQconnectPoll had said PGRES_POLLING_WRITING */
}

static int pg_connect_step(struct db *db, struct zb_err *err)
{
    switch (PQconnectPoll(db->conn)) {
    case PGRES_POLLING_READING:
        return ZB_WANT_READ;
    case PGRES_POLLING_WRITING:
        return ZB_WANT_WRITE;
    case PGRES_POLLING_OK:
        if (PQsetnonblocking(db->conn, 1) != 0)
            return pg_lost(db, err, "PQsetnonblocking");
        pg_connected(db);
        return 0;
    default: {
        char msg[400];
        whole_message(msg, sizeof msg, PQerrorMessage(db->conn));
        db->given_up = true;
        char why[600];
        return zb_fail(err, pg_connect_kind(PQerrorMessage(db->conn)),
                       "pg: cannot connect to %s: %s%s", db->where, msg,
                       zb_password_file_problem(db->conf, why, sizeof why));
    }
    }
}

static int pg_socket(struct db *db) { return PQsocket(db->conn); }

/* What to wait for after sending: the answer, and the socket's room for
 * what libpq could not write yet. */
static int pg_wants(struct db *db, struct zb_err *err, const char *what)
{
    int pending = PQflush(db->conn);
    if (pending < 0)
        return pg_lost(db, err, what);
    return ZB_WANT_READ | (pending ? ZB_WANT_WRITE : 0);
}

static int pg_sent(struct db *db, int ok, struct zb_err *err, const char *what)
{
    if (!ok)
        return pg_lost(db, err, what);
    db->sent++;
    if (db->pipelined) {
        db->unsynced++;
        return ZB_WANT_READ;   /* written by flush() */
    }
    return pg_wants(db, err, what);
}

static int pg_async_prepare(struct db *db, const char *sql, int nparams, struct stmt **out,
                            struct zb_err *err)
{
    struct stmt *st = calloc(1, sizeof *st);
    char *q = pg_placeholders(sql);
    if (!st || !q || db->async_stmt) {
        free(st);
        free(q);
        return zb_fail(err, ZB_ERR_SYS, db->async_stmt ? "pg: one prepared statement only"
                                                       : "out of memory");
    }
    st->db = db;
    st->nparams = nparams;
    db->async_stmt = st;
    *out = st;
    if (!db->named) {   /* kept here, sent with each run: no answer to wait for */
        st->sql = q;
        snprintf(st->name, sizeof st->name, "unnamed");
        db->prepared_here = true;
        return ZB_WANT_WRITE;
    }
    snprintf(st->name, sizeof st->name, "s%d", ++db->next_stmt);
    int ok = PQsendPrepare(db->conn, st->name, q, nparams, NULL);
    free(q);
    return pg_sent(db, ok, err, "PREPARE");
}

static int pg_send(struct db *db, struct stmt *st, const char *sql, int nparams,
                   const char *const *params, struct zb_err *err)
{
    if (st)
        return pg_sent(db, pg_send_stmt(db, st, params), err, st->name);
    char *q = pg_placeholders(sql);
    if (!q)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    int ok = PQsendQueryParams(db->conn, q, nparams, NULL, params, NULL, NULL, 0);
    free(q);
    return pg_sent(db, ok, err, "query");
}

static int pg_async_result(struct db *db, row_fn fn, void *arg, struct zb_err *err)
{
    if (db->prepared_here) {   /* the unnamed statement's "PREPARE": done */
        db->prepared_here = false;
        return 0;
    }
    int wants = pg_wants(db, err, "send");
    if (wants < 0)
        return -1;
    /* Read only when what libpq holds does not finish the next result
     * (a pipeline's answers often come in one read), at most once a call:
     * no read that would only say EAGAIN. */
    bool consumed = false;
    for (;;) {
        if (db->sent == 0 || PQisBusy(db->conn)) {
            if (consumed)
                return wants;
            if (!PQconsumeInput(db->conn))
                return pg_lost(db, err, "receive");
            consumed = true;
            if (db->sent == 0)
                return wants;   /* an idle connection: still there */
            continue;
        }
        PGresult *r = PQgetResult(db->conn);
        if (r && PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
            PQclear(r);            /* the end of a batch: no statement of ours */
            continue;
        }
        if (r) {                   /* keep the last, as PQexec does */
            PQclear(db->last);
            db->last = r;
            continue;
        }
        /* NULL: the statement is over. */
        r = db->last;
        db->last = NULL;
        db->sent--;
        if (!r)
            return pg_lost(db, err, "no result");
        if (PQresultStatus(r) == PGRES_PIPELINE_ABORTED) {
            PQclear(r);
            return zb_fail(err, ZB_ERR_SQL, "pg: not run: an earlier statement of its "
                           "pipeline batch failed");
        }
        return pg_result(db, r, fn, arg, NULL, err, "lookup");
    }
}

static int pg_pipeline(struct db *db, struct zb_err *err)
{
    if (!PQenterPipelineMode(db->conn))
        return pg_lost(db, err, "PQenterPipelineMode");
    db->pipelined = true;
    return 0;
}

static int pg_flush(struct db *db, struct zb_err *err)
{
    if (db->pipelined && db->unsynced) {
        db->unsynced = 0;
        if (!PQpipelineSync(db->conn))
            return pg_lost(db, err, "Sync");
    }
    return pg_wants(db, err, "send");
}

static void pg_abort(struct db *db)
{
    db->given_up = true;
    int fd = PQsocket(db->conn);
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
}

static const struct backend_async pg_async = {
    .connect_start = pg_connect_start,
    .connect_step = pg_connect_step,
    .socket = pg_socket,
    .prepare = pg_async_prepare,
    .send = pg_send,
    .result = pg_async_result,
    .pipeline = pg_pipeline,
    .flush = pg_flush,
    .abort = pg_abort,
};

const struct backend_driver backend_pg = {
    .name = "pg",
    .analyze = "ANALYZE ",
    .check_key = pg_check_key,
    .open = pg_open,
    .close = pg_close,
    .alive = pg_alive,
    .exec = pg_exec,
    .query = pg_query,
    .prepare = pg_prepare,
    .run = pg_run,
    .finalize = pg_finalize,
    .bulk_load = pg_bulk_load,
    .set_sync = pg_set_sync,
    .table_bytes = pg_table_bytes,
    .version = pg_version,
    .create_suffix = pg_create_suffix,
    .swap_table = pg_swap_table,
    .stamp_sql = pg_stamp_sql,
    .stamp_setup = pg_stamp_setup,
    .generation_sql = "SELECT generation FROM " ZB_LOADS_TABLE " WHERE name = ?",
    .ident_max = 63,   /* NAMEDATALEN - 1 */
    .try_load_lock = pg_try_load_lock,
    .async = &pg_async,
};
