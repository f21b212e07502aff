/* Strictness: what RFC 9112 says to refuse in a request head and
 * libmicrohttpd 0.9.75 lets through (or answers badly), checked before
 * any route.
 *
 * Contract: strict_log_uri, strict_unescape are libmicrohttpd's
 * MHD_OPTION_URI_LOG_CALLBACK and MHD_OPTION_UNESCAPE_CALLBACK; the
 * handler passes what strict_log_uri left in *con_cls (an odd value:
 * (raw URI length + 1) << 2, bit 1 set if the raw target is not one taken,
 * bit 0 set) to strict_refusal on its first call. Calls nothing of the
 * server: libmicrohttpd only. */
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "strict.h"

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* strict_log_uri gives every request this Content-Length: 0 before libmicrohttpd
 * reads its header lines, and libmicrohttpd's own framing takes the first
 * Content-Length it finds, so it never parses the client's. 0.9.75 answers
 * a malformed one itself, twice over (two status lines, two header
 * blocks); this way the client's values reach strict_refusal(), which refuses
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
const char *strict_refusal(struct MHD_Connection *c, size_t rawlen, bool bad_target,
                           const char *url, const char *method, const char *version,
                           unsigned *status)
{
    *status = 400;
    /* A NUL byte in the request line cuts MHD's C string short: see
     * strict_log_uri. */
    if (rawlen && *version && url + rawlen != version)
        return "NUL byte in the request line";
    /* RFC 9112 3.2.4: the asterisk-form is OPTIONS's only (405 here). */
    if (bad_target || (!strcmp(url, "*") && !strcmp(method, MHD_HTTP_METHOD_GET)))
        return "the request target is not origin-form (/path) or absolute-form "
               "(http://host/path), or holds a space, a control or a non-ASCII byte";
    struct head h = { 0 };
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, each_header, &h);
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

/* RFC 9112 3.2: a request target as sent is origin-form (/path?query), or
 * absolute-form (http://host/path), or "*" (checked with the method),
 * in visible ASCII; true if uri is none of those. */
static bool is_bad_target(const char *uri)
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
void *strict_log_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    /* Before any header line is read: see injected_length. If the pool has
     * no room for it, MHD parses the client's Content-Length itself. */
    MHD_set_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH, injected_length);
    return (void *)((((uintptr_t)strlen(uri) + 1) << 2) | (uintptr_t)is_bad_target(uri) << 1 | 1);
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
size_t strict_unescape(void *cls, struct MHD_Connection *c, char *s)
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


