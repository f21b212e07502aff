/* One asynchronous database connection of a lane.
 *
 * Contract: a dbconn is owned by one lane (one loop) and one strategy,
 * whose state it carries (owner) and for which it keeps one word (tag);
 * it drives the driver's non-blocking calls (lib/backend.h) from its
 * socket's watch, and reports up only through its strategy's callbacks
 * (prepare, conn_ready, conn_failed) and each lookup's lookup_finish:
 * never by name. A closed connection is freed once the loop's iteration
 * is over (loop_retire), since the iteration's epoll batch may still hold
 * an event for it. Calls only down: lookup's end, lane, served, loop,
 * lib's drivers. */
#ifndef ZB_DBCONN_H
#define ZB_DBCONN_H

#include "lookup.h"
#include "strategy.h"

enum dc_state { DC_CONNECTING, DC_PREPARING, DC_READY };

struct dbconn;
APR_RING_HEAD(conn_list, dbconn);

struct dbconn {
    struct watch w;                /* first: its socket's */
    APR_RING_ENTRY(dbconn) link;   /* in one list of its strategy's */
    struct lane *lane;
    const struct strategy *st;     /* whom it reports to */
    void *owner;                   /* its strategy's state on lane */
    void *tag;                     /* its strategy's, to use as it likes */
    struct db *db;
    struct stmt *lookup;           /* its prepared lookup, if its strategy prepared one */
    enum dc_state state;
    int fd;                        /* watched socket, -1 before the first */
    uint32_t events;               /* epoll interest now */
    unsigned gen;                  /* the backend's gen when it was opened */
    int connect_limit_s;           /* its connect is given up after this */
    uint64_t since_ns;             /* connecting: since when; idle: since when */
    struct lookup_list sent;       /* sent, answers not yet in, in order */
    int nsent;
};

/* Opens a connection of strategy st (its state owner) for lane, its
 * connect bounded by connect_limit_s; NULL if it could not even start
 * (err says why; the failure is counted). Once connected, st->prepare
 * sets it up; then it reports to st (conn_ready), never before this
 * returns. */
struct dbconn *dbconn_open(struct lane *lane, const struct strategy *st, void *owner,
                           int connect_limit_s, struct zb_err *err);
/* For a strategy's prepare: the lookup prepared on dc (*dc->lookup);
 * dbconn_prepare_pipelined enters pipeline mode first and writes the
 * PREPARE out. -1 with err, else 1: ready once its answer comes. */
int  dbconn_prepare(struct dbconn *dc, struct zb_err *err);
int  dbconn_prepare_pipelined(struct dbconn *dc, struct zb_err *err);
/* Sends lk on dc (ready) and watches for its answer. */
void dbconn_send(struct dbconn *dc, struct lookup *lk);
/* Appends lk to dc's pipeline (ready, in pipeline mode), unwritten until
 * dbconn_flush. false if dc was lost doing so (its strategy heard
 * conn_failed: dc is gone). */
bool dbconn_queue(struct dbconn *dc, struct lookup *lk);
/* Writes what was queued on dc, in one go. false if dc was lost. */
bool dbconn_flush(struct dbconn *dc);
/* Its deadline (the connect's, or query_timeout_ms for the oldest
 * statement sent): 0 if none. */
uint64_t dbconn_deadline(const struct dbconn *dc);
/* Past its deadline: given up (ZB_ERR_TIMEOUT), true; else false, and
 * *next lowered to its deadline if it has one. */
bool dbconn_expired(struct dbconn *dc, uint64_t now, uint64_t *next);
/* Gives dc up (timeout, shutdown): its strategy hears conn_failed(err). */
void dbconn_fail(struct dbconn *dc, const struct zb_err *err);
/* Closes a connection with nothing sent (idle, surplus, answered). */
void dbconn_close(struct dbconn *dc);
/* An idle connection moves to another loop: out of this loop's epoll set,
 * and arrive(&dc->w) called once this iteration is over (on this loop's
 * thread; arrive hands it to the other loop). On the taking loop,
 * dbconn_join puts it in lane's (and owner's) epoll set: false if it
 * could not be watched, and it was closed. */
void dbconn_leave(struct dbconn *dc, void (*arrive)(struct watch *w));
bool dbconn_join(struct dbconn *dc, struct lane *lane, void *owner);

#endif
