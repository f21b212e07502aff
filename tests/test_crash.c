/* powerfs (crash/powerfs.c, docs/CRASH.md), the power-loss file system of
 * the crash experiment: what was written and not fsynced is read back
 * while the power is on and gone once it is cut; what was fsynced stays.
 * Each test mounts a powerfs of its own (build/test/crash/NAME: backing/
 * and mnt/), works through the mount, cuts the power (`powerfs --cut`,
 * SIGUSR1) and looks at backing/, which then holds what a disk would after
 * a power loss. Ends with SQLite on powerfs: a transaction committed with
 * synchronous = FULL survives a cut, one committed with synchronous = OFF
 * is lost, and the file passes PRAGMA integrity_check, in both journal
 * modes.
 *
 * Where FUSE cannot be mounted (no /dev/fuse to open, no fusermount3, no
 * build/bin/powerfs) every test passes after one line saying it was
 * skipped. The suite's teardown unmounts whatever a failed test left. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "util.h"

static bool skipped;
static char root[1024];          /* build/test/crash, absolute */
static char backing[1200], mnt[1200], logfile[1200], pidfile[1200];
static char out[1 << 14];

/* Unmounts every powerfs under root that a test left (lazily: a dead one too). */
static void unmount_all(void)
{
    run_cmd(NULL, 0, "awk -v r='%s/' 'index($2, r) == 1 { print $2 }' /proc/mounts | "
            "while read -r m; do fusermount3 -u -z \"$m\" || umount -l \"$m\"; done", root);
}

static void setup(void)
{
    char why[512] = "";
    if (access("/dev/fuse", R_OK | W_OK) != 0)
        snprintf(why, sizeof why, "/dev/fuse: %s", strerror(errno));
    else if (run_cmd(NULL, 0, "command -v fusermount3") != 0)
        snprintf(why, sizeof why, "no fusermount3 (Debian's fuse3)");
    else if (access(build_path("bin/powerfs"), X_OK) != 0)
        snprintf(why, sizeof why, "no %s (libfuse3-dev: make)", build_path("bin/powerfs"));
    if (why[0]) {
        skipped = true;
        printf("crash: skipped: FUSE cannot be mounted here (%s)\n", why);
        fflush(stdout);
        return;
    }
    build_path_absolute("test/crash", root, sizeof root);
    unmount_all();
    test_dir("crash");
}

static void teardown(void)
{
    if (!skipped)
        unmount_all();
}

#define SKIP_IF_NO_FUSE()   \
    do {                    \
        if (skipped)        \
            return;         \
    } while (0)

/* A fresh powerfs for test `name`: backing/ (with what `seed`, a shell
 * command run in it, puts there first; NULL: nothing) mounted at mnt/. */
static void mount_fs(const char *name, const char *seed, const char *flags)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    snprintf(backing, sizeof backing, "%s/backing", dir);
    snprintf(mnt, sizeof mnt, "%s/mnt", dir);
    snprintf(logfile, sizeof logfile, "%s/powerfs.log", dir);
    snprintf(pidfile, sizeof pidfile, "%s/powerfs.pid", dir);
    ck_assert_int_eq(run_cmd(out, sizeof out, "rm -rf '%s' && mkdir -p '%s' '%s'", dir, backing, mnt), 0);
    if (seed)
        ck_assert_msg(run_cmd(out, sizeof out, "cd '%s' && %s", backing, seed) == 0, "seed: %s", out);
    int rc = run_cmd(out, sizeof out, "%s --log '%s' --pidfile '%s' %s '%s' '%s'", prog("powerfs"),
                     logfile, pidfile, flags ? flags : "", backing, mnt);
    ck_assert_msg(rc == 0, "powerfs did not mount: %s", out);
}

static bool mounted(void)
{
    return run_cmd(NULL, 0, "awk -v m='%s' '$2 == m { f = 1 } END { exit !f }' /proc/mounts", mnt) == 0;
}

/* powerfs --cut, which returns once the mount is gone. */
static void cut(void)
{
    int rc = run_cmd(out, sizeof out, "%s --cut '%s'", prog("powerfs"), mnt);
    ck_assert_msg(rc == 0, "powerfs --cut: %s", out);
    ck_assert_msg(!mounted(), "%s is still mounted after the cut", mnt);
}

static char *path_in(const char *dir, const char *name)
{
    static char p[4][1400];
    static int slot;
    char *r = p[slot++ % 4];
    snprintf(r, sizeof p[0], "%s/%s", dir, name);
    return r;
}
#define M(name) path_in(mnt, name)
#define B(name) path_in(backing, name)

