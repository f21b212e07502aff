/* The poolers on loopback, without the lab (scripts/pooler): pgbouncer
 * (transaction pooling) and pgpool-II (connection cache) in front of
 * scripts/db's PostgreSQL, as real servers, and the server's backends
 * pg_bouncer and pg_pool of conf/zipbench.conf through them.
 *
 * The fixture starts the poolers when they are not running (and stops
 * what it started), loads a generated set into a table of its own
 * (zt_pooler, through the pg backend) and starts the server on it with
 * backends pg, pg_bouncer and pg_pool. Checked: every lookup, by every
 * strategy (pooled, pipelined, per request), gives through either pooler
 * what pg gives; nobody gets in without zipbench's password, and the
 * poolers' password files are private; a pooler that stops makes its
 * backend answer 503 at once (no hang) and it serves again once the
 * pooler is back; why pg_bouncer has prepare = no: with named statements,
 * transaction pooling hands the server a connection where "s1" already
 * exists; and the pg driver's several hosts, one of which refuses: every
 * lookup is answered at once. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "helpers.h"
#include "util.h"

#define ROWS 2000
#define PORT test_port(18480)
#define PORT2 test_port(18481)   /* a second server: prepare = yes through pgbouncer; two hosts */
/* Its own table; pg_pool's pool within pgpool-II's children; connects
 * and waits for a connection given 5 s, as a busy shared box can take 2 s
 * for one (these tests are not about timeouts). */
#define LIMITS(b) "--set " b ".connect_timeout_s=5 --set " b ".acquire_timeout_ms=5000 "
#define TABLE "--set pg.table=zt_pooler --set pg_bouncer.table=zt_pooler " \
              "--set pg_pool.table=zt_pooler --set pg_pool.pool_hard_max=8 " \
              LIMITS("pg") LIMITS("pg_bouncer") LIMITS("pg_pool")

static char dir[1024], csv[1100], logfile[1100];
static char setup_error[4096];
static char code[8];               /* a code of the set */
static bool started_poolers;       /* the fixture started them: it stops them */
static pid_t server_pid;
static char out[1 << 15];

static int pooler(const char *args)
{
    return run_cmd(out, sizeof out, "scripts/pooler %s", args);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", test_dir("pooler"));
    snprintf(csv, sizeof csv, "%s/g.csv", dir);
    snprintf(logfile, sizeof logfile, "%s/server.log", dir);
    if (run_cmd(out, sizeof out, "scripts/db start pg > /dev/null && %s --rows %d --seed 15 -o %s",
                prog("gen"), ROWS, csv)) {
        snprintf(setup_error, sizeof setup_error, "scripts/db start pg, gen: %.3000s", out);
        return;
    }
    if (first_code(csv, code, sizeof code, setup_error, sizeof setup_error) < 0)
        return;
    /* pgpool-II serves one client per child: 24 are enough here (the
     * server's pooled connections of a test, at most 8, its per-request
     * ones, psql) and start faster than the default 128. */
    if (pooler("status") != 0) {
        started_poolers = true;
        if (run_cmd(out, sizeof out, "ZB_PGPOOL_CHILDREN=24 scripts/pooler start")) {
            snprintf(setup_error, sizeof setup_error, "scripts/pooler start: %.3000s", out);
            return;
        }
    }
    if (run_cmd(out, sizeof out, "%s -q --conf %s --backend pg " TABLE " --mode bulk --dataset %s",
                prog("loader"), conf_path(), csv)) {
        snprintf(setup_error, sizeof setup_error, "loader: %.3000s", out);
        return;
    }
    server_pid = fixture_server(conf_path(), PORT, logfile, "--backends pg,pg_bouncer,pg_pool " TABLE,
                                setup_error, sizeof setup_error);
}

static void teardown(void)
{
    if (server_pid > 0)
        term_server(server_pid);
    if (started_poolers)
        pooler("stop");
    else
        pooler("start");   /* whatever a test stopped */
    run_cmd(NULL, 0, "eval \"$(scripts/db env)\" && psql -X -q -w -h 127.0.0.1 -c 'DROP TABLE IF "
            "EXISTS zt_pooler' > /dev/null 2>&1");
}

#define SETUP_OK() ck_assert_msg(!setup_error[0], "%s", setup_error)

/* GET path from the server on port: the status, the response in out. */
static int get(int port, const char *path)
{
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", path);
    if (http_exchange(port, req, (size_t)n, out, sizeof out, 15000) < 0)
        return -1;
    return http_status(out);
}

