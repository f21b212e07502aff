/* POST /update/ and /updates/: read, then write, each code on the
 * backend's {table}_hits (update.h). The read and the write are two
 * lookups, chained by their done(): the read's starts the write, the
 * write's the next code's read. A lookup that ends before its start
 * returns (SQLite inline) does not start the next one from inside it: the
 * chain goes on from the loop in run(), so 500 codes never nest 1000
 * calls deep. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyset.h"
#include "log.h"
#include "update.h"

int update_route(const char *path, const char **backend, size_t *blen, const char **code)
{
    int kind = !strncmp(path, "/update/", 8) ? 1 : !strncmp(path, "/updates/", 9) ? 2 : 0;
    if (!kind)
        return 0;
    const char *b = path + (kind == 1 ? 8 : 9);
    const char *slash = kind == 1 ? strchr(b, '/') : NULL;
    if (backend)
        *backend = b;
    if (blen)
        *blen = slash ? (size_t)(slash - b) : strlen(b);
    if (code)
        *code = slash ? slash + 1 : "";
    return kind;
}

const char *update_refusal(const struct served *sb)
{
    if (sb->hits_write)
        return NULL;
    return "writes are off for this backend (writes = yes in its [backend] section)";
}

int update_queries(const char *s)
{
    if (!s || !*s || strlen(s) > 3)
        return -1;
    int n = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        n = n * 10 + (*s - '0');
    }
    return n >= 1 && n <= UPDATE_MAX_QUERIES ? n : -1;
}

static void start_step(struct update_job *u);

/* The chain goes on: from run() if it is on the stack, else from here. */
static void go_on(struct update_job *u)
{
    if (u->running)
        u->again = true;
    else
        start_step(u);
}

static void fail(struct update_job *u, const struct lookup *lk, int rc, const struct zb_err *err,
                 const char *what)
{
    char why[512];
    lookup_why(lk, err, atomic_load_explicit(&u->srv->stopping, RELAXED), what,
               "update failed", why, sizeof why);
    u->done(u, rc == LOOKUP_UNAVAILABLE ? 503 : 500, u->many ? NULL : lk->key, why);
}

/* The read's one value: the stamp the row holds. */
static int got_stamp(void *arg, int ncols, const char *const *vals, const size_t *lens)
{
    struct update_job *u = arg;
    if (ncols < 1 || !vals[0] || lens[0] == 0 || lens[0] >= sizeof u->was ||
        strspn(vals[0], "0123456789") != lens[0])
        snprintf(u->was, sizeof u->was, "0");   /* a stamp is a whole number, NOT NULL */
    else
        memcpy(u->was, vals[0], lens[0] + 1);
    u->found = true;
    return 0;
}

static void written(struct lookup *lk, int rc, const struct zb_err *err)
{
    struct update_job *u = container_of(lk, struct update_job, lk);
    if (rc != LOOKUP_OK) {
        fail(u, lk, rc, err, "the write");
        return;
    }
    /* Committed (or a larger stamp was there already: still acknowledged,
     * the row holds a later write). */
    struct jbuf *b = u->body;
    if (u->many && u->next > 1)
        JB_LIT(b, ",{\"code\":");
    else if (u->many)
        JB_LIT(b, "{\"code\":");
    else
        JB_LIT(b, ",\"code\":");
    jb_str(b, lk->key, lk->keylen);
    JB_LIT(b, ",\"was\":");
    jb_put(b, u->was, strlen(u->was));
    JB_LIT(b, ",\"stamp\":");
    jb_put(b, u->stamp, strlen(u->stamp));
    if (u->many)
        JB_LIT(b, "}");
    if (u->next < u->n) {
        u->writing = false;
        go_on(u);
        return;
    }
    /* Framed as /zip's: no newline (docs/REQUEST-TYPES.md). */
    if (u->many)
        JB_LIT(b, "]}");
    else
        JB_LIT(b, "}");
    u->done(u, 200, NULL, NULL);
}

