/* A lane: one loop's share of one served backend.
 *
 * Contract: a lane belongs to one loop and is touched only by that loop's
 * thread (its counters are read by /stats: one writer, relaxed). It holds
 * each strategy's state on it, opaque here (lane_way), the counters of
 * its lookups, and the pause after a connect failed under load, which
 * every strategy of the lane keeps. Calls only down: served, loop. */
#ifndef ZB_LANE_H
#define ZB_LANE_H

#include "conf.h"
#include "counter.h"
#include "hist.h"
#include "loop.h"
#include "served.h"
#include "strategy.h"

/* The counters every lane keeps, whatever its strategies and routes: one
 * writer (the loop), /stats reads them (route_stats.c sums them over the
 * loops by this list). A strategy's own are its figures (strategy.h), a
 * route's its own (route.h). */
#define LANE_STATS(X) \
    X(requests) X(ok) X(not_found) X(errors_4xx) X(errors_5xx) \
    X(connects)              /* connections opened (every strategy) */ \
    X(connect_failures) \
    X(open)                  /* connections kept open now (pooled, in-process) */ \
    X(overload)              /* 503: waited past acquire_timeout_ms, the backend up */ \
    X(down)                  /* 503: the backend was down */

struct lane_stats {
#define LANE_STAT_FIELD(name) counter name;
    LANE_STATS(LANE_STAT_FIELD)
#undef LANE_STAT_FIELD
    struct hist latency;           /* ns, hist_record_own */
};

/* One strategy on a lane: its instance, its state and its counters (NULL
 * st: the backend's driver cannot take it). */
struct lane_way {
    const struct strategy *st;
    void *state;
    counter lookups;               /* lookups it was handed */
    counter figures[STRATEGY_MAX_FIGURES];   /* by st->figures' names */
};

struct lane {
    struct loop *loop;
    struct served *sv;
    /* This backend's lane on every loop, by loop id (this one among them). */
    struct lane *const *peers;
    struct lane_way way[NSTRATEGIES];   /* by enum strategy_id */
    /* A connect that failed slow or turned away under load (not refused)
     * while others serve: no new one for the waiters before this. */
    uint64_t grow_after_ns;
    struct lane_stats st;
};

/* lane set up for loop l serving sv, with no strategy yet (lookup_init
 * adds them); peers is every loop's lane of sv. */
void lane_init(struct lane *lane, struct loop *l, struct served *sv, struct lane *const *peers);
/* The backend is down (err says why), unless the server is stopping: the
 * lookups it fails then say so, the database is fine. */
void lane_down(struct lane *lane, const struct zb_err *err);
/* How long after a connect that failed under load the next one comes. */
#define LANE_RETRY_NS (100ull * 1000 * 1000)
/* A connect failed. Refused (ZB_ERR_REFUSED), or with no live connection
 * to wait for: the backend is down, true. Else the lane opens no new
 * connection for LANE_RETRY_NS (grow_after_ns), and: slow, or turned away
 * for load (overload is not an outage), false; a fault of the database's
 * (an SQL error in the PREPARE), logged, true: the waiting lookups fail
 * with it. */
bool lane_connect_failed(struct lane *lane, const struct zb_err *err, bool live);

#endif
