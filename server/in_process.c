/* Strategies in-process: a database with no asynchronous driver (SQLite)
 * is looked up inline in the loop, with the driver's synchronous calls: a
 * lookup takes microseconds, less than a suspend and resume of the
 * request would. Two instances, the in-process ways of pooled and
 * per-request (strategy.h's in_process):
 *   - in_process_pooled_strategy keeps one connection per lane (one is all a loop
 *     ever needs), its lookup prepared once. The lookups of one loop
 *     iteration share one read transaction (BEGIN before the first,
 *     COMMIT when the iteration ends): SQLite's own per-transaction work
 *     (taking the shared lock, looking for a hot journal, reading the
 *     file change counter: about five system calls) is paid once per
 *     batch, not per lookup, and a writer (the loader swapping tables)
 *     waits at most one iteration;
 *   - in_process_per_request_strategy, as a PHP page does it: connect,
 *     one-shot query, close.
 * The driver's read-only connections never wait for a lock: a lookup that
 * meets one (ZB_ERR_BUSY: a writer that keeps a rollback journal,
 * committing) is set aside and tried again from the loop's deadlines
 * every RETRY_NS, for up to acquire_timeout_ms (then 503), while the loop
 * serves everything else. */
#include <stdio.h>
#include <stdlib.h>

#include "lookup.h"
#include "strategy.h"

/* How often a lookup that met a lock is tried again. */
#define RETRY_NS (2u * 1000u * 1000u)

/* The in-process ways' counters: their figures (strategy.h). The second
 * is the kept connection's discards, or the fresh ones' connects. */
enum { LOCK_WAITS, DISCARDED, CONNECTS = DISCARDED };
static const char *const kept_figures[] = {
    [LOCK_WAITS] = "lock_waits",   /* lookups that met a writer's lock and waited */
    [DISCARDED] = "discarded",     /* kept connections dropped as dead or stale */
    NULL,
};
static const char *const fresh_figures[] = {
    [LOCK_WAITS] = "lock_waits",
    [CONNECTS] = "connects",       /* connections opened for a lookup each */
    NULL,
};

/* An in-process connection with its prepared lookup. */
struct in_process_conn {
    struct backend b;
    struct stmt *lookup;
    unsigned gen;
};

struct in_process {
    struct lane *lane;
    counter *fig;                  /* its figures */
    /* One lookup on the database: 0, or -1 with err. */
    int (*query)(struct in_process *w, struct lookup *lk, struct zb_err *err);
    struct in_process_conn *idle;      /* the kept connection (inline_strategy) */
    bool txn;                      /* a read transaction is open on it */
    /* Lookups that met a lock, tried again at retry_ns. */
    struct lookup_list waiting;
    uint64_t retry_ns;
};

static struct in_process_conn *conn_open(struct lane *lane, struct zb_err *err)
{
    struct served *sv = lane->sv;
    struct in_process_conn *ic = calloc(1, sizeof *ic);
    if (!ic) {
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        return NULL;
    }
    ic->gen = atomic_load(&sv->gen);
    if (backend_open(&ic->b, &sv->conf, err) < 0 ||
        ic->b.drv->prepare(ic->b.db, sv->sql, sv->nparams, &ic->lookup, err) < 0) {
        backend_close(&ic->b);
        free(ic);
        BUMP(lane->st.connect_failures);
        return NULL;
    }
    BUMP(lane->st.connects);
    BUMP(lane->st.open);
    return ic;
}

static void conn_close(struct lane *lane, struct in_process_conn *ic)
{
    if (!ic)
        return;
    ic->b.drv->finalize(ic->lookup);
    backend_close(&ic->b);
    free(ic);
    DROP(lane->st.open);
}

/* On the kept connection (opened again if it is gone or older than the
 * last failure), inside the iteration's read transaction. */
static int query_kept(struct in_process *w, struct lookup *lk, struct zb_err *err)
{
    struct lane *lane = w->lane;
    struct served *sv = lane->sv;
    struct in_process_conn *ic = w->idle;
    w->idle = NULL;
    if (ic && ic->gen != atomic_load(&sv->gen)) {
        conn_close(lane, ic);
        BUMP(w->fig[DISCARDED]);
        ic = NULL;
    }
    if (!ic && !(ic = conn_open(lane, err)))
        return -1;
    if (!w->txn && !sv->autocommit && ic->b.drv->exec(ic->b.db, "BEGIN", NULL) == 0)
        w->txn = true;   /* committed at the end of the iteration */
    int rc = ic->b.drv->run(ic->lookup, lk->params, lookup_row, lk, NULL, err);
    if (rc < 0 && !ic->b.drv->alive(ic->b.db)) {
        served_bump_gen(sv, ic->gen);
        conn_close(lane, ic);   /* its transaction with it */
        w->txn = false;
        BUMP(w->fig[DISCARDED]);
    } else {
        w->idle = ic;
    }
    return rc;
}

/* On a connection of its own: connect, one-shot query, close. */
static int query_fresh(struct in_process *w, struct lookup *lk, struct zb_err *err)
{
    struct lane *lane = w->lane;
    struct served *sv = lane->sv;
    struct backend b;
    if (backend_open(&b, &sv->conf, err) < 0) {
        BUMP(lane->st.connect_failures);
        return -1;
    }
    BUMP(lane->st.connects);
    BUMP(w->fig[CONNECTS]);
    int rc = b.drv->query(b.db, sv->sql, sv->nparams, lk->params, lookup_row, lk, NULL, err);
    backend_close(&b);
    return rc;
}

