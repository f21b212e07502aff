/* The one seam between zipbench and a database.
 *
 * Every driver (backend_sqlite.c, backend_pg.c, backend_mysql*.c) fills one
 * struct backend_driver; the table in backend.c names them, and it is the
 * only list of drivers: the config checks `driver` against it and hands
 * each driver the keys only it knows. The loader, sqlbench and the server
 * only ever talk to a database through these calls, and tell errors apart
 * by their kind (ZB_ERR_CONN, _TIMEOUT, _BUSY...), never by their text, so
 * adding a backend touches one new file and one line of that table.
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
struct backend_async;

/* Called once per result row; values are NUL-terminated text (NULL for SQL
 * NULL). Return non-zero to stop early. */
typedef int (*row_fn)(void *arg, int ncols, const char *const *vals, const size_t *lens);

/* A row_fn for one number: the first row's first value into *(long long *)arg. */
int zb_first_number(void *arg, int ncols, const char *const *vals, const size_t *lens);

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
    const char *name;  /* "sqlite", "pg", "mysql": the config's `driver` */

    /* What it can do, asked instead of its name. in_process: the database
     * runs inside this process on a file (SQLite): no server, no connect
     * cost, and its journal (PRAGMA journal_mode) is the caller's to set
     * (a load sets WAL: try_load_lock). Its read-only connections never
     * wait for another connection's lock: a statement that meets one fails
     * at once with ZB_ERR_BUSY, for the caller (which must not block: the
     * server's loops) to try again later.
     * analyze: the statement that refreshes a table's statistics, written
     * before the table's name ("ANALYZE ", MariaDB's "ANALYZE TABLE ").
     * Pipelining and the server's asynchronous calls: see async. */
    bool in_process;
    const char *analyze;

    /* Its own config keys (those conf.c does not know): 0 if key=value is
     * good, -1 if key is not one of its, -2 with why filled for a bad
     * value. NULL: it has none. */
    int  (*check_key)(const char *key, const char *value, char *why, size_t whylen);

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
     * inserts. Returns rows loaded as the database counts them (COPY's
     * tag, LOAD DATA's affected rows, SQLite's own inserts), which must be
     * the rows next gave, or -1. The caller owns the transaction
     * where the backend has one. Every value must be stored whole: a
     * warning (a value cut or changed) fails the load, and an error about
     * one row sets err->row to its place among the rows next gave. */
    long long (*bulk_load)(struct db *db, const struct zb_table *table, rows_fn next, void *arg,
                           struct zb_err *err);

    /* Applies a durability level (ZB_SYNC_DEFAULT changes nothing) and
     * describes the setting now in force, e.g. "synchronous=FULL". A level
     * that is a server-wide setting (InnoDB's) is put back by close(), and
     * recorded in the database first, so that recover() can put it back
     * when the process was killed before it could. */
    int  (*set_sync)(struct db *db, enum zb_sync level, char *desc, size_t desclen,
                     struct zb_err *err);
    /* Puts back what a set_sync of a load that did not end left changed:
     * its session is gone, or its process is (on this host) while the
     * database still ends its session. 1 with note saying what it put back
     * (or that a running load still needs the change), 0 if there was
     * nothing, -1 on error. It never waits. NULL: the driver changes
     * nothing server-wide. */
    int  (*recover)(struct db *db, char *note, size_t notelen, struct zb_err *err);
    /* Bytes the table and its indexes take on disk (-1 if unknown). */
    long long (*table_bytes)(struct db *db, const char *table);
    /* Server/library version, for reports. */
    const char *(*version)(struct db *db);

    /* Dialect: text appended to CREATE TABLE (e.g. " ENGINE=InnoDB"). */
    const char *(*create_suffix)(struct db *db);
    /* Dialect: text columns are declared VARCHAR(n), n the most characters
     * a value of the column has in the rows loaded (ZB_VARCHAR_MAX at
     * most: a wider column, or one whose rows cannot be read twice, stays
     * TEXT). MariaDB's: a TEXT key is indexed by a 768-character prefix,
     * whose MyISAM index sorts 1 KB records (DECISIONS.md: MariaDB's text
     * columns are VARCHAR sized from the data). A value that does not fit
     * is then an error, never cut (the load's warnings fail it). false:
     * TEXT, as PostgreSQL's DBAs use it. */
    bool sized_text;
    /* A sized_text driver's query of one parameter, a table's name, whose
     * rows are the table's columns in order: its name, and the characters
     * its text type holds (0: TEXT; NULL: not a text type). A load starts
     * from the widths of the table it replaces, and makes its pass over
     * the rows only when they do not fit exactly (loader/load.c). */
    const char *text_widths_sql;
    /* Dialect: text appended to a text key's "= ?" so that a lookup
     * matches the key's exact bytes, as on every other backend; NULL if
     * the comparison already does. */
    const char *text_key_exact;
    /* A query of one parameter, a table's name, whose one value is the
     * generation of its last load (swap_table's), a whole number as text;
     * no row: no load recorded (an error where ZB_LOADS_TABLE is missing).
     * The server polls it: what it derives from a table follows it. */
    const char *generation_sql;
    /* The write table's stamp (the server's POST /update/ on TABLE, a
     * {table}_hits): into write (len bytes), the statement that sets the
     * stamp of the row whose zip_code is its one parameter to a value the
     * database makes, unique and increasing, across every writer, in the
     * order the writes to one row commit, and answers that value as its
     * one row of one column (no row: no such row). -1 if it does not fit.
     * NULL: the driver takes no writes. */
    int  (*stamp_sql)(const char *table, char *write, size_t len);
    /* What stamp_sql's statement needs, made if missing (idempotent, on a
     * writable connection): a sequence that starts above every stamp
     * table holds, or an index. */
    int  (*stamp_setup)(struct db *db, const char *table, struct zb_err *err);
    /* Replace table `to` by table `from` atomically (old one dropped); it
     * may use the name `to` + ZB_SWAP_SUFFIX on the way. The load is
     * recorded with the swap: `to`'s generation, one more than its last,
     * in ZB_LOADS_TABLE (names.h: name, generation, rows, loaded_at; made
     * if missing), in the swap's own transaction, or where DDL commits on
     * its own (MariaDB) in `to`'s table comment, which the rename carries
     * in the same atomic step. *generation gets it (NULL: not wanted). */
    int  (*swap_table)(struct db *db, const char *from, const char *to, long long rows,
                       long long *generation, struct zb_err *err);

    /* The longest name of a table or index the database takes, in bytes; 0:
     * no limit. Names are plain ASCII (conf.c), so MariaDB's 64 characters
     * are 64 bytes. PostgreSQL does not refuse a longer name but cuts it,
     * which can make it the name of another table: callers check first. */
    int ident_max;
    /* Tries to take the load lock of `table`: one load at a time per table
     * (its staging table and swap are the load's own). Held until db is
     * closed, or the process dies. 1: taken (or held already by db), 0:
     * another connection holds it, -1 on error. It never waits: the
     * caller polls, so it can say it waits and can be interrupted. Once
     * taken, the database is ready for a load that readers watch (SQLite:
     * WAL mode, so the server's readers never wait for it). */
    int  (*try_load_lock)(struct db *db, const char *table, struct zb_err *err);

    /* The non-blocking calls the server's event loops use; NULL for a
     * database that runs in-process (SQLite), whose synchronous calls the
     * server makes inline. */
    const struct backend_async *async;
};

