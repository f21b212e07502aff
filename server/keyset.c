/* A postal table's load generation and its key set (see keyset.h).
 *
 * One watcher thread per postal backend, on synchronous connections of
 * its own (the loops never block): every KEYSET_CHECK_MS it asks the
 * database for the generation of the table's last load (the driver's
 * generation_sql: the loader records it with its swap, in the same
 * atomic step), and when it moved: the serial is bumped (what /cached
 * keeps is older now), each hook runs (what routes derive from the table:
 * the write table's rows, their statements), and the codes are read
 * again. It also reads them when a request finds no set (at most once a
 * second after a read failed). A new set is published with one atomic
 * store; the old one is freed once every loop has begun a new iteration,
 * as no loop keeps a set past the iteration it took it in. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "keyset.h"
#include "log.h"

#define RETRY_NS (1000u * 1000u * 1000u)   /* after a failed read: 1 s to the next */
#define POLL_TIMEOUT_MS 2000               /* a version poll waits no longer than this */
#define READ_TIMEOUT_MS 30000              /* nor a read of every code */

#define MAX_HOOKS 4

struct keyset {
    struct served *sv;
    /* What runs when the generation moved, before the codes are read. */
    struct { void (*fn)(void *arg, struct served *sv); void *arg; } hook[MAX_HOOKS];
    int nhooks;
    _Atomic uint64_t serial;       /* bumped when the generation moved (and at the first read) */
    struct loop *const *loops;
    int nloops;
    uint64_t *turns;               /* the loops' turns when a set was replaced (watcher only) */
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t cond;           /* the watcher waits on it: a read asked for, the stop */
    _Atomic bool stop;
    _Atomic bool loading;          /* a read is asked for or under way */
    _Atomic(struct key_set *) set; /* the published set (seq_cst: see retire) */
    char error[512];               /* why the last read failed (under lock) */
    enum zb_err_kind error_kind;   /* and its kind (under lock) */
    uint64_t failed_ns;            /* and when (under lock) */
};

/* ---- reading the codes ---- */

struct codes {
    uint32_t *keys;
    size_t n, cap;
};

static int add_code(void *arg, int ncols, const char *const *vals, const size_t *lens)
{
    struct codes *c = arg;
    if (ncols < 1 || !vals[0] || lens[0] != 7)
        return 0;
    uint32_t k = 0;
    for (int i = 0; i < 7; i++) {
        if (vals[0][i] < '0' || vals[0][i] > '9')
            return 0;
        k = k * 10 + (uint32_t)(vals[0][i] - '0');
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 4096;
        uint32_t *grown = realloc(c->keys, cap * sizeof *grown);
        if (!grown)
            return 1;
        c->keys = grown;
        c->cap = cap;
    }
    c->keys[c->n++] = k;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Every code of the table, sorted, on a connection of its own: a bigger
 * query than a lookup, so more time, still bounded, as a frozen database
 * must not hold the stop (which joins the watcher). NULL with err. */
static struct key_set *read_codes(struct served *sv, struct zb_err *err)
{
    struct backend_conf bc = sv->conf;
    if (bc.query_timeout_ms > 0 && bc.query_timeout_ms < READ_TIMEOUT_MS)
        bc.query_timeout_ms = READ_TIMEOUT_MS;
    struct backend b;
    struct codes c = { 0 };
    int rc = backend_open(&b, &bc, err);
    if (rc == 0) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT DISTINCT zip_code FROM %s", sv->conf.table);
        rc = b.drv->query(b.db, sql, 0, NULL, add_code, &c, NULL, err);
    }
    backend_close(&b);
    struct key_set *set = rc == 0 ? malloc(sizeof *set + c.n * sizeof *c.keys) : NULL;
    if (rc == 0 && !set)
        zb_fail(err, ZB_ERR_SYS, "out of memory for %zu keys", c.n);
    if (set) {
        qsort(c.keys, c.n, sizeof *c.keys, cmp_u32);
        if (c.n)
            memcpy(set->keys, c.keys, c.n * sizeof *c.keys);
        set->n = c.n;
        set->loaded_ns = zb_now_ns();
    }
    free(c.keys);
    return set;
}

/* ---- the table's generation ---- */

struct text {
    char *out;
    size_t len;
};

static int first_text(void *arg, int ncols, const char *const *vals, const size_t *lens)
{
    struct text *t = arg;
    (void)lens;
    if (ncols > 0 && vals[0])
        snprintf(t->out, t->len, "%s", vals[0]);
    return 1;
}

/* The generation of the table's last load into out ("" when none is
 * recorded): 0, or -1 with err (the connection is closed then, and opened
 * again next time). */
