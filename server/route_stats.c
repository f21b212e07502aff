/* GET /stats: each served table's figures summed over the loops, the
 * server's, and each loop's own (its share of the requests and of the
 * CPU: the benchmark's balance check reads them).
 *
 * Every figure is printed from its declaration: the lane's (lane.h's
 * LANE_STATS), each strategy's by the names it declares (strategy.h), for
 * every strategy that looked anything up, and each route's requests and
 * its own counters (route.h), for every route that served the table. The
 * tables a route added beside a backend (its listing, its write table's
 * read and write) are nested in that backend's object, by their role.
 *
 * Every figure has one writer, its loop; this reads them with relaxed
 * loads while they run, so a snapshot may be a few requests apart across
 * figures. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "keyset.h"
#include "route.h"

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

/* A table's lane counters over every loop: lane.h's list. */
struct sums {
#define SUM_FIELD(name) unsigned long long name;
    LANE_STATS(SUM_FIELD)
#undef SUM_FIELD
};

static void lane_sums(struct server *srv, const struct served *sv, struct sums *s)
{
    memset(s, 0, sizeof *s);
    for (int k = 0; k < srv->nloops; k++) {
        const struct lane_stats *st = &srv->loops[k].lanes[sv->index].st;
#define ADD_FIELD(name) s->name += READ(st->name);
        LANE_STATS(ADD_FIELD)
#undef ADD_FIELD
    }
}

/* Each strategy that looked anything up on sv: "strategies":{"NAME":{..}}. */
static void strategies_json(struct server *srv, const struct served *sv, struct jbuf *b)
{
    JB_LIT(b, "\"strategies\":{");
    bool first = true;
    for (int i = 0; i < NSTRATEGIES; i++) {
        const struct strategy *st = srv->loops[0].lanes[sv->index].way[i].st;
        unsigned long long lookups = 0, fig[STRATEGY_MAX_FIGURES] = { 0 };
        for (int k = 0; st && k < srv->nloops; k++) {
            const struct lane_way *w = &srv->loops[k].lanes[sv->index].way[i];
            lookups += READ(w->lookups);
            for (int f = 0; st->figures && st->figures[f]; f++)
                fig[f] += READ(w->figures[f]);
        }
        if (!lookups)
            continue;
        jb_printf(b, "%s\"%s\":{\"lookups\":%llu", first ? "" : ",", strategy_names[i], lookups);
        for (int f = 0; st->figures && st->figures[f]; f++)
            jb_printf(b, ",\"%s\":%llu", st->figures[f], fig[f]);
        JB_LIT(b, "}");
        first = false;
    }
    JB_LIT(b, "}");
}

/* Each route that served sv: "routes":{"NAME":{"requests":N,..its own}}. */
static void routes_json(struct server *srv, const struct served *sv, struct jbuf *b)
{
    JB_LIT(b, "\"routes\":{");
    bool first = true;
    for (int r = 0; r < nroutes; r++) {
        const struct route *rt = route_table[r];
        unsigned long long requests = 0, fig[8] = { 0 };
        for (int k = 0; k < srv->nloops; k++) {
            const struct request_loop *rl = srv->loops[k].requests;
            requests += READ(rl->served_by[r][sv->index]);
            const counter *c = rt->figures_of ? rt->figures_of(rl->route_loop[r], sv) : NULL;
            for (int f = 0; c && rt->figures[f] && f < 8; f++)
                fig[f] += READ(c[f]);
        }
        if (!requests)
            continue;
        jb_printf(b, "%s\"%s\":{\"requests\":%llu", first ? "" : ",", rt->name ? rt->name : "lookup",
                  requests);
        for (int f = 0; rt->figures && rt->figures[f] && f < 8; f++)
            jb_printf(b, ",\"%s\":%llu", rt->figures[f], fig[f]);
        JB_LIT(b, "}");
        first = false;
    }
    JB_LIT(b, "}");
}

/* The figures every table has: "up", the lane's counters, strategies. */
static void table_json(struct server *srv, const struct served *sv, const struct sums *s,
                       struct jbuf *b)
{
    jb_printf(b, "\"up\":%s", atomic_load(&sv->up) ? "true" : "false");
#define PUT_FIELD(name) jb_printf(b, ",\"" #name "\":%llu", s->name);
    LANE_STATS(PUT_FIELD)
#undef PUT_FIELD
    JB_LIT(b, ",");
    strategies_json(srv, sv, b);
}

static void backend_json(struct server *srv, int i, struct jbuf *b, struct hist *all)
{
    static _Thread_local struct hist h;
    struct served *sv = srv->served[i];
    const struct backend_conf *bc = &sv->conf;
    struct sums s;
    lane_sums(srv, sv, &s);
    hist_init(&h);
    for (int k = 0; k < srv->nloops; k++)
        hist_merge_live(&h, &srv->loops[k].lanes[i].st.latency);
    hist_merge(all, &h);
    jb_printf(b, "%s{\"name\":", i ? "," : "");
    jb_cstr(b, bc->name);
    if (sv->key_kind != KEY_POSTAL) {
        JB_LIT(b, ",\"dataset\":");
        jb_cstr(b, sv->data->conf->name);
    }
    JB_LIT(b, ",\"driver\":");
    jb_cstr(b, bc->driver);
    jb_printf(b, ",\"strategy\":\"%s\",", strategy_names[sv->strategy]);
    table_json(srv, sv, &s, b);
    jb_printf(b, ",\"pool\":{\"min\":%d,\"soft_max\":%d,\"hard_max\":%d,\"ttl_s\":%d,"
              "\"acquire_timeout_ms\":%d},",
              bc->pool_min, bc->pool_soft_max, bc->pool_hard_max, bc->pool_ttl_s,
              bc->acquire_timeout_ms);
    routes_json(srv, sv, b);
    double keys_age_s;
    size_t nkeys = keyset_size(sv, &keys_age_s);
    jb_printf(b, ",\"keys\":%zu,", nkeys);
    if (keys_age_s >= 0)
        jb_printf(b, "\"keys_age_s\":%.1f,", keys_age_s);
    else
        JB_LIT(b, "\"keys_age_s\":null,");
    put_latency(b, &h);
    /* The tables routes added beside it. */
    JB_LIT(b, ",\"tables\":{");
    for (int k = srv->nserved, first = 1; k < srv->nlanes; k++) {
        const struct served *beside = srv->served[k];
        if (beside->owner != sv)
            continue;
        struct sums ps;
        lane_sums(srv, beside, &ps);
        jb_printf(b, "%s\"%s\":{", first ? "" : ",", beside->role);
        table_json(srv, beside, &ps, b);
        JB_LIT(b, "}");
        first = 0;
    }
    JB_LIT(b, "}}");
}

static void serve(struct request *rq)
{
    static _Thread_local struct hist all;
    struct server *srv = rq->loop->srv;
    struct jbuf *b = &rq->body;
    b->n = 0;
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
                  "\"accepted\":%llu,\"cpu_s\":%.3f,\"spin_s\":%.3f}", i ? "," : "", i,
                  atomic_load_explicit(&l->tid, RELAXED),
                  (unsigned long long)READ(f->requests), (unsigned long long)READ(f->open),
                  (unsigned long long)(READ(f->open) + READ(f->closed)),
                  thread_cpu_s(l->thread), (double)READ(l->spun_ns) / 1e9);
    }
    JB_LIT(b, "]}}");
    request_answer(rq, 200);
}

const struct route stats_route = {
    .name = "stats", .usage = "GET /stats", .path = ROUTE_NONE, .serve = serve,
};
