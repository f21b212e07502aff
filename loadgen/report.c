/* The run's report. The text is ab's: the same labels in the same order,
 * the Connection Times table and the percentile table (with -S and -d as
 * in ab), so scripts written for ab still read it; loadgen's own lines
 * (timeouts, TLS handshakes, latency in microseconds, client CPU) follow
 * ab's. The same figures as one JSON object, or as CSV rows; and ab's -e
 * and -g files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "loadgen.h"

static double rps(const struct result *r)
{
    return r->seconds > 0 ? (double)r->st.completed / r->seconds : 0;
}

uint64_t result_errors(const struct result *r)
{
    const struct stats *s = &r->st;
    return s->completed + stats_failed(s) - stats_answered(s, r->miss_answers);
}

static double goodput(const struct result *r)
{
    return r->seconds > 0 ? (double)stats_answered(&r->st, r->miss_answers) / r->seconds : 0;
}

/* "503 12, timeouts 3": the kinds of error that occurred, with counts. */
static void error_kinds(FILE *out, const struct result *r)
{
    const struct stats *s = &r->st;
    const struct { const char *label; uint64_t n; } kind[] = {
        { "503", s->status_503 }, { "other 5xx", s->status_5xx },
        { "404", r->miss_answers ? 0 : s->status_404 }, { "other 4xx", s->status_4xx },
        { "1xx/3xx", s->status_other }, { "timeouts", s->err_timeout },
        { "connect", s->err_connect }, { "receive", s->err_recv }, { "send", s->err_send },
        { "exceptions", s->err_except },
    };
    const char *sep = "";
    for (size_t i = 0; i < sizeof kind / sizeof kind[0]; i++)
        if (kind[i].n) {
            fprintf(out, "%s%s %llu", sep, kind[i].label, (unsigned long long)kind[i].n);
            sep = ", ";
        }
}

void report_warn_errors(const struct result *r, const char *prog)
{
    uint64_t errors = result_errors(r), all = r->st.completed + stats_failed(&r->st);
    if (!all || errors * 100 <= all)
        return;
    fprintf(stderr, "%s: warning: %llu of %llu requests (%.1f%%) were errors (", prog,
            (unsigned long long)errors, (unsigned long long)all, 100.0 * (double)errors / (double)all);
    error_kinds(stderr, r);
    fprintf(stderr, "): \"Requests per second\" counts every answer, errors too; the goodput "
                    "(answers: 2xx%s) is %.2f [#/sec]\n", r->miss_answers ? ", 404 of --miss" : "",
            goodput(r));
}

static double cpu_us_per_req(const struct result *r)
{
    return r->st.completed ? (r->cpu_user + r->cpu_sys) * 1e6 / (double)r->st.completed : 0;
}

static double us(uint64_t ns) { return (double)ns / 1000.0; }

/* ab rounds microseconds to milliseconds: (us + 500) / 1000. */
static long long ms(double ns) { return ((long long)(ns / 1000.0) + 500) / 1000; }

/* The sample standard deviation (ab's: n - 1), in ms. */
static double sd_ms(const struct hist *h)
{
    uint64_t n = hist_count(h);
    double sd = hist_stddev(h);
    return n > 1 ? sd * sqrt((double)n / (double)(n - 1)) / 1e6 : 0;
}

