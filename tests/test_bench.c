/* The benchmark suite's smoke run: `scripts/bench --quick` must finish and
 * every experiment must produce its table of numbers. What the numbers are
 * is the benchmark's business, not a test's. */
#include <check.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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

/* The recorded plot data: a quick run must write its own, not these. */
static const char *const recorded[] = { "docs/data/load.dat", "docs/data/lookups.dat" };

/* scripts/bench-loadgen starts scripts/nginx and leaves it up (a benchmark
 * run may be followed by another): one the smoke run started, the suite
 * stops, even when the test fails. */
static bool nginx_was_running;
static void setup(void) { nginx_was_running = run_cmd(NULL, 0, "scripts/nginx status") == 0; }
static void teardown(void)
{
    if (!nginx_was_running)
        run_cmd(NULL, 0, "scripts/nginx stop");
}

START_TEST(quick_run_produces_every_table)
{
    char out[16384];
    struct stat before[2], after;
    for (int i = 0; i < 2; i++)
        ck_assert_msg(stat(recorded[i], &before[i]) == 0, "%s missing", recorded[i]);
    int rc = run_cmd(out, sizeof out, "scripts/bench --quick");
    ck_assert_msg(rc == 0, "scripts/bench --quick: exit %d: %s", rc, out);
    static const char *const parts[] = { "load", "server", "php", "sql", "loadgen" };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        char rest[128];
        snprintf(rest, sizeof rest, "bench/quick/RESULTS-%s.md", parts[i]);
        int n = numeric_rows(build_path(rest));
        ck_assert_msg(n > 0, "%s: no table of numbers (%d)", rest, n);
    }
    ck_assert_int_gt(numeric_rows(build_path("bench/quick/RESULTS.md")), 20);
    struct stat st;
    ck_assert_msg(stat(build_path("bench/quick/plots/lookups.svg"), &st) == 0 &&
                  stat(build_path("bench/quick/plots/load.svg"), &st) == 0, "no quick plots");
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(stat(recorded[i], &after) == 0, "%s gone", recorded[i]);
        ck_assert_msg(after.st_mtim.tv_sec == before[i].st_mtim.tv_sec &&
                      after.st_mtim.tv_nsec == before[i].st_mtim.tv_nsec,
                      "the quick run rewrote %s", recorded[i]);
    }
}
END_TEST

Suite *suite_bench(void)
{
    Suite *s = suite_create("bench");
    TCase *t = tcase_create("smoke");
    tcase_add_unchecked_fixture(t, setup, teardown);
    tcase_add_test(t, quick_run_produces_every_table);
    tcase_set_timeout(t, 600);
    suite_add_tcase(s, t);
    return s;
}
