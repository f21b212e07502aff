/* The HTTP/1.1 response parser (RFC 9112's framing): a state machine fed
 * whatever each read returned. A response is complete only when its whole
 * body is in, whether framed by Content-Length, by chunks (with extensions
 * and trailers), or by the server closing; a response to HEAD, a 204 and
 * a 304 have none, and interim 1xx heads are skipped. The usual response
 * arrives in one read and is parsed in place; only a head split across
 * reads is copied, into the connection's head[]. Either way a head (each
 * interim one, and the final one) of more than HEAD_MAX bytes is refused:
 * the limit must not depend on how the bytes happened to arrive.
 *
 * Written here rather than borrowed: Debian's libhttp-parser took about
 * four times the CPU per response, docs/LOADGEN.md says how that was
 * measured. tests/fuzz/fuzz_resp.c fuzzes it, test_loadgen.c's framing_*
 * tests pin its edge cases. */
#include <string.h>
#include <strings.h>

#include "loadgen.h"

enum { P_HEAD, P_LENGTH, P_CHUNKED, P_TO_EOF, P_DONE };
/* Chunked sub-states: C_SIZE0 wants the first hex digit of a size line. */
enum { C_SIZE0, C_SIZE, C_EXT, C_SIZE_LF, C_DATA, C_DATA_CR, C_DATA_LF, C_TRAILER,
       C_TRAILER_LINE, C_TRAILER_LF };

void resp_reset(struct resp *r, bool head_request)
{
    r->phase = P_HEAD;
    r->head_request = head_request;
    r->chunk = C_SIZE0;
    r->status = 0;
    r->close = false;
    r->got_any = false;
    r->hlen = 0;
    r->left = r->body = r->total = 0;
    r->cap_len = 0;
    r->cap_over = false;
}

/* --ledger keeps the body's bytes. */
static void capture(struct resp *r, const char *p, size_t n)
{
    if (!r->cap || !n)
        return;
    size_t room = r->cap_size - r->cap_len;
    if (n > room) {
        r->cap_over = true;
        n = room;
    }
    memcpy(r->cap + r->cap_len, p, n);
    r->cap_len += (uint32_t)n;
}

static int name_is(const char *p, size_t n, const char *name, size_t len)
{
    return n == len && !strncasecmp(p, name, len);
}

static int value_has(const char *v, size_t n, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++)
        if (!strncasecmp(v + i, word, w))
            return 1;
    return 0;
}

/* A Content-Length value v[0..end): digits, or a list of equal ones
 * ("5, 5", which RFC 9110 lets a recipient take as one). A sign, other
 * characters, a list of different values or more than 2^64-1 is
 * malformed: -1. */
static int parse_length(const char *v, const char *end, uint64_t *out)
{
    bool have = false;
    uint64_t first = 0;
    for (const char *p = v;;) {
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        const char *digits = p;
        uint64_t n = 0;
        for (; p < end && *p >= '0' && *p <= '9'; p++) {
            unsigned d = (unsigned)(*p - '0');
            if (n > (UINT64_MAX - d) / 10)
                return -1;
            n = n * 10 + d;
        }
        if (p == digits || (have && n != first))
            return -1;
        first = n;
        have = true;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p == end)
            break;
        if (*p++ != ',')
            return -1;
    }
    *out = first;
    return 0;
}

/* Parses the head h[0..n) (ending in CRLFCRLF) and picks the body framing;
 * an interim 1xx head leaves the phase at P_HEAD. */
