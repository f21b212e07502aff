/* The four load modes.
 *
 * Rows go into <table>$load, a table nobody reads, and only when its row
 * count matches the file's is it swapped in for <table> in one atomic
 * step. A load killed or cut off half way leaves <table>$load behind and
 * the old <table> as it was: nothing half-loaded is ever claimed complete.
 * A load holds the backend's load lock of <table> from before it drops a
 * leftover <table>$load to after the swap, so two loaders of one table
 * take turns (the second says it waits): each owns the staging table and
 * the swap, and one that exits 0 installed exactly its own rows. The '$'
 * of derived names (ZB_STAGING_SUFFIX) keeps them off every name a config
 * can give; two tables a config would give one name are refused when it is
 * read (lib/names.c). */
#include "load.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

static const char *const mode_names[] = { "autocommit", "transaction", "prepared", "bulk" };

volatile sig_atomic_t load_interrupted;

/* Fails with "interrupted" once a signal asked the load to stop. */
static int check_interrupted(struct zb_err *err)
{
    if (!load_interrupted)
        return 0;
    return zb_fail(err, ZB_ERR_SYS, "interrupted by %s: the load stopped, the old table is kept",
                   strsignal(load_interrupted));
}

const char *load_mode_name(enum load_mode m) { return mode_names[m]; }

int load_mode_parse(const char *s, enum load_mode *m)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, mode_names[i])) {
            *m = (enum load_mode)i;
            return 0;
        }
    return -1;
}

/* A sized_text load's text widths taken from the table it replaces
 * (replaced_widths): each row is checked against them as it streams, and
 * the widest value of each column is kept for the check at the end. */
struct widths {
    size_t cap[ZB_MAX_COLUMNS];   /* characters the column holds; SIZE_MAX: TEXT */
    size_t seen[ZB_MAX_COLUMNS];  /* the widest value streamed */
};

/* The row source every mode reads through: counts and draws progress. */
struct source {
    struct dataset_reader *r;
    struct progress bar;
    long long rows, limit;
    const struct zb_table *table;
    struct widths *widths;  /* NULL: the types are the rows' own (or TEXT) */
    bool misfit;            /* stopped: a value wider than its column */
};

static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* Raises width[i] to the characters of the row's value of each text column. */
static void widen(const struct zb_table *t, const char *const *f, size_t *width)
{
    for (int i = 0; i < t->ncols; i++) {
        size_t w = t->cols[i].type == ZB_TEXT && f[i] ? utf8_chars(f[i]) : 0;
        if (w > width[i])
            width[i] = w;
    }
}

static int next_row(void *arg, const char *const **fields, struct zb_err *err)
{
    struct source *s = arg;
    if (s->limit && s->rows == s->limit)
        return 0;
    if (check_interrupted(err) < 0)
        return -1;
    int rc = dataset_next(s->r, fields, err);
    if (rc == 1 && (++s->rows & 1023) == 0)
        progress_update(&s->bar, dataset_offset(s->r), dataset_size(s->r), s->rows);
    if (rc == 1 && s->widths) {
        widen(s->table, *fields, s->widths->seen);
        for (int i = 0; i < s->table->ncols; i++)
            if (s->widths->seen[i] > s->widths->cap[i]) {   /* never sent: loaded again, sized */
                s->misfit = true;
                return zb_fail(err, ZB_ERR_INPUT, "column %s: a value wider than the replaced "
                               "table's", s->table->cols[i].name);
            }
    }
    return rc;
}

/* One statement per row: parsed every time, as a PHP page would send it. */
static long long load_each(struct backend *b, const struct zb_table *table, struct source *src,
                           struct zb_err *err)
{
    char sql[2048];
    if (zb_insert_sql(sql, sizeof sql, table, 1) < 0)
        return zb_fail(err, ZB_ERR_INPUT, "%s: INSERT too long", table->name);
    const char *const *fields;
    long long rows = 0;
    int rc;
    while ((rc = next_row(src, &fields, err)) == 1) {
        if (b->drv->query(b->db, sql, table->ncols, fields, NULL, NULL, NULL, err) < 0) {
            if (err->kind == ZB_ERR_SQL)  /* the row just read; a lost server is not its fault */
                err->row = src->rows;
            return -1;
        }
        rows++;
    }
    return rc < 0 ? -1 : rows;
}

