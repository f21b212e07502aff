/* A reload never breaks a lookup: the loader swaps a dataset's table for
 * one whose column types changed (an integer column became text, then
 * integer again) while loadgen runs against pooled pg, pipelined pg and
 * pooled InnoDB. Every prepared lookup made before the swap is stale (pg:
 * "cached plan must not change result type"); the server prepares again
 * on a fresh connection and retries the lookup once, so no answer is a
 * 5xx, during the swaps or after.
 *
 * The server runs from conf_path() plus a [dataset reload] of our own, on
 * PORT; the database script is $ZB_DB (scripts/db).
 *
 * A reload also changes which codes /random may draw: case "keys" reloads
 * the postal table of every backend with fewer, other codes, and the
 * server's key sets must follow. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "util.h"

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
             "--set 'dataset.reload.columns=" AS_TEXT "' 2>&1 || echo LOADER FAILED; sleep 1.5; "
             "%s -q --conf %s %s --backend pg,innodb --dataset reload "
             "--set 'dataset.reload.columns=" AS_INTEGER "' 2>&1 || echo LOADER FAILED; wait",
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

/* ---- /random after a reload: the key set follows the table ---- */

#define KEY_ROWS 2000
#define FEW_ROWS 300
#define NPOSTAL 4

static const char *const postal[NPOSTAL] = { "sqlite", "pg", "innodb", "myisam" };
static char kdir[1024], kconf[1100], kcsv[1100], kfew[1100], klog[1100];
static char keys_error[8192];
static pid_t keys_pid;
static long distinct_many, distinct_few;

/* How many distinct codes csv holds. */
static long distinct_codes(const char *csv, char *why, size_t len)
{
    char list[1200], out[256];
    snprintf(list, sizeof list, "%s.keys", csv);
    if (write_codes(csv, list, NULL, 0, why, len) < 0)
        return -1;
    if (run_cmd(out, sizeof out, "sort -u '%s' | wc -l", list)) {
        snprintf(why, len, "sort: %s", out);
        return -1;
    }
    return atol(out);
}

static int load_postal(const char *csv, const char *extra, char *out, size_t len)
{
    return run_cmd(out, len, "%s -q --conf %s --backend sqlite,pg,innodb,myisam --mode bulk "
                   "--dataset %s %s", prog("loader"), kconf, csv, extra);
}

static void keys_setup(void)
{
    snprintf(kdir, sizeof kdir, "%s", build_path("test/reload-keys"));
    snprintf(kcsv, sizeof kcsv, "%s/many.csv", kdir);
    snprintf(kfew, sizeof kfew, "%s/few.csv", kdir);
    snprintf(kconf, sizeof kconf, "%s/keys.conf", kdir);
    snprintf(klog, sizeof klog, "%s/server.log", kdir);
    char out[4096], sqlite_path[1200];
    if (fresh_generated_set(kdir, kcsv, KEY_ROWS, 11, keys_error, sizeof keys_error) < 0)
        return;
    if (run_cmd(out, sizeof out, "%s --rows %d --seed 12 -o %s", prog("gen"), FEW_ROWS, kfew)) {
        snprintf(keys_error, sizeof keys_error, "gen: %s", out);
        return;
    }
    if ((distinct_many = distinct_codes(kcsv, keys_error, sizeof keys_error)) < 0 ||
        (distinct_few = distinct_codes(kfew, keys_error, sizeof keys_error)) < 0)
        return;
    snprintf(sqlite_path, sizeof sqlite_path, "%s/keys.sqlite", kdir);
    const struct conf_change changes[] = {
        { "backend sqlite", "path", sqlite_path },
        { "backend sqlite", "table", "zt_keys" },
        { "backend pg", "table", "zt_keys" },
        { "backend innodb", "table", "zt_keys_innodb" },
        { "backend myisam", "table", "zt_keys_myisam" },
        { "*", "table", NULL },
        { NULL, NULL, NULL },
    };
    if (write_conf_copy(kconf, changes, NULL, keys_error, sizeof keys_error) < 0)
        return;
    int rc = load_postal(kcsv, "", out, sizeof out);
    if (rc) {
        snprintf(keys_error, sizeof keys_error, "loader: exit %d: %s", rc, out);
        return;
    }
    keys_pid = fixture_server(kconf, PORT, klog, "--backends sqlite,pg,innodb,myisam", keys_error,
                              sizeof keys_error);
}

