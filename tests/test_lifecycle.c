/* What a run leaves behind, and what it trips over:
 * - every port the project listens on lies below Linux's ephemeral range,
 *   so no client's port can be sitting on it;
 * - a load that churns through client ports (make run's kind), then the
 *   databases restarted at once: they must come back;
 * - `make test` run twice in this tree and once in a second checkout: each
 *   passes, and afterwards no process it started is left (the process table
 *   is searched for the tree's build paths); a database that was running
 *   before stays, one the run had to start is stopped.
 * The recursive runs use a representative subset of the suites, conf server
 * php (the config, both databases, the lookup server, Apache + PHP, nginx
 * none: test_bench covers its own), not the whole suite: three whole runs
 * inside a run would triple CI's time. */
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf.h"
#include "helpers.h"
#include "util.h"

#define SUBSET "conf updates php" /* servers of every kind, briefly */

static char dir[PATH_MAX];

/* Absolute: the recursive runs work in other directories. */
static void setup(void)
{
    if (!realpath(test_dir("lifecycle"), dir))
        snprintf(dir, sizeof dir, "/nonexistent");
}

/* The low end of the kernel's ephemeral port range. */
static int ephemeral_low(void)
{
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    int lo = 32768, hi;
    if (f) {
        if (fscanf(f, "%d %d", &lo, &hi) != 2)
            lo = 32768;
        fclose(f);
    }
    return lo < 32768 ? lo : 32768;
}

/* The default ports of the scripts (ZB_*_PORT:-N), of the bench driver and
 * the soak (ZB_*_PORT || N), of the config (${...:-N}, port = N), and the
 * ports the config gives now: all below it. */
START_TEST(ports_are_below_the_ephemeral_range)
{
    int low = ephemeral_low();
    char out[8192];
    ck_assert_int_eq(run_cmd(out, sizeof out, "grep -d skip -hoE 'PORT(:-| \\|\\| )[0-9]+' scripts/* "
                                               "conf/zipbench.conf bench/*.mjs bench/*/*.mjs; "
                                               "sed -n 's/^port *= *\\([0-9]*\\).*/\\1/p' conf/zipbench.conf"), 0);
    int n = 0;
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
        const char *num = l + strcspn(l, "0123456789");
        int port = atoi(num);
        ck_assert_msg(port > 0 && port < low, "'%s': port %d is not below %d, where clients' ports are "
                      "taken from", l, port, low);
        n++;
    }
    ck_assert_msg(n >= 8, "only %d default ports found in scripts/ and conf/", n);
    struct zb_conf zc;
    struct zb_err err = { 0 };
    ck_assert_msg(conf_load(&zc, conf_path(), &err) == 0, "%s", err.msg);
    for (int i = 0; i < zc.nbackends; i++)
        ck_assert_msg(zc.backend[i].port < low, "[backend %s] port %d", zc.backend[i].name,
                      zc.backend[i].port);
    ck_assert_int_lt(zc.server.port, low);
    conf_free(&zc);
}
END_TEST

/* A listening socket on addr, port chosen by the kernel: its fd, the port
 * in *port; -1 when it cannot be made. */
