/* A strategy: how the lookups of one lane (one loop's share of one
 * backend) reach its database.
 *
 * Contract: lookup.c holds the one table of strategies (by lib/conf.h's
 * ZB_STRATEGIES) and calls these by pointer; nothing else names a
 * strategy. Each strategy keeps its own state per lane, which it
 * allocates (init) and frees (destroy): no other file sees inside it. A
 * strategy over asynchronous connections (dbconn.h) opens, keeps and
 * closes them; a connection holds a pointer to its strategy and its
 * state, and reports back up through conn_ready and conn_failed. Every
 * lookup a strategy is handed ends with lookup_finish (lookup.h), exactly
 * once. A new strategy is one file with one instance of this, and one
 * line of ZB_STRATEGIES. */
#ifndef ZB_STRATEGY_H
#define ZB_STRATEGY_H

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "util.h"

struct backend_driver;
struct backend_conf;
struct lookup;
struct dbconn;
struct lane;

struct strategy {
    /* Can it serve a backend of drv? */
    bool (*takes)(const struct backend_driver *drv);
    /* Why it cannot, after "the DRIVER driver ": for a message. */
    const char *cannot;
    /* Serves this strategy's lookups on a backend it cannot take (an
     * in-process database); NULL: none. */
    const struct strategy *in_process;
    /* Its state on lane, allocated; NULL with err on failure. */
    void *(*init)(struct lane *lane, struct zb_err *err);
    /* After the loop stopped: what it kept on lane closed and freed. */
    void (*destroy)(void *state);
    /* Runs lk (lane and key set) on lane; lk may end before this returns. */
    void (*submit)(void *state, struct lookup *lk);
    /* A connection of its own, dc, was just connected: sets it up for
     * lookups (prepares the lookup). Returns -1 with err, 0 if dc is
     * ready now, 1 if it is once its answer comes. NULL: nothing to set
     * up. */
    int (*prepare)(struct dbconn *dc, struct zb_err *err);
    /* dc is connected (and prepared), or has answered all it was sent. */
    void (*conn_ready)(struct dbconn *dc);
    /* dc is lost, timed out, or its prepared lookup went stale (err's
     * kind says which); what it had sent is still in dc->sent. The
     * strategy ends or retries those lookups and closes dc. */
    void (*conn_failed)(struct dbconn *dc, const struct zb_err *err);
    /* Its deadlines due by now handled; returns its next (0: none). */
    uint64_t (*deadlines)(void *state, uint64_t now);
    /* Another loop woke this one. NULL: nothing to do. */
    void (*woken)(void *state);
    /* The end of the loop's iteration. NULL: nothing to do. */
    void (*iterated)(void *state);
    /* Shutdown: every connection and waiting lookup fails with err. */
    void (*fail_all)(void *state, const struct zb_err *err);
};

/* Every strategy's instance, one per file, named NAME_strategy after its
 * line in ZB_STRATEGIES; and the in-process ones. */
#define ZB_STRATEGY_DECLARE(id, name, token) extern const struct strategy token##_strategy;
ZB_STRATEGIES(ZB_STRATEGY_DECLARE)
#undef ZB_STRATEGY_DECLARE
extern const struct strategy inline_strategy, inline_per_request_strategy;

#endif
