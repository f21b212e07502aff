/* The HTTP side: libmicrohttpd's callbacks, and the dispatch of each
 * request to its route by the route table (route.h); it knows no route by
 * name.
 *
 * A request is a struct http_request, taken from its loop's spares at the
 * first handler call and given back when libmicrohttpd says it is
 * complete. Its life:
 *   RQ_NEW      the first handler call checks what libmicrohttpd 0.9.75
 *               does not (RFC 9112's rules: strict.c), finds the route by
 *               the path's first segment and checks the method; a refusal
 *               is answered at once, with Connection: close, and no body
 *               is read;
 *   RQ_READ     the final call finds the served table the path names and
 *               the parameters, and hands the request to its route; unless
 *               the route answered at once the connection is suspended
 *               (MHD_suspend_connection);
 *   RQ_RUNNING  ...until the route answers (request.h) and the request is
 *               resumed, on this loop;
 *   RQ_ANSWERED the next handler call queues that answer;
 *   RQ_QUEUED   then nothing but dropping a body.
 * The body is the request's own buffer, handed to libmicrohttpd without a
 * copy (MHD_RESPMEM_PERSISTENT): it lives until the completion callback.
 * Each route's per-request state is kept with the spare too. No logging
 * per request, no allocation per request once the spares are warm. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "auth.h"
#include "client.h"
#include "http.h"
#include "route.h"
#include "strict.h"

enum http_state { RQ_NEW, RQ_READ, RQ_RUNNING, RQ_ANSWERED, RQ_QUEUED };

/* A request, as HTTP keeps it around the route's view (rq). */
struct http_request {
    struct request rq;
    struct http_loop *http;
    struct MHD_Connection *c;
    struct http_request *next_free;
    uintptr_t target;              /* strict_log_uri's verdict on the raw URI (strict.h) */
    bool close;                    /* refused on its first call: the connection closes */
    bool suspended;
    bool unauthorized;             /* answered 401: WWW-Authenticate goes with it */
    enum http_state state;
    const char *path;              /* the origin-form path of its target */
    void *route_state[ROUTE_MAX];  /* each route's state, made when first used */
};

static struct http_request *of(struct request *rq)
{
    return container_of(rq, struct http_request, rq);
}


/* ---- answers ---- */

/* The route answered (request.h): counted for the loop; a suspended
 * request is resumed. */
static void answered(struct request *rq)
{
    struct http_request *h = of(rq);
    struct loop_figures *fig = h->http->fig;
    BUMP(fig->requests);
    BUMP(*(rq->status < 400 ? &fig->ok : rq->status < 500 ? &fig->e4xx : &fig->e5xx));
    h->state = RQ_ANSWERED;
    if (h->suspended) {
        h->suspended = false;
        MHD_resume_connection(h->c);
    }
}

static void req_free(struct http_request *h);

static void gone(struct request *rq)
{
    req_free(of(rq));
}