static int listen_on(const char *addr, int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET };
    socklen_t len = sizeof a;
    if (fd < 0 || inet_pton(AF_INET, addr, &a.sin_addr) != 1 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        listen(fd, 1) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* A port taken on the address a database listens on besides loopback
 * (ZB_DB_LISTEN, a fleet's db host) stops its start with the holder named:
 * PostgreSQL once started anyway, on loopback alone (it only warns), and
 * `fleet up` failed later at the app's login with "timeout expired".
 * 127.0.0.2 stands for the host's address: loopback, yet not 127.0.0.1. */
START_TEST(a_port_taken_on_a_listen_address_stops_the_start)
{
    char out[8192], db[PATH_MAX + 8], where[64];
    int port, fd = listen_on("127.0.0.2", &port);
    ck_assert_msg(fd >= 0, "cannot listen on 127.0.0.2");
    snprintf(where, sizeof where, "127.0.0.2:%d is already taken by", port);
    ck_assert_msg(run_cmd(out, sizeof out, "scripts/port-check X %d ZB_X", port) == 0,
                  "127.0.0.1 is free: %s", out);
    ck_assert_msg(run_cmd(out, sizeof out, "scripts/port-check --also 192.0.2.1,127.0.0.2 X %d ZB_X", port) == 1 &&
                  strstr(out, where) && strstr(out, "ZB_X="), "%s", out);
    snprintf(db, sizeof db, "%s/db", dir);
    static const char *const servers[][2] = { { "pg", "ZB_PG_PORT" }, { "mariadb", "ZB_MY_PORT" } };
    for (size_t i = 0; i < 2; i++) {
        int rc = run_cmd(out, sizeof out, "ZB_DB_DIR='%s' ZB_DB_LISTEN=127.0.0.2 %s=%d scripts/db start %s",
                         db, servers[i][1], port, servers[i][0]);
        if (rc == 0)   /* started after all: stopped before the test fails */
            run_cmd(NULL, 0, "ZB_DB_DIR='%s' %s=%d scripts/db stop %s", db, servers[i][1], port, servers[i][0]);
        ck_assert_msg(rc == 1 && strstr(out, where) && strstr(out, servers[i][1]), "%s: exit %d: %s",
                      servers[i][0], rc, out);
    }
    close(fd);
    run_cmd(NULL, 0, "d=$(readlink -f '%s'); rm -rf '%s'; case $d in /var/tmp/zipbench-db.*) rm -rf \"$d\" ;; esac",
            db, db);
}
END_TEST

/* make run, then make test at once: a load through fresh connections (each
 * leaves its client port in TIME-WAIT for a minute), then both databases
 * restarted. With ports inside the ephemeral range, MariaDB failed to bind
 * ("Address already in use") 2 of 2 times. */
START_TEST(databases_restart_right_after_a_load)
{
    char out[8192], csv[PATH_MAX + 16], sqlite[PATH_MAX + 16], log[PATH_MAX + 16];
    snprintf(csv, sizeof csv, "%s/g.csv", dir);
    snprintf(sqlite, sizeof sqlite, "%s/l.sqlite", dir);
    snprintf(log, sizeof log, "%s/server.log", dir);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --rows 200 --seed 3 -o %s && %s -q --conf %s --backend sqlite "
                             "--mode bulk --dataset %s --set sqlite.path=%s", prog("gen"), csv, prog("loader"),
                             conf_path(), csv, sqlite), 0);
    int port = free_port(18190);
    char args[PATH_MAX + 64];
    snprintf(args, sizeof args, "--backends sqlite --set sqlite.path=%s", sqlite);
    pid_t pid = spawn_server(conf_path(), port, log, args);
    ck_assert_msg(await_server(pid, port), "server did not start on %d", port);
    int rc = run_cmd(out, sizeof out, "%s -q -n 20000 -c 20 http://127.0.0.1:%d/health", prog("loadgen"), port);
    term_server(pid);
    ck_assert_msg(rc == 0, "loadgen: exit %d: %s", rc, out);
    run_cmd(out, sizeof out, "ss -Htan state time-wait | wc -l");
    fprintf(stderr, "lifecycle: %d sockets in TIME-WAIT after the load; restarting the databases\n", atoi(out));
    rc = run_cmd(out, sizeof out, "scripts/db stop && scripts/db start");
    ck_assert_msg(rc == 0 && strstr(out, "PostgreSQL 15") && strstr(out, "MariaDB 1"), "exit %d: %s", rc, out);
}
END_TEST

/* ---- the process table ---- */

struct proc {
    pid_t pid, ppid;
    char what[160];   /* program and arguments, for messages */
};

static pid_t parent_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *close_paren = strrchr(buf, ')');   /* the name may hold spaces */
    int ppid = 0;
    if (close_paren)
        sscanf(close_paren + 1, " %*c %d", &ppid);
    return ppid;
}

static bool under(const char *path, const char *const *roots)
{
    for (; *roots; roots++) {
        size_t n = strlen(*roots);
        if (!strncmp(path, *roots, n) && (path[n] == '/' || path[n] == 0))
            return true;
    }
    return false;
}

/* The processes of a tree: those whose program, working directory or
 * command line names a path under one of roots, and their children
 * (nginx's workers and PostgreSQL's backends name no path). */
