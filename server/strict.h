/* RFC 9112 strictness over libmicrohttpd 0.9.75 (see strict.c). */
#ifndef ZB_STRICT_H
#define ZB_STRICT_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

/* MHD_OPTION_URI_LOG_CALLBACK: the raw URI's length and whether it is a
 * target taken, packed into the odd value it returns (see strict.c). */
void *strict_log_uri(void *cls, const char *uri, struct MHD_Connection *c);
/* MHD_OPTION_UNESCAPE_CALLBACK: %XX decoded, but %00 kept as it is. */
size_t strict_unescape(void *cls, struct MHD_Connection *c, char *s);
/* What is wrong with the request on c (rawlen and bad_target from
 * strict_log_uri's value), with *status 400 or 413; NULL if nothing. */
const char *strict_refusal(struct MHD_Connection *c, size_t rawlen, bool bad_target,
                           const char *url, const char *method, const char *version,
                           unsigned *status);

#endif