/* A database error about one row gets the file and line of that row put
 * first. The row just read is the reader's current one; an earlier one
 * (LOAD DATA and COPY complain at their end) is found by reading the file
 * again, which standard input cannot be. */
/* The line of row `row` (1-based) of the file, 0 if it cannot be told. */
static long line_of_row(const struct load_opts *o, const struct source *src, long long row)
{
    const char *file = o->data->conf->file;
    if (row == src->rows)
        return dataset_row_line(src->r);
    if (!strcmp(file, "-"))
        return 0;
    struct zb_err ignored = { 0 };
    struct dataset_reader *r = dataset_open(o->data, &ignored);
    const char *const *fields;
    long long n = 0;
    while (r && n < row && dataset_next(r, &fields, &ignored) == 1)
        n++;
    long line = n == row ? dataset_row_line(r) : 0;
    dataset_close(r);
    return line;
}

/* A database error during the load gets the file put first, and the line
 * it is about where the database said which row; where it did not (a
 * statement of several rows, or a failure that is no row's, like a full
 * disk) the message says which lines had been sent, and that the database
 * did not say which. The cause always follows whole. */
static void name_bad_row(const struct load_opts *o, const struct source *src, struct zb_err *err)
{
    const char *file = o->data->conf->file;
    char msg[sizeof err->msg], where[160];
    if (err->row <= 0 && (err->kind != ZB_ERR_SQL || src->rows == 0))
        return;
    memcpy(msg, err->msg, sizeof msg);
    if (err->row <= 0) {
        long last = dataset_row_line(src->r);
        snprintf(where, sizeof where, "rows 1-%lld (up to line %ld) sent, the database did not "
                 "say which row", src->rows, last);
    } else if (err->row_span > 1) {
        long long to = err->row + err->row_span - 1;
        long first = line_of_row(o, src, err->row), last = line_of_row(o, src, to);
        if (first > 0 && last > 0)
            snprintf(where, sizeof where, "%ld-%ld (rows %lld-%lld, one statement; the database "
                     "did not say which row)", first, last, err->row, to);
        else
            snprintf(where, sizeof where, "rows %lld-%lld (one statement; the database did not "
                     "say which row)", err->row, to);
    } else {
        long line = line_of_row(o, src, err->row);
        if (line > 0)
            snprintf(where, sizeof where, "%ld", line);
        else
            snprintf(where, sizeof where, "row %lld", err->row);
    }
    /* The cause whole: a long path gives way first, then the place. */
    int room = (int)sizeof err->msg - 1 - (int)strlen(msg) - 3;
    int where_len = (int)strlen(where) < room - 40 ? (int)strlen(where) : room - 40;
    if (where_len < 0)
        where_len = 0;
    int file_len = room - where_len;
    if (file_len < 0)
        file_len = 0;
    char out[sizeof err->msg + sizeof where + 8];
    snprintf(out, sizeof out, "%.*s:%.*s: %s", file_len, file, where_len, where, msg);
    memcpy(err->msg, out, sizeof err->msg - 1);
    err->msg[sizeof err->msg - 1] = 0;
}

/* After a bad row the loader reads on, so one run names every bad row of
 * the file: the first fails the load, the others are listed after it. */
static void list_more_bad_rows(struct source *src, const char *file, struct load_result *res)
{
    enum { SHOWN = 20 };
    struct zb_err e = { 0 };
    const char *const *fields;
    long more = 0;
    size_t n = 0;
    int rc;
    while ((rc = dataset_next(src->r, &fields, &e)) != 0) {
        if (rc > 0)
            continue;
        if (e.kind != ZB_ERR_INPUT)
            break;  /* cannot read on */
        if (more++ < SHOWN && n < sizeof res->more_bad_rows)
            n += (size_t)snprintf(res->more_bad_rows + n, sizeof res->more_bad_rows - n,
                                  "also %.300s\n", e.msg);
    }
    if (more > SHOWN && n < sizeof res->more_bad_rows)
        snprintf(res->more_bad_rows + n, sizeof res->more_bad_rows - n,
                 "and %ld more bad rows in %s\n", more - SHOWN, file);
}

