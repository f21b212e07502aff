#include "dataset.h"

#include <ctype.h>
#include <errno.h>
#include <iconv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "csv.h"
#include "kenall.h"
#include "number.h"

static const char *const type_names[] = { [ZB_TEXT] = "text", [ZB_INTEGER] = "integer",
                                          [ZB_REAL] = "real" };

/* ---- values ---- */

/* An integer column takes -?[0-9]+ within 64 bits, nothing else: what
 * SQLite would otherwise keep as text, the others reject. */
static bool is_integer(const char *s)
{
    const char *p = s + (*s == '-');
    if (!*p || strspn(p, "0123456789") != strlen(p))
        return false;
    errno = 0;
    strtoll(s, NULL, 10);
    return errno == 0;
}

/* A real: decimal digits, an optional fraction and exponent, finite. */
static bool is_real(const char *s)
{
    const char *p = s + (*s == '-');
    size_t digits = strspn(p, "0123456789");
    p += digits;
    if (*p == '.') {
        size_t frac = strspn(p + 1, "0123456789");
        if (!frac)
            return false;
        p += 1 + frac;
    }
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        p += 1 + (p[1] == '-' || p[1] == '+');
        size_t exp = strspn(p, "0123456789");
        if (!exp)
            return false;
        p += exp;
    }
    if (*p)
        return false;
    errno = 0;
    double v = strtod(s, NULL);
    return errno == 0 && isfinite(v);
}

/* What inference takes for a number: no leading zeros ("02" is a code, and
 * stays text), no negative zero ("-0", "-0.0": a database keeps no sign
 * of zero's). */
static bool is_canonical_number(const char *s)
{
    const char *p = s + (*s == '-');
    if (p[0] == '0' && isdigit((unsigned char)p[1]))
        return false;
    return !(*s == '-' && strspn(p, "0.") == strcspn(p, "eE") && strchr(p, '0'));
}

/* ---- the config's values ---- */

struct column_spec {
    char name[64];
    int type;              /* an enum zb_type, or -1: infer */
    bool not_null;
};

/* Parses "name [type] [not null], ..." into spec[]; -1 with problem. */
static int parse_columns(const char *text, struct column_spec *spec, int *n, char *problem,
                         size_t len)
{
    *n = 0;
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", text);
    char *save, *entry = strtok_r(buf, ",", &save);
    for (; entry; entry = strtok_r(NULL, ",", &save)) {
        if (*n == ZB_MAX_COLUMNS) {
            snprintf(problem, len, "more than %d columns", ZB_MAX_COLUMNS);
            return -1;
        }
        struct column_spec *c = &spec[(*n)++];
        c->type = -1;
        c->not_null = false;
        char *words[4], *wsave;
        int nw = 0;
        for (char *w = strtok_r(entry, " \t", &wsave); w; w = strtok_r(NULL, " \t", &wsave))
            if (nw < 4)
                words[nw++] = w;
            else
                nw = 5;
        if (nw == 0) {
            snprintf(problem, len, "column %d has no name", *n);
            return -1;
        }
        const char *name = words[0];
        bool ident = isalpha((unsigned char)*name) || *name == '_';
        for (const char *p = name; *p; p++)
            ident &= isalnum((unsigned char)*p) || *p == '_';
        if (!ident || strlen(name) > 63) {
            snprintf(problem, len, "'%.80s' is not a column name (letters, digits, _; at most 63)",
                     name);
            return -1;
        }
        for (int i = 0; i < *n - 1; i++)
            if (!strcasecmp(spec[i].name, name)) {
                snprintf(problem, len, "column '%s' named twice", name);
                return -1;
            }
        snprintf(c->name, sizeof c->name, "%s", name);
        int w = 1;
        if (w < nw && strcasecmp(words[w], "not")) {
            for (int t = 0; t < 3; t++)
                if (!strcasecmp(words[w], type_names[t]))
                    c->type = t;
            if (c->type < 0) {
                snprintf(problem, len, "%s: type '%.40s' is not integer, real or text", name,
                         words[w]);
                return -1;
            }
            w++;
        }
        if (w + 2 == nw && !strcasecmp(words[w], "not") && !strcasecmp(words[w + 1], "null")) {
            c->not_null = true;
            w += 2;
        }
        if (w != nw) {
            snprintf(problem, len, "%s: expected 'NAME [integer|real|text] [not null]'", name);
            return -1;
        }
    }
    if (*n == 0) {
        snprintf(problem, len, "no columns");
        return -1;
    }
    return 0;
}

