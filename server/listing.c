/* The listing page: rows gathered, sorted, escaped, rendered (listing.h). */
#include <stdlib.h>
#include <string.h>

#include "listing.h"

/* The columns the page shows, by their place in KEN_ALL's order. */
enum { COL_ZIP = 2, COL_TOWN_KANA = 5, COL_PREF = 6, COL_CITY = 7, COL_TOWN = 8, NEEDED = 9 };
static const int kept[] = { COL_ZIP, COL_TOWN_KANA, COL_TOWN, COL_PREF, COL_CITY };
enum { K_ZIP, K_TOWN_KANA, K_TOWN, K_PREF, K_CITY, NKEPT };

struct row {
    uint32_t off[NKEPT], len[NKEPT];
};

struct listing {
    struct jbuf text;              /* the kept values, one after another */
    struct row *row;
    size_t n, cap;
};

int listing_reset(struct listing **l)
{
    if (!*l && !(*l = calloc(1, sizeof **l)))
        return -1;
    (*l)->text.n = 0;
    (*l)->text.oom = false;
    (*l)->n = 0;
    return 0;
}

void listing_free(struct listing *l)
{
    if (!l)
        return;
    free(l->text.p);
    free(l->row);
    free(l);
}

size_t listing_rows(const struct listing *l)
{
    return l ? l->n : 0;
}

int listing_add(struct listing *l, int ncols, const char *const *vals, const size_t *lens)
{
    if (ncols < NEEDED)
        return -1;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct row *r = realloc(l->row, cap * sizeof *r);
        if (!r)
            return -1;
        l->row = r;
        l->cap = cap;
    }
    struct row *r = &l->row[l->n];
    for (int k = 0; k < NKEPT; k++) {
        const char *v = vals[kept[k]] ? vals[kept[k]] : "";
        size_t len = vals[kept[k]] ? lens[kept[k]] : 0;
        r->off[k] = (uint32_t)l->text.n;
        r->len[k] = (uint32_t)len;
        jb_put(&l->text, v, len);
    }
    if (l->text.oom)
        return -1;
    l->n++;
    return 0;
}

/* qsort has no context argument in C11: the text the rows point into. */
static _Thread_local const char *sort_text;

static int compare_field(const struct row *a, const struct row *b, int k)
{
    size_t n = a->len[k] < b->len[k] ? a->len[k] : b->len[k];
    int c = memcmp(sort_text + a->off[k], sort_text + b->off[k], n);
    return c ? c : (a->len[k] > b->len[k]) - (a->len[k] < b->len[k]);
}

static int by_zip_kana_town(const void *x, const void *y)
{
    const struct row *a = x, *b = y;
    int c = compare_field(a, b, K_ZIP);
    if (!c)
        c = compare_field(a, b, K_TOWN_KANA);
    return c ? c : compare_field(a, b, K_TOWN);
}

/* s as HTML text: & < > " ' escaped as htmlspecialchars(ENT_QUOTES) does. */
static void put_escaped(struct jbuf *b, const char *s, size_t len)
{
    size_t from = 0;
    for (size_t i = 0; i < len; i++) {
        const char *e;
        switch (s[i]) {
        case '&': e = "&amp;"; break;
        case '<': e = "&lt;"; break;
        case '>': e = "&gt;"; break;
        case '"': e = "&quot;"; break;
        case '\'': e = "&#039;"; break;
        default: continue;
        }
        jb_put(b, s + from, i - from);
        jb_put(b, e, strlen(e));
        from = i + 1;
    }
    jb_put(b, s + from, len - from);
}

static void put_field(struct jbuf *b, const struct listing *l, const struct row *r, int k)
{
    put_escaped(b, l->text.p + r->off[k], r->len[k]);
}

void listing_render(struct listing *l, struct jbuf *out)
{
    sort_text = l->text.p;
    if (l->n > 1)
        qsort(l->row, l->n, sizeof *l->row, by_zip_kana_town);
    out->n = 0;
    JB_LIT(out, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
    if (l->n) {
        put_field(out, l, &l->row[0], K_PREF);
        JB_LIT(out, " ");
        put_field(out, l, &l->row[0], K_CITY);
    }
    JB_LIT(out, "</title></head><body>\n<table>\n"
                "<tr><th>zip_code</th><th>town</th><th>town_kana</th></tr>\n");
    for (size_t i = 0; i < l->n; i++) {
        const struct row *r = &l->row[i];
        JB_LIT(out, "<tr><td>");
        put_field(out, l, r, K_ZIP);
        JB_LIT(out, "</td><td>");
        put_field(out, l, r, K_TOWN);
        JB_LIT(out, "</td><td>");
        put_field(out, l, r, K_TOWN_KANA);
        JB_LIT(out, "</td></tr>\n");
    }
    JB_LIT(out, "</table>\n</body></html>\n");
}
