/* powerfs: a FUSE file system that forgets what was not fsynced when the
 * power is cut (LazyFS's model, as Jepsen uses it; docs/CRASH.md).
 *
 *   powerfs [OPTIONS] BACKING MOUNTPOINT   mount BACKING at MOUNTPOINT
 *   powerfs --cut MOUNTPOINT               cut the power: drop every write
 *                                          not fsynced since, unmount
 *   powerfs --sync MOUNTPOINT              write every file's buffered data
 *                                          to BACKING (sync(1) for powerfs)
 *
 * Every call passes through to the BACKING directory, except the data of
 * regular files: what is written (write, truncate, fallocate that grows a
 * file, O_TRUNC) stays in this process's memory, a map of 4 KiB pages per
 * file (per inode: hard links and renames share it), until fsync or
 * fdatasync of that file writes it to BACKING. Reads see the buffered data
 * (the writer sees its own writes) over BACKING's. The cut (SIGUSR1, or
 * `powerfs --cut`, which sets the xattr user.powerfs to "cut" on the mount's
 * root) makes every later call fail with EIO, stops any fsync half way as a
 * power cut would, forgets the buffers and unmounts: BACKING then holds only
 * what was fsynced. Metadata (create, mkdir, unlink, rename, link, chmod,
 * chown, utimes) goes to BACKING at once. A fault mode (fault.c: torn-op,
 * torn-seq, no-dir-sync, fsync-eio) changes what a cut leaves, after
 * LazyFS's faults and the crash-consistency studies. */
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "powerfs.h"

#define CONTROL_XATTR "user.powerfs"

static const char usage[] =
"usage: powerfs [OPTIONS] BACKING MOUNTPOINT\n"
"       powerfs --cut MOUNTPOINT | --sync MOUNTPOINT | --fault SPEC MOUNTPOINT\n"
"       powerfs --help | -V\n"
"\n"
"Mounts BACKING at MOUNTPOINT; the data written to regular files is kept in\n"
"memory until fsync/fdatasync of the file, and forgotten by a power cut\n"
"(docs/CRASH.md).\n"
"\n"
"Mount options:\n"
"    -f, --foreground      stay in the foreground (default: return once the\n"
"                          mount is up, the file system running behind)\n"
"    --pidfile FILE        write the file system's pid there (removed at exit)\n"
"    --log FILE            append what it says there (default: stderr in the\n"
"                          foreground, nowhere in the background)\n"
"    --sync-on-unmount     an unmount that is not a cut (fusermount3 -u,\n"
"                          SIGTERM, SIGINT) writes every buffered file first,\n"
"                          as a clean shutdown would; without it, it drops\n"
"                          them as a cut does\n"
"    --fsync-backing       fsync BACKING's file too when a file is synced\n"
"                          (default: no; BACKING's machine does not crash)\n"
"    --fault SPEC          the fault mode in force from the start (below)\n"
"    -o OPT[,OPT]          more FUSE mount options\n"
"\n"
"Control (of a running powerfs):\n"
"    --cut MOUNTPOINT      power cut: every unsynced write is lost, every\n"
"                          later call fails, the file system unmounts; waits\n"
"                          (up to 15 s) until MOUNTPOINT is unmounted\n"
"    --sync MOUNTPOINT     every buffered file written to BACKING, every name\n"
"                          made durable\n"
"    --fault SPEC MOUNTPOINT\n"
"                          the fault mode in force from now on\n"
"    SIGUSR1               the same as --cut\n"
"\n"
"Fault modes (SPEC: MODE[:VARIANT][,seed=N][,file=SUBSTR]; docs/CRASH.md):\n"
"    clear-cache           a cut loses every write not fsynced (the default)\n"
"    torn-op[:sector|:any] and the last write not synced keeps a prefix, up\n"
"                          to a 512-byte sector boundary in it, or any byte\n"
"    torn-seq              each write or size change not synced survives the\n"
"                          cut or not (a seeded draw): any subset, in order\n"
"    no-dir-sync           and a name made, removed or renamed is undone\n"
"                          unless its directory was fsynced since\n"
"    fsync-eio[:once|:always]\n"
"                          the first file fsynced from now on fails its fsync\n"
"                          with EIO, once or always; the data of a failed\n"
"                          fsync stays readable but is never written\n"
"    seed=N                the draws' seed (default 1); file=SUBSTR: torn-op\n"
"                          and fsync-eio take only files whose path holds it\n"
"                          (SUBSTR$: whose path ends in it)\n"
"\n"
"Exit status: 0 success, 1 failure, 2 usage error.\n";

/* ---- the buffered state of files ---------------------------------------- */

#define NBUCKETS 4096
static struct fstate *table[NBUCKETS];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

int rootfd = -1;
static const char *backing_dir, *mount_dir;
static bool as_root, fsync_backing;
static atomic_int cut;              /* the power is off */
static struct fuse_session *session;
static pthread_t main_thread;
static FILE *logf;

/* Counters, for the log. */
static atomic_ullong n_written, n_flushed, n_fsyncs;

void say(const char *fmt, ...)
{
    if (!logf)
        return;
    char when[32];
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    localtime_r(&tv.tv_sec, &tm);
    strftime(when, sizeof when, "%H:%M:%S", &tm);
    va_list ap;
    va_start(ap, fmt);
    flockfile(logf);
    fprintf(logf, "powerfs[%d] %s.%03d: ", (int)getpid(), when, (int)(tv.tv_usec / 1000));
    vfprintf(logf, fmt, ap);
    fputc('\n', logf);
    fflush(logf);
    funlockfile(logf);
    va_end(ap);
}

