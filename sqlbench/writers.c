/* Experiment 6: the 2022 test's three workloads. One writer inserts N rows
 * in a loop; W writers (threads, one connection each) insert K rows each,
 * all at once; then the job-queue simulation: W workers each run T tasks,
 * a task being INSERT, UPDATE status, 10 UPDATEs of progress, DELETE, on a
 * table indexed on status and scheduled_at. Every statement autocommits.
 * SQLite runs in WAL mode with synchronous=NORMAL and a busy timeout, as
 * the 2022 test did; a statement that still fails with SQLITE_BUSY (or a
 * deadlock/lock timeout elsewhere) is retried and counted.
 *
 * The file targets (files.c) run the same workloads with one file per
 * record, as the test's file-system side did: an insert writes a file, an
 * update rewrites it whole, a delete unlinks it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "sqlbench.h"

enum { MAX_RETRIES = 10000 };

/* The statements of a task, in order; a writer uses JOB_INSERT alone. */
enum { JOB_INSERT, JOB_STATUS, JOB_PROGRESS, JOB_DELETE, NJOBSTMTS };

struct shared {
    const struct sb_opts *o;
    const struct sb_target *t;
    bool jobs;                 /* false: plain writers */
    int per_worker;            /* inserts or tasks */
    char dir[1100];            /* file targets: where the records go */
    pthread_barrier_t ready, go;
};

struct worker {
    struct shared *sh;
    pthread_t thread;
    int index;                 /* its rows' ids start at index * per_worker + 1 */
    struct backend b;
    struct stmt *st[NJOBSTMTS];
    double end;                /* zb_now_s() when done */
    long long retries;
    int failed;
    struct zb_err err;
};

/* One statement k of the worker's store with its parameters; for a file
 * target the record `id` written whole from the parameters (or removed). */
static int store(struct worker *w, int k, const char *id, const char *const *params, int nparams)
{
    const struct sb_target *t = w->sh->t;
    if (t->store != SB_SQL) {
        if (k == JOB_DELETE)
            return sb_files_remove(w->sh->dir, id, &w->err);
        char body[256];
        size_t n = 0;
        for (int i = 0; i < nparams && n < sizeof body; i++)
            n += (size_t)snprintf(body + n, sizeof body - n, "%s%s", i ? "\t" : "", params[i]);
        return sb_files_put(t, w->sh->dir, id, body, &w->err);
    }
    for (int tries = 0;; tries++) {
        if (w->b.drv->run(w->st[k], params, NULL, NULL, NULL, &w->err) == 0)
            return 0;
        if (tries == MAX_RETRIES || !sb_retryable(&w->err))
            return -1;
        w->retries++;
        struct timespec ts = { 0, 100000 * (1 + tries % 10) };
        nanosleep(&ts, NULL);
    }
}

static int do_writes(struct worker *w)
{
    int k = w->sh->per_worker;
    char id[24], writer[24], body[64];
    const char *params[] = { id, writer, body };
    snprintf(writer, sizeof writer, "%d", w->index);
    for (int i = 0; i < k; i++) {
        snprintf(id, sizeof id, "%lld", (long long)w->index * k + i + 1);
        snprintf(body, sizeof body, "writer %d row %d", w->index, i);
        if (store(w, JOB_INSERT, id, params, 3) < 0)
            return -1;
    }
    return 0;
}

static int do_jobs(struct worker *w)
{
    int k = w->sh->per_worker;
    char id[24], when[24], progress[24], output[64];
    for (int i = 0; i < k; i++) {
        snprintf(id, sizeof id, "%lld", (long long)w->index * k + i + 1);
        snprintf(when, sizeof when, "%lld", (long long)time(NULL) + i);
        const char *ins[] = { id, when };
        if (store(w, JOB_INSERT, id, ins, 2) < 0)
            return -1;
        const char *status[] = { id };
        if (store(w, JOB_STATUS, id, status, 1) < 0)
            return -1;
        for (int p = 1; p <= 10; p++) {
            snprintf(progress, sizeof progress, "%d", p * 10);
            snprintf(output, sizeof output, "step %d of task %s", p, id);
            const char *upd[] = { progress, output, id };
            if (store(w, JOB_PROGRESS, id, upd, 3) < 0)
                return -1;
        }
        if (store(w, JOB_DELETE, id, status, 1) < 0)
            return -1;
    }
    return 0;
}

