#include "cli.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_long(const char *prog, const char *flag, const char *arg, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || end == arg || *end || v < lo || v > hi) {
        fprintf(stderr, "%s: %s: '%s' is not a whole number in %ld..%ld\n", prog, flag, arg, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_double(const char *prog, const char *flag, const char *arg, double lo, double hi,
               double *out)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "%s: %s: '%s' is not a number in %g..%g\n", prog, flag, arg, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_choice(const char *prog, const char *flag, const char *arg, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(arg, names[i]))
            return i;
    fprintf(stderr, "%s: %s: '%s' is not ", prog, flag, arg);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s%s", names[i], i == n - 1 ? "\n" : i == n - 2 ? " or " : ", ");
    return -1;
}

int cli_usage_error(const char *prog)
{
    fprintf(stderr, "Try '%s --help' for more information.\n", prog);
    return ZB_EXIT_USAGE;
}

sigset_t cli_stop_signals(void)
{
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    return sigs;
}

const char zb_version[] = ZB_VERSION;

void cli_version(const char *prog, const char *extra)
{
    printf("%s (zipbench) %s%s%s%s\n", prog, zb_version, extra ? " (" : "", extra ? extra : "",
           extra ? ")" : "");
}
