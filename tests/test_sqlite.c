/* SQLite served while it is written: the server reads the file the loader
 * writes, in the same directory, with no database server between them.
 * A loader killed at any moment (SIGKILL: no cleanup of its own) must
 * leave a file the server goes on reading; so must a writer of another
 * kind (one that keeps a rollback journal) killed mid-transaction. And
 * SQLite's lock, which lookups run inline in a loop may meet, must hold up
 * no other backend served by that loop.
 *
 * A generated set is loaded into a SQLite file of the test's own and into
 * a pg table; each test serves it from a child server of its own on PORT
 * (a test config). The database script is $ZB_DB (scripts/db). */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
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
static pid_t serve_with(const char *args)
{
    char all[1024];
    snprintf(all, sizeof all, "--backends sqlite,pg %s", args);
    pid_t pid = fixture_server(conf, PORT, logfile, all, server_error, sizeof server_error);
    ck_assert_msg(!server_error[0], "%s", server_error);
    char out[8192], listening[64];
    snprintf(listening, sizeof listening, "listening on 127.0.0.1:%d,", PORT);
    usleep(100 * 1000);
    run_cmd(out, sizeof out, "cat '%s'", logfile);
    ck_assert_msg(waitpid(pid, NULL, WNOHANG) == 0 && strstr(out, listening),
                  "our server on %d did not start: %s", PORT, out);
    return pid;
}

static pid_t serve(void) { return serve_with(""); }

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

/* What a lookup may take: 4 times the slowest of NCODES GET /health on
 * this machine now (set_answer_bound: the server's own path, no SQLite),
 * and never under 1 s. A lookup that waited for a lock waits out its
 * acquire_timeout_ms, 2 s. */
static double answer_bound_ms = 1000;

static void set_answer_bound(void)
{
    char raw[16384];
    double slowest = 0;
    for (int i = 0; i < NCODES; i++) {
        double ms;
        ck_assert_int_eq(get("/health", &ms, raw, sizeof raw), 200);
        slowest = ms > slowest ? ms : slowest;
    }
    answer_bound_ms = 4 * slowest > 1000 ? 4 * slowest : 1000;
}

/* Every code answers 200, each within answer_bound_ms; what after says when. */
static void lookups_answer(const char *after)
{
    char path[160], raw[16384];
    for (int i = 0; i < NCODES; i++) {
        double ms;
        snprintf(path, sizeof path, "/zip/sqlite/%s", codes[i]);
        int status = get(path, &ms, raw, sizeof raw);
        ck_assert_msg(status == 200 && ms < answer_bound_ms, "%s: %s: %d after %.0f ms (bound %.0f): %.300s",
                      after, path, status, ms, answer_bound_ms, raw);
    }
}

/* The loader killed (SIGKILL) at random moments of its load, in every
 * mode: after each kill every lookup is answered, 200 within 1 s, and so
 * after a restart of the server. */
START_TEST(killed_loads_leave_the_file_readable)
{
    SETUP_OK();
    pid_t server = serve();
    set_answer_bound();
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
    printf("sqlite: %d loads killed (%d of them mid-load), every lookup after each 200 in < %.0f ms\n",
           KILLS, mid_load, answer_bound_ms);
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
    set_answer_bound();
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

/* GET /zip/sqlite/code sent on a connection of its own, not read yet. */
static int send_request(const char *code)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)PORT) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char req[256];
    int n = snprintf(req, sizeof req, "GET /zip/sqlite/%s HTTP/1.1\r\nHost: x\r\n"
                     "Connection: close\r\n\r\n", code);
    ck_assert_int_eq(write(fd, req, (size_t)n), n);
    return fd;
}

