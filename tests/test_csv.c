/* The RFC 4180 reader: quoting, line ends inside fields, delimiters,
 * encodings, and errors that name file:line:column. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "csv.h"
#include "helpers.h"

static char path[1024];

static const char *file_with(const char *name, const char *text)
{
    snprintf(path, sizeof path, "%s/%s", test_dir("csv"), name);
    write_file(path, text);
    return path;
}

/* Reads every record into out as "f1|f2|..." lines ("q:" before a quoted
 * field); returns the record count or -1 with err. */
static long read_all(const char *text, const struct csv_opts *o, char *out, size_t len,
                     struct zb_err *err)
{
    struct csv_reader *r = csv_open(file_with("t.csv", text), o, err);
    if (!r)
        return -1;
    int n, rc;
    const char *const *f;
    long records = 0;
    size_t k = 0;
    out[0] = 0;
    while ((rc = csv_next(r, &n, &f, err)) == 1) {
        k += (size_t)snprintf(out + k, len - k, "%ld:", csv_line(r));
        for (int i = 0; i < n; i++)
            k += (size_t)snprintf(out + k, len - k, "%s%s%s", i ? "|" : "",
                                  csv_quoted(r, i) ? "q:" : "", f[i]);
        k += (size_t)snprintf(out + k, len - k, "\n");
        records++;
    }
    csv_close(r);
    return rc < 0 ? -1 : records;
}

START_TEST(rfc4180_records)
{
    char out[4096];
    struct zb_err err = { 0 };
    ck_assert_int_eq(read_all("id,name,note\r\n1,\"Smith, J.\",\"said \"\"hi\"\"\"\r\n2,,\"\"\r\n",
                              NULL, out, sizeof out, &err), 3);
    ck_assert_str_eq(out, "1:id|name|note\n2:1|q:Smith, J.|q:said \"hi\"\n3:2||q:\n");
    /* A quoted field holds line ends as they were; the next record's line counts them. */
    ck_assert_int_eq(read_all("a,\"x\ny\r\nz\",b\nc,d", NULL, out, sizeof out, &err), 2);
    ck_assert_str_eq(out, "1:a|q:x\ny\r\nz|b\n4:c|d\n");
    /* An empty line is a record of no fields; the caller decides. */
    ck_assert_int_eq(read_all("a\n\nb\n", NULL, out, sizeof out, &err), 3);
    ck_assert_str_eq(out, "1:a\n2:\n3:b\n");
    /* A byte order mark is not part of the first field. */
    ck_assert_int_eq(read_all("\xEF\xBB\xBFid\n", NULL, out, sizeof out, &err), 1);
    ck_assert_str_eq(out, "1:id\n");
}
END_TEST

START_TEST(delimiters_and_quotes_as_text)
{
    char out[4096];
    struct zb_err err = { 0 };
    struct csv_opts tsv = { .delimiter = '\t', .no_quotes = true };
    ck_assert_int_eq(read_all("1\tImeni \"Dvadtsati\t\n\"2\"\t,\n", &tsv, out, sizeof out, &err), 2);
    ck_assert_str_eq(out, "1:1|Imeni \"Dvadtsati|\n2:\"2\"|,\n");
    struct csv_opts semi = { .delimiter = ';' };
    ck_assert_int_eq(read_all("a;\"b;c\";d,e\n", &semi, out, sizeof out, &err), 1);
    ck_assert_str_eq(out, "1:a|q:b;c|d,e\n");
}
END_TEST

