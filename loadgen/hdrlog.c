/* HdrHistogram's interval log (format 1.3), as its own tools and the
 * reference implementations read it: '#' comments, a legend, then one line
 * per interval, "START,LENGTH,MAX,HISTF...", where the last field is the
 * interval's histogram in the V2 encoding, zlib-deflated, in base64.
 *
 * Values are nanoseconds; the MAX column is in milliseconds (Java's
 * default unit ratio for nanosecond logs). loadgen's histogram (lib/hist)
 * keeps 64 linear buckets per power of two; HdrHistogram with 2
 * significant digits and a unit of 1 ns keeps 128, so each of ours is
 * exactly two of its, and our counts go in the lower one. Its reported
 * value for that one (the highest equivalent value) is then our bucket's
 * middle: readers of the log see the percentiles loadgen reports.
 *
 * The decoder takes any V2 histogram (other digits and units too), and is
 * fuzzed (tests/fuzz/fuzz_hdrlog.c) as it reads files. */
#include <apr_base64.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "cli.h"
#include "loadgen.h"

#define V2_COOKIE 0x1c849313u             /* V2EncodingCookieBase | 0x10 */
#define V2_COMPRESSED_COOKIE 0x1c849314u  /* V2CompressedEncodingCookieBase | 0x10 */
#define V2_HEADER 40
#define INFLATE_MAX (64u << 20)           /* a decoded histogram this big is garbage */

/* ---- a growable byte buffer ---- */
struct buf {
    unsigned char *p;
    size_t n, cap;
    bool oom;
};

static void put(struct buf *b, unsigned char c)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        unsigned char *p = b->oom ? NULL : realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    b->p[b->n++] = c;
}

static void put32(struct buf *b, uint32_t v)
{
    for (int s = 24; s >= 0; s -= 8)
        put(b, (unsigned char)(v >> s));
}

static void put64(struct buf *b, uint64_t v)
{
    put32(b, (uint32_t)(v >> 32));
    put32(b, (uint32_t)v);
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const unsigned char *p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }

/* ZigZag LEB128-64b9B, HdrHistogram's word: 7 bits a byte for 8 bytes,
 * then a ninth holding 8 bits. */
static void put_zigzag(struct buf *b, int64_t v)
{
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    for (int i = 0; i < 8; i++) {
        if (!(u >> 7)) {
            put(b, (unsigned char)u);
            return;
        }
        put(b, (unsigned char)((u & 0x7f) | 0x80));
        u >>= 7;
    }
    put(b, (unsigned char)u);
}

static int get_zigzag(const unsigned char **p, const unsigned char *end, int64_t *out)
{
    uint64_t u = 0;
    int i = 0;
    for (;; i++) {
        if (*p == end)
            return -1;
        unsigned b = *(*p)++;
        if (i == 8) {
            u |= (uint64_t)b << 56;
            break;
        }
        u |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80))
            break;
    }
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 0;
}

/* HdrHistogram's counts index of v, for 2 digits and unit 1. */
static uint64_t d2_index(uint64_t v)
{
    unsigned bucket = v < 256 ? 0 : (unsigned)(63 - __builtin_clzll(v)) - 7;
    return (uint64_t)bucket * 128 + (v >> bucket);
}

char *hdr_encode(const struct hist *h)
{
    struct buf raw = { 0 }, out = { 0 };
    put32(&raw, V2_COOKIE);
    put32(&raw, 0);                         /* payload length, set below */
    put32(&raw, 0);                         /* normalizing index offset */
    put32(&raw, 2);                         /* significant digits */
    put64(&raw, 1);                         /* lowest discernible value */
    put64(&raw, HIST_MAX_NS);               /* highest trackable value */
    put64(&raw, 0x3ff0000000000000ull);     /* double 1.0: integer to double ratio */
    uint64_t next = 0;                      /* the index the reader is at */
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        if (!h->bucket[i])
            continue;
        uint64_t idx = d2_index(hist_bucket_low(i));
        if (idx > next + 1)
            put_zigzag(&raw, -(int64_t)(idx - next));
        else if (idx == next + 1)
            put_zigzag(&raw, 0);
        put_zigzag(&raw, (int64_t)h->bucket[i]);
        next = idx + 1;
    }
    char *b64 = NULL;
    if (!raw.oom && raw.n >= V2_HEADER) {
        uint32_t payload = (uint32_t)(raw.n - V2_HEADER);
        for (int k = 0; k < 4; k++)
            raw.p[4 + k] = (unsigned char)(payload >> (24 - 8 * k));
        uLongf zlen = compressBound((uLong)raw.n);
        out.cap = zlen + 8;
        out.p = malloc(out.cap);
        if (out.p && compress2(out.p + 8, &zlen, raw.p, (uLong)raw.n, Z_DEFAULT_COMPRESSION) == Z_OK) {
            out.n = 0;
            put32(&out, V2_COMPRESSED_COOKIE);
            put32(&out, (uint32_t)zlen);
            out.n = 8 + zlen;
            b64 = malloc((size_t)apr_base64_encode_len((int)out.n));
            if (b64)
                apr_base64_encode_binary(b64, out.p, (int)out.n);
        }
    }
    free(raw.p);
    free(out.p);
    return b64;
}

