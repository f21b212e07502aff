/* Datasets end to end: the postal dataset (generated), GeoNames' cities
 * (the first rows of build/cities1000.txt) and a small text-keyed one
 * loaded into the four backends with build/bin/loader, served by one
 * build/bin/server --datasets postal,cities,words, and driven by loadgen
 * with the keys file `loader --write-keys` made. Every answer is checked
 * against the source file: NULLs null, long text whole, numbers numbers. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "util.h"

#define PORT test_port(18490)
#define ROWS 2000
#define NB 4
#define NCOLS 19

static const char *const backends[NB] = { "sqlite", "pg", "innodb", "myisam" };
/* GeoNames' columns, as conf/zipbench.conf's [dataset cities] names them. */
static const char *const columns[NCOLS] = {
    "id", "name", "asciiname", "alternate_names", "latitude", "longitude", "feature_class",
    "feature_code", "country_code", "cc2", "admin1_code", "admin2_code", "admin3_code",
    "admin4_code", "population", "elevation", "dem", "timezone", "modification_date",
};
enum { T_TEXT, T_INT, T_REAL };
static const int types[NCOLS] = { T_INT, 0, 0, 0, T_REAL, T_REAL, 0, 0, 0, 0, 0, 0, 0, 0,
                                  T_INT, T_INT, T_INT, 0, 0 };

static char dir[1024], conf[1100], cities[1100], postal[1100], keys[1100], logfile[1100];
static char sets[4096], setup_error[8192], postal_code[8];
static char *lines[ROWS];
static int nlines;
static pid_t server_pid;

static const char *const words_csv =
    "word,meaning\n"
    "apple,a fruit\n"
    "a b/c,\"a space, a slash\"\n"
    "100,a number as text\n"
    "random,not the /random route here\n"
    "50%,\"per cent, \"\"quoted\"\"\"\n"
    "\xc3\xa9t\xc3\xa9,summer\n";

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", test_dir("dataset"));
    char words[1100], out[4096];
    struct { char *path; const char *name; } files[] = {
        { conf, "dataset.conf" }, { cities, "cities.txt" }, { postal, "postal.csv" },
        { keys, "cities.keys" },  { logfile, "server.log" }, { words, "words.csv" },
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        snprintf(files[i].path, 1100, "%s/%s", dir, files[i].name);
    if (write_conf_with_words(conf, words, words_csv, "word text, meaning text", setup_error,
                              sizeof setup_error) < 0)
        return;
    snprintf(sets, sizeof sets, "--set sqlite.path=%s/ds.sqlite --set sqlite.table=zt_ds "
             "--set pg.table=zt_ds --set innodb.table=zt_ds_innodb --set myisam.table=zt_ds_myisam "
             "--set dataset.cities.file=%s --set dataset.cities.table=zt_dscities "
             "--set dataset.words.table=zt_dswords", dir, cities);
    if (run_cmd(out, sizeof out, "head -n %d '%s' > '%s' && %s --rows 500 --seed 11 -o %s", ROWS,
                data_path("cities1000.txt"), cities, prog("gen"), postal)) {
        snprintf(setup_error, sizeof setup_error, "data: %s", out);
        return;
    }
    const char *db = getenv("ZB_DB");
    run_cmd(NULL, 0, "%s start", db && *db ? db : "scripts/db");
    for (int i = 0; i < NB; i++) {
        const char *what[] = { postal, "cities", "words" };
        for (int d = 0; d < 3; d++) {
            int rc = run_cmd(out, sizeof out, "%s -q --conf %s %s --backend %s --dataset %s",
                             prog("loader"), conf, sets, backends[i], what[d]);
            if (rc) {
                snprintf(setup_error, sizeof setup_error, "loader %s %s: exit %d: %s",
                         backends[i], what[d], rc, out);
                return;
            }
        }
    }
    int rc = run_cmd(out, sizeof out, "%s -q --conf %s %s --dataset cities --write-keys %s",
                     prog("loader"), conf, sets, keys);
    if (rc) {
        snprintf(setup_error, sizeof setup_error, "loader --write-keys: exit %d: %s", rc, out);
        return;
    }
    FILE *f = fopen(cities, "r");
    static char line[1 << 16];
    while (f && nlines < ROWS && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        lines[nlines++] = strdup(line);
    }
    if (f)
        fclose(f);
    f = fopen(postal, "r");   /* KEN_ALL: the code is the third field, quoted */
    if (f && fgets(line, sizeof line, f)) {
        const char *c = strchr(strchr(line, ',') + 1, ',') + 2;
        snprintf(postal_code, sizeof postal_code, "%.7s", c);
    }
    if (f)
        fclose(f);
    char args[4200];
    snprintf(args, sizeof args, "--datasets postal,cities,words %s", sets);
    server_pid = fixture_server(conf, PORT, logfile, args, setup_error, sizeof setup_error);
}

