/* A latency histogram in the manner of HdrHistogram: log buckets of 64
 * linear sub-buckets per power of two, so every value is kept to within
 * 1/64 (1.6%) of itself, reported at the middle of its bucket (0.8%).
 *
 * Values are nanoseconds, 0 .. HIST_MAX_NS (about 137 s); larger ones are
 * counted in the top bucket. Values below 128 ns are exact. Recording is
 * O(1), never allocates, and a struct hist is one flat 16 KiB object:
 * keep one per thread and hist_merge() them at the end.
 *
 * A histogram that other threads read while its one writer records (the
 * server's, per thread) is written with hist_record_own (relaxed loads
 * and stores) and read with hist_merge_live, as /stats does.
 * Readers that run while writers record see a consistent-enough snapshot
 * (counts may be a few values apart), which is all /stats needs. */
#ifndef ZB_HIST_H
#define ZB_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 6                       /* 64 sub-buckets per octave */
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_OCTAVES 31                       /* shifts 0..30 */
#define HIST_BUCKETS (HIST_SUB * (HIST_OCTAVES + 1))  /* 2048 */
#define HIST_MAX_NS ((UINT64_C(1) << (HIST_OCTAVES + HIST_SUB_BITS)) - 1)

struct hist {
    uint64_t count;                 /* values recorded */
    uint64_t sum;                   /* their sum, exact, for the mean */
    uint64_t min, max;              /* exact; min is UINT64_MAX when empty */
    uint64_t bucket[HIST_BUCKETS];
};

void hist_init(struct hist *h);
void hist_record(struct hist *h, uint64_t ns);
/* n values of ns at once (a histogram read back from a log). */
void hist_record_n(struct hist *h, uint64_t ns, uint64_t n);
/* Same as hist_record, for a histogram with one writer whose readers are
 * other threads (hist_merge_live): relaxed atomic loads and stores, no
 * locked instruction. */
void hist_record_own(struct hist *h, uint64_t ns);
/* into += from; either may be empty. */
void hist_merge(struct hist *into, const struct hist *from);
/* The same while another thread records into from (hist_record_own): a
 * snapshot good to within the values recorded meanwhile. */
void hist_merge_live(struct hist *into, const struct hist *from);

/* The lowest value that bucket i (0 .. HIST_BUCKETS-1) holds: how another
 * histogram layout (HdrHistogram's, in loadgen's logs) finds its buckets. */
uint64_t hist_bucket_low(unsigned i);

/* Statistics; all return 0 on an empty histogram. */
uint64_t hist_count(const struct hist *h);
uint64_t hist_min(const struct hist *h);
uint64_t hist_max(const struct hist *h);
double hist_mean(const struct hist *h);
/* Population standard deviation, from bucket middles (within ~1%). */
double hist_stddev(const struct hist *h);
/* The smallest recorded value v such that at least p percent (0..100) of
 * values are <= v, to within the bucket precision; p <= 0 gives min,
 * p >= 100 gives max. */
uint64_t hist_percentile(const struct hist *h, double p);

#endif
