/* The four load modes.
 *
 * Rows go into <table>_load, a table nobody reads, and only when its row
 * count matches the file's is it swapped in for <table> in one atomic
 * step. A load killed or cut off half way leaves <table>_load behind and
 * the old <table> as it was: nothing half-loaded is ever claimed complete. */
#include "load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

static const char *const mode_names[] = { "autocommit", "transaction", "prepared", "bulk" };

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

/* The row source every mode reads through: counts and draws progress. */
struct source {
    struct dataset_reader *r;
    struct progress bar;
    long long rows, limit;
};

static int next_row(void *arg, const char *const **fields, struct zb_err *err)
{
    struct source *s = arg;
    if (s->limit && s->rows == s->limit)
        return 0;
    int rc = dataset_next(s->r, fields, err);
    if (rc == 1 && (++s->rows & 1023) == 0)
        progress_update(&s->bar, dataset_offset(s->r), dataset_size(s->r), s->rows);
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
static void name_bad_row(const struct load_opts *o, const struct source *src, struct zb_err *err)
{
    if (err->row <= 0)
        return;
    const char *file = o->data->conf->file;
    long line = 0;
    if (err->row == src->rows) {
        line = dataset_row_line(src->r);
    } else if (strcmp(file, "-")) {
        struct zb_err ignored = { 0 };
        struct dataset_reader *r = dataset_open(o->data, &ignored);
        const char *const *fields;
        long long n = 0;
        while (r && n < err->row && dataset_next(r, &fields, &ignored) == 1)
            n++;
        if (n == err->row)
            line = dataset_row_line(r);
        dataset_close(r);
    }
    char msg[sizeof err->msg];
    memcpy(msg, err->msg, sizeof msg);
    if (line > 0)
        snprintf(err->msg, sizeof err->msg, "%s:%ld: %.400s", file, line, msg);
    else
        snprintf(err->msg, sizeof err->msg, "%s: row %lld: %.400s", file, err->row, msg);
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

static int create_indexes(struct backend *b, const struct zb_table *table, const char *tag,
                          struct zb_err *err)
{
    /* Index names are unique per load: in PostgreSQL and SQLite they are
     * schema-wide and the previous table's indexes still hold theirs. */
    for (int i = 0; i < table->nindexes; i++) {
        char sql[512];
        const char *col = table->cols[table->indexes[i]].name;
        snprintf(sql, sizeof sql, "CREATE INDEX %s_%d_%s ON %s (\"%s\")", table->name, i, tag,
                 table->name, col);
        if (b->drv->exec(b->db, sql, err) < 0)
            return -1;
    }
    return 0;
}

int load_run(const struct backend_conf *bc, const struct load_opts *o, struct load_result *res,
             struct zb_err *err)
{
    memset(res, 0, sizeof *res);
    const char *file = o->data->conf->file;
    char name[128], load_name[160], sql[8192], tag[32];
    struct zb_table table = dataset_table(o->data, bc, name, sizeof name);
    struct zb_table load = table;  /* the same columns, in <table>_load */
    snprintf(load_name, sizeof load_name, "%s_load", name);
    load.name = load_name;
    snprintf(res->table, sizeof res->table, "%s", name);
    /* A statement takes at most 32,766 parameters (SQLite's limit, the lowest). */
    if (o->mode == MODE_PREPARED && (long)o->batch * table.ncols > 32766)
        return zb_fail(err, ZB_ERR_INPUT, "--batch %d: %d rows of %d columns are %ld parameters, "
                       "more than the 32766 a statement may take", o->batch, o->batch, table.ncols,
                       (long)o->batch * table.ncols);
    struct backend b;
    if (backend_open(&b, bc, err) < 0)
        return -1;
    struct source src = { .limit = o->limit };
    int rc = -1;
    snprintf(tag, sizeof tag, "%lx%x", (unsigned long)time(NULL), (unsigned)getpid() & 0xfff);
    snprintf(res->version, sizeof res->version, "%s", b.drv->version(b.db));
    if (b.drv->set_sync(b.db, o->sync, res->sync, sizeof res->sync, err) < 0)
        goto out;
    if (!(src.r = dataset_open(o->data, err)))
        goto out;
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", load.name);
    if (b.drv->exec(b.db, sql, err) < 0)
        goto out;
    if (zb_create_sql(sql, sizeof sql, &load, b.drv->create_suffix(b.db)) < 0) {
        zb_fail(err, ZB_ERR_INPUT, "%s: CREATE TABLE too long", load.name);
        goto out;
    }
    if (b.drv->exec(b.db, sql, err) < 0)
        goto out;

    char label[64];
    snprintf(label, sizeof label, "%s %s", bc->name, load_mode_name(o->mode));
    progress_start(&src.bar, label, o->quiet);
    double t0 = zb_now_s();
    if (!o->index_after && create_indexes(&b, &load, tag, err) < 0)
        goto out;
    bool txn = o->mode != MODE_AUTOCOMMIT;
    if (txn && b.drv->exec(b.db, "BEGIN", err) < 0)
        goto out;
    long long loaded;
    switch (o->mode) {
    case MODE_AUTOCOMMIT:
    case MODE_TRANSACTION: loaded = load_each(&b, &load, &src, err); break;
    case MODE_PREPARED: loaded = zb_insert_batches(b.drv, b.db, &load, o->batch, next_row, &src, err); break;
    default: loaded = b.drv->bulk_load(b.db, &load, next_row, &src, err); break;
    }
    if (loaded < 0) {
        if (err->kind == ZB_ERR_INPUT && !err->row)
            list_more_bad_rows(&src, file, res);
        name_bad_row(o, &src, err);
        if (txn && b.drv->alive(b.db))
            b.drv->exec(b.db, "ROLLBACK", NULL);
        goto out;
    }
    if (txn && b.drv->exec(b.db, "COMMIT", err) < 0)
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
        if (create_indexes(&b, &load, tag, err) < 0)
            goto out;
        res->index_seconds = zb_now_s() - t1;
    }

    /* The table must hold every row the file has, or it is not swapped in.
     * A bulk load's count is the database's own (bulk_load): scanning the
     * fresh table again would read all of it back (PostgreSQL: through
     * shared buffers) to learn nothing new. */
    long long in_table = loaded;
    if (o->mode != MODE_BULK) {
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", load.name);
        if (b.drv->query(b.db, sql, 0, NULL, count_cb, &in_table, NULL, err) < 0)
            goto out;
    }
    if (in_table != src.rows || loaded != src.rows) {
        zb_fail(err, ZB_ERR_SQL, "%s: the table holds %lld rows but %s has %lld; not swapped in",
                bc->name, in_table, file, src.rows);
        goto out;
    }
    /* Nor does it replace a bigger table unless asked: a file cut short at
     * a line end reads as a good, smaller one. A --limit sample is asked. */
    res->replaced_rows = table_rows(&b, name);
    if (res->replaced_rows > src.rows && !o->allow_shrink && !o->limit) {
        zb_fail(err, ZB_ERR_INPUT, "%s has %lld rows, fewer than the %lld %s holds; %s left as "
                "it was (--allow-shrink replaces it all the same)", file, src.rows,
                res->replaced_rows, name, name);
        goto out;
    }
    if (b.drv->swap_table(b.db, load.name, name, err) < 0)
        goto out;
    res->rows = src.rows;
    res->lines = dataset_lines(src.r);
    res->table_bytes = b.drv->table_bytes(b.db, name);
    rc = 0;
out:
    progress_end(&src.bar);
    if (rc < 0 && b.drv->alive(b.db)) {  /* leave nothing half-loaded lying around */
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", load.name);
        b.drv->exec(b.db, sql, NULL);
    }
    dataset_close(src.r);
    backend_close(&b);
    return rc;
}
