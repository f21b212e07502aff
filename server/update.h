/* The write request type's work (docs/REQUEST-TYPES.md), for the routes
 * POST /update/{backend}/{code} and POST /updates/{backend}?queries=N
 * (route_update.c): each code is read, then written, on the backend's
 * write table, {table}_hits:
 *   read   SELECT stamp FROM {table}_hits WHERE zip_code = ?   (no row: 404)
 *   write  the driver's stamp write (backend.h's stamp_sql): the row's
 *          stamp set to a value the database makes, unique and increasing
 *          across every writer, and answered (no row: 404)
 * each a lookup (lookup.h) on a served table of the route's own (its own
 * lanes, pools and statement), by the request's strategy. Each write
 * commits on its own, in a transaction no other request's statements
 * share, before the answer; the answer's stamp is the one the row holds
 * now. The codes of one request are read and written one after the other.
 *
 * Contract: update_start ends, sooner or later, with the job's done()
 * exactly once: status 200 with the answer in body, or an error status
 * with its message. Calls only down: lookup, keyset, served. */
#ifndef ZB_UPDATE_H
#define ZB_UPDATE_H

#include "json.h"
#include "lookup.h"
#include "shared.h"

/* queries=N of /updates: 1 to this. */
#define UPDATE_MAX_QUERIES 500

struct update_job {
    struct lookup lk;              /* the read or the write under way */
    struct lane *read, *write;     /* the lanes of the write table's read and write, this loop's */
    enum strategy_id strategy;
    struct jbuf *body;
    bool many;                     /* /updates: {"queries":N,"written":[...]} */
    int n, next;                   /* codes, and the next one to read */
    uint32_t codes[UPDATE_MAX_QUERIES];
    bool writing, found, running, again, stopping;
    char was[24], stamp[24];
    /* Called once: 200 (body written), or status with msg (and the code
     * it is about, or NULL). */
    void (*done)(struct update_job *u, unsigned status, const char *code, const char *msg);
};

/* u (read, write, strategy, body, done set) runs on the codes of codes[]
 * (n of them, 7 digits each; many: /updates' answer), for the backend
 * named name. done() may come before this returns. */
void update_start(struct update_job *u, const char *name, int n, bool many);

/* At start, main's thread: the write table of sv (sv's table + "_hits")
 * made if missing, given a row (stamp 0) for each code of sv's table it
 * lacks, and what the driver's stamp needs made. -1 with err. */
int  update_table(const struct served *sv, struct zb_err *err);

#endif