static enum MHD_Result queue(struct http_request *h)
{
    struct request *rq = &h->rq;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(rq->body.n, rq->body.p, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            rq->content_type ? rq->content_type : "application/json; charset=utf-8");
    if (rq->status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, rq->route && rq->route->post
                                                          ? "POST" : "GET, HEAD");
    if (h->unauthorized)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (rq->status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (h->close || atomic_load_explicit(&h->http->srv->stopping, RELAXED))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(h->c, rq->status, r);
    MHD_destroy_response(r);
    h->state = RQ_QUEUED;
    if (ret == MHD_YES)
        client_sending(h->http, h->c);
    return ret;
}

/* ---- dispatch ---- */

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

/* The 404 of a path no route takes: every route's usage, from the table. */
static void no_route(struct request *rq)
{
    char list[1024];
    route_list(rq->loop->srv, list, sizeof list);
    request_error(rq, 404, NULL, "no such resource: %s", list);
}

/* The served table and key of rq's path (by its route's shape), or false
 * with the 404 answered. */
static bool find_target(struct http_request *h)
{
    struct request *rq = &h->rq;
    struct server *srv = rq->loop->srv;
    const char *p = strchr(h->path + 1, '/');   /* after the first segment */
    int d = route_dataset(srv, "zip", 3);
    rq->key = "";
    const char *slash = strict_slash_refused(h->target, rq->route->path == ROUTE_DATASET ||
                                             rq->route->path == ROUTE_BACKEND_KEY ? 3 : 0);
    if (slash) {
        request_error(rq, 400, NULL, "%s", slash);
        return false;
    }
    if (rq->route->path == ROUTE_NONE) {
        if (p) {
            no_route(rq);
            return false;
        }
        return true;
    }
    if (rq->route->path == ROUTE_DATASET) {
        d = route_dataset(srv, h->path + 1, (size_t)(p - h->path - 1));
        if (!strchr(p + 1, '/')) {   /* /{dataset}/{backend} names no key */
            no_route(rq);
            return false;
        }
    }
    /* {backend} up to the next slash ({key} is the rest: "" if none). */
    const char *k = p && rq->route->path != ROUTE_BACKEND ? strchr(p + 1, '/') : NULL;
    if (p)
        rq->sv = route_table_of(srv, d, p + 1, k ? (size_t)(k - p - 1) : strlen(p + 1));
    rq->key = k ? k + 1 : "";
    rq->keylen = strlen(rq->key);
    if (!rq->sv) {
        request_error(rq, 404, NULL, "no such backend (see /health for the list)");
        return false;
    }
    rq->lane = &rq->loop->lanes[rq->sv->index];
    return true;
}

/* rq's parameters, and its strategy (?strategy=, else its table's); false
 * with the 400 answered. */
static bool take_params(struct http_request *h)
{
    struct request *rq = &h->rq;
    char msg[300];
    if (params_parse(h->c, rq->route->params, &rq->args, msg, sizeof msg) < 0) {
        request_error(rq, 400, NULL, "%s", msg);
        return false;
    }
    if (!rq->sv)
        return true;
    int i = params_find(rq->route->params, PARAM_STRATEGY);
    rq->strategy = i >= 0 && rq->args.given[i] ? (enum strategy_id)rq->args.v[i].strategy
                                               : rq->sv->strategy;
    const char *cannot = lookup_cannot(rq->sv, rq->strategy);
    if (cannot) {
        request_error(rq, 400, NULL, "strategy %s: the %s driver %s",
                      strategy_names[rq->strategy], rq->sv->conf.driver, cannot);
        return false;
    }
    return true;
}

/* A write without the server's write_token (auth.h): 401. */
static bool allowed(struct http_request *h)
{
    if (!h->rq.route->writes || auth_writer(h->c, h->http->srv->conf->server.write_token))
        return true;
    h->unauthorized = true;
    request_error(&h->rq, 401, NULL, "writes need the server's write token: Authorization: "
                  "Bearer TOKEN");
    return false;
}

/* The request whole: to its route, with its state, target and parameters. */
static void dispatch(struct http_request *h)
{
    struct request *rq = &h->rq;
    rq->t0 = zb_now_ns();
    if (!rq->route) {
        no_route(rq);
        return;
    }
    int i = route_index(rq->route), owner = route_index(route_owner(rq->route));
    if (rq->route->state_size && !h->route_state[i] &&
        !(h->route_state[i] = calloc(1, rq->route->state_size))) {
        request_error(rq, 500, NULL, "out of memory");
        return;
    }
    rq->state = h->route_state[i];
    rq->loop_state = rq->loop->route_loop[i];
    rq->shared = rq->loop->srv->route_shared[owner];
    if (allowed(h) && find_target(h) && take_params(h))
        rq->route->serve(rq);
}

/* ---- the handler ---- */

static struct http_request *req_get(struct http_loop *l);

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    (void)upload_data;
    struct http_loop *l = cls;
    struct http_request *h = *con_cls;
    if (!h || ((uintptr_t)h & 1)) {   /* the first call: what strict_log_uri left */
        uintptr_t raw = (uintptr_t)h;
        if (!(h = req_get(l)))
            return MHD_NO;
        h->c = c;
        h->target = raw;
        *con_cls = h;
    }
    struct request *rq = &h->rq;
    switch (h->state) {
    case RQ_NEW: {
        BUMP(l->fig->inflight);
        h->state = RQ_READ;
        h->path = origin_path(url);
        rq->route = route_for(l->srv, h->path);
        bool post = rq->route && rq->route->post;
        bool ok = post ? !strcmp(method, MHD_HTTP_METHOD_POST)
                       : !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
        unsigned status;
        const char *bad = strict_refusal(c, h->target, url, method, version, &status);
        /* Refusals are answered at once, with Connection: close: MHD 0.9.75
         * treats a response queued on the first call as "early" and reads
         * no body after it. A method the route does not take gets its 405
         * (its body, if any, is never read either). The rest is answered
         * on the final call, which keeps the connection alive. */
        if (bad && status == 413 && !ok)
            bad = NULL;   /* a body on a method refused: its 405 says more */
        if (bad && status == 413 && post)
            bad = "a request body: the write routes take a POST with none";
        if (bad || !ok) {
            rq->t0 = zb_now_ns();
            h->close = true;
            if (bad)
                request_error(rq, status, NULL, "%s", bad);
            else
                request_error(rq, 405, NULL, "method not allowed: only %s",
                              post ? "POST" : "GET and HEAD");
            return queue(h);
        }
        return MHD_YES;
    }
    case RQ_READ:
        if (*upload_data_size) {   /* cannot happen: a body is refused above */
            *upload_data_size = 0;
            return MHD_YES;
        }
        /* The whole request is in: its deadline is over (see
         * http_deadlines). */
        client_got_header(l, c);
        h->state = RQ_RUNNING;
        dispatch(h);
        if (h->state == RQ_ANSWERED)
            return queue(h);
        MHD_suspend_connection(c);
        h->suspended = true;
        return MHD_YES;
    case RQ_ANSWERED:
        return queue(h);
    default:
        *upload_data_size = 0;     /* the rest of a refused upload */
        return MHD_YES;
    }
}

