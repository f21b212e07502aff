/* A served table: one dataset's table on one backend, shared by every
 * loop: its statement, its outage state, each strategy's shared state
 * (opaque) and (postal) its load generation and keys.
 *
 * Contract: written at start (served_init, served_init_beside,
 * served_start) by main's thread; after that read by every loop, and
 * changed only through the atomics and locks below (the outage state: up,
 * gen, probes) and by the parts that own the opaque state (the
 * strategies' shared state, keyset.c's). Calls only down: lib's drivers. */
#ifndef ZB_SERVED_H
#define ZB_SERVED_H

#include <apr_pools.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "conf.h"
#include "counter.h"
#include "dataset.h"
#include "loop.h"
#include "strategy.h"
#include "util.h"

/* Served tables the server can hold: --datasets times
 * --backends. */
#define SRV_MAX_SERVED 32
/* The longest key a request may name, in bytes after percent-decoding: the
 * loader's limit (lib/dataset.h), so every row loaded can be looked up. */
#define SRV_KEY_MAX ZB_KEY_MAX

/* How a request's key is checked before any database work: the postal
 * dataset's 7 digits, an integer key column's optional '-' and 1-18
 * digits, or a text key column's any non-empty bytes. */
enum key_kind { KEY_POSTAL, KEY_INTEGER, KEY_TEXT };

/* A column's field name (the file's header text, dataset_field) as a JSON
 * key, written once: `"name":` (`,"name":` after the first); s points
 * into the served's keytext. */
struct json_key {
    const char *s;
    unsigned short len;
};

struct served {
    /* Copy of the [backend NAME] section, read_only forced on: the server
     * never writes, but through the tables a write route adds (writable,
     * never waiting). Strings still point into the zb_conf, which outlives
     * us. */
    struct backend_conf conf;
    const struct backend_driver *drv;
    enum strategy_id strategy;     /* the default: conf's strategy, else pooled */
    int index;                     /* in srv->served[], and in each loop's lanes[] */
    /* The dataset this table is of (owned by the caller of server_start):
     * its table on this backend, looked up by its key column. */
    const struct dataset *data;
    enum key_kind key_kind;        /* KEY_POSTAL: the postal dataset's (/zip's answer) */
    char label[160];               /* "pg" for postal, "cities/pg" else: for messages */
    char sql[1024];                /* the statement its lookups run */
    int nparams;                   /* sql's parameters: 1, the key */
    /* Each statement commits on its own (a write route's tables): in-process
     * lookups do not share the iteration's read transaction, and a
     * pipeline syncs after each one. */
    bool autocommit;
    /* A table a route added beside a served one (its statement differs:
     * the listing's, the write table's): the table it serves for, and its
     * role, the name /stats shows it by; NULL for a served table itself. */
    const struct served *owner;
    const char *role;
    struct json_key colkey[ZB_MAX_COLUMNS];
    char *keytext;                 /* every colkey's text (malloc'd; served_destroy frees) */

    /* Outage handling: a connection error marks the backend down and bumps
     * gen, so every connection opened before it is discarded when next
     * taken instead of failing one request each. While down, at most one
     * lookup at a time tries (the probe), the next one PROBE_NS after the
     * last ended; the others get 503 at once. */
    _Atomic bool up;
    _Atomic unsigned gen;
    _Atomic uint64_t next_probe_ns;
    pthread_mutex_t reason_lock;
    char down_reason[512];         /* last connect error (under reason_lock), for the log */
    enum zb_err_kind down_kind;    /* and its kind (under reason_lock), for clients */

    /* Each strategy's state shared by the loops (strategy.h's shared_init),
     * opaque here, by enum strategy_id; NULL where it keeps none. */
    void *shared[NSTRATEGIES];
    /* The table's load generation and its keys (keyset.h), postal only. */
    struct keyset *keyset;
};

int  served_init(struct served *sv, const struct backend_conf *bc,
                 const struct dataset *data, int index, struct zb_err *err);
/* sv (index) set up as a table beside owner (a route's: served.h's owner
 * and role), on owner's backend with its own statement sql of nparams
 * parameters (the key first; sql NULL: served_select makes it). writable: it writes, each statement
 * committed on its own, and never waits for another's lock. */
int  served_init_beside(struct served *sv, const struct served *owner, const char *role,
                      const char *sql, int nparams, bool writable, int index, struct zb_err *err);
/* sv's statement: every column of the rows of t whose key column (t.key)
 * is the one parameter (what: "lookup", for a message), and its columns'
 * JSON keys. */
int  served_select(struct served *sv, struct zb_table t, const char *what, struct zb_err *err);
/* A served table more, appended to list[*n] (SRV_MAX_SERVED at most) from
 * pool, its index *n; NULL with err when the list is full. */
struct served *served_add(struct served **list, int *n, apr_pool_t *pool, struct zb_err *err);
/* One synchronous connect at start, so a backend down is reported before
 * the loops run. */
int  served_start(struct served *sv, struct zb_err *err);
void served_destroy(struct served *sv);
/* Outage state. may_try: true if a lookup may go to the database now; a
 * probe (*probe set) must be ended with served_end_probe. */
bool served_may_try(struct served *sv, bool *probe);
void served_end_probe(struct served *sv);
/* The next lookup may probe at once, even within PROBE_NS of the last
 * (/health: a real round trip even while down). */
void served_probe_now(struct served *sv);
void served_mark_down(struct served *sv, const struct zb_err *err);
void served_mark_up(struct served *sv);
/* Logs an error of the database's (500), at most once a second per loop. */
void served_log_error(const struct served *sv, const char *what, const char *msg);
/* Everything opened before the connection that failed is suspect. */
void served_bump_gen(struct served *sv, unsigned seen);
void served_down_error(struct served *sv, struct zb_err *err);
/* The kind of the error that marked sv down last. */
enum zb_err_kind served_down_kind(struct served *sv);
#endif
