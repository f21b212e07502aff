/* The README's journeys, walked as a new user walks them: every command of
 * the ```sh blocks of its sections "Two commands", "A CSV of your own" and
 * "Did it get faster?", verbatim and in order, in a fresh copy of the tree
 * (its files as they are now, so uncommitted work is what is tested),
 * with its own build, databases and ports. Each must exit 0 (compare: 0
 * or 1, its verdict); a section or block that is gone fails the test, so
 * the README cannot drift from the tools. The environment is the test's:
 * `make test` runs the conf suite alone (TESTS=conf: the journey is the
 * README's commands, not the suites, which the outer run has), make runs
 * two jobs at once, and the datasets are this tree's (no download). */
#include <check.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "util.h"

static const char *const sections[] = { "Two commands", "A CSV of your own", "Did it get faster?" };
#define NSECTIONS (sizeof sections / sizeof sections[0])

/* The command lines of the ```sh blocks of README.md's section whose
 * heading ("## ...") begins with name, one a line, into cmds; their count
 * (0: no such section, or no block in it). */
static int section_commands(const char *name, char cmds[][512], int max)
{
    FILE *f = fopen("README.md", "r");
    ck_assert_msg(f != NULL, "no README.md");
    char line[4096];
    bool in_section = false, in_block = false;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "## ", 3)) {
            in_section = !strncmp(line + 3, name, strlen(name));
            in_block = false;
            continue;
        }
        if (!in_section)
            continue;
        if (!strncmp(line, "```", 3)) {
            in_block = !in_block && !strcmp(line, "```sh");
            continue;
        }
        if (in_block && line[0] && line[0] != '#' && n < max)
            snprintf(cmds[n++], 512, "%.511s", line);
    }
    fclose(f);
    return n;
}

/* The rows of the CSV the journey loads: a product's key, name, price. */
static void write_products(const char *path)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s", path);
    fputs("sku,name,price\n", f);
    for (int i = 1; i <= 500; i++)
        fprintf(f, "SKU-%04d,\"product %d, size %d\",%d.%02d\n", i, i, i % 7, 3 + i % 40, i % 100);
    fclose(f);
}

START_TEST(the_readme_journeys_work_as_written)
{
    static char cmds[NSECTIONS][16][512];
    int counts[NSECTIONS];
    for (size_t s = 0; s < NSECTIONS; s++) {
        counts[s] = section_commands(sections[s], cmds[s], 16);
        ck_assert_msg(counts[s] > 0, "README.md: no ```sh block under a heading \"## %s\"", sections[s]);
    }
    char dir[PATH_MAX], tree[PATH_MAX + 16], data[PATH_MAX], out[16384], env[1024], log[PATH_MAX + 32];
    ck_assert_ptr_nonnull(realpath(test_dir("readme"), dir));
    snprintf(tree, sizeof tree, "%s/tree", dir);
    snprintf(log, sizeof log, "%s/journey.log", dir);
    ck_assert_msg(realpath(data_path("ken_all.csv"), data), "no %s", data_path("ken_all.csv"));
    *strrchr(data, '/') = 0;
    /* The tree's files as they are, then what a download would bring. */
    ck_assert_msg(copy_tree(tree, out, sizeof out) == 0, "copying the tree: %s", out);
    ck_assert_msg(run_cmd(out, sizeof out, "mkdir -p '%s/build' && "
                          "cp %s/ken_all.csv %s/ken_all.keys %s/ken_all.meta %s/cities1000.txt %s/cities.keys '%s/build/' && "
                          "cp -r %s/npm '%s/build/' && touch '%s'/build/* && "
                          "find '%s/build/npm' -name package.json -exec touch {} +",
                          tree, data, data, data, data, data, tree, data, tree, tree, tree) == 0,
                  "the datasets: %s", out);
    write_products(strcat(strcpy(out, tree), "/products.csv"));
    int pg_port, my_port;
    second_tree_db_ports(200, &pg_port, &my_port);
    int run_port = free_port(18780);
    /* A fresh tree's environment: make's variables of this run and the
     * tree's own (ZB_BUILD...) dropped, its own ports. */
    /* Shorter runs of the same commands (the journey is that they work,
     * not their figures): run's defaults, which a command line's own
     * options would win over. */
    snprintf(env, sizeof env, "env -u MAKELEVEL -u MFLAGS -u ZB_BUILD -u ZB_DATA -u ZB_CONF -u ZB_RUNS -u ZB_HDRJS "
             "-u BUILD -u OPT -u LDFLAGS -u CFLAGS -u CC MAKEFLAGS=-j2 TESTS=conf "
             "ZB_RUN_DEFAULTS='--runs 3 --duration 0.3' "
             "ZB_PG_PORT=%d ZB_MY_PORT=%d ZB_RUN_PORT=%d", pg_port, my_port, run_port);
    for (size_t s = 0; s < NSECTIONS; s++)
        for (int i = 0; i < counts[s]; i++) {
            const char *c = cmds[s][i];
            /* The line as it stands, in a file: no quoting of ours around it. */
            char script[PATH_MAX + 16];
            snprintf(script, sizeof script, "%s/command.sh", dir);
            write_file(script, c);
            uint64_t t0 = zb_now_ns();
            int rc = run_cmd(out, sizeof out, "cd '%s' && { printf '$ %%s\\n' \"$(cat '%s')\"; %s bash '%s'; } >> '%s' 2>&1; "
                             "rc=$?; tail -c 2500 '%s'; exit $rc", tree, script, env, script, log, log);
            fprintf(stderr, "readme: %s: `%s`: exit %d in %.0f s\n", sections[s], c, rc,
                    (double)(zb_now_ns() - t0) / 1e9);
            bool compare = strstr(c, "zipbench compare") != NULL;
            ck_assert_msg(rc == 0 || (compare && rc == 1), "README \"%s\": `%s`: exit %d (all of it in %s): ...%s",
                          sections[s], c, rc, log, out);
            if (compare)
                ck_assert_msg(strstr(out, "cells compared"), "`%s` compared nothing: %s", c, out);
        }
    /* What the journey promised: runs saved, and the CSV's dataset. */
    ck_assert_int_eq(run_cmd(out, sizeof out, "ls '%s/build/runs' | grep -c 'sqlite.json$'", tree), 0);
    ck_assert_msg(atoi(out) >= 4, "fewer saved runs than the journey's runs: %s", out);
    ck_assert_int_eq(run_cmd(out, sizeof out, "grep -c '^Saved: build/runs/' '%s'", log), 0);
    ck_assert_msg(atoi(out) >= 4, "not every run said where it was saved: %s", out);
    /* The databases it started are stopped, its data removed (where it had
     * to go under /var/tmp: a tree in a private home; see scripts/db). */
    run_cmd(out, sizeof out, "cd '%s' && %s scripts/db stop > /dev/null 2>&1; d=$(readlink -f build/db); "
            "case $d in /var/tmp/zipbench-db.*) rm -rf \"$d\" ;; esac", tree, env);
}
END_TEST

Suite *suite_readme(void)
{
    TCase *t = tier(test_case("journeys", NULL, NULL, 2400, TESTS(the_readme_journeys_work_as_written)), TIER_SLOW);
    return suite_of("readme", t, NULL);
}
