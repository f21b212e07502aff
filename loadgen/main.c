/* loadgen: the target, the threads, the clock, the progress line and the
 * report; `loadgen merge` is merge.c's. */
#include <apr_general.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "loadgen.h"
#include "util.h"

static struct shared *g_shared;

static void on_sigint(int sig)
{
    (void)sig;
    if (g_shared)
        atomic_store(&g_shared->stop, 1);
}

static _Atomic int running;

static void *thread_main(void *arg)
{
    worker_run(arg);
    atomic_fetch_sub(&running, 1);
    return NULL;
}

static double tv_s(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

static double realtime_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Enough descriptors for -c connections, one epoll set per thread and a
 * few more (stdio, --csv): the soft limit is raised as far as the hard one
 * allows. A -c beyond that is refused before the run, not turned into
 * Connect errors half way through it. */
static int fd_limit_check(const struct config *cfg)
{
    rlim_t need = (rlim_t)cfg->concurrency + (rlim_t)cfg->threads + 16;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
        return 0;
    rlim_t hard = rl.rlim_max;
    rl.rlim_cur = hard;
    if (hard >= need && setrlimit(RLIMIT_NOFILE, &rl) == 0)
        return 0;
    fprintf(stderr,
            "loadgen: -c %d needs %llu open files (a socket per connection, and %llu more), "
            "but the limit is %llu: raise it (ulimit -n, as root up to the hard limit) or "
            "lower -c\n",
            cfg->concurrency, (unsigned long long)need,
            (unsigned long long)(need - (rlim_t)cfg->concurrency), (unsigned long long)hard);
    return ZB_EXIT_USAGE;
}

/* The name to send as SNI: -H's Host if given, else the URL's host; none
 * for an address literal (RFC 6066 allows names only) or with -I. */
static void pick_sni(const struct config *cfg, const struct target *t, char *sni, size_t len)
{
    sni[0] = 0;
    if (!t->tls || cfg->no_sni)
        return;
    const char *host = t->host;
    size_t n = strlen(host);
    for (int i = 0; i < cfg->nheaders; i++)
        if (!strncasecmp(cfg->headers[i], "Host:", 5)) {
            host = cfg->headers[i] + 5;
            while (*host == ' ' || *host == '\t')
                host++;
            n = strcspn(host, ": \t");
        }
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)n, host);
    unsigned char ip[16];
    if (inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1)
        return;
    snprintf(sni, len, "%s", name);
}

static int check_target(const struct config *cfg, const struct target *t)
{
    if (!t->tls && (cfg->verify || cfg->tls_resume || cfg->ciphers || cfg->tls_protocol ||
                    cfg->client_cert)) {
        fprintf(stderr, "loadgen: --verify, --cacert, --tls-resume, -Z, -f and -E need an "
                        "https:// URL\n");
        return cli_usage_error("loadgen");
    }
    if (t->tls && cfg->proxy) {
        fprintf(stderr, "loadgen: -X with an https:// URL needs a CONNECT tunnel, which "
                        "loadgen does not make\n");
        return cli_usage_error("loadgen");
    }
    return 0;
}

static void progress(struct worker *w, int nw, const struct config *cfg, struct shared *sh)
{
    uint64_t beat = cfg->requests / 10 < 100 ? 100 : cfg->requests / 10;
    bool by_time = cfg->timelimit > 0 && cfg->requests == 50000000;
    uint64_t shown = 0, next_s = 1;
    while (atomic_load(&running) > 0) {
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        series_collect(&sh->series, false);
        if (!cfg->progress)
            continue;
        uint64_t done = 0;
        for (int i = 0; i < nw; i++)
            done += atomic_load_explicit(&w[i].progress, memory_order_relaxed);
        if (by_time) {
            double el = (double)(zb_now_ns() - sh->start_ns) / 1e9;
            if (el >= (double)next_s) {
                fprintf(stderr, "Completed %llu requests (%.0f s)\n", (unsigned long long)done,
                        el);
                next_s++;
            }
        } else {
            while (done >= shown + beat && shown + beat < cfg->requests) {
                shown += beat;
                fprintf(stderr, "Completed %llu requests\n", (unsigned long long)shown);
            }
        }
    }
}

