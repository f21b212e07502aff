/* build/bin/relay: flags, listeners, threads; the loop is in loop.c. */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "relay.h"

#define MAX_THREADS 64

static const char usage[] =
"NAME\n"
"    relay - a TCP relay that adds a round-trip time (a delay line)\n"
"\n"
"SYNOPSIS\n"
"    relay [--rtt MS] [--threads N] LISTEN=TARGET...\n"
"    relay --help | -V\n"
"\n"
"DESCRIPTION\n"
"    Listens on each LISTEN address and forwards every connection to its\n"
"    TARGET, as toxiproxy's latency toxic does: every chunk read from one\n"
"    side (what one recv returns) is written to the other side RTT/2 after\n"
"    it was read, in order, and a new connection is held one RTT before the\n"
"    relay connects to the target (the handshake a real link costs). A side\n"
"    that closes is shut for writing on the other side after the data\n"
"    before it; an error on either side closes both. For kernels without\n"
"    sch_netem: scripts/lab --rtt runs it on the lab's wire.\n"
"\n"
"    With --rtt 0 it forwards at once: the cost that remains is the relay's\n"
"    own (two more socket hops and a context switch per chunk), to be\n"
"    measured and shown next to any figure taken through it.\n"
"\n"
"    Runs in the foreground, one line on standard error when it listens and\n"
"    one with its totals when SIGINT or SIGTERM stops it.\n"
"\n"
"OPTIONS\n"
"    -r, --rtt MS        round-trip time to add, in milliseconds (default 0;\n"
"                        fractions allowed, e.g. 0.2)\n"
"    -t, --threads N     event-loop threads (default 1); each listens on every\n"
"                        route (SO_REUSEPORT) and owns the connections it takes\n"
"    -h, --help          this text\n"
"    -V, --version       version\n"
"\n"
"    LISTEN and TARGET are numeric ADDR:PORT (IPv6: [ADDR]:PORT), e.g.\n"
"        relay --rtt 1 198.18.1.10:55432=198.18.0.10:55432\n"
"\n"
"EXIT STATUS\n"
"    0  stopped by a signal\n"
"    1  could not listen (address in use, not local) or start\n"
"    2  usage error\n";

