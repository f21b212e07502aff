/* build/bin/server: lookups by key (postal codes, or any dataset of the
 * config) over HTTP (libmicrohttpd), one event loop per core. See usage
 * below. */
#include <apr_general.h>
#include <apr_getopt.h>
#include <apr_version.h>
#include <apu_version.h>
#include <arpa/inet.h>
#include <errno.h>
#include <libpq-fe.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"
#include "route.h"
#include "server.h"
#include "strategy.h"


static const char usage[] =
"NAME\n"
"    server - zipbench lookup server: postal codes, or any dataset's key\n"
"\n"
"SYNOPSIS\n"
"    server [--conf FILE] [--port N] [--bind ADDR [--allow-remote]] [--threads N]\n"
"           [--backends NAME,...] [--datasets NAME,...] [--set BACKEND.KEY=VALUE]...\n"
"           [--tls-cert FILE --tls-key FILE]\n"
"    server --list-strategies | --list-routes | --help | -V\n"
"\n"
"DESCRIPTION\n"
"    Answers lookups by key from the backends of the config file over\n"
"    HTTP/1.1 (libmicrohttpd, keep-alive), or HTTPS with --tls-cert: postal\n"
"    codes, and the rows of any [dataset NAME] of the config that the loader\n"
"    loaded (--datasets).\n"
"\n"
"    One event loop per core (--threads), each with its own single-threaded\n"
"    libmicrohttpd daemon on epoll and its own database connections; new\n"
"    connections go to the loop with the fewest open ones. No loop ever waits\n"
"    on a database: a request whose lookup is under way is suspended and\n"
"    resumed when the answer is in (PostgreSQL through libpq's non-blocking\n"
"    calls, MariaDB through Connector/C's non-blocking API). SQLite, which\n"
"    runs in-process, is looked up inline.\n"
"\n"
"    Three strategies reach a database (the backend's `strategy` key, or\n"
"    ?strategy= per request):\n"
"      pooled       persistent connections per loop, the lookup prepared once;\n"
"                   pool_min, pool_soft_max, pool_ttl_s split over the loops,\n"
"                   pool_hard_max for all; a lookup that gets no connection\n"
"                   within acquire_timeout_ms gets 503\n"
"      per-request  a fresh connection per lookup, connected asynchronously,\n"
"                   a one-shot query, closed (what a PHP page does)\n"
"      pipelined    pipeline_connections per loop in pipeline mode: the\n"
"                   lookups of one loop iteration go out in one write (pg only;\n"
"                   MariaDB's client library cannot pipeline)\n"
"    A database lost under the server is reported, its requests get 503 (one\n"
"    retry on a fresh connection first, for a pooled lookup with no row\n"
"    yet), and it is served again once it is back; one that hangs is given\n"
"    up after query_timeout_ms. Runs in the foreground, logs to standard\n"
"    error (start, stop, backends going down and up; nothing per request).\n"
"\n"
"OPTIONS\n"
"    -c, --conf FILE       config file (default conf/zipbench.conf)\n"
"    -p, --port N          TCP port (default: [server] port, 8080)\n"
"    -b, --bind ADDR       address to listen on (default: [server] bind,\n"
"                          127.0.0.1); a non-loopback address is refused\n"
"                          unless --allow-remote is given, and with a backend\n"
"                          whose writes = yes, unless [server] write_token is\n"
"                          set (the writes then need Authorization: Bearer)\n"
"        --allow-remote    allow --bind to a non-loopback address\n"
"    -t, --threads N       event loops (default: [server] threads, or one per\n"
"                          online CPU)\n"
"    -B, --backends LIST   serve only these backends, comma-separated\n"
"                          (default: every [backend] of the config)\n"
"    -D, --datasets LIST   serve these [dataset NAME]s of the config,\n"
"                          comma-separated (default: postal). Each is served\n"
"                          from every backend, from the table the loader\n"
"                          made there (loader --dataset NAME), each table with\n"
"                          its own pool, pool_hard_max each, and outage state.\n"
"                          The columns are described as the loader does: a\n"
"                          dataset whose config gives every column and type\n"
"                          needs no copy of its file\n"
"    -s, --set B.KEY=VAL   override a config key; B is a backend name,\n"
"                          'server' or dataset.NAME, e.g. --set\n"
"                          pg.pool_hard_max=4 --set pg.strategy=pipelined\n"
"                          --set dataset.cities.table=mycities; repeatable\n"
"        --tls-cert FILE   serve HTTPS (libmicrohttpd's GnuTLS): the\n"
"                          certificate chain, PEM\n"
"        --tls-key FILE    its private key, PEM (both or neither)\n"
"        --list-strategies the strategies, a name per line (the one list of\n"
"                          them: the config's, ?strategy='s, the bench's)\n"
"        --list-routes     the routes, a line each: NAME TAB USAGE (a dataset\n"
"                          may not take a route's NAME, nor 'zip')\n"
"    -h, --help            this text\n"
"    -V, --version         version and library versions\n"
"\n"
"ENDPOINTS\n"
"    GET /zip/BACKEND/CODE     the rows of the 7-digit CODE, all 15 columns:\n"
"                              {\"backend\":..,\"code\":..,\"rows\":[{..},..]};\n"
"                              404 if none, 400 if CODE is not 7 digits,\n"
"                              404 for an unknown BACKEND, 503 if the\n"
"                              database cannot be reached (Retry-After: 1)\n"
"    GET /zip/BACKEND/random   a code drawn uniformly from the table's codes\n"
"        ?miss=R               share R (0..1) of draws that are absent codes\n"
"    GET /postal/BACKEND/...   the same as /zip/BACKEND/...\n"
"    GET /DATASET/BACKEND/KEY  the rows of dataset DATASET (--datasets) whose\n"
"                              key column is KEY (percent-decoded; slashes\n"
"                              and all): {\"dataset\":..,\"backend\":..,\n"
"                              \"key\":..,\"rows\":[{COLUMN:VALUE,..},..]},\n"
"                              integer and real columns as JSON numbers,\n"
"                              NULL as null; 404 if none; 400 unless KEY is\n"
"                              an integer ('-', 1-19 digits, 64 bits) for an\n"
"                              integer key column, or non-empty for a text\n"
"                              one; 414 if longer than 255 bytes. KEY is a\n"
"                              bound parameter, never part of the SQL.\n"
"                              /random is the postal dataset's only: for\n"
"                              others, `loader --dataset NAME --write-keys\n"
"                              FILE` and `loadgen --keys FILE` draw keys\n"
"                              (and for a text key, 'random' is a key)\n"
"    POST /update/BACKEND/CODE reads, then writes, CODE's row of the\n"
"                              backend's {table}_hits (made and filled at\n"
"                              start): {\"backend\":..,\"code\":..,\"was\":W,\n"
"                              \"stamp\":S}, committed before the answer;\n"
"                              403 unless the backend says writes = yes,\n"
"                              404 if CODE has no row, 405 for GET\n"
"    POST /updates/BACKEND?queries=N\n"
"                              N (1-500) codes drawn as /random, each read\n"
"                              and written: {..,\"queries\":N,\"written\":[..]}\n"
"      and on any lookup:\n"
"        ?strategy=S           pooled, per-request or pipelined (default: the\n"
"                              backend's)\n"
"    GET /health               each backend up or down (a real round trip);\n"
"                              200 if all are up, 503 otherwise; a dataset\n"
"                              other than postal is listed once per backend,\n"
"                              with a \"dataset\" field\n"
"    GET /stats                per backend (and dataset, as /health):\n"
"                              requests, errors, pool, connects,\n"
"                              reconnects, latency percentiles (microseconds);\n"
"                              per loop: requests, connections, CPU seconds\n"
"    A target may be absolute (GET http://host/zip/...).\n"
"\n"
"HTTP\n"
"    Every answer of the server's own is JSON: besides the above, 405 (with\n"
"    Allow) for methods other than GET and HEAD, 413 for a request body, and\n"
"    400 for what RFC 9112 says to refuse (a Content-Length such as -1 or\n"
"    \"0, 5\", two of them, one with Transfer-Encoding, obs-fold, a space\n"
"    before a colon, a bare CR, no Host, a target not /path or http://...),\n"
"    once, with Connection: close. libmicrohttpd 0.9.75 answers some itself,\n"
"    not in JSON, closing the connection: 400 for a header line without a\n"
"    colon, 414 and 431 past max_request_bytes, 505 for HTTP/2.0.\n"
"    A connection idle for connection_timeout_s is closed; so is one whose\n"
"    request does not come whole within header_timeout_s of its opening or\n"
"    its last answer (slowloris), without an answer. max_connections is\n"
"    lowered at start to what the fd limit leaves (said on stderr); if\n"
"    accept() still runs out of fds, accepting pauses 500 ms. Answers name\n"
"    backends, not file paths: those are in the log.\n"
"\n"
"SIGNALS\n"
"    SIGINT, SIGTERM   stop accepting; requests in flight get their answers\n"
"                      (with Connection: close) for up to 5 s, idle\n"
"                      connections 1 s; then what is left gets 503, exit 0\n"
"\n"
"EXIT STATUS\n"
"    0  stopped by a signal\n"
"    1  could not start: bad config file, port in use, TLS files unreadable,\n"
"       a dataset's columns not described (its header or sample unreadable)\n"
"    2  usage error: bad option or value\n";

