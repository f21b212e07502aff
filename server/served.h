/* A backend serving one dataset, shared by every loop: its lookup SQL, its
 * outage state, its pool budget and (postal) its key set's watcher.
 *
 * Contract: written at start (served_init, served_start) by main's
 * thread; after that read by every loop, and changed only through the
 * atomics and locks below: the outage state (up, gen, probes), the pool
 * budget (pooled, starving); the key set is keyset.c's. Calls only down:
 * lib's drivers. */
#ifndef ZB_SERVED_H
#define ZB_SERVED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "conf.h"
#include "counter.h"
#include "dataset.h"
#include "loop.h"
#include "util.h"

/* (dataset, backend) pairs the server can serve: --datasets times
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
     * never writes, but through the writer of a backend with `writes = yes`
     * (served_init_hits). Strings still point into the zb_conf, which
     * outlives us. */
    struct backend_conf conf;
    const struct backend_driver *drv;
    enum zb_strategy strategy;     /* the default: conf's strategy, else pooled */
    int index;                     /* in srv->served[], and in each loop's lanes[] */
    /* The dataset this pair serves (owned by the caller of server_start):
     * its table on this backend, looked up by its key column. */
    const struct dataset *data;
    bool postal;                   /* the postal dataset: /zip's answer and /random */
    enum key_kind key_kind;
    char label[160];               /* "pg" for postal, "cities/pg" else: for messages */
    char sql[1024];                /* zb_select_sql of the dataset's table */
    int nparams;                   /* sql's parameters: 1 (the key), but the writer's 3 */
    /* Each statement commits on its own (the _hits pairs): in-process
     * lookups do not share the iteration's read transaction. */
    bool autocommit;
    /* A postal backend with `writes = yes`: the read and the write of
     * POST /update/ on its {table}_hits (update.h), pairs of their own
     * (lanes, pools, statements) after the served ones; NULL: writes off. */
    struct served *hits_read, *hits_write;
    /* A postal backend's listing page (GET /list/): the rows of one jis_code,
     * a pair of its own after the served ones (its statement differs). */
    struct served *list;
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

    /* Pooled connections of every loop, open or opening: at most
     * pool_hard_max. A loop that needs one more and finds none left sets
     * its bit in starving; a loop that frees an idle one then closes it
     * instead of keeping it, so the budget goes where the waiters are. */
    _Atomic int pooled;
    _Atomic uint64_t starving;

    struct keyset *keyset;         /* /random's codes (keyset.h), postal only */
};

int  served_init(struct served *sb, const struct backend_conf *bc,
                 const struct dataset *data, int index, struct zb_err *err);
/* sb (index) set up as the read (write false: SELECT stamp, read-only) or
 * the write (UPDATE ... SET stamp, writable, never waiting) of main's
 * {table}_hits, on main's backend. */
int  served_init_hits(struct served *sb, const struct served *main, bool write, int index,
                      struct zb_err *err);
/* sb (index) set up as main's listing: every row of main's table whose
 * jis_code is the one parameter (the loader indexes it). */
int  served_init_list(struct served *sb, const struct served *main, int index, struct zb_err *err);
/* One synchronous connect at start, so a backend down is reported before
 * the loops run. */
int  served_start(struct served *sb, struct zb_err *err);
void served_destroy(struct served *sb);
/* Outage state. may_try: true if a lookup may go to the database now; a
 * probe (*probe set) must be ended with served_end_probe. */
bool served_may_try(struct served *sb, bool *probe);
void served_end_probe(struct served *sb);
void served_mark_down(struct served *sb, const struct zb_err *err);
void served_mark_up(struct served *sb);
/* Logs an error of the database's (500), at most once a second per loop. */
void served_log_error(const struct served *sb, const char *what, const char *msg);
/* Everything opened before the connection that failed is suspect. */
void served_bump_gen(struct served *sb, unsigned seen);
void served_down_error(struct served *sb, struct zb_err *err);
/* The kind of the error that marked sb down last. */
enum zb_err_kind served_down_kind(struct served *sb);
#endif
