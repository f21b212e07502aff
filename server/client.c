/* A loop's client connections (client.h).
 *
 * A connection must bring each request whole (its header, and a body if
 * one got past strict_refusal(), which refuses them) within
 * header_timeout_s of opening or of its previous answer: the deadline ends
 * on the final handler call. libmicrohttpd's connection_timeout_s only
 * counts idleness, so a client sending a byte a second would hold its
 * connection forever. Clients waiting for a header are kept oldest first;
 * those past the deadline are shut down (as nginx does for
 * client_header_timeout: no answer, the connection is closed). */
#include <microhttpd.h>
#include <stdlib.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "client.h"

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

void client_got_header(struct http_loop *l, struct MHD_Connection *c)
{
    (void)l;
    struct client *cl = client_of(c);
    if (cl && cl->awaiting) {
        APR_RING_REMOVE(cl, link);
        cl->awaiting = false;
    }
}

void client_answered(struct http_loop *l, struct MHD_Connection *c)
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
void client_sending(struct http_loop *l, struct MHD_Connection *c)
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

uint64_t client_deadlines(struct http_loop *l, uint64_t now)
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
    return deadline_min(next, keep_moving_clients(l, now));
}

void client_event(void *cls, struct MHD_Connection *c, void **socket_context,
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


void clients_init(struct http_loop *l)
{
    APR_RING_INIT(&l->awaiting, client, link);
    APR_RING_INIT(&l->sending, client, link);
}

void clients_free(struct http_loop *l)
{
    while (l->free_clients) {
        struct client *cl = l->free_clients;
        l->free_clients = *(struct client **)cl;
        free(cl);
    }
}
