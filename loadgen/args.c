/* loadgen's command line: ab's flags with ab's meanings (parsed with APR's
 * apr_getopt_long, as ab itself parses them), and loadgen's own long
 * options. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "loadgen.h"
#include "util.h"

const char loadgen_usage[] =
    "Usage: loadgen [OPTIONS] http[s]://HOST[:PORT]/PATH\n"
    "       loadgen merge [--json] [--csv FILE] [-d] [-S] [-e FILE] LOG...\n"
    "\n"
    "An HTTP/1.1 benchmark client: ab's flags and report, wrk's engine (one epoll\n"
    "loop per thread, non-blocking sockets, no allocation per request). HOST is a\n"
    "name (every address getaddrinfo gives is tried, the first that accepts is\n"
    "used) or an address literal ([::1] for IPv6).\n"
    "\n"
    "How much, how fast (ab's letters keep ab's meaning):\n"
    "  -n, --requests N       requests to perform (default 1; with -t, at most\n"
    "                         50000000 unless -n is given too)\n"
    "  -c, --concurrency N    requests in flight at once, one connection each\n"
    "                         (default 1; at most -n; refused beyond the open-file\n"
    "                         limit)\n"
    "  -t, --timelimit SECS   stop issuing requests after SECS seconds; requests in\n"
    "                         flight get 1 s more, then are abandoned (reported,\n"
    "                         not failed)\n"
    "      --duration SECS    the same as -t\n"
    "  -k, --keepalive        HTTP keep-alive: reuse each connection. Without -k\n"
    "                         every request opens a new connection and sends\n"
    "                         'Connection: close', as ab does\n"
    "  -s, --timeout SECS     fail a request with no whole response after SECS\n"
    "                         (default 30)\n"
    "      --max-errors N|P%  exit 1 when more than N requests, or more than P%\n"
    "                         of all, were errors: non-2xx answers (but the 404s\n"
    "                         --miss asked for) and failed requests. Without it\n"
    "                         only failed requests change the exit status, as in\n"
    "                         ab; past 1% errors a warning on stderr says so\n"
    "      --rate R           constant throughput of R requests/s in total, spread\n"
    "                         over the connections (as wrk2). Latency is measured\n"
    "                         from each request's intended send time, so a stalled\n"
    "                         server shows in the percentiles instead of hiding\n"
    "                         (coordinated omission); the report's percentile table\n"
    "                         shows those, and ab's (from the actual send) after it\n"
    "      --threads N        event-loop threads, connections spread evenly\n"
    "                         (default: half the online CPUs, at least 1, at most\n"
    "                         c: on one machine the server needs the other half)\n"
    "      --start-at EPOCH_MS  set up, then wait until this wall-clock time\n"
    "                         (milliseconds since 1970) to start: agents on several\n"
    "                         hosts start together (their clocks synced by NTP)\n"
    "\n"
    "The request:\n"
    "  -m METHOD              the method (default GET)\n"
    "  -i                     HEAD instead of GET\n"
    "  -p FILE / -u FILE      POST / PUT FILE's bytes as the body of every request\n"
    "  -T TYPE                Content-Type of the body (default text/plain)\n"
    "  -H, --header 'Name: v' add a request header (repeatable); a Host, User-Agent,\n"
    "                         Accept or Connection given here replaces loadgen's\n"
    "  -C NAME=VALUE          add a cookie (repeatable: one Cookie header, '; '\n"
    "                         between them)\n"
    "  -A USER:PASSWORD       HTTP Basic authentication\n"
    "  -P USER:PASSWORD       Basic authentication to the proxy\n"
    "  -X PROXY[:PORT]        send every request through this HTTP proxy (port 80 by\n"
    "                         default), the URL in the request line; http:// only\n"
    "  -B ADDRESS             local address to connect from\n"
    "  -b BYTES               socket send and receive buffer size\n"
    "      --keys FILE        one key a line; the URL's {key} slot takes a key drawn\n"
    "                         for each request, e.g.\n"
    "                         http://127.0.0.1:8080/zip/pg/{key}\n"
    "                         Keys are raw text: every byte but A-Z a-z 0-9 - . _ ~\n"
    "                         is sent percent-encoded (a space as %20, a CR as %0D).\n"
    "                         Implies -l: each key's answer has a length of its own,\n"
    "                         so no answer counts as a Length failure\n"
    "      --seed S           seed of the draws (default 1). Request number i always\n"
    "                         gets draw i of splitmix64(S), so the same seed asks for\n"
    "                         the same keys whatever -c and --threads are\n"
    "      --miss RATIO       this share (0..1) of requests use a key that is not in\n"
    "                         FILE: one shaped like a real key (a 7-digit code stays\n"
    "                         7 digits), checked absent\n"    "      --dist DIST        how the keys are drawn (the misses of --miss apart):\n"
    "                         uniform     every key alike (the default)\n"
    "                         zipf:THETA  YCSB's Zipfian generator (Gray et al.),\n"
    "                                     0 < THETA < 1; YCSB's default is 0.99\n"
    "                         hotspot:F:P a share F of the keys gets a share P of\n"
    "                                     the requests (YCSB's hotspot), e.g. 0.2:0.8\n"
    "                         The popular keys are spread over FILE by a fixed\n"
    "                         shuffle (YCSB scrambles them too), the same for every\n"
    "                         --seed\n"
    "      --mix MIX          weighted request templates instead of the URL's path,\n"
    "                         sent to the URL's host and port. MIX is a file of\n"
    "                         lines 'WEIGHT METHOD PATH' (WEIGHT 1-1000000, '#'\n"
    "                         starts a comment, at most 16 templates; PATH may hold\n"
    "                         one {key}, drawn as --keys and --dist say), e.g.\n"
    "                           95 GET /zip/pg/{key}\n"
    "                           5 POST /update/pg/{key}\n"
    "                         or a YCSB preset over one backend: ycsb-a:B (50% GET\n"
    "                         /zip/B/{key}, 50% POST /update/B/{key}), ycsb-b:B\n"
    "                         (95/5), ycsb-c:B (reads only), ycsb-f:B (50/50: the\n"
    "                         update is a read-modify-write already). Request i's\n"
    "                         template is a draw of a stream of its own from --seed,\n"
    "                         so a seed sends the same templates whatever -c and\n"
    "                         --threads. Not with -p/-u/-m/-i. The report adds a\n"
    "                         table per template (count, 2xx, non-2xx, failed,\n"
    "                         latency median and p99; --json: \"templates\")\n"
    "\n"
    "HTTPS (OpenSSL; a full handshake on every new connection, as ab):\n"
    "      --tls-resume       resume the thread's latest TLS session on new\n"
    "                         connections (a returning visitor) instead\n"
    "      --verify           check the server's certificate chain and its name\n"
    "                         (default: not checked, as ab and wrk)\n"
    "      --cacert FILE      trust the certificates in FILE (PEM); implies --verify\n"
    "  -Z CIPHERS             OpenSSL cipher list or TLS 1.3 suites\n"
    "  -f PROTOCOL            TLS1, TLS1.1, TLS1.2, TLS1.3 or ALL (default)\n"
    "  -E FILE                client certificate and key (PEM)\n"
    "  -I                     send no Server Name Indication\n"
    "\n"
    "Output:\n"
    "  -q, --quiet            no progress lines on stderr (they are shown only when\n"
    "                         stderr is a terminal anyway)\n"
    "  -v N                   2: print the request, each response's first bytes and\n"
    "                         non-2xx statuses; 3: every status\n"
    "  -d                     no percentile table (as ab: not a duration; use\n"
    "                         --duration)\n"
    "  -S                     the Connection Times table without sd and median,\n"
    "                         and no warnings\n"
    "  -l                     accept a variable document length (no Length count;\n"
    "                         --keys implies it)\n"
    "  -e FILE                CSV of the time within which each percentage (0-100)\n"
    "                         of requests was served, as ab\n"
    "  -g FILE                one line per request (start, connect, processing, total,\n"
    "                         wait in ms) for gnuplot, as ab\n"
    "  -r                     accepted for ab's scripts: loadgen always counts\n"
    "                         receive errors and goes on\n"
    "      --json             print the report as one JSON object on stdout, with a\n"
    "                         time series of each interval. \"rps\" is ab's figure\n"
    "                         (every complete answer, 503s too); \"goodput_rps\"\n"
    "                         counts \"answered\" ones only: 2xx, and 404 when --miss\n"
    "                         asked for misses; \"errors\" splits the rest: total,\n"
    "                         status_503, status_5xx (other 5xx), status_404,\n"
    "                         status_4xx (other 4xx), status_other (1xx, 3xx),\n"
    "                         timeouts, connect, receive (resets, bad answers),\n"
    "                         send, exceptions; \"provenance\" says when and\n"
    "                         where: date (the start, UTC), hostname, cpu_model,\n"
    "                         kernel, loadgen (its version)\n"
    "      --csv FILE         append the time series and the run as CSV rows to FILE\n"
    "                         ('-': stdout, which then holds only CSV; the text or\n"
    "                         JSON report goes to stderr); the header row starts a\n"
    "                         new file. An interval shorter than --interval (the\n"
    "                         run's last) has no rate: an empty rps (null in --json)\n"
    "      --ledger FILE      append to FILE one line per 2xx answer to a POST: the\n"
    "                         answer's body (the server's update answers are one\n"
    "                         JSON object each), its CR and LF bytes written as\n"
    "                         spaces and a trailing newline dropped: the writes the\n"
    "                         server acknowledged, which a crash experiment checks\n"
    "                         the database against. Each thread buffers its lines\n"
    "                         and appends them whole (O_APPEND) every 10 ms and at\n"
    "                         the end, SIGINT included. A body over 64 KiB, or a\n"
    "                         line the file refused, is counted lost: loadgen says\n"
    "                         so and exits 1\n"
    "      --hdr-log FILE     write an HdrHistogram interval log (format 1.3, V2\n"
    "                         compressed histograms of latency in ns, one per\n"
    "                         interval), which HdrHistogram's tools and\n"
    "                         'loadgen merge' read\n"
    "      --interval SECS    length of the time series' intervals (default 1)\n"
    "  -V, --version          print the version and exit\n"
    "  -h, --help             this text\n"
    "\n"
    "Counting: a request is complete once its whole response is read (framed by\n"
    "Content-Length, chunked encoding, or the server closing). Failed requests are\n"
    "those with no whole response: Connect (TLS handshakes included), Receive and\n"
    "write errors, Timeouts, and Exceptions (a malformed response). Non-2xx\n"
    "responses are complete, and counted apart. Length counts 2xx bodies whose\n"
    "length differs from the first response's, as ab does, but they are not\n"
    "failures. A keep-alive connection that the server closed before answering is\n"
    "reopened and the request resent once.\n"
    "\n"
    "Report: ab's lines in ab's order, including its Connection Times and\n"
    "percentile tables (from log histograms precise to 1/64); then loadgen's:\n"
    "the goodput (answers per second: 2xx, and the 404s of --miss; ab's\n"
    "'Requests per second' counts every answer, error pages too), the errors\n"
    "by kind, latency (min, mean, sd, p50, p90, p99, p99.9, max in microseconds)\n"
    "and the client's own CPU time per completed request. When more than 1% of\n"
    "the requests were errors, a warning on stderr says how many and which.\n"
    "\n"
    "Several machines: start one agent per host with the same --start-at and\n"
    "--hdr-log, copy the logs to one place and run 'loadgen merge LOG...': it adds\n"
    "the histograms and the counts into one report (docs/LOADGEN.md).\n"
    "\n"
    "Exit status: 0 when every request completed (whatever the HTTP status) and at\n"
    "least one did, 1 when any request failed (connect, send or receive error,\n"
    "timeout, malformed response), none completed (e.g. all abandoned at -t), or\n"
    "the errors were past --max-errors, 2 on bad usage (also a -c that the\n"
    "open-file limit cannot hold: loadgen raises its soft limit up to the hard\n"
    "one, and refuses beyond it).\n"
    "\n"
    "Examples:\n"
    "  loadgen -k -n 100000 -c 10 http://127.0.0.1:8090/400.html\n"
    "  loadgen -k -c 50 -t 10 --keys build/ken_all.keys --seed 7 --miss 0.1 --json \\\n"
    "          'http://127.0.0.1:8080/zip/pg/{key}'\n"
    "  loadgen -k -c 20 --duration 30 --rate 5000 --hdr-log run.hlog \\\n"
    "          http://127.0.0.1:8080/health\n"
    "  loadgen -n 1000 -c 10 --cacert cert.pem https://localhost:8443/\n";

static int usage_error(const char *fmt, const char *arg)
{
    fputs("loadgen: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return cli_usage_error("loadgen");
}

/* Half the CPUs: on one machine, the server under test runs beside the
 * client and needs the other half. On 2 cores one loop measured 1.1-1.4x
 * the req/s of two (docs/LOADGEN.md): a second loop only takes CPU from
 * the server it is measuring. */