static int table_generation(struct served *sv, struct backend *vb, const struct backend_conf *vc,
                         char *out, size_t len, struct zb_err *err)
{
    if (!vb->db && backend_open(vb, vc, err) < 0) {
        backend_close(vb);
        return -1;
    }
    const char *params[] = { sv->conf.table };
    struct text t = { out, len };
    out[0] = 0;
    if (vb->drv->query(vb->db, sv->drv->generation_sql, 1, params, first_text, &t, NULL,
                       err) < 0) {
        if (err->kind != ZB_ERR_BUSY)   /* a lock: the connection is fine */
            backend_close(vb);
        return -1;
    }
    return 0;
}

/* ---- publishing ---- */

/* Frees old once no loop can hold it: every loop has begun an iteration
 * since the new set was published (each takes a set and is done with it
 * within one), or the loops are gone (the stop). A loop that has not is
 * woken while it is waited for: an idle one would begin no iteration
 * until its next event, up to a minute, and the watcher, with every
 * reload after this one, would wait that long. */
static void retire(struct keyset *ks, struct key_set *old)
{
    if (!old)
        return;
    for (int i = 0; i < ks->nloops; i++)
        ks->turns[i] = atomic_load(&ks->loops[i]->turns);
    for (int i = 0; i < ks->nloops; i++)
        while (atomic_load(&ks->loops[i]->turns) == ks->turns[i] && !atomic_load(&ks->stop)) {
            loop_wake(ks->loops[i]);
            usleep(1000);
        }
    free(old);
}

/* One read of the codes; version is the table's as read before it (NULL:
 * not known). Wakes every loop: requests waiting for a set go on. */
static void read_now(struct keyset *ks, const char *version)
{
    struct served *sv = ks->sv;
    struct zb_err err = { 0 };
    struct key_set *set = read_codes(sv, &err);
    if (set) {
        struct key_set *old = atomic_exchange(&ks->set, set);
        if (old)
            srv_log("server: backend %s: the table was replaced: /random draws from its %zu "
                    "codes now (%zu before)", sv->label, set->n, old->n);
        atomic_store(&ks->loading, false);
        loop_wake_all(ks->loops[0]);
        retire(ks, old);
        return;
    }
    pthread_mutex_lock(&ks->lock);
    bool again = ks->failed_ns && !strcmp(ks->error, err.msg);
    snprintf(ks->error, sizeof ks->error, "%s", err.msg);
    ks->error_kind = err.kind;
    ks->failed_ns = zb_now_ns();
    pthread_mutex_unlock(&ks->lock);
    if (!again)
        srv_log("server: backend %s: keys not loaded, will retry on demand%s: %s", sv->label,
                version ? " or once the table changes" : "", err.msg);
    if (err.kind == ZB_ERR_CONN || err.kind == ZB_ERR_REFUSED || err.kind == ZB_ERR_TIMEOUT)
        served_mark_down(sv, &err);
    atomic_store(&ks->loading, false);
    loop_wake_all(ks->loops[0]);
}

/* ---- the watcher ---- */

/* The generation moved (a load swapped the table): what was derived from
 * the old one is told, before the codes are read. */
static void renewed(struct keyset *ks)
{
    struct served *sv = ks->sv;
    atomic_fetch_add(&ks->serial, 1);
    for (int i = 0; i < ks->nhooks; i++)
        ks->hook[i].fn(ks->hook[i].arg, sv);
    /* Connections prepared against the old table are replaced. */
    atomic_fetch_add(&sv->gen, 1);
}

