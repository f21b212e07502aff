/* Request heads from a seed (headgen.h). A head starts as a plain GET of
 * one of the paths, takes a few benign variations (both peers still
 * answer 200), and then, unless it stays clean, one or two mutations,
 * each drawn from a table of one dimension of the grammar. A table row
 * carries the HEAD_OWN_* mark when the server refuses it by a rule of its
 * own, whatever nginx does. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "headgen.h"
#include "util.h"

#define TEXT_MAX 1200
#define LINES_MAX 16

/* Bytes that may hold NULs. */
struct text {
    size_t n;
    char b[TEXT_MAX];
};

/* A head before it is written out. */
struct draft {
    const char *lead;              /* before the request line: "" or empty lines */
    struct text method, target, version;
    bool has_version;              /* false: a request line without one (HTTP/0.9) */
    const char *sp1, *sp2;         /* before the target, before the version */
    const char *eol;               /* every line's end, but where a line has its own */
    struct { struct text text; const char *eol; } line[LINES_MAX];
    int nlines;
    bool unfinished;               /* no empty line: the head never ends */
    struct text body;
    struct head *out;
};

/* A row of a table: bytes (len 0: a C string) and the mark they earn. */
struct choice {
    const char *s;
    size_t len;
    unsigned mark;
};
#define C(s, m) { s, sizeof s - 1, m }

static size_t choice_len(const struct choice *c) { return c->len ? c->len : strlen(c->s); }

static uint32_t pick(uint64_t *r, uint32_t n) { return zb_rand_below(r, n); }
#define PICK(r, table) (&(table)[pick(r, sizeof(table) / sizeof((table)[0]))])

static void set(struct text *t, const char *s, size_t n)
{
    t->n = n < TEXT_MAX ? n : TEXT_MAX;
    memcpy(t->b, s, t->n);
}

/* false if it does not fit there */
static bool insert(struct text *t, size_t at, const char *s, size_t n)
{
    if (at > t->n || t->n + n > TEXT_MAX)
        return false;
    memmove(t->b + at + n, t->b + at, t->n - at);
    memcpy(t->b + at, s, n);
    t->n += n;
    return true;
}

static void note(struct draft *d, const char *what, const struct choice *c)
{
    struct head *h = d->out;
    size_t used = strlen(h->what);
    char shown[80];
    size_t n = 0, len = c ? choice_len(c) : 0;
    for (size_t i = 0; i < len && n + 5 < sizeof shown; i++) {
        unsigned char ch = (unsigned char)c->s[i];
        n += (size_t)snprintf(shown + n, sizeof shown - n, ch < 0x20 || ch >= 0x7f ? "\\x%02x" : "%c",
                              ch);
    }
    shown[n] = 0;
    snprintf(h->what + used, sizeof h->what - used, "%s%s%s%s%s", used ? ", " : "", what,
             c ? " \"" : "", shown, c ? "\"" : "");
    if (c)
        h->marks |= c->mark;
}

/* The path part of the target: from its first '/' (after an authority)
 * to '?' or the end. */
static void path_span(const struct text *t, size_t *from, size_t *to)
{
    size_t i = 0;
    if (t->n > 2 && t->b[0] != '/') {
        const char *s = memmem(t->b, t->n, "://", 3);
        i = s ? (size_t)(s - t->b) + 3 : 0;
        while (i < t->n && t->b[i] != '/' && t->b[i] != '?')
            i++;
    }
    *from = i;
    const char *q = memchr(t->b + i, '?', t->n - i);
    *to = q ? (size_t)(q - t->b) : t->n;
}

/* A '/' of the path: the n-th from its start, counting round. */
static size_t slash_at(const struct text *t, uint64_t *r, bool not_first)
{
    size_t from, to, slashes[64], k = 0;
    path_span(t, &from, &to);
    for (size_t i = from; i < to && k < 64; i++)
        if (t->b[i] == '/' && !(not_first && i == from))
            slashes[k++] = i;
    return k ? slashes[pick(r, (uint32_t)k)] : from;
}

static void add_line(struct draft *d, const char *s, size_t n)
{
    if (d->nlines < LINES_MAX) {
        set(&d->line[d->nlines].text, s, n);
        d->line[d->nlines++].eol = NULL;
    }
}

static void add_header(struct draft *d, const char *s) { add_line(d, s, strlen(s)); }

