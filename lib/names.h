/* One registry of the names the tree derives, checked in one place when
 * the config is read (conf_load, and again after --set), by every program
 * alike: the loader, the server, zbconf.
 *
 * In each database (a driver and its database name, or its file for
 * SQLite), the tables a config implies are:
 *   TABLE                 a backend's postal table (its `table`)
 *   TABLE_hits            its write table (POST /update/), made by the server
 *   TABLE_hits_stamp      the write table's sequence (or index)
 *   DATASET_BACKEND       each dataset's table on each backend
 *   zb_loads              the loads' generations (one per database)
 * and TABLE$load, TABLE$old on the way (a '$' no config name can hold). A
 * name may be used twice only for the same thing (two backends of one
 * database reading one table, as a pooler's does); one used for two
 * things is refused with the file and line of both. A dataset may not be
 * named as the server's routes are (their first path segment: GENERATED
 * from server/route_*.c into route_names.h), nor "zip".
 *
 * Contract: reads the conf only; -1 with err naming both users. */
#ifndef ZB_NAMES_H
#define ZB_NAMES_H

#include "conf.h"
#include "util.h"

/* The table of the loads' generations, one per database. */
#define ZB_LOADS_TABLE "zb_loads"
/* A write table's name, and its stamp's sequence, after the table's. */
#define ZB_HITS_SUFFIX "_hits"
#define ZB_STAMP_SUFFIX "_stamp"

int names_check(const struct zb_conf *conf, struct zb_err *err);

/* Is name one of the server's routes (or "zip")? */
bool names_is_route(const char *name);

#endif
