/* Config file reading with inih. inih is fed through a line-counting
 * reader so every error can name its line, which inih alone reports only
 * for the first failure and without the key. */
#include "conf.h"
#include "dataset.h"

#include "backend.h"
#include "sqlwords.h"

#include <ctype.h>
#include <errno.h>
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
    b->persistent = true;
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
    conf->server.max_request_bytes = 32 * 1024;
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
    enum { F_STR, F_INT, F_BOOL, F_IDENT, F_TABLE, F_CHOICE } type;
    size_t offset;
    int lo, hi;
    const char *const *choices;   /* F_CHOICE: the values allowed, NULL-terminated */
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

#define STRATEGY_NAME(id, name) name,
const char *const zb_strategy_names[ZB_NSTRATEGIES + 1] = { ZB_STRATEGIES(STRATEGY_NAME) NULL };
#undef STRATEGY_NAME

#define S(k) { #k, F_STR, offsetof(struct server_conf, k), 0, 0, NULL }
#define I(k, lo, hi) { #k, F_INT, offsetof(struct server_conf, k), lo, hi, NULL }
static const struct field server_fields[] = {
    S(bind), I(port, 1, 65535), I(threads, 1, 256), I(connection_timeout_s, 1, 3600),
    I(header_timeout_s, 0, 3600),
    I(max_connections, 1, 1000000), I(max_request_bytes, 1024, 16 * 1024 * 1024),
    { "pin", F_BOOL, offsetof(struct server_conf, pin), 0, 0, NULL },
};
#undef S
#undef I
#define S(k) { #k, F_STR, offsetof(struct backend_conf, k), 0, 0, NULL }
#define I(k, lo, hi) { #k, F_INT, offsetof(struct backend_conf, k), lo, hi, NULL }
#define B(k) { #k, F_BOOL, offsetof(struct backend_conf, k), 0, 0, NULL }
static const struct field backend_fields[] = {
    S(driver), S(path), S(host), I(port, 1, 65535), S(socket), S(user), S(password),
    S(password_file), S(database),
    { "table", F_TABLE, offsetof(struct backend_conf, table), 0, 0, NULL },
    I(pool_min, 0, 10000), I(pool_soft_max, 0, 10000), I(pool_hard_max, 1, 10000),
    I(pool_ttl_s, 0, 86400), I(acquire_timeout_ms, 1, 600000), I(connect_timeout_s, 1, 600),
    I(per_request_connect_timeout_s, 1, 3600), I(query_timeout_ms, 0, 600000),
    B(persistent), B(read_only), I(pipeline_connections, 1, 8), B(named_only),
    { "strategy", F_CHOICE, offsetof(struct backend_conf, strategy), 0, 0, zb_strategy_names },
};
#undef S
#undef I
#undef B
#define S(k) { #k, F_STR, offsetof(struct dataset_conf, k), 0, 0, NULL }
#define B(k) { #k, F_BOOL, offsetof(struct dataset_conf, k), 0, 0, NULL }
#define N(k) { #k, F_IDENT, offsetof(struct dataset_conf, k), 0, 0, NULL }
static const struct field dataset_fields[] = {
    S(file), S(format), S(encoding), B(raw), B(header), S(delimiter), S(quote), S(null), N(table),
    N(key), S(columns), { "sample_rows", F_INT, offsetof(struct dataset_conf, sample_rows), 1,
                          100000000, NULL },
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
        case F_CHOICE: {
            bool ok = conf_choice(f[i].choices, value) >= 0;
            char list[200];
            conf_choice_list(f[i].choices, list, sizeof list);
            if (!ok)
                return zb_fail(err, ZB_ERR_INPUT, "%s: %s: '%s' is not %s", where, key, value,
                               list);
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
    if (!known_field(backend_fields, NFIELDS(backend_fields), key))
        return add_option(conf, b, key, value, 0, err);
    if (!strcmp(key, "driver") && !backend_driver(value))
        return driver_error(where, b, value, err);
    return set_field(conf, b, backend_fields, NFIELDS(backend_fields), key, value, where, err);
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

struct parse_state {
    struct zb_conf *conf;
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
    char headers[ZB_MAX_BACKENDS + ZB_MAX_DATASETS + 2][128];
    int nheaders;
    int pool_line[ZB_MAX_BACKENDS];  /* per backend: the line of its last pool_* key */
};

/* inih does not tell us when a section header repeats (the entries of a
 * second [backend x] would silently merge into the first), so the reader
 * watches the header lines as they pass. */
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
        if (!strcmp(ps->headers[i], name)) {
            zb_fail(ps->err, ZB_ERR_INPUT, "%s:%d: section [%s] defined twice", ps->conf->file,
                    ps->line, name);
            ps->failed = true;
            return;
        }
    if (ps->nheaders < (int)(sizeof ps->headers / sizeof ps->headers[0]))
        snprintf(ps->headers[ps->nheaders++], sizeof ps->headers[0], "%s", name);
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
        zb_fail(ps->err, ZB_ERR_INPUT, "%s:%d: NUL byte at byte %zu", ps->conf->file, ps->line,
                (size_t)(nul - ps->buf) + 1);
    else if (len > (size_t)num - 1)
        zb_fail(ps->err, ZB_ERR_INPUT, "%s:%d: line longer than %d bytes, the config reader's "
                "limit", ps->conf->file, ps->line, num - 1);
    ps->failed = nul || len > (size_t)num - 1;
    if (ps->failed)
        return NULL;
    memcpy(str, ps->buf, len);
    str[len] = 0;
    watch_header(ps, str);
    return str;
}

static int on_entry(void *user, const char *section, const char *name, const char *value)
{
    struct parse_state *ps = user;
    if (ps->failed)
        return 1;  /* report only the first error, keep inih quiet */
    char where[300];
    snprintf(where, sizeof where, "%s:%d", ps->conf->file, ps->line);
    bool continued = false;
    if (strcmp(section, ps->section)) {
        snprintf(ps->section, sizeof ps->section, "%s", section);
        ps->current = NULL;
        ps->dataset = NULL;
        if (!strncmp(section, "backend ", 8)) {
            const char *name = section + 8;
            while (*name == ' ')
                name++;
            if (!(ps->current = add_backend(ps->conf, name, where, ps->err))) {
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
    else if (!known_field(backend_fields, NFIELDS(backend_fields), name))
        rc = add_option(ps->conf, ps->current, name, value, ps->line, ps->err);
    else if (!strcmp(name, "driver") && !backend_driver(value))
        rc = driver_error(where, ps->current, value, ps->err);
    else
        rc = set_field(ps->conf, ps->current, backend_fields, NFIELDS(backend_fields), name,
                       value, where, ps->err);
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

static int validate_dataset(const struct zb_conf *conf, const struct dataset_conf *d,
                            struct zb_err *err)
{
    char where[300];
    snprintf(where, sizeof where, "%s:%d: [dataset %s]", conf->file, d->line, d->name);
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
            snprintf(where, sizeof where, "%s:%d: [dataset %s]", conf->file, d->line, d->name);
            return zb_fail(err, ZB_ERR_INPUT, "%s: its table on backend %s, %s, is a word SQL "
                           "reserves (PostgreSQL, MariaDB or SQLite), which no table may be "
                           "named: give the dataset another table =", where,
                           conf->backend[k].name, name);
        }
    }
    return 0;
}

static int validate(struct zb_conf *conf, const int *pool_line, struct zb_err *err)
{
    for (int i = 0; i < conf->ndatasets; i++)
        if (validate_dataset(conf, &conf->dataset[i], err) < 0)
            return -1;
    if (check_dataset_tables(conf, err) < 0)
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

int conf_load(struct zb_conf *conf, const char *path, struct zb_err *err)
{
    conf_defaults(conf);
    conf->file = keep(conf, path);
    struct parse_state ps = { .conf = conf, .err = err };
    if (!(ps.f = fopen(path, "r")))
        return zb_fail(err, ZB_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(ps.f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(ps.f);
        return zb_fail(err, ZB_ERR_INPUT, "%s: cannot open: %s", path, strerror(EISDIR));
    }
    int rc = ini_parse_stream(counting_reader, &ps, on_entry, &ps);
    fclose(ps.f);
    free(ps.buf);
    if (ps.failed)
        return -1;
    if (rc > 0)
        return zb_fail(err, ZB_ERR_INPUT, "%s:%d: syntax error (expected [section] or key = value)",
                       path, rc);
    if (rc < 0)
        return zb_fail(err, ZB_ERR_SYS, "%s: cannot parse (out of memory)", path);
    return validate(conf, ps.pool_line, err);
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
        if (conf_set_arg(conf, sets[i], &e) < 0 || check_dataset_tables(conf, &e) < 0)
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
