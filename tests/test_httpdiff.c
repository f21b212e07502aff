/* The server's request-head parsing held to an oracle nobody here wrote:
 * nginx's. The same heads (headgen.c: generated from a seed, plus the
 * cases of issue 47) go raw over TCP to nginx (scripts/nginx, whose
 * every path without a file answers 200, so that its refusals are its
 * parser's) and to build/bin/server on SQLite; the write side is shut
 * after the head, so neither waits for more. Wherever nginx refuses
 * (4xx, 5xx, or it closes without an answer) the server must refuse too;
 * wherever a head breaks one of the server's own rules (the list of
 * differences below, the one list, which docs/RELIABILITY-server.md explains)
 * the server must refuse whatever nginx does; a head with no mutation
 * must be 2xx from both. A failure names the seed, which
 * ZB_HTTPDIFF_SEED=N replays, and the head, escaped.
 *
 * The databases are not needed: SQLite only. nginx is started here
 * unless it runs (and then stopped at the end). */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "headgen.h"
#include "helpers.h"
#include "util.h"

#define PORT test_port(18345)
#define HEADS 2000
#define ROWS 300
#define IN_FLIGHT 32       /* heads under way at once: the slow ones overlap (an unfinished head
                              waits for the server's idle timeout, IDLE_S) */
#define IDLE_S "1"         /* the server's connection_timeout_s */
#define SILENCE_MS 10000   /* no byte and no close this long after the head: no answer */
#define SILENT_MAX 3       /* then the run stops: it stays bounded */
#define FAILURES_SHOWN 6

/* Where the server and nginx differ by design. OWN: a rule of the
 * server's, which it holds whatever nginx does (asserted: refused).
 * LIMIT: nginx refuses, the server cannot (asserted: nothing). Each name
 * is a bold item of docs/RELIABILITY-server.md's "Request heads against nginx". */
enum kind { OWN, LIMIT };
static const struct difference {
    unsigned mark;
    enum kind kind;
    const char *name;
} differences[] = {
    { HEAD_OWN_VERSION, OWN, "HTTP version" },
    { HEAD_OWN_LINE, OWN, "Request-line whitespace" },
    { HEAD_OWN_TARGET, OWN, "Target" },
    { HEAD_OWN_HEADER, OWN, "Header lines" },
    { HEAD_OWN_BODY, OWN, "A body" },
    { HEAD_OWN_METHOD, OWN, "Methods" },
    { HEAD_LIMIT_LINE_END, LIMIT, "NULs where line ends were" },
    /* A known parameter given twice (?queries=1&queries=600) is 400
     * (params.h): nginx passes the query on. */
    { HEAD_PARAM_REPEATED, OWN, "Repeated parameters" },
    /* A name matches in its own case only: ?Queries=5 is no queries, but
     * a parameter the route does not take: 400. */
    { HEAD_PARAM_CASE, OWN, "Parameter names in other case" },
    { HEAD_PARAM_UNKNOWN, OWN, "Parameters a route does not take" },
};
#define NDIFF (int)(sizeof differences / sizeof differences[0])

static char dir[1024], csv[1100], conf[1100], logfile[1100], setup_error[8192];
static char code[8], jis[8];
static pid_t server_pid;
static bool nginx_ours;

#define SETUP_OK() ck_assert_msg(!setup_error[0], "%s", setup_error)

/* ---- one exchange ---- */

enum how { ANSWERED, CLOSED, SILENT };

struct answer {
    enum how how;
    int status;                    /* the final status (an HTTP/0.9 answer, no status line: 200) */
    char line[80];                 /* its status line, for a message */
};

static bool refused(const struct answer *a) { return a->how != ANSWERED || a->status >= 400; }

/* The first final answer in buf (1xx ones skipped); false while more is
 * needed. */
static bool final_answer(const char *buf, size_t n, bool eof, struct answer *a)
{
    const char *p = buf, *end = buf + n;
    while (end - p >= 12 && !strncmp(p, "HTTP/1.", 7) && p[9] == '1') {   /* 1xx: its head */
        const char *e = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
        if (!e)
            return false;
        p = e + 4;
    }
    if (p == end)
        return eof;   /* closed without an answer, or not yet */
    size_t k = (size_t)(end - p) < 5 ? (size_t)(end - p) : 5;
    if (strncmp(p, "HTTP/", k)) {
        a->status = 200;   /* nginx answers HTTP/0.9 with the body alone */
        snprintf(a->line, sizeof a->line, "(an HTTP/0.9 answer: the body alone)");
        return true;
    }
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol && !eof)
        return false;
    int st = -1;
    sscanf(p, "HTTP/%*d.%*d %d", &st);
    a->status = st;
    snprintf(a->line, sizeof a->line, "%.*s", (int)((eol ? eol : end) - p), p);
    a->line[strcspn(a->line, "\r")] = 0;
    return true;
}

