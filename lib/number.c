/* A real number's one text (number.h). */
#include "number.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most significant digits a decimal can have and still be a double's
 * shortest text (17), with room to spare. */
#define SIG_MAX 40

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The shortest digits that read back as v (finite, > 0), without trailing
 * zeros, into digits; *exp10 the power of ten of the first. Returns how
 * many. glibc's printf rounds exactly, so the nearest p-digit decimal is
 * tried for p = 15, 16, 17: for a normal double, a decimal of at most 15
 * digits that reads back as it is the nearest 15-digit one (the doubles'
 * gaps are narrower than those decimals' gaps), and of two that read back
 * the nearest is the shortest algorithms' choice. A subnormal's gap is
 * wide (5e-324 is 4.94065645841247e-324), so there every p from 1. */
static int shortest_digits(double v, char digits[SIG_MAX], int *exp10)
{
    char buf[48];
    for (int p = v < DBL_MIN ? 1 : 15; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    int n = 0;
    const char *e = strchr(buf, 'e');
    for (const char *q = buf; q < e; q++)
        if (is_digit(*q))
            digits[n++] = *q;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = 0;
    *exp10 = atoi(e + 1);
    return n;
}

/* The fast way for a (>= 1e-6, < 1e15) whose shortest text has at most 15
 * digits, most data's reals (prices, coordinates): the fewest decimals p
 * with a = m / 10^p exactly in doubles (m an integer below 1e15; the
 * division is rounded as strtod rounds that decimal). Such a decimal is
 * the one of at most 15 digits that reads back as a, so the shortest.
 * Writes it positional into o and returns its length, or 0: not found
 * (printf's exact digits then). */
static int fewest_decimals(double a, char *o)
{
    static const double pow10[] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                    1e16, 1e17, 1e18, 1e19, 1e20, 1e21 };
    if (!(a >= 1e-6 && a < 1e15))
        return 0;
    for (int p = 0; p < (int)(sizeof pow10 / sizeof pow10[0]); p++) {
        double m = nearbyint(a * pow10[p]);
        if (m >= 1e15)
            return 0;
        if (m / pow10[p] != a)
            continue;
        char d[24];
        int k = snprintf(d, sizeof d, "%llu", (unsigned long long)m), n = 0;
        if (k > p) {                          /* 671, 3.25 */
            memcpy(o, d, (size_t)(k - p));
            n = k - p;
        } else {                              /* 0.000123 */
            o[n++] = '0';
        }
        if (p) {
            o[n++] = '.';
            for (int z = k; z < p; z++)
                o[n++] = '0';
            memcpy(o + n, d + (k > p ? k - p : 0), (size_t)(k < p ? k : p));
            n += k < p ? k : p;
        }
        o[n] = 0;
        return n;
    }
    return 0;
}

size_t zb_real_text(double v, char out[ZB_REAL_TEXT_MAX])
{
    if (isnan(v))
        return (size_t)snprintf(out, ZB_REAL_TEXT_MAX, "NaN");
    if (isinf(v))
        return (size_t)snprintf(out, ZB_REAL_TEXT_MAX, "%sInfinity", v < 0 ? "-" : "");
    if (v == 0)   /* -0 too: MariaDB keeps no negative zero, so no backend's answer has one */
        return (size_t)snprintf(out, ZB_REAL_TEXT_MAX, "0");
    char *o = out;
    if (v < 0)
        *o++ = '-';
    int fast = fewest_decimals(fabs(v), o);
    if (fast)
        return (size_t)(o - out + fast);
    char d[SIG_MAX];
    int e, k = shortest_digits(fabs(v), d, &e), n = e + 1;   /* n: the point after n digits */
    if (k <= n && n <= 21) {                 /* 671, 1e20 as 100000000000000000000 */
        memcpy(o, d, (size_t)k);
        memset(o + k, '0', (size_t)(n - k));
        o += n;
    } else if (0 < n && n <= 21) {           /* 3.25 */
        memcpy(o, d, (size_t)n);
        o[n] = '.';
        memcpy(o + n + 1, d + n, (size_t)(k - n));
        o += k + 1;
    } else if (-6 < n && n <= 0) {           /* 0.000001 */
        memcpy(o, "0.", 2);
        memset(o + 2, '0', (size_t)-n);
        memcpy(o + 2 - n, d, (size_t)k);
        o += 2 - n + k;
    } else {                                 /* 1e+21, 1.5e-7 */
        *o++ = d[0];
        if (k > 1) {
            *o++ = '.';
            memcpy(o, d + 1, (size_t)(k - 1));
            o += k - 1;
        }
        o += sprintf(o, "e%c%d", e < 0 ? '-' : '+', abs(e));
    }
    *o = 0;
    return (size_t)(o - out);
}

/* The number s as significant digits (no leading or trailing zero; empty
 * for zero) and the power of ten of the first. False when s has more
 * significant digits than any double's text. */
static bool decimal_form(const char *s, char sig[SIG_MAX], long *exp10)
{
    s += *s == '-' || *s == '+';
    long before = 0, first = -1;   /* digits before the point; index of the first non-zero */
    int n = 0, kept = 0;           /* digits seen; significant ones up to the last non-zero */
    bool point = false;
    for (; is_digit(*s) || (*s == '.' && !point); s++) {
        if (*s == '.') {
            point = true;
            continue;
        }
        before += !point;
        if (first < 0 && *s == '0') {
            n++;
            continue;
        }
        if (first < 0)
            first = n;
        long at = n++ - first;
        if (at < SIG_MAX - 1)
            sig[at] = *s;
        else if (*s != '0')   /* more digits than a double's text: trailing zeros aside */
            return false;
        if (*s != '0')
            kept = (int)at + 1;
    }
    sig[kept] = 0;
    long e = 0;
    if (*s == 'e' || *s == 'E') {
        errno = 0;
        e = strtol(s + 1, NULL, 10);
        if (errno || e > INT_MAX / 2 || e < -INT_MAX / 2)
            return false;
    }
    *exp10 = first < 0 ? 0 : before - first - 1 + e;
    return true;
}

bool zb_real_is_exact(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v))
        return false;
    char text[ZB_REAL_TEXT_MAX], a[SIG_MAX], b[SIG_MAX];
    long ea, eb;
    zb_real_text(v, text);
    return decimal_form(s, a, &ea) && decimal_form(text, b, &eb) && !strcmp(a, b) &&
           (!a[0] || ea == eb);
}
