/* The lookup server's pieces.
 *
 *   main.c       flags, config, the listening socket, signals
 *   server.c     start: backends, N loop threads; the stop sequence
 *   accept.c     accepting: each new connection to the loop with the fewest
 *                open ones
 *   loop.c       one loop thread: an epoll set holding its libmicrohttpd
 *                daemon (single-threaded, external epoll), its database
 *                sockets and a wake fd; deadlines
 *   http.c       the handler: routes, requests suspended while they wait
 *   json.c       the JSON writer
 *   stats.c      /stats: every loop's counters merged
 *   backend.c    one backend across loops: outage state, the key set
 *   lookup.c     a lookup's way to its database, by strategy; SQLite inline
 *   dbconn.c     one asynchronous database connection of a loop
 *   pool.c       strategy pooled: persistent connections per loop
 *   pipeline.c   strategy pipelined: a few connections in pipeline mode
 *   perrequest.c strategy per-request: a fresh connection per lookup
 *
 * Threads: main (signals, the stop), one per loop, and a short-lived one
 * per backend that loads its key set. A loop touches only its own
 * connections, requests and counters; what loops share (a backend's
 * outage state, its pool budget, its keys) is read-mostly and atomic.
 * Nothing is a global: libmicrohttpd's cls is the loop, which points to
 * the struct server. */
#ifndef ZB_SERVER_H
#define ZB_SERVER_H

/* Before any APR header: with offsetof defined, APR_OFFSETOF (the ring
 * macros') is offsetof, not arithmetic on a null pointer, which clang
 * warns of and UBSan reports. */
#include <stddef.h>

#include <apr_pools.h>
#include <apr_ring.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "backend.h"
#include "conf.h"
#include "dataset.h"
#include "hist.h"
#include "util.h"

#define RELAXED memory_order_relaxed

/* A figure with one writer (its loop) and readers elsewhere (/stats, the
 * acceptor, main): relaxed loads and stores, no locked instruction. */
typedef _Atomic uint64_t counter;
#define READ(c) atomic_load_explicit(&(c), RELAXED)
#define SET(c, v) atomic_store_explicit(&(c), (v), RELAXED)
#define BUMP(c) SET(c, READ(c) + 1)
#define DROP(c) SET(c, READ(c) - 1)

enum strategy { ST_POOLED, ST_PER_REQUEST, ST_PIPELINED, ST_COUNT };
extern const char *const strategy_names[ST_COUNT];
/* "pooled", "per-request", "pipelined": the strategy, or -1. */
int strategy_by_name(const char *s);

/* What an epoll event's data.ptr points to says what it is by its first
 * member. */
/* W_DB_SET_ASIDE: a database connection closed or given to another loop
 * while an epoll batch may still hold an event for it (loop.c). */
enum watch_kind { W_MHD, W_WAKE, W_LISTEN, W_DB, W_DB_SET_ASIDE };

struct server;
struct loop;

/* ---- a backend serving one dataset, shared by every loop ---- */

/* (dataset, backend) pairs the server can serve: --datasets times
 * --backends. */
#define SRV_MAX_SERVED 32
/* The longest key a request may name, in bytes after percent-decoding. */
#define SRV_KEY_MAX 255

/* How a request's key is checked before any database work: the postal
 * dataset's 7 digits, an integer key column's optional '-' and 1-18
 * digits, or a text key column's any non-empty bytes. */
enum key_kind { KEY_POSTAL, KEY_INTEGER, KEY_TEXT };

/* A column's name as a JSON key, written once: `"name":` (`,"name":` after
 * the first). */
struct json_key {
    char s[72];
    unsigned char len;
};

