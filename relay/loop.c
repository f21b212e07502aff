/* One relay thread: an epoll loop over its listeners, the two sockets of
 * each relayed connection (a link) and one timerfd.
 *
 * Every delay is the same (a chunk: RTT/2; a new link: RTT), so the order
 * in which things become due is the order in which they arrived: two FIFOs
 * (chunks in flight, links on hold) stand in for a timer heap, and the
 * timerfd is armed for the earlier of their heads.
 *
 * A chunk read from one side waits in the "in flight" FIFO until due, then
 * joins its direction's ready queue, which is written out in order; a
 * direction with more than HIGH_WATER bytes not yet written stops reading
 * its source until it is under LOW_WATER. A side that ends (recv 0) sends
 * an end marker down the same way, so the other side is shut for writing
 * only after the data before it. An error on either side closes both. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "relay.h"
#include "util.h"

#define HIGH_WATER (1u << 20)
#define LOW_WATER (256u << 10)
#define READ_BYTES (64u << 10)
#define READS_PER_EVENT 16        /* then let the other sockets have a turn */

struct link;

/* What one read returned, on its way to the other side. */
struct chunk {
    struct chunk *next;           /* in the in-flight FIFO, then in the ready queue */
    struct dir *dir;              /* the direction it travels */
    uint64_t due_ns;              /* when it may be written */
    size_t len, off;              /* bytes, and how many of them are written */
    bool end;                     /* no data: the source has ended */
    char data[];
};

/* One direction of a link: from one socket to the other. */
struct dir {
    struct link *link;
    int from, to;                 /* link->fd[] indexes */
    struct chunk *head, *tail;    /* due, not yet (wholly) written */
    size_t queued;                /* bytes read and not yet written */
    bool reading;                 /* wants EPOLLIN on its source */
    bool blocked;                 /* a write hit EAGAIN: wants EPOLLOUT */
    bool ended;                   /* its source returned end of stream */
    bool shut;                    /* the end reached the other side */
};

/* What an epoll event points at. */
struct endpoint {
    enum { EP_LISTENER, EP_SOCKET, EP_TIMER } kind;
    struct link *link;            /* EP_SOCKET */
    int side;                     /* EP_SOCKET: 0 client, 1 target; EP_LISTENER: route */
};

enum link_state {
    HOLDING,                      /* accepted, held one RTT before connecting on */
    CONNECTING,                   /* connect to the target under way */
    OPEN,
};

/* A relayed connection: the accepted client socket and the target's. */
struct link {
    int fd[2];                    /* 0: client, 1: target (-1 until connecting) */
    struct endpoint ep[2];
    uint32_t events[2];           /* registered with epoll (0: not registered) */
    struct dir d[2];              /* d[0]: client -> target, d[1]: target -> client */
    enum link_state state;
    int route;
    uint64_t hold_until_ns;
    struct link *next_held;       /* the hold FIFO */
    int in_flight;                /* its chunks still in the in-flight FIFO */
    bool closed;                  /* sockets closed; freed once in_flight is 0 */
    struct link *next_dead;       /* the loop's list of links to free */
};

struct loop {
    const struct relay_loop_args *a;
    int epfd, timerfd;
    uint64_t armed_ns;            /* what the timerfd is set to (0: disarmed) */
    struct chunk *flight_head, *flight_tail;
    struct link *held_head, *held_tail;
    struct link *dead;            /* closed links, freed after the event batch
                                   * (a later event of it may still be there) */
    struct endpoint listeners[RELAY_MAX_ROUTES], timer;
    char buf[READ_BYTES];
};

static void close_link(struct loop *L, struct link *l);

/* A closed link whose chunks have all left the in-flight FIFO. */
static void bury(struct loop *L, struct link *l)
{
    l->next_dead = L->dead;
    L->dead = l;
}