/* lk met err: if it is a lock (and no row came yet), lk waits to be tried
 * again; true then. A lookup that has waited acquire_timeout_ms already
 * ends (false: the caller finishes it). */
static bool wait_lock(struct in_process *w, struct lookup *lk, const struct zb_err *err)
{
    struct lane *lane = w->lane;
    if (err->kind != ZB_ERR_BUSY || lk->rows > 0)
        return false;
    uint64_t now = zb_now_ns();
    if (!lk->since_ns) {
        lk->since_ns = now;
        BUMP(w->fig[LOCK_WAITS]);
    } else if (now - lk->since_ns >= (uint64_t)lane->sv->conf.acquire_timeout_ms * 1000000u) {
        return false;
    }
    APR_RING_INSERT_TAIL(&w->waiting, lk, lookup, link);
    if (w->retry_ns <= now)
        w->retry_ns = now + RETRY_NS;
    loop_deadline(lane->loop, w->retry_ns);
    return true;
}

/* One lookup; true if it met a lock and waits to be tried again, else it
 * is finished. */
static bool run(struct in_process *w, struct lookup *lk)
{
    struct zb_err err = { 0 };
    int rc = w->query(w, lk, &err);
    if (rc < 0 && wait_lock(w, lk, &err))
        return true;
    lookup_finish(lk, rc == 0 ? LOOKUP_OK : lookup_rc_of(&err), &err);
    return false;
}

static void submit(void *state, struct lookup *lk)
{
    run(state, lk);   /* done, or waiting for a lock to go */
}

/* The lookups that met a lock, their time come: the first is tried again,
 * and the others only if it got through (they would meet the same lock);
 * those that have waited acquire_timeout_ms end with 503. Returns when to
 * try next (0: none wait). */
static uint64_t deadlines(void *state, uint64_t now)
{
    struct in_process *w = state;
    struct lane *lane = w->lane;
    if (APR_RING_EMPTY(&w->waiting, lookup, link))
        return 0;
    if (now < w->retry_ns)
        return w->retry_ns;
    struct lookup_list due;
    APR_RING_INIT(&due, lookup, link);
    APR_RING_CONCAT(&due, &w->waiting, lookup, link);
    uint64_t limit = (uint64_t)lane->sv->conf.acquire_timeout_ms * 1000000u;
    bool locked = false;
    while (!APR_RING_EMPTY(&due, lookup, link)) {
        struct lookup *lk = APR_RING_FIRST(&due);
        APR_RING_REMOVE(lk, link);
        if (!locked) {
            locked = run(w, lk);
        } else if (now - lk->since_ns < limit) {
            APR_RING_INSERT_TAIL(&w->waiting, lk, lookup, link);
        } else {
            struct zb_err err;
            zb_fail(&err, ZB_ERR_BUSY, "backend %s: the file stayed locked for %d ms "
                    "(acquire_timeout_ms)", lane->sv->label, lane->sv->conf.acquire_timeout_ms);
            lookup_finish(lk, LOOKUP_UNAVAILABLE, &err);
        }
    }
    return APR_RING_EMPTY(&w->waiting, lookup, link) ? 0 : w->retry_ns;
}

/* The end of an iteration: the read transaction its lookups shared is
 * committed. */
static void iterated(void *state)
{
    struct in_process *w = state;
    if (!w->txn)
        return;
    if (w->idle && w->idle->b.drv->exec(w->idle->b.db, "COMMIT", NULL) < 0)
        w->idle->b.drv->exec(w->idle->b.db, "ROLLBACK", NULL);
    w->txn = false;
}

static void fail_all(void *state, const struct zb_err *err)
{
    struct in_process *w = state;
    while (!APR_RING_EMPTY(&w->waiting, lookup, link)) {
        struct lookup *lk = APR_RING_FIRST(&w->waiting);
        APR_RING_REMOVE(lk, link);
        lookup_finish(lk, LOOKUP_UNAVAILABLE, err);
    }
}

static void *init_with(struct lane *lane, counter *figures, struct zb_err *err,
                       int (*query)(struct in_process *, struct lookup *, struct zb_err *))
{
    struct in_process *w = calloc(1, sizeof *w);
    if (!w) {
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        return NULL;
    }
    w->lane = lane;
    w->fig = figures;
    w->query = query;
    APR_RING_INIT(&w->waiting, lookup, link);
    return w;
}

static void *init_kept(struct lane *lane, counter *figures, struct zb_err *err)
{
    return init_with(lane, figures, err, query_kept);
}

static void *init_fresh(struct lane *lane, counter *figures, struct zb_err *err)
{
    return init_with(lane, figures, err, query_fresh);
}

static void destroy(void *state)
{
    struct in_process *w = state;
    conn_close(w->lane, w->idle);
    free(w);
}

static bool takes(const struct backend_driver *drv)
{
    return !drv->async;
}

const struct strategy in_process_pooled_strategy = {
    .takes = takes, .cannot = "is not in-process", .figures = kept_figures, .init = init_kept, .destroy = destroy,
    .submit = submit, .deadlines = deadlines, .iterated = iterated, .fail_all = fail_all,
};

const struct strategy in_process_per_request_strategy = {
    .takes = takes, .cannot = "is not in-process", .figures = fresh_figures, .init = init_fresh, .destroy = destroy,
    .submit = submit, .deadlines = deadlines, .iterated = iterated, .fail_all = fail_all,
};
