/* The HTTP side: libmicrohttpd's callbacks, routes, answers.
 *
 * A request is a struct req, taken from its loop's spares at the first
 * handler call and given back when libmicrohttpd says it is complete. Its
 * life:
 *   RQ_NEW      the first handler call checks what libmicrohttpd 0.9.75
 *               does not (RFC 9112's rules: strict.c) and the
 *               method; a refusal is answered at once, with Connection:
 *               close, and no body is read;
 *   RQ_READ     the final call routes it (/DATASET/BACKEND/KEY, /zip/ the
 *               postal dataset's): /stats at once; a lookup starts,
 *               and unless it finished inline the connection is suspended
 *               (MHD_suspend_connection);
 *   RQ_RUNNING  ...until the lookup's done() writes the answer and resumes
 *               it, on this loop;
 *   RQ_ANSWERED the next handler call queues that answer;
 *   RQ_QUEUED   then nothing but dropping a body.
 * The body is the request's own buffer, handed to libmicrohttpd without a
 * copy (MHD_RESPMEM_PERSISTENT): it lives until the completion callback.
 * No logging per request, no allocation per request once the spares are
 * warm. */
#include <ctype.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include "accept.h"
#include "batch.h"
#include "http.h"
#include "health.h"
#include "json.h"
#include "keyset.h"
#include "listing.h"
#include "lookup.h"
#include "reason.h"
#include "stats.h"
#include "strict.h"
#include "update.h"

enum req_state { RQ_NEW, RQ_READ, RQ_RUNNING, RQ_ANSWERED, RQ_QUEUED };

/* A client connection (libmicrohttpd's socket context). */
struct client {
    /* In its loop's awaiting list while waiting for a header, or in its
     * sending list while an answer goes out. */
    APR_RING_ENTRY(client) link;
    struct MHD_Connection *c;
    uint64_t since_ns;             /* connected, or its last answer was sent */
    bool awaiting, sending;
    int fd;
    int outq, inq;                 /* its socket's queues at the last look (sending; -1: none) */
};

struct req {
    struct http_loop *loop;        /* its loop's HTTP part */
    struct MHD_Connection *c;
    struct req *next_free;
    uintptr_t target;              /* strict_log_uri's verdict on the raw URI (strict.h) */
    bool close;                    /* refused on its first call: the connection closes */
    enum req_state state;
    bool suspended;
    bool orphaned;                 /* its connection went while it ran: free it when done */
    unsigned status;
    struct jbuf body;
    struct lane *lane;             /* a lookup: its (dataset, backend), on this loop */
    enum zb_strategy strategy;
    uint64_t t0;
    double miss;                   /* /random?miss= */
    struct key_wait kw;            /* /random, /queries, /updates: waiting for a key set */
    bool (*keyed)(struct req *rq); /* what starts it once the key set is in (start_keyed) */
    struct lookup lk;
    int nqueries;                  /* /queries?queries= */
    uint64_t cache_gen;            /* /cached, a miss: keep the answer, from this key set */
    struct batch *batch;           /* /queries' lookups: kept with the spare, grown as asked */
    struct listing *listing;       /* /list's rows: kept with the spare */
    bool html;                     /* the answer is /list's page */
    bool post_route;               /* /update/, /updates/: POST only */
    struct update_job up;          /* their reads and writes (update.h) */
};

/* ---- answers ---- */

static void count_answer(struct req *rq)
{
    struct http_loop *l = rq->loop;
    unsigned status = rq->status;
    BUMP(l->fig->requests);
    counter *c = status < 400 ? &l->fig->ok : status < 500 ? &l->fig->e4xx : &l->fig->e5xx;
    BUMP(*c);
    struct lane_stats *st = rq->lane ? &rq->lane->st : NULL;
    if (!st)
        return;
    BUMP(st->requests);
    c = status < 400 ? &st->ok : status < 500 ? &st->e4xx : &st->e5xx;
    BUMP(*c);
    if (status == 404)
        BUMP(st->not_found);
    hist_record_own(&st->latency, zb_now_ns() - rq->t0);
}

/* The answer is in rq->body: counted now, queued on the next handler call
 * (or at once by the caller if it runs inside one). A suspended request
 * is resumed. */
static void set_answer(struct req *rq, unsigned status)
{
    rq->status = status;
    if (rq->body.oom) {
        static const char oom[] = "{\"error\":\"out of memory\",\"status\":500}";
        rq->body.oom = false;
        rq->body.n = 0;
        JB_LIT(&rq->body, oom);
        rq->status = 500;
    }
    count_answer(rq);
    rq->state = RQ_ANSWERED;
    if (rq->suspended) {
        rq->suspended = false;
        MHD_resume_connection(rq->c);
    }
}

/* {"error":"msg"} plus the dataset (but postal's), the backend and the
 * key ("code" for postal) when known. */
