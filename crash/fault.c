/* powerfs's fault modes (docs/CRASH.md "Fault modes"): what a power cut
 * leaves on BACKING beyond clear-cache's "exactly what was fsynced", after
 * LazyFS's faults (torn-op, torn-seq) and the crash-consistency studies
 * (ALICE, CrashMonkey: a name not made durable by an fsync of its
 * directory; Rebello et al., ATC 2020: an fsync that fails, after which
 * the kernel marks the pages clean). One mode is in force at a time, set
 * at mount (--fault) or at any moment (powerfs --fault SPEC MNT); each
 * draws from a seed of its own, so a run can be made again.
 *
 *   clear-cache      every write not fsynced is lost (the default)
 *   torn-op[:sector|:any]
 *                    as clear-cache, but the last write not synced keeps
 *                    a prefix: up to a 512-byte sector boundary inside it,
 *                    or up to any byte; with at=N, the N-th write (to a
 *                    file=) from the moment it is set cuts the power
 *                    itself: that write is the one torn
 *   torn-seq         each write (and size change) not synced survives or
 *                    not, drawn when it is made: any subset of the writes
 *                    since each file's last fsync, in their order
 *   no-dir-sync      as clear-cache, and a name made, removed or renamed
 *                    is undone unless its directory was fsynced since
 *   fsync-eio[:once|:always]
 *                    from the moment it is set, the first file fsynced
 *                    (file=: whose name holds SUBSTR) fails its fsync with
 *                    EIO, once or every time; what that fsync should have
 *                    written stays readable but is never written: a later
 *                    fsync succeeds without it, and a cut loses it
 *
 * Options: ,seed=N (default 1), ,file=SUBSTR (torn-op, fsync-eio: only
 * files whose path holds SUBSTR; SUBSTR$: whose path ends in it), ,at=N
 * (torn-op). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "powerfs.h"
#include "util.h"

#define SECTOR 512
#define STASH ".powerfs-stash"
#define META_MAX 65536           /* no-dir-sync's log: past it, the oldest counts as durable */

enum mode { CLEAR_CACHE, TORN_OP, TORN_SEQ, NO_DIR_SYNC, FSYNC_EIO };

/* A fault's settings: made whole, then published; never changed or freed
 * once published (a few per run), so a call may read the one it loaded. */
struct fault_conf {
    enum mode mode;
    bool any;                    /* torn-op:any; else at a sector boundary */
    bool always;                 /* fsync-eio:always; else once */
    uint64_t seed;
    unsigned long at;            /* torn-op: the write that cuts the power; 0: none */
    char file[256];              /* "": every file */
    char spec[400];
    struct fault_conf *older;    /* the one before it, freed at the end */
};

static struct fault_conf default_conf = { .mode = CLEAR_CACHE, .seed = 1, .spec = "clear-cache" };
static struct fault_conf *_Atomic conf = &default_conf;

/* What the faults change as they go: the draws, fsync-eio's file. */
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t rng;
static bool victim_chosen;
static dev_t victim_dev;
static ino_t victim_ino;
static unsigned long eio_count;
static atomic_ullong write_seq;
static atomic_ulong torn_writes;     /* torn-op: writes to its files since it was set */
static atomic_ullong trigger_seq;    /* torn-op: the write that cut the power, or 0 */

static struct fault_conf *now(void)
{
    return atomic_load(&conf);
}

static uint64_t draw(void)
{
    pthread_mutex_lock(&fault_lock);
    uint64_t v = zb_rand(&rng);
    pthread_mutex_unlock(&fault_lock);
    return v;
}

/* file=SUBSTR: the path holds SUBSTR; SUBSTR$: the path ends in it. */
static bool names_match(const struct fault_conf *c, const struct fstate *s)
{
    if (!c->file[0])
        return true;
    if (!s->name)
        return false;
    size_t n = strlen(c->file), len = strlen(s->name);
    if (c->file[n - 1] != '$')
        return strstr(s->name, c->file) != NULL;
    return len >= n - 1 && !memcmp(s->name + len - (n - 1), c->file, n - 1);
}

