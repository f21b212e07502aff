/* One backend serving one dataset, as every loop sees it: its lookup, its
 * outage state and (postal) its key set.
 *
 * Outage: a lookup whose connection fails marks the backend down; while
 * down, one lookup at a time (the probe) may go to the database, the next
 * one no sooner than PROBE_NS after the last one ended; the others get 503
 * at once. A probe that succeeds marks it up again.
 *
 * Keys: the table's distinct codes, loaded by a thread of the backend's own
 * on a synchronous connection (the loops never block), at start and again
 * on demand after a failure; when it is done it wakes every loop, and the
 * /random requests waiting there go on. */
#include <apr_strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "served.h"

#define PROBE_NS (200u * 1000u * 1000u)   /* while down: 200 ms between probes */
#define PROBING UINT64_MAX                 /* next_probe_ns while a probe is under way */

/* `"name":` for every column, so a row is written by copies only. */
static int column_keys(struct srv_backend *sb, struct zb_err *err)
{
    const struct dataset *d = sb->data;
    for (int i = 0; i < d->ncols; i++) {
        struct json_key *k = &sb->colkey[i];
        int n = snprintf(k->s, sizeof k->s, "%s\"%s\":", i ? "," : "", d->col[i].name);
        if (n < 0 || (size_t)n >= sizeof k->s)
            return zb_fail(err, ZB_ERR_INPUT, "dataset %s: column name %s too long",
                           d->conf->name, d->col[i].name);
        k->len = (unsigned char)n;
    }
    return 0;
}

int served_init(struct srv_backend *sb, const struct backend_conf *bc,
                 const struct dataset *data, int index, apr_pool_t *parent, struct zb_err *err)
{
    memset(sb, 0, sizeof *sb);
    sb->index = index;
    sb->conf = *bc;
    sb->conf.read_only = true;
    sb->data = data;
    sb->postal = !strcmp(data->conf->name, DATASET_DEFAULT);
    sb->key_kind = sb->postal ? KEY_POSTAL
                   : data->col[data->key].type == ZB_INTEGER ? KEY_INTEGER : KEY_TEXT;
    if (sb->postal)
        snprintf(sb->label, sizeof sb->label, "%s", bc->name);
    else
        snprintf(sb->label, sizeof sb->label, "%s/%s", data->conf->name, bc->name);
    sb->drv = backend_driver(bc->driver);
    if (!sb->drv)
        return zb_fail(err, ZB_ERR_INPUT, "backend %s: unknown driver '%s'", bc->name,
                       bc->driver ? bc->driver : "");
    int st = bc->strategy ? conf_choice(zb_strategy_names, bc->strategy) : -1;
    sb->strategy = st >= 0 ? (enum zb_strategy)st : bc->persistent ? ZB_POOLED : ZB_PER_REQUEST;
    char table_name[256];
    struct zb_table t = dataset_table(data, bc, table_name, sizeof table_name);
    /* A text key is found only by its exact bytes, on every backend. */
    const char *exact = t.cols[t.key].type == ZB_TEXT ? sb->drv->text_key_exact : NULL;
    size_t n = 0;
    if (zb_select_sql(sb->sql, sizeof sb->sql, &t) == 0 && exact)
        n = strlen(sb->sql) + strlen(exact);
    if (n >= sizeof sb->sql || zb_select_sql(sb->sql, sizeof sb->sql, &t) < 0)
        return zb_fail(err, ZB_ERR_INPUT, "backend %s: the lookup of %s is too long", sb->label,
                       table_name);
    if (exact)
        strcat(sb->sql, exact);
    if (column_keys(sb, err) < 0)
        return -1;
    if (apr_pool_create(&sb->pool, parent) != APR_SUCCESS)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    pthread_mutex_init(&sb->keys_lock, NULL);
    pthread_mutex_init(&sb->reason_lock, NULL);
    atomic_init(&sb->keys, NULL);
    atomic_init(&sb->up, true);
    return 0;
}

/* ---- outage ---- */

void served_mark_down(struct srv_backend *sb, const struct zb_err *err)
{
    bool was = atomic_exchange(&sb->up, false);
    atomic_store(&sb->next_probe_ns, zb_now_ns() + PROBE_NS);
    pthread_mutex_lock(&sb->reason_lock);
    snprintf(sb->down_reason, sizeof sb->down_reason, "%s", err ? err->msg : "down");
    pthread_mutex_unlock(&sb->reason_lock);
    char next[300];
    if (was)
        fprintf(stderr, "server: backend %s: down: %s%s\n", sb->label, sb->down_reason,
                backend_next_step(&sb->conf, err, next, sizeof next));
}

void served_mark_up(struct srv_backend *sb)
{
    if (!atomic_load_explicit(&sb->up, RELAXED) && !atomic_exchange(&sb->up, true))
        fprintf(stderr, "server: backend %s: up again\n", sb->label);
}

/* A lookup or a connect failed inside the database: the client gets
 * the message without paths, the log the whole of it, at most once a
 * second per loop (with how many were left out), so a failing table
 * cannot flood it. */
void served_log_error(const struct srv_backend *sb, const char *what, const char *msg)
{
    static _Thread_local uint64_t last_ns;
    static _Thread_local unsigned left_out;
    uint64_t now = zb_now_ns();
    if (last_ns && now - last_ns < 1000000000u) {
        left_out++;
        return;
    }
    fprintf(stderr, "server: backend %s: %s: %s (%u more not logged)\n", sb->label, what, msg,
            left_out);
    last_ns = now;
    left_out = 0;
}

