/* Key distributions: which line of the key file a request asks for.
 *
 * uniform: every key alike. zipf:THETA: YCSB's ZipfianGenerator (Gray et
 * al., "Quickly Generating Billion-Record Synthetic Databases", SIGMOD
 * 1994), the same zeta, eta and alpha and the same three cases, so a
 * share read off YCSB's generator is the share here. hotspot:F:P: YCSB's
 * HotspotIntegerGenerator, a fraction F of the keys gets a fraction P of
 * the requests, each set drawn uniformly.
 *
 * The ranks (0 the most asked for) are then scattered over the file's
 * lines by a fixed permutation, as YCSB's ScrambledZipfianGenerator
 * scatters them by a hash: a key file is sorted, and the hot keys would
 * otherwise all be its first lines (one prefecture's codes, neighbours in
 * every B-tree). A permutation, not a hash, so that each key gets exactly
 * its rank's share. The permutation depends on the number of keys alone,
 * not on --seed: runs with different seeds find the same keys hot. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loadgen.h"

int dist_parse(struct dist *d, const char *arg, char *why, size_t whylen)
{
    memset(d, 0, sizeof *d);
    char *end;
    if (!strcmp(arg, "uniform")) {
        d->kind = DIST_UNIFORM;
        return 0;
    }
    if (!strncmp(arg, "zipf:", 5)) {
        d->kind = DIST_ZIPF;
        d->theta = strtod(arg + 5, &end);
        if (end == arg + 5 || *end || !(d->theta > 0 && d->theta < 1)) {
            snprintf(why, whylen, "--dist zipf:THETA: THETA must be a number above 0 and below 1 "
                     "(YCSB's default 0.99), not '%s'", arg + 5);
            return -1;
        }
        return 0;
    }
    if (!strncmp(arg, "hotspot:", 8)) {
        d->kind = DIST_HOTSPOT;
        d->hot_keys = strtod(arg + 8, &end);
        bool ok = end != arg + 8 && *end == ':' && d->hot_keys > 0 && d->hot_keys < 1;
        const char *p = ok ? end + 1 : "";
        d->hot_share = ok ? strtod(p, &end) : 0;
        if (!ok || end == p || *end || !(d->hot_share >= 0 && d->hot_share <= 1)) {
            snprintf(why, whylen, "--dist hotspot:F:P: F (the hot share of the keys) must be above 0 "
                     "and below 1, P (the share of the requests they get) from 0 to 1, "
                     "e.g. hotspot:0.2:0.8; not '%s'", arg + 8);
            return -1;
        }
        return 0;
    }
    snprintf(why, whylen, "--dist: '%s' is not uniform, zipf:THETA or hotspot:F:P", arg);
    return -1;
}

/* YCSB's zeta: the sum over i = 1..n of 1 / i^theta. */
static double zeta(uint32_t n, double theta)
{
    double sum = 0;
    for (uint32_t i = 1; i <= n; i++)
        sum += 1 / pow(i, theta);
    return sum;
}

int dist_prepare(struct dist *d, uint32_t n)
{
    d->n = n;
    if (d->kind == DIST_UNIFORM)
        return 0;
    if (d->kind == DIST_ZIPF) {
        d->zetan = zeta(n, d->theta);
        double zeta2 = zeta(2, d->theta);
        d->alpha = 1 / (1 - d->theta);
        d->half_pow_theta = pow(0.5, d->theta);
        /* n = 1 or 2: Gray's first two cases cover every draw. */
        d->eta = n > 2 ? (1 - pow(2.0 / n, 1 - d->theta)) / (1 - zeta2 / d->zetan) : 1;
    } else {
        d->hot_n = (uint32_t)(d->hot_keys * n);
        if (d->hot_n == 0)
            d->hot_n = 1;
    }
    d->perm = malloc((size_t)n * sizeof *d->perm);
    if (!d->perm)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        d->perm[i] = i;
    uint64_t s = 0x7a6970667065726dull;         /* fixed: "zipfperm" */
    for (uint32_t i = n; i > 1; i--) {           /* Fisher-Yates */
        uint32_t j = zb_rand_below(&s, i);
        uint32_t t = d->perm[i - 1];
        d->perm[i - 1] = d->perm[j];
        d->perm[j] = t;
    }
    return 0;
}

void dist_free(struct dist *d)
{
    free(d->perm);
    d->perm = NULL;
}

uint32_t dist_rank(const struct dist *d, uint64_t *s)
{
    if (d->kind == DIST_ZIPF) {
        double u = zb_rand_unit(s), uz = u * d->zetan;
        if (uz < 1)
            return 0;
        if (uz < 1 + d->half_pow_theta)
            return 1;
        double r = d->n * pow(d->eta * u - d->eta + 1, d->alpha);
        return r < d->n ? (uint32_t)r : d->n - 1;
    }
    if (d->kind == DIST_HOTSPOT) {
        double u = zb_rand_unit(s);
        if (u < d->hot_share || d->hot_n == d->n)
            return zb_rand_below(s, d->hot_n);
        return d->hot_n + zb_rand_below(s, d->n - d->hot_n);
    }
    return zb_rand_below(s, d->n);
}

uint32_t dist_draw(const struct dist *d, uint64_t *s)
{
    uint32_t r = dist_rank(d, s);
    return d->perm ? d->perm[r] : r;
}