/* ---- the SPEC ----------------------------------------------------------- */

static const char modes_list[] =
    "clear-cache, torn-op[:sector|:any], torn-seq, no-dir-sync, fsync-eio[:once|:always]";

static int parse(const char *spec, struct fault_conf *c, char *err, size_t errlen)
{
    *c = (struct fault_conf){ .seed = 1 };
    if (strlen(spec) >= sizeof c->spec) {
        snprintf(err, errlen, "fault spec too long");
        return -1;
    }
    snprintf(c->spec, sizeof c->spec, "%s", spec);
    char buf[sizeof c->spec];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL, *tok = strtok_r(buf, ",", &save);
    if (!tok) {
        snprintf(err, errlen, "empty fault spec (one of %s)", modes_list);
        return -1;
    }
    char *variant = strchr(tok, ':');
    if (variant)
        *variant++ = 0;
    static const struct { const char *name; enum mode mode; const char *v1, *v2; } M[] = {
        { "clear-cache", CLEAR_CACHE, NULL, NULL }, { "torn-op", TORN_OP, "sector", "any" },
        { "torn-seq", TORN_SEQ, NULL, NULL },       { "no-dir-sync", NO_DIR_SYNC, NULL, NULL },
        { "fsync-eio", FSYNC_EIO, "once", "always" },
    };
    size_t k = 0;
    while (k < sizeof M / sizeof M[0] && strcmp(M[k].name, tok))
        k++;
    if (k == sizeof M / sizeof M[0]) {
        snprintf(err, errlen, "no fault mode '%s' (one of %s)", tok, modes_list);
        return -1;
    }
    c->mode = M[k].mode;
    if (variant) {
        bool second = M[k].v2 && !strcmp(variant, M[k].v2);
        if (!second && !(M[k].v1 && !strcmp(variant, M[k].v1))) {
            snprintf(err, errlen, "%s has no variant '%s'%s%s%s%s", tok, variant, M[k].v1 ? " (" : "",
                     M[k].v1 ? M[k].v1 : "", M[k].v1 ? " or " : "", M[k].v1 ? M[k].v2 : "");
            if (M[k].v1)
                strncat(err, ")", errlen - strlen(err) - 1);
            return -1;
        }
        c->any = c->always = second;
    }
    while ((tok = strtok_r(NULL, ",", &save))) {
        if (!strncmp(tok, "seed=", 5)) {
            char *end;
            errno = 0;
            c->seed = strtoull(tok + 5, &end, 10);
            if (errno || end == tok + 5 || *end || tok[5] == '-') {
                snprintf(err, errlen, "seed=%s: not a whole number", tok + 5);
                return -1;
            }
        } else if (!strncmp(tok, "at=", 3) && c->mode == TORN_OP) {
            char *end;
            errno = 0;
            c->at = strtoul(tok + 3, &end, 10);
            if (errno || end == tok + 3 || *end || !c->at || tok[3] == '-') {
                snprintf(err, errlen, "at=%s: not a whole number over 0", tok + 3);
                return -1;
            }
        } else if (!strncmp(tok, "file=", 5) && (c->mode == TORN_OP || c->mode == FSYNC_EIO)) {
            if (!tok[5] || strlen(tok + 5) >= sizeof c->file) {
                snprintf(err, errlen, "file=: a part of a path (1-%zu bytes)", sizeof c->file - 1);
                return -1;
            }
            snprintf(c->file, sizeof c->file, "%s", tok + 5);
        } else {
            snprintf(err, errlen, "%s: no option '%s' (seed=N%s%s)", M[k].name, tok,
                     c->mode == TORN_OP || c->mode == FSYNC_EIO ? ", file=SUBSTR" : "", c->mode == TORN_OP ? ", at=N" : "");
            return -1;
        }
    }
    return 0;
}

