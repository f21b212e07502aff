/* Figures: statistics, JSON lines, and the tables (aligned text or
 * markdown) printed after each experiment. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "sqlbench.h"

static enum sb_format format;
static struct sb_figure *figs;
static int nfigs, capfigs;

void sb_cpu(double *user, double *sys)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    *sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

void sb_figure_init(struct sb_figure *f, const char *experiment, const char *test,
                    const struct sb_target *t, const char *sync, long long n)
{
    memset(f, 0, sizeof *f);
    f->experiment = experiment;
    snprintf(f->test, sizeof f->test, "%s", test);
    f->backend = t->bc->name;
    f->version = t->version;
    snprintf(f->sync, sizeof f->sync, "%s", sync ? sync : t->sync_default);
    f->n = n;
}

void sb_figure_add(struct sb_figure *f, double real, double user, double sys)
{
    if (f->runs == SB_MAX_REPEAT)
        return;
    f->real[f->runs] = real;
    f->user[f->runs] = user;
    f->sys[f->runs] = sys;
    f->runs++;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double sb_median(const double *v, int n)
{
    if (n <= 0)
        return 0;
    double s[SB_MAX_REPEAT];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

double sb_min(const double *v, int n)
{
    double m = n > 0 ? v[0] : 0;
    for (int i = 1; i < n; i++)
        if (v[i] < m)
            m = v[i];
    return m;
}

double sb_max(const double *v, int n)
{
    double m = n > 0 ? v[0] : 0;
    for (int i = 1; i < n; i++)
        if (v[i] > m)
            m = v[i];
    return m;
}

static void print_json(const struct sb_figure *f)
{
    printf("{\"experiment\":");
    zb_json_string(f->experiment);
    printf(",\"test\":");
    zb_json_string(f->test);
    printf(",\"backend\":");
    zb_json_string(f->backend);
    printf(",\"version\":");
    zb_json_string(f->version);
    printf(",\"sync\":");
    zb_json_string(f->sync);
    double med = sb_median(f->real, f->runs);
    printf(",\"n\":%lld,\"runs\":%d,\"median_s\":%.6f,\"min_s\":%.6f,\"max_s\":%.6f,"
           "\"user_s\":%.6f,\"sys_s\":%.6f,\"extrapolated\":%s",
           f->n, f->runs, med, sb_min(f->real, f->runs), sb_max(f->real, f->runs),
           sb_median(f->user, f->runs), sb_median(f->sys, f->runs),
           f->extrapolated ? "true" : "false");
    if (f->unit && med > 0)
        printf(",\"per_s\":%.1f", (double)f->n / med);
    /* Every run, so a caller can pool runs of several invocations and
     * compute its own confidence interval. */
    printf(",\"runs_s\":[");
    for (int i = 0; i < f->runs; i++)
        printf("%s%.6f", i ? "," : "", f->real[i]);
    printf("]");
    if (!strcmp(f->experiment, "writers"))
        printf(",\"busy_retries\":%lld", f->retries);
    if (f->bytes > 0)
        printf(",\"bytes\":%lld", f->bytes);
    printf("}\n");
    fflush(stdout);
}

void sb_report_init(enum sb_format fmt) { format = fmt; }

void sb_record(const struct sb_figure *f)
{
    if (nfigs == capfigs) {
        int cap = capfigs ? 2 * capfigs : 64;
        struct sb_figure *bigger = realloc(figs, (size_t)cap * sizeof *figs);
        if (!bigger)
            return;
        figs = bigger;
        capfigs = cap;
    }
    figs[nfigs++] = *f;
    if (format == SB_JSON)
        print_json(f);
}

void sb_report_free(void)
{
    free(figs);
    figs = NULL;
    nfigs = capfigs = 0;
}

/* ---- tables ---- */

#define MAX_COLS 12
#define MAX_ROWS 256

struct table {
    int ncols, nrows;
    bool right[MAX_COLS];
    char *cell[MAX_ROWS + 1][MAX_COLS];
};

static void t_init(struct table *t, int ncols, const char *const *head, const char *align)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    for (int c = 0; c < ncols; c++) {
        t->cell[0][c] = strdup(head[c]);
        t->right[c] = align[c] == 'r';
    }
}

/* Adds a row from ncols strings. */
static void t_row(struct table *t, ...)
{
    if (t->nrows == MAX_ROWS)
        return;
    int r = ++t->nrows;
    va_list ap;
    va_start(ap, t);
    for (int c = 0; c < t->ncols; c++)
        t->cell[r][c] = strdup(va_arg(ap, const char *));
    va_end(ap);
}

