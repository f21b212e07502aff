/* Strategy pooled: persistent connections, each with its lookup prepared
 * once, per backend per loop.
 *
 * A loop keeps its own: an idle list (most recently used first, so the
 * warm ones are reused and the cold ones age out), the busy ones, those
 * being opened, and a queue of lookups waiting for one, oldest first. No
 * lock: only the loop touches them. What the loops share is the budget:
 * pool_hard_max connections per backend in all (sb->pooled). pool_min and
 * pool_soft_max are split over the loops: each opens its share of
 * pool_min at start and keeps it, and closes idle connections above its
 * share of pool_soft_max after pool_ttl_s.
 *
 * A lookup takes an idle connection of the current generation (older ones
 * are discarded: opened before a failure, suspect; so are those the
 * driver no longer calls alive), or waits: a new connection is opened for
 * it if the budget allows, and it gives up with 503 after
 * acquire_timeout_ms. When the budget is spent while another
 * loop holds idle connections, this loop sets its starving bit and wakes
 * the others: one of theirs that is or goes idle is given to it, the
 * connection itself (its socket moves from one epoll set to the other),
 * so nothing is reconnected.
 *
 * A connection lost under a lookup bumps the generation and is replaced;
 * so does one whose prepared lookup went stale (ZB_ERR_STALE: a reload
 * swapped the table for one with other column types; the fresh one
 * prepares again). The lookup is retried once on another connection if no
 * row came yet and it was not a timeout (the frozen database would be waited for twice). A
 * second loss or a query timeout marks the backend down.
 *
 * Overload is not an outage. A connect the database refuses (ZB_ERR_REFUSED:
 * nothing listens, authentication, shutting down) marks the backend down,
 * and so does one that fails while the pool holds no live connection at
 * all. One that is merely slow (each PostgreSQL connect costs tens of ms
 * of its CPU, and a burst opens thirty) or turned away for load while live
 * connections serve is retried in the background, as HikariCP's pool
 * filler does, after LB_RETRY_NS; the lookups keep waiting for the live ones,
 * and one that waited past acquire_timeout_ms gets 503, counted as
 * overload. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbconn.h"

#define NS_PER_MS 1000000ull

static uint64_t bit_of(struct lb *lb) { return 1ull << (lb->loop->id % 64); }

static bool take_budget(struct srv_backend *sb)
{
    int n = atomic_load(&sb->pooled);
    while (n < sb->conf.pool_hard_max)
        if (atomic_compare_exchange_weak(&sb->pooled, &n, n + 1))
            return true;
    return false;
}

static void give_budget(struct lb *lb)
{
    struct srv_backend *sb = lb->sb;
    atomic_fetch_sub(&sb->pooled, 1);
    lb->npooled--;
    uint64_t starving = atomic_load(&sb->starving) & ~bit_of(lb);
    for (int i = 0; starving && i < lb->loop->npeers; i++)
        if (starving & (1ull << (i % 64)))
            loop_wake(&lb->loop->peers[i]);
}

/* Closes a pooled connection that has nothing sent. */
static void drop(struct dbconn *dc)
{
    struct lb *lb = dc->lb;
    APR_RING_REMOVE(dc, link);
    if (dc->state != DC_READY)
        lb->nopening--;
    else
        DROP(lb->st.open);
    if (!dc->in_use && dc->state == DC_READY)
        lb->nidle--;
    if (dc->in_use)
        DROP(lb->st.in_use);
    dbconn_close(dc);
    give_budget(lb);
}

/* The first loop (other than lb's) whose lookups wait for the budget. */
static struct loop *starving_loop(struct lb *lb)
{
    uint64_t starving = atomic_load_explicit(&lb->sb->starving, RELAXED) & ~bit_of(lb);
    struct loop *l = lb->loop;
    for (int i = 0; starving && i < l->npeers; i++)
        if (starving & (1ull << (i % 64)))
            return &l->peers[i];
    return NULL;
}

