/* The HTTP side: libmicrohttpd's callbacks, routes, answers.
 *
 * A request is a struct req, taken from its loop's spares at the first
 * handler call and given back when libmicrohttpd says it is complete. Its
 * life:
 *   RQ_NEW      the first handler call checks what libmicrohttpd 0.9.75
 *               does not (RFC 9112's rules: see malformed()) and the
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
#include "http.h"
#include "json.h"
#include "keyset.h"
#include "lookup.h"
#include "reason.h"
#include "stats.h"

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

struct health;

struct req {
    APR_RING_ENTRY(req) link;      /* in the loop's keys_waiting list */
    struct loop *loop;
    struct MHD_Connection *c;
    struct req *next_free;
    size_t rawlen;                 /* the raw URI's length + 1 (see log_uri) */
    bool bad_target;               /* the raw URI is not a target we take (see log_uri) */
    bool close;                    /* refused on its first call: the connection closes */
    enum req_state state;
    bool suspended;
    bool orphaned;                 /* its connection went while it ran: free it when done */
    unsigned status;
    struct jbuf body;
    struct lb *lb;                 /* a lookup: its (dataset, backend), on this loop */
    enum zb_strategy strategy;
    uint64_t t0;
    double miss;                   /* /random?miss= */
    uint64_t waiting_since;        /* waiting for a key set since */
    struct lookup lk;
    struct health *health;
};

/* ---- answers ---- */