/* The status of the answer on fd (5 s at most), which is closed. */
static int read_status(int fd)
{
    struct timeval tv = { .tv_sec = 5 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char raw[16384];
    size_t got = 0;
    ssize_t r;
    while (got + 1 < sizeof raw && (r = read(fd, raw + got, sizeof raw - 1 - got)) > 0)
        got += (size_t)r;
    raw[got] = 0;
    close(fd);
    return http_status(raw);
}

/* loadgen on backend (keys of the set, keep-alive) at c for secs seconds,
 * in the background: its --json report goes to file. */
static void loadgen_bg(char *cmd, size_t len, const char *backend, int c, int secs,
                       const char *file)
{
    snprintf(cmd, len, "%s -q -k -c %d -t %d -n 10000000 --json --keys %s/g.keys "
             "'http://127.0.0.1:%d/zip/%s/{key}' > %s & ", prog("loadgen"), c, secs, dir, PORT,
             backend, file);
}

/* The slowest answer of a loadgen --json report, in ms (-1 if none). */
static double slowest_ms(const char *report, double *done, double *non2xx)
{
    const char *lat = strstr(report, "\"latency_us\":");
    *done = json_num(report, "completed");
    *non2xx = json_num(report, "non2xx");
    return lat ? json_num(lat, "max") / 1000 : -1;
}

/* pg's slowest answer of a loadgen run of secs seconds at c 10 on the
 * test's server, nothing else going on: what the machine gives now, the
 * yardstick of the bounds below (a busy machine makes it slower). */
static double pg_baseline_ms(int secs)
{
    char file[1200], cmd[4096], out[8192];
    snprintf(file, sizeof file, "%s/lg-pg-baseline.json", dir);
    loadgen_bg(cmd, sizeof cmd, "pg", 10, secs, file);
    size_t n = strlen(cmd);
    snprintf(cmd + n, sizeof cmd - n, "wait; cat '%s'", file);
    run_cmd(out, sizeof out, "%s", cmd);
    double done, bad, ms = slowest_ms(out, &done, &bad);
    ck_assert_msg(done > 0 && bad == 0 && ms >= 0, "pg baseline: %s", out);
    return ms;
}

/* A loop stalled by SQLite's lock holds every answer it owes until the
 * lock goes: a reader that waits inline waits out busy_timeout_ms (2 s),
 * and the lock held below lasts seconds. What no pg answer may pass is
 * set against pg's own slowest answer on this machine now
 * (pg_baseline_ms): twice that, and never under STALL_FLOOR_MS, which a
 * quiet 2-core machine leaves far behind (tens of ms) and a stall passes. */
#define STALL_FLOOR_MS 1000.0

/* SQLite reloaded three times while loadgen runs on pg (c 10) and on
 * SQLite (c 2), served by the same loops: no SQLite lookup fails, and no
 * pg answer waits for SQLite. SQLite lookups meet no lock of the load
 * itself (WAL: readers read their snapshot); at most one a reload may
 * meet the loader's close: when the server's connections were just
 * dropped (the reload renamed the table), the loader is the file's last
 * connection and takes its lock for a moment to checkpoint the WAL
 * (SQLite's "Sometimes Queries Return SQLITE_BUSY In WAL Mode"), seen
 * on a busy machine (/stats lock_waits 1, connect_failures 8). */
#define RELOADS 3
START_TEST(a_reload_stalls_no_other_backend)
{
    SETUP_OK();
    pid_t server = serve();
    double bound = 2 * pg_baseline_ms(3);
    bound = bound > STALL_FLOOR_MS ? bound : STALL_FLOOR_MS;
    char pg_file[1200], sq_file[1200], cmd[8192], out[8192];
    snprintf(pg_file, sizeof pg_file, "%s/lg-pg.json", dir);
    snprintf(sq_file, sizeof sq_file, "%s/lg-sqlite.json", dir);
    size_t n;
    loadgen_bg(cmd, sizeof cmd, "pg", 10, 8, pg_file);
    n = strlen(cmd);
    loadgen_bg(cmd + n, sizeof cmd - n, "sqlite", 2, 8, sq_file);
    n = strlen(cmd);
    for (int i = 0; i < RELOADS; i++)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, "sleep 1; %s -q --conf %s --backend sqlite "
                              "--mode %s --dataset %s || echo LOADER FAILED; ", prog("loader"),
                              conf, modes[i % 2], csv);
    snprintf(cmd + n, sizeof cmd - n, "wait");
    int rc = run_cmd(out, sizeof out, "%s", cmd);
    char pg[8192] = "", sq[8192] = "";
    run_cmd(pg, sizeof pg, "cat '%s'", pg_file);
    run_cmd(sq, sizeof sq, "cat '%s'", sq_file);
    double pg_done, pg_bad, sq_done, sq_bad;
    double pg_max = slowest_ms(pg, &pg_done, &pg_bad), sq_max = slowest_ms(sq, &sq_done, &sq_bad);
    char stats[1 << 16];
    double ms;
    int stats_status = get("/stats", &ms, stats, sizeof stats);
    /* Stopped before any check: a failed check leaves no server that
     * holds the file for the next test. */
    int server_rc = term_server(server);
    printf("sqlite: %d reloads under load: pg %.0f answered, slowest %.0f ms (bound %.0f); sqlite %.0f "
           "answered, %.0f not 2xx, slowest %.0f ms\n", RELOADS, pg_done, pg_max, bound, sq_done, sq_bad,
           sq_max);
    fflush(stdout);
    ck_assert_msg(rc == 0 && !strstr(out, "LOADER FAILED"), "exit %d: %s", rc, out);
    ck_assert_int_eq(stats_status, 200);
    const char *sq_stats = strstr(stats, "{\"name\":\"sqlite\"");
    double waits = sq_stats ? json_num(sq_stats, "lock_waits") : -1;
    ck_assert_msg(waits >= 0 && waits <= RELOADS, "sqlite: %g lookups met a lock in %d reloads: %s", waits,
                  RELOADS, stats);
    ck_assert_msg(pg_done > 0 && pg_bad == 0 && pg_max >= 0 && pg_max < bound,
                  "pg: %.0f answered, %.0f not 2xx, slowest %.0f ms (bound %.0f): %s", pg_done, pg_bad,
                  pg_max, bound, pg);
    ck_assert_msg(sq_done > 0 && sq_bad == 0, "sqlite: %.0f answered, %.0f not 2xx: %s", sq_done,
                  sq_bad, sq);
    ck_assert_int_eq(server_rc, 0);
}
END_TEST

