/* The MariaDB driver's asynchronous side, for the server's event loops:
 * Connector/C's non-blocking API (MYSQL_OPT_NONBLOCK;
 * mysql_real_connect_start/_cont, mysql_stmt_prepare/execute/
 * store_result_start/_cont). Each call runs the library's own coroutine
 * until it would block and says which socket event it waits for. One
 * statement at a time: the API has no pipelining. */
#include <mysql.h>
#include <sys/socket.h>
#include <errno.h>
#include <string.h>

#include "backend_mysql.h"

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
    if (!db->answered && db->reported) {
        /* Idle right after an answer: the socket is watched for reading
         * (level-triggered), so a close that comes now is seen on the next
         * call, which checks; a look now would find nothing (EAGAIN). */
        db->reported = false;
        return ZB_WANT_READ;
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
    db->reported = true;
    return db->executed ? statement_rows(db->cur, fn, arg, err) : 0;
}

static void my_abort(struct db *db)
{
    db->broken = true;
    mariadb_cancel(db->h);
}

const struct backend_async my_async = {
    .connect_start = my_connect_start,
    .connect_step = my_connect_step,
    .socket = my_sock,
    .prepare = my_async_prepare,
    .send = my_send,
    .result = my_async_result,
    .abort = my_abort,
};
