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
static int column_keys(struct served *sb, struct zb_err *err)
{
    const struct dataset *d = sb->data;
    size_t room = 0, n = 0;
    for (int i = 0; i < d->ncols; i++)
        room += ZB_JSON_QUOTED_MAX(strlen(dataset_field(d, i))) + 2;
    if (!(sb->keytext = malloc(room ? room : 1)))
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    for (int i = 0; i < d->ncols; i++) {
        const char *field = dataset_field(d, i);
        struct json_key *k = &sb->colkey[i];
        k->s = sb->keytext + n;
        if (i)
            sb->keytext[n++] = ',';
        n += zb_json_quote(sb->keytext + n, field, strlen(field));
        sb->keytext[n++] = ':';
        k->len = (unsigned short)(sb->keytext + n - k->s);
    }
    return 0;
}

/* sb's statement: every column of t's rows whose key column is the one
 * parameter (what: "lookup", for a message); its JSON keys, its outage
 * state. */
static int select_by_key(struct served *sb, struct zb_table t, const char *what, struct zb_err *err)
{
    /* A text key is found only by its exact bytes, on every backend. */
    const char *exact = t.cols[t.key].type == ZB_TEXT ? sb->drv->text_key_exact : NULL;
    if (zb_select_sql(sb->sql, sizeof sb->sql, &t) < 0 ||
        strlen(sb->sql) + (exact ? strlen(exact) : 0) >= sizeof sb->sql)
        return zb_fail(err, ZB_ERR_INPUT, "backend %s: the %s of %s is too long", sb->label, what,
                       t.name);
    if (exact)
        strcat(sb->sql, exact);
    if (column_keys(sb, err) < 0)
        return -1;
    sb->nparams = 1;
    pthread_mutex_init(&sb->reason_lock, NULL);
    atomic_init(&sb->up, true);
    return 0;
}

int served_init(struct served *sb, const struct backend_conf *bc,
                 const struct dataset *data, int index, struct zb_err *err)
{
    memset(sb, 0, sizeof *sb);
    sb->index = index;
    sb->conf = *bc;
    sb->conf.read_only = true;
    sb->data = data;
    sb->postal = !strcmp(data->conf->name, DATASET_DEFAULT);
    sb->key_kind = sb->postal ? KEY_POSTAL
                   : data->col[data->key].type == ZB_INTEGER ? KEY_INTEGER : KEY_TEXT;
    if (sb->postal)
        snprintf(sb->label, sizeof sb->label, "%s", bc->name);
    else
        snprintf(sb->label, sizeof sb->label, "%s/%s", data->conf->name, bc->name);
    sb->drv = backend_driver(bc->driver);
    if (!sb->drv)
        return zb_fail(err, ZB_ERR_INPUT, "backend %s: unknown driver '%s'", bc->name,
                       bc->driver ? bc->driver : "");
    int st = bc->strategy ? conf_choice(zb_strategy_names, bc->strategy) : -1;
    sb->strategy = st >= 0 ? (enum zb_strategy)st : ZB_POOLED;
    char table_name[256];
    return select_by_key(sb, dataset_table(data, bc, table_name, sizeof table_name), "lookup", err);
}

int served_init_hits(struct served *sb, const struct served *main, bool write, int index,
                     struct zb_err *err)
{
    memset(sb, 0, sizeof *sb);
    sb->index = index;
    sb->conf = main->conf;
    sb->conf.read_only = !write;
    sb->conf.never_wait = true;
    sb->drv = main->drv;
    sb->strategy = main->strategy;
    sb->data = main->data;
    sb->key_kind = KEY_POSTAL;
    sb->autocommit = true;
    snprintf(sb->label, sizeof sb->label, "%.120s (%s)", main->label, write ? "write" : "read");
    const char *table = main->conf.table ? main->conf.table : "zipcode";
    /* The stamp compared as a number on every backend (SQLite's column
     * affinity, the others' BIGINT): the same text twice. */
    int n = write ? snprintf(sb->sql, sizeof sb->sql,
                             "UPDATE %s_hits SET stamp = ? WHERE zip_code = ? AND stamp < ?", table)
                  : snprintf(sb->sql, sizeof sb->sql,
                             "SELECT stamp FROM %s_hits WHERE zip_code = ?", table);
    if (n < 0 || (size_t)n >= sizeof sb->sql)
        return zb_fail(err, ZB_ERR_INPUT, "backend %s: table name too long", main->label);
    sb->nparams = write ? 3 : 1;
    pthread_mutex_init(&sb->reason_lock, NULL);
    atomic_init(&sb->up, true);
    return 0;
}

