/* loader --write-keys: a dataset's keys file for loadgen --keys. */
#ifndef ZB_LOADER_KEYS_H
#define ZB_LOADER_KEYS_H

#include <stdbool.h>

#include "dataset.h"

/* Writes each distinct value of d's key column (of its first `limit` rows;
 * 0: all) to path, one a line, sorted (integers as numbers, text
 * bytewise); *written gets how many. Returns 0, or -1 with err naming
 * file:line for a key with a newline or carriage return, or a bad row;
 * path is then left as it was. */
int keys_write(const struct dataset *d, long long limit, const char *path, long long *written,
               struct zb_err *err);

#endif
