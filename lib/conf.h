/* The config file: one [server] section, one [backend NAME] section per
 * backend and one [dataset NAME] per dataset, read with inih. Every error
 * names the file, the line and the key.
 *
 * `include = PATTERN`, before the first section, a glob ending in .conf
 * (the tracked config's: every .conf file of build/conf.d), reads the
 * files it matches (in name order; none is no error) after the config
 * itself: overlays of [dataset NAME] sections only, such as the ones
 * `loader --csv` writes, so a dataset of one's own needs no edit of the
 * tracked config. Their errors name their own file and line, and the
 * include that read them. */
#ifndef ZB_CONF_H
#define ZB_CONF_H

#include <stdbool.h>

#include "util.h"

#define ZB_MAX_BACKENDS 16
#define ZB_MAX_DRIVER_KEYS 8

/* A key of a driver's own, kept as written: the driver checks it
 * (backend_driver.check_key) and reads it with conf_option(). */
struct conf_option {
    const char *key, *value;
    int line;              /* in the file; 0 when it came from --set */
};

/* value's index in choices (NULL-terminated), or -1. */
int conf_choice(const char *const *choices, const char *value);
/* choices for a message: "a, b or c". */
void conf_choice_list(const char *const *choices, char *buf, size_t len);

/* One [backend NAME] section. Strings are owned by the conf. */
struct backend_conf {
    const char *name;      /* section name: "sqlite", "pg", "innodb", ... */
    int line;              /* where its section starts in the config */
    const char *driver;    /* a name of lib/backend.c's table of drivers */
    const char *path;      /* sqlite: database file or ":memory:" */
    const char *host;      /* pg/mysql: TCP host; pg: "a,b,...", several (see
                            * backend_pg.c: a primary and its replicas) */
    int port;
    const char *socket;    /* pg: socket directory; mysql: socket file */
    const char *user;
    const char *password;
    const char *password_file; /* where the password is kept, in the client library's own
                              * format: pg a libpq passfile (.pgpass lines), mysql an
                              * option file ([client] password = ...) */
    /* The environment variable `port` was taken from (${NAME:-DEFAULT}),
     * NULL when written plainly: what a refused connect names as the
     * way to move it. */
    const char *port_var;
    const char *started_by; /* the command that starts its database ("scripts/db start"),
                              * said after a refused connect; NULL: none known */
    const char *database;
    const char *table;     /* default "zipcode" */
    int pool_min;          /* connections kept open */
    int pool_soft_max;     /* idle connections above this are closed after ttl */
    int pool_hard_max;     /* never more than this many at once */
    int pool_ttl_s;        /* idle lifetime of connections above soft max */
    int acquire_timeout_ms;/* a request waits this long for a connection, then 503 */
    int connect_timeout_s; /* a pooled or pipelined connect: no answer within this, given up */
    /* The server's per-request strategy waits this long for its connect (as
     * PHP does by default): the cell measures the connect, not a timeout. */
    int per_request_connect_timeout_s;
    int query_timeout_ms;  /* the server's lookups: no answer within this, 503 (0: none) */
    /* The server's default strategy, by name (NULL: pooled): the server
     * checks it against its list of strategies (`server --list-strategies`)
     * and names strategy_where, "FILE:LINE: [backend NAME]" or the --set
     * argument, when it is none of them. */
    const char *strategy;
    const char *strategy_where;
    int pipeline_connections; /* the server's pipelined strategy: connections per loop */
    bool read_only;        /* the server opens connections read-only */
    /* `writes = yes`: the server takes POST /update/ and /updates/ on this
     * backend, writing its {table}_hits table (docs/REQUEST-TYPES.md);
     * default no: 403. */
    bool writes;
    /* Not a config key: set by the server on its writing connections, whose
     * loops must not block. A writable connection then never waits for
     * another's lock either (SQLite: busy timeout 0, ZB_ERR_BUSY at once). */
    bool never_wait;
    /* The keys only its driver knows (mysql's engine, sqlite's cache_mib
     * and busy_timeout_ms...). */
    struct conf_option opt[ZB_MAX_DRIVER_KEYS];
    int nopts;
    bool named_only;       /* left out of "all" (server, loader, sqlbench): a
                            * second way to the data of another backend, such
                            * as a pooler in front of pg, used when named */
};

struct server_conf {
    const char *bind;      /* default 127.0.0.1 */
    int port;              /* default 8080 */
    int threads;           /* event-loop threads (0: one per online CPU) */
    int connection_timeout_s; /* an idle connection is closed after this */
    int header_timeout_s;  /* a whole request (header and body) must come within this (0: no limit) */
    int max_connections;
    int max_request_bytes; /* MHD_OPTION_CONNECTION_MEMORY_LIMIT */
    bool pin;              /* loop i runs on CPU i (modulo the CPUs online) */
    int cache_entries;     /* /cached: answers kept per loop and backend (0: no cache) */
    int spin_us;           /* a loop that just had work polls this long before it sleeps (0: never) */
    /* The credential a write must carry (Authorization: Bearer TOKEN);
     * NULL: none asked (loopback only: a server reachable from another
     * host with writes on refuses to start without one). */
    const char *write_token;
};