/* loadgen's counts for n requests, c at a time, on path. */
static struct ab_report load(int port, const char *path, int n, int c)
{
    run_cmd(out, sizeof out, "%s -q -s 10 -n %d -c %d 'http://127.0.0.1:%d%s'", prog("loadgen"), n, c,
            port, path);
    return ab_report(out);
}

START_TEST(lookups_through_both_poolers)
{
    SETUP_OK();
    static const char *const backends[] = { "pg", "pg_bouncer", "pg_pool" };
    static const char *const strategies[] = { "pooled", "pipelined", "per-request" };
    char path[256], want[8192] = "";
    for (int b = 0; b < 3; b++)
        for (int s = 0; s < 3; s++) {
            bool per_request = s == 2;
            snprintf(path, sizeof path, "/zip/%s/%s?strategy=%s", backends[b], code, strategies[s]);
            ck_assert_msg(get(PORT, path) == 200, "%s: %s", path, out);
            const char *rows = strstr(out, "\"code\":");
            ck_assert_msg(rows, "%s: %s", path, out);
            if (!want[0])
                snprintf(want, sizeof want, "%s", rows);
            ck_assert_msg(!strcmp(rows, want), "%s: %s\npg: %s", path, rows, want);
            /* Concurrent lookups: pgbouncer hands each transaction to any
             * of its server connections, pgpool-II's children take turns. */
            snprintf(path, sizeof path, "/zip/%s/random?strategy=%s", backends[b], strategies[s]);
            int n = per_request ? 60 : 400;
            struct ab_report k = load(PORT, path, n, per_request ? 4 : 8);
            ck_assert_msg(k.complete == n && !k.failed && !k.non2xx, "%s: %s", path, out);
        }
}
END_TEST

START_TEST(only_zipbench_with_its_password)
{
    SETUP_OK();
    const int ports[] = { env_port("ZB_PGBOUNCER_PORT", 16432), env_port("ZB_PGPOOL_PORT", 19999) };
    for (int i = 0; i < 2; i++) {
        int port = ports[i];
        /* With the password file: in, over TCP and through the socket. */
        ck_assert_msg(run_cmd(out, sizeof out, "PGPASSFILE=build/db/pgpass psql -X -w -h 127.0.0.1 "
                              "-p %d -U zipbench -tAc 'SELECT 1' zipbench", port) == 0 &&
                      !strcmp(out, "1\n"), "port %d: %s", port, out);
        ck_assert_msg(run_cmd(out, sizeof out, "PGPASSFILE=build/db/pgpass psql -X -w -h "
                              "\"$PWD/build/db/pooler/run\" -p %d -U zipbench -tAc 'SELECT 1' zipbench",
                              port) == 0, "port %d, socket: %s", port, out);
        /* A wrong password, no password, or another role: out. */
        ck_assert_msg(run_cmd(out, sizeof out, "PGPASSWORD=wrong psql -X -w -h 127.0.0.1 -p %d "
                              "-U zipbench -tAc 'SELECT 1' zipbench", port) != 0,
                      "port %d let a wrong password in: %s", port, out);
        ck_assert_msg(run_cmd(out, sizeof out, "PGPASSFILE=/dev/null psql -X -w -h 127.0.0.1 -p %d "
                              "-U zipbench -tAc 'SELECT 1' zipbench", port) != 0,
                      "port %d let no password in: %s", port, out);
        ck_assert_msg(run_cmd(out, sizeof out, "PGPASSFILE=build/db/pgpass psql -X -w -h 127.0.0.1 "
                              "-p %d -U postgres -tAc 'SELECT 1' zipbench", port) != 0,
                      "port %d let postgres in: %s", port, out);
    }
    /* Their password files: private, and no trust anywhere. */
    ck_assert_msg(run_cmd(out, sizeof out, "cd build/db/pooler && stat -c '%%a %%n' pgbouncer.users "
                          "pgbouncer.hba pool_passwd pool_hba.conf | grep -v '^600 '; "
                          "grep -lw trust pgbouncer.ini pgbouncer.hba pool_hba.conf pgpool.conf; "
                          "true") == 0 && !out[0], "%s", out);
    /* pgbouncer holds the SCRAM secret, never the password itself. */
    ck_assert_msg(run_cmd(out, sizeof out, "grep -c 'SCRAM-SHA-256\\$' build/db/pooler/pgbouncer.users")
                  == 0 && !strcmp(out, "1\n"), "%s", out);
}
END_TEST

/* A pooler that stops: its backend answers 503 at once, the others go
 * on; back, it serves again. */
