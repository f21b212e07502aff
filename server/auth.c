/* Who may write (auth.h). */
#include <string.h>

#include "auth.h"

bool auth_writer(struct MHD_Connection *c, const char *token)
{
    if (!token)
        return true;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    size_t n = strlen(token);
    if (!auth || strncmp(auth, "Bearer ", 7) || strlen(auth + 7) != n)
        return false;
    unsigned char diff = 0;   /* every byte looked at, wherever they differ */
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(auth[7 + i] ^ token[i]);
    return diff == 0;
}