/* ---- the loop's spare requests and clients ---- */

static struct http_request *req_get(struct http_loop *l)
{
    struct http_request *h = l->free_reqs;
    if (h)
        l->free_reqs = h->next_free;
    else if (!(h = calloc(1, sizeof *h)))
        return NULL;
    struct jbuf body = h->rq.body;
    void *kept[ROUTE_MAX];
    memcpy(kept, h->route_state, sizeof kept);
    memset(h, 0, sizeof *h);
    memcpy(h->route_state, kept, sizeof kept);
    h->rq.body = body;
    h->rq.body.n = 0;
    h->rq.loop = &l->requests;
    h->rq.answered = answered;
    h->rq.gone = gone;
    h->http = l;
    return h;
}

static void req_free(struct http_request *h)
{
    struct http_loop *l = h->http;
    h->next_free = l->free_reqs;
    l->free_reqs = h;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    struct http_loop *l = cls;
    struct http_request *h = *con_cls;
    *con_cls = NULL;
    client_answered(l, c);
    if (!h || ((uintptr_t)h & 1))
        return;   /* refused before the handler saw it */
    if (h->state != RQ_NEW)
        DROP(l->fig->inflight);
    if (h->state == RQ_RUNNING) {
        /* Cannot happen while it is suspended (the loop resumes every
         * request before the daemon stops); if it does, its route still
         * holds it: it is freed when that is done (request_gone). */
        h->rq.orphaned = true;
        return;
    }
    req_free(h);
}

int http_init(struct http_loop *l, struct loop *core, struct server *srv, struct lane *lanes,
              struct loop_figures *fig, struct zb_err *err)
{
    l->loop = core;
    l->srv = srv;
    l->fig = fig;
    clients_init(l);
    struct request_loop *rl = &l->requests;
    rl->srv = srv;
    rl->loop = core;
    rl->lanes = lanes;
    rl->rng = zb_now_ns() ^ ((uint64_t)core->id << 56) ^ 0x5a17;
    keyset_waiters_init(&rl->keys, core);
    for (int i = 0; i < nroutes; i++) {
        const struct route *r = route_table[i];
        if (r->loop_init && !(rl->route_loop[i] = r->loop_init(
                rl, srv->route_shared[route_index(route_owner(r))], err)))
            return -1;
    }
    return 0;
}

uint64_t http_deadlines(struct http_loop *l, uint64_t now)
{
    return deadline_min(client_deadlines(l, now), keyset_deadlines(&l->requests.keys, now));
}

void http_wind_down(struct http_loop *l)
{
    keyset_wind_down(&l->requests.keys);
}

void http_keys_changed(struct http_loop *l)
{
    keyset_woken(&l->requests.keys);
}

void http_loop_free(struct http_loop *l)
{
    while (l->free_reqs) {
        struct http_request *h = l->free_reqs;
        l->free_reqs = h->next_free;
        free(h->rq.body.p);
        for (int i = 0; i < nroutes; i++) {
            if (h->route_state[i] && route_table[i]->free_state)
                route_table[i]->free_state(h->route_state[i]);
            free(h->route_state[i]);
        }
        free(h);
    }
    for (int i = 0; i < nroutes; i++)
        if (route_table[i]->loop_free && l->requests.route_loop[i])
            route_table[i]->loop_free(l->requests.route_loop[i]);
    clients_free(l);
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
        MHD_OPTION_NOTIFY_CONNECTION, client_event, l,
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
