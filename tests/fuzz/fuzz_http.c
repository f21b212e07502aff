/* Fuzz target: the server's request handling (request line, path, query
 * string, headers, methods, bodies, pipelining) on arbitrary bytes.
 *
 * The real server (server/server.c: its loop threads, each with its
 * libmicrohttpd daemon, and the acceptor) runs in this process, on a
 * loopback port, with one SQLite backend ("sqlite") serving three
 * datasets: postal (/zip, /postal), "nums" (an integer key, a real, a
 * text) and "words" (a text key), each a two-row table the target creates
 * at first use. Each input is written as is to a fresh
 * connection, and the reply read back with a short timeout: it must be
 * nothing (the server may wait for more, or close) or begin with
 * "HTTP/1.". Every 16 inputs a good request must still get its 200. Under
 * make fuzz (ASan, UBSan) any memory error in the handler, the router, the
 * unescaper or the JSON writer, which run on the loop threads, aborts the
 * run with the input. */
#include <apr_general.h>
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "kenall.h"
#include "server.h"

static struct server srv;
static bool running;
static int port;
static char dir[256];
static apr_pool_t *apool;
static struct zb_conf conf;

static void fail(const char *what, const char *msg)
{
    fprintf(stderr, "fuzz_http: %s: %s\n", what, msg);
    abort();
}

static struct dataset data[3];   /* postal, nums, words */

/* Two rows in dataset d's table: the key column key0/key1, every other
 * column a number for a number column, else text to escape. */
static void make_table(struct backend *b, const struct dataset *d, const char *key0,
                       const char *key1)
{
    char sql[2048], name[128];
    struct zb_err err = { 0 };
    struct zb_table t = dataset_table(d, b->conf, name, sizeof name);
    zb_create_sql(sql, sizeof sql, &t, b->drv->create_suffix(b->db));
    if (b->drv->exec(b->db, sql, &err) < 0)
        fail("create", err.msg);
    zb_insert_sql(sql, sizeof sql, &t, 1);
    for (int r = 0; r < 2; r++) {
        const char *v[ZB_MAX_COLUMNS];
        for (int i = 0; i < t.ncols; i++)
            v[i] = t.cols[i].type == ZB_TEXT ? "text \"quoted\" \\ \x01 東京都"
                   : t.cols[i].type == ZB_REAL ? "-1.5e-7" : "-42";
        v[t.key] = r ? key1 : key0;
        if (b->drv->query(b->db, sql, t.ncols, v, NULL, NULL, NULL, &err) < 0)
            fail("insert", err.msg);
    }
}

static void make_db(const struct backend_conf *sbc)
{
    struct backend_conf bc = *sbc;
    bc.read_only = false;
    struct backend b;
    struct zb_err err = { 0 };
    if (backend_open(&b, &bc, &err) < 0)
        fail("open", err.msg);
    make_table(&b, &data[1], "42", "-7");
    make_table(&b, &data[2], "a b/c", "random");
    char sql[2048];
    struct zb_table table = zb_postal_table(bc.table);
    zb_create_sql(sql, sizeof sql, &table, b.drv->create_suffix(b.db));
    if (b.drv->exec(b.db, sql, &err) < 0)
        fail("create", err.msg);
    zb_insert_sql(sql, sizeof sql, &table, 1);
    static const char *const codes[] = { "1000001", "0600000" };
    for (int r = 0; r < 2; r++) {
        const char *v[ZB_NCOLS];
        for (int i = 0; i < ZB_NCOLS; i++)
            v[i] = table.cols[i].type == ZB_INTEGER ? "0" : "text \"quoted\" \\ \x01 東京都";
        v[KENALL_ZIP] = codes[r];
        if (b.drv->query(b.db, sql, ZB_NCOLS, v, NULL, NULL, NULL, &err) < 0)
            fail("insert", err.msg);
    }
    backend_close(&b);
}