static void keys_teardown(void)
{
    term_server(keys_pid);
    keys_pid = 0;
}

/* A figure of backend b in /stats (-1 if absent). */
static double backend_stat(const char *stats, const char *b, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "{\"name\":\"%s\"", b);
    const char *p = strstr(stats, pat);
    return p ? json_num(p, key) : -1;
}

static void get_stats(char *out, size_t len)
{
    static const char req[] = "GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (http_exchange(PORT, req, sizeof req - 1, out, len, 5000) <= 0)
        out[0] = 0;
}

/* Waits up to limit_s until every backend's key set holds n keys: true
 * if they all did; stats has the last /stats. */
static bool keys_become(long n, int limit_s, char *stats, size_t len)
{
    for (int i = 0; i < limit_s * 10; i++) {
        get_stats(stats, len);
        int ok = 0;
        for (int b = 0; b < NPOSTAL; b++)
            ok += backend_stat(stats, postal[b], "keys") == (double)n;
        if (ok == NPOSTAL)
            return true;
        usleep(100 * 1000);
    }
    return false;
}

/* A reload that leaves fewer, other codes: within seconds every backend's
 * /random draws only codes of the new table (no 404), and /stats says
 * how many keys it draws from and how old the set is. */
START_TEST(random_follows_a_reload)
{
    ck_assert_msg(!keys_error[0], "setup: %s", keys_error);
    static char stats[1 << 16];
    ck_assert_msg(keys_become(distinct_many, 15, stats, sizeof stats), "keys before: want %ld: %s",
                  distinct_many, stats);
    char out[8192];
    uint64_t started = zb_now_ns();
    int rc = load_postal(kfew, "--allow-shrink", out, sizeof out);
    ck_assert_msg(rc == 0, "loader: exit %d: %s", rc, out);
    uint64_t t0 = zb_now_ns();
    bool followed = keys_become(distinct_few, 20, stats, sizeof stats);
    double took = (double)(zb_now_ns() - t0) / 1e9;
    /* A backend's set is no older than the reload: the loader swaps the
     * backends in one at a time, so the first may be followed well before
     * the loader exits (on a busy machine, seconds before). */
    double since_start = (double)(zb_now_ns() - started) / 1e9;
    ck_assert_msg(followed, "keys after the reload: want %ld, after %.0f s: %s", distinct_few, took,
                  stats);
    printf("reload: the key sets followed a reload to %ld codes in %.1f s\n", distinct_few, took);
    for (int b = 0; b < NPOSTAL; b++) {
        double age = backend_stat(stats, postal[b], "keys_age_s");
        ck_assert_msg(age >= 0 && age <= since_start + 0.2, "%s: keys_age_s %g, the reload began "
                      "%.1f s before: %s", postal[b], age, since_start, stats);
        int ok = 0, other = 0;
        char req[128], raw[16384];
        int n = snprintf(req, sizeof req, "GET /zip/%s/random HTTP/1.1\r\nHost: x\r\n"
                         "Connection: close\r\n\r\n", postal[b]);
        for (int i = 0; i < 100; i++) {
            http_exchange(PORT, req, (size_t)n, raw, sizeof raw, 5000);
            if (http_status(raw) == 200)
                ok++;
            else if (!other++)
                printf("reload: %s /random: %.300s\n", postal[b], raw);
        }
        ck_assert_msg(ok == 100, "%s: %d of 100 draws 200 after the reload", postal[b], ok);
    }
}
END_TEST

/* ---- a load's generation: what the server derives follows it ---- */

