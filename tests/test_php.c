/* The PHP fronts of the comparison end to end, both serving the one page
 * scripts/apache.d/zip.php: Apache + mod_php (scripts/apache) and nginx +
 * PHP-FPM (scripts/php-fpm). A generated set loaded into the four backends'
 * test tables, an instance of each front of the test's own on its own port
 * pointed at them, and zip.php's answers through each compared byte for
 * byte with the JSON the file implies (the C server's; test_server checks
 * that one against the same truth); pg also per request through pgbouncer
 * and pgpool-II (scripts/pooler, started here when it is not running). */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "backend.h"
#include "helpers.h"

#define ROWS 300
/* A PHP front: its lifecycle script, the variables that give the test's
 * instance its own directory and port, and that port. */
struct front {
    const char *name, *script, *dir_var, *port_var;
    int preferred_port;
};
static const struct front fronts[] = {
    { "apache", "scripts/apache", "ZB_APACHE_DIR", "ZB_APACHE_PORT", 18091 },
    { "php-fpm", "scripts/php-fpm", "ZB_FPM_DIR", "ZB_FPM_PORT", 18092 },
};
#define NFRONTS (sizeof fronts / sizeof fronts[0])
#define FOR_EACH_FRONT(f) for (const struct front *f = fronts; f < fronts + NFRONTS; f++)
static bool started_poolers;   /* the fixture started them: it stops them */

static const char *const backends[] = { "sqlite", "pg", "innodb", "myisam" };
static char dir[1024], csv[1100], truth[1100], keys[1100], sqlite_path[1100];
static char setup_error[8192];   /* set by the unchecked setup, asserted by the tests */

/* GET path on front f; returns the status (-1 on a socket error), the body
 * in body. */