int fault_set(const char *spec, bool install, char *err, size_t errlen)
{
    struct fault_conf c;
    if (parse(spec, &c, err, errlen) < 0)
        return -1;
    if (!install)
        return 0;
    struct fault_conf *p = malloc(sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *p = c;
    meta_all_durable();     /* names made before the fault are as clear-cache keeps them */
    pthread_mutex_lock(&fault_lock);
    rng = c.seed;
    victim_chosen = false;
    eio_count = 0;
    atomic_store(&torn_writes, 0);
    atomic_store(&trigger_seq, 0);
    p->older = now() == &default_conf ? NULL : now();
    atomic_store(&conf, p);
    pthread_mutex_unlock(&fault_lock);
    say("fault: %s from now on", p->spec);
    return 0;
}

/* ---- torn-op, torn-seq -------------------------------------------------- */

void fault_written(struct fstate *s, const void *buf, size_t len, off_t off)
{
    const struct fault_conf *c = now();
    if (c->mode == TORN_OP && names_match(c, s)) {
        struct last_write *w = &s->last;
        if (len > w->cap) {
            unsigned char *d = realloc(w->data, len);
            if (!d) {
                w->seq = 0;         /* nothing to tear rather than a wrong tear */
                return;
            }
            w->data = d;
            w->cap = len;
        }
        memcpy(w->data, buf, len);
        w->off = off;
        w->len = len;
        w->seq = atomic_fetch_add(&write_seq, 1) + 1;
        if (c->at && atomic_fetch_add(&torn_writes, 1) + 1 == c->at) {
            uint64_t none = 0;
            if (atomic_compare_exchange_strong(&trigger_seq, &none, w->seq)) {
                char why[400];
                snprintf(why, sizeof why, "torn-op: power cut at write %lu to %s", c->at, s->name ? s->name : "?");
                power_cut(why);
            }
        }
    } else if (c->mode == TORN_SEQ && !(draw() >> 63)) {
        s->dropped++;
    } else if (c->mode == TORN_SEQ) {
        int e = full_pwrite(s->fd, buf, len, off);
        if (e)
            say("torn-seq: a surviving write of %zu bytes at %jd: %s", len, (intmax_t)off, strerror(-e));
        s->touched = true;
        s->kept++;
    }
}

void fault_resized(struct fstate *s, off_t len)
{
    if (now()->mode != TORN_SEQ)
        return;
    if (!(draw() >> 63)) {
        s->dropped++;
        return;
    }
    if (ftruncate(s->fd, len) < 0)
        say("torn-seq: a surviving size change to %jd: %s", (intmax_t)len, strerror(errno));
    s->touched = true;
    s->kept++;
}

void fault_flushed(struct fstate *s)
{
    s->last.seq = 0;
    s->kept = s->dropped = 0;
}

struct tally {
    unsigned long kept, dropped, files;
};

static void tally_seq(struct fstate *s, void *arg)
{
    struct tally *t = arg;
    t->kept += s->kept;
    t->dropped += s->dropped;
    t->files += s->kept + s->dropped > 0;
}

void fault_forget(struct fstate *s)
{
    free(s->last.data);
    s->last = (struct last_write){ 0 };
    free(s->name);
    s->name = NULL;
}

struct newest {
    uint64_t seq;
    const struct fault_conf *c;
};

static void find_newest(struct fstate *s, void *arg)
{
    struct newest *n = arg;
    struct stat st;
    /* A file with no name left cannot be read again: nothing to tear. */
    if (s->last.seq > n->seq && fstat(s->fd, &st) == 0 && st.st_nlink > 0)
        n->seq = s->last.seq;
}

/* The write that cut the power, if it is still some file's last. */
static void find_trigger(struct fstate *s, void *arg)
{
    struct newest *n = arg;
    if (s->last.seq && s->last.seq == atomic_load(&trigger_seq))
        n->seq = s->last.seq;
}

/* The last write not synced, a prefix of it on BACKING. */
static void tear_newest(struct fstate *s, void *arg)
{
    const struct newest *n = arg;
    if (!n->seq || s->last.seq != n->seq)
        return;
    const struct last_write *w = &s->last;
    size_t keep = 0;
    if (n->c->any) {
        keep = w->len > 1 ? 1 + (size_t)(draw() % (w->len - 1)) : 0;
    } else {
        /* The sector boundaries strictly inside the write. */
        uint64_t first = ((uint64_t)w->off / SECTOR + 1) * SECTOR, end = (uint64_t)w->off + w->len;
        uint64_t bounds = first < end ? (end - 1 - first) / SECTOR + 1 : 0;
        if (bounds)
            keep = (size_t)(first + (draw() % bounds) * SECTOR - (uint64_t)w->off);
    }
    const char *name = s->name ? s->name : "?";
    if (!keep) {
        say("torn-op: the last write not synced (%s, %zu bytes at %jd) lies in one sector: lost whole",
            name, w->len, (intmax_t)w->off);
        return;
    }
    int e = full_pwrite(s->fd, w->data, keep, w->off);
    say("torn-op: the last write not synced (%s, %zu bytes at %jd) kept its first %zu bytes%s%s", name,
        w->len, (intmax_t)w->off, keep, e ? ": " : "", e ? strerror(-e) : "");
}

/* torn-op at the cut. */
static void tear(const struct fault_conf *c)
{
    struct newest n = { .c = c };
    each_state(atomic_load(&trigger_seq) ? find_trigger : find_newest, &n);
    if (!n.seq)
        say("torn-op: no write left unsynced: nothing torn");
    else
        each_state(tear_newest, &n);
}

/* ---- fsync-eio ---------------------------------------------------------- */

int fault_fsync(struct fstate *s)
{
    const struct fault_conf *c = now();
    if (c->mode != FSYNC_EIO)
        return 0;
    pthread_mutex_lock(&fault_lock);
    if (!victim_chosen && names_match(c, s)) {
        victim_chosen = true;
        victim_dev = s->dev;
        victim_ino = s->ino;
    }
    bool fail = victim_chosen && victim_dev == s->dev && victim_ino == s->ino && (c->always || !eio_count);
    unsigned long n = fail ? ++eio_count : 0;
    pthread_mutex_unlock(&fault_lock);
    if (!fail)
        return 0;
    /* The kernel's answer to a failed writeback: the pages are clean now,
     * their data still cached, and the next fsync has nothing to write. */
    size_t pages = 0;
    for (size_t i = 0; i < s->dirty.cap; i++) {
        if (!s->dirty.keys[i])
            continue;
        uint64_t page = s->dirty.keys[i] - 1;
        free(pagemap_take(&s->ghost, page));
        if (pagemap_put(&s->ghost, page, s->dirty.pages[i]) == 0) {
            s->dirty.pages[i] = NULL;   /* the ghost map has it now */
            pages++;
        }
    }
    pagemap_drop_from(&s->dirty, 0);
    s->last.seq = 0;
    say("fsync-eio: fsync %lu of %s failed (EIO): %zu pages left cached, never to be written", n,
        s->name ? s->name : "?", pages);
    return -EIO;
}

/* ---- no-dir-sync -------------------------------------------------------- */

struct meta_entry {
    enum meta_op op;
    char *path, *from;           /* from: a rename's old name */
    struct stat was;             /* rmdir: the directory that was */
    unsigned long stash;         /* the removed inode's link in the stash, or 0 */
    dev_t dir_dev;               /* the directory path is in: its fsync makes it durable */
    ino_t dir_ino;
    dev_t dev;                   /* the stashed inode, to forget once it goes */
    ino_t ino;
};

static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
static struct meta_entry *mlog;
static size_t mlog_n, mlog_cap;
static unsigned long stash_next;

static void stash_name(unsigned long id, char *buf, size_t len)
{
    snprintf(buf, len, STASH "/%lu", id);
}

bool meta_hidden(const char *path)
{
    return path && !strcmp(path, "/" STASH);
}

/* Removes name (and all below it) in the directory dirfd. */
static void remove_tree(int dirfd, const char *name)
{
    if (unlinkat(dirfd, name, 0) == 0 || (errno != EISDIR && errno != EPERM))
        return;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)))
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                remove_tree(fd, de->d_name);
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    unlinkat(dirfd, name, AT_REMOVEDIR);
}

