/* The answers of /cached: a bounded in-process cache per loop and
 * backend, in front of the database (APCu's role in a PHP page).
 *
 * Contract: one cache per (loop, backend), touched by that loop's thread
 * only, so no locks. It keeps at most cap answers (bytes as /zip gave
 * them), evicting by CLOCK (second chance: an answer read since the hand
 * last passed stays), and is emptied when the key set it was filled from
 * is replaced (gen: the set's loaded_ns), so a reload is seen within the
 * key set's watch (about a second). Calls nothing of the server's. */
#ifndef ZB_CACHE_H
#define ZB_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct answer_cache;

/* NULL when out of memory; cap >= 1. */
struct answer_cache *cache_new(uint32_t cap);
void cache_free(struct answer_cache *c);
/* code's answer cached from the set gen, or NULL (*len set). A gen other
 * than the cache's empties it first. */
const char *cache_get(struct answer_cache *c, uint32_t code, uint64_t gen, size_t *len);
/* Keeps code's answer (a copy); -1 when out of memory (nothing kept). */
int cache_put(struct answer_cache *c, uint32_t code, uint64_t gen, const char *body, size_t len);
/* Answers kept now. */
uint32_t cache_count(const struct answer_cache *c);

#endif
