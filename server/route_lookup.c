/* GET /{dataset}/{backend}/{key}: the rows of one key (TechEmpower's
 * "single query" on a dataset's table); /zip/{backend}/{code} is the
 * postal dataset's, and /zip/{backend}/random a code drawn from its key
 * set (?miss=R: a share R of draws that are codes not in it). */
#include <stdio.h>
#include <string.h>

#include "route.h"

enum { STRATEGY, MISS };
static const struct param params[] = {
    [STRATEGY] = { "strategy", PARAM_STRATEGY, 0, 0 },
    [MISS] = { "miss", PARAM_REAL, 0, 1 },
    { NULL, 0, 0, 0 },
};

/* Its per-request state. */
struct lookup_request {
    struct lookup lk;
};

static void done(struct lookup *lk, int rc, const struct zb_err *err)
{
    request_rows_answer(lk->arg, lk, rc, err);
}

/* A code of the key set (or, with probability miss, one that is not in
 * it); false while the key set is still loading. */
static bool start_random(struct request *rq)
{
    struct lookup_request *st = rq->state;
    bool loading;
    const struct key_set *set = request_keys(rq, "the query of /random's key set", &loading);
    if (!set)
        return !loading;
    double miss = rq->args.given[MISS] ? rq->args.v[MISS].real : 0;
    char code[8];
    snprintf(code, sizeof code, "%07u", keyset_pick(set, miss, &rq->loop->rng));
    request_lookup(rq, &st->lk, code, 7, done);
    return true;
}

static void serve(struct request *rq)
{
    struct lookup_request *st = rq->state;
    if (rq->sv->key_kind == KEY_POSTAL && !strcmp(rq->key, "random")) {
        request_when_keys(rq, start_random);
        return;
    }
    unsigned status;
    char msg[400];
    const char *bad = request_bad_key(rq->sv, rq->key, rq->keylen, &status, msg, sizeof msg);
    if (bad)
        request_error(rq, status, NULL, "%s", bad);
    else
        request_lookup(rq, &st->lk, rq->key, rq->keylen, done);
}

const struct route lookup_route = {
    .name = NULL, .usage = "GET /{dataset}/{backend}/{key}, /zip/{backend}/{code}, "
    "/zip/{backend}/random", .path = ROUTE_DATASET, .params = params,
    .state_size = sizeof(struct lookup_request), .serve = serve,
};
