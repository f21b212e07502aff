/* What every loop of the server shares, read-mostly.
 *
 * Contract: filled by server_start on main's thread before any loop runs;
 * after that the loops only read it, except the atomics (accepting's
 * pause and turn, the stop flags), which any thread may set. Nothing is a
 * global: libmicrohttpd's cls is the loop, which points here. Data only:
 * it calls nothing. */
#ifndef ZB_SHARED_H
#define ZB_SHARED_H

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

/* One loop as the other threads see it. */
struct loop_ref {
    struct loop *loop;
    struct lane *lanes;            /* one per served pair, in served[]'s order */
    struct loop_figures *fig;
};

struct server {
    struct zb_conf *conf;
    /* Every (dataset, backend) pair served, dataset by dataset in the
     * order of --datasets, each in the order of --backends. */
    int nserved;
    /* After them, up to nlanes: the _hits read and write pairs of the
     * backends with `writes = yes` (served.h's hits_read, hits_write). Each
     * loop has a lane for every one of the nlanes. */
    struct served *served[SRV_MAX_SERVED];
    int nlanes;
    /* The stamp of the next write (update.c): the wall clock in
     * microseconds at start, one more per write. */
    _Atomic uint64_t stamp;
    int ndatasets;
    const struct dataset *const *datasets;
    uint64_t started_ns;
    int nloops, nstarted;
    struct loop_ref *loops;        /* by loop id */
    struct loop **cores;           /* the same loops' cores, by id */
    int listen_fd;                 /* watched by every loop, closed by server_stop */
    _Atomic bool accept_paused;    /* at max_connections: no loop accepts until a slot frees */
    _Atomic unsigned accept_rr;    /* round-robin start among loops equally loaded */
    /* accept() out of fds or memory (EMFILE...): no loop accepts before
     * resume_ns (accept.c); failures since the last log line, and when
     * that was. */
    struct { _Atomic uint64_t resume_ns, failures, logged_ns; } accept_pause;
    _Atomic bool stopping;         /* SIGTERM: no new connections, answers close theirs */
    _Atomic bool shutdown;         /* the grace is over: loops fail what is left and exit */
    /* TLS (--tls-cert/--tls-key), PEM in memory; NULL for plain HTTP. */
    char *tls_cert, *tls_key;
};

#endif