static int http_get(const struct front *f, const char *path, char *body, size_t len)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = { .tv_sec = 10 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)test_port(f->preferred_port)) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    char req[2048];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    static char resp[1 << 16];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof resp - 1 && (r = read(fd, resp + got, sizeof resp - 1 - got)) > 0)
        got += (size_t)r;
    close(fd);
    resp[got] = 0;
    int status = -1;
    if (sscanf(resp, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    const char *b = strstr(resp, "\r\n\r\n");
    snprintf(body, len, "%s", b ? b + 4 : "");
    return status;
}

/* s as a JSON string (quotes, backslashes, control characters escaped). */
static size_t json_str(char *out, const char *s, size_t slen)
{
    char *o = out;
    *o++ = '"';
    for (size_t i = 0; i < slen; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c < 0x20) {
            o += sprintf(o, "\\u%04x", c);
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '"';
    return (size_t)(o - out);
}

/* The row object zip.php writes for one truth line (tab-separated fields). */
static void row_json(char *out, const char *line)
{
    char *o = out;
    *o++ = '{';
    const char *f = line;
    for (int i = 0; i < ZB_NCOLS; i++) {
        size_t flen = strcspn(f, "\t\n");
        o += (size_t)sprintf(o, "%s\"%s\":", i ? "," : "", zb_columns[i]);
        if (zb_postal_table("").cols[i].type == ZB_INTEGER)
            o += (size_t)sprintf(o, "%d", atoi(f));
        else
            o += json_str(o, f, flen);
        f += flen + (f[flen] == '\t');
    }
    *o++ = '}';
    *o = 0;
}

/* Truth lines whose code appears once in the file: their expected bodies. */
#define NCHECK 6
static char codes[NCHECK][8], want[NCHECK][4096];
static char multi_code[8];
static int multi_rows;

static void pick_codes(void)
{
    static char lines[ROWS + 16][1024];
    int n = 0;
    FILE *t = fopen(truth, "r");
    if (!t)
        return;
    while (n < ROWS + 16 && fgets(lines[n], sizeof lines[0], t))
        n++;
    fclose(t);
    int k = 0;
    for (int i = 0; i < n; i++) {
        const char *zi = strchr(strchr(lines[i], '\t') + 1, '\t') + 1;
        int same = 0;
        for (int j = 0; j < n; j++)
            same += !memcmp(zi, strchr(strchr(lines[j], '\t') + 1, '\t') + 1, 7);
        if (same > 1 && !multi_rows) {
            memcpy(multi_code, zi, 7);
            multi_rows = same;
        }
        if (same == 1 && k < NCHECK && i >= k * 40) {
            memcpy(codes[k], zi, 7);
            row_json(want[k], lines[i]);
            k++;
        }
    }
}

/* The variables that point front f's script at the test's instance and tables. */
static const char *front_env(const struct front *f)
{
    static char env[NFRONTS][6000];
    char *e = env[f - fronts];
    snprintf(e, sizeof env[0],
             "ZB_CONF='%s' %s='%s/%s' %s=%d ZB_APACHE_WORKERS=8 ZB_FPM_CHILDREN=4 "
             "ZB_SQLITE_PATH='%s' ZB_PG_TABLE=zt_php ZB_INNODB_TABLE=zt_php_innodb "
             "ZB_MYISAM_TABLE=zt_php_myisam ZB_KEYS='%s'",
             conf_path(), f->dir_var, dir, f->name, f->port_var, test_port(f->preferred_port),
             sqlite_path, keys);
    return e;
}

/* Only the variable that points front f's script at the test's instance:
 * enough to stop it. Its port is picked (test_port) right before the
 * start, not before the loads: another tree's test server, walking up
 * from its own preferred port, took it in between. */
static const char *front_dir_env(const struct front *f)
{
    static char env[NFRONTS][1200];
    char *e = env[f - fronts];
    snprintf(e, sizeof env[0], "%s='%s/%s'", f->dir_var, dir, f->name);
    return e;
}

/* Unchecked (runs once, in the runner): dataset, loads, poolers, both
 * fronts. Failures are kept in setup_error for the tests to report. */
static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", build_path("test/php"));
    snprintf(csv, sizeof csv, "%s/g.csv", dir);
    snprintf(truth, sizeof truth, "%s/g.tsv", dir);
    snprintf(keys, sizeof keys, "%s/g.keys", dir);
    snprintf(sqlite_path, sizeof sqlite_path, "%s/php.sqlite", dir);
    char out[4096];
    /* A test instance left running by an interrupted run. */
    FOR_EACH_FRONT(f)
        run_cmd(NULL, 0, "%s %s stop", front_dir_env(f), f->script);
    if (run_cmd(out, sizeof out, "{ rm -rf '%s' && mkdir -p '%s' && %s --rows %d --seed 5 --truth %s -o %s"
                " && cut -f3 %s | sort -u > %s; }", dir, dir, prog("gen"), ROWS, truth, csv, truth, keys)) {
        snprintf(setup_error, sizeof setup_error, "dataset: %s", out);
        return;
    }
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        int rc = run_cmd(out, sizeof out,
                         "%s -q --conf %s --backend %s --mode bulk --dataset %s --set sqlite.path=%s "
                         "--set pg.table=zt_php --set innodb.table=zt_php_innodb "
                         "--set myisam.table=zt_php_myisam",
                         prog("loader"), conf_path(), backends[i], csv, sqlite_path);
        if (rc) {
            snprintf(setup_error, sizeof setup_error, "loader %s: exit %d: %s", backends[i], rc, out);
            return;
        }
    }
    pick_codes();
    /* pgpool-II serves one client per child: 24 start faster than 128. */
    if (run_cmd(NULL, 0, "scripts/pooler status > /dev/null 2>&1") != 0) {
        started_poolers = true;
        if (run_cmd(out, sizeof out, "ZB_PGPOOL_CHILDREN=24 scripts/pooler start")) {
            snprintf(setup_error, sizeof setup_error, "scripts/pooler start: %s", out);
            return;
        }
    }
    FOR_EACH_FRONT(f)
        if (run_cmd(out, sizeof out, "%s %s start", front_env(f), f->script)) {
            snprintf(setup_error, sizeof setup_error, "%s start: %s", f->script, out);
            return;
        }
}

static void teardown(void)
{
    FOR_EACH_FRONT(f)
        run_cmd(NULL, 0, "%s %s stop", front_env(f), f->script);
    if (started_poolers)
        run_cmd(NULL, 0, "scripts/pooler stop > /dev/null 2>&1");
}

#define SETUP_OK() ck_assert_msg(!setup_error[0], "%s", setup_error)

/* Front f answers the k-th checked code on backend b (persistent or not,
 * extra: more of the query, "" or "&via=..."): 200 with the very body the
 * C server gives, the rows of the file. */