/* One connection: a head sent, the write side shut after it (so that
 * neither peer waits for more), the answer read up to its status line. */
struct exchange {
    int fd;                        /* -1: over */
    size_t n;
    uint64_t quiet_since;          /* the send, or the last byte read */
    struct answer a;
    char buf[4096];
};

static void over(struct exchange *e)
{
    close(e->fd);
    e->fd = -1;
}

static void exchange_start(struct exchange *e, int port, const struct head *h)
{
    e->n = 0;
    e->a = (struct answer){ .how = CLOSED, .status = -1 };
    snprintf(e->a.line, sizeof e->a.line, "(closed without an answer)");
    e->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (e->fd < 0 || connect(e->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        snprintf(e->a.line, sizeof e->a.line, "(no connection: %s)", strerror(errno));
        if (e->fd >= 0)
            over(e);
        return;
    }
    for (size_t sent = 0; sent < h->len;) {
        ssize_t w = send(e->fd, h->bytes + sent, h->len - sent, MSG_NOSIGNAL);
        if (w <= 0)
            break;   /* answered and closed before the rest: read that */
        sent += (size_t)w;
    }
    shutdown(e->fd, SHUT_WR);
    fcntl(e->fd, F_SETFL, O_NONBLOCK);
    e->quiet_since = zb_now_ns();
}

/* What there is to read; over once the final status line is in, or the
 * peer closed. */
static void exchange_read(struct exchange *e)
{
    for (;;) {
        ssize_t r = read(e->fd, e->buf + e->n, sizeof e->buf - 1 - e->n);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        bool eof = r <= 0 || e->n + (size_t)r == sizeof e->buf - 1;
        e->n += r > 0 ? (size_t)r : 0;
        e->quiet_since = zb_now_ns();
        if (final_answer(e->buf, e->n, eof, &e->a)) {
            e->a.how = e->a.status < 0 ? CLOSED : ANSWERED;
            over(e);
            return;
        }
        if (eof) {
            over(e);
            return;
        }
    }
}

/* A head with the two exchanges it is sent in: to nginx, to the server. */
struct pair {
    bool busy;
    int index;                     /* the head's number; an issue's case: below 0 */
    struct head h;
    struct exchange ex[2];
};

/* The pairs of pending, each exchange read as its bytes come, until all
 * are over (one silent for SILENCE_MS is given up); done(pair) for each
 * pair as it ends. */
static void exchange_all(struct pair *pairs, int n, void (*done)(struct pair *, void *), void *arg)
{
    for (;;) {
        struct pollfd fds[2 * IN_FLIGHT];
        struct exchange *of[2 * IN_FLIGHT];
        int nf = 0;
        uint64_t now = zb_now_ns(), due = UINT64_MAX;
        for (int i = 0; i < n; i++) {
            if (!pairs[i].busy)
                continue;
            for (int k = 0; k < 2; k++) {
                struct exchange *e = &pairs[i].ex[k];
                if (e->fd >= 0 && now - e->quiet_since >= (uint64_t)SILENCE_MS * 1000000) {
                    e->a.how = SILENT;
                    snprintf(e->a.line, sizeof e->a.line, "(no answer and no close in %d ms)",
                             SILENCE_MS);
                    over(e);
                }
                if (e->fd >= 0 && nf < 2 * IN_FLIGHT) {
                    fds[nf] = (struct pollfd){ .fd = e->fd, .events = POLLIN };
                    of[nf++] = e;
                    if (e->quiet_since + (uint64_t)SILENCE_MS * 1000000 < due)
                        due = e->quiet_since + (uint64_t)SILENCE_MS * 1000000;
                }
            }
            if (pairs[i].ex[0].fd < 0 && pairs[i].ex[1].fd < 0) {
                pairs[i].busy = false;
                done(&pairs[i], arg);
            }
        }
        if (!nf)
            return;
        int ready = poll(fds, (nfds_t)nf, (int)((due - now) / 1000000) + 1);
        for (int i = 0; ready > 0 && i < nf; i++)
            if (fds[i].revents)
                exchange_read(of[i]);
    }
}

/* The bytes of a head as a C string literal would show them. */
static void escaped(const char *s, size_t n, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 8 < outlen; i++) {
        unsigned char ch = (unsigned char)s[i];
        o += (size_t)(ch == '\r' ? snprintf(out + o, outlen - o, "\\r")
                      : ch == '\n' ? snprintf(out + o, outlen - o, "\\n")
                      : ch == '\t' ? snprintf(out + o, outlen - o, "\\t")
                      : ch == '"' || ch == '\\' ? snprintf(out + o, outlen - o, "\\%c", ch)
                      : ch < 0x20 || ch >= 0x7f ? snprintf(out + o, outlen - o, "\\x%02x", ch)
                      : snprintf(out + o, outlen - o, "%c", ch));
    }
    out[o] = 0;
}

