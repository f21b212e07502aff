/* The key file and the request bytes. Requests are formatted once, split
 * at the {key} slot; each request is then two memcpy's and the key, into
 * the connection's own buffer, so the hot path allocates nothing. */
#include <apr_base64.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "loadgen.h"
#include "util.h"

#define SLOT "{key}"
#define MISS_POOL 4096

/* A set of the file's keys, only to prove generated misses absent. */
struct set { uint32_t *slot; uint32_t mask; const struct keys *k; };

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static int set_has(const struct set *s, const char *p, size_t n)
{
    for (uint32_t i = (uint32_t)fnv(p, n) & s->mask;; i = (i + 1) & s->mask) {
        uint32_t v = s->slot[i];
        if (!v)
            return 0;
        if (s->k->len[v - 1] == n && !memcmp(s->k->key[v - 1], p, n))
            return 1;
    }
}

static int set_build(struct set *s, const struct keys *k)
{
    uint32_t size = 16;
    while (size < k->n * 2u)
        size <<= 1;
    s->slot = calloc(size, sizeof *s->slot);
    if (!s->slot)
        return -1;
    s->mask = size - 1;
    s->k = k;
    for (uint32_t j = 0; j < k->n; j++) {
        uint32_t i = (uint32_t)fnv(k->key[j], k->len[j]) & s->mask;
        while (s->slot[i])
            i = (i + 1) & s->mask;
        s->slot[i] = j + 1;
    }
    return 0;
}

/* RFC 3986's unreserved characters: the only bytes a key is sent as; any
 * other is percent-encoded, so a key can never end the request line, add a
 * header (a bare CR or LF), start a query or fragment, or leave its path
 * segment ('/', '?', '#'). */
static bool unreserved(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_' || c == '~';
}

/* Percent-encodes each key of key[0..n) that holds another byte, into one
 * new buffer (*store; NULL when no key needed it), and points the key
 * there. -1 when out of memory. */
static int encode_keys(char **key, uint32_t *len, uint32_t n, char **store)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t size = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t extra = 0;
        for (uint32_t j = 0; j < len[i]; j++)
            extra += unreserved((unsigned char)key[i][j]) ? 0 : 2;
        if (extra)
            size += len[i] + extra + 1;
    }
    *store = NULL;
    if (!size)
        return 0;
    char *out = *store = malloc(size);
    if (!out)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        /* A key sent as it is stays where it is: the buffer holds only
         * the encoded ones, so nothing of another key is written into it. */
        uint32_t j = 0;
        while (j < len[i] && unreserved((unsigned char)key[i][j]))
            j++;
        if (j == len[i])
            continue;
        char *start = out;
        for (j = 0; j < len[i]; j++) {
            unsigned char c = (unsigned char)key[i][j];
            if (unreserved(c)) {
                *out++ = (char)c;
            } else {
                *out++ = '%';
                *out++ = hex[c >> 4];
                *out++ = hex[c & 15];
            }
        }
        *out++ = 0;
        key[i] = start;
        len[i] = (uint32_t)(out - start - 1);
    }
    return 0;
}

/* The longest key or miss as sent. */
static size_t longest(const struct keys *k)
{
    size_t m = 0;
    for (uint32_t i = 0; i < k->n; i++)
        m = k->len[i] > m ? k->len[i] : m;
    for (uint32_t i = 0; i < k->nmiss; i++)
        m = k->miss_len[i] > m ? k->miss_len[i] : m;
    return m;
}

/* Encodes the keys and misses as they will be sent (after the misses were
 * proved absent from the keys as written). */
static int keys_encode(struct keys *k, struct zb_err *err)
{
    if (encode_keys(k->key, k->len, k->n, &k->key_text) < 0 ||
        (k->nmiss && encode_keys(k->miss, k->miss_len, k->nmiss, &k->miss_text) < 0)) {
        zb_fail(err, ZB_ERR_SYS, "--keys: out of memory");
        return -1;
    }
    k->maxlen = longest(k);
    return 0;
}

/* A key shaped like a real one (digits stay digits, letters letters), so a
 * 7-digit postal code becomes another 7-digit code; retried until absent. */
static int make_miss(const struct keys *k, const struct set *s, uint64_t *rng, char *out,
                     size_t *outlen)
{
    for (int tries = 0; tries < 200; tries++) {
        uint32_t j = zb_rand_below(rng, k->n);
        size_t n = k->len[j];
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)k->key[j][i];
            if (isdigit(c))
                out[i] = (char)('0' + zb_rand_below(rng, 10));
            else if (islower(c))
                out[i] = (char)('a' + zb_rand_below(rng, 26));
            else if (isupper(c))
                out[i] = (char)('A' + zb_rand_below(rng, 26));
            else
                out[i] = (char)c;
        }
        if (tries >= 100)               /* the shape is full: lengthen it */
            out[n++] = (char)('0' + zb_rand_below(rng, 10));
        if (!set_has(s, out, n)) {
            *outlen = n;
            return 0;
        }
    }
    return -1;
}

