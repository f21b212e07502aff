/* as3ap: an AS3AP-style run over the postal data, in OSDB's two parts.
 *
 * Populate + single user: the postal codes loaded into PREFIXzip (the
 * backend's bulk path, one transaction), its indexes built (zip_code, the
 * unique-ish key; pref, 47 values), statistics gathered; then each query
 * kind as a batch of statements: point and range selects through the
 * index and through no index (trim(zip_code) hides the index while giving
 * the same rows), a table scan, aggregates, a self-join by prefecture and
 * a bulk update of one prefecture's rows.
 *
 * Multi user: --users connections at once, each running its share of
 * statements: the IR mix (95% point selects, 5% single-row updates) and
 * the OLTP mix (50/50), every update its own transaction, so the
 * durability setting (--sync) shows; then the table's size on disk.
 *
 * OSDB ran its queries on tables of its own making; this runs the same
 * kinds of query on the data zipbench serves. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kenall.h"
#include "sqlbench.h"

enum { CODE_LEN = 8 };

struct as3ap {
    const struct sb_opts *o;
    const struct sb_target *t;
    struct backend b;          /* the main connection, open for the whole run */
    char table[64];
    struct zb_table zt;        /* the postal table's description, named table */
    char sync[160];
    long long rows;            /* loaded */
    char (*codes)[CODE_LEN];   /* the distinct codes, sorted */
    int ncodes;
    char prefs[64][64];        /* the prefectures, as stored */
    int nprefs;
    uint64_t seed;
};

static int ignore_rows(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)arg; (void)n; (void)v; (void)l;
    return 0;
}

static int add_code(void *arg, int n, const char *const *v, const size_t *l)
{
    struct as3ap *a = arg;
    (void)l;
    if (n > 0 && v[0] && strlen(v[0]) < CODE_LEN)
        snprintf(a->codes[a->ncodes++], CODE_LEN, "%s", v[0]);
    return 0;
}

static int add_pref(void *arg, int n, const char *const *v, const size_t *l)
{
    struct as3ap *a = arg;
    (void)l;
    if (n > 0 && v[0] && a->nprefs < 64)
        snprintf(a->prefs[a->nprefs++], sizeof a->prefs[0], "%s", v[0]);
    return 0;
}

/* ---- populate ---- */

/* The bulk path's row source: the reader, counting. */
struct source {
    struct kenall_reader *r;
    long long rows;
};

static int next_row(void *arg, const char *const **fields, struct zb_err *err)
{
    struct source *s = arg;
    int rc = kenall_next(s->r, fields, err);
    s->rows += rc == 1;
    return rc;
}

static void timed(struct sb_figure *f, double t0, double u0, double s0)
{
    double u, s;
    sb_cpu(&u, &s);
    sb_figure_add(f, zb_now_s() - t0, u - u0, s - s0);
}