/* ---- setup ---- */

static int nginx_port(void) { return env_port("ZB_NGINX_PORT", 8090); }

/* nginx with the config that answers 200 where no file is (scripts/nginx
 * start rewrites and reloads an older one): asked until it does, for at
 * most 10 s. */
static void no_op(struct pair *p, void *arg) { (void)p, (void)arg; }

static bool nginx_answers_paths(void)
{
    static struct pair p;
    p.h.len = (size_t)snprintf(p.h.bytes, sizeof p.h.bytes, "GET /zip/x/1 HTTP/1.1\r\nHost: x\r\n\r\n");
    for (int i = 0; i < 200; i++) {
        exchange_start(&p.ex[0], nginx_port(), &p.h);
        p.ex[1].fd = -1;
        p.busy = true;
        exchange_all(&p, 1, no_op, NULL);
        if (p.ex[0].a.how == ANSWERED && p.ex[0].a.status == 200)
            return true;
        struct timespec ts = { 0, 50 * 1000000 };
        nanosleep(&ts, NULL);
    }
    return false;
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", build_path("test/httpdiff"));
    snprintf(csv, sizeof csv, "%s/g.csv", dir);
    snprintf(conf, sizeof conf, "%s/httpdiff.conf", dir);
    snprintf(logfile, sizeof logfile, "%s/server.log", dir);
    if (fresh_generated_set(dir, csv, ROWS, 3, setup_error, sizeof setup_error) < 0 ||
        first_code(csv, code, sizeof code, setup_error, sizeof setup_error) < 0)
        return;
    /* The first row's local government code (its first field) for /list. */
    FILE *f = fopen(csv, "r");
    if (!f || fscanf(f, "\"%5[0-9]\"", jis) != 1)
        snprintf(setup_error, sizeof setup_error, "no jis_code in %s", csv);
    if (f)
        fclose(f);
    if (setup_error[0])
        return;
    char sqlite[1200], out[4096];
    snprintf(sqlite, sizeof sqlite, "%s/httpdiff.sqlite", dir);
    const struct conf_change changes[] = {
        { "backend sqlite", "path", sqlite },
        { "backend sqlite", "table", "zt_httpdiff" },
        { "server", "connection_timeout_s", IDLE_S },
        { NULL, NULL, NULL },
    };
    if (write_conf_copy(conf, changes, NULL, setup_error, sizeof setup_error) < 0)
        return;
    int rc = run_cmd(out, sizeof out, "%s -q --conf %s --backend sqlite --mode bulk --dataset %s",
                     prog("loader"), conf, csv);
    if (rc) {
        snprintf(setup_error, sizeof setup_error, "loader: exit %d: %s", rc, out);
        return;
    }
    nginx_ours = run_cmd(NULL, 0, "scripts/nginx status") != 0;
    if ((rc = run_cmd(out, sizeof out, "scripts/nginx start")) != 0) {
        snprintf(setup_error, sizeof setup_error, "scripts/nginx start: exit %d: %s", rc, out);
        return;
    }
    if (!nginx_answers_paths()) {
        snprintf(setup_error, sizeof setup_error, "nginx on port %d does not answer 200 for a "
                 "path with no file (is build/nginx/nginx.conf scripts/nginx's?)", nginx_port());
        return;
    }
    server_pid = fixture_server(conf, PORT, logfile, "--backends sqlite", setup_error,
                                sizeof setup_error);
}

