/* loadgen end to end against a tiny HTTP server of our own, run on a
 * thread in the test on an ephemeral 127.0.0.1 port. The server counts
 * connections and logs every path, so the counts loadgen reports can be
 * checked exactly against what was really sent. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "helpers.h"
#include "cli.h"
#include "loadgen.h"

/* ---- the server ---- */
#define LOG_MAX 20000

static struct {
    int lfd, port;
    pthread_t accepter;
    _Atomic int stop, accepted, requests, open_conns;
    bool close_all;                /* answer every request with Connection: close */
    bool serial;                   /* answer on the accepting thread, then close */
    int family;                    /* AF_INET (127.0.0.1) or AF_INET6 (::1) */
    pthread_mutex_t mu;
    char (*log)[64];               /* paths in arrival order */
    int nlog;
    char last_head[4096];          /* the last request's head */
    int backlog;                   /* listen()'s, 1024 unless set (server_start_slow) */
    int accept_after_ms;           /* no accept() before this long after the start */
    _Atomic long body_bytes;       /* request bodies (Content-Length) read */
} srv;

static void log_path(const char *p, size_t n)
{
    pthread_mutex_lock(&srv.mu);
    if (srv.nlog < LOG_MAX) {
        size_t c = n < 63 ? n : 63;
        memcpy(srv.log[srv.nlog], p, c);
        srv.log[srv.nlog][c] = 0;
        srv.nlog++;
    }
    pthread_mutex_unlock(&srv.mu);
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int sendf(int fd, const char *s) { return send_all(fd, s, strlen(s)); }

/* Writes s and closes, corked: the data and the FIN leave in one segment,
 * so they reach the client together, as they do from a busy server. */
static int send_close(int fd, const char *s)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_CORK, &one, sizeof one);
    sendf(fd, s);
    return -1;
}

/* Answers one request; returns 0 to keep the connection, -1 to close it.
 * HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 (ab's)
 * closes unless asked to keep it alive, and then says Keep-Alive. */
static int answer(int fd, const char *req, size_t len)
{
    const char *sp = memchr(req, ' ', len);
    const char *path = sp ? sp + 1 : req;
    const char *pe = memchr(path, ' ', len - (size_t)(path - req));
    size_t pl = pe ? (size_t)(pe - path) : 0;
    log_path(path, pl);
    pthread_mutex_lock(&srv.mu);
    snprintf(srv.last_head, sizeof srv.last_head, "%s", req);
    pthread_mutex_unlock(&srv.mu);
    atomic_fetch_add(&srv.requests, 1);
    bool http10 = pe && !strncmp(pe, " HTTP/1.0\r\n", 11);
    bool keep10 = http10 && strcasestr(req, "Connection: Keep-Alive") != NULL;
    bool close = srv.close_all || strcasestr(req, "Connection: close") != NULL ||
                 (http10 && !keep10);
    const char *conn = close ? "Connection: close\r\n" : keep10 ? "Connection: Keep-Alive\r\n" : "";
    if (!strncmp(req, "HEAD ", 5)) {          /* a length, and no body */
        char h[256];
        snprintf(h, sizeof h, "HTTP/1.1 200 OK\r\nServer: tiny/1.0\r\nContent-Length: 12\r\n%s\r\n",
                 conn);
        return sendf(fd, h) || close ? -1 : 0;
    }
    if (!strncmp(path, "/slow", 5))
        usleep(20000);
    char head[256];
    if (!strncmp(path, "/hang", 5)) {
        while (!atomic_load(&srv.stop))
            usleep(10000);
        return -1;
    }
    /* Misbehaving answers, each followed at once by the server's close. */
    if (!strncmp(path, "/eof10", 6))          /* HTTP/1.0: the body runs to EOF */
        return send_close(fd, "HTTP/1.0 200 OK\r\n\r\nbody");
    if (!strncmp(path, "/short", 6))          /* fewer bytes than Content-Length */
        return send_close(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc");
    if (!strncmp(path, "/twolengths", 11)) {  /* which body is meant? */
        if (sendf(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 12\r\n\r\n"
                      "hello world\n"))
            return -1;
        return close ? -1 : 0;
    }
    if (!strncmp(path, "/garbage", 8))
        return send_close(fd, "garbage");
    if (!strncmp(path, "/chunked", 8)) {
        snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n%s\r\n", conn);
        /* 5 + 16 + 1 = 22 decoded bytes, an extension and a trailer */
        if (sendf(fd, head) || sendf(fd, "5\r\nhello\r\n10;ext=1\r\n0123456789abcdef\r\n") ||
            sendf(fd, "1\r\n!\r\n0\r\nX-Trailer: t\r\n\r\n"))
            return -1;
    } else if (!strncmp(path, "/split", 6)) {
        /* The head in two writes with a pause, so it arrives in two reads. */
        snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nServer: tiny\r\nContent-Len");
        if (sendf(fd, head))
            return -1;
        usleep(2000);
        snprintf(head, sizeof head, "gth: 12\r\n%s\r\nhello", conn);
        if (sendf(fd, head))
            return -1;
        usleep(2000);
        if (sendf(fd, " world\n"))
            return -1;
    } else if (!strncmp(path, "/echo/", 6)) {   /* the path as the body: its length varies */
        snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n%s\r\n%.*s", pl,
                 conn, (int)pl, path);
        if (sendf(fd, head))
            return -1;
    } else if (!strncmp(path, "/503", 4)) {
        snprintf(head, sizeof head,
                 "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n%s\r\nbusy", conn);
        if (sendf(fd, head))
            return -1;
    } else if (!strncmp(path, "/404", 4)) {
        snprintf(head, sizeof head,
                 "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n%s\r\nnot found", conn);
        if (sendf(fd, head))
            return -1;
    } else {
        snprintf(head, sizeof head,
                 "HTTP/1.1 200 OK\r\nServer: tiny/1.0\r\nContent-Length: 12\r\n%s\r\nhello world\n",
                 conn);
        if (sendf(fd, head))
            return -1;
    }
    return close ? -1 : 0;
}

static void *serve_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[16384];
    size_t have = 0;
    for (;;) {
        char *end = have >= 4 ? memmem(buf, have, "\r\n\r\n", 4) : NULL;
        size_t body = 0;
        if (end) {
            size_t len = (size_t)(end - buf) + 4;
            char *cl = memmem(buf, len, "Content-Length: ", 16);
            if (cl)
                body = strtoul(cl + 16, NULL, 10);
        }
        if (end && (size_t)(end - buf) + 4 + body <= have) {
            size_t len = (size_t)(end - buf) + 4;
            buf[len - 1] = 0;  /* the head as a string for strstr; byte was '\n' */
            atomic_fetch_add(&srv.body_bytes, (long)body);
            if (answer(fd, buf, len) < 0)
                break;
            memmove(buf, buf + len + body, have - len - body);
            have -= len + body;
            continue;
        }
        ssize_t k = recv(fd, buf + have, sizeof buf - 1 - have, 0);
        if (k <= 0)
            break;
        have += (size_t)k;
    }
    close(fd);
    atomic_fetch_sub(&srv.open_conns, 1);
    return NULL;
}

static void *accept_loop(void *arg)
{
    (void)arg;
    /* A server slow to accept: with a small backlog, the SYNs past it are
     * dropped and retried by the client's kernel a second later. */
    for (int t = 0; t < srv.accept_after_ms && !atomic_load(&srv.stop); t += 10)
        usleep(10000);
    while (!atomic_load(&srv.stop)) {
        struct pollfd p = { .fd = srv.lfd, .events = POLLIN };
        if (poll(&p, 1, 20) <= 0)
            continue;
        int fd = accept(srv.lfd, NULL, NULL);
        if (fd < 0)
            continue;
        /* Answers go out in pieces (chunked bodies): Nagle would hold each
         * small one back for the client's delayed ACK, 40 ms a time. */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
        atomic_fetch_add(&srv.accepted, 1);
        if (srv.serial) {          /* one request, answered at once: no thread */
            char req[4096];
            ssize_t k = recv(fd, req, sizeof req - 1, 0);
            if (k > 0) {
                req[k] = 0;
                answer(fd, req, (size_t)k);
            }
            close(fd);
            continue;
        }
        atomic_fetch_add(&srv.open_conns, 1);
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, 128 * 1024);
        if (pthread_create(&t, &a, serve_conn, (void *)(intptr_t)fd) != 0) {
            close(fd);
            atomic_fetch_sub(&srv.open_conns, 1);
        }
        pthread_attr_destroy(&a);
    }
    return NULL;
}

static void server_start_with(bool close_all, int family, int backlog, int accept_after_ms)
{
    memset(&srv, 0, sizeof srv);
    srv.backlog = backlog;
    srv.accept_after_ms = accept_after_ms;
    pthread_mutex_init(&srv.mu, NULL);
    srv.log = calloc(LOG_MAX, sizeof *srv.log);
    srv.close_all = close_all;
    srv.family = family;
    srv.lfd = socket(family, SOCK_STREAM, 0);
    ck_assert_int_ge(srv.lfd, 0);
    int one = 1;
    setsockopt(srv.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_storage ss = { 0 };
    socklen_t al;
    if (family == AF_INET6) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
        a6->sin6_family = AF_INET6;
        a6->sin6_addr = in6addr_loopback;
        setsockopt(srv.lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        al = sizeof *a6;
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
        a4->sin_family = AF_INET;
        a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        al = sizeof *a4;
    }
    ck_assert_int_eq(bind(srv.lfd, (struct sockaddr *)&ss, al), 0);
    ck_assert_int_eq(listen(srv.lfd, srv.backlog), 0);
    getsockname(srv.lfd, (struct sockaddr *)&ss, &al);
    srv.port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                        : ((struct sockaddr_in *)&ss)->sin_port);
    ck_assert_int_eq(pthread_create(&srv.accepter, NULL, accept_loop, NULL), 0);
}

static void server_start_on(bool close_all, int family)
{
    server_start_with(close_all, family, 1024, 0);
}

static void server_start(bool close_all) { server_start_on(close_all, AF_INET); }

/* Stops the server; copies its path log into keep (if not NULL) first. */
static int server_stop_log(char (*keep)[64])
{
    atomic_store(&srv.stop, 1);
    pthread_join(srv.accepter, NULL);
    close(srv.lfd);
    /* loadgen has exited, so its connections are closed: let ours end. */
    for (int i = 0; i < 300 && atomic_load(&srv.open_conns) > 0; i++)
        usleep(10000);
    int n = srv.nlog;
    if (keep)
        memcpy(keep, srv.log, (size_t)n * sizeof *keep);
    free(srv.log);
    srv.log = NULL;
    return n;
}

static void server_stop(void) { server_stop_log(NULL); }

/* ---- running loadgen ---- */
static char out[65536];

static int loadgen(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int loadgen(const char *fmt, ...)
{
    char args[4096];
    FORMAT_INTO(args, fmt);
    return run_cmd(out, sizeof out, "%s %s", prog("loadgen"), args);
}

/* loadgen's output for a failure message: its last 3000 bytes (Check
 * refuses longer messages when it does not fork, as under valgrind). */
static const char *out_tail(void)
{
    size_t n = strlen(out);
    return n > 3000 ? out + n - 3000 : out;
}
#define OUT out_tail()

/* The number after "key": in the JSON report (first occurrence). */
static double jnum(const char *key)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(out, pat);
    ck_assert_msg(p != NULL, "no %s in: %s", key, OUT);
    return strtod(p + strlen(pat), NULL);
}

static long jint(const char *key) { return (long)jnum(key); }

/* The number after "key": in text (first occurrence). */
static double num_in(const char *text, const char *key)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    ck_assert_msg(p != NULL, "no %s in: %.2000s", key, text);
    return strtod(p + strlen(pat), NULL);
}

static void check_identity(long n)
{
    ck_assert_int_eq(jint("requests"), n);
    ck_assert_int_eq(jint("completed") + jint("failed"), n);
}

static char keyfile[1100];