START_TEST(a_pooler_that_stops)
{
    SETUP_OK();
    char path[128];
    snprintf(path, sizeof path, "/zip/pg_bouncer/%s", code);
    ck_assert_msg(get(PORT, path) == 200, "%s", out);
    ck_assert_msg(pooler("stop pgbouncer") == 0, "%s", out);
    uint64_t t0 = zb_now_ns();
    for (int persistent = 1; persistent >= 0; persistent--) {
        snprintf(path, sizeof path, "/zip/pg_bouncer/%s?strategy=%s", code,
                 persistent ? "pooled" : "per-request");
        ck_assert_msg(get(PORT, path) == 503, "%s with pgbouncer stopped: %s", path, out);
    }
    double s = (double)(zb_now_ns() - t0) / 1e9;
    ck_assert_msg(s < 10, "the 503s took %.1f s", s);
    snprintf(path, sizeof path, "/zip/pg_pool/%s", code);
    ck_assert_msg(get(PORT, path) == 200, "%s: %s", path, out);
    ck_assert_msg(pooler("start pgbouncer") == 0, "%s", out);
    snprintf(path, sizeof path, "/zip/pg_bouncer/%s", code);
    bool back = false;
    for (int i = 0; i < 50 && !back; i++) {
        back = get(PORT, path) == 200;
        if (!back)
            usleep(100 * 1000);
    }
    ck_assert_msg(back, "pg_bouncer after pgbouncer came back: %s", out);
}
END_TEST

/* A second server on PORT2 with ARGS (and the table), its log NAME.log
 * in the test's directory; its pid, or 0 if it did not start. */
static pid_t second_server(const char *name, const char *args)
{
    char log[1200], all[1024];
    snprintf(log, sizeof log, "%s/%s.log", dir, name);
    snprintf(all, sizeof all, "%s " TABLE, args);
    pid_t pid = spawn_server(conf_path(), PORT2, log, all);
    return await_server(pid, PORT2) ? pid : 0;
}

/* Named statements and transaction pooling: the server's own statement s1
 * stays on pgbouncer's server connection after the transaction, and the
 * next session that gets that connection cannot prepare its s1. Hence
 * prepare = no on [backend pg_bouncer] (unnamed statements). */
START_TEST(named_statements_do_not_pass_pgbouncer)
{
    SETUP_OK();
    pid_t pid = second_server("prepare", "--backends pg_bouncer --set pg_bouncer.prepare=yes");
    ck_assert_msg(pid, "the server with prepare = yes did not start");
    struct ab_report k = load(PORT2, "/zip/pg_bouncer/random?strategy=pooled", 200, 8);
    term_server(pid);
    ck_assert_msg(k.complete == 200 && k.non2xx > 0, "prepare = yes through pgbouncer: every lookup "
                  "answered 200 (%d of %d non-2xx)", k.non2xx, k.complete);
    ck_assert_msg(run_cmd(out, sizeof out, "grep -c 'prepared statement \"s1\"' '%s/prepare.log' "
                          "|| tail -n 5 '%s/prepare.log'", dir, dir) == 0,
                  "the server's log does not say why: %s", out);
}
END_TEST

/* The pg driver's several hosts, on loopback: 127.0.0.2 refuses (nothing
 * listens there), so every connection whose turn it is falls back to
 * 127.0.0.1 within the same asynchronous connect (libpq closes the
 * refused socket and opens the next, often under the same number). Every
 * strategy answers every lookup, and none waits for the connect timeout
 * (2 s; a new connection costs about 50 ms here). */
START_TEST(a_host_that_refuses_is_skipped)
{
    SETUP_OK();
    pid_t pid = second_server("hosts", "--backends pg --set pg.host=127.0.0.2,127.0.0.1");
    ck_assert_msg(pid, "the server with two hosts did not start");
    static const char *const strategies[] = { "pooled", "per-request", "pipelined" };
    char path[128];
    bool ok = true;
    for (int s = 0; s < 3 && ok; s++) {
        snprintf(path, sizeof path, "/zip/pg/random?strategy=%s", strategies[s]);
        int n = s == 1 ? 20 : 100;
        struct ab_report k = load(PORT2, path, n, 4);
        const char *longest = strstr(out, "100%");
        ok = k.complete == n && !k.failed && !k.non2xx && longest && atoi(longest + 4) < 1500;
        if (!ok)
            break;
    }
    term_server(pid);
    ck_assert_msg(ok, "%s: every lookup 200, none as slow as a connect timeout: %s", path, out);
}
END_TEST

Suite *suite_pooler(void)
{
    TCase *t = test_case("pooler", setup, teardown, 120, TESTS(
        lookups_through_both_poolers, only_zipbench_with_its_password, a_pooler_that_stops,
        named_statements_do_not_pass_pgbouncer, a_host_that_refuses_is_skipped));
    return suite_of("pooler", t, NULL);
}