static int tree_processes(const char *const *roots, struct proc *out, int max)
{
    static struct proc all[8192];
    static bool mark[8192];
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) && n < 8192) {
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid <= 0)
            continue;
        char p[64], exe[PATH_MAX] = "", cwd[PATH_MAX] = "", cmd[4096] = "";
        snprintf(p, sizeof p, "/proc/%d/exe", (int)pid);
        ssize_t k = readlink(p, exe, sizeof exe - 1);
        exe[k > 0 ? k : 0] = 0;
        snprintf(p, sizeof p, "/proc/%d/cwd", (int)pid);
        k = readlink(p, cwd, sizeof cwd - 1);
        cwd[k > 0 ? k : 0] = 0;
        snprintf(p, sizeof p, "/proc/%d/cmdline", (int)pid);
        FILE *f = fopen(p, "r");
        size_t len = f ? fread(cmd, 1, sizeof cmd - 1, f) : 0;
        if (f)
            fclose(f);
        for (size_t i = 0; i < len; i++)
            if (!cmd[i])
                cmd[i] = ' ';
        cmd[len] = 0;
        bool hit = under(exe, roots) || under(cwd, roots);
        for (const char *const *r = roots; *r && !hit; r++)
            hit = strstr(cmd, *r) != NULL;
        all[n] = (struct proc){ .pid = pid, .ppid = parent_of(pid) };
        snprintf(all[n].what, sizeof all[n].what, "%.*s", (int)sizeof all[n].what - 1, len ? cmd : exe);
        mark[n++] = hit;
    }
    if (d)
        closedir(d);
    for (bool grew = true; grew;) {
        grew = false;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n && !mark[i]; j++)
                if (mark[j] && all[i].ppid == all[j].pid)
                    mark[i] = grew = true;
    }
    int m = 0;
    for (int i = 0; i < n && m < max; i++)
        if (mark[i])
            out[m++] = all[i];
    return m;
}

static bool listed(pid_t pid, const struct proc *ps, int n)
{
    for (int i = 0; i < n; i++)
        if (ps[i].pid == pid)
            return true;
    return false;
}

/* The pid in the first line of file, 0 if none. */
static pid_t pid_in(const char *file)
{
    FILE *f = fopen(file, "r");
    int pid = 0;
    if (f) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return (pid_t)pid;
}

/* Runs `env ENV make ARGS test` of the subset in the directory tree;
 * asserts that it passed, that it ended with Check's summary, and that it
 * left no process of the tree's but those running before it and, when they
 * ran before, the databases. */
