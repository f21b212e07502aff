/* The loader against the real servers: every backend in every mode, row
 * counts and a sample of rows compared field by field with the file. */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "conf.h"
#include "dataset.h"
#include "helpers.h"
#include "sqlwords.h"

#define ROWS 1500

static const char *const backends[] = { "sqlite", "pg", "innodb", "myisam" };
static const char *const modes[] = { "autocommit", "transaction", "prepared", "bulk" };
static char csv[1100], truth[1100], sqlite_path[1100];

static void drop_test_tables(void);

static void make_dataset(void)
{
    const char *dir = test_dir("loader");
    snprintf(csv, sizeof csv, "%s/g.csv", dir);
    snprintf(truth, sizeof truth, "%s/g.tsv", dir);
    snprintf(sqlite_path, sizeof sqlite_path, "%s/loader.sqlite", dir);
    ck_assert_int_eq(run_cmd(NULL, 0, "%s --rows %d --seed 11 --truth %s -o %s",
                             prog("gen"), ROWS, truth, csv), 0);
    drop_test_tables();
}

/* Runs the loader with the test's table names; returns its exit status. */
static int loader(char *out, size_t len, const char *backend, const char *args)
{
    return run_cmd(out, len,
                   "%s -q --json --conf %s --backend %s --set sqlite.path=%s --set pg.table=zt_loader "
                   "--set innodb.table=zt_loader_innodb --set myisam.table=zt_loader_myisam %s",
                   prog("loader"), conf_path(), backend, sqlite_path, args);
}

static struct zb_conf conf;

/* Opens backend name of the tests' config, read into c (conf_free it
 * after backend_close). */
static void open_backend_in(struct zb_conf *c, struct backend *b, const char *name)
{
    struct zb_err err = { 0 };
    ck_assert_int_eq(conf_load(c, conf_path(), &err), 0);
    conf_set(c, "sqlite", "path", sqlite_path, &err);
    conf_set(c, "pg", "table", "zt_loader", &err);
    conf_set(c, "innodb", "table", "zt_loader_innodb", &err);
    conf_set(c, "myisam", "table", "zt_loader_myisam", &err);
    const struct backend_conf *bc = conf_backend(c, name);
    ck_assert_ptr_nonnull(bc);
    ck_assert_msg(backend_open(b, bc, &err) == 0, "%s", err.msg);
}

/* The same into the file's one config: one backend open at a time. */
static void open_backend(struct backend *b, const char *name) { open_backend_in(&conf, b, name); }

/* Each test starts from no table: the loader refuses to replace a table by
 * fewer rows, so a table left by an earlier run (or an earlier version of
 * these tests) must not decide a test's first load. */
static void drop_test_tables(void)
{
    static const char *const servers[] = { "pg", "innodb", "myisam" };
    for (size_t i = 0; i < sizeof servers / sizeof servers[0]; i++) {
        struct backend b;
        struct zb_err err = { 0 };
        char sql[256];
        open_backend(&b, servers[i]);
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", b.conf->table);
        ck_assert_msg(b.drv->exec(b.db, sql, &err) == 0, "%s: %s", servers[i], err.msg);
        backend_close(&b);
        conf_free(&conf);
    }
}

static int count_rows(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)n;
    (void)l;
    *(long long *)arg = atoll(v[0]);
    return 0;
}

struct match { const char *want; int found; };

static int match_row(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)l;
    struct match *m = arg;
    char got[4096];
    size_t k = 0;
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(got + k, sizeof got - k, "%s%s", i ? "\t" : "", v[i] ? v[i] : "NULL");
    if (!strcmp(got, m->want))
        m->found = 1;
    return 0;
}

static void check_table_against(const char *name, const char *truth_file, long long want_rows);

/* Every 50th row of the truth file is in the table, field for field. */
static void check_table(const char *name, long long want_rows)
{
    check_table_against(name, truth, want_rows);
}

/* The same against the truth of another generated file. */
static void check_table_against(const char *name, const char *truth_file, long long want_rows)
{
    struct backend b;
    open_backend(&b, name);
    struct zb_err err = { 0 };
    char sql[2048];
    long long n = -1;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", b.conf->table);
    ck_assert_msg(b.drv->query(b.db, sql, 0, NULL, count_rows, &n, NULL, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(n, want_rows);
    zb_lookup_sql(sql, sizeof sql, b.conf->table);
    struct stmt *st;
    ck_assert_msg(b.drv->prepare(b.db, sql, 1, &st, &err) == 0, "%s", err.msg);
    FILE *t = fopen(truth_file, "r");
    ck_assert_ptr_nonnull(t);
    char line[4096];
    for (int i = 0; fgets(line, sizeof line, t); i++) {
        if (i % 50)
            continue;
        line[strcspn(line, "\n")] = 0;
        char zip[8];
        memcpy(zip, strchr(strchr(line, '\t') + 1, '\t') + 1, 7);
        zip[7] = 0;
        struct match m = { line, 0 };
        const char *params[] = { zip };
        ck_assert_msg(b.drv->run(st, params, match_row, &m, NULL, &err) == 0, "%s", err.msg);
        ck_assert_msg(m.found, "%s: row not found as in the file: %s", name, line);
    }
    fclose(t);
    b.drv->finalize(st);
    backend_close(&b);
    conf_free(&conf);
}

START_TEST(every_backend_every_mode)
{
    make_dataset();
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
            char out[8192], args[2400];
            snprintf(args, sizeof args, "--mode %s --dataset %s %s", modes[mi], csv,
                     mi == 2 ? "--batch 64" : "");
            int rc = loader(out, sizeof out, backends[bi], args);
            ck_assert_msg(rc == 0, "%s %s: exit %d: %s", backends[bi], modes[mi], rc, out);
            char want[64];
            snprintf(want, sizeof want, "\"rows\":%d,", ROWS);
            ck_assert_msg(strstr(out, want), "%s %s: %s", backends[bi], modes[mi], out);
            ck_assert_msg(strstr(out, "\"rows_per_s\":"), "%s", out);
            check_table(backends[bi], ROWS);
        }
    }
}
END_TEST

START_TEST(index_after_and_sync_are_reported)
{
    make_dataset();
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        char out[8192], args[2400];
        snprintf(args, sizeof args, "--mode bulk --no-index --sync off --dataset %s", csv);
        ck_assert_int_eq(loader(out, sizeof out, backends[bi], args), 0);
        ck_assert_msg(strstr(out, "\"index_after\":true"), "%s", out);
        const char *knob = !strcmp(backends[bi], "sqlite") ? "synchronous=OFF"
                         : !strcmp(backends[bi], "pg") ? "synchronous_commit=off"
                         : !strcmp(backends[bi], "innodb") ? "innodb_flush_log_at_trx_commit=0"
                         : "MyISAM";
        ck_assert_msg(strstr(out, knob), "%s: no %s in %s", backends[bi], knob, out);
        check_table(backends[bi], ROWS);
    }
    /* The global InnoDB knob is put back after the load. */
    struct backend b;
    open_backend(&b, "innodb");
    char desc[128];
    struct zb_err err = { 0 };
    b.drv->set_sync(b.db, ZB_SYNC_DEFAULT, desc, sizeof desc, &err);
    ck_assert_str_eq(desc, "innodb_flush_log_at_trx_commit=1");
    backend_close(&b);
    conf_free(&conf);
}
END_TEST

START_TEST(bad_row_fails_and_keeps_the_old_table)
{
    make_dataset();
    char bad[1200];
    snprintf(bad, sizeof bad, "%s.bad", csv);
    /* A good file, then the same with line 700 cut to 3 columns. */
    ck_assert_int_eq(run_cmd(NULL, 0, "awk 'NR==700 {print \"\\\"1\\\",\\\"2\\\",\\\"3\\\"\"; next} {print}' %s > %s",
                             csv, bad), 0);
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        char out[8192], args[2400];
        snprintf(args, sizeof args, "--mode bulk --dataset %s", csv);
        ck_assert_int_eq(loader(out, sizeof out, backends[bi], args), 0);
        snprintf(args, sizeof args, "--mode %s --dataset %s", bi % 2 ? "bulk" : "prepared", bad);
        int rc = loader(out, sizeof out, backends[bi], args);
        ck_assert_msg(rc == 1, "%s: exit %d: %s", backends[bi], rc, out);
        char where[1300];
        snprintf(where, sizeof where, "%s:700: 3 columns, expected 15", bad);
        ck_assert_msg(strstr(out, where), "%s: no '%s' in: %s", backends[bi], where, out);
        check_table(backends[bi], ROWS);  /* the old table, untouched */
        struct backend b;
        open_backend(&b, backends[bi]);
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s" ZB_STAGING_SUFFIX, b.conf->table);
        struct zb_err err = { 0 };
        ck_assert_msg(b.drv->query(b.db, sql, 0, NULL, NULL, NULL, NULL, &err) < 0,
                      "%s: a half-loaded %s" ZB_STAGING_SUFFIX " was left behind", backends[bi],
                      b.conf->table);
        backend_close(&b);
        conf_free(&conf);
    }
}
END_TEST

/* A loader killed half way leaves the old table as it was. */
START_TEST(killed_load_leaves_the_old_table)
{
    make_dataset();
    char big[1200];
    snprintf(big, sizeof big, "%s.big", csv);
    ck_assert_int_eq(run_cmd(NULL, 0, "%s --rows 400000 --seed 5 -o %s", prog("gen"), big), 0);
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        char out[8192], args[2400];
        snprintf(args, sizeof args, "--mode bulk --dataset %s", csv);
        ck_assert_int_eq(loader(out, sizeof out, backends[bi], args), 0);
        snprintf(args, sizeof args, "--mode transaction --dataset %s & sleep 0.5; kill -9 $!; wait",
                 big);
        loader(out, sizeof out, backends[bi], args);
        check_table(backends[bi], ROWS);
    }
}
END_TEST

/* Nothing replaces a table with less than it had by accident: an empty
 * file, a file that ends in a broken line, or a smaller file. */
START_TEST(empty_or_smaller_file_keeps_the_old_table)
{
    make_dataset();
    char empty[1200], cut[1200], small[1200];
    snprintf(empty, sizeof empty, "%s.empty", csv);
    snprintf(cut, sizeof cut, "%s.cut", csv);
    snprintf(small, sizeof small, "%s.small", csv);
    write_file(empty, "");
    ck_assert_int_eq(run_cmd(NULL, 0, "{ head -n 1 %s; sed -n 2p %s | head -c 20; } > %s", csv, csv,
                             cut), 0);
    ck_assert_int_eq(run_cmd(NULL, 0, "%s --rows 100 --seed 11 -o %s", prog("gen"), small), 0);
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        const char *be = backends[bi];
        char out[8192], args[2400], want[1400];
        snprintf(args, sizeof args, "--mode bulk --dataset %s", csv);
        ck_assert_int_eq(loader(out, sizeof out, be, args), 0);
        for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
            snprintf(args, sizeof args, "--mode %s --dataset %s", modes[mi], empty);
            int rc = loader(out, sizeof out, be, args);
            ck_assert_msg(rc == 1, "%s %s: empty file: exit %d: %s", be, modes[mi], rc, out);
            snprintf(want, sizeof want, "%s: no rows to load", empty);
            ck_assert_msg(strstr(out, want), "%s: no '%s' in: %s", be, want, out);
        }
        check_table(be, ROWS);
        snprintf(args, sizeof args, "--mode bulk --dataset %s", cut);
        ck_assert_int_eq(loader(out, sizeof out, be, args), 1);
        snprintf(want, sizeof want, "%s:2:3: truncated last line", cut);
        ck_assert_msg(strstr(out, want), "%s: no '%s' in: %s", be, want, out);
        check_table(be, ROWS);
        snprintf(args, sizeof args, "--mode bulk --dataset %s", small);
        ck_assert_int_eq(loader(out, sizeof out, be, args), 1);
        snprintf(want, sizeof want, "%s has 100 rows, fewer than the %d", small, ROWS);
        ck_assert_msg(strstr(out, want), "%s: no '%s' in: %s", be, want, out);
        check_table(be, ROWS);
        /* Asked for, a smaller table replaces it, and the report says what it replaced. */
        snprintf(args, sizeof args, "--mode bulk --allow-shrink --dataset %s", small);
        ck_assert_int_eq(loader(out, sizeof out, be, args), 0);
        snprintf(want, sizeof want, "\"rows\":100,");
        ck_assert_msg(strstr(out, want), "%s: %s", be, out);
        snprintf(want, sizeof want, "\"replaced_rows\":%d,", ROWS);
        ck_assert_msg(strstr(out, want), "%s: %s", be, out);
        snprintf(args, sizeof args, "--mode bulk --dataset %s", csv);
        ck_assert_int_eq(loader(out, sizeof out, be, args), 0);
        snprintf(args, sizeof args, "--mode bulk --limit 10 --dataset %s", csv);
        ck_assert_int_eq(loader(out, sizeof out, be, args), 0);
        snprintf(args, sizeof args, "--mode bulk --dataset %s", csv);
        ck_assert_int_eq(loader(out, sizeof out, be, args), 0);
        check_table(be, ROWS);
    }
}
END_TEST