/* The whole content of a file into buf (NUL-terminated): its length, or -1. */
static long slurp(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    size_t n = 0;
    ssize_t r;
    while (n + 1 < len && (r = read(fd, buf + n, len - 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    buf[n] = 0;
    return (long)n;
}

static void put(const char *path, const char *text, bool sync)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    if (sync)
        ck_assert_int_eq(fsync(fd), 0);
    ck_assert_int_eq(close(fd), 0);
}

#define ASSERT_CONTENT(path, want)                                                       \
    do {                                                                                 \
        char got_[4096];                                                                 \
        long n_ = slurp(path, got_, sizeof got_);                                        \
        ck_assert_msg(n_ >= 0, "%s: %s", path, strerror(errno));                        \
        ck_assert_msg(!strcmp(got_, want), "%s holds '%s', not '%s'", path, got_, want); \
    } while (0)

/* ---- the model --------------------------------------------------------- */

START_TEST(an_unsynced_write_is_lost_a_synced_one_kept)
{
    SKIP_IF_NO_FUSE();
    mount_fs("basic", "printf first > c", NULL);
    put(M("a"), "never synced", false);
    put(M("b"), "synced", true);
    int fd = open(M("c"), O_WRONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, "SECOND", 6, 0), 6);     /* over synced data, not synced */
    ck_assert_int_eq(close(fd), 0);

    /* While the power is on, every reader sees every write... */
    ASSERT_CONTENT(M("a"), "never synced");
    ASSERT_CONTENT(M("b"), "synced");
    ASSERT_CONTENT(M("c"), "SECOND");
    struct stat st;
    ck_assert_int_eq(stat(M("a"), &st), 0);
    ck_assert_int_eq(st.st_size, 12);
    /* ...and the disk has only what was synced; the file itself is there
     * (metadata passes through at once). */
    ASSERT_CONTENT(B("a"), "");
    ASSERT_CONTENT(B("b"), "synced");
    ASSERT_CONTENT(B("c"), "first");

    cut();
    ASSERT_CONTENT(B("a"), "");
    ASSERT_CONTENT(B("b"), "synced");
    ASSERT_CONTENT(B("c"), "first");
    ck_assert_int_eq(run_cmd(out, sizeof out, "grep -q 'cut: dropped' '%s'", logfile), 0);
}
END_TEST

START_TEST(a_truncation_waits_for_fsync_too)
{
    SKIP_IF_NO_FUSE();
    mount_fs("truncate", "head -c 10000 /dev/zero | tr '\\0' x > t && printf 12345 > o", NULL);
    ck_assert_int_eq(truncate(M("t"), 100), 0);
    struct stat st;
    ck_assert_int_eq(stat(M("t"), &st), 0);
    ck_assert_int_eq(st.st_size, 100);
    ck_assert_int_eq(stat(B("t"), &st), 0);
    ck_assert_int_eq(st.st_size, 10000);
    /* Grown again: what lies past the cut-off end reads as zeros. */
    ck_assert_int_eq(truncate(M("t"), 200), 0);
    char buf[256];
    int fd = open(M("t"), O_RDONLY);
    ck_assert_int_eq(pread(fd, buf, sizeof buf, 0), 200);
    close(fd);
    ck_assert_int_eq(buf[99], 'x');
    ck_assert_int_eq(buf[100], 0);
    ck_assert_int_eq(buf[199], 0);
    /* O_TRUNC is a truncation as well. */
    fd = open(M("o"), O_WRONLY | O_TRUNC);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ASSERT_CONTENT(M("o"), "");
    ASSERT_CONTENT(B("o"), "12345");
    cut();
    ck_assert_int_eq(stat(B("t"), &st), 0);
    ck_assert_int_eq(st.st_size, 10000);
    ASSERT_CONTENT(B("o"), "12345");
}
END_TEST

/* Random writes, truncations and fallocates against a model of the file,
 * fsyncs at random moments: every read through the mount is the model,
 * and after the cut the backing file is the model at the last fsync. */
static unsigned rnd(uint64_t *seed)
{
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(*seed >> 33);
}

START_TEST(random_io_matches_a_model_and_the_last_fsync)
{
    SKIP_IF_NO_FUSE();
    mount_fs("model", "head -c 50000 /dev/urandom > f", NULL);
    enum { MAX = 300000 };
    unsigned char *model = calloc(MAX, 1), *durable = calloc(MAX, 1), *buf = malloc(MAX);
    size_t size, durable_size;
    int bfd = open(B("f"), O_RDONLY);
    size = durable_size = (size_t)read(bfd, model, MAX);
    close(bfd);
    ck_assert_uint_eq(size, 50000);
    memcpy(durable, model, size);
    int fd = open(M("f"), O_RDWR);
    ck_assert_int_ge(fd, 0);
    /* A second name for the file: an fsync through either syncs the
     * inode. (Reads and writes go through one name: the kernel caches
     * each name of a high-level FUSE file system as an inode of its own.) */
    ck_assert_int_eq(link(M("f"), M("g")), 0);
    int gfd = open(M("g"), O_RDWR);
    ck_assert_int_ge(gfd, 0);
    uint64_t seed = 38;
#define RND() rnd(&seed)
    for (int step = 0; step < 600; step++) {
        unsigned op = RND() % 100;
        int wfd = fd;
        if (op < 60) {
            size_t off = RND() % (MAX - 20000), big = RND() % 4 == 0, len = 1 + RND() % (big ? 20000 : 300);
            for (size_t i = 0; i < len; i++)
                buf[i] = (unsigned char)RND();
            ck_assert_int_eq(pwrite(wfd, buf, len, (off_t)off), (ssize_t)len);
            memcpy(model + off, buf, len);
            if (off + len > size)
                size = off + len;
        } else if (op < 72) {
            size_t len = RND() % MAX;
            ck_assert_int_eq(ftruncate(wfd, (off_t)len), 0);
            if (len > size)
                memset(model + size, 0, len - size);
            else
                memset(model + len, 0, size - len);
            size = len;
        } else if (op < 76) {
            size_t off = RND() % (MAX / 2), len = 1 + RND() % (MAX / 2 - 1);
            ck_assert_int_eq(fallocate(wfd, 0, (off_t)off, (off_t)len), 0);
            if (off + len > size)
                size = off + len;
        } else if (op < 84) {
            int sfd = RND() % 2 ? fd : gfd;
            ck_assert_int_eq(RND() % 2 ? fsync(sfd) : fdatasync(sfd), 0);
            memcpy(durable, model, size);
            durable_size = size;
        } else {
            /* A read, through a handle or through a fresh open, anywhere. */
            size_t off = RND() % MAX, len = RND() % 70000;
            int rfd = RND() % 3 ? fd : open(M("f"), O_RDONLY);
            ssize_t got = pread(rfd, buf, len, (off_t)off);
            if (rfd != fd)
                close(rfd);
            size_t want = off >= size ? 0 : (size - off < len ? size - off : len);
            ck_assert_int_eq(got, (ssize_t)want);
            ck_assert_msg(!memcmp(buf, model + off, want), "step %d: read at %zu differs", step, off);
        }
        if (step % 50 == 0) {
            struct stat st;
            ck_assert_int_eq(stat(M("f"), &st), 0);
            ck_assert_int_eq(st.st_size, (off_t)size);
        }
    }
    close(fd);
    close(gfd);
    cut();
    bfd = open(B("f"), O_RDONLY);
    ck_assert_int_ge(bfd, 0);
    ssize_t got = read(bfd, buf, MAX);
    close(bfd);
    ck_assert_int_eq(got, (ssize_t)durable_size);
    ck_assert_msg(!memcmp(buf, durable, durable_size), "the backing file is not the last fsync's");
    free(model);
    free(durable);
    free(buf);
#undef RND
}
END_TEST

/* ---- what the databases call -------------------------------------------- */

/* A child process's try at a lock the parent holds: 0 if it got it. */
static int child_try(const char *path, bool use_flock)
{
    pid_t p = fork();
    if (p == 0) {
        int fd = open(path, O_RDWR);
        if (use_flock)
            _exit(flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno == EWOULDBLOCK ? 3 : 4);
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10 };
        _exit(fcntl(fd, F_SETLK, &fl) == 0 ? 0 : (errno == EAGAIN || errno == EACCES) ? 3 : 4);
    }
    int status;
    waitpid(p, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(what_databases_call_works)
{
    SKIP_IF_NO_FUSE();
    mount_fs("calls", "printf old > target", NULL);
    /* rename over a file, as a checkpoint or a config write does. */
    put(M("tmp"), "new", true);
    ck_assert_int_eq(rename(M("tmp"), M("target")), 0);
    ASSERT_CONTENT(M("target"), "new");
    ASSERT_CONTENT(B("target"), "new");
    /* Hard links (pg_rewind, pg_upgrade --link, WAL recycling tools). */
    ck_assert_int_eq(link(M("target"), M("hard")), 0);
    struct stat a, b;
    ck_assert_int_eq(stat(M("target"), &a), 0);
    ck_assert_int_eq(stat(M("hard"), &b), 0);
    ck_assert_int_eq(a.st_ino, b.st_ino);
    ck_assert_int_eq(b.st_nlink, 2);
    /* Directories, symlinks. */
    ck_assert_int_eq(mkdir(M("d"), 0700), 0);
    ck_assert_int_eq(mkdir(M("d/e"), 0700), 0);
    ck_assert_int_eq(rmdir(M("d/e")), 0);
    ck_assert_int_eq(symlink("../target", M("d/ln")), 0);
    char l[64] = "";
    ck_assert_int_eq(readlink(M("d/ln"), l, sizeof l), 9);
    ASSERT_CONTENT(M("d/ln"), "new");
    /* fallocate: growing is a (buffered) size change; a hole is not here. */
    int fd = open(M("alloc"), O_RDWR | O_CREAT, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fallocate(fd, 0, 0, 8192), 0);
    ck_assert_int_eq(fstat(fd, &a), 0);
    ck_assert_int_eq(a.st_size, 8192);
    ck_assert_int_eq(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 65536), 0);
    ck_assert_int_eq(posix_fallocate(fd, 8192, 4096), 0);
    ck_assert_int_eq(fstat(fd, &a), 0);
    ck_assert_int_eq(a.st_size, 12288);
    ck_assert_int_eq(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), -1);
    ck_assert_int_eq(errno, EOPNOTSUPP);
    /* POSIX and flock locks, held by the kernel: a second process is refused. */
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10 };
    ck_assert_int_eq(fcntl(fd, F_SETLK, &fl), 0);
    ck_assert_int_eq(child_try(M("alloc"), false), 3);
    fl.l_type = F_UNLCK;
    ck_assert_int_eq(fcntl(fd, F_SETLK, &fl), 0);
    ck_assert_int_eq(child_try(M("alloc"), false), 0);
    ck_assert_int_eq(flock(fd, LOCK_EX), 0);
    ck_assert_int_eq(child_try(M("alloc"), true), 3);
    ck_assert_int_eq(flock(fd, LOCK_UN), 0);
    /* A shared writable mapping (SQLite's -shm), its pages written back. */
    ck_assert_int_eq(ftruncate(fd, 32768), 0);
    char *map = mmap(NULL, 32768, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(map, MAP_FAILED);
    memcpy(map + 4096, "mapped", 6);
    ck_assert_int_eq(msync(map, 32768, MS_SYNC), 0);
    munmap(map, 32768);
    char buf[8] = "";
    int fd2 = open(M("alloc"), O_RDONLY);
    ck_assert_int_eq(pread(fd2, buf, 6, 4096), 6);
    close(fd2);
    ck_assert_str_eq(buf, "mapped");
    ck_assert_int_eq(fsync(fd), 0);
    close(fd);
    /* statfs, O_DIRECT (asked for, not given: the data is buffered). */
    struct statvfs sv;
    ck_assert_int_eq(statvfs(mnt, &sv), 0);
    ck_assert_uint_gt(sv.f_blocks, 0);
    fd = open(M("direct"), O_RDWR | O_CREAT | O_DIRECT, 0600);
    if (fd >= 0)
        close(fd);
    else
        ck_assert_int_eq(errno, EINVAL);
    /* A file written, not synced, then unlinked: nothing of it is left. */
    put(M("gone"), "unsynced then unlinked", false);
    ck_assert_int_eq(unlink(M("gone")), 0);
    ck_assert_int_eq(access(B("gone"), F_OK), -1);
    /* An owner of its own: a file made by another user is that user's. */
    if (geteuid() == 0) {
        ck_assert_int_eq(chmod(mnt, 0777), 0);
        pid_t p = fork();
        if (p == 0) {
            if (setgid(65534) || setuid(65534))
                _exit(5);
            int f = open(M("nobody"), O_WRONLY | O_CREAT, 0600);
            _exit(f < 0 ? 6 : 0);
        }
        int status;
        waitpid(p, &status, 0);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "nobody could not create a file");
        ck_assert_int_eq(stat(B("nobody"), &a), 0);
        ck_assert_int_eq(a.st_uid, 65534);
        ck_assert_int_eq(a.st_mode & 0777, 0600);
    }
    cut();
    ASSERT_CONTENT(B("target"), "new");
    /* The mapped write was synced by the fsync above. */
    fd = open(B("alloc"), O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fstat(fd, &a), 0);
    ck_assert_int_eq(a.st_size, 32768);
    ck_assert_int_eq(pread(fd, buf, 6, 4096), 6);
    close(fd);
    ck_assert_str_eq(buf, "mapped");
}
END_TEST