static unsigned bucket_of(dev_t dev, ino_t ino)
{
    uint64_t h = ((uint64_t)ino * 0x9e3779b97f4a7c15ull) ^ (uint64_t)dev;
    return (unsigned)(h >> 20) % NBUCKETS;
}

static bool dirty(const struct fstate *s)
{
    return s->dirty.count || s->size != s->synced || s->floor < s->synced;
}

/* Reads backing bytes [off, off + n) as the file has them: past floor, 0. */
static int read_backing(struct fstate *s, unsigned char *buf, size_t n, off_t off)
{
    size_t got = 0;
    if (off < s->floor) {
        size_t want = (size_t)(s->floor - off) < n ? (size_t)(s->floor - off) : n;
        while (got < want) {
            ssize_t r = pread(s->fd, buf + got, want - got, off + (off_t)got);
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                return -errno;
            }
            if (r == 0)
                break;
            got += (size_t)r;
        }
    }
    memset(buf + got, 0, n - got);
    return 0;
}

/* The page `page` as the file's readers see it: dirty, or cached by
 * fsync-eio (a ghost), or NULL (BACKING's). */
static unsigned char **cached(const struct fstate *s, uint64_t page)
{
    unsigned char **slot = pagemap_slot(&s->dirty, page);
    return slot ? slot : s->ghost.count ? pagemap_slot(&s->ghost, page) : NULL;
}

/* The dirty page `page`, made if it was not: from a ghost (a write to a
 * page whose fsync failed dirties it again, whole, as in a kernel's
 * cache), else from the backing's bytes. */
