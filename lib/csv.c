#include "csv.h"
#include "utf8.h"

#include <errno.h>
#include <iconv.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

enum state { FIELD_START, UNQUOTED, QUOTED, QUOTE_IN_QUOTED };

struct field {
    size_t start;            /* offset of its bytes in rec */
    long line;               /* the line it starts on */
    bool quoted;
};

struct csv_reader {
    FILE *f;
    char *path;
    char delimiter, quote;   /* quote 0: none */
    bool one_line;
    bool utf8;               /* validate only; else convert through cd */
    iconv_t cd;
    char encoding[48];
    char why[400];           /* how the encoding was chosen */
    char *raw;               /* the physical line as read */
    size_t raw_cap;
    char *conv;              /* the same converted to UTF-8 */
    size_t conv_cap;
    long lineno;             /* physical lines read */
    long long offset, size;
    bool regular;            /* a regular file: size and mtime are its state when opened */
    struct timespec mtime;
    bool changed;            /* check_unchanged failed: the file has nothing more to read */
    bool ended;              /* the last line read had a line end */
    /* The record being built: field bytes, each field NUL-terminated. */
    char *rec;
    size_t rec_len, rec_cap;
    struct field *fld;
    size_t nfields, fld_cap;
    const char **out;
    size_t out_cap;
    long record_line;
};

static int grow(void *pbuf, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t cap2 = *cap ? *cap : 64;
    while (cap2 < need)
        cap2 *= 2;
    void *p = realloc(*(void **)pbuf, cap2 * size);
    if (!p)
        return -1;
    *(void **)pbuf = p;
    *cap = cap2;
    return 0;
}

/* "file:line[:column]: [cut]what": cut says a bad last line without a line
 * end is most likely where the file was cut. */
static int vfail_at(const struct csv_reader *r, long line, int column, bool cut,
                    struct zb_err *err, const char *fmt, va_list ap)
{
    char what[400], where[48];
    vsnprintf(what, sizeof what, fmt, ap);
    if (column > 0)
        snprintf(where, sizeof where, "%ld:%d", line, column);
    else
        snprintf(where, sizeof where, "%ld", line);
    return zb_fail(err, ZB_ERR_INPUT, "%s:%s: %s%s", r->path, where,
                   cut ? "truncated last line (no line end): " : "", what);
}

int csv_fail(const struct csv_reader *r, int column, struct zb_err *err, const char *fmt, ...)
{
    long line = column > 0 && (size_t)column <= r->nfields ? r->fld[column - 1].line
                                                           : r->record_line;
    va_list ap;
    va_start(ap, fmt);
    vfail_at(r, line, column, false, err, fmt, ap);
    va_end(ap);
    return -1;
}

