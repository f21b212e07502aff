/* powerfs's page maps: a file's buffered 4 KiB pages by page index (its
 * dirty pages, and the pages fsync-eio left cached but unwritten). Open
 * addressing with linear probing: a map holds a few pages to some ten
 * thousands, looked up at every read and write. */
#include <errno.h>
#include <stdlib.h>

#include "powerfs.h"

static size_t home(uint64_t page, size_t mask)
{
    return (size_t)((page * 0x9e3779b97f4a7c15ull) >> 17) & mask;
}

unsigned char **pagemap_slot(const struct pagemap *m, uint64_t page)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = home(page, mask);; i = (i + 1) & mask) {
        if (m->keys[i] == page + 1)
            return &m->pages[i];
        if (!m->keys[i])
            return NULL;
    }
}

/* The map in `cap` slots (a power of two, more than count). */
static int rehash(struct pagemap *m, size_t cap)
{
    uint64_t *keys = calloc(cap, sizeof *keys);
    unsigned char **pages = calloc(cap, sizeof *pages);
    if (!keys || !pages) {
        free(keys);
        free(pages);
        return -ENOMEM;
    }
    for (size_t j = 0; j < m->cap; j++) {
        if (!m->keys[j])
            continue;
        size_t i = home(m->keys[j] - 1, cap - 1);
        while (keys[i])
            i = (i + 1) & (cap - 1);
        keys[i] = m->keys[j];
        pages[i] = m->pages[j];
    }
    free(m->keys);
    free(m->pages);
    m->keys = keys;
    m->pages = pages;
    m->cap = cap;
    return 0;
}

int pagemap_put(struct pagemap *m, uint64_t page, unsigned char *data)
{
    if ((m->count + 1) * 4 > m->cap * 3) {
        int e = rehash(m, m->cap ? m->cap * 2 : 64);
        if (e)
            return e;
    }
    size_t mask = m->cap - 1;
    size_t i = home(page, mask);
    while (m->keys[i])
        i = (i + 1) & mask;
    m->keys[i] = page + 1;
    m->pages[i] = data;
    m->count++;
    return 0;
}

/* Empties slot i and moves the entries after it in its run back, so that
 * every lookup still finds its key (linear probing's deletion). */
static void remove_at(struct pagemap *m, size_t i)
{
    size_t mask = m->cap - 1;
    m->keys[i] = 0;
    m->pages[i] = NULL;
    m->count--;
    for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
        size_t h = home(m->keys[j] - 1, mask);
        /* The entry at j may move to the hole at i unless its home lies
         * cyclically in (i, j]. */
        bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (stays)
            continue;
        m->keys[i] = m->keys[j];
        m->pages[i] = m->pages[j];
        m->keys[j] = 0;
        m->pages[j] = NULL;
        i = j;
    }
}

unsigned char *pagemap_take(struct pagemap *m, uint64_t page)
{
    unsigned char **slot = pagemap_slot(m, page);
    if (!slot)
        return NULL;
    unsigned char *data = *slot;
    remove_at(m, (size_t)(slot - m->pages));
    return data;
}

void pagemap_drop_from(struct pagemap *m, uint64_t first)
{
    if (first == 0) {
        for (size_t i = 0; i < m->cap; i++)
            free(m->pages[i]);
        free(m->keys);
        free(m->pages);
        *m = (struct pagemap){ 0 };
        return;
    }
    for (size_t i = 0; i < m->cap;) {
        if (m->keys[i] && m->keys[i] - 1 >= first) {
            free(m->pages[i]);
            remove_at(m, i);    /* slot i may hold a moved entry now: look again */
        } else {
            i++;
        }
    }
}
