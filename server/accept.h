/* Accepting: new connections spread evenly over the loops.
 *
 * Contract: every loop watches the shared listening socket; the loop that
 * accepts a connection gives it to the loop with the fewest open ones
 * (its own daemon at once, another through that loop's handed list and a
 * wake). At max_connections every loop stops watching until a slot frees.
 * Calls only down: the loop, libmicrohttpd's MHD_add_connection. */
#ifndef ZB_ACCEPT_H
#define ZB_ACCEPT_H

#include "shared.h"

/* l starts watching the listening socket. */
int  acceptor_start(struct loop *l, struct zb_err *err);
/* The loop was woken: connections handed over go into its daemon; stop
 * for good when stopping; else stop at the limit, or watch again below it. */
void acceptor_wake(struct loop *l);
/* A loop closed one of its connections: lets paused loops accept again. */
void acceptor_slot_freed(struct server *srv);
/* After a pause for want of fds: watches the socket again once it is
 * over; returns when that is due (0: no pause). */
uint64_t acceptor_deadlines(struct loop *l, uint64_t now);
/* After the loop stopped: connections handed over and never taken closed. */
void acceptor_free(struct loop *l);

#endif
