/* A real's one text (lib/number.c): the shortest decimal that reads back
 * as the same double, laid out as JavaScript lays numbers out; and which
 * decimals keep their value as a real. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "number.h"

static const char *text_of(double v)
{
    static char out[ZB_REAL_TEXT_MAX];
    size_t n = zb_real_text(v, out);
    ck_assert_uint_eq(n, strlen(out));
    return out;
}

START_TEST(texts_as_javascript_writes_them)
{
    static const struct { double v; const char *text; } cases[] = {
        { 0, "0" }, { -0.0, "0" }, { 671.00, "671" }, { 0.1 + 0.2, "0.30000000000000004" },
        { 1.2345678901234567, "1.2345678901234567" }, { 0.1, "0.1" }, { -2.5, "-2.5" },
        { 100, "100" }, { 1e308, "1e+308" }, { 1e21, "1e+21" }, { 1e20, "100000000000000000000" },
        { 123456789012345680.0, "123456789012345680" }, { 9007199254740993.0, "9007199254740992" },
        { 9223372036854775808.0, "9223372036854776000" }, { 1e-6, "0.000001" },
        { 1e-7, "1e-7" }, { 1.5e-7, "1.5e-7" }, { -1.5e-7, "-1.5e-7" }, { 5e-324, "5e-324" },
        { DBL_MAX, "1.7976931348623157e+308" }, { DBL_MIN, "2.2250738585072014e-308" },
        { 3.14159, "3.14159" }, { 0.000123, "0.000123" }, { 12.5, "12.5" },
        { NAN, "NaN" }, { INFINITY, "Infinity" }, { -INFINITY, "-Infinity" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(!strcmp(text_of(cases[i].v), cases[i].text), "%.17g: '%s', want '%s'",
                      cases[i].v, text_of(cases[i].v), cases[i].text);
}
END_TEST

/* Doubles from random bits: each text reads back as its double, and no
 * fewer digits would. */
START_TEST(texts_are_the_shortest_that_read_back)
{
    uint64_t seed = 47;
    for (int i = 0; i < 20000; i++) {
        uint64_t bits = zb_rand(&seed);
        double v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v) || v == 0)
            continue;
        const char *t = text_of(v);
        ck_assert_msg(strtod(t, NULL) == v, "%a: '%s' reads back otherwise", v, t);
        char sig[40];   /* its significant digits: no zero before or after */
        int k = 0;
        for (const char *p = t; *p && *p != 'e'; p++)
            if (*p >= '0' && *p <= '9' && (k || *p != '0'))
                sig[k++] = *p;
        while (k > 1 && sig[k - 1] == '0')
            k--;
        char shorter[48];
        snprintf(shorter, sizeof shorter, "%.*e", k - 2, v);   /* k - 1 digits */
        ck_assert_msg(k == 1 || strtod(shorter, NULL) != v, "%a: '%s' has %d digits, but '%s' "
                      "reads back too", v, t, k, shorter);
    }
}
END_TEST

START_TEST(exact_reals)
{
    static const char *const exact[] = {
        "671.00", "1E5", "1e+5", "0.30000000000000004", "1e308", "-2.5", "0", "0.0", "-0.0",
        "123456789012345680", "9007199254740992", "1.7976931348623157e308", "0.000001", "12.50",
        "2.2250738585072014e-308", "1e21", "1.000000000000000000000000000000000000000000000000",
        "0.0000000000000000000000000000000000000000000000001",
    };
    static const char *const inexact[] = {
        "9223372036854775808", "9223372036854775807", "9007199254740993", "1.23456789012345678",
        "0.1000000000000000000000001", "1.0000000000000000000000000000000000000000000000001",
        "1e400", "-1e400", "NaN", "Infinity", "abc", "", "1e",
        " 5", "5 ", "0x10", "1,5",
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        ck_assert_msg(zb_real_is_exact(exact[i]), "'%s' is exact", exact[i]);
    for (size_t i = 0; i < sizeof inexact / sizeof inexact[0]; i++)
        ck_assert_msg(!zb_real_is_exact(inexact[i]), "'%s' is not exact", inexact[i]);
}
END_TEST

Suite *suite_number(void)
{
    TCase *t = tier(test_case("real_text", NULL, NULL, 0, TESTS(
        texts_as_javascript_writes_them, texts_are_the_shortest_that_read_back, exact_reals)),
        TIER_UNIT);
    return suite_of("number", t, NULL);
}