static int count_cb(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)l;
    if (n > 0 && v[0])
        *(long long *)arg = atoll(v[0]);
    return 1;
}

/* Rows in table, -1 if it cannot be counted (it does not exist yet). */
static long long table_rows(struct backend *b, const char *table)
{
    char sql[256];
    long long n = -1;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    if (b->drv->query(b->db, sql, 0, NULL, count_cb, &n, NULL, NULL) < 0)
        return -1;
    return n;
}

/* The replaced table's rows (check_swappable's), counted on a connection
 * of its own while the rows load: InnoDB counts by reading a whole index
 * (DECISIONS.md: what a MariaDB load times). Started once the load lock
 * is held, so no other load replaces the table meanwhile, and zipbench's
 * writes change no table's count. An in-process database (SQLite)
 * counts on the load's connection, after the load. */
struct replaced_count {
    const struct backend_conf *bc;
    const char *table;
    long long rows;   /* -1: no such table; -2: not counted (count after) */
    pthread_t thread;
    bool started;
};

static void *count_replaced(void *arg)
{
    struct replaced_count *c = arg;
    struct backend b;
    struct zb_err ignored = { 0 };
    if (backend_open(&b, c->bc, &ignored) == 0)
        c->rows = table_rows(&b, c->table);
    backend_close(&b);
    return NULL;
}

static void count_replaced_start(struct replaced_count *c, struct backend *b,
                                 const char *table)
{
    *c = (struct replaced_count){ .bc = b->conf, .table = table, .rows = -2 };
    if (!b->drv->in_process)
        c->started = pthread_create(&c->thread, NULL, count_replaced, c) == 0;
}

static long long count_replaced_end(struct replaced_count *c, struct backend *b)
{
    if (c->started)
        pthread_join(c->thread, NULL);
    c->started = false;
    return c->rows == -2 ? table_rows(b, c->table) : c->rows;
}

/* An index's name: <table>$<i>$<tag>, the target table's name (the one
 * it keeps after the swap) and the load's tag of TAG_LEN characters; in
 * PostgreSQL and SQLite indexes share the tables' names, and the '$' keeps
 * it off them too. */
enum { TAG_LEN = 11 };
#define INDEX_NAME_EXTRA (1 + 1 + 1 + TAG_LEN)   /* "$<i>$<tag>", i < 10 */

static void load_tag(char *tag, size_t len)
{
    snprintf(tag, len, "%08lx%03x", (unsigned long)time(NULL) & 0xffffffffUL,
             (unsigned)getpid() & 0xfff);
}

static int create_indexes(struct backend *b, const struct zb_table *table, const char *target,
                          const char *tag, struct zb_err *err)
{
    /* Index names are unique per load: in PostgreSQL and SQLite they are
     * schema-wide and the previous table's indexes still hold theirs. */
    for (int i = 0; i < table->nindexes; i++) {
        char sql[512];
        const char *col = table->cols[table->indexes[i]].name;
        snprintf(sql, sizeof sql, "CREATE INDEX %s$%d$%s ON %s (\"%s\")", target, i, tag,
                 table->name, col);
        if (b->drv->exec(b->db, sql, err) < 0)
            return -1;
    }
    return 0;
}