static int default_threads(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus >= 4 ? (int)(cpus / 2) : 1;
}

static int load_body(struct config *cfg, const char *flag, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "loadgen: %s: cannot open '%s': %s\n", flag, path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, n = 0;
    char *p = malloc(cap);
    for (size_t k; p && (k = fread(p + n, 1, cap - n, f)) > 0;) {
        n += k;
        if (n == cap) {
            char *q = realloc(p, cap *= 2);
            if (!q) {
                free(p);
                p = NULL;
            }
            p = q;
        }
    }
    bool bad = !p || ferror(f);
    fclose(f);
    if (bad) {
        free(p);
        fprintf(stderr, "loadgen: %s: cannot read '%s'\n", flag, path);
        return -1;
    }
    free(cfg->body);
    cfg->body = p;
    cfg->body_len = n;
    cfg->body_file = path;
    return 0;
}

/* The method flags exclude each other as in ab, but -m renames any. */
static int set_method(struct config *cfg, const char *method, const char *flag)
{
    if (cfg->head || cfg->body_file)
        return usage_error("%s: cannot mix with -i, -p or -u", flag);
    cfg->method = method;
    return 0;
}

enum {
    O_THREADS = 256, O_JSON, O_CSV, O_KEYS, O_SEED, O_MISS, O_DIST, O_RATE, O_DURATION, O_HDRLOG,
    O_INTERVAL, O_START_AT, O_VERIFY, O_CACERT, O_RESUME, O_MAX_ERRORS, O_LEDGER, O_MIX,
};

