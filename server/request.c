/* What a route does with a request (see request.h): its answer, its
 * errors, its rows as JSON, its lookup, its keys. Every route answers
 * through here, so an answer is counted once, on its lane, and its shape
 * (the error object, a row) is written in one place. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "reason.h"
#include "request.h"
#include "route.h"

static void count(struct request *rq)
{
    int r = route_index(rq->route);
    if (rq->sv && r >= 0)
        BUMP(rq->loop->served_by[r][rq->sv->index]);
    struct lane_stats *st = rq->lane ? &rq->lane->st : NULL;
    if (!st)
        return;
    unsigned status = rq->status;
    BUMP(st->requests);
    counter *c = status < 400 ? &st->ok : status < 500 ? &st->errors_4xx : &st->errors_5xx;
    BUMP(*c);
    if (status == 404)
        BUMP(st->not_found);
    hist_record_own(&st->latency, zb_now_ns() - rq->t0);
}

void request_answer(struct request *rq, unsigned status)
{
    rq->status = status;
    if (rq->body.oom) {
        static const char oom[] = "{\"error\":\"out of memory\",\"status\":500}";
        rq->body.oom = false;
        rq->body.n = 0;
        JB_LIT(&rq->body, oom);
        rq->status = 500;
        rq->content_type = NULL;
    }
    count(rq);
    rq->answered(rq);
}

void request_error(struct request *rq, unsigned status, const char *key, const char *fmt, ...)
{
    char msg[600];
    FORMAT_INTO(msg, fmt);
    struct jbuf *b = &rq->body;
    const struct served *sv = rq->sv;
    bool postal = !sv || sv->key_kind == KEY_POSTAL;
    b->n = 0;
    rq->content_type = NULL;
    JB_LIT(b, "{");
    if (!postal) {
        JB_LIT(b, "\"dataset\":");
        jb_cstr(b, sv->data->conf->name);
        JB_LIT(b, ",");
    }
    if (sv) {
        JB_LIT(b, "\"backend\":");
        jb_cstr(b, sv->conf.name);
        JB_LIT(b, ",");
    }
    if (key) {
        if (postal)
            JB_LIT(b, "\"code\":");
        else
            JB_LIT(b, "\"key\":");
        jb_cstr(b, key);
        JB_LIT(b, ",");
    }
    JB_LIT(b, "\"error\":");
    jb_cstr(b, msg);
    jb_printf(b, ",\"status\":%u}", status);
    request_answer(rq, status);
}

void request_gone(struct request *rq)
{
    rq->gone(rq);
}

bool request_stopping(const struct request *rq)
{
    return atomic_load_explicit(&rq->loop->srv->stopping, RELAXED);
}

/* ---- keys ---- */

static bool is_digits(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return len > 0;
}

/* An integer key: an optional '-' and 1-19 digits, within 64 bits. */
static bool is_integer(const char *s, size_t len)
{
    size_t i = (len > 0 && s[0] == '-') ? 1 : 0;
    if (len - i > 19 || !is_digits(s + i, len - i))
        return false;
    if (len - i < 19)
        return true;
    char buf[24];
    memcpy(buf, s, len);
    buf[len] = 0;
    errno = 0;
    strtoll(buf, NULL, 10);
    return errno != ERANGE;
}