/* The header line whose name is name (case-insensitive), or -1. */
static int find_header(const struct draft *d, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < d->nlines; i++)
        if (d->line[i].text.n > n && d->line[i].text.b[n] == ':' &&
            !strncasecmp(d->line[i].text.b, name, n))
            return i;
    return -1;
}

/* ---- benign variations: both peers still answer 200 ---- */

static void vary(struct draft *d, uint64_t *r)
{
    switch (pick(r, 9)) {
    case 0:
        set(&d->method, "HEAD", 4);
        note(d, "HEAD", NULL);
        break;
    case 1:
        set(&d->version, "HTTP/1.0", 8);
        if (pick(r, 2)) {
            int h = find_header(d, "Host");
            if (h >= 0)
                d->line[h] = d->line[--d->nlines];
        }
        note(d, "HTTP/1.0", NULL);
        break;
    case 2:
        d->eol = pick(r, 2) ? "\n" : "\r\n";
        if (d->nlines)
            d->line[pick(r, (uint32_t)d->nlines)].eol = d->eol[0] == '\n' ? "\r\n" : "\n";
        note(d, "mixed line ends", NULL);
        break;
    case 3: {
        static const struct choice abs[] = { C("http://127.0.0.1", 0), C("HTTP://localhost:80", 0),
                                             C("http://[::1]", 0), C("https://x", 0),
                                             C("http://x.", 0) };
        const struct choice *c = PICK(r, abs);
        if (d->target.b[0] == '/' && insert(&d->target, 0, c->s, choice_len(c)))
            note(d, "absolute-form", c);
        break;
    }
    case 4: {   /* an unreserved byte of the path as %XX */
        size_t from, to, at[TEXT_MAX], k = 0;
        path_span(&d->target, &from, &to);
        for (size_t i = from; i < to; i++)
            if (d->target.b[i] == '%')
                i += 2;   /* an escape's digits are no bytes of their own */
            else if ((d->target.b[i] >= '0' && d->target.b[i] <= '9') ||
                     (d->target.b[i] >= 'a' && d->target.b[i] <= 'z'))
                at[k++] = i;
        if (!k)
            break;
        size_t i = at[pick(r, (uint32_t)k)];
        char esc[4];
        snprintf(esc, sizeof esc, pick(r, 2) ? "%%%02X" : "%%%02x", (unsigned char)d->target.b[i]);
        d->target.b[i] = esc[0];
        insert(&d->target, i + 1, esc + 1, 2);
        note(d, "an unreserved byte encoded", NULL);
        break;
    }
    case 5: {
        static const char *const names[] = { "host", "HOST", "hOsT" };
        int h = find_header(d, "Host");
        if (h >= 0)
            memcpy(d->line[h].text.b, names[pick(r, 3)], 4);
        note(d, "Host's name in other case", NULL);
        break;
    }
    case 6: {
        static const char *const more[] = { "Expect: 100-continue", "Connection: close",
                                            "Accept: */*", "X-Obs-Text: caf\xe9", "X-Empty:",
                                            "Content-Length: 0", "X-Tab:\tv\t" };
        const char *m = more[pick(r, sizeof more / sizeof more[0])];
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(m, ":"), m);
        if (find_header(d, name) < 0) {   /* twice would be no variation */
            add_header(d, m);
            note(d, m, NULL);
        }
        break;
    }
    case 7:
        d->lead = pick(r, 2) ? "\r\n" : "\n";
        note(d, "an empty line first", NULL);
        break;
    default:
        d->sp1 = "  ";
        note(d, "two spaces before the target", NULL);
        break;
    }
}

/* ---- mutations, one dimension each ---- */

static void m_version(struct draft *d, uint64_t *r)
{
    static const struct choice v[] = {
        C("HTTP/1.2", HEAD_OWN_VERSION), C("HTTP/1.9", HEAD_OWN_VERSION),
        C("HTTP/1.5", HEAD_OWN_VERSION), C("HTTP/2.0", HEAD_OWN_VERSION),
        C("HTTP/3.0", HEAD_OWN_VERSION), C("HTTP/0.9", HEAD_OWN_VERSION),
        C("HTTP/01.1", HEAD_OWN_VERSION), C("HTTP/1.01", HEAD_OWN_VERSION),
        C("HTTP/1.10", HEAD_OWN_VERSION), C("http/1.1", HEAD_OWN_VERSION),
        C("Http/1.1", HEAD_OWN_VERSION), C("HTTP/1", HEAD_OWN_VERSION),
        C("HTTP/11", HEAD_OWN_VERSION), C("HTTP/1.x", HEAD_OWN_VERSION),
        C("HTTPS/1.1", HEAD_OWN_VERSION), C("HTTP/1.1 ", HEAD_OWN_VERSION),
        C("HTTP/ 1.1", HEAD_OWN_VERSION), C("", HEAD_OWN_VERSION),
    };
    const struct choice *c = PICK(r, v);
    set(&d->version, c->s, choice_len(c));
    d->has_version = c->s[0] != 0;
    note(d, "version", c);
}

