/* Experiment 6: concurrency. W writers (threads, one connection each)
 * insert K rows each, all at once; then the job-queue simulation: W
 * workers each run T tasks, a task being INSERT, UPDATE status, 10 UPDATEs
 * of progress, DELETE, on a table indexed on status and scheduled_at.
 * Every statement autocommits. SQLite runs in WAL mode with
 * synchronous=NORMAL and a busy timeout, as the 2022 test did; a statement
 * that still fails with SQLITE_BUSY (or a deadlock/lock timeout elsewhere)
 * is retried and counted. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "sqlbench.h"

enum { MAX_RETRIES = 10000 };

struct shared {
    const struct sb_opts *o;
    const struct sb_target *t;
    bool jobs;                 /* false: plain writers */
    int per_worker;            /* inserts or tasks */
    pthread_barrier_t ready, go;
};

struct worker {
    struct shared *sh;
    pthread_t thread;
    int id;
    double end;                /* zb_now_s() when done */
    long long retries;
    int failed;
    struct zb_err err;
};

/* Errors a concurrent writer may get and should simply try again after:
 * lock conflicts, which every driver reports as ZB_ERR_BUSY (SQLite busy
 * or locked, a deadlock, a lock wait timeout). */
static bool retryable(const struct sb_target *t, const struct zb_err *err)
{
    (void)t;
    return err->kind == ZB_ERR_BUSY;
}

static int run_retry(struct worker *w, struct backend *b, struct stmt *st,
                     const char *const *params)
{
    for (int tries = 0;; tries++) {
        if (b->drv->run(st, params, NULL, NULL, NULL, &w->err) == 0)
            return 0;
        if (tries == MAX_RETRIES || !retryable(w->sh->t, &w->err))
            return -1;
        w->retries++;
        struct timespec ts = { 0, 100000 * (1 + tries % 10) };
        nanosleep(&ts, NULL);
    }
}

static int prepare(struct backend *b, struct stmt **st, int nparams, struct zb_err *err,
                   const char *fmt, const char *prefix)
{
    char sql[512];
    snprintf(sql, sizeof sql, fmt, prefix);
    return b->drv->prepare(b->db, sql, nparams, st, err);
}

static int do_writes(struct worker *w, struct backend *b, struct stmt *ins)
{
    int k = w->sh->per_worker;
    char id[24], writer[24], body[64];
    const char *params[] = { id, writer, body };
    snprintf(writer, sizeof writer, "%d", w->id);
    for (int i = 0; i < k; i++) {
        snprintf(id, sizeof id, "%lld", (long long)w->id * k + i + 1);
        snprintf(body, sizeof body, "writer %d row %d", w->id, i);
        if (run_retry(w, b, ins, params) < 0)
            return -1;
    }
    return 0;
}

