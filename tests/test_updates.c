/* POST /update/{backend}/{code} and /updates/{backend}?queries=N end to
 * end (docs/REQUEST-TYPES.md): a generated set loaded into the four
 * backends' test tables, the server started with `writes = yes` on them
 * (and a pg backend with writes off on the same table), and each answer's
 * stamp read back from {table}_hits through the driver. The lookup tables
 * must not change: their row counts and checksums are taken before the
 * server starts and again at the end.
 *
 * The database script is $ZB_DB (default scripts/db); the config copied is
 * $ZB_CONF (default conf/zipbench.conf). */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "conf.h"
#include "helpers.h"
#include "strategy.h"

/* The server's strategies, its one list (server/strategy.h). */
#define strategies strategy_names
#include "util.h"

#define ROWS 400
#define PORT test_port(18107)
#define PORT2 test_port(18117)   /* a second server writing the same tables */
#define NB 4

static const char *const backends[NB] = { "sqlite", "pg", "innodb", "myisam" };
static const char *const tables[NB] = { "zt_updates", "zt_updates", "zt_updates_innodb",
                                        "zt_updates_myisam" };
static char dir[1024], csv[1100], conf[1100], sqlite_path[1100], logfile[1100];
static char setup_error[8192];
static char code[16];                /* the first code of the set */
static pid_t server_pid, server2_pid;
static char keysfile[1100], logfile2[1100];

/* Each lookup table before the server started: rows, and the sum of a
 * hash of each row's values (order-free). */
static struct { long rows; uint64_t sum; } before[NB];

static const char *db_script(void)
{
    const char *s = getenv("ZB_DB");
    return s && *s ? s : "scripts/db";
}

/* ---- the database, through the driver ---- */

struct checksum {
    long rows;
    uint64_t sum;
};

static int sum_row(void *arg, int n, const char *const *v, const size_t *l)
{
    struct checksum *c = arg;
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        for (size_t j = 0; v[i] && j < l[i]; j++)
            h = (h ^ (unsigned char)v[i][j]) * 1099511628211ull;
        h = (h ^ (v[i] ? 0x1f : 0x2e)) * 1099511628211ull;
    }
    c->rows++;
    c->sum += h;
    return 0;
}

static int first_value(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)l;
    char *out = arg;
    snprintf(out, 32, "%s", n > 0 && v[0] ? v[0] : "NULL");
    return 0;
}

/* Runs sql (one parameter, or none) on backend b of the test config;
 * each row to fn. 0, or -1 with why. */
static int on_backend(const char *b, const char *sql, const char *param, row_fn fn, void *arg,
                      char *why, size_t whylen)
{
    struct zb_conf c;
    struct zb_err err = { 0 };
    int rc = -1;
    if (conf_load(&c, conf, &err) == 0) {
        struct backend be;
        const char *params[1] = { param };
        if (backend_open(&be, conf_backend(&c, b), &err) == 0) {
            rc = be.drv->query(be.db, sql, param ? 1 : 0, params, fn, arg, NULL, &err);
            backend_close(&be);
        }
    }
    if (rc < 0)
        snprintf(why, whylen, "%s: %s", b, err.msg);
    conf_free(&c);
    return rc;
}

static struct checksum table_sum(int i)
{
    char sql[256], why[600];
    struct checksum c = { 0, 0 };
    snprintf(sql, sizeof sql, "SELECT * FROM %s", tables[i]);
    ck_assert_msg(on_backend(backends[i], sql, NULL, sum_row, &c, why, sizeof why) == 0, "%s",
                  why);
    return c;
}

/* The stamp {table}_hits holds for code on backend i ("NONE": no row). */
static uint64_t stored_stamp(int i, const char *c)
{
    char sql[256], why[600], v[32] = "NONE";
    snprintf(sql, sizeof sql, "SELECT stamp FROM %s_hits WHERE zip_code = ?", tables[i]);
    ck_assert_msg(on_backend(backends[i], sql, c, first_value, v, why, sizeof why) == 0, "%s",
                  why);
    ck_assert_msg(strcmp(v, "NONE"), "%s: no row for %s in %s_hits", backends[i], c, tables[i]);
    return strtoull(v, NULL, 10);
}

