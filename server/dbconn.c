/* One asynchronous database connection of a loop.
 *
 * States:
 *   DC_CONNECTING  connect_step() each time the socket is ready, until the
 *                  driver says it is connected; bounded by connect_timeout_s.
 *   DC_PREPARING   pooled and pipelined connections prepare the lookup once
 *                  (pipelined ones enter pipeline mode first); per-lookup
 *                  ones skip this, their lookup is a one-shot query.
 *   DC_READY       lookups are sent and answered in order; the oldest one
 *                  sent is bounded by query_timeout_ms.
 * The socket stays in the loop's epoll set, level-triggered, for reading
 * (so an idle connection the database closes is noticed at once), and for
 * writing only while the driver has output it could not write.
 *
 * The connection reports to its strategy through the pointer it holds:
 * conn_ready when it is ready or has answered everything sent,
 * conn_failed when it is lost; the strategy answers the lookups and
 * closes it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "dbconn.h"

static const struct backend_async *async_of(const struct dbconn *dc)
{
    return dc->lb->sb->drv->async;
}

/* Watches the driver's socket for wants (ZB_WANT_*). */
static int set_watch(struct dbconn *dc, int wants, struct zb_err *err)
{
    struct loop *l = dc->lb->loop;
    int fd = async_of(dc)->socket(dc->db);
    uint32_t events = (wants & ZB_WANT_READ ? EPOLLIN : 0) | (wants & ZB_WANT_WRITE ? EPOLLOUT : 0);
    if (fd < 0)
        return zb_fail(err, ZB_ERR_CONN, "%s: no socket", dc->lb->sb->label);
    /* While connecting, libpq may close the socket of a host that failed
     * and open the next host's, which often gets the same number: the
     * closed one left the epoll set, so the same number is watched anew. */
    if (fd == dc->fd && events == dc->events && dc->state != DC_CONNECTING)
        return 0;
    if (fd != dc->fd && dc->fd >= 0)
        loop_unwatch(l, dc->fd);   /* libpq moved to another address's socket */
    if ((fd != dc->fd || loop_rewatch(l, fd, events, &dc->w) < 0) &&
        loop_watch(l, fd, events, &dc->w, err) < 0)
        return -1;
    dc->fd = fd;
    dc->events = events;
    return 0;
}

static void ready(struct watch *w, uint32_t events);

struct dbconn *dbconn_open(struct lb *lb, const struct strategy *st, struct zb_err *err)
{
    struct dbconn *dc = calloc(1, sizeof *dc);
    if (!dc) {
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        return NULL;
    }
    dc->w.ready = ready;
    dc->lb = lb;
    dc->st = st;
    dc->fd = -1;
    dc->gen = atomic_load(&lb->sb->gen);
    dc->since_ns = lb->loop->now;
    APR_RING_INIT(&dc->sent, lookup, link);
    int wants = async_of(dc)->connect_start(&lb->sb->conf, &dc->db, err);
    /* Connected at once: carry on when the socket says it is writable,
     * so the strategy hears of it from the loop, not from here. */
    dc->state = wants == 0 ? DC_PREPARING : DC_CONNECTING;
    if (wants < 0 || set_watch(dc, wants == 0 ? ZB_WANT_WRITE : wants, err) < 0) {
        BUMP(lb->st.connect_failures);
        if (dc->db)
            lb->sb->drv->close(dc->db);
        free(dc);
        return NULL;
    }
    loop_deadline(lb->loop, dbconn_deadline(dc));
    return dc;
}

/* How long a connect may take: a per-request one waits as PHP would. */
static int connect_limit_s(const struct dbconn *dc)
{
    const struct backend_conf *bc = &dc->lb->sb->conf;
    return dc->st->per_lookup ? bc->per_request_connect_timeout_s : bc->connect_timeout_s;
}

uint64_t dbconn_deadline(const struct dbconn *dc)
{
    const struct backend_conf *bc = &dc->lb->sb->conf;
    if (dc->state != DC_READY)
        return dc->since_ns + (uint64_t)connect_limit_s(dc) * 1000000000u;
    if (dc->nsent == 0 || bc->query_timeout_ms <= 0)
        return 0;
    return APR_RING_FIRST(&dc->sent)->since_ns + (uint64_t)bc->query_timeout_ms * 1000000u;
}

