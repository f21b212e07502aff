/* Experiment 5: n INSERTs as n separate transactions (autocommit) or as
 * one (BEGIN ... COMMIT), for n = 1, 10, 100, 1,000, 10,000, at each
 * durability level: the 2005 "80x faster" comparison. A case that would
 * run past its time cap is stopped and extrapolated linearly from the
 * inserts done, which is how separate commits behave (each costs one
 * flush). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlbench.h"

static const char *const tables[] = { "txn" };

/* One timed run of n inserts; sets *real etc., *extrapolated when the run
 * hit `budget` seconds before its last insert. */
static int one_run(struct backend *b, const char *prefix, int n, bool single, double budget,
                   double *real, double *user, double *sys, bool *extrapolated, struct zb_err *err)
{
    sb_drop(b, prefix, tables, 1);
    if (sb_execf(b, err, "CREATE TABLE %stxn(f1 int, f2 int, f3 int)%s", prefix,
                 b->drv->create_suffix(b->db)) < 0)
        return -1;
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO %stxn VALUES (?, ?, ?)", prefix);
    struct stmt *st;
    if (b->drv->prepare(b->db, sql, 3, &st, err) < 0)
        return -1;
    uint64_t seed = 2005;
    char f1[24], f2[24], f3[24];
    const char *params[] = { f1, f2, f3 };
    double u0, s0, u1, s1;
    sb_cpu(&u0, &s0);
    double t0 = zb_now_s(), elapsed = 0;
    int rc = single ? b->drv->exec(b->db, "BEGIN", err) : 0, done = 0;
    while (rc == 0 && done < n) {
        snprintf(f1, sizeof f1, "%d", done + 1);
        snprintf(f2, sizeof f2, "%u", zb_rand_below(&seed, 100000));
        snprintf(f3, sizeof f3, "%u", zb_rand_below(&seed, 100000));
        rc = b->drv->run(st, params, NULL, NULL, NULL, err);
        done++;
        elapsed = zb_now_s() - t0;
        if (elapsed > budget)
            break;
    }
    if (rc == 0 && single)
        rc = b->drv->exec(b->db, "COMMIT", err);
    double t1 = zb_now_s();
    sb_cpu(&u1, &s1);
    b->drv->finalize(st);
    if (rc < 0)
        return -1;
    double k = done < n ? (double)n / done : 1;
    *extrapolated = done < n;
    *real = (t1 - t0) * k;
    *user = (u1 - u0) * k;
    *sys = (s1 - s0) * k;
    return 0;
}

int sb_txn(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err)
{
    static const enum zb_sync levels[] = { ZB_SYNC_FULL, ZB_SYNC_NORMAL, ZB_SYNC_OFF };
    static const char *const level_names[] = { "FULL", "NORMAL", "OFF" };
    struct backend b;
    if (backend_open(&b, t->bc, err) < 0)
        return -1;
    int rc = 0;
    struct sb_figure *sep = calloc(1, sizeof *sep), *one = calloc(1, sizeof *one);
    if (!sep || !one) {
        rc = zb_fail(err, ZB_ERR_SYS, "out of memory");
        goto out;
    }
    /* The cap covers all the runs of a case together. */
    double budget = o->max_seconds / o->repeat;
    for (size_t l = 0; l < sizeof levels / sizeof levels[0] && rc == 0; l++) {
        /* The level asked for, then what the backend made of it: two
         * levels may map to the same setting (PostgreSQL FULL and NORMAL,
         * MyISAM all three). */
        char got[128], desc[160];
        if (b.drv->set_sync(b.db, levels[l], got, sizeof got, err) < 0) {
            rc = -1;
            break;
        }
        snprintf(desc, sizeof desc, "%s: %s", level_names[l], got);
        for (int n = 1; n <= o->txn_max && rc == 0; n *= 10) {
            sb_figure_init(sep, "txn", "separate", t, desc, n);
            sb_figure_init(one, "txn", "single", t, desc, n);
            for (int r = 0; r < o->repeat && rc == 0; r++) {
                double real, user, sys;
                bool ex;
                rc = one_run(&b, o->prefix, n, false, budget, &real, &user, &sys, &ex, err);
                if (rc == 0) {
                    sb_figure_add(sep, real, user, sys);
                    sep->extrapolated |= ex;
                    rc = one_run(&b, o->prefix, n, true, budget, &real, &user, &sys, &ex, err);
                }
                if (rc == 0) {
                    sb_figure_add(one, real, user, sys);
                    one->extrapolated |= ex;
                }
            }
            if (rc == 0) {
                sb_record(sep);
                sb_record(one);
            }
        }
    }
    sb_drop(&b, o->prefix, tables, 1);
out:
    free(sep);
    free(one);
    /* Closing puts the durability back: SQLite and PostgreSQL settings are
     * per connection, the InnoDB driver restores its global knob. Check. */
    backend_close(&b);
    struct zb_err e2 = { 0 };
    if (backend_open(&b, t->bc, &e2) == 0) {
        char desc[160];
        if (b.drv->set_sync(b.db, ZB_SYNC_DEFAULT, desc, sizeof desc, &e2) == 0 &&
            strcmp(desc, t->sync_default))
            fprintf(stderr, "sqlbench: %s: durability is now '%s', was '%s' before the run\n",
                    t->bc->name, desc, t->sync_default);
        backend_close(&b);
    }
    return rc;
}