/* ---- HTTP ---- */

struct resp {
    int status;
    char head[4096];
    char body[1 << 16];
};

static struct resp R;

static struct resp *request(const char *method, const char *extra, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static struct resp *request(const char *method, const char *extra, const char *fmt, ...)
{
    char path[1024], req[2048];
    FORMAT_INTO(path, fmt);
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                     "%s\r\n", method, path, extra ? extra : "");
    static char raw[sizeof R.head + sizeof R.body];
    int got = http_exchange(PORT, req, (size_t)n, raw, sizeof raw, 15000);
    R.status = got > 0 ? http_status(raw) : -1;
    R.head[0] = R.body[0] = 0;
    const char *b = got > 0 ? strstr(raw, "\r\n\r\n") : NULL;
    if (b) {
        snprintf(R.head, sizeof R.head, "%.*s", (int)(b - raw), raw);
        snprintf(R.body, sizeof R.body, "%s", b + 4);
    }
    return &R;
}

#define POST(...) request("POST", "Content-Length: 0\r\n", __VA_ARGS__)

/* The whole number after "key": in s (from), or -1; *next after it. */
static long long num_after(const char *s, const char *key, const char **next)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(s, k);
    if (!p)
        return -1;
    char *end;
    long long v = strtoll(p + strlen(k), &end, 10);
    if (next)
        *next = end;
    return end == p + strlen(k) ? -1 : v;
}

/* ---- the fixture ---- */

static int write_conf(char *msg, size_t len)
{
    char port[16], extra[512];
    snprintf(port, sizeof port, "%d", PORT);
    /* pg_nw: pg's table with writes off. */
    snprintf(extra, sizeof extra, "\n[backend pg_nw]\ndriver = pg\nsocket = build/db/run\n"
             "port = ${ZB_PG_PORT:-25432}\nuser = zipbench\npassword_file = build/db/pgpass\n"
             "database = zipbench\ntable = zt_updates\nnamed_only = yes\n");
    const struct conf_change changes[] = {
        { "server", "port", port },
        { "backend sqlite", "path", sqlite_path },
        { "backend sqlite", "table", "zt_updates" },
        { "backend sqlite", "journal_mode", "delete" },
        { "backend sqlite", "synchronous", "full" },
        { "backend pg", "table", "zt_updates" },
        { "backend innodb", "table", "zt_updates_innodb" },
        { "backend myisam", "table", "zt_updates_myisam" },
        { "backend sqlite", "writes", "yes" },
        { "backend pg", "writes", "yes" },
        { "backend innodb", "writes", "yes" },
        { "backend myisam", "writes", "yes" },
        { "backend *", "connect_timeout_s", "10" },
        { "*", "table", NULL },
        { NULL, NULL, NULL },
    };
    return write_conf_copy(conf, changes, extra, msg, len);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", build_path("test/updates"));
    snprintf(csv, sizeof csv, "%s/g.csv", dir);
    if (fresh_generated_set(dir, csv, ROWS, 11, setup_error, sizeof setup_error) < 0)
        return;
    snprintf(conf, sizeof conf, "%s/updates.conf", dir);
    snprintf(sqlite_path, sizeof sqlite_path, "%s/updates.sqlite", dir);
    snprintf(logfile, sizeof logfile, "%s/server.log", dir);
    if (first_code(csv, code, sizeof code, setup_error, sizeof setup_error) < 0 ||
        write_conf(setup_error, sizeof setup_error) < 0)
        return;
    run_cmd(NULL, 0, "%s start", db_script());
    char out[4096];
    for (int i = 0; i < NB; i++) {
        int rc = run_cmd(out, sizeof out, "%s -q --conf %s --backend %s --mode bulk --dataset %s",
                         prog("loader"), conf, backends[i], csv);
        if (rc) {
            snprintf(setup_error, sizeof setup_error, "loader %s: exit %d: %s", backends[i], rc,
                     out);
            return;
        }
        /* A fresh ledger: what an earlier run wrote is gone. */
        char sql[128];
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s_hits", tables[i]);
        struct zb_conf c;
        struct zb_err err = { 0 };
        if (conf_load(&c, conf, &err) == 0) {
            struct backend be;
            if (backend_open(&be, conf_backend(&c, backends[i]), &err) == 0) {
                be.drv->exec(be.db, sql, &err);
                backend_close(&be);
            }
        }
        conf_free(&c);
    }
    for (int i = 0; i < NB; i++) {
        char sql[256];
        struct checksum c = { 0, 0 };
        snprintf(sql, sizeof sql, "SELECT * FROM %s", tables[i]);
        if (on_backend(backends[i], sql, NULL, sum_row, &c, setup_error, sizeof setup_error) < 0)
            return;
        before[i].rows = c.rows;
        before[i].sum = c.sum;
    }
    /* The codes, for loadgen --keys. */
    snprintf(keysfile, sizeof keysfile, "%s/codes.keys", dir);
    if (run_cmd(out, sizeof out, "%s -q --conf %s --dataset %s --write-keys %s", prog("loader"),
                conf, csv, keysfile)) {
        snprintf(setup_error, sizeof setup_error, "loader --write-keys: %s", out);
        return;
    }
    server_pid = fixture_server(conf, PORT, logfile, "--backends sqlite,pg,innodb,myisam,pg_nw",
                                setup_error, sizeof setup_error);
    snprintf(logfile2, sizeof logfile2, "%s/server2.log", dir);
    if (!setup_error[0])
        server2_pid = fixture_server(conf, PORT2, logfile2, "--backends sqlite,pg,innodb,myisam",
                                     setup_error, sizeof setup_error);
}