bool dbconn_expired(struct dbconn *dc, uint64_t now, uint64_t *next)
{
    const struct backend_conf *bc = &dc->lb->sb->conf;
    uint64_t d = dbconn_deadline(dc);
    if (!d || d > now) {
        if (d && (!*next || d < *next))
            *next = d;
        return false;
    }
    struct zb_err err;
    if (dc->state != DC_READY)
        zb_fail(&err, ZB_ERR_TIMEOUT, "%s: cannot connect: no answer within %d s", bc->name,
                connect_limit_s(dc));
    else
        zb_fail(&err, ZB_ERR_TIMEOUT, "%s: no answer within %d ms", bc->name,
                bc->query_timeout_ms);
    dbconn_fail(dc, &err);
    return true;
}

/* A connection closed or given away earlier in this batch: its events are
 * ignored. */
static void set_aside(struct watch *w, uint32_t events)
{
    (void)w, (void)events;
}

/* Closed, but freed only by dbconn_settle: this iteration's epoll batch
 * may still hold an event pointing at it, and a lookup that ends may close
 * another connection than its own. */
static void forget(struct dbconn *dc)
{
    struct loop *l = dc->lb->loop;
    for (int i = 0; i < l->nflush; i++)
        if (l->to_flush[i] == dc)
            l->to_flush[i] = l->to_flush[--l->nflush];
    if (dc->fd >= 0)
        loop_unwatch(l, dc->fd);
    dc->lb->sb->drv->close(dc->db);
    dc->db = NULL;
    dc->w.ready = set_aside;
    dc->next_aside = l->closed_aside;
    l->closed_aside = dc;
}

void dbconn_close(struct dbconn *dc)
{
    forget(dc);
}

void dbconn_leave(struct dbconn *dc, struct loop *to)
{
    struct loop *l = dc->lb->loop;
    if (dc->fd >= 0)
        loop_unwatch(l, dc->fd);
    dc->fd = -1;
    dc->events = 0;
    dc->w.ready = set_aside;
    dc->give_to = to;
    dc->next_aside = l->leaving;
    l->leaving = dc;
}

void dbconn_settle(struct loop *l)
{
    while (l->closed_aside) {
        struct dbconn *dc = l->closed_aside;
        l->closed_aside = dc->next_aside;
        free(dc);
    }
    while (l->leaving) {
        struct dbconn *dc = l->leaving;
        l->leaving = dc->next_aside;
        dc->w.ready = ready;
        struct loop *to = dc->give_to;
        pthread_mutex_lock(&to->lock);
        APR_RING_INSERT_TAIL(&to->given, dc, dbconn, link);
        pthread_mutex_unlock(&to->lock);
        loop_wake(to);
    }
}

struct dbconn *dbconn_given(struct loop *l)
{
    pthread_mutex_lock(&l->lock);
    struct dbconn *dc = APR_RING_EMPTY(&l->given, dbconn, link) ? NULL : APR_RING_FIRST(&l->given);
    if (dc)
        APR_RING_REMOVE(dc, link);
    pthread_mutex_unlock(&l->lock);
    return dc;
}

bool dbconn_join(struct dbconn *dc, struct lb *lb)
{
    struct zb_err err;
    dc->lb = lb;
    if (set_watch(dc, ZB_WANT_READ, &err) < 0) {
        forget(dc);
        return false;
    }
    return true;
}

/* Lost: its strategy answers what it had and closes it. */
static void lost(struct dbconn *dc, const struct zb_err *err)
{
    dc->st->conn_failed(dc, err);
}

void dbconn_fail(struct dbconn *dc, const struct zb_err *err)
{
    if (err->kind == ZB_ERR_TIMEOUT)
        async_of(dc)->abort(dc->db);   /* it may still answer: never wait on it */
    lost(dc, err);
}

static void flush_one(struct dbconn *dc);

/* A pipelined connection to flush at the end of this iteration. */
static void flush_later(struct dbconn *dc)
{
    struct loop *l = dc->lb->loop;
    if (l->nflush < (int)(sizeof l->to_flush / sizeof l->to_flush[0]))
        l->to_flush[l->nflush++] = dc;
    else
        flush_one(dc);   /* more pipelines than slots: write this one now */
}