#define GEN_PORT test_port(18098)
#define IDLE_PORT test_port(18099)
static char gdir[1024], gconf[1100], ga[1100], gb[1100], gc[1100], glog[1100], gcode[16];
static char gnew[16], gen_error[8192];
static pid_t gen_pid;

/* out: in with the town of its first line (a record of one line)
 * replaced by town: the same codes and rows, another answer for the
 * first code. */
static int with_first_town(const char *in, const char *out, const char *town, char *why,
                           size_t len)
{
    FILE *f = fopen(in, "rb"), *o = fopen(out, "wb");
    char line[4096];
    int rc = -1;
    if (f && o && fgets(line, sizeof line, f)) {
        char *p = line;
        for (int commas = 0; *p && commas < 8; p++)
            commas += *p == ',';
        char *end = strchr(p, ',');
        if (end) {
            fprintf(o, "%.*s\"%s\"%s", (int)(p - line), line, town, end);
            while (fgets(line, sizeof line, f))
                fputs(line, o);
            rc = 0;
        }
    }
    if (rc < 0)
        snprintf(why, len, "cannot rewrite %s into %s", in, out);
    if (f)
        fclose(f);
    if (o && fclose(o) != 0)
        rc = -1;
    return rc;
}

static int load_into(const char *backends, const char *csv, char *out, size_t len)
{
    return run_cmd(out, len, "%s -q --conf %s --backend %s --mode bulk --allow-shrink --dataset %s",
                   prog("loader"), gconf, backends, csv);
}

static int load_gen(const char *csv, char *out, size_t len)
{
    return load_into("sqlite,pg,innodb,myisam", csv, out, len);
}

static void gen_setup(void)
{
    snprintf(gdir, sizeof gdir, "%s", build_path("test/reload-generation"));
    snprintf(ga, sizeof ga, "%s/a.csv", gdir);
    snprintf(gb, sizeof gb, "%s/b.csv", gdir);
    snprintf(gc, sizeof gc, "%s/c.csv", gdir);
    snprintf(gconf, sizeof gconf, "%s/gen.conf", gdir);
    snprintf(glog, sizeof glog, "%s/server.log", gdir);
    char out[4096], sqlite_path[1200], extra[1200];
    if (fresh_generated_set(gdir, ga, 500, 21, gen_error, sizeof gen_error) < 0 ||
        first_code(ga, gcode, sizeof gcode, gen_error, sizeof gen_error) < 0 ||
        with_first_town(ga, gb, "再読込", gen_error, sizeof gen_error) < 0)
        return;
    /* c: a's rows and ten more of another seed, whose first code is new. */
    snprintf(extra, sizeof extra, "%s/extra.csv", gdir);
    if (run_cmd(out, sizeof out, "%s --rows 10 --seed 99 -o %s && cat %s %s > %s", prog("gen"),
                extra, ga, extra, gc) ||
        first_code(extra, gnew, sizeof gnew, gen_error, sizeof gen_error) < 0) {
        if (!gen_error[0])
            snprintf(gen_error, sizeof gen_error, "gen: %s", out);
        return;
    }
    snprintf(sqlite_path, sizeof sqlite_path, "%s/gen.sqlite", gdir);
    const struct conf_change changes[] = {
        { "server", "cache_entries", "1000" },
        { "backend sqlite", "path", sqlite_path },
        { "backend sqlite", "table", "zt_gen" },
        { "backend pg", "table", "zt_gen" },
        { "backend innodb", "table", "zt_gen_innodb" },
        { "backend myisam", "table", "zt_gen_myisam" },
        { "backend sqlite", "writes", "yes" },
        { "backend pg", "writes", "yes" },
        { "backend innodb", "writes", "yes" },
        { "backend myisam", "writes", "yes" },
        { "*", "table", NULL },
        { NULL, NULL, NULL },
    };
    if (write_conf_copy(gconf, changes, NULL, gen_error, sizeof gen_error) < 0)
        return;
    int rc = load_gen(ga, out, sizeof out);
    if (rc) {
        snprintf(gen_error, sizeof gen_error, "loader: exit %d: %s", rc, out);
        return;
    }
    gen_pid = fixture_server(gconf, GEN_PORT, glog, "--backends sqlite,pg,innodb,myisam",
                             gen_error, sizeof gen_error);
}

