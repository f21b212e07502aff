/* One asynchronous database connection of a loop.
 *
 * States:
 *   DC_CONNECTING  connect_step() each time the socket is ready, until the
 *                  driver says it is connected; bounded by connect_timeout_s.
 *   DC_PREPARING   its strategy's prepare sets it up (prepares the lookup
 *                  once, or nothing: its lookups are one-shot queries),
 *                  then the answer to that, if one is awaited.
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
    return dc->lane->sv->drv->async;
}

/* Watches the driver's socket for wants (ZB_WANT_*). */
static int set_watch(struct dbconn *dc, int wants, struct zb_err *err)
{
    struct loop *l = dc->lane->loop;
    int fd = async_of(dc)->socket(dc->db);
    uint32_t events = (wants & ZB_WANT_READ ? EPOLLIN : 0) | (wants & ZB_WANT_WRITE ? EPOLLOUT : 0);
    if (fd < 0)
        return zb_fail(err, ZB_ERR_CONN, "%s: no socket", dc->lane->sv->label);
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

struct dbconn *dbconn_open(struct lane *lane, const struct strategy *st, void *owner,
                           int connect_limit_s, struct zb_err *err)
{
    struct dbconn *dc = calloc(1, sizeof *dc);
    if (!dc) {
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        return NULL;
    }
    dc->w.ready = ready;
    dc->lane = lane;
    dc->st = st;
    dc->owner = owner;
    dc->connect_limit_s = connect_limit_s;
    dc->fd = -1;
    dc->gen = atomic_load(&lane->sv->gen);
    dc->since_ns = lane->loop->now;
    APR_RING_INIT(&dc->sent, lookup, link);
    int wants = async_of(dc)->connect_start(&lane->sv->conf, &dc->db, err);
    /* Connected at once: carry on when the socket says it is writable,
     * so the strategy hears of it from the loop, not from here. */
    dc->state = wants == 0 ? DC_PREPARING : DC_CONNECTING;
    if (wants < 0 || set_watch(dc, wants == 0 ? ZB_WANT_WRITE : wants, err) < 0) {
        BUMP(lane->st.connect_failures);
        if (dc->db)
            lane->sv->drv->close(dc->db);
        free(dc);
        return NULL;
    }
    loop_deadline(lane->loop, dbconn_deadline(dc));
    return dc;
}

uint64_t dbconn_deadline(const struct dbconn *dc)
{
    const struct backend_conf *bc = &dc->lane->sv->conf;
    if (dc->state != DC_READY)
        return dc->since_ns + (uint64_t)dc->connect_limit_s * 1000000000u;
    if (dc->nsent == 0 || bc->query_timeout_ms <= 0)
        return 0;
    return APR_RING_FIRST(&dc->sent)->since_ns + (uint64_t)bc->query_timeout_ms * 1000000u;
}

bool dbconn_expired(struct dbconn *dc, uint64_t now, uint64_t *next)
{
    const struct backend_conf *bc = &dc->lane->sv->conf;
    uint64_t d = dbconn_deadline(dc);
    if (!d || d > now) {
            *next = deadline_min(*next, d);
        return false;
    }
    struct zb_err err;
    if (dc->state != DC_READY)
        zb_fail(&err, ZB_ERR_TIMEOUT, "%s: cannot connect: no answer within %d s", bc->name,
                dc->connect_limit_s);
    else
        zb_fail(&err, ZB_ERR_TIMEOUT, "%s: no answer within %d ms", bc->name,
                bc->query_timeout_ms);
    dbconn_fail(dc, &err);
    return true;
}

static void free_conn(struct watch *w)
{
    free(container_of(w, struct dbconn, w));
}

void dbconn_close(struct dbconn *dc)
{
    struct loop *l = dc->lane->loop;
    if (dc->fd >= 0)
        loop_unwatch(l, dc->fd);
    dc->lane->sv->drv->close(dc->db);
    dc->db = NULL;
    loop_retire(l, &dc->w, free_conn);
}

void dbconn_leave(struct dbconn *dc, void (*arrive)(struct watch *w))
{
    struct loop *l = dc->lane->loop;
    if (dc->fd >= 0)
        loop_unwatch(l, dc->fd);
    dc->fd = -1;
    dc->events = 0;
    loop_retire(l, &dc->w, arrive);
}

bool dbconn_join(struct dbconn *dc, struct lane *lane, void *owner)
{
    struct zb_err err;
    dc->lane = lane;
    dc->owner = owner;
    if (set_watch(dc, ZB_WANT_READ, &err) < 0) {
        dbconn_close(dc);
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

/* lk recorded as sent on dc (its clock starts, it joins the sent list)
 * and handed to the driver: what the connection waits for next, or -1
 * with err. */
static int send_lookup(struct dbconn *dc, struct lookup *lk, struct zb_err *err)
{
    struct lane *lane = dc->lane;
    lk->since_ns = lane->loop->now;
    APR_RING_INSERT_TAIL(&dc->sent, lk, lookup, link);
    dc->nsent++;
    int wants = async_of(dc)->send(dc->db, dc->lookup, lane->sv->sql, lane->sv->nparams, lk->params, err);
    if (wants >= 0 && dc->nsent == 1)
        loop_deadline(lane->loop, dbconn_deadline(dc));
    return wants;
}

void dbconn_send(struct dbconn *dc, struct lookup *lk)
{
    struct zb_err err = { 0 };
    int wants = send_lookup(dc, lk, &err);
    /* 0: answered already (the driver read it in passing): the socket
     * being writable brings it back to us next iteration. */
    if (wants < 0 || set_watch(dc, wants ? wants : ZB_WANT_WRITE, &err) < 0)
        lost(dc, &err);
}

bool dbconn_queue(struct dbconn *dc, struct lookup *lk)
{
    struct zb_err err = { 0 };
    if (send_lookup(dc, lk, &err) < 0) {
        lost(dc, &err);
        return false;
    }
    return true;
}

bool dbconn_flush(struct dbconn *dc)
{
    struct zb_err err = { 0 };
    int wants = async_of(dc)->flush(dc->db, &err);
    if (wants < 0 || set_watch(dc, wants, &err) < 0) {
        lost(dc, &err);
        return false;
    }
    return true;
}

int dbconn_prepare(struct dbconn *dc, struct zb_err *err)
{
    return async_of(dc)->prepare(dc->db, dc->lane->sv->sql, dc->lane->sv->nparams, &dc->lookup, err) < 0 ? -1 : 1;
}

int dbconn_prepare_pipelined(struct dbconn *dc, struct zb_err *err)
{
    const struct backend_async *as = async_of(dc);
    if (as->pipeline(dc->db, err) < 0 || dbconn_prepare(dc, err) < 0 || as->flush(dc->db, err) < 0)
        return -1;
    return 1;
}

/* Connecting, then preparing: returns true once ready. */
static bool setup(struct dbconn *dc, struct zb_err *err, int *wants)
{
    const struct backend_async *as = async_of(dc);
    struct lane *lane = dc->lane;
    if (dc->state == DC_CONNECTING) {
        if ((*wants = as->connect_step(dc->db, err)) != 0)
            return false;
        dc->state = DC_PREPARING;
    }
    if (dc->state == DC_PREPARING && !dc->lookup) {
        BUMP(lane->st.connects);
        int rc = dc->st->prepare ? dc->st->prepare(dc, err) : 0;
        if (rc <= 0) {
            *wants = rc;
            if (rc == 0)
                dc->state = DC_READY;
            return rc == 0;
        }
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
            loop_deadline(dc->lane->loop, dbconn_deadline(dc));
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
