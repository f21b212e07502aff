/* The server's lifecycle: its backends and loop threads started, and the
 * stop sequence. main.c (and the HTTP fuzz target) call these. Here the
 * layers are wired: each loop is handed the hooks of its turns, which
 * call down into http, accept, lookup and dbconn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "accept.h"
#include "dbconn.h"
#include "http.h"
#include "keyset.h"
#include "lookup.h"
#include "log.h"
#include "route.h"
#include "server.h"

/* One loop thread's whole state: the core and each layer's part, each
 * reaching only its own (and what is below it). */
struct worker {
    struct loop loop;              /* first: the hooks find the worker from it */
    struct loop_figures fig;
    struct accept_loop accept;
    struct http_loop http;
    struct lane *lanes;            /* the database side: one lane per served table */
    int nlanes;
};

static struct worker *worker_of(struct loop *l)
{
    return container_of(l, struct worker, loop);
}

/* Every loop's worker, and the lists by which each layer finds its part
 * on the other loops. */
struct crew {
    int n;
    struct accept_shared accepting;   /* what the loops' acceptors share */
    struct accept_loop **accepts;  /* [n]: accepting's peers */
    struct lane **lane_peers;      /* [nserved][n]: each served table's lane on every loop */
    struct worker w[];
};

/* The crew of srv's loops (server_start made it). */
static struct crew *crew_of(struct server *srv)
{
    return container_of(worker_of(srv->cores[0]), struct crew, w);
}

/* ---- a loop's turns ---- */

/* Woken by another thread: connections handed over taken in, requests
 * waiting for a key set sent on, connections other loops gave adopted. */
static void take_handovers(struct loop *l)
{
    struct worker *w = worker_of(l);
    acceptor_wake(&w->accept);
    http_keys_changed(&w->http);
    for (int i = 0; i < w->nlanes; i++)
        lookup_woken(&w->lanes[i]);
}

/* Every deadline that has passed: lookups waiting too long, connects and
 * queries that took too long, pools to top up or trim, headers too slow.
 * Returns when the next one is due (0: none). */
static uint64_t deadlines(struct loop *l, uint64_t now)
{
    struct worker *w = worker_of(l);
    uint64_t next = 0;
    for (int i = 0; i < w->nlanes; i++)
        next = deadline_min(next, lookup_deadlines(&w->lanes[i], now));
    next = deadline_min(next, http_deadlines(&w->http, now));
    return deadline_min(next, acceptor_deadlines(&w->accept, now));
}

static int sleep_ms(struct loop *l)
{
    return http_sleep_ms(&worker_of(l)->http);
}

/* libmicrohttpd's turn, then what the turn batched goes out (one write
 * per pipeline, the in-process read transactions committed). */
static void iterated(struct loop *l)
{
    struct worker *w = worker_of(l);
    http_turn(&w->http);
    for (int i = 0; i < w->nlanes; i++)
        lookup_iterated(&w->lanes[i]);
}

/* Shutdown: every lookup still waiting or sent fails with 503, its request
 * is resumed, and libmicrohttpd gets a few turns to write the answers. */
static void wind_down(struct loop *l)
{
    struct worker *w = worker_of(l);
    struct zb_err err;
    zb_fail(&err, ZB_ERR_CONN, "the server is stopping");
    for (int i = 0; i < w->nlanes; i++)
        lookup_wind_down(&w->lanes[i], &err);
    http_wind_down(&w->http);
    for (int i = 0; i < 3; i++)
        http_turn(&w->http);
    for (int i = 0; i < w->nlanes; i++)
        lookup_iterated(&w->lanes[i]);
}

static const struct loop_hooks hooks = {
    .woken = take_handovers, .deadlines = deadlines, .sleep_ms = sleep_ms, .iterated = iterated,
    .wind_down = wind_down,
};

/* A connection closed: paused acceptors may accept again. */
static void slot_freed(void *accept)
{
    acceptor_slot_freed(accept);
}