/* The entry's stashed inode goes: nothing will bring its name back. */
static void entry_free(struct meta_entry *m, bool drop_stash)
{
    if (drop_stash && m->stash) {
        char sn[64];
        stash_name(m->stash, sn, sizeof sn);
        unlinkat(rootfd, sn, 0);
        state_forget_if_gone(m->dev, m->ino);
    }
    free(m->path);
    free(m->from);
}

unsigned long meta_before_remove(const char *path)
{
    if (now()->mode != NO_DIR_SYNC)
        return 0;
    struct stat st;
    if (fstatat(rootfd, rel_path(path), &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
        return 0;
    pthread_mutex_lock(&meta_lock);
    unsigned long id = ++stash_next;
    pthread_mutex_unlock(&meta_lock);
    char sn[64];
    stash_name(id, sn, sizeof sn);
    if (mkdirat(rootfd, STASH, 0700) < 0 && errno != EEXIST)
        return 0;
    if (linkat(rootfd, rel_path(path), rootfd, sn, 0) < 0) {
        say("no-dir-sync: cannot keep %s in the stash: %s", path, strerror(errno));
        return 0;
    }
    return id;
}

void meta_done(enum meta_op op, const char *path, const char *from, const struct stat *was,
               unsigned long stash, bool ok)
{
    struct meta_entry m = { .op = op, .stash = stash };
    if (stash) {
        char sn[64];
        struct stat st;
        stash_name(stash, sn, sizeof sn);
        if (fstatat(rootfd, sn, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            m.dev = st.st_dev;
            m.ino = st.st_ino;
        }
    }
    if (!ok || now()->mode != NO_DIR_SYNC) {
        entry_free(&m, true);
        return;
    }
    /* The directory, by inode: an fsync names it by its handle, and may
     * come with no path (nullpath_ok). */
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash && slash != path ? (int)(slash - path) : 1, path);
    struct stat ds;
    if (fstatat(rootfd, rel_path(dir), &ds, 0) < 0) {
        entry_free(&m, true);   /* no directory: nothing to undo it in */
        return;
    }
    m.dir_dev = ds.st_dev;
    m.dir_ino = ds.st_ino;
    m.path = strdup(path);
    m.from = from ? strdup(from) : NULL;
    if (was)
        m.was = *was;
    pthread_mutex_lock(&meta_lock);
    if (mlog_n == mlog_cap) {
        size_t cap = mlog_cap ? mlog_cap * 2 : 256;
        struct meta_entry *p = cap <= META_MAX ? realloc(mlog, cap * sizeof *p) : NULL;
        if (p) {
            mlog = p;
            mlog_cap = cap;
        } else {
            /* Full: the oldest counts as durable, as a kernel's own
             * writeback of the journal would make it some day. */
            entry_free(&mlog[0], true);
            memmove(mlog, mlog + 1, --mlog_n * sizeof *mlog);
        }
    }
    mlog[mlog_n++] = m;
    pthread_mutex_unlock(&meta_lock);
}

void meta_dir_synced(dev_t dev, ino_t ino)
{
    pthread_mutex_lock(&meta_lock);
    size_t k = 0;
    for (size_t i = 0; i < mlog_n; i++) {
        if (mlog[i].dir_dev == dev && mlog[i].dir_ino == ino)
            entry_free(&mlog[i], true);
        else
            mlog[k++] = mlog[i];
    }
    mlog_n = k;
    pthread_mutex_unlock(&meta_lock);
}

void meta_all_durable(void)
{
    pthread_mutex_lock(&meta_lock);
    for (size_t i = 0; i < mlog_n; i++)
        entry_free(&mlog[i], true);
    mlog_n = 0;
    remove_tree(rootfd, STASH);
    pthread_mutex_unlock(&meta_lock);
}

/* Undoes one name operation that was not made durable. 0, or errno. */
static int undo(struct meta_entry *m, unsigned long *moved)
{
    const char *p = rel_path(m->path);
    char sn[64];
    stash_name(m->stash, sn, sizeof sn);
    switch (m->op) {
    case META_CREATE:
        return unlinkat(rootfd, p, 0) < 0 ? errno : 0;
    case META_MKDIR:
        /* With whatever was made in it: its name never reached the disk. */
        if (mkdirat(rootfd, STASH, 0700) < 0 && errno != EEXIST)
            return errno;
        snprintf(sn, sizeof sn, STASH "/dir-%lu", ++*moved);
        return renameat(rootfd, p, rootfd, sn) < 0 ? errno : 0;
    case META_UNLINK:
        return m->stash && renameat(rootfd, sn, rootfd, p) < 0 ? errno : 0;
    case META_RMDIR:
        if (mkdirat(rootfd, p, m->was.st_mode & 07777) < 0)
            return errno;
        return fchownat(rootfd, p, m->was.st_uid, m->was.st_gid, AT_SYMLINK_NOFOLLOW) < 0 ? errno : 0;
    case META_RENAME:
        if (renameat(rootfd, p, rootfd, rel_path(m->from)) < 0)
            return errno;
        return m->stash && renameat(rootfd, sn, rootfd, p) < 0 ? errno : 0;
    case META_EXCHANGE:
        return renameat2(rootfd, p, rootfd, rel_path(m->from), RENAME_EXCHANGE) < 0 ? errno : 0;
    }
    return 0;
}

static void undo_names(void)
{
    static const char *what[] = { "create", "mkdir", "unlink", "rmdir", "rename", "exchange" };
    size_t undone = 0;
    unsigned long moved = 0;
    for (size_t i = mlog_n; i-- > 0;) {
        int e = undo(&mlog[i], &moved);
        if (e)
            say("no-dir-sync: cannot undo %s %s%s%s: %s", what[mlog[i].op], mlog[i].from ? mlog[i].from : "",
                mlog[i].from ? " -> " : "", mlog[i].path, strerror(e));
        else
            undone++;
        mlog[i].stash = 0;      /* its link is back under its name, or goes with the stash */
        entry_free(&mlog[i], false);
    }
    say("no-dir-sync: %zu of %zu name operations undone (their directory not fsynced since)", undone, mlog_n);
    mlog_n = 0;
    remove_tree(rootfd, STASH);
}

void fault_at_cut(void)
{
    const struct fault_conf *c = now();
    if (c->mode == TORN_OP)
        tear(c);
    else if (c->mode == NO_DIR_SYNC)
        undo_names();
    else if (c->mode == FSYNC_EIO)
        say("fsync-eio: %lu fsyncs failed", eio_count);
    if (c->mode == TORN_SEQ) {
        struct tally t = { 0 };
        each_state(tally_seq, &t);
        say("torn-seq: %lu of the %lu writes and size changes of %lu files not synced survived", t.kept,
            t.kept + t.dropped, t.files);
    }
}

void fault_end(void)
{
    struct fault_conf *c = atomic_exchange(&conf, &default_conf);
    while (c && c != &default_conf) {
        struct fault_conf *older = c->older;
        free(c);
        c = older;
    }
    free(mlog);
    mlog = NULL;
    mlog_n = mlog_cap = 0;
}
