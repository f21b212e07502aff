/* The target URL: http:// only, and only loopback hosts, since this tool
 * exists to load servers on this machine and nothing else. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "loadgen.h"

int url_parse(const char *url, struct target *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (strncasecmp(url, "http://", 7) != 0) {
        snprintf(err, errlen, "'%s': only http:// URLs are supported", url);
        return -1;
    }
    const char *h = url + 7, *hend, *rest;
    if (*h == '[') {                       /* [::1]:port */
        hend = strchr(h, ']');
        if (!hend) {
            snprintf(err, errlen, "'%s': unclosed '[' in host", url);
            return -1;
        }
        rest = hend + 1;
        h++;
    } else {
        hend = h + strcspn(h, ":/?#");
        rest = hend;
    }
    size_t hl = (size_t)(hend - h);
    if (hl == 0 || hl >= sizeof t->host) {
        snprintf(err, errlen, "'%s': no host", url);
        return -1;
    }
    memcpy(t->host, h, hl);
    t->port = 80;
    if (*rest == ':') {
        char *end;
        long p = strtol(rest + 1, &end, 10);
        if (end == rest + 1 || p < 1 || p > 65535 || (*end && *end != '/' && *end != '?')) {
            snprintf(err, errlen, "'%s': bad port", url);
            return -1;
        }
        t->port = (int)p;
        rest = end;
    } else if (*rest && *rest != '/' && *rest != '?') {
        snprintf(err, errlen, "'%s': bad URL after the host", url);
        return -1;
    }
    if (*rest == '?')
        snprintf(t->path, sizeof t->path, "/%s", rest);
    else
        snprintf(t->path, sizeof t->path, "%s", *rest ? rest : "/");
    if (strlen(rest) + 1 >= sizeof t->path) {
        snprintf(err, errlen, "'%s': path too long", url);
        return -1;
    }
    char *frag = strchr(t->path, '#');
    if (frag)
        *frag = 0;

    /* No name lookups: localhost is 127.0.0.1, anything else must be an
     * address literal inside 127.0.0.0/8 or ::1. */
    struct sockaddr_in *a4 = (struct sockaddr_in *)&t->addr;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&t->addr;
    if (!strcasecmp(t->host, "localhost") ||
        inet_pton(AF_INET, t->host, &a4->sin_addr) == 1) {
        if (!strcasecmp(t->host, "localhost"))
            a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if ((ntohl(a4->sin_addr.s_addr) >> 24) != 127)
            goto refuse;
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)t->port);
        t->addrlen = sizeof *a4;
        return 0;
    }
    if (inet_pton(AF_INET6, t->host, &a6->sin6_addr) == 1) {
        if (!IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr))
            goto refuse;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)t->port);
        t->addrlen = sizeof *a6;
        return 0;
    }
refuse:
    snprintf(err, errlen,
             "refusing host '%s': loadgen only targets loopback (127.0.0.0/8, ::1, localhost)",
             t->host);
    return -1;
}