static void *watch(void *arg)
{
    struct keyset *ks = arg;
    struct served *sv = ks->sv;
    /* Polls are a lookup's size: a lookup's time limit at most. */
    struct backend_conf vc = sv->conf;
    if (vc.query_timeout_ms <= 0 || vc.query_timeout_ms > POLL_TIMEOUT_MS)
        vc.query_timeout_ms = POLL_TIMEOUT_MS;
    struct backend vb = { 0 };
    char seen[128] = "", generation[128];
    bool known = false, poll_failed = false, unrecorded = false;
    while (!atomic_load(&ks->stop)) {
        uint64_t next = zb_now_ns() + KEYSET_CHECK_MS * 1000000ull;
        bool asked = atomic_load(&ks->loading);
        int v = -1;
        if (asked || atomic_load(&sv->up)) {
            struct zb_err err = { 0 };
            v = table_generation(sv, &vb, &vc, generation, sizeof generation, &err);
            if (v < 0 && err.kind == ZB_ERR_SQL) {
                /* No load recorded in this database (no ZB_LOADS_TABLE): a
                 * table made by other means, or by an older loader. */
                if (!unrecorded)
                    srv_log("server: backend %s: no load of %s is recorded (%s): its keys are "
                            "read once, and a reload is not followed until the loader records "
                            "one", sv->label, sv->conf.table, err.msg);
                unrecorded = true;
                generation[0] = 0;
                v = 0;
            }
            if (v < 0 && !poll_failed && err.kind != ZB_ERR_BUSY)
                srv_log("server: backend %s: cannot tell whether the table was replaced: %s",
                        sv->label, err.msg);
            poll_failed = v < 0 && err.kind != ZB_ERR_BUSY;   /* a lock: next time */
        }
        bool have = atomic_load(&ks->set) != NULL;
        bool moved = v == 0 && (known ? strcmp(generation, seen) != 0 : have);
        if (asked || moved) {
            atomic_store(&ks->loading, true);
            if (moved && have)
                renewed(ks);
            else if (!have)
                atomic_fetch_add(&ks->serial, 1);
            known = v == 0;
            if (known)
                snprintf(seen, sizeof seen, "%s", generation);
            read_now(ks, known ? seen : NULL);
        }
        pthread_mutex_lock(&ks->lock);
        while (!atomic_load(&ks->stop) && !atomic_load(&ks->loading) && zb_now_ns() < next) {
            uint64_t left = next - zb_now_ns();
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_sec += (time_t)(left / 1000000000u);
            until.tv_nsec += (long)(left % 1000000000u);
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&ks->cond, &ks->lock, &until);
        }
        pthread_mutex_unlock(&ks->lock);
    }
    backend_close(&vb);
    return NULL;
}

/* ---- the loops' side ---- */

int keyset_prepare(struct served *sv, struct zb_err *err)
{
    if (sv->key_kind != KEY_POSTAL || sv->owner)
        return 0;
    struct keyset *ks = calloc(1, sizeof *ks);
    if (!ks)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    ks->sv = sv;
    sv->keyset = ks;
    return 0;
}

int keyset_hook(struct served *sv, void (*fn)(void *arg, struct served *sv), void *arg,
                struct zb_err *err)
{
    struct keyset *ks = sv->keyset;
    if (!ks || ks->nhooks == MAX_HOOKS)
        return zb_fail(err, ZB_ERR_SYS, "backend %s: %s", sv->label,
                       ks ? "too many hooks on its load" : "no load followed (not postal)");
    ks->hook[ks->nhooks].fn = fn;
    ks->hook[ks->nhooks++].arg = arg;
    return 0;
}

uint64_t keyset_serial(const struct served *sv)
{
    return sv->keyset ? atomic_load_explicit(&sv->keyset->serial, memory_order_acquire) : 0;
}

int keyset_start(struct served *sv, struct loop *const *loops, int nloops, struct zb_err *err)
{
    struct keyset *ks = sv->keyset;
    if (!ks)
        return 0;
    uint64_t *turns = calloc((size_t)nloops, sizeof *turns);
    if (!turns)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    ks->loops = loops;
    ks->nloops = nloops;
    ks->turns = turns;
    pthread_mutex_init(&ks->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ks->cond, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&ks->set, NULL);
    atomic_init(&ks->stop, false);
    atomic_init(&ks->loading, atomic_load(&sv->up));   /* the first read, unless down */
    int rc = pthread_create(&ks->thread, NULL, watch, ks);
    if (rc) {
        atomic_store(&ks->loading, false);
        return zb_fail(err, ZB_ERR_SYS, "backend %s: the key set's thread: %s", sv->label,
                       strerror(rc));
    }
    ks->started = true;
    return 0;
}

void keyset_stop(struct served *sv)
{
    struct keyset *ks = sv->keyset;
    if (!ks)
        return;
    pthread_mutex_lock(&ks->lock);
    atomic_store(&ks->stop, true);
    pthread_cond_signal(&ks->cond);
    pthread_mutex_unlock(&ks->lock);
    if (ks->started)
        pthread_join(ks->thread, NULL);
    free(atomic_load(&ks->set));
    if (ks->turns) {   /* started: its lock and condition made */
        pthread_cond_destroy(&ks->cond);
        pthread_mutex_destroy(&ks->lock);
    }
    free(ks->turns);
    free(ks);
    sv->keyset = NULL;
}

