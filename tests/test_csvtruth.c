/* The file is the truth: the answer for each row of a CSV of one's own
 * equals what Python's csv module reads from the file, on every backend.
 *
 * tests/csvtruth.py writes seeded CSVs (headers alike but for case,
 * spaces, punctuation or Unicode normalization; numbers at every edge;
 * empty and quoted-empty fields, UTF-8, CRLF) and loads each with
 * `loader --csv FILE --key HEADER` into the four backends; the server is
 * started on them here; the script then asks for every row and compares.
 * The seed is new each run (ZB_TRUTH_SEED=N replays one) and printed with
 * the first difference. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

#define BACKENDS "sqlite,pg,innodb,myisam"

static const char *const backends[] = { "sqlite", "pg", "innodb", "myisam" };

/* A directory of the test's own, with a config whose include and SQLite
 * file are in it. */
static void fresh_dir(const char *name, char *dir, size_t dirlen, char *conf, size_t conflen)
{
    char why[256];
    snprintf(dir, dirlen, "%s", test_dir(name));
    snprintf(conf, conflen, "%s/truth.conf", dir);
    ck_assert_msg(write_conf_for_csv(conf, dir, "test.sqlite", why, sizeof why) == 0, "%s", why);
}

/* The body of GET path from the server on port (200 or the test fails). */
static const char *get_body(int port, const char *path)
{
    static char raw[1 << 16];
    char req[1024];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                     path);
    ck_assert_msg(http_exchange(port, req, (size_t)n, raw, sizeof raw, 15000) > 0, "GET %s", path);
    const char *body = strstr(raw, "\r\n\r\n");
    ck_assert_msg(http_status(raw) == 200 && body, "GET %s: %s", path, raw);
    return body + 4;
}

/* The examples of issue 47, on every backend: a real answered as the
 * shortest text of its double (SQLite's 15 digits lost
 * 0.30000000000000004; 671.00 was 671.0 on SQLite, 671 elsewhere); a
 * value past 64 bits keeps the column text, not real; -0.0, +5 and 007
 * stay text; --key names the header byte for byte (`name`, not `Name`),
 * and the answer's fields are the header's texts, 名前 too. */
START_TEST(the_issues_examples_answer_as_in_the_file)
{
    char dir[1024], conf[1100], csv[1100], logfile[1100], why[4096] = "";
    static char out[16384];
    fresh_dir("csvtruth_examples", dir, sizeof dir, conf, sizeof conf);
    snprintf(csv, sizeof csv, "%s/examples.csv", dir);
    snprintf(logfile, sizeof logfile, "%s/server.log", dir);
    write_file(csv, "id,Name,name,a b,a_b,price,big,\xe5\x90\x8d\xe5\x89\x8d,r,odd\r\n"
                    "k1,X,y1,1,2,671.00,9223372036854775807,\xe5\xb1\xb1,1.5,-0\r\n"
                    "k2,X,y2,3,4,0.30000000000000004,9223372036854775808,\xe5\xb7\x9d,-0.0,+5\r\n"
                    "k3,X,y3,5,6,1.2345678901234567,-1,x,2,007\r\n");
    ck_assert_msg(run_cmd(out, sizeof out, "%s --conf %s --csv %s --key name --name zt_examples "
                          "--describe", prog("loader"), conf, csv) == 0, "%s", out);
    ck_assert_msg(strstr(out, "columns  id text, name text, name_2 text not null, a_b integer, "
                         "a_b_2 integer, price real, big text, column_8 text, r text, odd text\n"
                         "key      'name' (name_2)\n"
                         "fields   'id' (id), 'Name' (name), 'name' (name_2), 'a b' (a_b), "
                         "'a_b' (a_b_2), 'price' (price), 'big' (big), "
                         "'\xe5\x90\x8d\xe5\x89\x8d' (column_8), 'r' (r), 'odd' (odd)\n"), "%s",
                  out);
    ck_assert_msg(run_cmd(out, sizeof out, "%s -q --conf %s --csv %s --key name --name zt_examples "
                          "--backend " BACKENDS " --allow-shrink", prog("loader"), conf, csv) == 0,
                  "%s", out);
    int port = free_port(18480);
    pid_t pid = fixture_server(conf, port, logfile, "--backends " BACKENDS
                               " --datasets zt_examples", why, sizeof why);
    if (why[0]) {
        term_server(pid);
        ck_abort_msg("%s", why);
    }
    static const char *const want[] = {
        "{\"id\":\"k1\",\"Name\":\"X\",\"name\":\"y1\",\"a b\":1,\"a_b\":2,\"price\":671,"
        "\"big\":\"9223372036854775807\",\"\xe5\x90\x8d\xe5\x89\x8d\":\"\xe5\xb1\xb1\","
        "\"r\":\"1.5\",\"odd\":\"-0\"}",
        "{\"id\":\"k2\",\"Name\":\"X\",\"name\":\"y2\",\"a b\":3,\"a_b\":4,"
        "\"price\":0.30000000000000004,\"big\":\"9223372036854775808\","
        "\"\xe5\x90\x8d\xe5\x89\x8d\":\"\xe5\xb7\x9d\",\"r\":\"-0.0\",\"odd\":\"+5\"}",
        "{\"id\":\"k3\",\"Name\":\"X\",\"name\":\"y3\",\"a b\":5,\"a_b\":6,"
        "\"price\":1.2345678901234567,\"big\":\"-1\",\"\xe5\x90\x8d\xe5\x89\x8d\":\"x\","
        "\"r\":\"2\",\"odd\":\"007\"}",
    };
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++)
        for (int k = 0; k < 3; k++) {
            char path[128], head[256];
            snprintf(path, sizeof path, "/zt_examples/%s/y%d", backends[b], k + 1);
            snprintf(head, sizeof head, "{\"dataset\":\"zt_examples\",\"backend\":\"%s\","
                     "\"key\":\"y%d\",\"rows\":[", backends[b], k + 1);
            const char *body = get_body(port, path);
            size_t hl = strlen(head);
            bool same = !strncmp(body, head, hl) && !strncmp(body + hl, want[k], strlen(want[k])) &&
                        !strcmp(body + hl + strlen(want[k]), "]}");
            if (!same)
                term_server(pid);
            ck_assert_msg(same, "%s:\n got  %s\n want %s%s]}", path, body, head, want[k]);
        }
    term_server(pid);
}
END_TEST

