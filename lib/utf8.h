/* UTF-8, as RFC 3629 defines it (no overlong form, no surrogate, nothing
 * past U+10FFFF): the one validator of the tree, for the CSV reader's
 * decoding and the server's answers and keys alike.
 *
 * Contract: pure functions of their bytes; s need not be NUL-terminated. */
#ifndef ZB_UTF8_H
#define ZB_UTF8_H

#include <stddef.h>

/* The length of the UTF-8 character at s[0..n), or 0 if it is not one (a
 * bad byte, or a character cut by the end of s). */
size_t utf8_char_len(const unsigned char *s, size_t n);
/* How many bytes from s on are whole UTF-8 characters (len if all are);
 * ASCII runs go fast. */
size_t utf8_valid_prefix(const char *s, size_t len);

#endif