const struct key_set *keyset_get(struct served *sv, bool *loading, struct zb_err *err)
{
    struct keyset *ks = sv->keyset;
    *loading = false;
    if (!ks) {
        zb_fail(err, ZB_ERR_INPUT, "backend %s: no key set (not the postal dataset)", sv->label);
        return NULL;
    }
    const struct key_set *set = atomic_load(&ks->set);
    if (set)
        return set;
    pthread_mutex_lock(&ks->lock);
    if (!atomic_load(&ks->loading) && zb_now_ns() - ks->failed_ns >= RETRY_NS) {
        atomic_store(&ks->loading, true);   /* the watcher reads at once */
        pthread_cond_signal(&ks->cond);
    }
    *loading = atomic_load(&ks->loading);
    if (!*loading) {
        if (!atomic_load(&sv->up))
            served_down_error(sv, err);
        else
            zb_fail(err, ks->error_kind, "backend %s: keys not loaded: %.400s", sv->label,
                    ks->error);
    }
    pthread_mutex_unlock(&ks->lock);
    return NULL;
}

bool keyset_pending(struct served *sv)
{
    struct keyset *ks = sv->keyset;
    return ks && !atomic_load(&ks->set) && atomic_load(&ks->loading);
}

size_t keyset_size(struct served *sv, double *age_s)
{
    const struct key_set *set = sv->keyset ? atomic_load(&sv->keyset->set) : NULL;
    *age_s = set ? (double)(zb_now_ns() - set->loaded_ns) / 1e9 : -1;
    return set ? set->n : 0;
}

/* ---- picking a key ---- */

static bool has_key(const uint32_t *keys, size_t n, uint32_t k)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && keys[lo] == k;
}

uint32_t keyset_pick(const struct key_set *set, double miss, uint64_t *rng)
{
    uint32_t k = 0;
    const uint32_t *keys = set->keys;
    size_t n = set->n;
    if (n > 0 && !(miss > 0 && zb_rand_unit(rng) < miss))
        return keys[zb_rand_below(rng, (uint32_t)n)];
    /* A code that is not in the table: random 7-digit numbers are almost
     * all misses (a full list fills ~1.2% of them). */
    for (int tries = 0; tries < 1000; tries++) {
        k = zb_rand_below(rng, 10000000);
        if (!has_key(keys, n, k))
            break;
    }
    return k;
}

/* ---- requests waiting for a set ---- */

void keyset_waiters_init(struct key_waiters *ws, struct loop *l)
{
    ws->loop = l;
    APR_RING_INIT(&ws->list, key_wait, link);
}

static uint64_t due_of(const struct key_wait *w)
{
    return w->since_ns + (uint64_t)w->sv->conf.acquire_timeout_ms * 1000000u;
}

void keyset_wait(struct key_waiters *ws, struct key_wait *w)
{
    w->since_ns = zb_now_ns();
    APR_RING_INSERT_TAIL(&ws->list, w, key_wait, link);
    loop_deadline(ws->loop, due_of(w));
}

void keyset_woken(struct key_waiters *ws)
{
    struct key_wait_list over;
    APR_RING_INIT(&over, key_wait, link);
    struct key_wait *w = APR_RING_FIRST(&ws->list), *nx;
    for (; w != APR_RING_SENTINEL(&ws->list, key_wait, link); w = nx) {
        nx = APR_RING_NEXT(w, link);
        if (!keyset_pending(w->sv)) {
            APR_RING_REMOVE(w, link);
            APR_RING_INSERT_TAIL(&over, w, key_wait, link);
        }
    }
    while (!APR_RING_EMPTY(&over, key_wait, link)) {
        w = APR_RING_FIRST(&over);
        APR_RING_REMOVE(w, link);
        if (w->over(w, NULL))   /* a read again: wait for it, as long as allowed */
            APR_RING_INSERT_TAIL(&ws->list, w, key_wait, link);
    }
}

uint64_t keyset_deadlines(struct key_waiters *ws, uint64_t now)
{
    uint64_t next = 0;
    struct key_wait *w = APR_RING_FIRST(&ws->list), *nx;
    for (; w != APR_RING_SENTINEL(&ws->list, key_wait, link); w = nx) {
        nx = APR_RING_NEXT(w, link);
        uint64_t due = due_of(w);
        if (due > now) {
            next = deadline_min(next, due);
            continue;
        }
        APR_RING_REMOVE(w, link);
        const struct backend_conf *bc = &w->sv->conf;
        struct zb_err err;
        zb_fail(&err, ZB_ERR_TIMEOUT, "backend %s: its keys were not loaded within %d ms",
                bc->name, bc->acquire_timeout_ms);
        w->over(w, &err);
    }
    return next;
}

void keyset_wind_down(struct key_waiters *ws)
{
    struct zb_err err;
    zb_fail(&err, ZB_ERR_CONN, "the server is stopping");
    while (!APR_RING_EMPTY(&ws->list, key_wait, link)) {
        struct key_wait *w = APR_RING_FIRST(&ws->list);
        APR_RING_REMOVE(w, link);
        w->over(w, &err);
    }
}