START_TEST(encodings)
{
    char out[4096];
    struct zb_err err = { 0 };
    struct csv_opts latin1 = { .encoding = "latin1" };
    ck_assert_int_eq(read_all("caf\xE9,na\xEFve\n", &latin1, out, sizeof out, &err), 1);
    ck_assert_str_eq(out, "1:café|naïve\n");
    /* Shift_JIS, detected. */
    ck_assert_int_eq(read_all("\x93\x8c\x8b\x9e,\"\x91\xe5\x8d\xe3\"\r\n", NULL, out, sizeof out, &err), 1);
    ck_assert_str_eq(out, "1:東京|q:大阪\n");
    /* Auto-detection does not take Latin-1 for Shift_JIS: "caf\xE9s" would
     * read as caf駸 (0xE9 0x73 is a CP932 kanji). Neither: refused, with
     * the line of the first byte that is not UTF-8 and a hint. */
    ck_assert_int_eq(read_all("name\ntea\ncaf\xE9s\n", NULL, out, sizeof out, &err), -1);
    ck_assert_msg(strstr(err.msg, "t.csv:3: cannot tell the file's encoding") &&
                  strstr(err.msg, "encoding ="), "%s", err.msg);
    /* Accented capitals are lone half-width katakana in CP932: no words. */
    ck_assert_int_eq(read_all("SAINT-\xC9TIENNE,ORL\xC9" "ANS,N\xCE" "MES,\xC9VREUX\n", NULL, out,
                              sizeof out, &err), -1);
    ck_assert_msg(strstr(err.msg, ":1: cannot tell"), "%s", err.msg);
    /* Half-width katakana in runs, as KEN_ALL has them: Shift_JIS. */
    ck_assert_int_eq(read_all("\xC4\xB3\xB7\xAE\xB3\xC4,\xC1\xD6\xC0\xDE\n", NULL, out, sizeof out,
                              &err), 1);
    ck_assert_str_eq(out, "1:ﾄｳｷｮｳﾄ|ﾁﾖﾀﾞ\n");
    struct csv_opts bogus = { .encoding = "no-such-encoding" };
    ck_assert_ptr_null(csv_open(file_with("e.csv", "a\n"), &bogus, &err));
    ck_assert_msg(strstr(err.msg, "e.csv: cannot read encoding 'no-such-encoding'"), "%s", err.msg);
}
END_TEST

static void expect_error(const char *text, const struct csv_opts *o, const char *want)
{
    char out[4096];
    struct zb_err err = { 0 };
    ck_assert_int_eq(read_all(text, o, out, sizeof out, &err), -1);
    char full[1200];
    snprintf(full, sizeof full, "%s%s", path, want);
    ck_assert_msg(strstr(err.msg, full), "expected '%s' in: %s", full, err.msg);
}

START_TEST(errors_name_file_line_and_column)
{
    expect_error("a,b\n1,2\nx,y\"z\n", NULL, ":3:2: quote inside an unquoted field");
    expect_error("a,b\n\"c\"d,e\n", NULL, ":2:1: text after the closing quote");
    expect_error("a,b\n1,\"open\n2,3\n", NULL, ":2:2: the quote that opens this field is never "
                 "closed: the file ends on line 3");
    expect_error("a,b\n1,\"open", NULL, ":2:2: truncated last line (no line end): quote not closed");
    struct csv_opts one = { .one_line = true };
    expect_error("a,\"b\nc\"\n", &one, ":1:2: quote not closed on its line");
    expect_error("東京,大阪\n\xE6\x9D\n", NULL, ":2: invalid UTF-8 byte 0xE6 at byte 1 (UTF-8 "
                 "detected: the file has 4 UTF-8 characters and 2 bytes that are not UTF-8)");
    /* A NUL byte (written by hand: the helpers take C strings). */
    struct zb_err err = { 0 };
    FILE *nul = fopen(file_with("nul.csv", ""), "wb");
    fwrite("a,\0b\n", 1, 5, nul);
    fclose(nul);
    struct csv_reader *r = csv_open(path, NULL, &err);
    int n;
    const char *const *f;
    ck_assert_int_eq(csv_next(r, &n, &f, &err), -1);
    ck_assert_msg(strstr(err.msg, "nul.csv:1: NUL byte at byte 3"), "%s", err.msg);
    csv_close(r);
    /* csv_fail names the line a field of a multi-line record starts on. */
    r = csv_open(file_with("m.csv", "\"a\nb\",c\n"), NULL, &err);
    ck_assert_int_eq(csv_next(r, &n, &f, &err), 1);
    csv_fail(r, 2, &err, "bad %s", f[1]);
    char want[1200];
    snprintf(want, sizeof want, "%s:2:2: bad c", path);
    ck_assert_str_eq(err.msg, want);
    csv_close(r);
}
END_TEST

/* Lines end in CRLF or LF (RFC 4180). A carriage return not followed by a
 * line feed is data only inside quotes; in an unquoted field it is an error
 * naming the field, never a line end, never part of a value. */
