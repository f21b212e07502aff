/* The table of drivers, and what every driver shares. */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
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

#define NDRIVERS (sizeof drivers / sizeof drivers[0])

const struct backend_driver *backend_driver(const char *name)
{
    for (size_t i = 0; i < NDRIVERS; i++)
        if (name && strcmp(drivers[i]->name, name) == 0)
            return drivers[i];
    return NULL;
}

void backend_driver_names(char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < NDRIVERS && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i == 0 ? "" : i + 1 < NDRIVERS ? ", "
                                                                                          : " or ",
                              drivers[i]->name);
}

enum zb_err_kind zb_failure_kind(uint64_t started_ns, uint64_t limit_ns)
{
    return zb_now_ns() - started_ns >= limit_ns ? ZB_ERR_TIMEOUT : ZB_ERR_CONN;
}

int backend_open(struct backend *b, const struct backend_conf *bc, struct zb_err *err)
{
    b->conf = bc;
    b->db = NULL;
    b->drv = backend_driver(bc->driver);
    if (!b->drv) {
        char names[200];
        backend_driver_names(names, sizeof names);
        return zb_fail(err, ZB_ERR_INPUT, "backend %s: unknown driver '%s' (%s)", bc->name,
                       bc->driver ? bc->driver : "", names);
    }
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

/* One prepared statement of `batch` rows, executed per batch; the last,
 * shorter batch gets a statement of its own. */
long long zb_insert_batches(const struct backend_driver *drv, struct db *db, const char *table,
                            int batch, rows_fn next, void *arg, struct zb_err *err)
{
    size_t sqllen = 128 + (size_t)batch * (ZB_NCOLS * 2 + 4);
    char *sql = malloc(sqllen);
    const char **params = calloc((size_t)batch * ZB_NCOLS, sizeof *params);
    char **copies = calloc((size_t)batch * ZB_NCOLS, sizeof *copies);
    struct stmt *full = NULL;
    long long rows = 0;
    int rc = 0, n = 0;
    if (!sql || !params || !copies) {
        rc = zb_fail(err, ZB_ERR_SYS, "out of memory");
        goto out;
    }
    zb_insert_sql(sql, sqllen, table, batch);
    if (drv->prepare(db, sql, batch * ZB_NCOLS, &full, err) < 0) {
        rc = -1;
        goto out;
    }
    for (;;) {
        const char *const *fields;
        rc = next(arg, &fields, err);
        if (rc < 0)
            break;
        if (rc == 1) {
            /* The reader reuses its buffers: a batch keeps its own copies. */
            for (int i = 0; i < ZB_NCOLS; i++) {
                char **c = &copies[n * ZB_NCOLS + i];
                free(*c);
                *c = fields[i] ? strdup(fields[i]) : NULL;
                params[n * ZB_NCOLS + i] = *c;
            }
            n++;
        }
        if (n == batch || (rc == 0 && n > 0)) {
            struct stmt *st = full;
            if (n < batch) {
                zb_insert_sql(sql, sqllen, table, n);
                if (drv->prepare(db, sql, n * ZB_NCOLS, &st, err) < 0) {
                    rc = -1;
                    break;
                }
            }
            int ok = drv->run(st, params, NULL, NULL, NULL, err);
            if (st != full)
                drv->finalize(st);
            if (ok < 0) {
                if (err && err->row > 0)
                    err->row += rows;  /* the statement's row, counted from the load's first */
                rc = -1;
                break;
            }
            rows += n;
            n = 0;
        }
        if (rc == 0)
            break;
    }
out:
    if (full)
        drv->finalize(full);
    for (int i = 0; copies && i < batch * ZB_NCOLS; i++)
        free(copies[i]);
    free(copies);
    free(params);
    free(sql);
    return rc < 0 ? -1 : rows;
}