static void teardown(void)
{
    term_server(server_pid);
    server_pid = 0;
    if (nginx_ours)
        run_cmd(NULL, 0, "scripts/nginx stop");
}

/* ---- the run ---- */

struct run {
    uint64_t seed;
    int heads, clean, nginx_refused, server_refused, own, limits, silent, failures;
    char shown[FAILURES_SHOWN * 3000];
};

static void failed(struct run *run, int i, const struct head *h, const char *why,
                   const struct answer *ng, const struct answer *zb)
{
    if (run->failures++ >= FAILURES_SHOWN)
        return;
    char esc[2200];
    escaped(h->bytes, h->len, esc, sizeof esc);
    size_t used = strlen(run->shown);
    snprintf(run->shown + used, sizeof run->shown - used,
             "\n  head #%d (%s): %s\n    nginx: %s\n    server: %s\n    \"%s\"", i,
             h->what[0] ? h->what : "no mutation", why, ng->line, zb->line, esc);
}

/* Both answers to a head, held to the rules (the file's comment). */
static void judge(struct pair *p, void *arg)
{
    struct run *run = arg;
    const struct head *h = &p->h;
    const struct answer *ng = &p->ex[0].a, *zb = &p->ex[1].a;
    run->heads++;
    run->clean += h->clean;
    run->nginx_refused += refused(ng);
    run->server_refused += refused(zb);
    run->silent += (ng->how == SILENT) + (zb->how == SILENT);
    unsigned own = 0, limit = 0;
    for (int d = 0; d < NDIFF; d++)
        if (h->marks & differences[d].mark)
            *(differences[d].kind == OWN ? &own : &limit) |= differences[d].mark;
    run->own += own != 0;
    if (zb->how == SILENT)
        failed(run, p->index, h, "the server neither answered nor closed", ng, zb);
    else if (h->clean && (refused(ng) || refused(zb) || ng->status >= 300 || zb->status >= 300))
        failed(run, p->index, h, "a head with no mutation, not 2xx from both", ng, zb);
    else if (limit && !refused(zb))
        run->limits++;   /* what follows the limit may not have been read as a header */
    else if (own && !refused(zb))
        failed(run, p->index, h, "breaks a rule of the server's own (see the list), yet accepted",
               ng, zb);
    else if (refused(ng) && !refused(zb))
        failed(run, p->index, h, "nginx refuses it, the server accepts it", ng, zb);
}

/* Named cases, sent every run whatever the seed, on this set's code:
 * issue 47's (the first five) and what this differential test found
 * first; before the fixes each was answered 200. */
static const struct {
    const char *form;              /* %s: the code (/list's: the jis_code) */
    unsigned marks;
} issue_cases[] = {
    { "GET /zip%%2Fsqlite/%s HTTP/1.1\r\nHost: x\r\n\r\n", HEAD_OWN_TARGET },
    { "GET /zip/sqlite%%2F%s HTTP/1.1\r\nHost: x\r\n\r\n", HEAD_OWN_TARGET },
    { "GET /list%%2Fsqlite%%2F%s HTTP/1.1\r\nHost: x\r\n\r\n", HEAD_OWN_TARGET },
    { "GET /zip/sqlite/%s HTTP/1.2\r\nHost: x\r\n\r\n", HEAD_OWN_VERSION },
    { "GET /zip/sqlite/%s HTTP/1.9\r\nHost: x\r\n\r\n", HEAD_OWN_VERSION },
    { "GET /zip/%%2e%%2e/zip/sqlite/%s HTTP/1.1\r\nHost: x\r\n\r\n", HEAD_OWN_TARGET },
    { "GET /zip/sqlite/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n", 0 },
    { "GET /zip/sqlite/%s HTTP/1.1\r\nHost: x/y\r\n\r\n", 0 },
    { "GET /zip/sqlite/%s HTTP/1.1\r\nHost: x\r\n: x\r\n\r\n", 0 },
};
#define NISSUE (int)(sizeof issue_cases / sizeof issue_cases[0])

static void issue_head(int i, struct head *h)
{
    memset(h, 0, sizeof *h);
    const char *form = issue_cases[i].form;
    h->len = (size_t)snprintf(h->bytes, sizeof h->bytes, form, strstr(form, "list") ? jis : code);
    h->marks = issue_cases[i].marks;
    snprintf(h->what, sizeof h->what, "a named case, %d", i + 1);
}