void dbconn_send(struct dbconn *dc, struct lookup *lk)
{
    struct lb *lb = dc->lb;
    struct zb_err err = { 0 };
    lk->since_ns = lb->loop->now;
    APR_RING_INSERT_TAIL(&dc->sent, lk, lookup, link);
    dc->nsent++;
    int wants = async_of(dc)->send(dc->db, dc->lookup, lb->sb->sql, 1, lk->params, &err);
    if (wants >= 0 && dc->st->pipelines) {
        BUMP(lb->st.pipelined);
        if (!dc->unflushed) {
            dc->unflushed = true;
            flush_later(dc);
        }
    } else if (wants >= 0) {
        /* 0: answered already (the driver read it in passing): the socket
         * being writable brings it back to us next iteration. */
        wants = set_watch(dc, wants ? wants : ZB_WANT_WRITE, &err);
    }
    if (wants < 0) {
        lost(dc, &err);
        return;
    }
    if (dc->nsent == 1)
        loop_deadline(lb->loop, dbconn_deadline(dc));
}

/* Writes what dc was sent since its last flush. */
static void flush_one(struct dbconn *dc)
{
    struct zb_err err = { 0 };
    dc->unflushed = false;
    BUMP(dc->lb->st.batches);
    int wants = async_of(dc)->flush(dc->db, &err);
    if (wants < 0 || set_watch(dc, wants, &err) < 0)
        lost(dc, &err);
}

void dbconn_flush_all(struct loop *l)
{
    while (l->nflush)
        flush_one(l->to_flush[--l->nflush]);
}

/* Connecting, then preparing: returns true once ready. */
static bool setup(struct dbconn *dc, struct zb_err *err, int *wants)
{
    const struct backend_async *as = async_of(dc);
    struct lb *lb = dc->lb;
    if (dc->state == DC_CONNECTING) {
        if ((*wants = as->connect_step(dc->db, err)) != 0)
            return false;
        dc->state = DC_PREPARING;
    }
    if (dc->state == DC_PREPARING && !dc->lookup) {
        BUMP(lb->st.connects);
        if (dc->st->per_lookup) {
            BUMP(lb->st.connects_per_request);
            dc->state = DC_READY;
            return true;
        }
        if (dc->st->pipelines && (*wants = as->pipeline(dc->db, err)) < 0)
            return false;
        if ((*wants = as->prepare(dc->db, lb->sb->sql, 1, &dc->lookup, err)) < 0)
            return false;
        if (dc->st->pipelines && (*wants = as->flush(dc->db, err)) < 0)
            return false;
    }
    /* The PREPARE's answer. */
    if ((*wants = as->result(dc->db, NULL, NULL, err)) != 0)
        return false;
    dc->state = DC_READY;
    return true;
}

/* Reads answers, oldest first; lk done, the next one may be complete too. */
static void answers(struct dbconn *dc)
{
    const struct backend_async *as = async_of(dc);
    for (;;) {
        struct zb_err err = { 0 };
        struct lookup *lk = dc->nsent ? APR_RING_FIRST(&dc->sent) : NULL;
        int wants = as->result(dc->db, lookup_row, lk, &err);
        if (wants > 0) {
            if (set_watch(dc, wants, &err) < 0)
                lost(dc, &err);
            return;
        }
        /* The connection is gone with what it had; or (ZB_ERR_STALE) its
         * prepared lookup is: the strategy retries on a fresh one. */
        if (wants < 0 && (!lk || err.kind == ZB_ERR_CONN || err.kind == ZB_ERR_TIMEOUT ||
                          err.kind == ZB_ERR_SYS || err.kind == ZB_ERR_STALE)) {
            lost(dc, &err);
            return;
        }
        APR_RING_REMOVE(lk, link);
        dc->nsent--;
        if (dc->nsent)
            loop_deadline(dc->lb->loop, dbconn_deadline(dc));
        lookup_finish(lk, wants == 0 ? LOOKUP_OK : lookup_rc_of(&err), &err);
        if (!dc->nsent) {
            dc->st->conn_ready(dc);   /* may send again, or close it: dc is not ours now */
            return;
        }
    }
}

/* The socket is ready (events: EPOLLIN/OUT/ERR/HUP). */
static void ready(struct watch *w, uint32_t events)
{
    (void)events;
    struct dbconn *dc = container_of(w, struct dbconn, w);
    if (dc->state != DC_READY) {
        struct zb_err err = { 0 };
        int wants;
        if (setup(dc, &err, &wants)) {
            if (set_watch(dc, ZB_WANT_READ, &err) < 0)
                lost(dc, &err);
            else
                dc->st->conn_ready(dc);
        } else if (wants < 0 || set_watch(dc, wants, &err) < 0) {
            lost(dc, &err);
        }
        return;
    }
    answers(dc);
}
