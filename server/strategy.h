/* A strategy: how the lookups of one lane (one loop's share of one
 * served table) reach its database.
 *
 * Contract: STRATEGIES below is the one list of them; lookup.c builds the
 * one table of instances from it and calls them by pointer; nothing else
 * names a strategy. Each strategy keeps its own state per lane, which it
 * allocates (init) and frees (destroy), and may keep state shared by
 * every loop per served table (shared_init): no other file sees inside
 * either. A strategy over asynchronous connections (dbconn.h) opens, keeps
 * and closes them; a connection holds a pointer to its strategy and its
 * state, and reports back up through conn_ready and conn_failed. Every
 * lookup a strategy is handed ends with lookup_finish (lookup.h), exactly
 * once. A strategy declares its own counters (figures): the lane keeps
 * them, /stats prints them by their names. A new strategy is one file with
 * one instance of this, and one line of STRATEGIES. */
#ifndef ZB_STRATEGY_H
#define ZB_STRATEGY_H

#include <stdbool.h>
#include <stdint.h>

#include "counter.h"
#include "util.h"

/* The strategies: X(TOKEN, "name"). TOKEN.c defines TOKEN_strategy;
 * "name" is the config's `strategy` word, ?strategy='s and /stats's. */
#define STRATEGIES(X) \
    X(pooled, "pooled") \
    X(per_request, "per-request") \
    X(pipelined, "pipelined") \
    /* a new strategy's line above */

#define STRATEGY_ID(token, name) STRATEGY_##token,
enum strategy_id { STRATEGIES(STRATEGY_ID) NSTRATEGIES };
#undef STRATEGY_ID

/* Their names by enum strategy_id, NULL-terminated (lookup.c). */
extern const char *const strategy_names[NSTRATEGIES + 1];
/* name's id, or -1. */
int  strategy_by_name(const char *name);

/* Most counters one strategy declares. */
#define STRATEGY_MAX_FIGURES 8

struct backend_driver;
struct lookup;
struct dbconn;
struct lane;
struct served;

struct strategy {
    /* Can it serve a backend of drv? */
    bool (*takes)(const struct backend_driver *drv);
    /* Why it cannot, after "the DRIVER driver ": for a message. */
    const char *cannot;
    /* Serves this strategy's lookups on a backend it cannot take (an
     * in-process database); NULL: none. */
    const struct strategy *in_process;
    /* Its counters' names, NULL-terminated (at most STRATEGY_MAX_FIGURES):
     * the lane keeps them (lane_way's figures, by the same index). */
    const char *const *figures;
    /* Its state shared by every loop on sv (a budget), made before the
     * loops run; NULL: none kept. */
    void *(*shared_init)(struct served *sv, struct zb_err *err);
    void (*shared_free)(void *shared);
    /* Its state on lane, allocated, counting into figures (the lane's,
     * by the index of each name in figures above); NULL with err on
     * failure. */
    void *(*init)(struct lane *lane, counter *figures, struct zb_err *err);
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

/* Every strategy's instance, one per file, named TOKEN_strategy after its
 * line in STRATEGIES; and the in-process ones (in_process.c). */
#define STRATEGY_DECLARE(token, name) extern const struct strategy token##_strategy;
STRATEGIES(STRATEGY_DECLARE)
#undef STRATEGY_DECLARE
extern const struct strategy in_process_pooled_strategy, in_process_per_request_strategy;

#endif