START_TEST(raw_mode_loads_every_line)
{
    make_dataset();
    char out[8192], args[2400], lines[64];
    ck_assert_int_eq(run_cmd(lines, sizeof lines, "wc -l < %s", csv), 0);
    /* A table of its own: the other tests' tables hold the merged rows. */
    snprintf(args, sizeof args, "--mode bulk --raw --set pg.table=zt_loader_raw --dataset %s", csv);
    ck_assert_int_eq(loader(out, sizeof out, "pg", args), 0);
    char want[64];
    snprintf(want, sizeof want, "\"rows\":%ld,", atol(lines));
    ck_assert_msg(strstr(out, want), "want %s in %s", want, out);
    ck_assert_int_gt(atol(lines), ROWS);
}
END_TEST

/* Where MariaDB refuses LOAD DATA LOCAL, bulk mode falls back to batched
 * prepared INSERTs and still loads every row. */
START_TEST(mariadb_bulk_without_local_infile)
{
    make_dataset();
    struct backend b;
    open_backend(&b, "innodb");
    char out[8192], args[2400];
    /* A global setting: through scripts/db's administrator (zipbench has no SUPER). */
    ck_assert_msg(run_cmd(out, sizeof out, "scripts/db admin mariadb -e 'SET GLOBAL local_infile = 0'") == 0,
                  "%s", out);
    snprintf(args, sizeof args, "--mode bulk --dataset %s", csv);
    int rc = loader(out, sizeof out, "innodb", args);
    run_cmd(NULL, 0, "scripts/db admin mariadb -e 'SET GLOBAL local_infile = 1'");
    backend_close(&b);
    conf_free(&conf);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    check_table("innodb", ROWS);
}
END_TEST

/* The loader's statements run as long as they take (conf_unbounded_queries):
 * on MariaDB no read may time out, as a LOAD DATA of 10^7 rows into MyISAM
 * sends nothing for minutes while it builds the indexes. A statement silent
 * for 31 s stands for it (the driver's reads gave up after 30 s). */
START_TEST(mariadb_waits_as_long_as_a_load_takes)
{
    struct zb_conf c;
    struct zb_err err = { 0 };
    ck_assert_int_eq(conf_load(&c, conf_path(), &err), 0);
    conf_unbounded_queries(&c);
    struct backend b;
    ck_assert_msg(backend_open(&b, conf_backend(&c, "myisam"), &err) == 0, "%s", err.msg);
    uint64_t t0 = zb_now_ns();
    int rc = b.drv->exec(b.db, "DO SLEEP(31)", &err);
    double secs = (double)(zb_now_ns() - t0) / 1e9;
    backend_close(&b);
    conf_free(&c);
    ck_assert_msg(rc == 0 && secs >= 31, "after %.1f s: %s", secs, err.msg);
}
END_TEST

static int first_value(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)n;
    (void)l;
    snprintf(arg, 256, "%s", v[0] ? v[0] : "NULL");
    return 0;
}

/* A value too long for MariaDB's TEXT (65,535 bytes) is never cut to fit:
 * every mode fails naming the file and line, and keeps the old table;
 * PostgreSQL and SQLite store it whole. */
START_TEST(mariadb_never_truncates)
{
    make_dataset();
    char longcsv[1200];
    snprintf(longcsv, sizeof longcsv, "%s.long", csv);
    FILE *f = fopen(longcsv, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 1; i <= 20; i++) {
        fprintf(f, "13101,\"100  \",\"%07d\",\"ﾄｳｷｮｳﾄ\",\"ﾁﾖﾀﾞｸ\",\"\",\"東京都\",\"千代田区\",\"", 1000000 + i);
        for (int k = 0; i == 11 && k < 70000; k++)
            fputc('x', f);
        fprintf(f, "%s\",0,0,0,0,0,0\r\n", i == 11 ? "" : "本町");
    }
    fclose(f);
    const char *my[] = { "innodb", "myisam" };
    for (int bi = 0; bi < 2; bi++) {
        char out[8192], args[2400], want[1400];
        snprintf(args, sizeof args, "--mode bulk --dataset %s", csv);
        ck_assert_int_eq(loader(out, sizeof out, my[bi], args), 0);
        for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
            snprintf(args, sizeof args, "--mode %s --batch 8 --allow-shrink --dataset %s", modes[mi],
                     longcsv);
            int rc = loader(out, sizeof out, my[bi], args);
            ck_assert_msg(rc == 1, "%s %s: exit %d: %s", my[bi], modes[mi], rc, out);
            snprintf(want, sizeof want, "%s:11: mysql: ", longcsv);
            ck_assert_msg(strstr(out, want) && strstr(out, "for column 'town'"),
                          "%s %s: no '%s...town' in: %s", my[bi], modes[mi], want, out);
        }
        check_table(my[bi], ROWS);
    }
    /* Every MariaDB session is strict, whatever the server's default. */
    struct backend b;
    open_backend(&b, "myisam");
    char mode[256] = "";
    struct zb_err err = { 0 };
    ck_assert_msg(b.drv->query(b.db, "SELECT @@SESSION.sql_mode", 0, NULL, first_value, mode, NULL,
                               &err) == 0, "%s", err.msg);
    ck_assert_msg(strstr(mode, "STRICT_ALL_TABLES"), "sql_mode is %s", mode);
    backend_close(&b);
    conf_free(&conf);
    const char *whole[] = { "pg", "sqlite" };
    for (int bi = 0; bi < 2; bi++) {
        char out[8192], args[2400];
        snprintf(args, sizeof args, "--mode bulk --set %s.table=zt_loader_long --dataset %s",
                 whole[bi], longcsv);
        int rc = loader(out, sizeof out, whole[bi], args);
        ck_assert_msg(rc == 0, "%s: exit %d: %s", whole[bi], rc, out);
        open_backend(&b, whole[bi]);
        char len[256] = "";
        ck_assert_msg(b.drv->query(b.db, "SELECT max(length(town)) FROM zt_loader_long", 0, NULL,
                                   first_value, len, NULL, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(len, "70000");
        backend_close(&b);
        conf_free(&conf);
    }
}
END_TEST

/* ---- datasets other than the postal list ---- */

#define CSV_ROWS 400

/* Row i's value of column c of the generated CSV (NULL: SQL NULL): quotes,
 * commas and line ends in text, NULLs, long text, codes with leading
 * zeros (text, not integers), reals with exponents. */
static const char *csv_value(int i, int c, char *buf, size_t len)
{
    static const char *const names[] = { "plain %d", "Smith, J. %d", "say \"hi\" %d",
                                         "line one\nline two %d", "東京 %d", "" };
    switch (c) {
    case 0: snprintf(buf, len, "%d", i * 7); return buf;
    case 1: snprintf(buf, len, names[i % 6], i); return buf;
    case 2:
        if (i % 5 == 0)
            return NULL;
        snprintf(buf, len, i % 2 ? "%d.5" : "-%d.25e3", i);
        return buf;
    case 3:
        if (i % 3 == 0)
            return NULL;
        if (i % 50 == 1) {
            for (size_t k = 0; k < 5000 && k + 1 < len; k++)
                buf[k] = (char)('a' + (k + (size_t)i) % 26);
            buf[5000 < len - 1 ? 5000 : len - 1] = 0;
            return buf;
        }
        snprintf(buf, len, "note %d", i);
        return buf;
    case 4:
        if (i % 4 == 0)
            return NULL;
        snprintf(buf, len, "%d", i * 1000003 - 5000000);
        return buf;
    case 5: snprintf(buf, len, "%03d", i % 1000); return buf;
    default: snprintf(buf, len, "2020-01-%02d", 1 + i % 28); return buf;
    }
}

#define CSV_COLS 7
static const char *const csv_header = "id,name,score,note,count,code,born";

/* Writes the generated CSV (CRLF, RFC 4180 quoting; NULL as an empty
 * unquoted field, "" as an empty quoted one); bad_line > 1 replaces that
 * line's record by `bad`. */
static void write_csv(const char *path, int bad_line, const char *bad)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\r\n", csv_header);
    int line = 2;
    for (int i = 1; i <= CSV_ROWS; i++) {
        char buf[6000];
        if (line == bad_line) {
            fprintf(f, "%s\r\n", bad);
            line++;
            continue;
        }
        for (int c = 0; c < CSV_COLS; c++) {
            const char *v = csv_value(i, c, buf, sizeof buf);
            if (c)
                fputc(',', f);
            if (!v)
                continue;
            if (c == 1 || (c == 3 && !strchr(v, 'n'))) {
                fputc('"', f);
                for (const char *p = v; *p; p++) {
                    if (*p == '"')
                        fputc('"', f);
                    if (*p == '\n')
                        line++;
                    fputc(*p, f);
                }
                fputc('"', f);
            } else {
                fputs(v, f);
            }
        }
        fputs("\r\n", f);
        line++;
    }
    fclose(f);
}

static char data_conf[1100], data_csv[1100];

/* A config: the test config with [dataset zt_csv] on the generated CSV. */
static void make_csv_dataset(void)
{
    make_dataset();
    const char *dir = test_dir("loader");
    snprintf(data_csv, sizeof data_csv, "%s/data.csv", dir);
    snprintf(data_conf, sizeof data_conf, "%s/data.conf", dir);
    write_csv(data_csv, 0, NULL);
    ck_assert_int_eq(run_cmd(NULL, 0, "cp %s %s && printf '\\n[dataset zt_csv]\\nfile = %s\\n"
                             "key = id\\n' >> %s", conf_path(), data_conf, data_csv, data_conf), 0);
}

static int load_data(char *out, size_t len, const char *backend, const char *args)
{
    return run_cmd(out, len, "%s -q --json --conf %s --backend %s --set sqlite.path=%s %s",
                   prog("loader"), data_conf, backend, sqlite_path, args);
}

struct fetched { int n; char v[CSV_COLS][6000]; bool null[CSV_COLS]; };

static int fetch_row(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)l;
    struct fetched *f = arg;
    for (int c = 0; c < n && c < CSV_COLS; c++) {
        f->null[c] = !v[c];
        snprintf(f->v[c], sizeof f->v[c], "%s", v[c] ? v[c] : "");
    }
    f->n++;
    return 0;
}

/* Every 7th row of the generated CSV is in `table`, value for value
 * (reals compared as numbers). */
