/* One event-loop thread (see loop.h).
 *
 * One iteration:
 *   1. epoll_wait, no longer than the next deadline or hooks->sleep_ms
 *      (libmicrohttpd's next timeout);
 *   2. each ready fd's watch is called: answers from databases resume the
 *      requests that waited for them, the listening socket accepts...;
 *   3. deadlines, when one is due (a single lower bound, next_check_ns,
 *      kept by everything that sets one; hooks->deadlines computes the
 *      next);
 *   4. hooks->iterated: libmicrohttpd's turn (it reads requests, the
 *      handler starts lookups), then what is batched per iteration
 *      (pipelined writes, SQLite's shared read transactions) goes out.
 * Nothing in a loop blocks, except SQLite's lookups, run inline. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "log.h"
#include "counter.h"
#include "loop.h"

int loop_watch(struct loop *l, int fd, uint32_t events, struct watch *w, struct zb_err *err)
{
    struct epoll_event ev = { .events = events, .data.ptr = w };
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return zb_fail(err, ZB_ERR_SYS, "epoll_ctl: %s", strerror(errno));
    return 0;
}

int loop_rewatch(struct loop *l, int fd, uint32_t events, struct watch *w)
{
    struct epoll_event ev = { .events = events, .data.ptr = w };
    return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void loop_unwatch(struct loop *l, int fd)
{
    epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
}

void loop_wake(struct loop *l)
{
    uint64_t one = 1;
    if (write(l->wakefd, &one, sizeof one) < 0 && errno != EAGAIN)
        srv_log("server: loop %d: cannot wake: %s", l->id, strerror(errno));
}

void loop_wake_all(struct loop *l)
{
    for (int i = 0; i < l->npeers; i++)
        loop_wake(l->peers[i]);
}

void loop_retire(struct loop *l, struct watch *w, void (*release)(struct watch *w))
{
    w->release = release;
    w->next_retired = l->retired;
    l->retired = w;
}

/* Every watch retired so far released (a release may retire more). */
static void release_retired(struct loop *l)
{
    while (l->retired) {
        struct watch *w = l->retired;
        void (*release)(struct watch *) = w->release;
        l->retired = w->next_retired;
        w->release = NULL;
        release(w);
    }
}

/* The wake fd is readable: its count read, hooks->woken runs. */
static void take_wake(struct watch *w, uint32_t events)
{
    (void)events;
    struct loop *l = container_of(w, struct loop, wake);
    uint64_t v;
    if (read(l->wakefd, &v, sizeof v) < 0)
        return;
    l->hooks->woken(l);
    l->next_check_ns = 0;   /* a pool may need topping up, a probe may be due */
}

int loop_init(struct loop *l, int id, struct loop *const *peers, int npeers, const struct loop_hooks *hooks,
              const _Atomic bool *shutdown, bool pin, struct zb_err *err)
{
    l->epfd = l->wakefd = -1;
    l->id = id;
    l->peers = peers;
    l->npeers = npeers;
    l->hooks = hooks;
    l->shutdown = shutdown;
    l->pin = pin;
    l->wake.ready = take_wake;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->epfd < 0 || l->wakefd < 0)
        return zb_fail(err, ZB_ERR_SYS, "loop %d: %s", id, strerror(errno));
    return loop_watch(l, l->wakefd, EPOLLIN, &l->wake, err);
}

/* How long epoll_wait may sleep: until the hooks' limit or our next
 * deadline, whichever comes first. */
static int timeout_ms(struct loop *l)
{
    int64_t ms = l->hooks->sleep_ms(l);
    if (l->next_check_ns != UINT64_MAX) {
        uint64_t now = zb_now_ns();
        int64_t ours = l->next_check_ns <= now ? 0
                                               : (int64_t)((l->next_check_ns - now + 999999) / 1000000);
        if (ours < ms)
            ms = ours;
    }
    return ms > 60000 ? 60000 : (int)ms;
}

static void name_and_pin(struct loop *l)
{
    char name[16];
    snprintf(name, sizeof name, "loop%d", l->id);
    pthread_setname_np(pthread_self(), name);
    atomic_store_explicit(&l->tid, gettid(), RELAXED);
    if (l->pin) {
        cpu_set_t cpus;
        CPU_ZERO(&cpus);
        CPU_SET(l->id % get_nprocs(), &cpus);
        if (pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus))
            srv_log("server: loop %d: cannot pin to a CPU", l->id);
    }
}

/* Before it sleeps, a loop that just had work polls its epoll set for up
 * to spin_ns (no system call sleeps, no wake-up to pay for if the answer
 * it waits for comes within that): the events, or 0. The time spent is
 * counted (spun_ns). */
static int spin(struct loop *l, struct epoll_event *ev, int max)
{
    uint64_t t0 = zb_now_ns(), until = t0 + l->spin_ns, now = t0;
    int n = 0;
    while (n == 0 && now < until && l->next_check_ns > now) {
        n = epoll_wait(l->epfd, ev, max, 0);
        now = zb_now_ns();
    }
    atomic_store_explicit(&l->spun_ns, atomic_load_explicit(&l->spun_ns, RELAXED) + (now - t0),
                          RELAXED);
    return n < 0 ? 0 : n;
}

static void *run(void *arg)
{
    struct loop *l = arg;
    name_and_pin(l);
    struct epoll_event ev[64];
    l->next_check_ns = 0;   /* the first deadlines at once: pools open their min shares */
    bool busy = false;
    while (!atomic_load_explicit(l->shutdown, RELAXED)) {
        int n = busy && l->spin_ns ? spin(l, ev, 64) : 0;
        if (n == 0)
            n = epoll_wait(l->epfd, ev, 64, timeout_ms(l));
        busy = n > 0;
        if (n < 0 && errno != EINTR) {
            srv_log("server: loop %d: epoll_wait: %s", l->id, strerror(errno));
            break;
        }
        atomic_store(&l->turns, atomic_load_explicit(&l->turns, RELAXED) + 1);
        l->now = zb_now_ns();
        for (int i = 0; i < n; i++) {
            struct watch *w = ev[i].data.ptr;
            if (!w->release)   /* else retired earlier in this batch */
                w->ready(w, ev[i].events);
        }
        if (l->now >= l->next_check_ns) {
            l->next_check_ns = UINT64_MAX;
            loop_deadline(l, l->hooks->deadlines(l, l->now));
        }
        l->hooks->iterated(l);
        release_retired(l);
    }
    l->hooks->wind_down(l);
    release_retired(l);
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
    release_retired(l);
    if (l->wakefd >= 0)
        close(l->wakefd);
    if (l->epfd >= 0)
        close(l->epfd);
}
