/* /health: one real round trip to every served pair, all at once.
 *
 * Contract: health_start, on a loop's thread, starts one lookup per
 * served pair of srv on that loop's lanes (a probe even while a backend
 * is down); once the last is in, it writes the answer's JSON into b,
 * frees what it kept and calls done(arg, status): 200 if every pair is
 * up, 503 otherwise. b and arg must live until then. Calls only down:
 * lookup, json. */
#ifndef ZB_HEALTH_H
#define ZB_HEALTH_H

#include <stdbool.h>

#include "json.h"
#include "shared.h"

/* false if out of memory (nothing started, done not called). */
bool health_start(struct server *srv, struct lane *lanes, struct jbuf *b,
                  void (*done)(void *arg, unsigned status), void *arg);

#endif
