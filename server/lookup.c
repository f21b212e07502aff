/* A lookup's way to its database.
 *
 * lookup_start: the outage gate first (a backend down answers 503 at once,
 * except for the one probe), then by where the database runs:
 *   - in-process (SQLite, no asynchronous driver): the synchronous calls,
 *     inline in the loop; a lookup takes microseconds, less than a
 *     suspend and resume of the request would. The lookups of one loop
 *     iteration share one read transaction (BEGIN before the first,
 *     COMMIT when the iteration ends): SQLite's own per-transaction work
 *     (taking the shared lock, looking for a hot journal, reading the file
 *     change counter: about five system calls) is paid once per batch, not
 *     per lookup, and a writer (the loader swapping tables) waits at most
 *     one iteration. The driver's read-only connections never wait for a
 *     lock: a lookup that meets one (ZB_ERR_BUSY: a writer that keeps a
 *     rollback journal, committing) is set aside and tried again from the
 *     loop's deadlines every INLINE_RETRY_NS, for up to acquire_timeout_ms
 *     (then 503), while the loop serves everything else;
 *   - elsewhere: by its strategy (the table below, one line each), on a
 *     connection of the lookup's own loop.
 * lookup_finish (lb.c) ends every lookup, whichever way it went. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lookup.h"
#include "strategy.h"

/* The one table of strategies, by lib/conf.h's ZB_STRATEGIES. */
static const struct strategy *const strategies[ZB_NSTRATEGIES] = {
    [ZB_POOLED] = &pooled_strategy,
    [ZB_PER_REQUEST] = &per_request_strategy,
    [ZB_PIPELINED] = &pipelined_strategy,
};

/* An in-process (SQLite) connection with its prepared lookup. */
struct inline_conn {
    struct backend b;
    struct stmt *lookup;
    unsigned gen;
};

/* ---- in-process ---- */

static struct inline_conn *inline_open(struct lb *lb, struct zb_err *err)
{
    struct srv_backend *sb = lb->sb;
    struct inline_conn *ic = calloc(1, sizeof *ic);
    if (!ic) {
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        return NULL;
    }
    ic->gen = atomic_load(&sb->gen);
    if (backend_open(&ic->b, &sb->conf, err) < 0 ||
        ic->b.drv->prepare(ic->b.db, sb->sql, 1, &ic->lookup, err) < 0) {
        backend_close(&ic->b);
        free(ic);
        BUMP(lb->st.connect_failures);
        return NULL;
    }
    BUMP(lb->st.connects);
    BUMP(lb->st.open);
    return ic;
}

static void inline_close(struct lb *lb, struct inline_conn *ic)
{
    if (!ic)
        return;
    ic->b.drv->finalize(ic->lookup);
    backend_close(&ic->b);
    free(ic);
    DROP(lb->st.open);
}

/* How often a lookup that met a lock is tried again. */
#define INLINE_RETRY_NS (2u * 1000u * 1000u)

/* lk met err: if it is a lock (and no row came yet), lk waits on lb's
 * list to be tried again; true then. A lookup that has waited
 * acquire_timeout_ms already ends (false: the caller finishes it). */
static bool inline_wait(struct lb *lb, struct lookup *lk, const struct zb_err *err)
{
    if (err->kind != ZB_ERR_BUSY || lk->rows > 0)
        return false;
    uint64_t now = zb_now_ns();
    if (!lk->since_ns) {
        lk->since_ns = now;
        BUMP(lb->st.lock_waits);
    } else if (now - lk->since_ns >= (uint64_t)lb->sb->conf.acquire_timeout_ms * 1000000u) {
        return false;
    }
    APR_RING_INSERT_TAIL(&lb->inline_waiting, lk, lookup, link);
    if (lb->inline_retry_ns <= now)
        lb->inline_retry_ns = now + INLINE_RETRY_NS;
    loop_deadline(lb->loop, lb->inline_retry_ns);
    return true;
}

/* One lookup in-process; true if it met a lock and waits to be tried
 * again (inline_wait), else it is finished. */
static bool inline_lookup(struct lookup *lk)
{
    struct lb *lb = lk->lb;
    struct srv_backend *sb = lb->sb;
    struct zb_err err = { 0 };
    int rc;
    if (strategies[lk->strategy]->per_lookup) {
        /* As a PHP page does it: connect, one-shot query, close. */
        struct backend b;
        rc = backend_open(&b, &sb->conf, &err);
        if (rc == 0) {
            BUMP(lb->st.connects);
            BUMP(lb->st.connects_per_request);
            rc = b.drv->query(b.db, sb->sql, 1, lk->params, lookup_row, lk, NULL, &err);
            backend_close(&b);
        } else {
            BUMP(lb->st.connect_failures);
        }
    } else {
        struct inline_conn *ic = lb->inline_idle;
        lb->inline_idle = NULL;
        if (ic && ic->gen != atomic_load(&sb->gen)) {
            inline_close(lb, ic);
            BUMP(lb->st.discarded);
            ic = NULL;
        }
        if (!ic && !(ic = inline_open(lb, &err))) {
            if (inline_wait(lb, lk, &err))
                return true;
            lookup_finish(lk, lookup_rc_of(&err), &err);
            return false;
        }
        if (!lb->inline_txn && ic->b.drv->exec(ic->b.db, "BEGIN", NULL) == 0)
            lb->inline_txn = true;   /* committed at the end of the iteration */
        rc = ic->b.drv->run(ic->lookup, lk->params, lookup_row, lk, NULL, &err);
        if (rc < 0 && !ic->b.drv->alive(ic->b.db)) {
            served_bump_gen(sb, ic->gen);
            inline_close(lb, ic);   /* its transaction with it */
            lb->inline_txn = false;
            BUMP(lb->st.discarded);
        } else {
            lb->inline_idle = ic;
        }
    }
    if (rc < 0 && inline_wait(lb, lk, &err))
        return true;
    lookup_finish(lk, rc == 0 ? LOOKUP_OK : lookup_rc_of(&err), &err);
    return false;
}