static int do_jobs(struct worker *w, struct backend *b, struct stmt *const *st)
{
    int k = w->sh->per_worker;
    char id[24], when[24], progress[24], output[64];
    for (int i = 0; i < k; i++) {
        snprintf(id, sizeof id, "%lld", (long long)w->id * k + i + 1);
        snprintf(when, sizeof when, "%lld", (long long)time(NULL) + i);
        const char *ins[] = { id, when };
        if (run_retry(w, b, st[0], ins) < 0)
            return -1;
        const char *status[] = { id };
        if (run_retry(w, b, st[1], status) < 0)
            return -1;
        for (int p = 1; p <= 10; p++) {
            snprintf(progress, sizeof progress, "%d", p * 10);
            snprintf(output, sizeof output, "step %d of task %s", p, id);
            const char *upd[] = { progress, output, id };
            if (run_retry(w, b, st[2], upd) < 0)
                return -1;
        }
        if (run_retry(w, b, st[3], status) < 0)
            return -1;
    }
    return 0;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct shared *sh = w->sh;
    const char *p = sh->o->prefix;
    struct backend b = { 0 };
    struct stmt *st[4] = { 0 };
    int nst = 0;
    char desc[160];
    int rc = backend_open(&b, sh->t->bc, &w->err);
    if (rc == 0 && sh->t->is_sqlite)
        rc = b.drv->set_sync(b.db, ZB_SYNC_NORMAL, desc, sizeof desc, &w->err);
    if (rc == 0 && !sh->jobs) {
        rc = prepare(&b, &st[0], 3, &w->err, "INSERT INTO %swriters(id, writer, body) VALUES (?, ?, ?)", p);
        nst = rc == 0;
    } else if (rc == 0) {
        static const char *const sql[] = {
            "INSERT INTO %sjobs(id, status, progress, scheduled_at, output) VALUES (?, 'queued', 0, ?, '')",
            "UPDATE %sjobs SET status = 'running' WHERE id = ?",
            "UPDATE %sjobs SET progress = ?, output = ? WHERE id = ?",
            "DELETE FROM %sjobs WHERE id = ?",
        };
        static const int np[] = { 2, 1, 3, 1 };
        for (; nst < 4 && rc == 0; nst += rc == 0)
            rc = prepare(&b, &st[nst], np[nst], &w->err, sql[nst], p);
    }
    w->failed = rc < 0;
    /* Everyone connected and prepared: start together. */
    pthread_barrier_wait(&sh->ready);
    pthread_barrier_wait(&sh->go);
    if (!w->failed)
        w->failed = (sh->jobs ? do_jobs(w, &b, st) : do_writes(w, &b, st[0])) < 0;
    w->end = zb_now_s();
    for (int i = 0; i < nst; i++)
        b.drv->finalize(st[i]);
    backend_close(&b);
    return NULL;
}

static int setup(const struct sb_opts *o, const struct sb_target *t, bool jobs, char *sync,
                 size_t synclen, struct zb_err *err)
{
    struct backend b;
    if (backend_open(&b, t->bc, err) < 0)
        return -1;
    const char *p = o->prefix, *suffix = b.drv->create_suffix(b.db);
    static const char *const names[] = { "writers", "jobs" };
    sb_drop(&b, p, names, 2);
    int rc = 0;
    if (t->is_sqlite) {
        rc = b.drv->exec(b.db, "PRAGMA journal_mode=WAL", err);
        if (rc == 0)
            rc = b.drv->set_sync(b.db, ZB_SYNC_NORMAL, sync, synclen, err);
    } else {
        rc = b.drv->set_sync(b.db, ZB_SYNC_DEFAULT, sync, synclen, err);
    }
    if (rc == 0 && !jobs)
        rc = sb_execf(&b, err, "CREATE TABLE %swriters(id INTEGER PRIMARY KEY, writer INTEGER NOT NULL, "
                      "body VARCHAR(64) NOT NULL)%s", p, suffix);
    if (rc == 0 && jobs)
        rc = sb_execf(&b, err, "CREATE TABLE %sjobs(id INTEGER PRIMARY KEY, status VARCHAR(16) NOT NULL, "
                      "progress INTEGER NOT NULL, scheduled_at BIGINT NOT NULL, "
                      "output VARCHAR(64) NOT NULL)%s", p, suffix);
    if (rc == 0 && jobs)
        rc = sb_execf(&b, err, "CREATE INDEX %sjobs_status ON %sjobs(status)", p, p);
    if (rc == 0 && jobs)
        rc = sb_execf(&b, err, "CREATE INDEX %sjobs_sched ON %sjobs(scheduled_at)", p, p);
    backend_close(&b);
    return rc;
}

static int count_rows(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)l;
    if (n > 0 && v[0])
        *(long long *)arg = atoll(v[0]);
    return 0;
}

