/* Each fuzz target is a function fuzz_NAME(data, size). Built with
 * -DFUZZ_LIBFUZZER (make fuzz) it becomes libFuzzer's entry point; in the
 * test runner the same function replays the saved corpus, so every input
 * that ever crashed stays a regression test. */
#ifndef ZB_FUZZ_H
#define ZB_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int fuzz_kenall(const uint8_t *data, size_t size);
int fuzz_csv(const uint8_t *data, size_t size);
/* The config file (lib/conf.c). */
int fuzz_conf(const uint8_t *data, size_t size);
/* Starts the server's HTTP daemon in-process at first call (fuzz_http.c). */
int fuzz_http(const uint8_t *data, size_t size);
/* loadgen's response parser, and its HdrHistogram log reader. */
int fuzz_resp(const uint8_t *data, size_t size);
int fuzz_hdrlog(const uint8_t *data, size_t size);
int fuzz_mix(const uint8_t *data, size_t size);
/* A real's one text and which decimals keep their value (lib/number.c). */
int fuzz_number(const uint8_t *data, size_t size);

#ifdef FUZZ_LIBFUZZER
#define FUZZ_ENTRY(fn) \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fn(data, size); }
#else
#define FUZZ_ENTRY(fn)
#endif

#endif
