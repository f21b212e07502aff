/* Strategy pooled: persistent connections, each with its lookup prepared
 * once, per backend per loop.
 *
 * A loop keeps its own: an idle list (most recently used first, so the
 * warm ones are reused and the cold ones age out), the busy ones, those
 * being opened, and a queue of lookups waiting for one, oldest first. No
 * lock: only the loop touches them. What the loops share is the budget:
 * pool_hard_max connections per served table in all (struct budget, the
 * strategy's shared state). pool_min and
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
 * filler does, after LANE_RETRY_NS; the lookups keep waiting for the live ones,
 * and one that waited past acquire_timeout_ms gets 503, counted as
 * overload. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbconn.h"

/* Pooled's counters: its figures (strategy.h), by these indexes. */
#define POOLED_FIGURES(X) \
    X(WAITS, "waits")            /* lookups that found every connection busy */ \
    X(TIMEOUTS, "timeouts")      /* of which gave up after acquire_timeout_ms */ \
    X(IN_USE, "in_use")          /* connections with a lookup now */ \
    X(RECONNECTS, "reconnects")  /* connections opened to replace discarded ones */ \
    X(DISCARDED, "discarded")    /* connections dropped as dead or stale */
#define FIGURE_ID(id, name) id,
enum { POOLED_FIGURES(FIGURE_ID) NFIGURES };
#undef FIGURE_ID
#define FIGURE_NAME(id, name) name,
static const char *const figure_names[NFIGURES + 1] = { POOLED_FIGURES(FIGURE_NAME) NULL };
#undef FIGURE_NAME

/* What the loops share per served table: the budget. A loop that needs
 * one more connection and finds none left sets its bit in starving; a
 * loop that frees an idle one then gives it to that loop instead of
 * keeping it, so the budget goes where the waiters are. */
struct budget {
    _Atomic int pooled;            /* connections of every loop, open or opening */
    _Atomic uint64_t starving;     /* loops waiting for the budget, a bit each */
};

/* Pooled's state on a lane. */
struct pooled {
    struct lane *lane;
    struct budget *budget;         /* its served table's */
    counter *fig;                  /* its figures, by POOLED_FIGURES */
    /* idle (most recently used first), busy, opening */
    struct conn_list idle, busy, opening;
    struct lookup_list waiting;    /* lookups waiting for a connection */
    int nidle, nopening, nwaiting;
    int npooled;                   /* open or opening, this loop */
    int min_share, soft_share;     /* pool_min, pool_soft_max split over the loops */
    uint64_t owed;                 /* discarded, not yet replaced */
    pthread_mutex_t lock;          /* guards given, which other loops fill */
    struct conn_list given;        /* idle connections other loops gave */
};

/* A connection lent to a lookup is tagged so (in busy). */
#define IN_USE(dc) ((dc)->tag != NULL)
#define SET_IN_USE(dc, on) ((dc)->tag = (on) ? (void *)(dc) : NULL)

/* The pool of this backend on loop i. */
static struct pooled *pool_of(struct pooled *p, int i)
{
    return p->lane->peers[i]->way[STRATEGY_pooled].state;
}

#define NS_PER_MS 1000000ull

static uint64_t bit_of(struct pooled *p) { return 1ull << (p->lane->loop->id % 64); }

static bool take_budget(struct pooled *p)
{
    int n = atomic_load(&p->budget->pooled);
    while (n < p->lane->sv->conf.pool_hard_max)
        if (atomic_compare_exchange_weak(&p->budget->pooled, &n, n + 1))
            return true;
    return false;
}

static void give_budget(struct pooled *p)
{
    struct loop *l = p->lane->loop;
    atomic_fetch_sub(&p->budget->pooled, 1);
    p->npooled--;
    uint64_t starving = atomic_load(&p->budget->starving) & ~bit_of(p);
    for (int i = 0; starving && i < l->npeers; i++)
        if (starving & (1ull << (i % 64)))
            loop_wake(l->peers[i]);
}

/* Closes a pooled connection that has nothing sent. */
static void drop(struct pooled *p, struct dbconn *dc)
{
    struct lane *lane = p->lane;
    APR_RING_REMOVE(dc, link);
    if (dc->state != DC_READY)
        p->nopening--;
    else
        DROP(lane->st.open);
    if (!IN_USE(dc) && dc->state == DC_READY)
        p->nidle--;
    if (IN_USE(dc))
        DROP(p->fig[IN_USE]);
    dbconn_close(dc);
    give_budget(p);
}

/* The pool of the first loop (other than p's) whose lookups wait for the
 * budget. */
