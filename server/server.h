/* The lookup server's pieces: one struct srv_backend per configured backend
 * (its connection pool, its key set, its counters), the HTTP side, and the
 * process-wide state main.c sets up. */
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

/* One pooled connection: the backend handle and its prepared lookup. */
struct conn {
    struct backend b;
    struct stmt *lookup;
    unsigned gen;          /* srv_backend.gen when it was opened */
};

typedef _Atomic uint64_t counter;

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
    counter requests, ok, not_found, e4xx, e5xx;
    counter connects;          /* connections opened (pool + per request) */
    counter connects_per_request; /* of which for ?persistent=0 requests */
    counter connect_failures;
    counter reconnects;        /* pool connections opened to replace discarded ones */
    counter discarded;         /* pool connections dropped as dead */
    counter owed;              /* discarded, not yet replaced */
    counter waits;             /* acquires that found every connection in use */
    counter timeouts;          /* acquires that gave up after acquire_timeout_ms */
    _Atomic int64_t open;      /* pool connections open now */
    _Atomic int64_t in_use;    /* pool connections lent out now */
    struct hist latency;       /* ns, hist_record_atomic */
};

struct server {
    struct zb_conf *conf;
    int nbackends;
    struct srv_backend *backend[ZB_MAX_BACKENDS];
    uint64_t started_ns;
    _Atomic bool stopping;     /* after SIGTERM: answer with Connection: close */
    _Atomic int64_t inflight;  /* requests between first handler call and completion */
    _Atomic int64_t connections; /* client connections open */
    counter requests, ok, e4xx, e5xx;
};

extern struct server srv;

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
struct MHD_Daemon *http_start(int listen_fd, struct zb_err *err);

#endif
