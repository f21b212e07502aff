/* The HTTP side: libmicrohttpd handler, routing, JSON.
 *
 * Every callback gets its loop as cls. The fast path (GET /zip/B/CODE on a
 * pooled connection) builds its JSON into the loop's buffer, which only
 * ever grows, hands it to MHD with MHD_RESPMEM_MUST_COPY (MHD sends after
 * we return, possibly after the loop served another connection, so the
 * buffer cannot be lent), and counts in the loop's own counters. No
 * logging per request, no allocation of ours per request. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "server.h"

#define INC(c) atomic_fetch_add_explicit(&(c), 1, RELAXED)

/* ---- JSON into the loop's buffer ---- */

static bool jb_reserve(struct jbuf *b, size_t more)
{
    if (b->n + more <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 16384;
    while (cap < b->n + more)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

static inline void jb_put(struct jbuf *b, const char *s, size_t len)
{
    if (jb_reserve(b, len)) {
        memcpy(b->p + b->n, s, len);
        b->n += len;
    }
}

#define JB_LIT(b, lit) jb_put((b), (lit), sizeof(lit) - 1)

/* A JSON string: quotes, backslash and control characters escaped; the
 * bytes are UTF-8 as stored (the loader only stores UTF-8). */
static void jb_str(struct jbuf *b, const char *s, size_t len)
{
    if (!jb_reserve(b, len * 6 + 2))
        return;
    char *o = b->p + b->n;
    *o++ = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') {
            *o++ = (char)ch;
            continue;
        }
        *o++ = '\\';
        switch (ch) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        default:
            o += sprintf(o, "u%04x", ch);
        }
    }
    *o++ = '"';
    b->n = (size_t)(o - b->p);
}

static void jb_cstr(struct jbuf *b, const char *s) { jb_str(b, s, strlen(s)); }

__attribute__((format(printf, 2, 3))) static void jb_printf(struct jbuf *b, const char *fmt, ...)
{
    va_list ap;
    for (int tries = 0; tries < 2; tries++) {
        size_t room = b->cap - b->n;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < room) {
            b->n += (size_t)n;
            return;
        }
        if (!jb_reserve(b, (size_t)n + 1))
            return;
    }
}

/* ---- responses ---- */