static void check_csv_table(const char *backend, const char *table)
{
    struct backend b;
    open_backend(&b, backend);
    struct zb_err err = { 0 };
    static const struct zb_column cols[CSV_COLS] = {
        { "id", ZB_INTEGER, true, NULL }, { "name", ZB_TEXT, false, NULL },
        { "score", ZB_REAL, false, NULL }, { "note", ZB_TEXT, false, NULL },
        { "count", ZB_INTEGER, false, NULL }, { "code", ZB_TEXT, false, NULL },
        { "born", ZB_TEXT, false, NULL },
    };
    struct zb_table t = { .name = table, .ncols = CSV_COLS, .cols = cols, .key = 0 };
    char sql[1024];
    long long n = -1;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    ck_assert_msg(b.drv->query(b.db, sql, 0, NULL, count_rows, &n, NULL, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(n, CSV_ROWS);
    zb_select_sql(sql, sizeof sql, &t);
    struct stmt *st;
    ck_assert_msg(b.drv->prepare(b.db, sql, 1, &st, &err) == 0, "%s", err.msg);
    static struct fetched got;
    for (int i = 1; i <= CSV_ROWS; i += 7) {
        char key[32], want[6000];
        snprintf(key, sizeof key, "%d", i * 7);
        const char *params[] = { key };
        got.n = 0;
        ck_assert_msg(b.drv->run(st, params, fetch_row, &got, NULL, &err) == 0, "%s", err.msg);
        ck_assert_msg(got.n == 1, "%s: key %s: %d rows", backend, key, got.n);
        for (int c = 0; c < CSV_COLS; c++) {
            const char *v = csv_value(i, c, want, sizeof want);
            ck_assert_msg(got.null[c] == !v, "%s: key %s column %s: NULL %d, want %d", backend,
                          key, cols[c].name, got.null[c], !v);
            if (!v)
                continue;
            if (c == 2)
                ck_assert_msg(strtod(got.v[c], NULL) == strtod(v, NULL), "%s: %s vs %s", backend,
                              got.v[c], v);
            else
                ck_assert_msg(!strcmp(got.v[c], v), "%s: key %s column %s: '%.80s', want '%.80s'",
                              backend, key, cols[c].name, got.v[c], v);
        }
    }
    b.drv->finalize(st);
    backend_close(&b);
    conf_free(&conf);
}

/* A CSV with a header, its types inferred, into every backend in every
 * mode: every value back as it was, NULLs as NULLs. */
START_TEST(csv_dataset_every_backend_every_mode)
{
    make_csv_dataset();
    char out[16384], args[2400];
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
            snprintf(args, sizeof args, "--mode %s --batch 16 --dataset zt_csv", modes[mi]);
            int rc = load_data(out, sizeof out, backends[bi], args);
            ck_assert_msg(rc == 0, "%s %s: exit %d: %s", backends[bi], modes[mi], rc, out);
            ck_assert_msg(strstr(out, "\"rows\":400,") && strstr(out, "\"dataset\":\"zt_csv\""),
                          "%s", out);
            ck_assert_msg(strstr(out, "\"columns\":\"id integer not null, name text, score real, "
                                      "note text, count integer, code text, born text\""), "%s", out);
            char table[64];
            snprintf(table, sizeof table, "zt_csv_%s", backends[bi]);
            check_csv_table(backends[bi], table);
        }
    }
    /* Without -q the inference is shown. */
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --conf %s -b sqlite --set sqlite.path=%s "
                             "--dataset zt_csv", prog("loader"), data_conf, sqlite_path), 0);
    ck_assert_msg(strstr(out, "types inferred from the first 400 rows of") &&
                  strstr(out, "code text (inferred)"), "%s", out);
}
END_TEST

/* Rows for mariadb_text_is_sized's narrow table: "abc", then "abcd". */
struct narrow { int i; const char *v[1]; };

static int narrow_rows(void *arg, const char *const **fields, struct zb_err *err)
{
    (void)err;
    struct narrow *n = arg;
    static const char *const rows[] = { "abc", "abcd", "ab" };
    if (n->i == 3)
        return 0;
    n->v[0] = rows[n->i++];
    *fields = n->v;
    return 1;
}

static size_t chars_of(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* MariaDB's text columns are VARCHAR(n), n the most characters a value of
 * the column has in the file (multi-byte ones counted as one); a column
 * with a value past ZB_VARCHAR_MAX stays TEXT; the key's index is then
 * the whole value, not a prefix. Every value comes back whole
 * (check_csv_table). A value longer than its column fails the load with
 * the row it is on, never cut: through LOAD DATA and through INSERTs. */
START_TEST(mariadb_text_is_sized_from_the_data)
{
    make_csv_dataset();
    size_t name = 0, code = 0, born = 0;
    for (int i = 1; i <= CSV_ROWS; i++) {
        char buf[6000];
        const char *v;
        if ((v = csv_value(i, 1, buf, sizeof buf)) && chars_of(v) > name)
            name = chars_of(v);
        if ((v = csv_value(i, 5, buf, sizeof buf)) && chars_of(v) > code)
            code = chars_of(v);
        if ((v = csv_value(i, 6, buf, sizeof buf)) && chars_of(v) > born)
            born = chars_of(v);
    }
    char want[256];
    snprintf(want, sizeof want, "id bigint, name varchar(%zu), score double, note text, "
             "count bigint, code varchar(%zu), born varchar(%zu), ", name, code, born);
    const char *my[] = { "innodb", "myisam" };
    for (int bi = 0; bi < 2; bi++) {
        char out[16384], table[64];
        int rc = load_data(out, sizeof out, my[bi], "--mode bulk --dataset zt_csv");
        ck_assert_msg(rc == 0, "%s: exit %d: %s", my[bi], rc, out);
        snprintf(table, sizeof table, "zt_csv_%s", my[bi]);
        check_csv_table(my[bi], table);
        struct backend b;
        open_backend(&b, my[bi]);
        struct zb_err err = { 0 };
        const char *params[] = { table };
        char types[256] = "";
        ck_assert_msg(b.drv->query(b.db, "SELECT GROUP_CONCAT(CONCAT(column_name, ' ', "
                                   "IF(data_type = 'varchar', column_type, data_type), ', ') ORDER BY ordinal_position SEPARATOR '') "
                                   "FROM information_schema.COLUMNS WHERE table_schema = "
                                   "DATABASE() AND table_name = ?", 1, params, first_value,
                                   types, NULL, &err) == 0, "%s", err.msg);
        ck_assert_msg(!strcmp(types, want), "%s: columns '%s', want '%s'", my[bi], types, want);
        char sub[256] = "";
        ck_assert_msg(b.drv->query(b.db, "SELECT COALESCE(MAX(sub_part), 0) FROM "
                                   "information_schema.STATISTICS WHERE table_schema = DATABASE() "
                                   "AND table_name = ?", 1, params, first_value, sub, NULL,
                                   &err) == 0, "%s", err.msg);
        ck_assert_msg(!strcmp(sub, "0"), "%s: a prefix index of %s characters", my[bi], sub);

        /* A value one character too long, at row 2, in both load paths. */
        for (int path = 0; path < 2; path++) {
            static const struct zb_column narrow_col[] = { { "k", ZB_TEXT, true, "VARCHAR(3)" } };
            struct zb_table nt = { .name = "zt_loader_narrow", .ncols = 1, .cols = narrow_col };
            char sql[256];
            ck_assert_int_eq(b.drv->exec(b.db, "DROP TABLE IF EXISTS zt_loader_narrow", &err), 0);
            ck_assert_int_eq(zb_create_sql(sql, sizeof sql, &nt, b.drv->create_suffix(b.db)), 0);
            ck_assert_msg(b.drv->exec(b.db, sql, &err) == 0, "%s", err.msg);
            struct narrow n = { 0 };
            memset(&err, 0, sizeof err);
            long long got = path == 0 ? b.drv->bulk_load(b.db, &nt, narrow_rows, &n, &err)
                                      : zb_insert_batches(b.drv, b.db, &nt, 1, narrow_rows, &n,
                                                          &err);
            ck_assert_msg(got == -1, "%s path %d: %lld rows loaded", my[bi], path, got);
            ck_assert_msg(err.row == 2 && strstr(err.msg, "'k'"), "%s path %d: row %lld: %s",
                          my[bi], path, err.row, err.msg);
            long long rows = -1;
            ck_assert_msg(b.drv->query(b.db, "SELECT count(*) FROM zt_loader_narrow WHERE "
                                       "CHAR_LENGTH(k) = 3 AND k <> 'abc'", 0, NULL, count_rows,
                                       &rows, NULL, &err) == 0, "%s", err.msg);
            ck_assert_msg(rows == 0, "%s path %d: a value was cut", my[bi], path);
        }
        b.drv->exec(b.db, "DROP TABLE IF EXISTS zt_loader_narrow", NULL);
        backend_close(&b);
        conf_free(&conf);
    }
}
END_TEST

/* A bad value fails the load naming file:line:column, on every backend,
 * and the old table stays. */
START_TEST(csv_dataset_bad_rows_keep_the_old_table)
{
    make_csv_dataset();
    char bad[1200], out[16384], args[2400], want[1400];
    snprintf(bad, sizeof bad, "%s.bad", data_csv);
    const struct { const char *row, *error; } cases[] = {
        { "2807,x,1.5,,12x,007,2020", ":301:5: count: '12x' is not an integer" },
        { ",nobody,1,,1,001,2020", ":301:1: id: no value (NULL) in a column that must have one" },
        { "2807,x,NaN,,1,001,2020", ":301:3: score: 'NaN' is not a real number" },
        { "2807,x,1.5", ":301: 3 columns, expected 7" },
        { "2807,\"x\"y,1.5,,1,001,2020", ":301:2: text after the closing quote" },
    };
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        snprintf(args, sizeof args, "--mode bulk --dataset zt_csv");
        ck_assert_int_eq(load_data(out, sizeof out, backends[bi], args), 0);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            write_csv(bad, 301, cases[k].row);
            snprintf(args, sizeof args, "--mode %s --dataset zt_csv --set dataset.zt_csv.file=%s "
                     "--set dataset.zt_csv.columns='id integer, name, score real, note, count "
                     "integer, code, born'", k % 2 ? "bulk" : "prepared", bad);
            int rc = load_data(out, sizeof out, backends[bi], args);
            ck_assert_msg(rc == 1, "%s: exit %d: %s", backends[bi], rc, out);
            snprintf(want, sizeof want, "%s%s", bad, cases[k].error);
            ck_assert_msg(strstr(out, want), "%s: no '%s' in: %s", backends[bi], want, out);
        }
        /* One run names every bad row: the first fails, the others follow. */
        write_csv(bad, 301, cases[0].row);
        ck_assert_int_eq(run_cmd(NULL, 0, "printf '2814,x,1,,zz,001,2020\\r\\n' >> %s", bad), 0);
        snprintf(args, sizeof args, "--mode bulk --dataset zt_csv --set dataset.zt_csv.file=%s "
                 "--set dataset.zt_csv.columns='id integer, name text, score real, note text, "
                 "count integer, code text, born text'", bad);
        ck_assert_int_eq(load_data(out, sizeof out, backends[bi], args), 1);
        snprintf(want, sizeof want, ": also %s:469:5: count: 'zz' is not an integer", bad);
        ck_assert_msg(strstr(out, want) && strstr(out, ":301:5: count: '12x'"), "%s: no '%s' in: %s",
                      backends[bi], want, out);
        char table[64];
        snprintf(table, sizeof table, "zt_csv_%s", backends[bi]);
        check_csv_table(backends[bi], table);
    }
}
END_TEST

struct city { int n; char line[8192]; };

static int join_row(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)l;
    struct city *c = arg;
    size_t k = 0;
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(c->line + k, sizeof c->line - k, "%s%s", i ? "\t" : "",
                              v[i] ? v[i] : "");
    c->n++;
    return 0;
}

/* The second real dataset (make dataset): GeoNames' cities into every
 * backend in bulk; rows looked up by key read as in the file (reals aside). */