/* A worker's connection and statements (nothing for a file target). */
static int connect_worker(struct worker *w)
{
    const struct shared *sh = w->sh;
    if (sh->t->store != SB_SQL)
        return 0;
    const char *p = sh->o->prefix;
    char desc[160], sql[512];
    int rc = backend_open(&w->b, sh->t->bc, &w->err);
    if (rc == 0 && sh->t->in_process)
        rc = w->b.drv->set_sync(w->b.db, ZB_SYNC_NORMAL, desc, sizeof desc, &w->err);
    static const char *const writer_sql[] = {
        "INSERT INTO %swriters(id, writer, body) VALUES (?, ?, ?)",
    };
    static const char *const job_sql[] = {
        "INSERT INTO %sjobs(id, status, progress, scheduled_at, output) VALUES (?, 'queued', 0, ?, '')",
        "UPDATE %sjobs SET status = 'running' WHERE id = ?",
        "UPDATE %sjobs SET progress = ?, output = ? WHERE id = ?",
        "DELETE FROM %sjobs WHERE id = ?",
    };
    static const int writer_np[] = { 3 }, job_np[] = { 2, 1, 3, 1 };
    const char *const *stmts = sh->jobs ? job_sql : writer_sql;
    const int *np = sh->jobs ? job_np : writer_np;
    int n = sh->jobs ? NJOBSTMTS : 1;
    for (int i = 0; i < n && rc == 0; i++) {
        snprintf(sql, sizeof sql, stmts[i], p);
        rc = w->b.drv->prepare(w->b.db, sql, np[i], &w->st[i], &w->err);
    }
    return rc;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct shared *sh = w->sh;
    w->failed = connect_worker(w) < 0;
    /* Everyone connected and prepared: start together. */
    pthread_barrier_wait(&sh->ready);
    pthread_barrier_wait(&sh->go);
    if (!w->failed)
        w->failed = (sh->jobs ? do_jobs(w) : do_writes(w)) < 0;
    w->end = zb_now_s();
    for (int i = 0; i < NJOBSTMTS; i++)
        if (w->st[i])
            w->b.drv->finalize(w->st[i]);
    backend_close(&w->b);
    return NULL;
}

