/* --mix: weighted request templates. A file of lines "WEIGHT METHOD PATH"
 * ('#' starts a comment), or a YCSB preset over one backend. Each request
 * picks its template from a stream of its own (seed and request number), so
 * a seed sends the same templates whatever -c and --threads, and the key
 * draws (keys.c) stay what they are without --mix. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loadgen.h"

#define MIX_SALT 0xD6E8FEB86659FD93ull   /* the template stream apart from the keys' */

static int add(struct mix *m, unsigned weight, const char *method, size_t mlen, const char *path,
               size_t plen, const char *name, int line, struct zb_err *err)
{
    if (m->n == MIX_MAX)
        return zb_fail(err, ZB_ERR_INPUT, "%s:%d: more than %d templates", name, line, MIX_MAX);
    if (mlen == 0 || mlen >= sizeof m->t[0].method)
        return zb_fail(err, ZB_ERR_INPUT, "%s:%d: the method must be 1 to %zu letters", name,
                       line, sizeof m->t[0].method - 1);
    for (size_t i = 0; i < mlen; i++)
        if (!isupper((unsigned char)method[i]))
            return zb_fail(err, ZB_ERR_INPUT, "%s:%d: method '%.*s' is not upper-case letters",
                           name, line, (int)mlen, method);
    if (plen == 0 || path[0] != '/' || plen >= sizeof m->t[0].path)
        return zb_fail(err, ZB_ERR_INPUT, "%s:%d: the path must start with '/' (at most %zu bytes)",
                       name, line, sizeof m->t[0].path - 1);
    for (size_t i = 0; i < plen; i++)
        if ((unsigned char)path[i] <= ' ' || path[i] == 0x7f)
            return zb_fail(err, ZB_ERR_INPUT, "%s:%d: the path holds a space or control byte",
                           name, line);
    struct mix_template *t = &m->t[m->n];
    memcpy(t->method, method, mlen);
    t->method[mlen] = 0;
    memcpy(t->path, path, plen);
    t->path[plen] = 0;
    const char *slot = strstr(t->path, "{key}");
    if (slot && strstr(slot + 5, "{key}"))
        return zb_fail(err, ZB_ERR_INPUT, "%s:%d: more than one {key} slot", name, line);
    t->weight = weight;
    m->total += weight;
    m->cum[m->n] = m->total;
    m->n++;
    return 0;
}

int mix_parse(struct mix *m, const char *text, size_t n, const char *name, struct zb_err *err)
{
    memset(m, 0, sizeof *m);
    int line = 0;
    for (size_t at = 0; at < n;) {
        const char *p = text + at, *nl = memchr(p, '\n', n - at);
        const char *end = nl ? nl : text + n;
        at = (size_t)(end - text) + 1;
        line++;
        const char *hash = memchr(p, '#', (size_t)(end - p));
        if (hash)
            end = hash;
        const char *w[4];
        size_t wl[4];
        int nw = 0;
        for (const char *q = p; q < end;) {
            while (q < end && (*q == ' ' || *q == '\t' || *q == '\r'))
                q++;
            if (q == end)
                break;
            const char *s = q;
            while (q < end && *q != ' ' && *q != '\t' && *q != '\r')
                q++;
            if (nw == 4)
                break;
            w[nw] = s;
            wl[nw++] = (size_t)(q - s);
        }
        if (nw == 0)
            continue;
        if (nw != 3)
            return zb_fail(err, ZB_ERR_INPUT, "%s:%d: want WEIGHT METHOD PATH, found %d word%s",
                           name, line, nw > 3 ? 4 : nw, nw == 1 ? "" : "s");
        unsigned long weight = 0;
        for (size_t i = 0; i < wl[0]; i++) {
            if (!isdigit((unsigned char)w[0][i]) || weight > 1000000)
                return zb_fail(err, ZB_ERR_INPUT,
                               "%s:%d: the weight '%.*s' is not a whole number 1-1000000", name,
                               line, (int)wl[0], w[0]);
            weight = weight * 10 + (unsigned long)(w[0][i] - '0');
        }
        if (weight < 1 || weight > 1000000)
            return zb_fail(err, ZB_ERR_INPUT,
                           "%s:%d: the weight '%.*s' is not a whole number 1-1000000", name, line,
                           (int)wl[0], w[0]);
        if (add(m, (unsigned)weight, w[1], wl[1], w[2], wl[2], name, line, err) < 0)
            return -1;
    }
    if (m->n == 0)
        return zb_fail(err, ZB_ERR_INPUT, "%s: no templates (lines WEIGHT METHOD PATH)", name);
    return 0;
}

int mix_load(struct mix *m, const char *arg, struct zb_err *err)
{
    static const struct { const char *name; int read, write; } presets[] = {
        { "ycsb-a", 50, 50 }, { "ycsb-b", 95, 5 }, { "ycsb-c", 100, 0 }, { "ycsb-f", 50, 50 },
    };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        size_t nl = strlen(presets[i].name);
        if (strncmp(arg, presets[i].name, nl) != 0 || (arg[nl] != ':' && arg[nl] != 0))
            continue;
        const char *b = arg[nl] ? arg + nl + 1 : "";
        size_t bl = strlen(b);
        if (bl == 0 || bl > 64 || strspn(b, "abcdefghijklmnopqrstuvwxyz0123456789_-") != bl)
            return zb_fail(err, ZB_ERR_INPUT,
                           "--mix %s:BACKEND: BACKEND must be a backend's name (a-z 0-9 _ -), "
                           "e.g. %s:pg", presets[i].name, presets[i].name);
        char text[512];
        int len = snprintf(text, sizeof text, "%d GET /zip/%s/{key}\n", presets[i].read, b);
        if (presets[i].write)
            len += snprintf(text + len, sizeof text - (size_t)len, "%d POST /update/%s/{key}\n",
                            presets[i].write, b);
        return mix_parse(m, text, (size_t)len, presets[i].name, err);
    }
    FILE *f = fopen(arg, "rb");
    if (!f)
        return zb_fail(err, ZB_ERR_INPUT,
                       "--mix: '%s' is neither a file loadgen can read nor ycsb-a|b|c|f:BACKEND",
                       arg);
    char *text = malloc(1 << 20);
    size_t n = text ? fread(text, 1, 1 << 20, f) : 0;
    bool big = text && n == 1 << 20;
    fclose(f);
    if (!text)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    int rc = big ? zb_fail(err, ZB_ERR_INPUT, "%s: over 1 MiB, not a mix file", arg)
                 : mix_parse(m, text, n, arg, err);
    free(text);
    return rc;
}

int mix_pick(const struct mix *m, uint64_t seed, uint64_t idx)
{
    uint64_t s = (seed ^ MIX_SALT) + idx * 0x9E3779B97F4A7C15ull;
    uint32_t v = zb_rand_below(&s, m->total);
    int i = 0;
    while (v >= m->cum[i])
        i++;
    return i;
}
