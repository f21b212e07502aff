/* A dataset: a file, how to read it, and the table it becomes.
 *
 * Each [dataset NAME] of the config names a file and its format: "kenall"
 * (Japan Post's postal-code layout, lib/kenall.c) or "csv" (RFC 4180,
 * lib/csv.c, with header, delimiter, quote and encoding options). A csv
 * dataset's columns are given in the config (`columns = id integer, name
 * text, ...`), or named by its header; a column given without a type gets
 * one inferred from the first sample_rows rows, and the loader shows what
 * it inferred: integer or real only when the answer, the database's value
 * written back, is the file's number (a value past 64 bits, 007, +5, -0,
 * NaN keep the column text). A header's texts name the answers' fields
 * exactly; the tables' columns get names of their own (dataset.names). The dataset called "postal" is the default: its tables are
 * the backends' own `table`; any other dataset's table on backend B is
 * TABLE_B, since backends may share one database (innodb and myisam do).
 *
 * Rows come out checked against the types: a value that is not an integer
 * (or real) in such a column, a NULL in a NOT NULL column (the key is one),
 * a key no lookup can name (empty, or longer than ZB_KEY_MAX bytes), or a
 * row with too few or too many fields is an error naming
 * file:line:column and the column's field name. An empty unquoted field, or the
 * dataset's `null` text, is SQL NULL; "" (quoted) is an empty string. */
#ifndef ZB_DATASET_H
#define ZB_DATASET_H

#include <stdbool.h>

#include "backend.h"
#include "conf.h"

#define DATASET_DEFAULT "postal"

/* The longest key a lookup may name, in bytes (UTF-8, as the server has it
 * once percent-decoded): the server answers 414 past it, so the loader
 * refuses a longer key, which no lookup could ever find. */
#define ZB_KEY_MAX 255

/* The longest header text a column may have, in bytes: the answers name
 * each field by it. */
#define ZB_FIELD_MAX 255

struct dataset {
    const struct dataset_conf *conf;
    int ncols;
    struct zb_column col[ZB_MAX_COLUMNS];
    bool inferred[ZB_MAX_COLUMNS];  /* its type was guessed from the sample */
    int key;                        /* the column lookups go by */
    long sampled;                   /* rows the inference read (0: none needed) */
    /* Two names per column. names[]: the column's in SQL (col[i].name),
     * the config's (`columns =`), or made from the header (ASCII letters,
     * digits and _, unique); field[]: the answer's, the header's text
     * exactly (valid UTF-8, unique byte for byte), or names[] when the file
     * has no header. dataset_field() reads it. */
    char names[ZB_MAX_COLUMNS][64];
    char field[ZB_MAX_COLUMNS][ZB_FIELD_MAX + 1];
    bool has_field[ZB_MAX_COLUMNS];  /* false: a dataset made by hand, its names[] serve */
};

/* Describes dc: reads the header and the sample where it must. Returns 0,
 * or -1 with err ("file:line:column: ..." or "config: [dataset x]: ...").
 * The key names one of the config's columns when `columns =` gives them,
 * else one of the header's texts, byte for byte; a key that names none
 * (the near ones suggested), two header texts alike byte for byte, or
 * one longer than ZB_FIELD_MAX is refused with file:1. */
int dataset_describe(struct dataset *d, const struct dataset_conf *dc, struct zb_err *err);

/* Column i's name in the answers (field[], or its SQL name). */
const char *dataset_field(const struct dataset *d, int i);

/* The dataset's table on backend bc: name written into name[len]. */
struct zb_table dataset_table(const struct dataset *d, const struct backend_conf *bc, char *name,
                              size_t len);
/* Its name alone, from the config: the backend's own `table` for the
 * postal dataset, TABLE_BACKEND for any other. */
void dataset_table_name(const struct dataset_conf *dc, const struct backend_conf *bc, char *name,
                        size_t len);

/* The columns as a `columns =` value that gives them all ("id integer,
 * name text, ..."); inferred ones marked "(inferred)" when `mark`. */
void dataset_columns_text(const struct dataset *d, bool mark, char *buf, size_t len);

/* The answers' field names, each with its column's SQL name ("'Name'
 * (name), 'name' (name_2)"), or "" when every field is its column's name. */
void dataset_fields_text(const struct dataset *d, char *buf, size_t len);

/* Rows of the dataset's file, checked against its columns. */
struct dataset_reader;
struct dataset_reader *dataset_open(const struct dataset *d, struct zb_err *err);
/* 1 with d->ncols fields (NULL for SQL NULL; valid until the next call),
 * 0 at the end, -1 on error. */
int dataset_next(struct dataset_reader *r, const char *const **fields, struct zb_err *err);
long dataset_row_line(const struct dataset_reader *r);  /* first line of the last row */
/* The encoding read and why ("UTF-8 detected: the file is valid UTF-8",
 * "latin1 as asked"). */
const char *dataset_encoding(const struct dataset_reader *r);
long dataset_lines(const struct dataset_reader *r);
long long dataset_offset(const struct dataset_reader *r);
long long dataset_size(const struct dataset_reader *r);
void dataset_close(struct dataset_reader *r);

/* Checks one config value of a [dataset] section (conf.c calls it while
 * it knows the line). Returns 0, or -1 with "where: key: problem". */
int dataset_check_value(const char *key, const char *value, const char *where, struct zb_err *err);

#endif