static char delimiter_of(const char *v) { return !v ? ',' : !strcmp(v, "tab") ? '\t' : v[0]; }

int dataset_check_value(const char *key, const char *value, const char *where, struct zb_err *err)
{
    if (!strcmp(key, "format") && strcmp(value, "kenall") && strcmp(value, "csv"))
        return zb_fail(err, ZB_ERR_INPUT, "%s: format: '%s' is not kenall or csv", where, value);
    if (!strcmp(key, "delimiter") && strcmp(value, "tab") &&
        (strlen(value) != 1 || strchr("\"\r\n", value[0])))
        return zb_fail(err, ZB_ERR_INPUT, "%s: delimiter: '%s' is not one character (or tab) "
                       "other than a quote or line end", where, value);
    if (!strcmp(key, "quote") && strcmp(value, "\"") && strcmp(value, "none"))
        return zb_fail(err, ZB_ERR_INPUT, "%s: quote: '%s' is not \" or none", where, value);
    if (!strcmp(key, "encoding") && strcasecmp(value, "auto")) {
        const char *from = !strcasecmp(value, "sjis") || !strcasecmp(value, "shift_jis")
                               ? "CP932" : value;
        iconv_t cd = iconv_open("UTF-8", from);
        if (cd == (iconv_t)-1)
            return zb_fail(err, ZB_ERR_INPUT, "%s: encoding: '%s' is not one iconv knows (auto, "
                           "utf-8, sjis, latin1, ...)", where, value);
        iconv_close(cd);
    }
    if (!strcmp(key, "columns")) {
        struct column_spec spec[ZB_MAX_COLUMNS];
        int n;
        char problem[200];
        if (parse_columns(value, spec, &n, problem, sizeof problem) < 0)
            return zb_fail(err, ZB_ERR_INPUT, "%s: columns: %s", where, problem);
    }
    return 0;
}

/* ---- description ---- */

static struct csv_opts csv_options(const struct dataset_conf *dc)
{
    return (struct csv_opts){ .delimiter = delimiter_of(dc->delimiter),
                              .no_quotes = dc->quote && !strcmp(dc->quote, "none"),
                              .encoding = dc->encoding };
}

/* A header's text as a column name: lower-case letters, digits and _. */
static void column_name(const char *text, int i, char *out, size_t len)
{
    size_t n = 0;
    if (isdigit((unsigned char)*text))
        n = (size_t)snprintf(out, len, "c_");
    for (const char *p = text; *p && n + 1 < len && n < 63; p++)
        out[n++] = isalnum((unsigned char)*p) ? (char)tolower((unsigned char)*p) : '_';
    out[n] = 0;
    if (strspn(out, "_") == n)
        snprintf(out, len, "column_%d", i + 1);
}

static int describe_kenall(struct dataset *d)
{
    struct zb_table postal = zb_postal_table(NULL);
    d->ncols = postal.ncols;
    for (int i = 0; i < d->ncols; i++) {
        d->col[i] = postal.cols[i];
        snprintf(d->names[i], sizeof d->names[i], "%s", postal.cols[i].name);
        d->col[i].name = d->names[i];
    }
    d->key = postal.key;
    return 0;
}

/* Column i's header text f as its field: the answers' name for it, so
 * no longer than ZB_FIELD_MAX and like no other byte for byte. */
static int header_field(struct dataset *d, struct csv_reader *r, int i, const char *f,
                        struct zb_err *err)
{
    size_t len = strlen(f);
    if (len > ZB_FIELD_MAX)
        return csv_fail(r, i + 1, err, "the header's name '%.40s...' is %zu bytes, more than the "
                        "%d a field of the answers may have", f, len, ZB_FIELD_MAX);
    for (int k = 0; k < i; k++)
        if (!strcmp(d->field[k], f))
            return csv_fail(r, 0, err, "columns %d and %d are both named '%.80s': the answers "
                            "name each field by its header, so each must be its own", k + 1,
                            i + 1, f);
    memcpy(d->field[i], f, len + 1);
    d->has_field[i] = true;
    return 0;
}

const char *dataset_field(const struct dataset *d, int i)
{
    return d->has_field[i] ? d->field[i] : d->col[i].name;
}