/* ---- the tests ---- */
START_TEST(keepalive_counts)
{
    server_start(false);
    int rc = loadgen("-q -k --json -n 500 -c 5 http://127.0.0.1:%d/", srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    check_identity(500);
    ck_assert_int_eq(jint("completed"), 500);
    ck_assert_int_eq(jint("failed"), 0);
    ck_assert_int_eq(jint("non2xx"), 0);
    ck_assert_int_eq(jint("keepalive_requests"), 500);
    ck_assert_int_eq(jint("doc_length"), 12);
    ck_assert_int_eq(jint("bytes_html"), 500 * 12);
    ck_assert_int_eq(atomic_load(&srv.requests), 500);
    /* One connection each, never more; on a busy box the second thread may
     * start when the first has taken every request, so allow fewer. */
    int acc = atomic_load(&srv.accepted);
    ck_assert_int_eq(jint("connections"), acc);
    ck_assert_msg(acc >= 3 && acc <= 5, "%d connections for -c 5 -k", acc);
    ck_assert_ptr_nonnull(strstr(out, "\"server\":\"tiny/1.0\""));
}
END_TEST

START_TEST(no_keepalive_one_connection_per_request)
{
    server_start(false);
    int rc = loadgen("-q --json -n 300 -c 4 http://127.0.0.1:%d/x", srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    check_identity(300);
    ck_assert_int_eq(jint("completed"), 300);
    ck_assert_int_eq(jint("keepalive_requests"), 0);
    ck_assert_int_eq(atomic_load(&srv.requests), 300);
    ck_assert_int_eq(atomic_load(&srv.accepted), 300);
}
END_TEST

START_TEST(non2xx_counted_apart)
{
    server_start(false);
    /* Options after the URL too, as scripts write them. */
    int rc = loadgen("-q -k -n 200 -c 3 http://127.0.0.1:%d/404 --json", srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "a 404 is a completed request: rc %d: %s", rc, OUT);
    check_identity(200);
    ck_assert_int_eq(jint("completed"), 200);
    ck_assert_int_eq(jint("non2xx"), 200);
    ck_assert_int_eq(jint("failed"), 0);
}
END_TEST

START_TEST(chunked_bodies)
{
    server_start(false);
    int rc = loadgen("-q -k --json -n 200 -c 2 http://127.0.0.1:%d/chunked", srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    check_identity(200);
    ck_assert_int_eq(jint("completed"), 200);
    ck_assert_int_eq(jint("bytes_html"), 200 * 22);
    ck_assert_int_eq(jint("length_mismatch"), 0);
    ck_assert_int_le(atomic_load(&srv.accepted), 2);
    ck_assert_int_eq(jint("connections"), atomic_load(&srv.accepted));
}
END_TEST

START_TEST(split_head_across_reads)
{
    server_start(false);
    int rc = loadgen("-q -k --json -n 20 -c 2 http://127.0.0.1:%d/split", srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    check_identity(20);
    ck_assert_int_eq(jint("completed"), 20);
    ck_assert_int_eq(jint("bytes_html"), 20 * 12);
    ck_assert_ptr_nonnull(strstr(out, "\"server\":\"tiny\""));
}
END_TEST

START_TEST(server_closes_every_connection)
{
    server_start(true);
    int rc = loadgen("-q -k --json -n 200 -c 4 http://127.0.0.1:%d/", srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    check_identity(200);
    ck_assert_int_eq(jint("completed"), 200);
    ck_assert_int_eq(jint("failed"), 0);
    ck_assert_int_eq(atomic_load(&srv.requests), 200);
    ck_assert_int_eq(atomic_load(&srv.accepted), 200);
}
END_TEST

START_TEST(timelimit_stops_by_itself)
{
    server_start(false);
    int rc = loadgen("-q -k --json -c 2 -t 1 http://127.0.0.1:%d/", srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    double s = jnum("seconds");
    ck_assert_msg(s >= 0.9 && s < 2.5, "seconds %f", s);
    long done = jint("completed");
    ck_assert_int_gt(done, 100);
    ck_assert_int_eq(jint("requests"), done + jint("failed"));
    ck_assert_int_eq(atomic_load(&srv.requests), done + jint("abandoned"));
}
END_TEST

START_TEST(rate_is_held)
{
    server_start(false);
    int rc = loadgen("-q -k --json -c 4 --rate 400 -t 1 http://127.0.0.1:%d/", srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    long done = jint("completed");
    ck_assert_msg(done >= 360 && done <= 404, "%ld requests in 1 s at --rate 400", done);
    ck_assert_int_eq(atomic_load(&srv.requests), done);
}
END_TEST

/* Below 1 req/s: --rate 0.001 -t 3 reports the run's 3 s as its time
 * taken (not the time to its only response) and a rate to match, and
 * --rate 0.5 prints a target rate of 0.5, not 0. */
START_TEST(rate_below_one)
{
    server_start(false);
    int rc = loadgen("-q -k -c 1 --rate 0.5 -t 1.5 --csv - http://127.0.0.1:%d/", srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    ck_assert_msg(strstr(out, "Complete requests:      1\n"), "one request at 0.5/s in 1.5 s: %s", OUT);
    const char *t = strstr(out, "Time taken for tests:");
    ck_assert_ptr_nonnull(t);
    double secs = strtod(t + strlen("Time taken for tests:"), NULL);
    ck_assert_msg(secs >= 1.49 && secs < 2.5, "time taken %.3f s of a 1.5 s run: %s", secs, OUT);
    ck_assert_msg(strstr(out, "Target rate:            0.5 [#/sec]"), "%s", OUT);
    ck_assert_msg(strstr(out, ",1,1,1,0.5,1,1,0,0,"), "CSV row with rate 0.5: %s", OUT);
}
END_TEST

START_TEST(timeout_fails_requests)
{
    server_start(false);
    int rc = loadgen("-q -k --json -n 2 -c 2 -s 0.3 http://127.0.0.1:%d/hang", srv.port);
    server_stop();
    ck_assert_msg(rc == 1, "rc %d: %s", rc, OUT);
    check_identity(2);
    ck_assert_int_eq(jint("failed"), 2);
    ck_assert_int_eq(jint("failed_timeout"), 2);
}
END_TEST

START_TEST(refused_connects_fail)
{
    server_start(false);
    int port = srv.port;
    server_stop();                 /* nobody listens there now */
    int rc = loadgen("-q --json -n 50 -c 5 http://127.0.0.1:%d/", port);
    ck_assert_msg(rc == 1, "rc %d: %s", rc, OUT);
    check_identity(50);
    ck_assert_int_eq(jint("failed_connect"), 50);
    /* Why, by errno, as ab and wrk say it: in the JSON, the report and on stderr. */
    ck_assert_msg(strstr(out, "\"connect_errno\":{\"ECONNREFUSED\":50}"), "%s", OUT);
    rc = loadgen("-q -n 50 -c 5 http://127.0.0.1:%d/", port);
    ck_assert_msg(rc == 1, "rc %d: %s", rc, OUT);
    char want[128];
    snprintf(want, sizeof want, "loadgen: 50 connects to 127.0.0.1 port %d failed: Connection "
             "refused (ECONNREFUSED) 50\n", port);
    ck_assert_msg(strstr(out, "\nConnect errors:         Connection refused (ECONNREFUSED) 50\n") &&
                  strstr(out, want), "%s", OUT);
}
END_TEST

/* --keys: every key's answer has a length of its own, so ab's Length
 * check (each body against the first one's) is off, as with -l. */
START_TEST(keys_imply_variable_length)
{
    const char *dir = test_dir("loadgen");
    snprintf(keyfile, sizeof keyfile, "%s/lengths.keys", dir);
    write_file(keyfile, "a\nbb\nccc\ndddd\neeeee\nffffff\n");
    server_start(false);
    int rc = loadgen("-k -n 200 -c 2 --keys %s 'http://127.0.0.1:%d/echo/{key}'", keyfile,
                     srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    ck_assert_msg(strstr(out, "Document Length:        Variable\n") &&
                  strstr(out, "Failed requests:        0\nKeep-Alive") &&
                  !strstr(out, "Length: 2xx bodies unlike"), "%s", OUT);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --help", prog("loadgen")), 0);
    ck_assert_msg(strstr(out, "Implies -l"), "%s", OUT);
}
END_TEST

/* 10 requests to path, each answered badly and closed: all 10 failed as
 * `field`, at once, none waiting for -s. */
static void fails_at_once(const char *path, const char *field)
{
    int rc = loadgen("-q --json -n 10 -c 2 -s 2 http://127.0.0.1:%d%s", srv.port, path);
    ck_assert_msg(rc == 1, "rc %d: %s", rc, OUT);
    ck_assert_int_eq(jint(field), 10);
    ck_assert_int_eq(jint("failed_timeout"), 0);
    ck_assert_msg(jnum("seconds") < 1.5, "waited for the timeout: %s", OUT);
}

/* A close that comes with the data raises no edge of its own: loadgen must
 * read on to EOF, or the request waits for -s and is counted a Timeout.
 * Each run is 10 requests, so a fault that shows in most runs cannot pass
 * by luck. */
START_TEST(close_with_the_data)
{
    server_start(false);
    int rc = loadgen("-q --json -n 10 -c 2 -s 2 http://127.0.0.1:%d/eof10", srv.port);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    ck_assert_int_eq(jint("completed"), 10);
    ck_assert_int_eq(jint("bytes_html"), 10 * 4);
    ck_assert_int_eq(jint("failed_timeout"), 0);
    /* A body cut short by the close: a Receive error, at once. */
    fails_at_once("/short", "failed_receive");
    /* Not HTTP at all: an Exception, at once. */
    fails_at_once("/garbage", "failed_exceptions");
    server_stop();
}
END_TEST

/* Thousands of connections: connects come in batches between event
 * handling, so the first answers are read while later connections are
 * still being made, and no request is timed from before the last connect
 * (which at -c 19000 turns answered requests into Timeouts): the fastest
 * request takes a small share of the run, not the whole connect phase. */
START_TEST(many_connections_interleaved)
{
    server_start(false);
    srv.serial = true;
    int rc = loadgen("-q --json -n 4000 -c 4000 http://127.0.0.1:%d/", srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    check_identity(4000);
    ck_assert_int_eq(jint("completed"), 4000);
    ck_assert_int_eq(atomic_load(&srv.requests), 4000);
    const char *lat = strstr(out, "\"latency_us\":");
    ck_assert_ptr_nonnull(lat);
    double min_us = strtod(strstr(lat, "\"min\":") + 6, NULL);
    double run_us = jnum("seconds") * 1e6;
    ck_assert_msg(min_us < run_us / 10, "fastest request %.0f us of a %.0f us run: the answers "
                  "waited for the connects", min_us, run_us);
}
END_TEST

/* How long the connections took to open is reported apart from the
 * latency: a server that accepts nothing for 300 ms behind a backlog of
 * one makes the client's kernel drop SYNs and retry them a second later
 * (its initial retransmission timeout), which the report says. */
START_TEST(slow_ramp_reported)
{
    server_start_with(false, AF_INET, 0, 300);
    int rc = loadgen("-q -k --json --threads 1 -n 60 -c 6 http://127.0.0.1:%d/", srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    const char *o = strstr(out, "\"connections_open\":");
    ck_assert_msg(o != NULL, "no connections_open in: %s", OUT);
    ck_assert_msg(strstr(o, "\"slots\":6,\"opened\":6,"), "%s", OUT);
    double all = strtod(strstr(o, "\"all_open_s\":") + 13, NULL);
    double max = strtod(strstr(o, "\"max\":") + 6, NULL);
    ck_assert_msg(all >= 0.9 && max >= 900, "all open at %.3f s, slowest %.1f ms: %s", all, max, OUT);
    /* Only the connects waited: the requests sent on open connections
     * did not (the fastest is far under the retry). */
    ck_assert_msg(num_in(strstr(out, "\"latency_us\":"), "min") < 300000, "%s", OUT);
    /* The text report's line. */
    server_start(false);
    rc = loadgen("-k -n 20 -c 4 http://127.0.0.1:%d/", srv.port);
    server_stop();
    ck_assert_msg(rc == 0 && strstr(out, "Connections opened:     4 of 4, the last at "), "%s", OUT);
}
END_TEST

/* A -c that the open-file limit cannot hold is refused up front. */
START_TEST(concurrency_beyond_fd_limit)
{
    int rc = run_cmd(out, sizeof out, "ulimit -n 200 && %s -q -n 500 -c 500 http://127.0.0.1:1/",
                     build_path("bin/loadgen"));
    ck_assert_msg(rc == 2, "rc %d: %s", rc, OUT);
    ck_assert_msg(strstr(out, "-c 500 needs") && strstr(out, "limit is 200"), "%s", OUT);
}
END_TEST

/* Exit status: 0 means every request completed, so a
 * run that completed none is not a success; and a response with two
 * different Content-Lengths is malformed, an Exception. */
START_TEST(exit_status_and_two_lengths)
{
    server_start(false);
    /* The one request hangs past -t and its grace: abandoned, none done. */
    int rc = loadgen("-q --json -n 1 -t 0.3 http://127.0.0.1:%d/hang", srv.port);
    ck_assert_msg(rc == 1, "nothing completed, yet rc %d: %s", rc, OUT);
    ck_assert_int_eq(jint("completed"), 0);
    ck_assert_int_eq(jint("abandoned"), 1);
    rc = loadgen("-q -k --json -n 20 -c 2 http://127.0.0.1:%d/twolengths", srv.port);
    server_stop();
    ck_assert_msg(rc == 1, "rc %d: %s", rc, OUT);
    check_identity(20);
    ck_assert_int_eq(jint("failed_exceptions"), 20);
}
END_TEST


/* ---- the response parser (resp.c), framing edge cases ---- */

/* Feeds text to a fresh parser `step` bytes at a time (0: all at once)
 * until it is done or fails; *used is what it consumed. */
static int feed_in(const char *text, bool head, size_t step, struct resp *r, size_t *used)
{
    static char server[64];
    resp_reset(r, head);
    r->server = server;
    r->server_len = sizeof server;
    size_t n = strlen(text), off = 0;
    int rc = R_MORE;
    while (off < n && rc == R_MORE) {
        size_t k = step && n - off > step ? step : n - off, u = 0;
        rc = resp_feed(r, text + off, k, &u);
        off += rc == R_MORE ? k : u;
    }
    *used = off;
    return rc;
}

/* The same verdict and counts whether the bytes come at once, one by one
 * or three at a time. */
static int feed(const char *text, bool head, struct resp *r, size_t *used)
{
    static struct resp other;
    int rc = feed_in(text, head, 0, r, used);
    for (size_t step = 1; step <= 3; step += 2) {
        size_t u2;
        int rc2 = feed_in(text, head, step, &other, &u2);
        ck_assert_msg(rc2 == rc, "'%s': %d at once, %d in %zu-byte pieces", text, rc, rc2, step);
        if (rc != R_ERROR) {
            ck_assert_uint_eq(u2, *used);
            ck_assert_uint_eq(other.body, r->body);
            ck_assert_uint_eq(other.total, r->total);
        }
    }
    return rc;
}

#define H11 "HTTP/1.1 200 OK\r\n"

START_TEST(framing_content_length)
{
    static struct resp r;
    size_t used;
    ck_assert_int_eq(feed(H11 "Content-Length: 5\r\n\r\nhello", false, &r, &used), R_DONE);
    ck_assert_uint_eq(r.body, 5);
    ck_assert_uint_eq(r.total, used);
    /* Bytes after the body are the next response's, not this one's. */
    ck_assert_int_eq(feed(H11 "Content-Length: 2\r\n\r\nhiEXTRA", false, &r, &used), R_DONE);
    ck_assert_uint_eq(used, strlen(H11 "Content-Length: 2\r\n\r\nhi"));
    /* Larger than the body, then the close: not complete. */
    ck_assert_int_eq(feed(H11 "Content-Length: 10\r\n\r\nhello", false, &r, &used), R_MORE);
    ck_assert_int_eq(resp_eof(&r), R_ERROR);
    /* The largest length there is, and one more (overflow). */
    ck_assert_int_eq(feed(H11 "Content-Length: 18446744073709551615\r\n\r\nx", false, &r, &used),
                     R_MORE);
    const char *bad[] = {
        H11 "Content-Length: 18446744073709551616\r\n\r\n",
        H11 "Content-Length: 99999999999999999999999999\r\n\r\n",
        H11 "Content-Length: -1\r\n\r\n",
        H11 "Content-Length: +5\r\n\r\nhello",
        H11 "Content-Length: 5x\r\n\r\nhello",
        H11 "Content-Length: \r\n\r\n",
        H11 "Content-Length: 5, 6\r\n\r\nhello",
        H11 "Content-Length: 5\r\nContent-Length: 12\r\n\r\nhello world\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(feed(bad[i], false, &r, &used) == R_ERROR, "accepted: %s", bad[i]);
    /* Equal values, in a list or twice, are one length (RFC 9110 8.6). */
    ck_assert_int_eq(feed(H11 "Content-Length: 5, 5\r\n\r\nhello", false, &r, &used), R_DONE);
    ck_assert_int_eq(feed(H11 "Content-Length: 5\r\ncontent-length:  5 \r\n\r\nhello", false, &r,
                          &used), R_DONE);
    /* No length, no chunks: the body runs to the close. */
    ck_assert_int_eq(feed(H11 "Server: x\r\n\r\nto the end", false, &r, &used), R_MORE);
    ck_assert_int_eq(resp_eof(&r), R_DONE);
    ck_assert_uint_eq(r.body, 10);
}
END_TEST

START_TEST(framing_chunked)
{
    static struct resp r;
    size_t used;
    const char *te = H11 "Transfer-Encoding: chunked\r\n\r\n";
    char buf[512];
    snprintf(buf, sizeof buf, "%s5;ext=\"a b\"\r\nhello\r\n0\r\nX-Sum: 1\r\nX-More: 2\r\n\r\nNEXT", te);
    ck_assert_int_eq(feed(buf, false, &r, &used), R_DONE);
    ck_assert_uint_eq(r.body, 5);
    ck_assert_uint_eq(used, strlen(buf) - 4);       /* trailers read, NEXT left */
    snprintf(buf, sizeof buf, "%s0\r\n\r\n", te);     /* no trailer */
    ck_assert_int_eq(feed(buf, false, &r, &used), R_DONE);
    /* 15 hex digits fit; 17 overflow 64 bits (2^68). */
    snprintf(buf, sizeof buf, "%sfffffffffffffff\r\nabc", te);
    ck_assert_int_eq(feed(buf, false, &r, &used), R_MORE);
    snprintf(buf, sizeof buf, "%s10000000000000000\r\n", te);
    ck_assert_int_eq(feed(buf, false, &r, &used), R_ERROR);
    const char *bad[] = { "\r\n", "x\r\n", "-1\r\n", "5\r\nhelloXX", "5\r\nhello\r\n;\r\n" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(buf, sizeof buf, "%s%s", te, bad[i]);
        ck_assert_msg(feed(buf, false, &r, &used) == R_ERROR, "accepted chunks '%s'", bad[i]);
    }
    /* Chunked wins over a Content-Length beside it (RFC 9112 6.3). */
    snprintf(buf, sizeof buf, H11 "Content-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n"
             "2\r\nhi\r\n0\r\n\r\n");
    ck_assert_int_eq(feed(buf, false, &r, &used), R_DONE);
    ck_assert_uint_eq(r.body, 2);
}
END_TEST

START_TEST(framing_heads)
{
    static struct resp r;
    size_t used;
    /* Interim 1xx heads are skipped; the final one counts. */
    ck_assert_int_eq(feed("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                          "HTTP/1.1 100 Continue\r\n\r\n" H11 "Content-Length: 2\r\n\r\nhi",
                          false, &r, &used), R_DONE);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(r.body, 2);
    ck_assert_int_eq(feed("HTTP/1.1 101 Switching Protocols\r\n\r\n", false, &r, &used),
                     R_ERROR);
    /* HEAD, 204 and 304 have no body whatever the length says. */
    ck_assert_int_eq(feed(H11 "Content-Length: 100\r\n\r\n", true, &r, &used), R_DONE);
    ck_assert_uint_eq(r.body, 0);
    ck_assert_int_eq(feed("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", false, &r, &used),
                     R_DONE);
    ck_assert_int_eq(feed("HTTP/1.1 304 Not Modified\r\n\r\n", false, &r, &used), R_DONE);
    /* HTTP/1.0 closes unless it says keep-alive. */
    ck_assert_int_eq(feed("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false, &r, &used), R_DONE);
    ck_assert(r.close);
    ck_assert_int_eq(feed("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
                          false, &r, &used), R_DONE);
    ck_assert(!r.close);
    ck_assert_int_eq(feed(H11 "Connection: close\r\nContent-Length: 0\r\n\r\n", false, &r, &used),
                     R_DONE);
    ck_assert(r.close);
    /* Not HTTP: refused at the first bytes, without waiting for a head. */
    ck_assert_int_eq(feed("garbage", false, &r, &used), R_ERROR);
    ck_assert_int_eq(feed("HTTP/2 200\r\n\r\n", false, &r, &used), R_ERROR);
    ck_assert_int_eq(feed("HTTP/1.1 2x0 OK\r\n\r\n", false, &r, &used), R_ERROR);
    /* A head bigger than HEAD_MAX. */
    static char big[HEAD_MAX + 64];
    snprintf(big, sizeof big, H11 "X-Big: ");
    memset(big + strlen(big), 'a', HEAD_MAX);
    ck_assert_int_eq(feed(big, false, &r, &used), R_ERROR);
}
END_TEST

/* Feeds text to a fresh parser in two reads, split at byte k (0: one
 * read); the verdict. */
static int feed_split(const char *text, size_t n, size_t k)
{
    static struct resp r;
    resp_reset(&r, false);
    size_t u = 0;
    int rc = R_MORE;
    if (k)
        rc = resp_feed(&r, text, k, &u);
    if (rc == R_MORE)
        rc = resp_feed(&r, text + k, n - k, &u);
    return rc;
}

/* A head's size limit is the same whether the head comes in one read or
 * split anywhere: at every byte boundary, the verdict of the whole. Heads
 * of HEAD_MAX - 1, HEAD_MAX and HEAD_MAX + 1 bytes, alone and after an
 * interim 103 (each head has the limit). A head of HEAD_MAX + 1 bytes in
 * one read was once accepted, and refused when split. */
START_TEST(head_limit_however_split)
{
    static char text[2 * HEAD_MAX + 256];
    for (int interim = 0; interim <= 1; interim++)
        for (int extra = -1; extra <= 1; extra++) {
            const char *pre = interim ? "HTTP/1.1 103 Early Hints\r\n\r\n" : "";
            const char *tail = "\r\nContent-Length: 2\r\n\r\n";
            int headlen = HEAD_MAX + extra;
            int pad = headlen - (int)strlen(H11 "X-Pad: ") - (int)strlen(tail);
            int n = snprintf(text, sizeof text, "%s" H11 "X-Pad: %*s%shi", pre, pad, "", tail);
            ck_assert_int_eq(n, (int)strlen(pre) + headlen + 2);
            int want = extra <= 0 ? R_DONE : R_ERROR;
            ck_assert_msg(feed_split(text, (size_t)n, 0) == want,
                          "a %d-byte head (HEAD_MAX %d)%s in one read: %d, want %d", headlen,
                          HEAD_MAX, interim ? " after a 103" : "", feed_split(text, (size_t)n, 0),
                          want);
            for (int k = 1; k < n; k++)
                ck_assert_msg(feed_split(text, (size_t)n, (size_t)k) == want,
                              "a %d-byte head (HEAD_MAX %d)%s split at byte %d: %d, want %d",
                              headlen, HEAD_MAX, interim ? " after a 103" : "", k,
                              feed_split(text, (size_t)n, (size_t)k), want);
        }
}
END_TEST

/* With several addresses, the first that accepts is used: ::1 first and
 * only 127.0.0.1 listening, or the other way round. */
START_TEST(every_address_tried)
{
    for (int fam = 0; fam < 2; fam++) {
        server_start_on(false, fam ? AF_INET6 : AF_INET);
        struct target t = { .naddrs = 2 };
        struct sockaddr_in *a4 = (struct sockaddr_in *)&t.addr[fam ? 0 : 1];
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&t.addr[fam ? 1 : 0];
        a4->sin_family = AF_INET;
        a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a4->sin_port = htons((uint16_t)srv.port);
        a6->sin6_family = AF_INET6;
        a6->sin6_addr = in6addr_loopback;
        a6->sin6_port = htons((uint16_t)srv.port);
        t.addrlen[fam ? 0 : 1] = sizeof *a4;
        t.addrlen[fam ? 1 : 0] = sizeof *a6;
        target_pick(&t, 2);
        ck_assert_int_eq(t.chosen, 1);
        ck_assert_int_eq(t.addr[1].ss_family, fam ? AF_INET6 : AF_INET);
        /* And a whole run by name and by IPv6 literal. */
        int rc = fam ? loadgen("-q -k --json -n 20 -c 2 'http://[::1]:%d/'", srv.port)
                     : loadgen("-q -k --json -n 20 -c 2 http://localhost:%d/", srv.port);
        server_stop();
        ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
        ck_assert_int_eq(jint("completed"), 20);
    }
}
END_TEST


/* ---- HdrHistogram logs, merge ---- */

static char node_out[65536];

/* tests/hdrlog/check.mjs on the logs: the reference decoder's view. */
static void reference_read(const char *logs)
{
    const char *dir = getenv("ZB_HDRJS");
    char def[1100];
    if (!dir || !*dir) {
        snprintf(def, sizeof def, "%s", data_path("npm/hdrlog"));
        dir = def;
    }
    int rc = run_cmd(node_out, sizeof node_out, "ZB_HDRJS=%s node tests/hdrlog/check.mjs %s",
                     dir, logs);
    ck_assert_msg(rc == 0, "check.mjs (is hdr-histogram-js installed? make hdrjs): %s", node_out);
}

/* loadgen's own percentiles against the reference decoder's, read from
 * the log: the same to the 0.1 us the JSON prints. */
static void same_percentiles(const char *lg_json, const char *ref)
{
    const char *lat = strstr(lg_json, "\"latency_us\":");
    ck_assert_ptr_nonnull(lat);
    const char *keys[][2] = { { "p50", "p50_us" }, { "p90", "p90_us" }, { "p99", "p99_us" } };
    for (int i = 0; i < 3; i++) {
        double mine = num_in(lat, keys[i][0]), theirs = num_in(ref, keys[i][1]);
        ck_assert_msg(fabs(mine - theirs) <= 0.11, "%s: loadgen %.1f us, hdr-histogram-js %.3f us",
                      keys[i][0], mine, theirs);
    }
}

START_TEST(hdr_log_read_by_reference)
{
    server_start(false);
    const char *dir = test_dir("loadgen-hdr");
    char log[1100];
    snprintf(log, sizeof log, "%s/run.hlog", dir);
    int rc = loadgen("-q -k --json -c 4 -t 2.2 --hdr-log %s http://127.0.0.1:%d/", log,
                     srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    reference_read(log);
    long done = jint("completed");
    ck_assert_int_gt(done, 100);
    ck_assert_int_eq((long)num_in(node_out, "count"), done);
    ck_assert_int_eq((long)num_in(node_out, "tagged"), 4);      /* ab's four tables */
    /* One histogram per interval, as many as the JSON's time series. */
    int n = (int)num_in(node_out, "intervals");
    ck_assert_msg(n >= 3 && n <= 4, "%d intervals in 2.2 s: %s", n, node_out);
    const char *pi = strstr(node_out, "\"per_interval\":[") + 16;
    const char *iv = strstr(out, "\"intervals\":[");
    ck_assert_ptr_nonnull(iv);
    long sum = 0;
    for (int i = 0; i < n; i++) {
        long ref = strtol(pi, (char **)&pi, 10);
        pi++;
        iv = strstr(iv, "\"completed\":");
        ck_assert_ptr_nonnull(iv);
        long mine = strtol(iv + 12, NULL, 10);
        iv += 12;
        ck_assert_msg(mine == ref, "interval %d: %ld in the JSON, %ld in the log", i, mine, ref);
        sum += mine;
    }
    ck_assert_int_eq(sum, done);
    same_percentiles(out, node_out);
}
END_TEST

/* Three agents with one --start-at, one of them on a path that takes
 * 20 ms: `loadgen merge` adds their counts, and its percentiles are those
 * of the summed histograms (the reference decoder adds them too), not an
 * average of the agents'. */
START_TEST(merge_agents)
{
    server_start(false);
    const char *dir = test_dir("loadgen-merge");
    char logs[4000] = "", cmd[6000] = "";
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    /* Time for three agents to start (under valgrind, many seconds). */
    const char *wrap = getenv("ZB_WRAP");
    long long lead = wrap && *wrap ? 60000 : 1500;
    long long at = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000 + lead;
    for (int i = 0; i < 3; i++) {
        char one[1200];
        snprintf(one, sizeof one, "%s/agent%d.hlog", dir, i);
        snprintf(logs + strlen(logs), sizeof logs - strlen(logs), " %s", one);
        snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd),
                 "%s -q -k -c 2 -t 1.5 %s --start-at %lld --hdr-log %s --json "
                 "http://127.0.0.1:%d/%s > %s/agent%d.json & ",
                 prog("loadgen"), i == 2 ? "" : "--rate 400", at, one, srv.port,
                 i == 2 ? "slow" : "", dir, i);
    }
    snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "wait");
    int rc = run_cmd(out, sizeof out, "%s", cmd);
    server_stop();
    ck_assert_msg(rc == 0, "agents: %s", OUT);
    long sum = 0;
    for (int i = 0; i < 3; i++) {
        rc = run_cmd(out, sizeof out, "cat %s/agent%d.json", dir, i);
        ck_assert_int_eq(rc, 0);
        sum += jint("completed");
        double start = jnum("start_epoch_s");
        ck_assert_msg(start >= (double)at / 1000 - 0.002 && start < (double)at / 1000 + 0.3,
                      "agent %d started at %.3f, asked %.3f", i, start, (double)at / 1000);
    }
    rc = loadgen("merge --json%s", logs);
    ck_assert_msg(rc == 0, "merge rc %d: %s", rc, OUT);
    ck_assert_int_eq(jint("completed"), sum);
    ck_assert_int_eq(jint("concurrency"), 6);
    ck_assert_int_eq(jint("agents"), 3);
    double secs = jnum("seconds");
    ck_assert_msg(secs >= 1.5 && secs < 2.5, "merged run of %.3f s", secs);
    reference_read(logs);
    ck_assert_int_eq((long)num_in(node_out, "count"), sum);
    same_percentiles(out, node_out);
    /* The slow agent's 20 ms requests (at most 150 of ~1,350: the fast
     * agents are held to 400 req/s so that share does not hang on how fast
     * the machine is) set the merged p99; an average of the three agents'
     * p99s would be under 20 ms. */
    const char *lat = strstr(out, "\"latency_us\":");
    ck_assert_msg(num_in(lat, "p99") >= 20000 && num_in(lat, "p50") < 20000, "%s", lat);
    /* One --start-at: they started together, and the report says how
     * close; the text report says how many were merged. */
    rc = loadgen("merge --json%s", logs);
    ck_assert_msg(rc == 0 && jnum("start_skew_s") >= 0 && jnum("start_skew_s") < 0.3, "%s", OUT);
    rc = loadgen("merge%s", logs);
    ck_assert_msg(rc == 0 && strstr(out, "Agents merged:          3 (started within "), "%s", OUT);
    ck_assert_msg(!strstr(out, "started 0 ms apart") && !strstr(out, "apart, more than"), "%s", OUT);
    /* An agent that started half a second late: the merged window spans
     * from the first start to the last end, so the skew is given, and
     * warned of (more than 1% of the shortest run). */
    char late[1200];
    snprintf(late, sizeof late, "%s/late.hlog", dir);
    rc = run_cmd(out, sizeof out,
                 "awk '/^#\\[StartTime: / { sub(/[0-9.]+/, sprintf(\"%%.3f\", $2 + 0.5)) } 1' "
                 "%s/agent0.hlog > %s", dir, late);
    ck_assert_msg(rc == 0, "%s", OUT);
    rc = loadgen("merge --json %s/agent1.hlog %s", dir, late);
    double skew = jnum("start_skew_s");
    ck_assert_msg(rc == 0 && skew > 0.4 && skew < 0.8, "skew %.3f: %s", skew, OUT);
    ck_assert_msg(strstr(out, "apart, more than 1% of the shortest run"), "%s", OUT);
    /* --percentiles: HdrHistogram's distribution of the summed histogram,
     * rising to the largest value at 1.0 with every request counted. */
    rc = loadgen("merge --percentiles%s", logs);
    static const char head[] = "       Value     Percentile TotalCount 1/(1-Percentile)\n\n";
    ck_assert_msg(rc == 0 && !strncmp(out, head, sizeof head - 1), "%s", OUT);
    double last_v = -1, last_p = -1;
    int nrows = 0;
    for (const char *l = strstr(out, "\n\n") + 2; *l && *l != '#'; l = strchr(l, '\n') + 1) {
        double v, p;
        ck_assert_msg(sscanf(l, "%lf %lf", &v, &p) == 2 && v >= last_v && p > last_p, "%s", l);
        last_v = v, last_p = p, nrows++;
    }
    ck_assert_msg(last_p == 1.0 && nrows > 20, "%d rows, last %g", nrows, last_p);
    char count_line[80];
    snprintf(count_line, sizeof count_line, "Total count    = %12ld]", sum);
    ck_assert_msg(strstr(out, count_line), "%s", OUT);
    ck_assert_int_eq(loadgen("merge --percentiles --json%s", logs), 2);
    /* A file that is not a whole log: named, with its line. */
    char bad[1200];
    snprintf(bad, sizeof bad, "%s/bad.hlog", dir);
    write_file(bad, "#[Histogram log format version 1.3]\n0.000,1.000,1.0,HISTFnotbase64!\n");
    rc = loadgen("merge %s", bad);
    ck_assert_msg(rc == 2 && strstr(out, "bad.hlog:2:"), "rc %d: %s", rc, OUT);
}
END_TEST

/* ---- ab's flags and report ---- */

/* A report line with its numbers replaced by '#' and its runs of spaces
 * by one: "values aside". */
static void normalize(const char *line, size_t n, char *o, size_t olen)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 2 < olen;) {
        if ((line[i] >= '0' && line[i] <= '9') ||
            (line[i] == '-' && i + 1 < n && line[i + 1] >= '0' && line[i + 1] <= '9')) {
            i++;
            while (i < n && ((line[i] >= '0' && line[i] <= '9') ||
                             (line[i] == '.' && i + 1 < n && line[i + 1] >= '0' && line[i + 1] <= '9')))
                i++;
            o[k++] = '#';
        } else if (line[i] == ' ') {
            while (i < n && line[i] == ' ')
                i++;
            if (k)
                o[k++] = ' ';
        } else {
            o[k++] = line[i++];
        }
    }
    while (k && o[k - 1] == ' ')
        k--;
    o[k] = 0;
}

/* The report's lines from "Server Software:" on, normalized; ab's
 * mean/median warnings (which depend on the values) left out. */
static int report_lines(const char *text, char lines[][200], int max)
{
    const char *p = strstr(text, "Server Software:");
    ck_assert_msg(p != NULL, "no report in: %.3000s", text);
    int n = 0;
    bool skip_next = false;
    while (*p && n < max) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        bool warn = !strncmp(p, "WARNING: The median", 19) || !strncmp(p, "ERROR: The median", 17);
        if (!warn && !skip_next)
            normalize(p, len, lines[n++], sizeof lines[0]);
        skip_next = warn;
        p = e ? e + 1 : p + len;
    }
    return n;
}

static char ab_out[65536];

/* One ab command line through ab and through loadgen: every line of ab's
 * report, field by field, values aside, in loadgen's in the same order. */
static void compare_with_ab(const char *args, int port, const char *path)
{
    int rc = run_cmd(ab_out, sizeof ab_out, "ab %s http://127.0.0.1:%d%s", args, port, path);
    ck_assert_msg(rc == 0, "ab %s: %.3000s", args, ab_out);
    rc = loadgen("%s http://127.0.0.1:%d%s", args, port, path);
    ck_assert_msg(rc == 0, "loadgen %s: rc %d: %s", args, rc, OUT);
    static char a[200][200], l[200][200];
    int na = report_lines(ab_out, a, 200), nl = report_lines(out, l, 200);
    ck_assert_msg(na > 20 && nl >= na, "%d lines from ab, %d from loadgen", na, nl);
    for (int i = 0; i < na; i++)
        ck_assert_msg(!strcmp(a[i], l[i]), "ab %s\nline %d:\n  ab:      '%s'\n  loadgen: '%s'", args,
                      i + 1, a[i], l[i]);
}

START_TEST(ab_report_lines)
{
    server_start(false);
    const char *dir = test_dir("loadgen-ab");
    char body[1100], args[4000], abe[1100], abg[1100], lge[1100], lgg[1100];
    snprintf(body, sizeof body, "%s/body.txt", dir);
    write_file(body, "zip=1000001&backend=pg");
    snprintf(abe, sizeof abe, "%s/ab.csv", dir);
    snprintf(abg, sizeof abg, "%s/ab.tsv", dir);
    snprintf(lge, sizeof lge, "%s/lg.csv", dir);
    snprintf(lgg, sizeof lgg, "%s/lg.tsv", dir);
    const char *common = "-q -n 40 -c 2 -k -T application/x-www-form-urlencoded -C a=b -C c=d "
                         "-A user:pass -H 'X-Test: 1' -l -r";
    /* ab writes its -e and -g files, then loadgen its own. */
    snprintf(args, sizeof args, "%s -p %s -e %s -g %s", common, body, abe, abg);
    int rc = run_cmd(ab_out, sizeof ab_out, "ab %s http://127.0.0.1:%d/post", args, srv.port);
    ck_assert_msg(rc == 0, "ab: %.3000s", ab_out);
    long before = atomic_load(&srv.body_bytes);
    snprintf(args, sizeof args, "%s -p %s -e %s -g %s", common, body, lge, lgg);
    compare_with_ab(args, srv.port, "/post");
    /* loadgen sent each body whole, and ab's headers its way. */
    ck_assert_int_eq(atomic_load(&srv.body_bytes) - before, 40 * 22);
    pthread_mutex_lock(&srv.mu);
    bool heads = strstr(srv.last_head, "POST /post HTTP/1.1\r\n") &&
                 strstr(srv.last_head, "Cookie: a=b; c=d\r\n") &&
                 strstr(srv.last_head, "Authorization: Basic dXNlcjpwYXNz\r\n") &&
                 strstr(srv.last_head, "Content-Type: application/x-www-form-urlencoded\r\n") &&
                 strstr(srv.last_head, "Content-Length: 22\r\n") && strstr(srv.last_head, "X-Test: 1\r\n");
    pthread_mutex_unlock(&srv.mu);
    ck_assert_msg(heads, "request head: %s", srv.last_head);
    /* -e and -g: ab's header lines and as many lines as ab's. */
    for (int f = 0; f < 2; f++) {
        char a[8192], b[8192];
        ck_assert_int_eq(run_cmd(a, sizeof a, "head -1 %s; wc -l < %s", f ? abg : abe, f ? abg : abe), 0);
        ck_assert_int_eq(run_cmd(b, sizeof b, "head -1 %s; wc -l < %s", f ? lgg : lge, f ? lgg : lge), 0);
        ck_assert_msg(!strcmp(a, b), "-%c: ab '%s', loadgen '%s'", f ? 'g' : 'e', a, b);
    }
    /* HEAD, -S (no sd, no warnings) and -d (no percentile table). */
    compare_with_ab("-q -n 20 -c 2 -i -S -d", srv.port, "/");
    ck_assert_ptr_null(strstr(out, "Percentage of the requests"));
    ck_assert_ptr_nonnull(strstr(out, "              min   avg   max\n"));
    server_stop();
}
END_TEST

/* -X, -m, -u, -v, -B on the tiny server. */
START_TEST(request_flags)
{
    server_start(false);
    /* Through a "proxy": the request line holds the URL; the URL's own host
     * is never looked up. */
    int rc = loadgen("-q --json -n 3 -X 127.0.0.1:%d http://origin.invalid/x?y=1", srv.port);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    pthread_mutex_lock(&srv.mu);
    bool proxied = !strncmp(srv.last_head, "GET http://origin.invalid/x?y=1 HTTP/1.1\r\n", 42) &&
                   strstr(srv.last_head, "Host: origin.invalid\r\n");
    pthread_mutex_unlock(&srv.mu);
    ck_assert_msg(proxied, "%s", srv.last_head);
    const char *dir = test_dir("loadgen-flags");
    char body[1100];
    snprintf(body, sizeof body, "%s/put.txt", dir);
    write_file(body, "12345");
    long before = atomic_load(&srv.body_bytes);
    rc = loadgen("-q --json -n 4 -c 2 -m PATCH -u %s -B 127.0.0.1 http://127.0.0.1:%d/", body,
                 srv.port);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    ck_assert_int_eq(atomic_load(&srv.body_bytes) - before, 4 * 5);
    pthread_mutex_lock(&srv.mu);
    bool patch = !strncmp(srv.last_head, "PATCH / HTTP/1.1\r\n", 18);
    pthread_mutex_unlock(&srv.mu);
    ck_assert_msg(patch, "%s", srv.last_head);
    rc = loadgen("-q -n 2 -v 2 http://127.0.0.1:%d/404", srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    ck_assert_msg(strstr(out, "INFO: GET header == \n---\nGET /404 HTTP/1.1\r\n") &&
                  strstr(out, "LOG: header received:\nHTTP/1.1 404 Not Found") &&
                  strstr(out, "WARNING: Response code not 2xx (404)"), "%s", OUT);
}
END_TEST

/* ---- HTTPS, against nginx (scripts/nginx) ---- */

START_TEST(https_nginx)
{
    /* Started here (with a certificate made now) unless already running;
     * stopped at the end only if started here. */
    bool ours = run_cmd(NULL, 0, "scripts/nginx status") != 0;
    char cert[1100];
    snprintf(cert, sizeof cert, "%s", build_path("nginx/tls/cert.pem"));
    if (ours)
        run_cmd(NULL, 0, "rm -rf %s", build_path("nginx/tls"));
    int rc = run_cmd(out, sizeof out, "scripts/nginx start");
    ck_assert_msg(rc == 0, "scripts/nginx start: %s", OUT);
    char url[128], url_ip[128];
    int tls_port = env_port("ZB_NGINX_TLS_PORT", 8443);
    snprintf(url, sizeof url, "https://localhost:%d/400.html", tls_port);
    snprintf(url_ip, sizeof url_ip, "https://127.0.0.1:%d/400.html", tls_port);
    /* A full handshake per connection, as ab; the report names protocol
     * and cipher. */
    rc = loadgen("-q --json -n 40 -c 4 %s", url);
    bool ok = rc == 0 && jint("completed") == 40 && jint("handshakes") == 40 &&
              jint("resumed") == 0 && strstr(out, "\"protocol\":\"TLSv1.3,TLS_") &&
              strstr(out, "\"server_name\":\"localhost\"");
    /* Keep-alive: one handshake per connection. */
    if (ok) {
        rc = loadgen("-q -k --json -n 200 -c 4 %s", url);
        ok = rc == 0 && jint("completed") == 200 && jint("handshakes") <= 4;
    }
    /* --tls-resume: sessions resumed after the first. */
    if (ok) {
        rc = loadgen("-q --json --tls-resume -n 30 -c 1 %s", url);
        ok = rc == 0 && jint("completed") == 30 && jint("resumed") >= 25;
    }
    /* --cacert: verified, by name and by address (the certificate has both). */
    if (ok) {
        rc = loadgen("-q --json -n 10 -c 2 --cacert %s %s", cert, url);
        ok = rc == 0 && jint("completed") == 10;
    }
    if (ok) {
        rc = loadgen("-q --json -n 10 -c 2 --cacert %s %s", cert, url_ip);
        ok = rc == 0 && jint("completed") == 10;
    }
    /* --verify against the system's store: a self-signed certificate fails
     * every connect, and says why. */
    if (ok) {
        rc = loadgen("-q --json -n 5 --verify %s", url);
        ok = rc == 1 && jint("failed_connect") == 5 && strstr(out, "certificate verify failed");
    }
    /* ab's text lines for TLS. */
    if (ok) {
        rc = loadgen("-q -n 5 %s", url);
        ok = rc == 0 && strstr(out, "SSL/TLS Protocol:       TLSv1.3,") &&
             strstr(out, "Server Temp Key:        ") &&
             strstr(out, "TLS Server Name:        localhost\n") && strstr(out, "TLS handshakes:");
    }
    if (ours)
        run_cmd(NULL, 0, "scripts/nginx stop");
    ck_assert_msg(ok, "rc %d: %s", rc, OUT);
}
END_TEST

/* ---- keys ---- */

static void make_keys(void)
{
    const char *dir = test_dir("loadgen");
    snprintf(keyfile, sizeof keyfile, "%s/keys.txt", dir);
    char text[50 * 9 + 1] = "";
    for (int i = 0; i < 50; i++) {
        char k[16];
        snprintf(k, sizeof k, "%07d\n", 1000000 + i * 7919);
        strcat(text, k);
    }
    write_file(keyfile, text);
}

static int in_keys(const char *key)
{
    for (int i = 0; i < 50; i++) {
        char k[16];
        snprintf(k, sizeof k, "%07d", 1000000 + i * 7919);
        if (!strcmp(k, key))
            return 1;
    }
    return 0;
}

/* Runs loadgen with keys; copies the server's path log into paths. */
static int run_keys(char (*paths)[64], const char *extra)
{
    server_start(false);
    int rc = loadgen("-q -k --json %s --keys %s 'http://127.0.0.1:%d/zip/{key}'", extra, keyfile,
                     srv.port);
    int n = server_stop_log(paths);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    return n;
}

static int cmp_path(const void *a, const void *b) { return strcmp(a, b); }

START_TEST(seed_repeatable)
{
    make_keys();
    static char a[LOG_MAX][64], b[LOG_MAX][64], c[LOG_MAX][64], d[LOG_MAX][64];
    int na = run_keys(a, "-n 300 -c 1 --seed 7");
    int nb = run_keys(b, "-n 300 -c 1 --seed 7");
    int nc = run_keys(c, "-n 300 -c 1 --seed 8");
    int nd = run_keys(d, "-n 300 -c 6 --threads 3 --seed 7");
    ck_assert_int_eq(na, 300);
    ck_assert_int_eq(nb, 300);
    ck_assert_int_eq(nc, 300);
    ck_assert_int_eq(nd, 300);
    int same = 0;
    for (int i = 0; i < 300; i++) {
        ck_assert_msg(!strcmp(a[i], b[i]), "request %d: %s vs %s", i, a[i], b[i]);
        ck_assert_msg(!strncmp(a[i], "/zip/", 5) && in_keys(a[i] + 5), "path %s", a[i]);
        same += !strcmp(a[i], c[i]);
    }
    ck_assert_msg(same < 60, "seed 8 repeats seed 7's keys (%d of 300)", same);
    /* More connections and threads: the same requests, in another order. */
    qsort(a, 300, sizeof a[0], cmp_path);
    qsort(d, 300, sizeof d[0], cmp_path);
    for (int i = 0; i < 300; i++)
        ck_assert_str_eq(a[i], d[i]);
}
END_TEST

START_TEST(miss_ratio)
{
    make_keys();
    static char p[LOG_MAX][64];
    int n = run_keys(p, "-n 2000 -c 4 --seed 3 --miss 0.25");
    ck_assert_int_eq(n, 2000);
    int miss = 0;
    for (int i = 0; i < n; i++) {
        ck_assert(!strncmp(p[i], "/zip/", 5));
        const char *k = p[i] + 5;
        ck_assert_msg(strlen(k) == 7 || strlen(k) == 8, "miss key shaped like a key: %s", k);
        miss += !in_keys(k);
    }
    ck_assert_msg(miss > 400 && miss < 600, "%d misses of 2000 at --miss 0.25", miss);
    n = run_keys(p, "-n 500 -c 2 --seed 3");
    for (int i = 0; i < n; i++)
        ck_assert_msg(in_keys(p[i] + 5), "a miss without --miss: %s", p[i]);
}
END_TEST

/* A key is sent percent-encoded (every byte but RFC 3986's unreserved),
 * never raw: a key with a bare CR once put a header line of its own into
 * the request, and a space cut the request line. */
START_TEST(keys_percent_encoded)
{
    static const char *const raw[] = { "a b", "x\rX-Injected: yes", "caf\xe9", "50%",
                                       "a/b?c#d", "plain-._~" };
    static const char *const sent[] = { "/zip/a%20b", "/zip/x%0DX-Injected%3A%20yes",
                                        "/zip/caf%E9", "/zip/50%25", "/zip/a%2Fb%3Fc%23d",
                                        "/zip/plain-._~" };
    const size_t nk = sizeof raw / sizeof raw[0];
    const char *dir = test_dir("loadgen");
    snprintf(keyfile, sizeof keyfile, "%s/odd.keys", dir);
    char text[256] = "";
    for (size_t i = 0; i < nk; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s\n", raw[i]);
    write_file(keyfile, text);
    static char p[LOG_MAX][64];
    int n = run_keys(p, "-n 300 -c 2 --seed 5");
    ck_assert_int_eq(n, 300);
    int seen[8] = { 0 };
    for (int i = 0; i < n; i++) {
        size_t j = 0;
        while (j < nk && strcmp(p[i], sent[j]))
            j++;
        ck_assert_msg(j < nk, "request %d asked for '%s': not a key percent-encoded", i, p[i]);
        seen[j]++;
    }
    for (size_t j = 0; j < nk; j++)
        ck_assert_msg(seen[j] > 0, "no request for %s in 300", sent[j]);
    ck_assert_msg(!strstr(srv.last_head, "\r\nX-Injected"), "%s", srv.last_head);
}
END_TEST

/* ---- usage ---- */
START_TEST(bad_flags_exit_2)
{
    const char *bad[] = {
        "--no-such-flag http://127.0.0.1:1/",
        "-n abc http://127.0.0.1:1/",
        "-n 0 http://127.0.0.1:1/",
        "-c 10 -n 5 http://127.0.0.1:1/",
        "-n 5",
        "-n 5 http://127.0.0.1:1/ http://127.0.0.1:2/",
        "-n 5 ftp://127.0.0.1:1/",
        "-n 5 --verify http://127.0.0.1:1/",
        "-n 5 -X 127.0.0.1:3128 https://127.0.0.1:1/",
        "-n 5 -f TLS9 https://127.0.0.1:1/",
        "-n 5 --cacert /nonexistent.pem https://127.0.0.1:1/",
        "-n 5 -i -p /etc/hostname http://127.0.0.1:1/",
        "-n 5 -p /nonexistent http://127.0.0.1:1/",
        "-n 5 -w http://127.0.0.1:1/",
        "-n 5 --start-at 1700000000 http://127.0.0.1:1/",
        "-n 5 --interval 0 http://127.0.0.1:1/",
        "-n 5 --hdr-log /nonexistent/dir/x.hlog http://127.0.0.1:1/",
        "-n 5 http://127.0.0.1:99999/",
        "-n 5 --miss 0.5 http://127.0.0.1:1/",
        "-n 5 --keys /nonexistent/keys 'http://127.0.0.1:1/{key}'",
        "-n 5 'http://127.0.0.1:1/{key}'",
        "-n 5 --rate -3 http://127.0.0.1:1/",
        "-n 5 -H NoColon http://127.0.0.1:1/",
    };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = loadgen("%s", bad[i]);
        ck_assert_msg(rc == 2, "'%s' gave %d: %s", bad[i], rc, OUT);
        ck_assert_msg(strstr(out, "loadgen") != NULL, "'%s' says nothing: %s", bad[i], OUT);
    }
    ck_assert_int_eq(loadgen("--help"), 0);
    ck_assert_ptr_nonnull(strstr(out, "Exit status"));
    ck_assert_int_eq(loadgen("-V"), 0);
    ck_assert_ptr_nonnull(strstr(out, "loadgen"));
}
END_TEST

START_TEST(text_report_and_csv)
{
    server_start(false);
    const char *dir = test_dir("loadgen-csv");
    char csv[1100];
    snprintf(csv, sizeof csv, "%s/r.csv", dir);
    int rc = loadgen("-q -k -n 100 -c 2 --csv %s http://127.0.0.1:%d/404", csv, srv.port);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    rc = loadgen("-q -n 50 -c 2 --csv %s http://127.0.0.1:%d/", csv, srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    const char *want[] = { "Server Software:        tiny/1.0", "Complete requests:      50",
                           "Failed requests:        0", "Requests per second:", "Time per request:",
                           "Transfer rate:", "p99.9", "Client CPU:" };
    for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(out, want[i]) != NULL, "no '%s' in: %s", want[i], OUT);
    char text[4096];
    ck_assert_int_eq(run_cmd(text, sizeof text, "cat %s", csv), 0);
    /* One header, then each run's interval rows and its total row. */
    int headers = 0, totals = 0, intervals = 0;
    for (const char *p = text; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
        headers += !strncmp(p, "interval,url,concurrency,", 25);
        totals += !strncmp(p, "total,", 6);
        intervals += *p >= '0' && *p <= '9';
    }
    ck_assert_msg(headers == 1 && totals == 2 && intervals >= 2, "%s", text);
}
END_TEST

/* The number after "key": inside the JSON object "object":{...}. */
static double jnum_in(const char *object, const char *key)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\":{", object);
    const char *o = strstr(out, pat);
    ck_assert_msg(o != NULL, "no %s in: %s", object, OUT);
    const char *end = strchr(o, '}');
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(o, pat);
    ck_assert_msg(p != NULL && p < end, "no %s in %s: %s", key, object, OUT);
    return strtod(p + strlen(pat), NULL);
}

/* The percentile of the first table in a text report ("  99%    123"). */
static long table_ms(const char *table, int pct)
{
    char pat[16];
    snprintf(pat, sizeof pat, "  %d%%", pct);
    const char *p = strstr(table, pat);
    ck_assert_msg(p != NULL, "no %d%% row in: %s", pct, OUT);
    return strtol(p + strlen(pat), NULL, 10);
}

/* Under --rate, a server slower than the rate queues requests behind each
 * other: the percentile table shows the latency from each request's
 * intended send time (coordinated omission corrected) and says so, as the
 * Latency line does; ab's table from the actual send follows, labelled. It
 * once said "99% 3" beside a Latency line's p99 of 1,082,130 us. */
START_TEST(rate_percentiles_corrected)
{
    server_start(false);
    /* /slow takes 20 ms: one connection serves 50/s of the 200/s asked. */
    int rc = loadgen("-q -k -c 1 --rate 200 -t 1 http://127.0.0.1:%d/slow", srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    const char *corrected = strstr(out, "Percentage of the requests served within a certain time (ms)\n"
                                        "  (from the intended send time");
    const char *actual = strstr(out, "Percentage served within a certain time (ms), from the actual "
                                     "send time");
    ck_assert_msg(corrected && actual && corrected < actual, "%s", OUT);
    const char *lat = strstr(out, "\nTotal:      ");
    lat = lat ? strstr(lat + 1, "\nTotal:      ") : NULL;   /* the Latency line's */
    ck_assert_msg(lat != NULL, "%s", OUT);
    double v[8];
    ck_assert_int_eq(sscanf(lat + 13, "%lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4],
                            &v[5]), 6);
    long p99_ms = (long)(v[5] / 1000.0 + 0.5), table99 = table_ms(corrected, 99);
    ck_assert_msg(labs(table99 - p99_ms) <= 1 + p99_ms / 50,
                  "the table's 99%% is %ld ms, the Latency line's p99 %ld ms: %s", table99, p99_ms,
                  OUT);
    ck_assert_msg(table99 >= 200, "queued behind 20 ms answers at 4x their rate, yet 99%% in %ld ms",
                  table99);
    ck_assert_msg(table_ms(actual, 99) < table99, "%s", OUT);
}
END_TEST

/* An interval shorter than the period (the run's last) has no rate: a
 * 1 ms stub with 2 requests was once "2000 rps". */
START_TEST(partial_interval_has_no_rate)
{
    server_start(false);
    int rc = loadgen("-q -k -c 2 --rate 100 -t 1.3 --json http://127.0.0.1:%d/", srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    const char *iv = strstr(out, "\"intervals\":[");
    ck_assert_ptr_nonnull(iv);
    int full = 0, partial = 0;
    for (const char *p = strstr(iv, "{\"t\":"); p; p = strstr(p + 1, "{\"t\":")) {
        const char *len = strstr(p, "\"len\":"), *rate = strstr(p, "\"rps\":");
        ck_assert(len && rate);
        double l = strtod(len + 6, NULL);
        if (l < 0.999) {
            ck_assert_msg(!strncmp(rate + 6, "null", 4), "a %.3f s interval with a rate: %.80s", l, p);
            partial++;
        } else {
            ck_assert_msg(rate[6] >= '0' && rate[6] <= '9', "%.80s", p);
            full++;
        }
    }
    ck_assert_msg(full == 1 && partial == 1, "%d full, %d partial intervals in 1.3 s: %s", full,
                  partial, OUT);
}
END_TEST

/* --csv -: stdout holds the CSV rows alone (the report goes to stderr),
 * for the text report and for --json. */
START_TEST(csv_stdout_only_csv)
{
    server_start(false);
    const char *mode[] = { "", "--json" };
    for (int m = 0; m < 2; m++) {
        int rc = run_cmd(out, sizeof out, "{ %s -q -k -n 60 -c 2 %s --csv - http://127.0.0.1:%d/ "
                         "2>/dev/null; }", prog("loadgen"), mode[m], srv.port);
        ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
        int rows = 0;
        for (const char *p = out; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
            if (*p == '\n')
                continue;
            ck_assert_msg(!strncmp(p, "interval,url,", 13) || !strncmp(p, "total,", 6) ||
                          (*p >= '0' && *p <= '9'), "not a CSV row on stdout (%s): %.100s", mode[m],
                          p);
            rows++;
        }
        ck_assert_msg(rows >= 3, "%s", OUT);
    }
    /* The report is still there, on stderr. */
    int rc = run_cmd(out, sizeof out, "{ %s -q -k -n 60 -c 2 --csv - http://127.0.0.1:%d/ 2>&1 "
                     ">/dev/null; }", prog("loadgen"), srv.port);
    server_stop();
    ck_assert_msg(rc == 0 && strstr(out, "Complete requests:      60"), "%s", OUT);
}
END_TEST

/* --json's goodput beside ab's rate: answered = 2xx (and 404 when --miss
 * asked for misses); errors by kind. */
START_TEST(json_goodput_and_errors)
{
    server_start(false);
    int rc = loadgen("-q -k -n 80 -c 2 --json http://127.0.0.1:%d/503", srv.port);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    ck_assert_int_eq(jint("completed"), 80);        /* ab's count: every answer */
    ck_assert_msg(jnum("rps") > 0, "%s", OUT);
    ck_assert_int_eq(jint("answered"), 0);
    ck_assert_msg(jnum("goodput_rps") == 0, "%s", OUT);
    ck_assert_int_eq((long)jnum_in("errors", "total"), 80);
    ck_assert_int_eq((long)jnum_in("errors", "status_503"), 80);
    ck_assert_int_eq((long)jnum_in("errors", "status_404"), 0);
    rc = loadgen("-q -k -n 80 -c 2 --json http://127.0.0.1:%d/404", srv.port);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    ck_assert_int_eq(jint("answered"), 0);
    ck_assert_int_eq((long)jnum_in("errors", "status_404"), 80);
    ck_assert_int_eq((long)jnum_in("errors", "status_503"), 0);
    rc = loadgen("-q -k -n 80 -c 2 --json http://127.0.0.1:%d/", srv.port);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    ck_assert_int_eq(jint("answered"), 80);
    ck_assert_msg(fabs(jnum("goodput_rps") - jnum("rps")) < 0.02 * jnum("rps") + 0.01, "%s", OUT);
    ck_assert_int_eq((long)jnum_in("errors", "total"), 0);
    /* With --miss the 404s were asked for: answers, not errors. */
    make_keys();
    rc = loadgen("-q -k -n 80 -c 2 --json --keys %s --miss 0.5 'http://127.0.0.1:%d/404/{key}'",
                 keyfile, srv.port);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    ck_assert_int_eq(jint("answered"), 80);
    ck_assert_int_eq((long)jnum_in("errors", "total"), 0);
    /* Refused connects are errors of their own kind. */
    int dead = free_port(20000);
    rc = loadgen("-q -n 10 -c 1 --json http://127.0.0.1:%d/", dead);
    ck_assert_int_eq((long)jnum_in("errors", "connect"), 10);
    ck_assert_int_eq((long)jnum_in("errors", "total"), 10);
    server_stop();
}
END_TEST

/* Error pages are not throughput: the text report gives the goodput
 * beside ab's rate, more than 1% errors is warned about on stderr, and
 * --max-errors N|P% turns errors past it into exit 1. */
START_TEST(errors_warned_and_limited)
{
    server_start(false);
    const char *lg = prog("loadgen");
    /* Only 503s: ab's rate stays, the goodput is 0, stderr warns, exit 0 as ab. */
    int rc = run_cmd(out, sizeof out, "{ %s -k -c 2 -n 2000 http://127.0.0.1:%d/503 2>/dev/null; }", lg,
                     srv.port);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    ck_assert_msg(strstr(out, "Requests per second:    ") && strstr(out, "Non-2xx responses:      2000\n"), "%s", OUT);
    ck_assert_msg(strstr(out, "\nGoodput:                0.00 [#/sec] (answers: 2xx; 0 of 2000 requests)\n"),
                  "%s", OUT);
    ck_assert_msg(strstr(out, "\nErrors:                 2000 (100.0%: 503 2000)\n"), "%s", OUT);
    rc = run_cmd(out, sizeof out, "{ %s -q -k -c 2 -n 2000 http://127.0.0.1:%d/503 >/dev/null; }", lg, srv.port);
    ck_assert_msg(rc == 0 && strstr(out, "loadgen: warning: 2000 of 2000 requests (100.0%) were errors (503 2000)"),
                  "rc %d: %s", rc, OUT);
    rc = loadgen("-q -k -c 2 -n 2000 --max-errors 1%% http://127.0.0.1:%d/503", srv.port);
    ck_assert_msg(rc == 1 && strstr(out, "2000 errors (100.0% of 2000 requests) are past --max-errors 1%"),
                  "rc %d: %s", rc, OUT);
    /* --json: the report on stdout stays whole JSON; the warning and the
     * limit are the same. */
    rc = run_cmd(out, sizeof out, "{ %s -q -k -c 2 -n 200 --json --max-errors 199 http://127.0.0.1:%d/503 "
                 "2>/dev/null; }", lg, srv.port);
    ck_assert_msg(rc == 1 && out[0] == '{' && jint("answered") == 0, "rc %d: %s", rc, OUT);
    /* A count: at the limit is not past it. */
    rc = loadgen("-q -k -c 2 -n 200 --max-errors 200 http://127.0.0.1:%d/503", srv.port);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    /* All 2xx: no warning, no Errors line, --max-errors 0 holds. */
    rc = loadgen("-k -c 2 -n 200 --max-errors 0 http://127.0.0.1:%d/", srv.port);
    ck_assert_msg(rc == 0 && !strstr(out, "warning") && !strstr(out, "Errors:") &&
                  strstr(out, "(answers: 2xx; 200 of 200 requests)"), "rc %d: %s", rc, OUT);
    /* The 404s --miss asked for are answers, not errors. */
    make_keys();
    rc = loadgen("-k -c 2 -n 200 --max-errors 0 --keys %s --miss 0.5 'http://127.0.0.1:%d/404/{key}'", keyfile,
                 srv.port);
    ck_assert_msg(rc == 0 && !strstr(out, "warning") && strstr(out, "(answers: 2xx, and 404 of --miss; 200 of 200"),
                  "rc %d: %s", rc, OUT);
    /* A 404 nobody asked for is an error, counted in a share. */
    rc = loadgen("-q -k -c 1 -n 1 http://127.0.0.1:%d/404", srv.port);
    ck_assert_msg(rc == 0 && strstr(out, "were errors"), "rc %d: %s", rc, OUT);
    rc = loadgen("-q -k -c 1 -n 2 --max-errors 50%% http://127.0.0.1:%d/404", srv.port);
    ck_assert_msg(rc == 1, "rc %d: %s", rc, OUT);
    rc = loadgen("-q -n 1 --max-errors 5x http://127.0.0.1:%d/", srv.port);
    ck_assert_msg(rc == 2 && strstr(out, "--max-errors: '5x' is not N"), "rc %d: %s", rc, OUT);
    server_stop();
}
END_TEST

/* The string value of "key": inside "provenance":{...} of the report in
 * out, into v; "null" when it is null. */
static void provenance_str(const char *key, char *v, size_t vlen)
{
    const char *p = strstr(out, "\"provenance\":{");
    ck_assert_msg(p != NULL, "no provenance in: %s", OUT);
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    p = strstr(p, pat);
    ck_assert_msg(p != NULL, "no provenance.%s in: %s", key, OUT);
    p += strlen(pat);
    if (!strncmp(p, "null", 4)) {
        snprintf(v, vlen, "null");
        return;
    }
    ck_assert_msg(*p == '"', "provenance.%s: %s", key, OUT);
    size_t n = strcspn(p + 1, "\"");
    snprintf(v, vlen, "%.*s", (int)n, p + 1);
}

/* --json says when and where it was made: the run's start (UTC), the
 * host, its CPU model and kernel, loadgen's version; merge names the
 * agents' machines, each distinct one once, null where a log does not say. */
START_TEST(json_provenance)
{
    server_start(false);
    const char *dir = test_dir("loadgen-provenance");
    char log[1200], bare[1200], v[512], want[512];
    snprintf(log, sizeof log, "%s/agent.hlog", dir);
    snprintf(bare, sizeof bare, "%s/bare.hlog", dir);
    int rc = loadgen("-q -k -n 50 --json --hdr-log %s http://127.0.0.1:%d/", log, srv.port);
    server_stop();
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    time_t start = (time_t)jnum("start_epoch_s");
    struct tm tm;
    gmtime_r(&start, &tm);
    strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%SZ", &tm);
    provenance_str("date", v, sizeof v);
    ck_assert_str_eq(v, want);
    struct utsname u;
    ck_assert_int_eq(uname(&u), 0);
    provenance_str("hostname", v, sizeof v);
    ck_assert_str_eq(v, u.nodename);
    snprintf(want, sizeof want, "%s %s %s", u.sysname, u.release, u.machine);
    provenance_str("kernel", v, sizeof v);
    ck_assert_str_eq(v, want);
    provenance_str("cpu_model", v, sizeof v);
    ck_assert_msg(strcmp(v, "null") && v[0], "cpu_model '%s'", v);
    provenance_str("loadgen", v, sizeof v);
    ck_assert_str_eq(v, zb_version);
    /* Two agents on one machine: it is named once. */
    rc = loadgen("merge --json %s %s", log, log);
    ck_assert_msg(rc == 0, "merge rc %d: %s", rc, OUT);
    provenance_str("hostname", v, sizeof v);
    ck_assert_str_eq(v, u.nodename);
    /* A log that does not say: null, not a guess. */
    rc = run_cmd(out, sizeof out, "sed -E 's/ (hostname|cpu_model|kernel|loadgen)=\"[^\"]*\"//g' %s > %s",
                 log, bare);
    ck_assert_int_eq(rc, 0);
    rc = loadgen("merge --json %s", bare);
    ck_assert_msg(rc == 0, "merge rc %d: %s", rc, OUT);
    provenance_str("hostname", v, sizeof v);
    ck_assert_str_eq(v, "null");
    provenance_str("cpu_model", v, sizeof v);
    ck_assert_str_eq(v, "null");
}
END_TEST

/* --dist zipf:0.99 over 126,000 keys, 1,000,000 draws made as loadgen
 * makes them (request i's own splitmix64 stream): the 1% of keys drawn most
 * get the share YCSB's ZipfianGenerator gives them, within 2%. YCSB's share
 * is worked out from its formulas, not drawn: Gray's method returns rank 0
 * below u = 1/zetan, rank 1 below (1 + 0.5^theta)/zetan, else
 * n (eta u - eta + 1)^alpha, which is below k exactly when
 * u < ((k/n)^(1 - theta) - 1 + eta) / eta. */
static int cmp_count_desc(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

START_TEST(zipf_top_share_as_ycsb)
{
    enum { N = 126000, DRAWS = 1000000, TOP = N / 100 };
    struct dist d;
    char why[256];
    ck_assert_int_eq(dist_parse(&d, "zipf:0.99", why, sizeof why), 0);
    ck_assert_int_eq(dist_prepare(&d, N), 0);
    uint32_t *count = calloc(N, sizeof *count);
    ck_assert_ptr_nonnull(count);
    for (uint64_t i = 0; i < DRAWS; i++) {
        uint64_t s = 1 + i * 0x9E3779B97F4A7C15ull;
        (void)zb_rand(&s);                         /* the miss decision's draw */
        count[dist_draw(&d, &s)]++;
    }
    qsort(count, N, sizeof *count, cmp_count_desc);
    uint64_t top = 0;
    for (int i = 0; i < TOP; i++)
        top += count[i];
    double got = (double)top / DRAWS;
    double theta = 0.99, u1 = (1 + pow(0.5, theta)) / d.zetan;
    double uk = (pow((double)TOP / N, 1 - theta) - 1 + d.eta) / d.eta;
    double ycsb = uk > u1 ? uk : u1;
    double exact = 0;                              /* the Zipf law itself, for the message */
    for (int i = 1; i <= TOP; i++)
        exact += 1 / pow(i, theta);
    exact /= d.zetan;
    ck_assert_msg(fabs(got / ycsb - 1) < 0.02, "top 1%% share %.4f, YCSB's %.4f (Zipf's law %.4f)",
                  got, ycsb, exact);
    /* The hot keys are spread over the file, not its first lines. */
    struct dist h;
    ck_assert_int_eq(dist_parse(&h, "zipf:0.99", why, sizeof why), 0);
    ck_assert_int_eq(dist_prepare(&h, N), 0);
    int first_tenth = 0;
    for (int r = 0; r < 100; r++)
        first_tenth += h.perm[r] < N / 10;
    ck_assert_msg(first_tenth < 30, "%d of the 100 hottest keys are in the file's first tenth", first_tenth);
    dist_free(&h);
    dist_free(&d);
    free(count);
}
END_TEST

/* hotspot:0.2:0.8: the hot fifth of the keys gets 80% of the draws. */
START_TEST(hotspot_share)
{
    enum { N = 1000, DRAWS = 200000 };
    struct dist d;
    char why[256];
    ck_assert_int_eq(dist_parse(&d, "hotspot:0.2:0.8", why, sizeof why), 0);
    ck_assert_int_eq(dist_prepare(&d, N), 0);
    uint64_t hot = 0;
    for (uint64_t i = 0; i < DRAWS; i++) {
        uint64_t s = 5 + i * 0x9E3779B97F4A7C15ull;
        hot += dist_rank(&d, &s) < d.hot_n;
    }
    ck_assert_uint_eq(d.hot_n, 200);
    ck_assert_msg(fabs((double)hot / DRAWS - 0.8) < 0.01, "hot share %.4f", (double)hot / DRAWS);
    dist_free(&d);
    const char *bad[] = { "zipf:1", "zipf:0", "zipf:x", "hotspot:0.2", "hotspot:1:0.5",
                          "hotspot:0.2:1.5", "pareto", "zipf:" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(dist_parse(&d, bad[i], why, sizeof why) < 0 && why[0], "%s taken", bad[i]);
}
END_TEST

/* The same --seed, the same keys in the same order, whatever -c and
 * --threads, for every distribution; the popular keys come first. */
START_TEST(dist_seed_repeatable)
{
    make_keys();
    static char a[LOG_MAX][64], b[LOG_MAX][64], d[LOG_MAX][64];
    const char *dists[] = { "zipf:0.99", "hotspot:0.1:0.9" };
    for (int k = 0; k < 2; k++) {
        char ea[128], ed[128];
        snprintf(ea, sizeof ea, "-n 400 -c 1 --seed 11 --dist %s", dists[k]);
        snprintf(ed, sizeof ed, "-n 400 -c 6 --threads 3 --seed 11 --dist %s", dists[k]);
        ck_assert_int_eq(run_keys(a, ea), 400);
        ck_assert_int_eq(run_keys(b, ea), 400);
        ck_assert_int_eq(run_keys(d, ed), 400);
        int distinct = 0;
        for (int i = 0; i < 400; i++) {
            ck_assert_msg(!strcmp(a[i], b[i]), "%s request %d: %s vs %s", dists[k], i, a[i], b[i]);
            ck_assert_msg(!strncmp(a[i], "/zip/", 5) && in_keys(a[i] + 5), "path %s", a[i]);
            int seen = 0;
            for (int j = 0; j < i && !seen; j++)
                seen = !strcmp(a[i], a[j]);
            distinct += !seen;
        }
        /* 50 keys: skewed draws repeat the hot ones; 400 uniform draws
         * would reach nearly all 50. */
        ck_assert_msg(distinct < 45, "%s: %d distinct keys of 50 in 400 draws", dists[k], distinct);
        qsort(a, 400, sizeof a[0], cmp_path);
        qsort(d, 400, sizeof d[0], cmp_path);
        for (int i = 0; i < 400; i++)
            ck_assert_str_eq(a[i], d[i]);
    }
}
END_TEST

/* ---- --ledger: the bodies of the 2xx answers to POSTs ---- */

/* The file's lines into lines (at most max, each < 64 bytes), sorted;
 * how many. A line that does not end in '\n' fails the test. */
static int ledger_lines(const char *path, char (*lines)[64], int max)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no ledger %s", path);
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        ck_assert_msg(len && line[len - 1] == '\n', "torn line '%s'", line);
        line[len - 1] = 0;
        ck_assert_msg(n < max && len < 64, "ledger line %d: %s", n, line);
        memcpy(lines[n++], line, len);   /* len < 64: its NUL too */
    }
    fclose(f);
    qsort(lines, (size_t)n, sizeof lines[0], cmp_path);
    return n;
}

START_TEST(ledger_holds_the_acknowledged_posts)
{
    make_keys();
    const char *dir = test_dir("loadgen-ledger");
    char body[1100], ledger[1100];
    snprintf(body, sizeof body, "%s/post.txt", dir);
    snprintf(ledger, sizeof ledger, "%s/ledger.jsonl", dir);
    write_file(body, "x=1");
    unlink(ledger);
    static char sent[LOG_MAX][64], got[LOG_MAX][64];
    /* The echo route answers the path: each line is the body of one answer. */
    server_start(false);
    int rc = loadgen("-q -k --json -n 300 -c 6 --threads 3 --seed 5 -p %s --keys %s "
                     "--ledger %s 'http://127.0.0.1:%d/echo/{key}'",
                     body, keyfile, ledger, srv.port);
    int ns = server_stop_log(sent);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    ck_assert_int_eq(ns, 300);
    qsort(sent, 300, sizeof sent[0], cmp_path);
    ck_assert_int_eq(ledger_lines(ledger, got, LOG_MAX), 300);
    for (int i = 0; i < 300; i++)
        ck_assert_str_eq(got[i], sent[i]);

    /* Appended to; no line for a non-2xx, a GET, or a HEAD; chunked bodies whole. */
    server_start(false);
    rc = loadgen("-q --json -n 5 -p %s --ledger %s http://127.0.0.1:%d/404", body, ledger,
                 srv.port);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    rc = loadgen("-q --json -n 5 --ledger %s http://127.0.0.1:%d/echo/get", ledger, srv.port);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    rc = loadgen("-q --json -k -n 3 -p %s --ledger %s http://127.0.0.1:%d/chunked", body, ledger,
                 srv.port);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    server_stop();
    ck_assert_int_eq(ledger_lines(ledger, got, LOG_MAX), 303);
    for (int i = 0; i < 3; i++)   /* sorted: "/echo/..." then "hello..." */
        ck_assert_str_eq(got[300 + i], "hello0123456789abcdef!");

    /* A file loadgen cannot write: a usage error before any request. */
    rc = loadgen("-q -n 1 -p %s --ledger %s/no/such/dir/l http://127.0.0.1:1/", body, dir);
    ck_assert_msg(rc == 2 && strstr(out, "--ledger: cannot write"), "rc %d: %s", rc, OUT);
}
END_TEST

/* Interrupted: every acknowledged write is in the file, whole. */
START_TEST(ledger_whole_after_sigint)
{
    const char *dir = test_dir("loadgen-ledger-int");
    char body[1100], ledger[1100];
    snprintf(body, sizeof body, "%s/post.txt", dir);
    snprintf(ledger, sizeof ledger, "%s/ledger.jsonl", dir);
    write_file(body, "x=1");
    unlink(ledger);
    server_start(false);
    loadgen("-q -k --json -c 4 --threads 2 -t 30 -p %s --ledger %s "
            "http://127.0.0.1:%d/echo/interrupted & p=$!; sleep 0.7; kill -INT $p; wait $p",
            body, ledger, srv.port);
    server_stop();
    long done = jint("completed");
    ck_assert_int_eq(jint("non2xx"), 0);
    ck_assert_msg(done > 0, "%s", OUT);
    FILE *f = fopen(ledger, "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    long n = 0;
    while (fgets(line, sizeof line, f)) {
        ck_assert_str_eq(line, "/echo/interrupted\n");
        n++;
    }
    fclose(f);
    ck_assert_int_eq(n, done);
}
END_TEST

/* ledger_add: one line per body, its newlines spaces, the buffer written
 * whole when the next line would not fit. */
START_TEST(ledger_lines_one_per_body)
{
    const char *dir = test_dir("loadgen-ledger-unit");
    char path[1100];
    snprintf(path, sizeof path, "%s/l", dir);
    unlink(path);
    struct ledger_buf lb = { .fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644),
                             .buf = malloc(LEDGER_BUF) };
    ck_assert_int_ge(lb.fd, 0);
    ck_assert_int_eq(ledger_add(&lb, "{\"a\":1}\n", 8), 0);
    ck_assert_int_eq(ledger_add(&lb, "{\"b\":\r\n2}", 9), 0);
    ck_assert_uint_eq(lb.len, 8 + 10);
    static char big[LEDGER_BODY_MAX];
    memset(big, 'x', sizeof big);
    size_t lines = 2;
    while (lb.len + sizeof big + 1 <= LEDGER_BUF) {
        ck_assert_int_eq(ledger_add(&lb, big, sizeof big), 0);
        lines++;
    }
    ck_assert_int_eq(ledger_add(&lb, big, sizeof big), 0);   /* flushes first */
    lines++;
    ck_assert_uint_eq(lb.len, sizeof big + 1);
    ck_assert_int_eq(ledger_flush(&lb), 0);
    close(lb.fd);
    free(lb.buf);
    FILE *f = fopen(path, "r");
    static char line[LEDGER_BODY_MAX + 2];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "{\"a\":1}\n");
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "{\"b\":  2}\n");
    size_t n = 2;
    while (fgets(line, sizeof line, f)) {
        ck_assert_uint_eq(strlen(line), sizeof big + 1);
        n++;
    }
    fclose(f);
    ck_assert_uint_eq(n, lines);
}
END_TEST

/* ---- --mix: weighted templates ---- */

START_TEST(mix_file_errors_name_the_line)
{
    struct mix m;
    struct zb_err err;
    static const struct { const char *text, *why; } bad[] = {
        { "# none\n\n", "m.txt: no templates" },
        { "5 GET\n", "m.txt:1: want WEIGHT METHOD PATH, found 2 words" },
        { "1 GET /a\n2 GET /b extra\n", "m.txt:2: want WEIGHT METHOD PATH, found 4 words" },
        { "0 GET /a\n", "m.txt:1: the weight '0' is not a whole number 1-1000000" },
        { "x GET /a\n", "m.txt:1: the weight 'x' is not a whole number 1-1000000" },
        { "1 get /a\n", "m.txt:1: method 'get' is not upper-case letters" },
        { "1 GET a\n", "m.txt:1: the path must start with '/'" },
        { "1 GET /{key}/{key}\n", "m.txt:1: more than one {key} slot" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(mix_parse(&m, bad[i].text, strlen(bad[i].text), "m.txt", &err), -1);
        ck_assert_msg(!strncmp(err.msg, bad[i].why, strlen(bad[i].why)), "%s: %s", bad[i].text,
                      err.msg);
    }
    const char *good = "# a mix\n 3\tGET /zip/pg/{key}  # reads\r\n1 POST /update/pg/{key}\n";
    ck_assert_int_eq(mix_parse(&m, good, strlen(good), "m.txt", &err), 0);
    ck_assert_int_eq(m.n, 2);
    ck_assert_str_eq(m.t[0].path, "/zip/pg/{key}");
    ck_assert_str_eq(m.t[1].method, "POST");
    ck_assert_uint_eq(m.total, 4);
    /* The presets, as REQUEST-TYPES.md has them. */
    ck_assert_int_eq(mix_load(&m, "ycsb-b:pg", &err), 0);
    ck_assert_int_eq(m.n, 2);
    ck_assert_uint_eq(m.t[0].weight, 95);
    ck_assert_str_eq(m.t[0].path, "/zip/pg/{key}");
    ck_assert_uint_eq(m.t[1].weight, 5);
    ck_assert_str_eq(m.t[1].path, "/update/pg/{key}");
    ck_assert_int_eq(mix_load(&m, "ycsb-c:sqlite", &err), 0);
    ck_assert_int_eq(m.n, 1);
    ck_assert_int_eq(mix_load(&m, "ycsb-a:", &err), -1);
    ck_assert_msg(strstr(err.msg, "BACKEND must be"), "%s", err.msg);
    ck_assert_int_eq(mix_load(&m, "/no/such/mix", &err), -1);
    /* Picks follow the weights and are the same for a seed. */
    mix_parse(&m, good, strlen(good), "m.txt", &err);
    int n0 = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        int t = mix_pick(&m, 9, i);
        ck_assert_int_eq(t, mix_pick(&m, 9, i));
        n0 += t == 0;
    }
    ck_assert_msg(n0 > 74000 && n0 < 76000, "template 0: %d of 100000", n0);
}
END_TEST

START_TEST(mix_sends_the_templates)
{
    make_keys();
    const char *dir = test_dir("loadgen-mix");
    char mixfile[1100], ledger[1100];
    snprintf(mixfile, sizeof mixfile, "%s/mix.txt", dir);
    snprintf(ledger, sizeof ledger, "%s/ledger.jsonl", dir);
    write_file(mixfile, "# writes echo their path, reads miss\n3 POST /echo/w/{key}\n1 GET /404/{key}\n");
    unlink(ledger);
    static char a[LOG_MAX][64], b[LOG_MAX][64], got[LOG_MAX][64];
    server_start(false);
    int rc = loadgen("-q -k --json -n 400 -c 1 --seed 3 --keys %s --mix %s --ledger %s "
                     "http://127.0.0.1:%d/", keyfile, mixfile, ledger, srv.port);
    int na = server_stop_log(a);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    ck_assert_int_eq(na, 400);
    const char *t = strstr(out, "\"templates\":[");
    ck_assert_msg(t != NULL, "%s", OUT);
    long writes = 0, reads = 0;
    for (int i = 0; i < 400; i++) {
        if (!strncmp(a[i], "/echo/w/", 8) && in_keys(a[i] + 8))
            writes++;
        else if (!strncmp(a[i], "/404/", 5) && in_keys(a[i] + 5))
            reads++;
        else
            ck_abort_msg("request %d: %s", i, a[i]);
    }
    ck_assert_msg(writes > 250 && writes < 350, "writes %ld of 400", writes);
    char want[512];
    snprintf(want, sizeof want,
             "\"templates\":[{\"weight\":3,\"method\":\"POST\",\"path\":\"/echo/w/{key}\","
             "\"completed\":%ld,\"goodput\":%ld,\"non2xx\":0,\"failed\":0,",
             writes, writes);
    ck_assert_msg(strstr(out, want), "want %s in %s", want, OUT);
    snprintf(want, sizeof want,
             "{\"weight\":1,\"method\":\"GET\",\"path\":\"/404/{key}\",\"completed\":%ld,"
             "\"goodput\":0,\"non2xx\":%ld,\"failed\":0,", reads, reads);
    ck_assert_msg(strstr(out, want), "want %s in %s", want, OUT);
    /* The ledger holds the writes' answers only. */
    ck_assert_int_eq(ledger_lines(ledger, got, LOG_MAX), writes);
    /* The same seed, more connections and threads: the same requests. */
    server_start(false);
    rc = loadgen("-q -k -n 400 -c 6 --threads 3 --seed 3 --keys %s --mix %s "
                 "http://127.0.0.1:%d/", keyfile, mixfile, srv.port);
    int nb = server_stop_log(b);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, OUT);
    ck_assert_int_eq(nb, 400);
    ck_assert_msg(strstr(out, "Templates (--mix):") && strstr(out, "  POST /echo/w/{key}"), "%s", OUT);
    qsort(a, 400, sizeof a[0], cmp_path);
    qsort(b, 400, sizeof b[0], cmp_path);
    for (int i = 0; i < 400; i++)
        ck_assert_str_eq(a[i], b[i]);
    /* A template's method is its own: -p with --mix is refused. */
    rc = loadgen("-q -n 1 -p %s --mix %s http://127.0.0.1:1/", mixfile, mixfile);
    ck_assert_msg(rc == 2 && strstr(out, "--mix names each template's method"), "rc %d: %s", rc, OUT);
    write_file(mixfile, "1 GET /a\nfoo\n");
    rc = loadgen("-q -n 1 --mix %s http://127.0.0.1:1/", mixfile);
    ck_assert_msg(rc == 2 && strstr(out, "mix.txt:2: want WEIGHT METHOD PATH"), "rc %d: %s", rc, OUT);
}
END_TEST

Suite *suite_loadgen(void)
{
    TCase *tc = tier(test_case("engine", NULL, NULL, 60, TESTS(
        keepalive_counts, no_keepalive_one_connection_per_request, non2xx_counted_apart,
        chunked_bodies, split_head_across_reads, server_closes_every_connection,
        timelimit_stops_by_itself, rate_is_held, rate_below_one, timeout_fails_requests,
        refused_connects_fail, close_with_the_data, many_connections_interleaved, slow_ramp_reported,
        concurrency_beyond_fd_limit, exit_status_and_two_lengths, framing_content_length,
        framing_chunked, framing_heads, head_limit_however_split, every_address_tried,
        ab_report_lines, request_flags,
        seed_repeatable, miss_ratio, keys_percent_encoded, zipf_top_share_as_ycsb, hotspot_share,
        dist_seed_repeatable, keys_imply_variable_length, ledger_holds_the_acknowledged_posts,
        ledger_whole_after_sigint, ledger_lines_one_per_body, mix_file_errors_name_the_line,
        mix_sends_the_templates,
        bad_flags_exit_2,
        text_report_and_csv, rate_percentiles_corrected, partial_interval_has_no_rate,
        csv_stdout_only_csv, json_goodput_and_errors, errors_warned_and_limited, json_provenance)),
        TIER_UNIT);
    /* Against the peers: nginx's TLS, the reference HDR reader (npm). */
    TCase *peers = test_case("peers", NULL, NULL, 60, TESTS(https_nginx, hdr_log_read_by_reference, merge_agents));
    return suite_of("loadgen", tc, peers, NULL);
}
