/* Several lookups on one lane, ended together (batch.h). */
#include <stdlib.h>
#include <string.h>

#include "batch.h"

int batch_reserve(struct batch **b, int n)
{
    if (*b && (*b)->cap >= n)
        return 0;
    struct batch *nb = calloc(1, sizeof *nb + (size_t)n * sizeof nb->item[0]);
    if (!nb)
        return -1;
    nb->cap = n;
    if (*b) {                      /* keep the bodies' buffers */
        for (int i = 0; i < (*b)->cap; i++)
            nb->item[i].body = (*b)->item[i].body;
        free(*b);
    }
    *b = nb;
    return 0;
}

void batch_free(struct batch *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->cap; i++)
        free(b->item[i].body.p);
    free(b);
}

void batch_set_key(struct batch *b, int i, const char *key, size_t len)
{
    struct lookup *lk = &b->item[i].lk;
    memcpy(lk->key, key, len);
    lk->key[len] = 0;
    lk->keylen = len;
}

static void item_done(struct lookup *lk, int rc, const struct zb_err *err)
{
    struct batch_item *it = container_of(lk, struct batch_item, lk);
    struct batch *b = it->batch;
    it->rc = rc;
    /* 503 (the backend is down or overloaded) says more than 500. */
    if (rc != LOOKUP_OK && (b->rc == LOOKUP_OK || (rc == LOOKUP_UNAVAILABLE && b->rc != rc))) {
        b->rc = rc;
        b->failed = it;
        b->err = *err;
    }
    if (--b->pending == 0)
        b->done(b);
}

void batch_start(struct batch *b, struct lane *lane, enum strategy_id strategy, lookup_row_fn on_row)
{
    b->rc = LOOKUP_OK;
    b->failed = NULL;
    b->pending = b->n;
    for (int i = 0; i < b->n; i++) {
        struct batch_item *it = &b->item[i];
        struct lookup *lk = &it->lk;
        it->batch = b;
        it->rc = LOOKUP_OK;
        lk->lane = lane;
        lk->strategy = strategy;
        lk->on_row = on_row;
        lk->arg = it;
        lk->done = item_done;
        lk->overloaded = false;
        lookup_start(lk);
    }
}