/* ---- threads ----------------------------------------------------------- */

#define THREADS 8
#define ROUNDS 200

struct writer {
    int id;
    long synced;     /* records written and fsynced */
    int err;
};

static void *write_records(void *arg)
{
    struct writer *w = arg;
    char name[32], rec[64];
    snprintf(name, sizeof name, "w%d", w->id);
    int fd = open(M(name), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) {
        w->err = errno;
        return NULL;
    }
    for (int i = 0; i < ROUNDS; i++) {
        int n = snprintf(rec, sizeof rec, "%d:%04d\n", w->id, i);
        if (write(fd, rec, (size_t)n) != n) {
            w->err = errno;
            break;
        }
        if (i % 10 == 9 && i < ROUNDS - 5) {
            if (fdatasync(fd)) {
                w->err = errno;
                break;
            }
            w->synced = i + 1;
        }
    }
    close(fd);
    return NULL;
}

START_TEST(threads_writing_and_syncing_at_once)
{
    SKIP_IF_NO_FUSE();
    mount_fs("threads", NULL, NULL);
    pthread_t t[THREADS];
    struct writer w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct writer){ .id = i };
        ck_assert_int_eq(pthread_create(&t[i], NULL, write_records, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    char *buf = malloc(1 << 16);
    for (int i = 0; i < THREADS; i++) {
        ck_assert_msg(!w[i].err, "writer %d: %s", i, strerror(w[i].err));
        char name[32];
        snprintf(name, sizeof name, "w%d", i);
        ck_assert_int_eq(slurp(M(name), buf, 1 << 16), ROUNDS * 7);
    }
    cut();
    for (int i = 0; i < THREADS; i++) {
        char name[32];
        snprintf(name, sizeof name, "w%d", i);
        long n = slurp(B(name), buf, 1 << 16);
        ck_assert_int_eq(n, w[i].synced * 7);
        for (long r = 0; r < w[i].synced; r++) {
            char rec[48];
            snprintf(rec, sizeof rec, "%d:%04ld\n", i, r);
            ck_assert_msg(!memcmp(buf + r * 7, rec, 7), "writer %d record %ld", i, r);
        }
    }
    free(buf);
}
END_TEST

/* ---- the other ways to stop it ----------------------------------------- */

static pid_t fs_pid(void)
{
    char buf[32];
    ck_assert_int_ge(slurp(pidfile, buf, sizeof buf), 1);
    return (pid_t)atol(buf);
}

static void await_unmounted(pid_t pid)
{
    for (int i = 0; i < 1500 && (mounted() || process_running(pid)); i++)
        usleep(10000);
    ck_assert_msg(!mounted(), "still mounted");
    ck_assert_msg(!process_running(pid), "powerfs (pid %d) still runs", (int)pid);
}

START_TEST(sigusr1_cuts_and_unmount_drops_or_syncs)
{
    SKIP_IF_NO_FUSE();
    /* SIGUSR1: a cut. */
    mount_fs("signal", NULL, NULL);
    put(M("a"), "unsynced", false);
    put(M("b"), "synced", true);
    pid_t pid = fs_pid();
    ck_assert_int_eq(kill(pid, SIGUSR1), 0);
    await_unmounted(pid);
    ASSERT_CONTENT(B("a"), "");
    ASSERT_CONTENT(B("b"), "synced");
    /* A plain unmount drops what was not synced... */
    mount_fs("unmount", NULL, NULL);
    put(M("a"), "unsynced", false);
    pid = fs_pid();
    ck_assert_int_eq(run_cmd(out, sizeof out, "fusermount3 -u '%s'", mnt), 0);
    await_unmounted(pid);
    ASSERT_CONTENT(B("a"), "");
    /* ...unless told to sync it, as a clean shutdown; so does --sync. */
    mount_fs("clean", NULL, "--sync-on-unmount");
    put(M("a"), "written at unmount", false);
    put(M("b"), "written by --sync", false);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --sync '%s'", prog("powerfs"), mnt), 0);
    ASSERT_CONTENT(B("b"), "written by --sync");
    put(M("c"), "written at unmount", false);
    pid = fs_pid();
    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    await_unmounted(pid);
    ASSERT_CONTENT(B("a"), "written at unmount");
    ASSERT_CONTENT(B("c"), "written at unmount");
    /* --cut of what is no powerfs fails, and says so. */
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --cut '%s'", prog("powerfs"), backing), 1);
    ck_assert_ptr_nonnull(strstr(out, "not a powerfs mount"));
}
END_TEST

/* ---- the fault modes (crash/fault.c) ---------------------------------- */

/* powerfs --fault SPEC on the mount: the mode in force from now on. */
static void set_fault(const char *spec)
{
    int rc = run_cmd(out, sizeof out, "%s --fault '%s' '%s'", prog("powerfs"), spec, mnt);
    ck_assert_msg(rc == 0, "powerfs --fault %s: %s", spec, out);
}

static void write_at(const char *path, const void *buf, size_t len, off_t off, bool sync)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
    ck_assert_int_eq(pwrite(fd, buf, len, off), (ssize_t)len);
    if (sync)
        ck_assert_int_eq(fsync(fd), 0);
    ck_assert_int_eq(close(fd), 0);
}