const char *request_bad_key(const struct served *sv, const char *key, size_t len,
                            unsigned *status, char *msg, size_t msglen)
{
    *status = 400;
    switch (sv->key_kind) {
    case KEY_POSTAL:
        if (len == 7 && is_digits(key, 7))
            return NULL;
        return "the code must be exactly 7 digits 0-9 (or 'random')";
    case KEY_INTEGER:
        if (is_integer(key, len))
            return NULL;
        snprintf(msg, msglen, "the key of dataset %s must be an integer (an optional '-' and 1 to "
                 "19 digits, within 64 bits)%s", sv->data->conf->name, strcmp(key, "random") ? "" :
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

/* ---- rows ---- */

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
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
    else
        return false;
    if (i < len && s[i] == '.') {
        for (d = ++i; i < len && s[i] >= '0' && s[i] <= '9'; i++)
            ;
        if (i == d)
            return false;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        if (++i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        for (d = i; i < len && s[i] >= '0' && s[i] <= '9'; i++)
            ;
        if (i == d)
            return false;
    }
    return i == len;
}

int request_put_row(struct jbuf *b, const struct served *sv, long nth, int ncols,
                    const char *const *vals, const size_t *lens)
{
    const struct zb_column *col = sv->data->col;
    if (nth > 1)
        JB_LIT(b, ",{");
    else
        JB_LIT(b, "{");
    int n = ncols < sv->data->ncols ? ncols : sv->data->ncols;
    for (int i = 0; i < n; i++) {
        jb_put(b, sv->colkey[i].s, sv->colkey[i].len);
        if (!vals[i])
            JB_LIT(b, "null");
        else if (col[i].type == ZB_REAL)
            jb_real(b, vals[i], lens[i]);
        else if (col[i].type != ZB_TEXT && is_json_number(vals[i], lens[i]))
            jb_put(b, vals[i], lens[i]);
        else
            jb_str(b, vals[i], lens[i]);
    }
    JB_LIT(b, "}");
    return 0;
}

void request_rows_begin(struct jbuf *b, const struct served *sv, const char *key, size_t len)
{
    b->n = 0;
    if (sv->key_kind == KEY_POSTAL) {
        JB_LIT(b, "{\"backend\":");
        jb_cstr(b, sv->conf.name);
        JB_LIT(b, ",\"code\":");
    } else {
        JB_LIT(b, "{\"dataset\":");
        jb_cstr(b, sv->data->conf->name);
        JB_LIT(b, ",\"backend\":");
        jb_cstr(b, sv->conf.name);
        JB_LIT(b, ",\"key\":");
    }
    jb_str(b, key, len);
    JB_LIT(b, ",\"rows\":[");
}

static int put_row(struct lookup *lk, int ncols, const char *const *vals, const size_t *lens)
{
    struct request *rq = lk->arg;
    return request_put_row(&rq->body, rq->sv, lk->rows, ncols, vals, lens);
}

void request_lookup_rows(struct request *rq, struct lookup *lk, const char *key, size_t len,
                         lookup_row_fn on_row,
                         void (*done)(struct lookup *lk, int rc, const struct zb_err *err))
{
    memcpy(lk->key, key, len);
    lk->key[len] = 0;
    lk->keylen = len;
    lk->lane = rq->lane;
    lk->strategy = rq->strategy;
    lk->on_row = on_row;
    lk->arg = rq;
    lk->done = done;
    lookup_start(lk);
}

void request_lookup(struct request *rq, struct lookup *lk, const char *key, size_t len,
                    void (*done)(struct lookup *lk, int rc, const struct zb_err *err))
{
    request_rows_begin(&rq->body, rq->sv, key, len);
    request_lookup_rows(rq, lk, key, len, put_row, done);
}

bool request_went_on(struct request *rq, struct lookup *lk, int rc, const struct zb_err *err,
                     const char *what, const char *key)
{
    if (rq->orphaned) {
        request_gone(rq);
        return false;
    }
    if (rc == LOOKUP_OK)
        return true;
    char why[512], log_as[64];
    snprintf(log_as, sizeof log_as, "%s failed", what);
    lookup_why(lk, err, request_stopping(rq), what, log_as, why, sizeof why);
    request_error(rq, rc == LOOKUP_UNAVAILABLE ? 503 : 500, key, "%s", why);
    return false;
}

bool request_rows_answer(struct request *rq, struct lookup *lk, int rc, const struct zb_err *err)
{
    if (!request_went_on(rq, lk, rc, err, "the lookup", lk->key))
        return false;
    if (lk->rows == 0) {
        request_error(rq, 404, lk->key, rq->sv->key_kind == KEY_POSTAL ? "no such code"
                                                                       : "no such key");
        return false;
    }
    JB_LIT(&rq->body, "]}");
    request_answer(rq, 200);
    return true;
}

/* ---- key sets ---- */

const struct key_set *request_keys(struct request *rq, const char *what, bool *loading)
{
    struct zb_err err = { 0 };
    const struct key_set *set = keyset_get(rq->sv, loading, &err);
    if (!set && !*loading) {
        char why[512];
        request_error(rq, 503, NULL, "%s", reason_for_client(rq->sv, &err, false, what, why,
                                                             sizeof why));
    }
    return set;
}

/* The wait for rq's key set is over: rq starts again, or (err) the 503. */
static bool keys_over(struct key_wait *w, const struct zb_err *err)
{
    struct request *rq = container_of(w, struct request, kw);
    if (err) {
        request_error(rq, 503, NULL, "%s", err->msg);
        return false;
    }
    return !rq->keyed(rq);
}

void request_when_keys(struct request *rq, bool (*start)(struct request *rq))
{
    rq->keyed = start;
    if (!start(rq)) {
        rq->kw.sv = rq->sv;
        rq->kw.over = keys_over;
        keyset_wait(&rq->loop->keys, &rq->kw);
    }
}