/* Names from the header or the config, and the given types. */
static int name_columns(struct dataset *d, struct csv_reader *r, struct zb_err *err)
{
    const struct dataset_conf *dc = d->conf;
    struct column_spec spec[ZB_MAX_COLUMNS];
    int nspec = 0;
    char problem[200];
    if (dc->columns && parse_columns(dc->columns, spec, &nspec, problem, sizeof problem) < 0)
        return zb_fail(err, ZB_ERR_INPUT, "[dataset %s]: columns: %s", dc->name, problem);
    if (dc->header) {
        int n;
        const char *const *f;
        int rc = csv_next(r, &n, &f, err);
        if (rc < 0)
            return -1;
        if (rc == 0 || n == 0)
            return zb_fail(err, ZB_ERR_INPUT, "%s:1: no header (the dataset says header = yes)",
                           csv_path(r));
        if (n > ZB_MAX_COLUMNS)
            return csv_fail(r, 0, err, "%d columns, more than the %d a table may have here", n,
                            ZB_MAX_COLUMNS);
        if (nspec && nspec != n)
            return csv_fail(r, 0, err, "the header has %d columns, the config's columns %d", n,
                            nspec);
        d->ncols = n;
        for (int i = 0; i < n; i++) {
            if (header_field(d, r, i, f[i], err) < 0)
                return -1;
            column_name(f[i], i, d->names[i], sizeof d->names[i]);
            for (int k = 0, dup = 2; k < i; k++)  /* two headers may map to one name */
                if (!strcmp(d->names[k], d->names[i])) {
                    char base[64];
                    memcpy(base, d->names[i], sizeof base);
                    snprintf(d->names[i], sizeof d->names[i], "%.50s_%d", base, dup++);
                    k = -1;
                }
        }
    } else if (!nspec) {
        return zb_fail(err, ZB_ERR_INPUT, "[dataset %s]: the file has no header: columns = "
                       "NAME [TYPE], ... must name its columns", dc->name);
    }
    if (nspec)
        d->ncols = nspec;
    for (int i = 0; i < d->ncols; i++) {
        if (nspec)
            memcpy(d->names[i], spec[i].name, sizeof d->names[i]);
        d->col[i] = (struct zb_column){ .name = d->names[i] };
        d->col[i].type = nspec && spec[i].type >= 0 ? (enum zb_type)spec[i].type : ZB_TEXT;
        d->col[i].not_null = nspec && spec[i].not_null;
        d->inferred[i] = !nspec || spec[i].type < 0;
    }
    return 0;
}

/* Types for the columns given none: integer if every value of the sample
 * is one, else real if every value is one, else text (also when all are
 * NULL). The rows are checked like any: a bad one fails here too. */
static int infer_types(struct dataset *d, struct dataset_reader *r, struct zb_err *err)
{
    bool maybe_int[ZB_MAX_COLUMNS], maybe_real[ZB_MAX_COLUMNS], seen[ZB_MAX_COLUMNS];
    for (int i = 0; i < d->ncols; i++)
        maybe_int[i] = maybe_real[i] = true, seen[i] = false;
    const char *const *f;
    int rc = 0;
    while (d->sampled < d->conf->sample_rows && (rc = dataset_next(r, &f, err)) == 1) {
        d->sampled++;
        for (int i = 0; i < d->ncols; i++) {
            if (!d->inferred[i] || !f[i])
                continue;
            seen[i] = true;
            /* A real only if the answer, the double's text, is the file's
             * number: 2^63 and 1.23456789012345678 stay text. */
            bool canonical = is_canonical_number(f[i]);
            maybe_int[i] &= canonical && is_integer(f[i]);
            maybe_real[i] &= canonical && is_real(f[i]) && zb_real_is_exact(f[i]);
        }
    }
    if (d->sampled < d->conf->sample_rows && rc < 0)
        return -1;
    for (int i = 0; i < d->ncols; i++)
        if (d->inferred[i])
            d->col[i].type = !seen[i] ? ZB_TEXT : maybe_int[i] ? ZB_INTEGER
                           : maybe_real[i] ? ZB_REAL : ZB_TEXT;
    return 0;
}

/* The key names no column: said with the ones near it (alike but for
 * case, spaces or punctuation) and every column. */
