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
 * it is not reported again.
 *
 * A connection's states:
 *   S_NEW        not started yet: connections start CONNECT_BATCH at a time
 *   S_HANDSHAKE  TLS handshake under way (https only)
 *   S_SEND       request (and -p/-u body) being written
 *   S_RECV       waiting for, or reading, the response
 *   S_WAIT       --rate: parked until its next request is due
 *   S_DONE       no more requests for it
 * Every request is timed as ab times it: start, connected (TLS: after
 * the handshake), request written, first byte read, done. */
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#include "loadgen.h"
#include "util.h"

#define EV_BATCH 256
#define RBUF_SIZE (256 * 1024)
#define SCAN_NS 10000000ull           /* timeouts and limits checked each 10 ms */
#define GRACE_NS 1000000000ull        /* in flight at the time limit: 1 s more */
#define CONNECT_BATCH 64              /* new connections per turn of the loop */

enum { S_NEW, S_HANDSHAKE, S_SEND, S_RECV, S_WAIT, S_DONE };
enum { F_CONNECT, F_SEND, F_RECV, F_TIMEOUT, F_EXCEPT };

struct conn {
    int fd;
    uint8_t state;
    bool registered;           /* fd is in the epoll set */
    bool out_armed;            /* ... with EPOLLOUT */
    bool connected;            /* a send succeeded (TLS: handshake done) */
    bool reused;               /* this fd carried a whole response before */
    bool retried;              /* this request was resent once already */
    bool want_out;             /* TLS wants the socket writable */
    bool opened_once;          /* this slot had a connection open (stats' slots_opened) */
    void *ssl;                 /* https: the TLS client on fd */
    uint64_t idx;              /* request number */
    uint64_t t0;               /* latency starts here (intended time under --rate) */
    uint64_t t_start, t_conn, t_sent, t_first;   /* ab's moments */
    uint64_t t_open;           /* connect() of the connection now on fd */
    uint64_t deadline;
    uint64_t next_at;          /* --rate: when the next request is due */
    const char *wstart;        /* the request head */
    size_t wlen, wdone;        /* its length; bytes of head + body sent */
    char *wbuf;
    char server[128];
    char *ledger_body;         /* --ledger: the body of a POST's answer */
    const struct request *rq;  /* this request's bytes (--mix: its template's) */
    int tmpl;                  /* --mix: its template */
    bool head, post;           /* its method is HEAD / POST */
    struct resp resp;
};

struct loop {
    struct worker *w;
    struct shared *sh;
    const struct config *cfg;
    struct stats *st;
    struct tls_ctx *tls;
    int ep;
    struct conn *conns;
    int n, active;
    int unstarted;             /* conns[unstarted..n) have not begun yet */
    uint64_t done;             /* completed + failed, for progress */
    uint64_t timeout_ns;
    char *rbuf;
    bool no_pwait2;            /* epoll_pwait2 said ENOSYS: ms timeouts only */
    bool ledger_posts;         /* --ledger and the requests are POSTs */
    struct ledger_buf lb;      /* --ledger: this thread's lines not yet written */
    struct interval iv;        /* this thread's share of the current interval */
    uint64_t iv_idx, iv_end;
};

/* The time series: an event at now belongs to interval (now - start) /
 * interval; leaving one hands this thread's share to the series. */
static void iv_at(struct loop *L, uint64_t now)
{
    if (now < L->iv_end)
        return;
    struct series *s = &L->sh->series;
    series_flush(s, L->w->id, L->iv_idx, &L->iv);
    L->iv_idx = (now - s->start_ns) / s->interval_ns;
    L->iv_end = s->start_ns + (L->iv_idx + 1) * s->interval_ns;
    series_thread_at(s, L->w->id, L->iv_idx);
}

