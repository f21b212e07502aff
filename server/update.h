/* The write request type (docs/REQUEST-TYPES.md): POST /update/{backend}/{code}
 * and POST /updates/{backend}?queries=N. Each code is read, then written,
 * on the backend's {table}_hits, which update_setup makes and fills at start:
 *   read   SELECT stamp FROM {table}_hits WHERE zip_code = ?   (no row: 404)
 *   write  UPDATE {table}_hits SET stamp = ? WHERE zip_code = ? AND stamp < ?
 * each a lookup (lookup.h) on a pair of its own (served.h's hits_read,
 * hits_write: their own lanes, pools and statement), by the request's
 * strategy; the write is autocommitted before the answer. A stamp is the
 * server's own counter (struct server's stamp). The codes of one request
 * are read and written one after the other.
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
    struct server *srv;
    struct lane *lanes;            /* the loop's, by served index */
    const struct served *sb;       /* the backend named (its postal pair) */
    enum zb_strategy strategy;
    struct jbuf *body;
    bool many;                     /* /updates: {"queries":N,"written":[...]} */
    int n, next;                   /* codes, and the next one to read */
    uint32_t codes[UPDATE_MAX_QUERIES];
    bool writing, found, running, again;
    char was[24], stamp[24];
    /* Called once: 200 (body written), or status with msg (and the code
     * it is about, or NULL). */
    void (*done)(struct update_job *u, unsigned status, const char *code, const char *msg);
};

/* Which route path is: 1 /update/{backend}/{code}, 2 /updates/{backend},
 * 0 neither; the backend's name (not NUL-terminated) and the code ("" if
 * none) set where asked (NULL: not). */
int  update_route(const char *path, const char **backend, size_t *blen, const char **code);
/* Why writes are refused on sb (403), or NULL. */
const char *update_refusal(const struct served *sb);
/* N of queries=N (NULL: missing), or -1 if it is not a whole number of
 * 1..UPDATE_MAX_QUERIES. */
int  update_queries(const char *s);
/* u (srv, lanes, sb, strategy, body, done set) runs: the one code (7
 * digits, checked), or (code NULL) n codes drawn from sb's key set with
 * rng. done() may come before this returns. false, with nothing started:
 * the key set is being read; call again once it is (keyset_wait). */
bool update_start(struct update_job *u, const char *code, int n, uint64_t *rng);
/* At start, main's thread: sb's {table}_hits made if missing and given a
 * row (stamp 0) for each code of the postal table it lacks; the stamp
 * counter started. A failure is logged: the writes then fail (500/503). */
void update_setup(struct server *srv, struct served *sb);

#endif
