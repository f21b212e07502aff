/* The lookup server's pieces.
 *
 *   main.c    flags, config, the listening socket, signals
 *   server.c  start: backends, N loop threads; the stop sequence
 *   accept.c  the acceptor: hands each new connection to the loop with the
 *             fewest open connections
 *   loop.c    one loop thread: an epoll set holding its libmicrohttpd daemon
 *             (single-threaded, external epoll) and its database sockets
 *   http.c    the handler: routes, JSON, /health, /stats
 *   pool.c    one connection pool per backend
 *
 * Nothing here is a global: the struct server is handed to every callback
 * (libmicrohttpd's cls is the loop, which points to it). */
#ifndef ZB_SERVER_H
#define ZB_SERVER_H

#include <apr_pools.h>
#include <apr_reslist.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "conf.h"
#include "hist.h"
#include "util.h"

#define RELAXED memory_order_relaxed

/* A counter with one writer (its loop) and readers elsewhere (/stats, the
 * acceptor, main): relaxed loads and stores, no locked instruction. */
typedef _Atomic uint64_t counter;
#define BUMP(c) atomic_store_explicit(&(c), atomic_load_explicit(&(c), RELAXED) + 1, RELAXED)
#define READ(c) atomic_load_explicit(&(c), RELAXED)

/* One pooled connection: the backend handle and its prepared lookup. */
struct conn {
    struct backend b;
    struct stmt *lookup;
    unsigned gen;          /* srv_backend.gen when it was opened */
};

typedef _Atomic uint64_t shared_counter;

struct srv_backend {
    /* Copy of the [backend NAME] section, read_only forced on: the server
     * never writes. Strings still point into the zb_conf, which outlives us. */
    struct backend_conf conf;
    const struct backend_driver *drv;
    char sql[1024];                /* zb_lookup_sql for conf.table */

    apr_pool_t *pool;              /* long-lived: this struct's own allocations */
    apr_pool_t *list_pool;         /* subpool holding the reslist */
    _Atomic(apr_reslist_t *) list; /* NULL while the database was never reached */
    pthread_mutex_t create_lock;   /* one thread creates the reslist */

    /* Outage handling: a connection error marks the backend down and bumps
     * gen, so every connection opened before it is discarded on its next
     * acquire instead of failing one request each. While down, at most one
     * request per PROBE interval tries to connect; the others get 503 at
     * once rather than queueing on connect attempts. */
    _Atomic bool up;
    _Atomic unsigned gen;
    _Atomic uint64_t next_probe_ns;
    pthread_mutex_t reason_lock;
    char down_reason[512];         /* last connect error (under reason_lock) */

    /* The distinct codes of the table, sorted, for /random. */
    pthread_mutex_t keys_lock;
    pthread_t keys_thread;         /* loads them at start, in the background */
    bool keys_thread_started;
    _Atomic(uint32_t *) keys;
    _Atomic size_t nkeys;

    /* Counters, relaxed atomics: read by /stats. */
    shared_counter requests, ok, not_found, e4xx, e5xx;
    shared_counter connects;       /* connections opened (pool + per request) */
    shared_counter connects_per_request; /* of which for ?persistent=0 requests */
    shared_counter connect_failures;
    shared_counter reconnects;     /* pool connections opened to replace discarded ones */
    shared_counter discarded;      /* pool connections dropped as dead */
    shared_counter owed;           /* discarded, not yet replaced */
    shared_counter waits;          /* acquires that found every connection in use */
    shared_counter timeouts;       /* acquires that gave up after acquire_timeout_ms */
    _Atomic int64_t open;          /* pool connections open now */
    _Atomic int64_t in_use;        /* pool connections lent out now */
    struct hist latency;           /* ns, hist_record_atomic */
};

/* A JSON body being built; it only ever grows. */
struct jbuf {
    char *p;
    size_t n, cap;
    bool oom;
};

struct loop;

/* What every loop thread shares, read-mostly. */
struct server {
    struct zb_conf *conf;
    int nbackends;
    struct srv_backend *backend[ZB_MAX_BACKENDS];
    uint64_t started_ns;
    int nloops;
    struct loop *loops;            /* nloops of them */
    int nstarted;                  /* of which running */
    int listen_fd;                 /* owned by loop 0's acceptor once started */
    _Atomic bool accept_paused;    /* at max_connections: the acceptor waits for a slot */
    unsigned accept_rr;            /* acceptor's round-robin start among equals */
    _Atomic bool stopping;         /* SIGTERM: no new connections, answers close theirs */
    _Atomic bool shutdown;         /* the grace is over: loops fail what is left and exit */
};

