/* The words SQL reserves, which no table may be named: zipbench writes
 * table names unquoted in its SQL (they are plain identifiers, checked by
 * the config), so a reserved one would fail only once a statement used it. */
#ifndef ZB_SQLWORDS_H
#define ZB_SQLWORDS_H

#include <stdbool.h>

/* Whether name (any case) is a word PostgreSQL, MariaDB or SQLite reserves
 * and refuses as an unquoted table name. */
bool sql_reserved(const char *name);

#endif