void served_bump_gen(struct srv_backend *sb, unsigned seen)
{
    atomic_compare_exchange_strong(&sb->gen, &seen, seen + 1);
}

void served_down_error(struct srv_backend *sb, struct zb_err *err)
{
    pthread_mutex_lock(&sb->reason_lock);
    zb_fail(err, ZB_ERR_CONN, "backend %s is down: %.400s", sb->label, sb->down_reason);
    pthread_mutex_unlock(&sb->reason_lock);
}

bool served_may_try(struct srv_backend *sb, bool *probe)
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
void served_end_probe(struct srv_backend *sb)
{
    uint64_t probing = PROBING;
    atomic_compare_exchange_strong(&sb->next_probe_ns, &probing, zb_now_ns() + PROBE_NS);
}

/* ---- keys ---- */

struct key_load {
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

static void *load_keys(void *arg)
{
    struct srv_backend *sb = arg;
    struct zb_err err = { 0 };
    struct backend b;
    struct key_load kl = { 0 };
    /* A bigger query than a lookup (every code): more time, still bounded,
     * as a frozen database must not hold the stop (which joins us). */
    struct backend_conf bc = sb->conf;
    if (bc.query_timeout_ms > 0 && bc.query_timeout_ms < 30000)
        bc.query_timeout_ms = 30000;
    int rc = backend_open(&b, &bc, &err);
    if (rc == 0) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT DISTINCT zip_code FROM %s", sb->conf.table);
        rc = b.drv->query(b.db, sql, 0, NULL, add_key, &kl, NULL, &err);
        backend_close(&b);
    }
    pthread_mutex_lock(&sb->keys_lock);
    if (rc == 0) {
        qsort(kl.keys, kl.n, sizeof *kl.keys, cmp_u32);
        /* Kept in the backend's APR pool for the server's lifetime. */
        uint32_t *keys = apr_palloc(sb->pool, (kl.n ? kl.n : 1) * sizeof *keys);
        if (kl.n)
            memcpy(keys, kl.keys, kl.n * sizeof *keys);
        atomic_store_explicit(&sb->nkeys, kl.n, RELAXED);
        atomic_store_explicit(&sb->keys, keys, memory_order_release);
    } else {
        snprintf(sb->keys_error, sizeof sb->keys_error, "keys not loaded: %.400s", err.msg);
        fprintf(stderr, "server: backend %s: keys not loaded, will retry on demand: %s\n",
                sb->label, err.msg);
        if (err.kind == ZB_ERR_CONN || err.kind == ZB_ERR_REFUSED || err.kind == ZB_ERR_TIMEOUT)
            served_mark_down(sb, &err);
    }
    atomic_store(&sb->keys_loading, false);
    pthread_mutex_unlock(&sb->keys_lock);
    free(kl.keys);
    loop_wake_all(sb->loops);
    return NULL;
}

/* Under keys_lock: starts a load unless one runs. */
static void start_load(struct srv_backend *sb)
{
    if (atomic_load(&sb->keys_loading))
        return;
    if (sb->keys_thread_started)
        pthread_join(sb->keys_thread, NULL);   /* the last one, long done */
    sb->keys_thread_started = false;
    atomic_store(&sb->keys_loading, true);
    if (pthread_create(&sb->keys_thread, NULL, load_keys, sb) == 0) {
        sb->keys_thread_started = true;
    } else {
        atomic_store(&sb->keys_loading, false);
    }
}

const uint32_t *served_keys(struct srv_backend *sb, size_t *n, bool *loading, struct zb_err *err)
{
    uint32_t *keys = atomic_load_explicit(&sb->keys, memory_order_acquire);
    *loading = false;
    if (keys) {
        *n = atomic_load_explicit(&sb->nkeys, RELAXED);
        return keys;
    }
    pthread_mutex_lock(&sb->keys_lock);
    bool probe = false;
    if (atomic_load(&sb->keys_loading) || served_may_try(sb, &probe)) {
        start_load(sb);
        *loading = atomic_load(&sb->keys_loading);
    }
    if (probe)
        served_end_probe(sb);
    if (!*loading) {
        if (!atomic_load(&sb->up))
            served_down_error(sb, err);
        else
            zb_fail(err, ZB_ERR_CONN, "backend %s: %s", sb->label, sb->keys_error);
    }
    pthread_mutex_unlock(&sb->keys_lock);
    return NULL;
}

int served_start(struct srv_backend *sb, struct loop *loops, struct zb_err *err)
{
    sb->loops = loops;
    struct backend b;
    int rc = backend_open(&b, &sb->conf, err);
    if (rc == 0) {
        backend_close(&b);
    } else {
        atomic_store(&sb->up, false);   /* main reports it: no "down" line of our own */
        served_mark_down(sb, err);
    }
    pthread_mutex_lock(&sb->keys_lock);
    if (rc == 0 && sb->postal)
        start_load(sb);
    pthread_mutex_unlock(&sb->keys_lock);
    return rc;
}

void served_destroy(struct srv_backend *sb)
{
    if (sb->keys_thread_started)
        pthread_join(sb->keys_thread, NULL);
    pthread_mutex_destroy(&sb->keys_lock);
    pthread_mutex_destroy(&sb->reason_lock);
    if (sb->pool)
        apr_pool_destroy(sb->pool);
}