/* ab's Connection Times (ms) table, from the histograms. */
static void connection_times(FILE *out, const struct result *r)
{
    const struct stats *s = &r->st;
    const struct { const char *label; const struct hist *h; const char *what; } row[] = {
        { "Connect:    ", &s->connect, "the initial connection time" },
        { "Processing: ", &s->processing, "the processing time" },
        { "Waiting:    ", &s->waiting, "the waiting time" },
        { "Total:      ", &s->total, "the total time" },
    };
    fprintf(out, "\nConnection Times (ms)\n");
    if (r->cfg->no_confidence) {
        fprintf(out, "              min   avg   max\n");
        for (int i = 0; i < 4; i++)
            fprintf(out, "%s%5lld %5lld%5lld\n", row[i].label, ms((double)hist_min(row[i].h)),
                   ms(hist_mean(row[i].h)), ms((double)hist_max(row[i].h)));
        return;
    }
    fprintf(out, "              min  mean[+/-sd] median   max\n");
    for (int i = 0; i < 4; i++)
        fprintf(out, "%s%5lld %4lld %5.1f %6lld %7lld\n", row[i].label, ms((double)hist_min(row[i].h)),
               ms(hist_mean(row[i].h)), sd_ms(row[i].h),
               ms((double)hist_percentile(row[i].h, 50)), ms((double)hist_max(row[i].h)));
    /* ab's warnings when mean and median are far apart. */
    for (int i = 0; i < 4; i++) {
        double mean = (double)ms(hist_mean(row[i].h));
        double median = (double)ms((double)hist_percentile(row[i].h, 50));
        double sd = sd_ms(row[i].h), d = fabs(mean - median);
        if (d > 2 * sd)
            fprintf(out, "ERROR: The median and mean for %s are more than twice the standard\n"
                   "       deviation apart. These results are NOT reliable.\n", row[i].what);
        else if (d > sd)
            fprintf(out, "WARNING: The median and mean for %s are not within a normal deviation\n"
                   "        These results are probably not that reliable.\n", row[i].what);
    }
}

static const int percs[] = { 50, 66, 75, 80, 90, 95, 98, 99 };

/* The connections' opening: how many of the -c opened, by when, and how
 * long each new one took (so that a slow ramp is not read as latency). */
static void connections_opened(FILE *out, const struct result *r)
{
    const struct stats *s = &r->st;
    const struct hist *h = &s->open;
    fprintf(out, "Connections opened:     %llu of %d, the last at %.3f s from the start; "
            "each in p50 %.2f, p99 %.2f, max %.2f ms\n", (unsigned long long)s->slots_opened,
            r->concurrency, (double)s->last_open_ns / 1e9,
            hist_count(h) ? (double)hist_percentile(h, 50) / 1e6 : 0.0,
            hist_count(h) ? (double)hist_percentile(h, 99) / 1e6 : 0.0,
            hist_count(h) ? (double)hist_max(h) / 1e6 : 0.0);
}

/* ab's percentile table of h, under heading (and a second line saying
 * from when it is measured, if given). */
static void percentile_table(FILE *out, const struct hist *h, const char *heading, const char *from)
{
    fprintf(out, "\n%s\n", heading);
    if (from)
        fprintf(out, "%s\n", from);
    for (size_t i = 0; i < sizeof percs / sizeof percs[0]; i++)
        fprintf(out, "  %d%%  %5lld\n", percs[i], ms((double)hist_percentile(h, percs[i])));
    fprintf(out, " 100%%  %5lld (longest request)\n", ms((double)hist_max(h)));
}

/* --mix: a line per template after ab's report. */
static void report_templates(const struct result *r, FILE *out)
{
    fprintf(out, "\nTemplates (--mix):\n");
    fprintf(out, "weight  completed       2xx   non-2xx    failed  p50 (us)  p99 (us)  request\n");
    for (int i = 0; i < r->mix->n; i++) {
        const struct tmpl_stats *t = &r->tmpl[i];
        fprintf(out, "%6u %10llu %9llu %9llu %9llu %9.0f %9.0f  %s %s\n", r->mix->t[i].weight,
                (unsigned long long)t->count, (unsigned long long)t->ok,
                (unsigned long long)t->non2xx, (unsigned long long)t->failed,
                t->count ? us(hist_percentile(&t->lat, 50)) : 0.0,
                t->count ? us(hist_percentile(&t->lat, 99)) : 0.0, r->mix->t[i].method,
                r->mix->t[i].path);
    }
}

