/* One loop's share of a served backend, and the end of every lookup on it
 * (see lb.h). */
#include <string.h>

#include "lb.h"

void lb_init(struct lb *lb, struct loop *l, struct srv_backend *sb)
{
    memset(lb, 0, sizeof *lb);
    lb->loop = l;
    lb->sb = sb;
    hist_init(&lb->st.latency);
}

void lb_down(struct lb *lb, const struct zb_err *err)
{
    if (!atomic_load_explicit(lb->loop->shutdown, RELAXED))
        served_mark_down(lb->sb, err);
}

bool lb_connect_failed(struct lb *lb, const struct zb_err *err, bool live)
{
    if (err->kind == ZB_ERR_REFUSED || !live) {
        lb_down(lb, err);
        return true;
    }
    lb->grow_after_ns = lb->loop->now + LB_RETRY_NS;
    loop_deadline(lb->loop, lb->grow_after_ns);
    if (err->kind == ZB_ERR_CONN || err->kind == ZB_ERR_TIMEOUT || err->kind == ZB_ERR_BUSY)
        return false;   /* load: the lookups wait for the live connections */
    /* A fault, not load (the database refused the PREPARE: a pooler in
     * transaction mode with named statements): said, and the waiting
     * lookups fail with it. */
    served_log_error(lb->sb, "connect failed", err->msg);
    return true;
}

int lookup_rc_of(const struct zb_err *err)
{
    switch (err->kind) {
    case ZB_ERR_CONN:
    case ZB_ERR_REFUSED:
    case ZB_ERR_TIMEOUT:
    case ZB_ERR_BUSY:
    case ZB_ERR_STALE:
        return LOOKUP_UNAVAILABLE;   /* 503: try again later */
    default:
        return LOOKUP_ERROR;
    }
}

/* The end of lk; a 503 counted as overload or, the backend down, as down. */
static void finish(struct lookup *lk, int rc, const struct zb_err *err, bool overload)
{
    struct srv_backend *sb = lk->lb->sb;
    if (rc == LOOKUP_OK)
        served_mark_up(sb);
    else if (rc == LOOKUP_UNAVAILABLE && overload)
        BUMP(lk->lb->st.overload);
    else if (rc == LOOKUP_UNAVAILABLE && !atomic_load_explicit(&sb->up, RELAXED))
        BUMP(lk->lb->st.down);
    if (lk->probe) {
        lk->probe = false;
        served_end_probe(sb);
    }
    lk->overloaded = rc == LOOKUP_UNAVAILABLE && overload;
    lk->done(lk, rc, rc == LOOKUP_OK ? NULL : err);
}

void lookup_finish(struct lookup *lk, int rc, const struct zb_err *err)
{
    finish(lk, rc, err, false);
}

void lookup_overloaded(struct lookup *lk, const struct zb_err *err)
{
    finish(lk, LOOKUP_UNAVAILABLE, err, true);
}

int lookup_row(void *arg, int n, const char *const *v, const size_t *l)
{
    struct lookup *lk = arg;
    lk->rows++;
    return lk->on_row ? lk->on_row(lk->arg, n, v, l) : 0;
}