struct srv_backend {
    /* Copy of the [backend NAME] section, read_only forced on: the server
     * never writes. Strings still point into the zb_conf, which outlives us. */
    struct backend_conf conf;
    const struct backend_driver *drv;
    enum strategy strategy;        /* the default: conf's strategy or persistent */
    int index;                     /* in srv->served[], and in each loop's lb[] */
    /* The dataset this pair serves (owned by the caller of server_start):
     * its table on this backend, looked up by its key column. */
    const struct dataset *data;
    bool postal;                   /* the postal dataset: /zip's answer and /random */
    enum key_kind key_kind;
    char label[160];               /* "pg" for postal, "cities/pg" else: for messages */
    char sql[1024];                /* zb_select_sql of the dataset's table */
    struct json_key colkey[ZB_MAX_COLUMNS];

    /* Outage handling: a connection error marks the backend down and bumps
     * gen, so every connection opened before it is discarded when next
     * taken instead of failing one request each. While down, at most one
     * lookup at a time tries (the probe), the next one PROBE_NS after the
     * last ended; the others get 503 at once. */
    _Atomic bool up;
    _Atomic unsigned gen;
    _Atomic uint64_t next_probe_ns;
    pthread_mutex_t reason_lock;
    char down_reason[512];         /* last connect error (under reason_lock) */

    /* Pooled connections of every loop, open or opening: at most
     * pool_hard_max. A loop that needs one more and finds none left sets
     * its bit in starving; a loop that frees an idle one then closes it
     * instead of keeping it, so the budget goes where the waiters are. */
    _Atomic int pooled;
    _Atomic uint64_t starving;

    /* The distinct codes of the table, sorted, for /random (postal only):
     * loaded by a thread of their own, which wakes every loop when done. */
    pthread_mutex_t keys_lock;
    pthread_t keys_thread;
    bool keys_thread_started;
    _Atomic bool keys_loading;
    _Atomic(uint32_t *) keys;
    _Atomic size_t nkeys;
    char keys_error[512];          /* why the last load failed (under keys_lock) */
    apr_pool_t *pool;              /* the keys live here */
};

/* backend.c */
int  backend_init(struct srv_backend *sb, const struct backend_conf *bc,
                  const struct dataset *data, int index, apr_pool_t *parent, struct zb_err *err);
/* One synchronous connect at start, so a backend down is reported before
 * the loops run; then its keys start loading. */
int  backend_start(struct srv_backend *sb, struct server *srv, struct zb_err *err);
void backend_destroy(struct srv_backend *sb);
/* Outage state. may_try: true if a lookup may go to the database now; a
 * probe (*probe set) must be ended with backend_end_probe. */
bool backend_may_try(struct srv_backend *sb, bool *probe);
void backend_end_probe(struct srv_backend *sb);
void backend_mark_down(struct srv_backend *sb, const struct zb_err *err);
void backend_mark_up(struct srv_backend *sb);
/* Everything opened before the connection that failed is suspect. */
void backend_bump_gen(struct srv_backend *sb, unsigned seen);
void backend_down_error(struct srv_backend *sb, struct zb_err *err);
/* The sorted key set, or NULL: then *loading says if a load is under way
 * (started here if none was and the backend is up); err says why not. */
const uint32_t *backend_keys(struct srv_backend *sb, struct server *srv, size_t *n,
                             bool *loading, struct zb_err *err);

/* ---- lookups ---- */

struct lookup;
struct lb;
struct dbconn;
APR_RING_HEAD(lookup_list, lookup);
APR_RING_HEAD(conn_list, dbconn);

/* How a lookup ended. */
enum lookup_rc { LOOKUP_OK = 0, LOOKUP_UNAVAILABLE = -1, LOOKUP_ERROR = -2 };

/* One lookup of a key on one backend, from start to done(). */
struct lookup {
    APR_RING_ENTRY(lookup) link;   /* in a waiting list, or its connection's sent list */
    struct lb *lb;
    enum strategy strategy;
    char key[SRV_KEY_MAX + 1];     /* NUL-terminated, checked by its key_kind */
    size_t keylen;
    const char *params[1];         /* -> key */
    uint64_t since_ns;             /* began waiting for a connection / was sent */
    long rows;                     /* rows passed on so far */
    bool retried;                  /* a lost connection is retried once, if no row came */
    bool probe;                    /* it is the backend's probe while down */
    row_fn on_row;
    void *arg;
    /* Called once, when it is over: rc LOOKUP_*, err set unless OK. */
    void (*done)(struct lookup *lk, int rc, const struct zb_err *err);
};