static void set_error(struct req *rq, unsigned status, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set_error(struct req *rq, unsigned status, const char *key, const char *fmt, ...)
{
    char msg[600];
    FORMAT_INTO(msg, fmt);
    struct jbuf *b = &rq->body;
    b->n = 0;
    JB_LIT(b, "{");
    const struct served *sb = rq->lane ? rq->lane->sb : NULL;
    if (sb && !sb->postal) {
        JB_LIT(b, "\"dataset\":");
        jb_cstr(b, sb->data->conf->name);
        JB_LIT(b, ",");
    }
    if (sb) {
        JB_LIT(b, "\"backend\":");
        jb_cstr(b, sb->conf.name);
        JB_LIT(b, ",");
    }
    if (key) {
        if (sb && !sb->postal)
            JB_LIT(b, "\"key\":");
        else
            JB_LIT(b, "\"code\":");
        jb_cstr(b, key);
        JB_LIT(b, ",");
    }
    JB_LIT(b, "\"error\":");
    jb_cstr(b, msg);
    jb_printf(b, ",\"status\":%u}", status);
    set_answer(rq, status);
}

static void client_sending(struct http_loop *l, struct MHD_Connection *c);

static enum MHD_Result queue(struct req *rq)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(rq->body.n, rq->body.p, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            rq->html ? "text/html; charset=utf-8" : "application/json; charset=utf-8");
    if (rq->status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, rq->post_route ? "POST" : "GET, HEAD");
    if (rq->status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (rq->close || atomic_load_explicit(&rq->loop->srv->stopping, RELAXED))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(rq->c, rq->status, r);
    MHD_destroy_response(r);
    rq->state = RQ_QUEUED;
    if (ret == MHD_YES)
        client_sending(rq->loop, rq->c);
    return ret;
}

/* ---- lookups ---- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* An integer key: an optional '-' and 1-18 digits (within 64 bits). */
static bool is_integer(const char *s, size_t len)
{
    size_t i = (len > 0 && s[0] == '-') ? 1 : 0;
    if (i == len || len - i > 18)
        return false;
    for (; i < len; i++)
        if (!is_digit(s[i]))
            return false;
    return true;
}

/* A number as JSON writes it (RFC 8259 section 6). A database's text for
 * an integer or real column is one, but for NaN, Infinity and the like,
 * which go out as strings. */
static bool is_json_number(const char *s, size_t len)
{
    size_t i = 0, d;
    if (i < len && s[i] == '-')
        i++;
    if (i < len && s[i] == '0')
        i++;
    else if (i < len && s[i] >= '1' && s[i] <= '9')
        while (i < len && is_digit(s[i]))
            i++;
    else
        return false;
    if (i < len && s[i] == '.') {
        for (d = ++i; i < len && is_digit(s[i]); i++)
            ;
        if (i == d)
            return false;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        if (++i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        for (d = i; i < len && is_digit(s[i]); i++)
            ;
        if (i == d)
            return false;
    }
    return i == len;
}

/* One row as a JSON object: the dataset's column names as keys, numbers
 * as numbers, NULL as null, the rest as strings. */
static int put_row_in(struct jbuf *b, const struct served *sb, long nth, int ncols,
                      const char *const *vals, const size_t *lens)
{
    const struct zb_column *col = sb->data->col;
    if (nth > 1)
        JB_LIT(b, ",{");
    else
        JB_LIT(b, "{");
    int n = ncols < sb->data->ncols ? ncols : sb->data->ncols;
    for (int i = 0; i < n; i++) {
        jb_put(b, sb->colkey[i].s, sb->colkey[i].len);
        if (!vals[i])
            JB_LIT(b, "null");
        else if (col[i].type != ZB_TEXT && is_json_number(vals[i], lens[i]))
            jb_put(b, vals[i], lens[i]);
        else
            jb_str(b, vals[i], lens[i]);
    }
    JB_LIT(b, "}");
    return 0;
}

static int put_row(void *arg, int ncols, const char *const *vals, const size_t *lens)
{
    struct req *rq = arg;
    return put_row_in(&rq->body, rq->lane->sb, rq->lk.rows, ncols, vals, lens);
}

/* A row of one of /queries' lookups, into that lookup's own body. */
static int put_item_row(void *arg, int ncols, const char *const *vals, const size_t *lens)
{
    struct batch_item *it = arg;
    return put_row_in(&it->body, it->lk.lane->sb, it->lk.rows, ncols, vals, lens);
}

static struct req *req_get(struct http_loop *l);
static void req_free(struct req *rq);

/* ---- /cached: the answers of the loop's cache ---- */

/* The loop's cache of rq's backend, made when first asked; NULL when
 * cache_entries is 0 or memory ran out (the lookups go on uncached). */
static struct answer_cache *cache_of(struct req *rq)
{
    struct http_loop *l = rq->loop;
    int i = rq->lane->sb->index, cap = l->srv->conf->server.cache_entries;
    if (!l->cache[i] && cap > 0)
        l->cache[i] = cache_new((uint32_t)cap);
    return l->cache[i];
}

/* A miss answered 200: its bytes kept. */
static void cache_keep(struct req *rq)
{
    struct answer_cache *c = cache_of(rq);
    if (c && !rq->body.oom) {
        cache_put(c, (uint32_t)atol(rq->lk.key), rq->cache_gen, rq->body.p, rq->body.n);
        SET(rq->lane->st.cache_entries, cache_count(c));
    }
}

static void lookup_done(struct lookup *lk, int rc, const struct zb_err *err)
{
    struct req *rq = lk->arg;
    if (rq->orphaned) {
        req_free(rq);
        return;
    }
    char why[512];
    if (rc != LOOKUP_OK) {
        lookup_why(lk, err, atomic_load_explicit(&rq->loop->srv->stopping, RELAXED), "the lookup",
                   "lookup failed", why, sizeof why);
        set_error(rq, rc == LOOKUP_UNAVAILABLE ? 503 : 500, lk->key, "%s", why);
    } else if (lk->rows == 0) {
        set_error(rq, 404, lk->key, rq->lane->sb->postal ? "no such code" : "no such key");
    } else {
        JB_LIT(&rq->body, "]}");
        if (rq->cache_gen)
            cache_keep(rq);
        set_answer(rq, 200);
    }
}

static void begin_rows(struct jbuf *b, const struct served *sb, const char *key, size_t len);

/* Starts the lookup of key (checked, len <= SRV_KEY_MAX); the request
 * waits, suspended, unless the answer is already in. */
static void start_lookup(struct req *rq, const char *key, size_t len)
{
    struct lookup *lk = &rq->lk;
    memcpy(lk->key, key, len);
    lk->key[len] = 0;
    lk->keylen = len;
    begin_rows(&rq->body, rq->lane->sb, key, len);
    lk->lane = rq->lane;
    lk->strategy = rq->strategy;
    lk->on_row = put_row;
    lk->arg = rq;
    lk->done = lookup_done;
    rq->state = RQ_RUNNING;
    lookup_start(lk, false);
}

/* An answer's beginning, up to its rows: {"backend":..,"code":..,"rows":[ */
static void begin_rows(struct jbuf *b, const struct served *sb, const char *key, size_t len)
{
    b->n = 0;
    if (sb->postal) {
        JB_LIT(b, "{\"backend\":");
        jb_cstr(b, sb->conf.name);
        JB_LIT(b, ",\"code\":");
    } else {
        JB_LIT(b, "{\"dataset\":");
        jb_cstr(b, sb->data->conf->name);
        JB_LIT(b, ",\"backend\":");
        jb_cstr(b, sb->conf.name);
        JB_LIT(b, ",\"key\":");
    }
    jb_str(b, key, len);
    JB_LIT(b, ",\"rows\":[");
}

/* rq's backend's key set; NULL while it is being read (*loading), or
 * when it cannot be (503 answered, what: the query that failed). */
static const struct key_set *key_set_of(struct req *rq, const char *what, bool *loading)
{
    struct zb_err err = { 0 };
    const struct key_set *set = keyset_get(rq->lane->sb, loading, &err);
    if (!set && !*loading) {
        char why[512];
        set_error(rq, 503, NULL, "%s", reason_for_client(rq->lane->sb, &err, false, what, why,
                                                         sizeof why));
    }
    return set;
}

/* The wait for rq's key set is over: rq starts again, or (err) the 503. */
static bool keys_over(struct key_wait *w, const struct zb_err *err)
{
    struct req *rq = container_of(w, struct req, kw);
    if (err) {
        set_error(rq, 503, NULL, "%s", err->msg);
        return false;
    }
    return !rq->keyed(rq);
}

/* rq started by start, which draws from the key set: false while that is
 * being read, and then rq waits for it (at most acquire_timeout_ms). */
static void start_keyed(struct req *rq, bool (*start)(struct req *rq))
{
    rq->keyed = start;
    if (!start(rq)) {
        rq->state = RQ_RUNNING;
        rq->kw.sb = rq->lane->sb;
        rq->kw.over = keys_over;
        keyset_wait(&rq->loop->keys, &rq->kw);
    }
}

/* /random: a code of the key set (or, with probability miss, one that is
 * not in it); false while the key set is still loading. */
static bool start_random(struct req *rq)
{
    bool loading;
    const struct key_set *set = key_set_of(rq, "the query of /random's key set", &loading);
    if (!set)
        return !loading;
    uint32_t k = keyset_pick(set, rq->miss, &rq->loop->rng);
    char code[8];
    snprintf(code, sizeof code, "%07u", k);
    start_lookup(rq, code, 7);
    return true;
}

void http_keys_changed(struct http_loop *l)
{
    keyset_woken(&l->keys);
}

/* What is wrong with key for sb's key column (*status 400 or 414), or
 * NULL: checked before any database work. */
static const char *bad_key(const struct served *sb, const char *key, size_t len,
                           unsigned *status, char *msg, size_t msglen)
{
    *status = 400;
    switch (sb->key_kind) {
    case KEY_POSTAL:
        if (len == 7 && is_integer(key, 7) && key[0] != '-')
            return NULL;
        return "the code must be exactly 7 digits 0-9 (or 'random')";
    case KEY_INTEGER:
        if (is_integer(key, len))
            return NULL;
        snprintf(msg, msglen, "the key of dataset %s must be an integer (an optional '-' and 1 to "
                 "18 digits)%s", sb->data->conf->name, strcmp(key, "random") ? "" :
                 "; /random is the postal dataset's: for random keys give loadgen --keys a "
                 "file from loader --write-keys");
        return msg;
    default:
        if (len == 0)
            return "the key must not be empty";
        if (len > SRV_KEY_MAX) {
            *status = 414;
            snprintf(msg, msglen, "the key is %zu bytes long, more than the %d the server takes",
                     len, SRV_KEY_MAX);
            return msg;
        }
        /* Every table holds UTF-8 (the loader's), and PostgreSQL refuses
         * a parameter that is not: a client's error, not the server's. */
        if (utf8_valid_prefix(key, len) != len)
            return "the key is not valid UTF-8 once percent-decoded";
        return NULL;
    }
}

/* ?strategy=; false after answering 400. */
static bool pick_strategy(struct req *rq)
{
    struct served *sb = rq->lane->sb;
    rq->strategy = sb->strategy;
    const char *s = MHD_lookup_connection_value(rq->c, MHD_GET_ARGUMENT_KIND, "strategy");
    if (s) {
        int st = conf_choice(zb_strategy_names, s);
        if (st < 0) {
            char names[128];
            conf_choice_list(zb_strategy_names, names, sizeof names);
            set_error(rq, 400, NULL, "strategy must be %s", names);
            return false;
        }
        rq->strategy = (enum zb_strategy)st;
    }
    const char *cannot = lookup_cannot(sb, rq->strategy);
    if (cannot) {
        set_error(rq, 400, NULL, "strategy %s: the %s driver %s",
                  zb_strategy_names[rq->strategy], sb->conf.driver, cannot);
        return false;
    }
    return true;
}

/* GET /DATASET/BACKEND/KEY (rq->lane set): a lookup of key, or for the
 * postal dataset /random. */
static void serve(struct req *rq, const char *key)
{
    if (!pick_strategy(rq))
        return;
    const struct served *sb = rq->lane->sb;
    size_t len = strlen(key);
    if (!sb->postal || strcmp(key, "random")) {
        unsigned status;
        char msg[400];
        const char *bad = bad_key(sb, key, len, &status, msg, sizeof msg);
        if (bad)
            set_error(rq, status, NULL, "%s", bad);
        else
            start_lookup(rq, key, len);
        return;
    }
    rq->miss = 0;
    const char *m = MHD_lookup_connection_value(rq->c, MHD_GET_ARGUMENT_KIND, "miss");
    if (m) {
        char *end;
        errno = 0;
        rq->miss = strtod(m, &end);
        if (errno || end == m || *end || !(rq->miss >= 0 && rq->miss <= 1)) {
            set_error(rq, 400, NULL, "miss must be a number in 0..1");
            return;
        }
    }
    start_keyed(rq, start_random);
}

/* ---- /queries: several lookups in one request ---- */

/* All of /queries' lookups ended: one answer of them all, in the order
 * drawn, each as /zip would have answered its code; or the request fails
 * with the worst of its failures. */
static void queries_done(struct batch *b)
{
    struct req *rq = b->arg;
    if (rq->orphaned) {
        req_free(rq);
        return;
    }
    if (b->rc != LOOKUP_OK) {
        char why[512];
        lookup_why(&b->failed->lk, &b->err, atomic_load_explicit(&rq->loop->srv->stopping, RELAXED),
                   "a lookup of /queries", "lookup failed", why, sizeof why);
        set_error(rq, b->rc == LOOKUP_UNAVAILABLE ? 503 : 500, NULL, "%s", why);
        return;
    }
    const struct served *sb = rq->lane->sb;
    struct jbuf *out = &rq->body;
    out->n = 0;
    JB_LIT(out, "{\"backend\":");
    jb_cstr(out, sb->conf.name);
    jb_printf(out, ",\"queries\":%d,\"answers\":[", b->n);
    for (int i = 0; i < b->n; i++) {
        struct batch_item *it = &b->item[i];
        if (i)
            JB_LIT(out, ",");
        if (it->lk.rows == 0) {    /* the table was replaced since the draw */
            JB_LIT(out, "{\"backend\":");
            jb_cstr(out, sb->conf.name);
            JB_LIT(out, ",\"code\":");
            jb_cstr(out, it->lk.key);
            JB_LIT(out, ",\"error\":\"no such code\",\"status\":404}");
        } else {
            jb_put(out, it->body.p, it->body.n);
            JB_LIT(out, "]}");
        }
        out->oom |= it->body.oom;
        it->body.oom = false;
    }
    JB_LIT(out, "]}");
    set_answer(rq, 200);
}

/* /queries' codes drawn and looked up; false while the key set is still
 * loading. */
static bool start_queries(struct req *rq)
{
    bool loading;
    const struct key_set *set = key_set_of(rq, "the query of /queries' key set", &loading);
    if (!set)
        return !loading;
    struct batch *b = rq->batch;
    b->n = rq->nqueries;
    b->done = queries_done;
    b->arg = rq;
    for (int i = 0; i < b->n; i++) {
        char code[8];
        snprintf(code, sizeof code, "%07u", keyset_pick(set, 0, &rq->loop->rng));
        batch_set_key(b, i, code, 7);
        begin_rows(&b->item[i].body, rq->lane->sb, code, 7);
    }
    rq->state = RQ_RUNNING;
    batch_start(b, rq->lane, rq->strategy, put_item_row);
    return true;
}

/* GET /queries/BACKEND?queries=N (rq->lane set: the postal dataset's). */
static void serve_queries(struct req *rq)
{
    if (!pick_strategy(rq))
        return;
    const char *q = MHD_lookup_connection_value(rq->c, MHD_GET_ARGUMENT_KIND, "queries");
    int n = 0;
    for (size_t i = 0; q && q[i] && n <= BATCH_MAX; i++)
        n = is_digit(q[i]) ? n * 10 + (q[i] - '0') : BATCH_MAX + 1;
    if (!q || !q[0] || n < 1 || n > BATCH_MAX) {
        set_error(rq, 400, NULL, "queries must be a whole number from 1 to %d", BATCH_MAX);
        return;
    }
    if (batch_reserve(&rq->batch, n) < 0) {
        set_error(rq, 500, NULL, "out of memory");
        return;
    }
    rq->nqueries = n;
    start_keyed(rq, start_queries);
}

/* GET /cached/BACKEND/CODE (rq->lane set: the postal dataset's): the
 * loop's cached answer, else a lookup whose 200 is kept. The key set's
 * age tells whether a cached answer is still the table's. */
static void serve_cached(struct req *rq, const char *code)
{
    if (!pick_strategy(rq))
        return;
    unsigned status;
    char msg[400];
    const char *bad = strcmp(code, "random") ? bad_key(rq->lane->sb, code, strlen(code), &status, msg, sizeof msg)
                                             : "the code must be exactly 7 digits 0-9";
    if (bad) {
        set_error(rq, 400, NULL, "%s", bad);
        return;
    }
    struct zb_err err = { 0 };
    bool loading;
    const struct key_set *set = keyset_get(rq->lane->sb, &loading, &err);
    struct answer_cache *c = set ? cache_of(rq) : NULL;
    size_t len;
    const char *hit = c ? cache_get(c, (uint32_t)atol(code), set->loaded_ns, &len) : NULL;
    if (hit) {
        BUMP(rq->lane->st.cache_hits);
        rq->body.n = 0;
        jb_put(&rq->body, hit, len);
        set_answer(rq, 200);
        return;
    }
    BUMP(rq->lane->st.cache_misses);
    rq->cache_gen = c ? set->loaded_ns : 0;
    start_lookup(rq, code, strlen(code));
}

/* ---- /list: the listing page ---- */

static int list_row(void *arg, int ncols, const char *const *vals, const size_t *lens)
{
    struct req *rq = arg;
    return listing_add(rq->listing, ncols, vals, lens) < 0 ? -1 : 0;
}

static void list_done(struct lookup *lk, int rc, const struct zb_err *err)
{
    struct req *rq = lk->arg;
    if (rq->orphaned) {
        req_free(rq);
        return;
    }
    char why[512];
    if (rc != LOOKUP_OK) {
        lookup_why(lk, err, atomic_load_explicit(&rq->loop->srv->stopping, RELAXED), "the listing",
                   "listing failed", why, sizeof why);
        set_error(rq, rc == LOOKUP_UNAVAILABLE ? 503 : 500, NULL, "%s", why);
    } else if (lk->rows == 0) {
        set_error(rq, 404, NULL, "no rows have jis_code %s", lk->key);
    } else if (listing_rows(rq->listing) != (size_t)lk->rows) {
        set_error(rq, 500, NULL, "out of memory");
    } else {
        listing_render(rq->listing, &rq->body);
        rq->html = true;
        set_answer(rq, 200);
    }
}

/* GET /list/BACKEND/JIS (rq->lane: the backend's listing pair). */
static void serve_list(struct req *rq, const char *jis)
{
    if (!pick_strategy(rq))
        return;
    bool five = strlen(jis) == 5;
    for (int i = 0; five && i < 5; i++)
        five = is_digit(jis[i]);
    if (!five) {
        set_error(rq, 400, NULL, "the local government code (jis_code) must be exactly 5 digits 0-9");
        return;
    }
    if (listing_reset(&rq->listing) < 0) {
        set_error(rq, 500, NULL, "out of memory");
        return;
    }
    struct lookup *lk = &rq->lk;
    memcpy(lk->key, jis, 6);
    lk->keylen = 5;
    lk->lane = rq->lane;
    lk->strategy = rq->strategy;
    lk->on_row = list_row;
    lk->arg = rq;
    lk->done = list_done;
    rq->state = RQ_RUNNING;
    lookup_start(lk, false);
}

/* ---- the handler ---- */

/* /health's answer is in rq->body. */
static void health_answered(void *arg, unsigned status)
{
    struct req *rq = arg;
    if (rq->orphaned)
        req_free(rq);
    else
        set_answer(rq, status);
}

static bool is_name(const char *name, const char *s, size_t len)
{
    return strlen(name) == len && !memcmp(name, s, len);
}

/* The served dataset called s ("zip": the postal dataset), or -1. */
static int find_dataset(const struct server *srv, const char *s, size_t len)
{
    if (is_name("zip", s, len))
        s = DATASET_DEFAULT, len = strlen(DATASET_DEFAULT);
    for (int d = 0; d < srv->ndatasets; d++)
        if (is_name(srv->datasets[d]->conf->name, s, len))
            return d;
    return -1;
}

/* Dataset d on the backend called s. */
static struct served *find_backend(struct server *srv, int d, const char *s, size_t len)
{
    int per = srv->nserved / srv->ndatasets;
    for (int i = d * per; i < (d + 1) * per; i++)
        if (is_name(srv->served[i]->conf.name, s, len))
            return srv->served[i];
    return NULL;
}

/* An absolute-form target (RFC 9112 3.2.2, "GET http://host/path"): the
 * path part. */
static const char *origin_path(const char *url)
{
    if (url[0] == '/')
        return url;
    const char *p = !strncasecmp(url, "http://", 7) ? url + 7
                    : !strncasecmp(url, "https://", 8) ? url + 8 : NULL;
    if (!p)
        return url;
    p = strchr(p, '/');
    return p ? p : "/";
}

/* The end of a POST /update/ or /updates/ (update.h). */
static void update_answered(struct update_job *u, unsigned status, const char *code,
                            const char *msg)
{
    struct req *rq = container_of(u, struct req, up);
    if (rq->orphaned)
        req_free(rq);
    else if (msg)
        set_error(rq, status, code, "%s", msg);
    else
        set_answer(rq, status);
}

/* /updates: its codes drawn from the key set; false while that is read. */
static bool start_updates(struct req *rq)
{
    return update_start(&rq->up, NULL, rq->up.n, &rq->loop->rng);
}

/* POST /update/{backend}/{code} (kind 1), /updates/{backend}?queries=N. */
static void serve_update(struct req *rq, const char *path)
{
    struct http_loop *l = rq->loop;
    const char *bs, *code;
    size_t blen;
    int kind = update_route(path, &bs, &blen, &code), n = 1;
    int d = find_dataset(l->srv, "zip", 3);
    struct served *sb = d >= 0 ? find_backend(l->srv, d, bs, blen) : NULL;
    if (!sb) {
        set_error(rq, 404, NULL, "no such backend (see /health for the list)");
        return;
    }
    rq->lane = &l->lanes[sb->index];
    const char *off = update_refusal(sb);
    if (off) {
        set_error(rq, 403, NULL, "%s", off);
        return;
    }
    if (!pick_strategy(rq))
        return;
    unsigned status;
    if (kind == 1 && bad_key(sb, code, strlen(code), &status, NULL, 0)) {
        set_error(rq, 400, NULL, "the code must be exactly 7 digits 0-9");
        return;
    }
    if (kind == 2 && (n = update_queries(MHD_lookup_connection_value(
                          rq->c, MHD_GET_ARGUMENT_KIND, "queries"))) < 0) {
        set_error(rq, 400, NULL, "queries must be a whole number from 1 to %d",
                  UPDATE_MAX_QUERIES);
        return;
    }
    rq->up.srv = l->srv;
    rq->up.lanes = l->lanes;
    rq->up.sb = sb;
    rq->up.strategy = rq->strategy;
    rq->up.body = &rq->body;
    rq->up.done = update_answered;
    rq->up.n = n;
    rq->state = RQ_RUNNING;
    if (kind == 1)
        update_start(&rq->up, code, 1, &l->rng);
    else
        start_keyed(rq, start_updates);
}

static void route(struct req *rq, const char *url)
{
    struct http_loop *l = rq->loop;
    const char *path = origin_path(url);
    rq->t0 = zb_now_ns();
    if (rq->post_route) {
        serve_update(rq, path);
        return;
    }
    /* /DATASET/BACKEND/KEY: the key is the rest, slashes and all. */
    const char *ds = path + 1, *bs = path[0] == '/' ? strchr(ds, '/') : NULL;
    const char *ks = bs ? strchr(bs + 1, '/') : NULL;
    int d = ks ? find_dataset(l->srv, ds, (size_t)(bs - ds)) : -1;
    if (d >= 0) {
        struct served *sb = find_backend(l->srv, d, bs + 1, (size_t)(ks - bs - 1));
        if (!sb) {
            set_error(rq, 404, NULL, "no such backend (see /health for the list)");
            return;
        }
        rq->lane = &l->lanes[sb->index];
        serve(rq, ks + 1);
        return;
    }
    if (!strncmp(path, "/list/", 6)) {
        const char *name = path + 6, *slash = strchr(name, '/');
        int pd = find_dataset(l->srv, "zip", 3);
        struct served *sb = pd < 0 || !slash ? NULL : find_backend(l->srv, pd, name, (size_t)(slash - name));
        if (!sb || !sb->list) {
            set_error(rq, 404, NULL, "no such backend (see /health for the list)");
            return;
        }
        rq->lane = &l->lanes[sb->list->index];
        serve_list(rq, slash + 1);
        return;
    }
    if (!strncmp(path, "/cached/", 8)) {
        const char *name = path + 8, *slash = strchr(name, '/');
        int pd = find_dataset(l->srv, "zip", 3);
        struct served *sb = pd < 0 || !slash ? NULL : find_backend(l->srv, pd, name, (size_t)(slash - name));
        if (!sb) {
            set_error(rq, 404, NULL, "no such backend (see /health for the list)");
            return;
        }
        rq->lane = &l->lanes[sb->index];
        serve_cached(rq, slash + 1);
        return;
    }
    if (!strncmp(path, "/queries/", 9)) {
        const char *name = path + 9;
        int pd = find_dataset(l->srv, "zip", 3);
        struct served *sb = pd < 0 ? NULL : find_backend(l->srv, pd, name, strlen(name));
        if (!sb) {
            set_error(rq, 404, NULL, "no such backend (see /health for the list)");
            return;
        }
        rq->lane = &l->lanes[sb->index];
        serve_queries(rq);
        return;
    }
    if (!strcmp(path, "/health")) {
        rq->state = RQ_RUNNING;
        rq->body.n = 0;
        if (!health_start(l->srv, l->lanes, &rq->body, health_answered, rq))
            set_error(rq, 500, NULL, "out of memory");
        return;
    } else if (!strcmp(path, "/stats")) {
        rq->body.n = 0;
        stats_json(l->srv, &rq->body);
        set_answer(rq, 200);
        return;
    }
    char datasets[256] = "";
    for (int i = 0, n = 0; i < l->srv->ndatasets && n < (int)sizeof datasets; i++)
        n += snprintf(datasets + n, sizeof datasets - (size_t)n, "%s%s", i ? ", " : "",
                      l->srv->datasets[i]->conf->name);
    set_error(rq, 404, NULL, "no such resource: GET /{dataset}/{backend}/{key} (datasets: %s), "
              "/zip/{backend}/{code}, /zip/{backend}/random, /queries/{backend}?queries=N, "
              "/cached/{backend}/{code}, /list/{backend}/{jis_code}, /health or "
              "/stats", datasets);
}

static void client_answered(struct http_loop *l, struct MHD_Connection *c);
static void client_got_header(struct http_loop *l, struct MHD_Connection *c);

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    (void)upload_data;
    struct http_loop *l = cls;
    struct req *rq = *con_cls;
    if (!rq || ((uintptr_t)rq & 1)) {   /* the first call: what strict_log_uri left */
        uintptr_t raw = (uintptr_t)rq;
        if (!(rq = req_get(l)))
            return MHD_NO;
        rq->c = c;
        rq->target = raw;
        *con_cls = rq;
    }
    switch (rq->state) {
    case RQ_NEW: {
        BUMP(l->fig->inflight);
        rq->state = RQ_READ;
        unsigned status;
        bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
        /* The write routes take POST only (update.h). */
        rq->post_route = update_route(origin_path(url), NULL, NULL, NULL) != 0;
        if (rq->post_route)
            get = !strcmp(method, MHD_HTTP_METHOD_POST);
        const char *bad = strict_refusal(c, rq->target, url, method, version, &status);
        /* Refusals are answered at once, with Connection: close: MHD 0.9.75
         * treats a response queued on the first call as "early" and reads
         * no body after it. Other methods get their 405 (their body, if
         * any, is never read either). A GET is answered on the final call,
         * which keeps the connection alive. */
        if (bad && status == 413 && !get)
            bad = NULL;   /* a body on a POST: its 405 says more */
        if (bad && status == 413 && rq->post_route)
            bad = "a request body: the write routes take a POST with none";
        if (bad || !get) {
            rq->t0 = zb_now_ns();
            rq->close = true;
            if (bad)
                set_error(rq, status, NULL, "%s", bad);
            else
                set_error(rq, 405, NULL, "method not allowed: only %s",
                          rq->post_route ? "POST" : "GET and HEAD");
            return queue(rq);
        }
        return MHD_YES;
    }
    case RQ_READ:
        if (*upload_data_size) {   /* cannot happen: a body is refused above */
            *upload_data_size = 0;
            return MHD_YES;
        }
        /* The whole request is in: its deadline is over (see
         * http_header_deadlines). */
        client_got_header(l, c);
        route(rq, url);
        if (rq->state == RQ_ANSWERED)
            return queue(rq);
        MHD_suspend_connection(c);
        rq->suspended = true;
        return MHD_YES;
    case RQ_ANSWERED:
        return queue(rq);
    default:
        *upload_data_size = 0;     /* the rest of a refused upload */
        return MHD_YES;
    }
}

/* ---- the loop's spare requests and clients ---- */

static struct req *req_get(struct http_loop *l)
{
    struct req *rq = l->free_reqs;
    if (rq)
        l->free_reqs = rq->next_free;
    else if (!(rq = calloc(1, sizeof *rq)))
        return NULL;
    struct jbuf body = rq->body;
    struct batch *batch = rq->batch;
    struct listing *listing = rq->listing;
    memset(rq, 0, sizeof *rq);
    rq->body = body;
    rq->batch = batch;
    rq->listing = listing;
    rq->body.n = 0;
    rq->loop = l;
    return rq;
}

static void req_free(struct req *rq)
{
    struct http_loop *l = rq->loop;
    rq->next_free = l->free_reqs;
    l->free_reqs = rq;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    struct http_loop *l = cls;
    struct req *rq = *con_cls;
    *con_cls = NULL;
    client_answered(l, c);
    if (!rq || ((uintptr_t)rq & 1))
        return;   /* refused before the handler saw it */
    if (rq->state != RQ_NEW)
        DROP(l->fig->inflight);
    if (rq->state == RQ_RUNNING) {
        /* Cannot happen while it is suspended (the loop resumes every
         * request before the daemon stops); if it does, its lookup still
         * holds it: it is freed when that is done. */
        rq->orphaned = true;
        return;
    }
    req_free(rq);
}

/* ---- clients: the header deadline ---- */

/* A connection must bring each request whole (its header, and a body if
 * one got past strict_refusal(), which refuses them) within header_timeout_s
 * of opening or of its previous answer: the deadline ends on the final
 * handler call. libmicrohttpd's
 * connection_timeout_s only counts idleness, so a client sending a byte a
 * second would hold its connection forever. Clients waiting for a header
 * are kept oldest first; those past the deadline are shut down (as nginx
 * does for client_header_timeout: no answer, the connection is closed). */

static struct client *client_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void await_header(struct http_loop *l, struct client *cl)
{
    cl->since_ns = zb_now_ns();
    cl->awaiting = true;
    APR_RING_INSERT_TAIL(&l->awaiting, cl, client, link);
    int t = l->srv->conf->server.header_timeout_s;
    if (t > 0)
        loop_deadline(l->loop, cl->since_ns + (uint64_t)t * 1000000000u);
}

static void client_got_header(struct http_loop *l, struct MHD_Connection *c)
{
    (void)l;
    struct client *cl = client_of(c);
    if (cl && cl->awaiting) {
        APR_RING_REMOVE(cl, link);
        cl->awaiting = false;
    }
}

static void client_answered(struct http_loop *l, struct MHD_Connection *c)
{
    struct client *cl = client_of(c);
    if (cl && cl->sending) {
        APR_RING_REMOVE(cl, link);
        cl->sending = false;
    }
    if (cl && !cl->awaiting)
        await_header(l, cl);
}

/* How often sending clients' sockets are looked at: a quarter of
 * connection_timeout_s, at most a second. */
static uint64_t moved_check_ns(const struct http_loop *l)
{
    uint64_t quarter = (uint64_t)l->srv->conf->server.connection_timeout_s * 250000000u;
    return quarter < 1000000000u ? quarter : 1000000000u;
}

/* An answer is going out to c: its socket is looked at until it is out
 * (client_answered). */
static void client_sending(struct http_loop *l, struct MHD_Connection *c)
{
    struct client *cl = client_of(c);
    if (!cl || cl->awaiting || cl->sending)
        return;   /* refused before its header was whole: it closes */
    cl->sending = true;
    cl->outq = cl->inq = -1;
    APR_RING_INSERT_TAIL(&l->sending, cl, client, link);
    if (l->moved_check_ns <= l->loop->now)
        l->moved_check_ns = zb_now_ns() + moved_check_ns(l);
    loop_deadline(l->loop, l->moved_check_ns);
}

/* A slow reader's answers wait in its socket's send buffer, and the
 * requests it pipelines meanwhile in the receive buffer, where
 * libmicrohttpd, which counts only its own reads and writes as activity,
 * does not see them move: it would close the connection at
 * connection_timeout_s while it is being answered. So the sockets of the
 * clients an answer goes out to are looked at every moved_check_ns, and
 * when either queue moved since the last look, libmicrohttpd's idle timer
 * is restarted (a timeout set to 0 and back restarts it). The idle time
 * so counts from the last byte moved, either way. */
static uint64_t keep_moving_clients(struct http_loop *l, uint64_t now)
{
    if (APR_RING_EMPTY(&l->sending, client, link))
        return 0;
    if (now < l->moved_check_ns)
        return l->moved_check_ns;
    unsigned timeout = (unsigned)l->srv->conf->server.connection_timeout_s;
    struct client *cl;
    APR_RING_FOREACH(cl, &l->sending, client, link) {
        int out = -1, in = -1;
        if (ioctl(cl->fd, SIOCOUTQ, &out) < 0 || ioctl(cl->fd, SIOCINQ, &in) < 0)
            continue;
        if (cl->outq >= 0 && (out != cl->outq || in != cl->inq)) {
            MHD_set_connection_option(cl->c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
            MHD_set_connection_option(cl->c, MHD_CONNECTION_OPTION_TIMEOUT, timeout);
        }
        cl->outq = out;
        cl->inq = in;
    }
    l->moved_check_ns = now + moved_check_ns(l);
    return l->moved_check_ns;
}

uint64_t http_deadlines(struct http_loop *l, uint64_t now)
{
    uint64_t next = 0;
    int t = l->srv->conf->server.header_timeout_s;
    while (t > 0 && !APR_RING_EMPTY(&l->awaiting, client, link)) {
        struct client *cl = APR_RING_FIRST(&l->awaiting);
        uint64_t due = cl->since_ns + (uint64_t)t * 1000000000u;
        if (due > now) {
            next = due;
            break;
        }
        APR_RING_REMOVE(cl, link);
        cl->awaiting = false;
        shutdown(cl->fd, SHUT_RDWR);   /* libmicrohttpd sees the end and closes it */
        BUMP(l->fig->header_timeouts);
    }
    next = deadline_min(next, keyset_deadlines(&l->keys, now));
    return deadline_min(next, keep_moving_clients(l, now));
}

static void connection_event(void *cls, struct MHD_Connection *c, void **socket_context,
                             enum MHD_ConnectionNotificationCode toe)
{
    struct http_loop *l = cls;
    struct client *cl = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        BUMP(l->fig->open);
        if ((cl = l->free_clients))
            l->free_clients = *(struct client **)cl;
        else
            cl = malloc(sizeof *cl);
        *socket_context = cl;
        if (cl) {
            const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
            cl->fd = ci ? ci->connect_fd : -1;
            cl->c = c;
            cl->sending = false;
            await_header(l, cl);
        }
        return;
    }
    DROP(l->fig->open);
    BUMP(l->fig->closed);
    if (cl) {
        if (cl->awaiting || cl->sending)
            APR_RING_REMOVE(cl, link);
        *(struct client **)cl = l->free_clients;
        l->free_clients = cl;
    }
    acceptor_slot_freed(l->srv);
}

void http_init(struct http_loop *l, struct loop *core, struct server *srv, struct lane *lanes,
               struct loop_figures *fig)
{
    l->loop = core;
    l->srv = srv;
    l->lanes = lanes;
    l->fig = fig;
    l->rng = zb_now_ns() ^ ((uint64_t)core->id << 56) ^ 0x5a17;
    APR_RING_INIT(&l->awaiting, client, link);
    APR_RING_INIT(&l->sending, client, link);
    keyset_waiters_init(&l->keys, core);
}

void http_wind_down(struct http_loop *l)
{
    keyset_wind_down(&l->keys);
}

void http_loop_free(struct http_loop *l)
{
    while (l->free_reqs) {
        struct req *rq = l->free_reqs;
        l->free_reqs = rq->next_free;
        free(rq->body.p);
        batch_free(rq->batch);
        listing_free(rq->listing);
        free(rq);
    }
    for (int i = 0; i < SRV_MAX_SERVED; i++)
        cache_free(l->cache[i]);
    while (l->free_clients) {
        struct client *cl = l->free_clients;
        l->free_clients = *(struct client **)cl;
        free(cl);
    }
}

/* MHD_OPTION_CONNECTION_MEMORY_LIMIT (max_request_bytes) is the per-connection
 * pool the request line and headers must fit in. Past it libmicrohttpd 0.9.75
 * answers by itself, before our handler runs: "414 URI Too Long" for a long
 * request line, "431 Request Header Fields Too Large" for big headers, both
 * with Connection: close and an empty body without a Content-Type (so not
 * our JSON). The test suite checks both statuses; docs/RELIABILITY.md lists
 * every answer libmicrohttpd makes on its own. */
static struct MHD_Daemon *http_daemon(struct http_loop *l, struct zb_err *err)
{
    const struct server *srv = l->srv;
    const struct server_conf *sc = &srv->conf->server;
    unsigned flags = MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_TURBO | (srv->tls_cert ? MHD_USE_TLS : 0);
    struct MHD_OptionItem tls[] = {
        { srv->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, srv->tls_cert },
        { MHD_OPTION_HTTPS_MEM_KEY, 0, srv->tls_key },
        { MHD_OPTION_END, 0, NULL },
    };
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, handle, l,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)sc->connection_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)sc->max_connections,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)sc->max_request_bytes,
        MHD_OPTION_NOTIFY_COMPLETED, completed, l,
        MHD_OPTION_NOTIFY_CONNECTION, connection_event, l,
        MHD_OPTION_UNESCAPE_CALLBACK, strict_unescape, NULL,
        MHD_OPTION_URI_LOG_CALLBACK, strict_log_uri, NULL,
        MHD_OPTION_SIGPIPE_HANDLED_BY_APP, 1,
        MHD_OPTION_ARRAY, tls,
        MHD_OPTION_END);
    if (!d)
        zb_fail(err, ZB_ERR_SYS, "libmicrohttpd would not start (max_connections %d, "
                "max_request_bytes %d%s)", sc->max_connections, sc->max_request_bytes,
                srv->tls_cert ? ", TLS: is the key the certificate's?" : "");
    return d;
}

/* libmicrohttpd's epoll fd: nothing to do when it is ready, as the daemon
 * runs every iteration (http_turn). */
static void mhd_ready(struct watch *w, uint32_t events)
{
    (void)w, (void)events;
}

int http_start(struct http_loop *l, struct zb_err *err)
{
    if (!(l->mhd = http_daemon(l, err)))
        return -1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(l->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    if (!info)
        return zb_fail(err, ZB_ERR_SYS, "loop %d: libmicrohttpd has no epoll fd", l->loop->id);
    l->mhd_watch.ready = mhd_ready;
    return loop_watch(l->loop, info->epoll_fd, EPOLLIN, &l->mhd_watch, err);
}

void http_turn(struct http_loop *l)
{
    MHD_run(l->mhd);
}

int http_sleep_ms(struct http_loop *l)
{
    MHD_UNSIGNED_LONG_LONG mhd;
    return MHD_get_timeout(l->mhd, &mhd) == MHD_YES && mhd < 60000 ? (int)mhd : 60000;
}

void http_stop(struct http_loop *l)
{
    if (l->mhd)
        MHD_stop_daemon(l->mhd);
    l->mhd = NULL;
}