/* One event-loop thread. Fields after `thread` are its own; the others
 * say who else touches them. */
struct loop {
    struct server *srv;
    int id;
    pthread_t thread;
    int epfd;                      /* epoll set: the daemon, the wake fd, DB sockets */
    int wakefd;                    /* eventfd: connections handed over, stop */
    struct MHD_Daemon *mhd;
    struct jbuf jb;                /* the response being built */
    uint64_t rng;                  /* PRNG state for /random */

    /* Connections handed over by the acceptor (under lock). */
    pthread_mutex_t lock;
    struct handed { int fd; socklen_t len; struct sockaddr_storage addr; } *handed;
    size_t nhanded, caphanded;

    /* Written by this loop only, read by the acceptor and main. */
    counter closed;                /* connections it has closed (or failed to add) */
    counter open;                  /* connections open now */
    counter inflight;              /* requests between first handler call and completion */
    counter requests, ok, e4xx, e5xx;

    /* The acceptor's own (loop 0's thread only). */
    uint64_t assigned;             /* connections handed to this loop */
};

/* server.c */
/* Starts the backends (pools opened, keys loading), conf->server.threads
 * loops and the acceptor on listen_fd, which it takes over. names gets
 * " NAME" per backend, " NAME (down)" for one not reachable now. On
 * failure everything started is stopped again: -1 with err. */
int  server_start(struct server *srv, struct zb_conf *conf,
                  const struct backend_conf *const *chosen, int nchosen, int listen_fd,
                  apr_pool_t *pool, char *names, size_t nameslen, struct zb_err *err);
/* The stop sequence, then everything freed; requests (if not NULL) gets
 * how many were answered in all. */
void server_stop(struct server *srv, uint64_t *requests);

/* loop.c */
int  loop_init(struct loop *l, struct server *srv, int id, struct zb_err *err);
int  loop_start(struct loop *l, struct zb_err *err);
/* Wakes the loop (eventfd): something in `handed` or a stop flag changed. */
void loop_wake(struct loop *l);
void loop_join(struct loop *l);
void loop_destroy(struct loop *l);

/* accept.c: runs in loop 0. */
int  acceptor_start(struct loop *l0, struct zb_err *err);
void acceptor_ready(struct loop *l0);
void acceptor_stop(struct loop *l0);
void acceptor_resume(struct loop *l0);
/* A loop closed one of its connections: lets a paused acceptor go on. */
void acceptor_slot_freed(struct server *srv);
/* loop.c, for the acceptor: watch (or stop watching) the listening socket. */
int  loop_watch_listen(struct loop *l, int fd, struct zb_err *err);
void loop_unwatch(struct loop *l, int fd);

/* pool.c */
int  pool_init(struct srv_backend *sb, const struct backend_conf *bc, apr_pool_t *parent,
               struct zb_err *err);
/* Opens the pool now (min connections) and loads the keys; on failure the
 * backend is marked down and err says why. The server starts anyway. */
int  pool_start(struct srv_backend *sb, struct zb_err *err);
void pool_destroy(struct srv_backend *sb);

/* Outcome of one lookup. */
enum lookup_rc { LOOKUP_OK = 0, LOOKUP_UNAVAILABLE = -1, LOOKUP_ERROR = -2 };

/* Runs the lookup for code (7 digits), feeding rows to fn; persistent
 * false opens and closes a connection just for it. UNAVAILABLE (503):
 * backend down, pool exhausted or connection lost; ERROR (500): anything
 * else. err says what. */
int  pool_lookup(struct srv_backend *sb, const char *code, bool persistent, row_fn fn,
                 void *arg, struct zb_err *err);
/* A real round trip for /health: true if the backend answers. */
bool pool_check(struct srv_backend *sb, struct zb_err *err);
/* The sorted key set, loaded on first use; NULL with err if it cannot be. */
const uint32_t *pool_keys(struct srv_backend *sb, size_t *n, struct zb_err *err);

/* http.c */
struct MHD_Daemon;
void http_init(void);
/* A single-threaded daemon in external epoll mode, with no listening
 * socket of its own: the acceptor gives it connections. */
struct MHD_Daemon *http_daemon(struct loop *l, struct zb_err *err);

#endif
