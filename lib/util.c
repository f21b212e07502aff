#include "util.h"

#include <stdio.h>
#include <string.h>

int zb_fail(struct zb_err *err, enum zb_err_kind kind, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->kind = kind;
        err->row = 0;
        err->row_span = 0;
    }
    return -1;
}

size_t zb_json_quote(char *out, const char *s, size_t len)
{
    char *o = out;
    *o++ = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') {
            *o++ = (char)ch;
            continue;
        }
        *o++ = '\\';
        switch (ch) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        default:
            o += sprintf(o, "u%04x", ch);
        }
    }
    *o++ = '"';
    return (size_t)(o - out);
}

void zb_json_fputs(FILE *f, const char *s)
{
    if (!s)
        s = "";
    char buf[1024];
    size_t len = strlen(s);
    /* Pieces small enough for buf, cut between bytes that need no escape
     * from each other (any byte boundary: escapes are per byte). */
    fputc('"', f);
    for (size_t at = 0; at < len;) {
        size_t n = len - at < (sizeof buf - 2) / 6 ? len - at : (sizeof buf - 2) / 6;
        size_t w = zb_json_quote(buf, s + at, n);
        fwrite(buf + 1, 1, w - 2, f);
        at += n;
    }
    fputc('"', f);
}

void zb_json_string(const char *s) { zb_json_fputs(stdout, s); }
