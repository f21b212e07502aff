/* Config file reading with inih. inih is fed through a line-counting
 * reader so every error can name its line, which inih alone reports only
 * for the first failure and without the key. */
#include "conf.h"
#include "dataset.h"

#include "backend.h"
#include "names.h"
#include "sqlwords.h"

#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>

static const char *keep(struct zb_conf *conf, const char *s)
{
    /* Strings live in one list of separately allocated copies: a pointer
     * array we free at the end. */
    if (conf->nstrings == conf->capstrings) {
        int cap = conf->capstrings ? conf->capstrings * 2 : 32;
        char **grown = realloc(conf->strings, (size_t)cap * sizeof *grown);
        if (!grown)
            return NULL;
        conf->strings = grown;
        conf->capstrings = cap;
    }
    char *copy = strdup(s);
    if (copy)
        conf->strings[conf->nstrings++] = copy;
    return copy;
}

static void backend_defaults(struct backend_conf *b)
{
    memset(b, 0, sizeof *b);
    b->table = "zipcode";
    b->pool_min = 0;
    b->pool_soft_max = 8;
    b->pool_hard_max = 32;
    b->pool_ttl_s = 60;
    b->acquire_timeout_ms = 2000;
    b->connect_timeout_s = 2;
    b->per_request_connect_timeout_s = 60;
    b->pipeline_connections = 1;
}

static void dataset_defaults(struct dataset_conf *d, const char *name)
{
    memset(d, 0, sizeof *d);
    d->name = name;
    d->format = "csv";
    d->header = true;
    d->sample_rows = 1000;
    d->table = name;
}

/* The default dataset, there even with no [dataset postal] section. */
static void postal_defaults(struct dataset_conf *d)
{
    dataset_defaults(d, DATASET_DEFAULT);
    d->file = "build/ken_all.csv";
    d->format = "kenall";
    d->table = NULL;  /* the backends' own */
}

void conf_defaults(struct zb_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    conf->file = "(defaults)";
    conf->server.bind = "127.0.0.1";
    conf->server.port = 8080;
    conf->server.threads = 0;   /* one per online CPU */
    conf->server.connection_timeout_s = 10;
    conf->server.header_timeout_s = 10;
    conf->server.max_connections = 1024;
    conf->server.max_request_bytes = 4096;   /* docs/SERVER.md: what a request needs */
    conf->server.cache_entries = 10000;
    conf->ndatasets = 1;
    postal_defaults(&conf->dataset[0]);
}

static int parse_int(const char *v, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < lo || n > hi)
        return -1;
    *out = (int)n;
    return 0;
}

static int parse_bool(const char *v, bool *out)
{
    if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcasecmp(v, "on") || !strcmp(v, "1"))
        *out = true;
    else if (!strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcasecmp(v, "off") || !strcmp(v, "0"))
        *out = false;
    else
        return -1;
    return 0;
}