static void m_spaces(struct draft *d, uint64_t *r)
{
    static const struct choice sp[] = { C("  ", HEAD_OWN_LINE), C("\t", HEAD_OWN_LINE),
                                        C(" \t", HEAD_OWN_LINE) };
    static const struct choice sp1[] = { C("\t", 0), C(" \t", 0), C("", 0) };
    if (pick(r, 2)) {
        const struct choice *c = PICK(r, sp);
        d->sp2 = c->s;
        note(d, "before the version", c);
    } else {
        const struct choice *c = PICK(r, sp1);
        d->sp1 = c->s;
        note(d, "before the target", c);
    }
}

static void m_method(struct draft *d, uint64_t *r)
{
    /* The server takes GET and HEAD only: every other method is its 405. */
    static const struct choice m[] = {
        C("POST", HEAD_OWN_METHOD), C("PUT", HEAD_OWN_METHOD), C("DELETE", HEAD_OWN_METHOD),
        C("PATCH", HEAD_OWN_METHOD), C("OPTIONS", HEAD_OWN_METHOD), C("BREW", HEAD_OWN_METHOD),
        C("CONNECT", HEAD_OWN_METHOD), C("TRACE", HEAD_OWN_METHOD), C("G-T", HEAD_OWN_METHOD),
        C("G_T", HEAD_OWN_METHOD), C("get", HEAD_OWN_METHOD), C("Get", HEAD_OWN_METHOD),
        C("G@T", HEAD_OWN_METHOD), C("GET\x01", HEAD_OWN_METHOD), C("GETGETGETGETGET", HEAD_OWN_METHOD),
        C("", HEAD_OWN_METHOD),
    };
    const struct choice *c = PICK(r, m);
    set(&d->method, c->s, choice_len(c));
    note(d, "method", c);
}

static void m_encoded_slash(struct draft *d, uint64_t *r)
{
    static const struct choice s[] = { C("%2F", HEAD_OWN_TARGET), C("%2f", HEAD_OWN_TARGET) };
    const struct choice *c = PICK(r, s);
    size_t at = slash_at(&d->target, r, true);
    if (at < d->target.n && d->target.b[at] == '/' && insert(&d->target, at + 1, c->s + 1, 2)) {
        d->target.b[at] = '%';
        note(d, "a '/' encoded", c);
    }
}

static void m_dot_segment(struct draft *d, uint64_t *r)
{
    static const struct choice seg[] = {
        C("./", HEAD_OWN_TARGET), C("../", HEAD_OWN_TARGET), C("%2e/", HEAD_OWN_TARGET),
        C("%2E%2e/", HEAD_OWN_TARGET), C(".%2E/", HEAD_OWN_TARGET), C("%2e./", HEAD_OWN_TARGET),
        C("../../", HEAD_OWN_TARGET), C("%2E%2E/", HEAD_OWN_TARGET),
    };
    const struct choice *c = PICK(r, seg);
    size_t at = slash_at(&d->target, r, false);
    if (at < d->target.n && d->target.b[at] == '/' &&
        insert(&d->target, at + 1, c->s, choice_len(c)))
        note(d, "a dot segment", c);
}

