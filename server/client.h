/* A loop's client connections: the deadline of each request's header,
 * and the sockets of the answers going out (client.c).
 *
 * Contract: every function runs on the loop's own thread; http.c calls
 * them at each step of a request, and hands client_event to
 * libmicrohttpd (MHD_OPTION_NOTIFY_CONNECTION). A connection that closes
 * calls the loop's closed hook (http.h). Calls only down: the loop,
 * libmicrohttpd. */
#ifndef ZB_CLIENT_H
#define ZB_CLIENT_H

#include <microhttpd.h>

#include "http.h"

/* MHD_OPTION_NOTIFY_CONNECTION's: a connection opened or closed. */
void client_event(void *cls, struct MHD_Connection *c, void **socket_context,
                  enum MHD_ConnectionNotificationCode toe);
/* c's request header is whole: its deadline is over. */
void client_got_header(struct http_loop *l, struct MHD_Connection *c);
/* An answer is going out to c: its socket is looked at until it is out. */
void client_sending(struct http_loop *l, struct MHD_Connection *c);
/* c's answer is out: it waits for its next header. */
void client_answered(struct http_loop *l, struct MHD_Connection *c);
/* Headers past header_timeout_s closed, sending sockets looked at;
 * returns the next such deadline (0: none). */
uint64_t client_deadlines(struct http_loop *l, uint64_t now);
/* l's lists of clients set up, empty. */
void clients_init(struct http_loop *l);
/* After the daemon stopped: the spare clients freed. */
void clients_free(struct http_loop *l);

#endif