/* The layout a V2 header describes, as HdrHistogram derives it. */
struct layout {
    unsigned unit_mag, half_mag;
    uint64_t half_count, length;
};

static int layout_of(int digits, uint64_t lowest, uint64_t highest, struct layout *l)
{
    if (digits < 0 || digits > 5 || lowest < 1 || highest < 2 * lowest || highest > (1ull << 62))
        return -1;
    uint64_t largest = 2;
    for (int i = 0; i < digits; i++)
        largest *= 10;
    unsigned mag = 0;
    while ((1ull << mag) < largest)
        mag++;
    l->unit_mag = (unsigned)(63 - __builtin_clzll(lowest));
    l->half_mag = (mag > 1 ? mag : 1) - 1;
    l->half_count = 1ull << l->half_mag;
    if (l->unit_mag + l->half_mag + 1 > 62)
        return -1;
    uint64_t smallest_untrackable = (l->half_count * 2) << l->unit_mag, buckets = 1;
    while (smallest_untrackable <= highest) {
        if (smallest_untrackable > UINT64_MAX / 2) {
            buckets++;
            break;
        }
        smallest_untrackable <<= 1;
        buckets++;
    }
    l->length = (buckets + 1) * l->half_count;
    return 0;
}

static uint64_t value_from_index(const struct layout *l, uint64_t index)
{
    int64_t bucket = (int64_t)(index >> l->half_mag) - 1;
    uint64_t sub = (index & (l->half_count - 1)) + l->half_count;
    if (bucket < 0) {
        sub -= l->half_count;
        bucket = 0;
    }
    if ((unsigned)bucket + l->unit_mag >= 63)
        return UINT64_MAX;
    return sub << ((unsigned)bucket + l->unit_mag);
}

static int fail(struct zb_err *err, const char *msg)
{
    return zb_fail(err, ZB_ERR_INPUT, "%s", msg);
}

/* zlib data of n bytes into a fresh buffer (at most INFLATE_MAX). */
static unsigned char *inflate_all(const unsigned char *in, size_t n, size_t *outlen)
{
    z_stream z = { 0 };
    if (inflateInit(&z) != Z_OK)
        return NULL;
    size_t cap = 4096, len = 0;
    unsigned char *out = malloc(cap);
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)n;
    int rc = Z_OK;
    while (out && rc == Z_OK) {
        if (len == cap) {
            unsigned char *p = cap < INFLATE_MAX ? realloc(out, cap * 2) : NULL;
            if (!p) {
                free(out);
                out = NULL;
                break;
            }
            out = p;
            cap *= 2;
        }
        z.next_out = out + len;
        z.avail_out = (uInt)(cap - len);
        rc = inflate(&z, Z_NO_FLUSH);
        len = cap - z.avail_out;
        if (rc == Z_BUF_ERROR && z.avail_in == 0)
            break;                 /* input ended before the stream did */
    }
    inflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    *outlen = len;
    return out;
}

