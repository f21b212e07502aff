/* The KEN_ALL reader: encodings, line ends, quoting, split records, and a
 * clear file:line error for every kind of bad input. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "kenall.h"

#define LINE(zip, town_kana, town) \
    "\"13101\",\"100  \",\"" zip "\",\"ﾄｳｷｮｳﾄ\",\"ﾁﾖﾀﾞｸ\",\"" town_kana "\",\"東京都\",\"千代田区\",\"" town "\",0,0,0,0,0,0"

static char path[1024];

static const char *file_with(const char *name, const char *text)
{
    snprintf(path, sizeof path, "%s/%s", test_dir("kenall"), name);
    write_file(path, text);
    return path;
}

/* Reads all rows; returns the count, or -1 with err. */
static long read_all(const char *p, bool raw, struct zb_err *err, char towns[][256], int max)
{
    struct kenall_opts o = { .raw = raw };
    struct kenall_reader *r = kenall_open(p, &o, err);
    if (!r)
        return -1;
    const char *const *f;
    long n = 0;
    int rc;
    while ((rc = kenall_next(r, &f, err)) == 1) {
        if (towns && n < max)
            snprintf(towns[n], 256, "%s|%s|%s", f[KENALL_ZIP], f[KENALL_TOWN_KANA], f[KENALL_TOWN]);
        n++;
    }
    kenall_close(r);
    return rc < 0 ? -1 : n;
}

/* The file NAME holding text reads (merged) as exactly two rows, "zip|kana|town"
 * first and second. */
/* The rows of a file (merged or raw); -1 on error. */
static long kenall_count(const char *p, const struct kenall_opts *opts, struct zb_err *err)
{
    struct kenall_reader *r = kenall_open(p, opts, err);
    if (!r)
        return -1;
    long rows = 0;
    const char *const *fields;
    int rc;
    while ((rc = kenall_next(r, &fields, err)) == 1)
        rows++;
    kenall_close(r);
    return rc < 0 ? -1 : rows;
}

static void reads_as_two(const char *name, const char *text, const char *first, const char *second)
{
    struct zb_err err = { 0 };
    char towns[2][256];
    ck_assert_int_eq(read_all(file_with(name, text), false, &err, towns, 2), 2);
    ck_assert_str_eq(towns[0], first);
    ck_assert_str_eq(towns[1], second);
}

START_TEST(utf8_crlf_and_lf)
{
    reads_as_two("crlf.csv",
                 LINE("1000001", "ﾁﾖﾀﾞ", "千代田") "\r\n" LINE("1000002", "ｺｳｷｮｶﾞｲｴﾝ", "皇居外苑") "\n",
                 "1000001|ﾁﾖﾀﾞ|千代田", "1000002|ｺｳｷｮｶﾞｲｴﾝ|皇居外苑");
}
END_TEST

START_TEST(quoted_commas_and_quotes)
{
    reads_as_two("quotes.csv",
                 LINE("1000003", "ﾋﾄﾂﾊﾞｼ(1,2)", "一ツ橋（1,2丁目）") "\r\n"
                 LINE("1000004", "\"\"A\"\"", "大\"\"手\"\"町") "\r\n",
                 "1000003|ﾋﾄﾂﾊﾞｼ(1,2)|一ツ橋（1,2丁目）", "1000004|\"A\"|大\"手\"町");
}
END_TEST

START_TEST(split_records_merged_and_raw)
{
    struct zb_err err = { 0 };
    char towns[8][256];
    const char *p = file_with("split.csv",
        LINE("0600000", "ｲｶﾆｹｲｻｲｶﾞﾅｲﾊﾞｱｲ", "以下に掲載がない場合") "\r\n"
        LINE("0640941", "ｱｻﾋｶﾞｵｶ(1", "旭ケ丘（１、２丁目、") "\r\n"
        LINE("0640941", "-3ﾁｮｳﾒ)", "３丁目）") "\r\n"
        LINE("0640942", "ｵｵﾄﾞｵﾘ", "大通（西１") "\r\n"
        LINE("0640942", "ｵｵﾄﾞｵﾘ", "〜西５）") "\r\n");
    ck_assert_int_eq(read_all(p, false, &err, towns, 8), 3);
    ck_assert_str_eq(towns[1], "0640941|ｱｻﾋｶﾞｵｶ(1-3ﾁｮｳﾒ)|旭ケ丘（１、２丁目、３丁目）");
    /* Repeated kana on the continuation line is not doubled. */
    ck_assert_str_eq(towns[2], "0640942|ｵｵﾄﾞｵﾘ|大通（西１〜西５）");
    ck_assert_int_eq(read_all(p, true, &err, towns, 8), 5);
    ck_assert_str_eq(towns[2], "0640941|-3ﾁｮｳﾒ)|３丁目）");
}
END_TEST

