/* SQLite served while it is written: the server reads the file the loader
 * writes, in the same directory, with no database server between them.
 * A loader killed at any moment (SIGKILL: no cleanup of its own) must
 * leave a file the server goes on reading; so must a writer of another
 * kind (one that keeps a rollback journal) killed mid-transaction.
 *
 * A generated set is loaded into a SQLite file of the test's own and into
 * a pg table; each test serves it from a child server of its own on PORT
 * (a test config). The database script is $ZB_DB (scripts/db). */
#include <check.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "util.h"

#define ROWS 60000
#define PORT test_port(18560)
#define NCODES 10
#define KILLS 20

static char dir[1024], csv[1100], conf[1100], sqlite_path[1100], logfile[1100];
static char setup_error[8192];
static char codes[NCODES][8];
static char server_error[8192];

static const char *const modes[] = { "bulk", "transaction", "prepared", "autocommit" };

/* Runs the loader on backends in mode, its output in out: its exit status. */
static int load(const char *backends, const char *mode, char *out, size_t len)
{
    return run_cmd(out, len, "%s -q --conf %s --backend %s --mode %s --dataset %s", prog("loader"),
                   conf, backends, mode, csv);
}

/* NCODES codes spread over the file. */
static int pick_codes(char *why, size_t len)
{
    char keys[1200], out[NCODES * 16 + 64];
    snprintf(keys, sizeof keys, "%s/g.keys", dir);
    if (write_codes(csv, keys, NULL, 0, why, len) < 0)
        return -1;
    if (run_cmd(out, sizeof out, "awk 'NR %% %d == 1' '%s' | head -%d", ROWS / NCODES, keys,
                NCODES)) {
        snprintf(why, len, "awk: %s", out);
        return -1;
    }
    char *p = out;
    for (int i = 0; i < NCODES; i++) {
        if (sscanf(p, "%7s", codes[i]) != 1) {
            snprintf(why, len, "%s: fewer than %d codes", keys, NCODES);
            return -1;
        }
        p += strcspn(p, "\n") + 1;
    }
    return 0;
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", build_path("test/sqlite"));
    snprintf(csv, sizeof csv, "%s/g.csv", dir);
    snprintf(conf, sizeof conf, "%s/sqlite.conf", dir);
    snprintf(sqlite_path, sizeof sqlite_path, "%s/served.sqlite", dir);
    snprintf(logfile, sizeof logfile, "%s/server.log", dir);
    if (fresh_generated_set(dir, csv, ROWS, 5, setup_error, sizeof setup_error) < 0 ||
        pick_codes(setup_error, sizeof setup_error) < 0)
        return;
    char port[16];
    snprintf(port, sizeof port, "%d", PORT);
    const struct conf_change changes[] = {
        { "server", "port", port },
        { "backend sqlite", "path", sqlite_path },
        { "backend sqlite", "table", "zt_sqlite" },
        { "backend pg", "table", "zt_sqlite_pg" },
        { "*", "table", NULL },
        { NULL, NULL, NULL },
    };
    if (write_conf_copy(conf, changes, NULL, setup_error, sizeof setup_error) < 0)
        return;
    char out[4096];
    int rc = load("sqlite,pg", "bulk", out, sizeof out);
    if (rc)
        snprintf(setup_error, sizeof setup_error, "loader: exit %d: %s", rc, out);
}

#define SETUP_OK() ck_assert_msg(!setup_error[0], "setup: %s", setup_error)

/* The test's server (the child of its own process, so it can wait for
 * it). Another tree's tests may take the port meanwhile: the server must
 * be ours, still running and listening, not merely something answering. */
static pid_t serve(void)
{
    pid_t pid = fixture_server(conf, PORT, logfile, "--backends sqlite,pg", server_error,
                               sizeof server_error);
    ck_assert_msg(!server_error[0], "%s", server_error);
    char out[8192], listening[64];
    snprintf(listening, sizeof listening, "listening on 127.0.0.1:%d,", PORT);
    usleep(100 * 1000);
    run_cmd(out, sizeof out, "cat '%s'", logfile);
    ck_assert_msg(waitpid(pid, NULL, WNOHANG) == 0 && strstr(out, listening),
                  "our server on %d did not start: %s", PORT, out);
    return pid;
}

