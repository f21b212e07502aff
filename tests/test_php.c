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
static int http_req(const struct front *f, const char *method, const char *path, char *body, size_t len);

static int http_get(const struct front *f, const char *path, char *body, size_t len)
{
    return http_req(f, "GET", path, body, len);
}

static int http_req(const struct front *f, const char *method, const char *path, char *body, size_t len)
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
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n",
                     method, path);
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
             "ZB_MYISAM_TABLE=zt_php_myisam ZB_KEYS='%s' ZB_WRITES=sqlite,pg,innodb,myisam",
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
    /* In a directory of its own, which the page (www-data, when run as
     * root) may write: SQLite's writes need the file, its -wal and -shm. */
    snprintf(sqlite_path, sizeof sqlite_path, "%s/sqlite/php.sqlite", dir);
    char out[4096];
    /* A test instance left running by an interrupted run. */
    FOR_EACH_FRONT(f)
        run_cmd(NULL, 0, "%s %s stop", front_dir_env(f), f->script);
    if (run_cmd(out, sizeof out, "{ rm -rf '%s' && mkdir -p '%s/sqlite' && %s --rows %d --seed 5 --truth %s -o %s"
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
    /* The writes' table ({table}_hits) is the C server's: one started with
     * writes = yes makes and fills it. */
    char log[1200];
    snprintf(log, sizeof log, "%s/server-hits.log", dir);
    char args[1600];
    snprintf(args, sizeof args,
             "--backends sqlite,pg,innodb,myisam --set sqlite.path=%s --set pg.table=zt_php "
             "--set innodb.table=zt_php_innodb --set myisam.table=zt_php_myisam --set sqlite.writes=yes "
             "--set pg.writes=yes --set innodb.writes=yes --set myisam.writes=yes", sqlite_path);
    pid_t srv = fixture_server(conf_path(), test_port(18094), log, args, setup_error, sizeof setup_error);
    term_server(srv);
    if (setup_error[0])
        return;
    if (getuid() == 0 && run_cmd(out, sizeof out, "chown -R www-data: '%s/sqlite'", dir)) {
        snprintf(setup_error, sizeof setup_error, "chown www-data %s/sqlite: %s", dir, out);
        return;
    }
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
        /* Started again with writes on pg alone: SQLite's are refused. */
        ck_assert_int_eq(run_cmd(out, sizeof out, "%s ZB_WRITES=pg %s start", env, f->script), 0);
        ck_assert_int_eq(http_get(f, "/zip.php?backend=sqlite&code=1", body, sizeof body), 400);
        char path[128];
        snprintf(path, sizeof path, "/zip.php?backend=sqlite&update=%s", codes[1]);
        ck_assert_int_eq(http_req(f, "POST", path, body, sizeof body), 403);
        ck_assert_msg(strstr(body, "writes are off for this backend"), "%s: %s", f->name, body);
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

/* ---- the other request types (docs/REQUEST-TYPES.md) ---- */

static char (*tlines)[1024];   /* the truth file's lines */
static int ntlines;

static void read_truth(void)
{
    if (tlines)
        return;
    tlines = calloc(ROWS + 16, sizeof *tlines);
    FILE *t = fopen(truth, "r");
    ck_assert_ptr_nonnull(t);
    while (ntlines < ROWS + 16 && fgets(tlines[ntlines], sizeof tlines[0], t))
        ntlines++;
    fclose(t);
}

/* Field i (0: jis_code, 2: zip_code, ...) of truth line l, into out. */
static const char *tfield(int l, int i, char *out, size_t len)
{
    const char *f = tlines[l];
    for (int k = 0; k < i; k++)
        f = strchr(f, '\t') + 1;
    snprintf(out, len, "%.*s", (int)strcspn(f, "\t\n"), f);
    return out;
}

/* /zip's answer of code on b, from the truth file. */
static void code_answer(char *out, const char *b, const char *code)
{
    read_truth();
    char *o = out + sprintf(out, "{\"backend\":\"%s\",\"code\":\"%s\",\"rows\":[", b, code);
    int n = 0;
    for (int l = 0; l < ntlines; l++) {
        char zip[16];
        if (strcmp(tfield(l, 2, zip, sizeof zip), code))
            continue;
        if (n++)
            *o++ = ',';
        row_json(o, tlines[l]);
        o += strlen(o);
    }
    strcpy(o, "]}");
}

/* ?queries=N through each front: N answers, each /zip's for its code. */
START_TEST(queries_answer_each_code_as_zip_does)
{
    SETUP_OK();
    static char body[1 << 16], one[8192];
    FOR_EACH_FRONT(f)
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++)
        for (int n = 1; n <= 20; n += n == 1 ? 4 : 15) {
            char path[128], head[128];
            snprintf(path, sizeof path, "/zip.php?backend=%s&queries=%d", backends[bi], n);
            int st = http_get(f, path, body, sizeof body);
            int hl = snprintf(head, sizeof head, "{\"backend\":\"%s\",\"queries\":%d,\"answers\":[", backends[bi], n);
            ck_assert_msg(st == 200 && !strncmp(body, head, (size_t)hl), "%s %s: %d %.300s", f->name, path, st, body);
            const char *p = body + hl;
            for (int i = 0; i < n; i++) {
                p += i > 0 && *p == ',';
                const char *c = strstr(p, "\"code\":\"");
                ck_assert_ptr_nonnull(c);
                char code[8];
                snprintf(code, sizeof code, "%.7s", c + 8);
                code_answer(one, backends[bi], code);
                ck_assert_msg(!strncmp(p, one, strlen(one)), "%s %s answer %d:\n got  %.500s\n want %.500s",
                              f->name, path, i, p, one);
                p += strlen(one);
            }
            ck_assert_str_eq(p, "]}\n");
        }
    FOR_EACH_FRONT(f) {
        const char *bad[] = { "0", "501", "x", "" };
        for (int i = 0; i < 4; i++) {
            char path[128];
            snprintf(path, sizeof path, "/zip.php?backend=pg&queries=%s", bad[i]);
            ck_assert_int_eq(http_get(f, path, body, sizeof body), 400);
            ck_assert_msg(strstr(body, "queries must be a whole number from 1 to 500"), "%s", body);
        }
    }
}
END_TEST

static int tline_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    char fx[600], fy[600];
    for (int k = 0; k < 3; k++) {
        static const int col[] = { 2, 5, 8 };
        int c = strcmp(tfield(x, col[k], fx, sizeof fx), tfield(y, col[k], fy, sizeof fy));
        if (c)
            return c;
    }
    return 0;
}