int hdr_decode(const char *b64, size_t n, struct hist *h, struct zb_err *err)
{
    /* APR's decoder stops quietly at a stray character: check them first. */
    if (n < 12 || n % 4)
        return fail(err, "not a base64 histogram (length)");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)b64[i];
        bool pad = c == '=' && i >= n - 2 && (i == n - 1 || b64[n - 1] == '=');
        if (!isalnum(c) && c != '+' && c != '/' && !pad)
            return fail(err, "not a base64 histogram (character)");
    }
    char *text = strndup(b64, n);
    unsigned char *bin = text ? malloc((size_t)apr_base64_decode_len(text)) : NULL;
    if (!bin) {
        free(text);
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    }
    size_t len = (size_t)apr_base64_decode_binary(bin, text);
    free(text);
    int rc = -1;
    unsigned char *raw = NULL;
    size_t rawlen = 0;
    if (len < 8 || get32(bin) != V2_COMPRESSED_COOKIE) {
        fail(err, "not a V2 compressed histogram (cookie)");
        goto out;
    }
    uint32_t zlen = get32(bin + 4);
    if (zlen > len - 8) {
        fail(err, "histogram shorter than its length field");
        goto out;
    }
    raw = inflate_all(bin + 8, zlen, &rawlen);
    if (!raw) {
        fail(err, "histogram does not inflate");
        goto out;
    }
    if (rawlen < V2_HEADER || get32(raw) != V2_COOKIE) {
        fail(err, "not a V2 histogram (inner cookie)");
        goto out;
    }
    uint32_t payload = get32(raw + 4);
    struct layout l;
    if (payload > rawlen - V2_HEADER ||
        layout_of((int)get32(raw + 12), get64(raw + 16), get64(raw + 24), &l) < 0) {
        fail(err, "histogram header out of range");
        goto out;
    }
    const unsigned char *p = raw + V2_HEADER, *end = p + payload;
    uint64_t idx = 0;
    while (p < end) {
        int64_t v;
        if (get_zigzag(&p, end, &v) < 0) {
            fail(err, "histogram counts cut short");
            goto out;
        }
        if (v < 0) {                       /* a run of -v empty buckets */
            if ((uint64_t)-v > l.length - idx) {
                fail(err, "histogram counts beyond its range");
                goto out;
            }
            idx += (uint64_t)-v;
            continue;
        }
        if (idx >= l.length) {
            fail(err, "histogram counts beyond its range");
            goto out;
        }
        if (v > 0) {
            uint64_t value = value_from_index(&l, idx);
            if (value == UINT64_MAX || (uint64_t)v > (1ull << 62) - h->count) {
                fail(err, "histogram value or count out of range");
                goto out;
            }
            hist_record_n(h, value, (uint64_t)v);
        }
        idx++;
    }
    rc = 0;
out:
    free(bin);
    free(raw);
    return rc;
}

void hdrlog_header(FILE *f, double start_epoch_s, double interval_s, const char *cmdline)
{
    time_t t = (time_t)start_epoch_s;
    struct tm tm;
    char when[64];
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%a %b %d %H:%M:%S UTC %Y", &tm);
    fprintf(f, "#[Histogram log format version 1.3]\n");
    fprintf(f, "#[StartTime: %.3f (seconds since epoch), %s]\n", start_epoch_s, when);
    fprintf(f, "#[BaseTime: %.3f (seconds since epoch)]\n", start_epoch_s);
    fprintf(f, "#[loadgen %s: values in ns, Interval_Max in ms]\n", zb_version);
    fprintf(f, "#[loadgen interval: %.3f s]\n", interval_s);
    fprintf(f, "#[loadgen command: %s]\n", cmdline);
    fprintf(f, "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\","
               "\"Interval_Compressed_Histogram\"\n");
}

void hdrlog_line(FILE *f, const char *tag, double t, double len, const struct hist *h)
{
    char *b64 = hdr_encode(h);
    if (!b64)
        return;
    fprintf(f, "%s%s%s%.3f,%.3f,%.3f,%s\n", tag ? "Tag=" : "", tag ? tag : "", tag ? "," : "", t,
            len, (double)hist_max(h) / 1e6, b64);
    free(b64);
}

/* ---- reading a log back ---- */

static struct hist *tag_hist(struct stats *st, const char *tag, size_t n)
{
    static const struct { const char *name; size_t off; } tags[] = {
        { "connect", offsetof(struct stats, connect) },
        { "processing", offsetof(struct stats, processing) },
        { "waiting", offsetof(struct stats, waiting) },
        { "total", offsetof(struct stats, total) },
    };
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
        if (strlen(tags[i].name) == n && !memcmp(tags[i].name, tag, n))
            return (struct hist *)((char *)st + tags[i].off);
    return NULL;
}

/* Grows the interval array to hold index k; doubling, so a long log
 * costs no more than twice its intervals. */
static int reserve(struct agent_log *a, size_t k)
{
    if (k < a->niv)
        return 0;
    if (k >= 4000000)
        return -1;             /* 46 days of 1 s intervals: garbage */
    if (k >= a->cap) {
        size_t cap = a->cap ? a->cap : 64;
        while (cap <= k)
            cap *= 2;
        struct agent_interval *p = realloc(a->iv, cap * sizeof *p);
        if (!p)
            return -1;
        a->iv = p;
        a->cap = cap;
    }
    memset(a->iv + a->niv, 0, (k + 1 - a->niv) * sizeof *a->iv);
    a->niv = k + 1;
    return 0;
}

