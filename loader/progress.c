#include "progress.h"

#include <stdio.h>
#include <unistd.h>

#include "util.h"

void progress_start(struct progress *p, const char *label, bool quiet)
{
    p->on = !quiet && isatty(STDERR_FILENO);
    p->label = label;
    p->start = p->last = zb_now_s();
}

void progress_update(struct progress *p, long long done, long long total, long long rows)
{
    if (!p->on)
        return;
    double now = zb_now_s();
    if (now - p->last < 0.2)
        return;  /* five redraws a second are plenty */
    p->last = now;
    double elapsed = now - p->start, frac = total > 0 ? (double)done / (double)total : 0;
    char bar[31];
    int fill = (int)(frac * 30);
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = 0;
    double rate = elapsed > 0 ? (double)rows / elapsed : 0;
    double eta = frac > 0 ? elapsed / frac - elapsed : 0;
    fprintf(stderr, "\r%-18s [%s] %3.0f%% %9lld rows %9.0f rows/s  ETA %5.0fs ", p->label, bar,
            frac * 100, rows, rate, eta);
    fflush(stderr);
}

void progress_end(struct progress *p)
{
    if (p->on)
        fprintf(stderr, "\r%*s\r", 100, "");
}