/* How many bytes of the write `w` at off of the file at path reached it:
 * the file must hold w[0, k) then `old` bytes up to off + len. */
static size_t kept_prefix(const char *path, const unsigned char *w, size_t len, off_t off, char old)
{
    unsigned char *got = malloc(len);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pread(fd, got, len, off), (ssize_t)len);
    close(fd);
    size_t k = 0;
    while (k < len && got[k] == w[k])
        k++;
    for (size_t i = k; i < len; i++)
        ck_assert_msg(got[i] == (unsigned char)old, "%s: byte %zu after the kept prefix (%zu) is %d, "
                      "neither the write's nor the old one", path, (size_t)off + i, k, got[i]);
    free(got);
    return k;
}

/* One torn-op run: `len` bytes written at `off` over a file of 20000 '.'
 * (off page-aligned: the kernel hands FUSE a write(2) cut at page
 * boundaries, and powerfs tears the last piece it was handed),
 * another write before it (lost whole), a later one synced (kept): the
 * length of the prefix of the torn write that the cut kept. */
static size_t torn_op_run(const char *spec, off_t off, size_t len)
{
    mount_fs("torn-op", "head -c 20000 /dev/zero | tr '\\0' . > f && printf old > g", NULL);
    set_fault(spec);
    unsigned char *w = malloc(len);
    for (size_t i = 0; i < len; i++)
        w[i] = (unsigned char)('a' + i % 26);
    write_at(M("g"), "new g", 5, 0, false);
    write_at(M("f"), w, len, off, false);
    put(M("h"), "later, synced", true);      /* the last write, but synced: not the one torn */
    cut();
    ASSERT_CONTENT(B("g"), "old");
    ASSERT_CONTENT(B("h"), "later, synced");
    size_t k = kept_prefix(B("f"), w, len, off, '.');
    ck_assert_msg(k > 0 && k < len, "%s: the write kept %zu of its %zu bytes, not a strict prefix", spec, k, len);
    ck_assert_int_eq(run_cmd(out, sizeof out, "grep -q 'torn-op: the last write not synced (/f, %zu bytes' '%s'",
                             len, logfile), 0);
    free(w);
    return k;
}