/* An idle connection goes to a loop that starves. */
static bool give_away(struct dbconn *dc)
{
    struct lb *lb = dc->lb;
    struct loop *to = starving_loop(lb);
    if (!to)
        return false;
    APR_RING_REMOVE(dc, link);
    lb->nidle--;
    lb->npooled--;
    DROP(lb->st.open);
    dbconn_leave(dc, to);
    return true;
}

static void discard(struct dbconn *dc)
{
    BUMP(dc->lb->st.discarded);
    dc->lb->owed++;
    drop(dc);
}

static void use(struct dbconn *dc, struct lookup *lk)
{
    struct lb *lb = dc->lb;
    APR_RING_REMOVE(dc, link);
    APR_RING_INSERT_TAIL(&lb->busy, dc, dbconn, link);
    lb->nidle--;
    dc->in_use = true;
    BUMP(lb->st.in_use);
    dbconn_send(dc, lk);
}

/* The first lookup waiting, taken off the queue; the loop stops asking
 * the others for budget once nothing waits. */
static struct lookup *unqueue(struct lb *lb)
{
    struct lookup *lk = APR_RING_FIRST(&lb->waiting);
    APR_RING_REMOVE(lk, link);
    if (--lb->nwaiting == 0)
        atomic_fetch_and(&lb->sb->starving, ~bit_of(lb));
    return lk;
}

/* A lookup that gets no connection. */
static void fail(struct lookup *lk, const struct zb_err *err)
{
    lookup_finish(lk, LOOKUP_UNAVAILABLE, err);
}

/* Every lookup waiting here fails with err (the backend went down). */
static void fail_waiting(struct lb *lb, const struct zb_err *err)
{
    while (lb->nwaiting)
        fail(unqueue(lb), err);
}

/* Does any loop hold an open pooled connection of lb's backend? */
static bool has_live(struct lb *lb)
{
    struct loop *l = lb->loop;
    for (int i = 0; i < l->npeers; i++)
        if (READ(l->peers[i].lb[lb->sb->index].st.open))
            return true;
    return false;
}

/* A connect failed: down (refused, or no live connection in any loop),
 * and the lookups waiting here fail; else they wait for the live ones. */
static void connect_failed(struct lb *lb, const struct zb_err *err)
{
    if (lb_connect_failed(lb, err, has_live(lb)))
        fail_waiting(lb, err);
}

/* One more connection; false if the budget is spent or it could not
 * start. For lookups that wait (not to keep pool_min), the other loops
 * are asked for budget. */
static bool grow(struct lb *lb, bool for_waiters)
{
    struct srv_backend *sb = lb->sb;
    if (lb->loop->now < lb->grow_after_ns)
        return false;   /* the last connect failed under load: not yet */
    if (!take_budget(sb)) {
        if (for_waiters && !(atomic_fetch_or(&sb->starving, bit_of(lb)) & bit_of(lb)))
            loop_wake_all(lb->loop);   /* whoever has an idle one gives it back */
        return false;
    }
    lb->npooled++;
    struct zb_err err = { 0 };
    struct dbconn *dc = dbconn_open(lb, &pooled_strategy, &err);
    if (!dc) {
        give_budget(lb);
        connect_failed(lb, &err);   /* counted by dbconn_open */
        return false;
    }
    APR_RING_INSERT_TAIL(&lb->opening, dc, dbconn, link);
    lb->nopening++;
    return true;
}

static void submit(struct lookup *lk)
{
    struct lb *lb = lk->lb;
    unsigned gen = atomic_load_explicit(&lb->sb->gen, RELAXED);
    while (!APR_RING_EMPTY(&lb->idle, dbconn, link)) {
        struct dbconn *dc = APR_RING_FIRST(&lb->idle);
        /* Not alive: the driver wants it replaced (pg: a connection that
         * fell back to another host than its turn's, that host may be back). */
        if (dc->gen == gen && lb->sb->drv->alive(dc->db)) {
            use(dc, lk);
            return;
        }
        discard(dc);
    }
    lk->since_ns = lb->loop->now;
    APR_RING_INSERT_TAIL(&lb->waiting, lk, lookup, link);
    lb->nwaiting++;
    loop_deadline(lb->loop, lk->since_ns + (uint64_t)lb->sb->conf.acquire_timeout_ms * NS_PER_MS);
    if (lb->nopening >= lb->nwaiting || !grow(lb, true))
        BUMP(lb->st.waits);
}

