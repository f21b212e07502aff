/* build/bin/server: postal-code lookups over HTTP (libmicrohttpd), one
 * apr_reslist connection pool per backend. See usage below. */
#include <apr_general.h>
#include <apr_getopt.h>
#include <apr_version.h>
#include <apu_version.h>
#include <arpa/inet.h>
#include <errno.h>
#include <libpq-fe.h>
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
#include <unistd.h>

#include "cli.h"
#include "server.h"

#define VERSION "0.1"

struct server srv;

static const char usage[] =
"NAME\n"
"    server - zipbench postal-code lookup server\n"
"\n"
"SYNOPSIS\n"
"    server [--conf FILE] [--port N] [--bind ADDR [--allow-remote]] [--threads N]\n"
"           [--backends NAME,...] [--set BACKEND.KEY=VALUE]...\n"
"    server --help | -V\n"
"\n"
"DESCRIPTION\n"
"    Answers postal-code lookups from the backends of the config file over\n"
"    HTTP/1.1 (libmicrohttpd, epoll, a pool of --threads threads, keep-alive).\n"
"    Each backend has a pool of database connections (APR apr_reslist), each\n"
"    with its lookup statement prepared once; a connection lost when a\n"
"    database restarts is discarded and replaced, and the requests that\n"
"    cannot be served meanwhile get 503 within acquire_timeout_ms. A database\n"
"    that hangs instead (no answer within query_timeout_ms) is given up the\n"
"    same way: 503, and the other backends keep being served. A backend\n"
"    whose database is down at start is reported and served once it is up.\n"
"    Runs in the foreground, logs to standard error (start, stop, backends\n"
"    going down and up; nothing per request).\n"
"\n"
"OPTIONS\n"
"    -c, --conf FILE       config file (default conf/zipbench.conf)\n"
"    -p, --port N          TCP port (default: [server] port, 8080)\n"
"    -b, --bind ADDR       address to listen on (default: [server] bind,\n"
"                          127.0.0.1); a non-loopback address is refused\n"
"                          unless --allow-remote is given\n"
"        --allow-remote    allow --bind to a non-loopback address\n"
"    -t, --threads N       libmicrohttpd threads (default: [server] threads, 2)\n"
"    -B, --backends LIST   serve only these backends, comma-separated\n"
"                          (default: every [backend] of the config)\n"
"    -s, --set B.KEY=VAL   override a config key; B is a backend name or\n"
"                          'server', e.g. --set pg.pool_hard_max=4\n"
"                          --set sqlite.persistent=no; repeatable\n"
"    -h, --help            this text\n"
"    -V, --version         version and library versions\n"
"\n"
"ENDPOINTS\n"
"    GET /zip/BACKEND/CODE     the rows of the 7-digit CODE, all 15 columns:\n"
"                              {\"backend\":..,\"code\":..,\"rows\":[{..},..]};\n"
"                              404 if none, 400 if CODE is not 7 digits,\n"
"                              404 for an unknown BACKEND, 503 if the\n"
"                              database cannot be reached\n"
"    GET /zip/BACKEND/random   a code drawn uniformly from the table's codes\n"
"        ?miss=R               share R (0..1) of draws that are absent codes\n"
"        ?persistent=0|1       0: connect for this request only (default: the\n"
"                              backend's `persistent`, yes)\n"
"    GET /health               each backend up or down; 200 if all are up,\n"
"                              503 otherwise\n"
"    GET /stats                per backend: requests, errors, pool, connects,\n"
"                              reconnects, latency percentiles (microseconds)\n"
"    Other methods than GET and HEAD get 405. Every answer is JSON.\n"
"\n"
"SIGNALS\n"
"    SIGINT, SIGTERM   stop accepting, finish the requests in flight, close\n"
"                      the pools, exit 0\n"
"\n"
"EXIT STATUS\n"
"    0  stopped by a signal\n"
"    1  could not start: bad config file, port in use, no backend usable\n"
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
static int listen_on(const char *bind_addr, int port, bool allow_remote)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *ai;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    int rc = getaddrinfo(bind_addr, portstr, &hints, &ai);
    if (rc) {
        fprintf(stderr, "server: --bind %s: %s\n", bind_addr, gai_strerror(rc));
        return -2;
    }
    if (!is_loopback(ai->ai_addr) && !allow_remote) {
        fprintf(stderr, "server: refusing to listen on %s, which is not a loopback address: "
                "the server has no authentication; pass --allow-remote to do it anyway\n",
                bind_addr);
        freeaddrinfo(ai);
        return -2;
    }
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int on = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, SOMAXCONN) < 0) {
        fprintf(stderr, "server: cannot listen on %s:%d: %s\n", bind_addr, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    return fd;
}

static void raise_fd_limit(int want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)want) {
        rl.rlim_cur = rl.rlim_max < (rlim_t)want ? rl.rlim_max : (rlim_t)want;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int main(int argc, const char *const *argv)
{
    apr_pool_t *pool;
    apr_app_initialize(&argc, &argv, NULL);
    atexit(apr_terminate);
    apr_pool_create(&pool, NULL);
    enum { OPT_ALLOW_REMOTE = 256 };
    static const apr_getopt_option_t opts[] = {
        { "conf", 'c', 1, "" },     { "port", 'p', 1, "" },     { "bind", 'b', 1, "" },
        { "allow-remote", OPT_ALLOW_REMOTE, 0, "" },             { "threads", 't', 1, "" },
        { "backends", 'B', 1, "" }, { "set", 's', 1, "" },      { "help", 'h', 0, "" },
        { "version", 'V', 0, "" },  { NULL, 0, 0, NULL },
    };
    const char *conf_file = "conf/zipbench.conf", *port = NULL, *bind_addr = NULL,
               *threads = NULL, *backends = NULL;
    const char *sets[64];
    int nsets = 0;
    bool allow_remote = false;
    apr_getopt_t *g;
    apr_getopt_init(&g, pool, argc, argv);
    int ch;
    const char *arg;
    apr_status_t st;
    while ((st = apr_getopt_long(g, opts, &ch, &arg)) == APR_SUCCESS) {
        switch (ch) {
        case 'c': conf_file = arg; break;
        case 'p': port = arg; break;
        case 'b': bind_addr = arg; break;
        case OPT_ALLOW_REMOTE: allow_remote = true; break;
        case 't': threads = arg; break;
        case 'B': backends = arg; break;
        case 's':
            if (nsets == (int)(sizeof sets / sizeof sets[0])) {
                fprintf(stderr, "server: too many --set\n");
                return usage_error();
            }
            sets[nsets++] = arg;
            break;
        case 'h': fputs(usage, stdout); return ZB_EXIT_OK;
        case 'V':
            printf("zipbench server %s (libmicrohttpd %s, APR %s, APR-util %s, SQLite %s, "
                   "libpq %d)\n", VERSION, MHD_get_version(), apr_version_string(),
                   apu_version_string(), sqlite3_libversion(), PQlibVersion());
            return ZB_EXIT_OK;
        }
    }
    if (st != APR_EOF)
        return usage_error();
    if (g->ind < argc) {
        fprintf(stderr, "server: unexpected argument '%s'\n", argv[g->ind]);
        return usage_error();
    }

    static struct zb_conf conf;
    struct zb_err err = { 0 };
    if (conf_load(&conf, conf_file, &err) < 0) {
        fprintf(stderr, "server: %s\n", err.msg);
        conf_free(&conf);
        return ZB_EXIT_FAIL;
    }
    int rc = ZB_EXIT_USAGE;
    for (int i = 0; i < nsets; i++)
        if (conf_set_arg(&conf, sets[i], &err) < 0) {
            fprintf(stderr, "server: --set %s: %s\n", sets[i], err.msg);
            goto out_conf;
        }
    static const struct { const char *flag, *key; } flagkeys[] = {
        { "--port", "port" }, { "--bind", "bind" }, { "--threads", "threads" } };
    const char *flagvals[] = { port, bind_addr, threads };
    for (int i = 0; i < 3; i++)
        if (flagvals[i] && conf_set(&conf, NULL, flagkeys[i].key, flagvals[i], &err) < 0) {
            fprintf(stderr, "server: %s: %s\n", flagkeys[i].flag, err.msg);
            goto out_conf;
        }

    /* The backends to serve, named ones checked before anything starts. */
    const struct backend_conf *chosen[ZB_MAX_BACKENDS];
    int nchosen = conf_select(&conf, backends, chosen, &err);
    if (nchosen < 0) {
        fprintf(stderr, "server: --backends: %s\n", err.msg);
        goto out_conf;
    }
    rc = ZB_EXIT_FAIL;
    if (nchosen == 0) {
        fprintf(stderr, "server: %s: no [backend NAME] section to serve\n", conf_file);
        goto out_conf;
    }

    const struct server_conf *sc = &conf.server;
    int fd = listen_on(sc->bind, sc->port, allow_remote);
    if (fd < 0) {
        rc = fd == -2 ? ZB_EXIT_USAGE : ZB_EXIT_FAIL;
        goto out_conf;
    }
    int want_fds = sc->max_connections + 64;
    for (int i = 0; i < nchosen; i++)
        want_fds += chosen[i]->pool_hard_max * 2;
    raise_fd_limit(want_fds);

    srv.conf = &conf;
    srv.started_ns = zb_now_ns();
    for (int i = 0; i < nchosen; i++) {
        struct srv_backend *sb = apr_palloc(pool, sizeof *sb);
        if (pool_init(sb, chosen[i], pool, &err) < 0) {
            fprintf(stderr, "server: %s\n", err.msg);
            close(fd);
            goto out_pools;
        }
        srv.backend[srv.nbackends++] = sb;
    }
    /* Open the pools; a backend whose database is down is reported and
     * retried on demand, the server starts anyway. */
    char names[1024];
    size_t nn = 0;
    names[0] = 0;
    for (int i = 0; i < srv.nbackends; i++) {
        struct srv_backend *sb = srv.backend[i];
        struct zb_err e = { 0 };
        bool ok = pool_start(sb, &e) == 0;
        if (!ok)
            fprintf(stderr, "server: backend %s: not available at start, will retry on demand: "
                    "%s\n", sb->conf.name, e.msg);
        int w = snprintf(names + nn, sizeof names - nn, " %s%s", sb->conf.name,
                         ok ? "" : " (down)");
        if (w > 0)
            nn = nn + (size_t)w < sizeof names ? nn + (size_t)w : sizeof names - 1;
    }

    /* Signals: blocked in every thread (MHD's inherit the mask), taken by
     * sigwait below. */
    sigset_t sigs = cli_stop_signals();

    struct MHD_Daemon *d = http_start(fd, &err);
    if (!d) {
        fprintf(stderr, "server: %s\n", err.msg);
        close(fd);
        goto out_pools;
    }
    fprintf(stderr, "zipbench server listening on %s:%d, %d thread%s, backends:%s\n", sc->bind,
            sc->port, sc->threads, sc->threads == 1 ? "" : "s", names);

    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "zipbench server stopping (%s): no new connections, finishing requests\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    atomic_store(&srv.stopping, true);
    int lfd = MHD_quiesce_daemon(d);
    /* Requests in flight finish, and their responses now carry Connection:
     * close, so busy keep-alive clients get one more clean answer and go.
     * Connections that stay idle are given 1 s, requests in flight 5 s;
     * then MHD_stop_daemon closes whatever is left. */
    uint64_t t0 = zb_now_ns(), idle_grace = t0 + 1000000000ull, deadline = t0 + 5000000000ull;
    while (zb_now_ns() < deadline &&
           (atomic_load(&srv.inflight) > 0 ||
            (atomic_load(&srv.connections) > 0 && zb_now_ns() < idle_grace)))
        usleep(5 * 1000);
    MHD_stop_daemon(d);
    if (lfd >= 0)
        close(lfd);
    double secs = (double)(zb_now_ns() - srv.started_ns) / 1e9;
    fprintf(stderr, "zipbench server stopped: %llu requests in %.1f s\n",
            (unsigned long long)atomic_load(&srv.requests), secs);
    rc = ZB_EXIT_OK;
out_pools:
    for (int i = 0; i < srv.nbackends; i++)
        pool_destroy(srv.backend[i]);
    srv.nbackends = 0;
out_conf:
    conf_free(&conf);
    apr_pool_destroy(pool);
    return rc;
}