START_TEST(torn_op_keeps_a_prefix_of_the_last_write_not_synced)
{
    SKIP_IF_NO_FUSE();
    /* At a sector boundary: the prefix ends on a multiple of 512. */
    for (int seed = 1; seed <= 3; seed++) {
        char spec[64];
        snprintf(spec, sizeof spec, "torn-op:sector,seed=%d", seed);
        size_t k = torn_op_run(spec, 4096, 12000);
        ck_assert_msg((4096 + k) % 512 == 0, "%s: the prefix ends at %zu, not on a sector", spec, 4096 + k);
    }
    /* Anywhere: the same seed tears the same way; some seed tears off a sector. */
    size_t first = torn_op_run("torn-op:any,seed=7", 4096, 12000);
    ck_assert_uint_eq(torn_op_run("torn-op:any,seed=7", 4096, 12000), first);
    bool unaligned = first % 512 != 0;
    for (int seed = 8; seed < 12 && !unaligned; seed++) {
        char spec[64];
        snprintf(spec, sizeof spec, "torn-op:any,seed=%d", seed);
        unaligned = torn_op_run(spec, 4096, 12000) % 512 != 0;
    }
    ck_assert_msg(unaligned, "torn-op:any never tore inside a sector");

    /* at=N: the N-th write to a file= cuts the power itself, torn. */
    mount_fs("torn-op-at", "head -c 20000 /dev/zero | tr '\\0' . > f && printf old > g", NULL);
    set_fault("torn-op:sector,seed=3,file=/f,at=3");
    pid_t pid = fs_pid();
    unsigned char w[8192];
    for (size_t i = 0; i < sizeof w; i++)
        w[i] = (unsigned char)('A' + i % 26);
    int fd = open(M("f"), O_WRONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, "one", 3, 0), 3);
    write_at(M("g"), "g is not /f", 11, 0, false);
    ck_assert_int_eq(pwrite(fd, "two", 3, 16384), 3);
    pwrite(fd, w, sizeof w, 4096);          /* the third: the power goes */
    ck_assert_int_eq(pwrite(fd, "four", 4, 100), -1);
    close(fd);
    await_unmounted(pid);
    size_t k = kept_prefix(B("f"), w, sizeof w, 4096, '.');
    ck_assert_msg(k > 0 && k < sizeof w && k % 512 == 0, "the write that cut the power kept %zu bytes", k);
    char head[4] = "";
    int bfd = open(B("f"), O_RDONLY);
    ck_assert_int_eq(pread(bfd, head, 3, 0), 3);
    close(bfd);
    ck_assert_msg(!memcmp(head, "...", 3), "an earlier write not synced reached the disk");
    ASSERT_CONTENT(B("g"), "old");
    ck_assert_int_eq(run_cmd(out, sizeof out, "grep -q 'torn-op: power cut at write 3 to /f' '%s'", logfile), 0);
}
END_TEST

/* torn-seq: 40 records of 100 bytes over a file of '.', the first 10
 * fsynced, then 30 more and two writes to one place (X, then Y). */
#define RECS 40
#define REC 100

/* Record i: "record NN " and a digit of its own to its end (REC bytes). */
static void record_of(int i, char rec[REC])
{
    char head[16];
    int n = snprintf(head, sizeof head, "record %02d ", i % 100);
    memset(rec, '0' + i % 10, REC);
    memcpy(rec, head, (size_t)n);
}
static void torn_seq_run(uint64_t seed, bool kept[RECS], char *overlap)
{
    mount_fs("torn-seq", "head -c 8000 /dev/zero | tr '\\0' . > f", NULL);
    char spec[64];
    snprintf(spec, sizeof spec, "torn-seq,seed=%llu", (unsigned long long)seed);
    set_fault(spec);
    int fd = open(M("f"), O_RDWR);
    ck_assert_int_ge(fd, 0);
    char rec[REC];
    for (int i = 0; i < RECS; i++) {
        record_of(i, rec);
        ck_assert_int_eq(pwrite(fd, rec, REC, (off_t)i * REC), REC);
        if (i == 9)
            ck_assert_int_eq(fsync(fd), 0);
    }
    ck_assert_int_eq(pwrite(fd, "XXXX", 4, 6000), 4);
    ck_assert_int_eq(pwrite(fd, "YYYY", 4, 6000), 4);
    char buf[8000];
    ck_assert_int_eq(pread(fd, buf, 4, 6000), 4);
    ck_assert_msg(!memcmp(buf, "YYYY", 4), "the mount does not read its last write");
    close(fd);
    cut();
    ck_assert_int_eq(slurp(B("f"), buf, sizeof buf), 7999);   /* slurp keeps a byte for its NUL */
    for (int i = 0; i < RECS; i++) {
        record_of(i, rec);
        kept[i] = !memcmp(buf + i * REC, rec, REC);
        bool old = true;
        for (int j = 0; j < REC; j++)
            old = old && buf[i * REC + j] == '.';
        ck_assert_msg(kept[i] || old, "record %d is neither whole nor absent after the cut", i);
        ck_assert_msg(i >= 10 || kept[i], "record %d was fsynced and is lost", i);
    }
    memcpy(overlap, buf + 6000, 4);
    overlap[4] = 0;
    ck_assert_msg(!strcmp(overlap, "YYYY") || !strcmp(overlap, "XXXX") || !strcmp(overlap, "...."),
                  "the place written twice holds '%s'", overlap);
}