static void t_print(struct table *t)
{
    size_t w[MAX_COLS] = { 0 };
    for (int r = 0; r <= t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            size_t l = strlen(t->cell[r][c]);
            if (l > w[c])
                w[c] = l;
        }
    for (int r = 0; r <= t->nrows; r++) {
        if (format == SB_MARKDOWN) {
            for (int c = 0; c < t->ncols; c++)
                printf("| %s ", t->cell[r][c]);
            printf("|\n");
            if (r == 0) {
                for (int c = 0; c < t->ncols; c++)
                    printf("|%s", t->right[c] ? "---:" : "---");
                printf("|\n");
            }
        } else {
            for (int c = 0; c < t->ncols; c++) {
                int pad = (int)w[c];
                if (t->right[c])
                    printf("%s%*s", c ? "  " : "", pad, t->cell[r][c]);
                else if (c == t->ncols - 1)
                    printf("%s%s", c ? "  " : "", t->cell[r][c]);
                else
                    printf("%s%-*s", c ? "  " : "", pad, t->cell[r][c]);
            }
            printf("\n");
            if (r == 0) {
                for (int c = 0; c < t->ncols; c++) {
                    printf("%s", c ? "  " : "");
                    for (size_t i = 0; i < w[c]; i++)
                        putchar('-');
                }
                printf("\n");
            }
        }
    }
    printf("\n");
    for (int r = 0; r <= t->nrows; r++)
        for (int c = 0; c < t->ncols; c++)
            free(t->cell[r][c]);
}

static void heading(const char *text)
{
    if (format == SB_MARKDOWN)
        printf("### %s\n\n", text);
    else
        printf("== %s\n\n", text);
}

/* "0.123" with a precision that suits the size. */
static void secs(char *buf, size_t len, double s)
{
    if (s >= 100)
        snprintf(buf, len, "%.1f", s);
    else if (s >= 1)
        snprintf(buf, len, "%.2f", s);
    else if (s >= 0.001)
        snprintf(buf, len, "%.4f", s);
    else
        snprintf(buf, len, "%.6f", s);
}

/* "median (min–max)", or just the median for one run; '~' marks extrapolation. */
static void spread(char *buf, size_t len, const struct sb_figure *f, double mult)
{
    char a[32], b[32], c[32];
    secs(a, sizeof a, sb_median(f->real, f->runs) * mult);
    if (f->runs > 1) {
        secs(b, sizeof b, sb_min(f->real, f->runs) * mult);
        secs(c, sizeof c, sb_max(f->real, f->runs) * mult);
        snprintf(buf, len, "%s%s (%s-%s)", f->extrapolated ? "~" : "", a, b, c);
    } else {
        snprintf(buf, len, "%s%s", f->extrapolated ? "~" : "", a);
    }
}

static const struct sb_figure *find(const char *experiment, const char *backend, const char *test,
                                    const char *sync)
{
    for (int i = 0; i < nfigs; i++)
        if (!strcmp(figs[i].experiment, experiment) && !strcmp(figs[i].backend, backend) &&
            !strcmp(figs[i].test, test) && (!sync || !strcmp(figs[i].sync, sync)))
            return &figs[i];
    return NULL;
}

/* The tests of an experiment in the order first recorded. */
static int distinct_tests(const char *experiment, const char **names, int max)
{
    int n = 0;
    for (int i = 0; i < nfigs && n < max; i++) {
        if (strcmp(figs[i].experiment, experiment))
            continue;
        bool seen = false;
        for (int j = 0; j < n && !seen; j++)
            seen = !strcmp(names[j], figs[i].test);
        if (!seen)
            names[n++] = figs[i].test;
    }
    return n;
}

static void speed_table(const struct sb_target *targets, int nt, bool cpu)
{
    const char *head[MAX_COLS] = { "test" };
    char align[MAX_COLS + 1] = "l";
    int nc = 1;
    for (int i = 0; i < nt && nc < MAX_COLS; i++) {
        head[nc] = targets[i].bc->name;
        align[nc++] = 'r';
    }
    struct table t;
    t_init(&t, nc, head, align);
    const char *tests[MAX_ROWS];
    int ntests = distinct_tests("speed", tests, MAX_ROWS);
    for (int i = 0; i < ntests; i++) {
        char cells[MAX_COLS][128];
        const char *row[MAX_COLS];
        row[0] = tests[i];
        for (int c = 1; c < MAX_COLS; c++) {
            const struct sb_figure *f = c < nc ? find("speed", head[c], tests[i], NULL) : NULL;
            if (f && cpu)
                snprintf(cells[c], sizeof cells[c], "%.3f + %.3f", sb_median(f->user, f->runs),
                         sb_median(f->sys, f->runs));
            else if (f)
                spread(cells[c], sizeof cells[c], f, 1);
            else
                snprintf(cells[c], sizeof cells[c], c < nc ? "-" : "");
            row[c] = cells[c];
        }
        /* t_row takes varargs and reads only the first nc. */
        t_row(&t, row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8],
              row[9], row[10], row[11]);
    }
    t_print(&t);
}