/* The lookups that met a lock, their time come: the first is tried again,
 * and the others only if it got through (they would meet the same lock);
 * those that have waited acquire_timeout_ms end with 503. Returns when to
 * try next (0: none wait). */
static uint64_t inline_retry(struct lb *lb, uint64_t now)
{
    if (APR_RING_EMPTY(&lb->inline_waiting, lookup, link))
        return 0;
    if (now < lb->inline_retry_ns)
        return lb->inline_retry_ns;
    struct lookup_list due;
    APR_RING_INIT(&due, lookup, link);
    APR_RING_CONCAT(&due, &lb->inline_waiting, lookup, link);
    uint64_t limit = (uint64_t)lb->sb->conf.acquire_timeout_ms * 1000000u;
    bool locked = false;
    while (!APR_RING_EMPTY(&due, lookup, link)) {
        struct lookup *lk = APR_RING_FIRST(&due);
        APR_RING_REMOVE(lk, link);
        if (!locked) {
            locked = inline_lookup(lk);
        } else if (now - lk->since_ns < limit) {
            APR_RING_INSERT_TAIL(&lb->inline_waiting, lk, lookup, link);
        } else {
            struct zb_err err;
            zb_fail(&err, ZB_ERR_BUSY, "backend %s: the file stayed locked for %d ms "
                    "(acquire_timeout_ms)", lb->sb->label, lb->sb->conf.acquire_timeout_ms);
            lookup_finish(lk, LOOKUP_UNAVAILABLE, &err);
        }
    }
    return APR_RING_EMPTY(&lb->inline_waiting, lookup, link) ? 0 : lb->inline_retry_ns;
}

void inline_commit(struct loop *l)
{
    for (int i = 0; i < l->nlb; i++) {
        struct lb *lb = &l->lb[i];
        if (!lb->inline_txn)
            continue;
        if (lb->inline_idle && lb->inline_idle->b.drv->exec(lb->inline_idle->b.db, "COMMIT", NULL) < 0)
            lb->inline_idle->b.drv->exec(lb->inline_idle->b.db, "ROLLBACK", NULL);
        lb->inline_txn = false;
    }
}

/* ---- the way in ---- */

bool lookup_strategy_ok(const struct srv_backend *sb, enum zb_strategy st)
{
    return !strategies[st]->pipelines || (sb->drv->async && sb->drv->async->pipeline);
}

uint64_t lookup_deadlines(struct lb *lb, uint64_t now)
{
    uint64_t next = 0;
    if (!lb->sb->drv->async)
        return inline_retry(lb, now);
    for (int i = 0; i < ZB_NSTRATEGIES; i++) {
        uint64_t t = strategies[i]->deadlines(lb, now);
        if (t && (!next || t < next))
            next = t;
    }
    return next;
}

void lookup_init(struct lb *lb)
{
    APR_RING_INIT(&lb->inline_waiting, lookup, link);
    for (int i = 0; i < ZB_NSTRATEGIES; i++)
        strategies[i]->init(lb);
}

void lookup_woken(struct lb *lb)
{
    for (int i = 0; i < ZB_NSTRATEGIES; i++)
        if (strategies[i]->woken)
            strategies[i]->woken(lb);
}

void lookup_wind_down(struct lb *lb, const struct zb_err *err)
{
    while (!APR_RING_EMPTY(&lb->inline_waiting, lookup, link)) {
        struct lookup *lk = APR_RING_FIRST(&lb->inline_waiting);
        APR_RING_REMOVE(lk, link);
        lookup_finish(lk, LOOKUP_UNAVAILABLE, err);
    }
    for (int i = 0; i < ZB_NSTRATEGIES; i++)
        strategies[i]->fail_all(lb, err);
}

void lookup_close(struct lb *lb)
{
    inline_close(lb, lb->inline_idle);
    lb->inline_idle = NULL;
}

void lookup_start(struct lookup *lk, bool health)
{
    struct srv_backend *sb = lk->lb->sb;
    lk->params[0] = lk->key;
    lk->rows = 0;
    lk->retried = false;
    lk->since_ns = 0;
    if (health)
        atomic_store(&sb->next_probe_ns, 0);   /* /health always tries: it is rare */
    if (!served_may_try(sb, &lk->probe)) {
        struct zb_err err;
        served_down_error(sb, &err);
        BUMP(lk->lb->st.down);
        lk->done(lk, LOOKUP_UNAVAILABLE, &err);
        return;
    }
    if (!sb->drv->async) {
        inline_lookup(lk);   /* done, or waiting for a lock to go */
        return;
    }
    strategies[lk->strategy]->submit(lk);
}