static size_t html(char *o, const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += (size_t)sprintf(o + n, "%s", *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;"
                                           : *s == '"' ? "&quot;" : *s == '\'' ? "&#039;" : (char[]){ *s, 0 });
    return n;
}

/* ?list=JIS through each front: the page the contract renders from the
 * file's rows (the C server's bytes: test_server checks those). */
START_TEST(list_pages_as_the_file_says)
{
    SETUP_OK();
    read_truth();
    static char body[1 << 16], want_page[1 << 16];
    static int idx[ROWS + 16];
    for (int pick = 0; pick < 3; pick++) {
        char jis[16], f0[600];
        tfield(pick * (ntlines / 3), 0, jis, sizeof jis);
        int n = 0;
        for (int l = 0; l < ntlines; l++)
            if (!strcmp(tfield(l, 0, f0, sizeof f0), jis))
                idx[n++] = l;
        qsort(idx, (size_t)n, sizeof *idx, tline_cmp);
        char *o = want_page + sprintf(want_page, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
        o += html(o, tfield(idx[0], 6, f0, sizeof f0));
        *o++ = ' ';
        o += html(o, tfield(idx[0], 7, f0, sizeof f0));
        o += sprintf(o, "</title></head><body>\n<table>\n<tr><th>zip_code</th><th>town</th><th>town_kana</th></tr>\n");
        for (int i = 0; i < n; i++) {
            o += sprintf(o, "<tr><td>%s</td><td>", tfield(idx[i], 2, f0, sizeof f0));
            o += html(o, tfield(idx[i], 8, f0, sizeof f0));
            o += sprintf(o, "</td><td>");
            o += html(o, tfield(idx[i], 5, f0, sizeof f0));
            o += sprintf(o, "</td></tr>\n");
        }
        sprintf(o, "</table>\n</body></html>\n");
        FOR_EACH_FRONT(f)
        for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
            char path[128];
            snprintf(path, sizeof path, "/zip.php?backend=%s&list=%s", backends[bi], jis);
            int st = http_get(f, path, body, sizeof body);
            ck_assert_msg(st == 200 && !strcmp(body, want_page), "%s %s: %d\n got  %.600s\n want %.600s",
                          f->name, path, st, body, want_page);
        }
    }
    FOR_EACH_FRONT(f) {
        ck_assert_int_eq(http_get(f, "/zip.php?backend=pg&list=1234", body, sizeof body), 400);
        ck_assert_int_eq(http_get(f, "/zip.php?backend=pg&list=00000", body, sizeof body), 404);
    }
}
END_TEST

