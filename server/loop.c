/* One event-loop thread.
 *
 * Each loop owns an epoll set holding:
 *   - its libmicrohttpd daemon's epoll fd (MHD_USE_EPOLL, no thread of its
 *     own, no listening socket): readable when one of the daemon's client
 *     connections has something to do;
 *   - its wake fd, an eventfd: another loop handed it a connection, a key
 *     set came in, another loop needs pool budget, or main asks it to stop;
 *   - its database sockets (dbconn.c);
 *   - the listening socket, shared by every loop (accept.c).
 *
 * One iteration:
 *   1. epoll_wait, no longer than libmicrohttpd's next timeout or our next
 *      deadline;
 *   2. handle what is ready: answers from databases resume the requests
 *      that waited for them;
 *   3. deadlines, when one is due (a single lower bound, next_check_ns,
 *      kept by everything that sets one; the check computes the next);
 *   4. MHD_run: libmicrohttpd reads requests, calls the handler (which
 *      starts lookups and suspends the requests), answers the resumed ones;
 *   5. flush the pipelined connections: everything step 4 sent goes out in
 *      one write per connection.
 * Nothing in a loop blocks, except SQLite's lookups, run inline. */
#include <errno.h>
#include <sched.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "server.h"

static const enum watch_kind watch_mhd = W_MHD, watch_wake = W_WAKE, watch_listen = W_LISTEN;

int loop_watch(struct loop *l, int fd, uint32_t events, void *what, struct zb_err *err)
{
    struct epoll_event ev = { .events = events, .data.ptr = what };
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return zb_fail(err, ZB_ERR_SYS, "epoll_ctl: %s", strerror(errno));
    return 0;
}

