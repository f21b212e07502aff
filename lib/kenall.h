/* Reader for Japan Post's KEN_ALL.CSV layout.
 *
 * 15 columns: JIS city code, old 5-digit code, 7-digit code, prefecture,
 * city and town in half-width kana, the same three in kanji, then six
 * integer flags. Japan Post ships it in Shift_JIS (CP932) with CRLF and
 * every text field quoted; its UTF-8 edition and our generator's output
 * read the same. A town whose name is too long is split by Japan Post over
 * consecutive lines with the same code, the parenthesis opening on the
 * first and closing on the last: "raw" mode returns every line as a row
 * (as the 2008 benchmark loaded it), "merged" mode joins them.
 *
 * Every error names the file, the line and what is wrong; no row is ever
 * dropped silently. */
#ifndef ZB_KENALL_H
#define ZB_KENALL_H

#include <stdbool.h>
#include <stdio.h>

#include "util.h"

#define KENALL_COLS 15

/* Column indexes worth naming. */
enum { KENALL_JIS = 0, KENALL_OLD = 1, KENALL_ZIP = 2, KENALL_TOWN_KANA = 5, KENALL_TOWN = 8,
       KENALL_FIRST_FLAG = 9 };

enum kenall_encoding { KENALL_AUTO = 0, KENALL_UTF8, KENALL_SJIS };

struct kenall_opts {
    enum kenall_encoding encoding;  /* AUTO: UTF-8 if the first 64 KiB hold more UTF-8
                                       characters than bytes that are not (errors say why) */
    bool raw;                       /* true: one row per line, no merging */
    const char *encoding_name;      /* any other encoding iconv knows ("latin1"); wins over
                                       encoding when set */
};

struct kenall_reader;

/* Opens path ("-" for stdin). Returns NULL with err filled on failure. */
struct kenall_reader *kenall_open(const char *path, const struct kenall_opts *opts,
                                  struct zb_err *err);

/* The same on an open stream (read with getline; closed by kenall_close
 * unless it is stdin), named `name` in messages: for fuzzing from memory. */
struct kenall_reader *kenall_open_stream(FILE *f, const char *name, const struct kenall_opts *opts,
                                         struct zb_err *err);

/* Next row: 1 with *fields pointing at KENALL_COLS UTF-8 strings (valid
 * until the next call), 0 at the end, -1 on error (err says file:line). */
int kenall_next(struct kenall_reader *r, const char *const **fields, struct zb_err *err);

/* First physical line of the row last returned, and lines read so far. */
long kenall_row_line(const struct kenall_reader *r);
long kenall_lines(const struct kenall_reader *r);
/* Bytes consumed so far and the file's size (0 if not a regular file),
 * for progress bars. */
long long kenall_offset(const struct kenall_reader *r);
long long kenall_size(const struct kenall_reader *r);
enum kenall_encoding kenall_encoding(const struct kenall_reader *r);
/* The encoding read and why it was chosen (csv_encoding_why). */
const char *kenall_encoding_why(const struct kenall_reader *r);

void kenall_close(struct kenall_reader *r);

/* The number of fields on path's first line, read as a KEN_ALL file is
 * (its encoding, one record a line): KENALL_COLS for a file in the layout,
 * 0 for an empty one. -1 with err when it cannot be read. */
int kenall_first_line_fields(const char *path, const struct kenall_opts *opts, struct zb_err *err);

#endif
