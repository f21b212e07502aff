/* Fuzz target: loadgen's --mix file parser (loadgen/mix.c) on arbitrary
 * bytes. It must give templates or an error naming the file, never crash
 * or read out of bounds; every template it keeps is well formed. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "loadgen.h"

int fuzz_mix(const uint8_t *data, size_t size)
{
    static struct mix m;
    struct zb_err err = { 0 };
    if (mix_parse(&m, (const char *)data, size, "fuzz.mix", &err) < 0) {
        if (strncmp(err.msg, "fuzz.mix", 8) != 0)
            __builtin_trap();  /* every error names the file */
        return 0;
    }
    if (m.n < 1 || m.n > MIX_MAX || m.total == 0)
        __builtin_trap();
    uint32_t sum = 0;
    for (int i = 0; i < m.n; i++) {
        sum += m.t[i].weight;
        if (m.t[i].path[0] != '/' || !m.t[i].method[0] || m.cum[i] != sum)
            __builtin_trap();
    }
    for (uint64_t idx = 0; idx < 64; idx++) {
        int t = mix_pick(&m, 1, idx);
        if (t < 0 || t >= m.n)
            __builtin_trap();
    }
    return 0;
}

FUZZ_ENTRY(fuzz_mix)
