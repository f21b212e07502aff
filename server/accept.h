/* Accepting: new connections spread evenly over the loops.
 *
 * Contract: every loop watches the shared listening socket; the loop that
 * accepts a connection gives it to the loop with the fewest open ones
 * (its own daemon at once, another through that loop's handed list and a
 * wake). At max_connections every loop stops watching until a slot frees.
 * Calls only down: the loop, libmicrohttpd's MHD_add_connection. */
#ifndef ZB_ACCEPT_H
#define ZB_ACCEPT_H

#include <microhttpd.h>
#include <pthread.h>
#include <sys/socket.h>

#include "shared.h"

struct handed;

/* What the loops' acceptors share: one per server (server.c's), every
 * loop's accept_loop points to it. */
struct accept_shared {
    _Atomic bool paused;           /* at max_connections: no loop accepts until a slot frees */
    _Atomic unsigned rr;           /* round-robin start among loops equally loaded */
    /* accept() out of fds or memory (EMFILE...): no loop accepts before
     * resume_ns; failures since the last log line, and when that was. */
    struct { _Atomic uint64_t resume_ns, failures, logged_ns; } pause;
};

/* Accepting's part of a loop. */
struct accept_loop {
    struct loop *loop;
    struct server *srv;
    struct loop_figures *fig;      /* its loop's (closed: its load) */
    struct MHD_Daemon *mhd;        /* its loop's daemon, which takes its connections */
    struct accept_loop *const *peers;   /* every loop's, by id */
    struct accept_shared *shared;  /* the server's */
    int npeers;
    struct watch listen;           /* the listening socket's, shared by every loop */
    pthread_mutex_t lock;          /* guards handed, which other loops fill */
    struct handed *handed;         /* connections another loop accepted for this one */
    size_t nhanded, caphanded;
    _Atomic uint64_t assigned;     /* connections given to this loop, by any loop */
    bool listening;                /* the listening socket is in its epoll set */
};

/* a set up for loop l (no watch yet): its daemon, figures and peers are
 * server.c's to set. */
void acceptor_init(struct accept_loop *a, struct loop *l, struct server *srv);

/* l starts watching the listening socket. */
int  acceptor_start(struct accept_loop *a, struct zb_err *err);
/* The loop was woken: connections handed over go into its daemon; stop
 * for good when stopping; else stop at the limit, or watch again below it. */
void acceptor_wake(struct accept_loop *a);
/* A's loop closed one of its connections: lets paused loops accept again. */
void acceptor_slot_freed(struct accept_loop *a);
/* After a pause for want of fds: watches the socket again once it is
 * over; returns when that is due (0: no pause). */
uint64_t acceptor_deadlines(struct accept_loop *a, uint64_t now);
/* After the loop stopped: connections handed over and never taken closed. */
void acceptor_free(struct accept_loop *a);

#endif