static void teardown(void)
{
    term_server(server_pid);
    term_server(server2_pid);
    server_pid = server2_pid = 0;
}

#define SETUP_OK() ck_assert_msg(!setup_error[0], "%s", setup_error)

/* ---- the tests ---- */

START_TEST(writes_off_answer_403_and_change_nothing)
{
    SETUP_OK();
    uint64_t was = stored_stamp(1, code);
    struct resp *r = POST("/update/pg_nw/%s", code);
    ck_assert_msg(r->status == 403, "%d %s", r->status, r->body);
    ck_assert_str_eq(r->body, "{\"backend\":\"pg_nw\",\"error\":\"writes are off for this "
                              "backend (writes = yes in its [backend] section)\",\"status\":403}");
    r = POST("/updates/pg_nw?queries=3");
    ck_assert_msg(r->status == 403, "%d %s", r->status, r->body);
    ck_assert_uint_eq(stored_stamp(1, code), was);
}
END_TEST

START_TEST(update_on_every_backend_is_in_its_row)
{
    SETUP_OK();
    for (int i = 0; i < NB; i++) {
        uint64_t held = stored_stamp(i, code);
        struct resp *r = POST("/update/%s/%s", backends[i], code);
        ck_assert_msg(r->status == 200, "%s: %d %s", backends[i], r->status, r->body);
        char head[128];
        snprintf(head, sizeof head, "{\"backend\":\"%s\",\"code\":\"%s\",\"was\":", backends[i],
                 code);
        ck_assert_msg(!strncmp(r->body, head, strlen(head)), "%s", r->body);
        long long was = num_after(r->body, "was", NULL), stamp = num_after(r->body, "stamp", NULL);
        ck_assert_msg(was == (long long)held, "%s: was %lld, the row held %" PRIu64, backends[i],
                      was, held);
        ck_assert_msg(stamp > was, "%s", r->body);
        ck_assert_msg(!strchr(r->body, '\n') && r->body[strlen(r->body) - 1] == '}',
                      "framed as /zip's: %s", r->body);
        ck_assert_uint_eq(stored_stamp(i, code), (uint64_t)stamp);
        /* Again: the previous stamp is `was`. */
        r = POST("/update/%s/%s", backends[i], code);
        ck_assert_msg(r->status == 200, "%s: %d %s", backends[i], r->status, r->body);
        ck_assert_int_eq(num_after(r->body, "was", NULL), stamp);
        long long again = num_after(r->body, "stamp", NULL);
        ck_assert_msg(again > stamp, "%s", r->body);
        ck_assert_uint_eq(stored_stamp(i, code), (uint64_t)again);
    }
}
END_TEST