/* --start-at: waits for the wall-clock moment; being late is said, not fatal. */
static void wait_start(const struct config *cfg)
{
    if (!cfg->start_at_ms)
        return;
    struct timespec at = { (time_t)(cfg->start_at_ms / 1000),
                           (long)(cfg->start_at_ms % 1000) * 1000000 };
    double late = realtime_s() - (double)cfg->start_at_ms / 1000.0;
    if (late > 0) {
        fprintf(stderr, "loadgen: --start-at was %.0f ms ago; starting now\n", late * 1000);
        return;
    }
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) == EINTR)
        ;
}

static void kv_str(FILE *f, const char *key, const char *v)
{
    fprintf(f, " %s=\"", key);
    for (; v && *v; v++) {
        if (*v == '"' || *v == '\\')
            fputc('\\', f);
        fputc(*v == '\n' || *v == '\r' ? ' ' : *v, f);
    }
    fputc('"', f);
}

static void kv_hist(FILE *f, const char *key, const struct hist *h)
{
    fprintf(f, " %s=%llu:%llu:%llu:%llu", key, (unsigned long long)hist_count(h),
            (unsigned long long)h->sum, (unsigned long long)hist_min(h),
            (unsigned long long)hist_max(h));
}

/* The log's end: ab's Connection Times histograms over the whole run as
 * tagged lines, and the counts and names a merge needs, as a comment. */
static void hdrlog_trailer(FILE *f, const struct result *r)
{
    const struct stats *s = &r->st;
    hdrlog_line(f, "connect", 0, r->seconds, &s->connect);
    hdrlog_line(f, "processing", 0, r->seconds, &s->processing);
    hdrlog_line(f, "waiting", 0, r->seconds, &s->waiting);
    hdrlog_line(f, "total", 0, r->seconds, &s->total);
    fprintf(f, "#[loadgen summary:");
#define WRITE_COUNT(key, value, field) fprintf(f, " %s=%llu", key, (unsigned long long)(value));
#define WRITE_INT(key, value, field) fprintf(f, " %s=%d", key, (int)(value));
#define WRITE_FLAG(key, value, field) fprintf(f, " %s=%d", key, (value) ? 1 : 0);
#define WRITE_REAL(key, format, value, field) fprintf(f, " %s=" format, key, (double)(value));
#define WRITE_STR(key, value, field) kv_str(f, key, value);
#define WRITE_HIST(key, value, field) kv_hist(f, key, &(value));
    SUMMARY_FIELDS(WRITE_COUNT, WRITE_INT, WRITE_FLAG, WRITE_REAL, WRITE_STR, WRITE_HIST)
#undef WRITE_COUNT
#undef WRITE_INT
#undef WRITE_FLAG
#undef WRITE_REAL
#undef WRITE_STR
#undef WRITE_HIST
    fprintf(f, "]\n");
}

/* --max-errors: whether the run's errors are past it (said on stderr). */
static bool past_max_errors(const struct config *cfg, const struct result *r)
{
    if (cfg->max_errors < 0)
        return false;
    uint64_t errors = result_errors(r), all = r->st.completed + stats_failed(&r->st);
    double share = all ? 100.0 * (double)errors / (double)all : 0;
    bool past = cfg->max_errors_pct ? share > cfg->max_errors : (double)errors > cfg->max_errors;
    if (past)
        fprintf(stderr, "loadgen: %llu errors (%.1f%% of %llu requests) are past --max-errors %g%s\n",
                (unsigned long long)errors, share, (unsigned long long)all, cfg->max_errors,
                cfg->max_errors_pct ? "%" : "");
    return past;
}

/* Where the text or JSON report goes: stdout, unless `--csv -` has it
 * for CSV rows alone. */
static FILE *report_out(const struct config *cfg)
{
    return cfg->csv && !strcmp(cfg->csv, "-") ? stderr : stdout;
}