static enum MHD_Result send_body(struct loop *l, struct MHD_Connection *c, unsigned status,
                                 const char *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json; charset=utf-8");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (atomic_load_explicit(&l->srv->stopping, RELAXED))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static void count_status(struct loop *l, unsigned status)
{
    BUMP(l->requests);
    if (status < 400)
        BUMP(l->ok);
    else if (status < 500)
        BUMP(l->e4xx);
    else
        BUMP(l->e5xx);
}

static enum MHD_Result send_buf(struct loop *l, struct MHD_Connection *c, unsigned status)
{
    struct jbuf *b = &l->jb;
    count_status(l, status);
    if (b->oom) {
        b->oom = false;
        static const char oom[] = "{\"error\":\"out of memory\"}";
        count_status(l, 500);
        return send_body(l, c, 500, oom, sizeof oom - 1);
    }
    return send_body(l, c, status, b->p, b->n);
}

/* {"error":"msg"} plus the backend and code when known. */
static enum MHD_Result send_error(struct loop *l, struct MHD_Connection *c, unsigned status,
                                  struct srv_backend *sb, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static enum MHD_Result send_error(struct loop *l, struct MHD_Connection *c, unsigned status,
                                  struct srv_backend *sb, const char *code, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct jbuf *b = &l->jb;
    b->n = 0;
    JB_LIT(b, "{");
    if (sb) {
        JB_LIT(b, "\"backend\":");
        jb_cstr(b, sb->conf.name);
        JB_LIT(b, ",");
    }
    if (code) {
        JB_LIT(b, "\"code\":");
        jb_cstr(b, code);
        JB_LIT(b, ",");
    }
    JB_LIT(b, "\"error\":");
    jb_cstr(b, msg);
    JB_LIT(b, ",\"status\":");
    jb_printf(b, "%u}", status);
    return send_buf(l, c, status);
}

/* ---- lookups ---- */

/* `"jis_code":` and `,"old_code":` ...: the keys, written once. */
static struct { char s[40]; size_t len; } key_prefix[ZB_NCOLS];

static void init_keys(void)
{
    for (int i = 0; i < ZB_NCOLS; i++)
        key_prefix[i].len = (size_t)snprintf(key_prefix[i].s, sizeof key_prefix[i].s, "%s\"%s\":",
                                             i ? "," : "", zb_columns[i]);
}

static bool is_integer(const char *s, size_t len)
{
    size_t i = (len > 0 && s[0] == '-') ? 1 : 0;
    if (i == len || len > 18)
        return false;
    for (; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

struct rowctx {
    struct jbuf *b;
    long rows;
};

static int put_row(void *arg, int ncols, const char *const *vals, const size_t *lens)
{
    struct rowctx *rc = arg;
    struct jbuf *b = rc->b;
    if (rc->rows++)
        JB_LIT(b, ",{");
    else
        JB_LIT(b, "{");
    int n = ncols < ZB_NCOLS ? ncols : ZB_NCOLS;
    for (int i = 0; i < n; i++) {
        jb_put(b, key_prefix[i].s, key_prefix[i].len);
        if (!vals[i])
            JB_LIT(b, "null");
        else if (zb_column_is_flag(i) && is_integer(vals[i], lens[i]))
            jb_put(b, vals[i], lens[i]);
        else
            jb_str(b, vals[i], lens[i]);
    }
    JB_LIT(b, "}");
    return 0;
}

static bool is_code(const char *s)
{
    for (int i = 0; i < 7; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return s[7] == 0;
}

static struct srv_backend *find_backend(struct server *srv, const char *name, size_t len)
{
    for (int i = 0; i < srv->nbackends; i++) {
        const char *n = srv->backend[i]->conf.name;
        if (strlen(n) == len && !memcmp(n, name, len))
            return srv->backend[i];
    }
    return NULL;
}

static int parse_bool_arg(const char *v, bool *out)
{
    if (!strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcasecmp(v, "on"))
        *out = true;
    else if (!strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "false") ||
             !strcasecmp(v, "off"))
        *out = false;
    else
        return -1;
    return 0;
}

static bool has_key(const uint32_t *keys, size_t n, uint32_t k)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && keys[lo] == k;
}

static void backend_status(struct srv_backend *sb, unsigned status, uint64_t t0)
{
    INC(sb->requests);
    if (status < 400)
        INC(sb->ok);
    else if (status < 500) {
        INC(sb->e4xx);
        if (status == 404)
            INC(sb->not_found);
    } else
        INC(sb->e5xx);
    hist_record_atomic(&sb->latency, zb_now_ns() - t0);
}

static enum MHD_Result zip(struct loop *l, struct MHD_Connection *c, struct srv_backend *sb,
                           const char *what, uint64_t t0)
{
    char code[8];
    unsigned status;
    enum MHD_Result ret;
    bool persistent = sb->conf.persistent;
    const char *p = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "persistent");
    if (p && parse_bool_arg(p, &persistent) < 0) {
        ret = send_error(l, c, status = 400, sb, NULL, "persistent must be 0 or 1");
        goto done;
    }
    if (!strcmp(what, "random")) {
        double miss = 0;
        const char *m = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "miss");
        if (m) {
            char *end;
            errno = 0;
            miss = strtod(m, &end);
            if (errno || end == m || *end || !(miss >= 0 && miss <= 1)) {
                ret = send_error(l, c, status = 400, sb, NULL, "miss must be a number in 0..1");
                goto done;
            }
        }
        struct zb_err err = { 0 };
        size_t n;
        const uint32_t *keys = pool_keys(sb, &n, &err);
        if (!keys) {
            ret = send_error(l, c, status = 503, sb, NULL, "%s", err.msg);
            goto done;
        }
        uint32_t k = 0;
        if (n > 0 && !(miss > 0 && zb_rand_unit(&l->rng) < miss)) {
            k = keys[zb_rand_below(&l->rng, (uint32_t)n)];
        } else {
            /* A code that is not in the table: random 7-digit numbers are
             * almost all misses (a full list fills ~1.2% of them). */
            for (int tries = 0; tries < 1000; tries++) {
                k = zb_rand_below(&l->rng, 10000000);
                if (!has_key(keys, n, k))
                    break;
            }
        }
        snprintf(code, sizeof code, "%07u", k);
    } else if (is_code(what)) {
        memcpy(code, what, 8);
    } else {
        ret = send_error(l, c, status = 400, sb, NULL,
                         "the code must be exactly 7 digits 0-9 (or 'random')");
        goto done;
    }

    struct jbuf *b = &l->jb;
    b->n = 0;
    JB_LIT(b, "{\"backend\":");
    jb_cstr(b, sb->conf.name);
    JB_LIT(b, ",\"code\":\"");
    jb_put(b, code, 7);
    JB_LIT(b, "\",\"rows\":[");
    struct rowctx rc = { b, 0 };
    struct zb_err err = { 0 };
    int lr = pool_lookup(sb, code, persistent, put_row, &rc, &err);
    if (lr == LOOKUP_UNAVAILABLE)
        ret = send_error(l, c, status = 503, sb, code, "%s", err.msg);
    else if (lr != LOOKUP_OK)
        ret = send_error(l, c, status = 500, sb, code, "%s", err.msg);
    else if (rc.rows == 0)
        ret = send_error(l, c, status = 404, sb, code, "no such code");
    else {
        JB_LIT(b, "]}");
        ret = send_buf(l, c, status = 200);
    }
done:
    backend_status(sb, status, t0);
    return ret;
}

/* ---- /health and /stats ---- */

static enum MHD_Result health(struct loop *l, struct MHD_Connection *c)
{
    struct server *srv = l->srv;
    bool all = true;
    struct jbuf *b = &l->jb;
    /* The checks may take a round trip each: collect first, write after. */
    bool up[ZB_MAX_BACKENDS];
    char reasons[ZB_MAX_BACKENDS][sizeof ((struct zb_err *)0)->msg];
    for (int i = 0; i < srv->nbackends; i++) {
        struct zb_err err = { 0 };
        up[i] = pool_check(srv->backend[i], &err);
        snprintf(reasons[i], sizeof reasons[i], "%s", err.msg);
        all &= up[i];
    }
    b->n = 0;
    jb_printf(b, "{\"status\":\"%s\",\"backends\":[", all ? "ok" : "degraded");
    for (int i = 0; i < srv->nbackends; i++) {
        struct srv_backend *sb = srv->backend[i];
        jb_printf(b, "%s{\"name\":", i ? "," : "");
        jb_cstr(b, sb->conf.name);
        JB_LIT(b, ",\"driver\":");
        jb_cstr(b, sb->conf.driver);
        jb_printf(b, ",\"up\":%s", up[i] ? "true" : "false");
        if (!up[i]) {
            JB_LIT(b, ",\"error\":");
            jb_cstr(b, reasons[i]);
        }
        JB_LIT(b, "}");
    }
    JB_LIT(b, "]}");
    return send_buf(l, c, all ? 200 : 503);
}

#define LD(x) ((unsigned long long)atomic_load_explicit(&(x), RELAXED))

static void put_latency(struct jbuf *b, const struct hist *h)
{
    jb_printf(b, "\"latency_us\":{\"count\":%llu,\"mean\":%.1f,\"p50\":%.1f,\"p90\":%.1f,"
              "\"p99\":%.1f,\"max\":%.1f}",
              (unsigned long long)hist_count(h), hist_mean(h) / 1e3,
              (double)hist_percentile(h, 50) / 1e3, (double)hist_percentile(h, 90) / 1e3,
              (double)hist_percentile(h, 99) / 1e3, (double)hist_max(h) / 1e3);
}

/* A loop thread's CPU time so far, in seconds (0 if it cannot be read). */
static double thread_cpu_s(pthread_t t)
{
    clockid_t id;
    struct timespec ts;
    if (pthread_getcpuclockid(t, &id) || clock_gettime(id, &ts))
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static enum MHD_Result stats(struct loop *l, struct MHD_Connection *c)
{
    struct server *srv = l->srv;
    struct jbuf *b = &l->jb;
    static _Thread_local struct hist all, snap;
    hist_init(&all);
    b->n = 0;
    JB_LIT(b, "{\"backends\":[");
    for (int i = 0; i < srv->nbackends; i++) {
        struct srv_backend *sb = srv->backend[i];
        const struct backend_conf *bc = &sb->conf;
        /* A copy, so the percentiles all come from one snapshot. */
        memcpy(&snap, &sb->latency, sizeof snap);
        hist_merge(&all, &snap);
        long long open = atomic_load_explicit(&sb->open, RELAXED);
        long long in_use = atomic_load_explicit(&sb->in_use, RELAXED);
        size_t nkeys = atomic_load_explicit(&sb->keys, RELAXED)
                           ? atomic_load_explicit(&sb->nkeys, RELAXED) : 0;
        jb_printf(b, "%s{\"name\":", i ? "," : "");
        jb_cstr(b, bc->name);
        JB_LIT(b, ",\"driver\":");
        jb_cstr(b, bc->driver);
        jb_printf(b, ",\"up\":%s,\"persistent\":%s,\"requests\":%llu,\"ok\":%llu,"
                  "\"not_found\":%llu,\"errors_4xx\":%llu,\"errors_5xx\":%llu,",
                  atomic_load(&sb->up) ? "true" : "false", bc->persistent ? "true" : "false",
                  LD(sb->requests), LD(sb->ok), LD(sb->not_found), LD(sb->e4xx), LD(sb->e5xx));
        jb_printf(b, "\"pool\":{\"min\":%d,\"soft_max\":%d,\"hard_max\":%d,\"ttl_s\":%d,"
                  "\"acquire_timeout_ms\":%d,\"size\":%lld,\"in_use\":%lld,\"idle\":%lld,"
                  "\"waits\":%llu,\"timeouts\":%llu},",
                  bc->pool_min, bc->pool_soft_max, bc->pool_hard_max, bc->pool_ttl_s,
                  bc->acquire_timeout_ms, open, in_use, open > in_use ? open - in_use : 0,
                  LD(sb->waits), LD(sb->timeouts));
        jb_printf(b, "\"connects\":%llu,\"connects_per_request\":%llu,\"connect_failures\":%llu,"
                  "\"reconnects\":%llu,\"discarded\":%llu,\"keys\":%zu,",
                  LD(sb->connects), LD(sb->connects_per_request), LD(sb->connect_failures),
                  LD(sb->reconnects), LD(sb->discarded), nkeys);
        put_latency(b, &snap);
        JB_LIT(b, "}");
    }
    unsigned long long requests = 0, ok = 0, e4xx = 0, e5xx = 0;
    for (int i = 0; i < srv->nloops; i++) {
        struct loop *t = &srv->loops[i];
        requests += READ(t->requests);
        ok += READ(t->ok);
        e4xx += READ(t->e4xx);
        e5xx += READ(t->e5xx);
    }
    double up_s = (double)(zb_now_ns() - srv->started_ns) / 1e9;
    jb_printf(b, "],\"server\":{\"uptime_s\":%.1f,\"threads\":%d,\"requests\":%llu,\"ok\":%llu,"
              "\"errors_4xx\":%llu,\"errors_5xx\":%llu,",
              up_s, srv->nloops, requests, ok, e4xx, e5xx);
    put_latency(b, &all);
    JB_LIT(b, ",\"loops\":[");
    for (int i = 0; i < srv->nloops; i++) {
        struct loop *t = &srv->loops[i];
        jb_printf(b, "%s{\"id\":%d,\"requests\":%llu,\"connections\":%llu,\"accepted\":%llu,"
                  "\"cpu_s\":%.3f}", i ? "," : "", i, (unsigned long long)READ(t->requests),
                  (unsigned long long)READ(t->open),
                  (unsigned long long)(READ(t->open) + READ(t->closed)),
                  thread_cpu_s(t->thread));
    }
    JB_LIT(b, "]}}");
    return send_buf(l, c, 200);
}

/* ---- the handler ---- */

/* *con_cls: before the first call, what log_uri returned (the raw URI's
 * length + 1); then &request_seen; &request_done once a response is queued. */
static char request_seen, request_done;

/* MHD_OPTION_URI_LOG_CALLBACK, called on the raw URI (before unescaping and
 * the split at '?') once MHD has put a NUL in place of the space before the
 * version. A NUL byte in the request line itself cuts MHD's C string short:
 * "GET /zip/x/1000001\0junk HTTP/1.1" would reach us as a valid code. So
 * the URI's length as a string is kept here, and the handler checks that it
 * reaches the version, which MHD passes it as a pointer into the same line:
 * url + length + 1 == version, or the URI held a NUL byte. */
static void *log_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls, (void)c;
    return (void *)(uintptr_t)(strlen(uri) + 1);
}

static bool first_call(void *con_cls)
{
    return con_cls != &request_seen && con_cls != &request_done;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    (void)upload_data;
    struct loop *l = cls;
    bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
    if (first_call(*con_cls)) {
        uintptr_t rawlen = (uintptr_t)*con_cls;
        *con_cls = &request_seen;
        BUMP(l->inflight);
        if (rawlen && *version && url + rawlen != version) {
            *con_cls = &request_done;
            return send_error(l, c, 400, NULL, NULL, "NUL byte in the request line");
        }
        /* Other methods get their 405 at once; MHD then discards any body
         * and closes the connection. A GET is answered on the second call:
         * MHD 0.9.75 treats a response queued on the first call as "early"
         * and closes the connection after it, which would defeat keep-alive. */
        if (!get) {
            *con_cls = &request_done;
            return send_error(l, c, 405, NULL, NULL, "method not allowed: only GET and HEAD");
        }
        return MHD_YES;
    }
    if (*con_cls == &request_done || *upload_data_size) {
        /* A body with a GET, or the rest of a refused upload: dropped. */
        *upload_data_size = 0;
        return MHD_YES;
    }
    *con_cls = &request_done;
    uint64_t t0 = zb_now_ns();

    if (!strncmp(url, "/zip/", 5)) {
        const char *name = url + 5, *slash = strchr(name, '/');
        if (slash) {
            struct srv_backend *sb = find_backend(l->srv, name, (size_t)(slash - name));
            if (!sb)
                return send_error(l, c, 404, NULL, NULL,
                                  "no such backend (see /health for the list)");
            return zip(l, c, sb, slash + 1, t0);
        }
    } else if (!strcmp(url, "/health")) {
        return health(l, c);
    } else if (!strcmp(url, "/stats")) {
        return stats(l, c);
    }
    return send_error(l, c, 404, NULL, NULL,
                      "no such resource: GET /zip/{backend}/{code}, /zip/{backend}/random, "
                      "/health or /stats");
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)c, (void)toe;
    struct loop *l = cls;
    if (!first_call(*con_cls))
        atomic_store_explicit(&l->inflight, READ(l->inflight) - 1, RELAXED);
    *con_cls = NULL;
}