START_TEST(torn_seq_keeps_a_subset_of_the_writes_since_the_fsync)
{
    SKIP_IF_NO_FUSE();
    bool kept[RECS], again[RECS];
    char overlap[8], overlap2[8];
    torn_seq_run(5, kept, overlap);
    /* Any subset: some of the 30 unsynced records kept, some lost, and a
     * later one kept where an earlier one was lost (the order not kept). */
    int n = 0, reordered = 0;
    for (int i = 10; i < RECS; i++) {
        n += kept[i];
        for (int j = i + 1; j < RECS; j++)
            reordered += !kept[i] && kept[j];
    }
    ck_assert_msg(n > 0 && n < RECS - 10, "%d of %d unsynced records kept: not a proper subset", n, RECS - 10);
    ck_assert_msg(reordered > 0, "only a prefix of the writes was kept");
    /* The same seed, the same subset. */
    torn_seq_run(5, again, overlap2);
    ck_assert_msg(!memcmp(kept, again, sizeof kept) && !strcmp(overlap, overlap2), "seed 5 kept another subset");
    /* Of the place written twice, every outcome turns up over a few seeds:
     * Y (the last write kept), X (only the first), or neither. */
    bool seen_x = !strcmp(overlap, "XXXX"), seen_y = !strcmp(overlap, "YYYY"), seen_none = !strcmp(overlap, "....");
    for (uint64_t seed = 6; seed < 30 && !(seen_x && seen_y && seen_none); seed++) {
        torn_seq_run(seed, again, overlap2);
        seen_x |= !strcmp(overlap2, "XXXX");
        seen_y |= !strcmp(overlap2, "YYYY");
        seen_none |= !strcmp(overlap2, "....");
    }
    ck_assert_msg(seen_x && seen_y && seen_none, "the place written twice: X %d, Y %d, neither %d", seen_x, seen_y,
                  seen_none);
}
END_TEST

static void fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fsync(fd), 0);
    close(fd);
}

START_TEST(no_dir_sync_undoes_names_whose_directory_was_not_fsynced)
{
    SKIP_IF_NO_FUSE();
    mount_fs("no-dir-sync", "mkdir a b && printf old > b/target && printf v > b/victim && printf old > a/target", NULL);
    set_fault("no-dir-sync");
    put(M("b/tmp"), "new", true);
    fsync_dir(M("b"));                      /* b/tmp itself is durable */
    /* Made, its data fsynced: kept only where its directory was fsynced. */
    put(M("a/kept"), "data", true);
    put(M("b/lost"), "data", true);
    /* A rename over a file (the commit of many a database): kept in a/,
     * undone in b/, where the old target comes back and the new name goes. */
    put(M("a/tmp"), "new", true);
    ck_assert_int_eq(rename(M("a/tmp"), M("a/target")), 0);
    ck_assert_int_eq(rename(M("b/tmp"), M("b/target")), 0);
    /* An unlink (SQLite's commit in a rollback journal), undone in b/. */
    ck_assert_int_eq(unlink(M("b/victim")), 0);
    /* A directory made in b/, and a file in it: its own fsync is not enough. */
    ck_assert_int_eq(mkdir(M("b/sub"), 0755), 0);
    put(M("b/sub/x"), "in sub", true);
    fsync_dir(M("b/sub"));
    fsync_dir(M("a"));
    /* While the power is on, every name is as it was made. */
    ASSERT_CONTENT(M("b/target"), "new");
    ck_assert_int_eq(access(M("b/victim"), F_OK), -1);
    ck_assert_int_eq(access(M("b/sub/x"), F_OK), 0);
    ck_assert_int_eq(run_cmd(out, sizeof out, "ls -A '%s'", mnt), 0);
    ck_assert_msg(!strstr(out, "stash"), "the mount shows its stash: %s", out);
    cut();
    ASSERT_CONTENT(B("a/kept"), "data");
    ASSERT_CONTENT(B("a/target"), "new");
    ck_assert_int_eq(access(B("a/tmp"), F_OK), -1);
    ck_assert_int_eq(access(B("b/lost"), F_OK), -1);
    ASSERT_CONTENT(B("b/target"), "old");
    ASSERT_CONTENT(B("b/tmp"), "new");
    ASSERT_CONTENT(B("b/victim"), "v");
    ck_assert_int_eq(access(B("b/sub"), F_OK), -1);
    ck_assert_int_eq(run_cmd(out, sizeof out, "ls -A '%s'", backing), 0);
    ck_assert_str_eq(out, "a\nb\n");
    ck_assert_int_eq(run_cmd(out, sizeof out, "grep -q 'no-dir-sync: 4 of 4 name operations undone' '%s'",
                             logfile), 0);
}
END_TEST

START_TEST(fsync_eio_once_loses_what_the_failed_fsync_held)
{
    SKIP_IF_NO_FUSE();
    mount_fs("fsync-eio-once", "printf first > victim", NULL);
    put(M("other"), "before", true);       /* fsyncs before the fault succeed */
    set_fault("fsync-eio:once,file=victim");
    int fd = open(M("victim"), O_RDWR);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, "SECOND", 6, 0), 6);
    ck_assert_int_eq(fsync(fd), -1);
    ck_assert_int_eq(errno, EIO);
    /* The data is still read back; the retried fsync succeeds, and has
     * nothing to write (Rebello et al.: the pages were marked clean). */
    char buf[16] = "";
    ck_assert_int_eq(pread(fd, buf, 6, 0), 6);
    ck_assert_str_eq(buf, "SECOND");
    ck_assert_int_eq(fsync(fd), 0);
    /* Once: later writes are synced as ever; other files never failed. */
    ck_assert_int_eq(pwrite(fd, "third", 5, 8192), 5);
    ck_assert_int_eq(fsync(fd), 0);
    close(fd);
    put(M("other"), "after", true);
    cut();
    fd = open(B("victim"), O_RDONLY);
    ck_assert_int_ge(fd, 0);
    memset(buf, 0, sizeof buf);
    ck_assert_int_eq(pread(fd, buf, 6, 0), 6);
    ck_assert_msg(!memcmp(buf, "first", 5), "the victim's first page holds '%s', not the write before the fault", buf);
    ck_assert_int_eq(pread(fd, buf, 5, 8192), 5);
    ck_assert_int_eq(memcmp(buf, "third", 5), 0);
    close(fd);
    ASSERT_CONTENT(B("other"), "after");
    ck_assert_int_eq(run_cmd(out, sizeof out, "grep -c 'fsync-eio: fsync [0-9]* of /victim failed' '%s'", logfile), 0);
    ck_assert_str_eq(out, "1\n");
}
END_TEST