int load_check_names(const struct backend_conf *bc, const struct load_opts *o, struct zb_err *err)
{
    const struct backend_driver *drv = backend_driver(bc->driver);
    char name[128];
    struct zb_table table = dataset_table(o->data, bc, name, sizeof name);
    if (!drv || drv->ident_max <= 0)
        return 0;
    size_t len = strlen(name), max = (size_t)drv->ident_max;
    /* The longest derived name: an index's, else the staging or old table's. */
    size_t extra = strlen(ZB_STAGING_SUFFIX) > strlen(ZB_SWAP_SUFFIX) ? strlen(ZB_STAGING_SUFFIX)
                                                                      : strlen(ZB_SWAP_SUFFIX);
    const char *longest = ZB_STAGING_SUFFIX;
    if (table.nindexes > 0 && INDEX_NAME_EXTRA > extra) {
        extra = INDEX_NAME_EXTRA;
        longest = "$<i>$<tag> (an index)";
    }
    if (len + extra <= max)
        return 0;
    return zb_fail(err, ZB_ERR_INPUT, "%s: table name '%s' is %zu bytes: the load also names "
                   "%s%s (%zu bytes), and %s takes names of at most %zu bytes (a longer one is "
                   "%s); nothing was changed: name the table in at most %zu bytes", bc->name,
                   name, len, name, longest, len + extra, drv->name, max,
                   !strcmp(drv->name, "pg") ? "cut, which can make it the live table's name"
                                            : "refused", max - extra);
}

/* A sized_text driver's column types (backend.h): VARCHAR(n), n the most
 * characters a value of the column has in the rows to load (the first
 * --limit of them), TEXT past ZB_VARCHAR_MAX. Rows that cannot be read
 * twice (a file on stdin) keep TEXT. The types, written into sized,
 * replace t's columns. */
struct sized {
    struct zb_column col[ZB_MAX_COLUMNS];
    char type[ZB_MAX_COLUMNS][24];
};

/* A width as the type it makes: 1 at least, ZB_VARCHAR_MAX + 1 for TEXT. */
static size_t type_width(size_t w)
{
    return w > ZB_VARCHAR_MAX ? ZB_VARCHAR_MAX + 1 : w ? w : 1;
}

static void apply_widths(struct zb_table *t, const size_t *width, struct sized *sz)
{
    for (int i = 0; i < t->ncols; i++) {
        sz->col[i] = t->cols[i];
        if (t->cols[i].type != ZB_TEXT || type_width(width[i]) > ZB_VARCHAR_MAX)
            continue;
        snprintf(sz->type[i], sizeof sz->type[i], "VARCHAR(%zu)", type_width(width[i]));
        sz->col[i].sql_type = sz->type[i];
    }
    t->cols = sz->col;
}

/* The widths read in a pass of their own before the table is created. A
 * bad row ends the pass with every text column TEXT, and the load then
 * fails on it as it always has. */
static int size_text_columns(const struct load_opts *o, struct zb_table *t, struct sized *sz,
                             struct zb_err *err)
{
    if (t->ncols > ZB_MAX_COLUMNS || !strcmp(o->data->conf->file, "-"))
        return 0;
    size_t width[ZB_MAX_COLUMNS] = { 0 };
    struct zb_err ignored = { 0 };
    struct dataset_reader *r = dataset_open(o->data, &ignored);
    if (!r)
        return 0;
    const char *const *f;
    long long n = 0;
    int rc = 0;
    while ((!o->limit || n < o->limit) && (rc = dataset_next(r, &f, &ignored)) == 1) {
        if ((++n & 4095) == 0 && check_interrupted(err) < 0) {
            dataset_close(r);
            return -1;
        }
        widen(t, f, width);
    }
    dataset_close(r);
    if (rc < 0)
        return 0;
    apply_widths(t, width, sz);
    return 0;
}

/* A column of the replaced table, as text_widths_sql gives it. */
struct live_columns {
    const struct zb_table *t;
    int n;
    bool differ;
    size_t width[ZB_MAX_COLUMNS];
};

static int live_column(void *arg, int ncols, const char *const *v, const size_t *l)
{
    (void)l;
    struct live_columns *lc = arg;
    int i = lc->n++;
    if (ncols < 2 || i >= lc->t->ncols || !v[0] || strcmp(v[0], lc->t->cols[i].name) ||
        (lc->t->cols[i].type == ZB_TEXT) != (v[1] != NULL)) {
        lc->differ = true;
        return 1;
    }
    lc->width[i] = v[1] && atoll(v[1]) > 0 ? (size_t)atoll(v[1]) : ZB_VARCHAR_MAX + 1;
    return 0;
}

