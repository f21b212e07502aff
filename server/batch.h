/* Several lookups on one lane as one piece of work: /queries' N codes,
 * all in flight at once on the request's strategy (pooled takes up to N
 * connections, pipelined sends them down one, per-request connects N
 * times), ended together.
 *
 * Contract: batch_reserve makes room for n lookups (kept, and grown, for
 * the next batch of the same owner: no allocation once it is big enough);
 * batch_start runs them and calls done() once, when the last has ended,
 * maybe before it returns. Each lookup writes its rows into its own body
 * through on_row (its item as the lookup's arg), so they can end in any order and be
 * put together in the order asked. Calls only down: lookup. */
#ifndef ZB_BATCH_H
#define ZB_BATCH_H

#include "json.h"
#include "lookup.h"

/* queries=N: how many lookups one request may ask for. */
#define BATCH_MAX 500

struct batch;

struct batch_item {
    struct lookup lk;
    struct jbuf body;              /* what on_row wrote for this lookup */
    int rc;                        /* LOOKUP_*, once ended */
    struct batch *batch;
};

struct batch {
    int cap, n, pending;
    int rc;                        /* LOOKUP_OK, or the worst failure: UNAVAILABLE before ERROR */
    struct batch_item *failed;     /* the first lookup that failed with rc */
    struct zb_err err;             /* its error */
    void (*done)(struct batch *b);
    void *arg;
    struct batch_item item[];
};

/* *b with room for n lookups (a new or bigger one; *b freed if replaced);
 * -1 when out of memory (*b is left as it was). */
int  batch_reserve(struct batch **b, int n);
void batch_free(struct batch *b);
/* Item i's key, before batch_start; on_row and arg set for every item. */
void batch_set_key(struct batch *b, int i, const char *key, size_t len);
/* Runs b->n lookups (keys set, each body begun by the caller) on lane by
 * strategy; done() once all have ended. */
void batch_start(struct batch *b, struct lane *lane, enum strategy_id strategy, lookup_row_fn on_row);

#endif
