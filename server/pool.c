/* One connection pool per backend, on APR's apr_reslist.
 *
 * A resource is a struct conn: a connection opened with backend_open and its
 * lookup statement prepared once (the constructor), closed by the
 * destructor. apr_reslist keeps pool_min open, lets idle ones above
 * pool_soft_max expire after pool_ttl_s, never lends more than
 * pool_hard_max, and makes an acquire wait at most acquire_timeout_ms
 * (apr_reslist_timeout_set) before it returns APR_TIMEUP, which becomes 503.
 *
 * SQLite gets a pool like the network databases, not one shared handle:
 * its connections are opened SQLITE_OPEN_NOMUTEX (no per-call locking in the
 * library), which is safe only while one thread at a time uses a handle.
 * A pool slot is exactly that: the thread that acquired the connection is
 * its only user until it releases it. They are opened read-only.
 *
 * Note that apr_reslist runs the constructor with its list lock held, so
 * while one thread connects the others wait on that lock: a database that
 * hangs on connect (not one that refuses, which fails at once) can hold
 * requests up to connect_timeout_s. The down/probe logic below keeps that
 * to one attempt at a time, PROBE_NS apart.
 *
 * Connections are malloc'ed (they come and go; an APR pool never gives
 * memory back); everything that lives as long as the server is taken from
 * the backend's APR pool. */
#include <apr_errno.h>
#include <apr_strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

#define PROBE_NS (200u * 1000u * 1000u)   /* while down: 200 ms between connect attempts */

#define PROBING UINT64_MAX                 /* next_probe_ns while a probe is under way */

#define RELAXED memory_order_relaxed
#define INC(c) atomic_fetch_add_explicit(&(c), 1, RELAXED)

/* The constructor cannot return a message through APR: it leaves it here
 * for the thread that called apr_reslist_acquire. */
static _Thread_local struct zb_err connect_err;

/* Connects; a pooled connection (pooled) also gets its page cache and its
 * lookup prepared once, which a connection used for one request would
 * only pay for: it runs the lookup as a one-shot query instead. */
static int open_conn(struct srv_backend *sb, struct conn *c, bool pooled, struct zb_err *err)
{
    c->lookup = NULL;
    c->gen = atomic_load_explicit(&sb->gen, memory_order_acquire);
    if (backend_open(&c->b, &sb->conf, err) < 0) {
        INC(sb->connect_failures);
        return -1;
    }
    if (!pooled) {
        INC(sb->connects);
        return 0;
    }
    /* SQLite: a page cache that holds the whole table and its index (the
     * real list is ~38 MB on disk). With the default 2 MiB, random lookups
     * keep re-reading pages with pread: this alone took pooled lookups
     * from ~24-42k to ~62-64k req/s here. It fills only as pages are read;
     * worst case 64 MiB per pooled connection. Per-request connections
     * start cold, which is part of what they cost. mmap_size was tried
     * too: no clear gain on this box, and SIGBUS on I/O errors. */
    if (!strcmp(sb->conf.driver, "sqlite"))
        c->b.drv->exec(c->b.db, "PRAGMA cache_size = -65536", NULL);
    if (c->b.drv->prepare(c->b.db, sb->sql, 1, &c->lookup, err) < 0) {
        backend_close(&c->b);
        INC(sb->connect_failures);
        return -1;
    }
    INC(sb->connects);
    return 0;
}

static void close_conn(struct conn *c)
{
    if (c->lookup)
        c->b.drv->finalize(c->lookup);
    c->lookup = NULL;
    backend_close(&c->b);
}

static void mark_down(struct srv_backend *sb, const struct zb_err *err)
{
    bool was = atomic_exchange(&sb->up, false);
    atomic_store(&sb->next_probe_ns, zb_now_ns() + PROBE_NS);
    pthread_mutex_lock(&sb->reason_lock);
    snprintf(sb->down_reason, sizeof sb->down_reason, "%s", err ? err->msg : "down");
    pthread_mutex_unlock(&sb->reason_lock);
    if (was)
        fprintf(stderr, "server: backend %s: down: %s\n", sb->conf.name, sb->down_reason);
}

static void mark_up(struct srv_backend *sb)
{
    if (!atomic_load_explicit(&sb->up, RELAXED) && !atomic_exchange(&sb->up, true))
        fprintf(stderr, "server: backend %s: up again\n", sb->conf.name);
}