/* Opens sqlite_path as a writer that keeps a rollback journal. Leaving WAL
 * mode needs the file to itself: a server of an earlier test may still be
 * closing it, so this waits for that (a condition, 30 s at most). */
static sqlite3 *rollback_writer(void)
{
    sqlite3 *h = NULL;
    ck_assert_int_eq(sqlite3_open(sqlite_path, &h), SQLITE_OK);
    sqlite3_busy_timeout(h, 5000);
    int rc = SQLITE_BUSY;
    for (uint64_t t0 = zb_now_ns(); zb_now_ns() - t0 < 30000000000ull; usleep(50 * 1000))
        if ((rc = sqlite3_exec(h, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL)) != SQLITE_BUSY)
            break;
    ck_assert_msg(rc == SQLITE_OK, "PRAGMA journal_mode = DELETE: %s", sqlite3_errmsg(h));
    return h;
}

/* A writer that keeps a rollback journal holds the file's exclusive lock
 * for a few seconds, as a long commit does: the SQLite lookups meanwhile
 * wait (and are answered once it is gone, within their
 * acquire_timeout_ms, longer here), but off the loop: no pg answer waits
 * for them. The lock is held long enough that a pg answer which waited
 * for it would pass the bound by a second at least. */
START_TEST(a_held_lock_stalls_no_other_backend)
{
    SETUP_OK();
    sqlite3 *h = rollback_writer();
    pid_t server = serve_with("--set sqlite.acquire_timeout_ms=30000");
    double bound = 2 * pg_baseline_ms(2);
    bound = bound > STALL_FLOOR_MS ? bound : STALL_FLOOR_MS;
    /* the lookups below are sent within 1 s of taking the lock */
    double hold_ms = bound + 2000 > 3000 ? bound + 2000 : 3000;
    char pg_file[1200], cmd[8192], out[8192];
    snprintf(pg_file, sizeof pg_file, "%s/lg-pg-lock.json", dir);
    unlink(pg_file);
    int lg_secs = (int)(hold_ms / 1000) + 3;
    loadgen_bg(cmd, sizeof cmd, "pg", 10, lg_secs, pg_file);
    size_t n = strlen(cmd);
    snprintf(cmd + n, sizeof cmd - n, "wait");
    pid_t lg = fork();
    ck_assert_int_ge(lg, 0);
    if (lg == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    /* Once pg's load has begun (its report file is made at its start). */
    struct stat st_lg;
    for (int i = 0; i < 100 && stat(pg_file, &st_lg) != 0; i++)
        usleep(50 * 1000);
    usleep(500 * 1000);
    /* Lookups sent while the lock is held, each on a connection of its
     * own, their answers read once it is gone. */
    ck_assert_msg(sqlite3_exec(h, "BEGIN EXCLUSIVE", NULL, NULL, NULL) == SQLITE_OK, "%s",
                  sqlite3_errmsg(h));
    uint64_t locked = zb_now_ns();
    int fds[4];
    for (int i = 0; i < 4; i++) {
        fds[i] = send_request(codes[i]);
        usleep(200 * 1000);
    }
    double held = (double)(zb_now_ns() - locked) / 1e6;
    if (held < hold_ms)
        usleep((useconds_t)((hold_ms - held) * 1000));
    sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
    int answered = 0;
    for (int i = 0; i < 4; i++)
        answered += read_status(fds[i]) == 200;
    double slowest = (double)(zb_now_ns() - locked) / 1e6;
    sqlite3_close(h);
    int st;
    waitpid(lg, &st, 0);
    char pg[8192] = "";
    run_cmd(pg, sizeof pg, "cat '%s'", pg_file);
    int server_rc = term_server(server);
    double pg_done, pg_bad, pg_max = slowest_ms(pg, &pg_done, &pg_bad);
    printf("sqlite: a %.1f s lock: pg %.0f answered, slowest %.0f ms (bound %.0f); sqlite %d of 4 "
           "answered 200, the last %.0f ms after the lock was taken\n", hold_ms / 1000, pg_done, pg_max,
           bound, answered, slowest);
    fflush(stdout);
    ck_assert_msg(pg_done > 0 && pg_bad == 0 && pg_max >= 0 && pg_max < bound,
                  "pg: %.0f answered, %.0f not 2xx, slowest %.0f ms (bound %.0f): %s", pg_done, pg_bad,
                  pg_max, bound, pg);
    ck_assert_msg(answered == 4, "sqlite: %d of 4 lookups 200 around the lock", answered);
    ck_assert_int_eq(server_rc, 0);
    /* The next load puts the file back in WAL mode. */
    ck_assert_msg(load("sqlite", "bulk", out, sizeof out) == 0, "%s", out);
}
END_TEST

Suite *suite_sqlite(void)
{
    TCase *t = test_case("sqlite", setup, NULL, 240, TESTS(
        killed_loads_leave_the_file_readable, a_hot_journal_is_rolled_back,
        a_reload_stalls_no_other_backend, a_held_lock_stalls_no_other_backend));
    return suite_of("sqlite", t, NULL);
}