/* ---- the asynchronous side, for the server's event loops ----
 *
 * No call blocks. Those that wait on the database return what the
 * connection waits for next: ZB_WANT_READ and/or ZB_WANT_WRITE on
 * socket(); call again once the socket is ready for it. 0 means the step
 * is complete, -1 that it failed (err filled). A connection opened this
 * way is closed with the driver's close(), which never blocks on it, and
 * frees its prepared statement too. The loader and sqlbench never use it. */
enum { ZB_WANT_READ = 1, ZB_WANT_WRITE = 2 };

struct backend_async {
    /* Starts opening a read-only connection to bc; *out is set (and must
     * be closed) whatever the outcome. Then connect_step() each time the
     * socket is ready, until it returns 0. The caller bounds the time
     * (connect_timeout_s): the driver sets no timer of its own. */
    int (*connect_start)(const struct backend_conf *bc, struct db **out, struct zb_err *err);
    int (*connect_step)(struct db *db, struct zb_err *err);
    /* The socket to watch; it may change while connecting (pg tries each
     * address of a host in turn), so read it again after every step. */
    int (*socket)(struct db *db);

    /* Sends PREPARE of sql (at most one prepared statement per connection
     * opened this way); it completes through result(), with no rows. */
    int (*prepare)(struct db *db, const char *sql, int nparams, struct stmt **out,
                   struct zb_err *err);
    /* Sends one run of st, or (st NULL) the one-shot parameterized sql. */
    int (*send)(struct db *db, struct stmt *st, const char *sql, int nparams,
                const char *const *params, struct zb_err *err);
    /* Moves what it can both ways. Once the oldest statement sent has its
     * whole answer, feeds its rows to fn and returns 0 (call again: the next
     * one may be complete too). -1: that statement failed; if err->kind is
     * ZB_ERR_CONN the connection is lost with everything sent on it, else
     * it goes on. With nothing sent, it checks an idle connection: -1 if
     * the database closed it (the first call right after an answer may
     * skip the look and ask for ZB_WANT_READ: a close then makes the
     * socket readable, and the next call checks). */
    int (*result)(struct db *db, row_fn fn, void *arg, struct zb_err *err);

