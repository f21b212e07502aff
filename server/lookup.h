/* One lookup of a key on a lane, from its start to its end.
 *
 * Contract: lookup_start takes a struct lookup from the HTTP side and
 * ends it, sooner or later, with its done() callback, exactly once. The
 * outage gate comes first; then the lookup goes, by pointer, to the
 * strategy the one table of strategies (lookup.c) gives its lane for
 * lk->strategy. Every way a lookup ends goes through lookup_finish, which
 * keeps the outage state and the counters, then calls done(). The rest
 * serves the loop's turns on a lane, for every strategy on it: deadlines,
 * wake-ups, the end of an iteration, shutdown. Calls only down: the
 * strategies (by pointer), lane, served. */
#ifndef ZB_LOOKUP_H
#define ZB_LOOKUP_H

#include "lane.h"
#include "strategy.h"

struct lookup;
APR_RING_HEAD(lookup_list, lookup);

/* How a lookup ended. */
enum lookup_rc { LOOKUP_OK = 0, LOOKUP_UNAVAILABLE = -1, LOOKUP_ERROR = -2 };

/* What a lookup does with each row that comes: lk->rows counts it
 * already (from 1); non-zero stops the rows (an error). */
typedef int (*lookup_row_fn)(struct lookup *lk, int ncols, const char *const *vals,
                             const size_t *lens);

/* One lookup of a key on one backend, from start to done(). */
struct lookup {
    APR_RING_ENTRY(lookup) link;   /* in a waiting list, or its connection's sent list */
    struct lane *lane;
    enum strategy_id strategy;     /* its way, by strategy.h's list */
    char key[SRV_KEY_MAX + 1];     /* NUL-terminated, checked by its key_kind */
    size_t keylen;
    const char *params[1];         /* -> key: the statement's one parameter */
    uint64_t since_ns;             /* began waiting for a connection / was sent */
    long rows;                     /* rows passed on so far */
    bool retried;                  /* a lost connection is retried once, if no row came */
    bool probe;                    /* it is the backend's probe while down */
    bool overloaded;               /* it ended waiting past acquire_timeout_ms, the backend up */
    lookup_row_fn on_row;          /* NULL: the rows are only counted */
    void *arg;                     /* its caller's */
    /* Called once, when it is over: rc LOOKUP_*, err set unless OK. */
    void (*done)(struct lookup *lk, int rc, const struct zb_err *err);
};

/* Runs lk (lane, strategy, key, on_row, done set) on its lane's way for
 * lk->strategy; done() may come before this returns. */
void lookup_start(struct lookup *lk);
/* The end of lk: counts, probe bookkeeping, then done(). */
void lookup_finish(struct lookup *lk, int rc, const struct zb_err *err);
/* The end of lk that waited past acquire_timeout_ms for a connection
 * while the backend is up: 503, counted as overload, not as down. */
void lookup_overloaded(struct lookup *lk, const struct zb_err *err);
/* The 503 or 500 for err's kind. */
int  lookup_rc_of(const struct zb_err *err);
/* The row_fn a driver is given for lk (its arg): counts the rows (a lost
 * connection is retried only when none came, so no answer is doubled),
 * passes them on. */
int  lookup_row(void *lk, int ncols, const char *const *vals, const size_t *lens);

/* Why lk failed with err, in the client's words (reason.h), written into
 * buf and returned ("the server is stopping" when stopping); the
 * database's own message goes to the log (at most once a second per
 * loop), unless the log has said it already (the backend went down) or
 * it is the server's own state (overloaded). */
const char *lookup_why(const struct lookup *lk, const struct zb_err *err, bool stopping,
                       const char *what, const char *log_as, char *buf, size_t len);
/* Can lookups on sv take strategy st? NULL if so, else why not, after
 * "the DRIVER driver " (pipelined needs a driver that can pipeline). */
const char *lookup_cannot(const struct served *sv, enum strategy_id st);
/* The instance that serves strategy st's lookups on sv (its in-process one
 * where sv's driver is in-process), or NULL. */
const struct strategy *lookup_way(const struct served *sv, enum strategy_id st);
/* Each strategy's state shared by the loops on sv made (before the loops
 * run), and freed (after they stopped). */
int  lookup_shared_init(struct served *sv, struct zb_err *err);
void lookup_shared_free(struct served *sv);
/* Every strategy sv's driver can take set up on lane (after lane_init). */
int  lookup_init(struct lane *lane, struct zb_err *err);
/* Every strategy's deadlines on lane due by now; returns the next (0: none). */
uint64_t lookup_deadlines(struct lane *lane, uint64_t now);
/* The loop was woken: each strategy's turn on lane. */
void lookup_woken(struct lane *lane);
/* The end of a loop iteration: what each strategy batches per iteration
 * goes out (pipelined writes, in-process read transactions). */
void lookup_iterated(struct lane *lane);
/* Shutdown: every connection and waiting lookup of lane fails with err. */
void lookup_wind_down(struct lane *lane, const struct zb_err *err);
/* After the loop stopped: every strategy's state on lane freed. */
void lookup_destroy(struct lane *lane);

#endif
