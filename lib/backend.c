/* The table of drivers, and what every driver shares. */
#include "backend.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The drivers, the one list of them: each NAME is lib/backend_NAME.c,
 * which defines `const struct backend_driver backend_NAME`. Adding a
 * backend is its file and its line here. */
#define DRIVERS(X) \
    X(sqlite)      \
    X(pg)          \
    X(mysql)       \
    /* end of the list */

#define DECLARE(name) extern const struct backend_driver backend_##name;
DRIVERS(DECLARE)
#undef DECLARE
#define ENTRY(name) &backend_##name,
static const struct backend_driver *const drivers[] = { DRIVERS(ENTRY) };
#undef ENTRY

/* KEN_ALL's columns: nine text, then six integer flags. */
#define POSTAL_COLUMNS(TEXT, FLAG)                                                              \
    TEXT(jis_code) TEXT(old_code) TEXT(zip_code) TEXT(pref_kana) TEXT(city_kana)               \
    TEXT(town_kana) TEXT(pref) TEXT(city) TEXT(town) FLAG(multi_code) FLAG(koaza)              \
    FLAG(has_chome) FLAG(multi_town) FLAG(update_flag) FLAG(reason)
#define NAME(n) #n,
const char *const zb_columns[ZB_NCOLS] = { POSTAL_COLUMNS(NAME, NAME) };

const char *const zb_sync_names[3] = { "full", "normal", "off" };
#undef NAME

#define NDRIVERS (sizeof drivers / sizeof drivers[0])

int zb_first_number(void *arg, int ncols, const char *const *vals, const size_t *lens)
{
    (void)lens;
    if (ncols > 0 && vals[0])
        *(long long *)arg = atoll(vals[0]);
    return 1;
}

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

const char *zb_password_file_problem(const struct backend_conf *bc, char *buf, size_t len)
{
    buf[0] = 0;
    if (bc->password_file && access(bc->password_file, R_OK) != 0)
        snprintf(buf, len, " (password_file %s: %s; scripts/db start writes it)", bc->password_file,
                 strerror(errno));
    return buf;
}