static void gen_teardown(void)
{
    term_server(gen_pid);
    gen_pid = 0;
}

/* An answer's body, on a connection of its own (so either loop may take
 * it): its status, or -1. */
static int fetch(const char *method, const char *path, char *body, size_t len)
{
    char req[512], raw[1 << 15];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                     "Connection: close\r\n\r\n", method, path);
    int got = http_exchange(GEN_PORT, req, (size_t)n, raw, sizeof raw, 5000);
    const char *b = got > 0 ? strstr(raw, "\r\n\r\n") : NULL;
    snprintf(body, len, "%s", b ? b + 4 : "");
    return got > 0 ? http_status(raw) : -1;
}

/* /cached answers as /zip does, on every try of tries (both loops). */
static bool cached_is_fresh(const char *b, int tries)
{
    char path[128], zip[1 << 14], cached[1 << 14];
    snprintf(path, sizeof path, "/zip/%s/%s", b, gcode);
    if (fetch("GET", path, zip, sizeof zip) != 200)
        return false;
    snprintf(path, sizeof path, "/cached/%s/%s", b, gcode);
    for (int i = 0; i < tries; i++)
        if (fetch("GET", path, cached, sizeof cached) != 200 || strcmp(cached, zip))
            return false;
    return true;
}

/* Reloads of the same row count in quick succession (within one second,
 * as often as not): /cached follows the table's load generation on every
 * backend, as /zip does. Before, the server told a replaced MariaDB table
 * by CREATE_TIME (whole seconds) and TABLE_ROWS, so a second load within
 * the second of the first kept /cached on the first's answer for good. */
START_TEST(cached_follows_reloads_of_the_same_size)
{
    ck_assert_msg(!gen_error[0], "setup: %s", gen_error);
    char out[8192];
    for (int round = 0; round < 5; round++) {
        const char *last = round % 2 ? ga : gb;
        ck_assert_msg(load_gen(round % 2 ? gb : ga, out, sizeof out) == 0, "loader: %s", out);
        for (int b = 0; b < NPOSTAL; b++)   /* the first load seen: its answer cached */
            for (uint64_t t0 = zb_now_ns(); !cached_is_fresh(postal[b], 6) &&
                 zb_now_ns() - t0 < 10000000000ull;)
                usleep(20 * 1000);
        ck_assert_msg(load_gen(last, out, sizeof out) == 0, "loader: %s", out);
        for (int b = 0; b < NPOSTAL; b++) {
            uint64_t t0 = zb_now_ns();
            bool fresh = false;
            while (!(fresh = cached_is_fresh(postal[b], 6)) && zb_now_ns() - t0 < 10000000000ull)
                usleep(50 * 1000);
            double s = (double)(zb_now_ns() - t0) / 1e9;
            char body[1 << 14], path[128];
            snprintf(path, sizeof path, "/cached/%s/%s", postal[b], gcode);
            fetch("GET", path, body, sizeof body);
            ck_assert_msg(fresh, "%s: round %d: /cached still stale %.1f s after the reload: "
                          "%.300s", postal[b], round, s, body);
            ck_assert_msg(!strstr(body, "再読込") == (last == ga), "%s: /cached is not the last "
                          "load's: %.300s", postal[b], body);
        }
    }
}
END_TEST

/* /cached answers as /zip does on backend b, both asked on the keep-alive
 * connection *fd to port: true then, the last /cached answer in cached. */
