/* sqlbench: the SQL micro-benchmarks on every backend of the config (and,
 * where an experiment has a file-system form, on the file system), with
 * repeated runs reported as median, min and max. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    "  writers   the 2022 test's three workloads: one writer x 10,000 INSERTs;\n"
    "            100 writers (threads, one connection each) x 1,000 INSERTs at\n"
    "            once, as inserts/s; the job queue: 100 workers x 100 tasks, each\n"
    "            task an INSERT, an UPDATE of status, 10 UPDATEs of progress and a\n"
    "            DELETE on a table indexed on status and scheduled_at, as tasks/s.\n"
    "            Every statement autocommits. SQLite runs in WAL mode with\n"
    "            synchronous=NORMAL and a busy timeout; statements that still fail\n"
    "            busy (or deadlock elsewhere) are retried and counted. Also on the\n"
    "            file system (targets files and files_sync below).\n"
    "  as3ap     an AS3AP-style run over the postal data (--dataset), as OSDB ran\n"
    "            it: populate (the load, then the indexes), single-user queries\n"
    "            (point and range selects on indexed and unindexed columns, a\n"
    "            table scan, aggregates, a self-join by prefecture, a bulk\n"
    "            update), then a multi-user phase: --users connections each\n"
    "            running a mix of point selects and single-row updates; the\n"
    "            table's size on disk after. --sync sets the durability.\n"
    "  calibrate the machine's own costs: an 8 kB write + fdatasync in --scratch\n"
    "            (as pg_test_fsync times it), a 1-byte loopback TCP round trip, a\n"
    "            process spawn, and per backend a connection made and closed (an\n"
    "            SQLite open); figures are for n operations each\n"
    "  lookup    the server's lookup, by the database's own client: --users\n"
    "            threads, each with its connection and the statement prepared\n"
    "            once, for --max-seconds, a key drawn from --keys each time; as\n"
    "            lookups/s and CPU per lookup (for SQLite, in this process: the\n"
    "            database's whole cost). The table is the backend's (--set\n"
    "            B.table=..., B.path=... to point it at another).\n"
    "  all       speed, txn and writers, in that order.\n"
    "\n"
    "Targets: the backends of the config, and two built in for writers:\n"
    "  files        one file per record in --scratch, written plainly (open,\n"
    "               write, close; an update rewrites the file, a delete unlinks)\n"
    "  files_sync   the same written to NAME.tmp, fsync'ed, renamed over NAME\n"
    "\n"
    "Options:\n"
    "  -b, --backends NAMES  comma-separated targets, or 'all': every backend of\n"
    "                        the config (default: all)\n"
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
    "      --dataset FILE    as3ap: the postal codes (default build/ken_all.csv), all\n"
    "                        of them whatever the scale\n"
    "      --users N         as3ap: connections of the multi-user phase (default 10)\n"
    "      --sync LEVEL      as3ap: full, normal or off on every connection, mapped\n"
    "                        to each backend's knob as txn does (default: as the\n"
    "                        server is)\n"
    "      --prefix P        table-name prefix (default sb_): sb_t1..sb_t4, sb_txn,\n"
    "                        sb_writers, sb_jobs, sb_zip, which the loader never uses\n"
    "      --scratch DIR     where SQLite backends get their scratch database,\n"
    "                        DIR/sqlbench-NAME.sqlite, recreated at start, and the\n"
    "                        file targets their directory, DIR/sqlbench-NAME/\n"
    "                        (default build/bench); the served database is never\n"
    "                        touched\n"
    "  -c, --conf FILE       config file (default conf/zipbench.conf)\n"
    "      --set B.KEY=VAL   override a config key of backend B, e.g. pg.port=5433\n"
    "                        (applied after the scratch path)\n"
    "      --json            one JSON object per figure on stdout: experiment, test,\n"
    "                        backend, version, sync, n, runs, median_s, min_s, max_s,\n"
    "                        user_s, sys_s (medians), extrapolated, runs_s (every\n"
    "                        run's real seconds), and per_s, busy_retries and bytes\n"
    "                        where they apply\n"
    "      --markdown        the tables as markdown, for docs\n"
    "  -h, --help            this text\n"
    "\n"
    "Progress goes to stderr. Client and server share the machine: compare\n"
    "figures of the same run, not across machines.\n"
    "\n"
    "Examples:\n"
    "  sqlbench all --quick\n"
    "  sqlbench txn --backends sqlite,pg --max-seconds 60\n"
    "  sqlbench writers --backends sqlite,pg,files,files_sync --scale 0.1 --json\n"
    "  sqlbench as3ap --backends pg --sync off\n"
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
    printf("%ssizes: speed %d rows / %d statements, txn up to %d inserts, writers 1 x %d and "
           "%d x %d, job queue %d x %d; repeat %d, txn cap %g s per case\n",
           li, o->speed_rows, o->speed_stmts, o->txn_max, o->linear, o->writers, o->inserts,
           o->workers, o->tasks, o->repeat, o->max_seconds);
    for (int i = 0; i < nt; i++)
        printf("%s%s: %s; %s\n", li, t[i].bc->name, t[i].version, t[i].sync_default);
    printf("\n");
    fflush(stdout);
}

/* The experiments; `once` runs before the per-target part (NULL: none),
 * `files` says whether the file targets take part. */