/* The load, the indexes, the statistics: one figure each, one run. */
static int populate(struct as3ap *a, struct zb_err *err)
{
    struct backend *b = &a->b;
    char sql[2048];
    struct sb_figure *f = calloc(4, sizeof *f);
    if (!f)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    struct kenall_opts ko = { 0 };
    struct source src = { 0 };
    int rc = -1;
    double t0, u0, s0;
    sb_execf(b, NULL, "DROP TABLE IF EXISTS %s", a->table);
    if (!(src.r = kenall_open(a->o->dataset, &ko, err)))
        goto out;
    zb_create_sql(sql, sizeof sql, &a->zt, b->drv->create_suffix(b->db));
    sb_cpu(&u0, &s0);
    t0 = zb_now_s();
    if (b->drv->exec(b->db, sql, err) < 0 || b->drv->exec(b->db, "BEGIN", err) < 0 ||
        b->drv->bulk_load(b->db, &a->zt, next_row, &src, err) < 0 ||
        b->drv->exec(b->db, "COMMIT", err) < 0)
        goto out;
    sb_figure_init(&f[0], "as3ap", "load: CREATE TABLE + bulk load", a->t, a->sync, src.rows);
    timed(&f[0], t0, u0, s0);
    f[0].unit = "rows";
    static const char *const idx[][2] = { { "zip_code", "create_idx_zip_code" },
                                          { "pref", "create_idx_pref" } };
    for (int i = 0; i < 2; i++) {
        sb_cpu(&u0, &s0);
        t0 = zb_now_s();
        if (sb_execf(b, err, "CREATE INDEX %s_%s ON %s (%s)", a->table, idx[i][0], a->table,
                     idx[i][0]) < 0)
            goto out;
        sb_figure_init(&f[1 + i], "as3ap", idx[i][1], a->t, a->sync, src.rows);
        timed(&f[1 + i], t0, u0, s0);
    }
    sb_cpu(&u0, &s0);
    t0 = zb_now_s();
    if (sb_execf(b, err, "%s%s", b->drv->analyze, a->table) < 0)
        goto out;
    sb_figure_init(&f[3], "as3ap", "analyze", a->t, a->sync, src.rows);
    timed(&f[3], t0, u0, s0);
    for (int i = 0; i < 4; i++)
        sb_record(&f[i]);
    a->rows = src.rows;
    /* The keys the queries ask for, and the prefectures. */
    a->codes = malloc((size_t)(src.rows + 1) * CODE_LEN);
    if (!a->codes) {
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        goto out;
    }
    snprintf(sql, sizeof sql, "SELECT DISTINCT zip_code FROM %s ORDER BY zip_code", a->table);
    if (b->drv->query(b->db, sql, 0, NULL, add_code, a, NULL, err) < 0)
        goto out;
    snprintf(sql, sizeof sql, "SELECT pref FROM %s GROUP BY pref ORDER BY count(*) DESC", a->table);
    if (b->drv->query(b->db, sql, 0, NULL, add_pref, a, NULL, err) < 0)
        goto out;
    if (a->ncodes < 2 || a->nprefs < 1) {
        zb_fail(err, ZB_ERR_INPUT, "%s: too few rows loaded to query", a->o->dataset);
        goto out;
    }
    rc = 0;
out:
    if (src.r)
        kenall_close(src.r);
    free(f);
    return rc;
}

/* ---- single user ---- */

/* A query kind: `count` statements of `sql`, each with the parameters
 * params() makes for statement i. */
struct query {
    const char *name;      /* the AS3AP name it maps onto, and what it is */
    const char *where;     /* SQL after SELECT <cols> FROM <table>, or a whole statement */
    int nparams;
    int count;
    void (*params)(struct as3ap *a, int i, char p[][64]);
    bool update;           /* a statement of its own (no SELECT prefix) */
};

static const char *random_code(struct as3ap *a)
{
    return a->codes[zb_rand_below(&a->seed, (uint32_t)a->ncodes)];
}

static void p_code(struct as3ap *a, int i, char p[][64])
{
    (void)i;
    snprintf(p[0], 64, "%s", random_code(a));
}

/* A range of `span` consecutive codes from a random start. */
static void range(struct as3ap *a, char p[][64], int span)
{
    if (span >= a->ncodes)
        span = a->ncodes - 1;
    int lo = (int)zb_rand_below(&a->seed, (uint32_t)(a->ncodes - span));
    snprintf(p[0], 64, "%s", a->codes[lo]);
    snprintf(p[1], 64, "%s", a->codes[lo + span - 1]);
}

static void p_range100(struct as3ap *a, int i, char p[][64]) { (void)i; range(a, p, 100); }
static void p_range10pct(struct as3ap *a, int i, char p[][64]) { (void)i; range(a, p, a->ncodes / 10); }
static void p_pref(struct as3ap *a, int i, char p[][64]) { snprintf(p[0], 64, "%s", a->prefs[i % a->nprefs]); }
static void p_none(struct as3ap *a, int i, char p[][64]) { (void)a; (void)i; (void)p; }

