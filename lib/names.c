/* The registry of derived names (names.h). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "dataset.h"
#include "names.h"
#include "route_names.h"

/* The routes' first path segments (server/route_*.c's names), and zip. */
static const char *const route_names[] = { ZB_ROUTE_NAMES "zip", NULL };

bool names_is_route(const char *name)
{
    for (int i = 0; route_names[i]; i++)
        if (!strcmp(route_names[i], name))
            return true;
    return false;
}

/* One use of a name in one database. */
struct use {
    char name[160];
    char db[300];                  /* the database it is in */
    char what[200];                /* what it is, in a message's words */
    const char *role;              /* the kind of table: two uses of one name agree on it */
    char base[160];                /* and on what it is derived from */
    char where[300];               /* where the config says so */
};

#define MAX_USES (ZB_MAX_BACKENDS * (ZB_MAX_DATASETS + 4))

/* The database backend b's tables are in: its driver and database (or
 * file). Host and port are not compared: a pooler in front of a server
 * (pg_bouncer) reaches the server's database by another port. */
static void db_of(const struct backend_conf *b, char *out, size_t len)
{
    if (b->database)
        snprintf(out, len, "%s database %s", b->driver ? b->driver : "?", b->database);
    else
        snprintf(out, len, "%s file %s", b->driver ? b->driver : "?", b->path ? b->path : "");
}

static void where_of(const struct zb_conf *conf, const struct backend_conf *b, char *out,
                     size_t len)
{
    if (b->line)
        snprintf(out, len, "%s:%d: [backend %s]", conf->file, b->line, b->name);
    else
        snprintf(out, len, "[backend %s]", b->name);
}

/* name used in db as a role table derived from base, as where says (fmt:
 * what it is, for a message); -1 with err if db has it as another. */
static int add(struct use *u, int *n, const char *db, const char *name, const char *role,
               const char *base, const char *where, struct zb_err *err, const char *fmt, ...)
    __attribute__((format(printf, 9, 10)));
static int add(struct use *u, int *n, const char *db, const char *name, const char *role,
               const char *base, const char *where, struct zb_err *err, const char *fmt, ...)
{
    struct use nu;
    nu.role = role;
    snprintf(nu.name, sizeof nu.name, "%s", name);
    snprintf(nu.db, sizeof nu.db, "%s", db);
    snprintf(nu.base, sizeof nu.base, "%s", base);
    snprintf(nu.where, sizeof nu.where, "%s", where);
    FORMAT_INTO(nu.what, fmt);
    for (int i = 0; i < *n; i++) {
        const struct use *o = &u[i];
        if (strcmp(o->db, nu.db) || strcasecmp(o->name, nu.name))
            continue;
        if (!strcmp(o->role, nu.role) && !strcmp(o->base, nu.base))
            return 0;   /* the same thing, seen from another backend */
        return zb_fail(err, ZB_ERR_INPUT, "%s: the table %s would be %s, but it is %s (%s), in "
                       "the same %s: give one of them another name", nu.where, nu.name, nu.what,
                       o->what, o->where, nu.db);
    }
    if (*n < MAX_USES)
        u[(*n)++] = nu;
    return 0;
}

int names_check(const struct zb_conf *conf, struct zb_err *err)
{
    static struct use u[MAX_USES];
    int n = 0;
    for (int i = 0; i < conf->ndatasets; i++) {
        const struct dataset_conf *d = &conf->dataset[i];
        if (strcmp(d->name, DATASET_DEFAULT) && names_is_route(d->name))
            return zb_fail(err, ZB_ERR_INPUT, "%s:%d: [dataset %s]: the name is the server's "
                           "route /%s/ (server --list-routes), which its lookups would never "
                           "reach: give the dataset another name", d->conf_file ? d->conf_file
                           : conf->file, d->line, d->name, d->name);
    }
    for (int k = 0; k < conf->nbackends; k++) {
        const struct backend_conf *b = &conf->backend[k];
        char db[300], where[300], name[200];
        db_of(b, db, sizeof db);
        where_of(conf, b, where, sizeof where);
        const char *t = b->table;
        if (add(u, &n, db, ZB_LOADS_TABLE, "loads", "", "zipbench", err, "the loads' generations") < 0)
            return -1;
        if (add(u, &n, db, t, "table", t, where, err, "backend %s's table", b->name) < 0)
            return -1;
        snprintf(name, sizeof name, "%s" ZB_HITS_SUFFIX, t);
        if (add(u, &n, db, name, "hits", t, where, err, "backend %s's write table (of %s)", b->name,
                t) < 0)
            return -1;
        snprintf(name, sizeof name, "%s" ZB_HITS_SUFFIX ZB_STAMP_SUFFIX, t);
        if (add(u, &n, db, name, "stamps", t, where, err, "backend %s's write stamps (of %s)", b->name,
                t) < 0)
            return -1;
        for (int i = 0; i < conf->ndatasets; i++) {
            const struct dataset_conf *d = &conf->dataset[i];
            if (!strcmp(d->name, DATASET_DEFAULT))
                continue;
            char dwhere[300];
            snprintf(dwhere, sizeof dwhere, "%s:%d: [dataset %s]", d->conf_file ? d->conf_file
                     : conf->file, d->line, d->name);
            dataset_table_name(d, b, name, sizeof name);
            if (add(u, &n, db, name, "dataset", name, dwhere, err, "dataset %s's table on backend %s",
                    d->name, b->name) < 0)
                return -1;
        }
    }
    return 0;
}