static const struct experiment {
    const char *name;
    int (*once)(const struct sb_opts *, struct zb_err *);
    int (*run)(const struct sb_opts *, const struct sb_target *, struct zb_err *);
    bool files;
} experiments[] = {
    { "speed", NULL, sb_speed, false },
    { "txn", NULL, sb_txn, false },
    { "writers", NULL, sb_writers, true },
    { "as3ap", NULL, sb_as3ap, false },
    { "calibrate", sb_calibrate_machine, sb_calibrate_connect, false },
    { "lookup", NULL, sb_lookup, false },
};
enum { NEXPERIMENTS = sizeof experiments / sizeof experiments[0] };

static int usage_error(void) { return cli_usage_error("sqlbench"); }

/* SQLite backends work on a scratch file of their own, read-write, with
 * the 2022 test's 5 s busy timeout, recreated empty. */
static int use_scratch(struct zb_conf *conf, const char *scratch, struct zb_err *err)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", scratch);
    if (strchr(scratch, '\'') || system(cmd) != 0)
        return zb_fail(err, ZB_ERR_INPUT, "--scratch: cannot create directory '%s'", scratch);
    for (int i = 0; i < conf->nbackends; i++) {
        struct backend_conf *bc = &conf->backend[i];
        const struct backend_driver *drv = backend_driver(bc->driver);
        if (!drv || !drv->in_process)
            continue;
        char path[1100];
        snprintf(path, sizeof path, "%s/sqlbench-%s.sqlite", scratch, bc->name);
        static const char *const ext[] = { "", "-wal", "-shm", "-journal" };
        for (int e = 0; e < 4; e++) {
            char f[1120];
            snprintf(f, sizeof f, "%s%s", path, ext[e]);
            unlink(f);
        }
        conf_set(conf, bc->name, "path", path, err);
        conf_set(conf, bc->name, "read_only", "no", err);
        conf_set(conf, bc->name, "busy_timeout_ms", "5000", err);
    }
    return 0;
}

/* The targets --backends names: config backends through conf_select, the
 * file targets here. */
static int select_targets(const struct zb_conf *conf, const char *list, struct sb_target *t,
                          struct zb_err *err)
{
    static struct backend_conf files_conf[2] = { { .name = "files" }, { .name = "files_sync" } };
    char rest[1024] = "";
    int n = 0;
    bool any_db = !strcmp(list, "all");
    if (!any_db) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", list);
        for (char *save, *name = strtok_r(buf, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
            int k = !strcmp(name, "files") ? 0 : !strcmp(name, "files_sync") ? 1 : -1;
            if (k < 0) {
                size_t l = strlen(rest);
                snprintf(rest + l, sizeof rest - l, "%s%s", l ? "," : "", name);
                any_db = true;
            } else if (n < ZB_MAX_BACKENDS) {
                memset(&t[n], 0, sizeof t[n]);
                t[n].bc = &files_conf[k];
                t[n++].store = k ? SB_FILES_SYNC : SB_FILES;
            }
        }
    }
    if (!any_db)
        return n;
    const struct backend_conf *bcs[ZB_MAX_BACKENDS];
    int nb = conf_select(conf, strcmp(list, "all") ? rest : "all", bcs, err);
    if (nb < 0)
        return -1;
    for (int i = 0; i < nb && n < ZB_MAX_BACKENDS; i++) {
        memset(&t[n], 0, sizeof t[n]);
        t[n].bc = bcs[i];
        const struct backend_driver *drv = backend_driver(bcs[i]->driver);
        t[n++].in_process = drv && drv->in_process;
    }
    return n;
}

/* The experiments named in names[0..n), in wanted (by experiments[]'s
 * index; "all" is the first three). -1 after saying why on none or an
 * unknown name. */
static int wanted_experiments(int n, char *const *names, bool *wanted)
{
    if (n <= 0) {
        fprintf(stderr, "sqlbench: no experiment given (speed, txn, writers, as3ap, calibrate, "
                "lookup or all)\n");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        bool all = !strcmp(names[i], "all"), known = all;
        for (int e = 0; e < NEXPERIMENTS; e++)
            if ((all && e < 3) || !strcmp(names[i], experiments[e].name))
                known = wanted[e] = true;
        if (!known) {
            fprintf(stderr, "sqlbench: '%s' is not an experiment (speed, txn, writers, as3ap, "
                    "calibrate, lookup or all)\n", names[i]);
            return -1;
        }
    }
    return 0;
}

