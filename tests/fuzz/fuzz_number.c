/* Fuzz target: a real's one text (lib/number.c). The input read as text:
 * a decimal zb_real_is_exact takes reads as a double whose text is exact
 * too and reads back as the same double. Its first 8 bytes read as a
 * double: its text fits ZB_REAL_TEXT_MAX and reads back as it. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "number.h"

int fuzz_number(const uint8_t *data, size_t size)
{
    char text[ZB_REAL_TEXT_MAX];
    if (size >= sizeof(double)) {
        double v;
        memcpy(&v, data, sizeof v);
        size_t n = zb_real_text(v, text);
        if (n >= ZB_REAL_TEXT_MAX || n != strlen(text) || (isfinite(v) && strtod(text, NULL) != v))
            __builtin_trap();
    }
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;
    if (zb_real_is_exact(s)) {
        double v = strtod(s, NULL);
        zb_real_text(v, text);
        if (!isfinite(v) || !zb_real_is_exact(text) || strtod(text, NULL) != v)
            __builtin_trap();
    }
    free(s);
    return 0;
}

FUZZ_ENTRY(fuzz_number)
