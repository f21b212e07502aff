/* The JSON writer: a growable buffer and what goes in it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
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

/* A JSON string (lib/util's one writer); the bytes are UTF-8 as stored
 * (the loader only stores UTF-8). */
void jb_str(struct jbuf *b, const char *s, size_t len)
{
    if (jb_reserve(b, ZB_JSON_QUOTED_MAX(len)))
        b->n += zb_json_quote(b->p + b->n, s, len);
}

void jb_cstr(struct jbuf *b, const char *s) { jb_str(b, s, strlen(s)); }

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
