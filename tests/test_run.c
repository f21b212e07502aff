/* Ctrl-C in the main job (scripts/run, bench/run.mjs) as a terminal sends
 * it: SIGINT to the whole process group. While it measures (the server
 * and loadgen running) it prints what it had measured, with intervals,
 * saves it, and exits 130; while it loads (the loader running) it exits
 * 130 too. Either way within 2 s (on a busy machine: plus ten times what
 * starting node takes there), and no process of its session is left. The
 * dataset is a CSV of the test's own, on SQLite: no database server. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "util.h"

static char dir[1024], csv[1100], conf[1100], out_file[1100], runs_dir[1100];

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", test_dir("run"));
    snprintf(conf, sizeof conf, "%s/zipbench.conf", dir);
    snprintf(out_file, sizeof out_file, "%s/run.out", dir);
    snprintf(runs_dir, sizeof runs_dir, "%s/runs", dir);
    char why[256];
    if (write_conf_for_csv(conf, dir, "run.sqlite", why, sizeof why) != 0)
        fprintf(stderr, "run: %s\n", why);
}

/* A CSV of rows rows (key k, a text and a number) at csv. */
static void write_rows(int rows)
{
    snprintf(csv, sizeof csv, "%s/items%d.csv", dir, rows);
    ck_assert_int_eq(run_cmd(NULL, 0, "awk 'BEGIN { print \"k,name,n\"; for (i = 0; i < %d; i++) "
                             "printf \"K%%07d,item %%d,%%d\\n\", i, i, i %% 97 }' > '%s'", rows, csv), 0);
}

/* scripts/run ARGS (port: its server's) interrupted once ready(arg) holds,
 * as interrupt_when does: its exit status, which must be 130, and its
 * output in out. */
static int interrupt_run(const char *args, int port, bool (*ready)(pid_t, void *), void *arg, char *out,
                         size_t len)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "ZB_RUN_PORT=%d ZB_RUNS='%s' exec scripts/run --conf '%s' --csv '%s' --key k "
             "--backends sqlite %s > '%s' 2>&1", port, runs_dir, conf, csv, args, out_file);
    double ms;
    int rc = interrupt_when(cmd, ready, arg, out_file, &ms, out, len);
    run_cmd(out, len, "cat '%s'", out_file);
    ck_assert_msg(rc == 130, "exit %d: %s", rc, out);
    ck_assert_int_eq(processes_with(csv), 0);
    return rc;
}


/* 6 measured runs a cell are made (an interval exists; the run's log has
 * a loadgen line per run, a warm-up's too) and a client runs. arg: the
 * run's port. */
static bool measured_six(pid_t sid, void *arg)
{
    char out[64];
    run_cmd(out, sizeof out, "grep -c 'bin/loadgen .*127.0.0.1:%d/' '%s' 2>/dev/null || echo 0", *(int *)arg,
            build_path("run/run.log"));
    return atoi(out) >= 26 && session_has(sid, "bin/loadgen -q --json -c 2") > 0;
}

START_TEST(ctrl_c_while_measuring_reports_and_stops_everything)
{
    write_rows(2000);
    int port = free_port(18496);
    unlink(build_path("run/run.log"));
    static char out[65536];
    interrupt_run("--runs 200 --duration 0.3 --concurrency 2", port, measured_six, &port, out, sizeof out);
    ck_assert_msg(strstr(out, "Interrupted: ") && strstr(out, " of 400 runs made. What was measured so far:"), "%s", out);
    /* the cells with their intervals, the ratio of the same rounds */
    ck_assert_msg(strstr(out, "| sqlite  | pooled      | 2   | ") && strstr(out, "] | +-"), "%s", out);
    ck_assert_msg(strstr(out, "pooled / per-request, from the runs of the same rounds"), "%s", out);
    ck_assert_msg(strstr(out, "Saved: ") && strstr(out, "-items2000-sqlite-interrupted.json"), "%s", out);
    ck_assert_int_eq(run_cmd(out, sizeof out, "ls '%s' | grep -c interrupted", runs_dir), 0);
}
END_TEST

/* The loader runs (its arguments, not the driver's, name the file so). */
static bool loading(pid_t sid, void *unused)
{
    (void)unused;
    char pat[2400];
    snprintf(pat, sizeof pat, "%s --key k --backend sqlite --mode bulk", strrchr(csv, '/'));
    return session_has(sid, pat) > 0;
}

START_TEST(ctrl_c_while_loading_stops_the_loader)
{
    write_rows(3000000);
    char out[16384];
    interrupt_run("--runs 6 --duration 0.3 --concurrency 2", free_port(18496), loading, NULL, out, sizeof out);
}
END_TEST

Suite *suite_run(void)
{
    TCase *t = test_case("ctrl-c", setup, NULL, 300, TESTS(
        ctrl_c_while_measuring_reports_and_stops_everything, ctrl_c_while_loading_stops_the_loader));
    return suite_of("run", t, NULL);
}