static void m_path_escape(struct draft *d, uint64_t *r)
{
    /* Whole escapes go after a '/'; broken ones at the path's end, where
     * no hex digit follows to mend them. */
    static const struct choice whole[] = {
        C("%00", HEAD_OWN_TARGET), C("%C0%AF", HEAD_OWN_TARGET), C("%c0%ae", HEAD_OWN_TARGET),
        C("%E0%80%AF", HEAD_OWN_TARGET), C("%C1%9C", HEAD_OWN_TARGET), C("%ff", HEAD_OWN_TARGET),
        C("%80", HEAD_OWN_TARGET), C("%ED%A0%80", HEAD_OWN_TARGET),
        C("%F8%80%80%80%AF", HEAD_OWN_TARGET), C("%25", 0), C("%2525", 0), C("%252F", 0),
        C("%5C", 0), C("%3F", 0), C("%23", 0), C("%20", 0), C("%7E", 0), C("%C3%A9", 0),
    };
    static const struct choice broken[] = {
        C("%", HEAD_OWN_TARGET), C("%2", HEAD_OWN_TARGET), C("%zz", HEAD_OWN_TARGET),
        C("%%", HEAD_OWN_TARGET), C("%G1", HEAD_OWN_TARGET), C("%%30", HEAD_OWN_TARGET),
    };
    size_t from, to, at;
    path_span(&d->target, &from, &to);
    const struct choice *c;
    if (pick(r, 3)) {
        c = PICK(r, whole);
        at = slash_at(&d->target, r, false);
        at = at < d->target.n ? at + 1 : at;
    } else {
        c = PICK(r, broken);
        at = to;
    }
    if (insert(&d->target, at, c->s, choice_len(c)))
        note(d, "an escape in the path", c);
}

static void m_raw_byte(struct draft *d, uint64_t *r)
{
    static const struct choice raw[] = {
        C("#", HEAD_OWN_TARGET), C("#frag", HEAD_OWN_TARGET), C(" ", HEAD_OWN_TARGET),
        C("\t", HEAD_OWN_TARGET), C("\x01", HEAD_OWN_TARGET), C("\x7f", HEAD_OWN_TARGET),
        C("\x80", HEAD_OWN_TARGET), C("\xc3\xa9", HEAD_OWN_TARGET), C("\r", HEAD_OWN_TARGET),
        C("\0", HEAD_OWN_TARGET), C("\\", 0), C("\"", 0), C("<>", 0), C("{}", 0), C("|", 0),
        C("^", 0), C("`", 0), C("//", 0),
    };
    const struct choice *c = PICK(r, raw);
    size_t from, to;
    path_span(&d->target, &from, &to);
    if (insert(&d->target, pick(r, 2) ? to : slash_at(&d->target, r, false) + 1, c->s,
               choice_len(c)))
        note(d, "a raw byte in the target", c);
}

static void m_absolute(struct draft *d, uint64_t *r)
{
    static const struct choice abs[] = {
        C("ftp://x", HEAD_OWN_TARGET), C("http://u@x", HEAD_OWN_TARGET),
        C("http://x..y", HEAD_OWN_TARGET), C("http://x:abc", HEAD_OWN_TARGET),
        C("http:/x", HEAD_OWN_TARGET), C("http://x\\y", HEAD_OWN_TARGET),
        C("http://", 0), C("//x", 0), C("http://[::1", 0), C("https://x:443", 0),
        C("http://x_y", HEAD_OWN_TARGET), C("HTTP://X", 0), C("h\x01tp://x", HEAD_OWN_TARGET),
    };
    const struct choice *c = PICK(r, abs);
    if (d->target.n && d->target.b[0] == '/' && insert(&d->target, 0, c->s, choice_len(c)))
        note(d, "absolute-form", c);
}

static void m_target_form(struct draft *d, uint64_t *r)
{
    static const struct choice form[] = { C("*", 0), C("127.0.0.1:80", 0), C("zip", 0), C("", 0),
                                          C("?queries=1", 0), C("%2Fzip", HEAD_OWN_TARGET) };
    const struct choice *c = PICK(r, form);
    if (!strcmp(c->s, "zip") || !strcmp(c->s, "%2Fzip")) {   /* the path but its first '/' */
        if (!d->target.n || d->target.b[0] != '/')
            return;
        memmove(d->target.b, d->target.b + 1, --d->target.n);
        if (c->s[0] == '%')
            insert(&d->target, 0, "%2F", 3);
    } else {
        set(&d->target, c->s, choice_len(c));
    }
    note(d, "target form", c);
}

