/* The Apache + mod_php stack of the comparison (scripts/apache, scripts/apache.d/zip.php)
 * end to end: a generated set loaded into the four backends' test tables,
 * an Apache instance of the test's own on another port pointed at them, and
 * zip.php's answers compared byte for byte with the JSON the file implies. */
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
#define PORT test_port(18091)   /* the test's own Apache */

static const char *const backends[] = { "sqlite", "pg", "innodb", "myisam" };
static char dir[1024], csv[1100], truth[1100], keys[1100], sqlite_path[1100], env[6000];
static char setup_error[8192];   /* set by the unchecked setup, asserted by the tests */

/* GET path on the test's Apache; returns the status (-1 on a socket error),
 * the body in body. */
static int http_get(const char *path, char *body, size_t len)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = { .tv_sec = 10 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PORT) };
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
        if (zb_column_is_flag(i))
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

static const char *apache_env(void)
{
    return env;
}

/* Unchecked (runs once, in the runner): dataset, loads, Apache. Failures
 * are kept in setup_error for the tests to report. */
static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", build_path("test/php"));
    snprintf(csv, sizeof csv, "%s/g.csv", dir);
    snprintf(truth, sizeof truth, "%s/g.tsv", dir);
    snprintf(keys, sizeof keys, "%s/g.keys", dir);
    snprintf(sqlite_path, sizeof sqlite_path, "%s/php.sqlite", dir);
    snprintf(env, sizeof env,
             "ZB_CONF='%s' ZB_APACHE_DIR='%s/apache' ZB_APACHE_PORT=%d ZB_APACHE_WORKERS=8 "
             "ZB_SQLITE_PATH='%s' ZB_PG_TABLE=zt_php ZB_INNODB_TABLE=zt_php_innodb "
             "ZB_MYISAM_TABLE=zt_php_myisam ZB_KEYS='%s'",
             conf_path(), dir, PORT, sqlite_path, keys);
    char out[4096];
    /* A test instance left running by an interrupted run. */
    run_cmd(NULL, 0, "%s scripts/apache stop", apache_env());
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
    if (run_cmd(out, sizeof out, "%s scripts/apache start", apache_env()))
        snprintf(setup_error, sizeof setup_error, "scripts/apache start: %s", out);
}

static void teardown(void)
{
    run_cmd(NULL, 0, "%s scripts/apache stop", apache_env());
}

#define SETUP_OK() ck_assert_msg(!setup_error[0], "%s", setup_error)

START_TEST(known_codes_give_the_rows_of_the_file)
{
    SETUP_OK();
    ck_assert_msg(codes[NCHECK - 1][0], "too few single-row codes in %s", truth);
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        for (int persistent = 1; persistent >= 0; persistent--) {
            /* Twice each: a persistent connection is reused the second time. */
            for (int k = 0; k < NCHECK * 2; k++) {
                char path[256], body[1 << 16], expect[8192];
                snprintf(path, sizeof path, "/zip.php?backend=%s&code=%s&persistent=%d",
                         backends[bi], codes[k % NCHECK], persistent);
                int st = http_get(path, body, sizeof body);
                snprintf(expect, sizeof expect, "{\"backend\":\"%s\",\"code\":\"%s\",\"rows\":[%s]}\n",
                         backends[bi], codes[k % NCHECK], want[k % NCHECK]);
                ck_assert_msg(st == 200, "%s: status %d: %s", path, st, body);
                ck_assert_msg(!strcmp(body, expect), "%s:\n got  %s\n want %s", path, body, expect);
            }
        }
    }
}
END_TEST

START_TEST(a_shared_code_gives_every_row)
{
    SETUP_OK();
    ck_assert_msg(multi_rows > 1, "no shared code in %s", truth);
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        char path[256], body[1 << 16];
        snprintf(path, sizeof path, "/zip.php?backend=%s&code=%s", backends[bi], multi_code);
        ck_assert_int_eq(http_get(path, body, sizeof body), 200);
        int n = 0;
        for (const char *p = body; (p = strstr(p, "\"jis_code\":")); p++)
            n++;
        ck_assert_msg(n == multi_rows, "%s: %d rows, want %d: %s", path, n, multi_rows, body);
    }
}
END_TEST

