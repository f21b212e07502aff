/* The time series: completions, failures and a latency histogram per
 * interval (1 s by default), by the time each request ended.
 *
 * Each loop thread keeps its own share of the current interval and folds
 * it in here when it moves on (series_flush), then says which interval it
 * is at (series_thread_at). The main thread writes out every interval that
 * all threads have left (series_collect): a --hdr-log line, and a point
 * for the --json and --csv reports. Threads touch the lock once per interval, never
 * per request. */
#include <stdlib.h>
#include <string.h>

#include "loadgen.h"

int series_init(struct series *s, uint64_t start_ns, uint64_t interval_ns, int nthreads)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->start_ns = start_ns;
    s->interval_ns = interval_ns;
    s->nthreads = nthreads;
    s->thread_at = calloc((size_t)nthreads, sizeof *s->thread_at);
    return s->thread_at ? 0 : -1;
}

void series_flush(struct series *s, int thread, uint64_t idx, struct interval *iv)
{
    (void)thread;
    if (iv->completed || iv->failed) {
        pthread_mutex_lock(&s->mu);
        if (idx >= s->npending) {
            size_t n = idx + 16;
            struct interval **p = realloc(s->pending, n * sizeof *p);
            if (p) {
                memset(p + s->npending, 0, (n - s->npending) * sizeof *p);
                s->pending = p;
                s->npending = n;
            }
        }
        if (idx < s->npending && !s->pending[idx] && (s->pending[idx] = malloc(sizeof **s->pending))) {
            s->pending[idx]->completed = s->pending[idx]->failed = 0;
            hist_init(&s->pending[idx]->lat);
        }
        struct interval *into = idx < s->npending ? s->pending[idx] : NULL;
        if (into) {                /* out of memory loses the interval, not the run */
            into->completed += iv->completed;
            into->failed += iv->failed;
            hist_merge(&into->lat, &iv->lat);
        }
        pthread_mutex_unlock(&s->mu);
    }
    iv->completed = iv->failed = 0;
    hist_init(&iv->lat);
}

void series_thread_at(struct series *s, int thread, uint64_t idx)
{
    atomic_store_explicit(&s->thread_at[thread], idx, memory_order_release);
}

void point_from(struct point *p, double t, double len, const struct interval *iv)
{
    p->t = t;
    p->len = len;
    p->completed = iv->completed;
    p->failed = iv->failed;
    p->p50_us = (double)hist_percentile(&iv->lat, 50) / 1000.0;
    p->p99_us = (double)hist_percentile(&iv->lat, 99) / 1000.0;
    p->max_us = (double)hist_max(&iv->lat) / 1000.0;
    p->partial = false;
}

void series_collect(struct series *s, bool final)
{
    uint64_t upto = UINT64_MAX;
    for (int i = 0; i < s->nthreads; i++) {
        uint64_t at = atomic_load_explicit(&s->thread_at[i], memory_order_acquire);
        if (at < upto)
            upto = at;
    }
    if (!final && upto == UINT64_MAX)
        return;                    /* every thread is done: the final call writes */
    double iv_s = (double)s->interval_ns / 1e9;
    if (final) {
        /* Every interval up to the end of the run, the last one partial. */
        uint64_t last = s->end_ns > s->start_ns ? (s->end_ns - s->start_ns - 1) / s->interval_ns : 0;
        upto = last + 1;
        pthread_mutex_lock(&s->mu);
        for (size_t k = s->npending; k > upto; k--)
            if (s->pending[k - 1]) {
                upto = k;
                break;
            }
        pthread_mutex_unlock(&s->mu);
    }
    static struct interval empty;
    if (!empty.lat.min)
        hist_init(&empty.lat);
    for (uint64_t k = s->written; k < upto; k++) {
        pthread_mutex_lock(&s->mu);
        struct interval *iv = k < s->npending ? s->pending[k] : NULL;
        if (iv)
            s->pending[k] = NULL;
        pthread_mutex_unlock(&s->mu);
        double t = (double)k * iv_s, len = iv_s;
        if (final && s->end_ns && t + len > (double)(s->end_ns - s->start_ns) / 1e9) {
            len = (double)(s->end_ns - s->start_ns) / 1e9 - t;
            if (len < 0.001)
                len = 0.001;
        }
        const struct interval *use = iv ? iv : &empty;
        struct point pt;
        point_from(&pt, t, len, use);
        /* A last interval of 1 ms with 2 requests is no "2000 rps". */
        pt.partial = len < iv_s * 0.999;
        if (s->hdr) {
            hdrlog_line(s->hdr, NULL, t, len, &use->lat);
            if (use->failed)
                fprintf(s->hdr, "#[loadgen failed: %.3f,%.3f,%llu]\n", t, len,
                        (unsigned long long)use->failed);
            fflush(s->hdr);
        }
        if (s->npoints == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 64;
            struct point *p = realloc(s->points, cap * sizeof *p);
            if (p) {
                s->points = p;
                s->cap = cap;
            }
        }
        if (s->npoints < s->cap)
            s->points[s->npoints++] = pt;
        free(iv);
    }
    if (upto > s->written)
        s->written = upto;
}

void series_free(struct series *s)
{
    for (size_t k = 0; k < s->npending; k++)
        free(s->pending[k]);
    free(s->pending);
    free(s->points);
    free((void *)s->thread_at);
    pthread_mutex_destroy(&s->mu);
    memset(s, 0, sizeof *s);
}
