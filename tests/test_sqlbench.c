/* sqlbench against the real servers: every experiment yields its figures
 * on every backend and, for writers, on the file targets (what the figures
 * are is the benchmark's business, not the test's), the time cap
 * extrapolates, and usage errors exit 2. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"

static const char *const backends[] = { "sqlite", "pg", "innodb", "myisam" };

static char out[1 << 20];

/* Runs sqlbench with the test's own table prefix and scratch directory. */
static int sqlbench(const char *args)
{
    const char *dir = test_dir("sqlbench");
    return run_cmd(out, sizeof out, "%s --conf %s --prefix sbt_ --scratch %s %s", prog("sqlbench"),
                   conf_path(), dir, args);
}

/* Each of texts (NULL-terminated) stands somewhere in out. */
static void expect_in_out(const char *const *texts)
{
    for (; *texts; texts++)
        ck_assert_msg(strstr(out, *texts), "no \"%s\" in: %.4000s", *texts, out);
}

/* JSON lines of experiment e on backend b that carry a numeric median. */
static int figures(const char *e, const char *b)
{
    char want[128];
    snprintf(want, sizeof want, "{\"experiment\":\"%s\",", e);
    char be[64];
    snprintf(be, sizeof be, ",\"backend\":\"%s\",", b);
    int n = 0;
    for (const char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[2048];
        if (len >= sizeof buf)
            continue;
        memcpy(buf, line, len);
        buf[len] = 0;
        if (strncmp(buf, want, strlen(want)) || !strstr(buf, be))
            continue;
        const char *m = strstr(buf, "\"median_s\":");
        ck_assert_msg(m, "no median_s in %s", buf);
        char *num_end;
        double v = strtod(m + 11, &num_end);
        ck_assert_msg(num_end != m + 11 && v >= 0, "bad median_s in %s", buf);
        ck_assert_msg(strstr(buf, "\"extrapolated\":"), "no extrapolated in %s", buf);
        n++;
    }
    return n;
}

START_TEST(all_quick_on_every_backend)
{
    int rc = sqlbench("all --quick --json --backends sqlite,pg,innodb,myisam");
    ck_assert_msg(rc == 0, "exit %d: %.4000s", rc, out);
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        const char *b = backends[i];
        ck_assert_msg(figures("speed", b) == 11, "%s: %d speed figures: %.4000s", b,
                      figures("speed", b), out);
        /* 3 durability levels x 4 sizes (1..1,000 at --quick) x separate, single */
        ck_assert_msg(figures("txn", b) == 24, "%s: %d txn figures: %.4000s", b, figures("txn", b), out);
        /* one writer, many writers, the job queue */
        ck_assert_msg(figures("writers", b) == 3, "%s: %d writers figures: %.4000s", b,
                      figures("writers", b), out);
    }
    expect_in_out((const char *const[]){ "\"busy_retries\":", "\"per_s\":", NULL });
}
END_TEST

START_TEST(tables_and_markdown)
{
    int rc = sqlbench("speed writers --backends sqlite --scale 0.01 --repeat 2");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    expect_in_out((const char *const[]){ "machine: ", "sqlite: SQLite 3", "10 DELETE",
                                         "job queue 1 workers x 1 tasks", NULL });
    rc = sqlbench("speed --backends sqlite --scale 0.01 --markdown");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    expect_in_out((const char *const[]){ "| test | sqlite |", "|---|---:|", NULL });
}
END_TEST

START_TEST(time_cap_extrapolates)
{
    /* 1,000 separate fsynced commits never fit in 10 ms. */
    int rc = sqlbench("txn --backends sqlite --scale 0.1 --repeat 1 --max-seconds 0.01 --json");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_int_eq(figures("txn", "sqlite"), 24);
    ck_assert_msg(strstr(out, "\"test\":\"separate\",\"backend\":\"sqlite\"") != NULL, "%s", out);
    bool found = false;
    for (char *line = strtok(out, "\n"); line && !found; line = strtok(NULL, "\n"))
        found = strstr(line, "\"test\":\"separate\"") && strstr(line, "\"n\":1000,") &&
                strstr(line, "\"extrapolated\":true");
    ck_assert_msg(found, "no extrapolated separate 1000-insert figure");
}
END_TEST