/* An error of the reader itself, on the line being read (or `line`). */
static int fail_at(const struct csv_reader *r, long line, int column, struct zb_err *err,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int fail_at(const struct csv_reader *r, long line, int column, struct zb_err *err,
                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_at(r, line, column, line == r->lineno && !r->ended, err, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- encodings ---- */

/* Whether a sample that is not UTF-8 is plausibly CP932 (what Japan Post's
 * "Shift_JIS" is). Read as CP932, plausible means all of:
 *  (a) at least JAPANESE_EVIDENCE of its characters stand in runs of two
 *      or more non-ASCII characters (words);
 *  (b) at least half of its non-ASCII characters do; and
 *  (c) fewer of its bytes are not CP932 at all than (a) counts, so that
 *      one bad byte does not make a Shift_JIS file unreadable (it is then
 *      an error on its own line, as a bad byte of a UTF-8 file is).
 * Why these: Japanese words are runs of kana and kanji (every KEN_ALL row
 * has several, like ﾄｳｷｮｳﾄ and 千代田区), while Latin-1 or cp1252 text has
 * lone accented letters between ASCII ones. Read as CP932, a lower-case
 * accented letter takes the ASCII letter after it as its second byte
 * (caf\xE9s reads caf駸), an upper-case one is a lone half-width katakana,
 * and one before a space, comma, quote or line end is no CP932 character
 * at all: lone characters and bad bytes, no words. 4 lets two two-kanji
 * words (東京,大阪) through. On false, why says what it found. */
enum { JAPANESE_EVIDENCE = 4 };

static bool plausibly_cp932(const unsigned char *buf, size_t n, bool whole, char *why,
                            size_t whylen)
{
    iconv_t cd = iconv_open("UTF-8", "CP932");
    if (cd == (iconv_t)-1) {
        snprintf(why, whylen, "iconv cannot read CP932 here");
        return false;
    }
    size_t cap = n * 3 + 4;
    char *out = malloc(cap);
    if (!out) {
        iconv_close(cd);
        snprintf(why, whylen, "out of memory");
        return false;
    }
    char *in = (char *)buf, *o = out;
    size_t inleft = n, outleft = cap, bad = 0;
    while (inleft > 0 && iconv(cd, &in, &inleft, &o, &outleft) == (size_t)-1) {
        if (errno == EINVAL && !whole)
            break;          /* a character cut by the end of the sample */
        bad++;              /* not CP932: skipped, and it ends a run */
        in++;
        inleft--;
        *o++ = '?';
        outleft--;
    }
    iconv_close(cd);
    /* Characters in runs of two or more non-ASCII ones, and all non-ASCII. */
    size_t in_runs = 0, all = 0, run = 0;
    for (const unsigned char *p = (unsigned char *)out; p <= (unsigned char *)o; p++) {
        if (p == (unsigned char *)o || *p < 0x80) {
            if (run >= 2)
                in_runs += run;
            run = 0;
        } else if ((*p & 0xC0) != 0x80) {   /* the first byte of a character */
            run++;
            all++;
        }
    }
    free(out);
    if (in_runs >= JAPANESE_EVIDENCE && in_runs * 2 >= all && bad < in_runs) {
        snprintf(why, whylen, "%zu characters in runs of two or more, as Japanese words are",
                 in_runs);
        return true;
    }
    snprintf(why, whylen, "as CP932 it has %zu non-ASCII characters, %zu of them in runs of two "
             "or more as Japanese words are, and %zu bytes that are not CP932 (Shift_JIS needs %d "
             "in runs, half of all, and fewer bad bytes)", all, in_runs, bad, JAPANESE_EVIDENCE);
    return false;
}

/* "auto": the encoding, and why, from the first 64 KiB. UTF-8 text reads
 * as whole multi-byte characters; Shift_JIS text almost never does (its
 * lead bytes are not followed by UTF-8 continuation bytes). So the sample
 * counts both: more UTF-8 characters than bytes that are not UTF-8 make a
 * UTF-8 file, whose bad bytes are errors on their own lines (one bad byte
 * must not turn a UTF-8 file into Shift_JIS and blame its first line);
 * otherwise it is Shift_JIS if it is plausibly CP932 (above), and neither
 * (SNIFF_NEITHER, *bad_line the line of its first byte that is not UTF-8)
 * if not: a guess from too little would load wrong text with exit 0. */
enum sniffed { SNIFF_UTF8, SNIFF_SJIS, SNIFF_NEITHER };

static enum sniffed sniff(FILE *f, char *why, size_t whylen, long *bad_line)
{
    unsigned char buf[65536];
    size_t n = fread(buf, 1, sizeof buf, f);
    bool whole = n < sizeof buf;
    rewind(f);
    const char *sample = whole ? "the file" : "the first 64 KiB";
    if (n >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) {
        snprintf(why, whylen, "UTF-8 detected: the file starts with a UTF-8 byte order mark");
        return SNIFF_UTF8;
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
        snprintf(why, whylen, "UTF-8 %s: %s %s %s", chars ? "detected" : "assumed", sample,
                 whole ? "is" : "are", chars ? "valid UTF-8" : "plain ASCII");
        return SNIFF_UTF8;
    }
    if (chars > bad) {
        snprintf(why, whylen, "UTF-8 detected: %s has %zu UTF-8 characters and %zu byte%s that "
                 "are not UTF-8", sample, chars, bad, bad == 1 ? "" : "s");
        return SNIFF_UTF8;
    }
    char cp932[200];
    *bad_line = first_bad_line;
    if (!plausibly_cp932(buf, n, whole, cp932, sizeof cp932)) {
        snprintf(why, whylen, "byte 0x%02X is not UTF-8, and %s does not read as Shift_JIS: %s",
                 buf[first_bad], sample, cp932);
        return SNIFF_NEITHER;
    }
    snprintf(why, whylen, "Shift_JIS assumed: byte 0x%02X on line %ld is not UTF-8, and %s reads "
             "as CP932 with %s", buf[first_bad], first_bad_line, sample, cp932);
    return SNIFF_SJIS;
}

static bool is_utf8_name(const char *s)
{
    return !strcasecmp(s, "utf-8") || !strcasecmp(s, "utf8");
}

static bool is_sjis_name(const char *s)
{
    return !strcasecmp(s, "sjis") || !strcasecmp(s, "shift_jis") || !strcasecmp(s, "cp932");
}

static int choose_encoding(struct csv_reader *r, const char *enc, struct zb_err *err)
{
    if (!enc || !strcasecmp(enc, "auto")) {
        if (r->f == stdin) {
            r->utf8 = true;
            snprintf(r->why, sizeof r->why, "UTF-8 assumed: standard input is not sniffed");
        } else {
            long line = 0;
            enum sniffed got = sniff(r->f, r->why, sizeof r->why, &line);
            if (got == SNIFF_NEITHER)
                return zb_fail(err, ZB_ERR_INPUT, "%s:%ld: cannot tell the file's encoding: %s; "
                               "set it (encoding = in its [dataset], or --encoding: latin1, "
                               "cp1252, sjis, utf-8 ...)", r->path, line, r->why);
            r->utf8 = got == SNIFF_UTF8;
        }
        enc = r->utf8 ? "utf-8" : "sjis";
    } else {
        r->utf8 = is_utf8_name(enc);
        snprintf(r->why, sizeof r->why, "%s as asked",
                 r->utf8 ? "UTF-8" : is_sjis_name(enc) ? "Shift_JIS" : enc);
    }
    snprintf(r->encoding, sizeof r->encoding, "%s",
             r->utf8 ? "UTF-8" : is_sjis_name(enc) ? "Shift_JIS" : enc);
    if (r->utf8)
        return 0;
    /* CP932 is what Japan Post's "Shift_JIS" really is (NEC/IBM extensions). */
    r->cd = iconv_open("UTF-8", is_sjis_name(enc) ? "CP932" : enc);
    if (r->cd == (iconv_t)-1)
        return zb_fail(err, ZB_ERR_INPUT, "%s: cannot read encoding '%s': %s", r->path, enc,
                       strerror(errno));
    return 0;
}

/* ---- reading ---- */

struct csv_reader *csv_open_stream(FILE *f, const char *name, const struct csv_opts *opts,
                                   struct zb_err *err)
{
    struct csv_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(name))) {
        free(r);
        if (f != stdin)
            fclose(f);
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        return NULL;
    }
    r->f = f;
    r->cd = (iconv_t)-1;
    r->ended = true;
    r->delimiter = opts && opts->delimiter ? opts->delimiter : ',';
    r->quote = opts && opts->no_quotes ? 0 : '"';
    r->one_line = opts && opts->one_line;
    struct stat st;
    if (fileno(f) >= 0 && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) {
        r->regular = true;
        r->size = st.st_size;
        r->mtime = st.st_mtim;
    }
    if (choose_encoding(r, opts ? opts->encoding : NULL, err) < 0) {
        csv_close(r);
        return NULL;
    }
    return r;
}

struct csv_reader *csv_open(const char *path, const struct csv_opts *opts, struct zb_err *err)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        zb_fail(err, ZB_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    return csv_open_stream(f, path, opts, err);
}

/* At the end of a regular file: fails unless its size and mtime are still
 * those it had when opened. A writer still at work leaves a last line cut
 * where it had got to ("3," of "3,400"), which has a plausible value and
 * maybe all its fields; and rows read across a rewrite are of no one
 * version of the file. So a file that changed is refused whole, naming the
 * last line read, rather than any of it loaded. */
static int check_unchanged(struct csv_reader *r, struct zb_err *err)
{
    struct stat st;
    if (!r->regular)
        return 0;
    if (fstat(fileno(r->f), &st) < 0)
        return zb_fail(err, ZB_ERR_SYS, "%s: cannot stat: %s", r->path, strerror(errno));
    r->changed = st.st_size != r->size || st.st_mtim.tv_sec != r->mtime.tv_sec ||
                 st.st_mtim.tv_nsec != r->mtime.tv_nsec;
    if (st.st_size != r->size)
        return zb_fail(err, ZB_ERR_INPUT, "%s:%ld: the file changed while it was read (%lld "
                       "bytes when opened, %lld now): its last line may be cut; load it once it "
                       "is written", r->path, r->lineno, r->size, (long long)st.st_size);
    if (st.st_mtim.tv_sec != r->mtime.tv_sec || st.st_mtim.tv_nsec != r->mtime.tv_nsec)
        return zb_fail(err, ZB_ERR_INPUT, "%s:%ld: the file changed while it was read (rewritten: "
                       "%lld bytes then and now, modified since it was opened); load it once it "
                       "is written", r->path, r->lineno, r->size);
    return 0;
}

/* Reads one physical line as UTF-8 into *text (*len bytes, its line end
 * not included; *eol the line end as it was). 1, 0 at the end, -1. A line
 * without a line end is the last: it, and the end, count only if the file
 * did not change while it was read (check_unchanged). */
static int read_line(struct csv_reader *r, const char **text, size_t *len, const char **eol,
                     struct zb_err *err)
{
    if (r->changed)   /* said once: a caller reading on after errors then meets the end */
        return 0;
    ssize_t n = getline(&r->raw, &r->raw_cap, r->f);
    if (n < 0) {
        if (ferror(r->f))
            return zb_fail(err, ZB_ERR_SYS, "%s: read error: %s", r->path, strerror(errno));
        return check_unchanged(r, err);
    }
    r->lineno++;
    r->offset += n;
    r->ended = r->raw[n - 1] == '\n';
    if (!r->ended && check_unchanged(r, err) < 0)
        return -1;
    *eol = "";
    if (r->ended) {
        n--;
        *eol = "\n";
        if (n > 0 && r->raw[n - 1] == '\r') {
            n--;
            *eol = "\r\n";
        }
    }
    const char *nul = memchr(r->raw, 0, (size_t)n);
    if (nul)
        return fail_at(r, r->lineno, 0, err, "NUL byte at byte %zu", (size_t)(nul - r->raw) + 1);
    char *in = r->raw;
    size_t inleft = (size_t)n;
    if (r->lineno == 1 && inleft >= 3 && !memcmp(in, "\xEF\xBB\xBF", 3)) {
        in += 3;  /* UTF-8 byte order mark */
        inleft -= 3;
    }
    if (r->utf8) {
        size_t ok = utf8_valid_prefix(in, inleft);
        if (ok != inleft)
            return fail_at(r, r->lineno, 0, err, "invalid UTF-8 byte 0x%02X at byte %zu (%s)",
                           (unsigned char)in[ok], (size_t)(in - r->raw) + ok + 1, r->why);
        *text = in;
        *len = inleft;
        return 1;
    }
    /* To UTF-8 takes at most 4 bytes per input byte. */
    if (grow(&r->conv, &r->conv_cap, inleft * 4 + 1, 1) < 0)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    char *out = r->conv;
    size_t outleft = r->conv_cap - 1;
    iconv(r->cd, NULL, NULL, NULL, NULL);
    if (iconv(r->cd, &in, &inleft, &out, &outleft) == (size_t)-1)
        return fail_at(r, r->lineno, 0, err, "invalid %s byte 0x%02X at byte %zu (%s)",
                       r->encoding, (unsigned char)*in, (size_t)(in - r->raw) + 1, r->why);
    *out = 0;
    *text = r->conv;
    *len = (size_t)(out - r->conv);
    return 1;
}

static int add_bytes(struct csv_reader *r, const char *s, size_t n, struct zb_err *err)
{
    if (r->rec_len + n + 1 > (size_t)CSV_MAX_RECORD)
        return csv_fail(r, 0, err, "record longer than %ld MiB%s", CSV_MAX_RECORD >> 20,
                        r->quote ? " (a quote never closed?)" : "");
    if (grow(&r->rec, &r->rec_cap, r->rec_len + n + 1, 1) < 0)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    memcpy(r->rec + r->rec_len, s, n);
    r->rec_len += n;
    return 0;
}

static int begin_field(struct csv_reader *r, struct zb_err *err)
{
    if (grow(&r->fld, &r->fld_cap, r->nfields + 1, sizeof *r->fld) < 0)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    r->fld[r->nfields++] = (struct field){ .start = r->rec_len, .line = r->lineno };
    return 0;
}

/* The field so far ends here (its NUL) and the next one begins. */
static int next_field(struct csv_reader *r, struct zb_err *err)
{
    if (add_bytes(r, "", 1, err) < 0)  /* the NUL */
        return -1;
    return begin_field(r, err);
}

/* read_line took the line end (LF or CRLF) off, so a CR left in the text
 * has no LF after it: RFC 4180 makes it data inside quotes only. Outside,
 * it is neither a line end (a file of CR-only lines would read as one
 * record) nor part of a value (a trailing CR would be stored). The file's
 * last line is not called cut: a CR-only file has no LF at all. */
static int bare_cr(const struct csv_reader *r, struct zb_err *err)
{
    return zb_fail(err, ZB_ERR_INPUT, "%s:%ld:%zu: carriage return (CR) without a line feed in "
                   "an unquoted field: lines end in CRLF or LF, and a CR is data only inside "
                   "quotes", r->path, r->lineno, r->nfields);
}

/* Splits one line of text into the record; *state carries an open quote
 * over to the next line. */
static int split_line(struct csv_reader *r, const char *s, size_t n, enum state *state,
                      struct zb_err *err)
{
    const char d = r->delimiter, q = r->quote;
    size_t i = 0;
    while (i < n) {
        switch (*state) {
        case FIELD_START:
            if (q && s[i] == q) {
                r->fld[r->nfields - 1].quoted = true;
                *state = QUOTED;
                i++;
                break;
            }
            *state = UNQUOTED;
            /* fall through */
        case UNQUOTED: {
            size_t k = i;  /* the run up to the next delimiter, quote or CR */
            while (k < n && s[k] != d && !(q && s[k] == q) && s[k] != '\r')
                k++;
            if (add_bytes(r, s + i, k - i, err) < 0)
                return -1;
            i = k;
            if (i == n)
                break;
            if (s[i] == '\r')
                return bare_cr(r, err);
            if (s[i] != d)
                return fail_at(r, r->lineno, (int)r->nfields, err, "quote inside an unquoted "
                               "field (quote the whole field, or read quotes as text: quote = none)");
            if (next_field(r, err) < 0)
                return -1;
            *state = FIELD_START;
            i++;
            break;
        }
        case QUOTED: {
            const char *end = memchr(s + i, q, n - i);
            size_t k = end ? (size_t)(end - s) : n;
            if (add_bytes(r, s + i, k - i, err) < 0)
                return -1;
            i = k;
            if (i < n) {
                *state = QUOTE_IN_QUOTED;
                i++;
            }
            break;
        }
        case QUOTE_IN_QUOTED:
            if (s[i] == q) {  /* "" is one quote */
                if (add_bytes(r, s + i, 1, err) < 0)
                    return -1;
                *state = QUOTED;
            } else if (s[i] == d) {
                if (next_field(r, err) < 0)
                    return -1;
                *state = FIELD_START;
            } else if (s[i] == '\r') {
                return bare_cr(r, err);
            } else {
                return fail_at(r, r->lineno, (int)r->nfields, err, "text after the closing quote");
            }
            i++;
            break;
        }
    }
    return 0;
}

int csv_next(struct csv_reader *r, int *nfields, const char *const **fields, struct zb_err *err)
{
    r->rec_len = 0;
    r->nfields = 0;
    enum state state = FIELD_START;
    const char *text, *eol;
    size_t len;
    int rc = read_line(r, &text, &len, &eol, err);
    if (rc <= 0)
        return rc;
    r->record_line = r->lineno;
    if (len > 0 && begin_field(r, err) < 0)
        return -1;
    for (;;) {
        if (len > 0 && split_line(r, text, len, &state, err) < 0)
            return -1;
        if (state != QUOTED)
            break;
        /* A line end inside quotes belongs to the field. */
        const struct field *open = &r->fld[r->nfields - 1];
        if (r->one_line || !r->ended)
            return fail_at(r, r->lineno, (int)r->nfields, err, "quote not closed %s",
                           r->one_line ? "on its line" : "before the end of the file");
        if (add_bytes(r, eol, strlen(eol), err) < 0)
            return -1;
        if ((rc = read_line(r, &text, &len, &eol, err)) < 0)
            return -1;
        if (rc == 0)
            return fail_at(r, open->line, (int)r->nfields, err, "the quote that opens this "
                           "field is never closed: the file ends on line %ld", r->lineno);
    }
    if (r->nfields > 0 && add_bytes(r, "", 1, err) < 0)
        return -1;
    if (grow(&r->out, &r->out_cap, r->nfields + 1, sizeof *r->out) < 0)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    for (size_t i = 0; i < r->nfields; i++)
        r->out[i] = r->rec + r->fld[i].start;
    *nfields = (int)r->nfields;
    *fields = r->out;
    return 1;
}

bool csv_quoted(const struct csv_reader *r, int i)
{
    return i >= 0 && (size_t)i < r->nfields && r->fld[i].quoted;
}

bool csv_truncated(const struct csv_reader *r) { return !r->ended; }
const char *csv_path(const struct csv_reader *r) { return r->path; }
long csv_line(const struct csv_reader *r) { return r->record_line; }
long csv_lines(const struct csv_reader *r) { return r->lineno; }
long long csv_offset(const struct csv_reader *r) { return r->offset; }
long long csv_size(const struct csv_reader *r) { return r->size; }
const char *csv_encoding(const struct csv_reader *r) { return r->encoding; }
const char *csv_encoding_why(const struct csv_reader *r) { return r->why; }

void csv_close(struct csv_reader *r)
{
    if (!r)
        return;
    if (r->f && r->f != stdin)
        fclose(r->f);
    if (r->cd != (iconv_t)-1)
        iconv_close(r->cd);
    free(r->raw);
    free(r->conv);
    free(r->rec);
    free(r->fld);
    free(r->out);
    free(r->path);
    free(r);
}
