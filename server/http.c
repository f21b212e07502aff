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

#include "http.h"
#include "route.h"
#include "strict.h"

enum http_state { RQ_NEW, RQ_READ, RQ_RUNNING, RQ_ANSWERED, RQ_QUEUED };

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

/* A request, as HTTP keeps it around the route's view (rq). */
struct http_request {
    struct request rq;
    struct http_loop *http;
    struct MHD_Connection *c;
    struct http_request *next_free;
    size_t rawlen;                 /* the raw URI's length + 1 (strict.h) */
    bool bad_target;               /* the raw URI is not a target we take (strict.h) */
    bool close;                    /* refused on its first call: the connection closes */
    bool suspended;
    enum http_state state;
    const char *path;              /* the origin-form path of its target */
    void *route_state[ROUTE_MAX];  /* each route's state, made when first used */
};

static struct http_request *of(struct request *rq)
{
    return container_of(rq, struct http_request, rq);
}

static void client_sending(struct http_loop *l, struct MHD_Connection *c);
static void client_answered(struct http_loop *l, struct MHD_Connection *c);
static void client_got_header(struct http_loop *l, struct MHD_Connection *c);

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

/* Dataset d's table on the backend called s, or NULL. */
static struct served *find_backend(struct server *srv, int d, const char *s, size_t len)
{
    int per = srv->nserved / srv->ndatasets;
    for (int i = d * per; d >= 0 && i < (d + 1) * per; i++)
        if (is_name(srv->served[i]->conf.name, s, len))
            return srv->served[i];
    return NULL;
}

/* The route path's first segment names, or NULL. */
static const struct route *route_for(const struct server *srv, const char *path)
{
    if (path[0] != '/')
        return NULL;
    const char *seg = path + 1, *end = strchr(seg, '/');
    size_t len = end ? (size_t)(end - seg) : strlen(seg);
    const struct route *r = route_named(seg, len);
    return r ? r : end && find_dataset(srv, seg, len) >= 0 ? route_of_datasets() : NULL;
}

/* Appends to list[*n] (size bytes), as snprintf would, never past it. */
static void add(char *list, size_t size, size_t *n, const char *a, const char *b)
{
    int w = snprintf(list + *n, size - *n, "%s%s", a, b);
    if (w > 0)
        *n = *n + (size_t)w < size ? *n + (size_t)w : size - 1;
}

/* The 404 of a path no route takes: every route's usage, from the table. */
static void no_route(struct request *rq)
{
    struct server *srv = rq->loop->srv;
    char list[1024] = "";
    size_t n = 0;
    for (int i = 0; i < nroutes; i++) {
        add(list, sizeof list, &n, i ? "; " : "", route_table[i]->usage);
        for (int d = 0; route_table[i]->path == ROUTE_DATASET && d < srv->ndatasets; d++)
            add(list, sizeof list, &n, d ? ", " : " (datasets: ", srv->datasets[d]->conf->name);
        if (route_table[i]->path == ROUTE_DATASET)
            add(list, sizeof list, &n, ")", "");
    }
    request_error(rq, 404, NULL, "no such resource: %s", list);
}

/* The served table and key of rq's path (by its route's shape), or false
 * with the 404 answered. */
static bool find_target(struct http_request *h)
{
    struct request *rq = &h->rq;
    struct server *srv = rq->loop->srv;
    const char *p = strchr(h->path + 1, '/');   /* after the first segment */
    int d = find_dataset(srv, "zip", 3);
    rq->key = "";
    if (rq->route->path == ROUTE_NONE) {
        if (p) {
            no_route(rq);
            return false;
        }
        return true;
    }
    if (rq->route->path == ROUTE_DATASET)
        d = find_dataset(srv, h->path + 1, (size_t)(p - h->path - 1));
    const char *slash = p ? strchr(p + 1, '/') : NULL;
    if (rq->route->path == ROUTE_BACKEND)
        rq->sv = p ? find_backend(srv, d, p + 1, strlen(p + 1)) : NULL;
    else if (slash) {
        rq->sv = find_backend(srv, d, p + 1, (size_t)(slash - p - 1));
        rq->key = slash + 1;
    }
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
    if (find_target(h) && take_params(h))
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
        h->rawlen = raw >> 2;
        h->bad_target = raw & 2;
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
        const char *bad = strict_refusal(c, h->rawlen, h->bad_target, url, method, version, &status);
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
    next = deadline_min(next, keyset_deadlines(&l->requests.keys, now));
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
    l->closed(l->closed_arg);
}

int http_init(struct http_loop *l, struct loop *core, struct server *srv, struct lane *lanes,
              struct loop_figures *fig, struct zb_err *err)
{
    l->loop = core;
    l->srv = srv;
    l->fig = fig;
    APR_RING_INIT(&l->awaiting, client, link);
    APR_RING_INIT(&l->sending, client, link);
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
