/* /stats: each (dataset, backend) pair's figures summed over the loops,
 * the server's, and each loop's own (its share of the requests and of the
 * CPU: the benchmark's balance check reads them).
 *
 * Every figure has one writer, its loop; this reads them with relaxed
 * loads while they run, so a snapshot may be a few requests apart across
 * figures. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "keyset.h"
#include "lane.h"
#include "stats.h"

static void put_latency(struct jbuf *b, const struct hist *h)
{
    jb_printf(b, "\"latency_us\":{\"count\":%llu,\"mean\":%.1f,\"p50\":%.1f,\"p90\":%.1f,"
              "\"p99\":%.1f,\"max\":%.1f}",
              (unsigned long long)hist_count(h), hist_mean(h) / 1e3,
              (double)hist_percentile(h, 50) / 1e3, (double)hist_percentile(h, 90) / 1e3,
              (double)hist_percentile(h, 99) / 1e3, (double)hist_max(h) / 1e3);
}

/* A loop thread's CPU time so far, in seconds (0 if it cannot be read). */
static double thread_cpu_s(pthread_t t)
{
    clockid_t id;
    struct timespec ts;
    if (pthread_getcpuclockid(t, &id) || clock_gettime(id, &ts))
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One backend's counters over every loop: lane.h's list. */
struct sums {
#define SUM_FIELD(name) unsigned long long name;
    LANE_STATS(SUM_FIELD)
#undef SUM_FIELD
};

static void add(struct sums *s, const struct lane_stats *st)
{
#define ADD_FIELD(name) s->name += READ(st->name);
    LANE_STATS(ADD_FIELD)
#undef ADD_FIELD
}

/* A pair of lanes a backend has beside its own (the _hits pairs of
 * writes = yes, update.h; the listing's, listing.c): its connections and
 * waits, as "NAME":{..}. */
static void pair_json(struct server *srv, const struct served *sb, const char *name,
                      struct jbuf *b)
{
    struct sums s = { 0 };
    for (int k = 0; k < srv->nloops; k++)
        add(&s, &srv->loops[k].lanes[sb->index].st);
    jb_printf(b, "\"%s\":{\"up\":%s,\"open\":%llu,\"in_use\":%llu,\"connects\":%llu,"
              "\"connects_per_request\":%llu,\"connect_failures\":%llu,\"waits\":%llu,"
              "\"timeouts\":%llu,\"overload\":%llu,\"down\":%llu,\"lock_waits\":%llu}",
              name, atomic_load(&sb->up) ? "true" : "false", s.open, s.in_use, s.connects,
              s.connects_per_request, s.connect_failures, s.waits, s.timeouts, s.overload,
              s.down, s.lock_waits);
}

static void backend_json(struct server *srv, int i, struct jbuf *b, struct hist *all)
{
    static _Thread_local struct hist h;
    struct served *sb = srv->served[i];
    const struct backend_conf *bc = &sb->conf;
    struct sums s = { 0 };
    hist_init(&h);
    for (int k = 0; k < srv->nloops; k++) {
        add(&s, &srv->loops[k].lanes[i].st);
        hist_merge_live(&h, &srv->loops[k].lanes[i].st.latency);
    }
    hist_merge(all, &h);
    double keys_age_s;
    size_t nkeys = keyset_size(sb, &keys_age_s);
    jb_printf(b, "%s{\"name\":", i ? "," : "");
    jb_cstr(b, bc->name);
    if (!sb->postal) {
        JB_LIT(b, ",\"dataset\":");
        jb_cstr(b, sb->data->conf->name);
    }
    JB_LIT(b, ",\"driver\":");
    jb_cstr(b, bc->driver);
    jb_printf(b, ",\"up\":%s,\"strategy\":\"%s\",\"requests\":%llu,"
              "\"ok\":%llu,\"not_found\":%llu,\"errors_4xx\":%llu,\"errors_5xx\":%llu,"
              "\"overload\":%llu,\"down\":%llu,",
              atomic_load(&sb->up) ? "true" : "false", zb_strategy_names[sb->strategy], s.requests, s.ok, s.not_found,
              s.e4xx, s.e5xx, s.overload, s.down);
    jb_printf(b, "\"pool\":{\"min\":%d,\"soft_max\":%d,\"hard_max\":%d,\"ttl_s\":%d,"
              "\"acquire_timeout_ms\":%d,\"size\":%llu,\"in_use\":%llu,\"idle\":%llu,"
              "\"waits\":%llu,\"timeouts\":%llu},",
              bc->pool_min, bc->pool_soft_max, bc->pool_hard_max, bc->pool_ttl_s,
              bc->acquire_timeout_ms, s.open, s.in_use, s.open > s.in_use ? s.open - s.in_use : 0,
              s.waits, s.timeouts);
    jb_printf(b, "\"connects\":%llu,\"connects_per_request\":%llu,\"connect_failures\":%llu,"
              "\"reconnects\":%llu,\"discarded\":%llu,\"pipelined\":%llu,\"batches\":%llu,"
              "\"lock_waits\":%llu,\"keys\":%zu,",
              s.connects, s.connects_per_request, s.connect_failures, s.reconnects, s.discarded,
              s.pipelined, s.batches, s.lock_waits, nkeys);
    jb_printf(b, "\"cache_hits\":%llu,\"cache_misses\":%llu,\"cache_entries\":%llu,",
              s.cache_hits, s.cache_misses, s.cache_entries);
    if (keys_age_s >= 0)
        jb_printf(b, "\"keys_age_s\":%.1f,", keys_age_s);
    else
        JB_LIT(b, "\"keys_age_s\":null,");
    put_latency(b, &h);
    if (sb->hits_write) {   /* writes = yes: its read and write pairs */
        JB_LIT(b, ",\"writes\":{");
        pair_json(srv, sb->hits_read, "read", b);
        JB_LIT(b, ",");
        pair_json(srv, sb->hits_write, "write", b);
        JB_LIT(b, "}");
    }
    if (sb->list) {   /* a postal backend: its listing pair (GET /list/) */
        JB_LIT(b, ",");
        pair_json(srv, sb->list, "list", b);
    }
    JB_LIT(b, "}");
}

void stats_json(struct server *srv, struct jbuf *b)
{
    static _Thread_local struct hist all;
    hist_init(&all);
    JB_LIT(b, "{\"backends\":[");
    for (int i = 0; i < srv->nserved; i++)
        backend_json(srv, i, b, &all);
    unsigned long long requests = 0, ok = 0, e4xx = 0, e5xx = 0, slow = 0;
    for (int i = 0; i < srv->nloops; i++) {
        const struct loop_figures *f = srv->loops[i].fig;
        requests += READ(f->requests);
        ok += READ(f->ok);
        e4xx += READ(f->e4xx);
        e5xx += READ(f->e5xx);
        slow += READ(f->header_timeouts);
    }
    double up_s = (double)(zb_now_ns() - srv->started_ns) / 1e9;
    jb_printf(b, "],\"server\":{\"uptime_s\":%.1f,\"threads\":%d,\"requests\":%llu,\"ok\":%llu,"
              "\"errors_4xx\":%llu,\"errors_5xx\":%llu,\"header_timeouts\":%llu,",
              up_s, srv->nloops, requests, ok, e4xx, e5xx, slow);
    put_latency(b, &all);
    JB_LIT(b, ",\"loops\":[");
    for (int i = 0; i < srv->nloops; i++) {
        const struct loop *l = srv->loops[i].loop;
        const struct loop_figures *f = srv->loops[i].fig;
        jb_printf(b, "%s{\"id\":%d,\"tid\":%d,\"requests\":%llu,\"connections\":%llu,"
                  "\"accepted\":%llu,\"cpu_s\":%.3f}", i ? "," : "", i,
                  atomic_load_explicit(&l->tid, RELAXED),
                  (unsigned long long)READ(f->requests), (unsigned long long)READ(f->open),
                  (unsigned long long)(READ(f->open) + READ(f->closed)),
                  thread_cpu_s(l->thread));
    }
    JB_LIT(b, "]}}");
}