int loop_rewatch(struct loop *l, int fd, uint32_t events, void *what)
{
    struct epoll_event ev = { .events = events, .data.ptr = what };
    return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void loop_unwatch(struct loop *l, int fd)
{
    epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
}

static void lb_init(struct lb *lb, struct loop *l, struct srv_backend *sb)
{
    const struct backend_conf *bc = &sb->conf;
    int n = l->srv->conf->server.threads, i = l->id;
    memset(lb, 0, sizeof *lb);
    lb->loop = l;
    lb->sb = sb;
    APR_RING_INIT(&lb->idle, dbconn, link);
    APR_RING_INIT(&lb->busy, dbconn, link);
    APR_RING_INIT(&lb->opening, dbconn, link);
    APR_RING_INIT(&lb->perreq, dbconn, link);
    APR_RING_INIT(&lb->waiting, lookup, link);
    APR_RING_INIT(&lb->pipe_waiting, lookup, link);
    /* pool_min and pool_soft_max split over the loops, the first ones
     * taking the remainder. */
    lb->min_share = bc->pool_min / n + (i < bc->pool_min % n);
    lb->soft_share = bc->pool_soft_max / n + (i < bc->pool_soft_max % n);
    lb->pipe_target = bc->pipeline_connections > 0 ? bc->pipeline_connections : 1;
    if (lb->pipe_target > (int)(sizeof lb->pipe / sizeof lb->pipe[0]))
        lb->pipe_target = (int)(sizeof lb->pipe / sizeof lb->pipe[0]);
    hist_init(&lb->st.latency);
}

int loop_init(struct loop *l, struct server *srv, int id, struct zb_err *err)
{
    memset(l, 0, sizeof *l);
    l->srv = srv;
    l->id = id;
    l->epfd = l->wakefd = -1;
    l->rng = zb_now_ns() ^ ((uint64_t)id << 56) ^ 0x5a17;
    http_loop_init(l);
    for (int i = 0; i < srv->nserved; i++)
        lb_init(&l->lb[i], l, srv->served[i]);
    pthread_mutex_init(&l->lock, NULL);
    APR_RING_INIT(&l->given, dbconn, link);
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->epfd < 0 || l->wakefd < 0)
        return zb_fail(err, ZB_ERR_SYS, "loop %d: %s", id, strerror(errno));
    if (!(l->mhd = http_daemon(l, err)))
        return -1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(l->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    if (!info)
        return zb_fail(err, ZB_ERR_SYS, "loop %d: libmicrohttpd has no epoll fd", id);
    if (loop_watch(l, info->epoll_fd, EPOLLIN, (void *)&watch_mhd, err) < 0 ||
        loop_watch(l, l->wakefd, EPOLLIN, (void *)&watch_wake, err) < 0)
        return -1;
    return 0;
}

void loop_wake(struct loop *l)
{
    uint64_t one = 1;
    if (write(l->wakefd, &one, sizeof one) < 0 && errno != EAGAIN)
        fprintf(stderr, "server: loop %d: cannot wake: %s\n", l->id, strerror(errno));
}

void loop_wake_all(struct server *srv)
{
    for (int i = 0; i < srv->nloops; i++)
        loop_wake(&srv->loops[i]);
}

void loop_flush_later(struct loop *l, struct dbconn *dc)
{
    if (l->nflush < (int)(sizeof l->to_flush / sizeof l->to_flush[0]))
        l->to_flush[l->nflush++] = dc;
    else
        dbconn_flush(dc);   /* more pipelines than slots: write this one now */
}

void loop_give(struct loop *l, struct dbconn *dc)
{
    pthread_mutex_lock(&l->lock);
    APR_RING_INSERT_TAIL(&l->given, dc, dbconn, link);
    pthread_mutex_unlock(&l->lock);
    loop_wake(l);
}

/* Connections the acceptor handed over: into our daemon (MHD closes the
 * socket itself if it cannot take it). Database connections other loops
 * gave: into our pools. */
static void take_handed(struct loop *l)
{
    for (;;) {
        pthread_mutex_lock(&l->lock);
        struct dbconn *dc = APR_RING_EMPTY(&l->given, dbconn, link) ? NULL : APR_RING_FIRST(&l->given);
        if (dc)
            APR_RING_REMOVE(dc, link);
        pthread_mutex_unlock(&l->lock);
        if (!dc)
            break;
        pool_adopt(l, dc);
    }
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

static void woken(struct loop *l)
{
    uint64_t v;
    if (read(l->wakefd, &v, sizeof v) < 0)
        return;
    take_handed(l);
    acceptor_wake(l);
    http_keys_changed(l);
    for (int i = 0; i < l->srv->nserved; i++)
        pool_donate(&l->lb[i]);
    l->next_check_ns = 0;   /* a pool may need topping up, a probe may be due */
}

/* Every deadline that has passed: lookups waiting too long, connects and
 * queries that took too long, pools to top up or trim, headers too slow.
 * Returns when the next one is due. */
static uint64_t check_deadlines(struct loop *l)
{
    uint64_t next = UINT64_MAX;
#define SOONER(t) do { uint64_t t_ = (t); if (t_ && t_ < next) next = t_; } while (0)
    for (int i = 0; i < l->srv->nserved; i++) {
        struct lb *lb = &l->lb[i];
        if (!lb->sb->drv->async)
            continue;
        SOONER(pool_deadlines(lb, l->now));
        SOONER(pipe_deadlines(lb, l->now));
        uint64_t dnext = 0;
        struct dbconn *dc = APR_RING_FIRST(&lb->perreq), *nx;
        for (; dc != APR_RING_SENTINEL(&lb->perreq, dbconn, link); dc = nx) {
            nx = APR_RING_NEXT(dc, link);
            if (dbconn_expired(dc, l->now, &dnext))
                return l->now;   /* the list changed: look again at once */
        }
        SOONER(dnext);
    }
    SOONER(http_header_deadlines(l, l->now));
    SOONER(acceptor_deadlines(l, l->now));
    return next;
#undef SOONER
}

/* How long epoll_wait may sleep: until libmicrohttpd's next timeout or
 * our next deadline, whichever comes first. */
static int timeout_ms(struct loop *l)
{
    MHD_UNSIGNED_LONG_LONG mhd;
    int64_t ms = MHD_get_timeout(l->mhd, &mhd) == MHD_YES ? (int64_t)mhd : 60000;
    if (l->next_check_ns != UINT64_MAX) {
        uint64_t now = zb_now_ns();
        int64_t ours = l->next_check_ns <= now ? 0
                                               : (int64_t)((l->next_check_ns - now + 999999) / 1000000);
        if (ours < ms)
            ms = ours;
    }
    return ms > 60000 ? 60000 : (int)ms;
}

/* Shutdown: every lookup still waiting or sent fails with 503, its request
 * is resumed, and libmicrohttpd gets a few turns to write the answers. */
static void wind_down(struct loop *l)
{
    struct zb_err err;
    zb_fail(&err, ZB_ERR_CONN, "the server is stopping");
    for (int i = 0; i < l->srv->nserved; i++) {
        struct lb *lb = &l->lb[i];
        struct conn_list *lists[] = { &lb->busy, &lb->opening, &lb->perreq, &lb->idle };
        for (int k = 0; k < 4; k++)
            while (!APR_RING_EMPTY(lists[k], dbconn, link))
                dbconn_fail(APR_RING_FIRST(lists[k]), &err);
        while (lb->npipes)
            dbconn_fail(lb->pipe[0], &err);
        while (!APR_RING_EMPTY(&lb->waiting, lookup, link)) {
            struct lookup *lk = APR_RING_FIRST(&lb->waiting);
            APR_RING_REMOVE(lk, link);
            lb->nwaiting--;
            lookup_finish(lk, LOOKUP_UNAVAILABLE, &err);
        }
        while (!APR_RING_EMPTY(&lb->pipe_waiting, lookup, link)) {
            struct lookup *lk = APR_RING_FIRST(&lb->pipe_waiting);
            APR_RING_REMOVE(lk, link);
            lookup_finish(lk, LOOKUP_UNAVAILABLE, &err);
        }
    }
    http_wind_down(l);
    for (int i = 0; i < 3; i++)
        MHD_run(l->mhd);
    inline_commit(l);
    for (int i = 0; i < l->srv->nserved; i++) {
        inline_close(&l->lb[i], l->lb[i].inline_idle);
        l->lb[i].inline_idle = NULL;
    }
}

static void *run(void *arg)
{
    struct loop *l = arg;
    struct server *srv = l->srv;
    char name[16];
    snprintf(name, sizeof name, "loop%d", l->id);
    pthread_setname_np(pthread_self(), name);
    atomic_store_explicit(&l->tid, gettid(), RELAXED);
    if (srv->conf->server.pin) {
        cpu_set_t cpus;
        CPU_ZERO(&cpus);
        CPU_SET(l->id % get_nprocs(), &cpus);
        if (pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus))
            fprintf(stderr, "server: loop %d: cannot pin to a CPU\n", l->id);
    }
    struct epoll_event ev[64];
    l->next_check_ns = 0;   /* open the pools' min shares */
    while (!atomic_load_explicit(&srv->shutdown, RELAXED)) {
        int n = epoll_wait(l->epfd, ev, 64, timeout_ms(l));
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "server: loop %d: epoll_wait: %s\n", l->id, strerror(errno));
            break;
        }
        l->now = zb_now_ns();
        for (int i = 0; i < n; i++) {
            const enum watch_kind *kind = ev[i].data.ptr;
            switch (*kind) {
            case W_MHD: break;
            case W_WAKE: woken(l); break;
            case W_LISTEN: acceptor_ready(l); break;
            case W_DB: dbconn_ready(ev[i].data.ptr, ev[i].events); break;
            case W_DB_SET_ASIDE: break;   /* closed or given away earlier in this batch */
            }
        }
        if (l->now >= l->next_check_ns) {
            l->next_check_ns = UINT64_MAX;
            uint64_t next = check_deadlines(l);
            loop_deadline(l, next);
        }
        MHD_run(l->mhd);
        while (l->nflush)
            dbconn_flush(l->to_flush[--l->nflush]);
        inline_commit(l);
        dbconn_settle(l);
    }
    wind_down(l);
    dbconn_settle(l);
    return NULL;
}