static struct pooled *starving_pool(struct pooled *p)
{
    uint64_t starving = atomic_load_explicit(&p->budget->starving, RELAXED) & ~bit_of(p);
    struct loop *l = p->lane->loop;
    for (int i = 0; starving && i < l->npeers; i++)
        if (starving & (1ull << (i % 64)))
            return pool_of(p, i);
    return NULL;
}

/* A connection given away arrives, once the giving loop's iteration is
 * over (its epoll batch may still have held an event for it): into the
 * taking pool's given list, and that loop woken. */
static void arrive(struct watch *w)
{
    struct dbconn *dc = container_of(w, struct dbconn, w);
    struct pooled *to = dc->tag;
    SET_IN_USE(dc, false);
    pthread_mutex_lock(&to->lock);
    APR_RING_INSERT_TAIL(&to->given, dc, dbconn, link);
    pthread_mutex_unlock(&to->lock);
    loop_wake(to->lane->loop);
}

/* An idle connection goes to a loop that starves. */
static bool give_away(struct pooled *p, struct dbconn *dc)
{
    struct pooled *to = starving_pool(p);
    if (!to)
        return false;
    APR_RING_REMOVE(dc, link);
    p->nidle--;
    p->npooled--;
    DROP(p->lane->st.open);
    dc->tag = to;   /* for arrive */
    dbconn_leave(dc, arrive);
    return true;
}

static void discard(struct pooled *p, struct dbconn *dc)
{
    BUMP(p->fig[DISCARDED]);
    p->owed++;
    drop(p, dc);
}

static void use(struct pooled *p, struct dbconn *dc, struct lookup *lk)
{
    APR_RING_REMOVE(dc, link);
    APR_RING_INSERT_TAIL(&p->busy, dc, dbconn, link);
    p->nidle--;
    SET_IN_USE(dc, true);
    BUMP(p->fig[IN_USE]);
    dbconn_send(dc, lk);
}

/* The first lookup waiting, taken off the queue; the loop stops asking
 * the others for budget once nothing waits. */
static struct lookup *unqueue(struct pooled *p)
{
    struct lookup *lk = APR_RING_FIRST(&p->waiting);
    APR_RING_REMOVE(lk, link);
    if (--p->nwaiting == 0)
        atomic_fetch_and(&p->budget->starving, ~bit_of(p));
    return lk;
}

/* Every lookup waiting here fails with err (the backend went down). */
static void fail_waiting(struct pooled *p, const struct zb_err *err)
{
    while (p->nwaiting)
        lookup_finish(unqueue(p), LOOKUP_UNAVAILABLE, err);
}

/* Does any loop hold an open pooled connection of p's backend? */
static bool has_live(struct pooled *p)
{
    struct loop *l = p->lane->loop;
    for (int i = 0; i < l->npeers; i++)
        if (READ(p->lane->peers[i]->st.open))
            return true;
    return false;
}

/* A connect failed: down (refused, or no live connection in any loop),
 * and the lookups waiting here fail; else they wait for the live ones. */
static void connect_failed(struct pooled *p, const struct zb_err *err)
{
    if (lane_connect_failed(p->lane, err, has_live(p)))
        fail_waiting(p, err);
}

/* One more connection; false if the budget is spent or it could not
 * start. For lookups that wait (not to keep pool_min), the other loops
 * are asked for budget. */
static bool grow(struct pooled *p, bool for_waiters)
{
    struct lane *lane = p->lane;
    struct served *sv = lane->sv;
    if (lane->loop->now < lane->grow_after_ns)
        return false;   /* the last connect failed under load: not yet */
    if (!take_budget(p)) {
        if (for_waiters && !(atomic_fetch_or(&p->budget->starving, bit_of(p)) & bit_of(p)))
            loop_wake_all(lane->loop);   /* whoever has an idle one gives it back */
        return false;
    }
    p->npooled++;
    struct zb_err err = { 0 };
    struct dbconn *dc = dbconn_open(lane, &pooled_strategy, p, sv->conf.connect_timeout_s, &err);
    if (!dc) {
        give_budget(p);
        connect_failed(p, &err);   /* counted by dbconn_open */
        return false;
    }
    APR_RING_INSERT_TAIL(&p->opening, dc, dbconn, link);
    p->nopening++;
    return true;
}

