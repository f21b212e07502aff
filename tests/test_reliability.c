/* Reliability: what test_server.c does not already cover, against the real
 * servers. Percent-encoding and NUL bytes, 10,000 idle connections, slow
 * clients, config errors and bad DSNs, a MariaDB and a PostgreSQL outage
 * under load (loadgen on the failing backend and on SQLite at once), and
 * the loader's connection cut mid-load.
 *
 * A generated set is loaded into sqlite, pg and innodb test tables and
 * served by a child server on PORT from a test config (conf_path() with a
 * 3 s connection_timeout_s and room for 16,000 connections). The figures
 * (rates, 503 latency, recovery times) are printed as "reliability: ..."
 * lines and appended to build/test/reliability/figures.txt; they are the
 * ones in docs/RELIABILITY.md. The database script is $ZB_DB (scripts/db). */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "conf.h"
#include "helpers.h"
#include "kenall.h"
#include "util.h"

#define ROWS 2000
#define PORT test_port(18090)
#define PORT2 test_port(18091)
#define TIMEOUT_S 3       /* connection_timeout_s of the test config */
#define QUERY_TIMEOUT_MS 1000 /* pg and innodb: a frozen database is given up after this */
#define WAIT_LIMIT_MS 2000    /* acquire_timeout_ms and connect_timeout_s of conf/zipbench.conf */
#define IDLE 10000

static char dir[1024], csv[1100], conf[1100], keys[1100], logfile[1100], figures[1100];
static char setup_error[8192];
static char code[8];        /* a code of the set */
static pid_t server_pid;

static const char *db_script(void)
{
    const char *s = getenv("ZB_DB");
    return s && *s ? s : "scripts/db";
}

