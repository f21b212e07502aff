/* The HTTP side: libmicrohttpd's callbacks, and each request handed to
 * its route by the route table.
 *
 * Contract: each loop runs one single-threaded libmicrohttpd daemon in
 * external epoll mode, with no listening socket of its own (the acceptor
 * gives it connections). A request its route does not answer at once is
 * suspended, and resumed on its loop when the route answers. Calls only
 * down: the routes (by the table), request, strict, the loop. */
#ifndef ZB_HTTP_H
#define ZB_HTTP_H

#include "request.h"
#include "shared.h"

struct MHD_Daemon;
struct client;
struct http_request;
APR_RING_HEAD(client_list, client);

/* HTTP's part of a loop. */
struct http_loop {
    struct loop *loop;
    struct server *srv;
    struct loop_figures *fig;      /* this loop's */
    struct MHD_Daemon *mhd;
    struct watch mhd_watch;        /* libmicrohttpd's epoll fd's */
    /* Clients waiting for a request header, oldest first; clients an
     * answer is going out to (http.c's lists). */
    struct client_list awaiting, sending;
    uint64_t moved_check_ns;       /* when their sockets are next looked at */
    struct request_loop requests;  /* what the routes see of this loop */
    struct http_request *free_reqs;
    struct client *free_clients;
    /* A connection closed: closed(closed_arg) (the acceptor's). */
    void (*closed)(void *arg);
    void *closed_arg;
};

/* h set up for loop l: lanes and fig are l's; each route's state on it
 * made (the routes' server state is in srv already). -1 with err. */
int  http_init(struct http_loop *h, struct loop *l, struct server *srv, struct lane *lanes,
               struct loop_figures *fig, struct zb_err *err);
/* The loop's daemon started, its epoll fd watched. */
int  http_start(struct http_loop *h, struct zb_err *err);
/* libmicrohttpd's turn: reads requests, calls the handler, answers the
 * resumed ones. */
void http_turn(struct http_loop *h);
/* How long the loop may sleep before libmicrohttpd's next timeout. */
int  http_sleep_ms(struct http_loop *h);
/* Key sets were loaded (or failed): the requests waiting for them go on. */
void http_keys_changed(struct http_loop *h);
/* Connections whose header did not come whole within header_timeout_s
 * are closed; returns the next such deadline (0: none). */
uint64_t http_deadlines(struct http_loop *h, uint64_t now);
/* On shutdown: requests still waiting (for keys) are answered 503. */
void http_wind_down(struct http_loop *h);
/* The daemon stopped (its connections closed). */
void http_stop(struct http_loop *h);
/* After the daemon stopped: the loop's spare requests and clients freed. */
void http_loop_free(struct http_loop *h);

#endif
