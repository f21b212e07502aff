/* sqlbench: SQL micro-benchmarks run the same way on every backend of the
 * config. main.c reads the flags, speed.c/txn.c/writers.c run the
 * experiments and hand their figures to report.c, which prints them. */
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
    /* derived sizes */
    int speed_rows;        /* 30,000 */
    int speed_stmts;       /* 1,000 */
    int txn_max;           /* 10,000 */
    int writers, inserts;  /* 100 x 1,000 */
    int workers, tasks;    /* 100 x 100 */
};

/* One backend as the experiments see it. */
struct sb_target {
    const struct backend_conf *bc;
    char version[96];
    char sync_default[160]; /* set_sync(DEFAULT) description */
    bool is_sqlite, is_mysql;
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

/* The experiments: 0 when every figure was measured, -1 with err. */
int sb_speed(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err);
int sb_txn(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err);
int sb_writers(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err);

#endif
