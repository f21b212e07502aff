/* zbconf --overlay: a config made of a base config and only what differs
 * (overlay.h tells the rules). The text is merged line by line, so the
 * base's comments stay; zbconf then reads the result as every program
 * does before it is written out. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "overlay.h"

#define MAX_SECTIONS 64
#define MAX_KEYS 64
#define MAX_LINES 512

struct key_value {
    char *key, *value;
};

/* A section of the overlay: the keys it sets, in the order given. */
struct overlay_section {
    char *name;
    char *from;                /* [NAME < FROM]: the base section it is made from; NULL: a change */
    struct key_value kv[MAX_KEYS];
    int nkv;
};

/* A section of the base: its lines below the header, and the comment
 * just above its header (lead). */
struct base_section {
    char *name;
    char *lead;
    char *line[MAX_LINES];
    int nlines;
};

struct merge {
    char *head;                /* the overlay's lines before its first section */
    struct overlay_section ov[MAX_SECTIONS];
    int nov;
    struct base_section base[MAX_SECTIONS];
    int nbase;
};

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) {
        fprintf(stderr, "zbconf: out of memory\n");
        exit(1);
    }
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static char *dup_trimmed(const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    return dup_n(s, n);
}

static char *append(char *to, const char *s)
{
    size_t a = to ? strlen(to) : 0, b = strlen(s);
    char *r = realloc(to, a + b + 2);
    if (!r) {
        fprintf(stderr, "zbconf: out of memory\n");
        exit(1);
    }
    memcpy(r + a, s, b);
    r[a + b] = '\n';
    r[a + b + 1] = 0;
    return r;
}

static bool blank(const char *line) { return line[strspn(line, " \t")] == 0; }

/* The key of a `key = value` line at column 0 (NULL for any other line),
 * and where its value starts. */
static char *key_of(const char *line, const char **value)
{
    size_t n = strspn(line, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.");
    if (!n || line[n + strspn(line + n, " \t")] != '=')
        return NULL;
    const char *eq = strchr(line, '=');
    *value = eq + 1;
    return dup_trimmed(line, (size_t)(eq - line));
}

/* A header's name: what stands between '[' and the first ']'. */
static char *header_name(const char *line)
{
    const char *end = strchr(line + 1, ']');
    return dup_n(line + 1, end ? (size_t)(end - line - 1) : strlen(line + 1));
}

static struct overlay_section *find_overlay(struct merge *m, const char *name)
{
    for (int i = 0; i < m->nov; i++)
        if (!strcmp(m->ov[i].name, name))
            return &m->ov[i];
    return NULL;
}

static struct base_section *find_base(struct merge *m, const char *name)
{
    for (int i = 0; i < m->nbase; i++)
        if (!strcmp(m->base[i].name, name))
            return &m->base[i];
    return NULL;
}

/* The value name's overlay gives key, else src's (an overlay section for
 * [NAME < SRC] takes SRC's changes too); NULL when neither gives it. */
static const char *overlay_value(struct merge *m, const char *name, const char *src,
                                 const char *key)
{
    const char *names[2] = { name, src };
    for (int n = 0; n < 2; n++) {
        struct overlay_section *o = find_overlay(m, names[n]);
        for (int i = o ? o->nkv - 1 : -1; i >= 0; i--)   /* the last one given wins */
            if (!strcmp(o->kv[i].key, key))
                return o->kv[i].value;
    }
    return NULL;
}

static int too_many(const char *what)
{
    fprintf(stderr, "zbconf: --overlay: too many %s\n", what);
    return -1;
}

static int read_lines(FILE *f, int (*each)(struct merge *, char *), struct merge *m)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while (!rc && (n = getline(&line, &cap, f)) >= 0) {
        if (n && line[n - 1] == '\n')
            line[n - 1] = 0;
        rc = each(m, line);
    }
    free(line);
    return rc;
}

static int overlay_line(struct merge *m, char *line)
{
    if (line[0] == '[') {
        if (m->nov == MAX_SECTIONS)
            return too_many("sections");
        struct overlay_section *o = &m->ov[m->nov++];
        char *name = header_name(line), *lt = strchr(name, '<');
        o->name = dup_trimmed(name, lt ? (size_t)(lt - name) : strlen(name));
        o->from = lt ? dup_trimmed(lt + 1, strlen(lt + 1)) : NULL;
        free(name);
        return 0;
    }
    if (!m->nov) {
        m->head = append(m->head, line);
        return 0;
    }
    const char *value;
    char *key = key_of(line, &value);
    if (!key)
        return 0;
    struct overlay_section *o = &m->ov[m->nov - 1];
    if (o->nkv == MAX_KEYS)
        return too_many("keys in a section");
    o->kv[o->nkv++] = (struct key_value){ key, dup_trimmed(value, strlen(value)) };
    return 0;
}

