/* The JSON writer: a growable buffer and what goes in it.
 *
 * Contract: a jbuf only ever grows; on out of memory it sets oom and
 * drops what would not fit (the caller answers 500 then). Strings are
 * written through lib/util's one quoting function. Calls nothing above. */
#ifndef ZB_JSON_H
#define ZB_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "utf8.h"

/* A JSON body being built. */
struct jbuf {
    char *p;
    size_t n, cap;
    bool oom;
};

bool jb_reserve(struct jbuf *b, size_t more);
void jb_put(struct jbuf *b, const char *s, size_t len);
#define JB_LIT(b, lit) jb_put((b), (lit), sizeof(lit) - 1)
void jb_str(struct jbuf *b, const char *s, size_t len);   /* a JSON string, valid UTF-8 */
void jb_cstr(struct jbuf *b, const char *s);
/* A database's text of a real (s[0..len)) as the one text of its double
 * (lib/number.h), whichever backend wrote it; a text that is no finite
 * number (NaN) as a string. */
void jb_real(struct jbuf *b, const char *s, size_t len);
void jb_printf(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