static int page_get(struct fstate *s, uint64_t page, unsigned char **out)
{
    unsigned char **slot = pagemap_slot(&s->dirty, page);
    if (slot) {
        *out = *slot;
        return 0;
    }
    unsigned char *p = s->ghost.count ? pagemap_take(&s->ghost, page) : NULL;
    int e = 0;
    if (!p) {
        if (!(p = malloc(PAGE)))
            return -ENOMEM;
        e = read_backing(s, p, PAGE, (off_t)(page * PAGE));
    }
    if (!e)
        e = pagemap_put(&s->dirty, page, p);
    if (e) {
        free(p);
        return e;
    }
    *out = p;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int full_pwrite(int fd, const unsigned char *buf, size_t n, off_t off)
{
    while (n) {
        ssize_t w = pwrite(fd, buf, n, off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        buf += w;
        n -= (size_t)w;
        off += w;
    }
    return 0;
}

/* fsync: the buffered data to the backing file, in page order; a cut in
 * between stops it there (a torn fsync, as a real one can be). Under s->lock. */
static int flush_locked(struct fstate *s)
{
    if (atomic_load(&cut))
        return -EIO;
    if (!dirty(s))
        return 0;
    /* A file torn-seq wrote ahead of its fsync is rewritten from floor on
     * (its surviving writes lie in dirty pages, which are all written). */
    if ((s->floor < s->synced || s->touched) && ftruncate(s->fd, s->floor) < 0)
        return -errno;
    s->synced = s->floor;
    uint64_t *order = malloc((s->dirty.count ? s->dirty.count : 1) * sizeof *order);
    if (!order)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < s->dirty.cap; i++)
        if (s->dirty.keys[i])
            order[n++] = s->dirty.keys[i] - 1;
    qsort(order, n, sizeof *order, cmp_u64);
    int e = 0;
    for (size_t i = 0; i < n && !e; i++) {
        if (atomic_load(&cut)) {
            e = -EIO;
            break;
        }
        off_t at = (off_t)(order[i] * PAGE);
        if (at >= s->size)
            continue;
        size_t len = s->size - at < PAGE ? (size_t)(s->size - at) : PAGE;
        e = full_pwrite(s->fd, *pagemap_slot(&s->dirty, order[i]), len, at);
        if (!e) {
            atomic_fetch_add(&n_flushed, len);
            if (at + (off_t)len > s->synced)
                s->synced = at + (off_t)len;
        }
    }
    free(order);
    if (e)
        return e;
    if (s->synced != s->size && ftruncate(s->fd, s->size) < 0)
        return -errno;
    if (fsync_backing && fdatasync(s->fd) < 0)
        return -errno;
    s->synced = s->floor = s->size;
    s->touched = false;
    pagemap_drop_from(&s->dirty, 0);
    fault_flushed(s);
    return 0;
}

/* ---- the table of states ------------------------------------------------ */

/* The state of the backing file open at fd (fstat'd into st), made if it
 * has none, with one reference more. fd is the state's now, or closed. */
static struct fstate *state_take(int fd, const struct stat *st)
{
    pthread_mutex_lock(&table_lock);
    unsigned b = bucket_of(st->st_dev, st->st_ino);
    struct fstate *s;
    for (s = table[b]; s; s = s->next)
        if (s->dev == st->st_dev && s->ino == st->st_ino)
            break;
    if (s) {
        s->refs++;
        pthread_mutex_unlock(&table_lock);
        close(fd);
        return s;
    }
    s = calloc(1, sizeof *s);
    if (!s) {
        pthread_mutex_unlock(&table_lock);
        close(fd);
        return NULL;
    }
    s->dev = st->st_dev;
    s->ino = st->st_ino;
    s->fd = fd;
    pthread_mutex_init(&s->lock, NULL);
    s->size = s->floor = s->synced = st->st_size;
    s->refs = 1;
    s->next = table[b];
    table[b] = s;
    pthread_mutex_unlock(&table_lock);
    return s;
}

/* The state of (dev, ino) with one reference more, or NULL if it has none. */
static struct fstate *state_find(dev_t dev, ino_t ino)
{
    pthread_mutex_lock(&table_lock);
    struct fstate *s;
    for (s = table[bucket_of(dev, ino)]; s; s = s->next)
        if (s->dev == dev && s->ino == ino)
            break;
    if (s)
        s->refs++;
    pthread_mutex_unlock(&table_lock);
    return s;
}

static void state_unlink_free(struct fstate *s)
{
    struct fstate **pp = &table[bucket_of(s->dev, s->ino)];
    while (*pp != s)
        pp = &(*pp)->next;
    *pp = s->next;
    pagemap_drop_from(&s->dirty, 0);
    pagemap_drop_from(&s->ghost, 0);
    fault_forget(s);
    close(s->fd);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* One reference less. A state nobody holds goes once it has nothing to
 * write, or once its file is gone (no link left: its data can never be
 * read again). Lock order: table_lock, then a state's lock. */
static void state_put(struct fstate *s)
{
    pthread_mutex_lock(&table_lock);
    if (--s->refs == 0) {
        pthread_mutex_lock(&s->lock);
        struct stat st;
        bool go = !dirty(s) || (fstat(s->fd, &st) == 0 && st.st_nlink == 0);
        pthread_mutex_unlock(&s->lock);
        if (go)
            state_unlink_free(s);
    }
    pthread_mutex_unlock(&table_lock);
}

void state_forget_if_gone(dev_t dev, ino_t ino)
{
    struct fstate *s = state_find(dev, ino);
    if (s)
        state_put(s);
}

/* ---- paths and callers -------------------------------------------------- */

const char *rel_path(const char *path)
{
    while (*path == '/')
        path++;
    return *path ? path : ".";
}

/* A new node gets its caller's owner, as it would on a local disk (the
 * file system runs as root for other users: PostgreSQL's postgres, MariaDB's
 * mysql). */
static void own(const char *path, int fd)
{
    if (!as_root)
        return;
    struct fuse_context *c = fuse_get_context();
    if (fd >= 0) {
        if (fchown(fd, c->uid, c->gid) < 0)
            say("fchown %s: %s", path, strerror(errno));
    } else if (fchownat(rootfd, rel_path(path), c->uid, c->gid, AT_SYMLINK_NOFOLLOW) < 0) {
        say("chown %s: %s", path, strerror(errno));
    }
}

#define DEAD() do { if (atomic_load(&cut)) return -EIO; } while (0)

static struct fstate *fh(struct fuse_file_info *fi)
{
    return (struct fstate *)(uintptr_t)fi->fh;
}

/* The state of a regular file by path, with a reference (state_put it). */
static int state_by_path(const char *path, struct fstate **out)
{
    int fd = openat(rootfd, rel_path(path), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && (errno == EACCES || errno == EPERM || errno == EROFS || errno == ETXTBSY))
        fd = openat(rootfd, rel_path(path), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
    }
    *out = state_take(fd, &st);
    return *out ? 0 : -ENOMEM;
}

/* Buffered truncation (O_TRUNC, truncate, ftruncate). Under s->lock. */
static int truncate_locked(struct fstate *s, off_t len)
{
    if (len < 0)
        return -EINVAL;
    if (len < s->floor)
        s->floor = len;
    s->size = len;
    /* Pages past the end go; the one the end falls in is zeroed past it. */
    struct pagemap *maps[] = { &s->dirty, &s->ghost };
    for (int m = 0; m < 2; m++) {
        pagemap_drop_from(maps[m], (uint64_t)(len + PAGE - 1) / PAGE);
        unsigned char **last = len % PAGE ? pagemap_slot(maps[m], (uint64_t)len / PAGE) : NULL;
        if (last)
            memset(*last + len % PAGE, 0, PAGE - len % PAGE);
    }
    fault_resized(s, len);
    return 0;
}

/* ---- the operations ----------------------------------------------------- */

static void *pf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    (void)conn;
    cfg->use_ino = 1;       /* SQLite tells files apart by (st_dev, st_ino) */
    cfg->hard_remove = 1;   /* an unlinked open file is gone, not .fuse_hidden */
    cfg->nullpath_ok = 1;
    cfg->kernel_cache = 0;
    return NULL;
}

static int pf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    DEAD();
    struct fstate *s = NULL;
    if (fi) {
        s = fh(fi);
        if (fstat(s->fd, st) < 0)
            return -errno;
    } else {
        if (meta_hidden(path))
            return -ENOENT;
        if (fstatat(rootfd, rel_path(path), st, AT_SYMLINK_NOFOLLOW) < 0)
            return -errno;
        if (!S_ISREG(st->st_mode))
            return 0;
        if (!(s = state_find(st->st_dev, st->st_ino)))
            return 0;
    }
    pthread_mutex_lock(&s->lock);
    if (dirty(s)) {
        st->st_size = s->size;
        blkcnt_t b = (s->size + 511) / 512;
        if (st->st_blocks < b)
            st->st_blocks = b;
    }
    pthread_mutex_unlock(&s->lock);
    if (!fi)
        state_put(s);
    return 0;
}