void report_text(const struct result *r, FILE *out)
{
    const struct stats *s = &r->st;
    const struct config *c = r->cfg;
    uint64_t failed = stats_failed(s), done = s->completed;
    fprintf(out, "\n\n");
    fprintf(out, "Server Software:        %s\n", r->server);
    fprintf(out, "Server Hostname:        %s\n", r->host);
    fprintf(out, "Server Port:            %d\n", r->port);
    if (r->tls && r->tls_info[0])
        fprintf(out, "SSL/TLS Protocol:       %s\n", r->tls_info);
    if (r->tls && r->tls_tmpkey[0])
        fprintf(out, "Server Temp Key:        %s\n", r->tls_tmpkey);
    if (r->tls && r->tls_sni && r->tls_sni[0])
        fprintf(out, "TLS Server Name:        %s\n", r->tls_sni);
    fprintf(out, "\n");
    fprintf(out, "Document Path:          %s\n", r->path);
    if (c->variable_length)
        fprintf(out, "Document Length:        Variable\n");
    else
        fprintf(out, "Document Length:        %llu bytes\n", (unsigned long long)r->doc_length);
    fprintf(out, "\n");
    fprintf(out, "Concurrency Level:      %d\n", r->concurrency);
    fprintf(out, "Time taken for tests:   %.3f seconds\n", r->seconds);
    fprintf(out, "Complete requests:      %llu\n", (unsigned long long)done);
    fprintf(out, "Failed requests:        %llu\n", (unsigned long long)failed);
    if (failed || s->err_length)
        fprintf(out, "   (Connect: %llu, Receive: %llu, Length: %llu, Exceptions: %llu)\n",
               (unsigned long long)s->err_connect, (unsigned long long)s->err_recv,
               (unsigned long long)s->err_length, (unsigned long long)s->err_except);
    if (s->err_connect) {
        char why[1024];
        stats_connect_errors(s, why, sizeof why);
        fprintf(out, "Connect errors:         %s\n", why);
    }
    if (s->err_send)
        fprintf(out, "Write errors:           %llu\n", (unsigned long long)s->err_send);
    if (s->err_timeout)
        fprintf(out, "Timeouts:               %llu (no whole response within -s)\n",
               (unsigned long long)s->err_timeout);
    if (s->non2xx)
        fprintf(out, "Non-2xx responses:      %llu\n", (unsigned long long)s->non2xx);
    if (r->keepalive)
        fprintf(out, "Keep-Alive requests:    %llu\n", (unsigned long long)s->keepalive_reqs);
    fprintf(out, "Total transferred:      %llu bytes\n", (unsigned long long)s->bytes_total);
    if (r->posted)
        fprintf(out, "Total body sent:        %llu\n", (unsigned long long)s->bytes_sent);
    fprintf(out, "HTML transferred:       %llu bytes\n", (unsigned long long)s->bytes_body);
    if (r->seconds > 0 && done) {
        fprintf(out, "Requests per second:    %.2f [#/sec] (mean)\n", rps(r));
        fprintf(out, "Time per request:       %.3f [ms] (mean)\n",
               (double)r->concurrency * r->seconds * 1000.0 / (double)done);
        fprintf(out, "Time per request:       %.3f [ms] (mean, across all concurrent requests)\n",
               r->seconds * 1000.0 / (double)done);
        fprintf(out, "Transfer rate:          %.2f [Kbytes/sec] received\n",
               (double)s->bytes_total / 1024.0 / r->seconds);
        if (r->posted) {
            fprintf(out, "                        %.2f kb/s sent\n",
                   (double)s->bytes_sent / 1024.0 / r->seconds);
            fprintf(out, "                        %.2f kb/s total\n",
                   (double)(s->bytes_total + s->bytes_sent) / 1024.0 / r->seconds);
        }
    }
    if (done) {
        connection_times(out, r);
        /* Under --rate ab's table (from the moment a request was sent)
         * hides the wait of a request held back behind a slow one: the
         * table first shows the latencies from each request's intended
         * send time, as the Latency line does, and says so; ab's follows,
         * labelled. */
        if (!c->no_percentiles && done > 1 && r->rate > 0) {
            percentile_table(out, &s->lat, "Percentage of the requests served within a certain time (ms)",
                             "  (from the intended send time of --rate: corrected for coordinated "
                             "omission, as the Latency line)");
            percentile_table(out, &s->total, "Percentage served within a certain time (ms), from the "
                             "actual send time", "  (as ab measures: without the wait behind a "
                             "slow request)");
        } else if (!c->no_percentiles && done > 1) {
            percentile_table(out, &s->total, "Percentage of the requests served within a certain time (ms)",
                             NULL);
        }
    }

    /* loadgen's own lines, after ab's; the goodput first: ab's rate
     * counts every answer, error pages too. */
    fprintf(out, "\n");
    uint64_t errors = result_errors(r), all = done + failed;
    fprintf(out, "Goodput:                %.2f [#/sec] (answers: 2xx%s; %llu of %llu requests)\n",
            goodput(r), r->miss_answers ? ", and 404 of --miss" : "",
            (unsigned long long)(all - errors), (unsigned long long)all);
    if (errors) {
        fprintf(out, "Errors:                 %llu (%.1f%%: ", (unsigned long long)errors,
                100.0 * (double)errors / (double)all);
        error_kinds(out, r);
        fprintf(out, ")\n");
    }
    if (s->err_length)
        fprintf(out, "Length: 2xx bodies unlike the first: %llu (counted complete, not failed)\n",
               (unsigned long long)s->err_length);
    if (s->abandoned)
        fprintf(out, "Abandoned at the end:   %llu (in flight when the time limit ran out)\n",
               (unsigned long long)s->abandoned);
    if (s->slots_opened)
        connections_opened(out, r);
    if (r->rate > 0)
        fprintf(out, "Target rate:            %.10g [#/sec] (latency from the intended send time)\n",
               r->rate);
    if (r->tls)
        fprintf(out, "TLS handshakes:         %llu (%llu resumed)\n", (unsigned long long)s->handshakes,
               (unsigned long long)s->resumed);
    if (r->agents > 1)
        fprintf(out, "Agents merged:          %d (started within %.1f ms of each other)\n",
                r->agents, r->start_skew_s * 1000);
    const struct hist *h = &s->lat;
    fprintf(out, "Latency (us)      min      mean    [+/-sd]      p50      p90      p99    p99.9      max\n");
    fprintf(out, "Total:      %9.0f %9.1f %10.1f %8.0f %8.0f %8.0f %8.0f %8.0f\n", us(hist_min(h)),
           hist_mean(h) / 1000.0, hist_stddev(h) / 1000.0, us(hist_percentile(h, 50)),
           us(hist_percentile(h, 90)), us(hist_percentile(h, 99)), us(hist_percentile(h, 99.9)),
           us(hist_max(h)));
    fprintf(out, "\n");
    fprintf(out, "Client CPU:             %.3f s user, %.3f s sys; %.2f us per request "
           "(%d thread%s, %llu connections)\n",
           r->cpu_user, r->cpu_sys, cpu_us_per_req(r), r->threads, r->threads == 1 ? "" : "s",
           (unsigned long long)s->connects);
    if (r->mix)
        report_templates(r, out);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* sep, then "key":"value" */
static void json_kv(FILE *f, const char *sep, const char *key, const char *v)
{
    fprintf(f, "%s\"%s\":", sep, key);
    json_str(f, v);
}

static void json_times(FILE *f, const char *name, const struct hist *h)
{
    fprintf(f, "\"%s\":{\"min\":%.3f,\"mean\":%.3f,\"sd\":%.3f,\"median\":%.3f,\"max\":%.3f}", name,
            (double)hist_min(h) / 1e6, hist_mean(h) / 1e6, sd_ms(h),
            (double)hist_percentile(h, 50) / 1e6, (double)hist_max(h) / 1e6);
}

/* "key":"value", or "key":null for a value nobody recorded. */
static void json_kv_known(FILE *f, const char *sep, const char *key, const char *v)
{
    if (v && v[0])
        json_kv(f, sep, key, v);
    else
        fprintf(f, "%s\"%s\":null", sep, key);
}

/* "provenance": when (the run's start, UTC) and where the report was
 * made; a merge lists each agent's machine, ", " between them. */
static void json_provenance(FILE *f, const struct result *r)
{
    char date[32] = "";
    time_t t = (time_t)r->start_epoch_s;
    struct tm tm;
    if (r->start_epoch_s > 0 && gmtime_r(&t, &tm))
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    static const struct provenance none;
    const struct provenance *p = r->prov ? r->prov : &none;
    json_kv_known(f, "\"provenance\":{", "date", date);
    json_kv_known(f, ",", "hostname", p->hostname);
    json_kv_known(f, ",", "cpu_model", p->cpu_model);
    json_kv_known(f, ",", "kernel", p->kernel);
    json_kv_known(f, ",", "loadgen", p->loadgen);
    fprintf(f, "}");
}

void report_json(const struct result *r, FILE *f)
{
    const struct stats *s = &r->st;
    const struct hist *h = &s->lat;
    json_kv(f, "{", "url", r->url);
    json_kv(f, ",", "server", r->server);
    json_kv(f, ",", "host", r->host);
    fprintf(f, ",\"port\":%d", r->port);
    json_kv(f, ",", "path", r->path);
    json_kv(f, ",", "method", r->cfg->method);
    fprintf(f,
            ",\"doc_length\":%llu,\"concurrency\":%d,\"threads\":%d,\"agents\":%d,"
            "\"keepalive\":%s,\"rate\":%.10g,\"requests\":%llu,\"completed\":%llu,"
            "\"failed\":%llu,\"failed_connect\":%llu,\"failed_receive\":%llu,\"failed_send\":%llu,"
            "\"failed_timeout\":%llu,\"failed_exceptions\":%llu,\"length_mismatch\":%llu,"
            "\"non2xx\":%llu,\"keepalive_requests\":%llu,\"connections\":%llu,\"abandoned\":%llu,"
            "\"bytes_total\":%llu,\"bytes_html\":%llu,\"bytes_sent\":%llu,\"start_epoch_s\":%.3f,"
            "\"seconds\":%.6f,\"rps\":%.2f,",
            (unsigned long long)r->doc_length, r->concurrency, r->threads, r->agents ? r->agents : 1,
            r->keepalive ? "true" : "false", r->rate,
            (unsigned long long)(s->completed + stats_failed(s)),
            (unsigned long long)s->completed, (unsigned long long)stats_failed(s),
            (unsigned long long)s->err_connect, (unsigned long long)s->err_recv,
            (unsigned long long)s->err_send, (unsigned long long)s->err_timeout,
            (unsigned long long)s->err_except, (unsigned long long)s->err_length,
            (unsigned long long)s->non2xx, (unsigned long long)s->keepalive_reqs,
            (unsigned long long)s->connects, (unsigned long long)s->abandoned,
            (unsigned long long)s->bytes_total, (unsigned long long)s->bytes_body,
            (unsigned long long)s->bytes_sent, r->start_epoch_s, r->seconds, rps(r));
    if (r->agents > 1)
        fprintf(f, "\"start_skew_s\":%.6f,", r->start_skew_s);
    /* Goodput beside ab's rate (which counts every answer, 503s too): the
     * answers the run asked for, and the errors by kind. */
    uint64_t answered = stats_answered(s, r->miss_answers);
    fprintf(f,
            "\"answered\":%llu,\"goodput_rps\":%.2f,\"miss_answers\":%s,\"errors\":{"
            "\"total\":%llu,\"status_503\":%llu,\"status_5xx\":%llu,\"status_404\":%llu,"
            "\"status_4xx\":%llu,\"status_other\":%llu,\"timeouts\":%llu,\"connect\":%llu,"
            "\"receive\":%llu,\"send\":%llu,\"exceptions\":%llu",
            (unsigned long long)answered, r->seconds > 0 ? (double)answered / r->seconds : 0,
            r->miss_answers ? "true" : "false",
            (unsigned long long)(s->completed + stats_failed(s) - answered),
            (unsigned long long)s->status_503, (unsigned long long)s->status_5xx,
            (unsigned long long)(r->miss_answers ? 0 : s->status_404),
            (unsigned long long)s->status_4xx, (unsigned long long)s->status_other,
            (unsigned long long)s->err_timeout, (unsigned long long)s->err_connect,
            (unsigned long long)s->err_recv, (unsigned long long)s->err_send,
            (unsigned long long)s->err_except);
    /* The connects that failed, by errno ("ECONNREFUSED": 10). */
    if (s->err_connect) {
        fprintf(f, ",\"connect_errno\":{");
        for (int e = 0, first = 1; e < LG_ERRNOS; e++)
            if (s->connect_errno[e]) {
                const char *name = e ? strerrorname_np(e) : NULL;
                fprintf(f, "%s\"%s\":%llu", first ? "" : ",", name ? name : "other",
                        (unsigned long long)s->connect_errno[e]);
                first = 0;
            }
        fprintf(f, "}");
    }
    fprintf(f, "},");
    if (r->tls) {
        json_kv(f, "\"tls\":{", "protocol", r->tls_info);
        json_kv(f, ",", "temp_key", r->tls_tmpkey);
        json_kv(f, ",", "server_name", r->tls_sni);
        fprintf(f, ",\"handshakes\":%llu,\"resumed\":%llu},", (unsigned long long)s->handshakes,
                (unsigned long long)s->resumed);
    }
    fprintf(f,
            "\"latency_us\":{\"min\":%.1f,\"mean\":%.1f,\"stddev\":%.1f,\"p50\":%.1f,"
            "\"p90\":%.1f,\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f},",
            us(hist_min(h)), hist_mean(h) / 1000.0, hist_stddev(h) / 1000.0,
            us(hist_percentile(h, 50)), us(hist_percentile(h, 90)), us(hist_percentile(h, 99)),
            us(hist_percentile(h, 99.9)), us(hist_max(h)));
    /* The connections' opening: all_open_s is when the last of the -c
     * first opened (null when some never did). */
    const struct hist *o = &s->open;
    fprintf(f, "\"connections_open\":{\"slots\":%d,\"opened\":%llu,\"all_open_s\":",
            r->concurrency, (unsigned long long)s->slots_opened);
    if (s->slots_opened >= (uint64_t)r->concurrency && r->concurrency > 0)
        fprintf(f, "%.6f", (double)s->last_open_ns / 1e9);
    else
        fprintf(f, "null");
    fprintf(f, ",\"open_ms\":{\"p50\":%.3f,\"p99\":%.3f,\"max\":%.3f}},",
            hist_count(o) ? (double)hist_percentile(o, 50) / 1e6 : 0.0,
            hist_count(o) ? (double)hist_percentile(o, 99) / 1e6 : 0.0,
            hist_count(o) ? (double)hist_max(o) / 1e6 : 0.0);
    fprintf(f, "\"connection_times_ms\":{");
    json_times(f, "connect", &s->connect);
    fputc(',', f);
    json_times(f, "processing", &s->processing);
    fputc(',', f);
    json_times(f, "waiting", &s->waiting);
    fputc(',', f);
    json_times(f, "total", &s->total);
    /* An interval shorter than the period (the run's last, cut by its
     * end) has no rate: null, its counts still given. */
    fprintf(f, "},\"intervals\":[");
    for (size_t i = 0; i < r->npoints; i++) {
        const struct point *p = &r->points[i];
        char rate[32] = "null";
        if (!p->partial && p->len > 0)
            snprintf(rate, sizeof rate, "%.2f", (double)p->completed / p->len);
        fprintf(f,
                "%s{\"t\":%.3f,\"len\":%.3f,\"completed\":%llu,\"failed\":%llu,\"rps\":%s,"
                "\"p50_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f}",
                i ? "," : "", p->t, p->len, (unsigned long long)p->completed,
                (unsigned long long)p->failed, rate, p->p50_us, p->p99_us, p->max_us);
    }
    fprintf(f, "],\"cpu_user_s\":%.6f,\"cpu_sys_s\":%.6f,\"cpu_us_per_req\":%.3f,", r->cpu_user,
            r->cpu_sys, cpu_us_per_req(r));
    json_provenance(f, r);
    if (r->mix) {
        fprintf(f, ",\"templates\":[");
        for (int i = 0; i < r->mix->n; i++) {
            const struct tmpl_stats *t = &r->tmpl[i];
            fprintf(f, "%s{\"weight\":%u,\"method\":", i ? "," : "", r->mix->t[i].weight);
            json_str(f, r->mix->t[i].method);
            fprintf(f, ",\"path\":");
            json_str(f, r->mix->t[i].path);
            fprintf(f,
                    ",\"completed\":%llu,\"goodput\":%llu,\"non2xx\":%llu,\"failed\":%llu,"
                    "\"goodput_rps\":%.2f,\"p50_us\":%.1f,\"p99_us\":%.1f}",
                    (unsigned long long)t->count, (unsigned long long)t->ok,
                    (unsigned long long)t->non2xx, (unsigned long long)t->failed,
                    r->seconds > 0 ? (double)t->ok / r->seconds : 0.0,
                    t->count ? us(hist_percentile(&t->lat, 50)) : 0.0,
                    t->count ? us(hist_percentile(&t->lat, 99)) : 0.0);
        }
        fputc(']', f);
    }
    fprintf(f, "}\n");
}

/* CSV: one table for runs and their intervals. The first column says which
 * a row is: "total" for a whole run, else the interval's start in seconds
 * from the run's start (its length in the seconds column). */
static void csv_header(FILE *f)
{
    fprintf(f, "interval,url,concurrency,threads,keepalive,rate,requests,completed,failed,non2xx,"
               "seconds,rps,lat_min_us,lat_mean_us,lat_p50_us,lat_p90_us,lat_p99_us,"
               "lat_p999_us,lat_max_us,cpu_user_s,cpu_sys_s,cpu_us_per_req\n");
}

static void csv_url(FILE *f, const char *url)
{
    fputc('"', f);
    for (; url && *url; url++) {
        if (*url == '"')
            fputc('"', f);
        fputc(*url, f);
    }
    fputc('"', f);
}

static void csv_row(FILE *f, const struct result *r, const char *interval,
                    const struct point *p)
{
    fprintf(f, "%s,", interval);
    csv_url(f, r->url);
    fprintf(f, ",%d,%d,%d,%.10g,", r->concurrency, r->threads, r->keepalive, r->rate);
    if (p) {
        char rate[32] = "";      /* none for an interval shorter than the period */
        if (!p->partial && p->len > 0)
            snprintf(rate, sizeof rate, "%.2f", (double)p->completed / p->len);
        fprintf(f, "%llu,%llu,%llu,,%.3f,%s,,,%.1f,,%.1f,,%.1f,,,\n",
                (unsigned long long)(p->completed + p->failed), (unsigned long long)p->completed,
                (unsigned long long)p->failed, p->len, rate, p->p50_us, p->p99_us, p->max_us);
        return;
    }
    const struct stats *s = &r->st;
    const struct hist *h = &s->lat;
    fprintf(f, "%llu,%llu,%llu,%llu,%.6f,%.2f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.6f,%.6f,%.3f\n",
            (unsigned long long)(s->completed + stats_failed(s)),
            (unsigned long long)s->completed, (unsigned long long)stats_failed(s),
            (unsigned long long)s->non2xx, r->seconds, rps(r), us(hist_min(h)),
            hist_mean(h) / 1000.0, us(hist_percentile(h, 50)), us(hist_percentile(h, 90)),
            us(hist_percentile(h, 99)), us(hist_percentile(h, 99.9)), us(hist_max(h)), r->cpu_user,
            r->cpu_sys, cpu_us_per_req(r));
}

/* Appends the run's interval rows and its total row to path ('-' is
 * stdout); the header only when the file is new or empty, so runs append
 * into one table. */
int report_csv(const struct result *r, const char *path)
{
    bool to_stdout = !strcmp(path, "-");
    struct stat sb;
    bool header = to_stdout || stat(path, &sb) != 0 || sb.st_size == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "a");
    if (!f)
        return -1;
    if (header)
        csv_header(f);
    for (size_t i = 0; i < r->npoints; i++) {
        char label[32];
        snprintf(label, sizeof label, "%g", r->points[i].t);
        csv_row(f, r, label, &r->points[i]);
    }
    csv_row(f, r, "total", NULL);
    if (to_stdout)
        return fflush(f) == 0 ? 0 : -1;
    return fclose(f) == 0 ? 0 : -1;
}

