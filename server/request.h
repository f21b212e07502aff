/* A request as a route sees it, and what a route does with one: answer
 * it, look its key up, draw keys for it.
 *
 * Contract: http.c makes a struct request per HTTP request (its own
 * struct around it), fills it (the route, the served table and key the
 * path named, the parameters, the strategy), and calls the route's serve.
 * The route answers exactly once, through request_answer or
 * request_error, at once or from a callback on the same loop; the answer
 * is counted on rq's lane and handed back up through rq->answered. A
 * request whose client left while it ran is orphaned: the route's
 * callbacks end it through request_gone (request_rows_answer and
 * request_failed check it for them). Calls only down: lookup, keyset,
 * served, json. */
#ifndef ZB_REQUEST_H
#define ZB_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "json.h"
#include "keyset.h"
#include "lookup.h"
#include "params.h"
#include "shared.h"

struct route;
struct request;


/* The request layer's part of a loop: what every route may use there. */
struct request_loop {
    struct server *srv;
    struct loop *loop;
    struct lane *lanes;            /* this loop's, by served index */
    struct key_waiters keys;       /* requests waiting for a key set */
    uint64_t rng;                  /* PRNG state for the routes' draws */
    /* Each route's state on this loop (route.h's loop_init), by table
     * index; and each route's server state (setup), the same. */
    void *route_loop[ROUTE_MAX];
    /* Requests each route answered, by served table (/stats). */
    counter served_by[ROUTE_MAX][SRV_MAX_SERVED];
};

struct request {
    struct request_loop *loop;
    const struct route *route;
    void *state;                   /* its route's per-request state (route.h) */
    void *loop_state;              /* its route's state on this loop */
    void *shared;                  /* its route's server state */
    struct served *sv;             /* the served table the path named, or NULL */
    struct lane *lane;             /* sv's on this loop: the answer is counted there */
    const char *key;               /* the path's {key}, percent-decoded ("" if none) */
    size_t keylen;
    struct args args;              /* its parameters, by the route's rules */
    enum strategy_id strategy;     /* ?strategy=, else sv's default */
    uint64_t t0;                   /* when its header was whole */
    unsigned status;
    struct jbuf body;
    const char *content_type;      /* NULL: JSON */
    bool orphaned;                 /* its client left while it ran */
    struct key_wait kw;            /* waiting for sv's key set */
    bool (*keyed)(struct request *rq);
    /* http.c's: the answer is in (counted); resume the connection. */
    void (*answered)(struct request *rq);
    /* http.c's: an orphaned request's end; frees it. */
    void (*gone)(struct request *rq);
};

/* The answer is in rq->body: counted, then handed up. */
void request_answer(struct request *rq, unsigned status);
/* {"error":"msg"} plus the dataset (but postal's), the backend and the
 * key ("code" for postal) when known (key NULL: none), answered. */
void request_error(struct request *rq, unsigned status, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* An orphaned request's end (its callbacks call it instead of answering). */
void request_gone(struct request *rq);

/* What is wrong with key for sv's key column (*status 400 or 414), or
 * NULL: checked before any database work; msg holds the longer texts. */
const char *request_bad_key(const struct served *sv, const char *key, size_t len,
                            unsigned *status, char *msg, size_t msglen);
/* An answer's beginning, up to its rows, into b:
 * {"backend":..,"code":..,"rows":[ (postal), {"dataset":..,"key":.. else. */
void request_rows_begin(struct jbuf *b, const struct served *sv, const char *key, size_t len);
/* One row as a JSON object (the nth, from 1), into b: the dataset's
 * field names as keys, numbers as numbers (reals in their one text,
 * json.h's jb_real), NULL as null, the rest as strings. */
int  request_put_row(struct jbuf *b, const struct served *sv, long nth, int ncols,
                     const char *const *vals, const size_t *lens);
/* Looks key up on rq's lane by rq's strategy, each row to on_row (rq as
 * the lookup's arg); done ends it, maybe before this returns. */
void request_lookup_rows(struct request *rq, struct lookup *lk, const char *key, size_t len,
                         lookup_row_fn on_row,
                         void (*done)(struct lookup *lk, int rc, const struct zb_err *err));
/* Looks key up on rq's lane by rq's strategy, its rows into rq->body
 * (begun here), with lk (the route's); done ends it: it calls
 * request_rows_answer, maybe before this returns. */
void request_lookup(struct request *rq, struct lookup *lk, const char *key, size_t len,
                    void (*done)(struct lookup *lk, int rc, const struct zb_err *err));
/* The end of request_lookup's lookup: 200 with its rows, 404 for none, or
 * the failure's 503 or 500. true if it answered 200 (rq still there). */
bool request_rows_answer(struct request *rq, struct lookup *lk, int rc, const struct zb_err *err);
/* After a lookup of rq's ended with rc: false when the request is over
 * (orphaned: gone; failed: its 503 or 500 answered, saying `what` ("the
 * lookup") failed, about key (NULL: none); the database's message
 * logged), true to go on. */
bool request_went_on(struct request *rq, struct lookup *lk, int rc, const struct zb_err *err,
                     const char *what, const char *key);

/* rq's served table's key set; NULL while it is being read (*loading),
 * or when it cannot be (503 answered; what: for the message). */
const struct key_set *request_keys(struct request *rq, const char *what, bool *loading);
/* rq started by start, which draws from the key set: start returns false
 * while that is being read, and rq then waits for it (at most
 * acquire_timeout_ms) and start runs again. */
void request_when_keys(struct request *rq, bool (*start)(struct request *rq));

/* Is the server stopping? (A lookup's failure then says so.) */
bool request_stopping(const struct request *rq);

#endif
