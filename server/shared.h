/* What every loop of the server shares, read-mostly.
 *
 * Contract: filled by server_start on main's thread before any loop runs;
 * after that the loops only read it, except the atomics (accepting's
 * pause and turn, the stop flags), which any thread may set. Nothing is a
 * global: libmicrohttpd's cls is the loop, which points here. Data only:
 * it calls nothing. */
#ifndef ZB_SHARED_H
#define ZB_SHARED_H

#include <apr_pools.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "dataset.h"
#include "counter.h"
#include "lane.h"
#include "loop.h"
#include "served.h"

/* A loop's own figures: written by that loop only (counter.h); /stats,
 * the acceptor and the stop read them. */
struct loop_figures {
    counter closed;                /* connections closed (or failed to add) */
    counter open;                  /* connections open now */
    counter inflight;              /* requests between first handler call and completion */
    counter requests, ok, e4xx, e5xx;
    counter header_timeouts;       /* connections closed for a header too slow */
};

/* Most routes the table may hold (route.h). */
#define ROUTE_MAX 32

struct request_loop;

/* One loop as the other threads see it. */
struct loop_ref {
    struct loop *loop;
    struct lane *lanes;            /* one per served table, in served[]'s order */
    struct loop_figures *fig;
    struct request_loop *requests; /* its routes' state and counters (request.h) */
};

struct server {
    struct zb_conf *conf;
    apr_pool_t *pool;              /* what lives as long as the server */
    /* Every served table: each dataset on each backend, dataset by dataset
     * in the order of --datasets, each in the order of --backends. */
    int nserved;
    /* After them, up to nlanes: the tables routes added beside them
     * (served.h's owner: a listing, a write table's read and write). Each
     * loop has a lane for every one of the nlanes. */
    struct served *served[SRV_MAX_SERVED];
    int nlanes;
    /* Each route's state in the server (route.h's setup), by table index. */
    void *route_shared[ROUTE_MAX];
    int ndatasets;
    const struct dataset *const *datasets;
    uint64_t started_ns;
    int nloops, nstarted;
    struct loop_ref *loops;        /* by loop id */
    struct loop **cores;           /* the same loops' cores, by id */
    int listen_fd;                 /* watched by every loop, closed by server_stop */
    _Atomic bool stopping;         /* SIGTERM: no new connections, answers close theirs */
    _Atomic bool shutdown;         /* the grace is over: loops fail what is left and exit */
    /* TLS (--tls-cert/--tls-key), PEM in memory; NULL for plain HTTP. */
    char *tls_cert, *tls_key;
};

#endif
