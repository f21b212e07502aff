/* GET /list/{backend}/{jis_code}: the listing page (TechEmpower's
 * "fortunes" on the postal data): every row of one municipality, sorted
 * and rendered as HTML (listing.h). Its statement differs from /zip's (by
 * jis_code, KEN_ALL's first column), so each postal backend gets a served
 * table of this route's own: its own lanes, pools and statement. */
#include <stdlib.h>
#include <string.h>

#include "listing.h"
#include "route.h"

enum { STRATEGY };
static const struct param params[] = {
    [STRATEGY] = { "strategy", PARAM_STRATEGY, 0, 0 },
    { NULL, 0, 0, 0 },
};

/* Its server state: the listing table of each postal backend, by the
 * served index of /zip's. */
struct list_tables {
    struct served *of[SRV_MAX_SERVED];
};

/* Its per-request state: the rows gathered, kept with the spare. */
struct list_request {
    struct lookup lk;
    struct listing *listing;
};

static int add_row(struct lookup *lk, int ncols, const char *const *vals, const size_t *lens)
{
    struct request *rq = lk->arg;
    struct list_request *st = rq->state;
    return listing_add(st->listing, ncols, vals, lens) < 0 ? -1 : 0;
}

static void done(struct lookup *lk, int rc, const struct zb_err *err)
{
    struct request *rq = lk->arg;
    struct list_request *st = rq->state;
    if (!request_went_on(rq, lk, rc, err, "the listing", NULL))
        return;
    if (lk->rows == 0) {
        request_error(rq, 404, NULL, "no rows have jis_code %s", lk->key);
    } else if (listing_rows(st->listing) != (size_t)lk->rows) {
        request_error(rq, 500, NULL, "out of memory");
    } else {
        listing_render(st->listing, &rq->body);
        rq->content_type = "text/html; charset=utf-8";
        request_answer(rq, 200);
    }
}

static void serve(struct request *rq)
{
    struct list_request *st = rq->state;
    struct list_tables *t = rq->shared;
    bool five = rq->keylen == 5;
    for (int i = 0; five && i < 5; i++)
        five = rq->key[i] >= '0' && rq->key[i] <= '9';
    if (!five) {
        request_error(rq, 400, NULL, "the local government code (jis_code) must be exactly 5 "
                      "digits 0-9");
        return;
    }
    if (listing_reset(&st->listing) < 0) {
        request_error(rq, 500, NULL, "out of memory");
        return;
    }
    /* Served, and counted, by the listing table. */
    rq->sv = t->of[rq->sv->index];
    rq->lane = &rq->loop->lanes[rq->sv->index];
    request_lookup_rows(rq, &st->lk, rq->key, 5, add_row, done);
}

/* A load replaced the table: the listing's connections, prepared against
 * the old one, are replaced too. On the key set's thread. */
static void reloaded(void *arg, struct served *main)
{
    (void)main;
    struct served *sv = arg;
    atomic_fetch_add(&sv->gen, 1);
}

/* A listing table beside each postal one. */
static int setup(struct server *srv, void **shared, struct zb_err *err)
{
    struct list_tables *t = calloc(1, sizeof *t);
    if (!(*shared = t))
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    for (int i = 0, n = srv->nserved; i < n; i++) {
        struct served *main = srv->served[i];
        if (main->key_kind != KEY_POSTAL)
            continue;
        char name[256];
        struct zb_table tb = dataset_table(main->data, &main->conf, name, sizeof name);
        tb.key = 0;                /* jis_code, KEN_ALL's first column */
        struct served *sv = served_add(srv->served, &srv->nlanes, srv->pool, err);
        if (!sv || served_init_beside(sv, main, "list", NULL, 1, false, sv->index, err) < 0 ||
            served_select(sv, tb, "listing", err) < 0)
            return -1;
        t->of[i] = sv;
        if (keyset_hook(main, reloaded, sv, err) < 0)
            return -1;
    }
    return 0;
}

static void teardown(struct server *srv, void *shared)
{
    (void)srv;
    free(shared);
}

static void free_state(void *state)
{
    listing_free(((struct list_request *)state)->listing);
}

const struct route list_route = {
    .name = "list", .usage = "GET /list/{backend}/{jis_code}", .path = ROUTE_BACKEND_KEY,
    .params = params, .state_size = sizeof(struct list_request), .free_state = free_state,
    .setup = setup, .teardown = teardown, .serve = serve,
};
