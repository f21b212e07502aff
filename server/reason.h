/* What a client is told when a lookup, a health check or the key set of
 * /random fails: the server's own words, chosen by the error's kind and
 * the backend's state.
 *
 * Contract: the text never carries a database's message, which names
 * tables, databases and users, quotes SQL and shows file paths: that is
 * for the server's log alone (the callers log it). It says what failed in
 * the terms of the request: the backend (by its name in the URL), the
 * database, the connection, the lookup. Calls only down: served. */
#ifndef ZB_REASON_H
#define ZB_REASON_H

#include <stdbool.h>
#include <stddef.h>

#include "served.h"

/* Why `what` ("the lookup", ...) failed on sv with err, written into buf
 * (len bytes) and returned. overload: it waited past acquire_timeout_ms
 * for a connection while the backend was up. */
const char *reason_for_client(struct served *sv, const struct zb_err *err, bool overload,
                              const char *what, char *buf, size_t len);

#endif
