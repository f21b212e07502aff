/* loadgen: flags (ab's, parsed with APR's apr_getopt_long like ab itself),
 * the threads, the progress line and the report. */
#include <apr_general.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "loadgen.h"
#include "util.h"

static const char usage[] =
    "Usage: loadgen [OPTIONS] http://HOST[:PORT]/PATH\n"
    "\n"
    "An HTTP/1.1 benchmark client: ab's flags and report, wrk's engine (one epoll\n"
    "loop per thread, non-blocking sockets, no allocation per request). It only\n"
    "targets this machine: HOST must be localhost, an address in 127.0.0.0/8 or\n"
    "[::1]. Only http:// URLs.\n"
    "\n"
    "Options (ab's letters keep ab's meaning):\n"
    "  -n, --requests N       requests to perform (default 1; with -t, at most\n"
    "                         50000000 unless -n is given too)\n"
    "  -c, --concurrency N    requests in flight at once, one connection each\n"
    "                         (default 1; at most -n)\n"
    "  -t, --timelimit SECS   stop issuing requests after SECS seconds; requests in\n"
    "                         flight get 1 s more, then are abandoned (reported,\n"
    "                         not failed)\n"
    "  -d, --duration SECS    the same as -t\n"
    "  -k, --keepalive        HTTP keep-alive: reuse each connection. Without -k\n"
    "                         every request opens a new connection and sends\n"
    "                         'Connection: close', as ab does\n"
    "  -H, --header 'Name: v' add a request header (repeatable); a Host, User-Agent,\n"
    "                         Accept or Connection given here replaces loadgen's\n"
    "  -s, --timeout SECS     fail a request with no whole response after SECS\n"
    "                         (default 30)\n"
    "  -q, --quiet            no progress lines on stderr (they are shown only when\n"
    "                         stderr is a terminal anyway)\n"
    "      --threads N        event-loop threads, connections spread evenly\n"
    "                         (default: half the online CPUs, at least 1, at most\n"
    "                         c; the server under test needs the other half)\n"
    "      --rate R           constant throughput of R requests/s in total, spread\n"
    "                         over the connections (as wrk2). Latency is measured\n"
    "                         from each request's intended send time, so a stalled\n"
    "                         server shows in the percentiles instead of hiding\n"
    "                         (coordinated omission)\n"
    "      --keys FILE        one key a line; the URL's {key} slot takes a key drawn\n"
    "                         for each request, e.g.\n"
    "                         http://127.0.0.1:8080/zip/pg/{key}\n"
    "      --seed S           seed of the draws (default 1). Request number i always\n"
    "                         gets draw i of splitmix64(S), so the same seed asks for\n"
    "                         the same keys whatever -c and --threads are\n"
    "      --miss RATIO       this share (0..1) of requests use a key that is not in\n"
    "                         FILE: one shaped like a real key (a 7-digit code stays\n"
    "                         7 digits), checked absent\n"
    "      --json             print the report as one JSON object on stdout\n"
    "      --csv FILE         also append the report as a CSV row to FILE ('-' is\n"
    "                         stdout); the header row is written to a new file\n"
    "  -V, --version          print the version and exit\n"
    "  -h, --help             this text\n"
    "\n"
    "Counting: a request is complete once its whole response is read (framed by\n"
    "Content-Length, chunked encoding, or the server closing). Failed requests are\n"
    "those with no whole response: Connect, Send and Receive errors, Timeout, and\n"
    "Exceptions (a malformed response). Non-2xx responses are complete, and counted\n"
    "apart. Length counts 2xx bodies whose length differs from the first response's,\n"
    "as ab does, but they are not failures. A keep-alive connection that the server\n"
    "closed before answering is reopened and the request resent once.\n"
    "\n"
    "Report: ab's lines, then latency (min, mean, sd, p50, p90, p99, p99.9, max in\n"
    "microseconds, from a log histogram precise to 1/64) and the client's own CPU\n"
    "time per completed request.\n"
    "\n"
    "Exit status: 0 when every request completed (whatever the HTTP status) and at\n"
    "least one did, 1 when any request failed (connect, send or receive error,\n"
    "timeout, malformed response) or none completed (e.g. all abandoned at -t),\n"
    "2 on bad usage (also a -c that the open-file limit cannot hold:\n"
    "loadgen raises its soft limit up to the hard one, and refuses beyond it).\n"
    "\n"
    "Examples:\n"
    "  loadgen -k -n 100000 -c 10 http://127.0.0.1:8090/400.html\n"
    "  loadgen -k -c 50 -t 10 --keys build/ken_all.keys --seed 7 --miss 0.1 --json \\\n"
    "          'http://127.0.0.1:8080/zip/pg/{key}'\n"
    "  loadgen -k -c 20 -d 30 --rate 5000 http://127.0.0.1:8080/health\n";

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

