/* One loop's share of a served backend, and the lookups on it.
 *
 * Contract: a struct lb belongs to one loop and is touched only by that
 * loop's thread (its counters are read by /stats: one writer, relaxed).
 * It holds the lists every strategy keeps of its connections and waiting
 * lookups. A struct lookup is one lookup of one key, from its start to
 * lookup_finish, which every way a lookup ends goes through: it keeps the
 * outage state and the counters, then hands the result up through the
 * lookup's own done() callback. Calls only down: served, loop. */
#ifndef ZB_LB_H
#define ZB_LB_H

#include "hist.h"
#include "loop.h"
#include "served.h"

struct inline_conn;
struct lookup;
APR_RING_HEAD(lookup_list, lookup);

/* How a lookup ended. */
enum lookup_rc { LOOKUP_OK = 0, LOOKUP_UNAVAILABLE = -1, LOOKUP_ERROR = -2 };

/* One lookup of a key on one backend, from start to done(). */
struct lookup {
    APR_RING_ENTRY(lookup) link;   /* in a waiting list, or its connection's sent list */
    struct lb *lb;
    enum zb_strategy strategy;     /* its way (lookup.c), by lib/conf.h's list */
    char key[SRV_KEY_MAX + 1];     /* NUL-terminated, checked by its key_kind */
    size_t keylen;
    const char *params[1];         /* -> key */
    uint64_t since_ns;             /* began waiting for a connection / was sent */
    long rows;                     /* rows passed on so far */
    bool retried;                  /* a lost connection is retried once, if no row came */
    bool probe;                    /* it is the backend's probe while down */
    bool overloaded;               /* it ended waiting past acquire_timeout_ms, the backend up */
    row_fn on_row;
    void *arg;
    /* Called once, when it is over: rc LOOKUP_*, err set unless OK. */
    void (*done)(struct lookup *lk, int rc, const struct zb_err *err);
};

/* Its counters: one writer (the loop), /stats reads them. */
struct lb_stats {
    counter requests, ok, not_found, e4xx, e5xx;
    counter connects;              /* connections opened (every strategy) */
    counter connects_per_request;  /* of which for per-request lookups */
    counter connect_failures;
    counter reconnects;            /* pooled connections opened to replace discarded ones */
    counter discarded;             /* pooled connections dropped as dead or stale */
    counter waits;                 /* lookups that found every pooled connection busy */
    counter timeouts;              /* of which gave up after acquire_timeout_ms */
    counter overload;              /* 503: waited past acquire_timeout_ms, the backend up */
    counter down;                  /* 503: the backend was down */
    counter open;                  /* pooled connections open now */
    counter in_use;                /* of which with a lookup now */
    counter pipelined, batches;    /* lookups sent in pipeline mode, flushes */
    counter lock_waits;            /* in-process lookups that met a writer's lock and waited */
    struct hist latency;           /* ns, hist_record_own */
};

struct lb {
    struct loop *loop;
    struct srv_backend *sb;
    /* pooled: idle (most recently used first), busy, opening */
    struct conn_list idle, busy, opening;
    struct lookup_list waiting;    /* lookups waiting for a pooled connection */
    int nidle, nopening, nwaiting;
    int npooled;                   /* open or opening, this loop */
    int min_share, soft_share;     /* pool_min, pool_soft_max split over the loops */
    uint64_t owed;                 /* discarded, not yet replaced */
    /* A connect that failed slow or turned away under load (not refused)
     * while others serve: no new one for the waiters before this. */
    uint64_t grow_after_ns;
    /* pipelined */
    struct dbconn *pipe[8];
    int npipes, pipe_target;
    struct lookup_list pipe_waiting;
    /* per request */
    struct conn_list perreq;
    /* in-process: one idle connection is all a loop ever needs; its lookups
     * of one loop iteration share one read transaction (lookup.c) */
    struct inline_conn *inline_idle;
    bool inline_txn;
    /* in-process lookups that met a writer's lock, tried again at
     * inline_retry_ns (lookup.c) */
    struct lookup_list inline_waiting;
    uint64_t inline_retry_ns;
    struct lb_stats st;
};

/* lb set up for loop l serving sb; each strategy then sets up its part
 * (lookup_init). */
void lb_init(struct lb *lb, struct loop *l, struct srv_backend *sb);
/* The backend is down (err says why), unless the server is stopping: the
 * lookups it fails then say so, the database is fine. */
void lb_down(struct lb *lb, const struct zb_err *err);
/* How long after a connect that failed under load the next one comes. */
#define LB_RETRY_NS (100ull * 1000 * 1000)
/* A connect failed. Refused (ZB_ERR_REFUSED), or with no live connection
 * to wait for: the backend is down, true. Else lb opens no new connection
 * for LB_RETRY_NS (grow_after_ns), and: slow, or turned away for load
 * (overload is not an outage), false; a fault of the database's (an SQL
 * error in the PREPARE), logged, true: the waiting lookups fail with it. */
bool lb_connect_failed(struct lb *lb, const struct zb_err *err, bool live);
/* The end of lk: counts, probe bookkeeping, then done(). */
void lookup_finish(struct lookup *lk, int rc, const struct zb_err *err);
/* The end of lk that waited past acquire_timeout_ms for a connection
 * while the backend is up: 503, counted as overload, not as down. */
void lookup_overloaded(struct lookup *lk, const struct zb_err *err);
/* The 503 or 500 for err's kind. */
int  lookup_rc_of(const struct zb_err *err);
/* The row_fn a driver is given for lk (its arg): counts the rows (a lost
 * connection is retried only when none came, so no answer is doubled),
 * passes them on. */
int  lookup_row(void *lk, int ncols, const char *const *vals, const size_t *lens);

#endif
