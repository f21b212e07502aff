/* Strictness: what RFC 9112 says to refuse in a request head and
 * libmicrohttpd 0.9.75 lets through (or answers badly), checked before
 * any route. Each refusal is a rule of the grammar (of the request line,
 * the target, a header line), never one case of it:
 * tests/test_httpdiff.c holds the rules to nginx's parser on generated
 * heads.
 *
 * Contract: strict_log_uri, strict_unescape are libmicrohttpd's
 * MHD_OPTION_URI_LOG_CALLBACK and MHD_OPTION_UNESCAPE_CALLBACK; the
 * handler passes what strict_log_uri left in *con_cls (an odd value:
 * (raw URI length + 1) << 4, the target's fault << 1, bit 0 set) to
 * strict_refusal on its first call. Calls nothing of the server but
 * json.h's UTF-8 check. */
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "json.h"
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

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = (char)(ch | 0x20);
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* RFC 9110 7.2 and 4.2.1, RFC 3986 3.2.2-3: host [":" port]. The host an
 * IP literal in brackets, or a name as DNS has them (RFC 1123: letters,
 * digits, '-' and '.', no empty label but the root's trailing dot; not
 * empty, as an http URI's host never is): of RFC 3986's reg-name, what
 * names a host (nginx takes no more in an absolute-form target). The
 * port digits. */
static bool is_host(const char *s, size_t n)
{
    size_t i = 0;
    if (n && s[0] == '[') {
        while (++i < n && (hexval(s[i]) >= 0 || s[i] == ':' || s[i] == '.'))
            ;
        if (i == n || s[i] != ']' || i == 1)
            return false;
        i++;
    } else {
        for (; i < n && s[i] != ':'; i++) {
            char ch = (char)(s[i] | 0x20);
            if (!((ch >= 'a' && ch <= 'z') || is_digit(s[i]) || s[i] == '-' || s[i] == '.'))
                return false;
            if (s[i] == '.' && (i == 0 || s[i - 1] == '.'))
                return false;   /* an empty label */
        }
        if (i == 0)
            return false;
    }
    if (i < n && s[i] == ':')
        while (++i < n && is_digit(s[i]))
            ;
    return i == n;
}

/* What the header lines say, gathered in one pass. */
struct head {
    const char *bad;               /* the first refusal, or NULL */
    unsigned status;               /* its status */
    int hosts;
    int lengths;                   /* Content-Length lines */
    uint64_t length;               /* their value */
    const char *te;                /* the last Transfer-Encoding line */
    const char *at;                /* where the last line read ends (unaccounted) */
};

static void refuse(struct head *h, unsigned status, const char *msg)
{
    if (!h->bad) {
        h->bad = msg;
        h->status = status;
    }
}

/* Whether [from, to) is the NULs libmicrohttpd wrote over line ends (one
 * for a bare LF, two for CRLF), between min and max of them. */
static bool line_ends(const char *from, const char *to, long min, long max)
{
    if (to - from < min || to - from > max)
        return false;
    for (; from < to; from++)
        if (*from)
            return false;
    return true;
}

/* libmicrohttpd 0.9.75 reads a header line in place: it writes NULs over
 * the line end and the colon and hands over the name and value. A line
 * that starts with ':' or a NUL ends its header section there (the lines
 * after it would be read as the next request: smuggling), and a NUL in a
 * value cuts it short. Either leaves bytes that no part it handed over
 * accounts for; so every byte of the head must be one: the request line,
 * then per header line the name, its colon, OWS and the value, and the
 * line ends. A name is checked when its line is, the last line end when
 * the head is whole. (Next to a bare LF the NULs can be a well-formed
 * head's: "\n:\n" is "\r\n" once written over; docs/RELIABILITY.md's
 * known limits.) */
static const char unaccounted[] = "a header line that starts with ':' (an empty name), or a NUL "
                                  "byte in a header line";

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
    /* obs-fold (RFC 9112 5.2): 0.9.75 joins a continuation line onto a
     * copy of the name, made after the line it read; every other name
     * lies before its value in the request as read. */
    if (value < key)
        refuse(h, 400, "a header line folded onto the next (obs-fold)");
    else if (h->at && !(line_ends(h->at, key, 1, 2) && !key[key_size] &&
                        (size_t)(value - key) == key_size + 1 + strspn(key + key_size + 1, " \t")))
        refuse(h, 400, unaccounted);
    if (h->at)
        h->at = value + value_size;
    /* A header name is a token (RFC 9112 5.1): whitespace before the
     * colon, which 0.9.75 keeps as part of the name, is refused here. */
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
        size_t n = value_size;
        while (n && (value[n - 1] == ' ' || value[n - 1] == '\t'))
            n--;
        if (!is_host(value, n))
            refuse(h, 400, "a Host that is not host[:port] (a name of letters, digits, '-' and "
                   "'.' with no empty label, or an [IP literal]; the port digits)");
        h->hosts++;
    } else if (token && !strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        /* Two lines are one list (RFC 9110 5.3): "0" twice is "0, 0". */
        uint64_t n;
        if (h->lengths || !parse_length(value, value_size, &n))
            refuse(h, 400, "a Content-Length that is not one decimal number on one line");
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

/* What is wrong with a raw request target (strict_log_uri's verdict). */
enum target_fault { TARGET_TAKEN, TARGET_FORM, TARGET_ESCAPE, TARGET_NUL, TARGET_DOT,
                    TARGET_HOST };

static const char *const target_faults[] = {
    [TARGET_FORM] = "the request target is not origin-form (/path) or absolute-form "
                    "(http://host/path), or holds a space, a '#', a control or a non-ASCII byte",
    [TARGET_ESCAPE] = "a '%' in the request target that is not followed by two hex digits",
    [TARGET_NUL] = "%00 in the request target: a NUL byte is part of no path and no parameter",
    [TARGET_DOT] = "a '.' or '..' segment in the path (as it is or percent-encoded): the "
                   "server resolves none",
    [TARGET_HOST] = "the host of an absolute-form target is not host[:port]",
};

/* What RFC 9112 says to refuse and libmicrohttpd 0.9.75 lets through (or
 * answers badly); a message with *status 400, 413 or 505, or NULL. */
const char *strict_refusal(struct MHD_Connection *c, uintptr_t target, const char *url,
                           const char *method, const char *version, unsigned *status)
{
    *status = 400;
    size_t rawlen = target >> 7;
    unsigned fault = (target >> 1) & 7;
    /* A NUL byte in the request line cuts MHD's C string short: see
     * strict_log_uri. */
    if (rawlen && *version && url + rawlen != version)
        return "NUL byte in the request line";
    /* RFC 9112 2.3: HTTP-version is "HTTP/" DIGIT "." DIGIT; 0.9.75
     * answers a malformed one (400) and any but major version 1 (505)
     * itself, and lets HTTP/1.2 to 1.9 through. The server speaks 1.0
     * and 1.1 only. */
    if (strcmp(version, MHD_HTTP_VERSION_1_1) && strcmp(version, MHD_HTTP_VERSION_1_0)) {
        *status = 505;
        return "HTTP version not supported: the server speaks HTTP/1.0 and HTTP/1.1";
    }
    if (fault && fault < sizeof target_faults / sizeof target_faults[0])
        return target_faults[fault];
    /* RFC 9112 3.2.4: the asterisk-form is OPTIONS's only (405 here). */
    if (!strcmp(url, "*") && !strcmp(method, MHD_HTTP_METHOD_GET))
        return target_faults[TARGET_FORM];
    /* Decoded, the path is UTF-8 (RFC 3986 2.5), as every key and name
     * is: an overlong form such as %C0%AF, which a lax decoder reads as
     * '/', never is. */
    if (utf8_valid_prefix(url, strlen(url)) != strlen(url))
        return "the path is not UTF-8 once percent-decoded (an overlong form such as %C0%AF, "
               "a lone continuation byte, a surrogate)";
    struct head h = { .at = version + strlen(version) };
    const union MHD_ConnectionInfo *size =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (!size || (uintptr_t)h.at < (uintptr_t)method ||
        (uintptr_t)h.at > (uintptr_t)method + size->header_size)
        h.at = NULL;   /* the version is not in the request as read: nothing to account */
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, each_header, &h);
    /* The last line end, then the empty line. */
    if (h.at && !line_ends(h.at, method + size->header_size, 2, 4))
        refuse(&h, 400, unaccounted);
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
 * in visible ASCII but '#' (a fragment is never sent); true if uri is
 * none of those. */
static bool is_bad_target(const char *uri)
{
    for (const unsigned char *p = (const unsigned char *)uri; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f || *p == '#')
            return true;
    if (uri[0] == '/' || !strcmp(uri, "*"))
        return false;
    const char *auth = !strncasecmp(uri, "http://", 7) ? uri + 7
                       : !strncasecmp(uri, "https://", 8) ? uri + 8 : NULL;
    return !auth || !*auth || *auth == '/';
}

/* The rules of a target as sent (RFC 3986, RFC 9112 3.2), which the
 * unescaped path no longer shows: every '%' begins a %XX, none is %00
 * (a NUL ends a C string: "/zip/x/1000001%00junk"), and in the path no
 * "." or ".." segment, raw or encoded (nginx resolves them, and "%2e%2e"
 * would name another route). *slash: the path segment (1, 2, ...; at
 * most 7) of the first %2F, 0 if none: decoded, it would separate
 * segments as '/' does ("/zip%2Fsqlite/0600000" would be routed), so it
 * is refused wherever the route reads segments, and is the key's own '/'
 * only in the key, the rest of the path (strict_slash_refused). */
static enum target_fault target_fault(const char *uri, unsigned *slash)
{
    *slash = 0;
    if (is_bad_target(uri))
        return TARGET_FORM;
    for (const char *p = uri; *p; p++)
        if (*p == '%') {
            int hi = hexval(p[1]), lo = hi < 0 ? -1 : hexval(p[2]);
            if (lo < 0)
                return TARGET_ESCAPE;
            if (!(hi | lo))
                return TARGET_NUL;
            p += 2;
        }
    const char *path = uri;
    if (uri[0] != '/') {
        if (uri[0] == '*')
            return TARGET_TAKEN;
        const char *auth = strstr(uri, "://") + 3;
        size_t n = strcspn(auth, "/?");
        if (!is_host(auth, n))
            return TARGET_HOST;
        path = auth + n;
    }
    const char *end = path + strcspn(path, "?");
    unsigned seg = 0;
    for (const char *p = path; p < end;) {
        size_t dots = 0, other = 0;
        seg += seg < 7;
        for (p++; p < end && *p != '/'; p++) {
            char ch = *p;
            if (ch == '%') {
                ch = (char)(hexval(p[1]) << 4 | hexval(p[2]));
                p += 2;
            }
            if (ch == '/' && !*slash)
                *slash = seg;
            if (ch == '.')
                dots++;
            else
                other++;
        }
        if (!other && (dots == 1 || dots == 2))
            return TARGET_DOT;
    }
    return TARGET_TAKEN;
}

/* MHD_OPTION_URI_LOG_CALLBACK, called on the raw URI (before unescaping and
 * the split at '?') once MHD has put a NUL in place of the space before the
 * version. A NUL byte in the request line itself cuts MHD's C string short:
 * "GET /zip/x/1000001\0junk HTTP/1.1" would reach us as a valid code. So the
 * URI's length as a string is kept, and the handler checks that it reaches
 * the version, which MHD passes as a pointer into the same line: url +
 * length + 1 == version, or the URI held a NUL. The length (shifted by
 * seven), the segment of its first %2F (bits 4-6) and target_fault's
 * verdict (bits 1-3) travel in *con_cls, odd
 * (bit 0) so it is never taken for a struct req: no request is made
 * here, as 0.9.75 does not always call the completion callback for a
 * request it refuses between the request line and the handler (431 for too
 * many arguments for max_request_bytes). */
void *strict_log_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    /* Before any header line is read: see injected_length. If the pool has
     * no room for it, MHD parses the client's Content-Length itself. */
    MHD_set_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH, injected_length);
    unsigned slash;
    uintptr_t fault = (uintptr_t)target_fault(uri, &slash);
    return (void *)((((uintptr_t)strlen(uri) + 1) << 7) | (uintptr_t)slash << 4 | fault << 1 | 1);
}

/* MHD's own unescaper turns %00 into a NUL that silently cuts the string
 * ("/zip/x/1000001%00junk" would read as a valid code). This one decodes
 * %XX like it, except that %00 stays as the three characters, which no
 * route or code accepts (strict_refusal refuses it first). */
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

const char *strict_slash_refused(uintptr_t target, unsigned key_segment)
{
    unsigned slash = (target >> 4) & 7;
    if (!slash || (key_segment && slash >= key_segment))
        return NULL;
    return "a percent-encoded '/' (%2F) where the path's segments are read (the route, the "
           "dataset, the backend): only '/' itself separates them (in a key, the rest of the "
           "path, either is the key's own '/')";
}
