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

#include "server.h"

void perreq_submit(struct lookup *lk)
{
    struct lb *lb = lk->lb;
    struct zb_err err = { 0 };
    struct dbconn *dc = dbconn_open(lb, DC_PER_REQUEST, &err);
    if (!dc) {
        lookup_finish(lk, LOOKUP_UNAVAILABLE, &err);
        return;
    }
    dc->owner = lk;
    APR_RING_INSERT_TAIL(&lb->perreq, dc, dbconn, link);
}

void perreq_conn_ready(struct dbconn *dc)
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

void perreq_conn_failed(struct dbconn *dc, const struct zb_err *err)
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
