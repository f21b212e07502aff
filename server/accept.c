/* The acceptor: new connections spread evenly over the loops from the
 * first burst on.
 *
 * libmicrohttpd's own thread pool lets every thread accept from one shared
 * socket for itself, so a burst of connections often lands on whichever
 * thread wakes first (docs/RELIABILITY.md measured one thread idle in 4
 * runs of 14); SO_REUSEPORT hashes the 4-tuple, which can put two
 * concurrent requests on one thread. Here every loop watches the listening
 * socket (EPOLLEXCLUSIVE: one is woken per connection, so accepting is
 * shared), but the loop that accepts a connection keeps it only if it has
 * the fewest open connections (ties in turn); otherwise it hands it to the
 * one that has, which adds it to its own daemon (MHD_add_connection on
 * that loop's thread). A loop accepts at most ACCEPT_BATCH per iteration,
 * so a burst of new connections does not hold up the requests of the ones
 * it already has.
 *
 * A loop's load is the connections given to it (an atomic counter, bumped
 * once per new connection by whichever loop accepted it) minus those it
 * closed (a counter only that loop writes). At max_connections the loops
 * stop watching the socket (new connections wait in the kernel's backlog,
 * as with libmicrohttpd's own limit) until one is closed.
 *
 * When accept() fails for want of fds or memory (EMFILE, ENFILE, ENOBUFS,
 * ENOMEM), the connection stays in the backlog and the socket stays
 * readable: retrying at once spins (a loop at 100% CPU and a log line per
 * try). So every loop that meets it stops watching the socket for
 * ACCEPT_PAUSE_MS (nginx's 500 ms), and one line is logged per
 * ACCEPT_LOG_MS at most, counting the failures in between. */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "accept.h"
#include "log.h"

#define ACCEPT_BATCH 16
#define ACCEPT_PAUSE_MS 500
#define ACCEPT_LOG_MS 5000

/* A connection accepted by one loop for another. */
struct handed {
    int fd;
    socklen_t len;
    struct sockaddr_storage addr;
};

static uint64_t load_of(struct accept_loop *a)
{
    return atomic_load_explicit(&a->assigned, RELAXED) - READ(a->fig->closed);
}

static struct accept_loop *least_loaded(struct accept_loop *self)
{
    unsigned start = atomic_fetch_add_explicit(&self->shared->rr, 1, RELAXED);
    struct accept_loop *best = self;
    uint64_t best_load = UINT64_MAX;
    for (int k = 0; k < self->npeers; k++) {
        struct accept_loop *a = self->peers[(start + (unsigned)k) % (unsigned)self->npeers];
        uint64_t load = load_of(a);
        if (load < best_load) {
            best = a;
            best_load = load;
        }
    }
    return best;
}

static uint64_t total_open(struct accept_loop *self)
{
    uint64_t n = 0;
    for (int i = 0; i < self->npeers; i++)
        n += load_of(self->peers[i]);
    return n;
}

/* Gives fd to a: directly into our own daemon, or through a's queue. */
static void hand_over(struct accept_loop *self, struct accept_loop *a, int fd,
                      const struct sockaddr_storage *addr, socklen_t len)
{
    atomic_fetch_add_explicit(&a->assigned, 1, RELAXED);
    if (a == self) {
        if (MHD_add_connection(a->mhd, fd, (const struct sockaddr *)addr, len) != MHD_YES)
            BUMP(a->fig->closed);
        return;
    }
    pthread_mutex_lock(&a->lock);
    bool was_empty = a->nhanded == 0;
    if (a->nhanded == a->caphanded) {
        size_t cap = a->caphanded ? a->caphanded * 2 : 16;
        struct handed *grown = realloc(a->handed, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&a->lock);
            close(fd);
            atomic_fetch_sub_explicit(&a->assigned, 1, RELAXED);
            return;
        }
        a->handed = grown;
        a->caphanded = cap;
    }
    a->handed[a->nhanded++] = (struct handed){ .fd = fd, .len = len, .addr = *addr };
    pthread_mutex_unlock(&a->lock);
    if (was_empty)
        loop_wake(a->loop);
}

static void stop_watching(struct accept_loop *a)
{
    if (a->listening) {
        loop_unwatch(a->loop, a->srv->listen_fd);
        a->listening = false;
    }
}

static int watch_listen(struct accept_loop *a, struct zb_err *err)
{
    /* EPOLLEXCLUSIVE: one loop is woken per new connection. */
    return loop_watch(a->loop, a->srv->listen_fd, EPOLLIN | EPOLLEXCLUSIVE, &a->listen, err);
}

static void watch_again(struct accept_loop *a)
{
    struct zb_err err;
    if (a->listening)
        return;
    if (watch_listen(a, &err) < 0)
        srv_log("server: %s", err.msg);
    else
        a->listening = true;
}

/* accept() failed with err (out of fds or memory): this loop stops
 * watching until the pause is over; logged once per ACCEPT_LOG_MS. */