START_TEST(updates_of_n_codes)
{
    SETUP_OK();
    static const char *const bad[] = { "0", "501", "abc", "-1", "1.5", "" };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        struct resp *r = POST("/updates/pg?queries=%s", bad[k]);
        ck_assert_msg(r->status == 400, "queries=%s: %d %s", bad[k], r->status, r->body);
        ck_assert_str_eq(r->body, "{\"backend\":\"pg\",\"error\":\"queries must be a whole "
                                  "number from 1 to 500\",\"status\":400}");
    }
    ck_assert_int_eq(POST("/updates/pg")->status, 400);
    for (int i = 0; i < NB; i++) {
        struct resp *r = POST("/updates/%s?queries=5", backends[i]);
        ck_assert_msg(r->status == 200, "%s: %d %s", backends[i], r->status, r->body);
        char head[128];
        snprintf(head, sizeof head, "{\"backend\":\"%s\",\"queries\":5,\"written\":[{\"code\":\"",
                 backends[i]);
        ck_assert_msg(!strncmp(r->body, head, strlen(head)), "%s", r->body);
        const char *p = r->body;
        for (int k = 0; k < 5; k++) {
            const char *c = strstr(p, "{\"code\":\"");
            ck_assert_msg(c, "entry %d of %s", k, r->body);
            char one[8];
            memcpy(one, c + 9, 7);
            one[7] = 0;
            long long stamp = num_after(c, "stamp", &p);
            ck_assert_msg(stamp > 0, "%s", r->body);
            /* The row holds this write or a later one (a code drawn twice). */
            ck_assert_msg(stored_stamp(i, one) >= (uint64_t)stamp, "%s: %s", backends[i], one);
        }
        ck_assert_msg(!strcmp(p, "}]}"), "the end: %s", p);
    }
    ck_assert_int_eq(POST("/updates/pg?queries=500")->status, 200);
}
END_TEST

START_TEST(methods_bodies_bad_and_unknown_codes)
{
    SETUP_OK();
    struct resp *r = request("GET", NULL, "/update/pg/%s", code);
    ck_assert_msg(r->status == 405, "%d %s", r->status, r->body);
    ck_assert_msg(strstr(r->head, "\r\nAllow: POST"), "%s", r->head);
    ck_assert_int_eq(request("GET", NULL, "/updates/pg?queries=2")->status, 405);
    ck_assert_int_eq(request("HEAD", NULL, "/update/sqlite/%s", code)->status, 405);
    ck_assert_int_eq(request("PUT", "Content-Length: 0\r\n", "/update/pg/%s", code)->status, 405);
    /* POST elsewhere: still 405. */
    ck_assert_int_eq(POST("/zip/pg/%s", code)->status, 405);
    r = request("POST", "Content-Length: 3\r\n\r\nabc", "/update/pg/%s", code);
    ck_assert_msg(r->status == 413, "%d %s", r->status, r->body);
    for (int i = 0; i < NB; i++) {
        r = POST("/update/%s/0000000", backends[i]);
        ck_assert_msg(r->status == 404, "%s: %d %s", backends[i], r->status, r->body);
        char want[160];
        snprintf(want, sizeof want, "{\"backend\":\"%s\",\"code\":\"0000000\",\"error\":"
                 "\"no such code\",\"status\":404}", backends[i]);
        ck_assert_str_eq(r->body, want);
    }
    ck_assert_int_eq(POST("/update/pg/12345")->status, 400);
    ck_assert_int_eq(POST("/update/pg/random")->status, 400);
    ck_assert_int_eq(POST("/update/pg")->status, 400);
    ck_assert_int_eq(POST("/update/nosuch/%s", code)->status, 404);
    ck_assert_int_eq(POST("/update/pg/%s?strategy=nosuch", code)->status, 400);
}
END_TEST