/* --max-errors N (requests) or P% (of all requests). */
static int parse_max_errors(struct config *cfg, const char *arg)
{
    char *end;
    errno = 0;
    double d = strtod(arg, &end);
    bool pct = *end == '%' && end[1] == 0;
    if (errno || end == arg || (*end && !pct) || !(d >= 0) || (pct && d > 100) ||
        (!pct && (d > 1e15 || d != floor(d))))
        return usage_error("--max-errors: '%s' is not N (a count of requests) or P%% (a share "
                           "of them, 0-100)", arg);
    cfg->max_errors = d;
    cfg->max_errors_pct = pct;
    return 0;
}

static void join_cmdline(struct config *cfg, int argc, const char *const *argv)
{
    size_t n = 0;
    for (int i = 0; i < argc && n + 2 < sizeof cfg->cmdline; i++)
        n += (size_t)snprintf(cfg->cmdline + n, sizeof cfg->cmdline - n, "%s%s", i ? " " : "",
                              argv[i]);
}

/* --seed N: a whole number >= 0, decimal, 0x hex or 0 octal. */
static int parse_seed(struct config *cfg, const char *arg)
{
    char *end;
    errno = 0;
    unsigned long long s = strtoull(arg, &end, 0);
    if (errno || end == arg || *end || *arg == '-')
        return usage_error("--seed: '%s' is not a whole number >= 0", arg);
    cfg->seed = s;
    return 0;
}

