#include "hist.h"

#include <assert.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* Bucket i < 128 holds exactly i; above, octave s = msb - 6 keeps the top
 * 7 bits of the value, so index = s*64 + (v >> s) runs on without gaps. */
static inline unsigned bucket_of(uint64_t v)
{
    if (v > HIST_MAX_NS)
        v = HIST_MAX_NS;
    if (v < 2 * HIST_SUB)
        return (unsigned)v;
    unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - HIST_SUB_BITS;
    return (shift << HIST_SUB_BITS) + (unsigned)(v >> shift);
}

static inline uint64_t bucket_low(unsigned i, uint64_t *width)
{
    if (i < 2 * HIST_SUB) {
        *width = 1;
        return i;
    }
    unsigned shift = (i >> HIST_SUB_BITS) - 1;
    *width = UINT64_C(1) << shift;
    return (uint64_t)(i - (shift << HIST_SUB_BITS)) << shift;
}

static inline uint64_t bucket_mid(unsigned i)
{
    uint64_t w, lo = bucket_low(i, &w);
    return lo + (w - 1) / 2;
}

void hist_init(struct hist *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

void hist_record(struct hist *h, uint64_t ns)
{
    h->bucket[bucket_of(ns)]++;
    h->count++;
    h->sum += ns;
    if (ns < h->min)
        h->min = ns;
    if (ns > h->max)
        h->max = ns;
}

void hist_record_n(struct hist *h, uint64_t ns, uint64_t n)
{
    if (!n)
        return;
    h->bucket[bucket_of(ns)] += n;
    h->count += n;
    h->sum += ns * n;
    if (ns < h->min)
        h->min = ns;
    if (ns > h->max)
        h->max = ns;
}

uint64_t hist_bucket_low(unsigned i)
{
    uint64_t w;
    return bucket_low(i, &w);
}

/* The plain fields are used through _Atomic views: same size and alignment
 * on every target we build for, checked here, so one struct serves both. */
static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t) &&
                  _Alignof(_Atomic uint64_t) == _Alignof(uint64_t),
              "_Atomic uint64_t must overlay uint64_t");
#define AT(p) ((_Atomic uint64_t *)(p))

#define LOAD(p) atomic_load_explicit(AT(p), memory_order_relaxed)
#define STORE(p, v) atomic_store_explicit(AT(p), (v), memory_order_relaxed)

void hist_record_own(struct hist *h, uint64_t ns)
{
    uint64_t *b = &h->bucket[bucket_of(ns)];
    STORE(b, LOAD(b) + 1);
    STORE(&h->count, LOAD(&h->count) + 1);
    STORE(&h->sum, LOAD(&h->sum) + ns);
    if (ns < LOAD(&h->min))
        STORE(&h->min, ns);
    if (ns > LOAD(&h->max))
        STORE(&h->max, ns);
}

void hist_merge_live(struct hist *into, const struct hist *from)
{
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        into->bucket[i] += LOAD(&from->bucket[i]);
    into->count += LOAD(&from->count);
    into->sum += LOAD(&from->sum);
    uint64_t min = LOAD(&from->min), max = LOAD(&from->max);
    if (min < into->min)
        into->min = min;
    if (max > into->max)
        into->max = max;
}

void hist_merge(struct hist *into, const struct hist *from)
{
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        into->bucket[i] += from->bucket[i];
    into->count += from->count;
    into->sum += from->sum;
    if (from->min < into->min)
        into->min = from->min;
    if (from->max > into->max)
        into->max = from->max;
}

uint64_t hist_count(const struct hist *h) { return h->count; }
uint64_t hist_min(const struct hist *h) { return h->count ? h->min : 0; }
uint64_t hist_max(const struct hist *h) { return h->count ? h->max : 0; }

double hist_mean(const struct hist *h)
{
    return h->count ? (double)h->sum / (double)h->count : 0.0;
}

double hist_stddev(const struct hist *h)
{
    if (!h->count)
        return 0.0;
    double mean = hist_mean(h), acc = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        if (h->bucket[i]) {
            double d = (double)bucket_mid(i) - mean;
            acc += d * d * (double)h->bucket[i];
        }
    return sqrt(acc / (double)h->count);
}

uint64_t hist_percentile(const struct hist *h, double p)
{
    if (!h->count)
        return 0;
    if (p <= 0)
        return h->min;
    if (p >= 100)
        return h->max;
    /* The rank of the value wanted, 1-based: ceil(p% of count). */
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->count);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->bucket[i];
        if (seen >= rank) {
            uint64_t v = bucket_mid(i);
            return v < h->min ? h->min : v > h->max ? h->max : v;
        }
    }
    return h->max;
}