START_TEST(carriage_returns)
{
    char out[4096];
    struct zb_err err = { 0 };
    ck_assert_int_eq(read_all("a,\"x\ry\"\r\n1,\"\r\"\n", NULL, out, sizeof out, &err), 2);
    ck_assert_str_eq(out, "1:a|q:x\ry\n2:1|q:\r\n");
    ck_assert_int_eq(read_all("a,b\r\n1,2\r\n", NULL, out, sizeof out, &err), 2);
    ck_assert_str_eq(out, "1:a|b\n2:1|2\n");
    const char *bare = ": carriage return (CR) without a line feed in an unquoted field";
    char want[200];
    /* A file whose lines end in CR alone: its first line end, not "no rows". */
    snprintf(want, sizeof want, ":1:2%s", bare);
    expect_error("a,b\rc,d\r", NULL, want);
    snprintf(want, sizeof want, ":2:2%s", bare);
    expect_error("a,b\r\n1,x\ry\r\n", NULL, want);
    /* A trailing CR at the end of the file is not stored in the value. */
    snprintf(want, sizeof want, ":2:2%s", bare);
    expect_error("a,b\r\n1,2\r", NULL, want);
    snprintf(want, sizeof want, ":2:1%s", bare);
    expect_error("a,b\n\rx\n", NULL, want);
    /* After a closing quote, a CR is the same error, not "text after the quote". */
    snprintf(want, sizeof want, ":1:2%s", bare);
    expect_error("a,\"b\"\rc\n", NULL, want);
    /* Quotes read as text, and one record per line: the same rule. */
    struct csv_opts tsv = { .delimiter = '\t', .no_quotes = true };
    snprintf(want, sizeof want, ":1:2%s", bare);
    expect_error("1\tx\ry\n", &tsv, want);
    struct csv_opts one = { .one_line = true };
    expect_error("1,x\ry\r\n", &one, want);
}
END_TEST

/* Appends text to the file at path. */
static void append(const char *path, const char *text)
{
    FILE *f = fopen(path, "ab");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Opens text as a file, lets change() alter it, then reads every record:
 * the record count, or -1 with err. */
static long read_changed(const char *text, void (*change)(const char *path), char *out,
                         size_t len, struct zb_err *err)
{
    struct csv_reader *r = csv_open(file_with("grow.csv", text), NULL, err);
    ck_assert_ptr_nonnull(r);
    change(path);
    int n, rc;
    const char *const *f;
    long records = 0;
    size_t k = 0;
    out[0] = 0;
    while ((rc = csv_next(r, &n, &f, err)) == 1) {
        for (int i = 0; i < n; i++)
            k += (size_t)snprintf(out + k, len - k, "%s%s", i ? "|" : "", f[i]);
        k += (size_t)snprintf(out + k, len - k, "\n");
        records++;
    }
    csv_close(r);
    return rc < 0 ? -1 : records;
}

static void torn_line(const char *p) { append(p, "4"); }
static void whole_line(const char *p) { append(p, "3,4\n"); }
static void nothing(const char *p) { (void)p; }
static void rewritten(const char *p)
{
    write_file(p, "a,b\n5,6\n");
    struct timespec times[2] = { { 0, UTIME_OMIT }, { 1000000000, 0 } };
    ck_assert_int_eq(utimensat(AT_FDCWD, p, times, 0), 0);
}

/* A file written while it is read is refused at its end, naming the last
 * line: its last line may be cut where the writer had got to ("3," of
 * "3,400"), and its rows are of no one version of the file. A file that
 * did not change is read whole, a last line without a line end too. */
START_TEST(a_file_that_changes_while_read)
{
    char out[4096], want[1200];
    struct zb_err err = { 0 };
    ck_assert_int_eq(read_changed("a,b\n1,2\n3,", torn_line, out, sizeof out, &err), -1);
    snprintf(want, sizeof want, "%s:3: the file changed while it was read (10 bytes when opened, "
             "11 now)", path);
    ck_assert_msg(strstr(err.msg, want), "expected '%s' in: %s (read: %s)", want, err.msg, out);
    ck_assert_int_eq(read_changed("a,b\n1,2\n", whole_line, out, sizeof out, &err), -1);
    snprintf(want, sizeof want, "%s:3: the file changed while it was read (8 bytes when opened, "
             "12 now)", path);
    ck_assert_msg(strstr(err.msg, want), "expected '%s' in: %s", want, err.msg);
    ck_assert_int_eq(read_changed("a,b\n1,2\n", rewritten, out, sizeof out, &err), -1);
    snprintf(want, sizeof want, "%s:2: the file changed while it was read (rewritten: 8 bytes "
             "then and now, modified since it was opened)", path);
    ck_assert_msg(strstr(err.msg, want), "expected '%s' in: %s", want, err.msg);
    ck_assert_int_eq(read_changed("a,b\n1,2\n3,4", nothing, out, sizeof out, &err), 3);
    ck_assert_str_eq(out, "a|b\n1|2\n3|4\n");
}
END_TEST

Suite *suite_csv(void)
{
    TCase *t = tier(test_case("reader", NULL, NULL, 0, TESTS(
        rfc4180_records, delimiters_and_quotes_as_text, encodings,
        errors_name_file_line_and_column, carriage_returns, a_file_that_changes_while_read)), TIER_UNIT);
    return suite_of("csv", t, NULL);
}
