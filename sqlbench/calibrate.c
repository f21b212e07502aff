/* calibrate: the machine's own costs, which the other experiments' figures
 * are made of. Once per run: a flush of an 8 kB write (pwrite + fdatasync
 * on one file, as pg_test_fsync times PostgreSQL's default wal_sync_method)
 * in the scratch directory; a loopback TCP round trip of one byte; a
 * process spawn (posix_spawn of /bin/true and its wait); a wake-up (a
 * thread asleep in epoll_wait woken through an eventfd, and answering
 * through another: a round trip is two); a context switch (two processes
 * on one CPU taking turns through a pipe: a round trip is two); a fork and
 * exit (fork, _exit, waitpid); a memory-bound load (a chain of dependent
 * reads through 64 MiB, as a cache miss costs). Per backend: a connection
 * made and closed (an SQLite open and close). Each run times n of them; a
 * figure's per-operation cost is its seconds over n. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sqlbench.h"

extern char **environ;

/* The figures of the machine itself carry this in place of a backend. */
static struct backend_conf machine_conf = { .name = "machine" };
static struct sb_target machine = { .bc = &machine_conf };

static int time_fsync(const char *dir, int n, double *secs, struct zb_err *err)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/sqlbench-fsync.tmp", dir);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (fd < 0)
        return zb_fail(err, ZB_ERR_SYS, "%s: %s", path, strerror(errno));
    static char page[8192];
    memset(page, 'x', sizeof page);
    int rc = 0;
    /* The block exists before the clock starts: only overwrites are timed. */
    if (pwrite(fd, page, sizeof page, 0) != (ssize_t)sizeof page || fsync(fd) < 0)
        rc = zb_fail(err, ZB_ERR_SYS, "%s: %s", path, strerror(errno));
    double t0 = zb_now_s();
    for (int i = 0; i < n && rc == 0; i++)
        if (pwrite(fd, page, sizeof page, 0) != (ssize_t)sizeof page || fdatasync(fd) < 0)
            rc = zb_fail(err, ZB_ERR_SYS, "%s: %s", path, strerror(errno));
    *secs = zb_now_s() - t0;
    close(fd);
    unlink(path);
    return rc;
}

static void *echo_main(void *arg)
{
    int fd = *(int *)arg;
    char c;
    while (read(fd, &c, 1) == 1)
        if (write(fd, &c, 1) != 1)
            break;
    return NULL;
}

/* One byte each way between two threads over 127.0.0.1, TCP_NODELAY. */
static int time_tcp(int n, double *secs, struct zb_err *err)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0), cfd = -1, sfd = -1, one = 1, rc = 0;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof a;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 1) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &alen) < 0 ||
        (cfd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
        connect(cfd, (struct sockaddr *)&a, sizeof a) < 0 || (sfd = accept(lfd, NULL, NULL)) < 0) {
        rc = zb_fail(err, ZB_ERR_SYS, "loopback TCP: %s", strerror(errno));
        goto out;
    }
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_t echo;
    if (pthread_create(&echo, NULL, echo_main, &sfd) != 0) {
        rc = zb_fail(err, ZB_ERR_SYS, "cannot start a thread");
        goto out;
    }
    char c = 'x';
    double t0 = zb_now_s();
    for (int i = 0; i < n && rc == 0; i++)
        if (write(cfd, &c, 1) != 1 || read(cfd, &c, 1) != 1)
            rc = zb_fail(err, ZB_ERR_SYS, "loopback TCP: %s", strerror(errno));
    *secs = zb_now_s() - t0;
    shutdown(cfd, SHUT_RDWR);
    pthread_join(echo, NULL);
out:
    if (sfd >= 0)
        close(sfd);
    if (cfd >= 0)
        close(cfd);
    if (lfd >= 0)
        close(lfd);
    return rc;
}

static int time_spawn(int n, double *secs, struct zb_err *err)
{
    char *const argv[] = { "true", NULL };
    double t0 = zb_now_s();
    for (int i = 0; i < n; i++) {
        pid_t pid;
        int status, e = posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ);
        if (e != 0)
            return zb_fail(err, ZB_ERR_SYS, "posix_spawn /bin/true: %s", strerror(e));
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return zb_fail(err, ZB_ERR_SYS, "/bin/true did not exit 0");
    }
    *secs = zb_now_s() - t0;
    return 0;
}