static int base_line(struct merge *m, char *line)
{
    if (line[0] == '[') {
        if (m->nbase == MAX_SECTIONS)
            return too_many("sections in the base");
        struct base_section *b = &m->base[m->nbase++];
        char *name = header_name(line);
        b->name = dup_trimmed(name, strlen(name));
        free(name);
        /* The comment just above a header belongs to that section. */
        if (m->nbase > 1) {
            struct base_section *p = b - 1;
            int j = p->nlines;
            while (j > 0 && p->line[j - 1][0] == ';')
                j--;
            if (j < p->nlines && (j == 0 || blank(p->line[j - 1]))) {
                for (int i = j; i < p->nlines; i++) {
                    b->lead = append(b->lead, p->line[i]);
                    free(p->line[i]);
                }
                p->nlines = j;
            }
        }
        return 0;
    }
    if (!m->nbase)
        return 0;              /* the base's opening comment: the overlay's replaces it */
    struct base_section *b = &m->base[m->nbase - 1];
    if (b->nlines == MAX_LINES)
        return too_many("lines in a section of the base");
    b->line[b->nlines++] = dup_n(line, strlen(line));
    return 0;
}

/* Writes section name, made from the base's section src with the
 * overlays of src and name (name's winning), then the overlay keys the
 * base section lacks, above its closing comment. */
static void emit(struct merge *m, FILE *out, const char *name, struct base_section *src)
{
    bool same = !strcmp(name, src->name);
    if (same && src->lead)
        fputs(src->lead, out);
    fprintf(out, "[%s]\n", name);
    const char *done[2 * MAX_KEYS + MAX_LINES];
    int ndone = 0;
    char **kept = calloc((size_t)src->nlines + 1, sizeof *kept);
    bool *owned = calloc((size_t)src->nlines + 1, sizeof *owned);
    if (!kept || !owned) {
        fprintf(stderr, "zbconf: out of memory\n");
        exit(1);
    }
    int n = 0;
    bool skipping = false;
    for (int j = 0; j < src->nlines; j++) {
        char *line = src->line[j];
        if (skipping && (line[0] == ' ' || line[0] == '\t') && !blank(line))
            continue;          /* the replaced key's continuation lines */
        skipping = false;
        const char *rest;
        char *key = key_of(line, &rest);
        const char *v = key ? overlay_value(m, name, src->name, key) : NULL;
        if (v) {
            done[ndone++] = key;
            skipping = true;
            if (*v) {
                size_t len = strlen(key) + strlen(v) + 4;
                kept[n] = malloc(len);
                if (!kept[n]) {
                    fprintf(stderr, "zbconf: out of memory\n");
                    exit(1);
                }
                snprintf(kept[n], len, "%s = %s", key, v);
                owned[n++] = true;
            }
            continue;
        }
        free(key);
        kept[n++] = line;
    }
    while (n > 0 && blank(kept[n - 1]))
        n--;
    int last = n;
    while (last > 0 && (kept[last - 1][0] == ';' || blank(kept[last - 1])))
        last--;
    for (int i = 0; i < last; i++)
        fprintf(out, "%s\n", kept[i]);
    const char *secs[2] = { src->name, name };
    for (int s = same ? 1 : 0; s < 2; s++) {
        struct overlay_section *o = find_overlay(m, secs[s]);
        for (int i = 0; o && i < o->nkv; i++) {
            bool seen = false;
            for (int d = 0; d < ndone && !seen; d++)
                seen = !strcmp(done[d], o->kv[i].key);
            if (seen)
                continue;
            done[ndone++] = o->kv[i].key;
            const char *v = overlay_value(m, name, src->name, o->kv[i].key);
            if (*v)
                fprintf(out, "%s = %s\n", o->kv[i].key, v);
        }
    }
    for (int i = last; i < n; i++)
        fprintf(out, "%s\n", kept[i]);
    fputs("\n", out);
    for (int i = 0; i < n; i++)
        if (owned[i])
            free(kept[i]);
    free(kept);
    free(owned);
}

int overlay_write(FILE *overlay, FILE *base, FILE *out)
{
    static struct merge m;
    if (read_lines(overlay, overlay_line, &m) < 0 || read_lines(base, base_line, &m) < 0)
        return -1;
    /* A difference to a section the base lacks would vanish unseen. */
    for (int i = 0; i < m.nov; i++) {
        const char *wanted = m.ov[i].from ? m.ov[i].from : m.ov[i].name;
        if (!find_base(&m, wanted)) {
            if (m.ov[i].from)
                fprintf(stderr, "zbconf: --overlay: [%s < %s]: no such section in the base\n",
                        m.ov[i].name, m.ov[i].from);
            else
                fprintf(stderr, "zbconf: --overlay: [%s]: no such section in the base\n",
                        m.ov[i].name);
            return -1;
        }
    }
    if (m.head)
        fputs(m.head, out);
    for (int i = 0; i < m.nbase; i++)
        emit(&m, out, m.base[i].name, &m.base[i]);
    for (int i = 0; i < m.nov; i++)
        if (m.ov[i].from)
            emit(&m, out, m.ov[i].name, find_base(&m, m.ov[i].from));
    return 0;
}