static int pf_readlink(const char *path, char *buf, size_t size)
{
    DEAD();
    ssize_t n = readlinkat(rootfd, rel_path(path), buf, size - 1);
    if (n < 0)
        return -errno;
    buf[n] = 0;
    return 0;
}

static int pf_mknod(const char *path, mode_t mode, dev_t rdev)
{
    DEAD();
    if (mknodat(rootfd, rel_path(path), mode, rdev) < 0)
        return -errno;
    own(path, -1);
    meta_done(META_CREATE, path, NULL, NULL, 0, true);
    return 0;
}

static int pf_mkdir(const char *path, mode_t mode)
{
    DEAD();
    if (mkdirat(rootfd, rel_path(path), mode) < 0)
        return -errno;
    own(path, -1);
    meta_done(META_MKDIR, path, NULL, NULL, 0, true);
    return 0;
}

static int pf_unlink(const char *path)
{
    DEAD();
    struct stat st;
    bool had = fstatat(rootfd, rel_path(path), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
    unsigned long stash = meta_before_remove(path);
    int e = unlinkat(rootfd, rel_path(path), 0) < 0 ? -errno : 0;
    meta_done(META_UNLINK, path, NULL, NULL, stash, !e);
    if (!e && had)
        state_forget_if_gone(st.st_dev, st.st_ino);
    return e;
}

static int pf_rmdir(const char *path)
{
    DEAD();
    struct stat st;
    if (fstatat(rootfd, rel_path(path), &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    int e = unlinkat(rootfd, rel_path(path), AT_REMOVEDIR) < 0 ? -errno : 0;
    meta_done(META_RMDIR, path, NULL, &st, 0, !e);
    return e;
}

static int pf_symlink(const char *target, const char *path)
{
    DEAD();
    if (symlinkat(target, rootfd, rel_path(path)) < 0)
        return -errno;
    own(path, -1);
    meta_done(META_CREATE, path, NULL, NULL, 0, true);
    return 0;
}

static int pf_rename(const char *from, const char *to, unsigned int flags)
{
    DEAD();
    bool exchange = flags & RENAME_EXCHANGE;
    struct stat st;
    bool had = !exchange && fstatat(rootfd, rel_path(to), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
    unsigned long stash = exchange ? 0 : meta_before_remove(to);
    int e = renameat2(rootfd, rel_path(from), rootfd, rel_path(to), flags) < 0 ? -errno : 0;
    meta_done(exchange ? META_EXCHANGE : META_RENAME, to, from, NULL, stash, !e);
    if (!e && had)
        state_forget_if_gone(st.st_dev, st.st_ino);
    return e;
}

static int pf_link(const char *from, const char *to)
{
    DEAD();
    if (linkat(rootfd, rel_path(from), rootfd, rel_path(to), 0) < 0)
        return -errno;
    meta_done(META_CREATE, to, NULL, NULL, 0, true);
    return 0;
}

static int pf_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    DEAD();
    int r = fi ? fchmod(fh(fi)->fd, mode) : fchmodat(rootfd, rel_path(path), mode, 0);
    return r < 0 ? -errno : 0;
}

static int pf_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    DEAD();
    int r = fi ? fchown(fh(fi)->fd, uid, gid)
               : fchownat(rootfd, rel_path(path), uid, gid, AT_SYMLINK_NOFOLLOW);
    return r < 0 ? -errno : 0;
}

static int pf_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    DEAD();
    struct fstate *s = NULL;
    if (fi) {
        s = fh(fi);
    } else {
        int e = state_by_path(path, &s);
        if (e)
            return e;
    }
    pthread_mutex_lock(&s->lock);
    int e = atomic_load(&cut) ? -EIO : truncate_locked(s, size);
    pthread_mutex_unlock(&s->lock);
    if (!fi)
        state_put(s);
    return e;
}

/* An open file's state, which takes `path` as its name (a fault's file=);
 * O_TRUNC is a buffered truncation to 0. */
static int opened(const char *path, int fd, struct fuse_file_info *fi)
{
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    struct fstate *s = state_take(fd, &st);
    if (!s)
        return -ENOMEM;
    pthread_mutex_lock(&s->lock);
    if (path && (!s->name || strcmp(s->name, path))) {
        free(s->name);
        s->name = strdup(path);
    }
    if (fi->flags & O_TRUNC)
        truncate_locked(s, 0);
    pthread_mutex_unlock(&s->lock);
    fi->fh = (uintptr_t)s;
    fi->direct_io = 0;
    /* The kernel's cached pages are dropped at each open (keep_cache 0):
     * it caches each name of a file apart (the high-level API gives hard
     * links inodes of their own), and a file written through one name is
     * then read afresh through the other. */
    fi->keep_cache = 0;
    return 0;
}

static int pf_open(const char *path, struct fuse_file_info *fi)
{
    DEAD();
    /* One backing fd per inode, read-write when it can be: the kernel
     * already checked the caller's access mode (default_permissions). */
    int fd = openat(rootfd, rel_path(path), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && (errno == EACCES || errno == EPERM || errno == EROFS || errno == ETXTBSY))
        fd = openat(rootfd, rel_path(path), (fi->flags & O_ACCMODE) | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    return opened(path, fd, fi);
}

static int pf_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    DEAD();
    int fd = openat(rootfd, rel_path(path), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd >= 0) {
        own(path, fd);
    } else if (errno == EEXIST && !(fi->flags & O_EXCL)) {
        return pf_open(path, fi);
    } else {
        return -errno;
    }
    meta_done(META_CREATE, path, NULL, NULL, 0, true);
    return opened(path, fd, fi);
}

static int pf_read(const char *path, char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
    (void)path;
    DEAD();
    struct fstate *s = fh(fi);
    pthread_mutex_lock(&s->lock);
    int e = 0;
    size_t n = 0;
    if (atomic_load(&cut)) {
        e = -EIO;
    } else if (off < s->size) {
        n = (size_t)(s->size - off) < size ? (size_t)(s->size - off) : size;
        off_t pos = off, end = off + (off_t)n;
        while (pos < end && !e) {
            uint64_t page = (uint64_t)pos / PAGE;
            unsigned char **slot = cached(s, page);
            off_t piece = (off_t)((page + 1) * PAGE);
            if (slot) {
                if (piece > end)
                    piece = end;
                memcpy(buf + (pos - off), *slot + pos % PAGE, (size_t)(piece - pos));
            } else {
                /* The clean pages from here on, in one read. */
                while (piece < end && !cached(s, (uint64_t)piece / PAGE))
                    piece += PAGE;
                if (piece > end)
                    piece = end;
                e = read_backing(s, (unsigned char *)buf + (pos - off), (size_t)(piece - pos), pos);
            }
            pos = piece;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return e ? e : (int)n;
}

static int pf_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)path;
    DEAD();
    struct fstate *s = fh(fi);
    pthread_mutex_lock(&s->lock);
    int e = atomic_load(&cut) ? -EIO : 0;
    off_t pos = off, end = off + (off_t)size;
    while (pos < end && !e) {
        uint64_t page = (uint64_t)pos / PAGE;
        off_t piece = (off_t)((page + 1) * PAGE);
        if (piece > end)
            piece = end;
        unsigned char *p;
        e = page_get(s, page, &p);
        if (!e)
            memcpy(p + pos % PAGE, buf + (pos - off), (size_t)(piece - pos));
        pos = piece;
    }
    if (!e && end > s->size)
        s->size = end;
    if (!e)
        fault_written(s, buf, size, off);
    pthread_mutex_unlock(&s->lock);
    if (e)
        return e;
    atomic_fetch_add(&n_written, size);
    return (int)size;
}

static int pf_statfs(const char *path, struct statvfs *st)
{
    (void)path;
    DEAD();
    return fstatvfs(rootfd, st) < 0 ? -errno : 0;
}

static int pf_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    state_put(fh(fi));
    return 0;
}

