/* The JSON writer: a growable buffer and what goes in it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "utf8.h"
#include "number.h"
#include "util.h"

bool jb_reserve(struct jbuf *b, size_t more)
{
    if (b->n + more <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + more)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void jb_put(struct jbuf *b, const char *s, size_t len)
{
    if (jb_reserve(b, len)) {
        memcpy(b->p + b->n, s, len);
        b->n += len;
    }
}

/* A JSON string (lib/util's one writer). The loader stores only UTF-8,
 * but a message may quote what a client sent: a byte that is not part of
 * a UTF-8 sequence becomes U+FFFD, so the answer is always valid JSON
 * (RFC 8259 8.1). */
void jb_str(struct jbuf *b, const char *s, size_t len)
{
    size_t ok = utf8_valid_prefix(s, len);
    if (ok == len) {
        if (jb_reserve(b, ZB_JSON_QUOTED_MAX(len)))
            b->n += zb_json_quote(b->p + b->n, s, len);
        return;
    }
    if (!jb_reserve(b, ZB_JSON_QUOTED_MAX(len) + 2))   /* + 2: a run's own quotes */
        return;
    char *o = b->p + b->n;
    *o++ = '"';
    for (size_t i = 0; i < len;) {
        size_t run = utf8_valid_prefix(s + i, len - i);
        size_t w = zb_json_quote(o, s + i, run);   /* "run", its quotes then dropped */
        memmove(o, o + 1, w - 2);
        o += w - 2;
        i += run;
        if (i < len) {
            memcpy(o, "\\ufffd", 6);
            o += 6;
            i++;
        }
    }
    *o++ = '"';
    b->n = (size_t)(o - b->p);
}

void jb_cstr(struct jbuf *b, const char *s) { jb_str(b, s, strlen(s)); }

void jb_real(struct jbuf *b, const char *s, size_t len)
{
    char in[64], *end, out[ZB_REAL_TEXT_MAX];
    if (len < sizeof in) {
        memcpy(in, s, len);
        in[len] = 0;
        double v = strtod(in, &end);
        if (len && end == in + len && isfinite(v)) {
            jb_put(b, out, zb_real_text(v, out));
            return;
        }
    }
    jb_str(b, s, len);
}

void jb_printf(struct jbuf *b, const char *fmt, ...)
{
    va_list ap;
    for (int tries = 0; tries < 2; tries++) {
        size_t room = b->cap - b->n;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < room) {
            b->n += (size_t)n;
            return;
        }
        if (!jb_reserve(b, (size_t)n + 1))
            return;
    }
}