int keys_load(struct keys *k, const char *path, double miss, uint64_t seed,
              const struct dist *dist, struct zb_err *err)
{
    memset(k, 0, sizeof *k);
    FILE *f = fopen(path, "rb");
    if (!f) {
        zb_fail(err, ZB_ERR_INPUT, "--keys: cannot open '%s'", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    k->text = malloc((size_t)size + 1);
    if (size < 0 || !k->text || fread(k->text, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        zb_fail(err, ZB_ERR_INPUT, "--keys: cannot read '%s'", path);
        return -1;
    }
    fclose(f);
    k->text[size] = 0;
    uint32_t cap = 0;
    for (char *p = k->text, *end = k->text + size; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *e = nl ? nl : end;
        char *next = nl ? nl + 1 : end;
        if (e > p && e[-1] == '\r')
            e--;
        *e = 0;
        if (e > p) {
            if (k->n == cap) {
                cap = cap ? cap * 2 : 1024;
                k->key = realloc(k->key, cap * sizeof *k->key);
                k->len = realloc(k->len, cap * sizeof *k->len);
                if (!k->key || !k->len) {
                    zb_fail(err, ZB_ERR_SYS, "--keys: out of memory");
                    return -1;
                }
            }
            k->key[k->n] = p;
            k->len[k->n] = (uint32_t)(e - p);
            if ((size_t)(e - p) > k->maxlen)
                k->maxlen = (size_t)(e - p);
            k->n++;
        }
        p = next;
    }
    if (!k->n) {
        zb_fail(err, ZB_ERR_INPUT, "--keys: '%s' holds no keys", path);
        return -1;
    }
    if (dist) {
        k->dist = *dist;
        if (dist_prepare(&k->dist, k->n) < 0) {
            zb_fail(err, ZB_ERR_SYS, "--dist: out of memory");
            return -1;
        }
    }
    if (miss <= 0)
        return keys_encode(k, err);

    struct set s;
    if (set_build(&s, k) < 0) {
        zb_fail(err, ZB_ERR_SYS, "--keys: out of memory");
        return -1;
    }
    uint64_t rng = seed ^ 0x6d697373ull;        /* its own stream: "miss" */
    k->miss = calloc(MISS_POOL, sizeof *k->miss);
    k->miss_len = calloc(MISS_POOL, sizeof *k->miss_len);
    char *pool = malloc(MISS_POOL * (k->maxlen + 2));
    if (!k->miss || !k->miss_len || !pool) {
        free(s.slot);
        free(pool);
        zb_fail(err, ZB_ERR_SYS, "--keys: out of memory");
        return -1;
    }
    for (uint32_t i = 0; i < MISS_POOL; i++) {
        char *out = pool + i * (k->maxlen + 2);
        size_t n;
        if (make_miss(k, &s, &rng, out, &n) < 0)
            break;
        out[n] = 0;
        k->miss[i] = out;
        k->miss_len[i] = (uint32_t)n;
        k->nmiss++;
    }
    free(s.slot);
    if (!k->nmiss) {
        free(pool);
        zb_fail(err, ZB_ERR_INPUT, "--miss: cannot make a key absent from '%s'", path);
        return -1;
    }
    k->miss_pool = pool;
    return keys_encode(k, err);
}

void keys_free(struct keys *k)
{
    dist_free(&k->dist);
    free(k->miss_pool);
    free(k->miss_text);
    free(k->key_text);
    free(k->miss);
    free(k->miss_len);
    free(k->key);
    free(k->len);
    free(k->text);
    memset(k, 0, sizeof *k);
}

/* Does the user give this header himself? Then ours is left out, as ab. */
static int user_has(const struct config *cfg, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < cfg->nheaders; i++)
        if (!strncasecmp(cfg->headers[i], name, n) && cfg->headers[i][n] == ':')
            return 1;
    return 0;
}

static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return -1;
        if ((size_t)n < *cap - *len) {
            *len += (size_t)n;
            return 0;
        }
        *cap = (*cap + (size_t)n) * 2;
        char *nb = realloc(*buf, *cap);
        if (!nb)
            return -1;
        *buf = nb;
    }
}

/* "Name: Basic base64(user:password)", as ab's -A and -P. */
static int append_basic(char **buf, size_t *len, size_t *cap, const char *name,
                        const char *userpass)
{
    while (*userpass == ' ' || *userpass == '\t')
        userpass++;
    int n = (int)strlen(userpass);
    char *enc = malloc((size_t)apr_base64_encode_len(n));
    if (!enc)
        return -1;
    apr_base64_encode(enc, userpass, n);
    int rc = append(buf, len, cap, "%s: Basic %s\r\n", name, enc);
    free(enc);
    return rc;
}

