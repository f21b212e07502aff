/* The write request type (docs/REQUEST-TYPES.md), two routes over one
 * write table per backend (update.h):
 *   POST /update/{backend}/{code}       one code
 *   POST /updates/{backend}?queries=N   N codes drawn from the key set
 * on a postal backend whose section says writes = yes (else 403). The
 * write table's read and write are served tables of this request type's
 * own (its own lanes, pools and statements), made at start beside each
 * such backend; /updates uses /update's (route.h's shares). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "route.h"
#include "update.h"

static const struct param update_params[] = {
    { "strategy", PARAM_STRATEGY, 0, 0 },
    { NULL, 0, 0, 0 },
};
enum { QUERIES, STRATEGY };
static const struct param updates_params[] = {
    [QUERIES] = { "queries", PARAM_WHOLE, 1, UPDATE_MAX_QUERIES },
    [STRATEGY] = { "strategy", PARAM_STRATEGY, 0, 0 },
    { NULL, 0, 0, 0 },
};

/* The server state: each writing backend's read and write, by the served
 * index of /zip's (NULL: writes off). */
struct write_tables {
    struct served *read[SRV_MAX_SERVED], *write[SRV_MAX_SERVED];
};

/* Its per-request state. */
struct update_request {
    struct update_job job;
    struct request *rq;
};

static void answered(struct update_job *u, unsigned status, const char *code, const char *msg)
{
    struct request *rq = container_of(u, struct update_request, job)->rq;
    if (rq->orphaned)
        request_gone(rq);
    else if (msg)
        request_error(rq, status, code, "%s", msg);
    else
        request_answer(rq, status);
}

/* rq's job set up on its backend's write table: false (403 answered) if
 * the backend takes no writes. */
static bool job_for(struct request *rq)
{
    struct write_tables *t = rq->shared;
    struct update_request *st = rq->state;
    int i = rq->sv->index;
    if (!t->write[i]) {
        request_error(rq, 403, NULL, "writes are off for this backend (writes = yes in its "
                      "[backend] section)");
        return false;
    }
    struct update_job *u = &st->job;
    st->rq = rq;
    u->read = &rq->loop->lanes[t->read[i]->index];
    u->write = &rq->loop->lanes[t->write[i]->index];
    u->strategy = rq->strategy;
    u->body = &rq->body;
    u->done = answered;
    u->stopping = request_stopping(rq);
    return true;
}

static void serve_one(struct request *rq)
{
    if (!job_for(rq))
        return;
    unsigned status;
    if (request_bad_key(rq->sv, rq->key, rq->keylen, &status, NULL, 0)) {
        request_error(rq, 400, NULL, "the code must be exactly 7 digits 0-9");
        return;
    }
    struct update_job *u = &((struct update_request *)rq->state)->job;
    u->codes[0] = (uint32_t)strtoul(rq->key, NULL, 10);
    update_start(u, rq->sv->conf.name, 1, false);
}

/* /updates: its codes drawn from the key set; false while that is read. */
static bool start_many(struct request *rq)
{
    bool loading;
    const struct key_set *set = request_keys(rq, "the query of /updates' key set", &loading);
    if (!set)
        return !loading;
    struct update_job *u = &((struct update_request *)rq->state)->job;
    int n = (int)rq->args.v[QUERIES].whole;
    for (int i = 0; i < n; i++)
        u->codes[i] = keyset_pick(set, 0, &rq->loop->rng);
    update_start(u, rq->sv->conf.name, n, true);
    return true;
}

static void serve_many(struct request *rq)
{
    if (!job_for(rq))
        return;
    if (!rq->args.given[QUERIES]) {
        request_error(rq, 400, NULL, "queries must be a whole number from 1 to %d",
                      UPDATE_MAX_QUERIES);
        return;
    }
    request_when_keys(rq, start_many);
}

/* A load replaced main's table: codes it brought get their rows in the
 * write table before its key set is read again (so /updates never draws
 * a code /update would not find). On the key set's thread. */
static void reloaded(void *arg, struct served *main)
{
    (void)arg;
    struct zb_err e = { 0 };
    if (update_table(main, &e) < 0)
        srv_log("server: backend %s: the table was replaced, but its %s_hits could not take "
                "its new codes: %s", main->label, main->conf.table, e.msg);
}

/* Beside each postal backend with writes = yes: its write table made (or
 * completed), and the read and write of it. */
static int setup(struct server *srv, void **shared, struct zb_err *err)
{
    struct write_tables *t = calloc(1, sizeof *t);
    if (!(*shared = t))
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    for (int i = 0, n = srv->nserved; i < n; i++) {
        struct served *main = srv->served[i];
        if (main->key_kind != KEY_POSTAL || !main->conf.writes)
            continue;
        char read[512], write[512];
        snprintf(read, sizeof read, "SELECT stamp FROM %s_hits WHERE zip_code = ?",
                 main->conf.table);
        char hits[160];
        snprintf(hits, sizeof hits, "%s_hits", main->conf.table);
        if (main->drv->stamp_sql(hits, write, sizeof write) < 0)
            return zb_fail(err, ZB_ERR_INPUT, "backend %s: table name too long", main->label);
        struct served *r = served_add(srv->served, &srv->nlanes, srv->pool, err);
        if (!r || served_init_beside(r, main, "read", read, 1, false, r->index, err) < 0)
            return -1;
        struct served *w = served_add(srv->served, &srv->nlanes, srv->pool, err);
        if (!w || served_init_beside(w, main, "write", write, 1, true, w->index, err) < 0)
            return -1;
        t->read[i] = r;
        t->write[i] = w;
        if (keyset_hook(main, reloaded, NULL, err) < 0)
            return -1;
        struct zb_err e = { 0 };
        if (update_table(main, &e) < 0)
            srv_log("server: backend %s: writes on, but its %s_hits could not be made: %s (its "
                    "writes fail until it is)", main->label, main->conf.table, e.msg);
    }
    return 0;
}

static void teardown(struct server *srv, void *shared)
{
    (void)srv;
    free(shared);
}

const struct route update_route = {
    .name = "update", .usage = "POST /update/{backend}/{code}", .post = true, .writes = true,
    .path = ROUTE_BACKEND_KEY, .params = update_params,
    .state_size = sizeof(struct update_request), .setup = setup, .teardown = teardown,
    .serve = serve_one,
};

const struct route updates_route = {
    .name = "updates", .usage = "POST /updates/{backend}?queries=N", .post = true, .writes = true,
    .path = ROUTE_BACKEND, .params = updates_params, .shares = &update_route,
    .state_size = sizeof(struct update_request), .serve = serve_many,
};
