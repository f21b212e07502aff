/* The one seam between zipbench and a database.
 *
 * Every driver (backend_sqlite.c, backend_pg.c, backend_mysql.c) fills one
 * struct backend_driver; the table in backend.c names them. The loader and
 * the server only ever talk to a database through these calls, so adding a
 * backend touches one new file and one line of that table.
 *
 * SQL text given to exec/query/prepare is always zipbench's own; values
 * travel as bound parameters (text, NULL for SQL NULL), never pasted in.
 * Placeholders are written "?" everywhere; drivers that want "$1" rewrite. */
#ifndef ZB_BACKEND_H
#define ZB_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "conf.h"
#include "util.h"

struct db;     /* a connection, driver-private */
struct stmt;   /* a prepared statement on one connection */

/* Called once per result row; values are NUL-terminated text (NULL for SQL
 * NULL). Return non-zero to stop early. */
typedef int (*row_fn)(void *arg, int ncols, const char *const *vals, const size_t *lens);

/* Source of rows for bulk_load: fills fields (one per column of the table,
 * NULL for SQL NULL) and returns 1, 0 at the end, -1 on error (err filled). */
typedef int (*rows_fn)(void *arg, const char *const **fields, struct zb_err *err);

/* A table described: what the loader creates and fills, and the server
 * looks up. The postal table is one (zb_postal_table); a [dataset] of the
 * config makes others (lib/dataset.c). */
enum zb_type { ZB_TEXT, ZB_INTEGER, ZB_REAL };

#define ZB_MAX_COLUMNS 64   /* the drivers hand at most 64 values to a row_fn */

struct zb_column {
    const char *name;       /* letters, digits, _; quoted in SQL, so reserved words are fine */
    enum zb_type type;      /* INTEGER: 64-bit; values are checked before they are sent */
    bool not_null;
    const char *sql_type;   /* CREATE TABLE's type; NULL: TEXT, BIGINT, DOUBLE PRECISION */
};

struct zb_table {
    const char *name;       /* in the database (a plain SQL name) */
    int ncols;
    const struct zb_column *cols;
    int key;                /* the column lookups go by */
    int nindexes;
    int indexes[4];         /* columns with an index of their own, key first */
};

enum zb_sync { ZB_SYNC_DEFAULT = 0, ZB_SYNC_FULL, ZB_SYNC_NORMAL, ZB_SYNC_OFF };
/* "full", "normal", "off": the levels from ZB_SYNC_FULL on, as --sync names them. */
extern const char *const zb_sync_names[3];

struct backend_driver {
    const char *name;  /* "sqlite", "pg", "mysql" */

    int  (*open)(const struct backend_conf *bc, struct db **out, struct zb_err *err);
    void (*close)(struct db *db);
    /* false once the connection is known broken (cheap, no round trip). */
    bool (*alive)(struct db *db);

    /* Run statements with no parameters and no result (DDL, BEGIN, COMMIT). */
    int  (*exec)(struct db *db, const char *sql, struct zb_err *err);
    /* One-shot parameterized statement: parsed every call, like a PHP page.
     * query and run set err->row to the row of a multi-row statement an
     * error is about, where the database says which. */
    int  (*query)(struct db *db, const char *sql, int nparams, const char *const *params,
                  row_fn fn, void *arg, long long *affected, struct zb_err *err);

    int  (*prepare)(struct db *db, const char *sql, int nparams, struct stmt **out,
                    struct zb_err *err);
    int  (*run)(struct stmt *st, const char *const *params, row_fn fn, void *arg,
                long long *affected, struct zb_err *err);
    void (*finalize)(struct stmt *st);

    /* The backend's fastest load path into table (which exists, empty):
     * PostgreSQL COPY, MariaDB LOAD DATA LOCAL INFILE, SQLite prepared
     * inserts. Returns rows loaded, or -1. The caller owns the transaction
     * where the backend has one. Every value must be stored whole: a
     * warning (a value cut or changed) fails the load, and an error about
     * one row sets err->row to its place among the rows next gave. */
    long long (*bulk_load)(struct db *db, const struct zb_table *table, rows_fn next, void *arg,
                           struct zb_err *err);