static void answers_the_rows(const struct front *f, const char *b, int k, int persistent,
                             const char *extra)
{
    char path[256], body[1 << 16], expect[8192];
    snprintf(path, sizeof path, "/zip.php?backend=%s&code=%s&persistent=%d%s", b, codes[k % NCHECK],
             persistent, extra);
    int st = http_get(f, path, body, sizeof body);
    snprintf(expect, sizeof expect, "{\"backend\":\"%s\",\"code\":\"%s\",\"rows\":[%s]}\n", b,
             codes[k % NCHECK], want[k % NCHECK]);
    ck_assert_msg(st == 200, "%s %s: status %d: %s", f->name, path, st, body);
    ck_assert_msg(!strcmp(body, expect), "%s %s:\n got  %s\n want %s", f->name, path, body, expect);
}

START_TEST(known_codes_give_the_rows_of_the_file)
{
    SETUP_OK();
    ck_assert_msg(codes[NCHECK - 1][0], "too few single-row codes in %s", truth);
    FOR_EACH_FRONT(f)
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        for (int persistent = 1; persistent >= 0; persistent--) {
            /* Twice each: a persistent connection is reused the second time
             * (FPM: 4 children, so some child is asked twice). */
            for (int k = 0; k < NCHECK * 2; k++)
                answers_the_rows(f, backends[bi], k, persistent, "");
        }
    }
}
END_TEST

/* pg through either pooler (via=), per request and persistent: the same
 * bytes as direct. */
START_TEST(pg_through_either_pooler_gives_the_same_rows)
{
    SETUP_OK();
    static const char *const vias[] = { "pgbouncer", "pgpool" };
    FOR_EACH_FRONT(f)
    for (size_t v = 0; v < sizeof vias / sizeof vias[0]; v++) {
        for (int persistent = 1; persistent >= 0; persistent--) {
            for (int k = 0; k < NCHECK * 2; k++) {
                char via[32];
                snprintf(via, sizeof via, "&via=%s", vias[v]);
                answers_the_rows(f, "pg", k, persistent, via);
            }
        }
    }
}
END_TEST

/* via names a configured target, nothing else: an unknown one, a host, or
 * a pooler for another backend than pg is 400, and nothing is connected to. */
START_TEST(via_takes_only_a_configured_target)
{
    SETUP_OK();
    static const char *const bad[] = { "backend=pg&via=127.0.0.1", "backend=pg&via=pgbouncer%00",
                                       "backend=pg&via=", "backend=innodb&via=pgbouncer",
                                       "backend=sqlite&via=pgpool" };
    FOR_EACH_FRONT(f)
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[256], body[1 << 16];
        snprintf(path, sizeof path, "/zip.php?%s&code=%s", bad[i], codes[0]);
        int st = http_get(f, path, body, sizeof body);
        ck_assert_msg(st == 400, "%s %s: status %d: %s", f->name, path, st, body);
        ck_assert_msg(strstr(body, "\"error\":\"via must be direct, pgbouncer or pgpool (pg only)\""),
                      "%s %s: %s", f->name, path, body);
    }
}
END_TEST

START_TEST(a_shared_code_gives_every_row)
{
    SETUP_OK();
    ck_assert_msg(multi_rows > 1, "no shared code in %s", truth);
    FOR_EACH_FRONT(f)
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        char path[256], body[1 << 16];
        snprintf(path, sizeof path, "/zip.php?backend=%s&code=%s", backends[bi], multi_code);
        ck_assert_msg(http_get(f, path, body, sizeof body) == 200, "%s %s: %s", f->name, path, body);
        int n = 0;
        for (const char *p = body; (p = strstr(p, "\"jis_code\":")); p++)
            n++;
        ck_assert_msg(n == multi_rows, "%s %s: %d rows, want %d: %s", f->name, path, n, multi_rows, body);
    }
}
END_TEST

START_TEST(unknown_code_404_bad_code_400)
{
    SETUP_OK();
    static const char *const bad[] = { "123456", "12345678", "abcdefg", "", "1234567%0A", "%201234567" };
    FOR_EACH_FRONT(f) {
        for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
            for (int persistent = 1; persistent >= 0; persistent--) {
                char path[256], body[1 << 16], want_body[256];
                snprintf(path, sizeof path, "/zip.php?backend=%s&code=0000001&persistent=%d",
                         backends[bi], persistent);
                ck_assert_msg(http_get(f, path, body, sizeof body) == 404, "%s %s: %s", f->name, path, body);
                snprintf(want_body, sizeof want_body,
                         "{\"backend\":\"%s\",\"code\":\"0000001\",\"error\":\"no such code\",\"status\":404}\n",
                         backends[bi]);
                ck_assert_str_eq(body, want_body);
                for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                    snprintf(path, sizeof path, "/zip.php?backend=%s&code=%s&persistent=%d", backends[bi],
                             bad[i], persistent);
                    int st = http_get(f, path, body, sizeof body);
                    ck_assert_msg(st == 400, "%s %s: status %d: %s", f->name, path, st, body);
                    ck_assert_msg(strstr(body, "\"error\":\"the code must be exactly 7 digits 0-9 (or 'random')\",\"status\":400}"), "%s %s: %s", f->name, path, body);
                }
            }
        }
        char body[1 << 16];
        ck_assert_int_eq(http_get(f, "/zip.php?backend=nosuch&code=1000001", body, sizeof body), 404);
        ck_assert_msg(strstr(body, "\"error\":"), "%s: %s", f->name, body);
    }
}
END_TEST

