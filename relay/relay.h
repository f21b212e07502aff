/* relay: a TCP forwarder that adds a round-trip time, as toxiproxy's
 * latency toxic does, for kernels without sch_netem (scripts/lab --rtt).
 *
 * Each route listens on one address and forwards every connection to one
 * target. Whatever one side sends is read in chunks (one recv each) and
 * each chunk is written to the other side half an RTT after it was read;
 * a new connection is held one RTT before the relay connects onwards (the
 * handshake a real link would cost). With an RTT of 0 every chunk is
 * written at once: what is left is the relay's own cost, which the lab
 * measures and reports next to every figure that passes through it. */
#ifndef ZB_RELAY_H
#define ZB_RELAY_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#define RELAY_MAX_ROUTES 32

struct relay_route {
    struct sockaddr_storage listen, target;
    socklen_t listen_len, target_len;
    char text[160];                /* "LISTEN=TARGET" as given, for messages */
};

/* What one loop thread counts; read by main at exit. */
struct relay_counts {
    _Atomic uint64_t accepted;     /* connections taken */
    _Atomic uint64_t failed;       /* of which the target refused or reset */
    _Atomic uint64_t bytes_up;     /* client -> target */
    _Atomic uint64_t bytes_down;   /* target -> client */
};

struct relay_loop_args {
    const struct relay_route *routes;
    int nroutes;
    const int *listen_fds;         /* this thread's listener per route (SO_REUSEPORT) */
    uint64_t half_ns;              /* each chunk is held this long: RTT / 2 */
    uint64_t setup_ns;             /* a new connection is held this long: RTT */
    struct relay_counts *counts;
};

/* One event loop (epoll): accepts on its listeners, relays until the
 * process ends. Returns only on a fatal error (message on stderr). */
void *relay_loop(void *args);

#endif
