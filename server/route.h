/* A route: one request type, as redis has a command.
 *
 * Contract: routes.c holds the one table of routes; http.c matches each
 * request against it (its first path segment, then its method) and hands
 * the request over (request.h); nothing else lists routes, and no route
 * names another but the one whose state it shares. A route owns, in its
 * own file: its path and methods, its query parameters (parsed once by
 * params.c against its list), its per-request state (kept with the
 * request's spare, so a warm server allocates nothing per request), its
 * done callbacks and its answer, and any served tables of its own (a
 * statement of its own on a backend: setup, through served_add). The 404
 * and 405 answers, `server --list-routes` and the names the loader
 * refuses for a dataset all come from the table. A new request type is
 * one file and one line of routes.c. Calls only down: request, lookup,
 * served, keyset. */
#ifndef ZB_ROUTE_H
#define ZB_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "counter.h"
#include "request.h"

/* What a route's path holds after its first segment, which is its name,
 * or (ROUTE_DATASET) a served dataset's name, "zip" the postal one's:
 *   ROUTE_NONE         nothing: /health
 *   ROUTE_BACKEND      /NAME/{backend}: one of the postal dataset's
 *   ROUTE_BACKEND_KEY  /NAME/{backend}/{key}, the key the rest of the path
 *   ROUTE_DATASET      /{dataset}/{backend}/{key}
 * http.c finds the served table {backend} names (404 if none) and hands
 * it over with the key (request.h's sv, key). */
enum route_path { ROUTE_NONE, ROUTE_BACKEND, ROUTE_BACKEND_KEY, ROUTE_DATASET };

struct server;

struct route {
    /* Its path's first segment, and its name in /stats; NULL for the
     * route of the datasets' names (ROUTE_DATASET). */
    const char *name;
    /* How it is asked, for the 404's list and --help:
     * "GET /queries/{backend}?queries=N". */
    const char *usage;
    bool post;                     /* POST only; else GET and HEAD */
    bool writes;                   /* it writes: the server's write_token is asked for */
    enum route_path path;
    /* Its query parameters (params.h), {NULL}-ended; at most
     * ROUTE_MAX_PARAMS. Any other is refused (400). */
    const struct param *params;
    /* Its per-request state: state_size bytes, zeroed when first made,
     * then kept with the request's spare (rq->state); free_state frees
     * what it grew (NULL: nothing). */
    size_t state_size;
    void (*free_state)(void *state);
    /* Its state in the server, made at start on main's thread, before the
     * loops (the served tables of its own: served_add), and freed after
     * they stopped. *shared is set (NULL: none kept). NULL: no setup. */
    int (*setup)(struct server *srv, void **shared, struct zb_err *err);
    void (*teardown)(struct server *srv, void *shared);
    /* A route whose server state this one uses (its setup runs once, as
     * that route's); NULL: its own. */
    const struct route *shares;
    /* Its state on each loop (NULL: none), made and freed on main's thread
     * while the loops do not run. */
    void *(*loop_init)(struct request_loop *rl, void *shared, struct zb_err *err);
    void (*loop_free)(void *loop_state);
    /* Its counters per served table, NULL-terminated names (NULL: none);
     * figures_of gives a loop's, for sv, by the same index. */
    const char *const *figures;
    const counter *(*figures_of)(void *loop_state, const struct served *sv);
    /* Serves rq (its served table, key and parameters checked and set):
     * answers it, at once or later, through request.h. */
    void (*serve)(struct request *rq);
};

/* The table (routes.c), in the order the 404's list shows it. */
extern const struct route *const route_table[];
extern const int nroutes;
/* The route whose name is the first path segment s (len bytes), or NULL. */
const struct route *route_named(const char *s, size_t len);
/* The route of the datasets' names (ROUTE_DATASET). */
const struct route *route_of_datasets(void);
/* The route a path's first segment names (a served dataset's name, or
 * "zip": the route of the datasets), or NULL. */
const struct route *route_for(const struct server *srv, const char *path);
/* The served dataset called s (len bytes; "zip": the postal dataset), or -1. */
int  route_dataset(const struct server *srv, const char *s, size_t len);
/* Dataset d's table on the backend called s (len bytes), or NULL. */
struct served *route_table_of(struct server *srv, int d, const char *s, size_t len);
/* Every route's usage, for a 404: "GET /{dataset}/... (datasets: ...);
 * GET /queries/...; ...", into list (size bytes). */
void route_list(const struct server *srv, char *list, size_t size);
/* r's index in the table: its slot in the state arrays. */
int  route_index(const struct route *r);
/* The route whose state r uses: r, or r->shares. */
const struct route *route_owner(const struct route *r);

#endif
