/* The table of drivers, and what every driver shares. */
#include "backend.h"

#include <stdio.h>
#include <string.h>

extern const struct backend_driver backend_sqlite;
extern const struct backend_driver backend_pg;
extern const struct backend_driver backend_mysql;

static const struct backend_driver *const drivers[] = {
    &backend_sqlite,
    &backend_pg,
    &backend_mysql,
};

const char *const zb_columns[ZB_NCOLS] = {
    "jis_code",   "old_code",  "zip_code",   "pref_kana",  "city_kana",
    "town_kana",  "pref",      "city",       "town",       "multi_code",
    "koaza",      "has_chome", "multi_town", "update_flag", "reason",
};

bool zb_column_is_flag(int col) { return col >= 9; }

const struct backend_driver *backend_driver(const char *name)
{
    for (size_t i = 0; i < sizeof drivers / sizeof drivers[0]; i++)
        if (name && strcmp(drivers[i]->name, name) == 0)
            return drivers[i];
    return NULL;
}

int backend_open(struct backend *b, const struct backend_conf *bc, struct zb_err *err)
{
    b->conf = bc;
    b->db = NULL;
    b->drv = backend_driver(bc->driver);
    if (!b->drv)
        return zb_fail(err, ZB_ERR_INPUT, "backend %s: unknown driver '%s' (sqlite, pg, mysql)",
                       bc->name, bc->driver ? bc->driver : "");
    return b->drv->open(bc, &b->db, err);
}

void backend_close(struct backend *b)
{
    if (b->drv && b->db)
        b->drv->close(b->db);
    b->db = NULL;
}

int zb_lookup_sql(char *buf, size_t len, const char *table)
{
    size_t n = (size_t)snprintf(buf, len, "SELECT ");
    for (int i = 0; i < ZB_NCOLS && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", zb_columns[i]);
    if (n < len)
        n += (size_t)snprintf(buf + n, len - n, " FROM %s WHERE zip_code = ?", table);
    return n < len ? 0 : -1;
}

size_t zb_tsv_row_max(const char *const *fields)
{
    size_t need = 1;
    for (int i = 0; i < ZB_NCOLS; i++)
        need += (fields[i] ? 2 * strlen(fields[i]) : 2) + 1;
    return need;
}

size_t zb_tsv_row(char *out, const char *const *fields)
{
    char *o = out;
    for (int i = 0; i < ZB_NCOLS; i++) {
        if (i)
            *o++ = '\t';
        if (!fields[i]) {
            *o++ = '\\';
            *o++ = 'N';
            continue;
        }
        for (const char *p = fields[i]; *p; p++) {
            switch (*p) {
            case '\\': *o++ = '\\'; *o++ = '\\'; break;
            case '\t': *o++ = '\\'; *o++ = 't'; break;
            case '\n': *o++ = '\\'; *o++ = 'n'; break;
            case '\r': *o++ = '\\'; *o++ = 'r'; break;
            default: *o++ = *p;
            }
        }
    }
    *o++ = '\n';
    return (size_t)(o - out);
}

int zb_create_sql(char *buf, size_t len, const char *table, const char *suffix)
{
    size_t n = (size_t)snprintf(buf, len, "CREATE TABLE %s (", table);
    for (int i = 0; i < ZB_NCOLS && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s %s", i ? ", " : "", zb_columns[i],
                              zb_column_is_flag(i) ? "INTEGER NOT NULL" : "TEXT NOT NULL");
    if (n < len)
        n += (size_t)snprintf(buf + n, len - n, ")%s", suffix ? suffix : "");
    return n < len ? 0 : -1;
}

int zb_insert_sql(char *buf, size_t len, const char *table, int rows)
{
    size_t n = (size_t)snprintf(buf, len, "INSERT INTO %s VALUES ", table);
    for (int r = 0; r < rows && n < len; r++) {
        n += (size_t)snprintf(buf + n, len - n, "%s(?", r ? "," : "");
        for (int i = 1; i < ZB_NCOLS && n < len; i++)
            n += (size_t)snprintf(buf + n, len - n, ",?");
        if (n < len)
            n += (size_t)snprintf(buf + n, len - n, ")");
    }
    return n < len ? 0 : -1;
}
