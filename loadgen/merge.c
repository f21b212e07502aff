/* loadgen merge LOG...: several agents' --hdr-log files as one run.
 *
 * The histograms are added bucket by bucket, per interval (aligned by
 * each log's StartTime) and over the whole run, so every percentile comes
 * from the summed histogram, never from averaging the agents' figures.
 * The counts, bytes and CPU come from each log's summary line and are
 * summed too; the run lasted from the first agent's start to the last
 * one's end, so agents started apart lower the merged rate: the skew is
 * reported, and warned of past 1% of the shortest agent's run. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "loadgen.h"

static const char merge_usage[] =
    "Usage: loadgen merge [--json | --percentiles] [--csv FILE] [-d] [-S] [-l] [-e FILE] LOG...\n"
    "\n"
    "Adds the HdrHistogram interval logs that several loadgen agents wrote with\n"
    "--hdr-log (all with the same --interval) into one report: ab's text, or with\n"
    "--json one JSON object, as a single run would print it. Intervals are\n"
    "aligned by each log's StartTime (start the agents with one --start-at).\n"
    "Concurrency, requests, failures, bytes and client CPU are the agents' sums;\n"
    "every latency figure and percentile comes from the summed histograms.\n"
    "The merged run lasts from the first agent's start to the last one's end, so\n"
    "agents that started apart lower the merged rate: the report says how far\n"
    "apart they started (start_skew_s), and a skew above 1% of the shortest\n"
    "agent's run is warned of on stderr.\n"
    "\n"
    "  --json       the report as one JSON object\n"
    "  --percentiles  the latency's percentile distribution instead, in\n"
    "               HdrHistogram's format (.hgrm, which its plotter reads):\n"
    "               value (ms), percentile, count, 1/(1-percentile), five rows\n"
    "               per halving of the distance to 100%, to the largest value\n"
    "  --csv FILE   append the merged time series and total as CSV rows\n"
    "  -d -S -l -e FILE   as for a run\n"
    "\n"
    "Exit status: 0 when the merged run completed requests and none failed, 1 when\n"
    "some failed or none completed, 2 on bad usage or a log that does not parse.\n";

static char *slurp(const char *path, size_t *n, struct zb_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        zb_fail(err, ZB_ERR_SYS, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *p = malloc(cap);
    for (size_t k; p && (k = fread(p + len, 1, cap - len, f)) > 0;) {
        len += k;
        if (len == cap) {
            char *q = realloc(p, cap * 2);
            if (!q)
                free(p);
            p = q;
            cap *= 2;
        }
    }
    bool bad = !p || ferror(f);
    fclose(f);
    if (bad) {
        free(p);
        zb_fail(err, ZB_ERR_SYS, "%s: cannot read", path);
        return NULL;
    }
    *n = len;
    return p;
}

/* Interval k of the merged run: each agent's interval at the same wall
 * time, histograms decoded from the logs and added. */
static int merged_point(struct agent_log *a, const size_t *k0, int n, size_t k, double len,
                        struct point *p, struct zb_err *err)
{
    static struct interval sum;
    sum.completed = sum.failed = 0;
    hist_init(&sum.lat);
    for (int i = 0; i < n; i++) {
        if (k < k0[i] || k - k0[i] >= a[i].niv)
            continue;
        const struct agent_interval *iv = &a[i].iv[k - k0[i]];
        sum.completed += iv->completed;
        sum.failed += iv->failed;
        if (iv->hist && hdr_decode(iv->hist, iv->hist_len, &sum.lat, err) < 0)
            return -1;
    }
    point_from(p, (double)k * len, len, &sum);
    return 0;
}

/* Reads and parses the logs at paths[0..nlogs) into texts and a, which
 * must share one --interval; *parsed: how many of a to free. 0, or the
 * exit status after saying why. */
