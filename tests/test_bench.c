/* The benchmark driver's smoke run: `scripts/bench --quick` (bench/main.mjs)
 * must finish, every experiment must produce its table of numbers, and the
 * servers it started must be gone after. What the numbers are is the
 * benchmark's business, not a test's. */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

/* Rows of a markdown table in path that hold at least one number. */
static int numeric_rows(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[8192];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] != '|' || strstr(line, "---"))
            continue;
        for (const char *p = line; *p; p++)
            if (isdigit((unsigned char)*p) && p > line && p[-1] == ' ') {
                rows++;
                break;
            }
    }
    fclose(f);
    return rows;
}

/* The environment variable every process a test starts inherits (the
 * driver, the servers it spawns, their children): the test's own mark. */
#define MARK_VAR "ZB_TEST_MARK"

/* Live processes that carry this test's mark (MARK_VAR=mark in their
 * environment) and whose command line holds `marker`: what the benchmark
 * started and must have stopped. A server the user runs from this very
 * tree lacks the mark and does not count (a name match once counted it). */
static int our_processes(const char *marker, const char *mark)
{
    char want[128];
    snprintf(want, sizeof want, MARK_VAR "=%s", mark);
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!isdigit((unsigned char)e->d_name[0]) || atoi(e->d_name) == getpid())
            continue;
        static char buf[1 << 16];
        const char *what[] = { "environ", "cmdline" };
        bool hit[2] = { false, false };
        for (int w = 0; w < 2; w++) {
            char path[300];
            snprintf(path, sizeof path, "/proc/%s/%s", e->d_name, what[w]);
            FILE *f = fopen(path, "r");
            if (!f)
                break;
            size_t got = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[got] = 0;
            /* NUL-separated: look at each string. */
            for (size_t i = 0; i < got; i += strlen(buf + i) + 1)
                if (w == 0 ? !strcmp(buf + i, want) : strstr(buf + i, marker) != NULL) {
                    hit[w] = true;
                    break;
                }
            if (!hit[w])
                break;
        }
        n += hit[0] && hit[1];
    }
    closedir(d);
    return n;
}

static bool running(const char *script)
{
    char out[1024];
    return run_cmd(out, sizeof out, "%s status", script) == 0;
}

/* The recorded plot data: a quick run must write its own, not these. */
static const char *const recorded[] = { "docs/data/load.dat", "docs/data/lookups.dat" };

START_TEST(quick_run_produces_every_table)
{
    char out[4096];
    struct stat before[2], after;
    for (int i = 0; i < 2; i++)
        ck_assert_msg(stat(recorded[i], &before[i]) == 0, "%s missing", recorded[i]);
    bool nginx_before = running("scripts/nginx"), apache_before = running("scripts/apache");
    bool fpm_before = running("scripts/php-fpm"), poolers_before = running("scripts/pooler");
    /* The user's own server of this tree, serving on a port of its own
     * throughout: not the run's, so neither counted nor stopped by it. Its
     * port is past the bench's own (ZB_BENCH_PORT to +60), wherever the
     * user moved them. */
    int user_port = free_port(env_port("ZB_BENCH_PORT", 18280) + 100);
    pid_t user_server = spawn_server(conf_path(), user_port, build_path("test/bench-user-server.log"),
                                     "--backends sqlite");
    ck_assert_msg(await_server(user_server, user_port), "the user's server did not start");
    char mark[64];
    snprintf(mark, sizeof mark, "bench-%d-%ld", (int)getpid(), (long)time(NULL));
    setenv(MARK_VAR, mark, 1);
    /* timeout: the driver gets SIGTERM (and stops its servers) before
     * Check's own timeout would kill only this process. */
    const char *log = build_path("test/bench-quick.log");
    int rc = run_cmd(NULL, 0, "timeout 840 scripts/bench --quick > '%s' 2>&1", log);
    unsetenv(MARK_VAR);
    bool user_alive = kill(user_server, 0) == 0;
    term_server(user_server);
    if (rc != 0) /* the reason is at the end of the driver's output */
        run_cmd(out, sizeof out, "tail -c 3000 '%s'", log);
    ck_assert_msg(rc == 0, "scripts/bench --quick: exit %d (all of it in %s): ...%s", rc, log, out);
    ck_assert_msg(user_alive, "the quick run stopped the user's own server");
    /* Whatever the run started is stopped again. */
    ck_assert_msg(nginx_before || !running("scripts/nginx"), "the quick run left nginx running");
    ck_assert_msg(apache_before || !running("scripts/apache"), "the quick run left Apache running");
    ck_assert_msg(fpm_before || !running("scripts/php-fpm"), "the quick run left PHP-FPM running");
    ck_assert_msg(poolers_before || !running("scripts/pooler"), "the quick run left a pooler running");
    ck_assert_int_eq(our_processes("bin/server", mark), 0);
    static const char *const parts[] = { "calibrate", "load", "bulk", "rows", "server", "queries", "requests", "mix", "durability", "php", "poolsize", "conns", "spin", "sql",
                                         "as3ap", "loadgen" };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        char rest[128];
        snprintf(rest, sizeof rest, "bench/quick/RESULTS-%s.md", parts[i]);
        int n = numeric_rows(build_path(rest));
        ck_assert_msg(n > 0, "%s: no table of numbers (%d)", rest, n);
    }
    ck_assert_int_gt(numeric_rows(build_path("bench/quick/RESULTS.md")), 20);
    struct stat st;
    ck_assert_msg(stat(build_path("bench/quick/plots/lookups.svg"), &st) == 0 &&
                  stat(build_path("bench/quick/plots/load.svg"), &st) == 0 &&
                  stat(build_path("bench/quick/plots/php.svg"), &st) == 0 &&
                  stat(build_path("bench/quick/plots/queries.svg"), &st) == 0 &&
                  stat(build_path("bench/quick/plots/updates.svg"), &st) == 0 &&
                  stat(build_path("bench/quick/plots/mix.svg"), &st) == 0 &&
                  stat(build_path("bench/quick/plots/durability.svg"), &st) == 0 &&
                  stat(build_path("bench/quick/plots/poolsize.svg"), &st) == 0 &&
                  stat(build_path("bench/quick/plots/conns.svg"), &st) == 0 &&
                  stat(build_path("bench/quick/plots/rows.svg"), &st) == 0, "no quick plots");
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(stat(recorded[i], &after) == 0, "%s gone", recorded[i]);
        ck_assert_msg(after.st_mtim.tv_sec == before[i].st_mtim.tv_sec &&
                      after.st_mtim.tv_nsec == before[i].st_mtim.tv_nsec,
                      "the quick run rewrote %s", recorded[i]);
    }
}
END_TEST