/* The report's outputs; 0, or 1 if a file could not be written. */
static int write_reports(const struct config *cfg, const struct result *res, struct worker *w)
{
    int rc = 0;
    if (cfg->json)
        report_json(res, report_out(cfg));
    else
        report_text(res, report_out(cfg));
    fflush(report_out(cfg));
    if (cfg->csv && report_csv(res, cfg->csv) < 0) {
        fprintf(stderr, "loadgen: --csv: cannot write '%s': %s\n", cfg->csv, strerror(errno));
        rc = ZB_EXIT_FAIL;
    }
    if (cfg->percentile_csv && report_percentile_csv(res, cfg->percentile_csv) < 0) {
        fprintf(stderr, "loadgen: -e: cannot write '%s': %s\n", cfg->percentile_csv,
                strerror(errno));
        rc = ZB_EXIT_FAIL;
    }
    if (cfg->gnuplot) {
        const struct sample *rows[cfg->threads];
        size_t nrows[cfg->threads];
        for (int i = 0; i < cfg->threads; i++) {
            rows[i] = w[i].samples;
            nrows[i] = w[i].nsamples;
        }
        if (report_gnuplot(rows, nrows, cfg->threads, cfg->gnuplot) < 0) {
            fprintf(stderr, "loadgen: -g: cannot write '%s': %s\n", cfg->gnuplot,
                    strerror(errno));
            rc = ZB_EXIT_FAIL;
        }
    }
    return rc;
}

/* The URL's target, checked, with its SNI name (sni, "" for none) and
 * its TLS settings tried, and resolved: 0, or the exit status after
 * saying why on stderr. */
static int prepare_target(const struct config *cfg, struct target *tgt, char *sni, size_t snilen)
{
    struct zb_err err;
    if (url_parse(cfg->url, tgt, &err) < 0) {
        fprintf(stderr, "loadgen: %s\n", err.msg);
        return cli_usage_error("loadgen");
    }
    int rc = check_target(cfg, tgt);
    if (rc)
        return rc;
    pick_sni(cfg, tgt, sni, snilen);
    if (tgt->tls) {            /* bad -Z, -f, -E or --cacert: say so before the run */
        struct tls_ctx *probe = tls_ctx_new(cfg, sni[0] ? sni : NULL, tgt->host, &err);
        if (!probe) {
            fprintf(stderr, "loadgen: %s\n", err.msg);
            return cli_usage_error("loadgen");
        }
        tls_ctx_free(probe);
    }
    if (target_resolve(tgt, cfg->proxy, cfg->bind_addr, cfg->timeout, &err) < 0) {
        fprintf(stderr, "loadgen: %s\n", err.msg);
        return ZB_EXIT_FAIL;
    }
    return 0;
}

/* ab's opening lines, "Benchmarking HOST (be patient)", on the report's stream. */
static void print_banner(const struct config *cfg, const struct target *tgt)
{
    FILE *out = report_out(cfg);
    fprintf(out, "This is loadgen %s, an ab-compatible benchmark client\n\n", zb_version);
    fprintf(out, "Benchmarking %s ", tgt->host);
    if (cfg->proxy)
        fprintf(out, "[through %s:%d] ", tgt->connect_host, tgt->connect_port);
    fprintf(out, "(be patient)%s", cfg->progress ? "\n" : "...");
    fflush(out);
}

/* The run's end (monotonic ns), from the clock at the join (end) and the
 * last response (last, 0 for none). Time taken runs to the last response,
 * as ab's does; a run cut by ^C lasted until the cut. One that -t ended
 * lasted -t at least (at 0.5 req/s the last response may come long before
 * it), or exactly -t if it abandoned stragglers. */
static uint64_t run_stop_ns(const struct shared *sh, const struct stats *st, uint64_t end,
                            uint64_t last)
{
    uint64_t stop = last ? last : end;
    if (sh->end_ns && end >= sh->end_ns)
        stop = st->abandoned || last < sh->end_ns ? sh->end_ns : last;
    if (atomic_load(&sh->stop))
        stop = end;
    return stop;
}