const char *backend_next_step(const struct backend_conf *bc, const struct zb_err *err, char *buf,
                              size_t len)
{
    buf[0] = 0;
    if (!err || (err->kind != ZB_ERR_REFUSED && err->kind != ZB_ERR_CONN) ||
        (!bc->started_by && !bc->port_var))
        return buf;
    const char *env = bc->port_var ? getenv(bc->port_var) : NULL;
    char port[200];
    if (env && *env)
        snprintf(port, sizeof port, "port from %s=%s", bc->port_var, env);
    else if (bc->port_var)
        snprintf(port, sizeof port, "port %d, the default: %s is not set", bc->port, bc->port_var);
    else
        snprintf(port, sizeof port, "port %d, from the config", bc->port);
    snprintf(buf, len, " -- is the database running? %s%s(%s)", bc->started_by ? bc->started_by : "",
             bc->started_by ? " " : "", port);
    return buf;
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

#define TEXT(n) { #n, ZB_TEXT, true, "TEXT" },
#define FLAG(n) { #n, ZB_INTEGER, true, "INTEGER" },
static const struct zb_column postal_columns[ZB_NCOLS] = { POSTAL_COLUMNS(TEXT, FLAG) };
#undef TEXT
#undef FLAG

struct zb_table zb_postal_table(const char *name)
{
    return (struct zb_table){ .name = name, .ncols = ZB_NCOLS, .cols = postal_columns, .key = 2,
                              .nindexes = 3, .indexes = { 2, 1, 0 } };
}

/* snprintf into buf at *n, keeping *n at len or past it once it overflows. */
static void put(char *buf, size_t len, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
    if (*n >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    *n += (size_t)vsnprintf(buf + *n, len - *n, fmt, ap);
    va_end(ap);
}

static const char *sql_type(const struct zb_column *c)
{
    static const char *const names[] = { [ZB_TEXT] = "TEXT", [ZB_INTEGER] = "BIGINT",
                                         [ZB_REAL] = "DOUBLE PRECISION" };
    return c->sql_type ? c->sql_type : names[c->type];
}

int zb_select_sql(char *buf, size_t len, const struct zb_table *t)
{
    size_t n = 0;
    put(buf, len, &n, "SELECT ");
    for (int i = 0; i < t->ncols; i++)
        put(buf, len, &n, "%s\"%s\"", i ? ", " : "", t->cols[i].name);
    put(buf, len, &n, " FROM %s WHERE \"%s\" = ?", t->name, t->cols[t->key].name);
    return n < len ? 0 : -1;
}

int zb_lookup_sql(char *buf, size_t len, const char *table)
{
    struct zb_table t = zb_postal_table(table);
    return zb_select_sql(buf, len, &t);
}

int zb_create_sql(char *buf, size_t len, const struct zb_table *t, const char *suffix)
{
    size_t n = 0;
    put(buf, len, &n, "CREATE TABLE %s (", t->name);
    for (int i = 0; i < t->ncols; i++)
        put(buf, len, &n, "%s\"%s\" %s%s", i ? ", " : "", t->cols[i].name, sql_type(&t->cols[i]),
            t->cols[i].not_null ? " NOT NULL" : "");
    put(buf, len, &n, ")%s", suffix ? suffix : "");
    return n < len ? 0 : -1;
}

int zb_insert_sql(char *buf, size_t len, const struct zb_table *t, int rows)
{
    size_t n = 0;
    put(buf, len, &n, "INSERT INTO %s VALUES ", t->name);
    for (int r = 0; r < rows; r++) {
        put(buf, len, &n, "%s(?", r ? "," : "");
        for (int i = 1; i < t->ncols; i++)
            put(buf, len, &n, ",?");
        put(buf, len, &n, ")");
    }
    return n < len ? 0 : -1;
}

const char *zb_sql_brief(const char *sql, char *buf, size_t len)
{
    size_t keep = len - 1 < ZB_SQL_BRIEF ? len - 1 : ZB_SQL_BRIEF;
    size_t n = strlen(sql);
    if (n <= keep) {
        memcpy(buf, sql, n + 1);
        return buf;
    }
    keep -= 3;
    memcpy(buf, sql, keep);
    memcpy(buf + keep, "...", 4);
    return buf;
}

size_t zb_tsv_row_max(int ncols, const char *const *fields)
{
    size_t need = 1;
    for (int i = 0; i < ncols; i++)
        need += (fields[i] ? 2 * strlen(fields[i]) : 2) + 1;
    return need;
}

size_t zb_tsv_row(char *out, int ncols, const char *const *fields)
{
    char *o = out;
    for (int i = 0; i < ncols; i++) {
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

/* One prepared statement of `batch` rows, executed per batch; the last,
 * shorter batch gets a statement of its own. */
long long zb_insert_batches(const struct backend_driver *drv, struct db *db,
                            const struct zb_table *table, int batch, rows_fn next, void *arg,
                            struct zb_err *err)
{
    const int ncols = table->ncols;
    size_t sqllen = 128 + strlen(table->name) + (size_t)batch * ((size_t)ncols * 2 + 4);
    char *sql = malloc(sqllen);
    const char **params = calloc((size_t)batch * (size_t)ncols, sizeof *params);
    char **copies = calloc((size_t)batch * (size_t)ncols, sizeof *copies);
    struct stmt *full = NULL;
    long long rows = 0;
    int rc = 0, n = 0;
    if (!sql || !params || !copies) {
        rc = zb_fail(err, ZB_ERR_SYS, "out of memory");
        goto out;
    }
    zb_insert_sql(sql, sqllen, table, batch);
    if (drv->prepare(db, sql, batch * ncols, &full, err) < 0) {
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
            for (int i = 0; i < ncols; i++) {
                char **c = &copies[n * ncols + i];
                free(*c);
                *c = fields[i] ? strdup(fields[i]) : NULL;
                params[n * ncols + i] = *c;
            }
            n++;
        }
        if (n == batch || (rc == 0 && n > 0)) {
            struct stmt *st = full;
            if (n < batch) {
                zb_insert_sql(sql, sqllen, table, n);
                if (drv->prepare(db, sql, n * ncols, &st, err) < 0) {
                    rc = -1;
                    break;
                }
            }
            int ok = drv->run(st, params, NULL, NULL, NULL, err);
            if (st != full)
                drv->finalize(st);
            if (ok < 0) {
                if (err && err->row > 0) {
                    err->row += rows;  /* the statement's row, counted from the load's first */
                } else if (err && err->kind == ZB_ERR_SQL && n > 1) {
                    err->row = rows + 1;   /* one of the batch's: the database did not say */
                    err->row_span = n;
                } else if (err && err->kind == ZB_ERR_SQL) {
                    err->row = rows + 1;
                }
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
    for (int i = 0; copies && i < batch * ncols; i++)
        free(copies[i]);
    free(copies);
    free(params);
    free(sql);
    return rc < 0 ? -1 : rows;
}