/* cached=1 (APCu): the same bytes as uncached, the first time and after. */
START_TEST(cached_answers_are_zip_answers)
{
    SETUP_OK();
    static char body[1 << 16], plain[1 << 16];
    FOR_EACH_FRONT(f)
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++)
        for (int k = 0; k < NCHECK; k++) {
            char path[128];
            snprintf(path, sizeof path, "/zip.php?backend=%s&code=%s", backends[bi], codes[k]);
            ck_assert_int_eq(http_get(f, path, plain, sizeof plain), 200);
            for (int again = 0; again < 3; again++) {
                snprintf(path, sizeof path, "/zip.php?backend=%s&code=%s&cached=1", backends[bi], codes[k]);
                ck_assert_int_eq(http_get(f, path, body, sizeof body), 200);
                ck_assert_msg(!strcmp(body, plain), "%s %s:\n got  %s\n want %s", f->name, path, body, plain);
            }
        }
}
END_TEST

/* POST ?update=CODE, ?updates=N: the stamp read, then written, in the C
 * server's answer shape; writes only on the backends ZB_WRITES lists. */
START_TEST(updates_write_the_stamp)
{
    SETUP_OK();
    static char body[1 << 16];
    static const char *const writable[] = { "sqlite", "pg", "innodb", "myisam" };
    FOR_EACH_FRONT(f)
    for (int b = 0; b < 4; b++) {
        char path[128], head[128];
        snprintf(path, sizeof path, "/zip.php?backend=%s&update=%s", writable[b], codes[1]);
        long long stamp[2] = { 0, 0 }, was[2] = { -1, -1 };
        for (int k = 0; k < 2; k++) {
            int st = http_req(f, "POST", path, body, sizeof body);
            int hl = snprintf(head, sizeof head, "{\"backend\":\"%s\",\"code\":\"%s\",\"was\":", writable[b], codes[1]);
            ck_assert_msg(st == 200 && !strncmp(body, head, (size_t)hl), "%s %s: %d %s", f->name, path, st, body);
            ck_assert_int_eq(sscanf(body + hl, "%lld,\"stamp\":%lld}", &was[k], &stamp[k]), 2);
        }
        ck_assert_msg(was[1] == stamp[0] && stamp[1] > stamp[0], "%s %s: was %lld after %lld, stamp %lld",
                      f->name, writable[b], was[1], stamp[0], stamp[1]);
        ck_assert_int_eq(http_req(f, "GET", path, body, sizeof body), 405);
        snprintf(path, sizeof path, "/zip.php?backend=%s&updates=3", writable[b]);
        ck_assert_int_eq(http_req(f, "POST", path, body, sizeof body), 200);
        snprintf(head, sizeof head, "{\"backend\":\"%s\",\"queries\":3,\"written\":[{\"code\":\"", writable[b]);
        ck_assert_msg(!strncmp(body, head, strlen(head)), "%s: %s", f->name, body);
        snprintf(path, sizeof path, "/zip.php?backend=%s&updates=0", writable[b]);
        ck_assert_int_eq(http_req(f, "POST", path, body, sizeof body), 400);
        snprintf(path, sizeof path, "/zip.php?backend=%s&update=0000000", writable[b]);
        ck_assert_int_eq(http_req(f, "POST", path, body, sizeof body), 404);
    }
}
END_TEST

Suite *suite_php(void)
{
    TCase *t = test_case("php", setup, teardown, 240, TESTS(
        known_codes_give_the_rows_of_the_file, pg_through_either_pooler_gives_the_same_rows,
        via_takes_only_a_configured_target, a_shared_code_gives_every_row,
        unknown_code_404_bad_code_400, random_codes_come_from_the_key_file,
        queries_answer_each_code_as_zip_does, list_pages_as_the_file_says, cached_answers_are_zip_answers,
        updates_write_the_stamp,
        stop_and_start_again, fpm_children_are_static_and_secrets_private));
    return suite_of("php", t, NULL);
}
