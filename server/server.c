/* The server's lifecycle: its backends and loop threads started, and the
 * stop sequence. main.c (and the HTTP fuzz target) call these. Here the
 * layers are wired: each loop is handed the hooks of its turns, which
 * call down into http, accept, lookup and dbconn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "accept.h"
#include "dbconn.h"
#include "http.h"
#include "keyset.h"
#include "lookup.h"
#include "log.h"
#include "server.h"

/* ---- a loop's turns ---- */

static void woken(struct loop *l)
{
    acceptor_wake(l);
    http_keys_changed(l);
    for (int i = 0; i < l->nlb; i++)
        lookup_woken(&l->lb[i]);
}

/* Every deadline that has passed: lookups waiting too long, connects and
 * queries that took too long, pools to top up or trim, headers too slow.
 * Returns when the next one is due (0: none). */
static uint64_t deadlines(struct loop *l, uint64_t now)
{
    uint64_t next = 0;
    for (int i = 0; i < l->nlb; i++) {
        uint64_t t = lookup_deadlines(&l->lb[i], now);
        if (t && (!next || t < next))
            next = t;
    }
    uint64_t t = http_deadlines(l, now);
    next = t && (!next || t < next) ? t : next;
    t = acceptor_deadlines(l, now);
    return t && (!next || t < next) ? t : next;
}

static void iterated(struct loop *l)
{
    http_turn(l);
    dbconn_flush_all(l);   /* everything the turn sent: one write per pipeline */
    inline_commit(l);
    dbconn_settle(l);
}

/* Shutdown: every lookup still waiting or sent fails with 503, its request
 * is resumed, and libmicrohttpd gets a few turns to write the answers. */
static void wind_down(struct loop *l)
{
    struct zb_err err;
    zb_fail(&err, ZB_ERR_CONN, "the server is stopping");
    for (int i = 0; i < l->nlb; i++)
        lookup_wind_down(&l->lb[i], &err);
    http_wind_down(l);
    for (int i = 0; i < 3; i++)
        http_turn(l);
    inline_commit(l);
    for (int i = 0; i < l->nlb; i++)
        lookup_close(&l->lb[i]);
    dbconn_settle(l);
}

static const struct loop_hooks hooks = {
    .woken = woken, .deadlines = deadlines, .sleep_ms = http_sleep_ms, .iterated = iterated,
    .wind_down = wind_down,
};

/* Loop id set up: the core, its shares of the backends, its daemon. */
static int loop_setup(struct server *srv, int id, struct zb_err *err)
{
    struct loop *l = &srv->loops[id];
    l->srv = srv;
    l->rng = zb_now_ns() ^ ((uint64_t)id << 56) ^ 0x5a17;
    APR_RING_INIT(&l->given, dbconn, link);
    http_loop_init(l);
    if (loop_init(l, id, srv->loops, srv->conf->server.threads, &hooks, &srv->shutdown,
                  srv->conf->server.pin, err) < 0)
        return -1;
    if (!(l->lb = calloc((size_t)srv->nserved, sizeof *l->lb)))
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    l->nlb = srv->nserved;
    for (int i = 0; i < srv->nserved; i++) {
        lb_init(&l->lb[i], l, srv->served[i]);
        lookup_init(&l->lb[i]);
    }
    return http_start(l, err);
}

/* After the loop stopped: what each layer kept of it freed. */
static void loop_teardown(struct loop *l)
{
    http_stop(l);
    acceptor_free(l);
    for (struct dbconn *dc; (dc = dbconn_given(l));) {   /* given as the loops stopped */
        dc->lb = &l->lb[dc->lb->sb->index];   /* ours now: freed with ours */
        dbconn_close(dc);
    }
    dbconn_settle(l);
    http_loop_free(l);
    free(l->lb);
    loop_destroy(l);
}

/* sb's default strategy must be one its driver can take. */
static int check_strategy(const struct srv_backend *sb, struct zb_err *err)
{
    if (lookup_strategy_ok(sb, sb->strategy))
        return 0;
    return zb_fail(err, ZB_ERR_INPUT, "backend %s: strategy %s: the %s driver cannot pipeline",
                   sb->conf.name, zb_strategy_names[sb->strategy], sb->conf.driver);
}