static void teardown(void)
{
    term_server(server_pid);
    server_pid = 0;
    for (int i = 0; i < nlines; i++)
        free(lines[i]);
    nlines = 0;
}

#define SETUP_OK() ck_assert_msg(!setup_error[0], "%s", setup_error)

/* ---- a GET and its answer ---- */

static char answer[1 << 18];
static const char *body;

static int get(const char *path)
{
    char req[2048];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                     path);
    int got = http_exchange(PORT, req, (size_t)n, answer, sizeof answer, 15000);
    ck_assert_msg(got > 0, "GET %s: no answer", path);
    const char *b = strstr(answer, "\r\n\r\n");
    body = b ? b + 4 : "";
    return http_status(answer);
}

/* ---- reading the JSON answer ---- */

static void put_utf8(char **w, unsigned cp)
{
    unsigned char *o = (unsigned char *)*w;
    if (cp < 0x80) {
        *o++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *o++ = (unsigned char)(0xc0 | cp >> 6);
        *o++ = (unsigned char)(0x80 | (cp & 0x3f));
    } else {
        *o++ = (unsigned char)(0xe0 | cp >> 12);
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (unsigned char)(0x80 | (cp & 0x3f));
    }
    *w = (char *)o;
}

/* The JSON value at p: 'n' null, '1' a number (its text), 's' a string
 * (unescaped) into out; *end after it. */
static char value_at(const char *p, char *out, size_t len, const char **end)
{
    if (!strncmp(p, "null", 4)) {
        *end = p + 4;
        out[0] = 0;
        return 'n';
    }
    if (*p != '"') {
        size_t n = strspn(p, "-+.0123456789eE");
        ck_assert_msg(n > 0 && n < len, "not a JSON value: %.60s", p);
        snprintf(out, len, "%.*s", (int)n, p);
        *end = p + n;
        return '1';
    }
    char *w = out;
    for (p++; *p != '"'; p++) {
        ck_assert_msg(*p && (size_t)(w - out) + 4 < len, "string too long or unterminated");
        if (*p != '\\') {
            *w++ = *p;
            continue;
        }
        p++;
        switch (*p) {
        case 'n': *w++ = '\n'; break;
        case 't': *w++ = '\t'; break;
        case 'r': *w++ = '\r'; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'u': {
            unsigned cp = 0;
            ck_assert_int_eq(sscanf(p + 1, "%4x", &cp), 1);
            put_utf8(&w, cp);
            p += 4;
            break;
        }
        default: *w++ = *p; break;   /* \" \\ \/ */
        }
    }
    *w = 0;
    *end = p + 1;
    return 's';
}

/* The answer for line (a row of the cities file) on backend b: the one row,
 * column by column as in the file. */
static void check_row(const char *b, const char *line)
{
    char id[32], path[128], want[256];
    snprintf(id, sizeof id, "%.*s", (int)strcspn(line, "\t"), line);
    snprintf(path, sizeof path, "/cities/%s/%s", b, id);
    ck_assert_msg(get(path) == 200, "%s: %s", path, body);
    snprintf(want, sizeof want, "{\"dataset\":\"cities\",\"backend\":\"%s\",\"key\":\"%s\",\"rows\":[{",
             b, id);
    ck_assert_msg(!strncmp(body, want, strlen(want)), "%s: %.300s", path, body);
    const char *p = body + strlen(want), *field = line;
    static char got[1 << 16];
    for (int c = 0; c < NCOLS; c++) {
        char key[64];
        snprintf(key, sizeof key, "%s\"%s\":", c ? "," : "", columns[c]);
        ck_assert_msg(!strncmp(p, key, strlen(key)), "%s: column %s at %.80s", path, columns[c], p);
        char kind = value_at(p + strlen(key), got, sizeof got, &p);
        size_t flen = strcspn(field, "\t");
        if (flen == 0)
            ck_assert_msg(kind == 'n', "%s: %s: empty in the file, %c %s", path, columns[c], kind,
                          got);
        else if (types[c] == T_TEXT)
            ck_assert_msg(kind == 's' && strlen(got) == flen && !memcmp(got, field, flen),
                          "%s: %s: '%.*s' in the file, '%s'", path, columns[c], (int)flen, field,
                          got);
        else if (types[c] == T_INT)
            ck_assert_msg(kind == '1' && strlen(got) == flen && !memcmp(got, field, flen),
                          "%s: %s: %.*s in the file, %c %s", path, columns[c], (int)flen, field,
                          kind, got);
        else
            ck_assert_msg(kind == '1' && strtod(got, NULL) == strtod(field, NULL),
                          "%s: %s: %.*s in the file, %c %s", path, columns[c], (int)flen, field,
                          kind, got);
        field += flen + (field[flen] != 0);
    }
    ck_assert_msg(!strcmp(p, "}]}"), "%s: more than one row: %.100s", path, p);
}