    /* Applies a durability level (ZB_SYNC_DEFAULT changes nothing) and
     * describes the setting now in force, e.g. "synchronous=FULL". */
    int  (*set_sync)(struct db *db, enum zb_sync level, char *desc, size_t desclen,
                     struct zb_err *err);
    /* Bytes the table and its indexes take on disk (-1 if unknown). */
    long long (*table_bytes)(struct db *db, const char *table);
    /* Server/library version, for reports. */
    const char *(*version)(struct db *db);

    /* Dialect: text appended to CREATE TABLE (e.g. " ENGINE=InnoDB"). */
    const char *(*create_suffix)(struct db *db);
    /* Replace table `to` by table `from` atomically (old one dropped). */
    int  (*swap_table)(struct db *db, const char *from, const char *to, struct zb_err *err);
};

const struct backend_driver *backend_driver(const char *name);

/* A connection that failed: ZB_ERR_TIMEOUT if the attempt begun at
 * started_ns lasted limit_ns or more (the database accepted and then never
 * answered: frozen), else ZB_ERR_CONN (refused or lost at once). */
enum zb_err_kind zb_failure_kind(uint64_t started_ns, uint64_t limit_ns);

/* " (password_file PATH: why it cannot be read)" when bc names a password
 * file that cannot be read, else "": for the message of a failed connect,
 * which the client libraries word as "no password supplied". */
const char *zb_password_file_problem(const struct backend_conf *bc, char *buf, size_t len);

/* A connection bundled with its driver, what loader and server hold. */
struct backend {
    const struct backend_driver *drv;
    const struct backend_conf *conf;
    struct db *db;
};

int  backend_open(struct backend *b, const struct backend_conf *bc, struct zb_err *err);
void backend_close(struct backend *b);

/* The postal table's columns in KEN_ALL order, as the server's /zip route
 * writes them. */
#define ZB_NCOLS 15
extern const char *const zb_columns[ZB_NCOLS];
/* Flags are INTEGER, the rest TEXT, as the original benchmark did. */
bool zb_column_is_flag(int col);
/* The postal table called `name`: KEN_ALL's 15 columns, looked up by
 * zip_code, old_code indexed too. */
struct zb_table zb_postal_table(const char *name);

/* SQL text for a table; each returns -1 if buf is too small. */
/* CREATE TABLE, with the driver's suffix (engine). */
int zb_create_sql(char *buf, size_t len, const struct zb_table *t, const char *suffix);
/* INSERT of `rows` rows of one placeholder per column. */
int zb_insert_sql(char *buf, size_t len, const struct zb_table *t, int rows);
/* Every column of the rows whose key is the one parameter. */
int zb_select_sql(char *buf, size_t len, const struct zb_table *t);
/* zb_select_sql of the postal table `table`: the lookup of the /zip route. */
int zb_lookup_sql(char *buf, size_t len, const char *table);

/* Inserts the rows of next into table through one prepared INSERT of
 * `batch` rows, run per batch (the last, shorter batch gets a statement of
 * its own): the loader's prepared mode, and MariaDB's bulk path where LOAD
 * DATA LOCAL is refused. Returns the rows inserted, or -1 (err->row, when
 * set, counts from the first row of next, as bulk_load's). */
long long zb_insert_batches(const struct backend_driver *drv, struct db *db,
                            const struct zb_table *table, int batch, rows_fn next, void *arg,
                            struct zb_err *err);

/* One row of ncols fields in the tab-separated text format both COPY FROM
 * STDIN and LOAD DATA read: \N for NULL, backslash escapes, ending in a
 * newline. zb_tsv_row_max() bytes are enough for zb_tsv_row() to write. */
size_t zb_tsv_row_max(int ncols, const char *const *fields);
size_t zb_tsv_row(char *out, int ncols, const char *const *fields);

#endif