static int pf_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    (void)datasync;
    DEAD();
    struct fstate *s = fh(fi);
    pthread_mutex_lock(&s->lock);
    int e = fault_fsync(s);
    if (!e)
        e = flush_locked(s);
    pthread_mutex_unlock(&s->lock);
    atomic_fetch_add(&n_fsyncs, 1);
    return e;
}

static int pf_fallocate(const char *path, int mode, off_t off, off_t len,
                        struct fuse_file_info *fi)
{
    (void)path;
    DEAD();
    if (mode & ~FALLOC_FL_KEEP_SIZE)
        return -EOPNOTSUPP;     /* holes, zero ranges, collapse: not here */
    if (mode & FALLOC_FL_KEEP_SIZE)
        return 0;               /* space is not modelled */
    struct fstate *s = fh(fi);
    pthread_mutex_lock(&s->lock);
    if (off + len > s->size) {
        s->size = off + len;    /* what lies past the old end reads as 0 */
        fault_resized(s, s->size);
    }
    pthread_mutex_unlock(&s->lock);
    return 0;
}

static int pf_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    DEAD();
    int r = fi ? futimens(fh(fi)->fd, tv) : utimensat(rootfd, rel_path(path), tv, AT_SYMLINK_NOFOLLOW);
    return r < 0 ? -errno : 0;
}

static int pf_opendir(const char *path, struct fuse_file_info *fi)
{
    DEAD();
    int fd = openat(rootfd, rel_path(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = -errno;
        close(fd);
        return e;
    }
    fi->fh = (uintptr_t)d;
    return 0;
}

static int pf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)path;
    (void)off;
    (void)flags;
    DEAD();
    DIR *d = (DIR *)(uintptr_t)fi->fh;
    /* The whole directory at once (offsets 0): libfuse keeps it. */
    rewinddir(d);
    struct dirent *de;
    /* The root's listing leaves out the stash (the path may be NULL here). */
    struct stat ds, rs;
    bool root = fstat(dirfd(d), &ds) == 0 && fstat(rootfd, &rs) == 0 && ds.st_ino == rs.st_ino &&
                ds.st_dev == rs.st_dev;
    char name[300];
    errno = 0;
    while ((de = readdir(d))) {
        snprintf(name, sizeof name, "/%s", de->d_name);
        if (root && meta_hidden(name))
            continue;
        struct stat st = { .st_ino = de->d_ino, .st_mode = (mode_t)DTTOIF(de->d_type) };
        if (fill(buf, de->d_name, &st, 0, 0))
            break;
    }
    return errno ? -errno : 0;
}