static void count_answer(struct req *rq)
{
    struct loop *l = rq->loop;
    unsigned status = rq->status;
    BUMP(l->requests);
    counter *c = status < 400 ? &l->ok : status < 500 ? &l->e4xx : &l->e5xx;
    BUMP(*c);
    struct lb_stats *st = rq->lb ? &rq->lb->st : NULL;
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
    const struct srv_backend *sb = rq->lb ? rq->lb->sb : NULL;
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

static void client_sending(struct loop *l, struct MHD_Connection *c);

static enum MHD_Result queue(struct req *rq)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(rq->body.n, rq->body.p, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json; charset=utf-8");
    if (rq->status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
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
static int put_row(void *arg, int ncols, const char *const *vals, const size_t *lens)
{
    struct req *rq = arg;
    const struct srv_backend *sb = rq->lb->sb;
    const struct zb_column *col = sb->data->col;
    struct jbuf *b = &rq->body;
    if (rq->lk.rows > 1)
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

static struct req *req_get(struct loop *l);
static void req_free(struct req *rq);

/* The failure's words for the client (reason.h); the database's own
 * message goes to the log, at most once a second per loop, unless the
 * log has said it already (the backend went down) or it is the server's
 * own state (stopping, overloaded). */
static const char *say_why(struct req *rq, struct srv_backend *sb, const struct zb_err *err,
                           bool overload, const char *what, const char *log_as, char *buf,
                           size_t len)
{
    if (atomic_load_explicit(&rq->loop->srv->stopping, RELAXED)) {
        snprintf(buf, len, "the server is stopping");
        return buf;
    }
    bool unavailable = lookup_rc_of(err) == LOOKUP_UNAVAILABLE;
    if (!unavailable || (!overload && atomic_load(&sb->up)))
        served_log_error(sb, log_as, err->msg);
    return reason_for_client(sb, err, overload, what, buf, len);
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
        say_why(rq, rq->lb->sb, err, lk->overloaded, "the lookup", "lookup failed", why,
                sizeof why);
        set_error(rq, rc == LOOKUP_UNAVAILABLE ? 503 : 500, lk->key, "%s", why);
    } else if (lk->rows == 0) {
        set_error(rq, 404, lk->key, rq->lb->sb->postal ? "no such code" : "no such key");
    } else {
        JB_LIT(&rq->body, "]}");
        set_answer(rq, 200);
    }
}

/* Starts the lookup of key (checked, len <= SRV_KEY_MAX); the request
 * waits, suspended, unless the answer is already in. */
static void start_lookup(struct req *rq, const char *key, size_t len)
{
    struct jbuf *b = &rq->body;
    struct lookup *lk = &rq->lk;
    const struct srv_backend *sb = rq->lb->sb;
    memcpy(lk->key, key, len);
    lk->key[len] = 0;
    lk->keylen = len;
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
    lk->lb = rq->lb;
    lk->strategy = rq->strategy;
    lk->on_row = put_row;
    lk->arg = rq;
    lk->done = lookup_done;
    rq->state = RQ_RUNNING;
    lookup_start(lk, false);
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

/* /random: a code of the key set (or, with probability miss, one that is
 * not in it); false while the key set is still loading. */
static bool start_random(struct req *rq)
{
    struct zb_err err = { 0 };
    bool loading;
    const struct key_set *set = keyset_get(rq->lb->sb, &loading, &err);
    if (!set) {
        char why[512];
        if (!loading)
            set_error(rq, 503, NULL, "%s", reason_for_client(rq->lb->sb, &err, false,
                                                             "the query of /random's key set",
                                                             why, sizeof why));
        return !loading;
    }
    uint64_t *rng = &rq->loop->rng;
    uint32_t k = 0;
    const uint32_t *keys = set->keys;
    size_t n = set->n;
    if (n > 0 && !(rq->miss > 0 && zb_rand_unit(rng) < rq->miss)) {
        k = keys[zb_rand_below(rng, (uint32_t)n)];
    } else {
        /* A code that is not in the table: random 7-digit numbers are
         * almost all misses (a full list fills ~1.2% of them). */
        for (int tries = 0; tries < 1000; tries++) {
            k = zb_rand_below(rng, 10000000);
            if (!has_key(keys, n, k))
                break;
        }
    }
    char code[8];
    snprintf(code, sizeof code, "%07u", k);
    start_lookup(rq, code, 7);
    return true;
}

void http_keys_changed(struct loop *l)
{
    struct req *rq = APR_RING_FIRST(&l->keys_waiting), *nx;
    for (; rq != APR_RING_SENTINEL(&l->keys_waiting, req, link); rq = nx) {
        nx = APR_RING_NEXT(rq, link);
        struct srv_backend *sb = rq->lb->sb;
        if (!keyset_pending(sb)) {
            APR_RING_REMOVE(rq, link);
            if (!start_random(rq))   /* a load again: wait for it, as long as allowed */
                APR_RING_INSERT_TAIL(&l->keys_waiting, rq, req, link);
        }
    }
}

/* What is wrong with key for sb's key column (*status 400 or 414), or
 * NULL: checked before any database work. */
static const char *bad_key(const struct srv_backend *sb, const char *key, size_t len,
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

/* ?strategy= (or the older ?persistent=0|1); false after answering 400. */
static bool pick_strategy(struct req *rq)
{
    struct srv_backend *sb = rq->lb->sb;
    rq->strategy = sb->strategy;
    const char *s = MHD_lookup_connection_value(rq->c, MHD_GET_ARGUMENT_KIND, "strategy");
    const char *p = MHD_lookup_connection_value(rq->c, MHD_GET_ARGUMENT_KIND, "persistent");
    bool persistent;
    if (s) {
        int st = conf_choice(zb_strategy_names, s);
        if (st < 0) {
            char names[128];
            conf_choice_list(zb_strategy_names, names, sizeof names);
            set_error(rq, 400, NULL, "strategy must be %s", names);
            return false;
        }
        rq->strategy = (enum zb_strategy)st;
    } else if (p) {
        if (parse_bool_arg(p, &persistent) < 0) {
            set_error(rq, 400, NULL, "persistent must be 0 or 1");
            return false;
        }
        rq->strategy = persistent ? ZB_POOLED : ZB_PER_REQUEST;
    }
    if (!lookup_strategy_ok(sb, rq->strategy)) {
        set_error(rq, 400, NULL, "strategy %s: the %s driver cannot pipeline",
                  zb_strategy_names[rq->strategy], sb->conf.driver);
        return false;
    }
    return true;
}

/* GET /DATASET/BACKEND/KEY (rq->lb set): a lookup of key, or for the
 * postal dataset /random. */
static void serve(struct req *rq, const char *key)
{
    if (!pick_strategy(rq))
        return;
    const struct srv_backend *sb = rq->lb->sb;
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
    if (!start_random(rq)) {   /* the key set is loading: wait for it */
        rq->state = RQ_RUNNING;
        rq->waiting_since = zb_now_ns();
        APR_RING_INSERT_TAIL(&rq->loop->keys_waiting, rq, req, link);
        loop_deadline(rq->loop, rq->waiting_since +
                      (uint64_t)rq->lb->sb->conf.acquire_timeout_ms * 1000000u);
    }
}

/* ---- /health ---- */

/* One round trip per backend, all at once; the answer when the last is in. */
struct health {
    int pending;
    struct health_item {
        struct lookup lk;          /* first: the item is found from its lookup */
        struct req *rq;
        bool up;
        char reason[512];
    } item[SRV_MAX_SERVED];
};

static void health_answer(struct req *rq)
{
    struct server *srv = rq->loop->srv;
    struct health *h = rq->health;
    struct jbuf *b = &rq->body;
    bool all = true;
    for (int i = 0; i < srv->nserved; i++)
        all &= h->item[i].up;
    b->n = 0;
    jb_printf(b, "{\"status\":\"%s\",\"backends\":[", all ? "ok" : "degraded");
    for (int i = 0; i < srv->nserved; i++) {
        struct srv_backend *sb = srv->served[i];
        jb_printf(b, "%s{\"name\":", i ? "," : "");
        jb_cstr(b, sb->conf.name);
        if (!sb->postal) {
            JB_LIT(b, ",\"dataset\":");
            jb_cstr(b, sb->data->conf->name);
        }
        JB_LIT(b, ",\"driver\":");
        jb_cstr(b, sb->conf.driver);
        jb_printf(b, ",\"up\":%s", h->item[i].up ? "true" : "false");
        if (!h->item[i].up) {
            JB_LIT(b, ",\"error\":");
            jb_cstr(b, h->item[i].reason);
        }
        JB_LIT(b, "}");
    }
    JB_LIT(b, "]}");
    free(h);
    rq->health = NULL;
    set_answer(rq, all ? 200 : 503);
}

/* One more check is in (or, the last time, all were started). */
static void health_settle(struct req *rq)
{
    if (--rq->health->pending)
        return;
    if (rq->orphaned) {
        free(rq->health);
        rq->health = NULL;
        req_free(rq);
        return;
    }
    health_answer(rq);
}

static void health_done(struct lookup *lk, int rc, const struct zb_err *err)
{
    struct health_item *it = (struct health_item *)lk;
    it->up = rc == LOOKUP_OK;
    if (err)
        say_why(it->rq, lk->lb->sb, err, lk->overloaded, "the health check's lookup",
                "health check failed", it->reason, sizeof it->reason);
    health_settle(it->rq);
}

static void health(struct req *rq)
{
    struct server *srv = rq->loop->srv;
    struct health *h = calloc(1, sizeof *h);
    if (!h) {
        set_error(rq, 500, NULL, "out of memory");
        return;
    }
    rq->health = h;
    rq->state = RQ_RUNNING;
    h->pending = srv->nserved + 1;   /* + 1: no answer before all are started */
    for (int i = 0; i < srv->nserved; i++) {
        struct health_item *it = &h->item[i];
        it->rq = rq;
        it->lk.lb = &rq->loop->lb[i];
        it->lk.strategy = ZB_POOLED;
        /* A key every key column takes; whether it is there does not matter. */
        const char *key = srv->served[i]->postal ? "0000000" : "0";
        it->lk.keylen = strlen(key);
        memcpy(it->lk.key, key, it->lk.keylen + 1);
        it->lk.done = health_done;
        lookup_start(&it->lk, true);
    }
    health_settle(rq);
}

/* ---- the handler ---- */

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
static struct srv_backend *find_backend(struct server *srv, int d, const char *s, size_t len)
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

static void route(struct req *rq, const char *url)
{
    struct loop *l = rq->loop;
    const char *path = origin_path(url);
    rq->t0 = zb_now_ns();
    /* /DATASET/BACKEND/KEY: the key is the rest, slashes and all. */
    const char *ds = path + 1, *bs = path[0] == '/' ? strchr(ds, '/') : NULL;
    const char *ks = bs ? strchr(bs + 1, '/') : NULL;
    int d = ks ? find_dataset(l->srv, ds, (size_t)(bs - ds)) : -1;
    if (d >= 0) {
        struct srv_backend *sb = find_backend(l->srv, d, bs + 1, (size_t)(ks - bs - 1));
        if (!sb) {
            set_error(rq, 404, NULL, "no such backend (see /health for the list)");
            return;
        }
        rq->lb = &l->lb[sb->index];
        serve(rq, ks + 1);
        return;
    }
    if (!strcmp(path, "/health")) {
        health(rq);
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
              "/zip/{backend}/{code}, /zip/{backend}/random, /health or /stats", datasets);
}

/* ---- RFC 9112 checks on the request head ---- */

/* log_uri gives every request this Content-Length: 0 before libmicrohttpd
 * reads its header lines, and libmicrohttpd's own framing takes the first
 * Content-Length it finds, so it never parses the client's. 0.9.75 answers
 * a malformed one itself, twice over (two status lines, two header
 * blocks); this way the client's values reach malformed(), which refuses
 * them with one answer. It is told apart by its address. A request with a
 * body is refused on its first handler call (the server serves only GET),
 * with Connection: close, so the body is never read as a request. */
static const char injected_length[] = "0";

/* RFC 9110 5.6.2: tchar. */
static bool is_tchar(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || is_digit((char)ch) ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* What the header lines say, gathered in one pass. */
struct head {
    const char *bad;               /* the first refusal, or NULL */
    unsigned status;               /* its status */
    int hosts;
    int lengths;                   /* Content-Length lines */
    uint64_t length;               /* their value */
    const char *te;                /* the last Transfer-Encoding line */
    char msg[160];
};

static void refuse(struct head *h, unsigned status, const char *msg)
{
    if (!h->bad) {
        h->bad = msg;
        h->status = status;
    }
}

/* A Content-Length value: 1*DIGIT (RFC 9112 6.3: a list such as "5, 5" or
 * a sign is refused), within 64 bits; false if not. */
static bool parse_length(const char *v, size_t len, uint64_t *out)
{
    uint64_t n = 0;
    while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
        len--;   /* trailing OWS is not part of a field value (RFC 9110 5.5) */
    if (len == 0 || len > 19)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit(v[i]))
            return false;
        n = n * 10 + (uint64_t)(v[i] - '0');
    }
    *out = n;
    return true;
}

static enum MHD_Result each_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    struct head *h = cls;
    if (value == injected_length)
        return MHD_YES;
    /* A header name is a token (RFC 9112 5.1): whitespace before the
     * colon, which 0.9.75 keeps as part of the name, is refused here. */
    /* obs-fold (RFC 9112 5.2): 0.9.75 joins a continuation line onto a
     * copy of the name, made after the line it read; every other name
     * lies before its value in the request as read. */
    if (value < key)
        refuse(h, 400, "a header line folded onto the next (obs-fold)");
    bool token = key_size > 0;
    for (size_t i = 0; i < key_size; i++)
        token &= is_tchar((unsigned char)key[i]);
    if (!token)
        refuse(h, 400, "a header name that is not a token (whitespace before the colon, or a "
               "character RFC 9110 does not allow)");
    /* A field value holds no control character but HTAB (RFC 9110 5.5):
     * a bare CR, which 0.9.75 leaves in the value, is refused. */
    for (size_t i = 0; i < value_size; i++) {
        unsigned char ch = (unsigned char)value[i];
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
            refuse(h, 400, "a control character (a bare CR?) in a header value");
            break;
        }
    }
    if (token && !strcasecmp(key, MHD_HTTP_HEADER_HOST)) {
        h->hosts++;
    } else if (token && !strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        uint64_t n;
        if (!parse_length(value, value_size, &n))
            refuse(h, 400, "a Content-Length that is not one decimal number");
        else if (h->lengths && n != h->length)
            refuse(h, 400, "two different Content-Length headers");
        else
            h->length = n;
        h->lengths++;
    } else if (token && !strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        h->te = value;
    }
    return MHD_YES;
}

/* Whether a Transfer-Encoding ends in chunked (RFC 9112 6.3: else the
 * body's length is unknown). */
static bool ends_chunked(const char *te)
{
    size_t n = strlen(te);
    while (n && (te[n - 1] == ' ' || te[n - 1] == '\t'))
        n--;
    return n >= 7 && !strncasecmp(te + n - 7, "chunked", 7) &&
           (n == 7 || te[n - 8] == ',' || te[n - 8] == ' ' || te[n - 8] == '\t');
}

/* What RFC 9112 says to refuse and libmicrohttpd 0.9.75 lets through (or
 * answers badly); a message with *status 400 or 413, or NULL. */
static const char *malformed(struct req *rq, const char *url, const char *method,
                             const char *version, unsigned *status)
{
    *status = 400;
    /* A NUL byte in the request line cuts MHD's C string short: see
     * log_uri. */
    if (rq->rawlen && *version && url + rq->rawlen != version)
        return "NUL byte in the request line";
    /* RFC 9112 3.2.4: the asterisk-form is OPTIONS's only (405 here). */
    if (rq->bad_target || (!strcmp(url, "*") && !strcmp(method, MHD_HTTP_METHOD_GET)))
        return "the request target is not origin-form (/path) or absolute-form "
               "(http://host/path), or holds a space, a control or a non-ASCII byte";
    struct head h = { 0 };
    MHD_get_connection_values_n(rq->c, MHD_HEADER_KIND, each_header, &h);
    if (h.bad) {
        *status = h.status;
        return h.bad;
    }
    bool http11 = !strcmp(version, MHD_HTTP_VERSION_1_1);
    /* RFC 9112 3.2: exactly one Host in HTTP/1.1, at most one in 1.0. */
    if (http11 && h.hosts == 0)
        return "HTTP/1.1 request without a Host header";
    if (h.hosts > 1)
        return "more than one Host header";
    /* RFC 9112 6.1: both framings at once is the mark of request
     * smuggling; Transfer-Encoding in HTTP/1.0, or not ending in chunked,
     * leaves the body's length unknown. */
    if (h.te && h.lengths)
        return "both Content-Length and Transfer-Encoding";
    if (h.te && (!http11 || !ends_chunked(h.te)))
        return "a Transfer-Encoding that is not chunked, or in HTTP/1.0";
    /* The server serves GET and HEAD only: no request has a body. */
    if (h.te || h.length > 0) {
        *status = 413;
        return "a request body: the server takes none (GET and HEAD only)";
    }
    return NULL;
}

static void client_answered(struct loop *l, struct MHD_Connection *c);
static void client_got_header(struct loop *l, struct MHD_Connection *c);

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    (void)upload_data;
    struct loop *l = cls;
    struct req *rq = *con_cls;
    if (!rq || ((uintptr_t)rq & 1)) {   /* the first call: what log_uri left */
        uintptr_t raw = (uintptr_t)rq;
        if (!(rq = req_get(l)))
            return MHD_NO;
        rq->c = c;
        rq->rawlen = raw >> 2;
        rq->bad_target = raw & 2;
        *con_cls = rq;
    }
    switch (rq->state) {
    case RQ_NEW: {
        BUMP(l->inflight);
        rq->state = RQ_READ;
        unsigned status;
        bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
        const char *bad = malformed(rq, url, method, version, &status);
        /* Refusals are answered at once, with Connection: close: MHD 0.9.75
         * treats a response queued on the first call as "early" and reads
         * no body after it. Other methods get their 405 (their body, if
         * any, is never read either). A GET is answered on the final call,
         * which keeps the connection alive. */
        if (bad && status == 413 && !get)
            bad = NULL;   /* a body on a POST: its 405 says more */
        if (bad || !get) {
            rq->t0 = zb_now_ns();
            rq->close = true;
            if (bad)
                set_error(rq, status, NULL, "%s", bad);
            else
                set_error(rq, 405, NULL, "method not allowed: only GET and HEAD");
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

static struct req *req_get(struct loop *l)
{
    struct req *rq = l->free_reqs;
    if (rq)
        l->free_reqs = rq->next_free;
    else if (!(rq = calloc(1, sizeof *rq)))
        return NULL;
    struct jbuf body = rq->body;
    memset(rq, 0, sizeof *rq);
    rq->body = body;
    rq->body.n = 0;
    rq->loop = l;
    return rq;
}

static void req_free(struct req *rq)
{
    struct loop *l = rq->loop;
    free(rq->health);
    rq->health = NULL;
    rq->next_free = l->free_reqs;
    l->free_reqs = rq;
}

/* RFC 9112 3.2: a request target as sent is origin-form (/path?query), or
 * absolute-form (http://host/path), or "*" (checked with the method),
 * in visible ASCII; true if uri is none of those. */
static bool bad_target(const char *uri)
{
    for (const unsigned char *p = (const unsigned char *)uri; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f)
            return true;
    if (uri[0] == '/' || !strcmp(uri, "*"))
        return false;
    const char *auth = !strncasecmp(uri, "http://", 7) ? uri + 7
                       : !strncasecmp(uri, "https://", 8) ? uri + 8 : NULL;
    return !auth || !*auth || *auth == '/';
}

/* MHD_OPTION_URI_LOG_CALLBACK, called on the raw URI (before unescaping and
 * the split at '?') once MHD has put a NUL in place of the space before the
 * version. A NUL byte in the request line itself cuts MHD's C string short:
 * "GET /zip/x/1000001\0junk HTTP/1.1" would reach us as a valid code. So the
 * URI's length as a string is kept, and the handler checks that it reaches
 * the version, which MHD passes as a pointer into the same line: url +
 * length + 1 == version, or the URI held a NUL. The length (shifted by
 * two) and bad_target's verdict (bit 1) travel in *con_cls, odd (bit 0) so
 * it is never taken for a struct req: no request is made
 * here, as 0.9.75 does not always call the completion callback for a
 * request it refuses between the request line and the handler (431 for too
 * many arguments for max_request_bytes). */
static void *log_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    /* Before any header line is read: see injected_length. If the pool has
     * no room for it, MHD parses the client's Content-Length itself. */
    MHD_set_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH, injected_length);
    return (void *)((((uintptr_t)strlen(uri) + 1) << 2) | (uintptr_t)bad_target(uri) << 1 | 1);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    struct loop *l = cls;
    struct req *rq = *con_cls;
    *con_cls = NULL;
    client_answered(l, c);
    if (!rq || ((uintptr_t)rq & 1))
        return;   /* refused before the handler saw it */
    if (rq->state != RQ_NEW)
        DROP(l->inflight);
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
 * one got past malformed(), which refuses them) within header_timeout_s
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

static void await_header(struct loop *l, struct client *cl)
{
    cl->since_ns = zb_now_ns();
    cl->awaiting = true;
    APR_RING_INSERT_TAIL(&l->awaiting, cl, client, link);
    int t = l->srv->conf->server.header_timeout_s;
    if (t > 0)
        loop_deadline(l, cl->since_ns + (uint64_t)t * 1000000000u);
}

static void client_got_header(struct loop *l, struct MHD_Connection *c)
{
    (void)l;
    struct client *cl = client_of(c);
    if (cl && cl->awaiting) {
        APR_RING_REMOVE(cl, link);
        cl->awaiting = false;
    }
}

static void client_answered(struct loop *l, struct MHD_Connection *c)
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
static uint64_t moved_check_ns(const struct loop *l)
{
    uint64_t quarter = (uint64_t)l->srv->conf->server.connection_timeout_s * 250000000u;
    return quarter < 1000000000u ? quarter : 1000000000u;
}

/* An answer is going out to c: its socket is looked at until it is out
 * (client_answered). */
static void client_sending(struct loop *l, struct MHD_Connection *c)
{
    struct client *cl = client_of(c);
    if (!cl || cl->awaiting || cl->sending)
        return;   /* refused before its header was whole: it closes */
    cl->sending = true;
    cl->outq = cl->inq = -1;
    APR_RING_INSERT_TAIL(&l->sending, cl, client, link);
    if (l->moved_check_ns <= l->now)
        l->moved_check_ns = zb_now_ns() + moved_check_ns(l);
    loop_deadline(l, l->moved_check_ns);
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
static uint64_t keep_moving_clients(struct loop *l, uint64_t now)
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

uint64_t http_deadlines(struct loop *l, uint64_t now)
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
        BUMP(l->header_timeouts);
    }
    /* /random requests waiting for a key set too long. */
    struct req *rq = APR_RING_FIRST(&l->keys_waiting), *nx;
    for (; rq != APR_RING_SENTINEL(&l->keys_waiting, req, link); rq = nx) {
        nx = APR_RING_NEXT(rq, link);
        const struct backend_conf *bc = &rq->lb->sb->conf;
        uint64_t due = rq->waiting_since + (uint64_t)bc->acquire_timeout_ms * 1000000u;
        if (due > now) {
            if (!next || due < next)
                next = due;
            continue;
        }
        APR_RING_REMOVE(rq, link);
        set_error(rq, 503, NULL, "backend %s: its keys were not loaded within %d ms", bc->name,
                  bc->acquire_timeout_ms);
    }
    uint64_t moved = keep_moving_clients(l, now);
    return moved && (!next || moved < next) ? moved : next;
}

static void connection_event(void *cls, struct MHD_Connection *c, void **socket_context,
                             enum MHD_ConnectionNotificationCode toe)
{
    struct loop *l = cls;
    struct client *cl = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        BUMP(l->open);
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
    DROP(l->open);
    BUMP(l->closed);
    if (cl) {
        if (cl->awaiting || cl->sending)
            APR_RING_REMOVE(cl, link);
        *(struct client **)cl = l->free_clients;
        l->free_clients = cl;
    }
    acceptor_slot_freed(l->srv);
}

void http_loop_init(struct loop *l)
{
    APR_RING_INIT(&l->awaiting, client, link);
    APR_RING_INIT(&l->sending, client, link);
    APR_RING_INIT(&l->keys_waiting, req, link);
}

void http_wind_down(struct loop *l)
{
    while (!APR_RING_EMPTY(&l->keys_waiting, req, link)) {
        struct req *rq = APR_RING_FIRST(&l->keys_waiting);
        APR_RING_REMOVE(rq, link);
        set_error(rq, 503, NULL, "the server is stopping");
    }
}

void http_loop_free(struct loop *l)
{
    while (l->free_reqs) {
        struct req *rq = l->free_reqs;
        l->free_reqs = rq->next_free;
        free(rq->body.p);
        free(rq);
    }
    while (l->free_clients) {
        struct client *cl = l->free_clients;
        l->free_clients = *(struct client **)cl;
        free(cl);
    }
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


/* MHD_OPTION_CONNECTION_MEMORY_LIMIT (max_request_bytes) is the per-connection
 * pool the request line and headers must fit in. Past it libmicrohttpd 0.9.75
 * answers by itself, before our handler runs: "414 URI Too Long" for a long
 * request line, "431 Request Header Fields Too Large" for big headers, both
 * with Connection: close and an empty body without a Content-Type (so not
 * our JSON). The test suite checks both statuses; docs/RELIABILITY.md lists
 * every answer libmicrohttpd makes on its own. */
static struct MHD_Daemon *http_daemon(struct loop *l, struct zb_err *err)
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
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
        MHD_OPTION_URI_LOG_CALLBACK, log_uri, NULL,
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

int http_start(struct loop *l, struct zb_err *err)
{
    if (!(l->mhd = http_daemon(l, err)))
        return -1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(l->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    if (!info)
        return zb_fail(err, ZB_ERR_SYS, "loop %d: libmicrohttpd has no epoll fd", l->id);
    l->mhd_watch.ready = mhd_ready;
    return loop_watch(l, info->epoll_fd, EPOLLIN, &l->mhd_watch, err);
}

void http_turn(struct loop *l)
{
    MHD_run(l->mhd);
}

int http_sleep_ms(struct loop *l)
{
    MHD_UNSIGNED_LONG_LONG mhd;
    return MHD_get_timeout(l->mhd, &mhd) == MHD_YES && mhd < 60000 ? (int)mhd : 60000;
}

void http_stop(struct loop *l)
{
    if (l->mhd)
        MHD_stop_daemon(l->mhd);
    l->mhd = NULL;
}