static void teardown(void)
{
    if (running)
        server_stop(&srv, NULL);
    conf_free(&conf);
    if (apool)
        apr_pool_destroy(apool);
    apr_terminate();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz_http: could not remove %s\n", dir);
}

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/zb-fuzz-http.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        fail("mkdtemp", strerror(errno));
    char path[300];
    snprintf(path, sizeof path, "%s/fuzz.conf", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        fail(path, strerror(errno));
    fprintf(f, "[server]\nthreads = 2\nconnection_timeout_s = 2\nmax_connections = 256\n"
            "max_request_bytes = 16384\n\n[backend sqlite]\ndriver = sqlite\npath = %s/fuzz.sqlite\n"
            "table = zt_fuzz\npool_min = 1\npool_soft_max = 2\npool_hard_max = 4\n"
            "acquire_timeout_ms = 500\n\n"
            "[dataset nums]\nfile = none\nformat = csv\nheader = no\nkey = n\n"
            "columns = n integer, r real, t text\n\n"
            "[dataset words]\nfile = none\nformat = csv\nheader = no\nkey = w\n"
            "columns = w text, n integer\n", dir);
    fclose(f);
    struct zb_err err = { 0 };
    if (conf_load(&conf, path, &err) < 0)
        fail("conf", err.msg);
    static const char *const names_of[] = { DATASET_DEFAULT, "nums", "words" };
    for (int i = 0; i < 3; i++)
        if (dataset_describe(&data[i], conf_dataset(&conf, names_of[i]), &err) < 0)
            fail("dataset", err.msg);
    make_db(&conf.backend[0]);

    apr_initialize();
    apr_pool_create(&apool, NULL);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = { .sin_family = AF_INET };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 128) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) < 0)
        fail("listen", strerror(errno));
    port = ntohs(a.sin_port);
    const struct backend_conf *chosen[] = { &conf.backend[0] };
    char names[256];
    static const struct dataset *served[] = { &data[0], &data[1], &data[2] };
    if (server_start(&srv, &conf, served, 3, chosen, 1, fd, apool, names, sizeof names, &err) < 0)
        fail("server_start", err.msg);
    if (strstr(names, "(down)"))
        fail("server_start", names);
    running = true;
    atexit(teardown);
}

/* Writes data to a new connection and reads until the server closes, the
 * end of the first response's header, or wait_ms of silence. */
static size_t exchange(const void *data, size_t size, char *out, size_t outlen, int wait_ms)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        fail("connect", strerror(errno));
    struct timeval tv = { .tv_sec = 1 };
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    for (size_t sent = 0; sent < size;) {
        ssize_t w = send(fd, (const char *)data + sent, size - sent, MSG_NOSIGNAL);
        if (w <= 0)
            break;   /* the server answered (414, 431, 400) and closed */
        sent += (size_t)w;
    }
    size_t got = 0;
    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (got + 1 >= outlen || poll(&p, 1, wait_ms) <= 0)
            break;
        ssize_t r = read(fd, out + got, outlen - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        out[got] = 0;
        if (strstr(out, "\r\n\r\n"))
            break;
    }
    out[got] = 0;
    close(fd);
    return got;
}

static void check_alive(void)
{
    static const char *const reqs[] = {
        "GET /zip/sqlite/1000001 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "GET /words/sqlite/a%20b/c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    };
    static unsigned turn;
    const char *req = reqs[turn++ % 2];
    char out[4096];
    exchange(req, strlen(req), out, sizeof out, 5000);
    if (strncmp(out, "HTTP/1.1 200", 12))
        fail("the server no longer answers a good request", out);
}

static bool complete(const uint8_t *d, size_t n)
{
    return memmem(d, n, "\n\n", 2) || memmem(d, n, "\n\r\n", 3);
}

int fuzz_http(const uint8_t *data, size_t size)
{
    static bool started;
    static unsigned n;
    if (!started) {
        started = true;
        setup();
    }
    char out[8192];
    /* An input with no end of header can only be answered early (414, 400
     * on a bad request line): a short wait for that is enough. */
    exchange(data, size, out, sizeof out, complete(data, size) ? 300 : 20);
    if (out[0] && strncmp(out, "HTTP/1.", 7))
        fail("a reply that is not HTTP", out);
    if (n++ % 16 == 0)
        check_alive();
    return 0;
}

FUZZ_ENTRY(fuzz_http)