static void figure(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void figure(const char *fmt, ...)
{
    char line[1024];
    FORMAT_INTO(line, fmt);
    printf("reliability: %s\n", line);
    fflush(stdout);
    FILE *f = fopen(figures, "a");
    if (f) {
        fprintf(f, "%s\n", line);
        fclose(f);
    }
}

/* ---- requests ---- */

static char raw[1 << 17];

/* Status of a raw request to PORT (-1: no answer); the reply stays in raw. */
static int ask_raw(int port, const char *req, size_t len)
{
    raw[0] = 0;
    if (http_exchange(port, req, len, raw, sizeof raw, 10000) <= 0)
        return -1;
    return http_status(raw);
}

static int get_on(int port, const char *path, double *ms)
{
    char req[4096];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
    uint64_t t0 = zb_now_ns();
    int st = ask_raw(port, req, (size_t)n);
    if (ms)
        *ms = (double)(zb_now_ns() - t0) / 1e6;
    return st;
}

static int get(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int get(const char *fmt, ...)
{
    char path[3000];
    FORMAT_INTO(path, fmt);
    return get_on(PORT, path, NULL);
}

static const char *body(void)
{
    const char *b = strstr(raw, "\r\n\r\n");
    return b ? b + 4 : "";
}

/* A number of backend b's block in /stats. */
static double stat_of(const char *b, const char *key)
{
    if (get("/stats") != 200)
        return -1;
    char pat[128];
    snprintf(pat, sizeof pat, "{\"name\":\"%s\"", b);
    return json_num(strstr(body(), pat), key);
}

/* ---- setup ---- */

static int write_conf(void)
{
    char port[16], timeout_s[16], query_ms[16], sqlite[1200];
    snprintf(port, sizeof port, "%d", PORT);
    snprintf(timeout_s, sizeof timeout_s, "%d", TIMEOUT_S);
    snprintf(query_ms, sizeof query_ms, "%d", QUERY_TIMEOUT_MS);
    snprintf(sqlite, sizeof sqlite, "%s/rel.sqlite", dir);
    const struct conf_change changes[] = {
        { "backend myisam", NULL, NULL },
        { "server", "port", port },
        { "server", "connection_timeout_s", timeout_s },
        { "server", "max_connections", "16000" },
        { "backend sqlite", "path", sqlite },
        { "backend sqlite", "table", "zt_rel" },
        { "backend pg", "table", "zt_rel" },
        { "backend pg", "query_timeout_ms", query_ms },
        { "backend innodb", "table", "zt_rel_innodb" },
        { "backend innodb", "query_timeout_ms", query_ms },
        { "*", "table", NULL },              /* the other backends' tables are not ours */
        { "*", "query_timeout_ms", NULL },
        { NULL, NULL, NULL },
    };
    return write_conf_copy(conf, changes, NULL, setup_error, sizeof setup_error);
}

static int load(const char *backend, const char *file, const char *extra, char *out, size_t len)
{
    return run_cmd(out, len, "%s -q --conf %s --backend %s --mode bulk --dataset %s %s",
                   prog("loader"), conf, backend, file, extra ? extra : "");
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", build_path("test/reliability"));
    snprintf(csv, sizeof csv, "%s/g.csv", dir);
    if (fresh_generated_set(dir, csv, ROWS, 11, setup_error, sizeof setup_error) < 0)
        return;
    snprintf(conf, sizeof conf, "%s/rel.conf", dir);
    snprintf(keys, sizeof keys, "%s/g.keys", dir);
    snprintf(logfile, sizeof logfile, "%s/server.log", dir);
    snprintf(figures, sizeof figures, "%s/figures.txt", dir);
    /* The key file for loadgen, and one code. */
    if (write_codes(csv, keys, code, sizeof code, setup_error, sizeof setup_error) < 0)
        return;
    if (write_conf() < 0)
        return;
    run_cmd(NULL, 0, "%s start", db_script());
    char out[4096];
    static const char *const bs[] = { "sqlite", "pg", "innodb" };
    for (int i = 0; i < 3; i++) {
        int rc = load(bs[i], csv, NULL, out, sizeof out);
        if (rc) {
            snprintf(setup_error, sizeof setup_error, "loader %s: exit %d: %s", bs[i], rc, out);
            return;
        }
    }
    server_pid = fixture_server(conf, PORT, logfile, NULL, setup_error, sizeof setup_error);
}

static void teardown(void)
{
    run_cmd(NULL, 0, "%s thaw", db_script());     /* a frozen test that failed midway */
    run_cmd(NULL, 0, "%s start", db_script());
    term_server(server_pid);
    server_pid = 0;
}

#define SETUP_OK() ck_assert_msg(!setup_error[0], "%s", setup_error)

/* ---- bad input ---- */

START_TEST(percent_encoding)
{
    SETUP_OK();
    char enc[64] = "";
    static char want[8192];
    for (int i = 0; i < 7; i++)
        sprintf(enc + strlen(enc), "%%%02X", (unsigned)code[i]);
    ck_assert_int_eq(get("/zip/sqlite/%s", code), 200);
    snprintf(want, sizeof want, "%s", body());
    /* Encoded digits, lower-case hex, an encoded backend name: the same row. */
    ck_assert_msg(get("/zip/sqlite/%s", enc) == 200, "%s: %s", enc, raw);
    ck_assert_str_eq(body(), want);
    ck_assert_int_eq(get("/zip/%%73qlite/%c%%%02x%s", code[0], (unsigned)code[1], code + 2), 200);
    ck_assert_str_eq(body(), want);
    for (int b = 0; b < 3; b++) {
        static const char *const bs[] = { "sqlite", "pg", "innodb" };
        /* Quote, SQL in every encoding, double encoding: 400 from the
         * router, before any SQL; NUL, broken escapes, bytes that are not
         * UTF-8: 400 from the target's rules (strict.c), before the
         * router. */
        const char *bad[] = {
            "%27", "1234567%27", "%27%20OR%20%271%27%3D%271",
            "1%27%3B%20DROP%20TABLE%20zt_rel%3B--", "123456%2D", "%2531%2532%2533%2534%2535%2536%2537",
            "1234567%0A", "%2B123456",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            int st = get("/zip/%s/%s", bs[b], bad[i]);
            ck_assert_msg(st == 400, "%s '%s': %d %s", bs[b], bad[i], st, raw);
            ck_assert_msg(strstr(body(), "7 digits"), "%s", raw);
        }
        static const struct { const char *code, *says; } target[] = {
            { "%00", "%00" }, { "%001234567", "%00" }, { "1234567%00", "%00" },
            { "%", "two hex digits" }, { "%3", "two hex digits" }, { "%G1", "two hex digits" },
            { "123456%", "two hex digits" }, { "%ff%fe", "UTF-8" },
        };
        for (size_t i = 0; i < sizeof target / sizeof target[0]; i++) {
            int st = get("/zip/%s/%s", bs[b], target[i].code);
            ck_assert_msg(st == 400 && strstr(body(), target[i].says), "%s '%s': %d %s", bs[b],
                          target[i].code, st, raw);
        }
        /* Still there, all of it. */
        ck_assert_int_eq(get("/zip/%s/%s", bs[b], code), 200);
    }
    /* Query strings: NUL and junk in values are refused, and so are a
     * parameter the route does not take and one given twice (params.h);
     * empty pieces are harmless. */
    ck_assert_int_eq(get("/zip/sqlite/%s?strategy=%%00", code), 400);
    ck_assert_int_eq(get("/zip/sqlite/%s?strategy=pooled%%00junk", code), 400);
    ck_assert_int_eq(get("/zip/sqlite/random?miss=0.1%%27"), 400);
    ck_assert_int_eq(get("/zip/sqlite/%s?&&=&a&=b&strategy=pooled&strategy=per-request", code), 400);
    ck_assert_msg(strstr(body(), "unknown parameter 'a'"), "%s", raw);
    ck_assert_int_eq(get("/zip/sqlite/%s?&&=&strategy=pooled&strategy=per-request", code), 400);
    ck_assert_msg(strstr(body(), "parameter strategy given twice"), "%s", raw);
    ck_assert_int_eq(get("/zip/sqlite/%s?&&=&&strategy=pooled&", code), 200);
    ck_assert_int_eq(get("/zip/sqlite/random?miss=%%30"), 200);
}
END_TEST

START_TEST(nul_bytes_in_the_raw_request)
{
    SETUP_OK();
    static const struct { const char *req; size_t len; int want; } cases[] = {
#define R(s, w) { s, sizeof s - 1, w }
        /* In the URI: MHD's C string would end at the NUL (a valid code). */
        R("GET /zip/sqlite/1000001\0junk HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400),
        R("GET /zip/sqlite/1000001\0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400),
        R("GET /zip/sqlite/1000001\0HTTP/1.1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400),
        R("GET /zip/sqlite/1000001?strategy=pooled\0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400),
        R("GET /zip/\0sqlite/1000001 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400),
        R("POST /zip/sqlite/1000001\0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400),
        /* In the method, the version, a header name: MHD's own 400. */
        R("GET\0/zip/sqlite/1000001 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400),
        R("GET /zip/sqlite/1000001 HTTP/1.1\0\r\nHost: x\r\nConnection: close\r\n\r\n", 400),
        R("GET /zip/sqlite/1000001 HTTP/1.1\r\nHo\0st: x\r\nConnection: close\r\n\r\n", 400),
#undef R
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = ask_raw(PORT, cases[i].req, cases[i].len);
        ck_assert_msg(st == cases[i].want, "case %zu: %d %.200s", i, st, raw);
    }
    /* A NUL in a header value: libmicrohttpd cuts the value there, so
     * the server refuses it (RFC 9110 5.5; it was served before, the
     * value cut). Nothing but NULs: no request at all, the connection is
     * dropped after connection_timeout_s like an idle one. */
    static const char tail[] = "\0y\r\nConnection: close\r\n\r\n";
    char req[256];
    int n = snprintf(req, sizeof req, "GET /zip/sqlite/%s HTTP/1.1\r\nHost: x", code);
    memcpy(req + n, tail, sizeof tail - 1);
    ck_assert_int_eq(ask_raw(PORT, req, (size_t)n + sizeof tail - 1), 400);
    ck_assert_msg(strstr(body(), "NUL byte in a header line"), "%s", raw);
    ck_assert_int_eq(get("/zip/sqlite/%s", code), 200);
}
END_TEST

/* ---- connections ---- */

static int connect_nb(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Counts the sockets of fds the server has closed (readable with EOF or
 * an error), within wait_ms; each one's flag in closed (NULL: not wanted). */
static int count_closed(int *fds, int n, int wait_ms, bool *closed)
{
    struct pollfd *p = calloc((size_t)n, sizeof *p);
    for (int i = 0; i < n; i++)
        p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
    int count = 0;
    if (poll(p, (nfds_t)n, wait_ms) > 0)
        for (int i = 0; i < n; i++)
            if (p[i].revents) {
                char c;
                if (read(fds[i], &c, 1) <= 0) {
                    count++;
                    if (closed)
                        closed[i] = true;
                }
            }
    free(p);
    return count;
}

START_TEST(ten_thousand_idle_connections)
{
    SETUP_OK();
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    ck_assert_msg(rl.rlim_max >= IDLE + 200, "RLIMIT_NOFILE hard limit %lu < %d",
                  (unsigned long)rl.rlim_max, IDLE + 200);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);

    /* The yardstick: the slowest of 20 requests with no idle connection,
     * on this machine now. */
    double quiet = 0, ms;
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(get_on(PORT, "/zip/sqlite/random", &ms), 200);
        quiet = ms > quiet ? ms : quiet;
    }
    double bound = 4 * quiet > 1000 ? 4 * quiet : 1000;
    static int fds[IDLE];
    static uint64_t opened_at[IDLE];
    uint64_t t0 = zb_now_ns();
    int open = 0;
    for (int i = 0; i < IDLE; i++) {
        opened_at[i] = zb_now_ns();
        fds[i] = connect_nb(PORT);
        ck_assert_msg(fds[i] >= 0, "connection %d: %s", i, strerror(errno));
        open++;
        if (i % 500 == 499)
            usleep(20 * 1000);   /* let the accept queue drain */
    }
    double open_ms = (double)(zb_now_ns() - t0) / 1e6;
    usleep(300 * 1000);
    /* Others are still served while the 10,000 are held, fast: within 4
     * times the slowest before them, 1 s at least. */
    double worst = 0;
    for (int i = 0; i < 20; i++) {
        int st = get_on(PORT, "/zip/sqlite/random", &ms);
        ck_assert_msg(st == 200, "request %d with %d idle connections: %d", i, open, st);
        worst = ms > worst ? ms : worst;
    }
    ck_assert_int_eq(get("/zip/pg/%s", code), 200);
    ck_assert_int_eq(get("/zip/innodb/%s", code), 200);
    ck_assert_msg(worst < bound, "a request took %.0f ms with %d idle connections (bound %.0f)", worst, open,
                  bound);
    /* Closed early: of those idle for less than the timeout yet (on a busy
     * machine the first may reach it while the last are still opened). */
    static bool shut[IDLE];
    memset(shut, 0, sizeof shut);
    count_closed(fds, IDLE, 0, shut);
    uint64_t now = zb_now_ns();
    int early = 0, young = 0;
    for (int i = 0; i < IDLE; i++)
        if (now - opened_at[i] < TIMEOUT_S * 1000000000ull) {
            young++;
            early += shut[i];
        }
    ck_assert_msg(early <= young / 100, "%d of the %d idle connections younger than the timeout closed before it",
                  early, young);
    /* After connection_timeout_s the server has closed them all. */
    uint64_t t1 = zb_now_ns();
    int closed = 0;
    while (closed < IDLE && zb_now_ns() - t1 < (TIMEOUT_S + 8) * 1000000000ull) {
        int c = count_closed(fds, IDLE, 500, NULL);
        closed = c > closed ? c : closed;
    }
    double closed_s = (double)(zb_now_ns() - t0) / 1e9;
    for (int i = 0; i < IDLE; i++)
        close(fds[i]);
    ck_assert_msg(closed == IDLE, "%d of %d idle connections closed after %.1f s", closed, IDLE,
                  closed_s);
    figure("idle: %d connections opened in %.0f ms; 20 requests meanwhile, slowest %.1f ms; "
           "all closed by the server %.1f s after the first (connection_timeout_s %d)",
           IDLE, open_ms, worst, closed_s, TIMEOUT_S);
    ck_assert_int_eq(get("/zip/sqlite/%s", code), 200);
}
END_TEST

START_TEST(slow_clients)
{
    SETUP_OK();
    /* 50 clients each send their request one byte per 100 ms (~5 s, longer
     * than connection_timeout_s, but never idle that long) and 10 stall
     * half way; meanwhile others are answered at once. */
    enum { SLOW = 50, STALL = 10 };
    char req[128];
    int len = snprintf(req, sizeof req, "GET /zip/sqlite/%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                       code);
    int fds[SLOW + STALL];
    for (int i = 0; i < SLOW + STALL; i++) {
        fds[i] = connect_nb(PORT);
        ck_assert_int_ge(fds[i], 0);
    }
    usleep(100 * 1000);
    double worst = 0;
    uint64_t t0 = zb_now_ns();
    for (int pos = 0; pos < len; pos++) {
        for (int i = 0; i < SLOW + STALL; i++)
            if (i < SLOW || pos < len / 2)
                ck_assert_int_eq(send(fds[i], req + pos, 1, MSG_NOSIGNAL), 1);
        double ms;
        int st = get_on(PORT, "/health", &ms);
        ck_assert_msg(st == 200, "/health while slow clients write: %d", st);
        worst = ms > worst ? ms : worst;
        usleep(100 * 1000);
    }
    double send_s = (double)(zb_now_ns() - t0) / 1e9;
    int answered = 0;
    for (int i = 0; i < SLOW; i++) {
        char buf[4096];
        struct pollfd p = { .fd = fds[i], .events = POLLIN };
        ssize_t n = poll(&p, 1, 3000) > 0 ? read(fds[i], buf, sizeof buf - 1) : 0;
        if (n > 12 && !strncmp(buf, "HTTP/1.1 200", 12))
            answered++;
    }
    /* The stalled ones: closed after connection_timeout_s of silence. */
    int stalled_closed = count_closed(fds + SLOW, STALL, (TIMEOUT_S + 3) * 1000, NULL);
    for (int i = 0; i < SLOW + STALL; i++)
        close(fds[i]);
    figure("slow clients: %d sending 1 byte / 100 ms for %.1f s: %d answered 200; %d stalled half "
           "way: %d closed by the server; /health meanwhile: slowest %.1f ms",
           SLOW, send_s, answered, STALL, stalled_closed, worst);
    ck_assert_int_eq(answered, SLOW);
    ck_assert_int_eq(stalled_closed, STALL);
    ck_assert_msg(worst < 1000, "/health took %.0f ms", worst);
}
END_TEST

/* Slowloris: clients that send their header a byte at
 * a time, never idle long enough for connection_timeout_s, each hold a
 * connection slot. With header_timeout_s the whole header has a deadline:
 * they are cut after it, and a client waiting behind them (max_connections
 * taken) gets in and is answered. */
START_TEST(slow_headers_are_cut)
{
    SETUP_OK();
    enum { SLOW = 20 };
    char log[1200], out[8192];
    snprintf(log, sizeof log, "%s/slowloris.log", dir);
    pid_t pid = spawn_server(conf, PORT2, log, "--backends sqlite --set server.header_timeout_s=1 "
                             "--set server.max_connections=20");
    ck_assert_msg(await_server(pid, PORT2), "server did not start");
    usleep(200 * 1000);   /* await_server's connection gone */
    char req[128];
    int len = snprintf(req, sizeof req, "GET /zip/sqlite/%s HTTP/1.1\r\nHost: x\r\nUser-Agent: "
                       "slow\r\n\r\n", code);
    int fds[SLOW];
    double closed_at[SLOW];
    for (int i = 0; i < SLOW; i++) {
        fds[i] = connect_nb(PORT2);
        ck_assert_int_ge(fds[i], 0);
        closed_at[i] = -1;
    }
    uint64_t t0 = zb_now_ns();
    /* A patient client, behind the twenty. */
    double patient_ms = -1;
    int patient = -1, sent = 0, answered = 0;
    for (int pos = 0; pos < len && zb_now_ns() - t0 < 5000000000ull; pos++) {
        for (int i = 0; i < SLOW; i++)
            if (closed_at[i] < 0 && send(fds[i], req + pos, 1, MSG_NOSIGNAL) != 1)
                closed_at[i] = (double)(zb_now_ns() - t0) / 1e9;
        if (pos == 2)
            patient = connect_nb(PORT2);
        if (patient >= 0 && !sent) {
            char full[256];
            int n = snprintf(full, sizeof full, "GET /zip/sqlite/%s HTTP/1.1\r\nHost: x\r\n"
                             "Connection: close\r\n\r\n", code);
            sent = send(patient, full, (size_t)n, MSG_NOSIGNAL) == n;
        }
        usleep(200 * 1000);
        for (int i = 0; i < SLOW; i++) {
            struct pollfd p = { .fd = fds[i], .events = POLLIN };
            char c;
            if (closed_at[i] < 0 && poll(&p, 1, 0) > 0) {
                if (read(fds[i], &c, 1) > 0)
                    answered++;
                closed_at[i] = (double)(zb_now_ns() - t0) / 1e9;
            }
        }
        struct pollfd p = { .fd = patient, .events = POLLIN };
        if (patient >= 0 && patient_ms < 0 && poll(&p, 1, 0) > 0 && read(patient, out, 12) == 12 &&
            !strncmp(out, "HTTP/1.1 200", 12))
            patient_ms = (double)(zb_now_ns() - t0) / 1e6;
    }
    double latest = 0;
    int cut = 0;
    for (int i = 0; i < SLOW; i++) {
        cut += closed_at[i] >= 0;
        latest = closed_at[i] > latest ? closed_at[i] : latest;
        close(fds[i]);
    }
    if (patient >= 0)
        close(patient);
    int st = get_on(PORT2, "/stats", NULL);
    double header_timeouts = json_num(strstr(body(), "\"server\":"), "header_timeouts");
    ck_assert_int_eq(term_server(pid), 0);
    figure("slowloris: %d clients sending a header byte per 200 ms, header_timeout_s 1, "
           "max_connections 20: %d cut (the last %.1f s after they began), %d answered; a client "
           "behind them answered after %.0f ms", SLOW, cut, latest, answered, patient_ms);
    ck_assert_int_eq(st, 200);
    ck_assert_msg(cut == SLOW && answered == 0, "%d of %d cut, %d answered", cut, SLOW, answered);
    ck_assert_msg(latest < 3.5, "the last slow client was cut after %.1f s", latest);
    ck_assert_msg(patient_ms > 0 && patient_ms < 4000, "the patient client: %.0f ms", patient_ms);
    ck_assert_msg(header_timeouts >= SLOW, "header_timeouts %g", header_timeouts);
}
END_TEST

/* ---- configuration ---- */

START_TEST(config_errors)
{
    SETUP_OK();
    char out[8192], path[1200];
    static const struct { const char *name, *text, *want1, *want2; } cases[] = {
        { "syntax.conf", "[server]\nport = 1\nthis is not a pair\n[backend a]\ndriver = sqlite\n",
          ":3:", "syntax" },
        { "key.conf", "[server]\n[backend a]\ndriver = sqlite\ncolour = blue\n", ":4:", "'colour'" },
        { "value.conf", "[server]\nthreads = many\n[backend a]\ndriver = sqlite\n", ":2:", "threads" },
        { "section.conf", "[nonsense]\nx = 1\n", ":2:", "[nonsense]" },
        { "driver.conf", "[backend a]\ndriver = oracle\n", ":2:", "driver" },
        { "engine.conf", "[backend a]\ndriver = mysql\nengine = Aria\n", ":3:", "engine" },
        { "nodriver.conf", "[backend a]\npath = x\n", "[backend a]", "'driver'" },
        { "empty.conf", "", "empty.conf", "no [backend NAME]" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, cases[i].name);
        write_file(path, cases[i].text);
        int rc = run_cmd(out, sizeof out, "%s --conf %s --port %d", prog("server"), path, PORT2);
        ck_assert_msg(rc == 1, "%s: exit %d: %s", cases[i].name, rc, out);
        ck_assert_msg(strstr(out, path) && strstr(out, cases[i].want1) && strstr(out, cases[i].want2),
                      "%s: %s", cases[i].name, out);
        ck_assert_msg(!strstr(out, "Sanitizer") && !strstr(out, "listening"), "%s", out);
    }
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --conf %s/none.conf", prog("server"), dir), 1);
    ck_assert_msg(strstr(out, "none.conf: cannot open"), "%s", out);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --conf %s", prog("server"), dir), 1);
    ck_assert_msg(strstr(out, "cannot open: Is a directory"), "%s", out);
    /* An unknown backend asked for: usage error, named with the file. */
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --conf %s --backends sqlite,oracle --port %d",
                             prog("server"), conf, PORT2), 2);
    ck_assert_msg(strstr(out, "no backend 'oracle'") && strstr(out, conf), "%s", out);
}
END_TEST

START_TEST(bad_dsn_starts_with_the_backend_down)
{
    SETUP_OK();
    char log[1200], out[8192];
    snprintf(log, sizeof log, "%s/baddsn.log", dir);
    pid_t pid = spawn_server(conf, PORT2, log,
                             "--backends sqlite,pg,innodb --set pg.port=1 "
                             "--set innodb.socket=/nonexistent/mysqld.sock --set innodb.port=1");
    ck_assert_msg(await_server(pid, PORT2), "server did not start with bad DSNs");
    double ms;
    ck_assert_int_eq(get_on(PORT2, "/health", &ms), 503);
    ck_assert_msg(strstr(body(), "{\"name\":\"pg\",\"driver\":\"pg\",\"up\":false,\"error\":\"") &&
                  strstr(body(), "{\"name\":\"innodb\",\"driver\":\"mysql\",\"up\":false,\"error\":\"") &&
                  strstr(body(), "{\"name\":\"sqlite\",\"driver\":\"sqlite\",\"up\":true"), "%s", body());
    /* The reasons name no path: the log has them. */
    ck_assert_msg(!strstr(body(), "nonexistent"), "reasons: %s", body());
    run_cmd(out, sizeof out, "grep -c /nonexistent/mysqld.sock '%s'", log);
    ck_assert_msg(atoi(out) >= 1, "the log has no path: %s", out);
    figure("bad DSN: /health %s", body());
    char path[64];
    double worst = 0;
    /* At once: within 4 times the slowest SQLite answer beside them (what
     * this machine gives now), 1 s at least; a wait would be a timeout's. */
    double sqlite_worst = 0;
    for (int i = 0; i < 10; i++) {
        snprintf(path, sizeof path, "/zip/%s/%s", i % 2 ? "pg" : "innodb", code);
        ck_assert_int_eq(get_on(PORT2, path, &ms), 503);
        worst = ms > worst ? ms : worst;
        snprintf(path, sizeof path, "/zip/sqlite/%s", code);
        ck_assert_int_eq(get_on(PORT2, path, &ms), 200);
        sqlite_worst = ms > sqlite_worst ? ms : sqlite_worst;
    }
    double bound = 4 * sqlite_worst > 1000 ? 4 * sqlite_worst : 1000;
    ck_assert_msg(worst < bound, "503 after %.0f ms (bound %.0f)", worst, bound);
    ck_assert_int_eq(term_server(pid), 0);
    run_cmd(out, sizeof out, "cat '%s'", log);
    ck_assert_msg(strstr(out, "backend pg: not available at start") &&
                  strstr(out, "backend innodb: not available at start"), "%s", out);
    ck_assert_msg(!strstr(out, "Sanitizer"), "%s", out);
}
END_TEST

/* ---- outages under load ---- */

struct lg { double rps, completed, failed, non2xx, mean_us, p99_us, max_us; };

static void parse_lg(const char *file, struct lg *l)
{
    char s[8192] = "";
    run_cmd(s, sizeof s, "cat '%s'", file);
    l->rps = json_num(s, "rps");
    l->completed = json_num(s, "completed");
    l->failed = json_num(s, "failed");
    l->non2xx = json_num(s, "non2xx");
    const char *lat = strstr(s, "\"latency_us\":");
    l->mean_us = json_num(lat, "mean");
    l->p99_us = json_num(lat, "p99");
    l->max_us = json_num(lat, "max");
}

/* loadgen on sqlite (as fast as it goes, c 8) and on the failing backend
 * (a steady 300/s, so its fast 503s do not take the CPU from sqlite) for
 * secs, with `during` run after 1 s; results in a and b. */
static void run_pair(const char *victim, int secs, const char *during, struct lg *s, struct lg *v)
{
    char fs[1200], fv[1200], out[8192];
    snprintf(fs, sizeof fs, "%s/lg-sqlite.json", dir);
    snprintf(fv, sizeof fv, "%s/lg-%s.json", dir, victim);
    int rc = run_cmd(out, sizeof out,
                     "%s -q -k -c 8 -t %d --keys %s --json http://127.0.0.1:%d/zip/sqlite/{key} > %s & "
                     "%s -q -k -c 8 -t %d --rate 300 --keys %s --json "
                     "http://127.0.0.1:%d/zip/%s/{key} > %s & %s%s%s wait",
                     prog("loadgen"), secs, keys, PORT, fs, prog("loadgen"), secs, keys, PORT, victim,
                     fv, during ? "sleep 1; " : "", during ? during : "", during ? ";" : "");
    ck_assert_msg(rc == 0, "loadgen: %d %s", rc, out);
    parse_lg(fs, s);
    parse_lg(fv, v);
}

/* Asks victim for the set's code every poll_us until a 200 or limit_ns
 * have passed; returns the last status (raw holds that answer). */
static int await_200(const char *victim, uint64_t limit_ns, useconds_t poll_us)
{
    uint64_t t0 = zb_now_ns();
    int st = 0;
    while (st != 200 && zb_now_ns() - t0 < limit_ns) {
        st = get("/zip/%s/%s", victim, code);
        if (st != 200)
            usleep(poll_us);
    }
    return st;
}

static void outage(const char *db, const char *victim)
{
    char out[4096], cmd[1200];
    /* up (an earlier test may have restarted it: its pool reconnecting) */
    ck_assert_int_eq(await_200(victim, 15000000000ull, 50 * 1000), 200);
    double reconnects0 = stat_of(victim, "reconnects");
    struct lg s0, v0, s1, v1, s2, v2;
    run_pair(victim, 3, NULL, &s0, &v0);
    ck_assert_msg(v0.non2xx == 0 && v0.failed == 0 && s0.failed == 0, "before: %s", victim);

    /* The database stops while loadgen runs. */
    snprintf(cmd, sizeof cmd, "%s stop %s > /dev/null", db_script(), db);
    uint64_t t0 = zb_now_ns();
    run_pair(victim, 4, cmd, &s1, &v1);
    ck_assert_int_ne(run_cmd(out, sizeof out, "%s status %s", db_script(), db), 0);
    /* Down all along. */
    run_pair(victim, 3, NULL, &s2, &v2);
    double down_s = (double)(zb_now_ns() - t0) / 1e9;
    ck_assert_msg(s1.failed == 0 && v1.failed == 0 && s2.failed == 0 && v2.failed == 0,
                  "failed requests: %g %g %g %g", s1.failed, v1.failed, s2.failed, v2.failed);
    ck_assert_msg(v2.non2xx == v2.completed && v2.completed > 0, "%s down: %g of %g not 2xx",
                  victim, v2.non2xx, v2.completed);
    ck_assert_msg(s2.non2xx == 0 && s1.non2xx == 0, "sqlite non-2xx: %g %g", s1.non2xx, s2.non2xx);
    int st = get("/zip/%s/%s", victim, code);
    ck_assert_msg(st == 503 && strstr(raw, "Retry-After: 1"), "%d %s", st, raw);
    /* And one at a time, with no other load: how fast is a 503. */
    double lone_max = 0, lone_sum = 0;
    for (int i = 0; i < 20; i++) {
        double ms;
        char path[64];
        snprintf(path, sizeof path, "/zip/%s/%s", victim, code);
        ck_assert_int_eq(get_on(PORT, path, &ms), 503);
        lone_sum += ms;
        lone_max = ms > lone_max ? ms : lone_max;
    }

    /* Restart: the pool recovers, the server was never restarted. */
    uint64_t t1 = zb_now_ns();
    int rc = run_cmd(out, sizeof out, "%s start %s", db_script(), db);
    ck_assert_msg(rc == 0, "%s start %s: %s", db_script(), db, out);
    uint64_t t2 = zb_now_ns();
    st = await_200(victim, 10000000000ull, 10 * 1000);
    uint64_t t3 = zb_now_ns();
    ck_assert_msg(st == 200, "%s after restart: %d %s", victim, st, raw);
    ck_assert_msg(kill(server_pid, 0) == 0, "the server (pid %d) is gone", (int)server_pid);
    struct lg s3, v3;
    run_pair(victim, 2, NULL, &s3, &v3);
    ck_assert_msg(v3.non2xx == 0 && v3.failed == 0 && v3.completed > 100, "%s after: %g non-2xx of %g",
                  victim, v3.non2xx, v3.completed);
    ck_assert_msg(stat_of(victim, "reconnects") > reconnects0, "no reconnects: %s", body());
    ck_assert_int_eq(get("/health"), 200);

    figure("%s outage (%s stopped under load): before: sqlite %.0f req/s, %s %.0f req/s (rate 300) "
           "p99 %.0f us", db, db, s0.rps, victim, v0.rps, v0.p99_us);
    figure("%s outage: while stopping (4 s): sqlite %.0f req/s, %s %.0f answered, %.0f of them 503, "
           "0 failed, max latency %.0f us", db, s1.rps, victim, v1.completed, v1.non2xx, v1.max_us);
    figure("%s outage: down (3 s): sqlite %.0f req/s (%.0f%% of before), %s %.0f requests all 503, "
           "mean %.0f us p99 %.0f us max %.0f us; down %.1f s in all; alone, one at a time: 503 in "
           "%.2f ms mean, %.2f ms max", db, s2.rps, 100 * s2.rps / s0.rps, victim, v2.completed,
           v2.mean_us, v2.p99_us, v2.max_us, down_s, lone_sum / 20, lone_max);
    figure("%s outage: restart took %.1f s (scripts/db start); first 200 from %s %.0f ms after it "
           "returned; then %s %.0f req/s all 200, sqlite %.0f req/s", db, (double)(t2 - t1) / 1e9,
           victim, (double)(t3 - t2) / 1e6, victim, v3.rps, s3.rps);
    /* sqlite keeps being served. Not a speed target: on a 2-core box its
     * rate beside the outage ranged 49-369% of before in recorded runs; a
     * loop blocked on the dead database would stop it. */
    ck_assert_msg(s2.rps > 0.2 * s0.rps, "sqlite %.0f req/s while %s is down, %.0f before", s2.rps,
                  db, s0.rps);
    /* No 503 waited for a timeout: the gate answers at once. The p99 under
     * load follows the box (1.7 to 280 ms in recorded runs), so the bound is
     * the timeout, not a speed. */
    /* Under load the bound grows with the machine's own slowness: twice
     * SQLite's slowest answer of the same seconds where that is more. */
    double bound_us = 2 * s2.max_us > WAIT_LIMIT_MS * 1000.0 ? 2 * s2.max_us : WAIT_LIMIT_MS * 1000.0;
    ck_assert_msg(v2.max_us < bound_us && lone_max < WAIT_LIMIT_MS,
                  "%s 503 max %.0f us under load (bound %.0f), %.2f ms alone", victim, v2.max_us, bound_us, lone_max);
}

/* A database that hangs instead of going away: its processes stopped, so
 * connections are accepted by the kernel and then nothing answers. Lookups
 * on it get 503 within query_timeout_ms (then connect_timeout_s per probe),
 * the other backends keep being served, and after a thaw the pool recovers. */
static void frozen(const char *db, const char *victim)
{
    char out[4096], cmd[1200];
    /* up (an earlier test may have restarted it: its pool reconnecting) */
    ck_assert_int_eq(await_200(victim, 15000000000ull, 50 * 1000), 200);
    struct lg s0, v0, s1, v1;
    run_pair(victim, 2, NULL, &s0, &v0);
    ck_assert_msg(v0.non2xx == 0 && v0.failed == 0 && s0.failed == 0, "before: %s", victim);
    snprintf(cmd, sizeof cmd, "%s freeze %s > /dev/null", db_script(), db);
    run_pair(victim, 5, cmd, &s1, &v1);
    /* The bound: a lookup that timed out, then a pool connect that did. */
    double bound_us = (QUERY_TIMEOUT_MS + WAIT_LIMIT_MS + 1000) * 1000.0;
    ck_assert_msg(v1.failed == 0 && s1.failed == 0, "failed: %s %g, sqlite %g", victim, v1.failed,
                  s1.failed);
    ck_assert_msg(v1.non2xx > 0 && v1.max_us < bound_us, "%s frozen: %g 503 of %g, max %.0f us",
                  victim, v1.non2xx, v1.completed, v1.max_us);
    ck_assert_msg(s1.non2xx == 0 && s1.completed > 0, "sqlite: %g non-2xx of %g", s1.non2xx,
                  s1.completed);
    double lone_ms;
    char path[64];
    snprintf(path, sizeof path, "/zip/%s/%s", victim, code);
    ck_assert_int_eq(get_on(PORT, path, &lone_ms), 503);

    int rc = run_cmd(out, sizeof out, "%s thaw %s", db_script(), db);
    ck_assert_msg(rc == 0, "thaw: %s", out);
    uint64_t t0 = zb_now_ns();
    int st = await_200(victim, 15000000000ull, 20 * 1000);
    double back_ms = (double)(zb_now_ns() - t0) / 1e6;
    ck_assert_msg(st == 200, "%s after thaw: %d %s", victim, st, raw);
    struct lg s2, v2;
    run_pair(victim, 2, NULL, &s2, &v2);
    ck_assert_msg(v2.non2xx == 0 && v2.failed == 0 && v2.completed > 100, "%s after: %g non-2xx of %g",
                  victim, v2.non2xx, v2.completed);
    figure("%s frozen (SIGSTOP, query_timeout_ms %d): before: sqlite %.0f req/s; frozen 5 s: sqlite "
           "%.0f req/s (%.0f%%), all 2xx; %s %.0f answered, %.0f of them 503, 0 failed, max %.0f ms, "
           "then one alone: 503 in %.1f ms; thawed: first 200 after %.0f ms, then %s %.0f req/s all 200",
           db, QUERY_TIMEOUT_MS, s0.rps, s1.rps, 100 * s1.rps / s0.rps, victim, v1.completed,
           v1.non2xx, v1.max_us / 1000, lone_ms, back_ms, victim, v2.rps);
}

START_TEST(postgres_frozen_under_load) { SETUP_OK(); frozen("pg", "pg"); }
END_TEST

START_TEST(mariadb_frozen_under_load) { SETUP_OK(); frozen("mariadb", "innodb"); }
END_TEST

START_TEST(mariadb_outage_under_load) { SETUP_OK(); outage("mariadb", "innodb"); }
END_TEST

START_TEST(postgres_outage_under_load) { SETUP_OK(); outage("pg", "pg"); }
END_TEST

/* ---- the loader's connection cut mid-load ---- */

static int count_cb(void *arg, int ncols, const char *const *vals, const size_t *lens)
{
    (void)ncols, (void)lens;
    *(long long *)arg = vals[0] ? atoll(vals[0]) : -1;
    return 0;
}

static long long count_rows(const char *backend)
{
    struct zb_conf zc;
    struct zb_err err = { 0 };
    ck_assert_msg(conf_load(&zc, conf, &err) == 0, "%s", err.msg);
    struct backend_conf bc = *conf_backend(&zc, backend);
    bc.table = "zt_rel_cut";
    struct backend b;
    ck_assert_msg(backend_open(&b, &bc, &err) == 0, "%s", err.msg);
    long long n = -1;
    ck_assert_msg(b.drv->query(b.db, "SELECT COUNT(*) FROM zt_rel_cut", 0, NULL, count_cb, &n, NULL,
                               &err) == 0, "%s", err.msg);
    backend_close(&b);
    conf_free(&zc);
    return n;
}

START_TEST(loader_connection_cut_keeps_the_old_table)
{
    SETUP_OK();
    char big[1200], out[8192], args[8192];
    snprintf(big, sizeof big, "%s/big.csv", dir);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --rows 300000 --seed 5 -o %s", prog("gen"), big), 0);
    static const struct { const char *backend, *db; } cases[] = { { "pg", "pg" }, { "innodb", "mariadb" } };
    for (int i = 0; i < 2; i++) {
        const char *b = cases[i].backend;
        char set[64];
        snprintf(set, sizeof set, "--set %s.table=zt_rel_cut", b);
        ck_assert_msg(load(b, csv, set, out, sizeof out) == 0, "%s", out);
        ck_assert_int_eq(count_rows(b), ROWS);
        /* The big load, its server stopped under it after 1 s. */
        snprintf(args, sizeof args,
                 "%s -q --conf %s --backend %s --mode transaction --dataset %s %s > %s/cut-%s.log 2>&1 & "
                 "sleep 1; %s stop %s >/dev/null; wait $!",
                 prog("loader"), conf, b, big, set, dir, b, db_script(), cases[i].db);
        int rc = run_cmd(out, sizeof out, "%s", args);
        ck_assert_int_eq(run_cmd(out, sizeof out, "%s start %s", db_script(), cases[i].db), 0);
        run_cmd(out, sizeof out, "cat %s/cut-%s.log", dir, b);
        ck_assert_msg(rc != 0, "%s: the loader exited 0 although its server was stopped: %s", b, out);
        ck_assert_msg(!strstr(out, "Sanitizer"), "%s", out);
        long long n = count_rows(b);
        figure("loader cut: %s stopped 1 s into a 300000-row transaction load: loader exit %d "
               "(\"%.*s\"), table after restart %lld rows (old: %d)", cases[i].db, rc,
               (int)strcspn(out, "\n"), out, n, ROWS);
        ck_assert_msg(n == ROWS, "%s: %lld rows after the cut, want the old %d", b, n, ROWS);
    }
    /* The server rode it out too. */
    ck_assert_int_eq(get("/zip/pg/%s", code), 200);
}
END_TEST

Suite *suite_reliability(void)
{
    TCase *t = test_case("reliability", setup, teardown, 180, TESTS(
        percent_encoding, nul_bytes_in_the_raw_request, config_errors,
        bad_dsn_starts_with_the_backend_down, slow_clients, slow_headers_are_cut,
        ten_thousand_idle_connections, mariadb_outage_under_load, postgres_outage_under_load,
        postgres_frozen_under_load, mariadb_frozen_under_load,
        loader_connection_cut_keeps_the_old_table));
    return suite_of("reliability", t, NULL);
}
