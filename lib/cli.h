/* Command-line parsing shared by the programs: a thin layer over APR's
 * apr_getopt_long (what ab itself uses), plus number parsing with messages
 * that name the flag. */
#ifndef ZB_CLI_H
#define ZB_CLI_H

#include <apr_getopt.h>
#include <apr_pools.h>
#include <signal.h>
#include <stdbool.h>

/* Exit codes every zipbench program uses. */
enum { ZB_EXIT_OK = 0, ZB_EXIT_FAIL = 1, ZB_EXIT_USAGE = 2 };

/* Parses a whole number in [lo, hi]; on failure prints "PROG: FLAG: ..." and
 * returns -1. */
int cli_long(const char *prog, const char *flag, const char *arg, long lo, long hi, long *out);
int cli_double(const char *prog, const char *flag, const char *arg, double lo, double hi,
               double *out);
/* The index of arg among the n names, or -1 after printing
 * "PROG: FLAG: 'ARG' is not a, b or c". */
int cli_choice(const char *prog, const char *flag, const char *arg, const char *const *names, int n);

/* apr_getopt_long's error for an unknown option or a missing argument is
 * printed by APR itself; this prints the hint that follows it and returns
 * ZB_EXIT_USAGE. */
int cli_usage_error(const char *prog);

/* The project's one version (the tree's VERSION file), which every
 * program's -V/--version prints: "PROG (zipbench) 0.9.0". extra, when not
 * NULL, follows in parentheses (the libraries a program was built with). */
extern const char zb_version[];
void cli_version(const char *prog, const char *extra);

/* For a program that stops on SIGINT or SIGTERM by sigwait: blocks both in
 * this thread and in every thread it starts afterwards (they inherit the
 * mask), ignores SIGPIPE (a peer gone shows as EPIPE), and returns the set
 * to sigwait on. */
sigset_t cli_stop_signals(void);

#endif