static void read_done(struct lookup *lk, int rc, const struct zb_err *err)
{
    struct update_job *u = container_of(lk, struct update_job, lk);
    if (rc != LOOKUP_OK) {
        fail(u, lk, rc, err, "the read");
        return;
    }
    if (!u->found) {
        u->done(u, 404, lk->key, "no such code");
        return;
    }
    u->writing = true;
    go_on(u);
}

/* The next lookup of the chain: a code's read, or its write. */
static void start_one(struct update_job *u)
{
    struct lookup *lk = &u->lk;
    const struct served *sb = u->writing ? u->sb->hits_write : u->sb->hits_read;
    lk->lane = &u->lanes[sb->index];
    lk->strategy = u->strategy;
    lk->arg = u;
    if (!u->writing) {
        snprintf(lk->key, sizeof lk->key, "%07" PRIu32, u->codes[u->next++]);
        lk->keylen = 7;
        u->found = false;
        lk->on_row = got_stamp;
        lk->done = read_done;
    } else {
        uint64_t stamp = atomic_fetch_add(&u->srv->stamp, 1);
        snprintf(u->stamp, sizeof u->stamp, "%" PRIu64, stamp);
        lk->params[0] = u->stamp;
        lk->params[1] = lk->key;
        lk->params[2] = u->stamp;
        lk->on_row = NULL;
        lk->done = written;
    }
    lookup_start(lk, false);
}

static void start_step(struct update_job *u)
{
    u->running = true;
    do {
        u->again = false;
        start_one(u);
    } while (u->again);
    u->running = false;
}

bool update_start(struct update_job *u, const char *code, int n, uint64_t *rng)
{
    struct jbuf *b = u->body;
    const struct key_set *set = NULL;
    if (!code) {
        struct zb_err err = { 0 };
        bool loading;
        if (!(set = keyset_get((struct served *)u->sb, &loading, &err))) {
            if (loading)
                return false;
            u->done(u, 503, NULL, "the backend's codes could not be read");
            return true;
        }
    }
    u->many = !code;
    u->next = 0;
    u->writing = u->running = false;
    b->n = 0;
    JB_LIT(b, "{\"backend\":");
    jb_cstr(b, u->sb->conf.name);
    if (code) {
        u->n = 1;
        u->codes[0] = (uint32_t)strtoul(code, NULL, 10);
    } else {
        u->n = n;
        for (int i = 0; i < n; i++)
            u->codes[i] = keyset_pick(set, 0, rng);
        jb_printf(b, ",\"queries\":%d,\"written\":[", n);
    }
    start_step(u);
    return true;
}

void update_setup(struct server *srv, struct served *sb)
{
    (void)srv;
    const struct served *w = sb->hits_write;
    const char *t = sb->conf.table;
    char create[512], fill[768];
    const char *suffix = "";
    struct backend b;
    struct zb_err err = { 0 };
    if (backend_open(&b, &w->conf, &err) < 0)
        goto fail;
    if (b.drv->create_suffix)
        suffix = b.drv->create_suffix(b.db);
    /* A row for each code: kept across runs (a crash's rows are checked
     * after it), only the codes it lacks added. */
    snprintf(create, sizeof create,
             "CREATE TABLE IF NOT EXISTS %s_hits (zip_code VARCHAR(7) NOT NULL PRIMARY KEY, "
             "stamp BIGINT NOT NULL DEFAULT 0)%s", t, suffix ? suffix : "");
    snprintf(fill, sizeof fill,
             "INSERT INTO %s_hits (zip_code, stamp) SELECT DISTINCT zip_code, 0 FROM %s t "
             "WHERE NOT EXISTS (SELECT 1 FROM %s_hits h WHERE h.zip_code = t.zip_code)", t, t, t);
    int rc = b.drv->exec(b.db, create, &err) < 0 ? -1 : b.drv->exec(b.db, fill, &err);
    backend_close(&b);
    if (rc == 0)
        return;
fail:
    srv_log("server: backend %s: writes on, but its %s_hits could not be made: %s (its writes "
            "fail until the server is restarted with it in place)", sb->label, t, err.msg);
}