/* ab's -e: the time (ms) within which each percentage was served. */
int report_percentile_csv(const struct result *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    const struct hist *h = &r->st.total;
    fprintf(f, "Percentage served,Time in ms\n");
    for (int i = 0; i <= 100; i++)
        fprintf(f, "%d,%.3f\n", i, (double)hist_percentile(h, i) / 1e6);
    return fclose(f) == 0 ? 0 : -1;
}

void report_hgrm(const struct result *r, FILE *f)
{
    const struct hist *h = &r->st.lat;
    uint64_t n = hist_count(h), max = hist_max(h);
    fprintf(f, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
    /* HdrHistogram's percentile iterator, 5 ticks per halving distance. */
    for (double p = 0; n && p < 100;) {
        uint64_t v = hist_percentile(h, p);
        uint64_t rank = (uint64_t)ceil(p / 100 * (double)n);
        if (v >= max || rank >= n)   /* the largest value: the last row's */
            break;
        fprintf(f, "%12.3f %14.12f %10llu %14.2f\n", (double)v / 1e6, p / 100,
                (unsigned long long)(rank ? rank : 1), 100 / (100 - p));
        double halvings = floor(log2(100 / (100 - p)));
        p += 100 / (5 * pow(2, halvings + 1));
    }
    if (n)
        fprintf(f, "%12.3f %14.12f %10llu\n", (double)max / 1e6, 1.0, (unsigned long long)n);
    fprintf(f, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", hist_mean(h) / 1e6,
            hist_stddev(h) / 1e6);
    fprintf(f, "#[Max     = %12.3f, Total count    = %12llu]\n", (double)max / 1e6,
            (unsigned long long)n);
    fprintf(f, "#[Buckets = %12d, SubBuckets     = %12u]\n", HIST_OCTAVES + 1, HIST_SUB);
}

static int by_total(const void *a, const void *b)
{
    const struct sample *x = a, *y = b;
    return (x->total_us > y->total_us) - (x->total_us < y->total_us);
}

/* ab's -g: one row per request, sorted by total time as ab leaves them. */
int report_gnuplot(const struct sample *const *rows, const size_t *nrows, int nsets,
                   const char *path)
{
    size_t n = 0;
    for (int i = 0; i < nsets; i++)
        n += nrows[i];
    struct sample *all = malloc((n ? n : 1) * sizeof *all);
    FILE *f = all ? fopen(path, "w") : NULL;
    if (!f) {
        free(all);
        return -1;
    }
    size_t k = 0;
    for (int i = 0; i < nsets; i++) {
        memcpy(all + k, rows[i], nrows[i] * sizeof *all);
        k += nrows[i];
    }
    qsort(all, n, sizeof *all, by_total);
    fprintf(f, "starttime\tseconds\tctime\tdtime\tttime\twait\n");
    for (size_t i = 0; i < n; i++) {
        time_t t = (time_t)(all[i].start_ns / 1000000000u);
        struct tm tm;
        char when[64];
        localtime_r(&t, &tm);
        strftime(when, sizeof when, "%a %b %d %H:%M:%S %Y", &tm);
        long long c = ((long long)all[i].connect_us + 500) / 1000;
        long long tt = ((long long)all[i].total_us + 500) / 1000;
        long long d = ((long long)all[i].total_us - all[i].connect_us + 500) / 1000;
        long long w = ((long long)all[i].wait_us + 500) / 1000;
        fprintf(f, "%s\t%lld\t%lld\t%lld\t%lld\t%lld\n", when, (long long)t, c, d, tt, w);
    }
    free(all);
    return fclose(f) == 0 ? 0 : -1;
}