/* lookup.c */
/* Runs lk (lb, strategy, key, on_row, done set): inline for an in-process
 * database, else on a connection of lk's loop; done() may come before
 * this returns. health: a real round trip even while down (/health). */
void lookup_start(struct lookup *lk, bool health);
/* The end of lk: counts, probe bookkeeping, then done(). */
void lookup_finish(struct lookup *lk, int rc, const struct zb_err *err);
/* The 503 or 500 for err's kind. */
int  lookup_rc_of(const struct zb_err *err);
/* The row_fn a driver is given for lk (its arg): counts the rows (a lost
 * connection is retried only when none came, so no answer is doubled),
 * passes them on. */
int  lookup_row(void *lk, int ncols, const char *const *vals, const size_t *lens);
/* Can lookups on sb take strategy st? (pipelined needs a driver that can.) */
bool lookup_strategy_ok(const struct srv_backend *sb, enum strategy st);

/* ---- asynchronous connections (dbconn.c) ---- */

enum dc_role { DC_POOLED, DC_PER_REQUEST, DC_PIPELINED };
enum dc_state { DC_CONNECTING, DC_PREPARING, DC_READY };

struct dbconn {
    enum watch_kind kind;          /* W_DB: first, for the epoll dispatch */
    APR_RING_ENTRY(dbconn) link;   /* in one list of its lb (see struct lb) */
    struct lb *lb;
    struct db *db;
    struct stmt *lookup;           /* its prepared lookup (none per request) */
    enum dc_role role;
    enum dc_state state;
    int fd;                        /* watched socket, -1 before the first */
    uint32_t events;               /* epoll interest now */
    unsigned gen;                  /* the backend's gen when it was opened */
    uint64_t since_ns;             /* connecting: since when; idle: since when */
    struct lookup_list sent;       /* sent, answers not yet in, in order */
    int nsent;
    bool unflushed;                /* pipelined: sent since the last flush */
    struct lookup *owner;          /* per request: its lookup, until sent */
    bool in_use;                   /* pooled: lent to a lookup (in lb->busy) */
    struct dbconn *next_aside;     /* in its loop's closed or leaving list */
    struct loop *give_to;          /* leaving: the loop it goes to */
};

/* Opens a connection of role for lb; NULL if it could not even start (err
 * says why; the failure is counted). It reports back to its strategy
 * (*_conn_ready) once connected and prepared, never before this returns. */
struct dbconn *dbconn_open(struct lb *lb, enum dc_role role, struct zb_err *err);
/* Sends lk on dc (ready). Pipelined sends are written at the end of the
 * loop's iteration, all at once. */
void dbconn_send(struct dbconn *dc, struct lookup *lk);
/* The socket is ready (events: EPOLLIN/OUT/ERR/HUP). */
void dbconn_ready(struct dbconn *dc, uint32_t events);
/* Its deadline (connect_timeout_s, or query_timeout_ms for the oldest
 * statement sent): 0 if none. */
uint64_t dbconn_deadline(const struct dbconn *dc);
/* Past its deadline: given up (ZB_ERR_TIMEOUT), true; else false, and
 * *next lowered to its deadline if it has one. */
bool dbconn_expired(struct dbconn *dc, uint64_t now, uint64_t *next);
/* Gives dc up (timeout, shutdown): what was sent fails with err. */
void dbconn_fail(struct dbconn *dc, const struct zb_err *err);
/* Closes a connection with nothing sent (idle, surplus). */
void dbconn_close(struct dbconn *dc);
/* The end of an iteration: frees what was closed, hands over what leaves. */
void dbconn_settle(struct loop *l);
/* Pipelined connections: writes what was sent since the last flush. */
void dbconn_flush(struct dbconn *dc);
/* An idle connection moves to another loop: out of this loop's epoll set
 * and set aside (dbconn_leave, on the giving loop), handed to `to` when
 * the iteration is over (dbconn_settle), into lb's (dbconn_join, on the
 * taking one). false if it could not be watched: it was closed. */
