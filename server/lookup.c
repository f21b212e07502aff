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
 *     one iteration;
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

static void inline_lookup(struct lookup *lk)
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
            lookup_finish(lk, lookup_rc_of(&err), &err);
            return;
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
    lookup_finish(lk, rc == 0 ? LOOKUP_OK : lookup_rc_of(&err), &err);
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
        return 0;
    for (int i = 0; i < ZB_NSTRATEGIES; i++) {
        uint64_t t = strategies[i]->deadlines(lb, now);
        if (t && (!next || t < next))
            next = t;
    }
    return next;
}

void lookup_init(struct lb *lb)
{
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
        inline_lookup(lk);
        return;
    }
    strategies[lk->strategy]->submit(lk);
}
