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

static uint64_t load_of(struct loop *l)
{
    return atomic_load_explicit(&l->assigned, RELAXED) - READ(l->closed);
}

static struct loop *least_loaded(struct server *srv, struct loop *self)
{
    unsigned start = atomic_fetch_add_explicit(&srv->accept_rr, 1, RELAXED);
    struct loop *best = self;
    uint64_t best_load = UINT64_MAX;
    for (int k = 0; k < srv->nloops; k++) {
        struct loop *l = &srv->loops[(start + (unsigned)k) % (unsigned)srv->nloops];
        uint64_t load = load_of(l);
        if (load < best_load) {
            best = l;
            best_load = load;
        }
    }
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
    atomic_fetch_add_explicit(&l->assigned, 1, RELAXED);
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
            atomic_fetch_sub_explicit(&l->assigned, 1, RELAXED);
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

static void stop_watching(struct loop *l)
{
    if (l->listening) {
        loop_unwatch(l, l->srv->listen_fd);
        l->listening = false;
    }
}

static int watch_listen(struct loop *l, struct zb_err *err)
{
    /* EPOLLEXCLUSIVE: one loop is woken per new connection. */
    return loop_watch(l, l->srv->listen_fd, EPOLLIN | EPOLLEXCLUSIVE, &l->listen, err);
}

static void watch_again(struct loop *l)
{
    struct zb_err err;
    if (l->listening)
        return;
    if (watch_listen(l, &err) < 0)
        srv_log("server: %s", err.msg);
    else
        l->listening = true;
}

/* accept() failed with err (out of fds or memory): this loop stops
 * watching until the pause is over; logged once per ACCEPT_LOG_MS. */
static void pause_accepting(struct loop *l, int err)
{
    struct server *srv = l->srv;
    uint64_t now = zb_now_ns(), resume = now + ACCEPT_PAUSE_MS * 1000000ull;
    uint64_t failures = atomic_fetch_add(&srv->accept_pause.failures, 1) + 1;
    uint64_t logged = atomic_load(&srv->accept_pause.logged_ns);
    if ((!logged || now - logged >= ACCEPT_LOG_MS * 1000000ull) &&
        atomic_compare_exchange_strong(&srv->accept_pause.logged_ns, &logged, now)) {
        atomic_fetch_sub(&srv->accept_pause.failures, failures);
        srv_log("server: accept: %s: not accepting for %d ms (%llu time%s since the "
                "last such line; raise the fd limit or lower max_connections)", strerror(err),
                ACCEPT_PAUSE_MS, (unsigned long long)failures, failures == 1 ? "" : "s");
    }
    atomic_store(&srv->accept_pause.resume_ns, resume);
    stop_watching(l);
    loop_deadline(l, resume);
}

/* Within a pause: not before its end, which is made this loop's
 * deadline. */
static bool pausing(struct loop *l)
{
    uint64_t resume = atomic_load(&l->srv->accept_pause.resume_ns);
    if (!resume || zb_now_ns() >= resume)
        return false;
    loop_deadline(l, resume);
    return true;
}

uint64_t acceptor_deadlines(struct loop *l, uint64_t now)
{
    uint64_t resume = atomic_load(&l->srv->accept_pause.resume_ns);
    if (!resume || l->listening)
        return 0;
    if (now < resume)
        return resume;
    acceptor_wake(l);   /* over: watch again, unless stopping or at the limit */
    return 0;
}

/* The listening socket is readable: accept a batch. */
static void ready(struct watch *w, uint32_t events)
{
    (void)events;
    struct loop *l = container_of(w, struct loop, listen);
    struct server *srv = l->srv;
    uint64_t max = (uint64_t)srv->conf->server.max_connections;
    if (atomic_load_explicit(&srv->stopping, RELAXED)) {
        stop_watching(l);   /* the socket is shut down: it reads as ready */
        return;
    }
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        if (total_open(srv) >= max) {
            /* Every loop stops watching; a slot freed wakes them all. */
            atomic_store(&srv->accept_paused, true);
            loop_wake_all(l);
            stop_watching(l);
            return;
        }
        struct sockaddr_storage a;
        socklen_t len = sizeof a;
        int fd = accept4(srv->listen_fd, (struct sockaddr *)&a, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                pause_accepting(l, errno);
                return;
            }
            if (errno == ECONNABORTED || errno == EINTR)
                continue;   /* that one is gone: the next */
            return;   /* EAGAIN: the backlog is empty (or another loop took it) */
        }
        hand_over(l, least_loaded(srv, l), fd, &a, len);
    }
}

int acceptor_start(struct loop *l, struct zb_err *err)
{
    l->listen.ready = ready;
    if (watch_listen(l, err) < 0)
        return -1;
    l->listening = true;
    return 0;
}

/* Connections the acceptor handed over: into our daemon (MHD closes the
 * socket itself if it cannot take it). */
static void take_handed(struct loop *l)
{
    pthread_mutex_lock(&l->lock);
    struct handed *h = l->handed;
    size_t n = l->nhanded;
    l->handed = NULL;
    l->nhanded = l->caphanded = 0;
    pthread_mutex_unlock(&l->lock);
    for (size_t i = 0; i < n; i++)
        if (MHD_add_connection(l->mhd, h[i].fd, (const struct sockaddr *)&h[i].addr,
                               h[i].len) != MHD_YES)
            BUMP(l->closed);
    free(h);
}

void acceptor_free(struct loop *l)
{
    for (size_t i = 0; i < l->nhanded; i++)
        close(l->handed[i].fd);
    free(l->handed);
    l->handed = NULL;
    l->nhanded = 0;
}

/* On wake: what was handed over taken in; stop for good when stopping;
 * else stop at the limit, and watch again once below it (waking the
 * others to do the same). */
void acceptor_wake(struct loop *l)
{
    struct server *srv = l->srv;
    take_handed(l);
    if (srv->listen_fd < 0)
        return;
    if (atomic_load_explicit(&srv->stopping, RELAXED)) {
        stop_watching(l);
        return;
    }
    if (total_open(srv) >= (uint64_t)srv->conf->server.max_connections) {
        atomic_store(&srv->accept_paused, true);
        stop_watching(l);
        return;
    }
    if (atomic_exchange(&srv->accept_paused, false))
        for (int i = 0; i < srv->nloops; i++)
            if (&srv->loops[i] != l)
                loop_wake(&srv->loops[i]);
    if (!pausing(l))
        watch_again(l);
}

void acceptor_slot_freed(struct server *srv)
{
    if (atomic_load_explicit(&srv->accept_paused, RELAXED) && srv->nloops)
        loop_wake_all(&srv->loops[0]);
}