void dbconn_leave(struct dbconn *dc, struct loop *to);
bool dbconn_join(struct dbconn *dc, struct lb *lb);

/* ---- the strategies, called by dbconn.c and lookup.c ---- */

/* pool.c */
void pool_submit(struct lookup *lk);
void pool_conn_ready(struct dbconn *dc);     /* connected, or its lookup done */
/* A pooled connection failed: lk is what it had sent (or NULL). */
void pool_conn_failed(struct dbconn *dc, struct lookup *lk, const struct zb_err *err);
uint64_t pool_deadlines(struct lb *lb, uint64_t now);  /* next deadline, 0 if none */
void pool_donate(struct lb *lb);             /* another loop starves: give it an idle one */
void pool_adopt(struct loop *l, struct dbconn *dc);   /* one given by another loop */
/* pipeline.c */
void pipe_submit(struct lookup *lk);
void pipe_conn_ready(struct dbconn *dc);
void pipe_conn_failed(struct dbconn *dc, const struct zb_err *err);
uint64_t pipe_deadlines(struct lb *lb, uint64_t now);
/* perrequest.c */
void perreq_submit(struct lookup *lk);
void perreq_conn_ready(struct dbconn *dc);
void perreq_conn_failed(struct dbconn *dc, const struct zb_err *err);

/* ---- one loop's share of a backend ---- */

/* Its counters: one writer (the loop), /stats reads them. */
struct lb_stats {
    counter requests, ok, not_found, e4xx, e5xx;
    counter connects;              /* connections opened (every strategy) */
    counter connects_per_request;  /* of which for per-request lookups */
    counter connect_failures;
    counter reconnects;            /* pooled connections opened to replace discarded ones */
    counter discarded;             /* pooled connections dropped as dead or stale */
    counter waits;                 /* lookups that found every pooled connection busy */
    counter timeouts;              /* of which gave up after acquire_timeout_ms */
    counter open;                  /* pooled connections open now */
    counter in_use;                /* of which with a lookup now */
    counter pipelined, batches;    /* lookups sent in pipeline mode, flushes */
    struct hist latency;           /* ns, hist_record_own */
};

/* An in-process (SQLite) connection with its prepared lookup. */
struct inline_conn {
    struct backend b;
    struct stmt *lookup;
    unsigned gen;
};

struct lb {
    struct loop *loop;
    struct srv_backend *sb;
    /* pooled: idle (most recently used first), busy, opening */
    struct conn_list idle, busy, opening;
    struct lookup_list waiting;    /* lookups waiting for a pooled connection */
    int nidle, nopening, nwaiting;
    int npooled;                   /* open or opening, this loop */
    int min_share, soft_share;     /* pool_min, pool_soft_max split over the loops */
    uint64_t owed;                 /* discarded, not yet replaced */
    /* pipelined */
    struct dbconn *pipe[8];
    int npipes, pipe_target;
    struct lookup_list pipe_waiting;
    /* per request */
    struct conn_list perreq;
    /* in-process: one idle connection is all a loop ever needs; its lookups
     * of one loop iteration share one read transaction (see lookup.c) */
    struct inline_conn *inline_idle;
    bool inline_txn;
    struct lb_stats st;
};

/* The backend is down (err says why), unless the server is stopping: the
 * lookups it fails then say so, the database is fine. */
void lb_down(struct lb *lb, const struct zb_err *err);

/* lookup.c: an in-process connection closed (loop end). */
void inline_close(struct lb *lb, struct inline_conn *ic);
/* The end of a loop iteration: the read transactions its in-process
 * lookups shared are committed. */
void inline_commit(struct loop *l);

/* ---- the HTTP side ---- */

