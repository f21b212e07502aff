/* The file system as the 2022 test used it for its records: one file per
 * record in a directory; an update rewrites the whole file, a delete
 * unlinks it. "files" writes plainly (open, write, close: the page cache
 * decides when it reaches the disk); "files_sync" writes NAME.tmp, fsyncs
 * it and renames it over NAME, the crash-safe way the test tried second
 * (the directory itself is not fsync'ed, as the test did not). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "sqlbench.h"

void sb_files_describe(struct sb_target *t)
{
    struct utsname u;
    uname(&u);
    snprintf(t->version, sizeof t->version, "files on %.30s %.50s", u.sysname, u.release);
    snprintf(t->sync_default, sizeof t->sync_default, "%s",
             t->store == SB_FILES_SYNC ? "write NAME.tmp, fsync, rename over NAME"
                                       : "write, no fsync");
}

void sb_files_drop(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char path[1400];
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

int sb_files_reset(const struct sb_opts *o, const struct sb_target *t, char *dir, size_t len,
                   struct zb_err *err)
{
    snprintf(dir, len, "%s/sqlbench-%s", o->scratch, t->bc->name);
    sb_files_drop(dir);
    if (mkdir(dir, 0700) < 0)
        return zb_fail(err, ZB_ERR_SYS, "%s: %s", dir, strerror(errno));
    return 0;
}

static int write_file(const char *path, const char *body, bool sync, struct zb_err *err)
{
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (fd < 0)
        return zb_fail(err, ZB_ERR_SYS, "%s: %s", path, strerror(errno));
    size_t n = strlen(body);
    int rc = 0;
    if (write(fd, body, n) != (ssize_t)n || (sync && fsync(fd) < 0))
        rc = zb_fail(err, ZB_ERR_SYS, "%s: %s", path, strerror(errno));
    if (close(fd) < 0 && rc == 0)
        rc = zb_fail(err, ZB_ERR_SYS, "%s: %s", path, strerror(errno));
    return rc;
}

int sb_files_put(const struct sb_target *t, const char *dir, const char *name, const char *body,
                 struct zb_err *err)
{
    char path[1200], tmp[1210];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (t->store != SB_FILES_SYNC)
        return write_file(path, body, false, err);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (write_file(tmp, body, true, err) < 0)
        return -1;
    if (rename(tmp, path) < 0)
        return zb_fail(err, ZB_ERR_SYS, "rename %s: %s", tmp, strerror(errno));
    return 0;
}

int sb_files_remove(const char *dir, const char *name, struct zb_err *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (unlink(path) < 0)
        return zb_fail(err, ZB_ERR_SYS, "%s: %s", path, strerror(errno));
    return 0;
}

long long sb_files_count(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    long long n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}