static apr_status_t conn_construct(void **res, void *params, apr_pool_t *pool)
{
    (void)pool;
    struct srv_backend *sb = params;
    struct conn *c = malloc(sizeof *c);
    if (!c) {
        zb_fail(&connect_err, ZB_ERR_SYS, "out of memory");
        return APR_ENOMEM;
    }
    if (open_conn(sb, c, true, &connect_err) < 0) {
        free(c);
        return APR_EGENERAL;
    }
    /* A connection made while some were discarded replaces one of them. */
    uint64_t owed = atomic_load_explicit(&sb->owed, RELAXED);
    while (owed > 0 && !atomic_compare_exchange_weak(&sb->owed, &owed, owed - 1))
        ;
    if (owed > 0)
        INC(sb->reconnects);
    atomic_fetch_add_explicit(&sb->open, 1, RELAXED);
    *res = c;
    return APR_SUCCESS;
}

static apr_status_t conn_destruct(void *res, void *params, apr_pool_t *pool)
{
    (void)pool;
    struct srv_backend *sb = params;
    close_conn(res);
    free(res);
    atomic_fetch_sub_explicit(&sb->open, 1, RELAXED);
    return APR_SUCCESS;
}

int pool_init(struct srv_backend *sb, const struct backend_conf *bc, apr_pool_t *parent,
              struct zb_err *err)
{
    memset(sb, 0, sizeof *sb);
    if (apr_pool_create(&sb->pool, parent) != APR_SUCCESS)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    sb->conf = *bc;
    sb->conf.read_only = true;
    sb->drv = backend_driver(bc->driver);
    if (!sb->drv)
        return zb_fail(err, ZB_ERR_INPUT, "backend %s: unknown driver '%s'", bc->name,
                       bc->driver ? bc->driver : "");
    if (zb_lookup_sql(sb->sql, sizeof sb->sql, bc->table) < 0)
        return zb_fail(err, ZB_ERR_INPUT, "backend %s: table name too long", bc->name);
    pthread_mutex_init(&sb->create_lock, NULL);
    pthread_mutex_init(&sb->keys_lock, NULL);
    pthread_mutex_init(&sb->reason_lock, NULL);
    atomic_init(&sb->list, NULL);
    atomic_init(&sb->keys, NULL);
    atomic_init(&sb->up, true);
    hist_init(&sb->latency);
    return 0;
}

/* Creates the reslist (opening pool_min connections); -1 if the database
 * cannot be reached. Safe to call from any thread. */
static int create_list(struct srv_backend *sb, struct zb_err *err)
{
    int rc = 0;
    pthread_mutex_lock(&sb->create_lock);
    if (!atomic_load_explicit(&sb->list, memory_order_acquire)) {
        apr_pool_t *p;
        apr_reslist_t *list;
        apr_pool_create(&p, sb->pool);
        const struct backend_conf *bc = &sb->conf;
        int hmax = bc->pool_hard_max > 0 ? bc->pool_hard_max : 1;
        int smax = bc->pool_soft_max < hmax ? bc->pool_soft_max : hmax;
        int min = bc->pool_min < smax ? bc->pool_min : smax;
        apr_status_t st = apr_reslist_create(&list, min, smax, hmax,
                                             (apr_interval_time_t)bc->pool_ttl_s * APR_USEC_PER_SEC,
                                             conn_construct, conn_destruct, sb, p);
        if (st != APR_SUCCESS) {
            if (st == APR_EGENERAL || st == APR_ENOMEM)
                *err = connect_err;
            else {
                char buf[128];
                zb_fail(err, ZB_ERR_SYS, "backend %s: apr_reslist_create: %s", bc->name,
                        apr_strerror(st, buf, sizeof buf));
            }
            apr_pool_destroy(p);
            rc = -1;
        } else {
            apr_reslist_timeout_set(list, (apr_interval_time_t)bc->acquire_timeout_ms * 1000);
            sb->list_pool = p;
            atomic_store_explicit(&sb->list, list, memory_order_release);
        }
    }
    pthread_mutex_unlock(&sb->create_lock);
    return rc;
}

static void discard(struct srv_backend *sb, apr_reslist_t *list, struct conn *c)
{
    INC(sb->discarded);
    INC(sb->owed);
    apr_reslist_invalidate(list, c);
}