START_TEST(cities_dataset_every_backend)
{
    make_dataset();
    const char *file = data_path("cities1000.txt");
    /* Under valgrind (make valgrind) a prefix: the whole takes minutes there. */
    const char *wrap = getenv("ZB_WRAP");
    int rows = wrap && *wrap ? 20000 : 138398;
    char out[16384], args[2400];
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        snprintf(args, sizeof args, "--mode bulk --dataset cities --set dataset.cities.file=%s "
                 "--set dataset.cities.table=zt_cities --limit %d", file, rows);
        int rc = loader(out, sizeof out, backends[bi], args);
        ck_assert_msg(rc == 0, "%s: exit %d: %s", backends[bi], rc, out);
        char want[64];
        snprintf(want, sizeof want, "\"rows\":%d,", rows);
        ck_assert_msg(strstr(out, want), "%s: %s", backends[bi], out);
        struct backend b;
        open_backend(&b, backends[bi]);
        FILE *f = fopen(file, "r");
        ck_assert_ptr_nonnull(f);
        static char line[8192];
        for (int i = 0; i < rows && fgets(line, sizeof line, f); i++) {
            if (i % 9973 && i != rows - 1)
                continue;
            line[strcspn(line, "\n")] = 0;
            char sql[256], key[16];
            snprintf(key, sizeof key, "%.*s", (int)strcspn(line, "\t"), line);
            snprintf(sql, sizeof sql, "SELECT * FROM zt_cities_%s WHERE \"id\" = ?", backends[bi]);
            const char *params[] = { key };
            static struct city got;
            got.n = 0;
            struct zb_err err = { 0 };
            ck_assert_msg(b.drv->query(b.db, sql, 1, params, join_row, &got, NULL, &err) == 0, "%s",
                          err.msg);
            ck_assert_int_eq(got.n, 1);
            /* Columns 5 and 6 are reals: compare the text around them. */
            char *a = got.line, *w = line;
            for (int c = 0; c < 19; c++) {
                size_t la = strcspn(a, "\t"), lw = strcspn(w, "\t");
                if (c == 4 || c == 5)
                    ck_assert_msg(strtod(a, NULL) == strtod(w, NULL), "%s %s: %.*s vs %.*s",
                                  backends[bi], key, (int)la, a, (int)lw, w);
                else
                    ck_assert_msg(la == lw && !memcmp(a, w, la), "%s %s column %d: '%.*s' vs '%.*s'",
                                  backends[bi], key, c + 1, (int)la, a, (int)lw, w);
                a += la + (a[la] != 0);
                w += lw + (w[lw] != 0);
            }
        }
        fclose(f);
        backend_close(&b);
        conf_free(&conf);
    }
}
END_TEST

/* ---- loads at once, long names, --sync put back, encodings, messages ---- */

static long long rows_in(const char *backend, const char *table)
{
    struct backend b;
    open_backend(&b, backend);
    struct zb_err err = { 0 };
    char sql[256];
    long long n = -1;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    if (b.drv->query(b.db, sql, 0, NULL, count_rows, &n, NULL, &err) < 0)
        n = -1;
    backend_close(&b);
    conf_free(&conf);
    return n;
}

/* The table the tests load on backend (sqlite keeps the config's). */
static const char *test_table(const char *backend)
{
    static char name[128];
    struct backend b;
    open_backend(&b, backend);
    snprintf(name, sizeof name, "%s", b.conf->table);
    backend_close(&b);
    conf_free(&conf);
    return name;
}

/* The loader's command line with the test's table names (as loader()). */
static void loader_cmd(char *cmd, size_t len, const char *backend, const char *args)
{
    snprintf(cmd, len, "%s -q --json --conf %s --backend %s --set sqlite.path=%s "
             "--set pg.table=zt_loader --set innodb.table=zt_loader_innodb "
             "--set myisam.table=zt_loader_myisam %s", prog("loader"), conf_path(), backend,
             sqlite_path, args);
}

/* Two loaders of one table at once, of files of different sizes: they take
 * turns, so the table holds exactly the rows of the later loader that
 * exited 0, never fewer than before, and no staging table is left. */
START_TEST(concurrent_loads_take_turns)
{
    make_dataset();
    const char *dir = test_dir("loader_concurrent");
    char small[1200], big[1200], order[1200];
    snprintf(small, sizeof small, "%s/small.csv", dir);
    snprintf(big, sizeof big, "%s/big.csv", dir);
    snprintf(order, sizeof order, "%s/order", dir);
    ck_assert_int_eq(run_cmd(NULL, 0, "%s --rows 2000 --seed 21 -o %s", prog("gen"), small), 0);
    ck_assert_int_eq(run_cmd(NULL, 0, "%s --rows 12000 --seed 22 -o %s", prog("gen"), big), 0);
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        const char *be = backends[bi];
        char out[8192], args[2400], a[4096], b[4096];
        snprintf(args, sizeof args, "--mode bulk --dataset %s", csv);
        ck_assert_int_eq(loader(out, sizeof out, be, args), 0);
        for (int round = 0; round < 2; round++) {
            /* The slow one (one INSERT per row) first, the other 0.2 s later. */
            snprintf(args, sizeof args, "--mode transaction --dataset %s", round ? big : small);
            loader_cmd(a, sizeof a, be, args);
            snprintf(args, sizeof args, "--mode bulk --dataset %s", round ? small : big);
            loader_cmd(b, sizeof b, be, args);
            int rc = run_cmd(out, sizeof out, "rm -f %s; { %s > %s.A 2>&1; echo \"A $?\" >> %s; } & "
                             "sleep 0.2; { %s > %s.B 2>&1; echo \"B $?\" >> %s; } & wait",
                             order, a, order, order, b, order, order);
            ck_assert_msg(rc == 0, "%s", out);
            char got[256] = "";
            ck_assert_int_eq(run_cmd(got, sizeof got, "cat %s", order), 0);
            /* The later of the loaders that exited 0. */
            char last = 0;
            for (const char *l = got; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
                if (l[0] && !strncmp(l + 1, " 0", 2))
                    last = l[0];
            char aout[8192], bout[8192];
            run_cmd(aout, sizeof aout, "cat %s.A", order);
            run_cmd(bout, sizeof bout, "cat %s.B", order);
            ck_assert_msg(last, "%s round %d: no loader exited 0: %s / A: %s / B: %s", be, round,
                          got, aout, bout);
            long long want = (last == 'A') == (round == 0) ? 2000 : 12000;
            long long n = rows_in(be, test_table(be));
            ck_assert_msg(n == want, "%s round %d: %lld rows, want %lld (exits %s) A: %s B: %s", be,
                          round, n, want, got, aout, bout);
            /* One that failed says why: the other's table is bigger. */
            for (int k = 0; k < 2; k++) {
                const char *o = k ? bout : aout;
                if (strchr(got, k ? 'B' : 'A') && !strstr(got, k ? "B 0" : "A 0"))
                    ck_assert_msg(strstr(o, "fewer than the"), "%s: %s", be, o);
            }
            char staging[160];
            snprintf(staging, sizeof staging, "%s" ZB_STAGING_SUFFIX, test_table(be));
            ck_assert_int_eq(rows_in(be, staging), -1);
        }
    }
}
END_TEST

/* A second load of a table waits while the lock is held, says so, and
 * goes on when it is released. */
START_TEST(load_waits_for_the_lock)
{
    make_dataset();
    const char *dir = test_dir("loader_wait");
    for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
        const char *be = backends[bi];
        char out[8192], args[2400], cmd[4096], log[1200];
        snprintf(log, sizeof log, "%s/%s.log", dir, be);
        char table[128];
        snprintf(table, sizeof table, "%s", test_table(be));
        struct backend held;
        open_backend(&held, be);
        struct zb_err err = { 0 };
        ck_assert_msg(held.drv->try_load_lock(held.db, table, &err) == 1, "%s", err.msg);
        snprintf(args, sizeof args, "--mode bulk --dataset %s", csv);
        loader_cmd(cmd, sizeof cmd, be, args);
        ck_assert_int_eq(run_cmd(NULL, 0, "{ %s; echo \"exit $?\"; } > %s 2>&1 &", cmd, log), 0);
        ck_assert_int_eq(run_cmd(NULL, 0, "for i in $(seq 100); do grep -q 'waiting for another "
                                 "load of %s' %s && exit 0; sleep 0.1; done; exit 1",
                                 table, log), 0);
        run_cmd(out, sizeof out, "sleep 0.5; cat %s", log);
        ck_assert_msg(!strstr(out, "exit "), "%s: did not wait: %s", be, out);
        backend_close(&held);
        conf_free(&conf);
        ck_assert_int_eq(run_cmd(out, sizeof out, "for i in $(seq 300); do grep -q '^exit' %s && "
                                 "break; sleep 0.1; done; cat %s", log, log), 0);
        ck_assert_msg(strstr(out, "exit 0") && strstr(out, "\"rows\":1500,"), "%s: %s", be, out);
    }
}
END_TEST

/* A table name whose derived names (staging, index) pass the backend's
 * limit is refused before anything changes: the table of that name stays. */
START_TEST(long_table_name_changes_nothing)
{
    make_dataset();
    static const struct { const char *backend; int limit; } cases[] = { { "pg", 63 },
                                                                        { "innodb", 64 } };
    for (size_t i = 0; i < 2; i++) {
        char name[80];
        memset(name, 'x', sizeof name);
        memcpy(name, "zt_", 3);
        name[cases[i].limit] = 0;
        struct backend b;
        open_backend(&b, cases[i].backend);
        struct zb_err err = { 0 };
        char sql[512];
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", name);
        ck_assert_msg(b.drv->exec(b.db, sql, &err) == 0, "%s", err.msg);
        snprintf(sql, sizeof sql, "CREATE TABLE %s (a INTEGER)", name);
        ck_assert_msg(b.drv->exec(b.db, sql, &err) == 0, "%s", err.msg);
        snprintf(sql, sizeof sql, "INSERT INTO %s VALUES (1), (2), (3)", name);
        ck_assert_msg(b.drv->exec(b.db, sql, &err) == 0, "%s", err.msg);
        backend_close(&b);
        conf_free(&conf);
        char out[8192], args[2400];
        snprintf(args, sizeof args, "--mode bulk --set %s.table=%s --dataset %s",
                 cases[i].backend, name, csv);
        int rc = loader(out, sizeof out, cases[i].backend, args);
        ck_assert_msg(rc == 2, "%s: exit %d: %s", cases[i].backend, rc, out);
        ck_assert_msg(strstr(out, "nothing was changed") && strstr(out, "at most"), "%s", out);
        ck_assert_int_eq(rows_in(cases[i].backend, name), 3);
        open_backend(&b, cases[i].backend);
        snprintf(sql, sizeof sql, "DROP TABLE %s", name);
        b.drv->exec(b.db, sql, NULL);
        backend_close(&b);
        conf_free(&conf);
        /* The longest name it allows loads. */
        name[cases[i].limit - 14] = 0;
        snprintf(args, sizeof args, "--mode bulk --set %s.table=%s --dataset %s",
                 cases[i].backend, name, csv);
        rc = loader(out, sizeof out, cases[i].backend, args);
        ck_assert_msg(rc == 0, "%s: exit %d: %s", cases[i].backend, rc, out);
        ck_assert_int_eq(rows_in(cases[i].backend, name), ROWS);
        open_backend(&b, cases[i].backend);
        snprintf(sql, sizeof sql, "DROP TABLE %s", name);
        b.drv->exec(b.db, sql, NULL);
        backend_close(&b);
        conf_free(&conf);
    }
}
END_TEST

static void flush_knob(char *value)
{
    char out[256];
    ck_assert_int_eq(run_cmd(out, sizeof out, "scripts/db admin mariadb -N -e "
                             "'SELECT @@global.innodb_flush_log_at_trx_commit'"), 0);
    snprintf(value, 8, "%.*s", (int)strcspn(out, "\n"), out);
}

/* --sync off on InnoDB changes a global setting: SIGTERM puts it back at
 * once; after SIGKILL the next loader, or scripts/db start, puts it back
 * and says so. */
