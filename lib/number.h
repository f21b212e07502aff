/* A real number's one text: how every backend's real is answered, so the
 * same row has the same bytes whichever database it came from.
 *
 * The text is the shortest decimal that reads back as the same IEEE double
 * (what PostgreSQL 12+ and JavaScript print; SQLite's own text keeps only
 * 15 digits and would lose 0.30000000000000004), laid out as ECMAScript's
 * Number::toString lays it out: positional from 1e-6 up to below 1e21
 * (671, 0.30000000000000004, 0.000001), else one digit, a fraction if any,
 * and an exponent with its sign (1e+308, 1.5e-7); zero, negative zero too,
 * is "0" (MariaDB keeps no sign of zero's). docs/LOADER.md states it as
 * the one normalization an answer makes of a file's value. */
#ifndef ZB_NUMBER_H
#define ZB_NUMBER_H

#include <stdbool.h>
#include <stddef.h>

/* Room for any real's text and its NUL. */
#define ZB_REAL_TEXT_MAX 32

/* v's text as above into out (a finite v; NaN and the infinities are
 * written "NaN", "Infinity", "-Infinity", which are no JSON number).
 * Returns its length. */
size_t zb_real_text(double v, char out[ZB_REAL_TEXT_MAX]);

/* Whether the decimal number s (digits, an optional '-', fraction and
 * exponent: what strtod reads, nothing after it) keeps its value as a
 * real: the double nearest to it is finite and its text (zb_real_text)
 * is the same number, written perhaps otherwise ("671.00" and 671, "1E5"
 * and 100000 are; 9223372036854775808 and 1.23456789012345678, which a
 * double cannot hold, are not). */
bool zb_real_is_exact(const char *s);

#endif
