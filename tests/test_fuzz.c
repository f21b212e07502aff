/* Replays the fuzz corpus (seeds and every input that ever crashed) through
 * the fuzz targets, so `make test` keeps them as regression tests. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "helpers.h"

static int replay(const char *dir, int (*target)(const uint8_t *, size_t))
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "no corpus at %s", dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        static uint8_t buf[1 << 20];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        /* A private copy of exactly len bytes, so ASan sees any overread. */
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, buf, len);
        target(copy, len);
        free(copy);
        n++;
    }
    closedir(d);
    return n;
}

START_TEST(kenall_corpus) { ck_assert_int_gt(replay("tests/fuzz/corpus/kenall", fuzz_kenall), 0); }
END_TEST

START_TEST(csv_corpus) { ck_assert_int_gt(replay("tests/fuzz/corpus/csv", fuzz_csv), 0); }
END_TEST

START_TEST(conf_corpus) { ck_assert_int_gt(replay("tests/fuzz/corpus/conf", fuzz_conf), 0); }
END_TEST

START_TEST(http_corpus) { ck_assert_int_gt(replay("tests/fuzz/corpus/http", fuzz_http), 0); }
END_TEST

START_TEST(resp_corpus) { ck_assert_int_gt(replay("tests/fuzz/corpus/resp", fuzz_resp), 0); }
END_TEST

START_TEST(hdrlog_corpus) { ck_assert_int_gt(replay("tests/fuzz/corpus/hdrlog", fuzz_hdrlog), 0); }
END_TEST
START_TEST(mix_corpus) { ck_assert_int_gt(replay("tests/fuzz/corpus/mix", fuzz_mix), 0); }
END_TEST
START_TEST(number_corpus) { ck_assert_int_gt(replay("tests/fuzz/corpus/number", fuzz_number), 0); }
END_TEST

Suite *suite_fuzz(void)
{
    TCase *t = tier(test_case("corpus", NULL, NULL, 60, TESTS(
        kenall_corpus, csv_corpus, conf_corpus, http_corpus, resp_corpus, hdrlog_corpus, mix_corpus,
        number_corpus)), TIER_UNIT);
    return suite_of("fuzz", t, NULL);
}
