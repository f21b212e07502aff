/* The listing page (GET /list/BACKEND/JIS): TechEmpower's "fortunes" on
 * the postal data. The rows of one municipality are gathered as they come,
 * sorted by zip_code, then town_kana, then town (byte order), and rendered
 * as one HTML page, every value escaped as PHP's htmlspecialchars(ENT_QUOTES)
 * escapes it (docs/REQUEST-TYPES.md), so PHP's page is the same bytes.
 *
 * Contract: one listing per request, reset before its rows come, kept
 * (and its buffers grown) with the request's spare. Calls nothing of the
 * server's. */
#ifndef ZB_LISTING_H
#define ZB_LISTING_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"

struct listing;

/* *l emptied (made when NULL); -1 when out of memory. */
int  listing_reset(struct listing **l);
void listing_free(struct listing *l);
/* One postal row (KEN_ALL's 15 columns in order); -1 when out of memory. */
int  listing_add(struct listing *l, int ncols, const char *const *vals, const size_t *lens);
/* Rows gathered so far. */
size_t listing_rows(const struct listing *l);
/* The page of the rows gathered, sorted, into out (emptied first). */
void listing_render(struct listing *l, struct jbuf *out);

#endif
