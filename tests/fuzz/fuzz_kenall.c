/* Fuzz target: the KEN_ALL reader on arbitrary bytes, merged and raw, in
 * each encoding. It must return rows or a clean error, never crash, leak
 * or read out of bounds. The first byte picks the options. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "kenall.h"

int fuzz_kenall(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct kenall_opts o = { .raw = data[0] & 1, .encoding = (enum kenall_encoding)((data[0] >> 1) % 3) };
    FILE *f = fmemopen((void *)(data + 1), size - 1, "rb");
    if (!f)
        return 0;
    struct zb_err err = { 0 };
    struct kenall_reader *r = kenall_open_stream(f, "fuzz.csv", &o, &err);
    if (!r)
        return 0;
    const char *const *fields;
    int rc;
    while ((rc = kenall_next(r, &fields, &err)) == 1) {
        for (int i = 0; i < KENALL_COLS; i++)
            if (!fields[i])
                __builtin_trap();  /* a row always has 15 strings */
    }
    if (rc < 0 && !strstr(err.msg, "fuzz.csv"))
        __builtin_trap();  /* every error names the file */
    kenall_close(r);
    return 0;
}

FUZZ_ENTRY(fuzz_kenall)
