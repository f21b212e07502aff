/* loader --write-keys: the distinct values of a dataset's key column, one a
 * line, sorted, for `loadgen --keys FILE` (and its {key} URL slot).
 *
 * Integer keys sort as numbers, text keys bytewise. A key holding a newline
 * or a carriage return cannot be one line of the file: it is an error
 * naming file:line, and no file is written. The file is written beside its
 * final name and renamed into place, so a reader never sees half of it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keys.h"

struct key_list {
    char *text;          /* every key, each NUL-terminated */
    size_t len, cap;
    size_t *at;          /* where each starts in text */
    size_t n, capn;
    long long *num;      /* integer keys: their values, in the order of at */
};

static int add(struct key_list *k, const char *s, bool integer, struct zb_err *err)
{
    size_t n = strlen(s) + 1;
    if (k->len + n > k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 1 << 16;
        while (cap < k->len + n)
            cap *= 2;
        char *t = realloc(k->text, cap);
        if (!t)
            return zb_fail(err, ZB_ERR_SYS, "out of memory");
        k->text = t;
        k->cap = cap;
    }
    if (k->n == k->capn) {
        size_t cap = k->capn ? k->capn * 2 : 4096;
        size_t *at = realloc(k->at, cap * sizeof *at);
        long long *num = at && integer ? realloc(k->num, cap * sizeof *num) : NULL;
        if (at)
            k->at = at;
        if (num)
            k->num = num;
        if (!at || (integer && !num))
            return zb_fail(err, ZB_ERR_SYS, "out of memory");
        k->capn = cap;
    }
    if (integer)
        k->num[k->n] = strtoll(s, NULL, 10);   /* checked by the reader */
    k->at[k->n++] = k->len;
    memcpy(k->text + k->len, s, n);
    k->len += n;
    return 0;
}

/* The sort's order: qsort has no argument, so the list is a file static. */
static const struct key_list *sorting;

static int by_number(const void *a, const void *b)
{
    long long x = sorting->num[*(const size_t *)a], y = sorting->num[*(const size_t *)b];
    return x < y ? -1 : x > y;
}

static int by_bytes(const void *a, const void *b)
{
    return strcmp(sorting->text + sorting->at[*(const size_t *)a],
                  sorting->text + sorting->at[*(const size_t *)b]);
}

static int write_sorted(struct key_list *k, bool integer, const char *path, long long *written,
                        struct zb_err *err)
{
    size_t *order = malloc((k->n ? k->n : 1) * sizeof *order);
    if (!order)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    for (size_t i = 0; i < k->n; i++)
        order[i] = i;
    sorting = k;
    qsort(order, k->n, sizeof *order, integer ? by_number : by_bytes);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        free(order);
        return zb_fail(err, ZB_ERR_SYS, "%s: %s", tmp, strerror(errno));
    }
    const char *last = NULL;
    *written = 0;
    for (size_t i = 0; i < k->n; i++) {
        const char *s = k->text + k->at[order[i]];
        if (last && !strcmp(last, s))
            continue;
        fputs(s, f);
        fputc('\n', f);
        last = s;
        ++*written;
    }
    free(order);
    bool bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return zb_fail(err, ZB_ERR_SYS, "%s: %s", path, strerror(e));
    }
    return 0;
}

int keys_write(const struct dataset *d, long long limit, const char *path, long long *written,
               struct zb_err *err)
{
    struct dataset_reader *r = dataset_open(d, err);
    if (!r)
        return -1;
    bool integer = d->col[d->key].type == ZB_INTEGER;
    struct key_list k = { 0 };
    const char *const *fields;
    long long rows = 0;
    int rc = 0;
    while ((!limit || rows < limit) && (rc = dataset_next(r, &fields, err)) == 1) {
        rows++;
        const char *key = fields[d->key];   /* never NULL: the key column is NOT NULL */
        size_t bad = strcspn(key, "\r\n");
        if (key[bad]) {
            rc = zb_fail(err, ZB_ERR_INPUT, "%s:%ld: column %s: the key holds a %s, which a keys "
                         "file of one key a line cannot", d->conf->file, dataset_row_line(r),
                         d->col[d->key].name, key[bad] == '\n' ? "newline" : "carriage return");
            break;
        }
        if ((rc = add(&k, key, integer, err)) < 0)
            break;
    }
    dataset_close(r);
    if (rc >= 0)
        rc = write_sorted(&k, integer, path, written, err);
    free(k.text);
    free(k.at);
    free(k.num);
    return rc < 0 ? -1 : 0;
}