/* Every 50th row, the one with the longest text, the last: from each backend. */
START_TEST(cities_rows_as_in_the_file)
{
    SETUP_OK();
    int longest = 0;
    for (int i = 0; i < nlines; i++)
        if (strlen(lines[i]) > strlen(lines[longest]))
            longest = i;
    ck_assert_int_gt(strlen(lines[longest]), 1000);
    for (int b = 0; b < NB; b++)
        for (int i = 0; i < nlines; i++)
            if (i % 50 == 0 || i == longest || i == nlines - 1)
                check_row(backends[b], lines[i]);
}
END_TEST

START_TEST(bad_and_missing_keys)
{
    SETUP_OK();
    for (int b = 0; b < NB; b++) {
        const char *be = backends[b];
        char path[512];
        snprintf(path, sizeof path, "/cities/%s/999999999", be);
        ck_assert_int_eq(get(path), 404);
        ck_assert_msg(strstr(body, "\"key\":\"999999999\",\"error\":\"no such key\""), "%s", body);
        snprintf(path, sizeof path, "/cities/%s/-5", be);
        ck_assert_int_eq(get(path), 404);
        /* 19 digits within 64 bits is a key (404 here); past 64 bits not. */
        snprintf(path, sizeof path, "/cities/%s/9223372036854775807", be);
        ck_assert_msg(get(path) == 404, "%s: %s", path, body);
        const char *bad[] = { "abc", "12a", "9223372036854775808", "12345678901234567890", "-",
                              "1.5", "%2012" };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            snprintf(path, sizeof path, "/cities/%s/%s", be, bad[i]);
            ck_assert_msg(get(path) == 400, "%s: %s", path, body);
            ck_assert_msg(strstr(body, "the key of dataset cities must be an integer"), "%s", body);
        }
        snprintf(path, sizeof path, "/cities/%s/random", be);
        ck_assert_int_eq(get(path), 400);
        ck_assert_msg(strstr(body, "loadgen --keys"), "%s", body);
        /* A text key: any bytes, percent-decoded, up to 255 of them; its
         * '/' as it is or as %2F (the key is the rest of the path, where no
         * segment is read); %2F where segments are read is refused. */
        snprintf(path, sizeof path, "/words/%s/a%%20b/c", be);
        ck_assert_msg(get(path) == 200, "%s: %s", path, body);
        ck_assert_msg(strstr(body, "\"key\":\"a b/c\",\"rows\":[{\"word\":\"a b/c\",\"meaning\":"
                                   "\"a space, a slash\"}]}"), "%s", body);
        snprintf(path, sizeof path, "/words/%s/a%%20b%%2Fc", be);
        ck_assert_msg(get(path) == 200 && strstr(body, "\"key\":\"a b/c\""), "%s: %s", path, body);
        snprintf(path, sizeof path, "/words%%2F%s/a%%20b", be);
        ck_assert_msg(get(path) == 400 && strstr(body, "percent-encoded '/'"), "%s: %s", path, body);
        snprintf(path, sizeof path, "/words/%s/50%%25", be);
        ck_assert_msg(get(path) == 200, "%s: %s", path, body);
        ck_assert_msg(strstr(body, "\"meaning\":\"per cent, \\\"quoted\\\"\""), "%s", body);
        snprintf(path, sizeof path, "/words/%s/%%C3%%A9t%%C3%%A9", be);
        ck_assert_msg(get(path) == 200, "%s: %s", path, body);
        snprintf(path, sizeof path, "/words/%s/100", be);
        ck_assert_msg(get(path) == 200 && strstr(body, "\"word\":\"100\""), "%s: %s", path, body);
        snprintf(path, sizeof path, "/words/%s/random", be);   /* a key like any other */
        ck_assert_msg(get(path) == 200 && strstr(body, "not the /random route"), "%s", body);
        snprintf(path, sizeof path, "/words/%s/pear", be);
        ck_assert_int_eq(get(path), 404);
        snprintf(path, sizeof path, "/words/%s/", be);
        ck_assert_int_eq(get(path), 400);
        ck_assert_msg(strstr(body, "must not be empty"), "%s", body);
        int n = snprintf(path, sizeof path, "/words/%s/", be);
        memset(path + n, 'x', 256);
        path[n + 256] = 0;
        ck_assert_int_eq(get(path), 414);
        ck_assert_msg(strstr(body, "256 bytes long"), "%s", body);
        /* The postal dataset: /zip as before, /postal the same. */
        snprintf(path, sizeof path, "/zip/%s/%s", be, postal_code);
        ck_assert_msg(get(path) == 200, "%s: %s", path, body);
        static char zip_body[1 << 16];
        snprintf(zip_body, sizeof zip_body, "%s", body);
        char want[128];
        snprintf(want, sizeof want, "{\"backend\":\"%s\",\"code\":\"%s\",\"rows\":[{\"jis_code\":", be,
                 postal_code);
        ck_assert_msg(!strncmp(body, want, strlen(want)), "%s", body);
        snprintf(path, sizeof path, "/postal/%s/%s", be, postal_code);
        ck_assert_int_eq(get(path), 200);
        ck_assert_str_eq(body, zip_body);
        snprintf(path, sizeof path, "/zip/%s/random", be);
        ck_assert_msg(get(path) == 200, "%s", body);
        snprintf(path, sizeof path, "/zip/%s/12345", be);
        ck_assert_int_eq(get(path), 400);
    }
    ck_assert_int_eq(get("/cities/nosuch/1"), 404);
    ck_assert_msg(strstr(body, "no such backend"), "%s", body);
    ck_assert_int_eq(get("/nosuch/pg/1"), 404);
    ck_assert_msg(strstr(body, "datasets: postal, cities, words"), "%s", body);
}
END_TEST