static int run_query(struct as3ap *a, const struct query *q, const char *cols, struct sb_figure *f,
                     struct zb_err *err)
{
    struct backend *b = &a->b;
    char sql[2048];
    if (q->update)
        snprintf(sql, sizeof sql, q->where, a->table);
    else {
        int n = snprintf(sql, sizeof sql, "SELECT %s FROM %s ", cols, a->table);
        snprintf(sql + n, sizeof sql - (size_t)n, q->where, a->table, a->table);
    }
    struct stmt *st;
    if (b->drv->prepare(b->db, sql, q->nparams, &st, err) < 0)
        return -1;
    char p[2][64];
    const char *params[] = { p[0], p[1] };
    double u0, s0;
    sb_cpu(&u0, &s0);
    double t0 = zb_now_s();
    int rc = 0;
    for (int i = 0; i < q->count && rc == 0; i++) {
        q->params(a, i, p);
        rc = b->drv->run(st, params, ignore_rows, NULL, NULL, err);
    }
    if (rc == 0)
        timed(f, t0, u0, s0);
    b->drv->finalize(st);
    return rc;
}

static int single_user(struct as3ap *a, struct zb_err *err)
{
    const int n = a->o->speed_stmts;   /* 1,000 at scale 1 */
    const struct query queries[] = {
        { "sel_1_cl: point select by zip_code, index", "WHERE zip_code = ?", 1, n, p_code, false },
        { "sel_1_ncl: point select by zip_code, no index", "WHERE trim(zip_code) = ?", 1, 10, p_code, false },
        { "sel_100_cl: 100-code range, index", "WHERE zip_code BETWEEN ? AND ?", 2, n / 10 + 1, p_range100, false },
        { "sel_100_ncl: 100-code range, no index", "WHERE trim(zip_code) BETWEEN ? AND ?", 2, 10, p_range100, false },
        { "sel_10pct_cl: 10% range, index", "WHERE zip_code BETWEEN ? AND ?", 2, 5, p_range10pct, false },
        { "table_scan: no row matches", "WHERE multi_town = 99", 0, 5, p_none, false },
        { "agg_simple_report: rows, cities, codes by prefecture", "", 0, 3, p_none, false },
        { "agg_scal: min, max, count", "", 0, 5, p_none, false },
        { "join_2_cl: self-join by prefecture on zip_code", "", 1, 5, p_pref, false },
        { "bulk_modify: UPDATE a prefecture's rows", "UPDATE %s SET update_flag = update_flag + 1 WHERE pref = ?", 1, 1, p_pref, true },
    };
    char cols[512];
    /* the server's lookup: every column */
    char lookup[1024];
    zb_lookup_sql(lookup, sizeof lookup, "x");
    snprintf(cols, sizeof cols, "%.*s", (int)(strstr(lookup, " FROM ") - lookup - 7), lookup + 7);
    static const char *const special_cols[] = {
        "pref, count(*), count(DISTINCT city), min(zip_code), max(zip_code)",
        "min(zip_code), max(zip_code), count(*)",
        "count(*)",
    };
    static const char *const special_where[] = {
        "GROUP BY pref",
        "",
        "a JOIN %s b ON b.zip_code = a.zip_code WHERE a.pref = ?",
    };
    const int nq = sizeof queries / sizeof queries[0];
    struct sb_figure *f = calloc((size_t)nq, sizeof *f);
    if (!f)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    for (int i = 0; i < nq; i++) {
        sb_figure_init(&f[i], "as3ap", queries[i].name, a->t, a->sync, queries[i].count);
        f[i].unit = "statements";
    }
    int rc = 0;
    for (int r = 0; r < a->o->repeat && rc == 0; r++) {
        a->seed = 2002 + (uint64_t)r;
        for (int i = 0; i < nq && rc == 0; i++) {
            struct query q = queries[i];
            const char *c = cols;
            if (i >= 6 && i <= 8) {
                c = special_cols[i - 6];
                q.where = special_where[i - 6];
            }
            rc = run_query(a, &q, c, &f[i], err);
        }
        /* bulk_modify undone, untimed */
        if (rc == 0) {
            char sql[256];
            const char *p[] = { a->prefs[0] };
            snprintf(sql, sizeof sql, "UPDATE %s SET update_flag = update_flag - 1 WHERE pref = ?", a->table);
            rc = a->b.drv->query(a->b.db, sql, 1, p, NULL, NULL, NULL, err);
        }
    }
    for (int i = 0; i < nq && rc == 0; i++)
        sb_record(&f[i]);
    free(f);
    return rc;
}