static void connection_event(void *cls, struct MHD_Connection *c, void **socket_context,
                             enum MHD_ConnectionNotificationCode toe)
{
    (void)c, (void)socket_context;
    struct loop *l = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        BUMP(l->open);
        return;
    }
    atomic_store_explicit(&l->open, READ(l->open) - 1, RELAXED);
    BUMP(l->closed);
    acceptor_slot_freed(l->srv);
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = (char)(ch | 0x20);
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* MHD's own unescaper turns %00 into a NUL that silently cuts the string
 * ("/zip/x/1000001%00junk" would read as a valid code). This one decodes
 * %XX like it, except that %00 stays as the three characters, which no
 * route or code accepts. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls, (void)c;
    char *r = s, *w = s;
    while (*r) {
        int hi, lo;
        if (r[0] == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0 && (hi | lo)) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
    return (size_t)(w - s);
}

void http_init(void)
{
    init_keys();
}

/* MHD_OPTION_CONNECTION_MEMORY_LIMIT (max_request_bytes) is the per-connection
 * pool the request line and headers must fit in. Past it libmicrohttpd 0.9.75
 * answers by itself, before our handler runs: "414 URI Too Long" for a long
 * request line, "431 Request Header Fields Too Large" for big headers, both
 * with Connection: close and an empty body without a Content-Type (so not
 * our JSON). The test suite checks both statuses. */
struct MHD_Daemon *http_daemon(struct loop *l, struct zb_err *err)
{
    const struct server_conf *sc = &l->srv->conf->server;
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO, 0,
        NULL, NULL, handle, l,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)sc->connection_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)sc->max_connections,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)sc->max_request_bytes,
        MHD_OPTION_NOTIFY_COMPLETED, completed, l,
        MHD_OPTION_NOTIFY_CONNECTION, connection_event, l,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
        MHD_OPTION_URI_LOG_CALLBACK, log_uri, NULL,
        MHD_OPTION_SIGPIPE_HANDLED_BY_APP, 1,
        MHD_OPTION_END);
    if (!d)
        zb_fail(err, ZB_ERR_SYS, "libmicrohttpd would not start (max_connections %d, "
                "max_request_bytes %d)", sc->max_connections, sc->max_request_bytes);
    return d;
}
