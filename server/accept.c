/* The acceptor: new connections spread evenly over the loops from the
 * first burst on.
 *
 * libmicrohttpd's own thread pool lets every thread accept from one shared
 * socket, so a burst of connections often lands on whichever thread wakes
 * first (docs/RELIABILITY.md measured one thread idle in 4 runs of 14);
 * SO_REUSEPORT hashes the 4-tuple, which can put two concurrent requests
 * on one thread. Here loop 0 alone watches the listening socket, accepts
 * until the backlog is empty, and gives each connection to the loop with
 * the fewest open connections (ties in turn), through MHD_add_connection
 * on that loop's own thread.
 *
 * A loop's load is what the acceptor gave it minus what it has closed: the
 * first is the acceptor's own count, the second a counter only that loop
 * writes, so no lock or shared read-modify-write is involved. At
 * max_connections the acceptor stops watching the socket (new connections
 * wait in the kernel's backlog, as with libmicrohttpd's own limit) until a
 * loop closes one. */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server.h"

static uint64_t load_of(struct loop *l) { return l->assigned - READ(l->closed); }

static struct loop *least_loaded(struct server *srv)
{
    struct loop *best = NULL;
    uint64_t best_load = UINT64_MAX;
    for (int k = 0; k < srv->nloops; k++) {
        struct loop *l = &srv->loops[(srv->accept_rr + (unsigned)k) % (unsigned)srv->nloops];
        uint64_t load = load_of(l);
        if (load < best_load) {
            best = l;
            best_load = load;
        }
    }
    srv->accept_rr++;
    return best;
}

static uint64_t total_open(struct server *srv)
{
    uint64_t n = 0;
    for (int i = 0; i < srv->nloops; i++)
        n += load_of(&srv->loops[i]);
    return n;
}

/* Gives fd to l: directly into our own daemon, or through l's queue. */
static void hand_over(struct loop *self, struct loop *l, int fd, const struct sockaddr_storage *a,
                      socklen_t len)
{
    l->assigned++;
    if (l == self) {
        if (MHD_add_connection(l->mhd, fd, (const struct sockaddr *)a, len) != MHD_YES)
            BUMP(l->closed);
        return;
    }
    pthread_mutex_lock(&l->lock);
    bool was_empty = l->nhanded == 0;
    if (l->nhanded == l->caphanded) {
        size_t cap = l->caphanded ? l->caphanded * 2 : 16;
        struct handed *grown = realloc(l->handed, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&l->lock);
            close(fd);
            l->assigned--;
            return;
        }
        l->handed = grown;
        l->caphanded = cap;
    }
    l->handed[l->nhanded++] = (struct handed){ .fd = fd, .len = len, .addr = *a };
    pthread_mutex_unlock(&l->lock);
    if (was_empty)
        loop_wake(l);
}

static void pause_accepting(struct loop *l0)
{
    struct server *srv = l0->srv;
    loop_unwatch(l0, srv->listen_fd);
    atomic_store(&srv->accept_paused, true);
    /* A slot may have been freed between the check and the flag. */
    if (total_open(srv) < (uint64_t)srv->conf->server.max_connections)
        loop_wake(l0);
}

void acceptor_ready(struct loop *l0)
{
    struct server *srv = l0->srv;
    uint64_t max = (uint64_t)srv->conf->server.max_connections;
    for (;;) {
        if (total_open(srv) >= max) {
            pause_accepting(l0);
            return;
        }
        struct sockaddr_storage a;
        socklen_t len = sizeof a;
        int fd = accept4(srv->listen_fd, (struct sockaddr *)&a, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE)
                fprintf(stderr, "server: accept: %s (raise the fd limit or lower "
                        "max_connections)\n", strerror(errno));
            return;   /* EAGAIN: the backlog is empty */
        }
        hand_over(l0, least_loaded(srv), fd, &a, len);
    }
}

int acceptor_start(struct loop *l0, struct zb_err *err)
{
    return loop_watch_listen(l0, l0->srv->listen_fd, err);
}

/* In loop 0, on wake: resume after a pause, or close for good on stop. */
void acceptor_stop(struct loop *l0)
{
    struct server *srv = l0->srv;
    if (srv->listen_fd < 0)
        return;
    if (!atomic_load(&srv->accept_paused))
        loop_unwatch(l0, srv->listen_fd);
    close(srv->listen_fd);
    srv->listen_fd = -1;
}

void acceptor_resume(struct loop *l0)
{
    struct server *srv = l0->srv;
    if (srv->listen_fd < 0 || !atomic_load(&srv->accept_paused) ||
        total_open(srv) >= (uint64_t)srv->conf->server.max_connections)
        return;
    atomic_store(&srv->accept_paused, false);
    struct zb_err err;
    if (loop_watch_listen(l0, srv->listen_fd, &err) < 0)
        fprintf(stderr, "server: %s\n", err.msg);
    else
        acceptor_ready(l0);
}

void acceptor_slot_freed(struct server *srv)
{
    if (atomic_load_explicit(&srv->accept_paused, RELAXED))
        loop_wake(&srv->loops[0]);
}