static void make_test_leaves_nothing(const char *dirname, const char *env, const char *args,
                                     const char *what)
{
    char tree[PATH_MAX], build[PATH_MAX + 16], dbdir[PATH_MAX], log[PATH_MAX + 64], out[8192];
    ck_assert_msg(realpath(dirname, tree), "%s", dirname);
    snprintf(build, sizeof build, "%s/build", tree);
    char db[PATH_MAX + 16];
    snprintf(db, sizeof db, "%s/build/db", tree);
    if (!realpath(db, dbdir))
        snprintf(dbdir, sizeof dbdir, "%.*s", PATH_MAX - 1, db);
    const char *roots[] = { build, dbdir, NULL };
    static struct proc before[4096], after[4096];
    char status[PATH_MAX + 64];
    snprintf(status, sizeof status, "cd '%s' && scripts/db status > /dev/null", tree);
    bool dbs_before = run_cmd(NULL, 0, "%s", status) == 0;
    int nb = tree_processes(roots, before, 4096);

    snprintf(log, sizeof log, "%s/%s.log", dir, what);
    uint64_t t0 = zb_now_ns();
    int rc = run_cmd(out, sizeof out,
                     "cd '%s' && env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS -u ZB_BUILD -u ZB_DATA -u ZB_CONF %s "
                     "make -j2 %s test TESTS='" SUBSET "' > '%s' 2>&1; rc=$?; tail -3 '%s'; exit $rc",
                     tree, env, args, log, log);
    fprintf(stderr, "lifecycle: %s: make test TESTS='" SUBSET "' took %.0f s\n", what,
            (double)(zb_now_ns() - t0) / 1e9);
    ck_assert_msg(rc == 0, "%s: make test exit %d (log %s): %s", what, rc, log, out);
    char *last = out + strlen(out);
    while (last > out && last[-1] == '\n')
        *--last = 0;
    last = strrchr(out, '\n') ? strrchr(out, '\n') + 1 : out;
    ck_assert_msg(strstr(last, "100%: Checks: ") && strstr(last, "Failures: 0, Errors: 0"),
                  "%s: the output does not end with Check's summary: '%s' (log %s)", what, last, log);

    bool dbs_after = run_cmd(NULL, 0, "%s", status) == 0;
    ck_assert_msg(dbs_after == dbs_before, "%s: the databases were %s before make test and are %s after",
                  what, dbs_before ? "running" : "stopped", dbs_after ? "running" : "stopped");
    /* Databases running before stay up, though the run may restart them
     * (test_server's outage test does): their new pids are theirs. */
    pid_t db_pids[2] = { 0, 0 };
    if (dbs_before) {
        snprintf(out, sizeof out, "%s/pg/postmaster.pid", dbdir);
        db_pids[0] = pid_in(out);
        snprintf(out, sizeof out, "%s/mysqld/mariadbd.pid", dbdir);
        db_pids[1] = pid_in(out);
    }
    int na = tree_processes(roots, after, 4096);
    char left[4096] = "";
    for (int i = 0; i < na; i++) {
        if (listed(after[i].pid, before, nb))
            continue;
        /* A child of a process that was there before (PostgreSQL's workers
         * come and go), or of a database that was up before, is not ours. */
        bool theirs = false;
        for (pid_t p = after[i].pid; p > 1 && !theirs; p = parent_of(p))
            theirs = (p != after[i].pid && listed(p, before, nb)) || p == db_pids[0] || p == db_pids[1];
        if (!theirs && strlen(left) < sizeof left - 200)
            snprintf(left + strlen(left), sizeof left - strlen(left), "\n  pid %d: %s", (int)after[i].pid,
                     after[i].what);
    }
    ck_assert_msg(!left[0], "%s: processes left by make test:%s", what, left);
}

START_TEST(make_test_twice_then_in_a_second_checkout)
{
    /* Twice here, with the databases as they are (up: make test started
     * them), in this run's build (make sanitize's is build/asan). */
    const char *b = getenv("ZB_BUILD");
    char args[2 * PATH_MAX + 64];
    snprintf(args, sizeof args, "BUILD='%s'", b && *b ? b : "build");
    make_test_leaves_nothing(".", "", args, "same-tree-1");
    make_test_leaves_nothing(".", "", args, "same-tree-2");

    /* A second checkout of the tree's files as they are now (so uncommitted
     * work is what is tested), with its own build/, databases and ports:
     * this tree's databases hold theirs meanwhile. The dataset is this
     * tree's (no download). */
    char clone[PATH_MAX + 16], data[PATH_MAX], env[256], out[8192];
    snprintf(clone, sizeof clone, "%s/clone", dir);
    ck_assert_msg(realpath(data_path("ken_all.csv"), data), "no %s", data_path("ken_all.csv"));
    *strrchr(data, '/') = 0;
    ck_assert_msg(copy_tree(clone, out, sizeof out) == 0, "copying the tree: %s", out);
    int pg_port, my_port;
    second_tree_db_ports(100, &pg_port, &my_port);
    /* make's command-line variables reach us in the environment (make
     * sanitize's BUILD, OPT, LDFLAGS): the copy builds as a fresh one would. */
    snprintf(env, sizeof env, "-u BUILD -u OPT -u LDFLAGS -u CFLAGS -u CC ZB_PG_PORT=%d ZB_MY_PORT=%d",
             pg_port, my_port);
    snprintf(args, sizeof args, "DATA='%s' -o '%s/ken_all.csv'", data, data);
    make_test_leaves_nothing(clone, env, args, "second-checkout");
    /* Its databases' data, when it had to go under /var/tmp (a tree in a
     * private home; see scripts/db). */
    run_cmd(NULL, 0, "d=$(readlink -f '%s/build/db'); case $d in /var/tmp/zipbench-db.*) rm -rf \"$d\" ;; esac",
            clone);
}
END_TEST

