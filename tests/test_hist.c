/* The latency histogram: exact small values, percentiles of known
 * distributions within the stated 1/64 precision, merge, empty, atomics. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "helpers.h"
#include "hist.h"
#include "util.h"

/* Within the bucket precision: half a bucket is v/128, allow v/64. */
#define ck_near(got, want)                                                              \
    ck_assert_msg(fabs((double)(got) - (double)(want)) <= (double)(want) / 64.0 + 1.0,   \
                  "%s = %.0f, want %.0f within 1/64", #got, (double)(got), (double)(want))

static struct hist h, h2;

START_TEST(empty)
{
    hist_init(&h);
    ck_assert_uint_eq(hist_count(&h), 0);
    ck_assert_uint_eq(hist_min(&h), 0);
    ck_assert_uint_eq(hist_max(&h), 0);
    ck_assert_uint_eq(hist_percentile(&h, 50), 0);
    ck_assert(hist_mean(&h) == 0.0);
    ck_assert(hist_stddev(&h) == 0.0);
    hist_init(&h2);
    hist_merge(&h, &h2);
    ck_assert_uint_eq(hist_count(&h), 0);
    ck_assert_uint_eq(hist_min(&h), 0);
}
END_TEST

START_TEST(small_values_exact)
{
    hist_init(&h);
    for (uint64_t v = 0; v < 128; v++)
        hist_record(&h, v);
    ck_assert_uint_eq(hist_count(&h), 128);
    ck_assert_uint_eq(hist_min(&h), 0);
    ck_assert_uint_eq(hist_max(&h), 127);
    ck_assert_uint_eq(hist_percentile(&h, 50), 63);
    ck_assert_uint_eq(hist_percentile(&h, 100), 127);
    ck_assert_uint_eq(hist_percentile(&h, 0), 0);
    ck_assert(fabs(hist_mean(&h) - 63.5) < 1e-9);
}
END_TEST

/* 1..100000 us uniformly: p-th percentile is p*1000 us. */
START_TEST(uniform_percentiles)
{
    hist_init(&h);
    for (uint64_t us = 1; us <= 100000; us++)
        hist_record(&h, us * 1000);
    ck_assert_uint_eq(hist_count(&h), 100000);
    ck_assert_uint_eq(hist_min(&h), 1000);
    ck_assert_uint_eq(hist_max(&h), 100000000);
    double ps[] = { 1, 10, 50, 90, 99, 99.9 };
    for (unsigned i = 0; i < sizeof ps / sizeof ps[0]; i++)
        ck_near(hist_percentile(&h, ps[i]), ps[i] * 1000.0 * 1000.0);
    ck_near(hist_mean(&h), 50000.5 * 1000);
    /* uniform on [0, N]: sd = N / sqrt(12) */
    ck_near(hist_stddev(&h), 1e8 / sqrt(12.0));
}
END_TEST

/* Exponential latencies (mean 200 us) from a fixed seed: compare with the
 * exact order statistics of the same sample. */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

START_TEST(exponential_vs_sorted)
{
    enum { N = 200000 };
    uint64_t *v = malloc(N * sizeof *v);
    ck_assert_ptr_nonnull(v);
    uint64_t seed = 42;
    hist_init(&h);
    double sum = 0, sum2 = 0;
    for (int i = 0; i < N; i++) {
        v[i] = (uint64_t)(-log(1.0 - zb_rand_unit(&seed)) * 200000.0) + 1000;
        hist_record(&h, v[i]);
        sum += (double)v[i];
        sum2 += (double)v[i] * (double)v[i];
    }
    qsort(v, N, sizeof *v, cmp_u64);
    double ps[] = { 50, 90, 99, 99.9, 99.99 };
    for (unsigned i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        size_t rank = (size_t)ceil(ps[i] / 100.0 * N);
        ck_near(hist_percentile(&h, ps[i]), v[rank - 1]);
    }
    ck_assert_uint_eq(hist_min(&h), v[0]);
    ck_assert_uint_eq(hist_max(&h), v[N - 1]);
    double mean = sum / N;
    ck_assert(fabs(hist_mean(&h) - mean) < 1e-6 * mean);
    ck_near(hist_stddev(&h), sqrt(sum2 / N - mean * mean));
    free(v);
}
END_TEST

START_TEST(huge_values_clamped)
{
    hist_init(&h);
    hist_record(&h, UINT64_C(1) << 50);
    hist_record(&h, 5);
    ck_assert_uint_eq(hist_count(&h), 2);
    ck_assert_uint_eq(hist_max(&h), UINT64_C(1) << 50); /* max stays exact */
    ck_assert_uint_eq(hist_percentile(&h, 50), 5);
    ck_assert_uint_le(hist_percentile(&h, 99), UINT64_C(1) << 50);
}
END_TEST

START_TEST(merge)
{
    hist_init(&h);
    hist_init(&h2);
    for (uint64_t i = 1; i <= 1000; i++)
        hist_record(&h, i * 1000);          /* 1..1000 us */
    for (uint64_t i = 1001; i <= 2000; i++)
        hist_record(&h2, i * 1000);         /* 1001..2000 us */
    hist_merge(&h, &h2);
    ck_assert_uint_eq(hist_count(&h), 2000);
    ck_assert_uint_eq(hist_min(&h), 1000);
    ck_assert_uint_eq(hist_max(&h), 2000000);
    ck_near(hist_percentile(&h, 50), 1000000);
    ck_near(hist_percentile(&h, 75), 1500000);
    ck_assert(fabs(hist_mean(&h) - 1000500.0) < 1e-6);
}
END_TEST

Suite *suite_hist(void)
{
    TCase *tc = tier(test_case("core", NULL, NULL, 60, TESTS(
        empty, small_values_exact, uniform_percentiles, exponential_vs_sorted,
        huge_values_clamped, merge)), TIER_UNIT);
    return suite_of("hist", tc, NULL);
}
