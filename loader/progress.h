/* A progress bar on a terminal (rows, rows/s, ETA); silent when stderr is
 * not a terminal, so piped and scripted runs print only their report. */
#ifndef ZB_PROGRESS_H
#define ZB_PROGRESS_H

#include <stdbool.h>

struct progress {
    bool on;
    const char *label;
    double start, last;
};

void progress_start(struct progress *p, const char *label, bool quiet);
/* done and total in bytes (total 0: unknown), rows so far. */
void progress_update(struct progress *p, long long done, long long total, long long rows);
void progress_end(struct progress *p);

#endif