/* Loop id set up: the core, its lanes, its acceptor and daemon. */
static int loop_setup(struct server *srv, struct crew *crew, int id, struct zb_err *err)
{
    struct worker *w = &crew->w[id];
    struct loop *l = &w->loop;
    srv->loops[id] = (struct loop_ref){ .loop = l, .fig = &w->fig };
    acceptor_init(&w->accept, l, srv);
    w->accept.fig = &w->fig;
    w->accept.shared = &crew->accepting;
    w->accept.peers = crew->accepts;
    w->accept.npeers = crew->n;
    if (loop_init(l, id, srv->cores, srv->conf->server.threads, &hooks, &srv->shutdown,
                  srv->conf->server.pin, err) < 0)
        return -1;
    l->spin_ns = (uint64_t)srv->conf->server.spin_us * 1000u;
    if (!(w->lanes = calloc((size_t)srv->nlanes, sizeof *w->lanes)))
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    srv->loops[id].lanes = w->lanes;
    srv->loops[id].requests = &w->http.requests;
    if (http_init(&w->http, l, srv, w->lanes, &w->fig, err) < 0)
        return -1;
    w->http.closed = slot_freed;
    w->http.closed_arg = &w->accept;
    for (int i = 0; i < srv->nlanes; i++) {
        struct lane **peers = &crew->lane_peers[i * crew->n];
        peers[id] = &w->lanes[i];
        lane_init(&w->lanes[i], l, srv->served[i], peers);
        w->nlanes = i + 1;
        if (lookup_init(&w->lanes[i], err) < 0)
            return -1;
    }
    if (http_start(&w->http, err) < 0)
        return -1;
    w->accept.mhd = w->http.mhd;
    return 0;
}

/* After the loop stopped: what each layer kept of it freed. */
static void loop_teardown(struct worker *w)
{
    http_stop(&w->http);
    acceptor_free(&w->accept);
    for (int i = 0; i < w->nlanes; i++)
        lookup_destroy(&w->lanes[i]);
    http_loop_free(&w->http);
    loop_destroy(&w->loop);
    free(w->lanes);
}

/* sv's default strategy must be one its driver can take. */
static int check_strategy(const struct served *sv, struct zb_err *err)
{
    const char *cannot = lookup_cannot(sv, sv->strategy);
    if (!cannot)
        return 0;
    return zb_fail(err, ZB_ERR_INPUT, "backend %s: strategy %s: the %s driver %s",
                   sv->conf.name, strategy_names[sv->strategy], sv->conf.driver, cannot);
}

/* Each route's state in the server (the tables it adds among them), in
 * the table's order; a route that shares another's has none of its own. */
static int setup_routes(struct server *srv, struct zb_err *err)
{
    for (int i = 0; i < nroutes; i++) {
        const struct route *r = route_table[i];
        if (!r->shares && r->setup && r->setup(srv, &srv->route_shared[i], err) < 0)
            return -1;
    }
    return 0;
}

