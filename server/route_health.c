/* GET /health: one real round trip to every served table, all at once,
 * each by its backend's own strategy: a lookup of a key every key column
 * takes (whether it is there does not matter), a probe even while a
 * backend is down. The answer when the last is in: 200 if every table is
 * up, 503 otherwise. */
#include <stdlib.h>
#include <string.h>

#include "route.h"

/* Its per-request state. */
struct health {
    struct request *rq;
    int pending;
    struct health_item {
        struct lookup lk;          /* first: the item is found from its lookup */
        struct health *h;
        bool up;
        char reason[512];
    } item[SRV_MAX_SERVED];
};

/* Every check is in: the answer. */
static void answer(struct health *h)
{
    struct request *rq = h->rq;
    struct server *srv = rq->loop->srv;
    struct jbuf *b = &rq->body;
    if (rq->orphaned) {
        request_gone(rq);
        return;
    }
    bool all = true;
    for (int i = 0; i < srv->nserved; i++)
        all &= h->item[i].up;
    b->n = 0;
    jb_printf(b, "{\"status\":\"%s\",\"backends\":[", all ? "ok" : "degraded");
    for (int i = 0; i < srv->nserved; i++) {
        struct served *sv = srv->served[i];
        jb_printf(b, "%s{\"name\":", i ? "," : "");
        jb_cstr(b, sv->conf.name);
        if (sv->key_kind != KEY_POSTAL) {
            JB_LIT(b, ",\"dataset\":");
            jb_cstr(b, sv->data->conf->name);
        }
        JB_LIT(b, ",\"driver\":");
        jb_cstr(b, sv->conf.driver);
        jb_printf(b, ",\"up\":%s", h->item[i].up ? "true" : "false");
        if (!h->item[i].up) {
            JB_LIT(b, ",\"error\":");
            jb_cstr(b, h->item[i].reason);
        }
        JB_LIT(b, "}");
    }
    JB_LIT(b, "]}");
    request_answer(rq, all ? 200 : 503);
}

/* One more check is in (or, the last time, all were started). */
static void settle(struct health *h)
{
    if (--h->pending == 0)
        answer(h);
}

static void item_done(struct lookup *lk, int rc, const struct zb_err *err)
{
    struct health_item *it = (struct health_item *)lk;
    it->up = rc == LOOKUP_OK;
    if (err)
        lookup_why(lk, err, request_stopping(it->h->rq), "the health check's lookup", "health check failed", it->reason,
                   sizeof it->reason);
    settle(it->h);
}

static void serve(struct request *rq)
{
    struct health *h = rq->state;
    struct server *srv = rq->loop->srv;
    h->rq = rq;
    h->pending = srv->nserved + 1;   /* + 1: no answer before all are started */
    for (int i = 0; i < srv->nserved; i++) {
        struct health_item *it = &h->item[i];
        it->h = h;
        it->lk.lane = &rq->loop->lanes[i];
        it->lk.strategy = srv->served[i]->strategy;
        const char *key = srv->served[i]->key_kind == KEY_POSTAL ? "0000000" : "0";
        it->lk.keylen = strlen(key);
        memcpy(it->lk.key, key, it->lk.keylen + 1);
        it->lk.on_row = NULL;
        it->lk.done = item_done;
        served_probe_now(srv->served[i]);   /* /health always tries: it is rare */
        lookup_start(&it->lk);
    }
    settle(h);
}

const struct route health_route = {
    .name = "health", .usage = "GET /health", .path = ROUTE_NONE,
    .state_size = sizeof(struct health), .serve = serve,
};