static int no_key(const struct dataset *d, bool by_header, struct zb_err *err)
{
    const struct dataset_conf *dc = d->conf;
    char near[400] = "", all[1200] = "", want[64], have[64];
    size_t nn = 0, na = 0;
    column_name(dc->key, 0, want, sizeof want);
    for (int i = 0; i < d->ncols; i++) {
        const char *name = by_header ? d->field[i] : d->names[i];
        column_name(name, 0, have, sizeof have);
        bool alike = !strcasecmp(name, dc->key) || (strpbrk(want, "abcdefghijklmnopqrstuvwxyz"
                                                             "0123456789") && !strcmp(have, want));
        if (alike && nn < sizeof near)
            nn += (size_t)snprintf(near + nn, sizeof near - nn, "%s'%s'", nn ? ", " : "", name);
        if (na < sizeof all)
            na += (size_t)snprintf(all + na, sizeof all - na, "%s'%s'", i ? ", " : "", name);
    }
    char where[300];
    if (by_header)
        snprintf(where, sizeof where, "%s:1: key", dc->file);
    else
        snprintf(where, sizeof where, "[dataset %s]: key", dc->name);
    return zb_fail(err, ZB_ERR_INPUT, "%s: no column '%.80s'%s (%s%s%sits columns: %s)", where,
                   dc->key, by_header ? " in the header, byte for byte" : "",
                   near[0] ? "near: " : "", near, near[0] ? "; " : "", all);
}

int dataset_describe(struct dataset *d, const struct dataset_conf *dc, struct zb_err *err)
{
    memset(d, 0, sizeof *d);
    d->conf = dc;
    if (!strcmp(dc->format, "kenall"))
        return describe_kenall(d);
    /* The file is read only for a header or a sample: a server given
     * every column needs no copy of the data. */
    struct csv_opts o = csv_options(dc);
    struct csv_reader *r = dc->header ? csv_open(dc->file, &o, err) : NULL;
    if (dc->header && !r)
        return -1;
    int rc = name_columns(d, r, err);
    csv_close(r);
    if (rc < 0)
        return -1;
    d->key = 0;
    if (dc->key) {
        /* The header's texts unless the config names the columns. */
        bool by_header = dc->header && !dc->columns;
        d->key = -1;
        for (int i = 0; i < d->ncols; i++)
            if (!strcmp(by_header ? d->field[i] : d->names[i], dc->key))
                d->key = i;
        if (d->key < 0)
            return no_key(d, by_header, err);
    }
    d->col[d->key].not_null = true;  /* a row nobody can look up is a mistake */
    bool infer = false;
    for (int i = 0; i < d->ncols; i++)
        infer |= d->inferred[i];
    if (!infer)
        return 0;
    struct dataset_reader *dr = dataset_open(d, err);
    if (!dr)
        return -1;
    rc = infer_types(d, dr, err);
    dataset_close(dr);
    return rc;
}

void dataset_table_name(const struct dataset_conf *dc, const struct backend_conf *bc, char *name,
                        size_t len)
{
    if (!strcmp(dc->name, DATASET_DEFAULT))
        snprintf(name, len, "%s", bc->table);
    else
        snprintf(name, len, "%s_%s", dc->table ? dc->table : dc->name, bc->name);
}

struct zb_table dataset_table(const struct dataset *d, const struct backend_conf *bc, char *name,
                              size_t len)
{
    dataset_table_name(d->conf, bc, name, len);
    struct zb_table t = { .name = name, .ncols = d->ncols, .cols = d->col, .key = d->key,
                          .nindexes = 1, .indexes = { d->key } };
    if (!strcmp(d->conf->format, "kenall"))
        t = zb_postal_table(name);
    return t;
}

void dataset_columns_text(const struct dataset *d, bool mark, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < d->ncols && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s %s%s%s", i ? ", " : "", d->col[i].name,
                              type_names[d->col[i].type], d->col[i].not_null ? " not null" : "",
                              mark && d->inferred[i] ? " (inferred)" : "");
}

void dataset_fields_text(const struct dataset *d, char *buf, size_t len)
{
    bool same = true;
    for (int i = 0; i < d->ncols; i++)
        same &= !strcmp(dataset_field(d, i), d->col[i].name);
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < d->ncols && !same && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s'%s' (%s)", i ? ", " : "", dataset_field(d, i),
                              d->col[i].name);
}

/* ---- rows ---- */

struct dataset_reader {
    const struct dataset *d;
    struct kenall_reader *kenall;
    struct csv_reader *csv;
    const char *out[ZB_MAX_COLUMNS];
};

