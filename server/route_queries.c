/* GET /queries/{backend}?queries=N: N codes drawn from the postal key
 * set, all looked up at once (TechEmpower's "multiple queries"), answered
 * together in the order drawn, each as /zip would have answered it. */
#include <stdio.h>

#include "batch.h"
#include "route.h"

enum { QUERIES, STRATEGY };
static const struct param params[] = {
    [QUERIES] = { "queries", PARAM_WHOLE, 1, BATCH_MAX },
    [STRATEGY] = { "strategy", PARAM_STRATEGY, 0, 0 },
    { NULL, 0, 0, 0 },
};

/* Its per-request state: the lookups, kept and grown with the spare. */
struct queries_request {
    struct batch *batch;
};

/* A row of one of the lookups, into that lookup's own body. */
static int put_item_row(struct lookup *lk, int ncols, const char *const *vals, const size_t *lens)
{
    struct batch_item *it = lk->arg;
    return request_put_row(&it->body, lk->lane->sv, lk->rows, ncols, vals, lens);
}

/* All ended: one answer of them all, or the worst of their failures. */
static void done(struct batch *b)
{
    struct request *rq = b->arg;
    if (!request_went_on(rq, b->failed ? &b->failed->lk : NULL, b->rc, &b->err,
                         "a lookup of /queries", NULL))
        return;
    const struct served *sv = rq->sv;
    struct jbuf *out = &rq->body;
    out->n = 0;
    JB_LIT(out, "{\"backend\":");
    jb_cstr(out, sv->conf.name);
    jb_printf(out, ",\"queries\":%d,\"answers\":[", b->n);
    for (int i = 0; i < b->n; i++) {
        struct batch_item *it = &b->item[i];
        if (i)
            JB_LIT(out, ",");
        if (it->lk.rows == 0) {    /* the table was replaced since the draw */
            JB_LIT(out, "{\"backend\":");
            jb_cstr(out, sv->conf.name);
            JB_LIT(out, ",\"code\":");
            jb_cstr(out, it->lk.key);
            JB_LIT(out, ",\"error\":\"no such code\",\"status\":404}");
        } else {
            jb_put(out, it->body.p, it->body.n);
            JB_LIT(out, "]}");
        }
        out->oom |= it->body.oom;
        it->body.oom = false;
    }
    JB_LIT(out, "]}");
    request_answer(rq, 200);
}

/* The codes drawn and looked up; false while the key set is loading. */
static bool start(struct request *rq)
{
    struct batch *b = ((struct queries_request *)rq->state)->batch;
    bool loading;
    const struct key_set *set = request_keys(rq, "the query of /queries' key set", &loading);
    if (!set)
        return !loading;
    b->n = (int)rq->args.v[QUERIES].whole;
    b->done = done;
    b->arg = rq;
    for (int i = 0; i < b->n; i++) {
        char code[8];
        snprintf(code, sizeof code, "%07u", keyset_pick(set, 0, &rq->loop->rng));
        batch_set_key(b, i, code, 7);
        request_rows_begin(&b->item[i].body, rq->sv, code, 7);
    }
    batch_start(b, rq->lane, rq->strategy, put_item_row);
    return true;
}

static void serve(struct request *rq)
{
    struct queries_request *st = rq->state;
    if (!rq->args.given[QUERIES]) {
        request_error(rq, 400, NULL, "queries must be a whole number from 1 to %d", BATCH_MAX);
        return;
    }
    if (batch_reserve(&st->batch, (int)rq->args.v[QUERIES].whole) < 0) {
        request_error(rq, 500, NULL, "out of memory");
        return;
    }
    request_when_keys(rq, start);
}

static void free_state(void *state)
{
    batch_free(((struct queries_request *)state)->batch);
}

const struct route queries_route = {
    .name = "queries", .usage = "GET /queries/{backend}?queries=N", .path = ROUTE_BACKEND,
    .params = params, .state_size = sizeof(struct queries_request), .free_state = free_state,
    .serve = serve,
};
