/* One backend serving one dataset, as every loop sees it: its lookup and
 * its outage state (its key set for /random: keyset.c).
 *
 * Outage: a lookup whose connection fails marks the backend down; while
 * down, one lookup at a time (the probe) may go to the database, the next
 * one no sooner than PROBE_NS after the last one ended; the others get 503
 * at once. A probe that succeeds marks it up again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "served.h"

#define PROBE_NS (200u * 1000u * 1000u)   /* while down: 200 ms between probes */
#define PROBING UINT64_MAX                 /* next_probe_ns while a probe is under way */

/* `"name":` for every column, so a row is written by copies only. */
static int column_keys(struct served *sv, struct zb_err *err)
{
    const struct dataset *d = sv->data;
    size_t room = 0, n = 0;
    for (int i = 0; i < d->ncols; i++)
        room += ZB_JSON_QUOTED_MAX(strlen(dataset_field(d, i))) + 2;
    if (!(sv->keytext = malloc(room ? room : 1)))
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    for (int i = 0; i < d->ncols; i++) {
        const char *field = dataset_field(d, i);
        struct json_key *k = &sv->colkey[i];
        k->s = sv->keytext + n;
        if (i)
            sv->keytext[n++] = ',';
        n += zb_json_quote(sv->keytext + n, field, strlen(field));
        sv->keytext[n++] = ':';
        k->len = (unsigned short)(sv->keytext + n - k->s);
    }
    return 0;
}

int served_select(struct served *sv, struct zb_table t, const char *what, struct zb_err *err)
{
    /* A text key is found only by its exact bytes, on every backend. */
    const char *exact = t.cols[t.key].type == ZB_TEXT ? sv->drv->text_key_exact : NULL;
    if (zb_select_sql(sv->sql, sizeof sv->sql, &t) < 0 ||
        strlen(sv->sql) + (exact ? strlen(exact) : 0) >= sizeof sv->sql)
        return zb_fail(err, ZB_ERR_INPUT, "backend %s: the %s of %s is too long", sv->label, what,
                       t.name);
    if (exact)
        strcat(sv->sql, exact);
    sv->nparams = 1;
    return column_keys(sv, err);
}

/* What every served table starts with: its index, backend and dataset, up. */
static void served_base(struct served *sv, const struct backend_conf *bc,
                        const struct dataset *data, int index)
{
    memset(sv, 0, sizeof *sv);
    sv->index = index;
    sv->conf = *bc;
    sv->conf.read_only = true;
    sv->data = data;
    pthread_mutex_init(&sv->reason_lock, NULL);
    atomic_init(&sv->up, true);
}

int served_init(struct served *sv, const struct backend_conf *bc,
                 const struct dataset *data, int index, struct zb_err *err)
{
    served_base(sv, bc, data, index);
    sv->key_kind = !strcmp(data->conf->name, DATASET_DEFAULT) ? KEY_POSTAL
                   : data->col[data->key].type == ZB_INTEGER ? KEY_INTEGER : KEY_TEXT;
    if (sv->key_kind == KEY_POSTAL)
        snprintf(sv->label, sizeof sv->label, "%s", bc->name);
    else
        snprintf(sv->label, sizeof sv->label, "%s/%s", data->conf->name, bc->name);
    sv->drv = backend_driver(bc->driver);
    if (!sv->drv)
        return zb_fail(err, ZB_ERR_INPUT, "backend %s: unknown driver '%s'", bc->name,
                       bc->driver ? bc->driver : "");
    int st = bc->strategy ? strategy_by_name(bc->strategy) : STRATEGY_pooled;
    if (st < 0) {
        char names[128];
        conf_choice_list(strategy_names, names, sizeof names);
        return zb_fail(err, ZB_ERR_INPUT, "%s: strategy: '%s' is not %s",
                       bc->strategy_where ? bc->strategy_where : bc->name, bc->strategy, names);
    }
    sv->strategy = (enum strategy_id)st;
    char table_name[256];
    return served_select(sv, dataset_table(data, bc, table_name, sizeof table_name), "lookup", err);
}

int served_init_beside(struct served *sv, const struct served *owner, const char *role,
                     const char *sql, int nparams, bool writable, int index, struct zb_err *err)
{
    served_base(sv, &owner->conf, owner->data, index);
    sv->conf.read_only = !writable;
    sv->conf.never_wait = writable;
    sv->autocommit = writable;
    sv->drv = owner->drv;
    sv->strategy = owner->strategy;
    sv->key_kind = owner->key_kind;
    sv->owner = owner;
    sv->role = role;
    memcpy(sv->colkey, owner->colkey, sizeof sv->colkey);
    snprintf(sv->label, sizeof sv->label, "%.120s (%s)", owner->label, role);
    if (sql && snprintf(sv->sql, sizeof sv->sql, "%s", sql) >= (int)sizeof sv->sql)
        return zb_fail(err, ZB_ERR_INPUT, "backend %s: its %s statement is too long", owner->label,
                       role);
    sv->nparams = nparams;
    return 0;
}