START_TEST(sync_off_is_put_back)
{
    make_dataset();
    char big[1200], out[8192], args[2400], cmd[4096], v[8];
    snprintf(big, sizeof big, "%s.big", csv);
    ck_assert_int_eq(run_cmd(NULL, 0, "%s --rows 200000 --seed 5 -o %s", prog("gen"), big), 0);
    flush_knob(v);
    ck_assert_str_eq(v, "1");
    snprintf(args, sizeof args, "--mode transaction --sync off --allow-shrink --dataset %s", big);
    loader_cmd(cmd, sizeof cmd, "innodb", args);
    for (int k = 0; k < 3; k++) {
        /* Until the knob is 0 (the load under way), then the signal. */
        int rc = run_cmd(out, sizeof out, "{ %s & p=$!; for i in $(seq 100); do [ \"$(scripts/db "
                         "admin mariadb -N -e 'SELECT @@global.innodb_flush_log_at_trx_commit')\" = 0 ] "
                         "&& break; sleep 0.1; done; kill -%s $p; wait $p; echo \"exit $?\"; }", cmd,
                         k == 0 ? "TERM" : "KILL");
        ck_assert_msg(rc == 0, "%s", out);
        flush_knob(v);
        if (k == 0) {
            ck_assert_msg(strstr(out, "exit 143") && strstr(out, "interrupted by"), "%s", out);
            ck_assert_str_eq(v, "1");
            continue;
        }
        ck_assert_msg(strstr(out, "exit 137"), "%s", out);
        ck_assert_str_eq(v, "0");
        if (k == 1) {
            snprintf(args, sizeof args, "--mode bulk --allow-shrink --dataset %s", csv);
            rc = loader(out, sizeof out, "innodb", args);
            ck_assert_msg(rc == 0, "%s", out);
            ck_assert_msg(strstr(out, "innodb_flush_log_at_trx_commit was 0, left so by a load "
                                      "that did not end") && strstr(out, "put back to 1"), "%s", out);
            ck_assert_msg(strstr(out, "\"sync\":\"innodb_flush_log_at_trx_commit=1\""), "%s", out);
        } else {
            ck_assert_int_eq(run_cmd(out, sizeof out, "scripts/db start mariadb"), 0);
            ck_assert_msg(strstr(out, "put back to 1"), "%s", out);
        }
        flush_knob(v);
        ck_assert_str_eq(v, "1");
    }
}
END_TEST

/* Waits (up to 30 s) until a session of b runs a statement that begins
 * with `sql` and waits for a table's metadata lock, or (gone) until none
 * does. */
static void await_blocked_statement(struct backend *b, const char *sql, bool gone)
{
    char query[512];
    snprintf(query, sizeof query, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE "
             "STATE = 'Waiting for table metadata lock' AND INFO LIKE '%s%%'", sql);
    for (int i = 0; i < 600; i++) {
        long long n = -1;
        struct zb_err err = { 0 };
        ck_assert_msg(b->drv->query(b->db, query, 0, NULL, count_rows, &n, NULL, &err) == 0, "%s",
                      err.msg);
        if ((n > 0) != gone)
            return;
        run_cmd(NULL, 0, "sleep 0.05");
    }
    ck_abort_msg("%s: still %s after 30 s", sql, gone ? "waiting" : "not waiting");
}

/* Starts the loader in the background with its output in log; its pid. */
static long start_loader(const char *cmd, const char *log)
{
    char out[64];
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s > %s 2>&1 & echo $!", cmd, log), 0);
    return atol(out);
}

/* A --sync off load killed while MariaDB still runs its session: a
 * statement of it waits for a lock (here its swap's RENAME, on a table the
 * test reads in an open transaction), and the session, holding the killed
 * load's record, lasts as long (as it would rolling back a big
 * transaction). A load that starts meanwhile, of another table, puts the
 * setting back itself and says so; one that was running when the other
 * was killed puts it back when it ends. The setting is 1 once the other
 * load exits, and stays so when the killed session ends. */
START_TEST(sync_put_back_while_the_killed_session_ends)
{
    make_dataset();
    const char *dir = test_dir("loader_sync_zombie");
    char out[8192], args[2400], cmd[4096], other[4096], v[8], log[1200];
    snprintf(log, sizeof log, "%s/killed.log", dir);
    snprintf(args, sizeof args, "--mode bulk --allow-shrink --dataset %s", csv);
    ck_assert_int_eq(loader(out, sizeof out, "innodb", args), 0);
    loader_cmd(other, sizeof other, "innodb", "--mode bulk --allow-shrink --dataset x "
               "--set innodb.table=zt_loader_other");
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s", other), 2);   /* no dataset x: no table yet */
    snprintf(args, sizeof args, "--mode bulk --allow-shrink --dataset %s "
             "--set innodb.table=zt_loader_other", csv);
    ck_assert_int_eq(loader(out, sizeof out, "innodb", args), 0);
    flush_knob(v);
    ck_assert_str_eq(v, "1");
    for (int k = 0; k < 3; k++) {
        /* k 0, 1: the other load starts after the kill (default sync, then
         * --sync off); k 2: it runs when the kill comes, and ends after. */
        struct backend hold, other_hold, watch;
        struct zb_conf hold_conf, other_conf, watch_conf;
        struct zb_err err = { 0 };
        open_backend_in(&watch_conf, &watch, "innodb");
        open_backend_in(&hold_conf, &hold, "innodb");
        ck_assert_msg(hold.drv->exec(hold.db, "BEGIN", &err) == 0, "%s", err.msg);
        ck_assert_msg(hold.drv->query(hold.db, "SELECT count(*) FROM zt_loader_innodb", 0, NULL,
                                      NULL, NULL, NULL, &err) == 0, "%s", err.msg);
        if (k == 2) {
            open_backend_in(&other_conf, &other_hold, "innodb");
            ck_assert_msg(other_hold.drv->exec(other_hold.db, "BEGIN", &err) == 0, "%s", err.msg);
            ck_assert_msg(other_hold.drv->query(other_hold.db, "SELECT count(*) FROM "
                                                "zt_loader_other", 0, NULL, NULL, NULL, NULL,
                                                &err) == 0, "%s", err.msg);
        }
        snprintf(args, sizeof args, "--mode bulk --sync off --allow-shrink --dataset %s", csv);
        loader_cmd(cmd, sizeof cmd, "innodb", args);
        long killed = start_loader(cmd, log);
        await_blocked_statement(&watch, "RENAME TABLE zt_loader_innodb ", false);
        snprintf(args, sizeof args, "--mode bulk --allow-shrink %s --dataset %s "
                 "--set innodb.table=zt_loader_other", k == 1 ? "--sync off" : "", csv);
        loader_cmd(other, sizeof other, "innodb", args);
        if (k == 2) {
            char other_log[1300];
            snprintf(other_log, sizeof other_log, "%s/other.log", dir);
            long running = start_loader(other, other_log);
            await_blocked_statement(&watch, "RENAME TABLE zt_loader_other ", false);
            ck_assert_int_eq(run_cmd(NULL, 0, "kill -KILL %ld", killed), 0);
            other_hold.drv->exec(other_hold.db, "COMMIT", NULL);
            backend_close(&other_hold);
            conf_free(&other_conf);
            ck_assert_int_eq(run_cmd(out, sizeof out, "while kill -0 %ld 2>/dev/null; do sleep "
                                     "0.05; done; cat %s", running, other_log), 0);
        } else {
            ck_assert_int_eq(run_cmd(NULL, 0, "kill -KILL %ld", killed), 0);
            ck_assert_msg(run_cmd(out, sizeof out, "%s", other) == 0, "%s", out);
        }
        ck_assert_msg(strstr(out, "\"rows\":1500,"), "round %d: %s", k, out);
        ck_assert_msg(strstr(out, "innodb_flush_log_at_trx_commit was 0, left so by a load that "
                                  "did not end") && strstr(out, "put back to 1"), "round %d: %s",
                      k, out);
        if (k == 0)
            ck_assert_msg(strstr(out, "\"sync\":\"innodb_flush_log_at_trx_commit=1\""), "%s", out);
        flush_knob(v);
        ck_assert_msg(!strcmp(v, "1"), "round %d: %s after the other load: %s", k, v, out);
        /* The killed session ends once its RENAME has the lock. */
        hold.drv->exec(hold.db, "COMMIT", NULL);
        backend_close(&hold);
        conf_free(&hold_conf);
        await_blocked_statement(&watch, "RENAME TABLE zt_loader_innodb ", true);
        backend_close(&watch);
        conf_free(&watch_conf);
        run_cmd(NULL, 0, "sleep 0.5");
        flush_knob(v);
        ck_assert_msg(!strcmp(v, "1"), "round %d: %s once the killed session ended", k, v);
    }
}
END_TEST

/* The loader killed (SIGKILL) at random moments, 20 times per database
 * backend, between two files of different sizes (InnoDB every other time
 * with --sync off): after every kill the table holds exactly the rows of
 * one file, sampled field by field; at the end a load runs whole, the
 * flush setting is back to 1, and a fresh server answers 200 for each
 * backend. The moments are drawn from a fixed seed over 1.2 times a
 * whole load's duration, so connect, lock, create, rows, count and swap
 * each get killed. */