START_TEST(writers_on_the_file_system)
{
    int rc = sqlbench("writers --json --scale 0.01 --repeat 2 --backends files,files_sync");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_int_eq(figures("writers", "files"), 3);
    ck_assert_int_eq(figures("writers", "files_sync"), 3);
    ck_assert_ptr_nonnull(strstr(out, "\"sync\":\"write NAME.tmp, fsync, rename over NAME\""));
    /* the records' directories are gone after the run */
    struct stat st;
    ck_assert_msg(stat(build_path("test/sqlbench/sqlbench-files"), &st) != 0, "files left behind");
    ck_assert_msg(stat(build_path("test/sqlbench/sqlbench-files_sync"), &st) != 0, "files left behind");
    /* no file-system form: skipped with a word, not an error */
    rc = sqlbench("speed --scale 0.01 --backends files");
    ck_assert_msg(rc == 0 && strstr(out, "no file-system form"), "exit %d: %s", rc, out);
}
END_TEST

/* Figures of experiment e on backend b whose test starts with `test`. */
static int figures_named(const char *e, const char *b, const char *test)
{
    char want[256];
    snprintf(want, sizeof want, "{\"experiment\":\"%s\",\"test\":\"%s", e, test);
    char be[64];
    snprintf(be, sizeof be, ",\"backend\":\"%s\",", b);
    int n = 0;
    for (const char *p = out; (p = strstr(p, want)); p++) {
        const char *end = strchr(p, '\n');
        const char *hit = strstr(p, be);
        n += hit && (!end || hit < end);
    }
    return n;
}