static void report_speed(const struct sb_target *targets, int nt)
{
    heading("Experiment 4: the 2001 speed comparison (real seconds, median (min-max))");
    speed_table(targets, nt, false);
    heading("Experiment 4: client CPU, user + sys seconds (median)");
    speed_table(targets, nt, true);
    printf("user/sys are this process's getrusage deltas: for the client/server backends\n"
           "(pg, innodb, myisam) the server's CPU is not in them, as the 2001 page noted\n"
           "for PostgreSQL; for SQLite they are the whole cost.\n\n");
}

static void report_txn(const struct sb_target *targets, int nt)
{
    heading("Experiment 5: separate vs single transaction (ms, median (min-max))");
    static const char *const head[] = { "backend", "durability", "inserts", "separate ms",
                                        "single ms", "separate/single" };
    struct table t;
    t_init(&t, 6, head, "llrrrr");
    for (int b = 0; b < nt; b++) {
        const char *name = targets[b].bc->name;
        for (int i = 0; i < nfigs; i++) {
            const struct sb_figure *sep = &figs[i], *one = NULL;
            if (strcmp(sep->experiment, "txn") || strcmp(sep->backend, name) ||
                strcmp(sep->test, "separate"))
                continue;
            for (int j = 0; j < nfigs && !one; j++)
                if (!strcmp(figs[j].experiment, "txn") && !strcmp(figs[j].backend, name) &&
                    !strcmp(figs[j].test, "single") && figs[j].n == sep->n &&
                    !strcmp(figs[j].sync, sep->sync))
                    one = &figs[j];
            char a[128], c[128], n[32], ratio[32];
            spread(a, sizeof a, sep, 1000);
            snprintf(n, sizeof n, "%lld", sep->n);
            if (one) {
                spread(c, sizeof c, one, 1000);
                double den = sb_median(one->real, one->runs);
                snprintf(ratio, sizeof ratio, "%s%.1fx", sep->extrapolated ? "~" : "",
                         den > 0 ? sb_median(sep->real, sep->runs) / den : 0);
            } else {
                snprintf(c, sizeof c, "-");
                snprintf(ratio, sizeof ratio, "-");
            }
            t_row(&t, name, sep->sync, n, a, c, ratio);
        }
    }
    t_print(&t);
    printf("\"separate\": every INSERT its own transaction (autocommit); \"single\": BEGIN,\n"
           "the INSERTs, COMMIT; both with one prepared INSERT. '~' marks a figure\n"
           "extrapolated from the inserts done before the case's time cap.\n\n");
}

static void report_writers(const struct sb_target *targets, int nt)
{
    heading("Experiment 6: concurrent writers and the job queue");
    static const char *const head[] = { "backend", "test", "ops", "seconds", "ops/s",
                                        "busy retries", "client user+sys s", "durability" };
    struct table t;
    t_init(&t, 8, head, "llrrrrrl");
    for (int b = 0; b < nt; b++) {
        for (int i = 0; i < nfigs; i++) {
            const struct sb_figure *f = &figs[i];
            if (strcmp(f->experiment, "writers") || strcmp(f->backend, targets[b].bc->name))
                continue;
            char n[48], s[128], rate[48], retries[32], cpu[48];
            snprintf(n, sizeof n, "%lld %s", f->n, f->unit ? f->unit : "");
            spread(s, sizeof s, f, 1);
            double med = sb_median(f->real, f->runs);
            snprintf(rate, sizeof rate, "%.0f", med > 0 ? (double)f->n / med : 0);
            snprintf(retries, sizeof retries, "%lld", f->retries);
            snprintf(cpu, sizeof cpu, "%.2f + %.2f", sb_median(f->user, f->runs),
                     sb_median(f->sys, f->runs));
            t_row(&t, f->backend, f->test, n, s, rate, retries, cpu, f->sync);
        }
    }
    t_print(&t);
    printf("Every statement autocommits. Writers: one thread and one connection each, all\n"
           "inserting at once. Job queue: each task is an INSERT, an UPDATE of status,\n"
           "10 UPDATEs of progress and a DELETE, on a table indexed on status and\n"
           "scheduled_at. SQLite runs in WAL mode with a busy timeout; a statement that\n"
           "still gets SQLITE_BUSY is retried and counted (summed over the runs).\n\n");
}