/* Connects once to each target: version and durability for the report,
 * into up[0..*nup); a backend that cannot be reached is left out, said on
 * stderr, and makes the result 1 (else 0). */
static int reach_targets(struct sb_target *targets, int nt, struct sb_target *up, int *nup)
{
    int failed = 0;
    for (int i = 0; i < nt; i++) {
        struct sb_target *t = &targets[i];
        if (t->store != SB_SQL) {
            sb_files_describe(t);
            up[(*nup)++] = *t;
            continue;
        }
        struct backend b;
        struct zb_err err = { 0 };
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
        up[(*nup)++] = *t;
    }
    return failed;
}

/* Runs each wanted experiment on each target in up (the ones with no
 * file-system form skip the file targets), reporting each; 1 if any
 * failed, else 0. */
static int run_experiments(const bool *wanted, const struct sb_opts *o,
                           const struct sb_target *up, int nup)
{
    int failed = 0;
    for (int e = 0; e < NEXPERIMENTS; e++) {
        const struct experiment *x = &experiments[e];
        if (!wanted[e])
            continue;
        struct zb_err err = { 0 };
        if (x->once && x->once(o, &err) < 0) {
            fprintf(stderr, "sqlbench: %s FAILED: %s\n", x->name, err.msg);
            failed = 1;
        }
        for (int i = 0; i < nup; i++) {
            if (up[i].store != SB_SQL && !x->files) {
                fprintf(stderr, "sqlbench: %s has no file-system form: %s skipped\n", x->name,
                        up[i].bc->name);
                continue;
            }
            fprintf(stderr, "sqlbench: %s on %s\n", x->name, up[i].bc->name);
            double t0 = zb_now_s();
            memset(&err, 0, sizeof err);
            if (x->run(o, &up[i], &err) < 0) {
                fprintf(stderr, "sqlbench: %s on %s FAILED: %s\n", x->name, up[i].bc->name,
                        err.msg);
                failed = 1;
            } else {
                fprintf(stderr, "sqlbench: %s on %s: %.1f s\n", x->name, up[i].bc->name,
                        zb_now_s() - t0);
            }
        }
        sb_report_experiment(x->name, up, nup);
    }
    return failed;
}

