/* Experiment 4: the eleven tests of the 2001 SQLite vs PostgreSQL speed
 * comparison, on a table of 30,000 rows (t1(f1 int, f2 int, f3 int)),
 * with the page's own statements. The thresholds in the WHERE clauses
 * (10000, 15000, 20000) are fractions of the row count, so --scale keeps
 * the selectivities of the original. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlbench.h"

enum { NTESTS = 11 };

static const char *const tables[] = { "t1", "t2", "t3", "t4" };

struct run_state {
    struct backend b;
    const struct sb_opts *o;
    const char *p;         /* table prefix */
    uint64_t seed;
    double t0, u0, s0;
    double real[NTESTS], user[NTESTS], sys[NTESTS];
};

static void start(struct run_state *r)
{
    sb_cpu(&r->u0, &r->s0);
    r->t0 = zb_now_s();
}

static void stop(struct run_state *r, int test)
{
    double t = zb_now_s(), u, s;
    sb_cpu(&u, &s);
    r->real[test] = t - r->t0;
    r->user[test] = u - r->u0;
    r->sys[test] = s - r->s0;
}

static int ignore_rows(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)arg; (void)n; (void)v; (void)l;
    return 0;
}

/* INSERTs of n rows (f1 = 1..n, f2 and f3 random below `range`) into
 * table: prepared or parsed per statement. */
static int insert_rows(struct run_state *r, const char *table, int n, int range, bool prepared,
                       struct zb_err *err)
{
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO %s%s VALUES (?, ?, ?)", r->p, table);
    struct stmt *st = NULL;
    if (prepared && r->b.drv->prepare(r->b.db, sql, 3, &st, err) < 0)
        return -1;
    char a[24], b[24], c[24];
    const char *params[] = { a, b, c };
    int rc = 0;
    for (int i = 1; i <= n && rc == 0; i++) {
        snprintf(a, sizeof a, "%d", i);
        snprintf(b, sizeof b, "%u", zb_rand_below(&r->seed, (uint32_t)range));
        snprintf(c, sizeof c, "%u", zb_rand_below(&r->seed, (uint32_t)range));
        rc = prepared ? r->b.drv->run(st, params, NULL, NULL, NULL, err)
                      : r->b.drv->query(r->b.db, sql, 3, params, NULL, NULL, NULL, err);
    }
    if (st)
        r->b.drv->finalize(st);
    return rc;
}

static int create(struct run_state *r, const char *table, const char *cols, struct zb_err *err)
{
    return sb_execf(&r->b, err, "CREATE TABLE %s%s(%s)%s", r->p, table, cols,
                    r->b.drv->create_suffix(r->b.db));
}