int server_start(struct server *srv, struct zb_conf *conf, const struct dataset *const *datasets,
                 int ndatasets, const struct backend_conf *const *chosen, int nchosen,
                 int listen_fd, apr_pool_t *pool, char *names, size_t nameslen,
                 struct zb_err *err)
{
    char *cert = srv->tls_cert, *key = srv->tls_key;
    memset(srv, 0, sizeof *srv);
    srv->tls_cert = cert;
    srv->tls_key = key;
    srv->conf = conf;
    srv->listen_fd = listen_fd;
    srv->started_ns = zb_now_ns();
    srv->datasets = datasets;
    srv->ndatasets = ndatasets;
    if (ndatasets * nchosen > SRV_MAX_SERVED) {
        zb_fail(err, ZB_ERR_INPUT, "%d datasets on %d backends: more than %d pairs to serve",
                ndatasets, nchosen, SRV_MAX_SERVED);
        goto fail;
    }
    for (int d = 0; d < ndatasets; d++)
        for (int i = 0; i < nchosen; i++) {
            struct srv_backend *sb = apr_palloc(pool, sizeof *sb);
            srv->served[srv->nserved] = sb;
            if (served_init(sb, chosen[i], datasets[d], srv->nserved++, err) < 0 ||
                check_strategy(sb, err) < 0)
                goto fail;
        }
    int n = conf->server.threads;
    if (!(srv->loops = calloc((size_t)n, sizeof *srv->loops))) {
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        goto fail;
    }
    for (; srv->nloops < n; srv->nloops++)
        if (loop_setup(srv, srv->nloops, err) < 0) {
            srv->nloops++;
            goto fail;
        }
    /* Each backend reached once now, so one that is down is reported at
     * start; the server starts anyway and serves it once it is up. */
    size_t nn = 0;
    names[0] = 0;
    for (int i = 0; i < srv->nserved; i++) {
        struct srv_backend *sb = srv->served[i];
        struct zb_err e = { 0 };
        bool ok = served_start(sb, &e) == 0;
        char next[300];
        if (!ok)
            srv_log("server: backend %s: not available at start, will retry on demand: %s%s",
                    sb->label, e.msg, backend_next_step(&sb->conf, &e, next, sizeof next));
        if (keyset_start(sb, srv->loops, err) < 0)
            goto fail;
        int w = snprintf(names + nn, nameslen - nn, " %s%s", sb->label, ok ? "" : " (down)");
        if (w > 0)
            nn = nn + (size_t)w < nameslen ? nn + (size_t)w : nameslen - 1;
    }
    for (int i = 0; i < srv->nloops; i++)
        if (acceptor_start(&srv->loops[i], err) < 0)
            goto fail;
    for (; srv->nstarted < srv->nloops; srv->nstarted++)
        if (loop_start(&srv->loops[srv->nstarted], err) < 0)
            goto fail;
    return 0;
fail:
    server_stop(srv, NULL);
    return -1;
}

/* Stopping: no new connections; requests in flight finish, their answers
 * carrying Connection: close, so busy keep-alive clients get one more
 * clean answer and go. Connections that stay idle are given 1 s, requests
 * in flight 5 s; then the loops fail what is left (503) and close
 * everything. */
static void drain(struct server *srv)
{
    atomic_store(&srv->stopping, true);
    loop_wake_all(&srv->loops[0]);
    /* New connections are refused from now on (the loops stop watching
     * the socket; it is closed once they are gone). */
    shutdown(srv->listen_fd, SHUT_RDWR);
    uint64_t t0 = zb_now_ns(), idle_grace = t0 + 1000000000ull, deadline = t0 + 5000000000ull;
    for (;;) {
        uint64_t inflight = 0, open = 0, now = zb_now_ns();
        for (int i = 0; i < srv->nloops; i++) {
            inflight += READ(srv->loops[i].inflight);
            open += READ(srv->loops[i].open);
        }
        if (now >= deadline || (inflight == 0 && (open == 0 || now >= idle_grace)))
            break;
        usleep(5 * 1000);
    }
}

void server_stop(struct server *srv, uint64_t *requests)
{
    if (srv->nstarted > 0)
        drain(srv);
    atomic_store(&srv->shutdown, true);
    for (int i = 0; i < srv->nstarted; i++)
        loop_wake(&srv->loops[i]);
    for (int i = 0; i < srv->nstarted; i++)
        loop_join(&srv->loops[i]);
    if (requests)
        for (int i = (*requests = 0); i < srv->nloops; i++)
            *requests += READ(srv->loops[i].requests);
    /* The key sets' watchers first: they wake the loops. */
    for (int i = 0; i < srv->nserved; i++) {
        keyset_stop(srv->served[i]);
        served_destroy(srv->served[i]);
    }
    for (int i = 0; i < srv->nloops; i++)
        loop_teardown(&srv->loops[i]);
    free(srv->loops);
    srv->loops = NULL;
    srv->nloops = srv->nstarted = srv->nserved = 0;
    if (srv->listen_fd >= 0)
        close(srv->listen_fd);
    srv->listen_fd = -1;
}