START_TEST(unknown_code_404_bad_code_400)
{
    SETUP_OK();
    static const char *const bad[] = { "123456", "12345678", "abcdefg", "", "1234567%0A", "%201234567" };
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        for (int persistent = 1; persistent >= 0; persistent--) {
            char path[256], body[1 << 16], want_body[256];
            snprintf(path, sizeof path, "/zip.php?backend=%s&code=0000001&persistent=%d",
                     backends[bi], persistent);
            ck_assert_int_eq(http_get(path, body, sizeof body), 404);
            snprintf(want_body, sizeof want_body,
                     "{\"backend\":\"%s\",\"code\":\"0000001\",\"error\":\"no such code\",\"status\":404}\n",
                     backends[bi]);
            ck_assert_str_eq(body, want_body);
            for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                snprintf(path, sizeof path, "/zip.php?backend=%s&code=%s&persistent=%d", backends[bi],
                         bad[i], persistent);
                int st = http_get(path, body, sizeof body);
                ck_assert_msg(st == 400, "%s: status %d: %s", path, st, body);
                ck_assert_msg(strstr(body, "\"error\":\"the code must be exactly 7 digits 0-9 (or 'random')\",\"status\":400}"), "%s: %s", path, body);
            }
        }
    }
    char body[1 << 16];
    ck_assert_int_eq(http_get("/zip.php?backend=nosuch&code=1000001", body, sizeof body), 404);
    ck_assert_msg(strstr(body, "\"error\":"), "%s", body);
}
END_TEST

START_TEST(random_codes_come_from_the_key_file)
{
    SETUP_OK();
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        char path[256], body[1 << 16];
        snprintf(path, sizeof path, "/zip.php?backend=%s&code=random", backends[bi]);
        for (int i = 0; i < 20; i++) {
            int st = http_get(path, body, sizeof body);
            ck_assert_msg(st == 200, "%s: status %d: %s", path, st, body);
            const char *c = strstr(body, "\"code\":\"");
            ck_assert_ptr_nonnull(c);
            char grep[2400];
            snprintf(grep, sizeof grep, "grep -qx '%.7s' %s", c + 8, keys);
            ck_assert_msg(run_cmd(NULL, 0, "%s", grep) == 0, "%s: %.7s is not in %s", path, c + 8, keys);
        }
        snprintf(path, sizeof path, "/zip.php?backend=%s&code=random&miss=1", backends[bi]);
        ck_assert_int_eq(http_get(path, body, sizeof body), 404);
    }
}
END_TEST

START_TEST(stop_and_start_again)
{
    SETUP_OK();
    char out[4096], body[1 << 16];
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s scripts/apache start", apache_env()), 0);
    ck_assert_msg(strstr(out, "already running"), "%s", out);   /* idempotent */
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s scripts/apache stop", apache_env()), 0);
    ck_assert_int_eq(http_get("/zip.php?backend=sqlite&code=1", body, sizeof body), -1);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s scripts/apache status", apache_env()), 1);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s scripts/apache stop", apache_env()), 0);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s scripts/apache start", apache_env()), 0);
    ck_assert_int_eq(http_get("/zip.php?backend=sqlite&code=1", body, sizeof body), 400);
}
END_TEST

Suite *suite_php(void)
{
    Suite *s = suite_create("php");
    TCase *t = tcase_create("php");
    tcase_add_unchecked_fixture(t, setup, teardown);
    tcase_add_test(t, known_codes_give_the_rows_of_the_file);
    tcase_add_test(t, a_shared_code_gives_every_row);
    tcase_add_test(t, unknown_code_404_bad_code_400);
    tcase_add_test(t, random_codes_come_from_the_key_file);
    tcase_add_test(t, stop_and_start_again);
    tcase_set_timeout(t, 120);
    suite_add_tcase(s, t);
    return s;
}