START_TEST(random_codes_come_from_the_key_file)
{
    SETUP_OK();
    FOR_EACH_FRONT(f)
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        char path[256], body[1 << 16];
        snprintf(path, sizeof path, "/zip.php?backend=%s&code=random", backends[bi]);
        for (int i = 0; i < 20; i++) {
            int st = http_get(f, path, body, sizeof body);
            ck_assert_msg(st == 200, "%s %s: status %d: %s", f->name, path, st, body);
            const char *c = strstr(body, "\"code\":\"");
            ck_assert_ptr_nonnull(c);
            char grep[2400];
            snprintf(grep, sizeof grep, "grep -qx '%.7s' %s", c + 8, keys);
            ck_assert_msg(run_cmd(NULL, 0, "%s", grep) == 0, "%s %s: %.7s is not in %s", f->name, path, c + 8, keys);
        }
        snprintf(path, sizeof path, "/zip.php?backend=%s&code=random&miss=1", backends[bi]);
        ck_assert_int_eq(http_get(f, path, body, sizeof body), 404);
    }
}
END_TEST

START_TEST(stop_and_start_again)
{
    SETUP_OK();
    char out[4096], body[1 << 16];
    FOR_EACH_FRONT(f) {
        const char *env = front_env(f);
        ck_assert_int_eq(run_cmd(out, sizeof out, "%s %s start", env, f->script), 0);
        ck_assert_msg(strstr(out, "already running"), "%s: %s", f->name, out);   /* idempotent */
        ck_assert_int_eq(run_cmd(out, sizeof out, "%s %s stop", env, f->script), 0);
        ck_assert_int_eq(http_get(f, "/zip.php?backend=sqlite&code=1", body, sizeof body), -1);
        ck_assert_int_eq(run_cmd(out, sizeof out, "%s %s status", env, f->script), 1);
        ck_assert_int_eq(run_cmd(out, sizeof out, "%s %s stop", env, f->script), 0);
        ck_assert_int_eq(run_cmd(out, sizeof out, "%s %s start", env, f->script), 0);
        ck_assert_int_eq(http_get(f, "/zip.php?backend=sqlite&code=1", body, sizeof body), 400);
    }
}
END_TEST

/* PHP-FPM: the static children it prints are all there, and its password
 * file copy and its config (MariaDB's password) are private. */
START_TEST(fpm_children_are_static_and_secrets_private)
{
    SETUP_OK();
    const struct front *f = &fronts[1];
    char out[4096];
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s %s status", front_env(f), f->script), 0);
    ck_assert_msg(strstr(out, " 4 static children"), "%s", out);
    ck_assert_int_eq(run_cmd(out, sizeof out, "pgrep -c -P \"$(cat '%s/php-fpm/run/php-fpm.pid')\"", dir), 0);
    ck_assert_msg(atoi(out) == 4, "FPM children: %s", out);
    ck_assert_int_eq(run_cmd(out, sizeof out, "stat -c %%a '%s/php-fpm/php-fpm.conf'", dir), 0);
    ck_assert_str_eq(out, "600\n");
    if (getuid() == 0) {
        ck_assert_int_eq(run_cmd(out, sizeof out, "stat -c '%%a %%U' '%s/php-fpm/secrets/pgpass'", dir), 0);
        ck_assert_str_eq(out, "600 www-data\n");
    }
}
END_TEST

Suite *suite_php(void)
{
    TCase *t = test_case("php", setup, teardown, 240, TESTS(
        known_codes_give_the_rows_of_the_file, pg_through_either_pooler_gives_the_same_rows,
        via_takes_only_a_configured_target, a_shared_code_gives_every_row,
        unknown_code_404_bad_code_400, random_codes_come_from_the_key_file,
        stop_and_start_again, fpm_children_are_static_and_secrets_private));
    return suite_of("php", t, NULL);
}
