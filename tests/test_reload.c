/* A reload never breaks a lookup: the loader swaps a dataset's table for
 * one whose column types changed (an integer column became text, then
 * integer again) while loadgen runs against pooled pg, pipelined pg and
 * pooled InnoDB. Every prepared lookup made before the swap is stale (pg:
 * "cached plan must not change result type"); the server prepares again
 * on a fresh connection and retries the lookup once, so no answer is a
 * 5xx, during the swaps or after.
 *
 * The server runs from conf_path() plus a [dataset reload] of our own, on
 * PORT; the database script is $ZB_DB (scripts/db). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define ROWS 1000
#define PORT test_port(18096)

static char dir[1024], conf[1100], data[1100], keys[1100], logfile[1100], sets[2048];
static char setup_error[8192];
static pid_t server_pid;

/* The dataset's columns: v is integer in the file, given as either type. */
#define AS_INTEGER "k integer, v integer, w text"
#define AS_TEXT "k integer, v text, w text"

static int load(const char *columns, char *out, size_t len)
{
    return run_cmd(out, len, "%s -q --conf %s %s --backend pg,innodb --dataset reload "
                   "--set 'dataset.reload.columns=%s'", prog("loader"), conf, sets, columns);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", test_dir("reload"));
    snprintf(conf, sizeof conf, "%s/reload.conf", dir);
    snprintf(data, sizeof data, "%s/reload.csv", dir);
    snprintf(keys, sizeof keys, "%s/reload.keys", dir);
    snprintf(logfile, sizeof logfile, "%s/server.log", dir);
    FILE *d = fopen(data, "w"), *k = fopen(keys, "w");
    if (!d || !k) {
        snprintf(setup_error, sizeof setup_error, "cannot write %s or %s", data, keys);
        if (d) fclose(d);
        if (k) fclose(k);
        return;
    }
    fprintf(d, "k,v,w\n");
    for (int i = 1; i <= ROWS; i++) {
        fprintf(d, "%d,%d,row %d\n", i, i * 7, i);
        fprintf(k, "%d\n", i);
    }
    fclose(d);
    fclose(k);
    char out[4096];
    if (run_cmd(out, sizeof out, "cp '%s' '%s' && printf '\\n[dataset reload]\\nfile = %s\\n"
                "format = csv\\nkey = k\\ncolumns = " AS_INTEGER "\\n' >> '%s'",
                conf_path(), conf, data, conf)) {
        snprintf(setup_error, sizeof setup_error, "config: %s", out);
        return;
    }
    snprintf(sets, sizeof sets, "--set dataset.reload.table=zt_reload");
    int rc = load(AS_INTEGER, out, sizeof out);
    if (rc) {
        snprintf(setup_error, sizeof setup_error, "loader: exit %d: %s", rc, out);
        return;
    }
    char args[2200];
    snprintf(args, sizeof args, "--datasets reload --backends pg,innodb %s", sets);
    server_pid = spawn_server(conf, PORT, logfile, args);
    if (!await_server(server_pid, PORT)) {
        run_cmd(out, sizeof out, "cat '%s'", logfile);
        snprintf(setup_error, sizeof setup_error, "server did not start: %s", out);
    }
}

static void teardown(void)
{
    term_server(server_pid);
    server_pid = 0;
}

#define SETUP_OK() ck_assert_msg(!setup_error[0], "setup: %s", setup_error)

START_TEST(reload_with_changed_types_under_load)
{
    SETUP_OK();
    static const struct { const char *backend, *strategy; } runs[] = {
        { "pg", "pooled" }, { "pg", "pipelined" }, { "innodb", "pooled" },
    };
    enum { NRUNS = sizeof runs / sizeof runs[0] };
    char files[NRUNS][1200], cmd[8192], out[8192];
    size_t n = 0;
    for (int i = 0; i < NRUNS; i++) {
        snprintf(files[i], sizeof files[i], "%s/lg-%s-%s.json", dir, runs[i].backend,
                 runs[i].strategy);
        n += (size_t)snprintf(cmd + n, sizeof cmd - n,
                              "%s -q -k -c 8 -t 7 -n 2000000 --keys %s --json "
                              "'http://127.0.0.1:%d/reload/%s/{key}?strategy=%s' > %s & ",
                              prog("loadgen"), keys, PORT, runs[i].backend, runs[i].strategy,
                              files[i]);
    }
    /* Two swaps under the load: v becomes text, then integer again. */
    snprintf(cmd + n, sizeof cmd - n,
             "sleep 1.5; %s -q --conf %s %s --backend pg,innodb --dataset reload "
             "--set 'dataset.reload.columns=" AS_TEXT "' || echo LOADER FAILED; sleep 1.5; "
             "%s -q --conf %s %s --backend pg,innodb --dataset reload "
             "--set 'dataset.reload.columns=" AS_INTEGER "' || echo LOADER FAILED; wait",
             prog("loader"), conf, sets, prog("loader"), conf, sets);
    int rc = run_cmd(out, sizeof out, "%s", cmd);
    ck_assert_msg(rc == 0 && !strstr(out, "LOADER FAILED"), "exit %d: %s", rc, out);
    for (int i = 0; i < NRUNS; i++) {
        char s[8192] = "";
        run_cmd(s, sizeof s, "cat '%s'", files[i]);
        double done = json_num(s, "completed"), non2xx = json_num(s, "non2xx"), failed = json_num(s, "failed");
        printf("reload: %s %s under two swaps: %.0f answered, %.0f non-2xx, %.0f failed\n",
               runs[i].backend, runs[i].strategy, done, non2xx, failed);
        fflush(stdout);
        ck_assert_msg(done > 0 && non2xx == 0 && failed == 0,
                      "%s %s: %.0f answered, %.0f non-2xx, %.0f failed (log %s)", runs[i].backend,
                      runs[i].strategy, done, non2xx, failed, logfile);
    }
    /* The rows as the last load typed them: v an integer again. */
    char req[] = "GET /reload/pg/3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    static char raw[8192];
    ck_assert(http_exchange(PORT, req, sizeof req - 1, raw, sizeof raw, 5000) > 0);
    ck_assert_msg(http_status(raw) == 200 && strstr(raw, "\"v\":21,"), "%s", raw);
}
END_TEST

Suite *suite_reload(void)
{
    TCase *t = test_case("reload", setup, teardown, 120, TESTS(reload_with_changed_types_under_load));
    return suite_of("reload", t, NULL);
}
