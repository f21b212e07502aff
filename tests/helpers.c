#include "helpers.h"
#include "conf.h"
#include "kenall.h"

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

const char *build_path(const char *rest)
{
    static char bufs[8][1024];
    static int next;
    char *b = bufs[next++ % 8];
    const char *build = getenv("ZB_BUILD");
    snprintf(b, sizeof bufs[0], "%s/%s", build && *build ? build : "build", rest);
    return b;
}

void build_path_absolute(const char *rest, char *out, size_t len)
{
    char cwd[512];
    const char *d = build_path(rest);
    if (d[0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(out, len, "%s/%s", cwd, d);
    else
        snprintf(out, len, "%s", d);
}

const char *prog(const char *name)
{
    static char bufs[8][1200];
    static int next;
    char *b = bufs[next++ % 8];
    char rest[128];
    snprintf(rest, sizeof rest, "bin/%s", name);
    const char *wrap = getenv("ZB_WRAP");
    snprintf(b, sizeof bufs[0], "%s%s%s", wrap && *wrap ? wrap : "", wrap && *wrap ? " " : "",
             build_path(rest));
    return b;
}

const char *data_path(const char *rest)
{
    static char buf[1024];
    const char *data = getenv("ZB_DATA");
    snprintf(buf, sizeof buf, "%s/%s", data && *data ? data : "build", rest);
    return buf;
}

const char *test_dir(const char *name)
{
    static char dir[1024];
    char rest[256];
    snprintf(rest, sizeof rest, "test/%s", name);
    snprintf(dir, sizeof dir, "%s", build_path(rest));
    char cmd[2100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    return dir;
}

int run_cmd(char *out, size_t outlen, const char *fmt, ...)
{
    char cmd[8192];
    FORMAT_INTO(cmd, fmt);
    strncat(cmd, " 2>&1", sizeof cmd - strlen(cmd) - 1);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = 0;
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, p)) > 0) {
        if (out && n + 1 < outlen) {
            size_t take = got < outlen - 1 - n ? got : outlen - 1 - n;
            memcpy(out + n, buf, take);
            n += take;
        }
    }
    if (out && outlen)
        out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

const char *conf_path(void)
{
    const char *c = getenv("ZB_CONF");
    return c && *c ? c : "conf/zipbench.conf";
}

/* A TCP connection to 127.0.0.1:port whose reads and writes give up after
 * timeout_ms: its fd, or -1. */
static int connect_loopback(int port, int timeout_ms)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int http_exchange(int port, const char *req, size_t reqlen, char *out, size_t outlen,
                  int timeout_ms)
{
    int fd = connect_loopback(port, timeout_ms);
    if (fd < 0)
        return -1;
    for (size_t sent = 0; sent < reqlen;) {
        ssize_t w = send(fd, req + sent, reqlen - sent, MSG_NOSIGNAL);
        if (w <= 0)
            break;   /* the server may answer (414, 431) before reading it all */
        sent += (size_t)w;
    }
    size_t got = 0;
    ssize_t r;
    while (got + 1 < outlen && (r = read(fd, out + got, outlen - 1 - got)) > 0)
        got += (size_t)r;
    close(fd);
    if (outlen)
        out[got] = 0;
    return (int)got;
}

int http_kept_exchange(int port, int *fd, const char *req, char *out, size_t outlen,
                       int timeout_ms)
{
    if (*fd < 0 && (*fd = connect_loopback(port, timeout_ms)) < 0)
        return -1;
    size_t len = strlen(req), got = 0;
    long need = -1;
    if (send(*fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
        goto fail;
    while (need < 0 || (long)got < need) {
        ssize_t k = got + 1 < outlen ? recv(*fd, out + got, outlen - 1 - got, 0) : -1;
        if (k <= 0)
            goto fail;
        got += (size_t)k;
        out[got] = 0;
        const char *end = strstr(out, "\r\n\r\n"), *cl = strcasestr(out, "Content-Length:");
        if (need < 0 && end && cl && cl < end)
            need = (long)(end + 4 - out) + atol(cl + 15);
    }
    return (int)got;
fail:
    close(*fd);
    *fd = -1;
    return -1;
}

int http_status(const char *buf)
{
    int st;
    if (strncmp(buf, "HTTP/1.", 7) || sscanf(buf + 8, " %d", &st) != 1)
        return -1;
    return st;
}

pid_t spawn_server(const char *conf, int port, const char *log, const char *args)
{
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        /* Dies with the test that started it, even one that failed (or
         * timed out) before its term_server: no server is left behind. */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
            _exit(127);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 2);
            dup2(fd, 1);
        }
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "exec %s --conf '%s' --port %d %s", prog("server"), conf, port,
                 args ? args : "");
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

bool await_server(pid_t pid, int port)
{
    char raw[4096];
    static const char req[] = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    for (int i = 0; i < 300; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return false;
        if (http_exchange(port, req, sizeof req - 1, raw, sizeof raw, 5000) > 0 &&
            http_status(raw) > 0)
            return true;
        usleep(50 * 1000);
    }
    return false;
}

int term_server(pid_t pid)
{
    if (pid <= 0)
        return -1;
    kill(pid, SIGTERM);
    int st;
    for (int i = 0; i < 300; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        usleep(50 * 1000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

pid_t fixture_server(const char *conf, int port, const char *log, const char *args, char *why,
                     size_t whylen)
{
    pid_t pid = spawn_server(conf, port, log, args);
    if (pid <= 0 || !await_server(pid, port)) {
        char out[4096];
        run_cmd(out, sizeof out, "cat '%s'", log);
        snprintf(why, whylen, "server did not start: %s", out);
    }
    return pid;
}

int fresh_generated_set(const char *dir, const char *csv, int rows, int seed, char *why,
                        size_t whylen)
{
    char out[4096];
    if (run_cmd(out, sizeof out, "rm -rf '%s' && mkdir -p '%s' && %s --rows %d --seed %d -o %s",
                dir, dir, prog("gen"), rows, seed, csv)) {
        snprintf(why, whylen, "gen: %s", out);
        return -1;
    }
    return 0;
}

int env_port(const char *var, int fallback)
{
    const char *v = getenv(var);
    return v && *v ? atoi(v) : fallback;
}

bool port_is_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* No SO_REUSEADDR: a port a connection still holds (TIME-WAIT) is not free. */
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

int free_port(int from)
{
    for (int p = from; p < 32768; p++)
        if (port_is_free(p))
            return p;
    return -1;
}

int test_port(int preferred)
{
    static struct { int preferred, chosen; } memo[16];
    static int n;
    for (int i = 0; i < n; i++)
        if (memo[i].preferred == preferred)
            return memo[i].chosen;
    int chosen = preferred;
    for (bool taken = true; taken && chosen > 0;) {
        chosen = free_port(chosen);
        taken = false;
        for (int i = 0; i < n; i++)
            if (memo[i].chosen == chosen)   /* another server of the run's */
                taken = true;
        if (taken)
            chosen++;
    }
    if (chosen > 0 && n < (int)(sizeof memo / sizeof memo[0])) {
        memo[n].preferred = preferred;
        memo[n++].chosen = chosen;
    }
    return chosen > 0 ? chosen : preferred;
}

int write_codes(const char *csv, const char *keys, char *code, size_t len, char *why, size_t whylen)
{
    struct zb_err err = { 0 };
    struct kenall_opts o = { 0 };
    struct kenall_reader *r = kenall_open(csv, &o, &err);
    FILE *kf = r && keys ? fopen(keys, "w") : NULL;
    int rc = -1;
    const char *const *f;
    if (r && (kf || !keys)) {
        while (kenall_next(r, &f, &err) == 1) {
            if (rc < 0 && code)
                snprintf(code, len, "%s", f[KENALL_ZIP]);
            rc = 0;
            if (!kf)
                break;
            fprintf(kf, "%s\n", f[KENALL_ZIP]);
        }
    }
    if (rc < 0)
        snprintf(why, whylen, "%s: %s", r && keys && !kf ? keys : csv,
                 err.msg[0] ? err.msg : r && keys && !kf ? "cannot write" : "no row");
    if (kf && fclose(kf) != 0 && rc == 0) {
        snprintf(why, whylen, "%s: cannot write", keys);
        rc = -1;
    }
    if (r)
        kenall_close(r);
    return rc;
}

int first_code(const char *csv, char *code, size_t len, char *why, size_t whylen)
{
    return write_codes(csv, NULL, code, len, why, whylen);
}

static bool section_matches(const char *pattern, const char *section)
{
    size_t n = strlen(pattern);
    return n && pattern[n - 1] == '*' ? !strncmp(pattern, section, n - 1) : !strcmp(pattern, section);
}

/* The change of changes that names section and key (key NULL: the whole
 * section), or NULL. */
static const struct conf_change *change_for(const struct conf_change *changes,
                                            const char *section, const char *key)
{
    for (const struct conf_change *c = changes; c->section; c++)
        if (section_matches(c->section, section) &&
            (c->key ? key && !strcmp(c->key, key) : !key))
            return c;
    return NULL;
}

int write_conf_copy(const char *path, const struct conf_change *changes, const char *extra,
                    char *why, size_t whylen)
{
    static const struct conf_change no_changes[] = { { NULL, NULL, NULL } };
    if (!changes)
        changes = no_changes;
    FILE *in = fopen(conf_path(), "r"), *out = fopen(path, "w");
    if (!in || !out) {
        snprintf(why, whylen, "cannot copy %s to %s", conf_path(), path);
        if (in) fclose(in);
        if (out) fclose(out);
        return -1;
    }
    char line[1024], section[128] = "";
    for (const struct conf_change *c = changes; c->section; c++)
        if (!*c->section && c->key && c->value)   /* before the first section */
            fprintf(out, "%s = %s\n", c->key, c->value);
    while (fgets(line, sizeof line, in)) {
        const char *p = line + strspn(line, " \t");
        if (*p == '[') {
            snprintf(section, sizeof section, "%.*s", (int)strcspn(p + 1, "]"), p + 1);
            if (change_for(changes, section, NULL))
                continue;
            fputs(line, out);
            for (const struct conf_change *c = changes; c->section; c++)
                if (c->key && c->value && section_matches(c->section, section))
                    fprintf(out, "%s = %s\n", c->key, c->value);
            continue;
        }
        char key[64] = "";
        sscanf(p, "%63[a-z_]", key);
        if (!change_for(changes, section, NULL) && !(key[0] && change_for(changes, section, key)))
            fputs(line, out);
    }
    if (extra)
        fputs(extra, out);
    fclose(in);
    fclose(out);
    return 0;
}

int write_conf_with_words(const char *path, const char *words, const char *text,
                          const char *columns, char *why, size_t whylen)
{
    write_file(words, text);
    char dataset[1400];
    snprintf(dataset, sizeof dataset,
             "\n[dataset words]\nfile = %s\nformat = csv\nkey = word\ncolumns = %s\n", words,
             columns);
    return write_conf_copy(path, NULL, dataset, why, whylen);
}

int write_refusing_conf(const char *path, const char *dir, const char *var, int port, bool tcp,
                        char *why, size_t whylen)
{
    char port_value[128], sock[1200], sqlite_file[1200];
    snprintf(port_value, sizeof port_value, "${%s:-%d}", var, port);
    snprintf(sock, sizeof sock, "%s/mysqld.sock", dir);
    snprintf(sqlite_file, sizeof sqlite_file, "%s/refused.sqlite", dir);
    struct conf_change changes[] = {
        { "backend pg", "socket", dir },
        { "backend pg", "port", port_value },
        { "backend innodb", "socket", sock },
        { "backend innodb", "port", port_value },
        { "backend sqlite", "path", sqlite_file },
        { NULL, NULL, NULL },   /* tcp: pg's host */
        { NULL, NULL, NULL },
    };
    if (tcp) {
        changes[0].value = NULL;   /* no socket: the host */
        changes[5] = (struct conf_change){ "backend pg", "host", "127.0.0.1" };
    }
    return write_conf_copy(path, changes, NULL, why, whylen);
}

double json_num(const char *s, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *k = s ? strstr(s, pat) : NULL;
    return k ? atof(k + strlen(pat)) : -1;
}

struct ab_report ab_report(const char *text)
{
    struct ab_report a = { 0 };
    const char *p;
    if ((p = strstr(text, "Complete requests:"))) {
        a.found = true;
        a.complete = atoi(p + 18);
    }
    if ((p = strstr(text, "Failed requests:")))
        a.failed = atoi(p + 16);
    if ((p = strstr(text, "Non-2xx responses:")))
        a.non2xx = atoi(p + 18);
    if ((p = strstr(text, "Requests per second:")))
        a.rps = atof(p + 20);
    if ((p = strstr(text, "(Connect: ")))
        sscanf(p, "(Connect: %d, Receive: %d, Length: %d, Exceptions: %d)", &a.connect,
               &a.receive, &a.length, &a.exceptions);
    return a;
}

TCase *test_case(const char *name, SFun setup, SFun teardown, double timeout_s,
                 const TTest *const *tests)
{
    TCase *tc = tcase_create(name);
    if (setup || teardown)
        tcase_add_unchecked_fixture(tc, setup, teardown);
    for (; *tests; tests++)
        tcase_add_test(tc, *tests);
    if (timeout_s > 0)
        tcase_set_timeout(tc, timeout_s);
    return tc;
}

TCase *tier(TCase *tc, const char *tag)
{
    tcase_set_tags(tc, tag);
    return tc;
}

Suite *suite_of(const char *name, TCase *first, ...)
{
    Suite *s = suite_create(name);
    va_list ap;
    va_start(ap, first);
    for (TCase *tc = first; tc; tc = va_arg(ap, TCase *))
        suite_add_tcase(s, tc);
    va_end(ap);
    return s;
}

/* ---- Ctrl-C ---- */

pid_t start_in_group(const char *cmd)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setsid();
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    /* Until the child is in its session: a signal to its group before
     * then would miss it. */
    while (getsid(pid) != pid && waitpid(pid, NULL, WNOHANG) == 0)
        usleep(1000);
    return pid;
}

/* Of /proc/PID/stat, the fields after the name: state, and the session. */
static bool proc_state(int pid, char *state, int *session)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *close_paren = strrchr(buf, ')');   /* the name may hold spaces */
    int ppid, pgrp;
    return close_paren && sscanf(close_paren + 1, " %c %d %d %d", state, &ppid, &pgrp, session) == 4;
}

/* The command line of pid, its arguments joined by spaces, into cmd. */
static bool cmdline_of(int pid, char *cmd, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(cmd, 1, len - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (!cmd[i])
            cmd[i] = ' ';
    cmd[n] = 0;
    return true;
}

int session_has(pid_t sid, const char *text)
{
    DIR *d = opendir("/proc");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        int pid = atoi(e->d_name), session;
        char state, cmd[8192];
        if (pid > 0 && proc_state(pid, &state, &session) && session == sid && state != 'Z' &&
            cmdline_of(pid, cmd, sizeof cmd))
            n += strstr(cmd, text) != NULL;
    }
    closedir(d);
    return n;
}

/* SIGKILL to every process of session sid (not this one). */
static void kill_session(pid_t sid)
{
    DIR *d = opendir("/proc");
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d));) {
        int pid = atoi(e->d_name), session;
        char state;
        if (pid > 0 && pid != getpid() && proc_state(pid, &state, &session) && session == sid)
            kill(pid, SIGKILL);
    }
    closedir(d);
}