START_TEST(as3ap_single_and_multi_user)
{
    char args[1400];
    snprintf(args, sizeof args, "as3ap --json --scale 0.02 --repeat 1 --users 3 --backends sqlite,pg,innodb "
             "--dataset %s", data_path("ken_all.csv"));
    int rc = sqlbench(args);
    ck_assert_msg(rc == 0, "exit %d: %.4000s", rc, out);
    static const char *const kinds[] = { "load", "create_idx_zip_code", "sel_1_cl", "sel_1_ncl",
                                         "sel_100_cl", "table_scan", "agg_simple_report",
                                         "join_2_cl", "bulk_modify", "mu_ir", "mu_oltp", "size" };
    for (int b = 0; b < 3; b++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            ck_assert_msg(figures_named("as3ap", backends[b], kinds[k]) == 1, "%s: no %s figure: %.4000s",
                          backends[b], kinds[k], out);
    ck_assert_ptr_nonnull(strstr(out, "\"bytes\":"));
    /* the other setting of one backend, as OSDB compared two builds */
    snprintf(args, sizeof args, "as3ap --json --scale 0.01 --repeat 1 --users 2 --backends pg --sync off "
             "--dataset %s", data_path("ken_all.csv"));
    rc = sqlbench(args);
    ck_assert_msg(rc == 0, "exit %d: %.4000s", rc, out);
    ck_assert_msg(strstr(out, "synchronous_commit=off"), "%.2000s", out);
}
END_TEST

START_TEST(calibrate_the_machine)
{
    int rc = sqlbench("calibrate --json --scale 0.05 --repeat 2 --backends sqlite,pg");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_int_eq(figures_named("calibrate", "machine", "fsync"), 1);
    ck_assert_int_eq(figures_named("calibrate", "machine", "tcp"), 1);
    ck_assert_int_eq(figures_named("calibrate", "machine", "spawn"), 1);
    ck_assert_int_eq(figures_named("calibrate", "machine", "wake"), 1);
    ck_assert_int_eq(figures_named("calibrate", "machine", "switch"), 1);
    ck_assert_int_eq(figures_named("calibrate", "machine", "fork"), 1);
    ck_assert_int_eq(figures_named("calibrate", "machine", "memory"), 1);
    ck_assert_int_eq(figures_named("calibrate", "sqlite", "open"), 1);
    ck_assert_int_eq(figures_named("calibrate", "pg", "connect"), 1);
}
END_TEST

/* The server's lookup by the database's own client, on a generated set
 * loaded into SQLite and PostgreSQL: a figure per backend, and a clear
 * refusal without --keys. */
START_TEST(lookup_by_the_native_client)
{
    const char *dir = test_dir("sqlbench-lookup");
    char csv[1024], keys[1024], db[1024], why[4096];
    snprintf(csv, sizeof csv, "%s/set.csv", dir);
    snprintf(keys, sizeof keys, "%s/set.keys", dir);
    snprintf(db, sizeof db, "%s/lookup.sqlite", dir);
    ck_assert_msg(fresh_generated_set(dir, csv, 300, 7, why, sizeof why) == 0, "%s", why);
    int rc = run_cmd(out, sizeof out, "%s -q --conf %s --backend sqlite,pg --mode bulk --dataset %s "
                     "--set sqlite.path=%s --set sqlite.table=sbt_lookup --set pg.table=sbt_lookup",
                     prog("loader"), conf_path(), csv, db);
    ck_assert_msg(rc == 0, "loader exit %d: %s", rc, out);
    rc = run_cmd(out, sizeof out, "%s -q --conf %s --dataset %s --write-keys %s", prog("loader"),
                 conf_path(), csv, keys);
    ck_assert_msg(rc == 0, "loader --write-keys exit %d: %s", rc, out);
    rc = sqlbench("lookup --json --backends sqlite,pg --users 2 --max-seconds 0.3 --repeat 2 "
                  "--set sqlite.table=sbt_lookup --set pg.table=sbt_lookup");
    ck_assert_int_eq(rc, 1);     /* no --keys: every backend fails, said once each */
    ck_assert_ptr_nonnull(strstr(out, "lookup needs --keys FILE"));
    char args[4096];
    snprintf(args, sizeof args, "lookup --json --backends sqlite,pg --users 2 --max-seconds 0.3 "
             "--repeat 2 --keys %s --set sqlite.path=%s --set sqlite.table=sbt_lookup "
             "--set pg.table=sbt_lookup", keys, db);
    rc = sqlbench(args);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_int_eq(figures("lookup", "sqlite"), 1);
    ck_assert_int_eq(figures("lookup", "pg"), 1);
    ck_assert_msg(strstr(out, "\"unit\"") || strstr(out, "\"per_s\":"), "no rate in %s", out);
}
END_TEST

START_TEST(usage_errors_exit_2)
{
    ck_assert_int_eq(sqlbench(""), 2);
    ck_assert_ptr_nonnull(strstr(out, "no experiment given"));
    ck_assert_int_eq(sqlbench("speedy"), 2);
    ck_assert_ptr_nonnull(strstr(out, "'speedy' is not an experiment"));
    ck_assert_int_eq(sqlbench("txn --repeat 0"), 2);
    ck_assert_ptr_nonnull(strstr(out, "--repeat: '0'"));
    ck_assert_int_eq(sqlbench("txn --backends sqlite,nosuch"), 2);
    ck_assert_ptr_nonnull(strstr(out, "no backend 'nosuch'"));
    ck_assert_int_eq(sqlbench("txn --set sqlite.nokey=1"), 2);
    ck_assert_int_eq(sqlbench("txn --bogus"), 2);
    ck_assert_int_eq(sqlbench("as3ap --sync sometimes"), 2);
    ck_assert_ptr_nonnull(strstr(out, "--sync: 'sometimes'"));
    ck_assert_int_eq(sqlbench("--help"), 0);
    ck_assert_ptr_nonnull(strstr(out, "Exit status"));
}
END_TEST

Suite *suite_sqlbench(void)
{
    TCase *t = test_case("sqlbench", NULL, NULL, 300, TESTS(
        usage_errors_exit_2, tables_and_markdown, time_cap_extrapolates,
        all_quick_on_every_backend, writers_on_the_file_system, as3ap_single_and_multi_user,
        calibrate_the_machine, lookup_by_the_native_client));
    return suite_of("sqlbench", t, NULL);
}
