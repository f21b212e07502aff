/* Request heads generated from a seed, for the differential test against
 * nginx (test_httpdiff.c): request-line forms, versions, methods,
 * percent-encodings, absolute-form targets, Host values, header names
 * and folding, line ends, Content-Length and Transfer-Encoding mixes,
 * repeated and case-variant parameters. Each head says which of the
 * server's own rules it breaks where nginx's parser does not refuse it
 * (HEAD_OWN_*), so the test can hold the server to them too. */
#ifndef ZB_HEADGEN_H
#define ZB_HEADGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a head breaks, beyond nginx's parser (test_httpdiff.c's list of
 * differences says why for each). */
enum {
    HEAD_OWN_VERSION = 1 << 0,     /* an HTTP version but HTTP/1.0 and HTTP/1.1, or none */
    HEAD_OWN_LINE = 1 << 1,        /* other whitespace than one SP before the version */
    HEAD_OWN_TARGET = 1 << 2,      /* %2F, a dot segment, a path not UTF-8, a bad %, '#'... */
    HEAD_OWN_HEADER = 1 << 3,      /* a name not a token, no colon, a Host not host[:port] */
    HEAD_OWN_BODY = 1 << 4,        /* a body on a GET or HEAD */
    HEAD_OWN_METHOD = 1 << 5,      /* a method but GET and HEAD */
    HEAD_LIMIT_LINE_END = 1 << 6,  /* a NUL or a lone ':' that libmicrohttpd reads as a line end */
    HEAD_PARAM_REPEATED = 1 << 7,  /* a known parameter twice */
    HEAD_PARAM_CASE = 1 << 8,      /* a known parameter's name in other case */
    HEAD_PARAM_UNKNOWN = 1 << 9,   /* a parameter the route does not take */
};

#define HEAD_MAX 4096

struct head {
    char bytes[HEAD_MAX];          /* what goes on the wire (may hold NULs) */
    size_t len;
    unsigned marks;                /* HEAD_* */
    bool clean;                    /* no mutation: both peers must answer 2xx */
    char what[512];                /* the choices made, for a failure message */
};

/* One head drawn with *rng (advanced) on one of paths: origin-form
 * targets that both peers answer 200 when sent plainly. */
void headgen(uint64_t *rng, const char *const *paths, int npaths, struct head *out);

#endif