int session_running(pid_t sid)
{
    DIR *d = opendir("/proc");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        int pid = atoi(e->d_name), session;
        char state;
        n += pid > 0 && proc_state(pid, &state, &session) && session == sid && state != 'Z';
    }
    closedir(d);
    return n;
}

bool process_running(pid_t pid)
{
    char state;
    int session;
    return proc_state(pid, &state, &session) && state != 'Z';
}

int processes_with(const char *text)
{
    DIR *d = opendir("/proc");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        int pid = atoi(e->d_name);
        char cmd[8192];
        if (pid <= 0 || pid == getpid() || !cmdline_of(pid, cmd, sizeof cmd))
            continue;
        n += strstr(cmd, text) != NULL;
    }
    closedir(d);
    return n;
}

double ctrl_c_bound_ms(void)
{
    uint64_t t0 = zb_now_ns();
    run_cmd(NULL, 0, "node -e 0");
    return 2000 + 10 * (double)(zb_now_ns() - t0) / 1e6;
}

int ctrl_c(pid_t pid, double *ms, int *left)
{
    uint64_t t0 = zb_now_ns();
    ck_assert_int_eq(kill(-pid, SIGINT), 0);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    *ms = (double)(zb_now_ns() - t0) / 1e6;
    *left = session_running(pid);
    if (*left)   /* what is left, by group: each of the session's */
        kill_session(pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int interrupt_when(const char *cmd, bool (*ready)(pid_t group, void *arg), void *arg, const char *log,
                   double *ms, char *out, size_t outlen)
{
    pid_t pid = start_in_group(cmd);
    bool now = false;
    for (int i = 0; i < 15000 && !now; i++) {
        now = ready(pid, arg);
        if (!now && waitpid(pid, NULL, WNOHANG) != 0)
            break;
        if (!now)
            usleep(20 * 1000);
    }
    if (!now) {
        kill_session(pid);
        run_cmd(out, outlen, "tail -c 2000 '%s'", log);
    }
    ck_assert_msg(now, "`%s` never came to the point to interrupt it: ...%s", cmd, out);
    double bound = ctrl_c_bound_ms();
    int left, rc = ctrl_c(pid, ms, &left);
    run_cmd(out, outlen, "tail -c 2000 '%s'", log);
    fprintf(stderr, "ctrl-c: `%.60s...`: exit %d after %.0f ms (bound %.0f)\n", cmd, rc, *ms, bound);
    ck_assert_msg(left == 0, "%d processes of its session outlived it: ...%s", left, out);
    ck_assert_msg(*ms < bound, "it stopped %.0f ms after SIGINT (bound %.0f): ...%s", *ms, bound, out);
    return rc;
}

int copy_tree(const char *dir, char *why, size_t whylen)
{
    return run_cmd(why, whylen, "mkdir -p '%s' && git ls-files -z --cached --others --exclude-standard | "
                   "tar --null --ignore-failed-read -T - -cf - | tar -xf - -C '%s'", dir, dir);
}

void second_tree_db_ports(int offset, int *pg_port, int *my_port)
{
    struct zb_conf zc;
    struct zb_err err = { 0 };
    ck_assert_msg(conf_load(&zc, conf_path(), &err) == 0, "%s", err.msg);
    *pg_port = free_port(conf_backend(&zc, "pg")->port + offset);
    *my_port = free_port(conf_backend(&zc, "innodb")->port + offset);
    conf_free(&zc);
}

int write_conf_for_csv(const char *path, const char *dir, const char *sqlite_name, char *why,
                       size_t whylen)
{
    char include[1300], sqlite_file[1300];
    snprintf(include, sizeof include, "%s/conf.d/*.conf", dir);
    snprintf(sqlite_file, sizeof sqlite_file, "%s/%s", dir, sqlite_name);
    const struct conf_change changes[] = { { "", "include", include },
                                           { "backend sqlite", "path", sqlite_file },
                                           { NULL, NULL, NULL } };
    return write_conf_copy(path, changes, NULL, why, whylen);
}