static void report_as3ap(const struct sb_target *targets, int nt)
{
    heading("AS3AP-style run over the postal data");
    static const char *const head[] = { "backend", "test", "n", "seconds", "per s",
                                        "client user+sys s", "durability" };
    struct table t;
    t_init(&t, 7, head, "llrrrrl");
    for (int b = 0; b < nt; b++)
        for (int i = 0; i < nfigs; i++) {
            const struct sb_figure *f = &figs[i];
            if (strcmp(f->experiment, "as3ap") || strcmp(f->backend, targets[b].bc->name))
                continue;
            char n[32], s[128], rate[48], cpu[48];
            snprintf(n, sizeof n, "%lld", f->n);
            double med = sb_median(f->real, f->runs);
            if (f->bytes > 0) {
                snprintf(s, sizeof s, "%.1f MiB", (double)f->bytes / 1048576.0);
                snprintf(rate, sizeof rate, "-");
                snprintf(cpu, sizeof cpu, "-");
            } else {
                spread(s, sizeof s, f, 1);
                snprintf(rate, sizeof rate, "%.0f", med > 0 ? (double)f->n / med : 0);
                snprintf(cpu, sizeof cpu, "%.3f + %.3f", sb_median(f->user, f->runs),
                         sb_median(f->sys, f->runs));
            }
            t_row(&t, f->backend, f->test, n, s, rate, cpu, f->sync);
        }
    t_print(&t);
    printf("n: rows loaded, or statements run (all users together in the multi-user\n"
           "mixes, each update its own transaction); the size row is in MiB.\n\n");
}

static void report_lookup(void)
{
    heading("The server's lookup by the database's own client");
    static const char *const head[] = { "backend", "test", "lookups per s", "CPU µs per lookup",
                                        "version" };
    struct table t;
    t_init(&t, 5, head, "llrrl");
    for (int i = 0; i < nfigs; i++) {
        const struct sb_figure *f = &figs[i];
        if (strcmp(f->experiment, "lookup"))
            continue;
        char rate[48], cpu[48];
        double med = sb_median(f->real, f->runs);
        snprintf(rate, sizeof rate, "%.0f", med > 0 ? (double)f->n / med : 0);
        snprintf(cpu, sizeof cpu, "%.1f",
                 (sb_median(f->user, f->runs) + sb_median(f->sys, f->runs)) * 1e6 / (double)f->n);
        t_row(&t, f->backend, f->test, rate, cpu, f->version);
    }
    t_print(&t);
    printf("CPU: this process's, all threads (the client; for SQLite, in-process, the whole\n"
           "lookup), median over the runs.\n\n");
}

static void report_calibrate(void)
{
    heading("The machine's own costs (per operation)");
    static const char *const head[] = { "test", "target", "n", "µs per operation" };
    struct table t;
    t_init(&t, 4, head, "llrr");
    for (int i = 0; i < nfigs; i++) {
        const struct sb_figure *f = &figs[i];
        if (strcmp(f->experiment, "calibrate"))
            continue;
        char n[32], s[128];
        snprintf(n, sizeof n, "%lld", f->n);
        spread(s, sizeof s, f, 1e6 / (double)f->n);
        t_row(&t, f->test, f->backend, n, s);
    }
    t_print(&t);
}

void sb_report_experiment(const char *experiment, const struct sb_target *targets, int ntargets)
{
    if (format == SB_JSON)
        return;
    if (!strcmp(experiment, "speed"))
        report_speed(targets, ntargets);
    else if (!strcmp(experiment, "txn"))
        report_txn(targets, ntargets);
    else if (!strcmp(experiment, "writers"))
        report_writers(targets, ntargets);
    else if (!strcmp(experiment, "as3ap"))
        report_as3ap(targets, ntargets);
    else if (!strcmp(experiment, "lookup"))
        report_lookup();
    else
        report_calibrate();
    fflush(stdout);
}

int sb_execf(struct backend *b, struct zb_err *err, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof sql)
        return zb_fail(err, ZB_ERR_INPUT, "statement too long");
    return b->drv->exec(b->db, sql, err);
}

int sb_open(struct backend *b, const struct sb_target *t, enum zb_sync level, struct zb_err *err)
{
    char desc[160];
    if (backend_open(b, t->bc, err) < 0)
        return -1;
    if (level != ZB_SYNC_DEFAULT && b->drv->set_sync(b->db, level, desc, sizeof desc, err) < 0) {
        backend_close(b);
        return -1;
    }
    return 0;
}

bool sb_retryable(const struct zb_err *err)
{
    return err->kind == ZB_ERR_BUSY;
}

void sb_drop(struct backend *b, const char *prefix, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        sb_execf(b, NULL, "DROP TABLE IF EXISTS %s%s", prefix, names[i]);
}