int main(int argc, char **argv)
{
    enum { O_SCALE = 256, O_QUICK, O_MAXSEC, O_WRITERS, O_INSERTS, O_WORKERS, O_TASKS, O_PREFIX,
           O_SCRATCH, O_SET, O_JSON, O_MARKDOWN, O_DATASET, O_USERS, O_SYNC, O_KEYS };
    static const struct option longopts[] = {
        { "backends", required_argument, NULL, 'b' }, { "backend", required_argument, NULL, 'b' },
        { "repeat", required_argument, NULL, 'r' },   { "scale", required_argument, NULL, O_SCALE },
        { "quick", no_argument, NULL, O_QUICK },      { "max-seconds", required_argument, NULL, O_MAXSEC },
        { "writers", required_argument, NULL, O_WRITERS }, { "inserts", required_argument, NULL, O_INSERTS },
        { "workers", required_argument, NULL, O_WORKERS }, { "tasks", required_argument, NULL, O_TASKS },
        { "prefix", required_argument, NULL, O_PREFIX }, { "scratch", required_argument, NULL, O_SCRATCH },
        { "conf", required_argument, NULL, 'c' },     { "set", required_argument, NULL, O_SET },
        { "json", no_argument, NULL, O_JSON },        { "markdown", no_argument, NULL, O_MARKDOWN },
        { "dataset", required_argument, NULL, O_DATASET }, { "users", required_argument, NULL, O_USERS },
        { "sync", required_argument, NULL, O_SYNC },  { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },     { "keys", required_argument, NULL, O_KEYS },
        { NULL, 0, NULL, 0 },
    };
    struct sb_opts o = { .prefix = "sb_", .scratch = "build/bench", .dataset = "build/ken_all.csv",
                         .users = 10 };
    long repeat = -1, writers = -1, inserts = -1, workers = -1, tasks = -1, users = -1;
    double scale = -1, max_seconds = -1;
    const char *conf_path = "conf/zipbench.conf", *backends = "all";
    const char *sets[32];
    int nsets = 0;
    enum sb_format fmt = SB_TEXT;
    int ch;
    /* glibc's getopt_long permutes: "sqlbench all --quick" works. */
    while ((ch = getopt_long(argc, argv, "b:r:c:hV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'b': backends = optarg; break;
        case O_SCALE:
            if (cli_double("sqlbench", "--scale", optarg, 1e-6, 10, &scale) < 0)
                return usage_error();
            break;
        case O_QUICK: o.quick = true; break;
        case O_MAXSEC:
            if (cli_double("sqlbench", "--max-seconds", optarg, 0.001, 86400, &max_seconds) < 0)
                return usage_error();
            break;
        case 'r': case O_WRITERS: case O_INSERTS: case O_WORKERS: case O_TASKS: case O_USERS: {
            /* the whole-number options: flag, range, where it goes */
            const struct { int ch; const char *flag; long hi; long *out; } num[] = {
                { 'r', "--repeat", SB_MAX_REPEAT, &repeat },  { O_WRITERS, "--writers", 1000, &writers },
                { O_INSERTS, "--inserts", 10000000, &inserts }, { O_WORKERS, "--workers", 1000, &workers },
                { O_TASKS, "--tasks", 10000000, &tasks },      { O_USERS, "--users", 1000, &users },
            };
            for (size_t i = 0; i < sizeof num / sizeof num[0]; i++)
                if (num[i].ch == ch && cli_long("sqlbench", num[i].flag, optarg, 1, num[i].hi, num[i].out) < 0)
                    return usage_error();
            break;
        }
        case O_PREFIX: {
            bool ok = *optarg && strlen(optarg) < 32;
            for (const char *c = optarg; *c && ok; c++)
                ok = (*c >= 'a' && *c <= 'z') || *c == '_' || (c > optarg && *c >= '0' && *c <= '9');
            if (!ok) {
                fprintf(stderr, "sqlbench: --prefix: '%s' is not lower-case letters, digits, _\n", optarg);
                return usage_error();
            }
            o.prefix = optarg;
            break;
        }
        case O_SCRATCH: o.scratch = optarg; break;
        case O_DATASET: o.dataset = optarg; break;
        case O_KEYS: o.keys = optarg; break;
        case O_SYNC: {
            int level = cli_choice("sqlbench", "--sync", optarg, zb_sync_names, 3);
            if (level < 0)
                return usage_error();
            o.sync = (enum zb_sync)(ZB_SYNC_FULL + level);
            break;
        }
        case 'c': conf_path = optarg; break;
        case O_SET:
            if (nsets == (int)(sizeof sets / sizeof sets[0])) {
                fprintf(stderr, "sqlbench: too many --set\n");
                return ZB_EXIT_USAGE;
            }
            sets[nsets++] = optarg;
            break;
        case O_JSON: fmt = SB_JSON; break;
        case O_MARKDOWN: fmt = SB_MARKDOWN; break;
        case 'h': fputs(usage, stdout); return ZB_EXIT_OK;
        case 'V': cli_version("sqlbench", NULL); return ZB_EXIT_OK;
        default: return usage_error();   /* getopt_long said what was wrong */
        }
    }

    bool wanted[NEXPERIMENTS] = { false };
    if (wanted_experiments(argc - optind, argv + optind, wanted) < 0)
        return usage_error();

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
    o.linear = scaled(10000, scale, 1);
    o.writers = writers > 0 ? (int)writers : scaled(100, scale, 1);
    o.inserts = inserts > 0 ? (int)inserts : scaled(1000, scale, 1);
    o.workers = workers > 0 ? (int)workers : scaled(100, scale, 1);
    o.tasks = tasks > 0 ? (int)tasks : scaled(100, scale, 1);
    o.users = users > 0 ? (int)users : 10;
    o.as3ap_ops = scaled(2000, scale, 10);
    o.calib_n = scaled(100, scale, 5);

    struct zb_conf conf;
    struct zb_err err = { 0 };
    if (conf_load(&conf, conf_path, &err) < 0 || use_scratch(&conf, o.scratch, &err) < 0 ||
        conf_apply_sets(&conf, sets, nsets, &err) < 0) {
        fprintf(stderr, "sqlbench: %s\n", err.msg);
        conf_free(&conf);
        return ZB_EXIT_USAGE;
    }
    conf_unbounded_queries(&conf);

    /* Resolve the names first, so a typo fails before anything runs. */
    struct sb_target targets[ZB_MAX_BACKENDS];
    int nt = select_targets(&conf, backends, targets, &err);
    if (nt <= 0) {
        fprintf(stderr, "sqlbench: %s\n", nt < 0 ? err.msg : "no backends chosen");
        conf_free(&conf);
        return ZB_EXIT_USAGE;
    }

    struct sb_target up[ZB_MAX_BACKENDS];
    int nup = 0;
    int failed = reach_targets(targets, nt, up, &nup);
    sb_report_init(fmt);
    if (fmt != SB_JSON)
        print_header(up, nup, &o, fmt == SB_MARKDOWN);
    failed |= run_experiments(wanted, &o, up, nup);
    sb_report_free();
    conf_free(&conf);
    return failed ? ZB_EXIT_FAIL : ZB_EXIT_OK;
}
