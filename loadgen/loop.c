/* One event loop per thread, after wrk and redis's ae: edge-triggered
 * epoll, each socket registered once for input only. A request is one
 * send(); EPOLLOUT is armed only when a send could not finish, so the
 * steady state per keep-alive request is send + recv plus a share of one
 * epoll_wait, and no epoll_ctl at all. Edge- rather than level-triggered
 * spares epoll_wait a second poll of every socket it just reported (2-5%
 * of the client's CPU per keep-alive request here, within the noise in
 * req/s); in exchange a socket is read until EAGAIN or EOF (a short read
 * does not mean drained: a FIN that came with the data raises no second
 * edge), and input reported with an event is handled with that event, as
 * it is not reported again. */
#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "loadgen.h"
#include "util.h"

#define EV_BATCH 256
#define RBUF_SIZE (256 * 1024)
#define SCAN_NS 10000000ull           /* timeouts and limits checked each 10 ms */
#define GRACE_NS 1000000000ull        /* in flight at the time limit: 1 s more */
#define CONNECT_BATCH 64              /* new connections per turn of the loop */

enum { S_NEW, S_SEND, S_RECV, S_WAIT, S_DONE };
enum { F_CONNECT, F_SEND, F_RECV, F_TIMEOUT, F_EXCEPT };

struct conn {
    int fd;
    uint8_t state;
    bool registered;           /* fd is in the epoll set */
    bool out_armed;            /* ... with EPOLLOUT */
    bool connected;            /* a send succeeded on this fd */
    bool reused;               /* this fd carried a whole response before */
    bool retried;              /* this request was resent once already */
    uint64_t idx;              /* request number */
    uint64_t t0;               /* latency starts here (intended time under --rate) */
    uint64_t deadline;
    uint64_t next_at;          /* --rate: when the next request is due */
    const char *wstart, *wp;   /* request bytes and what is left to send */
    size_t wlen, wleft;
    char *wbuf;
    char server[128];
    struct resp resp;
};

struct loop {
    struct worker *w;
    struct shared *sh;
    const struct config *cfg;
    struct stats *st;
    int ep;
    struct conn *conns;
    int n, active;
    int unstarted;             /* conns[unstarted..n) have not begun yet */
    uint64_t done;             /* completed + failed, for progress */
    char *rbuf;
    bool no_pwait2;            /* epoll_pwait2 said ENOSYS: ms timeouts only */
};

static void close_fd(struct conn *c)
{
    if (c->fd >= 0)
        close(c->fd);          /* leaves the epoll set by itself */
    c->fd = -1;
    c->registered = c->out_armed = c->connected = c->reused = false;
}

static void bump_progress(struct loop *L)
{
    L->done++;
    atomic_store_explicit(&L->w->progress, L->done, memory_order_relaxed);
}

static void count_fail(struct loop *L, struct conn *c, int kind)
{
    struct stats *s = L->st;
    switch (kind) {
    case F_CONNECT: s->err_connect++; break;
    case F_SEND: s->err_send++; break;
    case F_RECV: s->err_recv++; break;
    case F_TIMEOUT: s->err_timeout++; break;
    default: s->err_except++; break;
    }
    close_fd(c);
    bump_progress(L);
}

static void finish(struct loop *L, struct conn *c)
{
    close_fd(c);
    c->state = S_DONE;
    L->active--;
}

static int set_events(struct loop *L, struct conn *c, bool out)
{
    struct epoll_event ev = { .events = EPOLLIN | EPOLLET | (out ? EPOLLOUT : 0), .data.ptr = c };
    int op = c->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(L->ep, op, c->fd, &ev) < 0)
        return -1;
    c->registered = true;
    c->out_armed = out;
    return 0;
}