/* ---- multi user ---- */

struct mu_shared {
    struct as3ap *a;
    int ops;                   /* statements per user */
    int update_pct;            /* share of updates in the mix */
    pthread_barrier_t ready, go;
};

struct mu_user {
    struct mu_shared *sh;
    pthread_t thread;
    uint64_t seed;
    long long retries;
    double end;
    int failed;
    struct zb_err err;
};

static int run_retry(struct mu_user *u, struct backend *b, struct stmt *st, const char *const *p)
{
    for (int tries = 0;; tries++) {
        if (b->drv->run(st, p, ignore_rows, NULL, NULL, &u->err) == 0)
            return 0;
        if (tries == 10000 || !sb_retryable(&u->err))
            return -1;
        u->retries++;
        struct timespec ts = { 0, 100000 * (1 + tries % 10) };
        nanosleep(&ts, NULL);
    }
}

static void *mu_main(void *arg)
{
    struct mu_user *u = arg;
    struct mu_shared *sh = u->sh;
    struct as3ap *a = sh->a;
    struct backend b = { 0 };
    struct stmt *sel = NULL, *upd = NULL;
    char sql[1024];
    int rc = sb_open(&b, a->t, a->o->sync, &u->err);
    if (rc == 0) {
        zb_lookup_sql(sql, sizeof sql, a->table);
        rc = b.drv->prepare(b.db, sql, 1, &sel, &u->err);
    }
    if (rc == 0) {
        snprintf(sql, sizeof sql, "UPDATE %s SET update_flag = ? WHERE zip_code = ?", a->table);
        rc = b.drv->prepare(b.db, sql, 2, &upd, &u->err);
    }
    u->failed = rc < 0;
    pthread_barrier_wait(&sh->ready);
    pthread_barrier_wait(&sh->go);
    char flag[8];
    for (int i = 0; i < sh->ops && !u->failed; i++) {
        const char *code = a->codes[zb_rand_below(&u->seed, (uint32_t)a->ncodes)];
        if ((int)zb_rand_below(&u->seed, 100) < sh->update_pct) {
            snprintf(flag, sizeof flag, "%u", zb_rand_below(&u->seed, 2));
            const char *p[] = { flag, code };
            u->failed = run_retry(u, &b, upd, p) < 0;
        } else {
            const char *p[] = { code };
            u->failed = run_retry(u, &b, sel, p) < 0;
        }
    }
    u->end = zb_now_s();
    if (sel)
        b.drv->finalize(sel);
    if (upd)
        b.drv->finalize(upd);
    backend_close(&b);
    return NULL;
}

