/* The one JSON string writer (lib/util.c): what it escapes and what it
 * leaves as it is, into a buffer and to a stream. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "util.h"

static char *quoted(const char *s, size_t len)
{
    static char out[ZB_JSON_QUOTED_MAX(64) + 1];
    size_t n = zb_json_quote(out, s, len);
    ck_assert_uint_le(n, ZB_JSON_QUOTED_MAX(len));
    out[n] = 0;
    return out;
}

START_TEST(escapes)
{
    ck_assert_str_eq(quoted("", 0), "\"\"");
    ck_assert_str_eq(quoted("plain", 5), "\"plain\"");
    ck_assert_str_eq(quoted("a\"b\\c", 5), "\"a\\\"b\\\\c\"");
    ck_assert_str_eq(quoted("\n\r\t", 3), "\"\\n\\r\\t\"");
    ck_assert_str_eq(quoted("\x01\x1f", 2), "\"\\u0001\\u001f\"");
    /* UTF-8 as stored; a NUL inside the length is escaped, not an end */
    ck_assert_str_eq(quoted("北海道", strlen("北海道")), "\"北海道\"");
    ck_assert_str_eq(quoted("a\0b", 3), "\"a\\u0000b\"");
    /* the worst case fits the bound */
    char ctl[64];
    memset(ctl, 1, sizeof ctl);
    ck_assert_uint_eq(strlen(quoted(ctl, sizeof ctl)), ZB_JSON_QUOTED_MAX(sizeof ctl));
}
END_TEST

START_TEST(to_a_stream)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    /* longer than the writer's own buffer, with escapes across its pieces */
    char big[3000];
    for (size_t i = 0; i < sizeof big - 1; i++)
        big[i] = i % 7 ? 'x' : '"';
    big[sizeof big - 1] = 0;
    zb_json_fputs(f, big);
    zb_json_fputs(f, NULL);
    fclose(f);
    size_t quotes = 0;
    for (size_t i = 0; i < sizeof big - 1; i++)
        quotes += big[i] == '"';
    ck_assert_uint_eq(len, sizeof big - 1 + quotes + 2 + 2);
    ck_assert(buf[0] == '"' && !strcmp(buf + len - 3, "\"\"\"") && !strncmp(buf + 1, "\\\"x", 3));
    free(buf);
}
END_TEST

Suite *suite_json(void)
{
    TCase *tc = tier(test_case("core", NULL, NULL, 0, TESTS(
        escapes, to_a_stream)), TIER_UNIT);
    return suite_of("json", tc, NULL);
}
