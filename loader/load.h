/* One load of a dataset into one backend, in one mode. */
#ifndef ZB_LOAD_H
#define ZB_LOAD_H

#include <stdbool.h>

#include "backend.h"
#include "dataset.h"

enum load_mode { MODE_AUTOCOMMIT, MODE_TRANSACTION, MODE_PREPARED, MODE_BULK };

struct load_opts {
    const struct dataset *data;   /* described, its file named by data->conf->file */
    enum load_mode mode;
    enum zb_sync sync;
    int batch;          /* rows per statement in prepared mode */
    bool index_after;   /* --no-index: load first, index after */
    bool quiet;
    long long limit;    /* load only the first `limit` rows (0: all); may shrink the table */
    bool allow_shrink;  /* replace a table that holds more rows than the file */
};

struct load_result {
    long long rows;         /* rows read from the file and found in the table */
    long lines;             /* physical lines read */
    double seconds;         /* loading, including index building when indexed first */
    double index_seconds;   /* index building after the load (--no-index) */
    long long table_bytes;
    long long replaced_rows; /* rows of the table replaced, -1 if there was none */
    char sync[128];
    char version[64];
    char table[128];          /* the table loaded */
    char more_bad_rows[8192]; /* after a failed read: the file's other bad rows, a line each */
};

const char *load_mode_name(enum load_mode m);
int load_mode_parse(const char *s, enum load_mode *m);

/* Loads into a fresh table and swaps it in only once its row count matches
 * the file; on failure the old table is untouched. A file with no rows never
 * replaces a table, and one with fewer rows than the table holds only with
 * allow_shrink or limit. */
int load_run(const struct backend_conf *bc, const struct load_opts *o, struct load_result *res,
             struct zb_err *err);

#endif