static int multi_user(struct as3ap *a, struct zb_err *err)
{
    const int users = a->o->users, ops = a->o->as3ap_ops;
    static const struct { const char *fmt; int update_pct; } mix[] = {
        { "mu_ir: %d users, 95%% point selects, 5%% updates", 5 },
        { "mu_oltp: %d users, 50%% point selects, 50%% updates", 50 },
    };
    struct sb_figure *f = calloc(3, sizeof *f);
    struct mu_user *u = calloc((size_t)users, sizeof *u);
    if (!f || !u) {
        free(f);
        free(u);
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    }
    char name[96];
    for (int m = 0; m < 2; m++) {
        snprintf(name, sizeof name, mix[m].fmt, users);
        sb_figure_init(&f[m], "as3ap", name, a->t, a->sync, (long long)users * ops);
        f[m].unit = "statements";
    }
    int rc = 0;
    for (int r = 0; r < a->o->repeat && rc == 0; r++)
        for (int m = 0; m < 2 && rc == 0; m++) {
            struct mu_shared sh = { .a = a, .ops = ops, .update_pct = mix[m].update_pct };
            pthread_barrier_init(&sh.ready, NULL, (unsigned)users + 1);
            pthread_barrier_init(&sh.go, NULL, (unsigned)users + 1);
            memset(u, 0, (size_t)users * sizeof *u);
            int started = 0;
            for (; started < users; started++) {
                u[started].sh = &sh;
                u[started].seed = 2002u * 1000u + (uint64_t)started + 100u * (uint64_t)r;
                if (pthread_create(&u[started].thread, NULL, mu_main, &u[started]) != 0)
                    break;
            }
            if (started < users) {
                fprintf(stderr, "sqlbench: cannot start thread %d of %d\n", started + 1, users);
                exit(1);
            }
            pthread_barrier_wait(&sh.ready);
            double u0, s0;
            sb_cpu(&u0, &s0);
            double t0 = zb_now_s(), t1 = t0;
            pthread_barrier_wait(&sh.go);
            for (int i = 0; i < users; i++) {
                pthread_join(u[i].thread, NULL);
                if (u[i].end > t1)
                    t1 = u[i].end;
                f[m].retries += u[i].retries;
                if (u[i].failed && rc == 0)
                    rc = zb_fail(err, u[i].err.kind, "user %d: %s", i, u[i].err.msg);
            }
            double u1, s1;
            sb_cpu(&u1, &s1);
            pthread_barrier_destroy(&sh.ready);
            pthread_barrier_destroy(&sh.go);
            if (rc == 0)
                sb_figure_add(&f[m], t1 - t0, u1 - u0, s1 - s0);
        }
    if (rc == 0) {
        sb_record(&f[0]);
        sb_record(&f[1]);
        /* The size after, as OSDB reported it: a figure of its own. */
        sb_figure_init(&f[2], "as3ap", "size: table and indexes after the multi-user phase", a->t,
                       a->sync, a->rows);
        f[2].bytes = a->b.drv->table_bytes(a->b.db, a->table);
        sb_figure_add(&f[2], 0, 0, 0);
        sb_record(&f[2]);
    }
    free(f);
    free(u);
    return rc;
}

int sb_as3ap(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err)
{
    struct as3ap *a = calloc(1, sizeof *a);
    if (!a)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    a->o = o;
    a->t = t;
    snprintf(a->table, sizeof a->table, "%szip", o->prefix);
    a->zt = zb_postal_table(a->table);
    int rc = sb_open(&a->b, t, o->sync, err);
    if (rc == 0 && t->in_process)
        rc = a->b.drv->exec(a->b.db, "PRAGMA journal_mode=WAL", err);
    if (rc == 0)
        rc = a->b.drv->set_sync(a->b.db, ZB_SYNC_DEFAULT, a->sync, sizeof a->sync, err);
    if (rc == 0)
        rc = populate(a, err);
    if (rc == 0)
        rc = single_user(a, err);
    if (rc == 0)
        rc = multi_user(a, err);
    if (a->b.db) {
        sb_execf(&a->b, NULL, "DROP TABLE IF EXISTS %s", a->table);
        if (t->in_process)
            a->b.drv->exec(a->b.db, "PRAGMA journal_mode=DELETE", NULL);
    }
    /* Closing last puts a global durability knob (InnoDB's) back. */
    backend_close(&a->b);
    free(a->codes);
    free(a);
    return rc;
}