START_TEST(shift_jis_file)
{
    struct zb_err err = { 0 };
    char towns[2][256];
    const char *utf = file_with("u.csv", LINE("1000001", "ﾁﾖﾀﾞ", "千代田") "\r\n"
                                         LINE("1000005", "ﾏﾙﾉｳﾁ", "丸の内（次のビルを除く）") "\r\n");
    char sjis[1100];
    snprintf(sjis, sizeof sjis, "%s.sjis", utf);
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "iconv -f UTF-8 -t CP932 '%s' > '%s'", utf, sjis);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(read_all(sjis, false, &err, towns, 2), 2);
    ck_assert_str_eq(towns[1], "1000005|ﾏﾙﾉｳﾁ|丸の内（次のビルを除く）");
    struct kenall_reader *r = kenall_open(sjis, NULL, &err);
    ck_assert_int_eq(kenall_encoding(r), KENALL_SJIS);
    kenall_close(r);
}
END_TEST

/* Expects reading text to fail with a message containing want. */
static void expect_error(const char *name, const char *text, const char *want, struct kenall_opts *o)
{
    const char *p = file_with(name, text);
    struct zb_err err = { 0 };
    struct kenall_reader *r = kenall_open(p, o, &err);
    ck_assert_ptr_nonnull(r);
    const char *const *f;
    int rc;
    while ((rc = kenall_next(r, &f, &err)) == 1)
        ;
    kenall_close(r);
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(err.msg, p) != NULL, "no file name in: %s", err.msg);
    ck_assert_msg(strstr(err.msg, want) != NULL, "expected '%s' in: %s", want, err.msg);
}

START_TEST(errors_name_file_and_line)
{
    expect_error("cols.csv", LINE("1000001", "A", "B") "\r\n\"13101\",\"100\",\"1000002\"\r\n",
                 ":2: 3 columns, expected 15", NULL);
    expect_error("trunc.csv", LINE("1000001", "A", "B") "\r\n\"13101\",\"100  \",\"10000",
                 ":2:3: truncated last line (no line end): quote not closed", NULL);
    expect_error("code.csv", LINE("100001", "A", "B") "\r\n", ":1:3: postal code '100001' is not 7 digits", NULL);
    expect_error("flag.csv", "\"13101\",\"100  \",\"1000001\",\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",0,0,x,0,0,0\r\n",
                 ":1:12: flag 'x' is not a digit", NULL);
    expect_error("open.csv", LINE("1000001", "A", "長い町（１") "\r\n", ":1: split record is never closed", NULL);
    expect_error("mixed.csv", LINE("1000001", "A", "長い町（１") "\r\n" LINE("1000002", "B", "２）") "\r\n",
                 ":1: split record is not closed before line 2", NULL);
    expect_error("quote.csv", "\"13101,\"100  \"\r\n", ":1:", NULL);
    /* 0x81 0x20 is not a Shift_JIS character. */
    struct kenall_opts sj = { .encoding = KENALL_SJIS };
    expect_error("badsjis.csv", "\"13101\",\"100  \",\"1000001\",\"\x81\x20\",\"\",\"\",\"\",\"\",\"\",0,0,0,0,0,0\r\n",
                 ":1: invalid Shift_JIS byte 0x81", &sj);
    struct kenall_opts u8 = { .encoding = KENALL_UTF8 };
    expect_error("badutf8.csv", "\"13101\",\"100  \",\"1000001\",\"\xff\",\"\",\"\",\"\",\"\",\"\",0,0,0,0,0,0\r\n",
                 ":1: invalid UTF-8 byte 0xFF", &u8);
}
END_TEST

/* Twelve rows; line `bad` (if any) has `town` as its town. */
static void rows_with(char *text, size_t len, int bad, const char *town)
{
    text[0] = 0;
    for (int i = 1; i <= 12; i++) {
        size_t n = strlen(text);
        snprintf(text + n, len - n, "\"13101\",\"100  \",\"10000%02d\",\"ﾄｳｷｮｳﾄ\",\"ﾁﾖﾀﾞｸ\",\"\",\"東京都\","
                 "\"千代田区\",\"%s\",0,0,0,0,0,0\r\n", i, i == bad ? town : "本町");
    }
}

/* Auto-detection blames the line that is wrong, in the encoding the rest
 * of the file is in, and says why it chose that encoding. */
START_TEST(auto_detection_names_the_bad_line)
{
    char text[8192];
    rows_with(text, sizeof text, 10, "\xEF\xBF\x41");
    expect_error("bad8.csv", text, ":10: invalid UTF-8 byte 0xEF", NULL);
    expect_error("bad8.csv", text, "(UTF-8 detected: the file has ", NULL);
    /* Shift_JIS with a byte that is not Shift_JIS (0x81 0x20) on line 10. */
    rows_with(text, sizeof text, 10, "@@");
    const char *p = file_with("good.csv", text);
    char sjis[1100], cmd[2400];
    snprintf(sjis, sizeof sjis, "%s.sjis", p);
    snprintf(cmd, sizeof cmd, "iconv -f UTF-8 -t CP932 '%s' | sed 's/@@/\\x81 /' > '%s'", p, sjis);
    ck_assert_int_eq(system(cmd), 0);
    struct zb_err err = { 0 };
    ck_assert_int_eq(read_all(sjis, false, &err, NULL, 0), -1);
    ck_assert_msg(strstr(err.msg, ":10: invalid Shift_JIS byte 0x81") &&
                  strstr(err.msg, "(Shift_JIS assumed: byte 0x"), "%s", err.msg);
    /* UTF-8 cut inside a character at the end of the file: the cut, not Shift_JIS. */
    rows_with(text, sizeof text, 0, "");
    text[strlen(text) - 20] = 0;  /* inside 町 */
    expect_error("cut8.csv", text, ":12: truncated last line (no line end): invalid UTF-8", NULL);
}
END_TEST

