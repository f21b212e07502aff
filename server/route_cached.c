/* GET /cached/{backend}/{code}: /zip's answer through a bounded cache per
 * loop and backend (TechEmpower's "cached queries", APCu's role in a PHP
 * page): a hit is the bytes a lookup answered before, a miss a lookup
 * whose 200 is kept. The cache follows the table's load generation
 * (keyset.h's serial): a reload empties it, within KEYSET_CHECK_MS. */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "route.h"

enum { STRATEGY };
static const struct param params[] = {
    [STRATEGY] = { "strategy", PARAM_STRATEGY, 0, 0 },
    { NULL, 0, 0, 0 },
};

enum { HITS, MISSES, ENTRIES, NFIGURES };
static const char *const figure_names[NFIGURES + 1] = {
    [HITS] = "hits",               /* answers from the cache */
    [MISSES] = "misses",           /* answers from the database */
    [ENTRIES] = "entries",         /* answers the cache keeps now */
};

/* Its state on a loop: a cache and the counters per served table. */
struct cached_loop {
    int cap;                       /* cache_entries */
    struct answer_cache *cache[SRV_MAX_SERVED];   /* made when first asked */
    counter fig[SRV_MAX_SERVED][NFIGURES];
};

/* Its per-request state. */
struct cached_request {
    struct lookup lk;
    uint64_t gen;                  /* a miss: keep the answer, from this key set (0: not) */
};

/* rq's cache, made when first asked; NULL when cache_entries is 0 or
 * memory ran out (the lookups go on uncached). */
static struct answer_cache *cache_of(struct request *rq)
{
    struct cached_loop *cl = rq->loop_state;
    int i = rq->sv->index;
    if (!cl->cache[i] && cl->cap > 0)
        cl->cache[i] = cache_new((uint32_t)cl->cap);
    return cl->cache[i];
}

static void done(struct lookup *lk, int rc, const struct zb_err *err)
{
    struct request *rq = lk->arg;
    struct cached_request *st = rq->state;
    /* Answered, its body still rq's until the connection sends it. */
    if (!request_rows_answer(rq, lk, rc, err) || !st->gen || rq->status != 200)
        return;
    struct answer_cache *c = cache_of(rq);
    if (c && cache_put(c, (uint32_t)atol(lk->key), st->gen, rq->body.p, rq->body.n) == 0) {
        struct cached_loop *cl = rq->loop_state;
        SET(cl->fig[rq->sv->index][ENTRIES], cache_count(c));
    }
}

static void serve(struct request *rq)
{
    struct cached_request *st = rq->state;
    struct cached_loop *cl = rq->loop_state;
    unsigned status;
    char msg[400];
    const char *bad = strcmp(rq->key, "random")
                      ? request_bad_key(rq->sv, rq->key, rq->keylen, &status, msg, sizeof msg)
                      : "the code must be exactly 7 digits 0-9";
    if (bad) {
        request_error(rq, 400, NULL, "%s", bad);
        return;
    }
    struct zb_err err = { 0 };
    bool loading;
    const struct key_set *set = keyset_get(rq->sv, &loading, &err);
    struct answer_cache *c = set ? cache_of(rq) : NULL;
    size_t len;
    /* Kept with the table it came from: a reload empties the cache. */
    uint64_t serial = keyset_serial(rq->sv);
    const char *hit = c ? cache_get(c, (uint32_t)atol(rq->key), serial, &len) : NULL;
    counter *fig = cl->fig[rq->sv->index];
    if (hit) {
        BUMP(fig[HITS]);
        rq->body.n = 0;
        jb_put(&rq->body, hit, len);
        request_answer(rq, 200);
        return;
    }
    BUMP(fig[MISSES]);
    st->gen = c ? serial : 0;
    request_lookup(rq, &st->lk, rq->key, rq->keylen, done);
}

static void *cached_loop_init(struct request_loop *rl, void *shared, struct zb_err *err)
{
    (void)shared;
    struct cached_loop *cl = calloc(1, sizeof *cl);
    if (!cl)
        zb_fail(err, ZB_ERR_SYS, "out of memory");
    else
        cl->cap = rl->srv->conf->server.cache_entries;
    return cl;
}

static void cached_loop_free(void *loop_state)
{
    struct cached_loop *cl = loop_state;
    for (int i = 0; cl && i < SRV_MAX_SERVED; i++)
        cache_free(cl->cache[i]);
    free(cl);
}

static const counter *figures_of(void *loop_state, const struct served *sv)
{
    return ((struct cached_loop *)loop_state)->fig[sv->index];
}

const struct route cached_route = {
    .name = "cached", .usage = "GET /cached/{backend}/{code}", .path = ROUTE_BACKEND_KEY,
    .params = params, .state_size = sizeof(struct cached_request), .loop_init = cached_loop_init,
    .loop_free = cached_loop_free, .figures = figure_names, .figures_of = figures_of, .serve = serve,
};