START_TEST(killed_at_random_moments_leaves_one_whole_table)
{
    make_dataset();
    char big[1200], big_truth[1200], out[8192], args[2400], cmd[4096], v[8], code[16], why[512];
    snprintf(big, sizeof big, "%s.other", csv);
    snprintf(big_truth, sizeof big_truth, "%s.other.tsv", csv);
    ck_assert_int_eq(run_cmd(NULL, 0, "%s --rows 3000 --seed 12 --truth %s -o %s", prog("gen"),
                             big_truth, big), 0);
    static const char *const servers[] = { "pg", "innodb", "myisam" };
    for (int bi = 0; bi < 3; bi++) {
        const char *be = servers[bi];
        snprintf(args, sizeof args, "--mode bulk --allow-shrink --dataset %s", big);
        double t0 = zb_now_s();
        ck_assert_int_eq(loader(out, sizeof out, be, args), 0);
        int whole_ms = (int)((zb_now_s() - t0) * 1000);
        unsigned seed = 20261204u + (unsigned)bi;
        for (int i = 0; i < 20; i++) {
            bool small = i % 2 == 0;
            int delay_ms = (int)(rand_r(&seed) % (unsigned)(whole_ms * 6 / 5 + 1));
            snprintf(args, sizeof args, "--mode bulk --allow-shrink %s--dataset %s",
                     !strcmp(be, "innodb") && i % 2 ? "--sync off " : "", small ? csv : big);
            loader_cmd(cmd, sizeof cmd, be, args);
            ck_assert_int_eq(run_cmd(out, sizeof out, "{ %s > /dev/null 2>&1 & p=$!; sleep %d.%03d; "
                                     "kill -KILL $p 2>/dev/null; wait $p; true; } 2>&1", cmd,
                                     delay_ms / 1000, delay_ms % 1000), 0);
            long long n = rows_in(be, test_table(be));
            ck_assert_msg(n == ROWS || n == 3000, "%s: killed after %d ms (%d of %d): %lld rows",
                          be, delay_ms, i + 1, 20, n);
            check_table_against(be, n == ROWS ? truth : big_truth, n);
        }
        snprintf(args, sizeof args, "--mode bulk --allow-shrink --dataset %s", csv);
        ck_assert_msg(loader(out, sizeof out, be, args) == 0, "%s: %s", be, out);
        check_table(be, ROWS);
    }
    flush_knob(v);
    ck_assert_str_eq(v, "1");
    /* What the server meets next: every backend answers. */
    ck_assert_msg(first_code(csv, code, sizeof code, why, sizeof why) == 0, "%s", why);
    char log[1200], sets[512];
    snprintf(log, sizeof log, "%s/server.log", test_dir("loader_kill_server"));
    snprintf(sets, sizeof sets, "--backends pg,innodb,myisam --set pg.table=zt_loader "
             "--set innodb.table=zt_loader_innodb --set myisam.table=zt_loader_myisam");
    int port = test_port(18470);
    pid_t pid = spawn_server(conf_path(), port, log, sets);
    bool up = await_server(pid, port);
    for (int bi = 0; bi < 3 && up; bi++) {
        char req[256], resp[16384];
        snprintf(req, sizeof req, "GET /zip/%s/%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                 servers[bi], code);
        http_exchange(port, req, strlen(req), resp, sizeof resp, 5000);
        ck_assert_msg(http_status(resp) == 200, "%s: %.300s", servers[bi], resp);
    }
    term_server(pid);
    ck_assert_msg(up, "the server did not start (%s)", log);
}
END_TEST

/* Auto-detection: a Latin-1 file is refused with its line and a hint;
 * CP932 and UTF-8 KEN_ALL files load, and the report says which and why. */
START_TEST(encoding_is_detected_or_refused)
{
    make_csv_dataset();
    const char *dir = test_dir("loader_enc");
    char latin[1200], sjis[1200], out[8192], args[2400];
    snprintf(latin, sizeof latin, "%s/latin1.csv", dir);
    write_file(latin, "id,name\r\n1,tea\r\n2,caf\xe9s\r\n3,milk\r\n");
    snprintf(args, sizeof args, "--mode bulk --dataset zt_csv --set dataset.zt_csv.file=%s "
             "--set dataset.zt_csv.columns='id integer, name'", latin);
    ck_assert_int_eq(load_data(out, sizeof out, "sqlite", args), 1);
    char want[1300];
    snprintf(want, sizeof want, "%s:3: cannot tell the file's encoding", latin);
    ck_assert_msg(strstr(out, want) && strstr(out, "--encoding"), "%s", out);
    strcat(args, " --encoding latin1");
    ck_assert_int_eq(load_data(out, sizeof out, "sqlite", args), 0);
    ck_assert_msg(strstr(out, "\"encoding\":\"latin1 as asked\""), "%s", out);
    snprintf(sjis, sizeof sjis, "%s/sjis.csv", dir);   /* dir: make_dataset reuses test_dir's buffer */
    make_dataset();   /* the generated KEN_ALL file again (make_csv_dataset's directory) */
    ck_assert_int_eq(run_cmd(NULL, 0, "%s --rows %d --seed 11 --sjis -o %s", prog("gen"), ROWS,
                             sjis), 0);
    snprintf(args, sizeof args, "--mode bulk --dataset %s", sjis);
    ck_assert_int_eq(loader(out, sizeof out, "sqlite", args), 0);
    ck_assert_msg(strstr(out, "\"encoding\":\"Shift_JIS assumed") &&
                  strstr(out, "\"rows\":1500,"), "%s", out);
    check_table("sqlite", ROWS);
    snprintf(args, sizeof args, "--mode bulk --dataset %s", csv);
    ck_assert_int_eq(loader(out, sizeof out, "sqlite", args), 0);
    ck_assert_msg(strstr(out, "\"encoding\":\"UTF-8 detected"), "%s", out);
}
END_TEST

/* A database error shows its cause whole, not kilobytes of "(?,?,...":
 * prepared mode names the lines of the statement that failed, bulk the
 * line the database named. PostgreSQL refuses a value too long for an
 * index (btree rows are at most 2704 bytes): the postal table's old_code,
 * indexed and not a key (the loader refuses a key no lookup can name). */
START_TEST(database_errors_show_the_cause)
{
    make_dataset();
    char file[1200], out[8192], args[2400], want[1400];
    snprintf(file, sizeof file, "%s/old_codes.csv", test_dir("loader_cause"));
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    unsigned seed = 7;
    for (int i = 1; i <= 12; i++) {
        fprintf(f, "01102,\"");
        if (i == 7) {
            for (int k = 0; k < 6000; k++) {
                seed = seed * 1103515245u + 12345u;
                fputc('a' + (int)((seed >> 16) % 26), f);
            }
        } else {
            fprintf(f, "001  ");
        }
        fprintf(f, "\",\"00100%02d\",\"ﾎｯｶｲﾄﾞｳ\",\"ｻｯﾎﾟﾛｼｷﾀｸ\",\"\",\"北海道\",\"札幌市北区\",\"\","
                "0,0,0,0,0,0\r\n", i);
    }
    fclose(f);
    const char *modes2[] = { "prepared", "bulk" };
    for (int m = 0; m < 2; m++) {
        snprintf(args, sizeof args, "--mode %s --batch 4 --raw --dataset %s", modes2[m], file);
        int rc = loader(out, sizeof out, "pg", args);
        ck_assert_msg(rc == 1, "%s: exit %d: %s", modes2[m], rc, out);
        ck_assert_msg(strstr(out, "index row"), "%s: the cause is cut: %s", modes2[m], out);
        ck_assert_msg(!strstr(out, "(?,?,?,?"), "%s: %s", modes2[m], out);
        if (m == 0)
            snprintf(want, sizeof want, "%s:5-8 (rows 5-8, one statement", file);
        else
            snprintf(want, sizeof want, "%s:7: pg: ", file);
        ck_assert_msg(strstr(out, want), "%s: no '%s' in: %s", modes2[m], want, out);
    }
}
END_TEST

/* A file still being written while the loader reads it: its last line,
 * cut where the writer had got to, is never loaded as a value ("21" of
 * "2100280"). The load is refused naming the file, and the old table stays. */
START_TEST(file_written_during_the_load_is_refused)
{
    make_csv_dataset();
    char file[1200], out[16384], args[2400], cmd[4096];
    snprintf(file, sizeof file, "%s/growing.csv", test_dir("loader_grow"));
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 6000; i++)
        fprintf(f, "k%07d,%d\n", i, i * 7);
    fclose(f);
    const char *sets = "--dataset zt_csv --set dataset.zt_csv.header=no --set "
                       "dataset.zt_csv.columns='k text, v text' --set dataset.zt_csv.key=k "
                       "--set dataset.zt_csv.table=zt_grow";
    snprintf(args, sizeof args, "--mode bulk --allow-shrink %s --set dataset.zt_csv.file=%s", sets,
             file);
    ck_assert_msg(load_data(out, sizeof out, "pg", args) == 0, "%s", out);
    /* One INSERT per row, so the reader is still in the file when the
     * writer has written part of its next line: once the loader has the
     * file open. The rest of the line ("00280\n") never comes in time. */
    snprintf(args, sizeof args, "--mode autocommit %s --set dataset.zt_csv.file=%s", sets, file);
    snprintf(cmd, sizeof cmd, "%s -q --json --conf %s --backend pg %s", prog("loader"), data_conf,
             args);
    int rc = run_cmd(out, sizeof out, "%s 2>&1 & p=$!; for i in $(seq 500); do ls -l /proc/$p/fd "
                     "2>/dev/null | grep -q growing.csv && break; sleep 0.01; done; "
                     "printf 'k9999999,21' >> %s; wait $p", cmd, file);
    ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
    char want[1400];
    snprintf(want, sizeof want, "%s:6001: the file changed while it was read", file);
    ck_assert_msg(strstr(out, want), "no '%s' in: %s", want, out);
    ck_assert_int_eq(rows_in("pg", "zt_grow_pg"), 6000);
}
END_TEST

/* A key no lookup can name is refused at load, naming file:line:column
 * and the limit the server answers 414 past (ZB_KEY_MAX), as is an empty
 * one (400): every row loaded can be looked up. The longest key loads. */
START_TEST(keys_the_server_cannot_look_up_are_refused)
{
    make_csv_dataset();
    char file[1200], out[16384], args[4000], want[1400], key[ZB_KEY_MAX + 2];
    snprintf(file, sizeof file, "%s/keys.csv", test_dir("loader_keys"));
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = 0;
    const char *sets = "--dataset zt_csv --set dataset.zt_csv.columns='k text, v text' "
                       "--set dataset.zt_csv.key=k --set dataset.zt_csv.table=zt_keys";
    for (int bad = 0; bad < 3; bad++) {
        FILE *f = fopen(file, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "k,v\nshort,1\n%s,2\n%s,3\n", bad == 2 ? "\"\"" : "middle",
                bad == 1 ? key : key + 1);
        fclose(f);
        snprintf(args, sizeof args, "--mode bulk %s --set dataset.zt_csv.file=%s", sets, file);
        int rc = load_data(out, sizeof out, "sqlite", args);
        if (bad == 0) {
            ck_assert_msg(rc == 0 && strstr(out, "\"rows\":3,"), "exit %d: %s", rc, out);
            continue;
        }
        ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
        if (bad == 1)
            snprintf(want, sizeof want, "%s:4:1: k: the key is %d bytes, more than the %d a "
                     "lookup can name", file, ZB_KEY_MAX + 1, ZB_KEY_MAX);
        else
            snprintf(want, sizeof want, "%s:3:1: k: the key is empty", file);
        ck_assert_msg(strstr(out, want), "no '%s' in: %s", want, out);
        snprintf(args, sizeof args, "%s --set dataset.zt_csv.file=%s --write-keys %s.keys", sets,
                 file, file);
        ck_assert_int_eq(load_data(out, sizeof out, "sqlite", args), 1);
        ck_assert_msg(strstr(out, want), "--write-keys: no '%s' in: %s", want, out);
    }
}
END_TEST

static int add_word(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)l;
    char *words = arg;
    if (n > 0 && v[0] && strlen(words) + strlen(v[0]) + 2 < 65536)
        strcat(strcat(words, v[0]), "\n");
    return 0;
}

/* Whether the database parses the statements that name a table (made
 * from fmt with word) with word as that name: every statement is only
 * prepared, never run, so nothing is created. */
static bool takes_as_table_name(const char *word, const char *const *fmt, int nfmt,
                                bool (*parses)(void *, const char *), void *arg)
{
    for (int i = 0; i < nfmt; i++) {
        char sql[256];
        snprintf(sql, sizeof sql, fmt[i], word);
        if (!parses(arg, sql))
            return false;
    }
    return true;
}

static bool backend_parses(void *arg, const char *sql)
{
    struct backend *b = arg;
    struct stmt *st;
    struct zb_err err = { 0 };
    if (b->drv->prepare(b->db, sql, 0, &st, &err) == 0) {
        b->drv->finalize(st);
        return true;
    }
    /* Only a syntax error says the word is reserved ("no such table" is fine). */
    return !strstr(err.msg, "syntax");
}

static bool sqlite_parses(void *arg, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(arg, sql, -1, &st, NULL);
    sqlite3_finalize(st);
    return rc == SQLITE_OK || !strstr(sqlite3_errmsg(arg), "syntax");
}

/* sql_reserved (lib/sqlwords.c) covers every key word each running
 * database refuses as a table name in the statements zipbench writes (a
 * new version's new words fail here): the config refuses them all. */
START_TEST(reserved_words_match_the_databases)
{
    static const char *const common[] = { "CREATE TABLE %s (a INTEGER)", "SELECT a FROM %s WHERE a = 1",
                                          "CREATE INDEX zt_i ON %s (a)", "INSERT INTO %s VALUES (1)",
                                          "DROP TABLE IF EXISTS %s" };
    static char words[65536];
    static const struct { const char *backend, *keywords; } servers[] = {
        { "pg", "SELECT word FROM pg_get_keywords()" },
        { "innodb", "SELECT LOWER(word) FROM information_schema.KEYWORDS" },
    };
    for (int k = 0; k < 2; k++) {
        struct backend b;
        struct zb_err err = { 0 };
        open_backend(&b, servers[k].backend);
        words[0] = 0;
        ck_assert_msg(b.drv->query(b.db, servers[k].keywords, 0, NULL, add_word, words, NULL, &err)
                      == 0, "%s", err.msg);
        int n = 0;
        for (char *w = strtok(words, "\n"); w; w = strtok(NULL, "\n"), n++) {
            if (strspn(w, "abcdefghijklmnopqrstuvwxyz_0123456789") != strlen(w))
                continue;   /* not an identifier: the config refuses it anyway */
            char analyze[128];
            snprintf(analyze, sizeof analyze, "%s%%s", b.drv->analyze);
            const char *fmt[] = { common[0], common[1], common[2], common[3], common[4], analyze };
            if (!takes_as_table_name(w, fmt, 6, backend_parses, &b))
                ck_assert_msg(sql_reserved(w), "%s refuses '%s' as a table name, sql_reserved "
                              "does not", servers[k].backend, w);
        }
        ck_assert_int_gt(n, 400);
        backend_close(&b);
        conf_free(&conf);
    }
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
    for (int i = 0; i < sqlite3_keyword_count(); i++) {
        const char *z;
        int len;
        char w[64];
        sqlite3_keyword_name(i, &z, &len);
        for (int c = 0; c <= len && c < 63; c++)
            w[c] = c == len ? 0 : (char)(z[c] >= 'A' && z[c] <= 'Z' ? z[c] + 32 : z[c]);
        const char *fmt[] = { common[0], common[1], common[2], common[3], common[4], "ANALYZE %s",
                              "ALTER TABLE %s RENAME TO zt_r" };
        if (!takes_as_table_name(w, fmt, 7, sqlite_parses, db))
            ck_assert_msg(sql_reserved(w), "SQLite refuses '%s' as a table name, sql_reserved "
                          "does not", w);
    }
    sqlite3_close(db);
    ck_assert(!sql_reserved("zipcode") && sql_reserved("SELECT") && sql_reserved("current_date"));
}
END_TEST