/* A JSON body being built; it only ever grows. */
struct jbuf {
    char *p;
    size_t n, cap;
    bool oom;
};

/* json.c */
bool jb_reserve(struct jbuf *b, size_t more);
void jb_put(struct jbuf *b, const char *s, size_t len);
#define JB_LIT(b, lit) jb_put((b), (lit), sizeof(lit) - 1)
void jb_str(struct jbuf *b, const char *s, size_t len);   /* a JSON string, valid UTF-8 */
/* How many bytes from s on are whole UTF-8 sequences (len if all are). */
size_t utf8_valid_prefix(const char *s, size_t len);
void jb_cstr(struct jbuf *b, const char *s);
void jb_printf(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A client connection (libmicrohttpd's socket context). */
struct client {
    APR_RING_ENTRY(client) link;   /* in its loop's awaiting list while waiting for a header */
    uint64_t since_ns;             /* connected, or its last answer was sent */
    bool awaiting;
    int fd;
};
APR_RING_HEAD(client_list, client);

struct req;
APR_RING_HEAD(req_list, req);

/* ---- a loop ---- */

struct server;

struct loop {
    struct server *srv;
    int id;
    pthread_t thread;
    _Atomic int tid;               /* its thread id, for /proc/PID/task/TID */
    int epfd;                      /* epoll set: the daemon, the wake fd, DB sockets */
    int wakefd;                    /* eventfd: connections handed over, keys, stop */
    struct MHD_Daemon *mhd;
    uint64_t now;                  /* the clock at the top of this iteration */
    uint64_t next_check_ns;        /* no deadline comes before this */
    uint64_t rng;                  /* PRNG state for /random */

    struct lb lb[SRV_MAX_SERVED];  /* srv->nserved of them */
    struct dbconn *to_flush[64];   /* pipelined connections with unflushed sends */
    int nflush;
    struct lb *to_commit[SRV_MAX_SERVED];    /* in-process read transactions open */
    int ncommit;
    struct client_list awaiting;   /* clients waiting for a request header, oldest first */
    struct req_list keys_waiting;  /* /random requests waiting for a key set */
    struct req *free_reqs;
    struct client *free_clients;

    /* Connections handed over by the acceptor, and idle pooled database
     * connections given by other loops (under lock). */
    pthread_mutex_t lock;
    struct handed { int fd; socklen_t len; struct sockaddr_storage addr; } *handed;
    size_t nhanded, caphanded;
    struct conn_list given;

    /* Database connections closed (freed) or given away (handed over)
     * during this iteration: only once its epoll batch is done, since the
     * batch may still hold an event that points at them. */
    struct dbconn *closed_aside, *leaving;

    /* Written by this loop only; the acceptor, main and /stats read them. */
    counter closed;                /* connections closed (or failed to add) */
    counter open;                  /* connections open now */
    counter inflight;              /* requests between first handler call and completion */
    counter requests, ok, e4xx, e5xx;
    counter header_timeouts;       /* connections closed for a header too slow */

    /* Accepting (accept.c). */
    _Atomic uint64_t assigned;     /* connections given to this loop, by any loop */
    bool listening;                /* the listening socket is in its epoll set */
};

/* What every loop shares, read-mostly. */
struct server {
    struct zb_conf *conf;
    /* Every (dataset, backend) pair served, dataset by dataset in the
     * order of --datasets, each in the order of --backends. */
    int nserved;
    struct srv_backend *served[SRV_MAX_SERVED];
    int ndatasets;
    const struct dataset *const *datasets;
    uint64_t started_ns;
    int nloops, nstarted;
    struct loop *loops;
    int listen_fd;                 /* watched by every loop, closed by server_stop */
    _Atomic bool accept_paused;    /* at max_connections: no loop accepts until a slot frees */
    _Atomic unsigned accept_rr;    /* round-robin start among loops equally loaded */
    /* accept() out of fds or memory (EMFILE...): no loop accepts before
     * resume_ns (accept.c); failures since the last log line, and when
     * that was. */
    struct { _Atomic uint64_t resume_ns, failures, logged_ns; } accept_pause;
    _Atomic bool stopping;         /* SIGTERM: no new connections, answers close theirs */
    _Atomic bool shutdown;         /* the grace is over: loops fail what is left and exit */
    /* TLS (--tls-cert/--tls-key), PEM in memory; NULL for plain HTTP. */
    char *tls_cert, *tls_key;
};

/* server.c */
/* Starts every (dataset, backend) pair of datasets x chosen (each backend
 * probed once), conf->server.threads loops and the acceptor on listen_fd,
 * which it takes over. datasets must outlive the server. names gets
 * " LABEL" per pair, " LABEL (down)" for one not reachable now. On failure
 * everything started is stopped again: -1 with err. */
int  server_start(struct server *srv, struct zb_conf *conf,
                  const struct dataset *const *datasets, int ndatasets,
                  const struct backend_conf *const *chosen, int nchosen, int listen_fd,
                  apr_pool_t *pool, char *names, size_t nameslen, struct zb_err *err);
/* The stop sequence, then everything freed; requests (if not NULL) gets
 * how many were answered in all. */
void server_stop(struct server *srv, uint64_t *requests);

/* loop.c */
int  loop_init(struct loop *l, struct server *srv, int id, struct zb_err *err);
int  loop_start(struct loop *l, struct zb_err *err);
/* Wakes the loop (eventfd): something was handed over or a flag changed. */
void loop_wake(struct loop *l);
void loop_wake_all(struct server *srv);
void loop_join(struct loop *l);
void loop_destroy(struct loop *l);
/* No check of deadlines is due before ns: makes it come by then. */
static inline void loop_deadline(struct loop *l, uint64_t ns)
{
    if (ns && ns < l->next_check_ns)
        l->next_check_ns = ns;
}
/* Watching a socket in the loop's epoll set; events EPOLLIN/EPOLLOUT. */
int  loop_watch(struct loop *l, int fd, uint32_t events, void *what, struct zb_err *err);
int  loop_rewatch(struct loop *l, int fd, uint32_t events, void *what);
void loop_unwatch(struct loop *l, int fd);
int  loop_watch_listen(struct loop *l, int fd, struct zb_err *err);
/* A pipelined connection to flush at the end of this iteration. */
void loop_flush_later(struct loop *l, struct dbconn *dc);
/* Gives an idle database connection to loop l (any thread). */
void loop_give(struct loop *l, struct dbconn *dc);

/* accept.c: in every loop. */
int  acceptor_start(struct loop *l, struct zb_err *err);
/* The listening socket is readable: accept a batch. */
void acceptor_ready(struct loop *l);
/* The loop was woken: stopping, or the connection limit changed. */
void acceptor_wake(struct loop *l);
/* A loop closed one of its connections: lets paused loops accept again. */
void acceptor_slot_freed(struct server *srv);
/* After a pause for want of fds: watches the socket again once it is
 * over; returns when that is due (0: no pause). */
uint64_t acceptor_deadlines(struct loop *l, uint64_t now);

/* http.c */
/* A single-threaded daemon in external epoll mode, with no listening
 * socket of its own: the acceptor gives it connections. */
struct MHD_Daemon *http_daemon(struct loop *l, struct zb_err *err);
void http_loop_init(struct loop *l);
/* Key sets were loaded (or failed): /random requests waiting go on. */
void http_keys_changed(struct loop *l);
/* Connections whose header did not come whole within header_timeout_s
 * are closed; returns the next such deadline (0: none). */
uint64_t http_header_deadlines(struct loop *l, uint64_t now);
/* On shutdown: requests still waiting (for keys) are answered 503. */
void http_wind_down(struct loop *l);
/* After the daemon stopped: the loop's spare requests and clients freed. */
void http_loop_free(struct loop *l);

/* stats.c */
/* /stats into b: every served pair's figures summed over the loops, and each
 * loop's own. */
void stats_json(struct server *srv, struct jbuf *b);

#endif