START_TEST(complete_last_line_without_newline)
{
    struct zb_err err = { 0 };
    const char *p = file_with("nonl.csv", LINE("1000001", "A", "B") "\r\n" LINE("1000002", "C", "D"));
    ck_assert_int_eq(read_all(p, false, &err, NULL, 0), 2);
}
END_TEST

/* The generator's file, read back, is exactly its truth file; the same in
 * Shift_JIS. */
static void check_generated(bool sjis)
{
    const char *dir = test_dir(sjis ? "gen-sjis" : "gen");
    char csv[1100], truth[1100];
    snprintf(csv, sizeof csv, "%s/g.csv", dir);
    snprintf(truth, sizeof truth, "%s/g.tsv", dir);
    ck_assert_int_eq(run_cmd(NULL, 0, "%s --rows 3000 --seed 7 %s --truth %s -o %s",
                             prog("gen"), sjis ? "--sjis" : "", truth, csv), 0);
    struct zb_err err = { 0 };
    struct kenall_reader *r = kenall_open(csv, NULL, &err);
    ck_assert_ptr_nonnull(r);
    FILE *t = fopen(truth, "r");
    ck_assert_ptr_nonnull(t);
    char want[4096], got[4096];
    const char *const *f;
    long rows = 0;
    while (kenall_next(r, &f, &err) == 1) {
        size_t n = 0;
        for (int i = 0; i < KENALL_COLS; i++)
            n += (size_t)snprintf(got + n, sizeof got - n, "%s%s", i ? "\t" : "", f[i]);
        ck_assert_ptr_nonnull(fgets(want, sizeof want, t));
        want[strcspn(want, "\n")] = 0;
        ck_assert_str_eq(got, want);
        rows++;
    }
    ck_assert_msg(err.kind == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(rows, 3000);
    ck_assert_int_gt(kenall_lines(r), 3000); /* some records were split */
    ck_assert_int_eq(kenall_encoding(r), sjis ? KENALL_SJIS : KENALL_UTF8);
    kenall_close(r);
    fclose(t);
}

START_TEST(generated_utf8) { check_generated(false); }
END_TEST
START_TEST(generated_sjis) { check_generated(true); }
END_TEST

START_TEST(generator_is_deterministic)
{
    char a[4096], b[4096];
    ck_assert_int_eq(run_cmd(a, sizeof a, "%s --rows 500 --seed 9 | md5sum", prog("gen")), 0);
    ck_assert_int_eq(run_cmd(b, sizeof b, "%s --rows 500 --seed 9 | md5sum", prog("gen")), 0);
    ck_assert_str_eq(a, b);
    ck_assert_int_eq(run_cmd(b, sizeof b, "%s --rows 500 --seed 10 | md5sum", prog("gen")), 0);
    ck_assert_str_ne(a, b);
    ck_assert_int_eq(run_cmd(NULL, 0, "%s --rows x", prog("gen")), 2);
}
END_TEST

/* The real list from `make dataset`: its logical row count is the npm
 * package's, and every line reads without error. */
START_TEST(real_dataset_matches_package)
{
    char csv[1100];
    snprintf(csv, sizeof csv, "%s", data_path("ken_all.csv"));
    const char *meta = data_path("ken_all.meta");
    FILE *m = fopen(meta, "r");
    ck_assert_msg(m != NULL, "%s missing: run make dataset", meta);
    long want_rows = -1, want_lines = -1;
    char line[256];
    while (fgets(line, sizeof line, m)) {
        sscanf(line, "rows=%ld", &want_rows);
        sscanf(line, "lines=%ld", &want_lines);
    }
    fclose(m);
    ck_assert_int_gt(want_rows, 120000);
    struct zb_err err = { 0 };
    struct kenall_opts merged = { 0 }, raw = { .raw = true };
    ck_assert_int_eq(kenall_count(csv, &merged, &err), want_rows);
    if (want_lines > 0)
        ck_assert_int_eq(kenall_count(csv, &raw, &err), want_lines);
}
END_TEST

Suite *suite_kenall(void)
{
    TCase *t = tier(test_case("reader", NULL, NULL, 60, TESTS(
        utf8_crlf_and_lf, quoted_commas_and_quotes, split_records_merged_and_raw,
        shift_jis_file, errors_name_file_and_line, auto_detection_names_the_bad_line,
        complete_last_line_without_newline, generated_utf8, generated_sjis,
        generator_is_deterministic)), TIER_UNIT);
    /* the fetched list (make dataset) */
    TCase *real = test_case("dataset", NULL, NULL, 60, TESTS(real_dataset_matches_package));
    return suite_of("kenall", t, real, NULL);
}
