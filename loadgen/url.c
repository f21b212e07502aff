/* The target: an http:// or https:// URL, its host resolved with
 * getaddrinfo. A name with several addresses (localhost: ::1 and
 * 127.0.0.1) has each tried in turn, as ab and wrk do, and the run uses
 * the first that accepts a connection. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "loadgen.h"

/* host[:port] or [v6][:port] at s, up to one of the stop characters;
 * *rest is set after it. */
static int split_host_port(const char *s, const char *stops, char *host, size_t hostlen,
                           int *port, const char **rest, struct zb_err *err,
                           const char *what)
{
    const char *h = s, *hend, *r;
    if (*h == '[') {
        hend = strchr(h, ']');
        if (!hend) {
            zb_fail(err, ZB_ERR_INPUT, "%s '%s': unclosed '[' in host", what, s);
            return -1;
        }
        r = hend + 1;
        h++;
    } else {
        char set[16];
        snprintf(set, sizeof set, ":%s", stops);
        hend = h + strcspn(h, set);
        r = hend;
    }
    size_t hl = (size_t)(hend - h);
    if (hl == 0 || hl >= hostlen) {
        zb_fail(err, ZB_ERR_INPUT, "%s '%s': no host", what, s);
        return -1;
    }
    memcpy(host, h, hl);
    host[hl] = 0;
    if (*r == ':') {
        char *end;
        long p = strtol(r + 1, &end, 10);
        if (end == r + 1 || p < 1 || p > 65535 || (*end && !strchr(stops, *end))) {
            zb_fail(err, ZB_ERR_INPUT, "%s '%s': bad port", what, s);
            return -1;
        }
        *port = (int)p;
        r = end;
    } else if (*r && !strchr(stops, *r)) {
        zb_fail(err, ZB_ERR_INPUT, "%s '%s': bad text after the host", what, s);
        return -1;
    }
    *rest = r;
    return 0;
}

int url_parse(const char *url, struct target *t, struct zb_err *err)
{
    memset(t, 0, sizeof *t);
    const char *h;
    if (!strncasecmp(url, "http://", 7)) {
        h = url + 7;
        t->port = 80;
    } else if (!strncasecmp(url, "https://", 8)) {
        h = url + 8;
        t->port = 443;
        t->tls = true;
    } else {
        zb_fail(err, ZB_ERR_INPUT, "'%s': only http:// and https:// URLs are supported", url);
        return -1;
    }
    const char *rest;
    if (split_host_port(h, "/?#", t->host, sizeof t->host, &t->port, &rest, err,
                        "URL") < 0)
        return -1;
    if (strlen(rest) + 2 >= sizeof t->path) {
        zb_fail(err, ZB_ERR_INPUT, "'%s': path too long", url);
        return -1;
    }
    if (*rest == '?')
        snprintf(t->path, sizeof t->path, "/%s", rest);
    else
        snprintf(t->path, sizeof t->path, "%s", *rest ? rest : "/");
    char *frag = strchr(t->path, '#');
    if (frag)
        *frag = 0;
    snprintf(t->connect_host, sizeof t->connect_host, "%s", t->host);
    t->connect_port = t->port;
    return 0;
}

void target_addr_text(const struct target *t, char *out, size_t outlen)
{
    const struct sockaddr_storage *a = &t->addr[t->chosen];
    char ip[INET6_ADDRSTRLEN] = "?";
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a6 = (const void *)a;
        inet_ntop(AF_INET6, &a6->sin6_addr, ip, sizeof ip);
        snprintf(out, outlen, "[%s]:%d", ip, ntohs(a6->sin6_port));
    } else {
        const struct sockaddr_in *a4 = (const void *)a;
        inet_ntop(AF_INET, &a4->sin_addr, ip, sizeof ip);
        snprintf(out, outlen, "%s:%d", ip, ntohs(a4->sin_port));
    }
}

/* A blocking-in-effect connect to addr i: 0 if it was accepted within
 * timeout_s, else -1 and errno. */
static int probe(const struct target *t, int i, double timeout_s)
{
    int fd = socket(t->addr[i].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int rc = connect(fd, (const struct sockaddr *)&t->addr[i], t->addrlen[i]);
    if (rc < 0 && errno == EINPROGRESS) {
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        int n = poll(&p, 1, (int)(timeout_s * 1000));
        int e = 0;
        socklen_t el = sizeof e;
        if (n <= 0) {
            e = n == 0 ? ETIMEDOUT : errno;
        } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0) {
            e = errno;
        }
        rc = e ? -1 : 0;
        errno = e;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

void target_pick(struct target *t, double timeout_s)
{
    /* One address: nothing to choose; a refused connect is the run's
     * Connect error. Several: the first that accepts. */
    t->chosen = 0;
    for (int i = 0; t->naddrs > 1 && i < t->naddrs; i++)
        if (probe(t, i, timeout_s) == 0) {
            t->chosen = i;
            return;
        }
}

int target_resolve(struct target *t, const char *proxy, const char *bind_addr,
                   double timeout_s, struct zb_err *err)
{
    if (proxy) {
        const char *rest;
        t->connect_port = 80;
        if (split_host_port(proxy, "", t->connect_host, sizeof t->connect_host,
                            &t->connect_port, &rest, err, "-X") < 0)
            return -1;
    }
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_ADDRCONFIG }, *res;
    char port[8];
    snprintf(port, sizeof port, "%d", t->connect_port);
    int rc = getaddrinfo(t->connect_host, port, &hints, &res);
    if (rc == EAI_NONAME || rc == EAI_ADDRFAMILY || rc == EAI_NODATA) {
        /* AI_ADDRCONFIG hides loopback-only families in a namespace
         * with no other address: ask again without it. */
        hints.ai_flags = 0;
        rc = getaddrinfo(t->connect_host, port, &hints, &res);
    }
    if (rc != 0) {
        zb_fail(err, ZB_ERR_INPUT, "cannot resolve '%s': %s", t->connect_host, gai_strerror(rc));
        return -1;
    }
    t->naddrs = 0;
    for (struct addrinfo *a = res; a && t->naddrs < MAX_ADDRS; a = a->ai_next) {
        if (a->ai_addrlen > sizeof t->addr[0])
            continue;
        memcpy(&t->addr[t->naddrs], a->ai_addr, a->ai_addrlen);
        t->addrlen[t->naddrs++] = (socklen_t)a->ai_addrlen;
    }
    freeaddrinfo(res);
    if (!t->naddrs) {
        zb_fail(err, ZB_ERR_INPUT, "cannot resolve '%s': no usable address", t->connect_host);
        return -1;
    }
    target_pick(t, timeout_s);
    if (bind_addr) {                   /* -B: in the family chosen */
        struct addrinfo bh = { .ai_family = t->addr[t->chosen].ss_family,
                               .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *b;
        rc = getaddrinfo(bind_addr, NULL, &bh, &b);
        if (rc != 0) {
            zb_fail(err, ZB_ERR_INPUT, "-B '%s': %s", bind_addr, gai_strerror(rc));
            return -1;
        }
        memcpy(&t->local, b->ai_addr, b->ai_addrlen);
        t->locallen = (socklen_t)b->ai_addrlen;
        freeaddrinfo(b);
    }
    return 0;
}