static int one_run(struct run_state *r, struct zb_err *err)
{
    const struct sb_opts *o = r->o;
    const int rows = o->speed_rows, stmts = o->speed_stmts;
    const char *p = r->p;
    struct backend *b = &r->b;
    char sql[512];
    sb_drop(b, p, tables, 4);

    /* 1: CREATE TABLE and the load, one transaction, one prepared INSERT. */
    start(r);
    if (create(r, "t1", "f1 int, f2 int, f3 int", err) < 0 || b->drv->exec(b->db, "BEGIN", err) < 0 ||
        insert_rows(r, "t1", rows, rows, true, err) < 0 || b->drv->exec(b->db, "COMMIT", err) < 0)
        return -1;
    stop(r, 0);

    /* 2 and 4: the same aggregate query, without and with the indexes. */
    char select[256];
    snprintf(select, sizeof select,
             "SELECT max(f2), min(f3), count(*) FROM %st1 WHERE f3<%d OR f1>=%d", p, rows / 3,
             rows / 3 * 2);
    start(r);
    if (b->drv->query(b->db, select, 0, NULL, ignore_rows, NULL, NULL, err) < 0)
        return -1;
    stop(r, 1);

    start(r);
    if (sb_execf(b, err, "CREATE INDEX %sidx1 ON %st1(f1)", p, p) < 0 ||
        sb_execf(b, err, "CREATE INDEX %sidx2 ON %st1(f2,f3)", p, p) < 0)
        return -1;
    stop(r, 2);

    start(r);
    if (b->drv->query(b->db, select, 0, NULL, ignore_rows, NULL, NULL, err) < 0)
        return -1;
    stop(r, 3);

    /* 5: single-record SELECTs, each a statement of its own. */
    snprintf(sql, sizeof sql, "SELECT f2, f3 FROM %st1 WHERE f1=?", p);
    start(r);
    for (int i = 1; i <= stmts; i++) {
        char key[24];
        snprintf(key, sizeof key, "%d", i);
        const char *params[] = { key };
        if (b->drv->query(b->db, sql, 1, params, ignore_rows, NULL, NULL, err) < 0)
            return -1;
    }
    stop(r, 4);

    /* 6: UPDATE of a key range (MariaDB assigns left to right, so there
     * f3 gets the new f2: same rows touched, different values). */
    start(r);
    if (sb_execf(b, err, "UPDATE %st1 SET f2=f3, f3=f2 WHERE f1 BETWEEN %d AND %d", p, rows / 2,
                 rows / 3 * 2) < 0)
        return -1;
    stop(r, 5);

    /* 7: INSERT from a SELECT. */
    start(r);
    if (create(r, "t2", "f1 int, f2 int", err) < 0 ||
        sb_execf(b, err, "INSERT INTO %st2 SELECT f1, f2 FROM %st1 WHERE f3<%d", p, p, rows / 3) < 0)
        return -1;
    stop(r, 6);

    /* 8: many small INSERTs, each its own transaction. */
    start(r);
    if (create(r, "t3", "f1 int, f2 int, f3 int", err) < 0 ||
        insert_rows(r, "t3", stmts, 2000, false, err) < 0)
        return -1;
    stop(r, 7);

    /* 9: the same within one transaction. */
    start(r);
    if (create(r, "t4", "f1 int, f2 int, f3 int", err) < 0 || b->drv->exec(b->db, "BEGIN", err) < 0 ||
        insert_rows(r, "t4", stmts, 2000, false, err) < 0 || b->drv->exec(b->db, "COMMIT", err) < 0)
        return -1;
    stop(r, 8);

    /* 10: DELETE about two thirds of t1. */
    start(r);
    if (sb_execf(b, err, "DELETE FROM %st1 WHERE f2 NOT BETWEEN %d AND %d", p, rows / 3,
                 rows / 3 * 2) < 0)
        return -1;
    stop(r, 9);

    /* 11: DROP TABLE of all four in one transaction (DDL commits on its
     * own in MariaDB). */
    start(r);
    if (b->drv->exec(b->db, "BEGIN", err) < 0)
        return -1;
    for (int i = 0; i < 4; i++)
        if (sb_execf(b, err, "DROP TABLE %s%s", p, tables[i]) < 0)
            return -1;
    if (b->drv->exec(b->db, "COMMIT", err) < 0)
        return -1;
    stop(r, 10);
    return 0;
}

int sb_speed(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err)
{
    const int rows = o->speed_rows, stmts = o->speed_stmts;
    char names[NTESTS][96];
    snprintf(names[0], 96, "1 CREATE TABLE + %d INSERTs in 1 txn", rows);
    snprintf(names[1], 96, "2 SELECT aggregates, no index");
    snprintf(names[2], 96, "3 CREATE INDEX x2");
    snprintf(names[3], 96, "4 SELECT aggregates, indexed");
    snprintf(names[4], 96, "5 %d SELECTs by key", stmts);
    snprintf(names[5], 96, "6 UPDATE %d-row key range", rows / 3 * 2 - rows / 2 + 1);
    snprintf(names[6], 96, "7 INSERT ... SELECT");
    snprintf(names[7], 96, "8 %d INSERTs, autocommit", stmts);
    snprintf(names[8], 96, "9 %d INSERTs in 1 txn", stmts);
    snprintf(names[9], 96, "10 DELETE");
    snprintf(names[10], 96, "11 DROP TABLE x4");
    const long long ns[NTESTS] = { rows, rows, rows, rows, stmts, rows / 3 * 2 - rows / 2 + 1,
                                   rows, stmts, stmts, rows, 4 };
    struct sb_figure *figs = calloc(NTESTS, sizeof *figs);
    struct run_state *r = calloc(1, sizeof *r);
    if (!figs || !r) {
        free(figs);
        free(r);
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    }
    for (int i = 0; i < NTESTS; i++)
        sb_figure_init(&figs[i], "speed", names[i], t, NULL, ns[i]);
    int rc = 0;
    r->o = o;
    r->p = o->prefix;
    if (backend_open(&r->b, t->bc, err) < 0) {
        rc = -1;
        goto out;
    }
    for (int rep = 0; rep < o->repeat && rc == 0; rep++) {
        r->seed = 20011124;  /* the same rows every run */
        rc = one_run(r, err);
        if (rc < 0)
            sb_drop(&r->b, r->p, tables, 4);
        for (int i = 0; i < NTESTS && rc == 0; i++)
            sb_figure_add(&figs[i], r->real[i], r->user[i], r->sys[i]);
    }
    backend_close(&r->b);
    if (rc == 0)
        for (int i = 0; i < NTESTS; i++)
            sb_record(&figs[i]);
out:
    free(figs);
    free(r);
    return rc;
}
