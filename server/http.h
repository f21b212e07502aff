/* The HTTP side: libmicrohttpd's callbacks, routes, answers.
 *
 * Contract: each loop runs one single-threaded libmicrohttpd daemon in
 * external epoll mode, with no listening socket of its own (the acceptor
 * gives it connections). A request that starts a lookup is suspended and
 * resumed on its loop when the lookup's done() comes. Calls only down:
 * lookup, stats, accept, served, the loop. */
#ifndef ZB_HTTP_H
#define ZB_HTTP_H

#include "shared.h"

/* The loop's daemon started, its epoll fd watched. */
int  http_start(struct loop *l, struct zb_err *err);
void http_loop_init(struct loop *l);
/* libmicrohttpd's turn: reads requests, calls the handler, answers the
 * resumed ones. */
void http_turn(struct loop *l);
/* How long the loop may sleep before libmicrohttpd's next timeout. */
int  http_sleep_ms(struct loop *l);
/* Key sets were loaded (or failed): /random requests waiting go on. */
void http_keys_changed(struct loop *l);
/* Connections whose header did not come whole within header_timeout_s
 * are closed; returns the next such deadline (0: none). */
uint64_t http_deadlines(struct loop *l, uint64_t now);
/* On shutdown: requests still waiting (for keys) are answered 503. */
void http_wind_down(struct loop *l);
/* The daemon stopped (its connections closed). */
void http_stop(struct loop *l);
/* After the daemon stopped: the loop's spare requests and clients freed. */
void http_loop_free(struct loop *l);

#endif