/* A thread asleep in epoll_wait on an eventfd, woken, waking back: n
 * round trips (two wake-ups each). */
struct wake_pair {
    int to, back, ep;
    int n;
};

static void *wake_main(void *arg)
{
    struct wake_pair *w = arg;
    struct epoll_event ev;
    uint64_t v;
    for (int i = 0; i < w->n; i++) {
        if (epoll_wait(w->ep, &ev, 1, 5000) != 1 || read(w->to, &v, sizeof v) != sizeof v)
            break;
        v = 1;
        if (write(w->back, &v, sizeof v) != sizeof v)
            break;
    }
    return NULL;
}

static int time_wake(int n, double *secs, struct zb_err *err)
{
    struct wake_pair w = { eventfd(0, 0), eventfd(0, 0), epoll_create1(0), n };
    struct epoll_event ev = { .events = EPOLLIN };
    pthread_t t;
    int rc = 0;
    if (w.to < 0 || w.back < 0 || w.ep < 0 || epoll_ctl(w.ep, EPOLL_CTL_ADD, w.to, &ev) < 0 ||
        pthread_create(&t, NULL, wake_main, &w) != 0) {
        rc = zb_fail(err, ZB_ERR_SYS, "eventfd ping-pong: %s", strerror(errno));
    } else {
        uint64_t v = 1;
        double t0 = zb_now_s();
        for (int i = 0; i < n && rc == 0; i++)
            if (write(w.to, &v, sizeof v) != sizeof v || read(w.back, &v, sizeof v) != sizeof v)
                rc = zb_fail(err, ZB_ERR_SYS, "eventfd ping-pong: %s", strerror(errno));
        *secs = zb_now_s() - t0;
        pthread_join(t, NULL);
    }
    close(w.to);
    close(w.back);
    close(w.ep);
    return rc;
}

/* Two processes on one CPU, taking turns through two pipes: n round
 * trips, two switches each. */
static int time_switch(int n, double *secs, struct zb_err *err)
{
    int a[2], b[2];
    if (pipe(a) < 0 || pipe(b) < 0)
        return zb_fail(err, ZB_ERR_SYS, "pipe: %s", strerror(errno));
    cpu_set_t one, was;
    sched_getaffinity(0, sizeof was, &was);
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &was)) {
            CPU_SET(c, &one);
            break;
        }
    sched_setaffinity(0, sizeof one, &one);
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        close(a[1]);   /* its read ends when the parent's write end closes */
        close(b[0]);
        while (read(a[0], &c, 1) == 1 && write(b[1], &c, 1) == 1)
            ;
        _exit(0);
    }
    close(a[0]);
    close(b[1]);
    a[0] = b[1] = -1;
    int rc = pid < 0 ? zb_fail(err, ZB_ERR_SYS, "fork: %s", strerror(errno)) : 0;
    char c = 'x';
    double t0 = zb_now_s();
    for (int i = 0; i < n && rc == 0; i++)
        if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
            rc = zb_fail(err, ZB_ERR_SYS, "pipe ping-pong: %s", strerror(errno));
    *secs = zb_now_s() - t0;
    close(a[1]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    close(b[0]);
    sched_setaffinity(0, sizeof was, &was);
    return rc;
}

static int time_fork(int n, double *secs, struct zb_err *err)
{
    double t0 = zb_now_s();
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        if (pid < 0 || waitpid(pid, NULL, 0) < 0)
            return zb_fail(err, ZB_ERR_SYS, "fork: %s", strerror(errno));
    }
    *secs = zb_now_s() - t0;
    return 0;
}

/* n dependent loads through a random cycle of 64 MiB of pointers. */
static int time_memory(int n, double *secs, struct zb_err *err)
{
    size_t count = (64u << 20) / sizeof(size_t);
    size_t *next = malloc(count * sizeof *next);
    if (!next)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    for (size_t i = 0; i < count; i++)
        next[i] = i;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = count - 1; i > 0; i--) {   /* Sattolo's shuffle: one cycle through all */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t j = (size_t)(x % i), t = next[i];
        next[i] = next[j];
        next[j] = t;
    }
    size_t at = 0;
    double t0 = zb_now_s();
    for (int i = 0; i < n; i++)
        at = next[at];
    *secs = zb_now_s() - t0;
    __asm__ volatile("" : : "r"(at));
    free(next);
    return 0;
}

