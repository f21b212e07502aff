/* The run's report: ab's text layout (same labels, same order, so scripts
 * written for ab still read it), then the latency table and client CPU;
 * or the same figures as one JSON object, or a CSV row. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "loadgen.h"

uint64_t result_failed(const struct stats *s)
{
    return s->err_connect + s->err_recv + s->err_send + s->err_timeout + s->err_except;
}

static double rps(const struct result *r)
{
    return r->seconds > 0 ? (double)r->st.completed / r->seconds : 0;
}

static double cpu_us_per_req(const struct result *r)
{
    return r->st.completed ? (r->cpu_user + r->cpu_sys) * 1e6 / (double)r->st.completed : 0;
}

static double us(uint64_t ns) { return (double)ns / 1000.0; }

void report_text(const struct result *r)
{
    const struct stats *s = &r->st;
    const struct config *c = r->cfg;
    uint64_t failed = result_failed(s);
    uint64_t done = s->completed;
    printf("\n\n");
    printf("Server Software:        %s\n", r->sh->server);
    printf("Server Hostname:        %s\n", r->tgt->host);
    printf("Server Port:            %d\n", r->tgt->port);
    printf("\n");
    printf("Document Path:          %s\n", r->tgt->path);
    printf("Document Length:        %llu bytes\n", (unsigned long long)r->sh->doc_length);
    printf("\n");
    printf("Concurrency Level:      %d\n", c->concurrency);
    printf("Time taken for tests:   %.3f seconds\n", r->seconds);
    printf("Complete requests:      %llu\n", (unsigned long long)done);
    printf("Failed requests:        %llu\n", (unsigned long long)failed);
    if (failed || s->err_length)
        printf("   (Connect: %llu, Receive: %llu, Length: %llu, Exceptions: %llu, Send: %llu, "
               "Timeout: %llu)\n",
               (unsigned long long)s->err_connect, (unsigned long long)s->err_recv,
               (unsigned long long)s->err_length, (unsigned long long)s->err_except,
               (unsigned long long)s->err_send, (unsigned long long)s->err_timeout);
    if (s->err_length)
        printf("   (Length: 2xx bodies unlike the first; counted complete, not failed)\n");
    if (s->non2xx)
        printf("Non-2xx responses:      %llu\n", (unsigned long long)s->non2xx);
    if (s->abandoned)
        printf("Abandoned at the end:   %llu (in flight when the time limit ran out)\n",
               (unsigned long long)s->abandoned);
    if (c->keepalive)
        printf("Keep-Alive requests:    %llu\n", (unsigned long long)s->keepalive_reqs);
    printf("Total transferred:      %llu bytes\n", (unsigned long long)s->bytes_total);
    printf("HTML transferred:       %llu bytes\n", (unsigned long long)s->bytes_body);
    printf("Requests per second:    %.2f [#/sec] (mean)\n", rps(r));
    if (done) {
        printf("Time per request:       %.3f [ms] (mean)\n",
               (double)c->concurrency * r->seconds * 1000.0 / (double)done);
        printf("Time per request:       %.3f [ms] (mean, across all concurrent requests)\n",
               r->seconds * 1000.0 / (double)done);
    }
    printf("Transfer rate:          %.2f [Kbytes/sec] received\n",
           r->seconds > 0 ? (double)s->bytes_total / 1024.0 / r->seconds : 0);
    if (c->rate > 0)
        printf("Target rate:            %.10g [#/sec] (latency from the intended send time)\n",
               c->rate);
    printf("\n");
    const struct hist *h = &s->lat;
    printf("Latency (us)      min      mean    [+/-sd]      p50      p90      p99    p99.9      max\n");
    printf("Total:      %9.0f %9.1f %10.1f %8.0f %8.0f %8.0f %8.0f %8.0f\n", us(hist_min(h)),
           hist_mean(h) / 1000.0, hist_stddev(h) / 1000.0, us(hist_percentile(h, 50)),
           us(hist_percentile(h, 90)), us(hist_percentile(h, 99)), us(hist_percentile(h, 99.9)),
           us(hist_max(h)));
    printf("\n");
    printf("Client CPU:             %.3f s user, %.3f s sys; %.2f us per request "
           "(%d thread%s, %llu connections)\n",
           r->cpu_user, r->cpu_sys, cpu_us_per_req(r), c->threads, c->threads == 1 ? "" : "s",
           (unsigned long long)s->connects);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
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

void report_json(const struct result *r)
{
    const struct stats *s = &r->st;
    const struct config *c = r->cfg;
    const struct hist *h = &s->lat;
    FILE *f = stdout;
    fprintf(f, "{\"url\":");
    json_str(f, c->url);
    fprintf(f, ",\"server\":");
    json_str(f, r->sh->server);
    fprintf(f, ",\"host\":");
    json_str(f, r->tgt->host);
    fprintf(f, ",\"port\":%d,\"path\":", r->tgt->port);
    json_str(f, r->tgt->path);
    fprintf(f,
            ",\"doc_length\":%llu,\"concurrency\":%d,\"threads\":%d,\"keepalive\":%s,"
            "\"rate\":%.10g,\"requests\":%llu,\"completed\":%llu,\"failed\":%llu,"
            "\"failed_connect\":%llu,\"failed_receive\":%llu,\"failed_send\":%llu,"
            "\"failed_timeout\":%llu,\"failed_exceptions\":%llu,\"length_mismatch\":%llu,"
            "\"non2xx\":%llu,\"keepalive_requests\":%llu,\"connections\":%llu,\"abandoned\":%llu,"
            "\"bytes_total\":%llu,\"bytes_html\":%llu,\"seconds\":%.6f,\"rps\":%.2f,",
            (unsigned long long)r->sh->doc_length, c->concurrency, c->threads,
            c->keepalive ? "true" : "false", c->rate,
            (unsigned long long)(s->completed + result_failed(s)),
            (unsigned long long)s->completed, (unsigned long long)result_failed(s),
            (unsigned long long)s->err_connect, (unsigned long long)s->err_recv,
            (unsigned long long)s->err_send, (unsigned long long)s->err_timeout,
            (unsigned long long)s->err_except, (unsigned long long)s->err_length,
            (unsigned long long)s->non2xx, (unsigned long long)s->keepalive_reqs,
            (unsigned long long)s->connects, (unsigned long long)s->abandoned,
            (unsigned long long)s->bytes_total, (unsigned long long)s->bytes_body, r->seconds,
            rps(r));
    fprintf(f,
            "\"latency_us\":{\"min\":%.1f,\"mean\":%.1f,\"stddev\":%.1f,\"p50\":%.1f,"
            "\"p90\":%.1f,\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f},",
            us(hist_min(h)), hist_mean(h) / 1000.0, hist_stddev(h) / 1000.0,
            us(hist_percentile(h, 50)), us(hist_percentile(h, 90)), us(hist_percentile(h, 99)),
            us(hist_percentile(h, 99.9)), us(hist_max(h)));
    fprintf(f, "\"cpu_user_s\":%.6f,\"cpu_sys_s\":%.6f,\"cpu_us_per_req\":%.3f}\n", r->cpu_user,
            r->cpu_sys, cpu_us_per_req(r));
}

/* One row per run; the header only when the file is new or empty, so runs
 * append into one table. */