int request_build(struct request *r, const struct config *cfg, const struct target *t,
                  const struct keys *k, struct zb_err *err)
{
    memset(r, 0, sizeof *r);
    const char *slot = strstr(t->path, SLOT);
    if (slot && !k) {
        zb_fail(err, ZB_ERR_INPUT, "the URL has a {key} slot but no --keys FILE was given");
        return -1;
    }
    if (!slot && k) {
        zb_fail(err, ZB_ERR_INPUT, "--keys needs a {key} slot in the URL, e.g. /zip/pg/{key}");
        return -1;
    }
    if (slot && strstr(slot + strlen(SLOT), SLOT)) {
        zb_fail(err, ZB_ERR_INPUT, "the URL may hold only one {key} slot");
        return -1;
    }
    size_t cap = 512, len = 0;
    char *buf = malloc(cap);
    int bad = !buf;
    int pathpre = slot ? (int)(slot - t->path) : (int)strlen(t->path);
    bool v6 = strchr(t->host, ':') != NULL;
    char port[8] = "";
    if (t->port != (t->tls ? 443 : 80))
        snprintf(port, sizeof port, ":%d", t->port);
    /* Through a proxy (-X) the request line holds the absolute URL. */
    if (cfg->proxy)
        bad = bad || append(&buf, &len, &cap, "%s %s://%s%s%s%s%.*s", cfg->method,
                            t->tls ? "https" : "http", v6 ? "[" : "", t->host, v6 ? "]" : "",
                            port, pathpre, t->path) < 0;
    else
        bad = bad || append(&buf, &len, &cap, "%s %.*s", cfg->method, pathpre, t->path) < 0;
    size_t split = len;
    bad = bad || append(&buf, &len, &cap, "%s HTTP/1.1\r\n", slot ? slot + strlen(SLOT) : "") < 0;
    if (!user_has(cfg, "Host"))
        bad = bad || append(&buf, &len, &cap, "Host: %s%s%s%s\r\n", v6 ? "[" : "", t->host,
                            v6 ? "]" : "", port) < 0;
    if (!user_has(cfg, "User-Agent"))
        bad = bad || append(&buf, &len, &cap, "User-Agent: loadgen/%s\r\n", zb_version) < 0;
    if (!user_has(cfg, "Accept"))
        bad = bad || append(&buf, &len, &cap, "Accept: */*\r\n") < 0;
    if (!cfg->keepalive && !user_has(cfg, "Connection"))
        bad = bad || append(&buf, &len, &cap, "Connection: close\r\n") < 0;
    if (cfg->cookie[0])
        bad = bad || append(&buf, &len, &cap, "Cookie: %s\r\n", cfg->cookie) < 0;
    if (cfg->auth)
        bad = bad || append_basic(&buf, &len, &cap, "Authorization", cfg->auth) < 0;
    if (cfg->proxy_auth)
        bad = bad || append_basic(&buf, &len, &cap, "Proxy-Authorization", cfg->proxy_auth) < 0;
    if (cfg->body_file)
        bad = bad || append(&buf, &len, &cap, "Content-Length: %zu\r\nContent-Type: %s\r\n",
                            cfg->body_len, cfg->content_type) < 0;
    for (int i = 0; i < cfg->nheaders; i++)
        bad = bad || append(&buf, &len, &cap, "%s\r\n", cfg->headers[i]) < 0;
    bad = bad || append(&buf, &len, &cap, "\r\n") < 0;
    if (bad) {
        free(buf);
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        return -1;
    }
    r->pre = buf;
    r->has_slot = slot != NULL;
    if (slot) {
        r->prelen = split;
        r->post = buf + split;
        r->postlen = len - split;
        r->maxlen = len + k->maxlen;
    } else {
        r->prelen = len;
        r->post = buf + len;
        r->maxlen = len;
    }
    r->body = cfg->body;
    r->body_len = cfg->body_len;
    return 0;
}

void request_free(struct request *r)
{
    free(r->pre);
    memset(r, 0, sizeof *r);
}

size_t request_for(const struct request *r, const struct keys *k, uint64_t seed,
                   uint64_t miss_threshold, uint64_t idx, char *buf, const char **out)
{
    if (!r->has_slot) {
        *out = r->pre;
        return r->prelen;
    }
    /* Request idx takes draw idx+1 of the splitmix64 stream from seed. */
    uint64_t s = seed + idx * 0x9E3779B97F4A7C15ull;
    uint64_t v = zb_rand(&s);
    const char *key;
    size_t kl;
    if ((v & 0xffffffffu) < miss_threshold && k->nmiss) {
        uint32_t j = zb_rand_below(&s, k->nmiss);
        key = k->miss[j];
        kl = k->miss_len[j];
    } else {
        /* Uniform from v's high half, as before --dist: a seed's uniform
         * sequence stays what it was. */
        uint32_t j = k->dist.perm ? dist_draw(&k->dist, &s)
                                  : (uint32_t)(((v >> 32) * (uint64_t)k->n) >> 32);
        key = k->key[j];
        kl = k->len[j];
    }
    memcpy(buf, r->pre, r->prelen);
    memcpy(buf + r->prelen, key, kl);
    memcpy(buf + r->prelen + kl, r->post, r->postlen);
    *out = buf;
    return r->prelen + kl + r->postlen;
}
