/* A CSV reader after RFC 4180.
 *
 * Records are lines of fields split by a delimiter (a comma unless told);
 * a field may be in double quotes, and then holds delimiters, line ends and
 * quotes (doubled, ""). Lines end in LF or CRLF. The file is UTF-8 (a byte
 * order mark is skipped), Shift_JIS, or any ASCII-compatible encoding iconv
 * knows; fields come out as UTF-8. With no_quotes a quote is text like any
 * other byte: tab-separated files as GeoNames and many tools write them.
 *
 * Strict: a quote inside an unquoted field, text after a closing quote, a
 * carriage return without a line feed outside quotes (a CR is data only in
 * a quoted field), a quote never closed, a NUL byte or a byte not in the
 * encoding is an error naming file:line:column, the column being the
 * field's number (from 1) and the line the one the field is on. Nothing is
 * dropped or repaired. A regular file must not change while it is read:
 * at its end its size and mtime must be those it had when opened, or the
 * end is an error naming its last line (a writer still at work leaves a
 * last line cut short). */
#ifndef ZB_CSV_H
#define ZB_CSV_H

#include <stdbool.h>
#include <stdio.h>

#include "util.h"

/* A record may be at most this long (a quote never closed would otherwise
 * read the whole file into one field). */
#define CSV_MAX_RECORD (64L << 20)

struct csv_opts {
    char delimiter;        /* 0: ',' */
    bool no_quotes;        /* quotes are plain text */
    bool one_line;         /* a record never spans lines: a quote still open at the line end is
                              an error there (KEN_ALL), not a line end inside the field */
    const char *encoding;  /* NULL or "auto": UTF-8 or Shift_JIS, from the first 64 KiB (errors
                              say which and why); "utf-8"; "sjis" (Japan Post's CP932); or any
                              ASCII-compatible encoding iconv knows ("latin1", "cp1252"...) */
};

struct csv_reader;

/* Opens path ("-" for standard input, read as UTF-8 under "auto"). NULL
 * with err filled on failure. */
struct csv_reader *csv_open(const char *path, const struct csv_opts *opts, struct zb_err *err);
/* The same on an open stream (closed by csv_close unless stdin), called
 * `name` in messages. */
struct csv_reader *csv_open_stream(FILE *f, const char *name, const struct csv_opts *opts,
                                   struct zb_err *err);

/* Next record: 1 with *nfields UTF-8 strings in *fields (valid until the
 * next call; 0 fields for an empty line), 0 at the end, -1 on error. After
 * the error that the file changed, it returns 0. */
int csv_next(struct csv_reader *r, int *nfields, const char *const **fields, struct zb_err *err);

/* Whether field i (from 0) of the last record was in quotes: "" and an
 * empty unquoted field read the same, and loaders tell NULL by this. */
bool csv_quoted(const struct csv_reader *r, int i);
/* Whether the last record is the file's last line and has no line end. */
bool csv_truncated(const struct csv_reader *r);

/* Fails with "file:line:column: what" about the last record; column is
 * the field's number from 1 (its line is the one the field starts on), 0
 * for the record as a whole ("file:line: what"). Returns -1. */
int csv_fail(const struct csv_reader *r, int column, struct zb_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

const char *csv_path(const struct csv_reader *r);
long csv_line(const struct csv_reader *r);        /* first line of the last record */
long csv_lines(const struct csv_reader *r);       /* lines read so far */
long long csv_offset(const struct csv_reader *r); /* bytes read so far */
long long csv_size(const struct csv_reader *r);   /* the file's size, 0 if not a regular file */
/* The encoding read ("UTF-8", "Shift_JIS", or the iconv name given), and
 * why (e.g. "UTF-8 detected: the first 64 KiB are valid UTF-8"). */
const char *csv_encoding(const struct csv_reader *r);
const char *csv_encoding_why(const struct csv_reader *r);

void csv_close(struct csv_reader *r);

#endif
