/* What several test files need: paths under the build tree, running a
 * program, writing a file. */
#ifndef ZB_TEST_HELPERS_H
#define ZB_TEST_HELPERS_H

#include <stddef.h>

/* "$ZB_BUILD/rest" (ZB_BUILD defaults to "build"), in a static buffer
 * per call site's slot: copy it if you need it long. */
const char *build_path(const char *rest);
/* The command that runs program NAME of the build: "$ZB_WRAP $ZB_BUILD/bin/NAME",
 * so `make valgrind` can run every program the tests start under valgrind. */
const char *prog(const char *name);
/* "$ZB_DATA/rest" (default "build"): where make dataset puts the real list. */
const char *data_path(const char *rest);
/* A fresh directory build/test/NAME, emptied. */
const char *test_dir(const char *name);
/* Runs a shell command, returns its exit status (or -1). Output to
 * out/outlen if given (stdout and stderr together). */
int run_cmd(char *out, size_t outlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void write_file(const char *path, const char *text);
/* The config the tests use: $ZB_CONF, or conf/zipbench.conf. */
const char *conf_path(void);

#endif