/* Backends that share a database, and the tables one load touches there:
 * pg_load and innodb_old, whose tables (zt_t_pg_load, zt_t_innodb_old) are
 * named as the staging and old tables of pg's and innodb's would be with
 * "_load" and "_old"; innodb's postal table is dataset zt_coll's table on
 * innodb. */
static void make_shared_database_conf(char *path, size_t len, const char *csv_file)
{
    snprintf(path, len, "%s/shared.conf", test_dir("loader_shared"));
    char out[4096];
    ck_assert_msg(run_cmd(out, sizeof out, "{ cat %s; printf '%%s\\n' '' '[backend pg_load]' "
                          "'driver = pg' 'named_only = yes' 'socket = build/db/run' "
                          "'port = ${ZB_PG_PORT:-25432}' 'user = zipbench' "
                          "'password_file = build/db/pgpass' 'database = zipbench' '' "
                          "'[backend innodb_old]' 'driver = mysql' 'named_only = yes' "
                          "'engine = InnoDB' 'socket = build/db/run/mysqld.sock' "
                          "'port = ${ZB_MY_PORT:-23306}' 'user = zipbench' "
                          "'password_file = build/db/client.cnf' 'database = zipbench' '' "
                          "'[dataset zt_t]' 'file = %s' 'key = k' '' "
                          "'[dataset zt_coll]' 'file = %s' 'key = k'; } > %s", conf_path(),
                          csv_file, csv_file, path) == 0, "%s", out);
}

/* No load touches another backend's or dataset's table: staging and old
 * tables have names no config can give, and two tables a config would
 * give one name in one database are refused when it is read (lib/names.c),
 * before any DDL, naming both. */
START_TEST(tables_of_backends_sharing_a_database_are_never_touched)
{
    make_dataset();
    char file[1200], shared[1200], out[16384], cmd[4096];
    snprintf(file, sizeof file, "%s/t.csv", test_dir("loader_shared_data"));
    write_file(file, "k,v\na,1\nb,2\nc,3\n");
    make_shared_database_conf(shared, sizeof shared, file);
    const char *base = "-q --json --set sqlite.path=build/test/loader_shared/s.sqlite "
                       "--set pg.table=zt_loader --set innodb.table=zt_loader_innodb "
                       "--set myisam.table=zt_loader_myisam";
    /* The other backends' tables first, then the same dataset into pg and innodb. */
    snprintf(cmd, sizeof cmd, "%s --conf %s %s --dataset zt_t --backend pg_load,innodb_old",
             prog("loader"), shared, base);
    ck_assert_msg(run_cmd(out, sizeof out, "%s", cmd) == 0, "%s", out);
    snprintf(cmd, sizeof cmd, "%s --conf %s %s --dataset zt_t --backend pg,innodb", prog("loader"),
             shared, base);
    ck_assert_msg(run_cmd(out, sizeof out, "%s", cmd) == 0, "%s", out);
    ck_assert_int_eq(rows_in("pg", "zt_t_pg_load"), 3);
    ck_assert_int_eq(rows_in("innodb", "zt_t_innodb_old"), 3);
    ck_assert_int_eq(rows_in("pg", "zt_t_pg"), 3);
    ck_assert_int_eq(rows_in("innodb", "zt_t_innodb"), 3);
    /* innodb's postal table is zt_coll_innodb, dataset zt_coll's on innodb:
     * neither load may run, and the table stays. */
    char args[2400];
    snprintf(args, sizeof args, "--set innodb.table=zt_coll_innodb --allow-shrink --dataset %s", csv);
    ck_assert_msg(loader(out, sizeof out, "innodb", args) == 0, "%s", out);
    const char *what[] = { "zt_coll", "postal" };
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s --conf %s %s --set innodb.table=zt_coll_innodb --dataset %s "
                 "--backend innodb --allow-shrink", prog("loader"), shared, base, what[i]);
        int rc = run_cmd(out, sizeof out, "%s", cmd);
        ck_assert_msg(rc == 2, "%s: exit %d: %s", what[i], rc, out);
        ck_assert_msg(strstr(out, "zt_coll_innodb") && strstr(out, "dataset zt_coll's table on "
                      "backend innodb") && strstr(out, "backend innodb's table"), "%s: %s",
                      what[i], out);
    }
    ck_assert_int_eq(rows_in("innodb", "zt_coll_innodb"), ROWS);
    struct backend b;
    open_backend(&b, "pg");
    b.drv->exec(b.db, "DROP TABLE IF EXISTS zt_t_pg_load, zt_t_pg", NULL);
    backend_close(&b);
    conf_free(&conf);
    open_backend(&b, "innodb");
    b.drv->exec(b.db, "DROP TABLE IF EXISTS zt_t_innodb_old, zt_t_innodb, zt_coll_innodb", NULL);
    backend_close(&b);
    conf_free(&conf);
}
END_TEST

START_TEST(usage_errors_exit_2)
{
    char out[8192];
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --mode fast", prog("loader")), 2);
    ck_assert_ptr_nonnull(strstr(out, "--mode: 'fast'"));
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --backend nosuch", prog("loader")), 2);
    ck_assert_ptr_nonnull(strstr(out, "no backend 'nosuch'"));
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --help", prog("loader")), 0);
    ck_assert_ptr_nonnull(strstr(out, "Exit status"));
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --conf /nonexistent.conf", prog("loader")), 2);
    ck_assert_ptr_nonnull(strstr(out, "/nonexistent.conf: cannot open"));
}
END_TEST

/* A reload starts from the widths of the table it replaces and makes its
 * pass over the rows only when they do not fit exactly (loader/load.c).
 * The class: any sequence of reloads, each column's widest value wider,
 * narrower, the same, past ZB_VARCHAR_MAX or empty, at the first, a middle
 * or the last row, in multi-byte characters or not. After every load the
 * columns are what the rule gives the file alone (VARCHAR(n), n its widest
 * value in characters, 1 at least; TEXT past 255), every value is whole,
 * and the fast path was taken exactly when the types did not change. */
START_TEST(mariadb_reload_widths_are_the_rows_own)
{
    enum { W_ROWS = 40, W_COLS = 3, W_ROUNDS = 20 };
    static const size_t choices[] = { 0, 1, 2, 7, 30, 255, 256, 300 };
    const char *dir = test_dir("loader_widths");
    char csv[1200], cfg[1200], out[16384];
    snprintf(csv, sizeof csv, "%s/w.csv", dir);
    snprintf(cfg, sizeof cfg, "%s/w.conf", dir);
    ck_assert_int_eq(run_cmd(NULL, 0, "cp %s %s && printf '\\n[dataset zt_widths]\\nfile = %s\\n"
                             "key = k\\ncolumns = k text not null, a text, b text, c text\\n' "
                             ">> %s", conf_path(), cfg, csv, cfg), 0);
    unsigned seed = 51;
    const char *my[] = { "innodb", "myisam" };
    for (int bi = 0; bi < 2; bi++) {
        char want_before[256] = "";
        size_t width[W_COLS];
        for (int round = 0; round < W_ROUNDS; round++) {
            size_t at[W_COLS];
            bool multibyte[W_COLS];
            long long chars_sum[W_COLS] = { 0 };
            for (int c = 0; c < W_COLS; c++) {
                if (round % 3 != 1)   /* else the same widths again, the values moved */
                    width[c] = choices[rand_r(&seed) % (sizeof choices / sizeof choices[0])];
                int where = rand_r(&seed) % 3;
                at[c] = where == 0 ? 0 : where == 1 ? W_ROWS / 2 : W_ROWS - 1;
                multibyte[c] = rand_r(&seed) % 2;
            }
            FILE *f = fopen(csv, "w");
            ck_assert_ptr_nonnull(f);
            fputs("k,a,b,c\n", f);
            for (int r = 0; r < W_ROWS; r++) {
                fprintf(f, "k%d", r);
                for (int c = 0; c < W_COLS; c++) {
                    /* The widest at row at[c]; the others shorter (never empty
                     * when the column has a width: empty is NULL). */
                    size_t n = r == (int)at[c] ? width[c]
                             : width[c] ? 1 + (size_t)rand_r(&seed) % width[c] : 0;
                    if (n == width[c] && r != (int)at[c] && n > 1)
                        n--;
                    fputc(',', f);
                    for (size_t i = 0; i < n; i++)
                        fputs(multibyte[c] ? "\xe3\x81\x82" : "x", f);
                    chars_sum[c] += (long long)n;
                }
                fputc('\n', f);
            }
            fclose(f);
            char want[256] = "";
            for (int c = 0; c < W_COLS; c++) {
                size_t n = strlen(want);
                if (width[c] > 255)
                    snprintf(want + n, sizeof want - n, "%ctext", 'a' + c);
                else
                    snprintf(want + n, sizeof want - n, "%cvarchar(%zu)", 'a' + c,
                             width[c] ? width[c] : 1);
                n = strlen(want);
                snprintf(want + n, sizeof want - n, c + 1 < W_COLS ? ", " : "");
            }
            int rc = run_cmd(out, sizeof out, "%s -q --json --conf %s --backend %s --mode bulk "
                             "--dataset zt_widths --allow-shrink", prog("loader"), cfg, my[bi]);
            ck_assert_msg(rc == 0, "%s round %d: exit %d: %s", my[bi], round, rc, out);
            bool same = round > 0 && !strcmp(want, want_before);
            ck_assert_msg(strstr(out, same ? "\"text_widths_from\":\"the replaced table\""
                                           : "\"text_widths_from\":\"a pass over the rows"),
                          "%s round %d (%s after %s): %s", my[bi], round, want, want_before, out);
            snprintf(want_before, sizeof want_before, "%s", want);

            struct backend b;
            open_backend_in(&conf, &b, my[bi]);
            struct zb_err err = { 0 };
            char table[64], types[256] = "", sums[256] = "", expect_sums[256];
            snprintf(table, sizeof table, "zt_widths_%s", my[bi]);
            const char *params[] = { table };
            ck_assert_msg(b.drv->query(b.db, "SELECT GROUP_CONCAT(CONCAT(column_name, "
                                       "IF(data_type = 'varchar', column_type, data_type)) ORDER BY "
                                       "ordinal_position SEPARATOR ', ') FROM information_schema.COLUMNS "
                                       "WHERE table_schema = DATABASE() AND table_name = ? AND "
                                       "column_name <> 'k'", 1, params, first_value, types, NULL,
                                       &err) == 0, "%s", err.msg);
            ck_assert_msg(!strcmp(types, want), "%s round %d: columns '%s', want '%s'", my[bi],
                          round, types, want);
            char sql[256];
            snprintf(sql, sizeof sql, "SELECT CONCAT_WS(' ', COUNT(*), COALESCE(SUM(CHAR_LENGTH(a)), 0), "
                     "COALESCE(SUM(CHAR_LENGTH(b)), 0), COALESCE(SUM(CHAR_LENGTH(c)), 0)) FROM %s", table);
            ck_assert_msg(b.drv->query(b.db, sql, 0, NULL, first_value, sums, NULL, &err) == 0,
                          "%s", err.msg);
            snprintf(expect_sums, sizeof expect_sums, "%d %lld %lld %lld", W_ROWS, chars_sum[0],
                     chars_sum[1], chars_sum[2]);
            ck_assert_msg(!strcmp(sums, expect_sums), "%s round %d: rows and characters %s, want %s",
                          my[bi], round, sums, expect_sums);
            backend_close(&b);
            conf_free(&conf);
        }
    }
}
END_TEST

/* ---- a CSV of one's own: loader --csv and ./zipbench run --csv ---- */

