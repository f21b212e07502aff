/* A bounded answer cache, CLOCK eviction (cache.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"

struct entry {
    uint32_t code;
    uint32_t next;                 /* the next entry of its bucket, +1 (0: none) */
    bool ref;                      /* read since the hand last passed */
    char *body;
    size_t len, size;
};

struct answer_cache {
    uint32_t cap, n, hand, mask;
    uint64_t gen;
    uint32_t *bucket;              /* first entry of each bucket, +1 (0: none) */
    struct entry e[];
};

static uint32_t bucket_of(const struct answer_cache *c, uint32_t code)
{
    return (code * 2654435761u) & c->mask;
}

struct answer_cache *cache_new(uint32_t cap)
{
    uint32_t nb = 16;
    while (nb < cap)
        nb <<= 1;
    struct answer_cache *c = calloc(1, sizeof *c + (size_t)cap * sizeof c->e[0]);
    if (!c || !(c->bucket = calloc(nb, sizeof *c->bucket))) {
        free(c);
        return NULL;
    }
    c->cap = cap;
    c->mask = nb - 1;
    return c;
}

void cache_free(struct answer_cache *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->cap; i++)
        free(c->e[i].body);
    free(c->bucket);
    free(c);
}

/* Every answer dropped (their buffers kept for reuse). */
static void empty(struct answer_cache *c, uint64_t gen)
{
    memset(c->bucket, 0, ((size_t)c->mask + 1) * sizeof *c->bucket);
    c->n = c->hand = 0;
    c->gen = gen;
}

const char *cache_get(struct answer_cache *c, uint32_t code, uint64_t gen, size_t *len)
{
    if (gen != c->gen)
        empty(c, gen);
    for (uint32_t i = c->bucket[bucket_of(c, code)]; i; i = c->e[i - 1].next) {
        struct entry *e = &c->e[i - 1];
        if (e->code == code) {
            e->ref = true;
            *len = e->len;
            return e->body;
        }
    }
    return NULL;
}

/* Entry i out of its bucket's chain. */
static void unlink_entry(struct answer_cache *c, uint32_t i)
{
    uint32_t *p = &c->bucket[bucket_of(c, c->e[i].code)];
    while (*p != i + 1)
        p = &c->e[*p - 1].next;
    *p = c->e[i].next;
}

int cache_put(struct answer_cache *c, uint32_t code, uint64_t gen, const char *body, size_t len)
{
    size_t dummy;
    if (cache_get(c, code, gen, &dummy))
        return 0;                  /* two misses of one code in flight: the first one kept it */
    /* The slot: a free one, else the first the hand finds unread since it
     * last passed. Its buffer is made big enough before anything changes,
     * so running out of memory keeps the cache as it was. */
    bool fresh = c->n < c->cap;
    uint32_t i = fresh ? c->n : c->hand;
    if (!fresh)
        while (c->e[i].ref) {               /* second chance */
            c->e[i].ref = false;
            i = (i + 1) % c->cap;
        }
    struct entry *e = &c->e[i];
    if (e->size < len) {
        char *b = realloc(e->body, len);
        if (!b)
            return -1;
        e->body = b;
        e->size = len;
    }
    if (fresh) {
        c->n++;
    } else {
        c->hand = (i + 1) % c->cap;
        unlink_entry(c, i);
    }
    memcpy(e->body, body, len);
    e->len = len;
    e->code = code;
    e->ref = false;
    uint32_t *head = &c->bucket[bucket_of(c, code)];
    e->next = *head;
    *head = i + 1;
    return 0;
}

uint32_t cache_count(const struct answer_cache *c)
{
    return c ? c->n : 0;
}
