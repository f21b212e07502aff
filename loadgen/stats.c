/* A run's counts and histograms: per loop thread while it runs, summed
 * into one at the end (and by merge, over agents). */
#include <stdio.h>
#include <string.h>

#include "loadgen.h"

void stats_init(struct stats *s)
{
    memset(s, 0, sizeof *s);
    hist_init(&s->lat);
    hist_init(&s->connect);
    hist_init(&s->processing);
    hist_init(&s->waiting);
    hist_init(&s->total);
    hist_init(&s->open);
}

void stats_add(struct stats *t, const struct stats *s)
{
    t->completed += s->completed;
    t->non2xx += s->non2xx;
    t->status_404 += s->status_404;
    t->status_503 += s->status_503;
    t->status_4xx += s->status_4xx;
    t->status_5xx += s->status_5xx;
    t->status_other += s->status_other;
    t->keepalive_reqs += s->keepalive_reqs;
    t->connects += s->connects;
    t->abandoned += s->abandoned;
    t->err_connect += s->err_connect;
    t->err_recv += s->err_recv;
    t->err_send += s->err_send;
    t->err_timeout += s->err_timeout;
    t->err_except += s->err_except;
    t->err_length += s->err_length;
    for (int i = 0; i < LG_ERRNOS; i++)
        t->connect_errno[i] += s->connect_errno[i];
    t->bytes_total += s->bytes_total;
    t->bytes_body += s->bytes_body;
    t->bytes_sent += s->bytes_sent;
    t->ledger_lines += s->ledger_lines;
    t->ledger_lost += s->ledger_lost;
    t->handshakes += s->handshakes;
    t->resumed += s->resumed;
    if (s->last_done_ns > t->last_done_ns)
        t->last_done_ns = s->last_done_ns;
    t->slots_opened += s->slots_opened;
    if (s->last_open_ns > t->last_open_ns)
        t->last_open_ns = s->last_open_ns;
    hist_merge(&t->open, &s->open);
    hist_merge(&t->lat, &s->lat);
    hist_merge(&t->connect, &s->connect);
    hist_merge(&t->processing, &s->processing);
    hist_merge(&t->waiting, &s->waiting);
    hist_merge(&t->total, &s->total);
}

uint64_t stats_answered(const struct stats *s, bool miss_answers)
{
    return s->completed - s->non2xx + (miss_answers ? s->status_404 : 0);
}

uint64_t stats_failed(const struct stats *s)
{
    return s->err_connect + s->err_recv + s->err_send + s->err_timeout + s->err_except;
}

void stats_connect_errors(const struct stats *s, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    for (int e = 0; e < LG_ERRNOS && n < len; e++) {
        if (!s->connect_errno[e])
            continue;
        const char *name = e ? strerrorname_np(e) : NULL;
        n += (size_t)snprintf(buf + n, len - n, "%s%s (%s) %llu", n ? ", " : "",
                              e ? strerror(e) : "another error", name ? name : "?",
                              (unsigned long long)s->connect_errno[e]);
    }
}