START_TEST(health_and_stats_list_every_pair)
{
    SETUP_OK();
    ck_assert_msg(get("/health") == 200, "%s", body);
    for (int b = 0; b < NB; b++) {
        char want[128];
        snprintf(want, sizeof want, "{\"name\":\"%s\",\"dataset\":\"cities\",\"driver\":", backends[b]);
        ck_assert_msg(strstr(body, want), "%s", body);
        snprintf(want, sizeof want, "{\"name\":\"%s\",\"driver\":", backends[b]);
        ck_assert_msg(strstr(body, want), "%s", body);
    }
    ck_assert_int_eq(get("/stats"), 200);
    ck_assert_msg(strstr(body, "{\"name\":\"pg\",\"dataset\":\"words\",\"driver\":\"pg\""), "%s",
                  body);
}
END_TEST

/* The keys file: the file's ids, distinct, in numeric order; loadgen with
 * it gets every key it asks for. */
START_TEST(loadgen_with_the_datasets_keys)
{
    SETUP_OK();
    char out[16384];
    ck_assert_msg(run_cmd(out, sizeof out, "cut -f1 '%s' | sort -n | uniq | cmp - '%s'", cities,
                          keys) == 0, "%s", out);
    for (int b = 0; b < NB; b++) {
        int rc = run_cmd(out, sizeof out, "%s -q -k -c 4 -n 400 --json --keys %s "
                         "'http://127.0.0.1:%d/cities/%s/{key}'", prog("loadgen"), keys, PORT,
                         backends[b]);
        ck_assert_msg(rc == 0, "loadgen %s: exit %d: %s", backends[b], rc, out);
        ck_assert_msg(strstr(out, "\"completed\":400,\"failed\":0,") &&
                      strstr(out, "\"non2xx\":0,"), "%s: %.1500s", backends[b], out);
    }
}
END_TEST

/* A key that cannot be one line of a keys file: an error naming the line. */
START_TEST(write_keys_refuses_a_key_with_a_newline)
{
    SETUP_OK();
    char bad[1100], out[4096];
    snprintf(bad, sizeof bad, "%s/bad.csv", dir);
    write_file(bad, "word,meaning\nfine,ok\n\"two\nlines\",no\nlast,ok\n");
    int rc = run_cmd(out, sizeof out, "%s --conf %s --dataset words --set dataset.words.file=%s "
                     "--write-keys %s/bad.keys", prog("loader"), conf, bad, dir);
    ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
    char want[1200];
    snprintf(want, sizeof want, "%s:3: column word: the key holds a newline", bad);
    ck_assert_msg(strstr(out, want), "%s", out);
    snprintf(bad, sizeof bad, "%s/bad.keys", dir);
    ck_assert_int_ne(access(bad, F_OK), 0);
}
END_TEST

Suite *suite_dataset(void)
{
    TCase *t = test_case("served", setup, teardown, 300, TESTS(
        cities_rows_as_in_the_file, bad_and_missing_keys, health_and_stats_list_every_pair,
        loadgen_with_the_datasets_keys, write_keys_refuses_a_key_with_a_newline));
    return suite_of("dataset", t, NULL);
}