struct dataset_reader *dataset_open(const struct dataset *d, struct zb_err *err)
{
    const struct dataset_conf *dc = d->conf;
    struct dataset_reader *r = calloc(1, sizeof *r);
    if (!r) {
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        return NULL;
    }
    r->d = d;
    if (!strcmp(dc->format, "kenall")) {
        enum kenall_encoding enc = !dc->encoding || !strcasecmp(dc->encoding, "auto") ? KENALL_AUTO
                                 : !strcasecmp(dc->encoding, "utf-8") ? KENALL_UTF8 : KENALL_SJIS;
        /* Another encoding (latin1...) is read as named, not as Shift_JIS. */
        bool other = enc == KENALL_SJIS && strcasecmp(dc->encoding, "sjis") &&
                     strcasecmp(dc->encoding, "shift_jis") && strcasecmp(dc->encoding, "cp932");
        struct kenall_opts ko = { .encoding = enc, .raw = dc->raw,
                                  .encoding_name = other ? dc->encoding : NULL };
        r->kenall = kenall_open(dc->file, &ko, err);
    } else {
        struct csv_opts o = csv_options(dc);
        const char *const *f;
        int n;
        r->csv = csv_open(dc->file, &o, err);
        if (r->csv && dc->header && csv_next(r->csv, &n, &f, err) < 0) {
            csv_close(r->csv);
            r->csv = NULL;
        }
    }
    if (!r->kenall && !r->csv) {
        free(r);
        return NULL;
    }
    return r;
}

/* Checks a csv record against the columns; fills r->out. */
static int check_row(struct dataset_reader *r, int n, const char *const *f, struct zb_err *err)
{
    const struct dataset *d = r->d;
    if (n != d->ncols) {
        const char *cut = csv_truncated(r->csv) ? "truncated last line (no line end): " : "";
        if (n == 0)
            return csv_fail(r->csv, 0, err, "%sempty line", cut);
        return csv_fail(r->csv, 0, err, "%s%d columns, expected %d", cut, n, d->ncols);
    }
    const char *null = d->conf->null;
    for (int i = 0; i < n; i++) {
        const char *v = f[i];
        if (!csv_quoted(r->csv, i) && (!*v || (null && !strcmp(v, null))))
            v = NULL;
        r->out[i] = v;
        const struct zb_column *c = &d->col[i];
        const char *name = dataset_field(d, i);   /* as the file's reader knows it */
        if (!v) {
            if (c->not_null)
                return csv_fail(r->csv, i + 1, err, "%s: no value (NULL) in a column that must "
                                "have one%s", name, i == d->key ? " (the key)" : "");
            continue;
        }
        size_t len = strlen(v);
        if (i == d->key && (len == 0 || len > ZB_KEY_MAX))   /* no lookup could find the row */
            return len ? csv_fail(r->csv, i + 1, err, "%s: the key is %zu bytes, more than the %d "
                                  "a lookup can name (the server answers 414)", name, len,
                                  ZB_KEY_MAX)
                       : csv_fail(r->csv, i + 1, err, "%s: the key is empty (\"\"): no lookup "
                                  "can name it (the server answers 400)", name);
        if ((c->type == ZB_INTEGER && !is_integer(v)) || (c->type == ZB_REAL && !is_real(v))) {
            char why[96] = "";
            if (d->inferred[i] && d->sampled)
                snprintf(why, sizeof why, "; its type was inferred from the first %ld rows: "
                         "give it in columns =", d->sampled);
            return csv_fail(r->csv, i + 1, err, "%s: '%.60s%s' is not %s%s", name, v,
                            strlen(v) > 60 ? "..." : "",
                            c->type == ZB_INTEGER ? "an integer (64-bit)" : "a real number", why);
        }
    }
    return 0;
}

int dataset_next(struct dataset_reader *r, const char *const **fields, struct zb_err *err)
{
    if (r->kenall)
        return kenall_next(r->kenall, fields, err);
    int n, rc;
    const char *const *f;
    if ((rc = csv_next(r->csv, &n, &f, err)) <= 0)
        return rc;
    if (check_row(r, n, f, err) < 0)
        return -1;
    *fields = r->out;
    return 1;
}

const char *dataset_encoding(const struct dataset_reader *r)
{
    return r->kenall ? kenall_encoding_why(r->kenall) : csv_encoding_why(r->csv);
}

long dataset_row_line(const struct dataset_reader *r)
{
    return r->kenall ? kenall_row_line(r->kenall) : csv_line(r->csv);
}

long dataset_lines(const struct dataset_reader *r)
{
    return r->kenall ? kenall_lines(r->kenall) : csv_lines(r->csv);
}

long long dataset_offset(const struct dataset_reader *r)
{
    return r->kenall ? kenall_offset(r->kenall) : csv_offset(r->csv);
}

long long dataset_size(const struct dataset_reader *r)
{
    return r->kenall ? kenall_size(r->kenall) : csv_size(r->csv);
}

void dataset_close(struct dataset_reader *r)
{
    if (!r)
        return;
    kenall_close(r->kenall);
    csv_close(r->csv);
    free(r);
}
