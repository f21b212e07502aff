/* loader --csv: a CSV of one's own written as a config overlay (overlay.h).
 * The overlay gives every column with its type, as inferred from the whole
 * file, so the server and a later loader read the file the same way
 * without reading it twice. */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "names.h"
#include "overlay.h"

void overlay_name(const char *file, char *name, size_t len)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t n = strcspn(base, ".");
    if (!n)
        n = strlen(base);
    size_t o = 0;
    if (!isalpha((unsigned char)base[0]) && base[0] != '_')
        o = (size_t)snprintf(name, len, "csv_");
    for (size_t i = 0; i < n && o + 1 < len && o < 63; i++) {
        unsigned char c = (unsigned char)base[i];
        name[o++] = isalnum(c) ? (char)tolower(c) : '_';
    }
    name[o] = 0;
}

int overlay_check_name(const char *name, struct zb_err *err)
{
    bool ok = (isalpha((unsigned char)name[0]) || name[0] == '_') && strlen(name) <= 63;
    for (const char *p = name; *p && ok; p++)
        ok = isalnum((unsigned char)*p) || *p == '_';
    if (!ok)
        return zb_fail(err, ZB_ERR_INPUT, "--name: '%s' is not a dataset name (letters, digits "
                       "and _, a letter first, at most 63)", name);
    if (names_is_route(name))
        return zb_fail(err, ZB_ERR_INPUT, "--csv: the dataset would be named %s, which is the "
                       "server's route /%s/ (server --list-routes): give it another with --name "
                       "NAME", name, name);
    return 0;
}

/* The delimiter a CSV's first line suggests: "tab" or ";" when the line
 * holds some and no comma, else NULL (a comma). */
static const char *guess_delimiter(FILE *f)
{
    char *line = NULL;
    size_t cap = 0;
    const char *d = NULL;
    if (getline(&line, &cap, f) > 0 && !strchr(line, ','))
        d = strchr(line, '\t') ? "tab" : strchr(line, ';') ? ";" : NULL;
    free(line);
    return d;
}

int overlay_dataset(struct dataset_conf *dc, const char *name, const char *path, char *file,
                    size_t file_len, const char *key, struct zb_err *err)
{
    char abs[PATH_MAX];
    FILE *f = fopen(path, "r");
    if (!f || !realpath(path, abs)) {
        int e = errno;
        if (f)
            fclose(f);
        return zb_fail(err, ZB_ERR_INPUT, "--csv %s: cannot open: %s", path, strerror(e));
    }
    const char *delimiter = guess_delimiter(f);
    fclose(f);
    if (snprintf(file, file_len, "%s", abs) >= (int)file_len)
        return zb_fail(err, ZB_ERR_INPUT, "--csv %s: its path is longer than %zu bytes", abs,
                       file_len - 1);
    *dc = (struct dataset_conf){ .name = name, .file = file, .format = "csv", .header = true,
                                 .delimiter = delimiter, .key = key, .table = name,
                                 .sample_rows = 100000000 };
    return 0;
}

/* The columns as `columns =` and indented lines that go on with it, none
 * longer than the config reader takes. */
static void put_columns(FILE *f, const char *columns)
{
    fputs("columns =", f);
    size_t width = 9;
    for (const char *p = columns; *p;) {
        size_t n = strcspn(p, ",");
        bool last = !p[n];
        if (width + 1 + n + 1 > 100) {
            fputs("\n   ", f);
            width = 3;
        }
        fprintf(f, " %.*s%s", (int)n, p, last ? "" : ",");
        width += 1 + n + !last;
        p += n + !last;
        p += strspn(p, " ");
    }
    fputc('\n', f);
}

int overlay_write(const char *dir, const struct dataset *d, char *path, size_t len,
                  struct zb_err *err)
{
    const struct dataset_conf *dc = d->conf;
    char tmp[PATH_MAX + 16];
    if (snprintf(path, len, "%s/%s.conf", dir, dc->name) >= (int)len)
        return zb_fail(err, ZB_ERR_INPUT, "%s/%s.conf: path too long", dir, dc->name);
    /* The config reader takes lines of at most 199 bytes. */
    if (strlen(dc->file) > 180)
        return zb_fail(err, ZB_ERR_INPUT, "--csv %s: a path longer than 180 bytes does not fit "
                       "a config line: move the file", dc->file);
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
        *p = 0;   /* each parent of path, made if missing */
        int rc = mkdir(path, 0777);
        int e = errno;
        *p = '/';
        if (rc < 0 && e != EEXIST)
            return zb_fail(err, ZB_ERR_SYS, "%s: cannot make its directory: %s", path,
                           strerror(e));
    }
    FILE *f = fopen(tmp, "w");
    if (!f)
        return zb_fail(err, ZB_ERR_SYS, "%s: cannot write: %s", tmp, strerror(errno));
    char columns[4096];
    dataset_columns_text(d, false, columns, sizeof columns);
    fprintf(f, "; Written by loader --csv: the dataset %s, a CSV of one's own, read through\n"
               "; the include of the config. Its types were inferred from its %ld rows; edit\n"
               "; them here, or run loader --csv again, which writes this file anew. The\n"
               "; names here are the tables' columns; the answers name each field by the\n"
               "; file's header.\n",
            dc->name, d->sampled);
    fprintf(f, "[dataset %s]\nfile = %s\nformat = csv\nheader = yes\n", dc->name, dc->file);
    if (dc->delimiter)
        fprintf(f, "delimiter = %s\n", dc->delimiter);
    if (dc->encoding)
        fprintf(f, "encoding = %s\n", dc->encoding);
    fprintf(f, "key = %s\n", d->col[d->key].name);
    put_columns(f, columns);
    bool written = !ferror(f);
    written &= fclose(f) == 0;
    if (!written || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return zb_fail(err, ZB_ERR_SYS, "%s: cannot write: %s", path, strerror(e));
    }
    return 0;
}
