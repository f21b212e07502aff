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

/* Per-request's counters: its figures (strategy.h). */
enum { CONNECTS, NFIGURES };
static const char *const figure_names[NFIGURES + 1] = {
    [CONNECTS] = "connects",       /* connections opened for a lookup each */
};

/* Per-request's state on a lane: its connections, each with the lookup
 * it was opened for (its tag) until that is sent. */
struct per_request {
    struct lane *lane;
    counter *fig;                  /* its figures */
    struct conn_list conns;
};

static void submit(void *state, struct lookup *lk)
{
    struct per_request *f = state;
    struct lane *lane = f->lane;
    struct zb_err err = { 0 };
    struct dbconn *dc = dbconn_open(lane, &per_request_strategy, f,
                                    lane->sv->conf.per_request_connect_timeout_s, &err);
    if (!dc) {
        lookup_finish(lk, LOOKUP_UNAVAILABLE, &err);
        return;
    }
    dc->tag = lk;
    APR_RING_INSERT_TAIL(&f->conns, dc, dbconn, link);
}

/* Connected: nothing to prepare, its lookup is a one-shot query. */
static int prepare(struct dbconn *dc, struct zb_err *err)
{
    (void)err;
    struct per_request *f = dc->owner;
    BUMP(f->fig[CONNECTS]);
    return 0;
}

/* Connected: its query; or answered: closed. */
static void conn_ready(struct dbconn *dc)
{
    struct lookup *lk = dc->tag;
    if (lk) {   /* connected: its query */
        dc->tag = NULL;
        dbconn_send(dc, lk);
        return;
    }
    APR_RING_REMOVE(dc, link);   /* answered */
    dbconn_close(dc);
}

static void conn_failed(struct dbconn *dc, const struct zb_err *err)
{
    struct lookup *lk = dc->tag ? dc->tag : dc->nsent ? APR_RING_FIRST(&dc->sent) : NULL;
    struct lane *lane = dc->lane;
    if (dc->tag)
        BUMP(lane->st.connect_failures);
    APR_RING_REMOVE(dc, link);
    dbconn_close(dc);
    if (err->kind == ZB_ERR_TIMEOUT || err->kind == ZB_ERR_REFUSED)
        lane_down(lane, err);
    if (lk)
        lookup_finish(lk, lookup_rc_of(err), err);
}

/* Connects and queries that took too long. */
static uint64_t deadlines(void *state, uint64_t now)
{
    struct per_request *f = state;
    uint64_t next = 0;
    struct dbconn *dc = APR_RING_FIRST(&f->conns), *nx;
    for (; dc != APR_RING_SENTINEL(&f->conns, dbconn, link); dc = nx) {
        nx = APR_RING_NEXT(dc, link);
        if (dbconn_expired(dc, now, &next))
            return now;   /* the list changed: look again at once */
    }
    return next;
}

static void *init(struct lane *lane, counter *figures, struct zb_err *err)
{
    struct per_request *f = calloc(1, sizeof *f);
    if (!f) {
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        return NULL;
    }
    f->lane = lane;
    f->fig = figures;
    APR_RING_INIT(&f->conns, dbconn, link);
    return f;
}

static void destroy(void *state)
{
    free(state);
}

static void fail_all(void *state, const struct zb_err *err)
{
    struct per_request *f = state;
    while (!APR_RING_EMPTY(&f->conns, dbconn, link))
        dbconn_fail(APR_RING_FIRST(&f->conns), err);
}

static bool takes(const struct backend_driver *drv)
{
    return drv->async != NULL;
}

const struct strategy per_request_strategy = {
    .takes = takes, .cannot = "is in-process", .in_process = &in_process_per_request_strategy,
    .figures = figure_names, .init = init, .destroy = destroy, .submit = submit, .prepare = prepare,
    .conn_ready = conn_ready, .conn_failed = conn_failed, .deadlines = deadlines,
    .fail_all = fail_all,
};
