/* The MariaDB driver's own header: what its four files share, and no one
 * else includes (everything outside the driver goes through backend.h).
 * Each file uses only those below it:
 *
 *   backend_mysql.c           the synchronous driver (loader, sqlbench) and
 *                             the one struct backend_driver of the table
 *   backend_mysql_async.c     the asynchronous calls (the server's loops):
 *                             Connector/C's non-blocking _start/_cont API
 *   backend_mysql_settings.c  the crash-safe change of a global setting
 *                             (innodb_flush_log_at_trx_commit): set_sync,
 *                             recover, and the put-back on close
 *   backend_mysql_conn.c      handles, statements, errors, plain queries
 *
 * Every function declared here fails as the driver's calls do: -1 with err
 * filled (kind classified from MariaDB's error number), a connection error
 * marking the connection broken. */
#ifndef ZB_BACKEND_MYSQL_H
#define ZB_BACKEND_MYSQL_H

#include <mysql.h>
#include <stdbool.h>

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
    bool reported;             /* an answer was just reported: the next idle
                                * call need not look at the socket (below) */
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
    bool rbound;               /* rbind is the statement's result bind */
    /* The parameters as last bound: each one's own copy (pbuf, pcap bytes),
     * so that a run with the same types needs no new bind, and the types
     * go to the server once, not with every run. */
    char **pbuf;
    unsigned long *pcap;
    bool pbound;
};

extern const struct backend_driver backend_mysql;
/* The asynchronous calls (backend_mysql_async.c). */
extern const struct backend_async my_async;

/* ---- backend_mysql_conn.c: connections, statements, errors ---- */

/* A handle with the options both sides share (charset, the session's
 * sql_mode, the password file); NULL when out of memory. Not connected. */
struct db *my_new(const struct backend_conf *bc);
/* The host to connect to: "localhost" for a socket, else bc's or 127.0.0.1. */
const char *my_host(const struct backend_conf *bc);
/* A failed connect's kind from its error number: ZB_ERR_REFUSED (the
 * backend is down) or ZB_ERR_CONN. */
enum zb_err_kind my_connect_kind(unsigned e);
/* Fills err for a connect that failed, naming the host or socket; -1. */
int my_connect_failed(struct db *db, const struct backend_conf *bc, enum zb_err_kind kind,
                      struct zb_err *err);
/* Once connected: the CREATE TABLE suffix and the version string. */
void my_connected(struct db *db);
/* Fails with the connection's / the statement's last error about what; -1. */
int my_fail(struct db *db, struct zb_err *err, const char *what);
int stmt_fail(struct stmt *st, struct zb_err *err, const char *what);
/* A statement of no parameters, its result (if any) drained. */
int my_exec(struct db *db, const char *sql, struct zb_err *err);
/* The driver's prepare() and run() (backend.h). */
int my_prepare(struct db *db, const char *sql, int nparams, struct stmt **out,
               struct zb_err *err);
int my_run(struct stmt *st, const char *const *params, row_fn fn, void *arg,
           long long *affected, struct zb_err *err);
/* The row a MariaDB message names ("... at row 11"), or 0. */
long long row_named_in(const char *msg);
/* The driver's query(): prepare, run, rows to fn, free. */
int my_query(struct db *db, const char *sql, int nparams, const char *const *params, row_fn fn,
             void *arg, long long *affected, struct zb_err *err);
/* SELECT @@name as text into out ("?" if it cannot be read); 0 or -1. */
int my_variable(struct db *db, const char *name, char *out, size_t len);
/* A statement handle on db, not prepared (NULL when out of memory); freed
 * with stmt_free, which takes NULL. */
struct stmt *stmt_new(struct db *db);
void stmt_free(struct stmt *st);
/* Once prepared: bind buffers for nparams parameters and the result's
 * columns (256 bytes each, grown when a value is longer). */
int stmt_setup(struct stmt *st, int nparams, struct zb_err *err);
/* Binds params (text, NULL for SQL NULL; the caller keeps them until the
 * statement ran). */
int bind_params(struct stmt *st, const char *const *params, struct zb_err *err);
/* The rows of an executed statement to fn, read as they come or from the
 * stored result; then the result is freed, so the statement can run again. */
int fetch_rows(struct stmt *st, row_fn fn, void *arg, struct zb_err *err);
/* A statement's rows once it ran: its result set's, or, for one with
 * none that changed one row and set LAST_INSERT_ID(expr) (the write
 * table's stamp: backend.h's stamp_sql), that value as one row. */
int statement_rows(struct stmt *st, row_fn fn, void *arg, struct zb_err *err);

/* The first value of a one-column result, as text (a row_fn). */
struct text_out { char v[256]; bool found; };
int first_text(void *arg, int n, const char *const *v, const size_t *l);

/* ---- backend_mysql_settings.c: the global durability knob ---- */

/* The driver's set_sync() and recover() (backend.h). */
int my_set_sync(struct db *db, enum zb_sync level, char *desc, size_t desclen,
                struct zb_err *err);
int my_recover(struct db *db, char *note, size_t notelen, struct zb_err *err);
/* On close, when db changed the knob (db->saved_flush >= 0): deletes its
 * record and puts the value back unless another live session still needs
 * the change. Errors are ignored: recover() finds what is left. */
void my_release_sync(struct db *db);

#endif