START_TEST(every_strategy_writes)
{
    SETUP_OK();
    for (int i = 0; i < NB; i++)
        for (int s = 0; s < NSTRATEGIES; s++) {
            struct resp *r = POST("/update/%s/%s?strategy=%s", backends[i], code, strategies[s]);
            if (!strcmp(strategies[s], "pipelined") && i != 1) {   /* only pg pipelines */
                ck_assert_msg(r->status == 400, "%s: %d %s", backends[i], r->status, r->body);
                continue;
            }
            ck_assert_msg(r->status == 200, "%s %s: %d %s", backends[i], strategies[s], r->status,
                          r->body);
            long long stamp = num_after(r->body, "stamp", NULL);
            ck_assert_uint_eq(stored_stamp(i, code), (uint64_t)stamp);
            r = POST("/updates/%s?queries=3&strategy=%s", backends[i], strategies[s]);
            ck_assert_msg(r->status == 200, "%s %s: %d %s", backends[i], strategies[s], r->status,
                          r->body);
        }
}
END_TEST

/* SQLite: another connection holds the file's write lock. The server's
 * write never waits on it in its loop: it is tried again, and after
 * acquire_timeout_ms (the shipped 2000) answered 503, with the row as it
 * was; the loop meanwhile answers lookups. Once the lock is gone it
 * writes. */
START_TEST(sqlite_locked_503_then_writes)
{
    SETUP_OK();
    uint64_t held = stored_stamp(0, code);
    struct zb_conf c;
    struct zb_err err = { 0 };
    ck_assert_msg(conf_load(&c, conf, &err) == 0, "%s", err.msg);
    struct backend be;
    ck_assert_msg(backend_open(&be, conf_backend(&c, "sqlite"), &err) == 0, "%s", err.msg);
    ck_assert_msg(be.drv->exec(be.db, "BEGIN IMMEDIATE", &err) == 0, "%s", err.msg);
    uint64_t t0 = zb_now_ns();
    struct resp *r = POST("/update/sqlite/%s", code);
    double s = (double)(zb_now_ns() - t0) / 1e9;
    ck_assert_msg(r->status == 503, "%d %s", r->status, r->body);
    ck_assert_msg(strstr(r->head, "\r\nRetry-After: 1"), "%s", r->head);
    ck_assert_msg(s >= 1.9 && s < 10, "answered after %.2f s", s);
    ck_assert_int_eq(request("GET", NULL, "/zip/sqlite/%s", code)->status, 200);
    /* /stats counts the write's wait under the backend's write table. */
    r = request("GET", NULL, "/stats");
    const char *w = strstr(r->body, "{\"name\":\"sqlite\"");
    ck_assert_msg(w, "%s", r->body);
    w = strstr(w, "\"write\":{");
    ck_assert_msg(w && json_num(w, "lock_waits") >= 1, "%s", r->body);
    be.drv->exec(be.db, "ROLLBACK", &err);
    backend_close(&be);
    conf_free(&c);
    ck_assert_uint_eq(stored_stamp(0, code), held);
    r = POST("/update/sqlite/%s", code);
    ck_assert_msg(r->status == 200, "%d %s", r->status, r->body);
    ck_assert_uint_eq(stored_stamp(0, code), (uint64_t)num_after(r->body, "stamp", NULL));
}
END_TEST

/* ---- the ledger and the audit: no acknowledged write lost ---- */

