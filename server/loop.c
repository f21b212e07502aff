/* One event-loop thread.
 *
 * Each loop owns an epoll set holding:
 *   - its libmicrohttpd daemon's epoll fd (MHD_USE_EPOLL, no thread of its
 *     own, no listening socket): readable when one of the daemon's client
 *     connections has something to do;
 *   - its wake fd, an eventfd: the acceptor handed it connections, or main
 *     asks it to stop;
 *   - in loop 0, the listening socket (accept.c).
 * One iteration: wait, handle what is ready, then MHD_run so the daemon
 * reads, answers and writes. Everything a connection does happens on the
 * loop that took it. */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "server.h"

/* What an epoll event's data.ptr points to: the first member of each
 * watched thing says what it is. */
enum watch_kind { W_MHD, W_WAKE, W_LISTEN };
static const enum watch_kind watch_mhd = W_MHD, watch_wake = W_WAKE, watch_listen = W_LISTEN;

static int watch(int epfd, int fd, const enum watch_kind *kind, struct zb_err *err)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = (void *)kind };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return zb_fail(err, ZB_ERR_SYS, "epoll_ctl: %s", strerror(errno));
    return 0;
}

int loop_init(struct loop *l, struct server *srv, int id, struct zb_err *err)
{
    memset(l, 0, sizeof *l);
    l->srv = srv;
    l->id = id;
    l->epfd = l->wakefd = -1;
    l->rng = zb_now_ns() ^ ((uint64_t)id << 56) ^ 0x5a17;
    pthread_mutex_init(&l->lock, NULL);
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->epfd < 0 || l->wakefd < 0)
        return zb_fail(err, ZB_ERR_SYS, "loop %d: %s", id, strerror(errno));
    if (!(l->mhd = http_daemon(l, err)))
        return -1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(l->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    if (!info)
        return zb_fail(err, ZB_ERR_SYS, "loop %d: libmicrohttpd has no epoll fd", id);
    if (watch(l->epfd, info->epoll_fd, &watch_mhd, err) < 0 ||
        watch(l->epfd, l->wakefd, &watch_wake, err) < 0)
        return -1;
    return 0;
}

void loop_wake(struct loop *l)
{
    uint64_t one = 1;
    if (write(l->wakefd, &one, sizeof one) < 0 && errno != EAGAIN)
        fprintf(stderr, "server: loop %d: cannot wake: %s\n", l->id, strerror(errno));
}

/* Connections the acceptor handed over: into our daemon. MHD closes the
 * socket itself if it cannot take it. */
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

/* How long epoll_wait may sleep: until libmicrohttpd's next timeout. */
static int next_timeout_ms(struct loop *l)
{
    MHD_UNSIGNED_LONG_LONG ms;
    if (MHD_get_timeout(l->mhd, &ms) != MHD_YES)
        return -1;
    return ms > 60000 ? 60000 : (int)ms;
}

static void *run(void *arg)
{
    struct loop *l = arg;
    struct server *srv = l->srv;
    char name[16];
    snprintf(name, sizeof name, "loop%d", l->id);
    pthread_setname_np(pthread_self(), name);
    struct epoll_event ev[64];
    while (!atomic_load_explicit(&srv->shutdown, RELAXED)) {
        int n = epoll_wait(l->epfd, ev, 64, next_timeout_ms(l));
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "server: loop %d: epoll_wait: %s\n", l->id, strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            const enum watch_kind *kind = ev[i].data.ptr;
            switch (*kind) {
            case W_MHD:
                break;
            case W_WAKE: {
                uint64_t v;
                if (read(l->wakefd, &v, sizeof v) < 0 && errno != EAGAIN)
                    break;
                take_handed(l);
                if (l->id == 0 && atomic_load_explicit(&srv->stopping, RELAXED))
                    acceptor_stop(l);
                else if (l->id == 0)
                    acceptor_resume(l);
                break;
            }
            case W_LISTEN:
                acceptor_ready(l);
                break;
            }
        }
        MHD_run(l->mhd);
    }
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
    free(l->jb.p);
    if (l->wakefd >= 0)
        close(l->wakefd);
    if (l->epfd >= 0)
        close(l->epfd);
    pthread_mutex_destroy(&l->lock);
}

/* For accept.c: watch the listening socket in this loop. */
int loop_watch_listen(struct loop *l, int fd, struct zb_err *err)
{
    return watch(l->epfd, fd, &watch_listen, err);
}

void loop_unwatch(struct loop *l, int fd)
{
    epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
}