static int read_logs(const char *const *paths, int nlogs, struct agent_log *a, char **texts,
                     int *parsed)
{
    struct zb_err err;
    for (int i = 0; i < nlogs; i++) {
        size_t n;
        char *text = texts[i] = slurp(paths[i], &n, &err);
        if (!text || hdrlog_parse(text, n, paths[i], &a[i], &err) < 0) {
            fprintf(stderr, "loadgen merge: %s\n", err.msg);
            return ZB_EXIT_USAGE;
        }
        (*parsed)++;
        if (fabs(a[i].interval_s - a[0].interval_s) > 1e-6) {
            fprintf(stderr, "loadgen merge: %s has %.3f s intervals, %s %.3f s: run the agents "
                    "with one --interval\n", paths[i], a[i].interval_s, paths[0],
                    a[0].interval_s);
            return ZB_EXIT_USAGE;
        }
    }
    return 0;
}

/* The merged run's reports as the flags ask: the text, JSON or .hgrm on
 * stdout (stderr when --csv - has it), --csv, -e. 0, or ZB_EXIT_FAIL when
 * a file cannot be written or the run had failures or no completions. */
static int write_reports(const struct config *cfg, bool percentiles, const struct result *r)
{
    int rc = 0;
    FILE *out = cfg->csv && !strcmp(cfg->csv, "-") ? stderr : stdout;
    if (percentiles)
        report_hgrm(r, out);
    else if (cfg->json)
        report_json(r, out);
    else
        report_text(r, out);
    fflush(stdout);
    if (cfg->csv && report_csv(r, cfg->csv) < 0) {
        fprintf(stderr, "loadgen merge: --csv: cannot write '%s'\n", cfg->csv);
        rc = ZB_EXIT_FAIL;
    }
    if (cfg->percentile_csv && report_percentile_csv(r, cfg->percentile_csv) < 0) {
        fprintf(stderr, "loadgen merge: -e: cannot write '%s'\n", cfg->percentile_csv);
        rc = ZB_EXIT_FAIL;
    }
    report_warn_errors(r, "loadgen merge");
    if (!rc && (stats_failed(&r->st) || !r->st.completed))
        rc = ZB_EXIT_FAIL;
    return rc;
}