int loop_start(struct loop *l, struct zb_err *err)
{
    int rc = pthread_create(&l->thread, NULL, run, l);
    if (rc)
        return zb_fail(err, ZB_ERR_SYS, "loop %d: pthread_create: %s", l->id, strerror(rc));
    return 0;
}

void loop_join(struct loop *l)
{
    pthread_join(l->thread, NULL);
}

void loop_destroy(struct loop *l)
{
    if (l->mhd)
        MHD_stop_daemon(l->mhd);
    for (size_t i = 0; i < l->nhanded; i++)
        close(l->handed[i].fd);
    free(l->handed);
    while (!APR_RING_EMPTY(&l->given, dbconn, link)) {   /* given as the loops stopped */
        struct dbconn *dc = APR_RING_FIRST(&l->given);
        APR_RING_REMOVE(dc, link);
        dc->lb = &l->lb[dc->lb->sb->index];   /* ours now: freed with ours */
        dbconn_close(dc);
    }
    dbconn_settle(l);
    http_loop_free(l);
    if (l->wakefd >= 0)
        close(l->wakefd);
    if (l->epfd >= 0)
        close(l->epfd);
    pthread_mutex_destroy(&l->lock);
}

/* For accept.c: watch the listening socket in this loop; one loop is
 * woken per new connection. */
int loop_watch_listen(struct loop *l, int fd, struct zb_err *err)
{
    return loop_watch(l, fd, EPOLLIN | EPOLLEXCLUSIVE, (void *)&watch_listen, err);
}