static int parse_head(struct resp *r, const char *h, size_t n)
{
    const char *end = h + n;
    if (n < 12 || memcmp(h, "HTTP/1.", 7) != 0 || h[8] != ' ')
        return R_ERROR;
    unsigned s = 0;
    for (int i = 9; i < 12; i++) {
        if (h[i] < '0' || h[i] > '9')
            return R_ERROR;
        s = s * 10 + (unsigned)(h[i] - '0');
    }
    r->status = (uint16_t)s;
    bool http10 = h[7] == '0', chunked = false, keep = false, have_len = false;
    uint64_t len = 0;
    const char *p = memchr(h, '\n', n);
    for (p = p ? p + 1 : end; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        const char *le = e > p && e[-1] == '\r' ? e - 1 : e;
        const char *colon = memchr(p, ':', (size_t)(le - p));
        if (colon) {
            size_t nn = (size_t)(colon - p);
            const char *v = colon + 1;
            while (v < le && (*v == ' ' || *v == '\t'))
                v++;
            size_t vn = (size_t)(le - v);
            /* Dispatch on the length first: most headers are skipped here. */
            switch (nn) {
            case 14:
                if (name_is(p, nn, "content-length", 14)) {
                    /* Two that differ: which body is meant is unknown. */
                    uint64_t n;
                    if (parse_length(v, le, &n) < 0 || (have_len && n != len))
                        return R_ERROR;
                    len = n;
                    have_len = true;
                }
                break;
            case 17:
                if (name_is(p, nn, "transfer-encoding", 17) && value_has(v, vn, "chunked"))
                    chunked = true;
                break;
            case 10:
                if (name_is(p, nn, "connection", 10)) {
                    if (value_has(v, vn, "close"))
                        r->close = true;
                    if (value_has(v, vn, "keep-alive"))
                        keep = true;
                }
                break;
            case 6:
                if (r->server && name_is(p, nn, "server", 6)) {
                    size_t c = vn < r->server_len - 1 ? vn : r->server_len - 1;
                    memcpy(r->server, v, c);
                    r->server[c] = 0;
                    r->server = NULL;
                }
                break;
            }
        }
        p = e + 1;
    }
    if (s >= 100 && s < 200) {
        /* Interim (103 Early Hints, an unasked 100): the final head follows.
         * 101 switches protocols, which no request of ours asks for. */
        if (s == 101)
            return R_ERROR;
        r->status = 0;
        r->close = false;
        return R_MORE;
    }
    if (http10 && !keep)
        r->close = true;
    if (s == 204 || s == 304 || r->head_request) {
        r->phase = P_DONE;
    } else if (chunked) {
        r->phase = P_CHUNKED;
        r->chunk = C_SIZE0;
        r->left = 0;
    } else if (have_len) {
        r->left = len;
        r->phase = len ? P_LENGTH : P_DONE;
    } else {
        r->phase = P_TO_EOF;
        r->close = true;
    }
    return R_MORE;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Walks chunked framing over p[0..n); sets *used. Chunk data is skipped in
 * bulk, only the size lines are looked at byte by byte. */
static int feed_chunked(struct resp *r, const char *p, size_t n, size_t *used)
{
    size_t i = 0;
    while (i < n) {
        char c = p[i];
        switch (r->chunk) {
        case C_SIZE0:                   /* a size has at least one digit */
            if (hexval(c) < 0)
                return R_ERROR;
            r->chunk = C_SIZE;
            /* fall through */
        case C_SIZE: {
            int h = hexval(c);
            if (h >= 0) {
                if (r->left >> 59)
                    return R_ERROR;
                r->left = r->left * 16 + (uint64_t)h;
            } else if (c == ';' || c == ' ' || c == '\t') {
                r->chunk = C_EXT;
            } else if (c == '\r') {
                r->chunk = C_SIZE_LF;
            } else if (c == '\n') {
                goto size_done;
            } else {
                return R_ERROR;
            }
            i++;
            break;
        }
        case C_EXT:
            if (c == '\n')
                goto size_done;
            i++;
            break;
        case C_SIZE_LF:
            if (c != '\n')
                return R_ERROR;
        size_done:
            i++;
            r->chunk = r->left ? C_DATA : C_TRAILER;
            break;
        case C_DATA: {
            size_t take = n - i < r->left ? n - i : (size_t)r->left;
            capture(r, p + i, take);
            r->left -= take;
            r->body += take;
            i += take;
            if (!r->left)
                r->chunk = C_DATA_CR;
            break;
        }
        case C_DATA_CR:
            i++;
            if (c == '\r')
                r->chunk = C_DATA_LF;
            else if (c == '\n')
                r->chunk = C_SIZE0;
            else
                return R_ERROR;
            break;
        case C_DATA_LF:
            i++;
            if (c != '\n')
                return R_ERROR;
            r->chunk = C_SIZE0;
            break;
        case C_TRAILER:                 /* at the start of a trailer line */
            i++;
            if (c == '\n')
                goto done;
            r->chunk = c == '\r' ? C_TRAILER_LF : C_TRAILER_LINE;
            break;
        case C_TRAILER_LINE:
            i++;
            if (c == '\n')
                r->chunk = C_TRAILER;
            break;
        case C_TRAILER_LF:
            i++;
            if (c == '\n')
                goto done;
            r->chunk = C_TRAILER_LINE;
            break;
        }
    }
    *used = n;
    return R_MORE;
done:
    r->phase = P_DONE;
    *used = i;
    return R_DONE;
}

static int feed_body(struct resp *r, const char *p, size_t n, size_t *used)
{
    switch (r->phase) {
    case P_DONE:
        *used = 0;
        return R_DONE;
    case P_LENGTH: {
        size_t take = n < r->left ? n : (size_t)r->left;
        capture(r, p, take);
        r->left -= take;
        r->body += take;
        *used = take;
        if (r->left)
            return R_MORE;
        r->phase = P_DONE;
        return R_DONE;
    }
    case P_CHUNKED:
        return feed_chunked(r, p, n, used);
    case P_TO_EOF:
        capture(r, p, n);
        r->body += n;
        *used = n;
        return R_MORE;
    }
    return R_ERROR;
}

/* Where CRLFCRLF ends in p[from..n), or 0. */
static size_t head_end(const char *p, size_t from, size_t n)
{
    for (size_t i = from; i + 3 < n;) {
        const char *cr = memchr(p + i, '\r', n - 3 - i);
        if (!cr)
            return 0;
        i = (size_t)(cr - p);
        if (cr[1] == '\n' && cr[2] == '\r' && cr[3] == '\n')
            return i + 4;
        i++;
    }
    return 0;
}

/* Bytes that cannot begin a status line: no need to wait for the rest. */
static bool bad_start(const char *p, size_t n)
{
    return memcmp(p, "HTTP/1.", n < 7 ? n : 7) != 0;
}

int resp_feed(struct resp *r, const char *p, size_t n, size_t *used)
{
    size_t off = 0;
    if (n)
        r->got_any = true;
    /* A loop, as interim 1xx heads come before the final one. */
    while (r->phase == P_HEAD) {
        if (r->hlen == 0) {
            size_t he = head_end(p + off, 0, n - off);
            if (!he) {
                /* Not all here: keep what came for the next read. */
                size_t rest = n - off;
                if (rest > HEAD_MAX || bad_start(p + off, rest))
                    return R_ERROR;
                memcpy(r->head, p + off, rest);
                r->hlen = (uint32_t)rest;
                r->total += rest;
                *used = n;
                return R_MORE;
            }
            if (he > HEAD_MAX || parse_head(r, p + off, he) != R_MORE)
                return R_ERROR;
            off += he;
            r->total += he;
        } else {
            /* A split head: gather it, look again from just before the seam. */
            size_t old = r->hlen, room = HEAD_MAX - old, take = n < room ? n : room;
            memcpy(r->head + old, p, take);
            r->hlen += (uint32_t)take;
            size_t he = head_end(r->head, old > 3 ? old - 3 : 0, r->hlen);
            if (!he) {
                if (r->hlen == HEAD_MAX || bad_start(r->head, r->hlen))
                    return R_ERROR;
                r->total += take;
                *used = n;
                return R_MORE;
            }
            if (parse_head(r, r->head, he) != R_MORE)
                return R_ERROR;
            off = he - old;
            r->total += off;
            r->hlen = 0;
        }
    }
    size_t u = 0;
    int rc = feed_body(r, p + off, n - off, &u);
    r->total += u;
    *used = off + u;
    return rc;
}

int resp_eof(struct resp *r)
{
    if (r->phase == P_TO_EOF) {
        r->phase = P_DONE;
        return R_DONE;
    }
    return R_ERROR;
}
