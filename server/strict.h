/* RFC 9112 strictness over libmicrohttpd 0.9.75 (see strict.c). */
#ifndef ZB_STRICT_H
#define ZB_STRICT_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

/* MHD_OPTION_URI_LOG_CALLBACK: the raw URI's length and what is wrong
 * with it as a target, packed into the odd value it returns (see
 * strict.c). */
void *strict_log_uri(void *cls, const char *uri, struct MHD_Connection *c);
/* MHD_OPTION_UNESCAPE_CALLBACK: %XX decoded, but %00 kept as it is. */
size_t strict_unescape(void *cls, struct MHD_Connection *c, char *s);
/* What is wrong with the request on c (target: strict_log_uri's value,
 * 0 if it was not called), with *status 400, 413 or 505; NULL if
 * nothing. Call it on the handler's first call, before the body. */
const char *strict_refusal(struct MHD_Connection *c, uintptr_t target, const char *url,
                           const char *method, const char *version, unsigned *status);

/* A %2F of the raw target (strict_log_uri's value) in a path segment
 * the route reads, before key_segment (the path segment, from 1, where its
 * key begins, the rest of the path; 0: it has none): why it is refused
 * (400), else NULL. */
const char *strict_slash_refused(uintptr_t target, unsigned key_segment);

#endif
