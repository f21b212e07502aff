/* One asynchronous database connection of a loop.
 *
 * Contract: a dbconn is owned by one loop (its lb's) and one strategy; it
 * drives the driver's non-blocking calls (lib/backend.h) from its socket's
 * watch, and reports up only through its strategy's callbacks (conn_ready,
 * conn_failed) and each lookup's lookup_finish: never by name. A closed
 * connection is freed at the end of the loop's iteration (dbconn_settle),
 * since the iteration's epoll batch may still hold an event for it. Calls
 * only down: lb, served, loop, lib's drivers. */
#ifndef ZB_DBCONN_H
#define ZB_DBCONN_H

#include "lb.h"
#include "loop.h"
#include "strategy.h"

enum dc_state { DC_CONNECTING, DC_PREPARING, DC_READY };

struct dbconn {
    struct watch w;                /* first: its socket's */
    APR_RING_ENTRY(dbconn) link;   /* in one list of its lb (see struct lb) */
    struct lb *lb;
    const struct strategy *st;     /* whom it reports to */
    struct db *db;
    struct stmt *lookup;           /* its prepared lookup (none per lookup) */
    enum dc_state state;
    int fd;                        /* watched socket, -1 before the first */
    uint32_t events;               /* epoll interest now */
    unsigned gen;                  /* the backend's gen when it was opened */
    uint64_t since_ns;             /* connecting: since when; idle: since when */
    struct lookup_list sent;       /* sent, answers not yet in, in order */
    int nsent;
    bool unflushed;                /* pipelined: sent since the last flush */
    struct lookup *owner;          /* per lookup: its lookup, until sent */
    bool in_use;                   /* pooled: lent to a lookup (in lb->busy) */
    struct dbconn *next_aside;     /* in its loop's closed or leaving list */
    struct loop *give_to;          /* leaving: the loop it goes to */
};

/* Opens a connection of strategy st for lb; NULL if it could not even
 * start (err says why; the failure is counted). It reports back to st
 * (conn_ready) once connected and prepared, never before this returns. */
struct dbconn *dbconn_open(struct lb *lb, const struct strategy *st, struct zb_err *err);
/* Sends lk on dc (ready). Pipelined sends are written at the end of the
 * loop's iteration, all at once (dbconn_flush_all). */
void dbconn_send(struct dbconn *dc, struct lookup *lk);
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
/* The end of an iteration: the pipelined sends of l written, one write
 * per connection. */
void dbconn_flush_all(struct loop *l);
/* The end of an iteration: frees what was closed, hands over what leaves. */
void dbconn_settle(struct loop *l);
/* An idle connection moves to another loop: out of this loop's epoll set
 * and set aside (dbconn_leave, on the giving loop), put in `to`'s given
 * list when the iteration is over (dbconn_settle), into lb's on the taking
 * loop (dbconn_join). false if it could not be watched: it was closed. */
void dbconn_leave(struct dbconn *dc, struct loop *to);
bool dbconn_join(struct dbconn *dc, struct lb *lb);
/* The first connection other loops gave l (under its lock), or NULL. */
struct dbconn *dbconn_given(struct loop *l);

#endif