/* The write table of backend i, whole: code -> stamp, in code order. */
struct hits {
    long n;
    char code[ROWS * 2][8];
    uint64_t stamp[ROWS * 2];
};

static int take_hit(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)l;
    struct hits *h = arg;
    if (n < 2 || !v[0] || !v[1] || h->n == ROWS * 2)
        return 1;
    snprintf(h->code[h->n], 8, "%s", v[0]);
    h->stamp[h->n++] = strtoull(v[1], NULL, 10);
    return 0;
}

static void read_hits(int i, struct hits *h)
{
    char sql[256], why[600];
    h->n = 0;
    snprintf(sql, sizeof sql, "SELECT zip_code, stamp FROM %s_hits ORDER BY zip_code", tables[i]);
    ck_assert_msg(on_backend(backends[i], sql, NULL, take_hit, h, why, sizeof why) == 0, "%s", why);
}

static long hit_of(const struct hits *h, const char *code)
{
    long lo = 0, hi = h->n;
    while (lo < hi) {
        long mid = (lo + hi) / 2;
        int c = strcmp(h->code[mid], code);
        if (!c)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The audit of one run on backend i, against the table before it: every
 * row still there (no more, no fewer); every acknowledged (code, stamp)
 * in the ledgers written over what its code held (stamp > was) and held
 * by its row or overtaken by a later write (row >= stamp); no stamp
 * acknowledged twice. Returns how many acknowledgements it read. */
static long audit(int i, const struct hits *before_run, const char *const *ledgers, int nledgers,
                  const char *what)
{
    struct hits *after = malloc(sizeof *after);
    read_hits(i, after);
    ck_assert_msg(after->n == before_run->n, "%s: %s_hits has %ld rows, %ld before the run",
                  what, tables[i], after->n, before_run->n);
    for (long k = 0; k < after->n; k++)
        ck_assert_msg(!strcmp(after->code[k], before_run->code[k]) &&
                      after->stamp[k] >= before_run->stamp[k], "%s: row %s went back or away",
                      what, before_run->code[k]);
    size_t cap = 1 << 16, n = 0;
    uint64_t *stamps = malloc(cap * sizeof *stamps);
    for (int f = 0; f < nledgers; f++) {
        FILE *in = fopen(ledgers[f], "r");
        ck_assert_msg(in, "%s: no ledger %s", what, ledgers[f]);
        char line[1024];
        while (fgets(line, sizeof line, in)) {
            const char *c = strstr(line, "\"code\":\"");
            ck_assert_msg(c, "%s: a ledger line without a code: %s", what, line);
            char one[8];
            snprintf(one, sizeof one, "%.7s", c + 8);
            long long was = num_after(line, "was", NULL), stamp = num_after(line, "stamp", NULL);
            long at = hit_of(after, one);
            ck_assert_msg(at >= 0, "%s: acknowledged %s has no row", what, one);
            ck_assert_msg(stamp > was, "%s: acknowledged a write that changed nothing: %s", what,
                          line);
            ck_assert_msg(after->stamp[at] >= (uint64_t)stamp, "%s: acknowledged write lost: %s"
                          "(the row holds %" PRIu64 ")", what, line, after->stamp[at]);
            if (n == cap)
                stamps = realloc(stamps, (cap *= 2) * sizeof *stamps);
            stamps[n++] = (uint64_t)stamp;
        }
        fclose(in);
    }
    qsort(stamps, n, sizeof *stamps, cmp_u64);
    for (size_t k = 1; k < n; k++)
        ck_assert_msg(stamps[k] != stamps[k - 1], "%s: stamp %" PRIu64 " acknowledged twice", what,
                      stamps[k]);
    free(stamps);
    free(after);
    return (long)n;
}

/* Every backend and strategy that takes writes, at c=50 in all with
 * Zipfian keys (a few hot rows, written at once by many), half of it
 * through a second server writing the same tables: no acknowledged
 * write is lost, none changed nothing, no stamp is given twice. Before
 * the fix, the pipelined strategy sent several requests' writes under one
 * Sync, one transaction, and PostgreSQL's deadlock rolled back writes
 * already answered 200; and each server made stamps from its own clock,
 * so the first server's writes changed nothing after the second's. */
START_TEST(no_acknowledged_write_lost_at_c50)
{
    SETUP_OK();
    for (int i = 0; i < NB; i++)
        for (int s = 0; s < NSTRATEGIES; s++) {
            if (!strcmp(strategies[s], "pipelined") && i != 1)
                continue;   /* only pg pipelines */
            char what[64], ledger[2][1200];
            snprintf(what, sizeof what, "%s %s", backends[i], strategies[s]);
            struct hits *before_run = malloc(sizeof *before_run);
            read_hits(i, before_run);
            pid_t pid[2];
            for (int k = 0; k < 2; k++) {
                snprintf(ledger[k], sizeof ledger[k], "%s/ledger-%s-%s-%d", dir, backends[i],
                         strategies[s], k);
                unlink(ledger[k]);
                char cmd[8192];
                snprintf(cmd, sizeof cmd, "%s -q -k -c 25 -n 600 -m POST --keys %s --dist zipf:0.99 "
                         "--seed %d --ledger %s 'http://127.0.0.1:%d/update/%s/{key}?strategy=%s' "
                         "> %s.out 2>&1", prog("loadgen"), keysfile, 7 + k, ledger[k],
                         k ? PORT2 : PORT, backends[i], strategies[s], ledger[k]);
                pid[k] = fork();
                if (pid[k] == 0) {
                    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
                    _exit(127);
                }
            }
            for (int k = 0; k < 2; k++) {
                int st;
                waitpid(pid[k], &st, 0);
            }
            const char *files[] = { ledger[0], ledger[1] };
            long acks = audit(i, before_run, files, 2, what);
            ck_assert_msg(acks > 0, "%s: nothing acknowledged", what);
            free(before_run);
        }
}
END_TEST

START_TEST(lookups_still_answer_and_tables_are_unchanged)
{
    SETUP_OK();
    for (int i = 0; i < NB; i++) {
        struct resp *r = request("GET", NULL, "/zip/%s/%s", backends[i], code);
        ck_assert_msg(r->status == 200, "%s: %d %s", backends[i], r->status, r->body);
        struct checksum c = table_sum(i);
        ck_assert_msg(c.rows == before[i].rows && c.sum == before[i].sum,
                      "%s: %s changed: %ld rows (%ld before)", backends[i], tables[i], c.rows,
                      before[i].rows);
    }
}
END_TEST

/* Writes reachable from another host need a credential: a server bound
 * to a non-loopback address with writes on and no write_token refuses
 * to start (before it listens); with a token, a write without it, or
 * with another, is 401 (WWW-Authenticate: Bearer) and changes nothing,
 * with it 200; the token never reaches the log. */
START_TEST(writes_need_the_token_when_set)
{
    SETUP_OK();
    char out[8192];
    int rc = run_cmd(out, sizeof out, "timeout -k 1 10 %s --conf %s --port %d --bind 0.0.0.0 --allow-remote "
                     "--backends pg 2>&1", prog("server"), conf, test_port(18127));
    ck_assert_msg(rc == 2 && strstr(out, "write_token"), "exit %d: %s", rc, out);
    char log[1200], args[256];
    int port = test_port(18128);
    snprintf(log, sizeof log, "%s/token.log", dir);
    snprintf(args, sizeof args, "--backends pg --set server.write_token=s3cret-t0ken");
    out[0] = 0;
    pid_t pid = fixture_server(conf, port, log, args, out, sizeof out);
    ck_assert_msg(pid > 0 && !out[0], "%s", out);
    uint64_t held = stored_stamp(1, code);
    static const char *const auth[] = { "", "Authorization: Bearer wrong\r\n",
                                        "Authorization: Basic s3cret-t0ken\r\n",
                                        "Authorization: Bearer s3cret-t0ke\r\n" };
    for (size_t i = 0; i < sizeof auth / sizeof auth[0]; i++) {
        char req[512], raw[8192];
        int n = snprintf(req, sizeof req, "POST /update/pg/%s HTTP/1.1\r\nHost: x\r\n"
                         "Content-Length: 0\r\n%sConnection: close\r\n\r\n", code, auth[i]);
        ck_assert_int_gt(http_exchange(port, req, (size_t)n, raw, sizeof raw, 10000), 0);
        ck_assert_msg(http_status(raw) == 401 && strstr(raw, "\r\nWWW-Authenticate: Bearer"),
                      "%s", raw);
    }
    ck_assert_uint_eq(stored_stamp(1, code), held);
    char req[512], raw[8192];
    int n = snprintf(req, sizeof req, "POST /update/pg/%s HTTP/1.1\r\nHost: x\r\nContent-Length: "
                     "0\r\nAuthorization: Bearer s3cret-t0ken\r\nConnection: close\r\n\r\n", code);
    ck_assert_int_gt(http_exchange(port, req, (size_t)n, raw, sizeof raw, 10000), 0);
    ck_assert_msg(http_status(raw) == 200, "%s", raw);
    ck_assert_uint_gt(stored_stamp(1, code), held);
    term_server(pid);
    run_cmd(out, sizeof out, "cat '%s'", log);
    ck_assert_msg(!strstr(out, "s3cret"), "the token is in the log: %s", out);
}
END_TEST

/* The new keys are checked where the config is read: writes a boolean,
 * SQLite's journal_mode and synchronous among their values. */
START_TEST(config_keys_are_checked)
{
    static const struct { const char *set; const char *why; } bad[] = {
        { "pg.writes=maybe", "writes: 'maybe' is not yes or no" },
        { "sqlite.journal_mode=truncate", "journal_mode: 'truncate' is not delete or wal" },
        { "sqlite.synchronous=extra", "synchronous: 'extra' is not full, normal or off" },
        { "pg.journal_mode=wal", "journal_mode" },   /* pg's driver has no such key */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct zb_conf c;
        struct zb_err err = { 0 };
        int rc = conf_open(&c, conf_path(), &bad[i].set, 1, &err);
        ck_assert_msg(rc < 0, "%s accepted", bad[i].set);
        ck_assert_msg(strstr(err.msg, bad[i].why), "%s: %s", bad[i].set, err.msg);
        conf_free(&c);
    }
    static const char *const good[] = { "pg.writes=yes", "sqlite.journal_mode=delete",
                                        "sqlite.synchronous=off" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        struct zb_conf c;
        struct zb_err err = { 0 };
        ck_assert_msg(conf_open(&c, conf_path(), &good[i], 1, &err) == 0, "%s: %s", good[i],
                      err.msg);
        conf_free(&c);
    }
    struct zb_conf c;
    struct zb_err err = { 0 };
    ck_assert_int_eq(conf_load(&c, conf_path(), &err), 0);
    ck_assert(!conf_backend(&c, "pg")->writes);   /* off unless said */
    conf_free(&c);
}
END_TEST

Suite *suite_updates(void)
{
    TCase *t = test_case("updates", setup, teardown, 120, TESTS(
        writes_off_answer_403_and_change_nothing, update_on_every_backend_is_in_its_row,
        updates_of_n_codes, methods_bodies_bad_and_unknown_codes, every_strategy_writes,
        sqlite_locked_503_then_writes, no_acknowledged_write_lost_at_c50,
        writes_need_the_token_when_set,
        lookups_still_answer_and_tables_are_unchanged));
    TCase *keys = tier(test_case("update keys", NULL, NULL, 0, TESTS(config_keys_are_checked)),
                       TIER_UNIT);
    return suite_of("updates", keys, t, NULL);
}