static void pause_accepting(struct accept_loop *a, int err)
{
    uint64_t now = zb_now_ns(), resume = now + ACCEPT_PAUSE_MS * 1000000ull;
    uint64_t failures = atomic_fetch_add(&a->shared->pause.failures, 1) + 1;
    uint64_t logged = atomic_load(&a->shared->pause.logged_ns);
    if ((!logged || now - logged >= ACCEPT_LOG_MS * 1000000ull) &&
        atomic_compare_exchange_strong(&a->shared->pause.logged_ns, &logged, now)) {
        atomic_fetch_sub(&a->shared->pause.failures, failures);
        srv_log("server: accept: %s: not accepting for %d ms (%llu time%s since the "
                "last such line; raise the fd limit or lower max_connections)", strerror(err),
                ACCEPT_PAUSE_MS, (unsigned long long)failures, failures == 1 ? "" : "s");
    }
    atomic_store(&a->shared->pause.resume_ns, resume);
    stop_watching(a);
    loop_deadline(a->loop, resume);
}

/* Within a pause: not before its end, which is made this loop's
 * deadline. */
static bool pausing(struct accept_loop *a)
{
    uint64_t resume = atomic_load(&a->shared->pause.resume_ns);
    if (!resume || zb_now_ns() >= resume)
        return false;
    loop_deadline(a->loop, resume);
    return true;
}

uint64_t acceptor_deadlines(struct accept_loop *a, uint64_t now)
{
    uint64_t resume = atomic_load(&a->shared->pause.resume_ns);
    if (!resume || a->listening)
        return 0;
    if (now < resume)
        return resume;
    acceptor_wake(a);   /* over: watch again, unless stopping or at the limit */
    return 0;
}

/* The listening socket is readable: accept a batch. */
static void ready(struct watch *w, uint32_t events)
{
    (void)events;
    struct accept_loop *self = container_of(w, struct accept_loop, listen);
    struct server *srv = self->srv;
    uint64_t max = (uint64_t)srv->conf->server.max_connections;
    if (atomic_load_explicit(&srv->stopping, RELAXED)) {
        stop_watching(self);   /* the socket is shut down: it reads as ready */
        return;
    }
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        if (total_open(self) >= max) {
            /* Every loop stops watching; a slot freed wakes them all. */
            atomic_store(&self->shared->paused, true);
            loop_wake_all(self->loop);
            stop_watching(self);
            return;
        }
        struct sockaddr_storage addr;
        socklen_t len = sizeof addr;
        int fd = accept4(srv->listen_fd, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                pause_accepting(self, errno);
                return;
            }
            if (errno == ECONNABORTED || errno == EINTR)
                continue;   /* that one is gone: the next */
            return;   /* EAGAIN: the backlog is empty (or another loop took it) */
        }
        hand_over(self, least_loaded(self), fd, &addr, len);
    }
}

void acceptor_init(struct accept_loop *a, struct loop *l, struct server *srv)
{
    a->loop = l;
    a->srv = srv;
    a->listen.ready = ready;
    pthread_mutex_init(&a->lock, NULL);
}

int acceptor_start(struct accept_loop *a, struct zb_err *err)
{
    if (watch_listen(a, err) < 0)
        return -1;
    a->listening = true;
    return 0;
}

/* Connections the acceptor handed over: into our daemon (MHD closes the
 * socket itself if it cannot take it). */
static void take_handed(struct accept_loop *a)
{
    pthread_mutex_lock(&a->lock);
    struct handed *h = a->handed;
    size_t n = a->nhanded;
    a->handed = NULL;
    a->nhanded = a->caphanded = 0;
    pthread_mutex_unlock(&a->lock);
    for (size_t i = 0; i < n; i++)
        if (MHD_add_connection(a->mhd, h[i].fd, (const struct sockaddr *)&h[i].addr,
                               h[i].len) != MHD_YES)
            BUMP(a->fig->closed);
    free(h);
}

void acceptor_free(struct accept_loop *a)
{
    for (size_t i = 0; i < a->nhanded; i++)
        close(a->handed[i].fd);
    free(a->handed);
    a->handed = NULL;
    a->nhanded = 0;
    pthread_mutex_destroy(&a->lock);
}

/* On wake: what was handed over taken in; stop for good when stopping;
 * else stop at the limit, and watch again once below it (waking the
 * others to do the same). */
void acceptor_wake(struct accept_loop *a)
{
    struct server *srv = a->srv;
    take_handed(a);
    if (srv->listen_fd < 0)
        return;
    if (atomic_load_explicit(&srv->stopping, RELAXED)) {
        stop_watching(a);
        return;
    }
    if (total_open(a) >= (uint64_t)srv->conf->server.max_connections) {
        atomic_store(&a->shared->paused, true);
        stop_watching(a);
        return;
    }
    if (atomic_exchange(&a->shared->paused, false))
        for (int i = 0; i < a->npeers; i++)
            if (a->peers[i] != a)
                loop_wake(a->peers[i]->loop);
    if (!pausing(a))
        watch_again(a);
}

void acceptor_slot_freed(struct accept_loop *a)
{
    if (atomic_load_explicit(&a->shared->paused, RELAXED))
        loop_wake_all(a->loop);
}