static int interval_index(const struct agent_log *a, double t, size_t *k)
{
    if (!(t >= 0) || !(a->interval_s > 0) || t / a->interval_s > 1e7)
        return -1;
    *k = (size_t)llround(t / a->interval_s);
    return 0;
}

static int read_count(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-')
        return -1;
    *out = n;
    return 0;
}

static int read_int(const char *v, int *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || *end || n < 0 || n > 100000000)
        return -1;
    *out = (int)n;
    return 0;
}

static int read_real(const char *v, double *out)
{
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || !isfinite(d) || d < 0)
        return -1;
    *out = d;
    return 0;
}

/* Cut to the field's size, as a longer value cannot be one loadgen wrote. */
static int read_str(const char *v, char *out, size_t len)
{
    size_t n = strnlen(v, len - 1);
    memcpy(out, v, n);
    out[n] = 0;
    return 0;
}

/* count:sum:min:max, the exact figures a histogram's buckets only
 * approximate; the buckets come from the tagged lines. */
static int read_hist(const char *v, struct hist *h)
{
    unsigned long long c, s, mn, mx;
    char tail;
    if (sscanf(v, "%llu:%llu:%llu:%llu%c", &c, &s, &mn, &mx, &tail) != 4)
        return -1;
    h->sum = s;
    if (c) {
        h->min = mn;
        h->max = mx;
    }
    return 0;
}

/* One key=value pair of the summary (SUMMARY_FIELDS), the value unquoted. */
static int summary_field(struct agent_log *a, const char *key, size_t kn, const char *val,
                         size_t vn)
{
    char v[1024];
    if (vn >= sizeof v)
        return -1;
    memcpy(v, val, vn);
    v[vn] = 0;
#define IS_KEY(name) (kn == strlen(name) && !memcmp(key, name, kn))
#define READ_COUNT(name, value, field) if (IS_KEY(name)) return read_count(v, &(field));
#define READ_INT(name, value, field) if (IS_KEY(name)) return read_int(v, &(field));
#define READ_FLAG(name, value, field) if (IS_KEY(name)) return (field) = !strcmp(v, "1"), 0;
#define READ_REAL(name, format, value, field) if (IS_KEY(name)) return read_real(v, &(field));
#define READ_STR(name, value, field) if (IS_KEY(name)) return read_str(v, field, sizeof field);
#define READ_HIST(name, value, field) if (IS_KEY(name)) return read_hist(v, &(field));
    SUMMARY_FIELDS(READ_COUNT, READ_INT, READ_FLAG, READ_REAL, READ_STR, READ_HIST)
#undef READ_COUNT
#undef READ_INT
#undef READ_FLAG
#undef READ_REAL
#undef READ_STR
#undef READ_HIST
#undef IS_KEY
    return 0;                      /* a key from a newer loadgen: skipped */
}

static int parse_summary(struct agent_log *a, const char *p, const char *end)
{
    while (p < end) {
        while (p < end && *p == ' ')
            p++;
        if (p == end)
            break;
        const char *key = p;
        while (p < end && *p != '=' && *p != ' ')
            p++;
        if (p == end || *p != '=')
            return -1;
        size_t kn = (size_t)(p - key);
        p++;
        char val[1024];
        size_t vn = 0;
        if (p < end && *p == '"') {
            for (p++;; p++) {
                if (p == end || vn + 1 >= sizeof val)
                    return -1;
                if (*p == '"')
                    break;
                if (*p == '\\' && p + 1 < end)
                    p++;
                val[vn++] = *p;
            }
            p++;
        } else {
            while (p < end && *p != ' ' && vn + 1 < sizeof val)
                val[vn++] = *p++;
        }
        if (summary_field(a, key, kn, val, vn) < 0)
            return -1;
    }
    a->have_summary = true;
    return 0;
}