/* Two headers alike byte for byte, or a --key alike a header only once
 * case or punctuation is set aside: refused naming the file and line 1,
 * with the near ones; nothing written. */
START_TEST(a_key_or_header_that_names_no_one_column_is_refused)
{
    char dir[1024], conf[1100], csv[1100], want[1400];
    static char out[16384];
    fresh_dir("csvtruth_refused", dir, sizeof dir, conf, sizeof conf);
    snprintf(csv, sizeof csv, "%s/twice.csv", dir);
    write_file(csv, "id,Name,x,Name\n1,a,b,c\n");
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s -q --conf %s --csv %s --key id --backend sqlite",
                             prog("loader"), conf, csv), 1);
    snprintf(want, sizeof want, "%s:1: columns 2 and 4 are both named 'Name': the answers name "
             "each field by its header, so each must be its own", csv);
    ck_assert_msg(strstr(out, want), "no '%s' in: %s", want, out);
    snprintf(csv, sizeof csv, "%s/near.csv", dir);
    write_file(csv, "Name,a b,value\nk,1,2\n");
    const struct { const char *key, *near; } cases[] = {
        { "name", "near: 'Name'; " }, { "a_b", "near: 'a b'; " }, { "nope", "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(run_cmd(out, sizeof out, "%s -q --conf %s --csv %s --key '%s' --backend "
                                 "sqlite", prog("loader"), conf, csv, cases[i].key), 1);
        snprintf(want, sizeof want, "%s:1: key: no column '%s' in the header, byte for byte (%s"
                 "its columns: 'Name', 'a b', 'value')", csv, cases[i].key, cases[i].near);
        ck_assert_msg(strstr(out, want), "no '%s' in: %s", want, out);
    }
    ck_assert_int_eq(run_cmd(out, sizeof out, "ls %s/conf.d 2>&1", dir), 2);
}
END_TEST

static unsigned truth_seed(void)
{
    const char *s = getenv("ZB_TRUTH_SEED");
    if (s && *s)
        return (unsigned)strtoul(s, NULL, 10);
    return (unsigned)time(NULL) % 1000000u * 100u + (unsigned)getpid() % 100u;
}

START_TEST(every_row_served_is_the_files)
{
    unsigned seed = truth_seed();
    char dir[1024], conf[1100], logfile[1100], why[4096] = "";
    fresh_dir("csvtruth", dir, sizeof dir, conf, sizeof conf);
    snprintf(logfile, sizeof logfile, "%s/server.log", dir);
    static char out[1 << 16];
    int rc = run_cmd(out, sizeof out, "python3 tests/csvtruth.py load --seed %u --dir '%s' "
                     "--conf '%s' --loader '%s' --backends " BACKENDS, seed, dir, conf,
                     prog("loader"));
    ck_assert_msg(rc == 0, "seed %u: csvtruth.py load: exit %d: %s", seed, rc, out);
    const char *list = strstr(out, "datasets: ");
    ck_assert_msg(list, "seed %u: %s", seed, out);
    char args[1024];
    snprintf(args, sizeof args, "--backends " BACKENDS " --datasets %.*s",
             (int)strcspn(list + 10, "\n"), list + 10);
    int port = free_port(18480);
    pid_t pid = fixture_server(conf, port, logfile, args, why, sizeof why);
    if (why[0]) {
        term_server(pid);
        ck_abort_msg("seed %u: %s", seed, why);
    }
    rc = run_cmd(out, sizeof out, "python3 tests/csvtruth.py check --dir '%s' --port %d "
                 "--backends " BACKENDS, dir, port);
    term_server(pid);
    ck_assert_msg(rc == 0, "seed %u: exit %d: %s", seed, rc, out);
    printf("%s", out);
}
END_TEST

Suite *suite_csvtruth(void)
{
    TCase *t = test_case("oracle", NULL, NULL, 300, TESTS(
        the_issues_examples_answer_as_in_the_file,
        a_key_or_header_that_names_no_one_column_is_refused, every_row_served_is_the_files));
    return suite_of("csvtruth", t, NULL);
}