    /* Pipelining, NULL where the client library cannot: pipeline() right
     * after connecting lets send() be called again before the previous
     * answers came back (they come in order); flush() ends a batch of sends
     * and writes it. */
    int (*pipeline)(struct db *db, struct zb_err *err);
    int (*flush)(struct db *db, struct zb_err *err);
    /* Makes every further read and write on the connection fail at once
     * (a statement that timed out); close() then frees it. */
    void (*abort)(struct db *db);
};

const struct backend_driver *backend_driver(const char *name);
/* "sqlite, pg or mysql": the names of the table, for messages. */
void backend_driver_names(char *buf, size_t len);

/* A connection that failed: ZB_ERR_TIMEOUT if the attempt begun at
 * started_ns lasted limit_ns or more (the database accepted and then never
 * answered: frozen), else ZB_ERR_CONN (refused or lost at once). */
enum zb_err_kind zb_failure_kind(uint64_t started_ns, uint64_t limit_ns);

/* " (password_file PATH: why it cannot be read)" when bc names a password
 * file that cannot be read, else "": for the message of a failed connect,
 * which the client libraries word as "no password supplied". */
const char *zb_password_file_problem(const struct backend_conf *bc, char *buf, size_t len);

/* What to do after err, a connect bc's database refused or a connection
 * it lost: " -- is the database running? scripts/db start (port from
 * ZB_PG_PORT=25444)", naming bc's started_by and where its port came from
 * (the environment variable, or the config); "" for any other error, or a
 * backend with no database server to start (no port, no started_by).
 * Written into buf, which is returned; for the loader's and the server's
 * messages, never a client's answer. */
const char *backend_next_step(const struct backend_conf *bc, const struct zb_err *err, char *buf,
                              size_t len);

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
/* The postal table called `name`: KEN_ALL's 15 columns, looked up by
 * zip_code, old_code and jis_code (the listing page's) indexed too. */
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

/* The names a load derives from its table's: the staging table it fills
 * (the loader's), the old table swap_table may move it to on the way. A
 * '$' is in no name the config can give (letters, digits, _) and needs no
 * quotes in PostgreSQL, MariaDB or SQLite: so no derived name is ever
 * another backend's or dataset's live table on a shared database, which a
 * load would drop ("t_pg" + "_load" is backend pg_load's "t_pg_load"). */
#define ZB_STAGING_SUFFIX "$load"
#define ZB_SWAP_SUFFIX "$old"

/* sql as a message shows it: the first words, "..." where it was cut (a
 * prepared INSERT of 100 rows is kilobytes of "(?,?,..."), so the cause
 * that follows it is never cut off. Returns buf. */
const char *zb_sql_brief(const char *sql, char *buf, size_t len);

/* The widest VARCHAR a sized_text driver declares, in characters: 64
 * columns of it (4 bytes a character in utf8mb4) stay within MariaDB's
 * 65,535-byte row. */
#define ZB_VARCHAR_MAX 255
#define ZB_SQL_BRIEF 72   /* bytes zb_sql_brief keeps at most */

/* One row of ncols fields in the tab-separated text format both COPY FROM
 * STDIN and LOAD DATA read: \N for NULL, backslash escapes, ending in a
 * newline. zb_tsv_row_max() bytes are enough for zb_tsv_row() to write. */
size_t zb_tsv_row_max(int ncols, const char *const *fields);
size_t zb_tsv_row(char *out, int ncols, const char *const *fields);

#endif
