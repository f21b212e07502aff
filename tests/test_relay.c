/* build/bin/relay on loopback: a delay line between the test and an echo
 * server of its own (a child process: the runner forks each test, and a
 * thread of the runner would be a stray one in each child). What goes in comes out whole and in order,
 * both ways, late by the RTT asked for; a side that closes is closed on
 * the other side after its data; a target that refuses closes the client;
 * bad arguments and a port in use are errors. Delays are checked from
 * below only (the box may be slow, never fast). */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "util.h"

#define RELAY_PORT 18600
#define ECHO_PORT 18601
#define CLOSED_PORT 18602  /* nothing listens: the relay's target refuses */
#define RTT_MS 10

static int echo_fd = -1;
static pid_t relay_pid, echo_pid;
static char logfile[1100];

/* Echoes one connection until the client ends it, then ends its own side. */
static void *echo_one(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(fd, buf + off, (size_t)(n - off));
            if (w <= 0)
                goto out;
            off += w;
        }
out:
    close(fd);
    return NULL;
}

static void *echo_server(void *arg)
{
    (void)arg;
    int fd;
    while ((fd = accept(echo_fd, NULL, NULL)) >= 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, echo_one, (void *)(intptr_t)fd) == 0)
            pthread_detach(t);
        else
            close(fd);
    }
    return NULL;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), on = 1;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = { .tv_sec = 10 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void setup(void)
{
    snprintf(logfile, sizeof logfile, "%s/relay.log", test_dir("relay"));
    echo_fd = socket(AF_INET, SOCK_STREAM, 0);
    int on = 1;
    setsockopt(echo_fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(ECHO_PORT) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(echo_fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(echo_fd, 64) < 0) {
        close(echo_fd);
        echo_fd = -1;
        return;
    }
    echo_pid = fork();
    if (echo_pid == 0) {
        signal(SIGTERM, SIG_DFL);   /* not the runner's handler, which stops its whole group */
        echo_server(NULL);
        _exit(0);
    }
    close(echo_fd);
    relay_pid = fork();
    if (relay_pid == 0) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "exec %s --rtt %d --threads 2 127.0.0.1:%d=127.0.0.1:%d "
                 "127.0.0.1:%d=127.0.0.1:%d 2> '%s'", prog("relay"), RTT_MS, RELAY_PORT, ECHO_PORT,
                 RELAY_PORT + 10, CLOSED_PORT, logfile);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {   /* until it listens */
        int fd = connect_to(RELAY_PORT);
        if (fd >= 0) {
            close(fd);
            break;
        }
        usleep(25 * 1000);
    }
}

static void teardown(void)
{
    if (relay_pid > 0) {
        kill(relay_pid, SIGTERM);
        waitpid(relay_pid, NULL, 0);
    }
    if (echo_pid > 0) {
        kill(echo_pid, SIGTERM);
        waitpid(echo_pid, NULL, 0);
    }
}

#define SETUP_OK() ck_assert_msg(echo_pid > 0 && relay_pid > 0, "echo port %d or relay not up", ECHO_PORT)

static size_t read_all(int fd, char *buf, size_t want)
{
    size_t got = 0;
    ssize_t n;
    while (got < want && (n = read(fd, buf + got, want - got)) > 0)
        got += (size_t)n;
    return got;
}

START_TEST(data_whole_and_late_by_the_rtt)
{
    SETUP_OK();
    uint64_t t0 = zb_now_ns();
    int fd = connect_to(RELAY_PORT);
    ck_assert_int_ge(fd, 0);
    /* The first round trip pays the setup (one RTT) and one RTT. */
    ck_assert_int_eq(write(fd, "x", 1), 1);
    char c;
    ck_assert_int_eq(read(fd, &c, 1), 1);
    double ms = (double)(zb_now_ns() - t0) / 1e6;
    ck_assert_msg(ms >= 2 * RTT_MS, "setup and first echo in %.1f ms, want >= %d", ms, 2 * RTT_MS);
    /* Each later round trip one RTT. */
    t0 = zb_now_ns();
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(write(fd, "y", 1), 1);
        ck_assert_int_eq(read(fd, &c, 1), 1);
    }
    ms = (double)(zb_now_ns() - t0) / 1e6 / 5;
    ck_assert_msg(ms >= RTT_MS, "a round trip took %.2f ms, want >= %d", ms, RTT_MS);
    /* 8 MiB of bytes no two alike in order, written by a thread while this
     * one reads the echo: the relay's backpressure both ways. */
    size_t len = 8u << 20;
    char *data = malloc(len), *back = malloc(len);
    uint64_t seed = 14;
    for (size_t i = 0; i < len; i++)
        data[i] = (char)zb_rand(&seed);
    pid_t writer = fork();
    if (writer == 0) {
        for (size_t off = 0; off < len;) {
            ssize_t w = write(fd, data + off, len - off);
            if (w <= 0)
                _exit(1);
            off += (size_t)w;
        }
        shutdown(fd, SHUT_WR);
        _exit(0);
    }
    size_t got = read_all(fd, back, len);
    int st;
    waitpid(writer, &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the writer failed");
    ck_assert_msg(got == len && !memcmp(data, back, len), "got %zu of %zu bytes back%s", got, len,
                  got == len ? ", not the same" : "");
    /* Our end reached the echo server after the data, and its end came back. */
    ck_assert_int_eq(read(fd, &c, 1), 0);
    close(fd);
    free(data);
    free(back);
}
END_TEST

START_TEST(target_refused_closes_the_client)
{
    SETUP_OK();
    int fd = connect_to(RELAY_PORT + 10);
    ck_assert_int_ge(fd, 0);
    (void)!write(fd, "x", 1);
    char c;
    uint64_t t0 = zb_now_ns();
    ck_assert_int_le(read(fd, &c, 1), 0);
    ck_assert_msg(zb_now_ns() - t0 < 5000000000ull, "the client was not closed within 5 s");
    close(fd);
}
END_TEST

START_TEST(usage_and_port_in_use)
{
    SETUP_OK();
    char out[4096];
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s", prog("relay")), 2);
    ck_assert_msg(strstr(out, "no LISTEN=TARGET"), "%s", out);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s 127.0.0.1:1", prog("relay")), 2);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --rtt -1 127.0.0.1:1=127.0.0.1:2", prog("relay")), 2);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --threads 0 127.0.0.1:1=127.0.0.1:2", prog("relay")), 2);
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s --help", prog("relay")), 0);
    ck_assert_msg(strstr(out, "SYNOPSIS"), "%s", out);
    /* The echo server's port is taken, and not by a relay. */
    ck_assert_int_eq(run_cmd(out, sizeof out, "%s 127.0.0.1:%d=127.0.0.1:1", prog("relay"), ECHO_PORT), 1);
    ck_assert_msg(strstr(out, "cannot listen on 127.0.0.1:18601"), "%s", out);
}
END_TEST

Suite *suite_relay(void)
{
    TCase *t = tier(test_case("relay", setup, teardown, 60, TESTS(
        data_whole_and_late_by_the_rtt, target_refused_closes_the_client,
        usage_and_port_in_use)), TIER_UNIT);
    return suite_of("relay", t, NULL);
}