/* "T,LEN,MAX,HISTF..." after an optional "Tag=NAME,". */
static int parse_interval(struct agent_log *a, const char *p, const char *end, struct zb_err *err)
{
    const char *tag = NULL;
    size_t tagn = 0;
    if (end - p > 4 && !memcmp(p, "Tag=", 4)) {
        tag = p + 4;
        const char *c = memchr(tag, ',', (size_t)(end - tag));
        if (!c)
            return fail(err, "a Tag= line without fields");
        tagn = (size_t)(c - tag);
        p = c + 1;
    }
    double f[3];
    for (int i = 0; i < 3; i++) {
        char num[64];
        const char *c = memchr(p, ',', (size_t)(end - p));
        size_t len = c ? (size_t)(c - p) : 0;
        if (!c || len == 0 || len >= sizeof num)
            return fail(err, "an interval line needs START,LENGTH,MAX,HISTOGRAM");
        memcpy(num, p, len);
        num[len] = 0;
        char *e;
        f[i] = strtod(num, &e);
        if (*e || !isfinite(f[i]) || f[i] < 0)
            return fail(err, "an interval line has a field that is not a number >= 0");
        p = c + 1;
    }
    struct hist tmp;
    hist_init(&tmp);
    if (hdr_decode(p, (size_t)(end - p), &tmp, err) < 0)
        return -1;
    if (tag) {
        struct hist *h = tag_hist(&a->st, tag, tagn);
        if (h)
            hist_merge(h, &tmp);
        return 0;                  /* other tags are someone else's */
    }
    if (!(a->interval_s > 0))
        a->interval_s = f[1] > 0 ? f[1] : 1;
    size_t k;
    if (interval_index(a, f[0], &k) < 0 || reserve(a, k) < 0)
        return fail(err, "interval start out of range");
    if (a->iv[k].hist)
        return fail(err, "a second histogram for the same interval");
    hist_merge(&a->st.lat, &tmp);
    a->iv[k].len = f[1];
    a->iv[k].completed = hist_count(&tmp);
    a->iv[k].hist = p;         /* decoded again by merge, interval by interval */
    a->iv[k].hist_len = (size_t)(end - p);
    return 0;
}

static bool starts(const char *p, const char *end, const char *prefix)
{
    size_t n = strlen(prefix);
    return (size_t)(end - p) >= n && !memcmp(p, prefix, n);
}

int hdrlog_parse(const char *text, size_t n, const char *name, struct agent_log *a,
                 struct zb_err *err)
{
    memset(a, 0, sizeof *a);
    stats_init(&a->st);
    const char *p = text, *end = text + n;
    struct zb_err why;
    for (int line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        const char *le = e > p && e[-1] == '\r' ? e - 1 : e;
        int rc = 0;
        /* The short comments are read from a NUL-ended copy: the text
         * is not a C string, and sscanf and strtod read to a NUL. */
        char c[256];
        snprintf(c, sizeof c, "%.*s", (int)(le - p < 255 ? le - p : 255), p);
        if (starts(p, le, "#[StartTime: ")) {
            a->start_epoch_s = strtod(c + 13, NULL);
            if (!isfinite(a->start_epoch_s) || a->start_epoch_s < 0) {
                rc = fail(&why, "a StartTime that is not a time");
            }
        } else if (starts(p, le, "#[loadgen interval: ")) {
            a->interval_s = strtod(c + 20, NULL);
            if (!(a->interval_s >= 0.001 && a->interval_s <= 86400)) {
                rc = fail(&why, "an interval that is not 0.001..86400 s");
            }
        } else if (starts(p, le, "#[loadgen failed: ")) {
            double t, len;
            unsigned long long nf;
            size_t k;
            char close;
            if (sscanf(c + 18, "%lf,%lf,%llu%c", &t, &len, &nf, &close) != 4 || close != ']' ||
                !isfinite(len) || len < 0 || interval_index(a, t, &k) < 0 || reserve(a, k) < 0) {
                rc = fail(&why, "a 'loadgen failed' line that is not T,LEN,N");
            } else {
                a->iv[k].failed += nf;
                if (!a->iv[k].len)
                    a->iv[k].len = len;
            }
        } else if (starts(p, le, "#[loadgen summary: ")) {
            if (le == p || le[-1] != ']' || parse_summary(a, p + 19, le - 1) < 0) {
                rc = fail(&why, "a 'loadgen summary' line that does not parse");
            }
        } else if (p == le || *p == '#' || *p == '"') {
            /* comments, the legend, blank lines */
        } else {
            rc = parse_interval(a, p, le, &why);
        }
        if (rc < 0) {
            zb_fail(err, ZB_ERR_INPUT, "%s:%d: %s", name, line, why.msg);
            agent_log_free(a);
            return -1;
        }
        p = nl ? nl + 1 : end;
    }
    if (!a->have_summary) {
        zb_fail(err, ZB_ERR_INPUT,
                "%s: no '#[loadgen summary: ...]' line: not a whole loadgen --hdr-log "
                "(did the run finish?)", name);
        agent_log_free(a);
        return -1;
    }
    return 0;
}

void agent_log_free(struct agent_log *a)
{
    free(a->iv);
    a->iv = NULL;
    a->niv = a->cap = 0;
}