int merge_main(int argc, const char *const *argv)
{
    static const apr_getopt_option_t opts[] = {
        { "json", 'j', 0, "" }, { "csv", 'C', 1, "" }, { "help", 'h', 0, "" },
        { "percentiles", 'P', 0, "" },
        { NULL, 'd', 0, "" },   { NULL, 'S', 0, "" },  { NULL, 'l', 0, "" },
        { NULL, 'e', 1, "" },   { NULL, 0, 0, NULL },
    };
    static struct config cfg = { .method = "GET" };
    bool percentiles = false;
    apr_pool_t *pool;
    apr_pool_create(&pool, NULL);
    apr_getopt_t *g;
    apr_getopt_init(&g, pool, argc, argv);
    g->interleave = 1;
    int ch;
    const char *arg;
    apr_status_t st;
    while ((st = apr_getopt_long(g, opts, &ch, &arg)) == APR_SUCCESS) {
        switch (ch) {
        case 'j': cfg.json = true; break;
        case 'P': percentiles = true; break;
        case 'C': cfg.csv = arg; break;
        case 'd': cfg.no_percentiles = true; break;
        case 'S': cfg.no_confidence = true; break;
        case 'l': cfg.variable_length = true; break;
        case 'e': cfg.percentile_csv = arg; break;
        case 'h': fputs(merge_usage, stdout); return ZB_EXIT_OK;
        }
    }
    if (st != APR_EOF)
        return cli_usage_error("loadgen merge");
    if (percentiles && cfg.json) {
        fprintf(stderr, "loadgen merge: --percentiles and --json: one or the other\n");
        return cli_usage_error("loadgen merge");
    }
    int nlogs = argc - g->ind;
    if (nlogs < 1) {
        fprintf(stderr, "loadgen merge: no LOG given\n");
        return cli_usage_error("loadgen merge");
    }
    struct agent_log *a = calloc((size_t)nlogs, sizeof *a);
    char **texts = calloc((size_t)nlogs, sizeof *texts);
    if (!a || !texts) {
        fprintf(stderr, "loadgen merge: out of memory\n");
        return ZB_EXIT_FAIL;
    }
    struct zb_err err;
    int parsed = 0;
    int rc = read_logs(g->argv + g->ind, nlogs, a, texts, &parsed);
    if (rc) {
        for (int i = 0; i < nlogs; i++) {
            if (i < parsed)
                agent_log_free(&a[i]);
            free(texts[i]);
        }
        free(texts);
        free(a);
        return rc;
    }

    double base = a[0].start_epoch_s, last = base, shortest = a[0].seconds, end = 0;
    for (int i = 0; i < nlogs; i++) {
        base = fmin(base, a[i].start_epoch_s);
        last = fmax(last, a[i].start_epoch_s);
        shortest = fmin(shortest, a[i].seconds);
    }
    if (nlogs > 1 && last - base > 0.01 * shortest)
        fprintf(stderr, "loadgen merge: the agents started %.0f ms apart, more than 1%% of the "
                "shortest run (%.3f s): the merged run counts from the first start to the last "
                "end, so its rate is low; start them with one --start-at, far enough ahead\n",
                (last - base) * 1000, shortest);
    static struct result r;
    cfg.method = a[0].method[0] ? a[0].method : "GET";
    r = (struct result){ .cfg = &cfg, .host = a[0].host, .path = a[0].path, .port = a[0].port,
                         .agents = nlogs, .keepalive = a[0].keepalive, .tls = a[0].tls,
                         .posted = a[0].posted, .server = a[0].server,
                         .tls_info = a[0].tls_info, .tls_tmpkey = a[0].tls_tmpkey,
                         .tls_sni = a[0].tls_sni, .doc_length = a[0].doc_length,
                         .start_epoch_s = base, .start_skew_s = last - base, .url = "" };
    cfg.variable_length |= a[0].variable_length;
    static struct provenance prov;
    memset(&prov, 0, sizeof prov);
    for (int i = 0; i < nlogs; i++)
        provenance_add(&prov, &a[i].prov);
    r.prov = &prov;
    stats_init(&r.st);
    size_t *k0 = calloc((size_t)nlogs, sizeof *k0), npoints = 0;
    for (int i = 0; i < nlogs; i++) {
        stats_add(&r.st, &a[i].st);
        r.miss_answers |= a[i].miss_answers != 0;
        r.concurrency += a[i].concurrency;
        r.threads += a[i].threads;
        r.rate += a[i].rate;
        r.cpu_user += a[i].cpu_user;
        r.cpu_sys += a[i].cpu_sys;
        if (a[i].start_epoch_s + a[i].seconds > end)
            end = a[i].start_epoch_s + a[i].seconds;
        if (k0)
            k0[i] = (size_t)llround((a[i].start_epoch_s - base) / a[0].interval_s);
        if (k0 && k0[i] + a[i].niv > npoints)
            npoints = k0[i] + a[i].niv;
    }
    r.seconds = end - base;
    struct point *pts = npoints ? calloc(npoints, sizeof *pts) : NULL;
    if (!k0 || (npoints && !pts)) {
        fprintf(stderr, "loadgen merge: out of memory\n");
        rc = ZB_EXIT_FAIL;
    }
    for (size_t k = 0; !rc && k < npoints; k++)
        if (merged_point(a, k0, nlogs, k, a[0].interval_s, &pts[k], &err) < 0) {
            fprintf(stderr, "loadgen merge: %s\n", err.msg);
            rc = ZB_EXIT_USAGE;
        }
    r.points = pts;
    r.npoints = npoints;
    if (!rc)
        rc = write_reports(&cfg, percentiles, &r);
    free(pts);
    free(k0);
    for (int i = 0; i < nlogs; i++) {
        agent_log_free(&a[i]);
        free(texts[i]);
    }
    free(texts);
    free(a);
    return rc;
}
