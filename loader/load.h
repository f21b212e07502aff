/* One load of a dataset into one backend, in one mode. */
#ifndef ZB_LOAD_H
#define ZB_LOAD_H

#include <signal.h>
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
    char sync[256];           /* the durability in force during the load */
    char encoding[400];       /* the file's encoding, and why (auto-detection's reason) */
    char version[64];
    char table[128];          /* the table loaded */
    long long generation;     /* its load's generation (backend.h's swap_table) */
    const char *widths_from;  /* a sized_text load's text widths: whence; else NULL */
    char more_bad_rows[8192]; /* after a failed read: the file's other bad rows, a line each */
};

/* Set (to the signal's number) by the loader's SIGINT/SIGTERM handler: the
 * load under way stops at its next row or wait, and cleans up as after an
 * error (its staging table dropped, a global setting put back). */
extern volatile sig_atomic_t load_interrupted;

const char *load_mode_name(enum load_mode m);

/* Checks every name a load into bc derives from its table (the table, the
 * staging <table>$load, the swap's <table>$old, the index names) against
 * the backend's identifier limit, before anything is created or dropped.
 * 0, or -1 with err saying which name is too long and the longest table
 * name the backend can take. */
int load_check_names(const struct backend_conf *bc, const struct load_opts *o, struct zb_err *err);
int load_mode_parse(const char *s, enum load_mode *m);

/* Loads into a fresh table and swaps it in only once its row count matches
 * the file; on failure the old table is untouched. A file with no rows never
 * replaces a table, and one with fewer rows than the table holds only with
 * allow_shrink or limit. */
int load_run(const struct backend_conf *bc, const struct load_opts *o, struct load_result *res,
             struct zb_err *err);

#endif
