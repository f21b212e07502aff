/* The config file: defaults, overrides, and errors that name file, line, key. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "helpers.h"

static char path[1100];

static int load_text(struct zb_conf *c, const char *text, struct zb_err *err)
{
    snprintf(path, sizeof path, "%s/z.conf", test_dir("conf"));
    write_file(path, text);
    return conf_load(c, path, err);
}

static void expect_error(const char *text, const char *want)
{
    struct zb_conf c;
    struct zb_err err = { 0 };
    ck_assert_int_eq(load_text(&c, text, &err), -1);
    char full[1300];
    snprintf(full, sizeof full, "%s%s", path, want);
    ck_assert_msg(strstr(err.msg, full) != NULL, "expected '%s' in: %s", full, err.msg);
    conf_free(&c);
}

START_TEST(shipped_config_loads)
{
    struct zb_conf c;
    struct zb_err err = { 0 };
    ck_assert_msg(conf_load(&c, "conf/zipbench.conf", &err) == 0, "%s", err.msg);
    ck_assert_int_eq(c.nbackends, 6);
    /* The poolers' sections reach pg's data: not part of "all". */
    const struct backend_conf *all[ZB_MAX_BACKENDS];
    ck_assert_int_eq(conf_select(&c, "all", all, &err), 4);
    ck_assert_int_eq(conf_select(&c, NULL, all, &err), 4);
    ck_assert_int_eq(conf_select(&c, "pg,pg_bouncer", all, &err), 2);
    ck_assert(conf_backend(&c, "pg_bouncer")->named_only);
    ck_assert_str_eq(conf_option(conf_backend(&c, "pg_bouncer"), "prepare"), "no");
    ck_assert_str_eq(conf_option(conf_backend(&c, "pg_pool"), "application_name"), "zipbench-primary");
    ck_assert(!conf_option(conf_backend(&c, "pg"), "prepare") && !conf_backend(&c, "pg")->named_only);
    const struct backend_conf *pg = conf_backend(&c, "pg");
    ck_assert_str_eq(pg->driver, "pg");
    /* ${ZB_PG_PORT:-25432}: below the ephemeral range, unless the environment says */
    ck_assert_int_eq(pg->port, getenv("ZB_PG_PORT") ? atoi(getenv("ZB_PG_PORT")) : 25432);
    ck_assert_str_eq(pg->password_file, "build/db/pgpass");
    ck_assert_str_eq(conf_option(conf_backend(&c, "myisam"), "engine"), "MyISAM");
    ck_assert_str_eq(conf_backend(&c, "sqlite")->table, "zipcode");
    ck_assert_str_eq(c.server.bind, "127.0.0.1");
    /* The server's lookups are bounded; the loader and sqlbench lift it. */
    ck_assert_int_eq(pg->query_timeout_ms, 5000);
    ck_assert_int_eq(conf_backend(&c, "sqlite")->query_timeout_ms, 0);
    ck_assert_int_eq(conf_set(&c, "pg", "query_timeout_ms", "600001", &err), -1);
    conf_unbounded_queries(&c);
    ck_assert_int_eq(pg->query_timeout_ms, 0);
    ck_assert_int_eq(conf_set(&c, "pg", "port", "5433", &err), 0);
    ck_assert_int_eq(conf_backend(&c, "pg")->port, 5433);
    ck_assert_int_eq(conf_set(&c, NULL, "threads", "4", &err), 0);
    ck_assert_int_eq(c.server.threads, 4);
    ck_assert_int_eq(conf_set(&c, "pg", "colour", "red", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown key 'colour'"));
    ck_assert_int_eq(conf_set(&c, "nosuch", "port", "1", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown backend 'nosuch'"));
    conf_free(&c);
}
END_TEST

START_TEST(errors_name_file_line_and_key)
{
    expect_error("[server]\nport = 80x\n", ":2: port: '80x' is not an integer in 1..65535");
    expect_error("[server]\nport = 8080\n\n[backend pg]\ndriver = pg\nbogus = 1\n", ":6: unknown key 'bogus'");
    expect_error("[serve]\nport = 1\n", ":2: unknown section [serve]");
    expect_error("[server]\nthis line has no equals sign\n", ":2: syntax error");
    expect_error("[backend x]\ndriver = oracle\n", ":2: [backend x]: driver: 'oracle' is not sqlite");
    expect_error("[backend x]\nport = 1\n", ": [backend x]: missing key 'driver'");
    expect_error("[backend x]\ndriver = pg\ntable = t;drop\n", ":3: table: 't;drop' is not");
    expect_error("[backend x]\ndriver = pg\ntable = a-b\n", ":3: table: 'a-b' is not a plain SQL name");
    expect_error("[backend x]\ndriver = pg\n[backend x]\ndriver = pg\n", ":3: section [backend x] defined twice");
    expect_error("[backend x]\ndriver = pg\nread_only = maybe\n", ":3: read_only: 'maybe' is not yes or no");
    expect_error("[backend x]\ndriver = pg\npersistent = no\n", ":3: unknown key 'persistent'");
    expect_error("[backend x]\ndriver = pg\npool_min = 40\n\npool_hard_max = 20\n",
                 ":5: [backend x]: pool_hard_max (20) is below pool_min (40) or pool_soft_max (8)");
    expect_error("[backend x]\ndriver = sqlite\nprepare = no\n", ":3: unknown key 'prepare' (for a sqlite backend)");
    expect_error("[backend x]\ndriver = pg\nprepare = maybe\n", ":3: [backend x]: prepare: 'maybe' is not yes or no");
    struct zb_conf c;
    struct zb_err err = { 0 };
    ck_assert_int_eq(conf_load(&c, "/nonexistent/z.conf", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/z.conf: cannot open"));
    conf_free(&c);
}
END_TEST

/* ${NAME} and ${NAME:-DEFAULT} take the environment; errors name the line. */
START_TEST(environment_variables_in_values)
{
    struct zb_conf c;
    struct zb_err err = { 0 };
    setenv("ZB_TEST_PORT", "25999", 1);
    unsetenv("ZB_TEST_UNSET");
    ck_assert_msg(load_text(&c, "[backend x]\ndriver = pg\nport = ${ZB_TEST_PORT:-1}\n"
                                "socket = /d/${ZB_TEST_UNSET:-run}/s\nuser = ${ZB_TEST_PORT}\n",
                            &err) == 0, "%s", err.msg);
    ck_assert_int_eq(conf_backend(&c, "x")->port, 25999);
    ck_assert_str_eq(conf_backend(&c, "x")->socket, "/d/run/s");
    ck_assert_str_eq(conf_backend(&c, "x")->user, "25999");
    conf_free(&c);
    expect_error("[backend x]\ndriver = pg\nport = ${ZB_TEST_UNSET}\n",
                 ":3: port: environment variable ZB_TEST_UNSET is not set");
    expect_error("[backend x]\ndriver = pg\nport = ${ZB_TEST_PORT\n", ":3: port: '${ZB_TEST_PORT' is not ${NAME}");
    expect_error("[backend x]\ndriver = pg\nuser = ${A-b}\n", ":3: user: '${A-b}' is not ${NAME}");
    unsetenv("ZB_TEST_PORT");
}
END_TEST

/* libinih (Debian's build) reads 199 bytes of a line and parses the rest
 * as a line of its own: a long line is an error, never two settings. */
START_TEST(long_lines_are_an_error)
{
    char text[1024], path_value[256];
    memset(path_value, 'a', 150);
    path_value[150] = 0;
    snprintf(text, sizeof text, "[backend s]\ndriver = sqlite\npath = build/%s%60sread_only = no\n",
             path_value, "");
    expect_error(text, ":3: line longer than 199 bytes");
    /* 199 bytes fit, with LF, CRLF or no line end at all. */
    const char *ends[] = { "\n", "\r\n", "" };
    for (int i = 0; i < 3; i++) {
        char value[256];
        memset(value, 'b', 199 - 7);
        value[199 - 7] = 0;
        snprintf(text, sizeof text, "[backend s]\r\ndriver = sqlite\r\npath = %s%s", value, ends[i]);
        struct zb_conf c;
        struct zb_err err = { 0 };
        ck_assert_msg(load_text(&c, text, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(strlen(conf_backend(&c, "s")->path), 199 - 7);
        conf_free(&c);
        snprintf(text, sizeof text, "[backend s]\ndriver = sqlite\npath = %sb%s", value, ends[i]);
        expect_error(text, ":3: line longer than 199 bytes");
    }
}
END_TEST

/* What would fail only once used is refused when the config is read, with
 * its line: a table name SQL reserves (the SQL around it would not parse,
 * after a whole load), a NUL byte (the value would end there), an empty
 * value (an empty socket would win over host, and libpq would then try
 * its own default socket). */
START_TEST(values_that_would_fail_later)
{
    expect_error("[backend x]\ndriver = pg\ntable = select\n",
                 ":3: table: 'select' is a word SQL reserves");
    expect_error("[backend x]\ndriver = mysql\ntable = Order\n",
                 ":3: table: 'Order' is a word SQL reserves");
    /* A dataset's table on a backend is TABLE_BACKEND: current_date. */
    expect_error("[backend date]\ndriver = pg\n\n[dataset current]\nfile = c.csv\n",
                 ":5: [dataset current]: its table on backend date, current_date, is a word SQL "
                 "reserves");
    expect_error("[backend x]\ndriver = pg\nhost = 127.0.0.1\nsocket =\n",
                 ":4: socket: empty value");
    expect_error("[backend x]\ndriver = pg\nsocket = ${ZB_TEST_UNSET:-}\n",
                 ":3: socket: empty value");
    expect_error("[backend x]\ndriver = pg\napplication_name =\n",
                 ":3: application_name: empty value");
    /* A NUL byte (written by hand: the helpers take C strings). */
    snprintf(path, sizeof path, "%s/nul.conf", test_dir("conf"));
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite("[backend x]\ndriver = sqlite\npath = a.sqlite\0.bak\n", 1, 50, f);
    fclose(f);
    struct zb_conf c;
    struct zb_err err = { 0 };
    ck_assert_int_eq(conf_load(&c, path, &err), -1);
    char want[1200];
    snprintf(want, sizeof want, "%s:3: NUL byte at byte 16", path);
    ck_assert_msg(strstr(err.msg, want), "expected '%s' in: %s", want, err.msg);
    conf_free(&c);
    /* The same from the command line. */
    ck_assert_msg(conf_load(&c, "conf/zipbench.conf", &err) == 0, "%s", err.msg);
    ck_assert_int_eq(conf_set(&c, "pg", "socket", "", &err), -1);
    ck_assert_msg(strstr(err.msg, "socket: empty value"), "%s", err.msg);
    ck_assert_int_eq(conf_set(&c, "pg", "table", "user", &err), -1);
    ck_assert_msg(strstr(err.msg, "'user' is a word SQL reserves"), "%s", err.msg);
    conf_free(&c);
    load_text(&c, "[backend date]\ndriver = pg\n\n[dataset current]\nfile = c.csv\ntable = cur\n",
              &err);
    conf_free(&c);
    const char *sets[] = { "dataset.current.table=current" };
    ck_assert_int_eq(conf_open(&c, path, sets, 1, &err), -1);
    ck_assert_msg(strstr(err.msg, "--set dataset.current.table=current: ") &&
                  strstr(err.msg, ":5: [dataset current]: its table on backend date, current_date"),
                  "%s", err.msg);
    conf_free(&c);
}
END_TEST

/* One registry of the names the tree derives: a backend's table that is
 * another's write table (or its stamps, or a dataset's table) in the
 * same database is refused naming both, and so is a dataset named as a
 * server route (or zip); a name two backends use for the same thing (a
 * pooler's way to pg's table) is fine, and so are the same names in
 * other databases. Before, a second pg backend with table = zipcode_hits
 * loaded over pg's write table; a dataset named cached took /cached/. */
START_TEST(derived_names_are_one_registry)
{
    static const char pg[] = "[backend pg]\ndriver = pg\ndatabase = z\ntable = zipcode\n\n";
    char text[1024];
    snprintf(text, sizeof text, "%s[backend pg2]\ndriver = pg\ndatabase = z\ntable = zipcode_hits\n",
             pg);
    expect_error(text, ":7: [backend pg2]: the table zipcode_hits would be backend pg2's table, "
                       "but it is backend pg's write table (of zipcode) (");
    snprintf(text, sizeof text, "%s[backend pg2]\ndriver = pg\ndatabase = z\n"
             "table = zipcode_hits_stamp\n", pg);
    expect_error(text, ":7: [backend pg2]: the table zipcode_hits_stamp would be backend pg2's");
    snprintf(text, sizeof text, "%s[backend pg2]\ndriver = pg\ndatabase = z\ntable = zb_loads\n",
             pg);
    expect_error(text, ":7: [backend pg2]: the table zb_loads would be backend pg2's table");
    /* A dataset whose table on pg is pg's table. */
    snprintf(text, sizeof text, "%s[dataset zipcode]\nfile = z.csv\ntable = zip\n\n"
             "[backend code]\ndriver = pg\ndatabase = z\ntable = zip_pg\n", pg);
    expect_error(text, ":11: [backend code]: the table zip_pg would be backend code's table, but "
                       "it is dataset zipcode's table on backend pg");
    static const char *const routes[] = { "cached", "list", "queries", "update", "updates",
                                          "health", "stats", "zip" };
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        snprintf(text, sizeof text, "%s[dataset %s]\nfile = d.csv\n", pg, routes[i]);
        char want[200];
        snprintf(want, sizeof want, ":7: [dataset %s]: the name is the server's route /%s/",
                 routes[i], routes[i]);
        expect_error(text, want);
    }
    /* The same table from two backends of one database, and the same
     * names in another database: fine. */
    struct zb_conf c;
    struct zb_err err = { 0 };
    snprintf(text, sizeof text, "%s[backend pool]\ndriver = pg\ndatabase = z\ntable = zipcode\n\n"
             "[backend other]\ndriver = pg\ndatabase = y\ntable = zipcode_hits\n", pg);
    ck_assert_msg(load_text(&c, text, &err) == 0, "%s", err.msg);
    conf_free(&c);
    /* --set too. */
    ck_assert_msg(conf_load(&c, "conf/zipbench.conf", &err) == 0, "%s", err.msg);
    const char *sets[] = { "pg_bouncer.table=zipcode_hits" };
    ck_assert_int_eq(conf_apply_sets(&c, sets, 1, &err), -1);
    ck_assert_msg(strstr(err.msg, "--set pg_bouncer.table=zipcode_hits: ") &&
                  strstr(err.msg, "backend pg's write table"), "%s", err.msg);
    conf_free(&c);
}
END_TEST

/* `include = PATTERN` reads overlays of [dataset NAME] sections after the
 * config, in name order; what is wrong in one names its own file and line,
 * and the include that read it. */
START_TEST(include_reads_overlays)
{
    char dir[1200], overlay[1300], second[1300], text[2000];
    snprintf(dir, sizeof dir, "%s/conf.d", test_dir("conf-include"));
    snprintf(overlay, sizeof overlay, "%s/words.conf", dir);
    snprintf(second, sizeof second, "%s/zz.conf", dir);
    snprintf(text, sizeof text, "include = %s/*.conf\n[backend x]\ndriver = sqlite\npath = x.db\n",
             dir);
    struct zb_conf c;
    struct zb_err err = { 0 };
    /* No directory yet: no overlay, no error. */
    ck_assert_msg(load_text(&c, text, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(c.ndatasets, 1);
    ck_assert_int_eq(c.include_line, 1);
    char got[1200];
    ck_assert_msg(conf_overlay_dir(&c, got, sizeof got, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(got, dir);
    conf_free(&c);
    ck_assert_int_eq(run_cmd(NULL, 0, "mkdir -p %s", dir), 0);
    write_file(overlay, "; an overlay\n[dataset words]\nfile = w.csv\nkey = word\n");
    ck_assert_msg(load_text(&c, text, &err) == 0, "%s", err.msg);
    const struct dataset_conf *d = conf_dataset(&c, "words");
    ck_assert_ptr_nonnull(d);
    ck_assert_str_eq(d->conf_file, overlay);
    ck_assert_int_eq(d->line, 3);   /* its first key's */
    ck_assert_str_eq(d->key, "word");
    char names[200];
    conf_dataset_names(&c, names, sizeof names);
    ck_assert_str_eq(names, "postal, words");
    conf_free(&c);
    /* An error in an overlay: its file and line, and what read it. */
    char want[5000];
    write_file(overlay, "[dataset words]\nfile = w.csv\nformat = xml\n");
    ck_assert_int_eq(load_text(&c, text, &err), -1);
    snprintf(want, sizeof want, "%s:3: format: 'xml' is not kenall or csv (read by %s:1: include "
             "= %s/*.conf)", overlay, path, dir);
    ck_assert_msg(strstr(err.msg, want), "expected '%s' in: %s", want, err.msg);
    conf_free(&c);
    write_file(overlay, "[dataset words]\nkey = word\n");
    ck_assert_int_eq(load_text(&c, text, &err), -1);
    snprintf(want, sizeof want, "%s:2: [dataset words]: missing key 'file' (read by %s:1", overlay,
             path);
    ck_assert_msg(strstr(err.msg, want), "expected '%s' in: %s", want, err.msg);
    conf_free(&c);
    /* Overlays hold datasets only, and include nothing more. */
    write_file(overlay, "[backend y]\ndriver = sqlite\n");
    ck_assert_int_eq(load_text(&c, text, &err), -1);
    snprintf(want, sizeof want, "%s:2: [backend y]: an included file holds [dataset NAME] "
             "sections only", overlay);
    ck_assert_msg(strstr(err.msg, want), "expected '%s' in: %s", want, err.msg);
    conf_free(&c);
    write_file(overlay, "include = /etc/*.conf\n");
    ck_assert_int_eq(load_text(&c, text, &err), -1);
    ck_assert_msg(strstr(err.msg, ":1: include: an included file cannot include others"), "%s",
                  err.msg);
    conf_free(&c);
    /* A section of two files: both named. */
    write_file(overlay, "[dataset words]\nfile = w.csv\n");
    write_file(second, "\n[dataset words]\nfile = v.csv\n");
    ck_assert_int_eq(load_text(&c, text, &err), -1);
    snprintf(want, sizeof want, "%s:2: section [dataset words] defined twice (first in %s:1)",
             second, overlay);
    ck_assert_msg(strstr(err.msg, want), "expected '%s' in: %s", want, err.msg);
    conf_free(&c);
    remove(second);
    /* The include itself: one, of .conf files, before the first section. */
    expect_error("include = build/conf.d/*\n[server]\nport = 1\n",
                 ":1: include: 'build/conf.d/*' does not end in .conf");
    expect_error("include = a/*.conf\ninclude = b/*.conf\n", ":2: include given twice");
    expect_error("[server]\ninclude = a/*.conf\n", ":2: unknown key 'include'");
    /* No include of a directory's .conf files: nowhere to put an overlay. */
    ck_assert_msg(load_text(&c, "include = a/one.conf\n", &err) == 0, "%s", err.msg);
    ck_assert_int_eq(conf_overlay_dir(&c, got, sizeof got, &err), -1);
    ck_assert_msg(strstr(err.msg, "add the line 'include = build/conf.d/*.conf'"), "%s", err.msg);
    conf_free(&c);
    /* The tracked config puts overlays in build/conf.d. */
    ck_assert_msg(conf_load(&c, "conf/zipbench.conf", &err) == 0, "%s", err.msg);
    ck_assert_int_eq(conf_overlay_dir(&c, got, sizeof got, &err), 0);
    ck_assert_str_eq(got, "build/conf.d");
    conf_free(&c);
}
END_TEST

/* A port taken from the environment remembers its variable, which a
 * refused connect names; started_by is the command that starts it. */
START_TEST(port_variable_and_starter_are_kept)
{
    struct zb_conf c;
    struct zb_err err = { 0 };
    ck_assert_msg(conf_load(&c, "conf/zipbench.conf", &err) == 0, "%s", err.msg);
    ck_assert_str_eq(conf_backend(&c, "pg")->port_var, "ZB_PG_PORT");
    ck_assert_str_eq(conf_backend(&c, "innodb")->port_var, "ZB_MY_PORT");
    ck_assert_str_eq(conf_backend(&c, "pg_bouncer")->port_var, "ZB_PGBOUNCER_PORT");
    ck_assert_str_eq(conf_backend(&c, "pg")->started_by, "scripts/db start");
    ck_assert_str_eq(conf_backend(&c, "pg_pool")->started_by, "scripts/pooler start");
    ck_assert_ptr_null(conf_backend(&c, "sqlite")->port_var);
    ck_assert_int_eq(conf_set(&c, "pg", "port", "5433", &err), 0);
    ck_assert_ptr_null(conf_backend(&c, "pg")->port_var);
    conf_free(&c);
}
END_TEST

/* build/bin/zbconf, what the scripts read the config with, prints the
 * values as the programs read them: expanded, defaults filled in. */
START_TEST(zbconf_prints_values_as_programs_read_them)
{
    char out[512];
    ck_assert_int_eq(run_cmd(out, sizeof out, "ZB_PG_PORT=6543 %s -c conf/zipbench.conf pg.port "
                             "sqlite.table server.bind pg.read_only dataset.postal.format",
                             prog("zbconf")), 0);
    ck_assert_str_eq(out, "6543\nzipcode\n127.0.0.1\nno\nkenall\n");
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s -c conf/zipbench.conf pg.no_such_key",
                             prog("zbconf")), 2);
    ck_assert_msg(strstr(out, "unknown key 'no_such_key'"), "%s", out);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s -c conf/zipbench.conf --set pg.port=7000 "
                             "pg.port", prog("zbconf")), 0);
    ck_assert_str_eq(out, "7000\n");
}
END_TEST

/* zbconf --overlay (scripts/lab's app config): the base with only the
 * differences applied, its comments kept, checked by reading it back; a
 * difference to a section the base lacks, or a result the programs would
 * refuse, is an error and writes nothing. */
START_TEST(zbconf_overlay_applies_differences)
{
    const char *dir = test_dir("conf-overlay");
    char overlay[1200], merged[1200], out[4096];
    snprintf(overlay, sizeof overlay, "%s/overlay.ini", dir);
    snprintf(merged, sizeof merged, "%s/merged.conf", dir);
    write_file(overlay, "; the overlay's own opening comment\n\n"
               "[server]\nthreads = 3          ; a comment of its own\n\n"
               "[backend pg]\nsocket =\nhost = 10.0.0.2\nport = 6000\n\n"
               "[backend pg_two < backend pg]\nhost = 10.0.0.3\nnamed_only = yes\n");
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s -c conf/zipbench.conf --overlay %s > %s",
                             prog("zbconf"), overlay, merged), 0);
    ck_assert_int_eq(run_cmd(out, sizeof out, "head -1 %s; grep -c '^; ' %s", merged, merged), 0);
    ck_assert_msg(!strncmp(out, "; the overlay's own opening comment\n", 36), "%s", out);
    ck_assert_msg(atoi(strchr(out, '\n') + 1) > 10, "the base's comments are kept: %s", out);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s -c %s server.threads pg.socket pg.host pg.port "
                             "pg_two.host pg_two.port pg_two.named_only pg.table",
                             prog("zbconf"), merged), 0);
    ck_assert_str_eq(out, "3\n\n10.0.0.2\n6000\n10.0.0.3\n6000\nyes\nzipcode\n");

    write_file(overlay, "[backend nowhere]\nhost = x\n");
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s -c conf/zipbench.conf --overlay %s",
                             prog("zbconf"), overlay), 1);
    ck_assert_msg(strstr(out, "[backend nowhere]: no such section in the base"), "%s", out);
    write_file(overlay, "[backend pg]\nport = 70000\n");
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s -c conf/zipbench.conf --overlay %s",
                             prog("zbconf"), overlay), 1);
    ck_assert_msg(strstr(out, "does not read as a config") && strstr(out, "port"), "%s", out);
    ck_assert_msg(!strstr(out, "[server]"), "a refused result is not written: %s", out);
}
END_TEST

Suite *suite_conf(void)
{
    TCase *t = tier(test_case("conf", NULL, NULL, 0, TESTS(
        shipped_config_loads, errors_name_file_line_and_key, environment_variables_in_values,
        long_lines_are_an_error, values_that_would_fail_later, derived_names_are_one_registry, include_reads_overlays,
        port_variable_and_starter_are_kept, zbconf_prints_values_as_programs_read_them,
        zbconf_overlay_applies_differences)),
        TIER_UNIT);
    return suite_of("conf", t, NULL);
}
