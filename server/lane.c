/* A lane: one loop's share of one served backend (see lane.h). */
#include <string.h>

#include "lane.h"

void lane_init(struct lane *lane, struct loop *l, struct served *sv, struct lane *const *peers)
{
    memset(lane, 0, sizeof *lane);
    lane->loop = l;
    lane->sv = sv;
    lane->peers = peers;
    hist_init(&lane->st.latency);
}

void lane_down(struct lane *lane, const struct zb_err *err)
{
    if (!atomic_load_explicit(lane->loop->shutdown, RELAXED))
        served_mark_down(lane->sv, err);
}

bool lane_connect_failed(struct lane *lane, const struct zb_err *err, bool live)
{
    if (err->kind == ZB_ERR_REFUSED || !live) {
        lane_down(lane, err);
        return true;
    }
    lane->grow_after_ns = lane->loop->now + LANE_RETRY_NS;
    loop_deadline(lane->loop, lane->grow_after_ns);
    if (err->kind == ZB_ERR_CONN || err->kind == ZB_ERR_TIMEOUT || err->kind == ZB_ERR_BUSY)
        return false;   /* load: the lookups wait for the live connections */
    /* A fault, not load (the database refused the PREPARE: a pooler in
     * transaction mode with named statements): said, and the waiting
     * lookups fail with it. */
    served_log_error(lane->sv, "connect failed", err->msg);
    return true;
}