static void teardown_routes(struct server *srv)
{
    for (int i = 0; i < nroutes; i++) {
        const struct route *r = route_table[i];
        if (!r->shares && r->teardown && srv->route_shared[i])
            r->teardown(srv, srv->route_shared[i]);
        srv->route_shared[i] = NULL;
    }
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
    srv->pool = pool;
    if (ndatasets * nchosen > SRV_MAX_SERVED) {
        zb_fail(err, ZB_ERR_INPUT, "%d datasets on %d backends: more than %d tables to serve",
                ndatasets, nchosen, SRV_MAX_SERVED);
        goto fail;
    }
    for (int d = 0; d < ndatasets; d++)
        for (int i = 0; i < nchosen; i++) {
            struct served *sv = served_add(srv->served, &srv->nlanes, pool, err);
            srv->nserved = srv->nlanes;
            if (!sv || served_init(sv, chosen[i], datasets[d], sv->index, err) < 0 ||
                check_strategy(sv, err) < 0 || keyset_prepare(sv, err) < 0)
                goto fail;
        }
    if (setup_routes(srv, err) < 0)
        goto fail;
    for (int i = 0; i < srv->nlanes; i++)
        if (lookup_shared_init(srv->served[i], err) < 0)
            goto fail;
    int n = conf->server.threads;
    struct crew *crew = calloc(1, sizeof *crew + (size_t)n * sizeof crew->w[0]);
    srv->loops = calloc((size_t)n, sizeof *srv->loops);
    srv->cores = calloc((size_t)n, sizeof *srv->cores);
    if (crew) {
        crew->n = n;
        crew->accepts = calloc((size_t)n, sizeof *crew->accepts);
        crew->lane_peers = calloc((size_t)(srv->nlanes * n), sizeof *crew->lane_peers);
    }
    if (!crew || !crew->accepts || !crew->lane_peers || !srv->loops || !srv->cores) {
        if (crew) {
            free(crew->accepts);
            free(crew->lane_peers);
        }
        free(crew);
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        goto fail;
    }
    for (int id = 0; id < n; id++) {
        crew->accepts[id] = &crew->w[id].accept;
        srv->cores[id] = &crew->w[id].loop;
    }
    for (; srv->nloops < n; srv->nloops++)
        if (loop_setup(srv, crew, srv->nloops, err) < 0) {
            srv->nloops++;
            goto fail;
        }
    /* Each backend reached once now, so one that is down is reported at
     * start; the server starts anyway and serves it once it is up. */
    size_t nn = 0;
    names[0] = 0;
    for (int i = 0; i < srv->nserved; i++) {
        struct served *sv = srv->served[i];
        struct zb_err e = { 0 };
        bool ok = served_start(sv, &e) == 0;
        char next[300];
        if (!ok)
            srv_log("server: backend %s: not available at start, will retry on demand: %s%s",
                    sv->label, e.msg, backend_next_step(&sv->conf, &e, next, sizeof next));
        if (keyset_start(sv, srv->cores, srv->nloops, err) < 0)
            goto fail;
        int w = snprintf(names + nn, nameslen - nn, " %s%s", sv->label, ok ? "" : " (down)");
        if (w > 0)
            nn = nn + (size_t)w < nameslen ? nn + (size_t)w : nameslen - 1;
    }
    for (int i = 0; i < srv->nloops; i++)
        if (acceptor_start(&crew->w[i].accept, err) < 0)
            goto fail;
    for (; srv->nstarted < srv->nloops; srv->nstarted++)
        if (loop_start(srv->cores[srv->nstarted], err) < 0)
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
    loop_wake_all(srv->cores[0]);
    /* New connections are refused from now on (the loops stop watching
     * the socket; it is closed once they are gone). */
    shutdown(srv->listen_fd, SHUT_RDWR);
    uint64_t t0 = zb_now_ns(), idle_grace = t0 + 1000000000ull, deadline = t0 + 5000000000ull;
    for (;;) {
        uint64_t inflight = 0, open = 0, now = zb_now_ns();
        for (int i = 0; i < srv->nloops; i++) {
            inflight += READ(srv->loops[i].fig->inflight);
            open += READ(srv->loops[i].fig->open);
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
        loop_wake(srv->cores[i]);
    for (int i = 0; i < srv->nstarted; i++)
        loop_join(srv->cores[i]);
    if (requests)
        for (int i = (*requests = 0); i < srv->nloops; i++)
            *requests += READ(srv->loops[i].fig->requests);
    /* The key sets' watchers first: they wake the loops. */
    for (int i = 0; i < srv->nlanes; i++)
        keyset_stop(srv->served[i]);
    if (srv->nloops) {
        struct crew *crew = crew_of(srv);
        for (int i = 0; i < srv->nloops; i++)
            loop_teardown(&crew->w[i]);
        free(crew->accepts);
        free(crew->lane_peers);
        free(crew);
    }
    teardown_routes(srv);
    for (int i = 0; i < srv->nlanes; i++) {
        lookup_shared_free(srv->served[i]);
        served_destroy(srv->served[i]);
    }
    free(srv->loops);
    free(srv->cores);
    srv->loops = NULL;
    srv->cores = NULL;
    srv->nloops = srv->nstarted = srv->nserved = srv->nlanes = 0;
    if (srv->listen_fd >= 0)
        close(srv->listen_fd);
    srv->listen_fd = -1;
}