static int usage_error(const char *fmt, const char *arg)
{
    fputs("loadgen: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return cli_usage_error("loadgen");
}

/* Half the CPUs: loadgen only targets loopback, so the server under test
 * runs on the same machine and needs the other half. On 2 cores one loop
 * measured 1.1-1.4x the req/s of two (docs/RESULTS-loadgen.md): a second
 * loop only takes CPU from the server it is measuring. */
static int default_threads(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus >= 4 ? (int)(cpus / 2) : 1;
}

enum { O_THREADS = 256, O_JSON, O_CSV, O_KEYS, O_SEED, O_MISS, O_RATE };

static int parse_args(int argc, const char *const *argv, struct config *cfg, apr_pool_t *pool)
{
    static const apr_getopt_option_t opts[] = {
        { "requests", 'n', 1, "" },   { "concurrency", 'c', 1, "" }, { "timelimit", 't', 1, "" },
        { "duration", 'd', 1, "" },   { "keepalive", 'k', 0, "" },   { "header", 'H', 1, "" },
        { "timeout", 's', 1, "" },    { "quiet", 'q', 0, "" },       { "threads", O_THREADS, 1, "" },
        { "json", O_JSON, 0, "" },    { "csv", O_CSV, 1, "" },       { "keys", O_KEYS, 1, "" },
        { "seed", O_SEED, 1, "" },    { "miss", O_MISS, 1, "" },     { "rate", O_RATE, 1, "" },
        { "version", 'V', 0, "" },    { "help", 'h', 0, "" },        { NULL, 0, 0, NULL },
    };
    apr_getopt_t *g;
    apr_getopt_init(&g, pool, argc, argv);
    g->interleave = 1;                 /* the URL may come before options */
    int ch;
    const char *arg;
    apr_status_t st;
    long v;
    double d;
    bool have_n = false;
    int threads = 0;
    while ((st = apr_getopt_long(g, opts, &ch, &arg)) == APR_SUCCESS) {
        switch (ch) {
        case 'n':
            if (cli_long("loadgen", "-n", arg, 1, 1L << 50, &v) < 0)
                return cli_usage_error("loadgen");
            cfg->requests = (uint64_t)v;
            have_n = true;
            break;
        case 'c':
            if (cli_long("loadgen", "-c", arg, 1, 100000, &v) < 0)
                return cli_usage_error("loadgen");
            cfg->concurrency = (int)v;
            break;
        case 't':
        case 'd':
            if (cli_double("loadgen", ch == 't' ? "-t" : "-d", arg, 0.001, 1e7, &d) < 0)
                return cli_usage_error("loadgen");
            cfg->timelimit = d;
            break;
        case 'k': cfg->keepalive = true; break;
        case 'H':
            if (!strchr(arg, ':'))
                return usage_error("-H: '%s' is not 'Name: value'", arg);
            if (cfg->nheaders == MAX_HEADERS)
                return usage_error("-H: more than 64 headers%s", "");
            cfg->headers[cfg->nheaders++] = arg;
            break;
        case 's':
            if (cli_double("loadgen", "-s", arg, 0.001, 1e6, &d) < 0)
                return cli_usage_error("loadgen");
            cfg->timeout = d;
            break;
        case 'q': cfg->quiet = true; break;
        case O_THREADS:
            if (cli_long("loadgen", "--threads", arg, 1, 1024, &v) < 0)
                return cli_usage_error("loadgen");
            threads = (int)v;
            break;
        case O_JSON: cfg->json = true; break;
        case O_CSV: cfg->csv = arg; break;
        case O_KEYS: cfg->keyfile = arg; break;
        case O_SEED: {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(arg, &end, 0);
            if (errno || end == arg || *end || *arg == '-')
                return usage_error("--seed: '%s' is not a whole number >= 0", arg);
            cfg->seed = s;
            break;
        }
        case O_MISS:
            if (cli_double("loadgen", "--miss", arg, 0, 1, &d) < 0)
                return cli_usage_error("loadgen");
            cfg->miss = d;
            break;
        case O_RATE:
            if (cli_double("loadgen", "--rate", arg, 0.001, 1e9, &d) < 0)
                return cli_usage_error("loadgen");
            cfg->rate = d;
            break;
        case 'V':
            printf("loadgen %s (ab-compatible flags, epoll engine)\n", LOADGEN_VERSION);
            exit(ZB_EXIT_OK);
        case 'h':
            fputs(usage, stdout);
            exit(ZB_EXIT_OK);
        }
    }
    if (st != APR_EOF)
        return cli_usage_error("loadgen");
    if (g->ind >= argc)
        return usage_error("no URL given%s", "");
    if (g->ind + 1 < argc)
        return usage_error("unexpected argument '%s' (one URL only)", g->argv[g->ind + 1]);
    cfg->url = g->argv[g->ind];       /* APR permutes its own copy of argv */
    if (cfg->timelimit > 0 && !have_n)
        cfg->requests = 50000000;
    if ((uint64_t)cfg->concurrency > cfg->requests) {
        fprintf(stderr, "loadgen: -c %d is more than the %llu requests of -n: some "
                "connections would have nothing to do\n", cfg->concurrency,
                (unsigned long long)cfg->requests);
        return cli_usage_error("loadgen");
    }
    if (cfg->miss > 0 && !cfg->keyfile)
        return usage_error("--miss needs --keys FILE%s", "");
    cfg->threads = threads ? threads : default_threads();
    if (cfg->threads > cfg->concurrency)
        cfg->threads = cfg->concurrency;
    return 0;
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

static void progress(struct worker *w, int nw, const struct config *cfg, const struct shared *sh)
{
    uint64_t beat = cfg->requests / 10 < 100 ? 100 : cfg->requests / 10;
    bool by_time = cfg->timelimit > 0 && cfg->requests == 50000000;
    uint64_t shown = 0, next_s = 1;
    while (atomic_load(&running) > 0) {
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
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

int main(int argc, const char *const *argv)
{
    apr_pool_t *pool;
    apr_app_initialize(&argc, &argv, NULL);
    atexit(apr_terminate);
    apr_pool_create(&pool, NULL);

    struct config cfg = { .requests = 1, .concurrency = 1, .timeout = 30, .seed = 1 };
    int rc = parse_args(argc, argv, &cfg, pool);
    if (rc)
        return rc;
    cfg.progress = !cfg.quiet && isatty(STDERR_FILENO);
    if ((rc = fd_limit_check(&cfg)) != 0)
        return rc;

    char err[512];
    static struct target tgt;
    if (url_parse(cfg.url, &tgt, err, sizeof err) < 0) {
        fprintf(stderr, "loadgen: %s\n", err);
        return cli_usage_error("loadgen");
    }
    struct keys keys;
    struct keys *kp = NULL;
    if (cfg.keyfile) {
        if (keys_load(&keys, cfg.keyfile, cfg.miss, cfg.seed, err, sizeof err) < 0) {
            fprintf(stderr, "loadgen: %s\n", err);
            return ZB_EXIT_USAGE;
        }
        kp = &keys;
    }
    struct request req;
    if (request_build(&req, &cfg, &tgt, kp, err, sizeof err) < 0) {
        fprintf(stderr, "loadgen: %s\n", err);
        return cli_usage_error("loadgen");
    }

    static struct shared sh;
    sh.cfg = &cfg;
    sh.tgt = &tgt;
    sh.req = &req;
    sh.keys = kp;
    sh.miss_threshold = (uint64_t)(cfg.miss * 4294967296.0);
    if (cfg.rate > 0)
        sh.interval_ns = (uint64_t)((double)cfg.concurrency * 1e9 / cfg.rate);
    strcpy(sh.server, "");
    g_shared = &sh;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_sigint);

    struct worker *w = calloc((size_t)cfg.threads, sizeof *w);
    pthread_t *tid = calloc((size_t)cfg.threads, sizeof *tid);
    if (!w || !tid) {
        fprintf(stderr, "loadgen: out of memory\n");
        return ZB_EXIT_FAIL;
    }
    if (!cfg.json) {
        printf("This is loadgen %s, an ab-compatible benchmark client\n\n", LOADGEN_VERSION);
        printf("Benchmarking %s (be patient)%s\n", tgt.host, cfg.progress ? "" : "...");
        fflush(stdout);
    }

    struct rusage ru0, ru1;
    pthread_barrier_init(&sh.ready, NULL, (unsigned)cfg.threads + 1);
    pthread_barrier_init(&sh.go, NULL, (unsigned)cfg.threads + 1);
    int first = 0;
    atomic_store(&running, cfg.threads);
    for (int i = 0; i < cfg.threads; i++) {
        w[i].sh = &sh;
        w[i].id = i;
        w[i].first_conn = first;
        w[i].nconns = cfg.concurrency / cfg.threads + (i < cfg.concurrency % cfg.threads);
        first += w[i].nconns;
        hist_init(&w[i].st.lat);
        if (pthread_create(&tid[i], NULL, thread_main, &w[i]) != 0) {
            fprintf(stderr, "loadgen: cannot start thread %d\n", i);
            return ZB_EXIT_FAIL;
        }
    }
    pthread_barrier_wait(&sh.ready);
    getrusage(RUSAGE_SELF, &ru0);
    sh.start_ns = zb_now_ns();
    if (cfg.timelimit > 0)
        sh.end_ns = sh.start_ns + (uint64_t)(cfg.timelimit * 1e9);
    pthread_barrier_wait(&sh.go);
    progress(w, cfg.threads, &cfg, &sh);
    struct result res = { .cfg = &cfg, .tgt = &tgt, .sh = &sh };
    hist_init(&res.st.lat);
    uint64_t last = 0;
    for (int i = 0; i < cfg.threads; i++) {
        pthread_join(tid[i], NULL);
        struct stats *s = &w[i].st, *t = &res.st;
        t->completed += s->completed;
        t->non2xx += s->non2xx;
        t->keepalive_reqs += s->keepalive_reqs;
        t->connects += s->connects;
        t->abandoned += s->abandoned;
        t->err_connect += s->err_connect;
        t->err_recv += s->err_recv;
        t->err_send += s->err_send;
        t->err_timeout += s->err_timeout;
        t->err_except += s->err_except;
        t->err_length += s->err_length;
        t->bytes_total += s->bytes_total;
        t->bytes_body += s->bytes_body;
        if (s->last_done_ns > last)
            last = s->last_done_ns;
        hist_merge(&t->lat, &s->lat);
    }
    uint64_t end = zb_now_ns();
    getrusage(RUSAGE_SELF, &ru1);
    /* Time taken runs to the last response, as ab's does; a run cut by ^C
     * lasted until the cut. One that -t ended lasted -t at least (at 0.5
     * req/s the last response may come long before it), or exactly -t if
     * it abandoned stragglers. */
    uint64_t stop = last ? last : end;
    if (sh.end_ns && end >= sh.end_ns)
        stop = res.st.abandoned || last < sh.end_ns ? sh.end_ns : last;
    if (atomic_load(&sh.stop))
        stop = end;
    res.seconds = (double)(stop - sh.start_ns) / 1e9;
    res.cpu_user = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
    res.cpu_sys = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);

    uint64_t failed = result_failed(&res.st);
    if (cfg.progress)
        fprintf(stderr, "Finished %llu requests\n",
                (unsigned long long)(res.st.completed + failed));
    if (cfg.json)
        report_json(&res);
    else
        report_text(&res);
    if (cfg.csv && report_csv(&res, cfg.csv) < 0) {
        fprintf(stderr, "loadgen: --csv: cannot write '%s'\n", cfg.csv);
        rc = ZB_EXIT_FAIL;
    }
    fflush(stdout);
    free(w);
    free(tid);
    pthread_barrier_destroy(&sh.ready);
    pthread_barrier_destroy(&sh.go);
    request_free(&req);
    if (kp)
        keys_free(kp);
    /* A run that completed nothing measured nothing: not a success. */
    return failed || !res.st.completed ? ZB_EXIT_FAIL : rc;
}
