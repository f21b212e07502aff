/* Who may write: the server's write_token (conf.h), asked of the write
 * routes' requests as "Authorization: Bearer TOKEN".
 *
 * Contract: reads the request's header only; the token is compared in
 * time that does not depend on where the two differ, and never logged.
 * Calls nothing of the server's. */
#ifndef ZB_AUTH_H
#define ZB_AUTH_H

#include <microhttpd.h>
#include <stdbool.h>

/* Does c carry token (NULL: none is asked, true)? */
bool auth_writer(struct MHD_Connection *c, const char *token);

#endif
