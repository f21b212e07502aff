/* The key set of /random (the postal dataset's): the table's distinct
 * codes, read by a thread of the backend's own, and read again whenever
 * the table is replaced (a reload swapped it).
 *
 * Contract: keyset_start (main's thread, after served_start) starts the
 * watcher of a postal backend; keyset_stop (once the loops are joined)
 * ends it and frees every set. In between, any loop may call keyset_get
 * and read the set it returns until the end of that loop iteration: a set
 * replaced is freed only once every loop has begun another (loop.h's
 * turns). The watcher asks the database every KEYSET_CHECK_MS whether the
 * table was replaced (the driver's table_version_sql), and when it was,
 * reads the codes again, publishes the new set and wakes every loop.
 * Calls only down: served, loop, lib's drivers. */
#ifndef ZB_KEYSET_H
#define ZB_KEYSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"
#include "served.h"

#define KEYSET_CHECK_MS 1000

/* The codes of the table as read at loaded_ns, sorted; never changed once
 * published (a new table gets a new set). */
struct key_set {
    uint64_t loaded_ns;            /* zb_now_ns() when they were read */
    size_t n;
    uint32_t keys[];
};

/* The watcher of sb's key set started (postal backends only; a no-op for
 * the others); the first read begins at once when sb is up. */
int  keyset_start(struct srv_backend *sb, struct loop *loops, struct zb_err *err);
/* The watcher ended (after the loops were joined), every set freed. */
void keyset_stop(struct srv_backend *sb);
/* sb's key set, or NULL: then *loading says whether a read is under way
 * (asked for here, unless one failed in the last second), and err why
 * there is none. */
const struct key_set *keyset_get(struct srv_backend *sb, bool *loading, struct zb_err *err);
/* Requests waiting for a key set wait on: none yet, and a read under way. */
bool keyset_pending(struct srv_backend *sb);
/* What /stats says: the set's size, and its age in seconds (-1: none). */
size_t keyset_size(struct srv_backend *sb, double *age_s);

#endif