/* Ctrl-C, as a terminal sends it (SIGINT to the process group), while a
 * bench part measures: the driver stops its servers and clients and exits
 * 130 within the bound (helpers.h, ctrl_c_bound_ms), nothing of its session
 * left, no server of its own left. */
/* A client of the bench's runs against its server (arg: the mark). */
static bool bench_measuring(pid_t sid, void *mark)
{
    (void)sid;
    return our_processes("bin/loadgen", mark) > 0 && our_processes("bin/server", mark) > 0;
}

START_TEST(ctrl_c_stops_the_bench)
{
    char mark[64], cmd[1200], out[4096];
    snprintf(mark, sizeof mark, "bench-int-%d-%ld", (int)getpid(), (long)time(NULL));
    const char *log = build_path("test/bench-ctrl-c.log");
    snprintf(cmd, sizeof cmd, MARK_VAR "=%s exec scripts/bench --quick --only server > '%s' 2>&1", mark, log);
    double ms;
    int rc = interrupt_when(cmd, bench_measuring, mark, log, &ms, out, sizeof out);
    ck_assert_msg(rc == 130, "exit %d: %s", rc, out);
    ck_assert_int_eq(our_processes("bin/server", mark), 0);
    ck_assert_int_eq(our_processes("bin/loadgen", mark), 0);
}
END_TEST

/* The driver's own arithmetic (the .test.mjs files of bench/test: the median's
 * interval, when a cell stops, how it prints), with Node's test runner. */
START_TEST(driver_unit_tests)
{
    /* Only the failures' lines: Check's message has a bounded size. */
    char out[3000];
    const char *log = build_path("bench-unit.log");
    int rc = run_cmd(NULL, 0, "node --test bench/test/ > '%s' 2>&1", log);
    run_cmd(out, sizeof out, "grep -n -A12 '^not ok\\|^ *not ok' '%s' | head -c 2500", log);
    ck_assert_msg(rc == 0, "node --test bench/test/: exit %d (all of it in %s): %s", rc, log, out);
}
END_TEST

Suite *suite_bench(void)
{
    /* Untagged: make test runs it, make check does not (make check-bench
     * runs the Node suite alone). */
    TCase *driver = test_case("driver", NULL, NULL, 600, TESTS(driver_unit_tests));
    TCase *smoke = tier(test_case("smoke", NULL, NULL, 900, TESTS(quick_run_produces_every_table, ctrl_c_stops_the_bench)),
                        TIER_SLOW);
    return suite_of("bench", driver, smoke, NULL);
}
