/* Strategy pipelined: one (or pipeline_connections) persistent connection
 * per backend per loop in pipeline mode, for drivers that can (pg). Every
 * lookup of the loop is appended to the connection with the fewest in
 * flight, and everything sent during one iteration of the loop goes out
 * in one write with one Sync at its end (at the end of the loop's
 * iteration, after MHD_run), so many HTTP requests share each round trip.
 *
 * A table whose statements commit alone (a write table's) gets a Sync
 * after each statement instead, at once.
 *
 * Lookups that come while no connection is ready wait for one, at most
 * acquire_timeout_ms (then 503, counted as overload). A connection lost or
 * timed out fails every lookup in its pipeline with 503 (none is retried:
 * each may have run) and marks the backend down; the next lookup opens a
 * new one. A stale prepared lookup (ZB_ERR_STALE: a reload changed the
 * table's columns) closes the connection too, but its lookups, which did
 * not run, are retried once on a fresh one, and the backend is up. A
 * connect that fails is an outage only if it was refused or no
 * other connection of the loop is ready; else (slow, or turned away under
 * load) another is tried after LANE_RETRY_NS, as pool.c does. */
#include <stdlib.h>

#include "dbconn.h"

#define MAX_PIPES 8

/* Pipelined's counters: its figures (strategy.h). */
enum { SENT, BATCHES, NFIGURES };
static const char *const figure_names[NFIGURES + 1] = {
    [SENT] = "pipelined",          /* lookups sent in pipeline mode */
    [BATCHES] = "batches",         /* flushes, a Sync each */
};

/* Pipelined's state on a lane. */
struct pipelined {
    struct lane *lane;
    counter *fig;                  /* its figures */
    struct {
        struct dbconn *dc;
        bool unflushed;            /* sent to since its last flush */
    } pipe[MAX_PIPES];
    int n, target;
    struct lookup_list waiting;    /* lookups waiting for a connection ready */
};

/* The ready connection with the fewest in flight (its index), or -1. */
static int least_busy(struct pipelined *ps)
{
    int best = -1;
    for (int i = 0; i < ps->n; i++) {
        struct dbconn *dc = ps->pipe[i].dc;
        if (dc->state == DC_READY && (best < 0 || dc->nsent < ps->pipe[best].dc->nsent))
            best = i;
    }
    return best;
}

static void fail_waiting(struct pipelined *ps, const struct zb_err *err)
{
    while (!APR_RING_EMPTY(&ps->waiting, lookup, link)) {
        struct lookup *lk = APR_RING_FIRST(&ps->waiting);
        APR_RING_REMOVE(lk, link);
        lookup_finish(lk, LOOKUP_UNAVAILABLE, err);
    }
}

/* A connect failed: down (refused, or no other connection of the loop
 * ready), and the lookups waiting fail; else they wait. */
static void connect_failed(struct pipelined *ps, const struct zb_err *err)
{
    if (lane_connect_failed(ps->lane, err, least_busy(ps) >= 0))
        fail_waiting(ps, err);
}

static void open_one(struct pipelined *ps)
{
    struct lane *lane = ps->lane;
    if (lane->loop->now < lane->grow_after_ns)
        return;
    struct zb_err err = { 0 };
    struct dbconn *dc = dbconn_open(lane, &pipelined_strategy, ps, lane->sv->conf.connect_timeout_s,
                                    &err);
    if (!dc) {
        connect_failed(ps, &err);
        return;
    }
    ps->pipe[ps->n].dc = dc;
    ps->pipe[ps->n].unflushed = false;
    ps->n++;
}

/* Takes pipe i out of the list (the last moves into its place). */
static void remove_at(struct pipelined *ps, int i)
{
    ps->pipe[i] = ps->pipe[--ps->n];
}

/* Idle ones the driver no longer calls alive (pg: one that fell back to
 * another host than its turn's, which may be back), or opened before a
 * reload made their prepared lookup stale, are closed: the next lookups
 * open others. */
static void retire(struct pipelined *ps)
{
    struct served *sv = ps->lane->sv;
    for (int i = 0; i < ps->n; i++) {
        struct dbconn *dc = ps->pipe[i].dc;
        if (dc->state == DC_READY && !dc->nsent && !ps->pipe[i].unflushed &&
            (!sv->drv->alive(dc->db) || dc->gen != atomic_load(&sv->gen))) {
            remove_at(ps, i--);
            dbconn_close(dc);
        }
    }
}

/* lk appended to pipe i, written at the end of the iteration; a write
 * (its table's statements each commit alone) at once, with a Sync of its
 * own: the statements between two Syncs are one transaction, and one
 * that fails (a deadlock) rolls back the others, which other requests
 * may have been answered for. */
static void queue_on(struct pipelined *ps, int i, struct lookup *lk)
{
    if (!dbconn_queue(ps->pipe[i].dc, lk))
        return;   /* it was lost, and is gone */
    BUMP(ps->fig[SENT]);
    ps->pipe[i].unflushed = true;
    if (ps->lane->sv->autocommit) {
        ps->pipe[i].unflushed = false;
        BUMP(ps->fig[BATCHES]);
        dbconn_flush(ps->pipe[i].dc);
    }
}

static void submit(void *state, struct lookup *lk)
{
    struct pipelined *ps = state;
    struct lane *lane = ps->lane;
    retire(ps);
    int i = least_busy(ps);
    if (i >= 0) {
        struct dbconn *dc = ps->pipe[i].dc;
        queue_on(ps, i, lk);
        if (dc->nsent > 1 && ps->n < ps->target)
            open_one(ps);   /* this one is busy: another for the next lookups */
        return;
    }
    lk->since_ns = lane->loop->now;
    APR_RING_INSERT_TAIL(&ps->waiting, lk, lookup, link);
    loop_deadline(lane->loop, lk->since_ns + (uint64_t)lane->sv->conf.acquire_timeout_ms * 1000000u);
    if (ps->n < ps->target)
        open_one(ps);
}