static void idle(struct dbconn *dc);

/* Connected, or its lookup done. */
static void conn_ready(struct dbconn *dc)
{
    struct lb *lb = dc->lb;
    struct srv_backend *sb = lb->sb;
    if (dc->in_use) {   /* its lookup is done; else it was just opened */
        dc->in_use = false;
        DROP(lb->st.in_use);
    } else {
        lb->nopening--;
        BUMP(lb->st.open);
        if (lb->owed) {
            lb->owed--;
            BUMP(lb->st.reconnects);
        }
    }
    APR_RING_REMOVE(dc, link);
    if (dc->gen != atomic_load_explicit(&sb->gen, RELAXED)) {
        /* Opened before the last failure. */
        APR_RING_INSERT_TAIL(&lb->idle, dc, dbconn, link);
        lb->nidle++;
        discard(dc);
        if (lb->nwaiting && lb->nopening < lb->nwaiting)
            grow(lb, true);
        return;
    }
    idle(dc);
}

/* dc (in no list) is free: for the first lookup waiting here, else for a
 * loop that starves, else idle. */
static void idle(struct dbconn *dc)
{
    struct lb *lb = dc->lb;
    APR_RING_INSERT_HEAD(&lb->idle, dc, dbconn, link);
    lb->nidle++;
    dc->since_ns = lb->loop->now;
    if (lb->nwaiting)
        use(dc, unqueue(lb));
    else
        give_away(dc);
}

/* One given by another loop. */
static void adopt(struct loop *l, struct dbconn *dc)
{
    struct lb *lb = &l->lb[dc->lb->sb->index];
    lb->npooled++;
    if (!dbconn_join(dc, lb)) {   /* it could not be watched: closed */
        give_budget(lb);
        return;
    }
    BUMP(lb->st.open);
    idle(dc);
}

/* Lost, timed out or stale; lk is what it had sent (or NULL). */
static void conn_failed(struct dbconn *dc, const struct zb_err *err)
{
    struct lookup *lk = dc->nsent ? APR_RING_FIRST(&dc->sent) : NULL;
    struct lb *lb = dc->lb;
    struct srv_backend *sb = lb->sb;
    bool opening = dc->state != DC_READY;
    if (lk) {
        APR_RING_REMOVE(lk, link);
        dc->nsent--;
    }
    if (!opening) {
        /* Lost, or its plan stale (every connection opened before holds
         * the same stale plan): all are replaced. */
        served_bump_gen(sb, dc->gen);
        BUMP(lb->st.discarded);
        lb->owed++;
    }
    drop(dc);
    if (opening) {
        BUMP(lb->st.connect_failures);
        connect_failed(lb, err);
        return;
    }
    if (!lk)
        return;
    bool stale = err->kind == ZB_ERR_STALE;
    if ((err->kind == ZB_ERR_CONN || stale) && !lk->retried && lk->rows == 0) {
        lk->retried = true;   /* after a restart or a reload, a fresh connection answers */
        submit(lk);
        return;
    }
    if (!stale)
        lb_down(lb, err);
    fail(lk, err);
}

