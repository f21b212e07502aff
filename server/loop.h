/* The bottom layer: one event-loop thread around an epoll set.
 *
 * Contract: every watched fd is registered with a struct watch, which the
 * loop calls back (ready) when epoll says the fd is ready; the loop knows
 * no kind of fd. Each iteration: epoll_wait no longer than the next
 * deadline or hooks->sleep_ms, every ready watch called, hooks->deadlines
 * once a deadline (loop_deadline) is due, then hooks->iterated. The hooks
 * and watches are the layers above, handed down (server.c wires them);
 * this layer calls nothing above it. Only the loop's own thread touches
 * its state, except loop_wake and what the lock guards.
 *
 * struct loop also holds, opaque here, what the layers above keep per
 * loop (their slots below the core): so one pointer reaches a loop's
 * whole state, and each layer reads only its own slots. */
#ifndef ZB_LOOP_H
#define ZB_LOOP_H

/* Before any APR header: with offsetof defined, APR_OFFSETOF (the ring
 * macros') is offsetof, not arithmetic on a null pointer, which clang
 * warns of and UBSan reports. */
#include <stddef.h>

#include <apr_ring.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "counter.h"
#include "util.h"

/* A watched fd's callback; embedded first in what it belongs to (a
 * database connection, a loop's wake fd or listening socket), which it
 * finds back with container_of. */
struct watch {
    void (*ready)(struct watch *w, uint32_t events);   /* EPOLLIN/OUT/ERR/HUP */
};

#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

struct loop;

/* What the layers above do at the steps of an iteration. */
struct loop_hooks {
    void (*woken)(struct loop *l);                     /* loop_wake was called */
    /* Every deadline due by now handled; returns the next one (0: none). */
    uint64_t (*deadlines)(struct loop *l, uint64_t now);
    int (*sleep_ms)(struct loop *l);                   /* the longest epoll_wait may sleep */
    void (*iterated)(struct loop *l);                  /* after the events and deadlines */
    void (*wind_down)(struct loop *l);                 /* shutdown: fail what is left */
};

struct dbconn;
struct client;
struct req;
struct lb;
struct server;
struct handed;
struct MHD_Daemon;
APR_RING_HEAD(conn_list, dbconn);
APR_RING_HEAD(client_list, client);
APR_RING_HEAD(req_list, req);

struct loop {
    /* ---- the core (loop.c) ---- */
    int id;
    pthread_t thread;
    _Atomic int tid;               /* its thread id, for /proc/PID/task/TID */
    int epfd;
    struct watch wake;             /* the wake fd's */
    int wakefd;                    /* eventfd: something handed over, keys, stop */
    uint64_t now;                  /* the clock at the top of this iteration */
    /* Iterations begun (one writer, seq_cst): a thread that replaces what
     * loops read within an iteration (a key set) frees the old once every
     * loop's count has moved. */
    _Atomic uint64_t turns;
    uint64_t next_check_ns;        /* no deadline comes before this */
    const struct loop_hooks *hooks;
    const _Atomic bool *shutdown;  /* once set, the loop winds down and returns */
    bool pin;                      /* pinned to CPU id % ncpus */
    struct loop *peers;            /* every loop of the server, this one among them */
    int npeers;
    pthread_mutex_t lock;          /* guards handed and given, which other threads fill */

    /* ---- the layers above, opaque here ---- */
    struct server *srv;            /* what every loop shares (shared.h) */
    struct lb *lb;                 /* lb.h: one per served backend */
    int nlb;
    /* dbconn.c: pipelined connections to flush at the end of the
     * iteration; connections closed (freed then) or leaving for another
     * loop; idle pooled connections other loops gave (under lock). */
    struct dbconn *to_flush[64];
    int nflush;
    struct dbconn *closed_aside, *leaving;
    struct conn_list given;
    /* accept.c */
    struct watch listen;           /* the listening socket's, shared by every loop */
    struct handed *handed;         /* connections the acceptor handed over (under lock) */
    size_t nhanded, caphanded;
    _Atomic uint64_t assigned;     /* connections given to this loop, by any loop */
    bool listening;                /* the listening socket is in its epoll set */
    /* http.c */
    struct MHD_Daemon *mhd;
    struct watch mhd_watch;        /* libmicrohttpd's epoll fd's */
    struct client_list awaiting;   /* clients waiting for a request header, oldest first */
    struct client_list sending;    /* clients an answer is going out to */
    uint64_t moved_check_ns;       /* when their sockets are next looked at */
    struct req_list keys_waiting;  /* /random requests waiting for a key set */
    struct req *free_reqs;
    struct client *free_clients;
    uint64_t rng;                  /* PRNG state for /random */
    /* Written by this loop only; the acceptor, main and /stats read them. */
    counter closed;                /* connections closed (or failed to add) */
    counter open;                  /* connections open now */
    counter inflight;              /* requests between first handler call and completion */
    counter requests, ok, e4xx, e5xx;
    counter header_timeouts;       /* connections closed for a header too slow */
};

/* The core set up: epoll set, wake fd (no thread yet). peers[0..npeers)
 * are the server's loops, l one of them. -1 with err on failure. */
int  loop_init(struct loop *l, int id, struct loop *peers, int npeers, const struct loop_hooks *hooks,
               const _Atomic bool *shutdown, bool pin, struct zb_err *err);
int  loop_start(struct loop *l, struct zb_err *err);
void loop_join(struct loop *l);
/* Closes the epoll set and wake fd; what the layers above kept is theirs
 * to free first. */
void loop_destroy(struct loop *l);
/* Wakes the loop (any thread): hooks->woken runs on it soon. */
void loop_wake(struct loop *l);
/* Wakes every peer of l (l too). */
void loop_wake_all(struct loop *l);
/* No check of deadlines is due before ns: makes it come by then. */
static inline void loop_deadline(struct loop *l, uint64_t ns)
{
    if (ns && ns < l->next_check_ns)
        l->next_check_ns = ns;
}
/* Watches fd for events (EPOLLIN, EPOLLOUT, EPOLLEXCLUSIVE...): w->ready
 * is called when it is ready. */
int  loop_watch(struct loop *l, int fd, uint32_t events, struct watch *w, struct zb_err *err);
int  loop_rewatch(struct loop *l, int fd, uint32_t events, struct watch *w);
void loop_unwatch(struct loop *l, int fd);

#endif
