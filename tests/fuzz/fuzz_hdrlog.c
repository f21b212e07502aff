/* Fuzz target: loadgen's HdrHistogram log reader (loadgen/hdrlog.c), what
 * `loadgen merge` reads files with. The bytes are a log; each line that
 * decodes is a histogram that must survive a round trip: encoded again
 * and decoded, it has the same counts in the same buckets. Errors must
 * name the file and line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "loadgen.h"

static void round_trip(const struct hist *h)
{
    char *b64 = hdr_encode(h);
    if (!b64)
        return;
    static struct hist back;
    hist_init(&back);
    struct zb_err err;
    if (hdr_decode(b64, strlen(b64), &back, &err) < 0 || back.count != h->count ||
        memcmp(back.bucket, h->bucket, sizeof back.bucket) != 0)
        __builtin_trap();
    free(b64);
}

int fuzz_hdrlog(const uint8_t *data, size_t size)
{
    static struct agent_log a;
    struct zb_err err;
    if (hdrlog_parse((const char *)data, size, "fuzz.hlog", &a, &err) < 0) {
        if (strncmp(err.msg, "fuzz.hlog", 9) != 0)
            __builtin_trap();
    } else {
        for (size_t k = 0; k < a.niv; k++) {
            static struct hist h;
            hist_init(&h);
            if (a.iv[k].hist) {
                if (hdr_decode(a.iv[k].hist, a.iv[k].hist_len, &h, &err) < 0 ||
                    h.count != a.iv[k].completed)
                    __builtin_trap();       /* parse decoded it once already */
                round_trip(&h);
            }
        }
        round_trip(&a.st.lat);
        agent_log_free(&a);
    }
    /* The whole input as one histogram field, too. */
    static struct hist h;
    hist_init(&h);
    if (hdr_decode((const char *)data, size, &h, &err) == 0)
        round_trip(&h);
    return 0;
}

FUZZ_ENTRY(fuzz_hdrlog)