static uint64_t deadlines(struct lb *lb, uint64_t now)
{
    const struct backend_conf *bc = &lb->sb->conf;
    uint64_t next = 0;
#define SOONER(t) do { uint64_t t_ = (t); if (t_ && (!next || t_ < next)) next = t_; } while (0)
    /* Waiting too long for a connection. */
    uint64_t wait_ns = (uint64_t)bc->acquire_timeout_ms * NS_PER_MS;
    while (lb->nwaiting) {
        struct lookup *lk = APR_RING_FIRST(&lb->waiting);
        if (lk->since_ns + wait_ns > now) {
            SOONER(lk->since_ns + wait_ns);
            break;
        }
        unqueue(lb);
        BUMP(lb->st.timeouts);
        struct zb_err err;
        zb_fail(&err, ZB_ERR_CONN, "backend %s: no free connection within %d ms "
                "(pool_hard_max %d)", bc->name, bc->acquire_timeout_ms, bc->pool_hard_max);
        lookup_overloaded(lk, &err);
    }
    if (lb->nwaiting && lb->nopening < lb->nwaiting)
        grow(lb, true);   /* budget may have come back, or the pause after a failed connect ended */
    if (lb->nwaiting && lb->grow_after_ns > now)
        SOONER(lb->grow_after_ns);
    /* Connects and lookups that take too long. */
    struct conn_list *lists[] = { &lb->opening, &lb->busy };
    for (int i = 0; i < 2; i++) {
        struct dbconn *dc = APR_RING_FIRST(lists[i]), *nx;
        for (; dc != APR_RING_SENTINEL(lists[i], dbconn, link); dc = nx) {
            nx = APR_RING_NEXT(dc, link);
            if (dbconn_expired(dc, now, &next))
                return now;   /* the lists changed under us: look again at once */
        }
    }
    /* Idle above the soft share for pool_ttl_s: closed, oldest first. */
    uint64_t ttl_ns = (uint64_t)bc->pool_ttl_s * 1000000000ull;
    while (lb->nidle && lb->npooled > lb->soft_share) {
        struct dbconn *dc = APR_RING_LAST(&lb->idle);
        if (dc->since_ns + ttl_ns > now) {
            SOONER(dc->since_ns + ttl_ns);
            break;
        }
        drop(dc);
    }
    /* The min share, kept open while the backend is up, and while no
     * other loop has lookups waiting for the budget. */
    while (lb->npooled < lb->min_share && atomic_load_explicit(&lb->sb->up, RELAXED) &&
           !(atomic_load_explicit(&lb->sb->starving, RELAXED) & ~bit_of(lb)) && grow(lb, false))
        ;
    return next;
#undef SOONER
}

/* pool_min and pool_soft_max split over the loops, the first ones taking
 * the remainder. */
static void init(struct lb *lb)
{
    const struct backend_conf *bc = &lb->sb->conf;
    int n = lb->loop->npeers, i = lb->loop->id;
    APR_RING_INIT(&lb->idle, dbconn, link);
    APR_RING_INIT(&lb->busy, dbconn, link);
    APR_RING_INIT(&lb->opening, dbconn, link);
    APR_RING_INIT(&lb->waiting, lookup, link);
    lb->min_share = bc->pool_min / n + (i < bc->pool_min % n);
    lb->soft_share = bc->pool_soft_max / n + (i < bc->pool_soft_max % n);
}

/* Woken: connections other loops gave are taken in; a loop that starves
 * is given an idle one. */
static void woken(struct lb *lb)
{
    for (struct dbconn *dc; (dc = dbconn_given(lb->loop));)
        adopt(lb->loop, dc);
    if (lb->nidle && !lb->nwaiting)
        give_away(APR_RING_FIRST(&lb->idle));
}

static void fail_all(struct lb *lb, const struct zb_err *err)
{
    struct conn_list *lists[] = { &lb->busy, &lb->opening, &lb->idle };
    for (int k = 0; k < 3; k++)
        while (!APR_RING_EMPTY(lists[k], dbconn, link))
            dbconn_fail(APR_RING_FIRST(lists[k]), err);
    fail_waiting(lb, err);
}

const struct strategy pooled_strategy = {
    .init = init, .submit = submit, .conn_ready = conn_ready, .conn_failed = conn_failed,
    .deadlines = deadlines, .fail_all = fail_all, .woken = woken,
};