static int open_conn(struct loop *L, struct conn *c)
{
    const struct target *t = L->sh->tgt;
    c->fd = socket(t->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -1;
    /* Nagle only holds back data sent while earlier data is unacked. A
     * keep-alive connection gets TCP_NODELAY all the same; a one-request
     * connection sends one write into an empty pipe, where Nagle never
     * waits, so it is spared the syscall (one in seven on that path). */
    if (L->cfg->keepalive) {
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    L->st->connects++;
    /* On loopback the handshake is usually done when connect returns
     * EINPROGRESS, so the request is sent at once without waiting for
     * EPOLLOUT; send says EAGAIN if it was not. */
    if (connect(c->fd, (const struct sockaddr *)&t->addr, t->addrlen) < 0 &&
        errno != EINPROGRESS)
        return -1;
    return 0;
}

/* Sends what is left of the request. 0: all sent or waiting for EPOLLOUT;
 * -1: failed, errno set. */
static int send_more(struct loop *L, struct conn *c)
{
    while (c->wleft) {
        ssize_t k = send(c->fd, c->wp, c->wleft, MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return set_events(L, c, true);
            return -1;
        }
        c->connected = true;
        c->wp += k;
        c->wleft -= (size_t)k;
    }
    c->state = S_RECV;
    if (!c->registered || c->out_armed)
        return set_events(L, c, false);
    return 0;
}

/* A reused keep-alive connection the server had closed before it saw our
 * request: resend once on a new connection, as browsers do, not a failure. */
static bool may_retry(const struct conn *c)
{
    return c->reused && !c->retried && !c->resp.got_any;
}

/* Puts the claimed request on the wire. 0: in flight; -1: failed (counted). */
static int start_io(struct loop *L, struct conn *c)
{
    for (;;) {
        c->state = S_SEND;
        if (c->fd < 0 && open_conn(L, c) < 0) {
            count_fail(L, c, F_CONNECT);
            return -1;
        }
        if (send_more(L, c) == 0)
            return 0;
        int e = errno;
        if (may_retry(c) && (e == EPIPE || e == ECONNRESET)) {
            c->retried = true;
            close_fd(c);
            c->wp = c->wstart;
            c->wleft = c->wlen;
            continue;
        }
        count_fail(L, c, c->connected ? F_SEND : F_CONNECT);
        return -1;
    }
}

/* Hands the connection its next request, or parks it: loops over requests
 * that fail at once, so a refused connect never recurses. */
static void next_request(struct loop *L, struct conn *c, uint64_t now)
{
    struct shared *sh = L->sh;
    const struct config *cfg = L->cfg;
    for (;;) {
        if (atomic_load_explicit(&sh->stop, memory_order_relaxed) ||
            (sh->end_ns && now >= sh->end_ns)) {
            finish(L, c);
            return;
        }
        uint64_t t0 = now;
        if (sh->interval_ns) {
            if (c->next_at > now) {
                c->state = S_WAIT;
                return;
            }
            t0 = c->next_at;
        }
        uint64_t idx = atomic_fetch_add_explicit(&sh->issued, 1, memory_order_relaxed);
        if (idx >= cfg->requests) {
            finish(L, c);
            return;
        }
        if (sh->interval_ns)
            c->next_at += sh->interval_ns;
        c->idx = idx;
        c->t0 = t0;
        c->deadline = now + (uint64_t)(cfg->timeout * 1e9);
        c->retried = false;
        c->wlen = c->wleft = request_for(sh->req, sh->keys, cfg->seed, sh->miss_threshold, idx,
                                         c->wbuf, &c->wstart);
        c->wp = c->wstart;
        resp_reset(&c->resp);
        c->resp.server = NULL;
        if (atomic_load_explicit(&sh->first_state, memory_order_relaxed) == 0) {
            c->resp.server = c->server;
            c->resp.server_len = sizeof c->server;
            c->server[0] = 0;
        }
        if (start_io(L, c) == 0)
            return;
        now = zb_now_ns();
    }
}

static void complete(struct loop *L, struct conn *c, bool extra)
{
    uint64_t now = zb_now_ns();
    struct stats *s = L->st;
    struct resp *r = &c->resp;
    struct shared *sh = L->sh;
    hist_record(&s->lat, now > c->t0 ? now - c->t0 : 0);
    s->completed++;
    s->bytes_total += r->total;
    s->bytes_body += r->body;
    s->last_done_ns = now;
    bool ok = r->status >= 200 && r->status < 300;
    if (!ok)
        s->non2xx++;
    int fs = atomic_load_explicit(&sh->first_state, memory_order_acquire);
    if (fs == 0) {
        int zero = 0;
        if (atomic_compare_exchange_strong(&sh->first_state, &zero, 1)) {
            memcpy(sh->server, c->server, sizeof c->server);
            sh->doc_length = r->body;
            atomic_store_explicit(&sh->first_state, 2, memory_order_release);
        }
    } else if (fs == 2 && ok && r->body != sh->doc_length) {
        s->err_length++;       /* as ab: a body unlike the first one */
    }
    bump_progress(L);
    if (L->cfg->keepalive && !r->close && !extra) {
        s->keepalive_reqs++;
        c->reused = true;
    } else {
        close_fd(c);
    }
    next_request(L, c, now);
}

/* The server closed or reset: a body that runs to EOF ends here; a
 * keep-alive race is retried; anything else lost the response. */
static void on_eof(struct loop *L, struct conn *c, bool reset)
{
    if (!reset && c->resp.got_any && resp_eof(&c->resp) == R_DONE) {
        close_fd(c);
        complete(L, c, false);
        return;
    }
    if (may_retry(c)) {
        c->retried = true;
        close_fd(c);
        c->wp = c->wstart;
        c->wleft = c->wlen;
        resp_reset(&c->resp);
        if (start_io(L, c) == 0)
            return;
    } else {
        count_fail(L, c, F_RECV);
    }
    next_request(L, c, zb_now_ns());
}

static void on_readable(struct loop *L, struct conn *c)
{
    for (;;) {
        ssize_t k = recv(c->fd, L->rbuf, RBUF_SIZE, 0);
        if (k > 0) {
            if (c->state == S_WAIT) {          /* bytes nobody asked for */
                close_fd(c);
                return;
            }
            size_t used;
            int rc = resp_feed(&c->resp, L->rbuf, (size_t)k, &used);
            if (rc == R_DONE) {
                complete(L, c, used < (size_t)k);
                return;
            }
            if (rc == R_ERROR) {
                count_fail(L, c, F_EXCEPT);
                next_request(L, c, zb_now_ns());
                return;
            }
            continue;                          /* until EAGAIN: a FIN may follow */
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno == EAGAIN)
            return;
        if (c->state == S_WAIT) {              /* an idle keep-alive closed by the server */
            close_fd(c);
            return;
        }
        on_eof(L, c, k < 0);
        return;
    }
}

/* Timeouts, the time limit's grace and SIGINT, every SCAN_NS. */
static void scan(struct loop *L, uint64_t now)
{
    struct shared *sh = L->sh;
    bool abandon = atomic_load_explicit(&sh->stop, memory_order_relaxed) ||
                   (sh->end_ns && now >= sh->end_ns + GRACE_NS);
    for (int i = 0; i < L->unstarted; i++) {
        struct conn *c = &L->conns[i];
        if (c->state == S_DONE)
            continue;
        if (c->state == S_WAIT) {
            if (abandon || (sh->end_ns && now >= sh->end_ns))
                finish(L, c);
            continue;
        }
        if (abandon) {
            L->st->abandoned++;
            finish(L, c);
        } else if (now >= c->deadline) {
            count_fail(L, c, F_TIMEOUT);
            next_request(L, c, now);
        }
    }
}

/* Starts the next CONNECT_BATCH connections. Between two batches the loop
 * reads what the first ones got back: with -c in the thousands, making
 * every connect before the first epoll_wait left the answers unread (in
 * CLOSE-WAIT) and timed every request from before the last connect. */
static void start_batch(struct loop *L)
{
    uint64_t now = zb_now_ns();
    for (int k = 0; k < CONNECT_BATCH && L->unstarted < L->n; k++)
        next_request(L, &L->conns[L->unstarted++], now);
}

/* --rate: starts the parked connections that are due; returns the earliest
 * time still to wait for, or UINT64_MAX. */
static uint64_t wake_due(struct loop *L, uint64_t now)
{
    uint64_t next = UINT64_MAX;
    for (int i = 0; i < L->unstarted; i++) {
        struct conn *c = &L->conns[i];
        if (c->state != S_WAIT)
            continue;
        if (c->next_at <= now)
            next_request(L, c, now);
        if (c->state == S_WAIT && c->next_at < next)
            next = c->next_at;
    }
    return next;
}

static int wait_events(struct loop *L, struct epoll_event *ev, uint64_t now, uint64_t wake)
{
    uint64_t limit = now + SCAN_NS;
    if (wake < limit) {
        uint64_t d = wake > now ? wake - now : 0;
        struct timespec ts = { (time_t)(d / 1000000000u), (long)(d % 1000000000u) };
        if (!L->no_pwait2) {
            int n = epoll_pwait2(L->ep, ev, EV_BATCH, &ts, NULL);
            if (n >= 0 || errno != ENOSYS)
                return n;
            L->no_pwait2 = true;       /* kernel before 5.11, or valgrind */
        }
        return epoll_wait(L->ep, ev, EV_BATCH, (int)((d + 999999) / 1000000));
    }
    return epoll_wait(L->ep, ev, EV_BATCH, (int)(SCAN_NS / 1000000));
}

void *worker_run(void *arg)
{
    struct worker *w = arg;
    struct shared *sh = w->sh;
    struct loop L = { .w = w, .sh = sh, .cfg = sh->cfg, .st = &w->st, .n = w->nconns };
    L.ep = epoll_create1(EPOLL_CLOEXEC);
    L.conns = calloc((size_t)L.n, sizeof *L.conns);
    L.rbuf = malloc(RBUF_SIZE);
    char *wbufs = malloc((size_t)L.n * (sh->req->maxlen + 1));
    struct epoll_event *ev = malloc(EV_BATCH * sizeof *ev);
    bool ok = L.ep >= 0 && L.conns && L.rbuf && wbufs && ev;
    pthread_barrier_wait(&sh->ready);
    pthread_barrier_wait(&sh->go);
    if (!ok) {
        /* No loop, no requests: the others take them all. */
        free(L.conns);
        free(L.rbuf);
        free(wbufs);
        free(ev);
        if (L.ep >= 0)
            close(L.ep);
        return NULL;
    }
    uint64_t now = zb_now_ns();
    for (int i = 0; i < L.n; i++) {
        struct conn *c = &L.conns[i];
        c->fd = -1;
        c->state = S_NEW;
        c->wbuf = wbufs + (size_t)i * (sh->req->maxlen + 1);
        /* --rate: the connections' sends interleave evenly from the start. */
        if (sh->interval_ns)
            c->next_at = sh->start_ns + (uint64_t)(w->first_conn + i) * sh->interval_ns /
                                            (uint64_t)sh->cfg->concurrency;
        L.active++;
    }
    uint64_t next_scan = now + SCAN_NS, wake = UINT64_MAX;
    while (L.active > 0) {
        if (L.unstarted < L.n) {
            start_batch(&L);
            now = zb_now_ns();
            if (sh->interval_ns)
                wake = wake_due(&L, now);
        }
        /* Connections still to start: only look at what is ready now. */
        int n = wait_events(&L, ev, now, L.unstarted < L.n ? now : wake);
        for (int i = 0; i < n; i++) {
            struct conn *c = ev[i].data.ptr;
            if (c->fd < 0)
                continue;
            if (c->state == S_SEND && (ev[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
                if (send_more(&L, c) < 0) {
                    int e = errno;
                    if (may_retry(c) && (e == EPIPE || e == ECONNRESET)) {
                        on_eof(&L, c, true);
                    } else {
                        count_fail(&L, c, c->connected ? F_SEND : F_CONNECT);
                        next_request(&L, c, zb_now_ns());
                    }
                    continue;
                }
                /* Sent: a response (or close) that came with this edge
                 * is read now; still sending: the next edge carries it. */
                if (c->state != S_RECV || !(ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
                    continue;
            }
            if (ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                on_readable(&L, c);
        }
        now = zb_now_ns();
        if (sh->interval_ns)
            wake = wake_due(&L, now);
        if (now >= next_scan) {
            scan(&L, now);
            next_scan = now + SCAN_NS;
        }
    }
    for (int i = 0; i < L.n; i++)
        close_fd(&L.conns[i]);
    close(L.ep);
    free(L.conns);
    free(L.rbuf);
    free(wbufs);
    free(ev);
    return NULL;
}