/* The widths of the table a load replaces, when it has t's columns with
 * text types: they replace t's (as apply_widths), w->cap holds them, and
 * the rows must prove them the pass's (widths_exact). 1 if taken; 0 if
 * there is no such table, or its columns are not t's, or the rows cannot
 * be read twice (a misfit loads them again). Reloading a list whose
 * widths did not change, the common case, reads it once. */
static int replaced_widths(struct backend *b, const struct load_opts *o, const char *name,
                           struct zb_table *t, struct sized *sz, struct widths *w)
{
    struct live_columns lc = { .t = t };
    const char *params[] = { name };
    if (!b->drv->text_widths_sql || t->ncols > ZB_MAX_COLUMNS || !strcmp(o->data->conf->file, "-") ||
        b->drv->query(b->db, b->drv->text_widths_sql, 1, params, live_column, &lc, NULL, NULL) < 0 ||
        lc.differ || lc.n != t->ncols)
        return 0;
    memset(w, 0, sizeof *w);
    for (int i = 0; i < t->ncols; i++)
        w->cap[i] = lc.width[i] > ZB_VARCHAR_MAX ? SIZE_MAX : lc.width[i];
    apply_widths(t, lc.width, sz);
    return 1;
}

/* The replaced table's widths are the ones the pass would have given. */
static bool widths_exact(const struct zb_table *t, const struct widths *w)
{
    for (int i = 0; i < t->ncols; i++)
        if (t->cols[i].type == ZB_TEXT && type_width(w->seen[i]) != type_width(w->cap[i]))
            return false;
    return true;
}

/* Puts back a global setting that a load which did not end (killed with
 * SIGKILL, before or while this one ran) left changed, and says so: each
 * load does it when it starts and when it ends, so the setting is never
 * left changed after the last load of a run. */
static int put_back_abandoned(struct backend *b, struct zb_err *err)
{
    char note[512];
    int got = b->drv->recover ? b->drv->recover(b->db, note, sizeof note, err) : 0;
    if (got > 0)
        fprintf(stderr, "loader: %s: %s\n", b->conf->name, note);
    return got < 0 ? -1 : 0;
}

/* Takes the load lock of table, waiting (and saying so) while another
 * load holds it; a signal ends the wait. */
static int take_load_lock(struct backend *b, const char *table, struct zb_err *err)
{
    int taken = b->drv->try_load_lock(b->db, table, err);
    if (taken == 0)
        fprintf(stderr, "loader: %s: waiting for another load of %s\n", b->conf->name, table);
    while (taken == 0) {
        if (check_interrupted(err) < 0)
            return -1;
        struct timespec pause = { 0, 100 * 1000 * 1000 };
        nanosleep(&pause, NULL);
        taken = b->drv->try_load_lock(b->db, table, err);
    }
    return taken < 0 ? -1 : 0;
}

/* Whether the staging table load (loaded rows by the load's own count, of
 * the file's rows) may replace table name: it must hold every row the
 * file has, and not replace a bigger table unless asked (a file cut short
 * at a line end reads as a good, smaller one; a --limit sample is asked).
 * Sets res->replaced_rows. */
static int check_swappable(struct backend *b, const struct load_opts *o,
                           const struct zb_table *load, const char *name, long long loaded,
                           long long rows, struct replaced_count *replaced,
                           struct load_result *res, struct zb_err *err)
{
    const char *file = o->data->conf->file;
    /* A bulk load's count is the database's own (bulk_load): scanning the
     * fresh table again would read all of it back (PostgreSQL: through
     * shared buffers) to learn nothing new. */
    long long in_table = loaded;
    if (o->mode != MODE_BULK) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", load->name);
        if (b->drv->query(b->db, sql, 0, NULL, count_cb, &in_table, NULL, err) < 0)
            return -1;
    }
    if (in_table != rows || loaded != rows)
        return zb_fail(err, ZB_ERR_SQL, "%s: the table holds %lld rows but %s has %lld; not "
                       "swapped in", b->conf->name, in_table, file, rows);
    res->replaced_rows = count_replaced_end(replaced, b);
    if (res->replaced_rows > rows && !o->allow_shrink && !o->limit)
        return zb_fail(err, ZB_ERR_INPUT, "%s has %lld rows, fewer than the %lld %s holds; %s "
                       "left as it was (--allow-shrink replaces it all the same)", file, rows,
                       res->replaced_rows, name, name);
    return 0;
}

