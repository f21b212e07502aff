/* Every route of the server's table and every strategy SQLite takes, on
 * SQLite alone: the unit tier (make check) tests the server with no
 * database server. A generated postal set is loaded into a SQLite file of
 * the test's own, and the server serves it with writes on.
 *
 * The route table is the server's (route.h): a route added to it without
 * a request here fails route_table_is_covered, and the 404's list, the
 * 405's Allow and the parameters' refusals come from the table too. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "route.h"
#include "strategy.h"

#define ROWS 300
#define PORT test_port(18140)

static char dir[1024], csv[1100], conf[1100], logfile[1100], code[16], jis[8];
static char setup_error[8192];
static pid_t server_pid;

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", build_path("test/routes"));
    snprintf(csv, sizeof csv, "%s/g.csv", dir);
    snprintf(conf, sizeof conf, "%s/routes.conf", dir);
    snprintf(logfile, sizeof logfile, "%s/server.log", dir);
    if (fresh_generated_set(dir, csv, ROWS, 5, setup_error, sizeof setup_error) < 0 ||
        first_code(csv, code, sizeof code, setup_error, sizeof setup_error) < 0)
        return;
    FILE *f = fopen(csv, "r");   /* the first row's jis_code: its listing */
    if (!f || fscanf(f, "\"%5[0-9]\"", jis) != 1)
        snprintf(setup_error, sizeof setup_error, "%s: no jis_code on line 1", csv);
    if (f)
        fclose(f);
    char sqlite_path[1200], out[4096];
    snprintf(sqlite_path, sizeof sqlite_path, "%s/routes.sqlite", dir);
    const struct conf_change changes[] = {
        { "backend sqlite", "path", sqlite_path },
        { "backend sqlite", "table", "zt_routes" },
        { "backend sqlite", "writes", "yes" },
        { "*", "table", NULL },
        { NULL, NULL, NULL },
    };
    if (setup_error[0] || write_conf_copy(conf, changes, NULL, setup_error, sizeof setup_error) < 0)
        return;
    int rc = run_cmd(out, sizeof out, "%s -q --conf %s --backend sqlite --mode bulk --dataset %s",
                     prog("loader"), conf, csv);
    if (rc) {
        snprintf(setup_error, sizeof setup_error, "loader: exit %d: %s", rc, out);
        return;
    }
    server_pid = fixture_server(conf, PORT, logfile, "--backends sqlite", setup_error,
                                sizeof setup_error);
}

static void teardown(void)
{
    term_server(server_pid);
    server_pid = 0;
}

#define SETUP_OK() ck_assert_msg(!setup_error[0], "%s", setup_error)

static char raw[1 << 17];

/* method path (with headers extra) on a connection of its own: the
 * status; the body after body_of(). */
static int ask(const char *method, const char *extra, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int ask(const char *method, const char *extra, const char *fmt, ...)
{
    char path[1024], req[2048];
    FORMAT_INTO(path, fmt);
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n",
                     method, path, extra ? extra : "");
    int got = http_exchange(PORT, req, (size_t)n, raw, sizeof raw, 10000);
    return got > 0 ? http_status(raw) : -1;
}

static const char *body_of(void)
{
    const char *b = strstr(raw, "\r\n\r\n");
    return b ? b + 4 : "";
}

#define GET(...) ask("GET", NULL, __VA_ARGS__)
#define POST(...) ask("POST", "Content-Length: 0\r\n", __VA_ARGS__)

/* Each route, as a user asks it, by every strategy SQLite takes (the
 * others refused with 400 naming why). */
START_TEST(every_route_by_every_strategy)
{
    SETUP_OK();
    for (int s = 0; s < NSTRATEGIES; s++) {
        const char *st = strategy_names[s];
        int want = GET("/zip/sqlite/%s?strategy=%s", code, st);
        if (want == 400) {   /* not SQLite's: every route says so alike */
            ck_assert_msg(strstr(body_of(), "the sqlite driver"), "%s: %s", st, body_of());
            ck_assert_int_eq(GET("/queries/sqlite?queries=2&strategy=%s", st), 400);
            ck_assert_int_eq(GET("/list/sqlite/%s?strategy=%s", jis, st), 400);
            ck_assert_int_eq(POST("/update/sqlite/%s?strategy=%s", code, st), 400);
            continue;
        }
        ck_assert_msg(want == 200 && strstr(body_of(), code), "%s /zip: %d %s", st, want,
                      body_of());
        ck_assert_msg(GET("/zip/sqlite/random?strategy=%s", st) == 200, "%s /random: %s", st,
                      body_of());
        ck_assert_msg(GET("/zip/sqlite/random?strategy=%s&miss=1", st) == 404, "%s: %s", st,
                      body_of());
        ck_assert_msg(GET("/postal/sqlite/%s?strategy=%s", code, st) == 200, "%s: %s", st,
                      body_of());
        ck_assert_msg(GET("/queries/sqlite?queries=3&strategy=%s", st) == 200 &&
                      strstr(body_of(), "\"queries\":3,\"answers\":["), "%s: %s", st, body_of());
        ck_assert_msg(GET("/cached/sqlite/%s?strategy=%s", code, st) == 200, "%s: %s", st,
                      body_of());
        ck_assert_msg(GET("/list/sqlite/%s?strategy=%s", jis, st) == 200 &&
                      strstr(body_of(), "<table>"), "%s: %s", st, body_of());
        ck_assert_msg(POST("/update/sqlite/%s?strategy=%s", code, st) == 200 &&
                      strstr(body_of(), "\"stamp\":"), "%s: %s", st, body_of());
        ck_assert_msg(POST("/updates/sqlite?queries=4&strategy=%s", st) == 200 &&
                      strstr(body_of(), "\"queries\":4,\"written\":["), "%s: %s", st, body_of());
    }
    ck_assert_msg(GET("/health") == 200, "%s", body_of());
    ck_assert_msg(GET("/stats") == 200, "%s", body_of());
}
END_TEST