static bool kept_cached_is_fresh(int port, int *fd, const char *b, char *cached, size_t len)
{
    char req[256], zip[1 << 14];
    snprintf(req, sizeof req, "GET /zip/%s/%s HTTP/1.1\r\nHost: x\r\n\r\n", b, gcode);
    if (http_kept_exchange(port, fd, req, zip, sizeof zip, 5000) < 0 || http_status(zip) != 200)
        return false;
    snprintf(req, sizeof req, "GET /cached/%s/%s HTTP/1.1\r\nHost: x\r\n\r\n", b, gcode);
    if (http_kept_exchange(port, fd, req, cached, len, 5000) < 0 || http_status(cached) != 200)
        return false;
    const char *zb = strstr(zip, "\r\n\r\n"), *cb = strstr(cached, "\r\n\r\n");
    return zb && cb && !strcmp(zb, cb);
}

/* Reloads one after another while one keep-alive connection is all the
 * traffic, on a server of SQLite alone (no pool's timers wake a loop): one
 * loop serves the connection, the other has nothing to do. Every reload is
 * followed. Before, the watcher waited after each new key set until every
 * loop had begun an iteration, and an idle loop begins none until its next
 * event (up to a minute): a reload in that time was not followed, and
 * /cached kept the older load's answer. */
START_TEST(reloads_are_followed_with_a_loop_idle)
{
    ck_assert_msg(!gen_error[0], "setup: %s", gen_error);
    char out[8192], cached[1 << 14], log[1200], why[8192] = "";
    snprintf(log, sizeof log, "%s/idle.log", gdir);
    pid_t pid = fixture_server(gconf, IDLE_PORT, log, "--backends sqlite", why, sizeof why);
    ck_assert_msg(!why[0], "%s", why);
    int fd = -1;
    bool fresh = true;
    double s = 0;
    int round = 0;
    for (; round < 3 && fresh; round++) {
        const char *csv = round % 2 ? ga : gb;
        ck_assert_msg(load_into("sqlite", csv, out, sizeof out) == 0, "loader: %s", out);
        uint64_t t0 = zb_now_ns();
        while (!(fresh = kept_cached_is_fresh(IDLE_PORT, &fd, "sqlite", cached, sizeof cached) &&
                         !strstr(cached, "再読込") == (csv == ga)) &&
               zb_now_ns() - t0 < 10000000000ull)
            usleep(50 * 1000);
        s = (double)(zb_now_ns() - t0) / 1e9;
    }
    if (fd >= 0)
        close(fd);
    int rc = term_server(pid);
    ck_assert_msg(fresh, "round %d: /cached not the last load's %.1f s after it: %.300s", round - 1,
                  s, cached);
    ck_assert_int_eq(rc, 0);
}
END_TEST

/* A reload that brings new codes: POST /update/ takes them (their rows
 * are added to the write table when the generation moves), without a
 * restart. Before, the write table was filled only at start: 404. */
START_TEST(updates_take_the_codes_a_reload_brought)
{
    ck_assert_msg(!gen_error[0], "setup: %s", gen_error);
    char out[8192], body[1 << 14], path[128];
    ck_assert_msg(load_gen(gc, out, sizeof out) == 0, "loader: %s", out);
    for (int b = 0; b < NPOSTAL; b++) {
        uint64_t t0 = zb_now_ns();
        int status = -1;
        snprintf(path, sizeof path, "/update/%s/%s", postal[b], gnew);
        while ((status = fetch("POST", path, body, sizeof body)) != 200 &&
               zb_now_ns() - t0 < 10000000000ull)
            usleep(50 * 1000);
        ck_assert_msg(status == 200, "%s: %s: %d %.300s", postal[b], path, status, body);
    }
}
END_TEST

Suite *suite_reload(void)
{
    TCase *t = test_case("reload", setup, teardown, 120, TESTS(reload_with_changed_types_under_load));
    TCase *k = test_case("keys", keys_setup, keys_teardown, 120, TESTS(random_follows_a_reload));
    TCase *g = test_case("generation", gen_setup, gen_teardown, 180, TESTS(
        cached_follows_reloads_of_the_same_size, reloads_are_followed_with_a_loop_idle,
        updates_take_the_codes_a_reload_brought));
    return suite_of("reload", t, k, g, NULL);
}
