/* Fuzz target: loadgen's HTTP response parser (loadgen/resp.c) on
 * arbitrary bytes, as a keep-alive connection would bring them: responses
 * one after another, split into reads of a size the first byte picks
 * (bits 1-4; 0 = all at once), bit 0 making them answers to HEAD. It must
 * return R_MORE, R_DONE or R_ERROR and keep its books: never claim more
 * bytes than it was given, count every byte it used, never more body than
 * bytes. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "loadgen.h"

int fuzz_resp(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool head = data[0] & 1;
    size_t step = (size_t)(data[0] >> 1) & 15;
    const char *p = (const char *)data + 1;
    size_t n = size - 1, off = 0;
    static struct resp r;
    static char server[32];
    resp_reset(&r, head);
    r.server = server;
    r.server_len = sizeof server;
    size_t fed = 0;            /* bytes given to this response so far */
    while (off < n) {
        size_t k = step && n - off > step ? step : n - off, used = 0;
        int rc = resp_feed(&r, p + off, k, &used);
        if (rc == R_ERROR)
            return 0;          /* malformed: the connection is dropped */
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
        fed = 0;
        resp_reset(&r, head);  /* the next response on the connection */
        r.server = NULL;
        if (used == 0 && k)    /* done with nothing used: only after P_DONE */
            __builtin_trap();
    }
    int rc = resp_eof(&r);
    if (rc != R_DONE && rc != R_ERROR)
        __builtin_trap();
    return 0;
}

FUZZ_ENTRY(fuzz_resp)