START_TEST(fsync_eio_always_fails_every_fsync_of_one_file)
{
    SKIP_IF_NO_FUSE();
    mount_fs("fsync-eio-always", NULL, NULL);
    set_fault("fsync-eio:always");
    /* The first file fsynced after the fault is the one that fails. */
    int a = open(M("a"), O_RDWR | O_CREAT, 0644), b = open(M("b"), O_RDWR | O_CREAT, 0644);
    ck_assert_int_ge(a, 0);
    ck_assert_int_ge(b, 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(pwrite(a, "aaaa", 4, i * 4), 4);
        ck_assert_int_eq(fsync(a), -1);
        ck_assert_int_eq(errno, EIO);
        ck_assert_int_eq(fdatasync(a), -1);
        ck_assert_int_eq(pwrite(b, "bbbb", 4, i * 4), 4);
        ck_assert_int_eq(fsync(b), 0);
    }
    char buf[16] = "";
    ck_assert_int_eq(pread(a, buf, 12, 0), 12);
    ck_assert_str_eq(buf, "aaaaaaaaaaaa");
    close(a);
    close(b);
    cut();
    ASSERT_CONTENT(B("a"), "");
    ASSERT_CONTENT(B("b"), "bbbbbbbbbbbb");
    /* A bad spec is refused with a clear word, and nothing changes. */
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --fault fsync-eio:sometimes '%s'", prog("powerfs"), mnt), 2);
    ck_assert_ptr_nonnull(strstr(out, "fsync-eio has no variant 'sometimes' (once or always)"));
}
END_TEST

/* ---- SQLite ------------------------------------------------------------ */

static void exec_sql(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    ck_assert_msg(rc == SQLITE_OK, "%s: %s", sql, err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
}

static int one_text(void *arg, int n, char **v, char **names)
{
    (void)names;
    snprintf(arg, 256, "%s", n > 0 && v[0] ? v[0] : "NULL");
    return 0;
}

static void query(const char *path, const char *sql, char *answer)
{
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    char *err = NULL;
    answer[0] = 0;
    int rc = sqlite3_exec(db, sql, one_text, answer, &err);
    ck_assert_msg(rc == SQLITE_OK, "%s on %s: %s", sql, path, err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    sqlite3_close(db);
}

static void sqlite_case(const char *mode)
{
    char name[32];
    snprintf(name, sizeof name, "sqlite-%s", mode);
    mount_fs(name, NULL, NULL);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(M("t.db"), &db), SQLITE_OK);
    char sql[256];
    snprintf(sql, sizeof sql, "PRAGMA journal_mode = %s", mode);
    exec_sql(db, sql);
    exec_sql(db, "PRAGMA synchronous = FULL");
    exec_sql(db, "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)");
    exec_sql(db, "INSERT INTO t VALUES (1, 'full')");
    exec_sql(db, "PRAGMA synchronous = OFF");
    exec_sql(db, "BEGIN; INSERT INTO t VALUES (2, 'off'); UPDATE t SET v = 'changed' WHERE k = 1; COMMIT");
    char answer[256];
    sqlite3_exec(db, "SELECT group_concat(k || v, ',') FROM t", one_text, answer, NULL);
    ck_assert_str_eq(answer, "1changed,2off");
    cut();
    sqlite3_close_v2(db);   /* its files are gone with the mount */
    query(B("t.db"), "PRAGMA integrity_check", answer);
    ck_assert_str_eq(answer, "ok");
    query(B("t.db"), "SELECT group_concat(k || v, ',') FROM t", answer);
    ck_assert_msg(!strcmp(answer, "1full"), "journal_mode %s: after the cut t holds '%s', not '1full'",
                  mode, answer);
}

START_TEST(sqlite_full_survives_a_cut_off_is_lost)
{
    SKIP_IF_NO_FUSE();
    sqlite_case("delete");
    sqlite_case("wal");
}
END_TEST

/* ---- the databases on powerfs: the driver end to end ------------------- */

/* The slow case: scripts/crash's driver (bench/crash.mjs) with databases
 * of its own (ZB_CRASH_DIR under the test's directory, free ports), one
 * setting each whose outcome is certain: what commits with an fsync loses
 * nothing to either crash; what never fsyncs (SQLite synchronous=OFF,
 * MyISAM) loses every acknowledged write to a power cut. */
static char crash_dir[1200], crash_env[1400];
static bool db_skipped;

static void db_setup(void)
{
    setup();
    if (skipped) {
        db_skipped = true;
        return;
    }
    if (run_cmd(NULL, 0, "ls /usr/lib/postgresql/*/bin/initdb && command -v mariadbd mariadb-install-db "
                         "sqlite3 node || test -x /usr/sbin/mariadbd") != 0) {
        db_skipped = true;
        printf("crash: databases: skipped: PostgreSQL, MariaDB, sqlite3 or node missing (scripts/setup)\n");
        fflush(stdout);
        return;
    }
    snprintf(crash_dir, sizeof crash_dir, "%s/db", root);
    snprintf(crash_env, sizeof crash_env,
             "ZB_CRASH_DIR='%s' ZB_CRASH_PG_PORT=%d ZB_CRASH_MY_PORT=%d ZB_CRASH_PORT=%d", crash_dir,
             free_port(25452), free_port(23326), free_port(18271));
}

static void db_teardown(void)
{
    if (db_skipped)
        return;
    run_cmd(NULL, 0, "%s scripts/crashdb destroy", crash_env);
    teardown();
}

/* One driver run: its results.jsonl lines in res (each run a line). */
static void drive(const char *args, char *res, size_t len)
{
    static int n;
    char outdir[1300];
    snprintf(outdir, sizeof outdir, "%s/out-%d-%d", crash_dir, (int)getpid(), ++n);
    int rc = run_cmd(out, sizeof out, "rm -rf '%s' && %s node bench/crash.mjs --rows 3000 --out '%s' %s", outdir,
                     crash_env, outdir, args);
    ck_assert_msg(rc == 0, "bench/crash.mjs %s: exit %d: %s", args, rc, out);
    char file[1400];
    snprintf(file, sizeof file, "%s/results.jsonl", outdir);
    ck_assert_msg(slurp(file, res, len) > 0, "no %s", file);
}

/* The number after "key": in the n-th line (0-based) of res. */
static double field(const char *res, int n, const char *key)
{
    const char *l = res;
    for (int i = 0; i < n && l; i++)
        if ((l = strchr(l, '\n')))
            l++;
    ck_assert_msg(l && *l, "no line %d in %s", n, res);
    char line[4096];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(l, "\n"), l);
    double v = json_num(line, key);
    ck_assert_msg(v >= 0, "no \"%s\" in %s", key, line);
    return v;
}

