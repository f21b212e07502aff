/* Small helpers every part uses: an error carrier, a clock, a PRNG. */
#ifndef ZB_UTIL_H
#define ZB_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <time.h>

/* In a function whose last named parameter is fmt (printf-style, the
 * arguments follow as ...): the text it asks for, into the char array
 * buf, cut to fit. */
#define FORMAT_INTO(buf, fmt)                                                                      \
    do {                                                                                           \
        va_list format_ap_;                                                                        \
        va_start(format_ap_, fmt);                                                                 \
        vsnprintf(buf, sizeof buf, fmt, format_ap_);                                               \
        va_end(format_ap_);                                                                        \
    } while (0)

/* What went wrong, and of which kind: the server maps ZB_ERR_CONN to 503
 * and drops the connection; ZB_ERR_TIMEOUT (no answer within the backend's
 * query_timeout_ms, connection given up) too, but does not retry it;
 * ZB_ERR_REFUSED is a connect the database turned down for good (nothing
 * listens, no socket file, authentication failed, shutting down or
 * starting up): the backend is down, while a connect that is merely slow
 * or turned away for load ("too many clients": ZB_ERR_CONN) is not;
 * ZB_ERR_STALE is a prepared statement the table changed under (a reload
 * swapped it): prepare again and run it once more;
 * ZB_ERR_BUSY is a lock conflict the database reported (SQLite busy or
 * locked, a deadlock or lock wait timeout): the statement may simply be
 * tried again, the connection goes on (503 in the server); everything else
 * is the caller's fault or data. */
enum zb_err_kind { ZB_OK = 0, ZB_ERR_INPUT, ZB_ERR_SQL, ZB_ERR_CONN, ZB_ERR_SYS, ZB_ERR_TIMEOUT,
                   ZB_ERR_BUSY, ZB_ERR_REFUSED, ZB_ERR_STALE };

struct zb_err {
    enum zb_err_kind kind;
    char msg[512];
    /* The row a database error (ZB_ERR_SQL) is about, 1-based in the order
     * the rows were given (to one statement, or to a whole bulk load: see
     * backend.h); 0 if none or unknown. The loader turns it into the file's
     * line. */
    long long row;
    /* More than 1: the error is about one of rows row..row+row_span-1, a
     * statement of several rows whose database did not say which. */
    long long row_span;
};

/* Fills err (if not NULL, row 0) and returns -1, so callers can `return zb_fail(...)`. */
int zb_fail(struct zb_err *err, enum zb_err_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The one JSON string writer. zb_json_quote writes s[0..len) as a JSON
 * string (quoted; '"', '\\' and control characters escaped; other bytes,
 * UTF-8 as stored, as they are) into out, which must hold
 * ZB_JSON_QUOTED_MAX(len) bytes, and returns the bytes written (no NUL). */
#define ZB_JSON_QUOTED_MAX(len) ((len) * 6 + 2)
size_t zb_json_quote(char *out, const char *s, size_t len);
/* The same written to f (NULL as ""), and to stdout. */
void zb_json_fputs(FILE *f, const char *s);
void zb_json_string(const char *s);

static inline uint64_t zb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline double zb_now_s(void) { return (double)zb_now_ns() / 1e9; }

/* splitmix64: tiny, fast, and the same sequence on every machine for a seed. */
static inline uint64_t zb_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n) without modulo bias worth caring about for n < 2^32. */
static inline uint32_t zb_rand_below(uint64_t *state, uint32_t n)
{
    return (uint32_t)(((zb_rand(state) >> 32) * (uint64_t)n) >> 32);
}

/* Uniform in [0, 1). */
static inline double zb_rand_unit(uint64_t *state)
{
    return (double)(zb_rand(state) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