static int pf_releasedir(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    closedir((DIR *)(uintptr_t)fi->fh);
    return 0;
}

static int pf_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    (void)datasync;
    DEAD();
    /* Its names are in BACKING already; now they stay. */
    struct stat st;
    if (fstat(dirfd((DIR *)(uintptr_t)fi->fh), &st) < 0)
        return -errno;
    meta_dir_synced(st.st_dev, st.st_ino);
    return 0;
}

static void sync_all(void);

/* The control: user.powerfs = "cut" | "sync" | "fault SPEC" on any node of the mount. */
static int pf_setxattr(const char *path, const char *name, const char *value, size_t size,
                       int flags)
{
    (void)path;
    (void)flags;
    if (strcmp(name, CONTROL_XATTR) != 0)
        return -ENOTSUP;
    if (size == 3 && !memcmp(value, "cut", 3)) {
        power_cut("power cut (powerfs --cut)");
        return 0;
    }
    DEAD();
    if (size == 4 && !memcmp(value, "sync", 4)) {
        sync_all();
        return atomic_load(&cut) ? -EIO : 0;
    }
    if (size > 6 && size < 512 && !memcmp(value, "fault ", 6)) {
        char spec[512], err[256];
        memcpy(spec, value + 6, size - 6);
        spec[size - 6] = 0;
        if (fault_set(spec, true, err, sizeof err) < 0) {
            say("fault %s: %s", spec, err);
            return -EINVAL;
        }
        return 0;
    }
    return -EINVAL;
}

static const struct fuse_operations ops = {
    .init = pf_init,
    .getattr = pf_getattr,
    .readlink = pf_readlink,
    .mknod = pf_mknod,
    .mkdir = pf_mkdir,
    .unlink = pf_unlink,
    .rmdir = pf_rmdir,
    .symlink = pf_symlink,
    .rename = pf_rename,
    .link = pf_link,
    .chmod = pf_chmod,
    .chown = pf_chown,
    .truncate = pf_truncate,
    .open = pf_open,
    .create = pf_create,
    .read = pf_read,
    .write = pf_write,
    .statfs = pf_statfs,
    .release = pf_release,
    .fsync = pf_fsync,
    .fallocate = pf_fallocate,
    .utimens = pf_utimens,
    .opendir = pf_opendir,
    .readdir = pf_readdir,
    .releasedir = pf_releasedir,
    .fsyncdir = pf_fsyncdir,
    .setxattr = pf_setxattr,
    /* No lock or flock: the kernel keeps POSIX and flock locks itself
     * (what SQLite and PostgreSQL take). No getxattr: the kernel stops
     * asking (security.capability at every write) after one ENOSYS. */
};

/* ---- sync, cut, unmount ------------------------------------------------- */

/* Every state, with a reference each (state_put them), in *n. */
static struct fstate **all_states(size_t *n)
{
    pthread_mutex_lock(&table_lock);
    size_t count = 0;
    for (unsigned b = 0; b < NBUCKETS; b++)
        for (struct fstate *s = table[b]; s; s = s->next)
            count++;
    struct fstate **v = malloc((count ? count : 1) * sizeof *v);
    *n = 0;
    if (v)
        for (unsigned b = 0; b < NBUCKETS; b++)
            for (struct fstate *s = table[b]; s; s = s->next) {
                s->refs++;
                v[(*n)++] = s;
            }
    pthread_mutex_unlock(&table_lock);
    return v;
}

void each_state(void (*fn)(struct fstate *s, void *arg), void *arg)
{
    pthread_mutex_lock(&table_lock);
    for (unsigned b = 0; b < NBUCKETS; b++)
        for (struct fstate *s = table[b]; s; s = s->next) {
            pthread_mutex_lock(&s->lock);
            fn(s, arg);
            pthread_mutex_unlock(&s->lock);
        }
    pthread_mutex_unlock(&table_lock);
}

/* Every file's buffered data written to BACKING, every name made durable:
 * powerfs --sync, a clean unmount. A fault does not touch it (fsync-eio
 * fails fsyncs, not this). */
static void sync_all(void)
{
    size_t n;
    struct fstate **v = all_states(&n);
    if (!v)
        return;
    size_t files = 0;
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&v[i]->lock);
        if (dirty(v[i])) {
            files++;
            int e = flush_locked(v[i]);
            if (e && e != -EIO)
                say("sync: inode %ju: %s", (uintmax_t)v[i]->ino, strerror(-e));
        }
        pthread_mutex_unlock(&v[i]->lock);
        state_put(v[i]);
    }
    free(v);
    meta_all_durable();
    say("sync: %zu files written", files);
}

/* What a cut drops: files with unsynced changes, and the bytes of their
 * dirty pages. Called once the loop has ended (no call runs). */
static void count_unsynced(size_t *files, unsigned long long *bytes)
{
    *files = 0;
    *bytes = 0;
    for (unsigned b = 0; b < NBUCKETS; b++)
        for (struct fstate *s = table[b]; s; s = s->next)
            if (dirty(s)) {
                (*files)++;
                *bytes += (unsigned long long)s->dirty.count * PAGE;
            }
}

