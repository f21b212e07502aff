/* A strategy: how lookups of one loop reach a database over its own
 * asynchronous connections (pool.c, pipeline.c, perrequest.c).
 *
 * Contract: lookup.c hands a lookup down with submit(); the strategy
 * opens, keeps and closes its connections (dbconn.h) and ends every
 * lookup with lookup_finish (lb.h). A connection holds a pointer to its
 * strategy and reports back up through conn_ready and conn_failed: no
 * switch on kinds anywhere. A new strategy is one file with one instance
 * of this, and one line of the table in lookup.c (its name: lib/conf.h's
 * ZB_STRATEGIES). */
#ifndef ZB_STRATEGY_H
#define ZB_STRATEGY_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

struct lookup;
struct dbconn;
struct lb;
struct loop;

struct strategy {
    /* Sets up its part of lb (its lists, its shares). */
    void (*init)(struct lb *lb);
    /* Runs lk (lk->lb and key set) on a connection of its loop; lk may
     * end before this returns. */
    void (*submit)(struct lookup *lk);
    /* dc is connected (and prepared), or has answered all it was sent. */
    void (*conn_ready)(struct dbconn *dc);
    /* dc is lost, timed out, or its prepared lookup went stale (err's
     * kind says which); what it had sent is still in dc->sent. The
     * strategy ends or retries those lookups and closes dc. */
    void (*conn_failed)(struct dbconn *dc, const struct zb_err *err);
    /* lb's deadlines due by now handled; returns its next (0: none). */
    uint64_t (*deadlines)(struct lb *lb, uint64_t now);
    /* Shutdown: every connection and waiting lookup of lb fails with err. */
    void (*fail_all)(struct lb *lb, const struct zb_err *err);
    /* Another loop woke this one (NULL: nothing to do): pooled gives an
     * idle connection to a loop that starves. */
    void (*woken)(struct lb *lb);
    /* A fresh connection per lookup: no prepared statement, and its
     * connect bounded by per_request_connect_timeout_s. */
    bool per_lookup;
    /* Its connections run in pipeline mode (the driver must be able to). */
    bool pipelines;
};

extern const struct strategy pooled_strategy, per_request_strategy, pipelined_strategy;

#endif