/* Lends a pool connection. -1 with err (kind ZB_ERR_CONN: 503) if the
 * database cannot be reached, -2 if every connection stayed busy for
 * acquire_timeout_ms (503 too, but the backend is not down). */
static int acquire(struct srv_backend *sb, struct conn **out, struct zb_err *err)
{
    apr_reslist_t *list = atomic_load_explicit(&sb->list, memory_order_acquire);
    if (!list) {
        if (create_list(sb, err) < 0)
            return -1;
        list = atomic_load_explicit(&sb->list, memory_order_acquire);
    }
    /* Each pass either returns or discards a connection opened before the
     * last failure; hard_max + 1 passes are enough to empty the idle list. */
    for (int pass = 0; pass <= sb->conf.pool_hard_max + 1; pass++) {
        if (atomic_load_explicit(&sb->in_use, RELAXED) >= sb->conf.pool_hard_max)
            INC(sb->waits);
        void *res;
        apr_status_t st = apr_reslist_acquire(list, &res);
        if (st == APR_TIMEUP) {
            INC(sb->timeouts);
            zb_fail(err, ZB_ERR_CONN, "backend %s: no free connection within %d ms "
                    "(pool_hard_max %d)", sb->conf.name, sb->conf.acquire_timeout_ms,
                    sb->conf.pool_hard_max);
            return -2;
        }
        if (st != APR_SUCCESS) {
            if (st == APR_EGENERAL || st == APR_ENOMEM)
                *err = connect_err;
            else
                zb_fail(err, ZB_ERR_CONN, "backend %s: acquire failed (%d)", sb->conf.name, st);
            if (err->kind != ZB_ERR_TIMEOUT)
                err->kind = ZB_ERR_CONN;
            return -1;
        }
        struct conn *c = res;
        if (c->gen != atomic_load_explicit(&sb->gen, memory_order_acquire) ||
            !c->b.drv->alive(c->b.db)) {
            discard(sb, list, c);
            continue;
        }
        atomic_fetch_add_explicit(&sb->in_use, 1, RELAXED);
        *out = c;
        return 0;
    }
    return zb_fail(err, ZB_ERR_CONN, "backend %s: no live connection", sb->conf.name);
}

static void release(struct srv_backend *sb, struct conn *c, bool failed)
{
    apr_reslist_t *list = atomic_load_explicit(&sb->list, memory_order_acquire);
    atomic_fetch_sub_explicit(&sb->in_use, 1, RELAXED);
    if (failed) {
        /* Everything opened before this failure is suspect (a restarted
         * server kills them all): bump gen once per failure generation. */
        unsigned g = c->gen;
        atomic_compare_exchange_strong(&sb->gen, &g, g + 1);
        discard(sb, list, c);
    } else {
        /* apr_reslist_release also tops the pool up to pool_min; a failure
         * to do so is not this request's problem. */
        apr_reslist_release(list, c);
    }
}

static void down_error(struct srv_backend *sb, struct zb_err *err)
{
    pthread_mutex_lock(&sb->reason_lock);
    zb_fail(err, ZB_ERR_CONN, "backend %s is down: %.400s", sb->conf.name, sb->down_reason);
    pthread_mutex_unlock(&sb->reason_lock);
}

/* The database did not answer, or cannot be reached: 503. */
static bool unavailable(enum zb_err_kind kind)
{
    return kind == ZB_ERR_CONN || kind == ZB_ERR_TIMEOUT;
}

/* While down, one request at a time goes on to connect (the probe), and
 * the next one no sooner than PROBE_NS after it ended: a database that
 * hangs rather than refuses then holds one server thread, not all. */
static bool may_try(struct srv_backend *sb, bool *probe)
{
    *probe = false;
    if (atomic_load_explicit(&sb->up, RELAXED))
        return true;
    uint64_t now = zb_now_ns();
    uint64_t next = atomic_load_explicit(&sb->next_probe_ns, RELAXED);
    *probe = now >= next && atomic_compare_exchange_strong(&sb->next_probe_ns, &next, PROBING);
    return *probe;
}

/* A probe that neither brought the backend up nor marked it down again
 * (an SQL error, a busy pool) still lets the next one come. */
static void end_probe(struct srv_backend *sb)
{
    uint64_t probing = PROBING;
    atomic_compare_exchange_strong(&sb->next_probe_ns, &probing, zb_now_ns() + PROBE_NS);
}

