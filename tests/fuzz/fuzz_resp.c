/* Fuzz target: loadgen's HTTP response parser (loadgen/resp.c) on
 * arbitrary bytes, as a keep-alive connection would bring them: responses
 * one after another, split into reads of a size the first byte picks
 * (bits 1-4; 0 = all at once), bit 0 making them answers to HEAD. It must
 * return R_MORE, R_DONE or R_ERROR and keep its books: never claim more
 * bytes than it was given, count every byte it used, never more body than
 * bytes; and reach the same verdicts as when the bytes come all at once. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "loadgen.h"

/* Feeds p[0..n) as responses one after another in reads of step bytes
 * (0: all at once), checking the books; returns a digest of the verdicts:
 * where each response ended, and how the stream did. */
static uint64_t run(const char *p, size_t n, size_t step, bool head)
{
    static struct resp r;
    static char server[32];
    uint64_t digest = 1469598103934665603ull;
    resp_reset(&r, head);
    r.server = server;
    r.server_len = sizeof server;
    size_t off = 0, fed = 0;   /* fed: bytes given to this response so far */
    while (off < n) {
        size_t k = step && n - off > step ? step : n - off, used = 0;
        int rc = resp_feed(&r, p + off, k, &used);
        if (rc == R_ERROR)
            return (digest ^ 0xe77) * 1099511628211ull;   /* the connection is dropped */
        if (rc == R_MORE) {
            if (used != k)
                __builtin_trap();
            fed += k;
            off += k;
            continue;
        }
        if (rc != R_DONE || used > k || r.total != fed + used || r.body > r.total)
            __builtin_trap();
        off += used;
        digest = (digest ^ off) * 1099511628211ull;
        fed = 0;
        resp_reset(&r, head);  /* the next response on the connection */
        r.server = NULL;
        if (used == 0 && k)    /* done with nothing used: only after P_DONE */
            __builtin_trap();
    }
    int rc = resp_eof(&r);
    if (rc != R_DONE && rc != R_ERROR)
        __builtin_trap();
    return (digest ^ (uint64_t)rc) * 1099511628211ull;
}

int fuzz_resp(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool head = data[0] & 1;
    size_t step = (size_t)(data[0] >> 1) & 15;
    const char *p = (const char *)data + 1;
    /* How the bytes were split into reads changes no verdict (a head's
     * size limit once did). */
    if (run(p, size - 1, step, head) != run(p, size - 1, 0, head))
        __builtin_trap();
    return 0;
}

FUZZ_ENTRY(fuzz_resp)
