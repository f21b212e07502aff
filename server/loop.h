/* The bottom layer: one event-loop thread around an epoll set.
 *
 * Contract: every watched fd is registered with a struct watch, which the
 * loop calls back (ready) when epoll says the fd is ready; the loop knows
 * no kind of fd. Each iteration: epoll_wait no longer than the next
 * deadline or hooks->sleep_ms, every ready watch called, hooks->deadlines
 * once a deadline (loop_deadline) is due, then hooks->iterated, then the
 * watches retired during the iteration released. The hooks and watches
 * are the layers above, handed down (server.c wires them); this layer
 * calls nothing above it and holds none of their state: each layer keeps
 * its own per-loop part beside this core (server.c composes them). Only
 * the loop's own thread touches its state, except loop_wake. */
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

#include "util.h"

/* A watched fd's callback; embedded first in what it belongs to (a
 * database connection, a loop's wake fd or listening socket), which it
 * finds back with container_of. */
struct watch {
    void (*ready)(struct watch *w, uint32_t events);   /* EPOLLIN/OUT/ERR/HUP */
    /* Set while retired (loop_retire): ready is no longer called, and
     * this is, once the iteration is over. */
    void (*release)(struct watch *w);
    struct watch *next_retired;
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

struct loop {
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
    struct loop *const *peers;     /* every loop of the server, by id, this one among them */
    int npeers;
    struct watch *retired;         /* released at the end of the iteration */
    /* A loop that just had work polls before it sleeps, this long (0:
     * never): [server] spin_us. */
    uint64_t spin_ns;
    _Atomic uint64_t spun_ns;      /* time spent so (one writer, /stats reads) */
};

/* The earlier of two deadlines, 0 meaning none. */
static inline uint64_t deadline_min(uint64_t a, uint64_t b)
{
    return !a ? b : !b ? a : a < b ? a : b;
}

/* The core set up: epoll set, wake fd (no thread yet). peers[0..npeers)
 * are the server's loops by id, l one of them. -1 with err on failure. */
int  loop_init(struct loop *l, int id, struct loop *const *peers, int npeers, const struct loop_hooks *hooks,
               const _Atomic bool *shutdown, bool pin, struct zb_err *err);
int  loop_start(struct loop *l, struct zb_err *err);
void loop_join(struct loop *l);
/* Releases what is still retired, closes the epoll set and wake fd; what
 * the layers above kept is theirs to free first. */
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
/* w (no longer watched) gets no more ready calls; release(w) is called
 * once this iteration is over (an event for w may still be pending in
 * its epoll batch), or by loop_destroy. */
void loop_retire(struct loop *l, struct watch *w, void (*release)(struct watch *w));

#endif