static void m_query(struct draft *d, uint64_t *r)
{
    bool queries = memmem(d->target.b, d->target.n, "queries=", 8) != NULL;
    /* The shared parameter parser's rules (server/params.h): a known
     * parameter given twice, a name in another case, a name the route
     * does not take are 400; an empty piece says nothing. */
    static const struct choice q[] = {
        C("strategy=pooled&strategy=per-request", HEAD_PARAM_REPEATED),
        C("Strategy=per-request", HEAD_PARAM_CASE), C("STRATEGY=pooled", HEAD_PARAM_CASE),
        C("a=%00", HEAD_OWN_TARGET), C("a=%zz", HEAD_OWN_TARGET), C("a=%", HEAD_OWN_TARGET),
        C("a=%2F", HEAD_PARAM_UNKNOWN), C("&&=&a", HEAD_PARAM_UNKNOWN),
        C("a=%C0%AF", HEAD_PARAM_UNKNOWN), C("a=#", HEAD_OWN_TARGET),
        C("a=b=c", HEAD_PARAM_UNKNOWN), C("=", 0), C("&&", 0), C("a+b=%20", HEAD_PARAM_UNKNOWN),
    };
    static const struct choice on_queries[] = {
        C("queries=600", HEAD_PARAM_REPEATED), C("queries=1", HEAD_PARAM_REPEATED),
        C("Queries=5", HEAD_PARAM_CASE), C("QUERIES=2", HEAD_PARAM_CASE),
    };
    const struct choice *c = queries && pick(r, 2) ? PICK(r, on_queries) : PICK(r, q);
    bool has_query = memchr(d->target.b, '?', d->target.n) != NULL;
    if (c->mark == HEAD_PARAM_CASE && queries) {   /* the path's own parameter, renamed */
        char *at = memmem(d->target.b, d->target.n, "queries=", 8);
        memcpy(at, c->s, 7);
    } else if (!insert(&d->target, d->target.n, has_query ? "&" : "?", 1) ||
               !insert(&d->target, d->target.n, c->s, choice_len(c))) {
        return;
    }
    note(d, "query", c);
}

/* The Host line: its value, or how many there are (one mutation: the
 * second would undo the first). */
static void m_host(struct draft *d, uint64_t *r)
{
    static const struct choice v[] = {
        C("", 0), C("x/y", 0), C("x y", 0), C("..", 0), C("x..y", 0), C(".", 0), C("x\x01", 0),
        C("x:abc", HEAD_OWN_HEADER), C("x\\y", HEAD_OWN_HEADER), C("x:80:90", HEAD_OWN_HEADER),
        C("[::1", HEAD_OWN_HEADER), C("x@y", HEAD_OWN_HEADER), C("x\x80", HEAD_OWN_HEADER),
        C("x,y", HEAD_OWN_HEADER), C("x_y", HEAD_OWN_HEADER), C("%41", HEAD_OWN_HEADER),
        C("-x", 0), C("localhost:8080", 0), C("[::1]:80", 0), C("x.", 0), C("x:", 0), C("x\tz", 0),
    };
    int h = find_header(d, "Host");
    switch (pick(r, 6)) {
    case 0:
        if (h >= 0)
            d->line[h] = d->line[--d->nlines];
        note(d, "no Host", NULL);
        break;
    case 1:
        add_header(d, "Host: 127.0.0.1");
        note(d, "a second Host", NULL);
        break;
    case 2:
        add_header(d, "host: y");
        note(d, "a second host", NULL);
        break;
    case 3:
        add_header(d, "Host:");
        note(d, "a second, empty Host", NULL);
        break;
    default: {
        const struct choice *c = PICK(r, v);
        if (h < 0)
            return;
        struct text *t = &d->line[h].text;
        t->n = 5;   /* "Host:" in the case it has */
        if (insert(t, 5, " ", 1) && insert(t, 6, c->s, choice_len(c)))
            note(d, "Host", c);
        break;
    }
    }
}

static void m_header_line(struct draft *d, uint64_t *r)
{
    static const struct choice line[] = {
        C("X A: 1", HEAD_OWN_HEADER), C("X(A): 1", HEAD_OWN_HEADER), C("X/A: 1", HEAD_OWN_HEADER),
        C("X@A: 1", HEAD_OWN_HEADER), C("X\x80: 1", HEAD_OWN_HEADER), C("X{A}: 1", HEAD_OWN_HEADER),
        C("X\"A: 1", HEAD_OWN_HEADER), C("X-A : 1", HEAD_OWN_HEADER), C("X-A\t: 1", HEAD_OWN_HEADER),
        C("NoColon", HEAD_OWN_HEADER), C(": v", 0), C(":", 0), C("\0", 0), C("\0X: 1", 0),
        C(" X-Fold: 1", 0), C("\tcontinued", 0), C(" continued", 0), C("X-A: a\x01" "b", HEAD_OWN_HEADER),
        C("X-A: a\x7f" "b", HEAD_OWN_HEADER), C("X-A: a\0b", 0), C("X-A: a\rb", 0), C("X-A:\x80\xff", 0),
        C("X-A: a\tb", 0), C("X-A:    ", 0), C("X_A: 1", 0), C("X-A: \0", 0),
    };
    const struct choice *c = PICK(r, line);
    /* At a random place among the header lines (first, folded onto the
     * request line, too). */
    int at = (int)pick(r, (uint32_t)d->nlines + 1);
    if (d->nlines == LINES_MAX)
        return;
    memmove(&d->line[at + 1], &d->line[at], sizeof d->line[0] * (size_t)(d->nlines - at));
    set(&d->line[at].text, c->s, choice_len(c));
    d->line[at].eol = NULL;
    d->nlines++;
    note(d, "a header line", c);
}