static void close_fd(struct conn *c)
{
    if (c->ssl) {
        tls_close(c->ssl);
        c->ssl = NULL;
    }
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

/* One failed request, of kind; a connect's failure is told by errno. */
static void count_fail(struct loop *L, struct conn *c, int kind)
{
    struct stats *s = L->st;
    int e = errno;
    switch (kind) {
    case F_CONNECT:
        s->err_connect++;
        s->connect_errno[e > 0 && e < LG_ERRNOS ? e : 0]++;
        break;
    case F_SEND: s->err_send++; break;
    case F_RECV: s->err_recv++; break;
    case F_TIMEOUT: s->err_timeout++; break;
    default: s->err_except++; break;
    }
    uint64_t now = zb_now_ns();
    if (L->w->tmpl)
        L->w->tmpl[c->tmpl].failed++;
    iv_at(L, now);
    L->iv.failed++;
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
    const struct config *cfg = L->cfg;
    const struct sockaddr_storage *a = &t->addr[t->chosen];
    c->fd = socket(a->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -1;
    /* Nagle only holds back data sent while earlier data is unacked. A
     * keep-alive connection gets TCP_NODELAY all the same; a one-request
     * connection sends one write into an empty pipe, where Nagle never
     * waits, so it is spared the syscall (one in seven on that path). A
     * body (-p/-u) or TLS writes more than once: those get it too. */
    if (cfg->keepalive || t->tls || cfg->body_file) {
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (cfg->window) {
        setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &cfg->window, sizeof cfg->window);
        setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &cfg->window, sizeof cfg->window);
    }
    if (t->locallen && bind(c->fd, (const struct sockaddr *)&t->local, t->locallen) < 0)
        return -1;
    L->st->connects++;
    c->t_open = zb_now_ns();
    /* On loopback the handshake is usually done when connect returns
     * EINPROGRESS, so the request is sent at once without waiting for
     * EPOLLOUT; send says EAGAIN if it was not. */
    if (connect(c->fd, (const struct sockaddr *)a, t->addrlen[t->chosen]) < 0 &&
        errno != EINPROGRESS)
        return -1;
    if (L->tls && !(c->ssl = tls_open(L->tls, c->fd))) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* c's connection is open (TLS: its handshake done) at c->t_conn: how long
 * it took, and for the slot's first, when (the ramp of the run). */
static void opened(struct loop *L, struct conn *c)
{
    c->connected = true;
    hist_record(&L->st->open, c->t_conn - c->t_open);
    if (!c->opened_once) {
        c->opened_once = true;
        L->st->slots_opened++;
        uint64_t at = c->t_conn > L->sh->start_ns ? c->t_conn - L->sh->start_ns : 0;
        if (at > L->st->last_open_ns)
            L->st->last_open_ns = at;
    }
}

/* One send of what is left: the head, then the shared body. */
static ssize_t send_some(struct conn *c)
{
    const struct request *rq = c->rq;
    struct iovec iov[2];
    int n = 0;
    if (c->wdone < c->wlen)
        iov[n++] = (struct iovec){ (char *)c->wstart + c->wdone, c->wlen - c->wdone };
    size_t bdone = c->wdone > c->wlen ? c->wdone - c->wlen : 0;
    if (rq->body_len > bdone)
        iov[n++] = (struct iovec){ (char *)rq->body + bdone, rq->body_len - bdone };
    if (c->ssl)
        return tls_send(c->ssl, iov[0].iov_base, iov[0].iov_len, &c->want_out);
    if (n == 1)
        return send(c->fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL);
    struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
    return sendmsg(c->fd, &m, MSG_NOSIGNAL);
}

/* Sends what is left of the request. 0: all sent or waiting for the
 * socket; -1: failed, errno set. */
static int send_more(struct loop *L, struct conn *c)
{
    size_t total = c->wlen + c->rq->body_len;
    c->want_out = true;
    while (c->wdone < total) {
        if (!c->connected)
            c->t_conn = zb_now_ns();   /* ab: connected, writing starts */
        ssize_t k = send_some(c);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return c->registered && c->out_armed == c->want_out ? 0
                                                                    : set_events(L, c, c->want_out);
            return -1;
        }
        if (!c->connected)
            opened(L, c);
        c->wdone += (size_t)k;
        L->st->bytes_sent += (uint64_t)k;
    }
    c->t_sent = zb_now_ns();
    c->state = S_RECV;
    if (!c->registered || c->out_armed)
        return set_events(L, c, false);
    return 0;
}

/* The first handshake of the run names protocol and cipher for the report. */
static void note_tls(struct loop *L, struct conn *c)
{
    struct shared *sh = L->sh;
    int zero = 0;
    if (atomic_load_explicit(&sh->tls_state, memory_order_relaxed) == 0 &&
        atomic_compare_exchange_strong(&sh->tls_state, &zero, 1)) {
        tls_describe(c->ssl, sh->tls_info, sizeof sh->tls_info, sh->tls_tmpkey,
                     sizeof sh->tls_tmpkey);
        atomic_store(&sh->tls_state, 2);
    }
}

/* Moves the TLS handshake on; once done, the request goes out. 0: under
 * way or sent; -1: failed, errno set. */
static int handshake(struct loop *L, struct conn *c)
{
    c->state = S_HANDSHAKE;
    bool want_out = false;
    int rc = tls_handshake(c->ssl, &want_out);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return c->registered && c->out_armed == want_out ? 0 : set_events(L, c, want_out);
    L->st->handshakes++;
    L->st->resumed += tls_resumed(c->ssl);
    note_tls(L, c);
    c->t_conn = zb_now_ns();
    opened(L, c);
    c->state = S_SEND;
    return send_more(L, c);
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
        if (c->connected)
            c->t_conn = c->t_start;    /* keep-alive: no connect time, as ab */
        if ((c->ssl && !c->connected ? handshake(L, c) : send_more(L, c)) == 0)
            return 0;
        int e = errno;
        if (may_retry(c) && (e == EPIPE || e == ECONNRESET)) {
            c->retried = true;
            close_fd(c);
            c->wdone = 0;
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
        c->t_start = now;
        c->t_first = 0;
        c->deadline = now + L->timeout_ns;
        c->retried = false;
        if (sh->mix) {
            c->tmpl = mix_pick(sh->mix, cfg->seed, idx);
            c->rq = &sh->reqs[c->tmpl];
            c->head = !strcmp(sh->mix->t[c->tmpl].method, "HEAD");
            c->post = !strcmp(sh->mix->t[c->tmpl].method, "POST");
        }
        c->resp.cap = c->post ? c->ledger_body : NULL;
        c->wlen = request_for(c->rq, sh->keys, cfg->seed, sh->miss_threshold, idx, c->wbuf,
                              &c->wstart);
        c->wdone = 0;
        resp_reset(&c->resp, c->head);
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

static void log_status(const struct config *cfg, unsigned status)
{
    if (status < 200 || status >= 300)
        printf("WARNING: Response code not 2xx (%u)\n", status);
    else if (cfg->verbosity >= 3)
        printf("LOG: Response code = %u\n", status);
}

static void record(struct loop *L, struct conn *c, uint64_t now)
{
    struct stats *s = L->st;
    uint64_t first = c->t_first ? c->t_first : now;
    hist_record(&s->lat, now - c->t0);
    hist_record(&s->total, now - c->t_start);
    hist_record(&s->connect, c->t_conn - c->t_start);
    hist_record(&s->processing, now - c->t_conn);
    hist_record(&s->waiting, first > c->t_sent ? first - c->t_sent : 0);
    iv_at(L, now);
    L->iv.completed++;
    hist_record(&L->iv.lat, now - c->t0);
    struct worker *w = L->w;
    if (L->cfg->gnuplot) {
        if (w->nsamples == w->samples_cap) {
            size_t cap = w->samples_cap ? w->samples_cap * 2 : 4096;
            struct sample *p = realloc(w->samples, cap * sizeof *p);
            if (!p)
                return;                /* -g loses rows, the report none */
            w->samples = p;
            w->samples_cap = cap;
        }
        w->samples[w->nsamples++] = (struct sample){
            .start_ns = c->t_start + (uint64_t)L->sh->realtime_offset_ns,
            .connect_us = (uint32_t)((c->t_conn - c->t_start) / 1000),
            .total_us = (uint32_t)((now - c->t_start) / 1000),
            .wait_us = (uint32_t)((first > c->t_sent ? first - c->t_sent : 0) / 1000),
        };
    }
}

static void complete(struct loop *L, struct conn *c, uint64_t now, bool extra)
{
    struct stats *s = L->st;
    struct resp *r = &c->resp;
    struct shared *sh = L->sh;
    record(L, c, now);
    s->completed++;
    s->bytes_total += r->total;
    s->bytes_body += r->body;
    s->last_done_ns = now;
    bool ok = r->status >= 200 && r->status < 300;
    if (L->w->tmpl) {
        struct tmpl_stats *ts = &L->w->tmpl[c->tmpl];
        ts->count++;
        ts->ok += ok;
        ts->non2xx += !ok;
        hist_record(&ts->lat, now - c->t0);
    }
    if (!ok) {
        s->non2xx++;
        if (r->status == 404)
            s->status_404++;
        else if (r->status == 503)
            s->status_503++;
        else if (r->status >= 400 && r->status < 500)
            s->status_4xx++;
        else if (r->status >= 500 && r->status < 600)
            s->status_5xx++;
        else
            s->status_other++;
    }
    if (L->cfg->verbosity >= 2)
        log_status(L->cfg, r->status);
    int fs = atomic_load_explicit(&sh->first_state, memory_order_acquire);
    if (fs == 0) {
        int zero = 0;
        if (atomic_compare_exchange_strong(&sh->first_state, &zero, 1)) {
            memcpy(sh->server, c->server, sizeof c->server);
            sh->doc_length = r->body;
            atomic_store_explicit(&sh->first_state, 2, memory_order_release);
        }
    } else if (fs == 2 && ok && r->body != sh->doc_length && !L->cfg->variable_length) {
        s->err_length++;       /* as ab: a body unlike the first one */
    }
    if (ok && r->cap) {
        /* An acknowledged write: its line, or a count that says it is missing. */
        if (!r->cap_over && ledger_add(&L->lb, r->cap, r->cap_len) == 0)
            s->ledger_lines++;
        else
            s->ledger_lost++;
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
        complete(L, c, zb_now_ns(), false);
        return;
    }
    if (may_retry(c)) {
        c->retried = true;
        close_fd(c);
        c->wdone = 0;
        resp_reset(&c->resp, c->head);
        if (start_io(L, c) == 0)
            return;
    } else {
        count_fail(L, c, F_RECV);
    }
    next_request(L, c, zb_now_ns());
}

static ssize_t recv_some(struct loop *L, struct conn *c)
{
    if (c->ssl)
        return tls_recv(c->ssl, L->rbuf, RBUF_SIZE, &c->want_out);
    return recv(c->fd, L->rbuf, RBUF_SIZE, 0);
}

static void on_readable(struct loop *L, struct conn *c)
{
    for (;;) {
        ssize_t k = recv_some(L, c);
        if (k > 0) {
            if (c->state == S_WAIT) {          /* bytes nobody asked for */
                close_fd(c);
                return;
            }
            uint64_t now = zb_now_ns();
            if (!c->t_first) {
                c->t_first = now;
                if (L->cfg->verbosity >= 2)
                    printf("LOG: header received:\n%.*s\n", (int)k, L->rbuf);
            }
            size_t used;
            int rc = resp_feed(&c->resp, L->rbuf, (size_t)k, &used);
            if (rc == R_DONE) {
                complete(L, c, now, used < (size_t)k);
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
        if (k < 0 && errno == EAGAIN) {
            if (c->ssl && c->want_out != c->out_armed)
                set_events(L, c, c->want_out);
            return;
        }
        if (c->state == S_WAIT) {              /* an idle keep-alive closed by the server */
            close_fd(c);
            return;
        }
        on_eof(L, c, k < 0);
        return;
    }
}

/* Whatever an event reports, the connection's state says what to do. */
static void on_event(struct loop *L, struct conn *c, uint32_t events)
{
    if (c->state == S_HANDSHAKE || c->state == S_SEND) {
        int rc = c->state == S_HANDSHAKE ? handshake(L, c) : send_more(L, c);
        if (rc < 0) {
            int e = errno;
            if (may_retry(c) && (e == EPIPE || e == ECONNRESET)) {
                on_eof(L, c, true);
            } else {
                count_fail(L, c, c->connected ? F_SEND : F_CONNECT);
                next_request(L, c, zb_now_ns());
            }
            return;
        }
        /* Sent: a response (or close) that came with this edge is read
         * now; still sending: the next edge carries it. */
        if (c->state != S_RECV || !(events & (EPOLLIN | EPOLLERR | EPOLLHUP) || c->ssl))
            return;
    }
    if (c->state == S_RECV || c->state == S_WAIT)
        on_readable(L, c);
}

/* Timeouts, the time limit's grace and SIGINT, every SCAN_NS. */
static void scan(struct loop *L, uint64_t now)
{
    struct shared *sh = L->sh;
    bool abandon = atomic_load_explicit(&sh->stop, memory_order_relaxed) ||
                   (sh->end_ns && now >= sh->end_ns + GRACE_NS);
    iv_at(L, now);                 /* an idle thread still closes its interval */
    if (L->lb.len)
        ledger_flush(&L->lb);      /* the ledger trails the answers by 10 ms at most */
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

/* The lines still buffered, counted lost when the file refuses them. */
static void ledger_end(struct loop *L)
{
    if (L->lb.len && ledger_flush(&L->lb) < 0)
        for (size_t i = 0; i < L->lb.len; i++)
            L->st->ledger_lost += L->lb.buf[i] == '\n';
    if (L->lb.err)
        zb_fail(&L->w->err, ZB_ERR_SYS, "--ledger: cannot write: %s", strerror(L->lb.err));
}

static void loop_free(struct loop *L, char *wbufs, struct epoll_event *ev)
{
    for (int i = 0; L->conns && i < L->n; i++) {
        close_fd(&L->conns[i]);
        free(L->conns[i].ledger_body);
    }
    free(L->lb.buf);
    if (L->ep >= 0)
        close(L->ep);
    tls_ctx_free(L->tls);
    free(L->conns);
    free(L->rbuf);
    free(wbufs);
    free(ev);
}

void *worker_run(void *arg)
{
    struct worker *w = arg;
    struct shared *sh = w->sh;
    const struct config *cfg = sh->cfg;
    struct loop L = { .w = w, .sh = sh, .cfg = cfg, .st = &w->st, .n = w->nconns,
                      .timeout_ns = (uint64_t)(cfg->timeout * 1e9) };
    L.ep = epoll_create1(EPOLL_CLOEXEC);
    L.conns = calloc((size_t)L.n, sizeof *L.conns);
    L.rbuf = malloc(RBUF_SIZE);
    size_t maxlen = sh->req->maxlen;
    for (int i = 0; sh->mix && i < sh->mix->n; i++)
        if (sh->reqs[i].maxlen > maxlen)
            maxlen = sh->reqs[i].maxlen;
    char *wbufs = malloc((size_t)L.n * (maxlen + 1));
    struct epoll_event *ev = malloc(EV_BATCH * sizeof *ev);
    bool ok = L.ep >= 0 && L.conns && L.rbuf && wbufs && ev;
    L.lb.fd = sh->ledger_fd;
    L.ledger_posts = sh->ledger_fd >= 0 && !strcmp(cfg->method, "POST");
    bool mix_posts = false;
    for (int i = 0; sh->mix && i < sh->mix->n; i++)
        mix_posts = mix_posts || !strcmp(sh->mix->t[i].method, "POST");
    L.ledger_posts = L.ledger_posts || (sh->ledger_fd >= 0 && mix_posts);
    if (ok && L.ledger_posts) {
        ok = (L.lb.buf = malloc(LEDGER_BUF)) != NULL;
        for (int i = 0; ok && i < L.n; i++)
            ok = (L.conns[i].ledger_body = malloc(LEDGER_BODY_MAX)) != NULL;
    }
    if (ok && sh->tgt->tls) {
        L.tls = tls_ctx_new(cfg, sh->sni, sh->tgt->host, &w->err);
        ok = L.tls != NULL;
    } else if (!ok) {
        zb_fail(&w->err, ZB_ERR_SYS, "out of memory");
    }
    w->setup_failed = !ok;
    hist_init(&L.iv.lat);
    pthread_barrier_wait(&sh->ready);
    pthread_barrier_wait(&sh->go);
    if (!ok) {
        /* No loop, no requests: the others take them all. */
        series_thread_at(&sh->series, w->id, UINT64_MAX);
        loop_free(&L, wbufs, ev);
        return NULL;
    }
    uint64_t now = zb_now_ns();
    L.iv_end = sh->start_ns + sh->series.interval_ns;
    for (int i = 0; i < L.n; i++) {
        struct conn *c = &L.conns[i];
        c->fd = -1;
        c->state = S_NEW;
        c->wbuf = wbufs + (size_t)i * (maxlen + 1);
        c->resp.cap_size = LEDGER_BODY_MAX;
        c->rq = sh->req;
        c->head = cfg->head;
        c->post = L.ledger_posts;
        /* --rate: the connections' sends interleave evenly from the start. */
        if (sh->interval_ns)
            c->next_at = sh->start_ns + (uint64_t)(w->first_conn + i) * sh->interval_ns /
                                            (uint64_t)cfg->concurrency;
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
            if (c->fd >= 0)
                on_event(&L, c, ev[i].events);
        }
        now = zb_now_ns();
        if (sh->interval_ns)
            wake = wake_due(&L, now);
        if (now >= next_scan) {
            scan(&L, now);
            next_scan = now + SCAN_NS;
        }
    }
    ledger_end(&L);
    series_flush(&sh->series, w->id, L.iv_idx, &L.iv);
    series_thread_at(&sh->series, w->id, UINT64_MAX);
    loop_free(&L, wbufs, ev);
    return NULL;
}
