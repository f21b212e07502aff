/* Strategy pipelined: one (or pipeline_connections) persistent connection
 * per backend per loop in pipeline mode, for drivers that can (pg). Every
 * lookup of the loop is appended to the connection with the fewest in
 * flight, and everything sent during one iteration of the loop goes out
 * in one write with one Sync at its end (dbconn_flush, called by the loop
 * after MHD_run), so many HTTP requests share each round trip.
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
 * load) another is tried after LB_RETRY_NS, as pool.c does. */
#include <stdlib.h>

#include "dbconn.h"

static struct dbconn *least_busy(struct lb *lb)
{
    struct dbconn *best = NULL;
    for (int i = 0; i < lb->npipes; i++) {
        struct dbconn *dc = lb->pipe[i];
        if (dc->state == DC_READY && (!best || dc->nsent < best->nsent))
            best = dc;
    }
    return best;
}

static void fail_waiting(struct lb *lb, const struct zb_err *err)
{
    while (!APR_RING_EMPTY(&lb->pipe_waiting, lookup, link)) {
        struct lookup *lk = APR_RING_FIRST(&lb->pipe_waiting);
        APR_RING_REMOVE(lk, link);
        lookup_finish(lk, LOOKUP_UNAVAILABLE, err);
    }
}

/* A connect failed: down (refused, or no other connection of the loop
 * ready), and the lookups waiting fail; else they wait. */
static void connect_failed(struct lb *lb, const struct zb_err *err)
{
    if (lb_connect_failed(lb, err, least_busy(lb) != NULL))
        fail_waiting(lb, err);
}

static void open_one(struct lb *lb)
{
    if (lb->loop->now < lb->grow_after_ns)
        return;
    struct zb_err err = { 0 };
    struct dbconn *dc = dbconn_open(lb, &pipelined_strategy, &err);
    if (!dc) {
        connect_failed(lb, &err);
        return;
    }
    lb->pipe[lb->npipes++] = dc;
}

/* Idle ones the driver no longer calls alive (pg: one that fell back to
 * another host than its turn's, which may be back), or opened before a
 * reload made their prepared lookup stale, are closed: the next lookups
 * open others. */
static void retire(struct lb *lb)
{
    for (int i = 0; i < lb->npipes; i++) {
        struct dbconn *dc = lb->pipe[i];
        if (dc->state == DC_READY && !dc->nsent && !dc->unflushed &&
            (!lb->sb->drv->alive(dc->db) || dc->gen != atomic_load(&lb->sb->gen))) {
            lb->pipe[i--] = lb->pipe[--lb->npipes];
            dbconn_close(dc);
        }
    }
}

static void submit(struct lookup *lk)
{
    struct lb *lb = lk->lb;
    retire(lb);
    struct dbconn *dc = least_busy(lb);
    if (dc) {
        dbconn_send(dc, lk);
        if (dc->nsent > 1 && lb->npipes < lb->pipe_target)
            open_one(lb);   /* this one is busy: another for the next lookups */
        return;
    }
    lk->since_ns = lb->loop->now;
    APR_RING_INSERT_TAIL(&lb->pipe_waiting, lk, lookup, link);
    loop_deadline(lb->loop, lk->since_ns + (uint64_t)lb->sb->conf.acquire_timeout_ms * 1000000u);
    if (lb->npipes < lb->pipe_target)
        open_one(lb);
}

/* Ready: the lookups waiting go on it. */
static void conn_ready(struct dbconn *dc)
{
    struct lb *lb = dc->lb;
    while (!APR_RING_EMPTY(&lb->pipe_waiting, lookup, link)) {
        struct lookup *lk = APR_RING_FIRST(&lb->pipe_waiting);
        APR_RING_REMOVE(lk, link);
        dbconn_send(dc, lk);
    }
}

static void conn_failed(struct dbconn *dc, const struct zb_err *err)
{
    struct lb *lb = dc->lb;
    bool opening = dc->state != DC_READY;
    for (int i = 0; i < lb->npipes; i++)
        if (lb->pipe[i] == dc)
            lb->pipe[i] = lb->pipe[--lb->npipes];
    if (opening) {
        BUMP(lb->st.connect_failures);
        dbconn_close(dc);
        connect_failed(lb, err);
        return;
    }
    struct lookup_list lost;
    APR_RING_INIT(&lost, lookup, link);
    APR_RING_CONCAT(&lost, &dc->sent, lookup, link);
    served_bump_gen(lb->sb, dc->gen);
    dbconn_close(dc);
    bool stale = err->kind == ZB_ERR_STALE;
    if (!stale)
        lb_down(lb, err);
    while (!APR_RING_EMPTY(&lost, lookup, link)) {
        struct lookup *lk = APR_RING_FIRST(&lost);
        APR_RING_REMOVE(lk, link);
        if (stale && !lk->retried && lk->rows == 0) {
            lk->retried = true;   /* it did not run: a fresh connection prepares again */
            submit(lk);
        } else {
            lookup_finish(lk, LOOKUP_UNAVAILABLE, err);
        }
    }
    if (!stale && !least_busy(lb))
        fail_waiting(lb, err);
}

static uint64_t deadlines(struct lb *lb, uint64_t now)
{
    const struct backend_conf *bc = &lb->sb->conf;
    uint64_t next = 0;
    for (int i = 0; i < lb->npipes; i++)
        if (dbconn_expired(lb->pipe[i], now, &next))
            return now;   /* look again at once */
    uint64_t wait_ns = (uint64_t)bc->acquire_timeout_ms * 1000000u;
    while (!APR_RING_EMPTY(&lb->pipe_waiting, lookup, link)) {
        struct lookup *lk = APR_RING_FIRST(&lb->pipe_waiting);
        if (lk->since_ns + wait_ns > now) {
            if (!next || lk->since_ns + wait_ns < next)
                next = lk->since_ns + wait_ns;
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
    if (!APR_RING_EMPTY(&lb->pipe_waiting, lookup, link) && lb->npipes < lb->pipe_target) {
        if (now >= lb->grow_after_ns)
            open_one(lb);
        else if (!next || lb->grow_after_ns < next)
            next = lb->grow_after_ns;
    }
    return next;
}

static void init(struct lb *lb)
{
    int most = (int)(sizeof lb->pipe / sizeof lb->pipe[0]), want = lb->sb->conf.pipeline_connections;
    APR_RING_INIT(&lb->pipe_waiting, lookup, link);
    lb->pipe_target = want < 1 ? 1 : want > most ? most : want;
}

static void fail_all(struct lb *lb, const struct zb_err *err)
{
    while (lb->npipes)
        dbconn_fail(lb->pipe[0], err);
    fail_waiting(lb, err);
}

const struct strategy pipelined_strategy = {
    .init = init, .submit = submit, .conn_ready = conn_ready, .conn_failed = conn_failed,
    .deadlines = deadlines, .fail_all = fail_all, .pipelines = true,
};