int report_csv(const struct result *r, const char *path)
{
    const struct stats *s = &r->st;
    const struct hist *h = &s->lat;
    bool to_stdout = !strcmp(path, "-");
    struct stat sb;
    bool header = to_stdout || stat(path, &sb) != 0 || sb.st_size == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "a");
    if (!f)
        return -1;
    if (header)
        fprintf(f, "url,concurrency,threads,keepalive,rate,requests,completed,failed,non2xx,"
                   "seconds,rps,lat_min_us,lat_mean_us,lat_p50_us,lat_p90_us,lat_p99_us,"
                   "lat_p999_us,lat_max_us,cpu_user_s,cpu_sys_s,cpu_us_per_req\n");
    fprintf(f, "\"%s\",%d,%d,%d,%.10g,%llu,%llu,%llu,%llu,%.6f,%.2f,%.1f,%.1f,%.1f,%.1f,%.1f,"
               "%.1f,%.1f,%.6f,%.6f,%.3f\n",
            r->cfg->url, r->cfg->concurrency, r->cfg->threads, r->cfg->keepalive, r->cfg->rate,
            (unsigned long long)(s->completed + result_failed(s)),
            (unsigned long long)s->completed, (unsigned long long)result_failed(s),
            (unsigned long long)s->non2xx, r->seconds, rps(r), us(hist_min(h)),
            hist_mean(h) / 1000.0, us(hist_percentile(h, 50)), us(hist_percentile(h, 90)),
            us(hist_percentile(h, 99)), us(hist_percentile(h, 99.9)), us(hist_max(h)),
            r->cpu_user, r->cpu_sys, cpu_us_per_req(r));
    if (to_stdout)
        fflush(f);
    else if (fclose(f) != 0)
        return -1;
    return 0;
}
