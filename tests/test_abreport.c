/* ab's report is read in two places: tests/helpers.c (ab_report, which the
 * C suites use) and bench/lib/clients.mjs (parseAb). Both are held to the
 * same recorded ab 2.3 reports and the figures tests/data/ab/expected.json
 * says each holds (bench/test/ab.test.mjs is the other half). */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define AB_DIR "tests/data/ab/"

/* A whole file into a malloc'd string (NULL if it cannot be read). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, n, mem);
    fclose(f);
    fclose(mem);
    return buf;
}

/* The number after "key": inside one entry of expected.json (an object on
 * one line), or NAN when the entry has no such key. */
static double expected_num(const char *entry, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *end = strchr(entry, '}');
    const char *p = strstr(entry, pat);
    return p && (!end || p < end) ? atof(p + strlen(pat)) : NAN;
}

START_TEST(helpers_parser_reads_every_recorded_report)
{
    char *expected = slurp(AB_DIR "expected.json");
    ck_assert_msg(expected != NULL, "cannot read " AB_DIR "expected.json");
    DIR *d = opendir(AB_DIR);
    ck_assert_ptr_nonnull(d);
    int checked = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".txt") != 0)
            continue;
        char key[300], path[300];
        snprintf(key, sizeof key, "\"%s\":", e->d_name);
        snprintf(path, sizeof path, AB_DIR "%s", e->d_name);
        const char *entry = strstr(expected, key);
        ck_assert_msg(entry != NULL, "%s has no entry in expected.json", e->d_name);
        entry += strlen(key);
        entry += strspn(entry, " ");
        char *text = slurp(path);
        ck_assert_ptr_nonnull(text);
        struct ab_report a = ab_report(text);
        if (strncmp(entry, "null", 4) == 0) {
            ck_assert_msg(!a.found, "%s: ab printed no report, the parser found one", e->d_name);
        } else {
            ck_assert_msg(a.found, "%s: no report found", e->d_name);
            const struct { const char *name; double got; } f[] = {
                { "complete", a.complete }, { "failed", a.failed },
                { "non2xx", a.non2xx }, { "connect", a.connect },
                { "receive", a.receive }, { "length", a.length },
                { "exceptions", a.exceptions }, { "rps", a.rps },
            };
            for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
                double want = expected_num(entry, f[i].name);
                ck_assert_msg(!isnan(want), "%s: expected.json has no %s", e->d_name, f[i].name);
                ck_assert_msg(fabs(f[i].got - want) < 0.005, "%s: %s read %g, want %g",
                              e->d_name, f[i].name, f[i].got, want);
            }
        }
        free(text);
        checked++;
    }
    closedir(d);
    free(expected);
    ck_assert_int_ge(checked, 8);
}
END_TEST

Suite *suite_abreport(void)
{
    TCase *t = tier(test_case("abreport", NULL, NULL, 0, TESTS(helpers_parser_reads_every_recorded_report)), TIER_UNIT);
    return suite_of("abreport", t, NULL);
}
