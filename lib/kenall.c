#include "kenall.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"

struct line {
    char *text;        /* the fields, each NUL-terminated */
    size_t cap;
    char *field[KENALL_COLS];
};

struct kenall_reader {
    struct csv_reader *csv;
    bool raw;
    long row_line;
    struct line cur, next;   /* `next` holds a read-ahead line when merging */
    bool have_next;
    /* Merged town names are built here: kana and kanji. */
    char *town_kana, *town;
    size_t town_kana_cap, town_cap;
    const char *out[KENALL_COLS];
};

static int fail_at(struct kenall_reader *r, long line, struct zb_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail_at(struct kenall_reader *r, long line, struct zb_err *err, const char *fmt, ...)
{
    char what[400];
    FORMAT_INTO(what, fmt);
    return zb_fail(err, ZB_ERR_INPUT, "%s:%ld: %s", csv_path(r->csv), line, what);
}

struct kenall_reader *kenall_open_stream(FILE *f, const char *name, const struct kenall_opts *opts,
                                         struct zb_err *err)
{
    static const char *const encodings[] = { [KENALL_AUTO] = NULL, [KENALL_UTF8] = "utf-8",
                                             [KENALL_SJIS] = "sjis" };
    struct csv_opts co = { .one_line = true,
                           .encoding = opts && opts->encoding_name ? opts->encoding_name
                                       : encodings[opts ? opts->encoding : KENALL_AUTO] };
    struct kenall_reader *r = calloc(1, sizeof *r);
    if (!r) {
        if (f != stdin)
            fclose(f);
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        return NULL;
    }
    r->raw = opts && opts->raw;
    if (!(r->csv = csv_open_stream(f, name, &co, err))) {
        free(r);
        return NULL;
    }
    return r;
}

struct kenall_reader *kenall_open(const char *path, const struct kenall_opts *opts,
                                  struct zb_err *err)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        zb_fail(err, ZB_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    return kenall_open_stream(f, path, opts, err);
}

static int grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t cap2 = *cap ? *cap : 256;
    while (cap2 < need)
        cap2 *= 2;
    char *p = realloc(*buf, cap2);
    if (!p)
        return -1;
    *buf = p;
    *cap = cap2;
    return 0;
}

static bool all_digits(const char *s, size_t min, size_t max)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (s[n] < '0' || s[n] > '9')
            return false;
    return n >= min && n <= max;
}

static int check_fields(struct kenall_reader *r, struct line *l, struct zb_err *err)
{
    if (!all_digits(l->field[KENALL_JIS], 5, 5))
        return csv_fail(r->csv, KENALL_JIS + 1, err, "JIS code '%s' is not 5 digits",
                        l->field[KENALL_JIS]);
    if (!all_digits(l->field[KENALL_ZIP], 7, 7))
        return csv_fail(r->csv, KENALL_ZIP + 1, err, "postal code '%s' is not 7 digits",
                        l->field[KENALL_ZIP]);
    for (int i = KENALL_FIRST_FLAG; i < KENALL_COLS; i++)
        if (!all_digits(l->field[i], 1, 1))
            return csv_fail(r->csv, i + 1, err, "flag '%s' is not a digit", l->field[i]);
    return 0;
}

/* Reads and checks the next line into l. 1, 0 at EOF, -1. */
static int next_line(struct kenall_reader *r, struct line *l, struct zb_err *err)
{
    int n;
    const char *const *f;
    int rc = csv_next(r->csv, &n, &f, err);
    if (rc <= 0)
        return rc;
    if (n != KENALL_COLS) {
        /* Say why the line is bad, and that it is where the file stops. */
        const char *cut = csv_truncated(r->csv) ? "truncated last line (no line end): " : "";
        if (n == 0)
            return csv_fail(r->csv, 0, err, "%sempty line", cut);
        return csv_fail(r->csv, 0, err, "%s%d columns, expected %d", cut, n, KENALL_COLS);
    }
    size_t need = 0;
    for (int i = 0; i < KENALL_COLS; i++)
        need += strlen(f[i]) + 1;
    if (grow(&l->text, &l->cap, need) < 0)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    char *o = l->text;
    for (int i = 0; i < KENALL_COLS; i++) {
        size_t len = strlen(f[i]) + 1;
        l->field[i] = memcpy(o, f[i], len);
        o += len;
    }
    return check_fields(r, l, err) < 0 ? -1 : 1;
}

