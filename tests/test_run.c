/* Ctrl-C in the main job (scripts/run, bench/run.mjs) as a terminal sends
 * it: SIGINT to the whole process group. While it measures (the server
 * and loadgen running) it prints what it had measured, with intervals,
 * saves it, and exits 130; while it loads (the loader running) it exits
 * 130 too. Either way within 2 s (on a busy machine: plus ten times what
 * starting node takes there), and no process of its group is left. The
 * dataset is a CSV of the test's own, on SQLite: no database server. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
    char include[1200], sqlite_file[1200], why[256];
    snprintf(include, sizeof include, "%s/conf.d/*.conf", dir);
    snprintf(sqlite_file, sizeof sqlite_file, "%s/run.sqlite", dir);
    const struct conf_change changes[] = { { "", "include", include },
                                           { "backend sqlite", "path", sqlite_file },
                                           { NULL, NULL, NULL } };
    if (write_conf_copy(conf, changes, NULL, why, sizeof why) != 0)
        fprintf(stderr, "run: %s\n", why);
}

/* A CSV of rows rows (key k, a text and a number) at csv. */
static void write_rows(int rows)
{
    snprintf(csv, sizeof csv, "%s/items%d.csv", dir, rows);
    ck_assert_int_eq(run_cmd(NULL, 0, "awk 'BEGIN { print \"k,name,n\"; for (i = 0; i < %d; i++) "
                             "printf \"K%%07d,item %%d,%%d\\n\", i, i, i %% 97 }' > '%s'", rows, csv), 0);
}

/* scripts/run ARGS in a process group of its own, output in out_file. */
static pid_t start_run(const char *args, int port)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "ZB_RUN_PORT=%d ZB_RUNS='%s' exec scripts/run --conf '%s' --csv '%s' --key k "
             "--backends sqlite %s > '%s' 2>&1", port, runs_dir, conf, csv, args, out_file);
    return start_in_group(cmd);
}

/* Ctrl-C to the run: its exit status; within the bound, nothing of its
 * group left. */
static int interrupt(pid_t pid, double *ms)
{
    double bound = ctrl_c_bound_ms();
    int left, rc = ctrl_c(pid, ms, &left);
    ck_assert_msg(!left, "%d processes of the run's group outlived it", left);
    ck_assert_msg(*ms < bound, "the run stopped %.0f ms after SIGINT (bound %.0f)", *ms, bound);
    return rc;
}

static int file_text(const char *path, char *buf, size_t len)
{
    return run_cmd(buf, len, "cat '%s'", path);
}

START_TEST(ctrl_c_while_measuring_reports_and_stops_everything)
{
    write_rows(2000);
    int port = free_port(18496);
    const char *log = build_path("run/run.log");
    unlink(log);
    pid_t pid = start_run("--runs 200 --duration 0.3 --concurrency 2", port);
    /* Until 6 measured runs a cell are made (an interval exists; the log
     * has a loadgen line per run, a warm-up's too) and a client runs. */
    char out[65536];
    for (int i = 0; i < 15000; i++) {
        run_cmd(out, sizeof out, "grep -c 'bin/loadgen .*127.0.0.1:%d/' '%s' 2>/dev/null || echo 0", port, log);
        if (atoi(out) >= 26 && processes_with("bin/loadgen -q --json -c 2") > 0)
            break;
        ck_assert_msg(waitpid(pid, NULL, WNOHANG) == 0, "the run ended by itself: %s",
                      (file_text(out_file, out, sizeof out), out));
        usleep(20 * 1000);
    }
    double ms;
    int rc = interrupt(pid, &ms);
    file_text(out_file, out, sizeof out);
    printf("run: Ctrl-C while measuring: exit %d after %.0f ms\n", rc, ms);
    fflush(stdout);
    ck_assert_msg(rc == 130, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "Interrupted: ") && strstr(out, " of 400 runs made. What was measured so far:"), "%s", out);
    /* the cells with their intervals, the ratio of the same rounds */
    ck_assert_msg(strstr(out, "| sqlite  | pooled      | 2   | ") && strstr(out, "] | +-"), "%s", out);
    ck_assert_msg(strstr(out, "pooled / per-request, from the runs of the same rounds"), "%s", out);
    ck_assert_msg(strstr(out, "Saved: ") && strstr(out, "-items2000-sqlite-interrupted.json"), "%s", out);
    ck_assert_int_eq(run_cmd(out, sizeof out, "ls '%s' | grep -c interrupted", runs_dir), 0);
    ck_assert_int_eq(processes_with(csv), 0);
}
END_TEST

START_TEST(ctrl_c_while_loading_stops_the_loader)
{
    write_rows(3000000);
    int port = free_port(18496);
    pid_t pid = start_run("--runs 6 --duration 0.3 --concurrency 2", port);
    /* Until the loader runs (its arguments, not the driver's). */
    char out[16384];
    int seen = 0;
    for (int i = 0; i < 3000 && !seen; i++) {
        char pat[2400];
        snprintf(pat, sizeof pat, "%s --key k --backend sqlite --mode bulk", strrchr(csv, '/'));
        seen = processes_with(pat) > 0;
        if (!seen)
            usleep(10 * 1000);
    }
    ck_assert_msg(seen, "no loader seen: %s", (file_text(out_file, out, sizeof out), out));
    usleep(200 * 1000);
    double ms;
    int rc = interrupt(pid, &ms);
    file_text(out_file, out, sizeof out);
    printf("run: Ctrl-C while loading: exit %d after %.0f ms\n", rc, ms);
    fflush(stdout);
    ck_assert_msg(rc == 130, "exit %d: %s", rc, out);
    ck_assert_int_eq(processes_with(csv), 0);
}
END_TEST

Suite *suite_run(void)
{
    TCase *t = test_case("ctrl-c", setup, NULL, 300, TESTS(
        ctrl_c_while_measuring_reports_and_stops_everything, ctrl_c_while_loading_stops_the_loader));
    return suite_of("run", t, NULL);
}