static void free_dead(struct loop *L)
{
    while (L->dead) {
        struct link *l = L->dead;
        L->dead = l->next_dead;
        for (int i = 0; i < 2; i++)
            while (l->d[i].head) {
                struct chunk *c = l->d[i].head;
                l->d[i].head = c->next;
                free(c);
            }
        free(l);
    }
}

/* The epoll interest of side s: read while its direction reads, write
 * while the direction into it is blocked (or, for the target, until its
 * connect completes). A socket that wants nothing is taken out of the set,
 * so a hang-up cannot spin a level-triggered loop. */
static int update_events(struct loop *L, struct link *l, int s)
{
    if (l->fd[s] < 0)
        return 0;
    uint32_t want = 0;
    if (l->d[s].reading)
        want |= EPOLLIN;
    if (l->d[1 - s].blocked || (s == 1 && l->state == CONNECTING))
        want |= EPOLLOUT;
    if (want == l->events[s])
        return 0;
    struct epoll_event ev = { .events = want, .data.ptr = &l->ep[s] };
    int op = !want ? EPOLL_CTL_DEL : l->events[s] ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    l->events[s] = want;
    return epoll_ctl(L->epfd, op, l->fd[s], &ev);
}

static void arm_timer(struct loop *L)
{
    uint64_t next = 0;
    if (L->flight_head)
        next = L->flight_head->due_ns;
    if (L->held_head && (!next || L->held_head->hold_until_ns < next))
        next = L->held_head->hold_until_ns;
    if (next == L->armed_ns)
        return;
    L->armed_ns = next;
    struct itimerspec its = { 0 };
    its.it_value.tv_sec = (time_t)(next / 1000000000u);
    its.it_value.tv_nsec = (long)(next % 1000000000u);
    if (!next)
        its.it_value.tv_nsec = 0;   /* all zero: disarm */
    timerfd_settime(L->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void count_sent(struct loop *L, const struct dir *d, size_t n)
{
    atomic_fetch_add_explicit(d->from == 0 ? &L->a->counts->bytes_up : &L->a->counts->bytes_down,
                              (uint64_t)n, memory_order_relaxed);
}

/* Writes d's ready chunks in order until done or the socket is full.
 * -1: the link failed (closed by the caller). */
static int flush_dir(struct loop *L, struct dir *d)
{
    struct link *l = d->link;
    while (d->head) {
        struct chunk *c = d->head;
        if (c->end) {
            shutdown(l->fd[d->to], SHUT_WR);
            d->shut = true;
        } else {
            ssize_t w = send(l->fd[d->to], c->data + c->off, c->len - c->off, MSG_NOSIGNAL);
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                d->blocked = true;
                return update_events(L, l, d->to);
            }
            if (w < 0)
                return -1;
            c->off += (size_t)w;
            d->queued -= (size_t)w;
            count_sent(L, d, (size_t)w);
            if (c->off < c->len) {
                d->blocked = true;
                return update_events(L, l, d->to);
            }
        }
        d->head = c->next;
        if (!d->head)
            d->tail = NULL;
        free(c);
    }
    d->blocked = false;
    if (!d->ended && !d->reading && d->queued <= LOW_WATER)
        d->reading = true;
    if (update_events(L, l, d->to) < 0 || update_events(L, l, d->from) < 0)
        return -1;
    if (l->d[0].shut && l->d[1].shut)
        close_link(L, l);   /* both ends delivered: done */
    return 0;
}

/* Appends c to the queue head..tail (a direction's ready chunks, or the
 * chunks in flight). */
static void append(struct chunk **head, struct chunk **tail, struct chunk *c)
{
    c->next = NULL;
    if (*tail)
        (*tail)->next = c;
    else
        *head = c;
    *tail = c;
}

/* n bytes of L->buf (n 0: the end marker) read from d's source. Without
 * delay they go out at once, and only what the socket does not take is
 * copied; with one, a copy waits in the in-flight FIFO. */
static int enqueue(struct loop *L, struct dir *d, size_t n)
{
    size_t off = 0;
    if (!L->a->half_ns && n && !d->head) {
        ssize_t w = send(d->link->fd[d->to], L->buf, n, MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        if (w > 0) {
            off = (size_t)w;
            count_sent(L, d, off);
        }
        if (off == n)
            return 0;
    }
    struct chunk *c = malloc(sizeof *c + (n - off));
    if (!c)
        return -1;
    memcpy(c->data, L->buf + off, n - off);
    c->dir = d;
    c->len = n - off;
    c->off = 0;
    c->end = n == 0;
    d->queued += c->len;
    if (!L->a->half_ns) {
        append(&d->head, &d->tail, c);
        return flush_dir(L, d);
    }
    c->due_ns = zb_now_ns() + L->a->half_ns;
    append(&L->flight_head, &L->flight_tail, c);
    d->link->in_flight++;
    arm_timer(L);
    return 0;
}

/* Reads side s (direction d[s]) until it has nothing more for now. */
static int read_side(struct loop *L, struct link *l, int s)
{
    struct dir *d = &l->d[s];
    for (int i = 0; i < READS_PER_EVENT && d->reading; i++) {
        ssize_t n = recv(l->fd[s], L->buf, sizeof L->buf, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0)
            return -1;
        if (n == 0) {
            d->ended = true;
            d->reading = false;
        } else if (d->queued + (size_t)n > HIGH_WATER) {
            d->reading = false;        /* until flush_dir drains it */
        }
        if (enqueue(L, d, (size_t)n) < 0)
            return -1;
        if (l->closed)
            return 0;
    }
    return update_events(L, l, s);
}

static void close_link(struct loop *L, struct link *l)
{
    if (l->closed)
        return;
    for (int s = 0; s < 2; s++)
        if (l->fd[s] >= 0) {
            close(l->fd[s]);           /* also takes it out of the epoll set */
            l->fd[s] = -1;
        }
    l->closed = true;
    if (!l->in_flight)
        bury(L, l);
}

static int set_nodelay(int fd)
{
    int on = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

static void start_connect(struct loop *L, struct link *l)
{
    const struct relay_route *r = &L->a->routes[l->route];
    l->state = CONNECTING;
    l->fd[1] = socket(r->target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->fd[1] < 0 || set_nodelay(l->fd[1]) < 0 ||
        (connect(l->fd[1], (const struct sockaddr *)&r->target, r->target_len) < 0 &&
         errno != EINPROGRESS) ||
        update_events(L, l, 1) < 0) {
        atomic_fetch_add_explicit(&L->a->counts->failed, 1, memory_order_relaxed);
        close_link(L, l);
    }
}

static void connected(struct loop *L, struct link *l)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(l->fd[1], SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
        atomic_fetch_add_explicit(&L->a->counts->failed, 1, memory_order_relaxed);
        close_link(L, l);
        return;
    }
    l->state = OPEN;
    l->d[0].reading = l->d[1].reading = true;
    if (update_events(L, l, 0) < 0 || update_events(L, l, 1) < 0)
        close_link(L, l);
}

static void accept_on(struct loop *L, int route)
{
    for (int i = 0; i < READS_PER_EVENT; i++) {
        int fd = accept4(L->a->listen_fds[route], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;   /* EAGAIN, or a client gone before we took it */
        struct link *l = calloc(1, sizeof *l);
        if (!l) {
            close(fd);
            return;
        }
        atomic_fetch_add_explicit(&L->a->counts->accepted, 1, memory_order_relaxed);
        set_nodelay(fd);
        l->fd[0] = fd;
        l->fd[1] = -1;
        l->route = route;
        for (int s = 0; s < 2; s++) {
            l->ep[s] = (struct endpoint){ EP_SOCKET, l, s };
            l->d[s] = (struct dir){ .link = l, .from = s, .to = 1 - s };
        }
        if (!L->a->setup_ns) {
            start_connect(L, l);
            continue;
        }
        l->state = HOLDING;
        l->hold_until_ns = zb_now_ns() + L->a->setup_ns;
        if (L->held_tail)
            L->held_tail->next_held = l;
        else
            L->held_head = l;
        L->held_tail = l;
        arm_timer(L);
    }
}

/* Whatever has come due: held links connect, chunks join their ready queue. */
static void on_timer(struct loop *L)
{
    uint64_t expirations;
    if (read(L->timerfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
        return;
    L->armed_ns = 0;
    uint64_t now = zb_now_ns();
    while (L->held_head && L->held_head->hold_until_ns <= now) {
        struct link *l = L->held_head;
        L->held_head = l->next_held;
        if (!L->held_head)
            L->held_tail = NULL;
        start_connect(L, l);
    }
    while (L->flight_head && L->flight_head->due_ns <= now) {
        struct chunk *c = L->flight_head;
        L->flight_head = c->next;
        if (!L->flight_head)
            L->flight_tail = NULL;
        struct link *l = c->dir->link;
        l->in_flight--;
        if (l->closed) {
            free(c);
            if (!l->in_flight)
                bury(L, l);
            continue;
        }
        struct dir *d = c->dir;
        append(&d->head, &d->tail, c);
        if (!d->blocked && flush_dir(L, d) < 0)
            close_link(L, l);
    }
    arm_timer(L);
}

static void on_socket(struct loop *L, struct link *l, int s, uint32_t ev)
{
    if (l->state == CONNECTING) {
        if (s == 1 && (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            connected(L, l);
        return;
    }
    /* A hang-up or an error shows on the next recv or send: a socket is
     * registered only while it reads or waits to write (update_events). */
    if (ev & (EPOLLHUP | EPOLLERR))
        ev |= EPOLLIN | EPOLLOUT;
    if ((ev & EPOLLOUT) && l->d[1 - s].blocked && flush_dir(L, &l->d[1 - s]) < 0)
        close_link(L, l);
    if (!l->closed && (ev & EPOLLIN) && l->d[s].reading && read_side(L, l, s) < 0)
        close_link(L, l);
}

void *relay_loop(void *args)
{
    /* Timers fire within the default 50 us slack otherwise: a tenth of the
     * 0.2 ms RTT the lab asks for. */
    prctl(PR_SET_TIMERSLACK, 1UL);
    static _Thread_local struct loop L;
    L.a = args;
    L.epfd = epoll_create1(EPOLL_CLOEXEC);
    L.timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (L.epfd < 0 || L.timerfd < 0) {
        perror("relay: epoll/timerfd");
        return NULL;
    }
    L.timer.kind = EP_TIMER;
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &L.timer };
    epoll_ctl(L.epfd, EPOLL_CTL_ADD, L.timerfd, &ev);
    for (int r = 0; r < L.a->nroutes; r++) {
        L.listeners[r] = (struct endpoint){ EP_LISTENER, NULL, r };
        ev.data.ptr = &L.listeners[r];
        if (epoll_ctl(L.epfd, EPOLL_CTL_ADD, L.a->listen_fds[r], &ev) < 0) {
            perror("relay: epoll_ctl");
            return NULL;
        }
    }
    struct epoll_event events[256];
    for (;;) {
        int n = epoll_wait(L.epfd, events, 256, -1);
        if (n < 0 && errno != EINTR) {
            perror("relay: epoll_wait");
            return NULL;
        }
        for (int i = 0; i < n; i++) {
            struct endpoint *e = events[i].data.ptr;
            if (e->kind == EP_TIMER)
                on_timer(&L);
            else if (e->kind == EP_LISTENER)
                accept_on(&L, e->side);
            else if (!e->link->closed)
                on_socket(&L, e->link, e->side, events[i].events);
        }
        free_dead(&L);
    }
}
