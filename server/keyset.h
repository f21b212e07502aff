/* A postal table's load generation, and its key set (/random's,
 * /queries', /updates'): the table's distinct codes, read by a thread of
 * the backend's own, and read again whenever a load replaced the table.
 *
 * Contract: keyset_start (main's thread, after served_start) starts the
 * watcher of a postal backend; keyset_stop (once the loops are joined)
 * ends it and frees every set. In between, any loop may call keyset_get
 * and read the set it returns until the end of that loop iteration: a set
 * replaced is freed only once every loop has begun another (loop.h's
 * turns). The requests that come while a set is read wait here too
 * (struct key_waiters, one per loop), woken when it is in, given up at
 * acquire_timeout_ms. The watcher asks the database every KEYSET_CHECK_MS
 * for the generation of the table's last load (the driver's
 * generation_sql), and when it moved, runs the hooks, reads the codes
 * again, publishes the new set and wakes every loop.
 * Calls only down: served, loop, lib's drivers. */
#ifndef ZB_KEYSET_H
#define ZB_KEYSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"
#include "util.h"
#include "served.h"

#define KEYSET_CHECK_MS 200

/* The codes of the table as read at loaded_ns, sorted; never changed once
 * published (a new table gets a new set). */
struct key_set {
    uint64_t loaded_ns;            /* zb_now_ns() when they were read */
    size_t n;
    uint32_t keys[];
};

/* sv's key set made (a postal served table's; a no-op for the others),
 * before the routes are set up, which may hook onto it. */
int  keyset_prepare(struct served *sv, struct zb_err *err);
/* fn(arg, sv) runs on the watcher's thread each time the generation of
 * sv's table moved (a load replaced it), before its codes are read again:
 * what a route derives from the table follows it. At most 4. */
int  keyset_hook(struct served *sv, void (*fn)(void *arg, struct served *sv), void *arg,
                 struct zb_err *err);
/* A number that changes whenever sv's table was replaced (0: no key set):
 * what is kept from a table (/cached's answers) is kept with it. */
uint64_t keyset_serial(const struct served *sv);
/* The watcher of sv's key set started (a no-op without one), for the
 * server's loops[0..nloops); the first read begins at once when sv is
 * up. */
int  keyset_start(struct served *sv, struct loop *const *loops, int nloops,
                  struct zb_err *err);
/* The watcher ended (after the loops were joined), every set freed. */
void keyset_stop(struct served *sv);
/* sv's key set, or NULL: then *loading says whether a read is under way
 * (asked for here, unless one failed in the last second), and err why
 * there is none. */
const struct key_set *keyset_get(struct served *sv, bool *loading, struct zb_err *err);
/* Requests waiting for a key set wait on: none yet, and a read under way. */
bool keyset_pending(struct served *sv);
/* What /stats says: the set's size, and its age in seconds (-1: none). */
size_t keyset_size(struct served *sv, double *age_s);
/* A key of set drawn with rng: one in the set, or with probability miss
 * (or from an empty set) a 7-digit code that is not. */
uint32_t keyset_pick(const struct key_set *set, double miss, uint64_t *rng);

/* A request waiting for its backend's key set, embedded in the request.
 * over(w, NULL): a read is no longer under way, keyset_get may be asked
 * again; it returns true if the request must wait on (a read again).
 * over(w, err): the wait ended (err: not loaded within acquire_timeout_ms,
 * or the server is stopping): the request answers 503 with err's text;
 * the return is ignored. */
struct key_wait;
APR_RING_HEAD(key_wait_list, key_wait);
struct key_wait {
    APR_RING_ENTRY(key_wait) link;
    struct served *sv;
    uint64_t since_ns;
    bool (*over)(struct key_wait *w, const struct zb_err *err);
};

/* A loop's requests waiting for key sets: touched by that loop only. */
struct key_waiters {
    struct loop *loop;
    struct key_wait_list list;
};

void keyset_waiters_init(struct key_waiters *ws, struct loop *l);
/* w (sv and over set) waits, at most sv's acquire_timeout_ms. */
void keyset_wait(struct key_waiters *ws, struct key_wait *w);
/* The loop was woken (a key set was published, or a read failed): the
 * waiters whose read is over hear over(w, NULL). */
void keyset_woken(struct key_waiters *ws);
/* Waiters past acquire_timeout_ms end; returns the next such deadline
 * (0: none wait). */
uint64_t keyset_deadlines(struct key_waiters *ws, uint64_t now);
/* Shutdown: every waiter ends. */
void keyset_wind_down(struct key_waiters *ws);

#endif