/* --start-at MS: a wall-clock time in ms since 1970, at most a day away. */
static int parse_start_at(struct config *cfg, const char *arg)
{
    char *end;
    errno = 0;
    long long ms = strtoll(arg, &end, 10);
    /* An epoch in ms has 13 digits; 10 digits is seconds. */
    if (errno || end == arg || *end || ms < 100000000000LL)
        return usage_error("--start-at: '%s' is not a time in milliseconds since 1970 "
                           "(e.g. $(($(date +%%s%%3N) + 2000)))", arg);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (ms > (long long)now.tv_sec * 1000 + 86400000LL)
        return usage_error("--start-at: '%s' is more than a day away", arg);
    cfg->start_at_ms = ms;
    return 0;
}

static int settle(struct config *cfg, bool have_n, int threads);

/* One of ab's letters that has no long name (the opts table's second
 * part): 0, or the exit status after saying why. */
static int ab_letter(struct config *cfg, int ch, const char *arg)
{
    long v;
    switch (ch) {
    case 'b':
        if (cli_long("loadgen", "-b", arg, 1, 1 << 30, &v) < 0)
            return cli_usage_error("loadgen");
        cfg->window = (int)v;
        break;
    case 'B': cfg->bind_addr = arg; break;
    case 'p':
    case 'u':
        if (cfg->head || cfg->body_file)
            return usage_error("-%s: cannot mix with -i, -p or -u", ch == 'p' ? "p" : "u");
        if (load_body(cfg, ch == 'p' ? "-p" : "-u", arg) < 0)
            return ZB_EXIT_USAGE;
        if (!strcmp(cfg->method, "GET"))
            cfg->method = ch == 'p' ? "POST" : "PUT";
        break;
    case 'T': cfg->content_type = arg; break;
    case 'v':
        if (cli_long("loadgen", "-v", arg, 0, 9, &v) < 0)
            return cli_usage_error("loadgen");
        cfg->verbosity = (int)v;
        break;
    case 'i': {
        int rc = set_method(cfg, "HEAD", "-i");
        cfg->head = true;
        return rc;
    }
    case 'm':
        if (cfg->head)
            return usage_error("-m: cannot mix with -i%s", "");
        if (!*arg || strpbrk(arg, " \t\r\n"))
            return usage_error("-m: '%s' is not a method name", arg);
        cfg->method = arg;
        break;
    case 'w':
    case 'x':
    case 'y':
    case 'z':
        return usage_error("-%s: ab's HTML report is not supported (--json gives the "
                           "figures for machines)", ch == 'w' ? "w" : ch == 'x' ? "x"
                                                                : ch == 'y' ? "y" : "z");
    case 'C': {
        size_t n = strlen(cfg->cookie);
        if (n + strlen(arg) + 3 >= sizeof cfg->cookie)
            return usage_error("-C: the cookies are longer than 2 KiB%s", "");
        snprintf(cfg->cookie + n, sizeof cfg->cookie - n, "%s%s", n ? "; " : "", arg);
        break;
    }
    case 'A': cfg->auth = arg; break;
    case 'P': cfg->proxy_auth = arg; break;
    case 'X': cfg->proxy = arg; break;
    case 'd': cfg->no_percentiles = true; break;
    case 'S': cfg->no_confidence = true; break;
    case 'l': cfg->variable_length = true; break;
    case 'g': cfg->gnuplot = arg; break;
    case 'e': cfg->percentile_csv = arg; break;
    case 'r': break;
    case 'I': cfg->no_sni = true; break;
    case 'Z': cfg->ciphers = arg; break;
    case 'f': cfg->tls_protocol = arg; break;
    case 'E': cfg->client_cert = arg; break;
    }
    return 0;
}


