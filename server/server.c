/* The server's lifecycle: its backends and loop threads started, and the
 * stop sequence. main.c (and the HTTP fuzz target) call these. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server.h"

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
            if (backend_init(sb, chosen[i], datasets[d], srv->nserved++, pool, err) < 0)
                goto fail;
        }
    int n = conf->server.threads;
    if (!(srv->loops = calloc((size_t)n, sizeof *srv->loops))) {
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        goto fail;
    }
    for (; srv->nloops < n; srv->nloops++)
        if (loop_init(&srv->loops[srv->nloops], srv, srv->nloops, err) < 0) {
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
        bool ok = backend_start(sb, srv, &e) == 0;
        if (!ok)
            fprintf(stderr, "server: backend %s: not available at start, will retry on demand: "
                    "%s\n", sb->label, e.msg);
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
    loop_wake_all(srv);
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
    /* The key loaders first: they wake the loops when done. */
    for (int i = 0; i < srv->nserved; i++)
        backend_destroy(srv->served[i]);
    for (int i = 0; i < srv->nloops; i++)
        loop_destroy(&srv->loops[i]);
    free(srv->loops);
    srv->loops = NULL;
    srv->nloops = srv->nstarted = srv->nserved = 0;
    if (srv->listen_fd >= 0)
        close(srv->listen_fd);
    srv->listen_fd = -1;
}
