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
 *   - elsewhere: by strategy, pool.c, perrequest.c or pipeline.c, on a
 *     connection of the lookup's own loop.
 * lookup_finish ends every lookup, whichever way it went. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

int lookup_rc_of(const struct zb_err *err)
{
    switch (err->kind) {
    case ZB_ERR_CONN:
    case ZB_ERR_REFUSED:
    case ZB_ERR_TIMEOUT:
    case ZB_ERR_BUSY:
    case ZB_ERR_STALE:
        return LOOKUP_UNAVAILABLE;   /* 503: try again later */
    default:
        return LOOKUP_ERROR;
    }
}

/* The end of lk; a 503 counted as overload or, the backend down, as down. */
static void finish(struct lookup *lk, int rc, const struct zb_err *err, bool overload)
{
    struct srv_backend *sb = lk->lb->sb;
    if (rc == LOOKUP_OK)
        backend_mark_up(sb);
    else if (rc == LOOKUP_UNAVAILABLE && overload)
        BUMP(lk->lb->st.overload);
    else if (rc == LOOKUP_UNAVAILABLE && !atomic_load_explicit(&sb->up, RELAXED))
        BUMP(lk->lb->st.down);
    if (lk->probe) {
        lk->probe = false;
        backend_end_probe(sb);
    }
    lk->done(lk, rc, rc == LOOKUP_OK ? NULL : err);
}

void lookup_finish(struct lookup *lk, int rc, const struct zb_err *err)
{
    finish(lk, rc, err, false);
}

void lookup_overloaded(struct lookup *lk, const struct zb_err *err)
{
    finish(lk, LOOKUP_UNAVAILABLE, err, true);
}

void lb_down(struct lb *lb, const struct zb_err *err)
{
    if (!atomic_load_explicit(&lb->loop->srv->shutdown, RELAXED))
        backend_mark_down(lb->sb, err);
}

int lookup_row(void *arg, int n, const char *const *v, const size_t *l)
{
    struct lookup *lk = arg;
    lk->rows++;
    return lk->on_row ? lk->on_row(lk->arg, n, v, l) : 0;
}

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

void inline_close(struct lb *lb, struct inline_conn *ic)
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
    if (lk->strategy == ST_PER_REQUEST) {
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
        if (!lb->inline_txn && ic->b.drv->exec(ic->b.db, "BEGIN", NULL) == 0) {
            lb->inline_txn = true;
            lb->loop->to_commit[lb->loop->ncommit++] = lb;
        }
        rc = ic->b.drv->run(ic->lookup, lk->params, lookup_row, lk, NULL, &err);
        if (rc < 0 && !ic->b.drv->alive(ic->b.db)) {
            backend_bump_gen(sb, ic->gen);
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
    while (l->ncommit) {
        struct lb *lb = l->to_commit[--l->ncommit];
        if (lb->inline_txn && lb->inline_idle &&
            lb->inline_idle->b.drv->exec(lb->inline_idle->b.db, "COMMIT", NULL) < 0)
            lb->inline_idle->b.drv->exec(lb->inline_idle->b.db, "ROLLBACK", NULL);
        lb->inline_txn = false;
    }
}

/* ---- the way in ---- */

bool lookup_strategy_ok(const struct srv_backend *sb, enum strategy st)
{
    return st != ST_PIPELINED || (sb->drv->async && sb->drv->async->pipeline);
}

void lookup_start(struct lookup *lk, bool health)
{
    struct srv_backend *sb = lk->lb->sb;
    lk->params[0] = lk->key;
    lk->rows = 0;
    lk->retried = false;
    if (health)
        atomic_store(&sb->next_probe_ns, 0);   /* /health always tries: it is rare */
    if (!backend_may_try(sb, &lk->probe)) {
        struct zb_err err;
        backend_down_error(sb, &err);
        BUMP(lk->lb->st.down);
        lk->done(lk, LOOKUP_UNAVAILABLE, &err);
        return;
    }
    if (!sb->drv->async) {
        inline_lookup(lk);
        return;
    }
    switch (lk->strategy) {
    case ST_PER_REQUEST: perreq_submit(lk); break;
    case ST_PIPELINED: pipe_submit(lk); break;
    default: pool_submit(lk); break;
    }
}