static void submit(void *state, struct lookup *lk)
{
    struct pooled *p = state;
    struct lane *lane = p->lane;
    unsigned gen = atomic_load_explicit(&lane->sv->gen, RELAXED);
    while (!APR_RING_EMPTY(&p->idle, dbconn, link)) {
        struct dbconn *dc = APR_RING_FIRST(&p->idle);
        /* Not alive: the driver wants it replaced (pg: a connection that
         * fell back to another host than its turn's, that host may be back). */
        if (dc->gen == gen && lane->sv->drv->alive(dc->db)) {
            use(p, dc, lk);
            return;
        }
        discard(p, dc);
    }
    lk->since_ns = lane->loop->now;
    APR_RING_INSERT_TAIL(&p->waiting, lk, lookup, link);
    p->nwaiting++;
    loop_deadline(lane->loop, lk->since_ns + (uint64_t)lane->sv->conf.acquire_timeout_ms * NS_PER_MS);
    if (p->nopening >= p->nwaiting || !grow(p, true))
        BUMP(p->fig[WAITS]);
}

static void idle(struct pooled *p, struct dbconn *dc);

/* Connected, or its lookup done. */
static void conn_ready(struct dbconn *dc)
{
    struct pooled *p = dc->owner;
    struct lane *lane = p->lane;
    if (IN_USE(dc)) {   /* its lookup is done; else it was just opened */
        SET_IN_USE(dc, false);
        DROP(p->fig[IN_USE]);
    } else {
        p->nopening--;
        BUMP(lane->st.open);
        if (p->owed) {
            p->owed--;
            BUMP(p->fig[RECONNECTS]);
        }
    }
    APR_RING_REMOVE(dc, link);
    if (dc->gen != atomic_load_explicit(&lane->sv->gen, RELAXED)) {
        /* Opened before the last failure. */
        APR_RING_INSERT_TAIL(&p->idle, dc, dbconn, link);
        p->nidle++;
        discard(p, dc);
        if (p->nwaiting && p->nopening < p->nwaiting)
            grow(p, true);
        return;
    }
    idle(p, dc);
}

/* dc (in no list) is free: for the first lookup waiting here, else for a
 * loop that starves, else idle. */
static void idle(struct pooled *p, struct dbconn *dc)
{
    APR_RING_INSERT_HEAD(&p->idle, dc, dbconn, link);
    p->nidle++;
    dc->since_ns = p->lane->loop->now;
    if (p->nwaiting)
        use(p, dc, unqueue(p));
    else
        give_away(p, dc);
}

/* One given by another loop. */
static void adopt(struct pooled *p, struct dbconn *dc)
{
    p->npooled++;
    if (!dbconn_join(dc, p->lane, p)) {   /* it could not be watched: closed */
        give_budget(p);
        return;
    }
    BUMP(p->lane->st.open);
    idle(p, dc);
}

/* The first connection other loops gave p, or NULL. */
static struct dbconn *take_given(struct pooled *p)
{
    pthread_mutex_lock(&p->lock);
    struct dbconn *dc = APR_RING_EMPTY(&p->given, dbconn, link) ? NULL : APR_RING_FIRST(&p->given);
    if (dc)
        APR_RING_REMOVE(dc, link);
    pthread_mutex_unlock(&p->lock);
    return dc;
}

/* Lost, timed out or stale; lk is what it had sent (or NULL). */
static void conn_failed(struct dbconn *dc, const struct zb_err *err)
{
    struct lookup *lk = dc->nsent ? APR_RING_FIRST(&dc->sent) : NULL;
    struct pooled *p = dc->owner;
    struct lane *lane = p->lane;
    bool opening = dc->state != DC_READY;
    if (lk) {
        APR_RING_REMOVE(lk, link);
        dc->nsent--;
    }
    if (!opening) {
        /* Lost, or its plan stale (every connection opened before holds
         * the same stale plan): all are replaced. */
        served_bump_gen(lane->sv, dc->gen);
        BUMP(p->fig[DISCARDED]);
        p->owed++;
    }
    drop(p, dc);
    if (opening) {
        BUMP(lane->st.connect_failures);
        connect_failed(p, err);
        return;
    }
    if (!lk)
        return;
    bool stale = err->kind == ZB_ERR_STALE;
    if ((err->kind == ZB_ERR_CONN || stale) && !lk->retried && lk->rows == 0) {
        lk->retried = true;   /* after a restart or a reload, a fresh connection answers */
        submit(p, lk);
        return;
    }
    if (!stale)
        lane_down(lane, err);
    lookup_finish(lk, LOOKUP_UNAVAILABLE, err);
}

