/* Strategy per-request: a fresh connection for every lookup, connected
 * asynchronously, so c lookups at once are c connects at once, as c PHP
 * processes would make them; the lookup is a one-shot parameterized query
 * (no PREPARE, as a PHP page that does not cache statements), then the
 * connection is closed.
 *
 * A connect turned away for load is this lookup's alone (it may be "too
 * many connections" while the pool is fine): 503, the backend is not
 * marked down. One the database refuses for good (ZB_ERR_REFUSED), and a
 * connect (per_request_connect_timeout_s, long: the cell measures the
 * connect, as PHP waits for it) or query that times out, marks it down. */
#include <stdlib.h>

#include "dbconn.h"

static void submit(struct lookup *lk)
{
    struct lb *lb = lk->lb;
    struct zb_err err = { 0 };
    struct dbconn *dc = dbconn_open(lb, &per_request_strategy, &err);
    if (!dc) {
        lookup_finish(lk, LOOKUP_UNAVAILABLE, &err);
        return;
    }
    dc->owner = lk;
    APR_RING_INSERT_TAIL(&lb->perreq, dc, dbconn, link);
}

/* Connected: its query; or answered: closed. */
static void conn_ready(struct dbconn *dc)
{
    struct lookup *lk = dc->owner;
    if (lk) {   /* connected: its query */
        dc->owner = NULL;
        dbconn_send(dc, lk);
        return;
    }
    APR_RING_REMOVE(dc, link);   /* answered */
    dbconn_close(dc);
}

static void conn_failed(struct dbconn *dc, const struct zb_err *err)
{
    struct lookup *lk = dc->owner ? dc->owner : dc->nsent ? APR_RING_FIRST(&dc->sent) : NULL;
    if (dc->owner)
        BUMP(dc->lb->st.connect_failures);
    struct lb *lb = dc->lb;
    APR_RING_REMOVE(dc, link);
    dbconn_close(dc);
    if (err->kind == ZB_ERR_TIMEOUT || err->kind == ZB_ERR_REFUSED)
        lb_down(lb, err);
    if (lk)
        lookup_finish(lk, lookup_rc_of(err), err);
}

/* Connects and queries that took too long. */
static uint64_t deadlines(struct lb *lb, uint64_t now)
{
    uint64_t next = 0;
    struct dbconn *dc = APR_RING_FIRST(&lb->perreq), *nx;
    for (; dc != APR_RING_SENTINEL(&lb->perreq, dbconn, link); dc = nx) {
        nx = APR_RING_NEXT(dc, link);
        if (dbconn_expired(dc, now, &next))
            return now;   /* the list changed: look again at once */
    }
    return next;
}

static void init(struct lb *lb)
{
    APR_RING_INIT(&lb->perreq, dbconn, link);
}

static void fail_all(struct lb *lb, const struct zb_err *err)
{
    while (!APR_RING_EMPTY(&lb->perreq, dbconn, link))
        dbconn_fail(APR_RING_FIRST(&lb->perreq), err);
}

const struct strategy per_request_strategy = {
    .init = init, .submit = submit, .conn_ready = conn_ready, .conn_failed = conn_failed,
    .deadlines = deadlines, .fail_all = fail_all, .per_lookup = true,
};
