/* lookup: the database's own client for the server's query, the native
 * reference its HTTP figures are compared with. --users threads, each with
 * its own connection and the server's lookup prepared once
 * (zb_lookup_sql on the backend's table), run it back to back with a key
 * drawn at random from --keys for --max-seconds. For SQLite, which runs in
 * this process, that is the database's whole cost per lookup; the figure's
 * CPU is this process's (all threads). Each run: n lookups in real
 * seconds. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sqlbench.h"

/* The keys of --keys, one per line, in one block. */
struct keys {
    char *text;
    char **key;
    size_t n;
};

static int keys_read(struct keys *k, const char *path, struct zb_err *err)
{
    memset(k, 0, sizeof *k);
    FILE *f = fopen(path, "r");
    if (!f)
        return zb_fail(err, ZB_ERR_INPUT, "--keys %s: %s", path, strerror(errno));
    size_t cap = 0, len = 0;
    char buf[65536];
    for (size_t got; (got = fread(buf, 1, sizeof buf, f)) > 0;) {
        if (len + got + 1 > cap) {
            cap = (len + got + 1) * 2;
            char *t = realloc(k->text, cap);
            if (!t) {
                fclose(f);
                return zb_fail(err, ZB_ERR_SYS, "out of memory");
            }
            k->text = t;
        }
        memcpy(k->text + len, buf, got);
        len += got;
    }
    fclose(f);
    if (!len)
        return zb_fail(err, ZB_ERR_INPUT, "--keys %s: no keys", path);
    k->text[len] = 0;
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += k->text[i] == '\n';
    if (!(k->key = malloc(lines * sizeof *k->key)))
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    for (char *p = k->text, *save = NULL, *t; (t = strtok_r(p, "\n", &save)); p = NULL)
        k->key[k->n++] = t;
    return k->n ? 0 : zb_fail(err, ZB_ERR_INPUT, "--keys %s: no keys", path);
}

/* One thread's share of a run. */
struct worker {
    const struct sb_target *t;
    const struct keys *keys;
    const char *sql;
    pthread_barrier_t *ready; /* every worker connected and prepared: the clock starts */
    double seconds;        /* how long it looks up, from the barrier */
    unsigned long long seed;
    long long lookups;     /* out: lookups answered (a row or none) */
    int rc;
    struct zb_err err;
    pthread_t thread;
};

static int count_row(void *arg, int ncols, const char *const *vals, const size_t *lens)
{
    (void)ncols, (void)vals, (void)lens;
    ++*(long long *)arg;
    return 0;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct backend b;
    struct stmt *st = NULL;
    if (backend_open(&b, w->t->bc, &w->err) < 0 ||
        b.drv->prepare(b.db, w->sql, 1, &st, &w->err) < 0)
        w->rc = -1;
    pthread_barrier_wait(w->ready);   /* connected or failed, every worker passes it */
    if (w->rc < 0) {
        backend_close(&b);
        return NULL;
    }
    long long rows = 0;
    unsigned long long x = w->seed | 1;
    double until = zb_now_s() + w->seconds;
    while (w->rc == 0 && zb_now_s() < until)
        for (int i = 0; i < 64 && w->rc == 0; i++) {   /* the clock read once per 64 */
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;   /* xorshift64 */
            const char *key = w->keys->key[x % w->keys->n];
            w->rc = b.drv->run(st, &key, count_row, &rows, NULL, &w->err);
            w->lookups++;
        }
    b.drv->finalize(st);
    backend_close(&b);
    return NULL;
}

int sb_lookup(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err)
{
    if (!o->keys)
        return zb_fail(err, ZB_ERR_INPUT, "lookup needs --keys FILE (the table's keys, one per line)");
    struct keys keys;
    char sql[2048];
    /* The server's statement, to the byte: its exact match of a text key
     * (MariaDB's COLLATE) included. */
    const struct backend_driver *drv = backend_driver(t->bc->driver);
    const char *exact = drv && drv->text_key_exact ? drv->text_key_exact : "";
    if (keys_read(&keys, o->keys, err) < 0 || zb_lookup_sql(sql, sizeof sql, t->bc->table) < 0 ||
        strlen(sql) + strlen(exact) >= sizeof sql || !strcat(sql, exact)) {
        free(keys.key);
        free(keys.text);
        return err->kind ? -1 : zb_fail(err, ZB_ERR_INPUT, "%s: table name too long", t->bc->name);
    }
    struct sb_figure *f = calloc(1, sizeof *f);
    struct worker *w = calloc((size_t)o->users, sizeof *w);
    int rc = f && w ? 0 : zb_fail(err, ZB_ERR_SYS, "out of memory");
    char test[96];
    snprintf(test, sizeof test, "point lookup, %d thread%s", o->users, o->users == 1 ? "" : "s");
    for (int r = 0; r < o->repeat && rc == 0; r++) {
        /* Connects are not timed: the clock and the CPU count start once
         * every worker is connected (the barrier's last one is this thread). */
        pthread_barrier_t ready;
        pthread_barrier_init(&ready, NULL, (unsigned)o->users + 1);
        for (int i = 0; i < o->users; i++) {
            w[i] = (struct worker){ .t = t, .keys = &keys, .sql = sql, .ready = &ready, .seconds = o->max_seconds,
                                    .seed = 0x9e3779b97f4a7c15ULL * (unsigned long long)(r * o->users + i + 1) };
            if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]) != 0) {
                /* the started ones wait at the barrier for all: none can be
                 * joined, so the program gives up here */
                fprintf(stderr, "sqlbench: pthread_create: %s\n", strerror(errno));
                exit(ZB_EXIT_FAIL);
            }
        }
        pthread_barrier_wait(&ready);
        double u0, s0, u1, s1;
        sb_cpu(&u0, &s0);
        double t0 = zb_now_s();
        long long n = 0;
        for (int i = 0; i < o->users; i++) {
            pthread_join(w[i].thread, NULL);
            if (w[i].rc < 0 && rc == 0) {
                *err = w[i].err;
                rc = -1;
            }
            n += w[i].lookups;
        }
        double real = zb_now_s() - t0;
        sb_cpu(&u1, &s1);
        pthread_barrier_destroy(&ready);
        if (rc == 0 && n == 0)
            rc = zb_fail(err, ZB_ERR_SYS, "no lookup finished in --max-seconds %g", o->max_seconds);
        if (rc == 0) {
            if (r == 0)
                sb_figure_init(f, "lookup", test, t, NULL, n);
            /* The runs' counts differ: each run is scaled to the first's n. */
            sb_figure_add(f, real * (double)f->n / (double)n, (u1 - u0) * (double)f->n / (double)n,
                          (s1 - s0) * (double)f->n / (double)n);
        }
    }
    if (rc == 0) {
        f->unit = "lookups";
        sb_record(f);
    }
    free(w);
    free(f);
    free(keys.key);
    free(keys.text);
    return rc;
}