static uint64_t deadlines(void *state, uint64_t now)
{
    struct pooled *p = state;
    struct lane *lane = p->lane;
    const struct backend_conf *bc = &lane->sv->conf;
    uint64_t next = 0;
    /* Waiting too long for a connection. */
    uint64_t wait_ns = (uint64_t)bc->acquire_timeout_ms * NS_PER_MS;
    while (p->nwaiting) {
        struct lookup *lk = APR_RING_FIRST(&p->waiting);
        if (lk->since_ns + wait_ns > now) {
            next = deadline_min(next, lk->since_ns + wait_ns);
            break;
        }
        unqueue(p);
        BUMP(p->fig[TIMEOUTS]);
        struct zb_err err;
        zb_fail(&err, ZB_ERR_CONN, "backend %s: no free connection within %d ms "
                "(pool_hard_max %d)", bc->name, bc->acquire_timeout_ms, bc->pool_hard_max);
        lookup_overloaded(lk, &err);
    }
    if (p->nwaiting && p->nopening < p->nwaiting)
        grow(p, true);   /* budget may have come back, or the pause after a failed connect ended */
    if (p->nwaiting && lane->grow_after_ns > now)
        next = deadline_min(next, lane->grow_after_ns);
    /* Connects and lookups that take too long. */
    struct conn_list *lists[] = { &p->opening, &p->busy };
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
    while (p->nidle && p->npooled > p->soft_share) {
        struct dbconn *dc = APR_RING_LAST(&p->idle);
        if (dc->since_ns + ttl_ns > now) {
            next = deadline_min(next, dc->since_ns + ttl_ns);
            break;
        }
        drop(p, dc);
    }
    /* The min share, kept open while the backend is up, and while no
     * other loop has lookups waiting for the budget. */
    while (p->npooled < p->min_share && atomic_load_explicit(&lane->sv->up, RELAXED) &&
           !(atomic_load_explicit(&p->budget->starving, RELAXED) & ~bit_of(p)) && grow(p, false))
        ;
    return next;
}

/* pool_min and pool_soft_max split over the loops, the first ones taking
 * the remainder. */
static void *init(struct lane *lane, counter *figures, struct zb_err *err)
{
    const struct backend_conf *bc = &lane->sv->conf;
    int n = lane->loop->npeers, i = lane->loop->id;
    struct pooled *p = calloc(1, sizeof *p);
    if (!p) {
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        return NULL;
    }
    p->lane = lane;
    p->budget = lane->sv->shared[STRATEGY_pooled];
    p->fig = figures;
    APR_RING_INIT(&p->idle, dbconn, link);
    APR_RING_INIT(&p->busy, dbconn, link);
    APR_RING_INIT(&p->opening, dbconn, link);
    APR_RING_INIT(&p->waiting, lookup, link);
    APR_RING_INIT(&p->given, dbconn, link);
    pthread_mutex_init(&p->lock, NULL);
    p->min_share = bc->pool_min / n + (i < bc->pool_min % n);
    p->soft_share = bc->pool_soft_max / n + (i < bc->pool_soft_max % n);
    return p;
}

/* Connections other loops gave are taken in; a loop that starves is
 * given an idle one. */
static void trade_idle(void *state)
{
    struct pooled *p = state;
    for (struct dbconn *dc; (dc = take_given(p));)
        adopt(p, dc);
    if (p->nidle && !p->nwaiting)
        give_away(p, APR_RING_FIRST(&p->idle));
}

static void fail_all(void *state, const struct zb_err *err)
{
    struct pooled *p = state;
    struct conn_list *lists[] = { &p->busy, &p->opening, &p->idle };
    for (int k = 0; k < 3; k++)
        while (!APR_RING_EMPTY(lists[k], dbconn, link))
            dbconn_fail(APR_RING_FIRST(lists[k]), err);
    fail_waiting(p, err);
}

/* After the loops stopped: connections given as they stopped are closed
 * here (freed with this loop's core). */
static void destroy(void *state)
{
    struct pooled *p = state;
    for (struct dbconn *dc; (dc = take_given(p));) {
        dc->lane = p->lane;
        dbconn_close(dc);
    }
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static int prepare(struct dbconn *dc, struct zb_err *err)
{
    return dbconn_prepare(dc, err);
}

static void *shared_init(struct served *sv, struct zb_err *err)
{
    (void)sv;
    struct budget *b = calloc(1, sizeof *b);
    if (!b)
        zb_fail(err, ZB_ERR_SYS, "out of memory");
    return b;
}

static bool takes(const struct backend_driver *drv)
{
    return drv->async != NULL;
}

const struct strategy pooled_strategy = {
    .takes = takes, .cannot = "is in-process", .in_process = &in_process_pooled_strategy,
    .figures = figure_names, .shared_init = shared_init, .shared_free = free, .init = init, .destroy = destroy, .submit = submit, .prepare = prepare,
    .conn_ready = conn_ready, .conn_failed = conn_failed, .deadlines = deadlines,
    .woken = trade_idle, .fail_all = fail_all,
};