static void m_framing(struct draft *d, uint64_t *r)
{
    /* Content-Length and Transfer-Encoding lines, and the body after
     * the head. Any body on a GET is the server's 413. */
    static const struct {
        const char *l1, *l2, *body;
        unsigned mark;
    } f[] = {
        { "Content-Length: 5", NULL, "hello", HEAD_OWN_BODY },
        { "Content-Length: 5", NULL, "", HEAD_OWN_BODY },
        { "Content-Length: 05", NULL, "hello", HEAD_OWN_BODY },
        { "Content-Length:  5 ", NULL, "hello", HEAD_OWN_BODY },
        { "Content-Length: -1", NULL, "", 0 },
        { "Content-Length: +5", NULL, "hello", 0 },
        { "Content-Length: 5, 5", NULL, "hello", 0 },
        { "Content-Length: 0, 0", NULL, "", 0 },
        { "Content-Length: 1x", NULL, "x", 0 },
        { "Content-Length:", NULL, "", 0 },
        { "Content-Length: 99999999999999999999", NULL, "", 0 },
        { "Content-Length: 0x5", NULL, "hello", 0 },
        { "Content-Length: 0", "Content-Length: 0", "", 0 },
        { "Content-Length: 0", "Content-Length: 5", "hello", 0 },
        { "Content-Length: 5", "content-length: 5", "hello", 0 },
        { "Content-Length: 5", "Transfer-Encoding: chunked", "0\r\n\r\n", 0 },
        { "Transfer-Encoding: chunked", "Content-Length: 0", "0\r\n\r\n", 0 },
        { "Transfer-Encoding: chunked", NULL, "0\r\n\r\n", HEAD_OWN_BODY },
        { "Transfer-Encoding: chunked", NULL, "5\r\nhello\r\n0\r\n\r\n", HEAD_OWN_BODY },
        { "Transfer-Encoding: Chunked", NULL, "0\r\n\r\n", HEAD_OWN_BODY },
        { "Transfer-Encoding: chunked", NULL, "zz\r\n\r\n", HEAD_OWN_BODY },
        { "Transfer-Encoding: chunked", NULL, "5;a=b\r\nhello\r\n0\r\n\r\n", HEAD_OWN_BODY },
        { "Transfer-Encoding: chunked", NULL, "-1\r\n\r\n", HEAD_OWN_BODY },
        { "Transfer-Encoding: chunked ", NULL, "0\r\n\r\n", HEAD_OWN_BODY },
        { "Transfer-Encoding: gzip, chunked", NULL, "0\r\n\r\n", HEAD_OWN_BODY },
        { "Transfer-Encoding: gzip", NULL, "", 0 },
        { "Transfer-Encoding: chunked, gzip", NULL, "0\r\n\r\n", 0 },
        { "Transfer-Encoding: identity", NULL, "", 0 },
        { "Transfer-Encoding: \x0b" "chunked", NULL, "0\r\n\r\n", 0 },
        { "Transfer-Encoding: chunked", "Transfer-Encoding: chunked", "0\r\n\r\n", HEAD_OWN_BODY },
        { "Transfer-Encoding: xchunked", NULL, "0\r\n\r\n", 0 },
    };
    unsigned i = pick(r, sizeof f / sizeof f[0]);
    add_header(d, f[i].l1);
    if (f[i].l2)
        add_header(d, f[i].l2);
    set(&d->body, f[i].body, strlen(f[i].body));
    struct choice c = { f[i].l1, 0, f[i].mark };
    note(d, f[i].l2 ? "framing, two lines" : "framing", &c);
}

