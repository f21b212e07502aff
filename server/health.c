/* /health (see health.h): a lookup per served pair of a key every key
 * column takes (whether it is there does not matter), by the pooled
 * strategy; the answer when the last is in. */
#include <stdlib.h>
#include <string.h>

#include "health.h"
#include "lookup.h"

struct health {
    struct server *srv;
    struct jbuf *b;
    void (*done)(void *arg, unsigned status);
    void *arg;
    int pending;
    struct health_item {
        struct lookup lk;          /* first: the item is found from its lookup */
        struct health *h;
        bool up;
        char reason[512];
    } item[SRV_MAX_SERVED];
};

/* Every check is in: the answer written, h freed, done called. */
static void answer(struct health *h)
{
    struct server *srv = h->srv;
    struct jbuf *b = h->b;
    bool all = true;
    for (int i = 0; i < srv->nserved; i++)
        all &= h->item[i].up;
    b->n = 0;
    jb_printf(b, "{\"status\":\"%s\",\"backends\":[", all ? "ok" : "degraded");
    for (int i = 0; i < srv->nserved; i++) {
        struct served *sb = srv->served[i];
        jb_printf(b, "%s{\"name\":", i ? "," : "");
        jb_cstr(b, sb->conf.name);
        if (!sb->postal) {
            JB_LIT(b, ",\"dataset\":");
            jb_cstr(b, sb->data->conf->name);
        }
        JB_LIT(b, ",\"driver\":");
        jb_cstr(b, sb->conf.driver);
        jb_printf(b, ",\"up\":%s", h->item[i].up ? "true" : "false");
        if (!h->item[i].up) {
            JB_LIT(b, ",\"error\":");
            jb_cstr(b, h->item[i].reason);
        }
        JB_LIT(b, "}");
    }
    JB_LIT(b, "]}");
    void (*done)(void *, unsigned) = h->done;
    void *arg = h->arg;
    free(h);
    done(arg, all ? 200 : 503);
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
        lookup_why(lk, err, atomic_load_explicit(&it->h->srv->stopping, RELAXED),
                   "the health check's lookup", "health check failed", it->reason,
                   sizeof it->reason);
    settle(it->h);
}

bool health_start(struct server *srv, struct lane *lanes, struct jbuf *b,
                  void (*done)(void *arg, unsigned status), void *arg)
{
    struct health *h = calloc(1, sizeof *h);
    if (!h)
        return false;
    h->srv = srv;
    h->b = b;
    h->done = done;
    h->arg = arg;
    h->pending = srv->nserved + 1;   /* + 1: no answer before all are started */
    for (int i = 0; i < srv->nserved; i++) {
        struct health_item *it = &h->item[i];
        it->h = h;
        it->lk.lane = &lanes[i];
        it->lk.strategy = ZB_POOLED;
        const char *key = srv->served[i]->postal ? "0000000" : "0";
        it->lk.keylen = strlen(key);
        memcpy(it->lk.key, key, it->lk.keylen + 1);
        it->lk.done = item_done;
        lookup_start(&it->lk, true);
    }
    settle(h);
    return true;
}