/* Counts the rows passed on, so a retry happens only when none were. */
struct counting {
    row_fn fn;
    void *arg;
    long rows;
};

static int count_row(void *arg, int n, const char *const *v, const size_t *l)
{
    struct counting *ct = arg;
    ct->rows++;
    return ct->fn(ct->arg, n, v, l);
}

/* The lookup on c: its prepared statement, or (a per-request connection
 * has none) a one-shot query. */
static int run_once(struct srv_backend *sb, struct conn *c, const char *code, struct counting *ct,
                    struct zb_err *err)
{
    const char *params[1] = { code };
    int rc = c->lookup ? c->b.drv->run(c->lookup, params, count_row, ct, NULL, err)
                       : c->b.drv->query(c->b.db, sb->sql, 1, params, count_row, ct, NULL, err);
    if (rc < 0 && !unavailable(err->kind) && !c->b.drv->alive(c->b.db))
        err->kind = ZB_ERR_CONN;
    return rc;
}

/* Per-request connection, and the lookup as a one-shot parameterized
 * query, as a PHP page does it: for PostgreSQL one round trip instead of
 * PREPARE, EXECUTE and DEALLOCATE. A refusal is this request's alone (it
 * may be "too many connections" while the pool is fine): 503, but the
 * backend is not marked down. A database that does not answer at all is
 * down: the gate in pool_lookup then answers the next requests at once. */
static int lookup_unpooled(struct srv_backend *sb, const char *code, struct counting *ct,
                           struct zb_err *err)
{
    struct conn c;
    int rc = open_conn(sb, &c, false, err);
    if (rc == 0) {
        INC(sb->connects_per_request);   /* of connects: the successful ones */
        rc = run_once(sb, &c, code, ct, err);
        close_conn(&c);
    }
    if (rc == 0) {
        mark_up(sb);
        return LOOKUP_OK;
    }
    if (err->kind == ZB_ERR_TIMEOUT)
        mark_down(sb, err);
    return unavailable(err->kind) ? LOOKUP_UNAVAILABLE : LOOKUP_ERROR;
}

static int lookup(struct srv_backend *sb, const char *code, bool persistent, row_fn fn, void *arg,
                  struct zb_err *err)
{
    struct counting ct = { fn, arg, 0 };
    if (!persistent)
        return lookup_unpooled(sb, code, &ct, err);
    /* A lost connection is retried once on a fresh one: the lookup only
     * reads, and after a database restart that turns the first request's
     * error into an answer. Only when no row was passed on yet, so the
     * output is never duplicated, and not after a timeout: the database
     * that did not answer would be waited for twice. */
    for (int attempt = 0; attempt < 2; attempt++) {
        struct conn *c;
        int arc = acquire(sb, &c, err);
        if (arc < 0) {
            if (arc == -1)
                mark_down(sb, err);
            return LOOKUP_UNAVAILABLE;
        }
        int rc = run_once(sb, c, code, &ct, err);
        if (rc == 0) {
            release(sb, c, false);
            mark_up(sb);
            return LOOKUP_OK;
        }
        bool lost = unavailable(err->kind);
        release(sb, c, lost);
        if (!lost)
            return LOOKUP_ERROR;
        if (ct.rows || err->kind == ZB_ERR_TIMEOUT)
            break;
    }
    mark_down(sb, err);
    return LOOKUP_UNAVAILABLE;
}

int pool_lookup(struct srv_backend *sb, const char *code, bool persistent, row_fn fn, void *arg,
                struct zb_err *err)
{
    bool probe;
    if (!may_try(sb, &probe))
        return down_error(sb, err), LOOKUP_UNAVAILABLE;
    int rc = lookup(sb, code, persistent, fn, arg, err);
    if (probe)
        end_probe(sb);
    return rc;
}

static int no_rows(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)arg, (void)n, (void)v, (void)l;
    return 0;
}

bool pool_check(struct srv_backend *sb, struct zb_err *err)
{
    /* /health always tries, even inside the probe interval: it is rare. */
    atomic_store(&sb->next_probe_ns, 0);
    return pool_lookup(sb, "0000000", true, no_rows, NULL, err) == LOOKUP_OK;
}

struct key_load {
    apr_pool_t *pool;
    uint32_t *keys;
    size_t n, cap;
};