/* GET path on PORT: its status, the time it took in *ms. */
static int get(const char *path, double *ms, char *raw, size_t len)
{
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                     path);
    uint64_t t0 = zb_now_ns();
    raw[0] = 0;
    http_exchange(PORT, req, (size_t)n, raw, len, 5000);
    *ms = (double)(zb_now_ns() - t0) / 1e6;
    return http_status(raw);
}

/* Every code answers 200, each within 1 s; what after says when. */
static void lookups_answer(const char *after)
{
    char path[160], raw[16384];
    for (int i = 0; i < NCODES; i++) {
        double ms;
        snprintf(path, sizeof path, "/zip/sqlite/%s", codes[i]);
        int status = get(path, &ms, raw, sizeof raw);
        ck_assert_msg(status == 200 && ms < 1000, "%s: %s: %d after %.0f ms: %.300s", after, path,
                      status, ms, raw);
    }
}

/* The loader killed (SIGKILL) at random moments of its load, in every
 * mode: after each kill every lookup is answered, 200 within 1 s, and so
 * after a restart of the server. */
START_TEST(killed_loads_leave_the_file_readable)
{
    SETUP_OK();
    pid_t server = serve();
    srand(20250131);
    int mid_load = 0;
    for (int k = 0; k < KILLS; k++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "exec %s -q --conf %s --backend sqlite --mode %s --dataset %s "
                 ">/dev/null 2>&1", prog("loader"), conf, modes[k % 4], csv);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
            _exit(127);
        }
        usleep((useconds_t)(20000 + rand() % 400000));
        mid_load += waitpid(pid, NULL, WNOHANG) == 0;
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        char after[96];
        snprintf(after, sizeof after, "after kill %d (%s)", k + 1, modes[k % 4]);
        lookups_answer(after);
    }
    printf("sqlite: %d loads killed (%d of them mid-load), every lookup after each 200 in < 1 s\n",
           KILLS, mid_load);
    fflush(stdout);
    ck_assert_msg(mid_load >= KILLS / 2, "only %d of %d kills came mid-load", mid_load, KILLS);
    double ms;
    char raw[16384];
    ck_assert_int_eq(get("/health", &ms, raw, sizeof raw), 200);
    ck_assert_int_eq(term_server(server), 0);
    server = serve();
    lookups_answer("after a restart");
    /* And a load run to its end still works. */
    char out[4096];
    ck_assert_msg(load("sqlite", "bulk", out, sizeof out) == 0, "%s", out);
    lookups_answer("after a whole load");
    ck_assert_int_eq(term_server(server), 0);
}
END_TEST

/* A writer that keeps a rollback journal (not the loader) killed in the
 * middle of a transaction that changed the file, while no server runs: a
 * hot journal. The next server, which opens the file read-only, rolls it
 * back and serves the rows as they were. */
START_TEST(a_hot_journal_is_rolled_back)
{
    SETUP_OK();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        sqlite3 *h;
        if (sqlite3_open(sqlite_path, &h) != SQLITE_OK ||
            sqlite3_exec(h, "PRAGMA journal_mode = DELETE; PRAGMA cache_size = 8; BEGIN; "
                         "DELETE FROM zt_sqlite;", NULL, NULL, NULL) != SQLITE_OK)
            _exit(1);
        kill(getpid(), SIGKILL);   /* mid-transaction: the journal stays, hot */
        _exit(2);
    }
    int st;
    waitpid(pid, &st, 0);
    ck_assert_msg(WIFSIGNALED(st), "the writer exited %d before it was killed", WEXITSTATUS(st));
    char journal[1200];
    snprintf(journal, sizeof journal, "%s-journal", sqlite_path);
    struct stat sj;
    ck_assert_msg(stat(journal, &sj) == 0 && sj.st_size > 0, "no hot journal %s", journal);
    pid_t server = serve();
    lookups_answer("after a hot journal was left");
    double ms;
    char raw[16384];
    ck_assert_int_eq(get("/health", &ms, raw, sizeof raw), 200);
    /* The loader puts the file back in its own journal mode. */
    char out[4096];
    ck_assert_msg(load("sqlite", "bulk", out, sizeof out) == 0, "%s", out);
    lookups_answer("after the next load");
    ck_assert_int_eq(term_server(server), 0);
}
END_TEST

Suite *suite_sqlite(void)
{
    TCase *t = test_case("sqlite", setup, NULL, 240, TESTS(
        killed_loads_leave_the_file_readable, a_hot_journal_is_rolled_back));
    return suite_of("sqlite", t, NULL);
}