void power_cut(const char *why)
{
    if (atomic_exchange(&cut, 1))
        return;
    say("%s: every later call fails; unsynced data is dropped", why);
    if (session)
        fuse_session_exit(session);
    /* Wakes the main thread, waiting for the loop's end, to unmount. */
    pthread_kill(main_thread, SIGUSR1);
}

static void on_sigusr1(int sig)
{
    (void)sig;
    atomic_store(&cut, 1);
    if (session)
        fuse_session_exit(session);
}

/* ---- the control client ------------------------------------------------- */

static bool is_mounted(const char *mnt)
{
    char *real = realpath(mnt, NULL);
    if (!real)
        return errno == ENOTCONN;   /* a dead FUSE mount is still a mount */
    FILE *f = fopen("/proc/self/mounts", "r");
    bool found = false;
    if (f) {
        char line[8192];
        while (!found && fgets(line, sizeof line, f)) {
            char dev[4096], dir[4096];
            if (sscanf(line, "%4095s %4095s", dev, dir) == 2 && !strcmp(dir, real))
                found = true;
        }
        fclose(f);
    }
    free(real);
    return found;
}

/* The type of the mount at mnt ("fuse.powerfs"), or "" if none is there. */
static void mount_type(const char *mnt, char *type, size_t len)
{
    type[0] = 0;
    char *real = realpath(mnt, NULL);
    FILE *f = real ? fopen("/proc/self/mounts", "r") : NULL;
    if (f) {
        char line[8192];
        while (fgets(line, sizeof line, f)) {
            char dev[4096], dir[4096], t[256];
            if (sscanf(line, "%4095s %4095s %255s", dev, dir, t) == 3 && !strcmp(dir, real))
                snprintf(type, len, "%s", t);   /* the last one mounted there */
        }
        fclose(f);
    }
    free(real);
}

static int control(const char *what, const char *mnt)
{
    char type[256];
    mount_type(mnt, type, sizeof type);
    if (strcmp(type, "fuse.powerfs") != 0) {
        fprintf(stderr, "powerfs: %s %s: not a powerfs mount (%s)\n", what, mnt,
                type[0] ? type : "no mount there");
        return ZB_EXIT_FAIL;
    }
    if (setxattr(mnt, CONTROL_XATTR, what, strlen(what), 0) < 0) {
        fprintf(stderr, "powerfs: %s %s: %s%s\n", what, mnt, strerror(errno),
                errno == ENOTSUP || errno == EOPNOTSUPP ? " (not a powerfs mount?)" : "");
        return ZB_EXIT_FAIL;
    }
    if (strcmp(what, "cut"))
        return ZB_EXIT_OK;
    for (int i = 0; i < 1500; i++) {
        if (!is_mounted(mnt))
            return ZB_EXIT_OK;
        usleep(10000);
    }
    fprintf(stderr, "powerfs: cut %s: still mounted after 15 s\n", mnt);
    return ZB_EXIT_FAIL;
}

/* ---- main --------------------------------------------------------------- */