struct served *served_add(struct served **list, int *n, apr_pool_t *pool, struct zb_err *err)
{
    if (*n >= SRV_MAX_SERVED) {
        zb_fail(err, ZB_ERR_INPUT, "more than %d tables to serve (datasets x backends, and the "
                "tables of the listing and the writes)", SRV_MAX_SERVED);
        return NULL;
    }
    struct served *sv = apr_pcalloc(pool, sizeof *sv);
    list[*n] = sv;
    sv->index = (*n)++;
    return sv;
}

/* ---- outage ---- */

void served_mark_down(struct served *sv, const struct zb_err *err)
{
    bool was = atomic_exchange(&sv->up, false);
    atomic_store(&sv->next_probe_ns, zb_now_ns() + PROBE_NS);
    pthread_mutex_lock(&sv->reason_lock);
    snprintf(sv->down_reason, sizeof sv->down_reason, "%s", err ? err->msg : "down");
    sv->down_kind = err ? err->kind : ZB_ERR_CONN;
    pthread_mutex_unlock(&sv->reason_lock);
    char next[300];
    if (was)
        srv_log("server: backend %s: down: %s%s", sv->label, sv->down_reason,
                backend_next_step(&sv->conf, err, next, sizeof next));
}

void served_mark_up(struct served *sv)
{
    if (!atomic_load_explicit(&sv->up, RELAXED) && !atomic_exchange(&sv->up, true))
        srv_log("server: backend %s: up again", sv->label);
}

/* A lookup or a connect failed inside the database: the client gets
 * the message without paths, the log the whole of it, at most once a
 * second per loop (with how many were left out), so a failing table
 * cannot flood it. */
void served_log_error(const struct served *sv, const char *what, const char *msg)
{
    static _Thread_local uint64_t last_ns;
    static _Thread_local unsigned left_out;
    uint64_t now = zb_now_ns();
    if (last_ns && now - last_ns < 1000000000u) {
        left_out++;
        return;
    }
    srv_log("server: backend %s: %s: %s (%u more not logged)", sv->label, what, msg,
            left_out);
    last_ns = now;
    left_out = 0;
}

void served_bump_gen(struct served *sv, unsigned seen)
{
    atomic_compare_exchange_strong(&sv->gen, &seen, seen + 1);
}

void served_down_error(struct served *sv, struct zb_err *err)
{
    pthread_mutex_lock(&sv->reason_lock);
    zb_fail(err, ZB_ERR_CONN, "backend %s is down: %.400s", sv->label, sv->down_reason);
    pthread_mutex_unlock(&sv->reason_lock);
}

enum zb_err_kind served_down_kind(struct served *sv)
{
    pthread_mutex_lock(&sv->reason_lock);
    enum zb_err_kind kind = sv->down_kind;
    pthread_mutex_unlock(&sv->reason_lock);
    return kind;
}

bool served_may_try(struct served *sv, bool *probe)
{
    *probe = false;
    if (atomic_load_explicit(&sv->up, RELAXED))
        return true;
    uint64_t now = zb_now_ns();
    uint64_t next = atomic_load_explicit(&sv->next_probe_ns, RELAXED);
    *probe = now >= next && atomic_compare_exchange_strong(&sv->next_probe_ns, &next, PROBING);
    return *probe;
}

/* A probe that neither brought the backend up nor marked it down again
 * (an SQL error, a busy pool) still lets the next one come. */
void served_end_probe(struct served *sv)
{
    uint64_t probing = PROBING;
    atomic_compare_exchange_strong(&sv->next_probe_ns, &probing, zb_now_ns() + PROBE_NS);
}

void served_probe_now(struct served *sv)
{
    atomic_store(&sv->next_probe_ns, 0);
}

int served_start(struct served *sv, struct zb_err *err)
{
    struct backend b;
    int rc = backend_open(&b, &sv->conf, err);
    if (rc == 0) {
        backend_close(&b);
    } else {
        atomic_store(&sv->up, false);   /* main reports it: no "down" line of our own */
        served_mark_down(sv, err);
    }
    return rc;
}

void served_destroy(struct served *sv)
{
    free(sv->keytext);
    sv->keytext = NULL;
    pthread_mutex_destroy(&sv->reason_lock);
}