/* Names that end up inside SQL text (table) must be plain identifiers. */
static bool is_identifier(const char *s)
{
    if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

struct field {
    const char *key;
    /* F_TABLE: an F_IDENT that is no word SQL reserves (a table's name) */
    /* F_STR_AT: an F_STR followed in its struct by a const char * that
     * keeps where it was set, for a check made later by its user. */
    enum { F_STR, F_STR_AT, F_INT, F_BOOL, F_IDENT, F_TABLE } type;
    size_t offset;
    int lo, hi;
};

int conf_choice(const char *const *choices, const char *value)
{
    for (int i = 0; choices[i]; i++)
        if (!strcmp(choices[i], value))
            return i;
    return -1;
}

void conf_choice_list(const char *const *choices, char *buf, size_t len)
{
    buf[0] = 0;
    for (const char *const *c = choices; *c; c++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s",
                 c == choices ? "" : c[1] ? ", " : " or ", *c);
}

#define S(k) { #k, F_STR, offsetof(struct server_conf, k), 0, 0 }
#define I(k, lo, hi) { #k, F_INT, offsetof(struct server_conf, k), lo, hi }
static const struct field server_fields[] = {
    S(bind), I(port, 1, 65535), I(threads, 1, 256), I(connection_timeout_s, 1, 3600),
    I(header_timeout_s, 0, 3600),
    I(max_connections, 1, 1000000), I(max_request_bytes, 1024, 16 * 1024 * 1024),
    I(cache_entries, 0, 10000000), S(write_token), I(spin_us, 0, 1000000),
    { "pin", F_BOOL, offsetof(struct server_conf, pin), 0, 0 },
};
#undef S
#undef I
#define S(k) { #k, F_STR, offsetof(struct backend_conf, k), 0, 0 }
#define I(k, lo, hi) { #k, F_INT, offsetof(struct backend_conf, k), lo, hi }
#define B(k) { #k, F_BOOL, offsetof(struct backend_conf, k), 0, 0 }
static const struct field backend_fields[] = {
    S(driver), S(path), S(host), I(port, 1, 65535), S(socket), S(user), S(password),
    S(password_file), S(database), S(started_by),
    { "table", F_TABLE, offsetof(struct backend_conf, table), 0, 0 },
    I(pool_min, 0, 10000), I(pool_soft_max, 0, 10000), I(pool_hard_max, 1, 10000),
    I(pool_ttl_s, 0, 86400), I(acquire_timeout_ms, 1, 600000), I(connect_timeout_s, 1, 600),
    I(per_request_connect_timeout_s, 1, 3600), I(query_timeout_ms, 0, 600000),
    B(read_only), B(writes), I(pipeline_connections, 1, 8), B(named_only),
    /* The server's to check (its list of strategies): kept with where it
     * was said. */
    { "strategy", F_STR_AT, offsetof(struct backend_conf, strategy), 0, 0 },
};
#undef S
#undef I
#undef B
#define S(k) { #k, F_STR, offsetof(struct dataset_conf, k), 0, 0 }
#define B(k) { #k, F_BOOL, offsetof(struct dataset_conf, k), 0, 0 }
#define N(k) { #k, F_IDENT, offsetof(struct dataset_conf, k), 0, 0 }
static const struct field dataset_fields[] = {
    S(file), S(format), S(encoding), B(raw), B(header), S(delimiter), S(quote), S(null), N(table),
    N(key), S(columns), { "sample_rows", F_INT, offsetof(struct dataset_conf, sample_rows), 1,
                          100000000 },
};
#undef S
#undef B
#undef N

/* ${NAME} and ${NAME:-DEFAULT} in value, from the environment (an unset
 * or empty NAME takes DEFAULT): how the ports that scripts/db takes from
 * ZB_PG_PORT and ZB_MY_PORT reach every program through one config. */
static int expand_env(const char *value, char *out, size_t len, const char *where, const char *key,
                      struct zb_err *err)
{
    size_t n = 0;
    for (const char *v = value; *v;) {
        const char *piece = v, *end;
        size_t plen = 1;
        if (v[0] == '$' && v[1] == '{') {
            char name[128];
            size_t nlen = strspn(v + 2, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
            const char *after = v + 2 + nlen;
            bool has_default = after[0] == ':' && after[1] == '-';
            end = strchr(after, '}');
            if (!nlen || nlen >= sizeof name || isdigit((unsigned char)v[2]) || !end ||
                (!has_default && end != after))
                return zb_fail(err, ZB_ERR_INPUT, "%s: %s: '%s' is not ${NAME} or ${NAME:-DEFAULT}",
                               where, key, value);
            snprintf(name, sizeof name, "%.*s", (int)nlen, v + 2);
            const char *env = getenv(name);
            if (env && *env) {
                piece = env;
                plen = strlen(env);
            } else if (has_default) {
                piece = after + 2;
                plen = (size_t)(end - piece);
            } else {
                return zb_fail(err, ZB_ERR_INPUT, "%s: %s: environment variable %s is not set",
                               where, key, name);
            }
            v = end + 1;
        } else {
            v++;
        }
        if (n + plen >= len)
            return zb_fail(err, ZB_ERR_INPUT, "%s: %s: the value is longer than %zu bytes", where,
                           key, len - 1);
        memcpy(out + n, piece, plen);
        n += plen;
    }
    out[n] = 0;
    return 0;
}

/* The environment variable a value is taken from when the value is one
 * ${NAME} or ${NAME:-DEFAULT} as a whole, into name; false otherwise. */
static bool env_var_of(const char *raw, char *name, size_t len)
{
    if (raw[0] != '$' || raw[1] != '{')
        return false;
    size_t n = strspn(raw + 2, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
    const char *end = strchr(raw + 2 + n, '}');
    if (!n || n >= len || !end || end[1])
        return false;
    snprintf(name, len, "%.*s", (int)n, raw + 2);
    return true;
}

/* A key given no value: every key has a default (or is required), and an
 * empty one would not mean it (an empty socket would win over host). */
static int empty_value(const char *where, const char *key, struct zb_err *err)
{
    return zb_fail(err, ZB_ERR_INPUT, "%s: %s: empty value (leave the key out for its default)",
                   where, key);
}

/* A table's name, used unquoted in SQL: a word SQL reserves would fail
 * only in the first statement that names it, maybe after a whole load. */
static int reserved_table(const char *where, const char *key, const char *name,
                          struct zb_err *err)
{
    return zb_fail(err, ZB_ERR_INPUT, "%s: %s: '%s' is a word SQL reserves (PostgreSQL, MariaDB "
                   "or SQLite), which no table may be named: choose another name", where, key,
                   name);
}

static int set_field(struct zb_conf *conf, void *base, const struct field *f, size_t nf,
                     const char *key, const char *raw, const char *where, struct zb_err *err)
{
    char value[4096];
    if (expand_env(raw, value, sizeof value, where, key, err) < 0)
        return -1;
    for (size_t i = 0; i < nf; i++) {
        if (strcmp(f[i].key, key))
            continue;
        void *p = (char *)base + f[i].offset;
        if (!*value)
            return empty_value(where, key, err);
        switch (f[i].type) {
        case F_IDENT:
        case F_TABLE:
            if (!is_identifier(value))
                return zb_fail(err, ZB_ERR_INPUT, "%s: %s: '%s' is not a plain SQL name "
                               "(letters, digits, _)", where, key, value);
            if (f[i].type == F_TABLE && sql_reserved(value))
                return reserved_table(where, key, value, err);
            break;
        case F_STR_AT: {
            const char *at = keep(conf, where);
            if (!at)
                return zb_fail(err, ZB_ERR_SYS, "out of memory");
            *(const char **)((char *)p + sizeof(const char *)) = at;
            break;
        }
        case F_STR:
            break;
        case F_INT:
            if (parse_int(value, f[i].lo, f[i].hi, p) < 0)
                return zb_fail(err, ZB_ERR_INPUT, "%s: %s: '%s' is not an integer in %d..%d",
                               where, key, value, f[i].lo, f[i].hi);
            return 0;
        case F_BOOL:
            if (parse_bool(value, p) < 0)
                return zb_fail(err, ZB_ERR_INPUT, "%s: %s: '%s' is not yes or no", where, key, value);
            return 0;
        }
        /* The string kinds. */
        const char *s = keep(conf, value);
        if (!s)
            return zb_fail(err, ZB_ERR_SYS, "out of memory");
        *(const char **)p = s;
        return 0;
    }
    return zb_fail(err, ZB_ERR_INPUT, "%s: unknown key '%s'", where, key);
}

static bool known_field(const struct field *f, size_t nf, const char *key)
{
    for (size_t i = 0; i < nf; i++)
        if (!strcmp(f[i].key, key))
            return true;
    return false;
}

#define NFIELDS(a) (sizeof (a) / sizeof (a)[0])

const char *conf_option(const struct backend_conf *bc, const char *key)
{
    for (int i = bc->nopts - 1; i >= 0; i--)   /* the last one given wins */
        if (!strcmp(bc->opt[i].key, key))
            return bc->opt[i].value;
    return NULL;
}

/* "file:line: " (or "--set: ") for a driver key's message. */
static void opt_where(const struct zb_conf *conf, const struct conf_option *o, char *out,
                      size_t len)
{
    if (o->line)
        snprintf(out, len, "%s:%d", conf->file, o->line);
    else
        snprintf(out, len, "--set");
}

/* Asks b's driver about its key o. */
static int check_option(const struct zb_conf *conf, const struct backend_conf *b,
                        const struct conf_option *o, struct zb_err *err)
{
    const struct backend_driver *drv = backend_driver(b->driver);
    char why[300], where[300];
    opt_where(conf, o, where, sizeof where);
    int rc = drv->check_key ? drv->check_key(o->key, o->value, why, sizeof why) : -1;
    if (rc == -1)
        return zb_fail(err, ZB_ERR_INPUT, "%s: unknown key '%s' (for a %s backend)", where,
                       o->key, b->driver);
    if (rc < 0)
        return zb_fail(err, ZB_ERR_INPUT, "%s: [backend %s]: %s: %s", where, b->name, o->key, why);
    return 0;
}

/* A backend key conf.c does not know: its driver's, checked once the
 * driver is known (by validate() for the file, at once for --set). */
static int add_option(struct zb_conf *conf, struct backend_conf *b, const char *key,
                      const char *value, int line, struct zb_err *err)
{
    char where[300];
    if (line)
        snprintf(where, sizeof where, "%s:%d", conf->file, line);
    else
        snprintf(where, sizeof where, "[%s]", b->name);
    if (!*value)
        return empty_value(where, key, err);
    if (b->nopts == ZB_MAX_DRIVER_KEYS)
        return zb_fail(err, ZB_ERR_INPUT, "%s: [backend %s]: more than %d driver keys", where,
                       b->name, ZB_MAX_DRIVER_KEYS);
    struct conf_option *o = &b->opt[b->nopts];
    o->key = keep(conf, key);
    o->value = keep(conf, value);
    o->line = line;
    if (!o->key || !o->value)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    if (!line && (!b->driver || check_option(conf, b, o, err) < 0))
        return b->driver ? -1 : zb_fail(err, ZB_ERR_INPUT, "--set: [backend %s]: unknown key "
                                         "'%s' (no driver)", b->name, key);
    b->nopts++;
    return 0;
}

static struct backend_conf *find_backend(struct zb_conf *conf, const char *name)
{
    for (int i = 0; i < conf->nbackends; i++)
        if (!strcmp(conf->backend[i].name, name))
            return &conf->backend[i];
    return NULL;
}

static struct backend_conf *add_backend(struct zb_conf *conf, const char *name, const char *where,
                                        struct zb_err *err)
{
    if (!is_identifier(name)) {
        zb_fail(err, ZB_ERR_INPUT, "%s: backend name '%s' must be letters, digits, _", where, name);
        return NULL;
    }
    if (conf->nbackends == ZB_MAX_BACKENDS) {
        zb_fail(err, ZB_ERR_INPUT, "%s: more than %d backends", where, ZB_MAX_BACKENDS);
        return NULL;
    }
    struct backend_conf *b = &conf->backend[conf->nbackends++];
    backend_defaults(b);
    b->name = keep(conf, name);
    return b;
}

static int driver_error(const char *where, const struct backend_conf *b, const char *value,
                        struct zb_err *err);

static struct dataset_conf *find_dataset(struct zb_conf *conf, const char *name)
{
    for (int i = 0; i < conf->ndatasets; i++)
        if (!strcmp(conf->dataset[i].name, name))
            return &conf->dataset[i];
    return NULL;
}

/* A [dataset NAME] section: the built-in postal one is replaced by the
 * file's own. */
static struct dataset_conf *add_dataset(struct zb_conf *conf, const char *name, int line,
                                        const char *where, struct zb_err *err)
{
    struct dataset_conf *d = find_dataset(conf, name);
    if (!is_identifier(name)) {
        zb_fail(err, ZB_ERR_INPUT, "%s: dataset name '%s' must be letters, digits, _", where, name);
        return NULL;
    }
    if (!d && conf->ndatasets == ZB_MAX_DATASETS) {
        zb_fail(err, ZB_ERR_INPUT, "%s: more than %d datasets", where, ZB_MAX_DATASETS);
        return NULL;
    }
    if (!d)
        d = &conf->dataset[conf->ndatasets++];
    if (!strcmp(name, DATASET_DEFAULT))
        postal_defaults(d);
    else
        dataset_defaults(d, keep(conf, name));
    d->line = line;
    return d;
}

static int set_dataset_field(struct zb_conf *conf, struct dataset_conf *d, const char *key,
                             const char *value, const char *where, struct zb_err *err)
{
    if (!*value)
        return empty_value(where, key, err);
    if (dataset_check_value(key, value, where, err) < 0)
        return -1;
    return set_field(conf, d, dataset_fields, NFIELDS(dataset_fields), key, value, where, err);
}

static int set_backend_field(struct zb_conf *conf, struct backend_conf *b, const char *key,
                             const char *value, int line, const char *where, struct zb_err *err);

int conf_set(struct zb_conf *conf, const char *section, const char *key, const char *value,
             struct zb_err *err)
{
    char where[160];
    snprintf(where, sizeof where, "[%s]", section ? section : "server");
    if (!section || !strcmp(section, "server"))
        return set_field(conf, &conf->server, server_fields, NFIELDS(server_fields), key, value,
                         where, err);
    if (!strncmp(section, "dataset ", 8)) {
        struct dataset_conf *d = find_dataset(conf, section + 8);
        if (!d)
            return zb_fail(err, ZB_ERR_INPUT, "unknown dataset '%s'", section + 8);
        return set_dataset_field(conf, d, key, value, where, err);
    }
    struct backend_conf *b = find_backend(conf, section);
    if (!b)
        return zb_fail(err, ZB_ERR_INPUT, "unknown backend '%s'", section);
    return set_backend_field(conf, b, key, value, 0, where, err);
}

int conf_set_arg(struct zb_conf *conf, const char *arg, struct zb_err *err)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", arg);
    char *dot = strchr(buf, '.'), *eq = strchr(buf, '=');
    if (!dot || !eq || eq < dot)
        return zb_fail(err, ZB_ERR_INPUT, "'%s' is not BACKEND.KEY=VALUE", arg);
    *eq = 0;
    if (!strncmp(buf, "dataset.", 8)) {  /* dataset.NAME.KEY=VALUE */
        char *name = buf + 8, *key = strchr(name, '.');
        if (!key)
            return zb_fail(err, ZB_ERR_INPUT, "'%s' is not dataset.NAME.KEY=VALUE", arg);
        *key = 0;
        char section[160];
        snprintf(section, sizeof section, "dataset %.140s", name);
        return conf_set(conf, section, key + 1, eq + 1, err);
    }
    *dot = 0;
    return conf_set(conf, buf, dot + 1, eq + 1, err);
}

/* Field f of base as text: strings as they are ("" when unset), integers in
 * decimal, booleans as yes or no. */
static void format_field(const void *base, const struct field *f, char *buf, size_t len)
{
    const void *p = (const char *)base + f->offset;
    switch (f->type) {
    case F_INT:
        snprintf(buf, len, "%d", *(const int *)p);
        return;
    case F_BOOL:
        snprintf(buf, len, "%s", *(const bool *)p ? "yes" : "no");
        return;
    case F_STR:
    case F_STR_AT:
    case F_IDENT:
    case F_TABLE: {
        const char *v = *(const char *const *)p;
        snprintf(buf, len, "%s", v ? v : "");
        return;
    }
    }
}

static int get_field(const void *base, const struct field *f, size_t nf, const char *key,
                     const char *where, char *buf, size_t len, struct zb_err *err)
{
    for (size_t i = 0; i < nf; i++)
        if (!strcmp(f[i].key, key)) {
            format_field(base, &f[i], buf, len);
            return 0;
        }
    return zb_fail(err, ZB_ERR_INPUT, "%s: unknown key '%s'", where, key);
}

int conf_get_arg(const struct zb_conf *conf, const char *arg, char *buf, size_t len,
                 struct zb_err *err)
{
    char name[512];
    snprintf(name, sizeof name, "%s", arg);
    char *dot = strrchr(name, '.');
    if (!dot || dot == name || !dot[1])
        return zb_fail(err, ZB_ERR_INPUT, "'%s' is not BACKEND.KEY, server.KEY or "
                       "dataset.NAME.KEY", arg);
    *dot = 0;
    const char *key = dot + 1;
    char where[600];
    if (!strcmp(name, "server")) {
        snprintf(where, sizeof where, "[server]");
        return get_field(&conf->server, server_fields, NFIELDS(server_fields), key, where, buf,
                         len, err);
    }
    if (!strncmp(name, "dataset.", 8)) {
        const struct dataset_conf *d = conf_dataset(conf, name + 8);
        if (!d)
            return zb_fail(err, ZB_ERR_INPUT, "no dataset '%s' in %s", name + 8, conf->file);
        snprintf(where, sizeof where, "[dataset %s]", d->name);
        return get_field(d, dataset_fields, NFIELDS(dataset_fields), key, where, buf, len, err);
    }
    const struct backend_conf *b = conf_backend(conf, name);
    if (!b)
        return zb_fail(err, ZB_ERR_INPUT, "no backend '%s' in %s", name, conf->file);
    const char *option = conf_option(b, key);
    if (option && !known_field(backend_fields, NFIELDS(backend_fields), key)) {
        snprintf(buf, len, "%s", option);
        return 0;
    }
    snprintf(where, sizeof where, "[backend %s]", b->name);
    return get_field(b, backend_fields, NFIELDS(backend_fields), key, where, buf, len, err);
}

/* A section header seen so far (of any file), for "defined twice". */
struct seen_header {
    char name[128];
    const char *file;
    int line;
};

struct parse_state {
    struct zb_conf *conf;
    const char *file;              /* the file being read: the config, or an included one */
    bool included;                 /* it is an included one: [dataset NAME] sections only */
    FILE *f;
    char *buf;                     /* the line being read (getline's) */
    size_t cap;
    int line;
    struct backend_conf *current;  /* the [backend NAME] being read */
    struct dataset_conf *dataset;  /* the [dataset NAME] being read */
    char last_key[64];             /* of the entry before, for `columns` continued */
    char section[128];
    struct zb_err *err;
    bool failed;
    struct seen_header headers[ZB_MAX_BACKENDS + ZB_MAX_DATASETS + 2];
    int nheaders;
    int pool_line[ZB_MAX_BACKENDS];  /* per backend: the line of its last pool_* key */
};

/* An error about an included file says which include read it. */
static void note_included(const struct zb_conf *conf, const char *file, struct zb_err *err)
{
    if (!file || file == conf->file || !conf->include)
        return;
    size_t n = strlen(err->msg);
    snprintf(err->msg + n, sizeof err->msg - n, " (read by %s:%d: include = %s)", conf->file,
             conf->include_line, conf->include);
}

/* inih does not tell us when a section header repeats (the entries of a
 * second [backend x] would silently merge into the first), so the reader
 * watches the header lines as they pass, in every file it reads. */
static void watch_header(struct parse_state *ps, const char *line)
{
    while (*line == ' ' || *line == '\t')
        line++;
    if (*line != '[' || ps->failed)
        return;
    char name[128];
    size_t n = strcspn(line + 1, "]\r\n");
    snprintf(name, sizeof name, "%.*s", (int)n, line + 1);
    for (int i = 0; i < ps->nheaders; i++)
        if (!strcmp(ps->headers[i].name, name)) {
            const struct seen_header *h = &ps->headers[i];
            if (h->file == ps->file)
                zb_fail(ps->err, ZB_ERR_INPUT, "%s:%d: section [%s] defined twice", ps->file,
                        ps->line, name);
            else
                zb_fail(ps->err, ZB_ERR_INPUT, "%s:%d: section [%s] defined twice (first in "
                        "%s:%d)", ps->file, ps->line, name, h->file, h->line);
            ps->failed = true;
            return;
        }
    if (ps->nheaders < (int)(sizeof ps->headers / sizeof ps->headers[0])) {
        struct seen_header *h = &ps->headers[ps->nheaders++];
        snprintf(h->name, sizeof h->name, "%s", name);
        h->file = ps->file;
        h->line = ps->line;
    }
}

/* inih's reader hands it one line at a time in a buffer of num bytes (200
 * in Debian's build). Lines are read whole here, so that what inih would
 * not see whole is an error on its line, never a setting: a line that does
 * not fit (inih would parse its tail as a line of its own, which could set
 * a key), and a NUL byte (the value would silently end there). */
static char *counting_reader(char *str, int num, void *stream)
{
    struct parse_state *ps = stream;
    if (ps->failed)
        return NULL;
    ssize_t n = getline(&ps->buf, &ps->cap, ps->f);
    if (n < 0)
        return NULL;
    ps->line++;
    const char *nul = memchr(ps->buf, 0, (size_t)n);
    size_t len = (size_t)n;   /* without its line end (LF or CRLF) */
    if (len > 0 && ps->buf[len - 1] == '\n')
        len--;
    if (len > 0 && ps->buf[len - 1] == '\r')
        len--;
    if (nul)
        zb_fail(ps->err, ZB_ERR_INPUT, "%s:%d: NUL byte at byte %zu", ps->file, ps->line,
                (size_t)(nul - ps->buf) + 1);
    else if (len > (size_t)num - 1)
        zb_fail(ps->err, ZB_ERR_INPUT, "%s:%d: line longer than %d bytes, the config reader's "
                "limit", ps->file, ps->line, num - 1);
    ps->failed = nul || len > (size_t)num - 1;
    if (ps->failed)
        return NULL;
    memcpy(str, ps->buf, len);
    str[len] = 0;
    watch_header(ps, str);
    return str;
}

/* `include = PATTERN`: kept, expanded, for conf_load to read once the
 * config itself is read. */
static int set_include(struct parse_state *ps, const char *value, const char *where)
{
    struct zb_conf *conf = ps->conf;
    if (ps->included)
        return zb_fail(ps->err, ZB_ERR_INPUT, "%s: include: an included file cannot include "
                       "others", where);
    if (conf->include)
        return zb_fail(ps->err, ZB_ERR_INPUT, "%s: include given twice (first on line %d)", where,
                       conf->include_line);
    char pattern[4096];
    if (expand_env(value, pattern, sizeof pattern, where, "include", ps->err) < 0)
        return -1;
    size_t n = strlen(pattern);
    if (!n)
        return empty_value(where, "include", ps->err);
    if (n < 5 || strcmp(pattern + n - 5, ".conf"))
        return zb_fail(ps->err, ZB_ERR_INPUT, "%s: include: '%s' does not end in .conf (the "
                       "overlays' files, such as build/conf.d/NAME.conf)", where, pattern);
    if (!(conf->include = keep(conf, pattern)))
        return zb_fail(ps->err, ZB_ERR_SYS, "out of memory");
    conf->include_line = ps->line;
    return 0;
}

/* One key of [backend NAME]: a field of conf.c's, or a key of its
 * driver's. line: 0 for --set. */
static int set_backend_field(struct zb_conf *conf, struct backend_conf *b, const char *key,
                             const char *value, int line, const char *where, struct zb_err *err)
{
    if (!known_field(backend_fields, NFIELDS(backend_fields), key))
        return add_option(conf, b, key, value, line, err);
    if (!strcmp(key, "driver") && !backend_driver(value))
        return driver_error(where, b, value, err);
    if (set_field(conf, b, backend_fields, NFIELDS(backend_fields), key, value, where, err) < 0)
        return -1;
    if (!strcmp(key, "port")) {
        char name[128];
        b->port_var = env_var_of(value, name, sizeof name) ? keep(conf, name) : NULL;
    }
    return 0;
}

static int on_entry(void *user, const char *section, const char *name, const char *value)
{
    struct parse_state *ps = user;
    if (ps->failed)
        return 1;  /* report only the first error, keep inih quiet */
    char where[300];
    snprintf(where, sizeof where, "%s:%d", ps->file, ps->line);
    bool continued = false;
    if (!*section && !strcmp(name, "include")) {
        if (set_include(ps, value, where) < 0)
            ps->failed = true;
        return 1;
    }
    if (ps->included && strncmp(section, "dataset ", 8)) {
        zb_fail(ps->err, ZB_ERR_INPUT, "%s: %s%s%s: an included file holds [dataset NAME] "
                "sections only", where, *section ? "[" : "", *section ? section : name,
                *section ? "]" : "");
        ps->failed = true;
        return 1;
    }
    if (strcmp(section, ps->section)) {
        snprintf(ps->section, sizeof ps->section, "%s", section);
        ps->current = NULL;
        ps->dataset = NULL;
        if (!strncmp(section, "backend ", 8)) {
            const char *name = section + 8;
            while (*name == ' ')
                name++;
            if ((ps->current = add_backend(ps->conf, name, where, ps->err)))
                ps->current->line = ps->line;
            if (!ps->current) {
                ps->failed = true;
                return 1;
            }
        } else if (!strncmp(section, "dataset ", 8)) {
            const char *name = section + 8;
            while (*name == ' ')
                name++;
            if (!(ps->dataset = add_dataset(ps->conf, name, ps->line, where, ps->err))) {
                ps->failed = true;
                return 1;
            }
            ps->dataset->conf_file = ps->file;
        } else if (strcmp(section, "server")) {
            zb_fail(ps->err, ZB_ERR_INPUT, "%s: unknown section [%s] (server, backend NAME, "
                    "dataset NAME)", where, section);
            ps->failed = true;
            return 1;
        }
    } else {
        continued = !strcmp(ps->last_key, name);
    }
    snprintf(ps->last_key, sizeof ps->last_key, "%s", name);
    if (ps->dataset) {
        /* A long `columns` goes on over indented lines, which inih hands
         * over as the same key again. */
        char joined[8192];
        if (continued && !strcmp(name, "columns") && ps->dataset->columns) {
            snprintf(joined, sizeof joined, "%s, %s", ps->dataset->columns, value);
            value = joined;
        }
        if (set_dataset_field(ps->conf, ps->dataset, name, value, where, ps->err) < 0)
            ps->failed = true;
        return 1;
    }
    int rc;
    if (!ps->current)
        rc = set_field(ps->conf, &ps->conf->server, server_fields, NFIELDS(server_fields), name,
                       value, where, ps->err);
    else
        rc = set_backend_field(ps->conf, ps->current, name, value, ps->line, where, ps->err);
    if (rc == 0 && ps->current && !strncmp(name, "pool_", 5))
        ps->pool_line[ps->current - ps->conf->backend] = ps->line;
    if (rc < 0)
        ps->failed = true;
    return 1;
}

/* The drivers are lib/backend.c's table; every message lists them. */
static int driver_error(const char *where, const struct backend_conf *b, const char *value,
                        struct zb_err *err)
{
    char names[200];
    backend_driver_names(names, sizeof names);
    return zb_fail(err, ZB_ERR_INPUT, "%s: [backend %s]: driver: '%s' is not %s", where, b->name,
                   value, names);
}

/* "FILE:LINE: [dataset NAME]" of d's section. */
static void dataset_where(const struct zb_conf *conf, const struct dataset_conf *d, char *buf,
                          size_t len)
{
    snprintf(buf, len, "%s:%d: [dataset %s]", d->conf_file ? d->conf_file : conf->file, d->line,
             d->name);
}

static int validate_dataset(const struct zb_conf *conf, const struct dataset_conf *d,
                            struct zb_err *err)
{
    char where[300];
    dataset_where(conf, d, where, sizeof where);
    if (!d->file)
        return zb_fail(err, ZB_ERR_INPUT, "%s: missing key 'file'", where);
    if (!strcmp(d->format, "kenall")) {
        if (d->columns || d->key || d->null || d->delimiter || d->quote || !d->header)
            return zb_fail(err, ZB_ERR_INPUT, "%s: format kenall has a fixed layout: columns, "
                           "key, null, delimiter, quote and header are for format csv", where);
    } else if (d->raw) {
        return zb_fail(err, ZB_ERR_INPUT, "%s: raw is for format kenall", where);
    }
    if (!strcmp(d->name, DATASET_DEFAULT) && d->table)
        return zb_fail(err, ZB_ERR_INPUT, "%s: table: the %s dataset's tables are the backends' "
                       "own `table`", where, DATASET_DEFAULT);
    return 0;
}

/* A dataset's table on each backend (TABLE_BACKEND) is a word SQL
 * reserves (current + date): named with the dataset's line. */
static int check_dataset_tables(const struct zb_conf *conf, struct zb_err *err)
{
    for (int i = 0; i < conf->ndatasets; i++) {
        const struct dataset_conf *d = &conf->dataset[i];
        for (int k = 0; k < conf->nbackends && strcmp(d->name, DATASET_DEFAULT); k++) {
            char name[160], where[300];
            dataset_table_name(d, &conf->backend[k], name, sizeof name);
            if (!sql_reserved(name))
                continue;
            dataset_where(conf, d, where, sizeof where);
            zb_fail(err, ZB_ERR_INPUT, "%s: its table on backend %s, %s, is a word SQL "
                    "reserves (PostgreSQL, MariaDB or SQLite), which no table may be "
                    "named: give the dataset another table =", where, conf->backend[k].name, name);
            note_included(conf, d->conf_file, err);
            return -1;
        }
    }
    return 0;
}

static int validate(struct zb_conf *conf, const int *pool_line, struct zb_err *err)
{
    for (int i = 0; i < conf->ndatasets; i++)
        if (validate_dataset(conf, &conf->dataset[i], err) < 0) {
            note_included(conf, conf->dataset[i].conf_file, err);
            return -1;
        }
    if (check_dataset_tables(conf, err) < 0 || names_check(conf, err) < 0)
        return -1;
    for (int i = 0; i < conf->nbackends; i++) {
        struct backend_conf *b = &conf->backend[i];
        if (!b->driver) {
            char names[200];
            backend_driver_names(names, sizeof names);
            return zb_fail(err, ZB_ERR_INPUT, "%s: [backend %s]: missing key 'driver' (%s)",
                           conf->file, b->name, names);
        }
        for (int k = 0; k < b->nopts; k++)
            if (check_option(conf, b, &b->opt[k], err) < 0)
                return -1;
        if (b->pool_hard_max < b->pool_min || b->pool_hard_max < b->pool_soft_max)
            return zb_fail(err, ZB_ERR_INPUT, "%s:%d: [backend %s]: pool_hard_max (%d) is below "
                           "pool_min (%d) or pool_soft_max (%d)", conf->file, pool_line[i],
                           b->name, b->pool_hard_max, b->pool_min, b->pool_soft_max);
    }
    return 0;
}

/* Reads one file into the config through ps (its per-file state reset):
 * the config itself, or one its include matches. */
static int parse_file(struct parse_state *ps, const char *path, bool included)
{
    struct zb_err *err = ps->err;
    ps->file = path;
    ps->included = included;
    ps->line = 0;
    ps->current = NULL;
    ps->dataset = NULL;
    ps->section[0] = ps->last_key[0] = 0;
    if (!(ps->f = fopen(path, "r")))
        return zb_fail(err, ZB_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(ps->f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(ps->f);
        return zb_fail(err, ZB_ERR_INPUT, "%s: cannot open: %s", path, strerror(EISDIR));
    }
    int rc = ini_parse_stream(counting_reader, ps, on_entry, ps);
    fclose(ps->f);
    if (ps->failed)
        return -1;
    if (rc > 0)
        return zb_fail(err, ZB_ERR_INPUT, "%s:%d: syntax error (expected [section] or key = value)",
                       path, rc);
    if (rc < 0)
        return zb_fail(err, ZB_ERR_SYS, "%s: cannot parse (out of memory)", path);
    return 0;
}

/* The files the include matches, in name order, each read as an overlay. */
static int parse_included(struct parse_state *ps)
{
    struct zb_conf *conf = ps->conf;
    glob_t g;
    int rc = glob(conf->include, 0, NULL, &g);   /* a directory not there matches nothing */
    if (rc == GLOB_NOMATCH)
        return 0;
    if (rc != 0) {
        globfree(&g);
        return zb_fail(ps->err, ZB_ERR_SYS, "%s:%d: include: '%s': out of memory", conf->file,
                       conf->include_line, conf->include);
    }
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *path = keep(conf, g.gl_pathv[i]);
        if (!path) {
            globfree(&g);
            return zb_fail(ps->err, ZB_ERR_SYS, "out of memory");
        }
        if (parse_file(ps, path, true) < 0) {
            note_included(conf, path, ps->err);
            globfree(&g);
            return -1;
        }
    }
    globfree(&g);
    return 0;
}

int conf_load(struct zb_conf *conf, const char *path, struct zb_err *err)
{
    conf_defaults(conf);
    conf->file = keep(conf, path);
    static const struct parse_state fresh;
    struct parse_state *ps = malloc(sizeof *ps);
    if (!conf->file || !ps) {
        free(ps);
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    }
    *ps = fresh;
    ps->conf = conf;
    ps->err = err;
    int rc = parse_file(ps, conf->file, false);
    if (rc == 0 && conf->include)
        rc = parse_included(ps);
    if (rc == 0)
        rc = validate(conf, ps->pool_line, err);
    free(ps->buf);
    free(ps);
    return rc;
}

const struct backend_conf *conf_backend(const struct zb_conf *conf, const char *name)
{
    for (int i = 0; i < conf->nbackends; i++)
        if (!strcmp(conf->backend[i].name, name))
            return &conf->backend[i];
    return NULL;
}

const struct dataset_conf *conf_dataset(const struct zb_conf *conf, const char *name)
{
    for (int i = 0; i < conf->ndatasets; i++)
        if (!strcmp(conf->dataset[i].name, name))
            return &conf->dataset[i];
    return NULL;
}

void conf_dataset_names(const struct zb_conf *conf, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < conf->ndatasets && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", conf->dataset[i].name);
}

int conf_overlay_dir(const struct zb_conf *conf, char *buf, size_t len, struct zb_err *err)
{
    const char *p = conf->include;
    const char *slash = p ? strrchr(p, '/') : NULL;
    if (!p || strcmp(slash ? slash + 1 : p, "*.conf") || strpbrk(p, "*?[") < (slash ? slash : p) ||
        (size_t)(slash ? slash - p : 1) >= len)
        return zb_fail(err, ZB_ERR_INPUT, "%s has no include of a directory's .conf files, where "
                       "a dataset's overlay would go: add the line 'include = build/conf.d/*.conf' "
                       "before its first section%s%s%s", conf->file, p ? " (its include is '" : "",
                       p ? p : "", p ? "')" : "");
    if (slash)
        snprintf(buf, len, "%.*s", slash == p ? 1 : (int)(slash - p), p);
    else
        snprintf(buf, len, ".");
    return 0;
}

void conf_free(struct zb_conf *conf)
{
    char **strings = conf->strings;
    for (int i = 0; i < conf->nstrings; i++)
        free(strings[i]);
    free(strings);
    conf->strings = NULL;
    conf->nstrings = conf->capstrings = 0;
}

void conf_unbounded_queries(struct zb_conf *conf)
{
    for (int i = 0; i < conf->nbackends; i++)
        conf->backend[i].query_timeout_ms = 0;
}

int conf_apply_sets(struct zb_conf *conf, const char *const *sets, int nsets, struct zb_err *err)
{
    for (int i = 0; i < nsets; i++) {
        struct zb_err e = { 0 };
        if (conf_set_arg(conf, sets[i], &e) < 0 || check_dataset_tables(conf, &e) < 0 ||
            names_check(conf, &e) < 0)
            return zb_fail(err, e.kind, "--set %s: %s", sets[i], e.msg);
    }
    return 0;
}

int conf_open(struct zb_conf *conf, const char *path, const char *const *sets, int nsets,
              struct zb_err *err)
{
    if (conf_load(conf, path, err) < 0)
        return -1;
    return conf_apply_sets(conf, sets, nsets, err);
}

int conf_select(const struct zb_conf *conf, const char *list, const struct backend_conf **out,
                struct zb_err *err)
{
    int n = 0;
    if (!list || !strcmp(list, "all")) {
        for (int i = 0; i < conf->nbackends; i++)
            if (!conf->backend[i].named_only)
                out[n++] = &conf->backend[i];
        return n;
    }
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf)
        return zb_fail(err, ZB_ERR_INPUT, "backend list too long");
    for (char *save, *name = strtok_r(buf, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        const struct backend_conf *bc = conf_backend(conf, name);
        if (!bc)
            return zb_fail(err, ZB_ERR_INPUT, "no backend '%s' in %s", name, conf->file);
        bool dup = false;
        for (int j = 0; j < n; j++)
            dup |= out[j] == bc;
        if (!dup)
            out[n++] = bc;
    }
    return n;
}
