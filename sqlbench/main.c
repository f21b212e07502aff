/* sqlbench: the SQL micro-benchmarks (experiments 4-6) on every backend of
 * the config, with repeated runs reported as median, min and max. */
#include <apr_general.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "conf.h"
#include "sqlbench.h"

static const char usage[] =
    "Usage: sqlbench [OPTIONS] EXPERIMENT...\n"
    "\n"
    "Runs SQL micro-benchmarks the same way on each chosen backend (SQLite,\n"
    "PostgreSQL, MariaDB InnoDB and MyISAM, as named in the config) and prints,\n"
    "for every figure, the median, min and max of --repeat runs, with the\n"
    "machine, the server versions and the durability settings in force.\n"
    "\n"
    "Experiments:\n"
    "  speed     the eleven tests of the 2001 SQLite vs PostgreSQL speed comparison\n"
    "            on t1(f1 int, f2 int, f3 int) of 30,000 rows: 1 CREATE TABLE and\n"
    "            the load (one transaction, one prepared INSERT), 2 SELECT max(f2),\n"
    "            min(f3), count(*) ... WHERE f3<10000 OR f1>=20000 (full scan),\n"
    "            3 CREATE INDEX on (f1) and (f2,f3), 4 the same SELECT with them,\n"
    "            5 1,000 SELECTs by key, 6 UPDATE ... WHERE f1 BETWEEN 15000 AND\n"
    "            20000, 7 INSERT INTO t2 SELECT ..., 8 1,000 INSERTs in autocommit,\n"
    "            9 1,000 INSERTs in one transaction, 10 DELETE ... WHERE f2 NOT\n"
    "            BETWEEN 10000 AND 20000, 11 DROP TABLE of the four tables.\n"
    "            Each test is timed as real, user and sys seconds (getrusage of\n"
    "            this process: a server's own CPU is not included).\n"
    "  txn       1, 10, 100, 1,000 and 10,000 INSERTs as separate transactions\n"
    "            (autocommit) and as a single one, at each durability level FULL,\n"
    "            NORMAL and OFF (SQLite synchronous, PostgreSQL synchronous_commit,\n"
    "            InnoDB innodb_flush_log_at_trx_commit 1/2/0; MyISAM has no knob);\n"
    "            ms per case and the ratio separate/single. The setting is put\n"
    "            back afterwards.\n"
    "  writers   100 writers (threads, one connection each) x 1,000 INSERTs at\n"
    "            once, as inserts/s; then the job queue: 100 workers x 100 tasks,\n"
    "            each task an INSERT, an UPDATE of status, 10 UPDATEs of progress\n"
    "            and a DELETE on a table indexed on status and scheduled_at, as\n"
    "            tasks/s. Every statement autocommits. SQLite runs in WAL mode\n"
    "            with synchronous=NORMAL and a busy timeout; statements that still\n"
    "            fail busy (or deadlock elsewhere) are retried and counted.\n"
    "  all       the three, in that order.\n"
    "\n"
    "Options:\n"
    "  -b, --backends NAMES  comma-separated backend names from the config, or 'all'\n"
    "                        (default: all)\n"
    "  -r, --repeat N        runs per figure (default 3; 1 with --quick)\n"
    "      --scale F         multiply every size by F (0 < F <= 10), e.g. 0.1 for\n"
    "                        3,000 rows, 10 writers x 100 inserts (default 1)\n"
    "      --quick           small sizes (--scale 0.1), --repeat 1, --max-seconds 1:\n"
    "                        all three experiments on four backends in about a minute\n"
    "      --max-seconds S   txn: time cap per case, all its runs together (default\n"
    "                        20); a case that would take longer is stopped and its\n"
    "                        figure extrapolated from the inserts done, marked '~'\n"
    "                        (\"extrapolated\":true in JSON)\n"
    "      --writers N       concurrent writers (default 100 x scale)\n"
    "      --inserts N       INSERTs per writer (default 1,000 x scale)\n"
    "      --workers N       job-queue workers (default 100 x scale)\n"
    "      --tasks N         tasks per job-queue worker (default 100 x scale)\n"
    "      --prefix P        table-name prefix (default sb_): sb_t1..sb_t4, sb_txn,\n"
    "                        sb_writers, sb_jobs, which the loader never uses\n"
    "      --scratch DIR     where SQLite backends get their scratch database,\n"
    "                        DIR/sqlbench-NAME.sqlite, recreated at start (default\n"
    "                        build/bench); the served database is never touched\n"
    "  -c, --conf FILE       config file (default conf/zipbench.conf)\n"
    "      --set B.KEY=VAL   override a config key of backend B, e.g. pg.port=5433\n"
    "                        (applied after the scratch path)\n"
    "      --json            one JSON object per figure on stdout: experiment, test,\n"
    "                        backend, version, sync, n, runs, median_s, min_s, max_s,\n"
    "                        user_s, sys_s (medians), extrapolated, runs_s (every\n"
    "                        run's real seconds), and per_s and busy_retries where\n"
    "                        they apply\n"
    "      --markdown        the tables as markdown, for docs\n"
    "  -h, --help            this text\n"
    "\n"
    "Progress goes to stderr. Client and server share the machine: compare\n"
    "figures of the same run, not across machines.\n"
    "\n"
    "Examples:\n"
    "  sqlbench all --quick\n"
    "  sqlbench txn --backends sqlite,pg --max-seconds 60\n"
    "  sqlbench writers --scale 0.1 --json\n"
    "\n"
    "Exit status: 0 when every experiment produced its figures on every backend,\n"
    "1 when a backend could not be reached or a statement failed (the others\n"
    "still run), 2 on bad usage or a bad config.\n";