/* After `eval "$(scripts/db env)"` of another tree, its ZB_DB_DIR once
 * reached a test's second checkout and restarted the first tree's
 * database. The tests' environment is their own: scripts/with-servers and
 * the runner drop ZB_* (but the ports and make's), PG* and MYSQL*; a run
 * with every one of them pointing elsewhere still passes, and nothing is
 * started where they point. */
START_TEST(foreign_environment_is_dropped)
{
    static char out[16384];
    char elsewhere[PATH_MAX];
    snprintf(elsewhere, sizeof elsewhere, "%s", test_dir("isolation"));
    char abs_dir[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(elsewhere, abs_dir));
    int rc = run_cmd(out, sizeof out,
                     "env ZB_DB_DIR=%s/db ZB_CONF=/nonexistent.conf ZB_LAB_DIR=%s/lab "
                     "PGHOST=/nonexistent PGPORT=1 PGUSER=nobody PGDATABASE=nowhere "
                     "PGPASSFILE=/dev/null PGPASSWORD=wrong MYSQL_PWD=wrong MYSQL_TCP_PORT=1 "
                     "MYSQL_HOST=192.0.2.1 scripts/with-servers sh -c '"
                     "env | grep -E \"^(ZB_DB_DIR|ZB_CONF|ZB_LAB_DIR|PG|MYSQL)\"; "
                     "exec \"${ZB_BUILD:-build}/bin/zbtest\" conf sqlbench'",
                     abs_dir, abs_dir);
    ck_assert_msg(rc == 0, "a run with another tree's environment: exit %d: %s", rc, out);
    ck_assert_msg(!strstr(out, "ZB_DB_DIR=") && !strstr(out, "PGHOST=") && !strstr(out, "MYSQL_PWD="),
                  "foreign variables reached the tests: %s", out);
    char db[PATH_MAX + 8];
    snprintf(db, sizeof db, "%s/db", abs_dir);
    ck_assert_msg(access(db, F_OK) != 0, "a database was made where ZB_DB_DIR pointed: %s", db);
}
END_TEST

/* Ctrl-C, as a terminal sends it (SIGINT to the process group), while
 * `make test` runs a suite with a server of its own under load: make, the
 * runner, the test's server, loader and loadgen are gone within the bound
 * (helpers.h, ctrl_c_bound_ms), nothing of its session left. The databases
 * were up before, so they stay. */
/* The sqlite suite's own server serves (its config is the suite's), in
 * the session of the make test started here: not another tree's. */
static bool sqlite_suite_serving(pid_t sid, void *unused)
{
    (void)unused;
    return session_has(sid, "bin/server --conf ") > 0 && session_has(sid, "test/sqlite/sqlite.conf") > 0;
}

START_TEST(ctrl_c_stops_make_test)
{
    char cmd[2 * PATH_MAX + 256], out[4096], log[PATH_MAX + 32];
    snprintf(log, sizeof log, "%s/ctrl-c.log", dir);
    const char *b = getenv("ZB_BUILD");
    snprintf(cmd, sizeof cmd, "exec env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS -u CK_RUN_CASE -u CK_RUN_SUITE make BUILD='%s' test TESTS=sqlite > '%s' 2>&1",
             b && *b ? b : "build", log);
    double ms;
    int rc = interrupt_when(cmd, sqlite_suite_serving, NULL, log, &ms, out, sizeof out);
    ck_assert_msg(rc != 0, "make test passed though interrupted: %s", out);
    ck_assert_int_eq(processes_with("test/sqlite/sqlite.conf"), 0);
}
END_TEST

Suite *suite_lifecycle(void)
{
    TCase *t = tier(test_case("ports", setup, NULL, 180, TESTS(
        ports_are_below_the_ephemeral_range, databases_restart_right_after_a_load,
        foreign_environment_is_dropped)), TIER_SLOW);
    TCase *k = tier(test_case("taken port", setup, NULL, 60, TESTS(
        a_port_taken_on_a_listen_address_stops_the_start)), TIER_UNIT);
    TCase *r = tier(test_case("make test", setup, NULL, 1200, TESTS(
        make_test_twice_then_in_a_second_checkout, ctrl_c_stops_make_test)), TIER_SLOW);
    return suite_of("lifecycle", t, k, r, NULL);
}