static int index_of(struct pipelined *ps, struct dbconn *dc)
{
    for (int i = 0; i < ps->n; i++)
        if (ps->pipe[i].dc == dc)
            return i;
    return -1;
}

/* Ready: the lookups waiting go on it. */
static void conn_ready(struct dbconn *dc)
{
    struct pipelined *ps = dc->owner;
    int i;
    while (!APR_RING_EMPTY(&ps->waiting, lookup, link) && (i = index_of(ps, dc)) >= 0) {
        struct lookup *lk = APR_RING_FIRST(&ps->waiting);
        APR_RING_REMOVE(lk, link);
        queue_on(ps, i, lk);
    }
}

static void conn_failed(struct dbconn *dc, const struct zb_err *err)
{
    struct pipelined *ps = dc->owner;
    struct lane *lane = ps->lane;
    bool opening = dc->state != DC_READY;
    int at = index_of(ps, dc);
    if (at >= 0)
        remove_at(ps, at);
    if (opening) {
        BUMP(lane->st.connect_failures);
        dbconn_close(dc);
        connect_failed(ps, err);
        return;
    }
    struct lookup_list lost;
    APR_RING_INIT(&lost, lookup, link);
    APR_RING_CONCAT(&lost, &dc->sent, lookup, link);
    served_bump_gen(lane->sv, dc->gen);
    dbconn_close(dc);
    bool stale = err->kind == ZB_ERR_STALE;
    if (!stale)
        lane_down(lane, err);
    while (!APR_RING_EMPTY(&lost, lookup, link)) {
        struct lookup *lk = APR_RING_FIRST(&lost);
        APR_RING_REMOVE(lk, link);
        if (stale && !lk->retried && lk->rows == 0) {
            lk->retried = true;   /* it did not run: a fresh connection prepares again */
            submit(ps, lk);
        } else {
            lookup_finish(lk, LOOKUP_UNAVAILABLE, err);
        }
    }
    if (!stale && least_busy(ps) < 0)
        fail_waiting(ps, err);
}

static uint64_t deadlines(void *state, uint64_t now)
{
    struct pipelined *ps = state;
    struct lane *lane = ps->lane;
    const struct backend_conf *bc = &lane->sv->conf;
    uint64_t next = 0;
    for (int i = 0; i < ps->n; i++)
        if (dbconn_expired(ps->pipe[i].dc, now, &next))
            return now;   /* look again at once */
    uint64_t wait_ns = (uint64_t)bc->acquire_timeout_ms * 1000000u;
    while (!APR_RING_EMPTY(&ps->waiting, lookup, link)) {
        struct lookup *lk = APR_RING_FIRST(&ps->waiting);
        if (lk->since_ns + wait_ns > now) {
            next = deadline_min(next, lk->since_ns + wait_ns);
            break;
        }
        APR_RING_REMOVE(lk, link);
        struct zb_err err;
        zb_fail(&err, ZB_ERR_CONN, "backend %s: no pipeline connection within %d ms", bc->name,
                bc->acquire_timeout_ms);
        lookup_overloaded(lk, &err);
    }
    /* Lookups wait with no connection opening: one more, once the pause
     * after a failed connect is over. */
    if (!APR_RING_EMPTY(&ps->waiting, lookup, link) && ps->n < ps->target) {
        if (now >= lane->grow_after_ns)
            open_one(ps);
        else
            next = deadline_min(next, lane->grow_after_ns);
    }
    return next;
}

/* The end of the iteration: what each connection was sent goes out, one
 * write (and one Sync) per connection. A flush that loses its connection
 * changes the list: it is looked through again. */
static void flush_all(void *state)
{
    struct pipelined *ps = state;
    for (int i = 0; i < ps->n; i++) {
        if (!ps->pipe[i].unflushed)
            continue;
        ps->pipe[i].unflushed = false;
        BUMP(ps->fig[BATCHES]);
        if (!dbconn_flush(ps->pipe[i].dc))
            i = -1;
    }
}

static void *init(struct lane *lane, counter *figures, struct zb_err *err)
{
    int want = lane->sv->conf.pipeline_connections;
    struct pipelined *ps = calloc(1, sizeof *ps);
    if (!ps) {
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        return NULL;
    }
    ps->lane = lane;
    ps->fig = figures;
    APR_RING_INIT(&ps->waiting, lookup, link);
    ps->target = want < 1 ? 1 : want > MAX_PIPES ? MAX_PIPES : want;
    return ps;
}

static void destroy(void *state)
{
    free(state);
}

static void fail_all(void *state, const struct zb_err *err)
{
    struct pipelined *ps = state;
    while (ps->n)
        dbconn_fail(ps->pipe[0].dc, err);
    fail_waiting(ps, err);
}

static bool takes(const struct backend_driver *drv)
{
    return drv->async && drv->async->pipeline;
}

const struct strategy pipelined_strategy = {
    .takes = takes, .cannot = "cannot pipeline", .figures = figure_names, .init = init, .destroy = destroy,
    .submit = submit, .prepare = dbconn_prepare_pipelined, .conn_ready = conn_ready,
    .conn_failed = conn_failed, .deadlines = deadlines, .iterated = flush_all,
    .fail_all = fail_all,
};