/* After the run: the rows are all there (writers) or all gone (jobs). */
static int check_and_drop(const struct sb_opts *o, const struct sb_target *t, bool jobs,
                          long long want, struct zb_err *err)
{
    struct backend b;
    if (backend_open(&b, t->bc, err) < 0)
        return -1;
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s%s", o->prefix, jobs ? "jobs" : "writers");
    long long got = -1;
    int rc = b.drv->query(b.db, sql, 0, NULL, count_rows, &got, NULL, err);
    if (rc == 0 && got != want)
        rc = zb_fail(err, ZB_ERR_SQL, "%s: %lld rows in %s%s after the run, expected %lld",
                     t->bc->name, got, o->prefix, jobs ? "jobs" : "writers", want);
    static const char *const names[] = { "writers", "jobs" };
    sb_drop(&b, o->prefix, names, 2);
    if (t->is_sqlite)
        b.drv->exec(b.db, "PRAGMA journal_mode=DELETE", NULL);
    backend_close(&b);
    return rc;
}

static int one_run(const struct sb_opts *o, const struct sb_target *t, bool jobs, int nworkers,
                   int per, struct sb_figure *f, struct zb_err *err)
{
    char sync[160];
    if (setup(o, t, jobs, sync, sizeof sync, err) < 0)
        return -1;
    snprintf(f->sync, sizeof f->sync, "%s", sync);
    struct shared sh = { .o = o, .t = t, .jobs = jobs, .per_worker = per };
    struct worker *w = calloc((size_t)nworkers, sizeof *w);
    if (!w)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    pthread_barrier_init(&sh.ready, NULL, (unsigned)nworkers + 1);
    pthread_barrier_init(&sh.go, NULL, (unsigned)nworkers + 1);
    int started = 0;
    for (; started < nworkers; started++) {
        w[started].sh = &sh;
        w[started].id = started;
        if (pthread_create(&w[started].thread, NULL, worker_main, &w[started]) != 0)
            break;
    }
    if (started < nworkers) {
        /* Cannot happen short of resource exhaustion; the barrier would
         * never fill, so give up loudly. */
        fprintf(stderr, "sqlbench: cannot start thread %d of %d\n", started + 1, nworkers);
        exit(ZB_EXIT_FAIL);
    }
    pthread_barrier_wait(&sh.ready);
    double u0, s0, u1, s1;
    sb_cpu(&u0, &s0);
    double t0 = zb_now_s(), t1 = t0;
    pthread_barrier_wait(&sh.go);
    int rc = 0;
    long long retries = 0;
    for (int i = 0; i < nworkers; i++) {
        pthread_join(w[i].thread, NULL);
        if (w[i].end > t1)
            t1 = w[i].end;
        retries += w[i].retries;
        if (w[i].failed && rc == 0) {
            rc = -1;
            zb_fail(err, w[i].err.kind, "worker %d: %s", i, w[i].err.msg);
        }
    }
    sb_cpu(&u1, &s1);
    pthread_barrier_destroy(&sh.ready);
    pthread_barrier_destroy(&sh.go);
    free(w);
    if (rc == 0)
        rc = check_and_drop(o, t, jobs, jobs ? 0 : (long long)nworkers * per, err);
    if (rc == 0) {
        sb_figure_add(f, t1 - t0, u1 - u0, s1 - s0);
        f->retries += retries;
    }
    return rc;
}

int sb_writers(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err)
{
    struct sb_figure *f = calloc(1, sizeof *f);
    if (!f)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    char name[96];
    int rc = 0;
    for (int jobs = 0; jobs <= 1 && rc == 0; jobs++) {
        int nw = jobs ? o->workers : o->writers, per = jobs ? o->tasks : o->inserts;
        if (jobs)
            snprintf(name, sizeof name, "job queue %d workers x %d tasks", nw, per);
        else
            snprintf(name, sizeof name, "%d writers x %d inserts", nw, per);
        sb_figure_init(f, "writers", name, t, NULL, (long long)nw * per);
        f->unit = jobs ? "tasks" : "inserts";
        for (int r = 0; r < o->repeat && rc == 0; r++)
            rc = one_run(o, t, jobs, nw, per, f, err);
        if (rc == 0)
            sb_record(f);
    }
    free(f);
    return rc;
}