/* The durability in force is what it was at the start (res->sync), unless
 * another session changed a global knob meanwhile: then res->sync says both. */
static void note_sync_change(struct backend *b, struct load_result *res)
{
    char end_sync[sizeof res->sync];
    if (b->drv->set_sync(b->db, ZB_SYNC_DEFAULT, end_sync, sizeof end_sync, NULL) == 0 &&
        strcmp(end_sync, res->sync)) {
        char start[sizeof res->sync];
        memcpy(start, res->sync, sizeof start);
        snprintf(res->sync, sizeof res->sync, "%.100s at the start, %.100s at the end (changed "
                 "by another session)", start, end_sync);
    }
}

/* Creates <table>$load afresh (its indexes first, unless --no-index) and
 * fills it from src in the load's mode: the rows it took, or -1 (a bad
 * row named, the rest of the file's bad rows listed in res). */
static long long fill(struct backend *b, const struct load_opts *o, const struct zb_table *load,
                      struct source *src, const char *name, const char *tag,
                      struct load_result *res, struct zb_err *err)
{
    char sql[8192];
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", load->name);
    if (b->drv->exec(b->db, sql, err) < 0)
        return -1;
    if (zb_create_sql(sql, sizeof sql, load, b->drv->create_suffix(b->db)) < 0)
        return zb_fail(err, ZB_ERR_INPUT, "%s: CREATE TABLE too long", load->name);
    if (b->drv->exec(b->db, sql, err) < 0)
        return -1;
    if (!o->index_after && create_indexes(b, load, name, tag, err) < 0)
        return -1;
    bool txn = o->mode != MODE_AUTOCOMMIT;
    if (txn && b->drv->exec(b->db, "BEGIN", err) < 0)
        return -1;
    long long loaded;
    switch (o->mode) {
    case MODE_AUTOCOMMIT:
    case MODE_TRANSACTION: loaded = load_each(b, load, src, err); break;
    case MODE_PREPARED: loaded = zb_insert_batches(b->drv, b->db, load, o->batch, next_row, src, err); break;
    default: loaded = b->drv->bulk_load(b->db, load, next_row, src, err); break;
    }
    if (loaded < 0) {
        if (!src->misfit) {
            if (err->kind == ZB_ERR_INPUT && !err->row)
                list_more_bad_rows(src, o->data->conf->file, res);
            name_bad_row(o, src, err);
        }
        if (txn && b->drv->alive(b->db))
            b->drv->exec(b->db, "ROLLBACK", NULL);
        return -1;
    }
    if (txn && b->drv->exec(b->db, "COMMIT", err) < 0)
        return -1;
    return loaded;
}