int sb_calibrate_machine(const struct sb_opts *o, struct zb_err *err)
{
    struct utsname u;
    uname(&u);
    snprintf(machine.version, sizeof machine.version, "%.40s %.50s", u.sysname, u.release);
    const int nfsync = o->calib_n * 5, ntcp = o->calib_n * 50, nspawn = o->calib_n * 2;
    const int nwake = o->calib_n * 50, nfork = o->calib_n * 4, nmem = o->calib_n * 2000;
    enum { NFIG = 7 };
    struct sb_figure *f = calloc(NFIG, sizeof *f);
    if (!f)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    char where[1200];
    snprintf(where, sizeof where, "fsync: 8 kB pwrite + fdatasync in %s", o->scratch);
    sb_figure_init(&f[0], "calibrate", where, &machine, "", nfsync);
    sb_figure_init(&f[1], "calibrate", "tcp: 1-byte round trip on 127.0.0.1", &machine, "", ntcp);
    sb_figure_init(&f[2], "calibrate", "spawn: posix_spawn /bin/true + waitpid", &machine, "", nspawn);
    sb_figure_init(&f[3], "calibrate", "wake: an eventfd round trip between two threads (two wake-ups "
                   "from epoll_wait)", &machine, "", nwake);
    sb_figure_init(&f[4], "calibrate", "switch: a pipe round trip between two processes on one CPU "
                   "(two context switches)", &machine, "", nwake);
    sb_figure_init(&f[5], "calibrate", "fork: fork + _exit + waitpid", &machine, "", nfork);
    sb_figure_init(&f[6], "calibrate", "memory: a dependent load through 64 MiB", &machine, "", nmem);
    int rc = 0;
    for (int r = 0; r < o->repeat && rc == 0; r++) {
        double s = 0;
        if ((rc = time_fsync(o->scratch, nfsync, &s, err)) == 0)
            sb_figure_add(&f[0], s, 0, 0);
        if (rc == 0 && (rc = time_tcp(ntcp, &s, err)) == 0)
            sb_figure_add(&f[1], s, 0, 0);
        if (rc == 0 && (rc = time_spawn(nspawn, &s, err)) == 0)
            sb_figure_add(&f[2], s, 0, 0);
        if (rc == 0 && (rc = time_wake(nwake, &s, err)) == 0)
            sb_figure_add(&f[3], s, 0, 0);
        if (rc == 0 && (rc = time_switch(nwake, &s, err)) == 0)
            sb_figure_add(&f[4], s, 0, 0);
        if (rc == 0 && (rc = time_fork(nfork, &s, err)) == 0)
            sb_figure_add(&f[5], s, 0, 0);
        if (rc == 0 && (rc = time_memory(nmem, &s, err)) == 0)
            sb_figure_add(&f[6], s, 0, 0);
    }
    for (int i = 0; i < NFIG && rc == 0; i++)
        sb_record(&f[i]);
    free(f);
    return rc;
}

int sb_calibrate_connect(const struct sb_opts *o, const struct sb_target *t, struct zb_err *err)
{
    int n = t->in_process ? o->calib_n * 2 : o->calib_n;
    struct sb_figure *f = calloc(1, sizeof *f);
    if (!f)
        return zb_fail(err, ZB_ERR_SYS, "out of memory");
    sb_figure_init(f, "calibrate", t->in_process ? "open + close" : "connect + close", t, NULL, n);
    int rc = 0;
    for (int r = 0; r < o->repeat && rc == 0; r++) {
        double t0 = zb_now_s();
        for (int i = 0; i < n && rc == 0; i++) {
            struct backend b;
            rc = backend_open(&b, t->bc, err);
            backend_close(&b);
        }
        if (rc == 0)
            sb_figure_add(f, zb_now_s() - t0, 0, 0);
    }
    if (rc == 0)
        sb_record(f);
    free(f);
    return rc;
}
