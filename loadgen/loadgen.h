/* loadgen: an ab-compatible HTTP/1.1 benchmark client with wrk's engine
 * (one epoll loop per thread, non-blocking sockets, nothing allocated per
 * request). What the parts share lives here. */
#ifndef LOADGEN_H
#define LOADGEN_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "hist.h"

#define LOADGEN_VERSION "1.0"
#define HEAD_MAX 8192          /* response head bigger than this: exception */
#define MAX_HEADERS 64         /* -H lines */

/* ---- the command line, after checking ---- */
struct config {
    uint64_t requests;         /* -n; -t without -n makes it 50000000, as ab */
    int concurrency;           /* -c */
    int threads;               /* --threads, default half the CPUs (>= 1), <= c */
    double timelimit;          /* -t/-d seconds, 0 = none */
    double timeout;            /* -s seconds per request */
    double rate;               /* --rate total req/s, 0 = as fast as possible */
    double miss;               /* --miss share of requests with an absent key */
    uint64_t seed;             /* --seed */
    bool keepalive, quiet, json, progress;
    const char *csv;           /* --csv FILE, "-" for stdout, NULL = none */
    const char *keyfile;       /* --keys */
    const char *url;
    const char *headers[MAX_HEADERS];
    int nheaders;
};

/* ---- url.c: the target ---- */
struct target {
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char host[256];            /* as written in the URL, brackets dropped */
    int port;
    char path[4096];           /* path and query, may hold one {key} */
};

/* Parses an http:// URL whose host is loopback; on error writes a message
 * to err and returns -1. */
int url_parse(const char *url, struct target *t, char *err, size_t errlen);

/* ---- keys.c: key file, misses, and the request bytes ---- */
struct keys {
    char **key;                /* keys from the file */
    uint32_t *len;
    uint32_t n;
    char **miss;               /* keys known to be absent from the file */
    uint32_t *miss_len;
    uint32_t nmiss;
    size_t maxlen;
    char *text;                /* the file, keys point into it */
};

/* The request split at its {key} slot: pre + key + post. Without a slot,
 * pre is the whole request and post is empty. */
struct request {
    char *pre, *post;
    size_t prelen, postlen;
    bool has_slot;
    size_t maxlen;             /* longest request with the longest key */
};

int keys_load(struct keys *k, const char *path, double miss, uint64_t seed, char *err,
              size_t errlen);
void keys_free(struct keys *k);
int request_build(struct request *r, const struct config *cfg, const struct target *t,
                  const struct keys *k, char *err, size_t errlen);
void request_free(struct request *r);

/* The key of request number idx: a pure function of (seed, idx), so runs
 * with the same seed ask for the same keys whatever the threads and
 * connections. Writes the request into buf (r->maxlen bytes) and returns
 * its length; or, without a slot, points *out at the fixed bytes. */
size_t request_for(const struct request *r, const struct keys *k, uint64_t seed,
                   uint64_t miss_threshold, uint64_t idx, char *buf, const char **out);

/* ---- conn.c: the HTTP/1.1 response parser ---- */
enum { R_MORE, R_DONE, R_ERROR };

struct resp {
    uint8_t phase;
    uint8_t chunk;             /* chunked sub-state */
    uint16_t status;
    bool close;                /* server will close: Connection: close, 1.0 */
    bool got_any;              /* any byte of this response seen */
    uint32_t hlen;             /* bytes held in head[] when a head is split */
    uint64_t left;             /* body or chunk bytes still to come */
    uint64_t body;             /* body bytes seen (chunked: decoded) */
    uint64_t total;            /* all bytes of the response */
    char *server;              /* if not NULL, the Server header is copied here */
    size_t server_len;
    char head[HEAD_MAX];
};

void resp_reset(struct resp *r);
/* Feeds n bytes. Returns R_MORE (all used), R_DONE (*used bytes were the end
 * of this response) or R_ERROR (malformed or head too big). */
int resp_feed(struct resp *r, const char *p, size_t n, size_t *used);
/* The server closed: R_DONE if the body ran to EOF, else R_ERROR. */
int resp_eof(struct resp *r);

/* ---- loop.c: one event loop per thread ---- */
struct stats {
    uint64_t completed, non2xx, keepalive_reqs, connects, abandoned;
    uint64_t err_connect, err_recv, err_send, err_timeout, err_except, err_length;
    uint64_t bytes_total, bytes_body;
    uint64_t last_done_ns;
    struct hist lat;
};

struct shared {
    const struct config *cfg;
    const struct target *tgt;
    const struct request *req;
    const struct keys *keys;
    uint64_t miss_threshold;   /* miss * 2^32 */
    uint64_t start_ns;
    uint64_t end_ns;           /* time limit, 0 = none */
    uint64_t interval_ns;      /* --rate: gap between one connection's sends */
    /* Threads set up, then wait twice: once so the clock starts only when
     * all are ready, again until start_ns is set. Without it a thread that
     * starts late on a busy box finds the requests all taken. */
    pthread_barrier_t ready, go;
    /* Written by every thread per request: a cache line of its own, so
     * the fields read per request above and below never bounce with it. */
    _Alignas(64) _Atomic uint64_t issued;   /* request numbers handed out */
    _Alignas(64) _Atomic int stop;          /* SIGINT */
    /* The first response tells the server name and document length. */
    _Atomic int first_state;   /* 0 none, 1 being written, 2 ready */
    char server[256];
    uint64_t doc_length;
};

struct worker {
    struct shared *sh;
    int id;
    int first_conn, nconns;    /* global ordinals of this thread's conns */
    _Atomic uint64_t progress; /* completed + failed, for the progress line */
    struct stats st;
};

void *worker_run(void *arg);

/* ---- report.c ---- */
struct result {
    const struct config *cfg;
    const struct target *tgt;
    const struct shared *sh;
    struct stats st;           /* all threads merged */
    double seconds;
    double cpu_user, cpu_sys;
};

void report_text(const struct result *r);
void report_json(const struct result *r);
int report_csv(const struct result *r, const char *path);
uint64_t result_failed(const struct stats *s);

#endif
