#include "kenall.h"

#include <errno.h>
#include <iconv.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct line {
    char *text;        /* one physical line, UTF-8, without its line end */
    size_t cap;
    char *field[KENALL_COLS];
};

struct kenall_reader {
    FILE *f;
    const char *path;
    char *pathcopy;
    bool raw;
    enum kenall_encoding enc;
    char why[160];      /* how enc was chosen, for error messages */
    iconv_t cd;
    char *raw_line;     /* as read from the file */
    size_t raw_cap;
    char *conv;         /* after conversion to UTF-8 */
    size_t conv_cap;
    long lineno;        /* physical lines read */
    long row_line;
    long long offset, size;
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
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return zb_fail(err, ZB_ERR_INPUT, "%s:%ld: %s", r->path, line, what);
}

/* Length of the UTF-8 character at s[0..n), or 0 if it is not one
 * (a bad byte, or a character cut by the end of s). */
static size_t utf8_char_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!len || len > n || (len == 2 && c < 0xC2))
        return 0;
    for (size_t k = 1; k < len; k++)
        if ((s[k] & 0xC0) != 0x80)
            return 0;
    if (len == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0)))
        return 0;
    if (len == 4 && ((c == 0xF0 && s[1] < 0x90) || c > 0xF4 || (c == 0xF4 && s[1] >= 0x90)))
        return 0;
    return len;
}

/* Length of the valid UTF-8 prefix of s[0..n). */
static size_t utf8_valid_prefix(const unsigned char *s, size_t n)
{
    size_t i = 0, len;
    while (i < n && (len = utf8_char_len(s + i, n - i)) > 0)
        i += len;
    return i;
}

/* AUTO: the encoding, and why, from the first 64 KiB. UTF-8 text reads as
 * whole multi-byte characters; Shift_JIS text almost never does (its lead
 * bytes are not followed by UTF-8 continuation bytes). So the sample counts
 * both: more UTF-8 characters than bytes that are not UTF-8 make a UTF-8
 * file, whose bad bytes are errors on their own lines; otherwise it is
 * Shift_JIS. One bad byte must not turn a UTF-8 file into Shift_JIS and
 * blame its first line. */
static enum kenall_encoding sniff(FILE *f, char *why, size_t whylen)
{
    unsigned char buf[65536];
    size_t n = fread(buf, 1, sizeof buf, f);
    bool whole = n < sizeof buf;
    rewind(f);
    const char *sample = whole ? "the file" : "the first 64 KiB";
    if (n >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) {
        snprintf(why, whylen, "UTF-8 detected: the file starts with a UTF-8 byte order mark");
        return KENALL_UTF8;
    }
    size_t chars = 0, bad = 0, first_bad = 0;
    long first_bad_line = 0, line = 1;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_char_len(buf + i, n - i);
        if (!len && !whole && n - i < 4)
            break;  /* a character cut by the end of the sample */
        if (!len) {
            if (!bad++) {
                first_bad = i;
                first_bad_line = line;
            }
            len = 1;
        } else if (len > 1) {
            chars++;
        } else if (buf[i] == '\n') {
            line++;
        }
        i += len;
    }
    if (!bad) {
        snprintf(why, whylen, "UTF-8 %s: %s is %s", chars ? "detected" : "assumed", sample,
                 chars ? "valid UTF-8" : "plain ASCII");
        return KENALL_UTF8;
    }
    if (chars > bad) {
        snprintf(why, whylen, "UTF-8 detected: %s has %zu UTF-8 characters and %zu byte%s that "
                 "are not UTF-8", sample, chars, bad, bad == 1 ? "" : "s");
        return KENALL_UTF8;
    }
    snprintf(why, whylen, "Shift_JIS assumed: byte 0x%02X on line %ld is not UTF-8, and %s has "
             "%zu such bytes against %zu UTF-8 characters", buf[first_bad], first_bad_line, sample,
             bad, chars);
    return KENALL_SJIS;
}