static int add_key(void *arg, int ncols, const char *const *vals, const size_t *lens)
{
    struct key_load *kl = arg;
    if (ncols < 1 || !vals[0] || lens[0] != 7)
        return 0;
    uint32_t k = 0;
    for (int i = 0; i < 7; i++) {
        if (vals[0][i] < '0' || vals[0][i] > '9')
            return 0;
        k = k * 10 + (uint32_t)(vals[0][i] - '0');
    }
    if (kl->n == kl->cap) {
        size_t cap = kl->cap ? kl->cap * 2 : 4096;
        uint32_t *grown = realloc(kl->keys, cap * sizeof *grown);
        if (!grown)
            return 1;
        kl->keys = grown;
        kl->cap = cap;
    }
    kl->keys[kl->n++] = k;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

const uint32_t *pool_keys(struct srv_backend *sb, size_t *n, struct zb_err *err)
{
    uint32_t *keys = atomic_load_explicit(&sb->keys, memory_order_acquire);
    if (keys) {
        *n = atomic_load_explicit(&sb->nkeys, RELAXED);
        return keys;
    }
    pthread_mutex_lock(&sb->keys_lock);
    keys = atomic_load_explicit(&sb->keys, memory_order_acquire);
    bool probe = false;
    if (!keys && may_try(sb, &probe)) {
        struct conn *c;
        int arc = acquire(sb, &c, err);
        if (arc == 0) {
            char sql[256];
            snprintf(sql, sizeof sql, "SELECT DISTINCT zip_code FROM %s", sb->conf.table);
            struct key_load kl = { 0 };
            int rc = c->b.drv->query(c->b.db, sql, 0, NULL, add_key, &kl, NULL, err);
            bool lost = rc < 0 && (unavailable(err->kind) || !c->b.drv->alive(c->b.db));
            release(sb, c, lost);
            if (lost)
                mark_down(sb, err);
            if (rc == 0) {
                qsort(kl.keys, kl.n, sizeof *kl.keys, cmp_u32);
                /* Kept in the backend's APR pool for the server's lifetime. */
                keys = apr_palloc(sb->pool, (kl.n ? kl.n : 1) * sizeof *keys);
                if (kl.n)
                    memcpy(keys, kl.keys, kl.n * sizeof *keys);
                atomic_store_explicit(&sb->nkeys, kl.n, RELAXED);
                atomic_store_explicit(&sb->keys, keys, memory_order_release);
            }
            free(kl.keys);
        } else if (arc == -1) {
            mark_down(sb, err);
        }
    } else if (!keys) {
        down_error(sb, err);
    }
    if (probe)
        end_probe(sb);
    pthread_mutex_unlock(&sb->keys_lock);
    *n = atomic_load_explicit(&sb->nkeys, RELAXED);
    return keys;
}

/* Loads the key set in the background: the server answers at once, and a
 * /random request that comes before the keys are in waits on keys_lock. */
static void *load_keys(void *arg)
{
    struct srv_backend *sb = arg;
    struct zb_err err = { 0 };
    size_t n;
    if (!pool_keys(sb, &n, &err))
        fprintf(stderr, "server: backend %s: keys not loaded, will retry on demand: %s\n",
                sb->conf.name, err.msg);
    return NULL;
}

int pool_start(struct srv_backend *sb, struct zb_err *err)
{
    if (create_list(sb, err) < 0) {
        atomic_store(&sb->up, false);   /* main reports it: no "down" line of our own */
        mark_down(sb, err);
        return -1;
    }
    sb->keys_thread_started = pthread_create(&sb->keys_thread, NULL, load_keys, sb) == 0;
    return 0;
}

void pool_destroy(struct srv_backend *sb)
{
    if (sb->keys_thread_started)
        pthread_join(sb->keys_thread, NULL);
    /* Every connection is back: MHD has stopped, no request holds one.
     * Destroying the subpool runs apr_reslist's cleanup, which closes them. */
    if (sb->list_pool)
        apr_pool_destroy(sb->list_pool);
    sb->list_pool = NULL;
    atomic_store(&sb->list, NULL);
    pthread_mutex_destroy(&sb->create_lock);
    pthread_mutex_destroy(&sb->keys_lock);
    pthread_mutex_destroy(&sb->reason_lock);
    apr_pool_destroy(sb->pool);
}