#define ZB_MAX_DATASETS 16

/* One [dataset NAME] section: a file, how to read it, the table it becomes
 * (lib/dataset.h tells the rules). Strings are owned by the conf. */
struct dataset_conf {
    const char *name;
    const char *file;      /* the data, relative to where zipbench runs */
    const char *format;    /* "kenall" or "csv" */
    const char *encoding;  /* auto (default), utf-8, sjis, or any iconv name */
    bool raw;              /* kenall: one row per line, split records not merged */
    bool header;           /* csv: the first record names the columns (default yes) */
    const char *delimiter; /* csv: one character, or "tab" (default ",") */
    const char *quote;     /* csv: "\"" (default) or "none": quotes are text */
    const char *null;      /* csv: text that also means NULL (an empty unquoted field does) */
    const char *table;     /* not postal: tables are TABLE_BACKEND (default: the name) */
    const char *key;       /* csv: the column lookups go by (default: the first) */
    const char *columns;   /* csv: "name [type] [not null], ..."; types integer, real, text */
    int sample_rows;       /* csv: rows read to infer types (default 1000) */
    const char *conf_file; /* the config file its section is in: the config's own, or
                            * an included overlay (NULL: built in) */
    int line;              /* where its section starts (0: built in) */
};

struct zb_conf {
    const char *file;
    const char *include;   /* the `include` pattern, expanded (NULL: none) */
    int include_line;
    struct server_conf server;
    int nbackends;
    struct backend_conf backend[ZB_MAX_BACKENDS];
    int ndatasets;
    struct dataset_conf dataset[ZB_MAX_DATASETS];  /* "postal" is always there */
    /* internal: string storage */
    char **strings;
    int nstrings, capstrings;
};

/* Reads path into conf (defaults first). Returns 0, or -1 with err naming
 * "file:line: key: problem". */
int conf_load(struct zb_conf *conf, const char *path, struct zb_err *err);

/* query_timeout_ms bounds the server's lookups only: the loader and sqlbench
 * call this, so their loads and benchmark statements run as long as they take. */
void conf_unbounded_queries(struct zb_conf *conf);

/* Defaults only, no file: the embedded SQLite backend at build/zipbench.sqlite. */
void conf_defaults(struct zb_conf *conf);

/* "section.key=value" or "backend.NAME.key=value" style override from the
 * command line: conf_set(conf, "pg", "port", "5433"). section NULL = [server];
 * "dataset NAME" a dataset. Returns -1 with err on an unknown section or key
 * or a bad value. */
int conf_set(struct zb_conf *conf, const char *section, const char *key,
             const char *value, struct zb_err *err);

/* The same from one command-line argument "BACKEND.KEY=VALUE" (or
 * "server.KEY=VALUE", "dataset.NAME.KEY=VALUE"): what every program's --set
 * takes. */
int conf_set_arg(struct zb_conf *conf, const char *arg, struct zb_err *err);

/* The value of one key, named as --set names it ("BACKEND.KEY",
 * "server.KEY", "dataset.NAME.KEY"), as the programs see it: the
 * environment's ${NAME:-DEFAULT} expanded, defaults filled in; strings as
 * they are ("" when unset), integers in decimal, booleans yes or no. A key
 * of the backend's driver gives its value when set. -1 with err on an
 * unknown backend, dataset or key. What build/bin/zbconf prints. */
int conf_get_arg(const struct zb_conf *conf, const char *arg, char *buf, size_t len,
                 struct zb_err *err);

const struct backend_conf *conf_backend(const struct zb_conf *conf, const char *name);
const struct dataset_conf *conf_dataset(const struct zb_conf *conf, const char *name);
/* The datasets' names for a message: "postal, cities". */
void conf_dataset_names(const struct zb_conf *conf, char *buf, size_t len);
/* Where an overlay goes: the directory of the config's include pattern,
 * when its last part is "*.conf" (every .conf file of one directory), into
 * buf. Returns 0, or -1 with err saying that the config has no such
 * include (and how to give it one). */
int conf_overlay_dir(const struct zb_conf *conf, char *buf, size_t len, struct zb_err *err);

/* What every program does with --conf FILE and its --set B.KEY=VALUE
 * arguments: conf_load, then each --set in order. Returns 0, or -1 with err
 * naming the file and line or the --set argument at fault; conf_free
 * either way. */
int conf_open(struct zb_conf *conf, const char *path, const char *const *sets, int nsets,
              struct zb_err *err);
/* The --set part alone, for a program that adjusts the config between the
 * file and the command line (sqlbench's scratch databases). */
int conf_apply_sets(struct zb_conf *conf, const char *const *sets, int nsets, struct zb_err *err);

/* The backends a --backends LIST names (comma-separated, each once, in the
 * order given; NULL or "all": every backend of the config but those with
 * named_only) into out, which holds ZB_MAX_BACKENDS. Returns how many, or
 * -1 with err naming an unknown one. */
int conf_select(const struct zb_conf *conf, const char *list, const struct backend_conf **out,
                struct zb_err *err);

/* The value of one of bc's driver keys, or NULL if not given. */
const char *conf_option(const struct backend_conf *bc, const char *key);

void conf_free(struct zb_conf *conf);

#endif