static int setup(struct shared *sh, char *sync, size_t synclen, struct zb_err *err)
{
    const struct sb_opts *o = sh->o;
    const struct sb_target *t = sh->t;
    if (t->store != SB_SQL) {
        snprintf(sync, synclen, "%s", t->sync_default);
        return sb_files_reset(o, t, sh->dir, sizeof sh->dir, err);
    }
    struct backend b;
    if (backend_open(&b, t->bc, err) < 0)
        return -1;
    const char *p = o->prefix, *suffix = b.drv->create_suffix(b.db);
    static const char *const names[] = { "writers", "jobs" };
    sb_drop(&b, p, names, 2);
    int rc = 0;
    if (t->in_process) {
        rc = b.drv->exec(b.db, "PRAGMA journal_mode=WAL", err);
        if (rc == 0)
            rc = b.drv->set_sync(b.db, ZB_SYNC_NORMAL, sync, synclen, err);
    } else {
        rc = b.drv->set_sync(b.db, ZB_SYNC_DEFAULT, sync, synclen, err);
    }
    if (rc == 0 && !sh->jobs)
        rc = sb_execf(&b, err, "CREATE TABLE %swriters(id INTEGER PRIMARY KEY, writer INTEGER NOT NULL, "
                      "body VARCHAR(64) NOT NULL)%s", p, suffix);
    if (rc == 0 && sh->jobs)
        rc = sb_execf(&b, err, "CREATE TABLE %sjobs(id INTEGER PRIMARY KEY, status VARCHAR(16) NOT NULL, "
                      "progress INTEGER NOT NULL, scheduled_at BIGINT NOT NULL, "
                      "output VARCHAR(64) NOT NULL)%s", p, suffix);
    if (rc == 0 && sh->jobs)
        rc = sb_execf(&b, err, "CREATE INDEX %sjobs_status ON %sjobs(status)", p, p);
    if (rc == 0 && sh->jobs)
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

/* After the run: the records are all there (writers) or all gone (jobs). */
static int check_and_drop(const struct shared *sh, long long want, struct zb_err *err)
{
    const struct sb_opts *o = sh->o;
    const struct sb_target *t = sh->t;
    const char *what = sh->jobs ? "jobs" : "writers";
    if (t->store != SB_SQL) {
        long long got = sb_files_count(sh->dir);
        sb_files_drop(sh->dir);
        if (got != want)
            return zb_fail(err, ZB_ERR_SYS, "%s: %lld files in %s after the run, expected %lld",
                           t->bc->name, got, sh->dir, want);
        return 0;
    }
    struct backend b;
    if (backend_open(&b, t->bc, err) < 0)
        return -1;
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s%s", o->prefix, what);
    long long got = -1;
    int rc = b.drv->query(b.db, sql, 0, NULL, count_rows, &got, NULL, err);
    if (rc == 0 && got != want)
        rc = zb_fail(err, ZB_ERR_SQL, "%s: %lld rows in %s%s after the run, expected %lld",
                     t->bc->name, got, o->prefix, what, want);
    static const char *const names[] = { "writers", "jobs" };
    sb_drop(&b, o->prefix, names, 2);
    if (t->in_process)
        b.drv->exec(b.db, "PRAGMA journal_mode=DELETE", NULL);
    backend_close(&b);
    return rc;
}

static int one_run(const struct sb_opts *o, const struct sb_target *t, bool jobs, int nworkers,
                   int per, struct sb_figure *f, struct zb_err *err)
{
    struct shared sh = { .o = o, .t = t, .jobs = jobs, .per_worker = per };
    char sync[160];
    if (setup(&sh, sync, sizeof sync, err) < 0)
        return -1;
    snprintf(f->sync, sizeof f->sync, "%s", sync);
    struct worker *w = calloc((size_t)nworkers, sizeof *w);
    if (!w)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    pthread_barrier_init(&sh.ready, NULL, (unsigned)nworkers + 1);
    pthread_barrier_init(&sh.go, NULL, (unsigned)nworkers + 1);
    int started = 0;
    for (; started < nworkers; started++) {
        w[started].sh = &sh;
        w[started].index = started;
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
        rc = check_and_drop(&sh, jobs ? 0 : (long long)nworkers * per, err);
    else if (t->store != SB_SQL)
        sb_files_drop(sh.dir);
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
    /* workload: one writer, many writers, the job queue */
    const struct { bool jobs; int workers, per; const char *fmt; } load[] = {
        { false, 1, o->linear, "%d writer x %d inserts" },
        { false, o->writers, o->inserts, "%d writers x %d inserts" },
        { true, o->workers, o->tasks, "job queue %d workers x %d tasks" },
    };
    char name[96];
    int rc = 0;
    for (size_t l = 0; l < sizeof load / sizeof load[0] && rc == 0; l++) {
        snprintf(name, sizeof name, load[l].fmt, load[l].workers, load[l].per);
        sb_figure_init(f, "writers", name, t, NULL, (long long)load[l].workers * load[l].per);
        f->unit = load[l].jobs ? "tasks" : "inserts";
        for (int r = 0; r < o->repeat && rc == 0; r++)
            rc = one_run(o, t, load[l].jobs, load[l].workers, load[l].per, f, err);
        if (rc == 0)
            sb_record(f);
    }
    free(f);
    return rc;
}