static void m_line_end(struct draft *d, uint64_t *r)
{
    static const struct choice e[] = { C("\r", 0), C("\r\r\n", 0), C("\n\r", 0), C("\r\n\r", 0) };
    const struct choice *c = PICK(r, e);
    if (d->nlines)
        d->line[pick(r, (uint32_t)d->nlines)].eol = c->s;
    note(d, "a line end", c);
}

static void m_unfinished(struct draft *d, uint64_t *r)
{
    (void)r;
    d->unfinished = true;
    note(d, "no empty line", NULL);
}

static void (*const mutations[])(struct draft *, uint64_t *) = {
    m_version, m_spaces, m_method, m_encoded_slash, m_dot_segment, m_path_escape, m_raw_byte,
    m_absolute, m_target_form, m_query, m_host, m_host, m_header_line, m_framing, m_line_end,
    m_unfinished,
};
#define NMUTATIONS (sizeof mutations / sizeof mutations[0])

/* ---- writing it out ---- */

static void emit(struct head *h, const char *s, size_t n)
{
    if (h->len + n <= HEAD_MAX) {
        memcpy(h->bytes + h->len, s, n);
        h->len += n;
    }
}

static void emits(struct head *h, const char *s) { emit(h, s, strlen(s)); }

/* Where libmicrohttpd 0.9.75's rewrite of line ends into NULs leaves the
 * same bytes as a well-formed head (HEAD_LIMIT_LINE_END): a line of only
 * ':' (after another) or of only a NUL, which it takes for the head's
 * end, next to a bare LF; a NUL right before a bare LF, which ends the
 * value as a CR would. */
static bool line_end_limit(const struct draft *d, int i)
{
    const struct text *t = &d->line[i].text;
    const char *mine = d->line[i].eol ? d->line[i].eol : d->eol;
    const char *before = i && d->line[i - 1].eol ? d->line[i - 1].eol : d->eol;
    bool alone = t->n == 1 && (t->b[0] == 0 || (t->b[0] == ':' && i > 0));
    bool own_line = before[strlen(before) - 1] == '\n';
    if (alone && own_line && (mine[0] == '\n' || !strcmp(before, "\n")))
        return true;
    return t->n && t->b[t->n - 1] == 0 && mine[0] == '\n';
}

static void write_out(struct draft *d, struct head *h)
{
    emits(h, d->lead);
    emit(h, d->method.b, d->method.n);
    emits(h, d->sp1);
    emit(h, d->target.b, d->target.n);
    if (d->has_version) {
        emits(h, d->sp2);
        emit(h, d->version.b, d->version.n);
    }
    emits(h, d->eol);
    for (int i = 0; i < d->nlines; i++) {
        emit(h, d->line[i].text.b, d->line[i].text.n);
        emits(h, d->line[i].eol ? d->line[i].eol : d->eol);
        if (line_end_limit(d, i))
            h->marks |= HEAD_LIMIT_LINE_END;
    }
    if (!d->unfinished)
        emits(h, d->eol);
    emit(h, d->body.b, d->body.n);
}

void headgen(uint64_t *rng, const char *const *paths, int npaths, struct head *out)
{
    static struct draft d;   /* 20 KB: not on the stack */
    memset(&d, 0, sizeof d);
    memset(out, 0, sizeof *out);
    d.out = out;
    d.lead = "";
    d.sp1 = d.sp2 = " ";
    d.eol = "\r\n";
    d.has_version = true;
    set(&d.method, "GET", 3);
    const char *path = paths[pick(rng, (uint32_t)npaths)];
    set(&d.target, path, strlen(path));
    set(&d.version, "HTTP/1.1", 8);
    add_header(&d, "Host: 127.0.0.1");
    if (pick(rng, 2))
        add_header(&d, "User-Agent: headgen");
    for (uint32_t n = pick(rng, 3); n > 0; n--)
        vary(&d, rng);
    out->clean = pick(rng, 100) < 15;
    if (!out->clean) {   /* one mutation, or two of different kinds (each says what it breaks) */
        void (*first)(struct draft *, uint64_t *) = mutations[pick(rng, NMUTATIONS)], (*second)(
            struct draft *, uint64_t *) = pick(rng, 10) < 3 ? mutations[pick(rng, NMUTATIONS)] : NULL;
        first(&d, rng);
        if (second && second != first)
            second(&d, rng);
    }
    write_out(&d, out);
}