START_TEST(heads_refused_where_nginx_refuses)
{
    SETUP_OK();
    static struct run run;
    memset(&run, 0, sizeof run);
    const char *s = getenv("ZB_HTTPDIFF_SEED");
    run.seed = s && *s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
    char paths[8][64];
    snprintf(paths[0], sizeof paths[0], "/zip/sqlite/%s", code);
    snprintf(paths[1], sizeof paths[1], "/zip/sqlite/random");
    snprintf(paths[2], sizeof paths[2], "/cached/sqlite/%s", code);
    snprintf(paths[3], sizeof paths[3], "/list/sqlite/%s", jis);
    snprintf(paths[4], sizeof paths[4], "/queries/sqlite?queries=3");
    snprintf(paths[5], sizeof paths[5], "/health");
    snprintf(paths[6], sizeof paths[6], "/stats");
    snprintf(paths[7], sizeof paths[7], "/zip/sqlite/%s?strategy=per-request", code);
    const char *const list[] = { paths[0], paths[1], paths[2], paths[3],
                                 paths[4], paths[5], paths[6], paths[7] };
    static struct pair pairs[IN_FLIGHT];
    for (int next = -NISSUE; next < HEADS && run.silent < SILENT_MAX;) {
        for (int i = 0; i < IN_FLIGHT && next < HEADS; i++) {
            struct pair *p = &pairs[i];
            if (p->busy)
                continue;
            p->index = next++;
            if (p->index < 0) {
                issue_head(-1 - p->index, &p->h);
            } else {
                uint64_t rng = run.seed + (uint64_t)p->index * 0x9E3779B97F4A7C15ull;
                headgen(&rng, list, 8, &p->h);
            }
            exchange_start(&p->ex[0], nginx_port(), &p->h);
            exchange_start(&p->ex[1], PORT, &p->h);
            p->busy = true;
        }
        exchange_all(pairs, IN_FLIGHT, judge, &run);
    }
    printf("httpdiff: seed %llu, %d heads (%d without mutation, %d against a rule of the "
           "server's own): nginx refused %d, the server %d; %d known limits; %d failures\n",
           (unsigned long long)run.seed, run.heads, run.clean, run.own, run.nginx_refused,
           run.server_refused, run.limits, run.failures);
    ck_assert_msg(run.silent < SILENT_MAX, "seed %llu: %d exchanges with no answer and no close",
                  (unsigned long long)run.seed, run.silent);
    ck_assert_msg(run.failures == 0, "seed %llu (ZB_HTTPDIFF_SEED=%llu replays it): %d of %d "
                  "heads failed; the first:%s", (unsigned long long)run.seed,
                  (unsigned long long)run.seed, run.failures, run.heads, run.shown);
    /* Not a trivial pass: both peers said yes and no. */
    ck_assert_msg(run.clean > 0 && run.nginx_refused > 0 && run.nginx_refused < run.heads,
                  "seed %llu: nginx refused %d of %d", (unsigned long long)run.seed,
                  run.nginx_refused, run.heads);
}
END_TEST

/* The list of differences is docs/RELIABILITY-server.md's, item for item. */
START_TEST(differences_are_documented)
{
    FILE *f = fopen("docs/RELIABILITY-server.md", "r");
    ck_assert_msg(f != NULL, "no docs/RELIABILITY-server.md (run from the tree's top)");
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    const char *section = strstr(text, "### Request heads against nginx");
    ck_assert_msg(section != NULL, "docs/RELIABILITY-server.md has no \"### Request heads against nginx\"");
    const char *next = strstr(section + 4, "\n#");
    for (int d = 0; d < NDIFF; d++) {
        char item[128];
        snprintf(item, sizeof item, "- **%s**", differences[d].name);
        const char *at = strstr(section, item);
        ck_assert_msg(at && (!next || at < next), "docs/RELIABILITY-server.md's \"Request heads against "
                      "nginx\" has no item %s", item);
    }
}
END_TEST

Suite *suite_httpdiff(void)
{
    TCase *t = test_case("httpdiff", setup, teardown, 300, TESTS(heads_refused_where_nginx_refuses));
    TCase *docs = tier(test_case("httpdiff_docs", NULL, NULL, 0, TESTS(differences_are_documented)),
                       TIER_UNIT);
    return suite_of("httpdiff", t, docs, NULL);
}