#define DB_SKIP()           \
    do {                    \
        if (db_skipped)     \
            return;         \
    } while (0)

START_TEST(durable_settings_lose_nothing_to_either_crash)
{
    DB_SKIP();
    char res[8192];
    drive("--backend pg --setting synchronous_commit=on,fsync=on", res, sizeof res);
    for (int i = 0; i < 2; i++) {   /* process, power */
        ck_assert_msg(field(res, i, "acknowledged") > 0, "%s", res);
        ck_assert_msg(field(res, i, "lost") == 0, "%s", res);
    }
    drive("--backend innodb --setting innodb_flush_log_at_trx_commit=1 --kind power", res, sizeof res);
    ck_assert_msg(field(res, 0, "acknowledged") > 0 && field(res, 0, "lost") == 0, "%s", res);
    ck_assert_ptr_nonnull(strstr(res, "\"integrity\":{\"ok\":true"));
    drive("--backend sqlite --setting journal_mode=wal,synchronous=full --kind power", res, sizeof res);
    ck_assert_msg(field(res, 0, "acknowledged") > 0 && field(res, 0, "lost") == 0, "%s", res);
    ck_assert_ptr_nonnull(strstr(res, "\"integrity\":{\"ok\":true"));
    /* The whole table audited: every row of the baseline, each a state that existed. */
    ck_assert_msg(strstr(res, "\"missing\":0,") && strstr(res, "\"stateExisted\":true"), "%s", res);
    ck_assert_msg(field(res, 0, "rows") == field(res, 0, "baselineRows"), "%s", res);
}
END_TEST

/* fsync-eio (Rebello et al.): InnoDB stops at a failed fsync of its redo
 * log, PostgreSQL PANICs at one of its WAL and starts again; neither
 * acknowledges a write it then loses. */
START_TEST(a_failed_fsync_stops_innodb_and_restarts_postgresql)
{
    DB_SKIP();
    char res[8192];
    drive("--backend innodb --setting innodb_flush_log_at_trx_commit=1 --kind fsync-eio", res, sizeof res);
    ck_assert_msg(strstr(res, "\"faultOutcome\":\"stopped\"") && field(res, 0, "failedFsyncs") >= 1, "%s", res);
    ck_assert_msg(field(res, 0, "lost") == 0 && strstr(res, "\"stateExisted\":true"), "%s", res);
    drive("--backend pg --setting synchronous_commit=on,fsync=on --kind fsync-eio", res, sizeof res);
    ck_assert_msg(strstr(res, "\"faultOutcome\":\"restarted\"") && strstr(res, "PANIC"), "%s", res);
    ck_assert_msg(field(res, 0, "lost") == 0 && strstr(res, "\"stateExisted\":true"), "%s", res);
}
END_TEST

START_TEST(writes_never_fsynced_are_lost_to_a_power_cut_only)
{
    DB_SKIP();
    char res[8192];
    drive("--backend sqlite --setting journal_mode=delete,synchronous=off", res, sizeof res);
    /* A process crash: SQLite had handed every commit to the kernel. */
    ck_assert_msg(field(res, 0, "acknowledged") > 0 && field(res, 0, "lost") == 0, "%s", res);
    /* A power cut: none of it was fsynced. */
    double acked = field(res, 1, "acknowledged");
    ck_assert_msg(acked > 0 && field(res, 1, "lost") == acked, "%s", res);
    ck_assert_ptr_nonnull(strstr(strchr(res, '\n'), "\"integrity\":{\"ok\":true"));
    drive("--backend myisam --kind power", res, sizeof res);
    acked = field(res, 0, "acknowledged");
    ck_assert_msg(acked > 0 && field(res, 0, "lost") == acked, "%s", res);
    ck_assert_ptr_nonnull(strstr(res, "\"integrity\":{"));
    /* Nothing is left behind: no mount, no database of the driver's. */
    ck_assert_int_eq(run_cmd(out, sizeof out, "grep -c ' %s/mnt ' /proc/mounts", crash_dir), 1);
    ck_assert_int_ne(run_cmd(out, sizeof out, "%s scripts/crashdb status", crash_env), 0);
    ck_assert_msg(strstr(out, "PostgreSQL stopped") && strstr(out, "MariaDB stopped"), "%s", out);
}
END_TEST

Suite *suite_crash(void)
{
    return suite_of("crash",
                    tier(test_case("powerfs", setup, teardown, 120,
                                   TESTS(an_unsynced_write_is_lost_a_synced_one_kept,
                                         a_truncation_waits_for_fsync_too,
                                         random_io_matches_a_model_and_the_last_fsync,
                                         what_databases_call_works,
                                         threads_writing_and_syncing_at_once,
                                         sigusr1_cuts_and_unmount_drops_or_syncs,
                                         torn_op_keeps_a_prefix_of_the_last_write_not_synced,
                                         torn_seq_keeps_a_subset_of_the_writes_since_the_fsync,
                                         no_dir_sync_undoes_names_whose_directory_was_not_fsynced,
                                         fsync_eio_once_loses_what_the_failed_fsync_held,
                                         fsync_eio_always_fails_every_fsync_of_one_file,
                                         sqlite_full_survives_a_cut_off_is_lost)),
                         TIER_UNIT),
                    tier(test_case("databases", db_setup, db_teardown, 600,
                                   TESTS(durable_settings_lose_nothing_to_either_crash,
                                         writes_never_fsynced_are_lost_to_a_power_cut_only,
                                         a_failed_fsync_stops_innodb_and_restarts_postgresql)),
                         TIER_SLOW),
                    NULL);
}