int main(int argc, char **argv)
{
    enum { OPT_CUT = 256, OPT_SYNC, OPT_PIDFILE, OPT_LOG, OPT_SYNC_UNMOUNT, OPT_FSYNC_BACKING, OPT_FAULT };
    static const struct option longopts[] = {
        { "foreground", no_argument, NULL, 'f' },
        { "pidfile", required_argument, NULL, OPT_PIDFILE },
        { "log", required_argument, NULL, OPT_LOG },
        { "sync-on-unmount", no_argument, NULL, OPT_SYNC_UNMOUNT },
        { "fsync-backing", no_argument, NULL, OPT_FSYNC_BACKING },
        { "cut", required_argument, NULL, OPT_CUT },
        { "sync", required_argument, NULL, OPT_SYNC },
        { "fault", required_argument, NULL, OPT_FAULT },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    bool foreground = false, sync_on_unmount = false;
    const char *pidfile = NULL, *logpath = NULL, *fault = NULL;
    char extra_opts[1024] = "";
    int c;
    while ((c = getopt_long(argc, argv, "fo:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': foreground = true; break;
        case 'o':
            if (strlen(extra_opts) + strlen(optarg) + 2 > sizeof extra_opts) {
                fprintf(stderr, "powerfs: -o: too long\n");
                return ZB_EXIT_USAGE;
            }
            strcat(extra_opts, ",");
            strcat(extra_opts, optarg);
            break;
        case OPT_PIDFILE: pidfile = optarg; break;
        case OPT_LOG: logpath = optarg; break;
        case OPT_SYNC_UNMOUNT: sync_on_unmount = true; break;
        case OPT_FSYNC_BACKING: fsync_backing = true; break;
        case OPT_FAULT: fault = optarg; break;
        case OPT_CUT:
            if (optind != argc) break;
            return control("cut", optarg);
        case OPT_SYNC:
            if (optind != argc) break;
            return control("sync", optarg);
        case 'h': fputs(usage, stdout); return ZB_EXIT_OK;
        case 'V': {
            char lib[64];
            snprintf(lib, sizeof lib, "libfuse %s", fuse_pkgversion());
            cli_version("powerfs", lib);
            return ZB_EXIT_OK;
        }
        default: fputs(usage, stderr); return ZB_EXIT_USAGE;
        }
    }
    char err[256];
    if (fault && fault_set(fault, false, err, sizeof err) < 0) {
        fprintf(stderr, "powerfs: --fault %s: %s\n", fault, err);
        return ZB_EXIT_USAGE;
    }
    if (fault && argc - optind == 1) {
        char what[600];
        snprintf(what, sizeof what, "fault %s", fault);
        return control(what, argv[optind]);
    }
    if (argc - optind != 2) {
        fputs(usage, stderr);
        return ZB_EXIT_USAGE;
    }
    backing_dir = argv[optind];
    mount_dir = argv[optind + 1];
    as_root = geteuid() == 0;

    if (logpath) {
        if (!(logf = fopen(logpath, "a"))) {
            fprintf(stderr, "powerfs: %s: %s\n", logpath, strerror(errno));
            return ZB_EXIT_FAIL;
        }
    } else if (foreground) {
        logf = stderr;
    }
    rootfd = open(backing_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) {
        fprintf(stderr, "powerfs: %s: %s\n", backing_dir, strerror(errno));
        return ZB_EXIT_FAIL;
    }
    /* One fd per file with buffered data or an open handle. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    umask(0);   /* the kernel applied the caller's umask already */

    /* Absolute paths: the file system runs from / (fuse_daemonize). */
    char *real_backing = realpath(backing_dir, NULL), *real_mount = realpath(mount_dir, NULL);
    if (!real_backing || !real_mount) {
        fprintf(stderr, "powerfs: %s: %s\n", real_backing ? mount_dir : backing_dir, strerror(errno));
        return ZB_EXIT_FAIL;
    }
    backing_dir = real_backing;
    mount_dir = real_mount;
    char pidpath[PATH_MAX + 2];
    if (pidfile && pidfile[0] != '/') {
        char cwd[PATH_MAX / 2];
        if (!getcwd(cwd, sizeof cwd)) {
            fprintf(stderr, "powerfs: getcwd: %s\n", strerror(errno));
            return ZB_EXIT_FAIL;
        }
        snprintf(pidpath, sizeof pidpath, "%s/%.*s", cwd, PATH_MAX / 2 - 1, pidfile);
        pidfile = pidpath;
    }
    char opts[PATH_MAX + 1200];
    /* A comma in the backing path would split the options: no name then. */
    snprintf(opts, sizeof opts, "default_permissions,fsname=powerfs%s%s,subtype=powerfs%s%s",
             strchr(backing_dir, ',') ? "" : ":", strchr(backing_dir, ',') ? "" : backing_dir,
             as_root ? ",allow_other" : "", extra_opts);
    char *fargv[] = { argv[0], "-o", opts, NULL };
    struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
    struct fuse *f = fuse_new(&args, &ops, sizeof ops, NULL);
    fuse_opt_free_args(&args);
    if (!f) {
        fprintf(stderr, "powerfs: cannot set up FUSE (options %s)\n", opts);
        return ZB_EXIT_FAIL;
    }
    if (fuse_mount(f, mount_dir) != 0) {
        fprintf(stderr, "powerfs: cannot mount %s (is /dev/fuse there? fusermount3?)\n", mount_dir);
        fuse_destroy(f);
        return ZB_EXIT_FAIL;
    }
    session = fuse_get_session(f);
    if (fuse_daemonize(foreground) != 0) {
        fuse_unmount(f);
        fuse_destroy(f);
        return ZB_EXIT_FAIL;
    }
    if (pidfile) {
        FILE *pf = fopen(pidfile, "w");
        if (pf) {
            fprintf(pf, "%d\n", (int)getpid());
            fclose(pf);
        } else {
            say("%s: %s", pidfile, strerror(errno));
        }
    }
    if (fuse_set_signal_handlers(session) != 0) {
        fuse_unmount(f);
        fuse_destroy(f);
        return ZB_EXIT_FAIL;
    }
    main_thread = pthread_self();
    struct sigaction sa = { .sa_handler = on_sigusr1 };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    say("mounted %s at %s", backing_dir, mount_dir);
    /* The mode in force (a stash a killed powerfs left is emptied). */
    if (fault_set(fault ? fault : "clear-cache", true, err, sizeof err) < 0)
        say("--fault %s: %s", fault, err);

    int r = fuse_loop_mt(f, 0);

    size_t files;
    unsigned long long bytes;
    if (!atomic_load(&cut) && sync_on_unmount) {
        sync_all();
        count_unsynced(&files, &bytes);
        say("unmounted after writing every buffered file (%zu could not be written)", files);
    } else {
        bool was_cut = atomic_exchange(&cut, 1);
        count_unsynced(&files, &bytes);
        fault_at_cut();
        say("%s: dropped %llu unsynced bytes of %zu files (written %llu, synced %llu bytes in "
            "%llu fsyncs)", was_cut ? "cut" : r == 0 ? "unmounted" : "stopped", bytes, files,
            (unsigned long long)n_written, (unsigned long long)n_flushed,
            (unsigned long long)n_fsyncs);
    }
    fuse_remove_signal_handlers(session);
    fuse_unmount(f);
    fuse_destroy(f);
    for (unsigned b = 0; b < NBUCKETS; b++)
        while (table[b])
            state_unlink_free(table[b]);
    fault_end();
    close(rootfd);
    free(real_backing);
    free(real_mount);
    if (pidfile)
        unlink(pidfile);
    if (logf && logf != stderr)
        fclose(logf);
    return ZB_EXIT_OK;
}
