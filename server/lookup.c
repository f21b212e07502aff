/* A lookup's life: its start (the outage gate, then its strategy by
 * pointer), its rows and its end; and the loop's turns on a lane, handed
 * to every strategy on it.
 *
 * The one table of strategies is built from strategy.h's STRATEGIES:
 * a lane takes, for each, the instance itself when it can serve the
 * backend's driver, else that instance's in-process one (SQLite, which
 * has no asynchronous calls), else none (the strategy is refused for the
 * backend). */
#include <stdio.h>
#include <stdlib.h>

#include "lookup.h"
#include "reason.h"
#include "strategy.h"

#define STRATEGY_ENTRY(token, name) [STRATEGY_##token] = &token##_strategy,
static const struct strategy *const strategies[NSTRATEGIES] = { STRATEGIES(STRATEGY_ENTRY) };
#undef STRATEGY_ENTRY
#define STRATEGY_NAME(token, name) name,
const char *const strategy_names[NSTRATEGIES + 1] = { STRATEGIES(STRATEGY_NAME) NULL };
#undef STRATEGY_NAME

int strategy_by_name(const char *name)
{
    return conf_choice(strategy_names, name);
}

/* The instance that serves strategy id's lookups on a backend of drv, or
 * NULL. */
static const struct strategy *way_for(const struct backend_driver *drv, enum strategy_id id)
{
    const struct strategy *s = strategies[id];
    if (s->takes(drv))
        return s;
    s = s->in_process;
    return s && s->takes(drv) ? s : NULL;
}

const char *lookup_cannot(const struct served *sv, enum strategy_id st)
{
    return way_for(sv->drv, st) ? NULL : strategies[st]->cannot;
}

int lookup_init(struct lane *lane, struct zb_err *err)
{
    for (int i = 0; i < NSTRATEGIES; i++) {
        const struct strategy *s = way_for(lane->sv->drv, (enum strategy_id)i);
        if (!s)
            continue;
        if (!(lane->way[i].state = s->init(lane, lane->way[i].figures, err)))
            return -1;
        lane->way[i].st = s;
    }
    return 0;
}

int lookup_shared_init(struct served *sv, struct zb_err *err)
{
    for (int i = 0; i < NSTRATEGIES; i++) {
        const struct strategy *s = way_for(sv->drv, (enum strategy_id)i);
        if (s && s->shared_init && !(sv->shared[i] = s->shared_init(sv, err)))
            return -1;
    }
    return 0;
}

void lookup_shared_free(struct served *sv)
{
    for (int i = 0; i < NSTRATEGIES; i++) {
        const struct strategy *s = way_for(sv->drv, (enum strategy_id)i);
        if (s && s->shared_free && sv->shared[i])
            s->shared_free(sv->shared[i]);
        sv->shared[i] = NULL;
    }
}

const struct strategy *lookup_way(const struct served *sv, enum strategy_id st)
{
    return way_for(sv->drv, st);
}

void lookup_destroy(struct lane *lane)
{
    for (int i = 0; i < NSTRATEGIES; i++)
        if (lane->way[i].st) {
            lane->way[i].st->destroy(lane->way[i].state);
            lane->way[i].st = NULL;
        }
}

uint64_t lookup_deadlines(struct lane *lane, uint64_t now)
{
    uint64_t next = 0;
    for (int i = 0; i < NSTRATEGIES; i++)
        if (lane->way[i].st)
            next = deadline_min(next, lane->way[i].st->deadlines(lane->way[i].state, now));
    return next;
}

void lookup_woken(struct lane *lane)
{
    for (int i = 0; i < NSTRATEGIES; i++)
        if (lane->way[i].st && lane->way[i].st->woken)
            lane->way[i].st->woken(lane->way[i].state);
}

void lookup_iterated(struct lane *lane)
{
    for (int i = 0; i < NSTRATEGIES; i++)
        if (lane->way[i].st && lane->way[i].st->iterated)
            lane->way[i].st->iterated(lane->way[i].state);
}

void lookup_wind_down(struct lane *lane, const struct zb_err *err)
{
    for (int i = 0; i < NSTRATEGIES; i++)
        if (lane->way[i].st)
            lane->way[i].st->fail_all(lane->way[i].state, err);
}

void lookup_start(struct lookup *lk)
{
    struct lane *lane = lk->lane;
    struct served *sv = lane->sv;
    lk->params[0] = lk->key;
    lk->rows = 0;
    lk->retried = false;
    lk->since_ns = 0;
    if (!served_may_try(sv, &lk->probe)) {
        struct zb_err err;
        served_down_error(sv, &err);
        BUMP(lane->st.down);
        lk->done(lk, LOOKUP_UNAVAILABLE, &err);
        return;
    }
    struct lane_way *w = &lane->way[lk->strategy];
    BUMP(w->lookups);
    w->st->submit(w->state, lk);
}

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
    struct served *sv = lk->lane->sv;
    if (rc == LOOKUP_OK)
        served_mark_up(sv);
    else if (rc == LOOKUP_UNAVAILABLE && overload)
        BUMP(lk->lane->st.overload);
    else if (rc == LOOKUP_UNAVAILABLE && !atomic_load_explicit(&sv->up, RELAXED))
        BUMP(lk->lane->st.down);
    if (lk->probe) {
        lk->probe = false;
        served_end_probe(sv);
    }
    lk->overloaded = rc == LOOKUP_UNAVAILABLE && overload;
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

int lookup_row(void *arg, int n, const char *const *v, const size_t *l)
{
    struct lookup *lk = arg;
    lk->rows++;
    return lk->on_row ? lk->on_row(lk, n, v, l) : 0;
}

const char *lookup_why(const struct lookup *lk, const struct zb_err *err, bool stopping,
                       const char *what, const char *log_as, char *buf, size_t len)
{
    struct served *sv = lk->lane->sv;
    if (stopping) {
        snprintf(buf, len, "the server is stopping");
        return buf;
    }
    bool unavailable = lookup_rc_of(err) == LOOKUP_UNAVAILABLE;
    if (!unavailable || (!lk->overloaded && atomic_load(&sv->up)))
        served_log_error(sv, log_as, err->msg);
    return reason_for_client(sv, err, lk->overloaded, what, buf, len);
}