static int run(struct config *cfg)
{
    struct zb_err err;
    static struct target tgt;
    char sni[256];
    int rc = prepare_target(cfg, &tgt, sni, sizeof sni);
    if (rc)
        return rc;
    struct keys keys;
    struct keys *kp = NULL;
    if (cfg->keyfile) {
        if (keys_load(&keys, cfg->keyfile, cfg->miss, cfg->seed, &cfg->dist, &err) < 0) {
            fprintf(stderr, "loadgen: %s\n", err.msg);
            return ZB_EXIT_USAGE;
        }
        kp = &keys;
    }
    /* --mix: one request per template, against the URL's host and port. */
    static struct mix mix;
    static struct request reqs[MIX_MAX];
    static struct target ttgt;
    if (cfg->mix) {
        if (mix_load(&mix, cfg->mix, &err) < 0) {
            fprintf(stderr, "loadgen: %s\n", err.msg);
            if (kp)
                keys_free(kp);
            return ZB_EXIT_USAGE;
        }
        struct config tcfg = *cfg;
        ttgt = tgt;
        for (int i = 0; i < mix.n; i++) {
            tcfg.method = mix.t[i].method;
            tcfg.head = !strcmp(mix.t[i].method, "HEAD");
            snprintf(ttgt.path, sizeof ttgt.path, "%s", mix.t[i].path);
            bool slot = strstr(ttgt.path, "{key}") != NULL;
            if (request_build(&reqs[i], &tcfg, &ttgt, slot ? kp : NULL, &err) < 0) {
                fprintf(stderr, "loadgen: --mix template %d (%s %s): %s\n", i + 1,
                        mix.t[i].method, mix.t[i].path, err.msg);
                for (int j = 0; j < i; j++)
                    request_free(&reqs[j]);
                if (kp)
                    keys_free(kp);
                return ZB_EXIT_USAGE;
            }
        }
        /* The URL's own path is not sent: the first template stands for it. */
        snprintf(tgt.path, sizeof tgt.path, "%s", mix.t[0].path);
        cfg->method = mix.t[0].method;
    }
    struct request req;
    if (request_build(&req, cfg, &tgt, cfg->mix && !strstr(tgt.path, "{key}") ? NULL : kp,
                      &err) < 0) {
        fprintf(stderr, "loadgen: %s\n", err.msg);
        if (kp)
            keys_free(kp);
        return cli_usage_error("loadgen");
    }
    if (cfg->verbosity >= 2)           /* as ab prints it; a {key} slot shows empty */
        fprintf(report_out(cfg), "INFO: %s header == \n---\n%.*s%.*s\n---\n", cfg->method, (int)req.prelen,
               req.pre, (int)req.postlen, req.post);
    FILE *hdr = NULL;
    if (cfg->hdr_log && !(hdr = fopen(cfg->hdr_log, "w"))) {
        fprintf(stderr, "loadgen: --hdr-log: cannot write '%s': %s\n", cfg->hdr_log,
                strerror(errno));
        request_free(&req);
        if (kp)
            keys_free(kp);
        return ZB_EXIT_USAGE;
    }

    static struct shared sh;
    sh.ledger_fd = -1;
    if (cfg->ledger &&
        (sh.ledger_fd = open(cfg->ledger, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0) {
        fprintf(stderr, "loadgen: --ledger: cannot write '%s': %s\n", cfg->ledger,
                strerror(errno));
        if (hdr)
            fclose(hdr);
        request_free(&req);
        if (kp)
            keys_free(kp);
        return ZB_EXIT_USAGE;
    }
    sh.cfg = cfg;
    sh.mix = cfg->mix ? &mix : NULL;
    sh.reqs = reqs;
    sh.tgt = &tgt;
    sh.req = &req;
    sh.keys = kp;
    sh.sni = sni[0] ? sni : NULL;
    sh.miss_threshold = (uint64_t)(cfg->miss * 4294967296.0);
    if (cfg->rate > 0)
        sh.interval_ns = (uint64_t)((double)cfg->concurrency * 1e9 / cfg->rate);
    g_shared = &sh;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_sigint);

    struct worker *w = calloc((size_t)cfg->threads, sizeof *w);
    pthread_t *tid = calloc((size_t)cfg->threads, sizeof *tid);
    if (!w || !tid || series_init(&sh.series, 0, (uint64_t)(cfg->interval * 1e9),
                                  cfg->threads) < 0) {
        fprintf(stderr, "loadgen: out of memory\n");
        return ZB_EXIT_FAIL;
    }
    if (!cfg->json)
        print_banner(cfg, &tgt);

    static struct provenance prov;
    provenance_here(&prov);
    struct rusage ru0, ru1;
    pthread_barrier_init(&sh.ready, NULL, (unsigned)cfg->threads + 1);
    pthread_barrier_init(&sh.go, NULL, (unsigned)cfg->threads + 1);
    int first = 0;
    atomic_store(&running, cfg->threads);
    for (int i = 0; i < cfg->threads; i++) {
        w[i].sh = &sh;
        w[i].id = i;
        w[i].first_conn = first;
        w[i].nconns = cfg->concurrency / cfg->threads + (i < cfg->concurrency % cfg->threads);
        first += w[i].nconns;
        stats_init(&w[i].st);
        if (cfg->mix) {
            if (!(w[i].tmpl = calloc((size_t)mix.n, sizeof *w[i].tmpl))) {
                fprintf(stderr, "loadgen: out of memory\n");
                return ZB_EXIT_FAIL;
            }
            for (int j = 0; j < mix.n; j++)
                hist_init(&w[i].tmpl[j].lat);
        }
        if (pthread_create(&tid[i], NULL, thread_main, &w[i]) != 0) {
            fprintf(stderr, "loadgen: cannot start thread %d\n", i);
            return ZB_EXIT_FAIL;
        }
    }
    pthread_barrier_wait(&sh.ready);
    wait_start(cfg);
    getrusage(RUSAGE_SELF, &ru0);
    double start_epoch = realtime_s();
    sh.start_ns = zb_now_ns();
    sh.realtime_offset_ns = (int64_t)(start_epoch * 1e9) - (int64_t)sh.start_ns;
    sh.series.start_ns = sh.start_ns;
    if (hdr) {
        hdrlog_header(hdr, start_epoch, cfg->interval, cfg->cmdline);
        sh.series.hdr = hdr;
    }
    if (cfg->timelimit > 0)
        sh.end_ns = sh.start_ns + (uint64_t)(cfg->timelimit * 1e9);
    pthread_barrier_wait(&sh.go);
    progress(w, cfg->threads, cfg, &sh);

    struct result res = { .cfg = cfg, .url = cfg->url, .host = tgt.host, .path = tgt.path,
                          .port = tgt.port, .concurrency = cfg->concurrency,
                          .threads = cfg->threads, .agents = 1, .keepalive = cfg->keepalive,
                          .tls = tgt.tls, .posted = cfg->body_file != NULL, .rate = cfg->rate,
                          .miss_answers = cfg->miss > 0,
                          .server = sh.server, .tls_info = sh.tls_info,
                          .tls_tmpkey = sh.tls_tmpkey, .tls_sni = sni,
                          .start_epoch_s = start_epoch, .prov = &prov };
    stats_init(&res.st);
    static struct tmpl_stats tmpl[MIX_MAX];
    for (int j = 0; j < MIX_MAX; j++)
        hist_init(&tmpl[j].lat);
    if (cfg->mix) {
        res.mix = &mix;
        res.tmpl = tmpl;
    }
    const char *setup_err = NULL;
    for (int i = 0; i < cfg->threads; i++) {
        pthread_join(tid[i], NULL);
        stats_add(&res.st, &w[i].st);
        for (int j = 0; w[i].tmpl && j < mix.n; j++) {
            tmpl[j].count += w[i].tmpl[j].count;
            tmpl[j].ok += w[i].tmpl[j].ok;
            tmpl[j].non2xx += w[i].tmpl[j].non2xx;
            tmpl[j].failed += w[i].tmpl[j].failed;
            hist_merge(&tmpl[j].lat, &w[i].tmpl[j].lat);
        }
        if (w[i].setup_failed && !setup_err)
            setup_err = w[i].err.msg;
    }
    uint64_t end = zb_now_ns(), last = res.st.last_done_ns;
    getrusage(RUSAGE_SELF, &ru1);
    uint64_t stop = run_stop_ns(&sh, &res.st, end, last);
    res.seconds = (double)(stop - sh.start_ns) / 1e9;
    res.cpu_user = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
    res.cpu_sys = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
    res.doc_length = sh.doc_length;
    sh.series.end_ns = stop > last ? stop : last;
    series_collect(&sh.series, true);
    res.points = sh.series.points;
    res.npoints = sh.series.npoints;

    uint64_t failed = stats_failed(&res.st);
    if (!cfg->json)
        fprintf(report_out(cfg), "%s", cfg->progress ? "" : "..done\n");
    if (cfg->progress)
        fprintf(stderr, "Finished %llu requests\n",
                (unsigned long long)(res.st.completed + failed));
    if (setup_err)
        fprintf(stderr, "loadgen: a thread could not start: %s\n", setup_err);
    if (res.st.err_connect && tls_first_error()[0])
        fprintf(stderr, "loadgen: %s\n", tls_first_error());
    rc = write_reports(cfg, &res, w);
    if (res.st.err_connect) {
        char why[1024];
        stats_connect_errors(&res.st, why, sizeof why);
        fprintf(stderr, "loadgen: %llu connect%s to %s port %d failed: %s\n",
                (unsigned long long)res.st.err_connect, res.st.err_connect == 1 ? "" : "s",
                res.host, res.port, why);
    }
    report_warn_errors(&res, "loadgen");
    bool too_many = past_max_errors(cfg, &res);
    bool ledger_failed = false;
    if (sh.ledger_fd >= 0) {
        for (int i = 0; i < cfg->threads; i++)
            if (!w[i].setup_failed && w[i].err.msg[0])
                fprintf(stderr, "loadgen: %s\n", w[i].err.msg);
        if (res.st.ledger_lost) {
            fprintf(stderr,
                    "loadgen: --ledger: %llu acknowledged write%s not in '%s' (a body over "
                    "%d bytes, or the file refused the line)\n",
                    (unsigned long long)res.st.ledger_lost, res.st.ledger_lost == 1 ? "" : "s",
                    cfg->ledger, LEDGER_BODY_MAX);
            ledger_failed = true;
        }
        if (close(sh.ledger_fd) != 0) {
            fprintf(stderr, "loadgen: --ledger: cannot write '%s': %s\n", cfg->ledger,
                    strerror(errno));
            ledger_failed = true;
        }
    }
    if (hdr) {
        hdrlog_trailer(hdr, &res);
        if (fclose(hdr) != 0) {
            fprintf(stderr, "loadgen: --hdr-log: cannot write '%s'\n", cfg->hdr_log);
            rc = ZB_EXIT_FAIL;
        }
    }
    for (int i = 0; i < cfg->threads; i++) {
        free(w[i].samples);
        free(w[i].tmpl);
    }
    for (int j = 0; cfg->mix && j < mix.n; j++)
        request_free(&reqs[j]);
    free(w);
    free(tid);
    series_free(&sh.series);
    pthread_barrier_destroy(&sh.ready);
    pthread_barrier_destroy(&sh.go);
    request_free(&req);
    if (kp)
        keys_free(kp);
    /* A run that completed nothing measured nothing: not a success. */
    return failed || !res.st.completed || too_many || ledger_failed ? ZB_EXIT_FAIL : rc;
}

int main(int argc, const char *const *argv)
{
    apr_app_initialize(&argc, &argv, NULL);
    atexit(apr_terminate);
    if (argc > 1 && !strcmp(argv[1], "merge"))
        return merge_main(argc - 1, argv + 1);
    static struct config cfg;
    int rc = args_parse(argc, argv, &cfg);
    if (!rc)
        rc = fd_limit_check(&cfg);
    if (!rc)
        rc = run(&cfg);
    free(cfg.body);
    return rc;
}