struct kenall_reader *kenall_open_stream(FILE *f, const char *name, const struct kenall_opts *opts,
                                         struct zb_err *err)
{
    struct kenall_reader *r = calloc(1, sizeof *r);
    if (!r) {
        if (f && f != stdin)
            fclose(f);
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        return NULL;
    }
    r->cd = (iconv_t)-1;
    r->f = f;
    r->raw = opts && opts->raw;
    r->pathcopy = strdup(name);
    r->path = r->pathcopy ? r->pathcopy : "(input)";
    struct stat st;
    if (fileno(f) >= 0 && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode))
        r->size = st.st_size;
    r->enc = opts ? opts->encoding : KENALL_AUTO;
    if (r->enc != KENALL_AUTO)
        snprintf(r->why, sizeof r->why, "%s as asked", r->enc == KENALL_UTF8 ? "UTF-8" : "Shift_JIS");
    else if (f == stdin)
        snprintf(r->why, sizeof r->why, "UTF-8 assumed: standard input is not sniffed");
    if (r->enc == KENALL_AUTO)
        r->enc = f == stdin ? KENALL_UTF8 : sniff(f, r->why, sizeof r->why);
    if (r->enc == KENALL_SJIS) {
        /* CP932 is what Japan Post's "Shift_JIS" really is (NEC/IBM extensions). */
        r->cd = iconv_open("UTF-8", "CP932");
        if (r->cd == (iconv_t)-1) {
            zb_fail(err, ZB_ERR_SYS, "%s: iconv cannot convert CP932 to UTF-8: %s", r->path,
                    strerror(errno));
            kenall_close(r);
            return NULL;
        }
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

/* Reads one physical line into r->conv as UTF-8. 1, 0 at EOF, -1 error.
 * *ended says whether it had a line end (a truncated last line has not). */
static int read_line(struct kenall_reader *r, bool *ended, struct zb_err *err)
{
    ssize_t n = getline(&r->raw_line, &r->raw_cap, r->f);
    if (n < 0) {
        if (ferror(r->f))
            return zb_fail(err, ZB_ERR_SYS, "%s: read error: %s", r->path, strerror(errno));
        return 0;
    }
    r->lineno++;
    r->offset += n;
    *ended = n > 0 && r->raw_line[n - 1] == '\n';
    if (*ended)
        n--;
    if (n > 0 && r->raw_line[n - 1] == '\r')
        n--;
    if (memchr(r->raw_line, 0, (size_t)n))
        return fail_at(r, r->lineno, err, "NUL byte in line");
    char *in = r->raw_line;
    size_t inleft = (size_t)n;
    if (r->lineno == 1 && inleft >= 3 && !memcmp(in, "\xEF\xBB\xBF", 3)) {
        in += 3;  /* UTF-8 byte order mark */
        inleft -= 3;
    }
    /* A bad byte in the last line, cut short, is most likely the cut. */
    const char *cut = *ended ? "" : "truncated last line (no line end): ";
    if (r->enc == KENALL_UTF8) {
        size_t ok = utf8_valid_prefix((unsigned char *)in, inleft);
        if (ok != inleft)
            return fail_at(r, r->lineno, err, "%sinvalid UTF-8 byte 0x%02X at byte %zu (%s)", cut,
                           (unsigned char)in[ok], (size_t)(in - r->raw_line) + ok + 1, r->why);
        if (grow(&r->conv, &r->conv_cap, inleft + 1) < 0)
            return zb_fail(err, ZB_ERR_SYS, "out of memory");
        memcpy(r->conv, in, inleft);
        r->conv[inleft] = 0;
        return 1;
    }
    /* CP932 -> UTF-8 takes at most 3 bytes per input byte. */
    if (grow(&r->conv, &r->conv_cap, inleft * 3 + 1) < 0)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    char *out = r->conv, *start = in;
    size_t outleft = r->conv_cap - 1;
    iconv(r->cd, NULL, NULL, NULL, NULL);
    if (iconv(r->cd, &in, &inleft, &out, &outleft) == (size_t)-1)
        return fail_at(r, r->lineno, err, "%sinvalid Shift_JIS byte 0x%02X at byte %ld (%s)", cut,
                       (unsigned char)*in, (long)(in - start) + 1, r->why);
    *out = 0;
    return 1;
}

/* Splits r->conv (CSV, quoted fields with "" escapes) into l's fields. */
static int split_fields(struct kenall_reader *r, struct line *l, struct zb_err *err)
{
    size_t len = strlen(r->conv);
    if (grow(&l->text, &l->cap, len + 1) < 0)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    const char *p = r->conv;
    char *o = l->text;
    int n = 0;
    for (;;) {
        if (n == KENALL_COLS)
            return fail_at(r, r->lineno, err, "more than %d columns", KENALL_COLS);
        l->field[n++] = o;
        if (*p == '"') {
            p++;
            for (;;) {
                if (!*p)
                    return fail_at(r, r->lineno, err, "column %d: quote not closed", n);
                if (*p == '"') {
                    if (p[1] != '"')
                        break;
                    p++;
                }
                *o++ = *p++;
            }
            p++;
            if (*p && *p != ',')
                return fail_at(r, r->lineno, err, "column %d: text after closing quote", n);
        } else {
            while (*p && *p != ',') {
                if (*p == '"')
                    return fail_at(r, r->lineno, err, "column %d: quote inside unquoted field", n);
                *o++ = *p++;
            }
        }
        *o++ = 0;
        if (!*p)
            break;
        p++;  /* the comma */
    }
    if (n != KENALL_COLS)
        return fail_at(r, r->lineno, err, "%d columns, expected %d", n, KENALL_COLS);
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
        return fail_at(r, r->lineno, err, "column 1 (JIS code): '%s' is not 5 digits",
                       l->field[KENALL_JIS]);
    if (!all_digits(l->field[KENALL_ZIP], 7, 7))
        return fail_at(r, r->lineno, err, "column 3 (postal code): '%s' is not 7 digits",
                       l->field[KENALL_ZIP]);
    for (int i = KENALL_FIRST_FLAG; i < KENALL_COLS; i++)
        if (!all_digits(l->field[i], 1, 1))
            return fail_at(r, r->lineno, err, "column %d (flag): '%s' is not a digit", i + 1,
                           l->field[i]);
    return 0;
}

/* Reads and checks the next physical line into l. 1, 0 at EOF, -1. */
static int next_line(struct kenall_reader *r, struct line *l, struct zb_err *err)
{
    bool ended = true;
    int rc = read_line(r, &ended, err);
    if (rc <= 0)
        return rc;
    if (!r->conv[0] && ended)
        return fail_at(r, r->lineno, err, "empty line");
    if (split_fields(r, l, err) < 0) {
        if (ended)
            return -1;
        /* Say why the line is bad, and that it is where the file stops. */
        char problem[sizeof err->msg];
        int prefix = snprintf(NULL, 0, "%s:%ld: ", r->path, r->lineno);
        snprintf(problem, sizeof problem, "%s", err->msg + prefix);
        return fail_at(r, r->lineno, err, "truncated last line (no line end): %s", problem);
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
    r->row_line = r->lineno;
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
                           "expected %s)", r->lineno, r->next.field[KENALL_ZIP],
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
long kenall_lines(const struct kenall_reader *r) { return r->lineno; }
long long kenall_offset(const struct kenall_reader *r) { return r->offset; }
long long kenall_size(const struct kenall_reader *r) { return r->size; }
enum kenall_encoding kenall_encoding(const struct kenall_reader *r) { return r->enc; }

void kenall_close(struct kenall_reader *r)
{
    if (!r)
        return;
    if (r->f && r->f != stdin)
        fclose(r->f);
    if (r->cd != (iconv_t)-1)
        iconv_close(r->cd);
    free(r->raw_line);
    free(r->conv);
    free(r->cur.text);
    free(r->next.text);
    free(r->town_kana);
    free(r->town);
    free(r->pathcopy);
    free(r);
}

long kenall_count(const char *path, const struct kenall_opts *opts, struct zb_err *err)
{
    struct kenall_reader *r = kenall_open(path, opts, err);
    if (!r)
        return -1;
    long rows = 0;
    const char *const *fields;
    int rc;
    while ((rc = kenall_next(r, &fields, err)) == 1)
        rows++;
    kenall_close(r);
    return rc < 0 ? -1 : rows;
}
