/* The server's log lines (see log.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

void srv_log(const char *fmt, ...)
{
    char line[SRV_LOG_MAX];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, ".%03ldZ ", ts.tv_nsec / 1000000);
    size_t start = n;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - n, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    n += (size_t)m < sizeof line - n ? (size_t)m : sizeof line - n - 1;
    while (n > start && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
    for (size_t i = start; i < n; i++)
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    line[n++] = '\n';   /* n <= sizeof line - 1 before it */
    for (size_t done = 0; done < n;) {
        ssize_t w = write(STDERR_FILENO, line + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;   /* nowhere to say it */
        done += (size_t)w;
    }
}