int served_init_list(struct served *sb, const struct served *main, int index, struct zb_err *err)
{
    memset(sb, 0, sizeof *sb);
    sb->index = index;
    sb->conf = main->conf;
    sb->drv = main->drv;
    sb->strategy = main->strategy;
    sb->data = main->data;
    sb->postal = main->postal;     /* its errors name the backend as /zip's do */
    sb->key_kind = KEY_TEXT;       /* 5 digits: checked by the route */
    snprintf(sb->label, sizeof sb->label, "%.120s (list)", main->label);
    char table_name[256];
    struct zb_table t = dataset_table(main->data, &main->conf, table_name, sizeof table_name);
    t.key = 0;                     /* jis_code, KEN_ALL's first column */
    return select_by_key(sb, t, "listing", err);
}

/* ---- outage ---- */

void served_mark_down(struct served *sb, const struct zb_err *err)
{
    bool was = atomic_exchange(&sb->up, false);
    atomic_store(&sb->next_probe_ns, zb_now_ns() + PROBE_NS);
    pthread_mutex_lock(&sb->reason_lock);
    snprintf(sb->down_reason, sizeof sb->down_reason, "%s", err ? err->msg : "down");
    sb->down_kind = err ? err->kind : ZB_ERR_CONN;
    pthread_mutex_unlock(&sb->reason_lock);
    char next[300];
    if (was)
        srv_log("server: backend %s: down: %s%s", sb->label, sb->down_reason,
                backend_next_step(&sb->conf, err, next, sizeof next));
}

void served_mark_up(struct served *sb)
{
    if (!atomic_load_explicit(&sb->up, RELAXED) && !atomic_exchange(&sb->up, true))
        srv_log("server: backend %s: up again", sb->label);
}

/* A lookup or a connect failed inside the database: the client gets
 * the message without paths, the log the whole of it, at most once a
 * second per loop (with how many were left out), so a failing table
 * cannot flood it. */
void served_log_error(const struct served *sb, const char *what, const char *msg)
{
    static _Thread_local uint64_t last_ns;
    static _Thread_local unsigned left_out;
    uint64_t now = zb_now_ns();
    if (last_ns && now - last_ns < 1000000000u) {
        left_out++;
        return;
    }
    srv_log("server: backend %s: %s: %s (%u more not logged)", sb->label, what, msg,
            left_out);
    last_ns = now;
    left_out = 0;
}

void served_bump_gen(struct served *sb, unsigned seen)
{
    atomic_compare_exchange_strong(&sb->gen, &seen, seen + 1);
}

void served_down_error(struct served *sb, struct zb_err *err)
{
    pthread_mutex_lock(&sb->reason_lock);
    zb_fail(err, ZB_ERR_CONN, "backend %s is down: %.400s", sb->label, sb->down_reason);
    pthread_mutex_unlock(&sb->reason_lock);
}

enum zb_err_kind served_down_kind(struct served *sb)
{
    pthread_mutex_lock(&sb->reason_lock);
    enum zb_err_kind kind = sb->down_kind;
    pthread_mutex_unlock(&sb->reason_lock);
    return kind;
}

bool served_may_try(struct served *sb, bool *probe)
{
    *probe = false;
    if (atomic_load_explicit(&sb->up, RELAXED))
        return true;
    uint64_t now = zb_now_ns();
    uint64_t next = atomic_load_explicit(&sb->next_probe_ns, RELAXED);
    *probe = now >= next && atomic_compare_exchange_strong(&sb->next_probe_ns, &next, PROBING);
    return *probe;
}

/* A probe that neither brought the backend up nor marked it down again
 * (an SQL error, a busy pool) still lets the next one come. */
void served_end_probe(struct served *sb)
{
    uint64_t probing = PROBING;
    atomic_compare_exchange_strong(&sb->next_probe_ns, &probing, zb_now_ns() + PROBE_NS);
}

int served_start(struct served *sb, struct zb_err *err)
{
    struct backend b;
    int rc = backend_open(&b, &sb->conf, err);
    if (rc == 0) {
        backend_close(&b);
    } else {
        atomic_store(&sb->up, false);   /* main reports it: no "down" line of our own */
        served_mark_down(sb, err);
    }
    return rc;
}

void served_destroy(struct served *sb)
{
    free(sb->keytext);
    sb->keytext = NULL;
    pthread_mutex_destroy(&sb->reason_lock);
}
