/* The one table of routes (route.h): a line per request type, in the
 * order the 404's list shows them; route_NAME.c defines NAME_route. */
#include <stdio.h>
#include <string.h>

#include "route.h"

#define ROUTES(X) \
    X(lookup) \
    X(queries) \
    X(cached) \
    X(list) \
    X(update) \
    X(updates) \
    X(health) \
    X(stats) \
    /* a new route's line above */

#define ROUTE_DECLARE(name) extern const struct route name##_route;
ROUTES(ROUTE_DECLARE)
#define ROUTE_ENTRY(name) &name##_route,
const struct route *const route_table[] = { ROUTES(ROUTE_ENTRY) };
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

/* ---- a path to its route and served table ---- */

static bool is_name(const char *name, const char *s, size_t len)
{
    return strlen(name) == len && !memcmp(name, s, len);
}

/* The served dataset called s ("zip": the postal dataset), or -1. */
int route_dataset(const struct server *srv, const char *s, size_t len)
{
    if (is_name("zip", s, len))
        s = DATASET_DEFAULT, len = strlen(DATASET_DEFAULT);
    for (int d = 0; d < srv->ndatasets; d++)
        if (is_name(srv->datasets[d]->conf->name, s, len))
            return d;
    return -1;
}

/* Dataset d's table on the backend called s, or NULL. */
struct served *route_table_of(struct server *srv, int d, const char *s, size_t len)
{
    int per = srv->nserved / srv->ndatasets;
    for (int i = d * per; d >= 0 && i < (d + 1) * per; i++)
        if (is_name(srv->served[i]->conf.name, s, len))
            return srv->served[i];
    return NULL;
}

/* The route path's first segment names, or NULL. */
const struct route *route_for(const struct server *srv, const char *path)
{
    if (path[0] != '/')
        return NULL;
    const char *seg = path + 1, *end = strchr(seg, '/');
    size_t len = end ? (size_t)(end - seg) : strlen(seg);
    const struct route *r = route_named(seg, len);
    return r ? r : end && route_dataset(srv, seg, len) >= 0 ? route_of_datasets() : NULL;
}

/* Appends to list[*n] (size bytes), as snprintf would, never past it. */
static void add(char *list, size_t size, size_t *n, const char *a, const char *b)
{
    int w = snprintf(list + *n, size - *n, "%s%s", a, b);
    if (w > 0)
        *n = *n + (size_t)w < size ? *n + (size_t)w : size - 1;
}

void route_list(const struct server *srv, char *list, size_t size)
{
    size_t n = 0;
    list[0] = 0;
    for (int i = 0; i < nroutes; i++) {
        add(list, size, &n, i ? "; " : "", route_table[i]->usage);
        for (int d = 0; route_table[i]->path == ROUTE_DATASET && d < srv->ndatasets; d++)
            add(list, size, &n, d ? ", " : " (datasets: ", srv->datasets[d]->conf->name);
        if (route_table[i]->path == ROUTE_DATASET)
            add(list, size, &n, ")", "");
    }
}