int load_run(const struct backend_conf *bc, const struct load_opts *o, struct load_result *res,
             struct zb_err *err)
{
    memset(res, 0, sizeof *res);
    const char *file = o->data->conf->file;
    char name[128], load_name[160], sql[8192], tag[32];
    struct zb_table table = dataset_table(o->data, bc, name, sizeof name);
    struct zb_table load = table;  /* the same columns, in <table>$load */
    snprintf(load_name, sizeof load_name, "%s" ZB_STAGING_SUFFIX, name);
    load.name = load_name;
    snprintf(res->table, sizeof res->table, "%s", name);
    /* A statement takes at most 32,766 parameters (SQLite's limit, the lowest). */
    if (o->mode == MODE_PREPARED && (long)o->batch * table.ncols > 32766)
        return zb_fail(err, ZB_ERR_INPUT, "--batch %d: %d rows of %d columns are %ld parameters, "
                       "more than the 32766 a statement may take", o->batch, o->batch, table.ncols,
                       (long)o->batch * table.ncols);
    if (load_check_names(bc, o, err) < 0 || check_interrupted(err) < 0)
        return -1;
    struct backend b;
    if (backend_open(&b, bc, err) < 0)
        return -1;
    struct source src = { .limit = o->limit };
    struct replaced_count replaced = { 0 };
    int rc = -1;
    bool locked = false;
    load_tag(tag, sizeof tag);
    snprintf(res->version, sizeof res->version, "%s", b.drv->version(b.db));
    if (take_load_lock(&b, name, err) < 0)
        goto out;
    locked = true;   /* from here on, <table>$load is this load's own */
    count_replaced_start(&replaced, &b, name);
    if (put_back_abandoned(&b, err) < 0)
        goto out;
    if (b.drv->set_sync(b.db, o->sync, res->sync, sizeof res->sync, err) < 0)
        goto out;
    if (!(src.r = dataset_open(o->data, err)))
        goto out;
    snprintf(res->encoding, sizeof res->encoding, "%s", dataset_encoding(src.r));
    struct sized sized;
    struct widths widths;
    if (b.drv->sized_text) {
        if (replaced_widths(&b, o, name, &load, &sized, &widths)) {
            src.table = &load;
            src.widths = &widths;
            res->widths_from = "the replaced table";
        } else {
            if (size_text_columns(o, &load, &sized, err) < 0)
                goto out;
            res->widths_from = "a pass over the rows";
        }
    }

    char label[64];
    snprintf(label, sizeof label, "%s %s", bc->name, load_mode_name(o->mode));
    progress_start(&src.bar, label, o->quiet);
    double t0 = zb_now_s();
    long long loaded = fill(&b, o, &load, &src, name, tag, res, err);
    if (src.widths && (src.misfit || (loaded >= 0 && !widths_exact(&load, src.widths)))) {
        /* Not the widths a pass gives these rows: the pass, and the load again. */
        load.cols = table.cols;
        dataset_close(src.r);
        memset(err, 0, sizeof *err);
        src = (struct source){ .limit = o->limit, .bar = src.bar };
        if (!(src.r = dataset_open(o->data, err)) || size_text_columns(o, &load, &sized, err) < 0)
            goto out;
        res->widths_from = "a pass over the rows, after the replaced table's did not fit "
                           "(loaded twice)";
        loaded = fill(&b, o, &load, &src, name, tag, res, err);
    }
    if (loaded < 0)
        goto out;
    if (src.rows == 0) {
        zb_fail(err, ZB_ERR_INPUT, "%s: no rows to load; %s left as it was (an empty load never "
                "replaces a table)", file, name);
        goto out;
    }
    res->seconds = zb_now_s() - t0;
    progress_end(&src.bar);
    if (o->index_after) {
        double t1 = zb_now_s();
        if (create_indexes(&b, &load, name, tag, err) < 0)
            goto out;
        res->index_seconds = zb_now_s() - t1;
    }

    if (check_swappable(&b, o, &load, name, loaded, src.rows, &replaced, res, err) < 0 ||
        check_interrupted(err) < 0)
        goto out;
    if (b.drv->swap_table(b.db, load.name, name, src.rows, &res->generation, err) < 0)
        goto out;
    note_sync_change(&b, res);
    res->rows = src.rows;
    res->lines = dataset_lines(src.r);
    res->table_bytes = b.drv->table_bytes(b.db, name);
    rc = 0;
out:
    progress_end(&src.bar);
    if (replaced.started)
        pthread_join(replaced.thread, NULL);
    if (rc < 0 && locked && b.drv->alive(b.db)) {  /* leave nothing half-loaded lying around */
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", load.name);
        b.drv->exec(b.db, sql, NULL);
    }
    if (locked && b.drv->alive(b.db)) {   /* a load killed while this one ran */
        struct zb_err ignored = { 0 };
        put_back_abandoned(&b, &ignored);
    }
    dataset_close(src.r);
    backend_close(&b);
    return rc;
}
