/* /stats: every served pair's figures summed over the loops, and each
 * loop's own.
 *
 * Contract: reads the one-writer counters of every loop with relaxed
 * loads while the loops run, so a snapshot may be a few requests apart
 * across figures; writes nothing but b. */
#ifndef ZB_STATS_H
#define ZB_STATS_H

#include "json.h"
#include "shared.h"

void stats_json(struct server *srv, struct jbuf *b);

#endif