int args_parse(int argc, const char *const *argv, struct config *cfg)
{
    static const apr_getopt_option_t opts[] = {
        { "requests", 'n', 1, "" },    { "concurrency", 'c', 1, "" }, { "timelimit", 't', 1, "" },
        { "duration", O_DURATION, 1, "" }, { "keepalive", 'k', 0, "" }, { "header", 'H', 1, "" },
        { "timeout", 's', 1, "" },     { "quiet", 'q', 0, "" },       { "threads", O_THREADS, 1, "" },
        { "json", O_JSON, 0, "" },     { "csv", O_CSV, 1, "" },       { "keys", O_KEYS, 1, "" },
        { "seed", O_SEED, 1, "" },     { "miss", O_MISS, 1, "" },     { "rate", O_RATE, 1, "" },
        { "hdr-log", O_HDRLOG, 1, "" }, { "interval", O_INTERVAL, 1, "" },
        { "start-at", O_START_AT, 1, "" }, { "verify", O_VERIFY, 0, "" },
        { "cacert", O_CACERT, 1, "" }, { "tls-resume", O_RESUME, 0, "" },
        { "max-errors", O_MAX_ERRORS, 1, "" }, { "dist", O_DIST, 1, "" },
        { "ledger", O_LEDGER, 1, "" }, { "mix", O_MIX, 1, "" },
        { "version", 'V', 0, "" },     { "help", 'h', 0, "" },
        /* ab's letters without a long name */
        { NULL, 'b', 1, "" }, { NULL, 'B', 1, "" }, { NULL, 'p', 1, "" }, { NULL, 'u', 1, "" },
        { NULL, 'T', 1, "" }, { NULL, 'v', 1, "" }, { NULL, 'w', 0, "" }, { NULL, 'i', 0, "" },
        { NULL, 'x', 1, "" }, { NULL, 'y', 1, "" }, { NULL, 'z', 1, "" }, { NULL, 'C', 1, "" },
        { NULL, 'A', 1, "" }, { NULL, 'P', 1, "" }, { NULL, 'X', 1, "" }, { NULL, 'd', 0, "" },
        { NULL, 'S', 0, "" }, { NULL, 'l', 0, "" }, { NULL, 'g', 1, "" }, { NULL, 'e', 1, "" },
        { NULL, 'r', 0, "" }, { NULL, 'm', 1, "" }, { NULL, 'I', 0, "" }, { NULL, 'Z', 1, "" },
        { NULL, 'f', 1, "" }, { NULL, 'E', 1, "" },
        { NULL, 0, 0, NULL },
    };
    *cfg = (struct config){ .requests = 1, .concurrency = 1, .timeout = 30, .seed = 1,
                            .method = "GET", .content_type = "text/plain", .interval = 1,
                            .max_errors = -1 };
    join_cmdline(cfg, argc, argv);
    apr_pool_t *pool;
    apr_pool_create(&pool, NULL);
    apr_getopt_t *g;
    apr_getopt_init(&g, pool, argc, argv);
    g->interleave = 1;                 /* the URL may come before options */
    int ch;
    const char *arg;
    apr_status_t st;
    long v;
    double d;
    bool have_n = false;
    int threads = 0, rc = 0;
    while (!rc && (st = apr_getopt_long(g, opts, &ch, &arg)) == APR_SUCCESS) {
        switch (ch) {
        case 'n':
            if (cli_long("loadgen", "-n", arg, 1, 1L << 50, &v) < 0)
                return cli_usage_error("loadgen");
            cfg->requests = (uint64_t)v;
            have_n = true;
            break;
        case 'c':
            if (cli_long("loadgen", "-c", arg, 1, 1000000, &v) < 0)
                return cli_usage_error("loadgen");
            cfg->concurrency = (int)v;
            break;
        case 't':
        case O_DURATION:
            if (cli_double("loadgen", ch == 't' ? "-t" : "--duration", arg, 0.001, 1e7, &d) < 0)
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
        case O_LEDGER: cfg->ledger = arg; break;
        case O_MIX: cfg->mix = arg; break;
        case O_SEED: rc = parse_seed(cfg, arg); break;
        case O_DIST: {
            char why[256];
            if (dist_parse(&cfg->dist, arg, why, sizeof why) < 0)
                return usage_error("%s", why);
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
        case O_HDRLOG: cfg->hdr_log = arg; break;
        case O_INTERVAL:
            if (cli_double("loadgen", "--interval", arg, 0.01, 3600, &d) < 0)
                return cli_usage_error("loadgen");
            cfg->interval = d;
            break;
        case O_START_AT: rc = parse_start_at(cfg, arg); break;
        case O_VERIFY: cfg->verify = true; break;
        case O_CACERT:
            cfg->cacert = arg;
            cfg->verify = true;
            break;
        case O_RESUME: cfg->tls_resume = true; break;
        case O_MAX_ERRORS: rc = parse_max_errors(cfg, arg); break;
        default: rc = ab_letter(cfg, ch, arg); break;
        case 'V':
            cli_version("loadgen", tls_library());
            exit(ZB_EXIT_OK);
        case 'h':
            fputs(loadgen_usage, stdout);
            exit(ZB_EXIT_OK);
        }
    }
    if (rc)
        return rc;
    if (st != APR_EOF)
        return cli_usage_error("loadgen");
    if (g->ind >= argc)
        return usage_error("no URL given%s", "");
    if (g->ind + 1 < argc)
        return usage_error("unexpected argument '%s' (one URL only)", g->argv[g->ind + 1]);
    cfg->url = g->argv[g->ind];       /* APR permutes its own copy of argv */
    return settle(cfg, have_n, threads);
}

/* What the options decide together, once all are read: the -n that -t
 * implies, -c within -n, --miss with --keys, the threads. 0, or the exit
 * status after saying why. */
static int settle(struct config *cfg, bool have_n, int threads)
{
    if (cfg->timelimit > 0 && !have_n)
        cfg->requests = 50000000;
    if ((uint64_t)cfg->concurrency > cfg->requests) {
        fprintf(stderr, "loadgen: -c %d is more than the %llu requests of -n: some "
                "connections would have nothing to do\n", cfg->concurrency,
                (unsigned long long)cfg->requests);
        return cli_usage_error("loadgen");
    }
    /* Each key's answer has a length of its own: ab's check of every
     * length against the first one's would count them all. */
    if (cfg->keyfile)
        cfg->variable_length = true;
    if (cfg->miss > 0 && !cfg->keyfile)
        return usage_error("--miss needs --keys FILE%s", "");
    if (cfg->dist.kind != DIST_UNIFORM && !cfg->keyfile)
        return usage_error("--dist needs --keys FILE%s", "");
    if (cfg->mix && (cfg->body_file || cfg->head || strcmp(cfg->method, "GET") != 0))
        return usage_error("--mix names each template's method: not with -p, -u, -m or -i%s", "");
    cfg->threads = threads ? threads : default_threads();
    if (cfg->threads > cfg->concurrency)
        cfg->threads = cfg->concurrency;
    cfg->progress = !cfg->quiet && isatty(STDERR_FILENO);
    return 0;
}