static int scaled(double base, double scale, int lo)
{
    double v = floor(base * scale + 0.5);
    return v < lo ? lo : (int)v;
}

static void print_header(const struct sb_target *t, int nt, const struct sb_opts *o, bool md)
{
    struct utsname u;
    uname(&u);
    char when[32];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    const char *li = md ? "- " : "  ";
    printf("sqlbench run of %s:\n\n", when);
    printf("%smachine: %ld cores (nproc), %s %s %s\n", li, sysconf(_SC_NPROCESSORS_ONLN),
           u.sysname, u.release, u.machine);
    printf("%ssizes: speed %d rows / %d statements, txn up to %d inserts, writers %d x %d, "
           "job queue %d x %d; repeat %d, txn cap %g s per case\n",
           li, o->speed_rows, o->speed_stmts, o->txn_max, o->writers, o->inserts, o->workers,
           o->tasks, o->repeat, o->max_seconds);
    for (int i = 0; i < nt; i++)
        printf("%s%s: %s; %s\n", li, t[i].bc->name, t[i].version, t[i].sync_default);
    printf("\n");
    fflush(stdout);
}

int main(int argc, const char *const *argv)
{
    apr_pool_t *pool;
    apr_app_initialize(&argc, &argv, NULL);
    atexit(apr_terminate);
    apr_pool_create(&pool, NULL);
    static const apr_getopt_option_t opts[] = {
        { "backends", 'b', 1, "" },  { "backend", 'b', 1, "" },  { "repeat", 'r', 1, "" },
        { "scale", 'S', 1, "" },     { "quick", 'Q', 0, "" },    { "max-seconds", 'M', 1, "" },
        { "writers", 'W', 1, "" },   { "inserts", 'I', 1, "" },  { "workers", 'K', 1, "" },
        { "tasks", 'T', 1, "" },     { "prefix", 'P', 1, "" },   { "scratch", 'D', 1, "" },
        { "conf", 'c', 1, "" },      { "set", 's', 1, "" },      { "json", 'j', 0, "" },
        { "markdown", 'm', 0, "" },  { "help", 'h', 0, "" },     { NULL, 0, 0, NULL },
    };
    struct sb_opts o = { .prefix = "sb_" };
    long repeat = -1, writers = -1, inserts = -1, workers = -1, tasks = -1;
    double scale = -1, max_seconds = -1;
    const char *conf_path = "conf/zipbench.conf", *backends = "all", *scratch = "build/bench";
    const char *sets[32];
    int nsets = 0;
    enum sb_format fmt = SB_TEXT;
    /* "sqlbench all --quick": APR's own interleave mode loses the value of
     * an option given as a separate word, so move the experiment names
     * after the options here and let apr_getopt_long parse the rest. */
    const char **args = apr_pcalloc(pool, ((size_t)argc + 1) * sizeof *args);
    int nargs = 0, npos = 0;
    const char *pos[64];
    args[nargs++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            for (i++; i < argc && npos < 64; i++)
                pos[npos++] = argv[i];
            break;
        }
        if (a[0] != '-' || !a[1]) {
            if (npos < 64)
                pos[npos++] = a;
            continue;
        }
        args[nargs++] = a;
        bool takes = false;
        for (const apr_getopt_option_t *op = opts; op->name; op++) {
            size_t l = strlen(op->name);
            if ((a[1] == '-' && !strncmp(a + 2, op->name, l) && !a[2 + l]) ||
                (a[1] != '-' && a[1] == op->optch && !a[2]))
                takes = op->has_arg;
        }
        if (takes && i + 1 < argc)
            args[nargs++] = argv[++i];
    }
    for (int i = 0; i < npos; i++)
        args[nargs++] = pos[i];
    argv = args;
    argc = nargs;
    apr_getopt_t *g;
    apr_getopt_init(&g, pool, argc, argv);
    int ch;
    const char *arg;
    apr_status_t st;
    while ((st = apr_getopt_long(g, opts, &ch, &arg)) == APR_SUCCESS) {
        switch (ch) {
        case 'b': backends = arg; break;
        case 'r':
            if (cli_long("sqlbench", "--repeat", arg, 1, SB_MAX_REPEAT, &repeat) < 0)
                return cli_usage_error("sqlbench");
            break;
        case 'S':
            if (cli_double("sqlbench", "--scale", arg, 1e-6, 10, &scale) < 0)
                return cli_usage_error("sqlbench");
            break;
        case 'Q': o.quick = true; break;
        case 'M':
            if (cli_double("sqlbench", "--max-seconds", arg, 0.001, 86400, &max_seconds) < 0)
                return cli_usage_error("sqlbench");
            break;
        case 'W':
            if (cli_long("sqlbench", "--writers", arg, 1, 1000, &writers) < 0)
                return cli_usage_error("sqlbench");
            break;
        case 'I':
            if (cli_long("sqlbench", "--inserts", arg, 1, 10000000, &inserts) < 0)
                return cli_usage_error("sqlbench");
            break;
        case 'K':
            if (cli_long("sqlbench", "--workers", arg, 1, 1000, &workers) < 0)
                return cli_usage_error("sqlbench");
            break;
        case 'T':
            if (cli_long("sqlbench", "--tasks", arg, 1, 10000000, &tasks) < 0)
                return cli_usage_error("sqlbench");
            break;
        case 'P': {
            bool ok = *arg && strlen(arg) < 32;
            for (const char *c = arg; *c && ok; c++)
                ok = (*c >= 'a' && *c <= 'z') || *c == '_' || (c > arg && *c >= '0' && *c <= '9');
            if (!ok) {
                fprintf(stderr, "sqlbench: --prefix: '%s' is not lower-case letters, digits, _\n", arg);
                return cli_usage_error("sqlbench");
            }
            o.prefix = arg;
            break;
        }
        case 'D': scratch = arg; break;
        case 'c': conf_path = arg; break;
        case 's':
            if (nsets == 32) {
                fprintf(stderr, "sqlbench: too many --set\n");
                return ZB_EXIT_USAGE;
            }
            sets[nsets++] = arg;
            break;
        case 'j': fmt = SB_JSON; break;
        case 'm': fmt = SB_MARKDOWN; break;
        case 'h': fputs(usage, stdout); return ZB_EXIT_OK;
        }
    }
    if (st != APR_EOF)
        return cli_usage_error("sqlbench");
    if (g->ind != argc - npos) {
        fprintf(stderr, "sqlbench: unexpected argument '%s'\n", argv[g->ind]);
        return cli_usage_error("sqlbench");
    }

    /* Experiments, in the order given; "all" is the three. */
    bool run_speed = false, run_txn = false, run_writers = false;
    if (g->ind >= argc) {
        fprintf(stderr, "sqlbench: no experiment given (speed, txn, writers or all)\n");
        return cli_usage_error("sqlbench");
    }
    for (int i = g->ind; i < argc; i++) {
        if (!strcmp(argv[i], "speed")) run_speed = true;
        else if (!strcmp(argv[i], "txn")) run_txn = true;
        else if (!strcmp(argv[i], "writers")) run_writers = true;
        else if (!strcmp(argv[i], "all")) run_speed = run_txn = run_writers = true;
        else {
            fprintf(stderr, "sqlbench: '%s' is not an experiment (speed, txn, writers or all)\n",
                    argv[i]);
            return cli_usage_error("sqlbench");
        }
    }

    if (scale < 0)
        scale = o.quick ? 0.1 : 1;
    o.scale = scale;
    o.repeat = repeat > 0 ? (int)repeat : o.quick ? 1 : 3;
    o.max_seconds = max_seconds > 0 ? max_seconds : o.quick ? 1 : 20;
    o.speed_rows = scaled(30000, scale, 30);
    o.speed_stmts = scaled(1000, scale, 10);
    if (o.speed_stmts > o.speed_rows)
        o.speed_stmts = o.speed_rows;
    o.txn_max = scaled(10000, scale, 1);
    o.writers = writers > 0 ? (int)writers : scaled(100, scale, 1);
    o.inserts = inserts > 0 ? (int)inserts : scaled(1000, scale, 1);
    o.workers = workers > 0 ? (int)workers : scaled(100, scale, 1);
    o.tasks = tasks > 0 ? (int)tasks : scaled(100, scale, 1);

    struct zb_conf conf;
    struct zb_err err = { 0 };
    if (conf_load(&conf, conf_path, &err) < 0) {
        fprintf(stderr, "sqlbench: %s\n", err.msg);
        conf_free(&conf);
        return ZB_EXIT_USAGE;
    }
    /* SQLite backends work on a scratch file of their own, read-write,
     * with the 2022 test's 5 s busy timeout; --set comes after. */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", scratch);
    if (strchr(scratch, '\'') || system(cmd) != 0) {
        fprintf(stderr, "sqlbench: --scratch: cannot create directory '%s'\n", scratch);
        conf_free(&conf);
        return ZB_EXIT_USAGE;
    }
    for (int i = 0; i < conf.nbackends; i++) {
        struct backend_conf *bc = &conf.backend[i];
        if (!bc->driver || strcmp(bc->driver, "sqlite"))
            continue;
        char path[1100];
        snprintf(path, sizeof path, "%s/sqlbench-%s.sqlite", scratch, bc->name);
        conf_set(&conf, bc->name, "path", path, &err);
        conf_set(&conf, bc->name, "read_only", "no", &err);
        conf_set(&conf, bc->name, "acquire_timeout_ms", "5000", &err);
    }
    for (int i = 0; i < nsets; i++)
        if (conf_set_arg(&conf, sets[i], &err) < 0) {
            fprintf(stderr, "sqlbench: --set %s: %s\n", sets[i], err.msg);
            conf_free(&conf);
            return ZB_EXIT_USAGE;
        }
    conf_unbounded_queries(&conf);

    /* Resolve the names first, so a typo fails before anything runs. */
    struct sb_target targets[ZB_MAX_BACKENDS];
    int nt = 0;
    if (!strcmp(backends, "all")) {
        const struct backend_conf *all[ZB_MAX_BACKENDS];
        nt = conf_all_backends(&conf, all);
        for (int i = 0; i < nt; i++)
            targets[i].bc = all[i];
    } else {
        char list[512];
        snprintf(list, sizeof list, "%s", backends);
        for (char *save, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
            const struct backend_conf *bc = conf_backend(&conf, name);
            if (!bc || nt == ZB_MAX_BACKENDS) {
                fprintf(stderr, "sqlbench: no backend '%s' in %s\n", name, conf_path);
                conf_free(&conf);
                return ZB_EXIT_USAGE;
            }
            targets[nt++].bc = bc;
        }
    }
    if (nt == 0) {
        fprintf(stderr, "sqlbench: no backends chosen\n");
        conf_free(&conf);
        return ZB_EXIT_USAGE;
    }

    /* Connect once to each: version and durability for the report; a
     * backend that cannot be reached is left out (and the exit is 1). */
    int failed = 0, nup = 0;
    struct sb_target up[ZB_MAX_BACKENDS];
    for (int i = 0; i < nt; i++) {
        struct sb_target *t = &targets[i];
        t->is_sqlite = t->bc->driver && !strcmp(t->bc->driver, "sqlite");
        t->is_mysql = t->bc->driver && !strcmp(t->bc->driver, "mysql");
        if (t->is_sqlite && t->bc->path && strcmp(t->bc->path, ":memory:")) {
            static const char *const ext[] = { "", "-wal", "-shm", "-journal" };
            for (int e = 0; e < 4; e++) {
                char f[1100];
                snprintf(f, sizeof f, "%s%s", t->bc->path, ext[e]);
                unlink(f);
            }
        }
        struct backend b;
        memset(&err, 0, sizeof err);
        if (backend_open(&b, t->bc, &err) < 0 ||
            b.drv->set_sync(b.db, ZB_SYNC_DEFAULT, t->sync_default, sizeof t->sync_default,
                            &err) < 0) {
            fprintf(stderr, "sqlbench: %s: %s\n", t->bc->name, err.msg);
            backend_close(&b);
            failed = 1;
            continue;
        }
        snprintf(t->version, sizeof t->version, "%s", b.drv->version(b.db));
        backend_close(&b);
        up[nup++] = *t;
    }

    sb_report_init(fmt);
    if (fmt != SB_JSON)
        print_header(up, nup, &o, fmt == SB_MARKDOWN);
    static const struct {
        const char *name;
        int (*run)(const struct sb_opts *, const struct sb_target *, struct zb_err *);
    } experiments[] = { { "speed", sb_speed }, { "txn", sb_txn }, { "writers", sb_writers } };
    const bool wanted[] = { run_speed, run_txn, run_writers };
    for (int e = 0; e < 3; e++) {
        if (!wanted[e])
            continue;
        for (int i = 0; i < nup; i++) {
            fprintf(stderr, "sqlbench: %s on %s\n", experiments[e].name, up[i].bc->name);
            double t0 = zb_now_s();
            memset(&err, 0, sizeof err);
            if (experiments[e].run(&o, &up[i], &err) < 0) {
                fprintf(stderr, "sqlbench: %s on %s FAILED: %s\n", experiments[e].name,
                        up[i].bc->name, err.msg);
                failed = 1;
            } else {
                fprintf(stderr, "sqlbench: %s on %s: %.1f s\n", experiments[e].name,
                        up[i].bc->name, zb_now_s() - t0);
            }
        }
        sb_report_experiment(experiments[e].name, up, nup);
    }
    sb_report_free();
    conf_free(&conf);
    return failed ? ZB_EXIT_FAIL : ZB_EXIT_OK;
}
