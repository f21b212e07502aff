/* The write request type's work (update.h). The read and the write are
 * two lookups, chained by their done(): the read's starts the write, the
 * write's the next code's read. A lookup that ends before its start
 * returns (SQLite inline) does not start the next one from inside it:
 * the chain goes on from the loop in run(), so 500 codes never nest 1000
 * calls deep. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "update.h"

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
    lookup_why(lk, err, u->stopping, what, "update failed", why, sizeof why);
    u->done(u, rc == LOOKUP_UNAVAILABLE ? 503 : 500, u->many ? NULL : lk->key, why);
}

/* A stamp's text: a whole number (the column is BIGINT NOT NULL). */
static bool take_number(char *to, size_t size, int ncols, const char *const *vals,
                        const size_t *lens)
{
    if (ncols < 1 || !vals[0] || lens[0] == 0 || lens[0] >= size ||
        strspn(vals[0], "0123456789") != lens[0])
        return false;
    memcpy(to, vals[0], lens[0] + 1);
    return true;
}

/* The read's one value: the stamp the row holds. */
static int got_was(struct lookup *lk, int ncols, const char *const *vals, const size_t *lens)
{
    struct update_job *u = container_of(lk, struct update_job, lk);
    if (!take_number(u->was, sizeof u->was, ncols, vals, lens))
        snprintf(u->was, sizeof u->was, "0");
    u->found = true;
    return 0;
}

/* The write's one value: the stamp the database made, which the row holds. */
static int got_stamp(struct lookup *lk, int ncols, const char *const *vals, const size_t *lens)
{
    struct update_job *u = container_of(lk, struct update_job, lk);
    u->found = take_number(u->stamp, sizeof u->stamp, ncols, vals, lens);
    return u->found ? 0 : -1;
}

static void written(struct lookup *lk, int rc, const struct zb_err *err)
{
    struct update_job *u = container_of(lk, struct update_job, lk);
    if (rc != LOOKUP_OK) {
        fail(u, lk, rc, err, "the write");
        return;
    }
    if (!u->found) {   /* the row went between the read and the write */
        u->done(u, 404, lk->key, "no such code");
        return;
    }
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
    lk->strategy = u->strategy;
    lk->arg = u;
    u->found = false;
    if (!u->writing) {
        snprintf(lk->key, sizeof lk->key, "%07" PRIu32, u->codes[u->next++]);
        lk->keylen = 7;
        lk->lane = u->read;
        lk->on_row = got_was;
        lk->done = read_done;
    } else {
        lk->lane = u->write;
        lk->on_row = got_stamp;
        lk->done = written;
    }
    lookup_start(lk);
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

void update_start(struct update_job *u, const char *name, int n, bool many)
{
    struct jbuf *b = u->body;
    u->n = n;
    u->many = many;
    u->next = 0;
    u->writing = u->running = false;
    b->n = 0;
    JB_LIT(b, "{\"backend\":");
    jb_cstr(b, name);
    if (many)
        jb_printf(b, ",\"queries\":%d,\"written\":[", n);
    start_step(u);
}

int update_table(const struct served *sv, struct zb_err *err)
{
    const char *t = sv->conf.table;
    char create[512], fill[768], hits[160];
    struct backend_conf bc = sv->conf;
    bc.read_only = false;
    const char *suffix = "";
    struct backend b;
    snprintf(hits, sizeof hits, "%s_hits", t);
    if (backend_open(&b, &bc, err) < 0) {
        backend_close(&b);
        return -1;
    }
    if (b.drv->create_suffix)
        suffix = b.drv->create_suffix(b.db);
    /* A row for each code: kept across runs (a crash's rows are checked
     * after it), only the codes it lacks added. */
    snprintf(create, sizeof create,
             "CREATE TABLE IF NOT EXISTS %s (zip_code VARCHAR(7) NOT NULL PRIMARY KEY, "
             "stamp BIGINT NOT NULL DEFAULT 0)%s", hits, suffix ? suffix : "");
    snprintf(fill, sizeof fill,
             "INSERT INTO %s (zip_code, stamp) SELECT DISTINCT zip_code, 0 FROM %s t "
             "WHERE NOT EXISTS (SELECT 1 FROM %s h WHERE h.zip_code = t.zip_code)", hits, t, hits);
    int rc = b.drv->exec(b.db, create, err) < 0 || b.drv->exec(b.db, fill, err) < 0 ||
             b.drv->stamp_setup(b.db, hits, err) < 0 ? -1 : 0;
    backend_close(&b);
    return rc;
}
