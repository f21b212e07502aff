/* The one table of routes (route.h): a line per request type, in the
 * order the 404's list shows them. */
#include <string.h>

#include "route.h"

extern const struct route lookup_route, queries_route, cached_route, list_route, update_route,
    updates_route, health_route, stats_route;

const struct route *const route_table[] = {
    &lookup_route,
    &queries_route,
    &cached_route,
    &list_route,
    &update_route,
    &updates_route,
    &health_route,
    &stats_route,
};
const int nroutes = sizeof route_table / sizeof route_table[0];

const struct route *route_named(const char *s, size_t len)
{
    for (int i = 0; i < nroutes; i++) {
        const char *name = route_table[i]->name;
        if (name && strlen(name) == len && !memcmp(name, s, len))
            return route_table[i];
    }
    return NULL;
}

const struct route *route_of_datasets(void)
{
    for (int i = 0; i < nroutes; i++)
        if (route_table[i]->path == ROUTE_DATASET)
            return route_table[i];
    return NULL;
}

int route_index(const struct route *r)
{
    for (int i = 0; i < nroutes; i++)
        if (route_table[i] == r)
            return i;
    return -1;
}

const struct route *route_owner(const struct route *r)
{
    return r->shares ? r->shares : r;
}