/* ADDR:PORT or [ADDR]:PORT, numeric only. */
static int parse_addr(const char *text, struct sockaddr_storage *out, socklen_t *len)
{
    char host[128];
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text || (size_t)(colon - text) >= sizeof host)
        return -1;
    snprintf(host, sizeof host, "%.*s", (int)(colon - text), text);
    if (host[0] == '[') {
        size_t n = strlen(host);
        if (n < 3 || host[n - 1] != ']')
            return -1;
        memmove(host, host + 1, n - 2);
        host[n - 2] = 0;
    }
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV }, *ai;
    if (getaddrinfo(host, colon + 1, &hints, &ai))
        return -1;
    memcpy(out, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

static int parse_route(const char *arg, struct relay_route *r)
{
    char listen_text[160];
    const char *eq = strchr(arg, '=');
    if (!eq || (size_t)(eq - arg) >= sizeof listen_text)
        return -1;
    snprintf(listen_text, sizeof listen_text, "%.*s", (int)(eq - arg), arg);
    snprintf(r->text, sizeof r->text, "%s", arg);
    return parse_addr(listen_text, &r->listen, &r->listen_len) < 0 ||
                   parse_addr(eq + 1, &r->target, &r->target_len) < 0
               ? -1
               : 0;
}

static int listen_on(const struct relay_route *r)
{
    int fd = socket(r->listen.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int on = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) < 0 ||
        bind(fd, (const struct sockaddr *)&r->listen, r->listen_len) < 0 ||
        listen(fd, 4096) < 0) {
        fprintf(stderr, "relay: cannot listen on %.*s: %s\n", (int)strcspn(r->text, "="), r->text,
                strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "rtt", required_argument, NULL, 'r' }, { "threads", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },      { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    double rtt_ms = 0;
    long threads = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "r:t:hV", opts, NULL)) != -1) {
        switch (ch) {
        case 'r':
            if (cli_double("relay", "--rtt", optarg, 0, 60000, &rtt_ms) < 0)
                return ZB_EXIT_USAGE;
            break;
        case 't':
            if (cli_long("relay", "--threads", optarg, 1, MAX_THREADS, &threads) < 0)
                return ZB_EXIT_USAGE;
            break;
        case 'h': fputs(usage, stdout); return ZB_EXIT_OK;
        case 'V': cli_version("relay", NULL); return ZB_EXIT_OK;
        default: return cli_usage_error("relay");
        }
    }
    static struct relay_route routes[RELAY_MAX_ROUTES];
    int nroutes = 0;
    for (int i = optind; i < argc; i++) {
        if (nroutes == RELAY_MAX_ROUTES) {
            fprintf(stderr, "relay: more than %d routes\n", RELAY_MAX_ROUTES);
            return ZB_EXIT_USAGE;
        }
        if (parse_route(argv[i], &routes[nroutes]) < 0) {
            fprintf(stderr, "relay: '%s' is not LISTEN=TARGET with numeric ADDR:PORT on both "
                    "sides\n", argv[i]);
            return cli_usage_error("relay");
        }
        nroutes++;
    }
    if (!nroutes) {
        fprintf(stderr, "relay: no LISTEN=TARGET given\n");
        return cli_usage_error("relay");
    }

    /* Every listener exists before anything is announced: a port in use is
     * an exit 1, never a relay that half works. */
    static int fds[MAX_THREADS][RELAY_MAX_ROUTES];
    static struct relay_counts counts[MAX_THREADS];
    static struct relay_loop_args args[MAX_THREADS];
    for (int t = 0; t < threads; t++)
        for (int r = 0; r < nroutes; r++)
            if ((fds[t][r] = listen_on(&routes[r])) < 0)
                return ZB_EXIT_FAIL;

    sigset_t sigs = cli_stop_signals();
    uint64_t half_ns = (uint64_t)(rtt_ms * 1e6 / 2 + 0.5);
    for (int t = 0; t < threads; t++) {
        args[t] = (struct relay_loop_args){ routes, nroutes, fds[t], half_ns, 2 * half_ns,
                                            &counts[t] };
        pthread_t tid;
        if (pthread_create(&tid, NULL, relay_loop, &args[t])) {
            fprintf(stderr, "relay: cannot start a thread\n");
            return ZB_EXIT_FAIL;
        }
        pthread_detach(tid);
    }
    fprintf(stderr, "relay: %d route%s, rtt %g ms (each chunk held %g ms, a new connection "
            "%g ms), %ld thread%s\n", nroutes, nroutes == 1 ? "" : "s", rtt_ms, rtt_ms / 2, rtt_ms,
            threads, threads == 1 ? "" : "s");
    for (int r = 0; r < nroutes; r++)
        fprintf(stderr, "relay:   %s\n", routes[r].text);

    int sig = 0;
    sigwait(&sigs, &sig);
    uint64_t acc = 0, failed = 0, up = 0, down = 0;
    for (int t = 0; t < threads; t++) {
        acc += atomic_load(&counts[t].accepted);
        failed += atomic_load(&counts[t].failed);
        up += atomic_load(&counts[t].bytes_up);
        down += atomic_load(&counts[t].bytes_down);
    }
    fprintf(stderr, "relay: stopped (%s): %llu connections (%llu not reaching the target), "
            "%llu bytes up, %llu bytes down\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
            (unsigned long long)acc, (unsigned long long)failed, (unsigned long long)up,
            (unsigned long long)down);
    /* The loops never return: leave with them running, the kernel closes
     * their sockets. */
    _exit(ZB_EXIT_OK);
}
