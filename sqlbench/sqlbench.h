/* sqlbench: SQL micro-benchmarks run the same way on every backend of the
 * config. main.c reads the flags, speed.c, txn.c, writers.c (with files.c,
 * its file-system form), as3ap.c and calibrate.c run the experiments and
 * hand their figures to report.c, which prints them. */
#ifndef ZB_SQLBENCH_H
#define ZB_SQLBENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"

#define SB_MAX_REPEAT 100

struct sb_opts {
    int repeat;            /* runs per figure (median, min, max) */
    double scale;          /* multiplies every size (1 = the references') */
    double max_seconds;    /* txn: cap per case over all its runs */
    bool quick;
    const char *prefix;    /* table names: PREFIXt1, PREFIXjobs, ... */
    const char *scratch;   /* SQLite scratch files, file targets, the fsync file */
    const char *dataset;   /* as3ap: the postal codes */
    int users;             /* as3ap: connections of the multi-user phase; lookup: threads */
    const char *keys;      /* lookup: the keys to draw from, one per line */
    enum zb_sync sync;     /* as3ap: durability of every connection (DEFAULT: as is) */
    /* derived sizes */
    int speed_rows;        /* 30,000 */
    int speed_stmts;       /* 1,000 */
    int txn_max;           /* 10,000 */
    int linear;            /* writers: one writer's inserts, 10,000 */
    int writers, inserts;  /* 100 x 1,000 */
    int workers, tasks;    /* 100 x 100 */
    int as3ap_ops;         /* as3ap: statements per user in the multi-user phase */
    int calib_n;           /* calibrate: connections per run (the others are multiples) */
};

/* Where a target keeps its records: a database, or one file per record. */
enum sb_store { SB_SQL = 0, SB_FILES, SB_FILES_SYNC };

/* One backend (or file target) as the experiments see it. */
struct sb_target {
    const struct backend_conf *bc;  /* for a file target only its name is set */
    char version[96];
    char sync_default[160]; /* set_sync(DEFAULT) description */
    bool in_process;        /* its driver runs the database in-process (SQLite) */
    enum sb_store store;
};

/* One measured figure: up to SB_MAX_REPEAT runs of the same thing. */
struct sb_figure {
    const char *experiment;  /* "speed", "txn", "writers" */
    char test[96];
    const char *backend;
    const char *version;     /* the backend's drv->version */
    char sync[160];
    long long n;             /* rows, statements, inserts or tasks */
    int runs;
    double real[SB_MAX_REPEAT], user[SB_MAX_REPEAT], sys[SB_MAX_REPEAT];
    bool extrapolated;
    long long retries;       /* writers on SQLite: SQLITE_BUSY retries, summed */
    long long bytes;         /* as3ap: the table's size on disk after the run (0: none) */
    const char *unit;        /* for the rate column: "rows", "inserts", "tasks"; NULL: none */
};

/* CPU time of this process (all threads), seconds. */
void sb_cpu(double *user, double *sys);

/* Fills a figure's header fields. */
void sb_figure_init(struct sb_figure *f, const char *experiment, const char *test,
                    const struct sb_target *t, const char *sync, long long n);
/* Adds one run. */
void sb_figure_add(struct sb_figure *f, double real, double user, double sys);
double sb_median(const double *v, int n);
double sb_min(const double *v, int n);
double sb_max(const double *v, int n);

/* Keeps a copy of the figure for the report (and prints it at once as
 * JSON when --json). */
void sb_record(const struct sb_figure *f);

enum sb_format { SB_TEXT, SB_MARKDOWN, SB_JSON };
void sb_report_init(enum sb_format fmt);
/* The tables of one experiment, for every figure recorded so far. */
void sb_report_experiment(const char *experiment, const struct sb_target *targets, int ntargets);
void sb_report_free(void);

/* Statement helpers: exec with a formatted statement. */
int sb_execf(struct backend *b, struct zb_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* DROP TABLE IF EXISTS for each PREFIX name, errors ignored. */
void sb_drop(struct backend *b, const char *prefix, const char *const *names, int n);

/* Errors a concurrent writer may get and should simply try again after:
 * lock conflicts, which every driver reports as ZB_ERR_BUSY (SQLite busy
 * or locked, a deadlock, a lock wait timeout, a serialization failure). */
bool sb_retryable(const struct zb_err *err);

/* backend_open, then the durability level asked for (DEFAULT: none). */
int sb_open(struct backend *b, const struct sb_target *t, enum zb_sync level, struct zb_err *err);

/* The experiments: 0 when every figure was measured, -1 with err. */
int sb_speed(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err);
int sb_txn(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err);
int sb_writers(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err);
int sb_as3ap(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err);
int sb_calibrate_machine(const struct sb_opts *o, struct zb_err *err);
int sb_calibrate_connect(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err);
int sb_lookup(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err);

/* ---- the file targets (files.c): one file per record in a directory ---- */

/* Fills a file target's version and durability description. */
void sb_files_describe(struct sb_target *t);
/* The target's directory under the scratch directory, emptied and made. */
int sb_files_reset(const struct sb_opts *o, const struct sb_target *t, char *dir, size_t len,
                   struct zb_err *err);
/* Writes body as the file dir/name, wholly replacing it: plainly, or (files_sync)
 * to name.tmp, fsync'ed and renamed over name. */
int sb_files_put(const struct sb_target *t, const char *dir, const char *name, const char *body,
                 struct zb_err *err);
int sb_files_remove(const char *dir, const char *name, struct zb_err *err);
/* Files in dir (-1 if it cannot be read), and the directory removed. */
long long sb_files_count(const char *dir);
void sb_files_drop(const char *dir);

#endif
