/* The lookup server, from the outside: start and stop.
 *
 * The layers, each calling only down (server.c wires them):
 *   main.c       flags, config, the listening socket, signals
 *   server.c     start and stop; hands each loop the hooks of its turns
 *   http.c       libmicrohttpd's callbacks, routes, answers (json.c, stats.c)
 *   strict.c     the RFC 9112 refusals libmicrohttpd does not make itself
 *   health.c     /health: one lookup per backend on the loop, in parallel
 *   keyset.c     the keys behind /random: their loader, waiting requests,
 *                timeout
 *   accept.c     new connections to the loop with the fewest open ones
 *   lookup.c     a lookup's life (start, row, finish) and its way: the
 *                outage gate, or its strategy by the one table of strategies
 *   pool.c | pipeline.c | perrequest.c | inline.c
 *                the strategies (strategy.h); inline.c runs an in-process
 *                database (SQLite) on the loop
 *   dbconn.c     one asynchronous database connection
 *   lane.c       one loop's share of a served backend: its outage gate
 *   served.c     a backend serving one dataset, shared by every loop:
 *                outage state, pool budget
 *   loop.c       one epoll thread; each watched fd carries its callback
 *
 * Contract: server_start returns with every loop running, or with nothing
 * left running; server_stop drains, stops and frees everything. Threads:
 * main (signals, the stop), one per loop, and a short-lived one per
 * backend that loads its key set. A loop touches only its own
 * connections, requests and counters; what loops share (shared.h,
 * served.h) is read-mostly and atomic. */
#ifndef ZB_SERVER_H
#define ZB_SERVER_H

#include <apr_pools.h>

#include "shared.h"

/* Starts a served table for each dataset of datasets on each of chosen (each backend
 * probed once), conf->server.threads loops and the acceptor on listen_fd,
 * which it takes over. datasets must outlive the server. names gets
 * " LABEL" per table, " LABEL (down)" for one not reachable now. On failure
 * everything started is stopped again: -1 with err. */
int  server_start(struct server *srv, struct zb_conf *conf,
                  const struct dataset *const *datasets, int ndatasets,
                  const struct backend_conf *const *chosen, int nchosen, int listen_fd,
                  apr_pool_t *pool, char *names, size_t nameslen, struct zb_err *err);
/* The stop sequence, then everything freed; requests (if not NULL) gets
 * how many were answered in all. */
void server_stop(struct server *srv, uint64_t *requests);

#endif