/* Parentheses still open in a town name: full-width, as Japan Post writes them. */
static int open_parens(const char *s)
{
    int depth = 0;
    for (const char *p = s; (p = strstr(p, "\xEF\xBC")) != NULL; p += 3) {
        if ((unsigned char)p[2] == 0x88)
            depth++;  /* U+FF08 （ */
        else if ((unsigned char)p[2] == 0x89)
            depth--;  /* U+FF09 ） */
    }
    return depth;
}

static int append(char **buf, size_t *cap, const char *s, struct zb_err *err)
{
    size_t have = *buf ? strlen(*buf) : 0, add = strlen(s);
    if (grow(buf, cap, have + add + 1) < 0)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    memcpy(*buf + have, s, add + 1);
    return 0;
}

int kenall_next(struct kenall_reader *r, const char *const **fields, struct zb_err *err)
{
    struct line tmp;
    if (r->have_next) {  /* the read-ahead line becomes the current one */
        tmp = r->cur;
        r->cur = r->next;
        r->next = tmp;
        r->have_next = false;
    } else {
        int rc = next_line(r, &r->cur, err);
        if (rc <= 0)
            return rc;
    }
    r->row_line = csv_line(r->csv);
    for (int i = 0; i < KENALL_COLS; i++)
        r->out[i] = r->cur.field[i];
    *fields = r->out;
    int depth;
    if (r->raw || (depth = open_parens(r->cur.field[KENALL_TOWN])) <= 0)
        return 1;
    /* A split record: join the town names of the following lines. */
    long first = r->row_line;
    if (r->town_kana)
        r->town_kana[0] = 0;
    if (r->town)
        r->town[0] = 0;
    if (append(&r->town_kana, &r->town_kana_cap, r->cur.field[KENALL_TOWN_KANA], err) < 0 ||
        append(&r->town, &r->town_cap, r->cur.field[KENALL_TOWN], err) < 0)
        return -1;
    while (depth > 0) {
        int rc = next_line(r, &r->next, err);
        if (rc < 0)
            return -1;
        if (rc == 0)
            return fail_at(r, first, err, "split record is never closed: the file ends before "
                           "its '）'");
        if (strcmp(r->next.field[KENALL_ZIP], r->cur.field[KENALL_ZIP])) {
            return fail_at(r, first, err, "split record is not closed before line %ld (code %s, "
                           "expected %s)", csv_line(r->csv), r->next.field[KENALL_ZIP],
                           r->cur.field[KENALL_ZIP]);
        }
        /* Japan Post repeats the kana on continuation lines when it did not
         * need splitting; only append kana that is new. */
        const char *kana = r->next.field[KENALL_TOWN_KANA];
        if (strcmp(kana, r->cur.field[KENALL_TOWN_KANA]) &&
            append(&r->town_kana, &r->town_kana_cap, kana, err) < 0)
            return -1;
        if (append(&r->town, &r->town_cap, r->next.field[KENALL_TOWN], err) < 0)
            return -1;
        depth += open_parens(r->next.field[KENALL_TOWN]);
    }
    r->out[KENALL_TOWN_KANA] = r->town_kana;
    r->out[KENALL_TOWN] = r->town;
    r->row_line = first;
    return 1;
}

long kenall_row_line(const struct kenall_reader *r) { return r->row_line; }
long kenall_lines(const struct kenall_reader *r) { return csv_lines(r->csv); }
long long kenall_offset(const struct kenall_reader *r) { return csv_offset(r->csv); }
long long kenall_size(const struct kenall_reader *r) { return csv_size(r->csv); }

enum kenall_encoding kenall_encoding(const struct kenall_reader *r)
{
    return strcmp(csv_encoding(r->csv), "UTF-8") ? KENALL_SJIS : KENALL_UTF8;
}

const char *kenall_encoding_why(const struct kenall_reader *r) { return csv_encoding_why(r->csv); }

void kenall_close(struct kenall_reader *r)
{
    if (!r)
        return;
    csv_close(r->csv);
    free(r->cur.text);
    free(r->next.text);
    free(r->town_kana);
    free(r->town);
    free(r);
}

int kenall_first_line_fields(const char *path, const struct kenall_opts *opts, struct zb_err *err)
{
    struct kenall_reader *r = kenall_open(path, opts, err);
    if (!r)
        return -1;
    int n = 0;
    const char *const *f;
    int rc = csv_next(r->csv, &n, &f, err);
    kenall_close(r);
    return rc < 0 ? -1 : rc == 0 ? 0 : n;
}