static char own_dir[1100], own_csv[1200], own_conf[1200];

/* A 5,000-row CSV of a user's own (text, real, integer columns) and the
 * tests' config: the tracked one with its SQLite file and its overlay
 * directory (include) in the test's directory, nothing else changed. */
static void make_own_csv(void)
{
    snprintf(own_dir, sizeof own_dir, "%s", test_dir("loader_own_csv"));
    snprintf(own_csv, sizeof own_csv, "%s/products.csv", own_dir);
    snprintf(own_conf, sizeof own_conf, "%s/zipbench.conf", own_dir);
    FILE *f = fopen(own_csv, "w");
    ck_assert_ptr_nonnull(f);
    fputs("sku,name,price,stock,category\n", f);
    for (int i = 0; i < 5000; i++)
        fprintf(f, "P%05d,Product %d,%d.%02d,%d,cat%d\n", i, i, 1 + i % 997, i % 100, i % 501,
                i % 7);
    fclose(f);
    char why[256];
    ck_assert_msg(write_conf_for_csv(own_conf, own_dir, "own.sqlite", why, sizeof why) == 0, "%s", why);
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int n = 0;
    for (int c; (c = fgetc(f)) != EOF;)
        n += c == '\n';
    fclose(f);
    return n;
}

static int occurrences(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/* What a new user does with a CSV of their own, in two commands and no
 * edit of a tracked file: loader --csv loads it (types inferred, its
 * section in an overlay, its keys beside it), and ./zipbench run --csv
 * benchmarks GET /products/sqlite/{key} with every lookup answered. */
START_TEST(a_csv_of_ones_own_in_two_commands)
{
    make_own_csv();
    char out[32768], overlay[1300], keys[1300], tracked_before[64], tracked_after[64];
    ck_assert_int_eq(run_cmd(tracked_before, sizeof tracked_before,
                             "git hash-object conf/zipbench.conf"), 0);
    ck_assert_msg(run_cmd(out, sizeof out, "%s --conf %s --csv %s --key sku --backend sqlite",
                          prog("loader"), own_conf, own_csv) == 0, "loader --csv: %s", out);
    snprintf(overlay, sizeof overlay, "%s/conf.d/products.conf", own_dir);
    snprintf(keys, sizeof keys, "%s/conf.d/products.keys", own_dir);
    ck_assert_msg(strstr(out, "5000 rows; types inferred from every row") &&
                  strstr(out, overlay) && strstr(out, "(5000 distinct keys)"), "%s", out);
    ck_assert_int_eq(count_lines(keys), 5000);
    char text[4096] = "";
    FILE *f = fopen(overlay, "r");
    ck_assert_ptr_nonnull(f);
    text[fread(text, 1, sizeof text - 1, f)] = 0;
    fclose(f);
    ck_assert_msg(strstr(text, "[dataset products]\n") && strstr(text, "key = sku\n") &&
                  strstr(text, "columns = sku text not null, name text, price real, stock "
                         "integer, category text\n"), "%s", text);
    /* The server and a second loader know it by name through the config. */
    ck_assert_msg(run_cmd(out, sizeof out, "%s --conf %s --dataset products --describe",
                          prog("loader"), own_conf) == 0, "%s", out);
    ck_assert_msg(strstr(out, "table    products_sqlite on sqlite"), "%s", out);

    int port = free_port(18483);
    /* --against: a second build's server (here the same build) measured
     * beside this one in the same rounds, on the next port. */
    ck_assert_msg(run_cmd(out, sizeof out, "ZB_RUN_PORT=%d timeout 300 scripts/run --conf %s "
                          "--csv %s --key sku --backends sqlite --concurrency 2 --duration 0.3 "
                          "--runs 1 --against \"${ZB_BUILD:-build}\"", port, own_conf, own_csv) == 0,
                  "scripts/run --csv: %s", out);
    ck_assert_msg(strstr(out, "sqlite: 5,000 rows") && strstr(out, "keys in ") &&
                  strstr(out, "| sqlite  | pooled      | 2   | this ") &&
                  strstr(out, "| sqlite  | per-request | 2   | against ") &&
                  strstr(out, "this / against (commit ") && strstr(out, "too few rounds"),
                  "%s", out);
    /* Every lookup answered: the errors column says 0 on all four rows. */
    ck_assert_msg(occurrences(out, "| 0      |") == 4, "%s", out);
    ck_assert_int_eq(run_cmd(tracked_after, sizeof tracked_after,
                             "git hash-object conf/zipbench.conf"), 0);
    ck_assert_str_eq(tracked_before, tracked_after);
}
END_TEST

/* Naming a dataset the config does not have, or reading a CSV of one's
 * own as the postal list, is said once, with what to do instead. */
START_TEST(dataset_mistakes_are_said_once_with_the_next_step)
{
    make_own_csv();
    char out[16384];
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --conf %s --dataset products --backend all",
                             prog("loader"), own_conf), 2);
    ck_assert_msg(occurrences(out, "loader: no dataset 'products' in ") == 1 &&
                  strstr(out, "(known: postal, cities)") &&
                  strstr(out, "--csv FILE --key COLUMN") && !strstr(out, "cannot open"),
                  "%s", out);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --conf %s --dataset %s --backend all",
                             prog("loader"), own_conf, own_csv), 1);
    char want[3000];
    snprintf(want, sizeof want, "loader: %s looks like a generic CSV (5 columns), not KEN_ALL (15 "
             "columns): use --csv %s --key COLUMN\n", own_csv, own_csv);
    ck_assert_msg(!strcmp(out, want), "expected only '%s', got: %s", want, out);
    /* --csv without --key names the columns to choose from. */
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --conf %s --csv %s", prog("loader"), own_conf,
                             own_csv), 2);
    ck_assert_msg(strstr(out, "needs --key COLUMN, the column lookups go by (one of: sku, name, "
                         "price, stock, category)"), "%s", out);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --conf %s --csv %s --key nope", prog("loader"),
                             own_conf, own_csv), 1);
    char nope[2000];
    snprintf(nope, sizeof nope, "%s:1: key: no column 'nope' in the header, byte for byte (its "
             "columns: 'sku', 'name', 'price', 'stock', 'category')", own_csv);
    ck_assert_msg(strstr(out, nope), "no '%s' in: %s", nope, out);
    /* A name the tracked config has: another --name. */
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --conf %s --csv %s --key sku --name cities",
                             prog("loader"), own_conf, own_csv), 2);
    ck_assert_msg(strstr(out, "already has a dataset cities: give this one another --name"), "%s",
                  out);
    /* A name the server's routes take (the file's, or --name): refused
     * before anything is written; before, a dataset named list or cached
     * was loaded, and the server served it on /list/ and /cached/. */
    static const char *const routes[] = { "list", "cached", "zip", "updates" };
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        ck_assert_int_eq(run_cmd(out, sizeof out, "%s --conf %s --csv %s --key sku --name %s",
                                 prog("loader"), own_conf, own_csv, routes[i]), 2);
        char said[200];
        snprintf(said, sizeof said, "is the server's route /%s/ (server --list-routes): give it "
                 "another with --name NAME", routes[i]);
        ck_assert_msg(strstr(out, said), "--name %s: %s", routes[i], out);
        char overlay[1400];
        snprintf(overlay, sizeof overlay, "%s/conf.d/%s.conf", own_dir, routes[i]);
        ck_assert_msg(access(overlay, F_OK) != 0, "%s was written", overlay);
    }
    /* A config with no include has nowhere to put the overlay. */
    char bare[1300], why[256];
    snprintf(bare, sizeof bare, "%s/bare.conf", own_dir);
    const struct conf_change no_include[] = { { "", "include", NULL }, { NULL, NULL, NULL } };
    ck_assert(write_conf_copy(bare, no_include, NULL, why, sizeof why) == 0);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --conf %s --csv %s --key sku", prog("loader"),
                             bare, own_csv), 2);
    ck_assert_msg(strstr(out, "add the line 'include = build/conf.d/*.conf'"), "%s", out);
}
END_TEST

/* A database that is not running: the client library's message whole
 * (libpq's "Is the server running..." line too), and the next step:
 * the command that starts it and where its port came from. */
START_TEST(refused_connect_says_what_to_do)
{
    const char *dir = test_dir("loader_refused");
    char cfg[1200], tcp[1200], why[256], out[16384], want[600];
    int port = free_port(18496);
    snprintf(cfg, sizeof cfg, "%s/refused.conf", dir);
    snprintf(tcp, sizeof tcp, "%s/refused-tcp.conf", dir);
    ck_assert_msg(write_refusing_conf(cfg, dir, "ZB_TEST_REFUSED_PORT", port, false, why,
                                      sizeof why) == 0, "%s", why);
    ck_assert_msg(write_refusing_conf(tcp, dir, "ZB_TEST_REFUSED_PORT", port, true, why,
                                      sizeof why) == 0, "%s", why);
    ck_assert_int_eq(run_cmd(out, sizeof out, "ZB_TEST_REFUSED_PORT=%d %s -q --conf %s --backend "
                             "pg,innodb --allow-shrink", port, prog("loader"), cfg), 1);
    snprintf(want, sizeof want, "/.s.PGSQL.%d\" failed: No such file or directory. Is the server "
             "running locally and accepting connections on that socket? -- is the database "
             "running? scripts/db start (port from ZB_TEST_REFUSED_PORT=%d)\n", port, port);
    ck_assert_msg(strstr(out, want), "expected '%s' in: %s", want, out);
    snprintf(want, sizeof want, "Can't connect to local server through socket '%s/mysqld.sock' "
             "(2) (2002) -- is the database running? scripts/db start (port from "
             "ZB_TEST_REFUSED_PORT=%d)\n", dir, port);
    ck_assert_msg(strstr(out, want), "expected '%s' in: %s", want, out);
    /* Over TCP, and with the variable not set: the default it fell back to. */
    ck_assert_int_eq(run_cmd(out, sizeof out, "env -u ZB_TEST_REFUSED_PORT %s -q --conf %s "
                             "--backend pg --allow-shrink", prog("loader"), tcp), 1);
    snprintf(want, sizeof want, "port %d failed: Connection refused. Is the server running on that "
             "host and accepting TCP/IP connections? -- is the database running? scripts/db start "
             "(port %d, the default: ZB_TEST_REFUSED_PORT is not set)\n", port, port);
    ck_assert_msg(strstr(out, want), "expected '%s' in: %s", want, out);
}
END_TEST

Suite *suite_loader(void)
{
    TCase *t = test_case("loader", NULL, NULL, 300, TESTS(
        every_backend_every_mode, index_after_and_sync_are_reported,
        bad_row_fails_and_keeps_the_old_table, killed_load_leaves_the_old_table,
        empty_or_smaller_file_keeps_the_old_table, raw_mode_loads_every_line,
        mariadb_bulk_without_local_infile, mariadb_never_truncates, mariadb_waits_as_long_as_a_load_takes,
        csv_dataset_every_backend_every_mode, csv_dataset_bad_rows_keep_the_old_table,
        mariadb_text_is_sized_from_the_data, mariadb_reload_widths_are_the_rows_own,
        cities_dataset_every_backend, usage_errors_exit_2));
    /* What nothing may lose: loads at once, long names, a global setting. */
    TCase *safety = test_case("load_safety", NULL, NULL, 300, TESTS(
        concurrent_loads_take_turns, load_waits_for_the_lock, long_table_name_changes_nothing,
        sync_off_is_put_back, sync_put_back_while_the_killed_session_ends,
        killed_at_random_moments_leaves_one_whole_table,
        encoding_is_detected_or_refused, database_errors_show_the_cause,
        file_written_during_the_load_is_refused, keys_the_server_cannot_look_up_are_refused,
        reserved_words_match_the_databases, tables_of_backends_sharing_a_database_are_never_touched));
    TCase *own = test_case("own_csv", NULL, NULL, 360, TESTS(
        a_csv_of_ones_own_in_two_commands, dataset_mistakes_are_said_once_with_the_next_step,
        refused_connect_says_what_to_do));
    return suite_of("loader", t, safety, own, NULL);
}