static int usage_error(void) { return cli_usage_error("server"); }

static bool is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a))
            return true;
        return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
    }
    return false;
}

/* Resolves and binds; -1 (exit 1) on failure, -2 (exit 2) on a refused
 * non-loopback address. */
struct plan;
static bool any_writes(const struct plan *p);

static int listen_on(const char *bind_addr, int port, bool allow_remote, const struct plan *p,
                     const char *write_token)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *ai;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    int rc = getaddrinfo(bind_addr, portstr, &hints, &ai);
    if (rc) {
        srv_log("server: --bind %s: %s", bind_addr, gai_strerror(rc));
        return -2;
    }
    if (!is_loopback(ai->ai_addr) && !allow_remote) {
        srv_log("server: refusing to listen on %s, which is not a loopback address: "
                "the server has no authentication; pass --allow-remote to do it anyway",
                bind_addr);
        freeaddrinfo(ai);
        return -2;
    }
    if (!is_loopback(ai->ai_addr) && any_writes(p) && !write_token) {
        srv_log("server: refusing to listen on %s with writes on and no write_token: anyone "
                "who reaches the port could write; set [server] write_token (the writes then "
                "need Authorization: Bearer TOKEN), or serve no backend with writes = yes",
                bind_addr);
        freeaddrinfo(ai);
        return -2;
    }
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int on = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, SOMAXCONN) < 0) {
        srv_log("server: cannot listen on %s:%d: %s", bind_addr, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    return fd;
}

/* A PEM file, whole, NUL-terminated (what libmicrohttpd's
 * MHD_OPTION_HTTPS_MEM_* take); NULL after saying why. */
static char *read_pem(const char *path, const char *flag)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t len = 0;
    if (f) {
        FILE *mem = open_memstream(&buf, &len);
        char chunk[4096];
        size_t n;
        while (mem && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
            fwrite(chunk, 1, n, mem);
        if (mem)
            fclose(mem);
        bool bad = ferror(f);
        fclose(f);
        if (!bad && buf && strstr(buf, "-----BEGIN "))
            return buf;
        srv_log("server: %s %s: not a PEM file", flag, path);
        free(buf);
        return NULL;
    }
    srv_log("server: %s %s: %s", flag, path, strerror(errno));
    return NULL;
}

/* --datasets: each a [dataset NAME] of the config, once. Returns how many,
 * or -1 after saying why. */
static int select_datasets(const struct zb_conf *conf, const char *list,
                           const struct dataset_conf **out)
{
    int n = 0;
    for (const char *p = list;; p++) {
        size_t len = strcspn(p, ",");
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        const struct dataset_conf *dc = conf_dataset(conf, name);
        if (!dc) {
            char known[512];
            conf_dataset_names(conf, known, sizeof known);
            srv_log("server: --datasets: no dataset '%s' in %s (known: %s)", name, conf->file,
                    known);
            return -1;
        }
        if (!strcmp(name, "zip")) {
            srv_log("server: --datasets: dataset zip: /zip/ is the postal dataset's "
                    "route; give the dataset another name");
            return -1;
        }
        for (int i = 0; i < n; i++)
            if (out[i] == dc) {
                srv_log("server: --datasets: %s named twice", name);
                return -1;
            }
        if (n == ZB_MAX_DATASETS) {
            srv_log("server: --datasets: more than %d", ZB_MAX_DATASETS);
            return -1;
        }
        out[n++] = dc;
        p += len;
        if (!*p)
            return n;
    }
}

/* Raises the soft fd limit toward want (up to the hard limit); returns
 * the limit then in force (want if unknown). */
static long raise_fd_limit(long want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return want;
    if (rl.rlim_cur < (rlim_t)want) {
        rl.rlim_cur = rl.rlim_max < (rlim_t)want ? rl.rlim_max : (rlim_t)want;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
            getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t)want ? want : (long)rl.rlim_cur;
}

/* The fds the server needs besides its clients, estimated high: the
 * standard three, the listening socket, the key-set loaders and slack;
 * per loop its epoll set, wake fd and libmicrohttpd's own; per (dataset,
 * backend) table its pooled connections (pool_hard_max across loops), each
 * loop's pipeline connections and, for SQLite, a database, its journal
 * and WAL index per loop. Per-request lookups open a connection each
 * while they run: when fds run out for those, that lookup gets 503. */
static long own_fds(const struct backend_conf *const *chosen, int nchosen, int ndatasets,
                    int threads)
{
    long n = 64 + 8L * threads;
    for (int i = 0; i < nchosen; i++)
        n += (long)ndatasets * (chosen[i]->pool_hard_max + 1 +
                                (long)threads * (chosen[i]->pipeline_connections + 3));
    return n;
}

/* What the command line asks for. */
struct flags {
    const char *conf_file, *port, *bind_addr, *threads, *backends, *tls_cert, *tls_key, *datasets;
    const char *sets[64];
    int nsets;
    bool allow_remote;
};

/* Reads the flags into f: -1 to go on, else the exit status (--help,
 * --version, a usage error). */
static int parse_flags(int argc, const char *const *argv, apr_pool_t *pool, struct flags *f)
{
    enum { OPT_ALLOW_REMOTE = 256, OPT_TLS_CERT, OPT_TLS_KEY, OPT_STRATEGIES, OPT_ROUTES };
    static const apr_getopt_option_t opts[] = {
        { "conf", 'c', 1, "" },     { "port", 'p', 1, "" },     { "bind", 'b', 1, "" },
        { "allow-remote", OPT_ALLOW_REMOTE, 0, "" },             { "threads", 't', 1, "" },
        { "backends", 'B', 1, "" }, { "set", 's', 1, "" },      { "help", 'h', 0, "" },
        { "datasets", 'D', 1, "" },
        { "version", 'V', 0, "" },  { "tls-cert", OPT_TLS_CERT, 1, "" },
        { "tls-key", OPT_TLS_KEY, 1, "" },
        { "list-strategies", OPT_STRATEGIES, 0, "" }, { "list-routes", OPT_ROUTES, 0, "" },
        { NULL, 0, 0, NULL },
    };
    *f = (struct flags){ .conf_file = "conf/zipbench.conf", .datasets = DATASET_DEFAULT };
    apr_getopt_t *g;
    apr_getopt_init(&g, pool, argc, argv);
    int ch;
    const char *arg;
    apr_status_t st;
    while ((st = apr_getopt_long(g, opts, &ch, &arg)) == APR_SUCCESS) {
        switch (ch) {
        case 'c': f->conf_file = arg; break;
        case 'p': f->port = arg; break;
        case 'b': f->bind_addr = arg; break;
        case OPT_ALLOW_REMOTE: f->allow_remote = true; break;
        case OPT_TLS_CERT: f->tls_cert = arg; break;
        case OPT_TLS_KEY: f->tls_key = arg; break;
        case 't': f->threads = arg; break;
        case 'B': f->backends = arg; break;
        case 'D': f->datasets = arg; break;
        case 's':
            if (f->nsets == (int)(sizeof f->sets / sizeof f->sets[0])) {
                fprintf(stderr, "server: too many --set\n");
                return usage_error();
            }
            f->sets[f->nsets++] = arg;
            break;
        case 'h': fputs(usage, stdout); return ZB_EXIT_OK;
        case OPT_STRATEGIES:
            for (int i = 0; i < NSTRATEGIES; i++)
                puts(strategy_names[i]);
            return ZB_EXIT_OK;
        case OPT_ROUTES:
            for (int i = 0; i < nroutes; i++)
                printf("%s\t%s\n", route_table[i]->name ? route_table[i]->name : "{dataset}",
                       route_table[i]->usage);
            return ZB_EXIT_OK;
        case 'V':
        {
            char libs[256];
            snprintf(libs, sizeof libs, "libmicrohttpd %s, APR %s, APR-util %s, SQLite %s, libpq %d",
                     MHD_get_version(), apr_version_string(), apu_version_string(),
                     sqlite3_libversion(), PQlibVersion());
            cli_version("server", libs);
            return ZB_EXIT_OK;
        }
        }
    }
    if (st != APR_EOF)
        return usage_error();
    if (g->ind < argc) {
        fprintf(stderr, "server: unexpected argument '%s'\n", argv[g->ind]);
        return usage_error();
    }
    if (!f->tls_cert != !f->tls_key) {
        fprintf(stderr, "server: --tls-cert and --tls-key go together\n");
        return usage_error();
    }
    if (f->tls_cert && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        fprintf(stderr, "server: --tls-cert: this libmicrohttpd was built without TLS\n");
        return ZB_EXIT_FAIL;
    }
    return -1;
}

/* What to serve: the backends chosen and the datasets described. */
struct plan {
    const struct backend_conf *chosen[ZB_MAX_BACKENDS];
    int nchosen;
    struct dataset described[ZB_MAX_DATASETS];
    const struct dataset *data[ZB_MAX_DATASETS];
    int ndatasets;
};

/* Does a backend served take writes? */
static bool any_writes(const struct plan *p)
{
    for (int i = 0; i < p->nchosen; i++)
        if (p->chosen[i]->writes)
            return true;
    return false;
}

/* The loaded conf with the flags applied, and the plan: -1 to go on, else
 * the exit status. A bad --set or --backends is a usage error (exit 2),
 * as conf_open's second half; no backend or a bad dataset a failure. */
static int configure(struct zb_conf *conf, const struct flags *f, struct plan *p)
{
    struct zb_err err = { 0 };
    if (conf_apply_sets(conf, f->sets, f->nsets, &err) < 0) {
        srv_log("server: %s", err.msg);
        return ZB_EXIT_USAGE;
    }
    static const struct { const char *flag, *key; } flagkeys[] = {
        { "--port", "port" }, { "--bind", "bind" }, { "--threads", "threads" } };
    const char *flagvals[] = { f->port, f->bind_addr, f->threads };
    for (int i = 0; i < 3; i++)
        if (flagvals[i] && conf_set(conf, NULL, flagkeys[i].key, flagvals[i], &err) < 0) {
            srv_log("server: %s: %s", flagkeys[i].flag, err.msg);
            return ZB_EXIT_USAGE;
        }
    /* The backends to serve, named ones checked before anything starts. */
    if ((p->nchosen = conf_select(conf, f->backends, p->chosen, &err)) < 0) {
        srv_log("server: --backends: %s", err.msg);
        return ZB_EXIT_USAGE;
    }
    static const struct dataset_conf *named[ZB_MAX_DATASETS];
    if ((p->ndatasets = select_datasets(conf, f->datasets, named)) < 0)
        return ZB_EXIT_USAGE;
    if (p->nchosen == 0) {
        srv_log("server: %s: no [backend NAME] section to serve", f->conf_file);
        return ZB_EXIT_FAIL;
    }
    for (int i = 0; i < p->ndatasets; i++) {
        if (dataset_describe(&p->described[i], named[i], &err) < 0) {
            srv_log("server: dataset %s: %s", named[i]->name, err.msg);
            return ZB_EXIT_FAIL;
        }
        p->data[i] = &p->described[i];
    }
    if (conf->server.threads <= 0)
        conf->server.threads = get_nprocs() > 0 ? get_nprocs() : 1;
    return -1;
}

/* max_connections must fit in the fd limit with what the server needs
 * for itself: past it accept() fails (EMFILE) with clients waiting.
 * Lowered to fit, said once; -1 if nothing fits. */
static int fit_fd_limit(struct zb_conf *conf, const struct plan *p)
{
    struct server_conf *sc = &conf->server;
    long own = own_fds(p->chosen, p->nchosen, p->ndatasets, sc->threads);
    long limit = raise_fd_limit(sc->max_connections + own);
    if (limit - own < 1) {
        srv_log("server: the fd limit (RLIMIT_NOFILE) is %ld, and the server needs about "
                "%ld for itself (loops, database connections): raise it (ulimit -n)", limit,
                own);
        return -1;
    }
    if (sc->max_connections > limit - own) {
        srv_log("server: max_connections %d lowered to %ld: the fd limit (RLIMIT_NOFILE) "
                "is %ld and the server keeps about %ld for itself (loops, database "
                "connections); raise it (ulimit -n) for more", sc->max_connections,
                limit - own, limit, own);
        sc->max_connections = (int)(limit - own);
    }
    return 0;
}

/* Serves until SIGINT or SIGTERM: the exit status. */
static int serve(struct server *srv, struct zb_conf *conf, struct plan *p, int listen_fd,
                 apr_pool_t *pool)
{
    const struct server_conf *sc = &conf->server;
    struct zb_err err = { 0 };
    /* Signals: blocked in every thread (the loops inherit the mask), taken
     * by sigwait below. */
    sigset_t sigs = cli_stop_signals();
    char names[1024];
    if (server_start(srv, conf, p->data, p->ndatasets, p->chosen, p->nchosen, listen_fd, pool,
                     names, sizeof names, &err) < 0) {
        srv_log("server: %s", err.msg);
        return ZB_EXIT_FAIL;
    }
    srv_log("zipbench server listening on %s:%d, %d thread%s,%s backends:%s", sc->bind,
            sc->port, srv->nloops, srv->nloops == 1 ? "" : "s", srv->tls_cert ? " HTTPS," : "",
            names);
    int sig = 0;
    sigwait(&sigs, &sig);
    srv_log("zipbench server stopping (%s): no new connections, finishing requests",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    uint64_t requests = 0;
    server_stop(srv, &requests);
    srv_log("zipbench server stopped: %llu requests in %.1f s",
            (unsigned long long)requests, (double)(zb_now_ns() - srv->started_ns) / 1e9);
    return ZB_EXIT_OK;
}

int main(int argc, const char *const *argv)
{
    apr_pool_t *pool;
    /* Requests allocate and free the same sizes over and over (libmicro-
     * httpd's responses): keep the heap instead of trimming it and growing
     * it back (an mprotect per few requests in the loops' arenas). */
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    apr_app_initialize(&argc, &argv, NULL);
    atexit(apr_terminate);
    apr_pool_create(&pool, NULL);
    static struct flags f;
    int rc = parse_flags(argc, argv, pool, &f);
    if (rc >= 0)
        return rc;
    static struct zb_conf conf;
    static struct plan plan;
    static struct server srv;
    struct zb_err err = { 0 };
    if (conf_load(&conf, f.conf_file, &err) < 0) {   /* a bad file: exit 1 */
        srv_log("server: %s", err.msg);
        conf_free(&conf);
        return ZB_EXIT_FAIL;
    }
    if ((rc = configure(&conf, &f, &plan)) >= 0)
        goto out;
    rc = ZB_EXIT_FAIL;
    if (f.tls_cert && (!(srv.tls_cert = read_pem(f.tls_cert, "--tls-cert")) ||
                       !(srv.tls_key = read_pem(f.tls_key, "--tls-key"))))
        goto out;
    int listen_fd = listen_on(conf.server.bind, conf.server.port, f.allow_remote, &plan,
                              conf.server.write_token);
    if (listen_fd < 0) {
        rc = listen_fd == -2 ? ZB_EXIT_USAGE : ZB_EXIT_FAIL;
        goto out;
    }
    if (fit_fd_limit(&conf, &plan) < 0) {
        close(listen_fd);
        goto out;
    }
    rc = serve(&srv, &conf, &plan, listen_fd, pool);
out:
    free(srv.tls_cert);
    free(srv.tls_key);
    conf_free(&conf);
    apr_pool_destroy(pool);
    return rc;
}