/* After every route was asked: /stats counts each route of the table
 * (lookup is the datasets' route) under sqlite, or the server's own
 * figures for those that serve no table (/health, /stats). A route added
 * to the table and not asked above fails here. */
START_TEST(route_table_is_covered)
{
    SETUP_OK();
    ck_assert_int_eq(GET("/stats"), 200);
    static char stats[1 << 17];
    snprintf(stats, sizeof stats, "%s", body_of());
    const char *routes = strstr(stats, "\"routes\":{");
    ck_assert_msg(routes, "%s", stats);
    for (int i = 0; i < nroutes; i++) {
        const struct route *r = route_table[i];
        if (r->path == ROUTE_NONE)
            continue;   /* /health, /stats: no table of theirs */
        char want[80];
        snprintf(want, sizeof want, "\"%s\":{\"requests\":", r->name ? r->name : "lookup");
        const char *at = strstr(routes, want);
        ck_assert_msg(at && atol(at + strlen(want)) > 0, "route %s: not asked, or not counted: %s",
                      r->name ? r->name : "lookup", routes);
    }
}
END_TEST

/* What comes from the table: the 404 lists every route's usage; a method
 * a route does not take is 405 with its Allow. */
START_TEST(refusals_come_from_the_table)
{
    SETUP_OK();
    ck_assert_int_eq(GET("/nothing/here"), 404);
    for (int i = 0; i < nroutes; i++)
        ck_assert_msg(strstr(body_of(), route_table[i]->usage), "404 lacks %s: %s",
                      route_table[i]->usage, body_of());
    for (int i = 0; i < nroutes; i++) {
        const struct route *r = route_table[i];
        char path[128];
        snprintf(path, sizeof path, "/%s/sqlite/%s", r->name ? r->name : "zip", code);
        if (r->path == ROUTE_NONE)
            snprintf(path, sizeof path, "/%s", r->name);
        int status = r->post ? ask("GET", NULL, "%s", path)
                             : ask("POST", "Content-Length: 0\r\n", "%s", path);
        ck_assert_msg(status == 405 && strstr(raw, r->post ? "\r\nAllow: POST\r\n"
                                                            : "\r\nAllow: GET, HEAD\r\n"),
                      "%s: %d %s", path, status, raw);
    }
}
END_TEST

/* One parser of parameters: a name is matched byte for byte, a repeated
 * one or one the route does not take is refused, a value out of its rule
 * too; before, ?queries=1&queries=600 took the first and Queries=5 was
 * read as queries. */
START_TEST(parameters_are_parsed_once_and_strictly)
{
    SETUP_OK();
    static const struct { const char *path, *why; } bad[] = {
        { "/queries/sqlite?queries=1&queries=600", "parameter queries given twice" },
        { "/queries/sqlite?queries=2&queries=2", "parameter queries given twice" },
        { "/queries/sqlite?Queries=5", "unknown parameter 'Queries'" },
        { "/queries/sqlite?QUERIES=5&queries=1", "unknown parameter 'QUERIES'" },
        { "/queries/sqlite?queries", "queries must be a whole number from 1 to 500" },
        { "/queries/sqlite?queries=+5", "queries must be a whole number from 1 to 500" },
        { "/queries/sqlite?queries=5&strategy=pooled&strategy=pooled", "given twice" },
        { "/zip/sqlite/random?Miss=0.5", "unknown parameter 'Miss'" },
        { "/zip/sqlite/random?miss=0.5&miss=0", "parameter miss given twice" },
        { "/zip/sqlite/random?miss=nan", "miss must be a number in 0..1" },
        { "/zip/sqlite/random?strategy=Pooled", "strategy must be" },
        { "/cached/sqlite/0000000?queries=2", "unknown parameter 'queries'" },
        { "/health?x=1", "unknown parameter 'x'" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int status = GET("%s", bad[i].path);
        ck_assert_msg(status == 400 && strstr(body_of(), bad[i].why), "%s: %d %s", bad[i].path,
                      status, body_of());
    }
    ck_assert_msg(POST("/updates/sqlite?queries=2&queries=3") == 400 &&
                  strstr(body_of(), "given twice"), "%s", body_of());
}
END_TEST

Suite *suite_routes(void)
{
    TCase *t = tier(test_case("routes", setup, teardown, 60, TESTS(
        every_route_by_every_strategy, route_table_is_covered, refusals_come_from_the_table,
        parameters_are_parsed_once_and_strictly)), TIER_UNIT);
    return suite_of("routes", t, NULL);
}
