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
#include <stdio.h>
#include <sys/socket.h>

#include "hist.h"
#include "util.h"

#define HEAD_MAX 8192          /* response head bigger than this: exception */
#define MAX_HEADERS 64         /* -H lines */
#define MAX_ADDRS 16           /* addresses of one name tried */

/* ---- dist.c: key distributions (--dist) ---- */
enum dist_kind { DIST_UNIFORM, DIST_ZIPF, DIST_HOTSPOT };
struct dist {
    enum dist_kind kind;
    double theta;              /* zipf: YCSB's zipfian constant, 0 < theta < 1 */
    double hot_keys, hot_share;   /* hotspot: F of the keys get P of the requests */
    /* dist_prepare's, for n keys: */
    uint32_t n, hot_n;
    double zetan, eta, alpha, half_pow_theta;
    uint32_t *perm;            /* rank -> line of the key file (NULL: uniform) */
};
/* "uniform", "zipf:THETA", "hotspot:F:P" into d; -1 with why. */
int dist_parse(struct dist *d, const char *arg, char *why, size_t whylen);
/* Ready to draw among n keys (n >= 1); -1 when out of memory. */
int dist_prepare(struct dist *d, uint32_t n);
void dist_free(struct dist *d);
/* A rank (0: the most asked for), then the key it is: draws from *s. */
uint32_t dist_rank(const struct dist *d, uint64_t *s);
uint32_t dist_draw(const struct dist *d, uint64_t *s);

/* ---- mix.c: --mix, weighted request templates ---- */
#define MIX_MAX 16
struct mix_template {
    unsigned weight;
    char method[16];
    char path[1024];           /* at most one {key} */
};
struct mix {
    int n;
    struct mix_template t[MIX_MAX];
    uint32_t cum[MIX_MAX];     /* running sums of the weights */
    uint32_t total;
};
/* Lines "WEIGHT METHOD PATH" of text[0..n) (name: for "name:line: why"). */
int mix_parse(struct mix *m, const char *text, size_t n, const char *name, struct zb_err *err);
/* A file, or "ycsb-a|ycsb-b|ycsb-c|ycsb-f:BACKEND". */
int mix_load(struct mix *m, const char *arg, struct zb_err *err);
/* The template of request idx: a pure function of (seed, idx). */
int mix_pick(const struct mix *m, uint64_t seed, uint64_t idx);

/* Per template: what its requests got. */
struct tmpl_stats {
    uint64_t count, ok, non2xx, failed;
    struct hist lat;
};

/* ---- args.c: the command line, after checking ---- */
struct config {
    uint64_t requests;         /* -n; -t without -n makes it 50000000 */
    int concurrency;           /* -c */
    int threads;               /* --threads, default half the CPUs (>= 1), <= c */
    double timelimit;          /* -t/--duration seconds, 0 = none */
    double timeout;            /* -s seconds per request */
    double rate;               /* --rate total req/s, 0 = as fast as possible */
    double miss;               /* --miss share of requests with an absent key */
    uint64_t seed;             /* --seed */
    struct dist dist;          /* --dist, as parsed (keys_load prepares a copy) */
    bool keepalive, quiet, json, progress;
    /* The request (ab's -m -i -p -u -T -C -A -P -X -H -B -b) */
    const char *method;        /* GET, HEAD (-i), POST (-p), PUT (-u) or -m's */
    bool head;                 /* HEAD: responses carry no body */
    const char *body_file;     /* -p / -u */
    char *body;                /* its bytes, sent after each request head */
    size_t body_len;
    const char *content_type;  /* -T, default text/plain */
    char cookie[2048];         /* -C a=1 -C b=2: "a=1; b=2" */
    const char *auth, *proxy_auth;   /* -A / -P user:password */
    const char *proxy;         /* -X host:port */
    const char *bind_addr;     /* -B local address */
    int window;                /* -b socket buffer bytes, 0 = the kernel's */
    const char *headers[MAX_HEADERS];
    int nheaders;
    /* ab's report (-v -d -S -l -e -g) */
    int verbosity;             /* -v: 2 prints heads and non-2xx, 3 every status */
    bool no_percentiles;       /* -d */
    bool no_confidence;        /* -S */
    bool variable_length;      /* -l: no Length errors */
    const char *percentile_csv;/* -e FILE */
    const char *gnuplot;       /* -g FILE */
    /* TLS (ab's -Z -f -I -E; --verify --cacert --tls-resume) */
    bool verify, tls_resume, no_sni;
    const char *cacert, *ciphers, *tls_protocol, *client_cert;
    /* loadgen's own outputs */
    const char *csv;           /* --csv FILE, "-" for stdout, NULL = none */
    const char *hdr_log;       /* --hdr-log FILE */
    double interval;           /* --interval seconds of the time series, default 1 */
    int64_t start_at_ms;       /* --start-at epoch ms, 0 = at once */
    const char *keyfile;       /* --keys */
    const char *ledger;        /* --ledger FILE: the bodies of 2xx answers to POSTs */
    const char *mix;           /* --mix FILE or preset */
    /* --max-errors: exit 1 when the errors (result_errors) are more than
     * max_errors requests, or (max_errors_pct) that percentage of all;
     * max_errors < 0: no limit */
    double max_errors;
    bool max_errors_pct;
    const char *url;
    char cmdline[1024];        /* for the log's header */
};

/* Parses argv into cfg (defaults filled in); 0, or the exit status. */
int args_parse(int argc, const char *const *argv, struct config *cfg);
extern const char loadgen_usage[];

/* ---- url.c: the target ---- */
struct target {
    bool tls;                  /* https:// */
    char host[256];            /* as written in the URL, brackets dropped */
    int port;
    char path[4096];           /* path and query, may hold one {key} */
    char connect_host[256];    /* whom to connect to: host, or -X's proxy */
    int connect_port;
    struct sockaddr_storage addr[MAX_ADDRS];
    socklen_t addrlen[MAX_ADDRS];
    int naddrs;
    int chosen;                /* the address in use */
    struct sockaddr_storage local;   /* -B, if locallen */
    socklen_t locallen;
};

/* Splits an http:// or https:// URL; on error writes a message to err and
 * returns -1. No name lookup yet. */
int url_parse(const char *url, struct target *t, struct zb_err *err);
/* Resolves connect_host with getaddrinfo and picks an address (target_pick);
 * -1 with a message if the name does not resolve. */
int target_resolve(struct target *t, const char *proxy, const char *bind_addr,
                   double timeout_s, struct zb_err *err);
/* With several addresses, the first that accepts a connection within
 * timeout_s (else the first) becomes t->chosen. */
void target_pick(struct target *t, double timeout_s);
/* "a.b.c.d:port" or "[v6]:port" of the address in use. */
void target_addr_text(const struct target *t, char *out, size_t outlen);

/* ---- keys.c: key file, misses, and the request bytes ---- */
struct keys {
    char **key;                /* keys from the file, percent-encoded as sent */
    uint32_t *len;
    uint32_t n;
    char **miss;               /* keys known to be absent from the file, as sent */
    uint32_t *miss_len;
    uint32_t nmiss;
    size_t maxlen;             /* the longest key or miss as sent */
    char *text;                /* the file, keys point into it */
    char *key_text;            /* the keys that needed encoding, encoded (or NULL) */
    char *miss_pool;           /* the misses as made */
    char *miss_text;           /* the misses that needed encoding, encoded (or NULL) */
    struct dist dist;          /* how a key is drawn (--dist), prepared for n */
};

/* The request head split at its {key} slot: pre + key + post, then the
 * body (-p/-u), sent as a second part so no connection holds its copy.
 * Without a slot, pre is the whole head and post is empty. */
struct request {
    char *pre, *post;
    size_t prelen, postlen;
    bool has_slot;
    size_t maxlen;             /* longest head with the longest key */
    const char *body;
    size_t body_len;
};

int keys_load(struct keys *k, const char *path, double miss, uint64_t seed,
              const struct dist *dist, struct zb_err *err);
void keys_free(struct keys *k);
int request_build(struct request *r, const struct config *cfg, const struct target *t,
                  const struct keys *k, struct zb_err *err);
void request_free(struct request *r);

/* The key of request number idx: a pure function of (seed, idx), so runs
 * with the same seed ask for the same keys whatever the threads and
 * connections. Writes the head into buf (r->maxlen bytes) and returns
 * its length; or, without a slot, points *out at the fixed bytes. */
size_t request_for(const struct request *r, const struct keys *k, uint64_t seed,
                   uint64_t miss_threshold, uint64_t idx, char *buf, const char **out);

/* ---- resp.c: the HTTP/1.1 response parser ---- */
enum { R_MORE, R_DONE, R_ERROR };

struct resp {
    uint8_t phase;
    uint8_t chunk;             /* chunked sub-state */
    uint16_t status;
    bool head_request;         /* the request was HEAD: no body follows */
    bool close;                /* server will close: Connection: close, 1.0 */
    bool got_any;              /* any byte of this response seen */
    uint32_t hlen;             /* bytes held in head[] when a head is split */
    uint64_t left;             /* body or chunk bytes still to come */
    uint64_t body;             /* body bytes seen (chunked: decoded) */
    uint64_t total;            /* all bytes of the response */
    char *server;              /* if not NULL, the Server header is copied here */
    size_t server_len;
    /* --ledger: if cap, the body's bytes are copied here (cap_size at most;
     * cap_over when there were more) */
    char *cap;
    uint32_t cap_size, cap_len;
    bool cap_over;
    char head[HEAD_MAX];
};

void resp_reset(struct resp *r, bool head_request);
/* Feeds n bytes. Returns R_MORE (all used), R_DONE (*used bytes were the end
 * of this response) or R_ERROR (malformed or head too big). */
int resp_feed(struct resp *r, const char *p, size_t n, size_t *used);
/* The server closed: R_DONE if the body ran to EOF, else R_ERROR. */
int resp_eof(struct resp *r);

/* ---- tls.c: OpenSSL, behind send/recv-shaped calls ---- */
struct tls_ctx;                /* one per loop thread: SSL_CTX and its session */

/* NULL and a message in err if the settings are unusable (a bad --cacert,
 * -Z, -f or -E). sni: the name to send, or NULL; host: the URL's host,
 * which --verify checks the certificate against. */
struct tls_ctx *tls_ctx_new(const struct config *cfg, const char *sni, const char *host,
                            struct zb_err *err);
void tls_ctx_free(struct tls_ctx *t);
/* A TLS client on connected (or connecting) fd; NULL when out of memory. */
void *tls_open(struct tls_ctx *t, int fd);
/* 1 done; 0 wait (errno EAGAIN; *want_out says for EPOLLOUT); -1 failed
 * (errno set; the first failure's reason is kept for tls_first_error). */
int tls_handshake(void *ssl, bool *want_out);
/* As send/recv: bytes, or -1 with errno EAGAIN (then *want_out), EPIPE,
 * ECONNRESET or EPROTO; recv returns 0 at the end of the stream. */
ssize_t tls_send(void *ssl, const void *p, size_t n, bool *want_out);
ssize_t tls_recv(void *ssl, void *p, size_t n, bool *want_out);
bool tls_resumed(void *ssl);
/* ab's lines: "TLSv1.3,TLS_AES_256_GCM_SHA384,2048,256" and the key
 * exchange ("X25519 253 bits"). */
void tls_describe(void *ssl, char *info, size_t infolen, char *tmpkey, size_t tmpkeylen);
void tls_close(void *ssl);
/* "OpenSSL 3.0.x ...", for -V. */
const char *tls_library(void);
/* Why the first handshake that failed did, or "". */
const char *tls_first_error(void);

/* ---- loop.c: one event loop per thread ---- */
#define LG_ERRNOS 134          /* Linux's errnos are below this */
struct stats {
    uint64_t completed, non2xx, keepalive_reqs, connects, abandoned;
    /* non2xx by status: 404, 503 (overload or a backend down), other 4xx,
     * other 5xx, and the rest (1xx, 3xx, past 599) */
    uint64_t status_404, status_503, status_4xx, status_5xx, status_other;
    uint64_t err_connect, err_recv, err_send, err_timeout, err_except, err_length;
    /* err_connect by the errno that failed it (ECONNREFUSED, ETIMEDOUT...),
     * as ab and wrk name it; errnos past the table count in slot 0. */
    uint64_t connect_errno[LG_ERRNOS];
    uint64_t bytes_total, bytes_body, bytes_sent;
    uint64_t handshakes, resumed;
    uint64_t ledger_lines;     /* --ledger: lines written */
    uint64_t ledger_lost;      /* --ledger: 2xx POST bodies too long or not written */
    uint64_t last_done_ns;
    /* The connections' opening, so that a slow ramp (a listen backlog
     * overflowing at -c 10000: a SYN retried a second later) is not read
     * as the server's latency: the -c connections (slots) that opened at
     * least once, and when the last of them first did (ns from the
     * run's start); open: each new connection's time from connect() to
     * connected (TLS: handshake done). */
    uint64_t slots_opened, last_open_ns;
    struct hist open;
    /* latency: from the request's start, or its intended start under
     * --rate; the rest are ab's Connection Times, from the real start */
    struct hist lat, connect, processing, waiting, total;
};

/* stats.c */
void stats_init(struct stats *s);
void stats_add(struct stats *into, const struct stats *from);
uint64_t stats_failed(const struct stats *s);
/* The answers a run asked for: 2xx, and 404 when miss_answers (--miss). */
uint64_t stats_answered(const struct stats *s, bool miss_answers);
/* "Connection refused (ECONNREFUSED) 10, ..." of the connects that failed,
 * by errno, into buf; "" when none did. */
void stats_connect_errors(const struct stats *s, char *buf, size_t len);

/* -g: one row per request, as ab's gnuplot file */
struct sample {
    uint64_t start_ns;         /* CLOCK_REALTIME */
    uint32_t connect_us, total_us, wait_us;
};

struct worker;

/* ---- series.c: the per-interval time series and the --hdr-log ---- */
struct interval {              /* one interval as one thread saw it */
    uint64_t completed, failed;
    struct hist lat;
};

struct point {                 /* one interval of the time series */
    double t, len;             /* start (s since the run's start) and length */
    uint64_t completed, failed;
    double p50_us, p99_us, max_us;
    bool partial;              /* shorter than the period (the run's last): no rate */
};

struct series {
    pthread_mutex_t mu;
    uint64_t start_ns, interval_ns;
    uint64_t end_ns;               /* set before the final collect */
    int nthreads;
    _Atomic uint64_t *thread_at;   /* each thread's current interval */
    struct interval **pending;     /* intervals not yet written, by index */
    size_t npending;
    uint64_t written;              /* intervals [0, written) are out */
    struct point *points;
    size_t npoints, cap;
    FILE *hdr;                     /* --hdr-log, written as intervals end */
};

/* ---- provenance.c: where a report was made ---- */
struct provenance {
    char hostname[256];
    char cpu_model[256];       /* /proc/cpuinfo's model name (else the machine) */
    char kernel[512];          /* "Linux 6.1.0-18-amd64 x86_64" */
    char loadgen[64];          /* zb_version */
};
/* This machine and this loadgen; a field it cannot read stays "". */
void provenance_here(struct provenance *p);
/* Adds p's values to into's, each field a ", "-separated list of the
 * distinct values seen (a merge of agents on several machines). */
void provenance_add(struct provenance *into, const struct provenance *p);

/* --- hdrlog.c: HdrHistogram's interval log ---- */
/* V2 "compressed" encoding, base64: "HISTF...". Returns a malloc'd string. */
char *hdr_encode(const struct hist *h);
/* Decodes one; adds its counts into h. -1 and err on a malformed input. */
int hdr_decode(const char *b64, size_t n, struct hist *h, struct zb_err *err);
void hdrlog_header(FILE *f, double start_epoch_s, double interval_s, const char *cmdline);
void hdrlog_line(FILE *f, const char *tag, double t, double len, const struct hist *h);

/* What loadgen writes besides the histograms: '#' comments, which
 * HdrHistogram's readers skip. "#[loadgen failed: T,LEN,N]" per interval
 * with failures and one "#[loadgen summary: key=value ...]" at the end. */
struct agent_interval {         /* one untagged line (or failures only) */
    double len;
    uint64_t completed, failed;
    const char *hist;          /* its HISTF field, in the parsed text */
    size_t hist_len;
};

struct agent_log {
    double start_epoch_s;
    double interval_s;
    struct agent_interval *iv; /* by interval index from start */
    size_t niv, cap;
    struct stats st;           /* summary counts; histograms from the lines */
    bool have_summary;
    uint64_t miss_answers;     /* 1: the agent ran with --miss (404s are answers) */
    double seconds, cpu_user, cpu_sys, rate;
    int concurrency, threads;
    bool keepalive, tls, posted, variable_length;
    int port;
    uint64_t doc_length;
    char server[256], host[256], path[1024], method[32], tls_info[128], tls_tmpkey[128],
        tls_sni[256];
    struct provenance prov;    /* "" where the log does not say */
};
/* Parses a log held in text[0..n), which must outlive a (its intervals
 * point into it); name is for messages (file:line). */
int hdrlog_parse(const char *text, size_t n, const char *name, struct agent_log *a,
                 struct zb_err *err);

/* The summary line's fields, in the order written: the one list that
 * main.c writes (from struct result *r) and hdrlog.c reads back (into
 * struct agent_log *a). Each entry is KIND(key, r's value, a's field):
 *   COUNT  an unsigned count, "%llu"
 *   INT    an int, "%d" (0..100000000)
 *   FLAG   a bool, 0 or 1
 *   REAL   a double >= 0, with its printf format
 *   STR    a string, "quoted" with \" and \\ (a's field a char array)
 *   HIST   a histogram's exact count:sum:min:max
 * A reader skips a key it does not know (a log from a newer loadgen). */
#define SUMMARY_FIELDS(COUNT, INT, FLAG, REAL, STR, HIST) \
    COUNT("completed", r->st.completed, a->st.completed) \
    COUNT("non2xx", r->st.non2xx, a->st.non2xx) \
    COUNT("status_404", r->st.status_404, a->st.status_404) \
    COUNT("status_503", r->st.status_503, a->st.status_503) \
    COUNT("status_4xx", r->st.status_4xx, a->st.status_4xx) \
    COUNT("status_5xx", r->st.status_5xx, a->st.status_5xx) \
    COUNT("status_other", r->st.status_other, a->st.status_other) \
    COUNT("miss_answers", r->miss_answers, a->miss_answers) \
    COUNT("keepalive_requests", r->st.keepalive_reqs, a->st.keepalive_reqs) \
    COUNT("connections", r->st.connects, a->st.connects) \
    COUNT("abandoned", r->st.abandoned, a->st.abandoned) \
    COUNT("slots_opened", r->st.slots_opened, a->st.slots_opened) \
    COUNT("last_open_ns", r->st.last_open_ns, a->st.last_open_ns) \
    COUNT("failed_connect", r->st.err_connect, a->st.err_connect) \
    COUNT("failed_receive", r->st.err_recv, a->st.err_recv) \
    COUNT("failed_send", r->st.err_send, a->st.err_send) \
    COUNT("failed_timeout", r->st.err_timeout, a->st.err_timeout) \
    COUNT("failed_exceptions", r->st.err_except, a->st.err_except) \
    COUNT("length_mismatch", r->st.err_length, a->st.err_length) \
    COUNT("bytes_total", r->st.bytes_total, a->st.bytes_total) \
    COUNT("bytes_html", r->st.bytes_body, a->st.bytes_body) \
    COUNT("bytes_sent", r->st.bytes_sent, a->st.bytes_sent) \
    COUNT("handshakes", r->st.handshakes, a->st.handshakes) \
    COUNT("resumed", r->st.resumed, a->st.resumed) \
    COUNT("doc_length", r->doc_length, a->doc_length) \
    INT("concurrency", r->concurrency, a->concurrency) \
    INT("threads", r->threads, a->threads) \
    INT("port", r->port, a->port) \
    FLAG("keepalive", r->keepalive, a->keepalive) \
    FLAG("tls", r->tls, a->tls) \
    FLAG("posted", r->posted, a->posted) \
    FLAG("variable_length", r->cfg->variable_length, a->variable_length) \
    REAL("seconds", "%.6f", r->seconds, a->seconds) \
    REAL("cpu_user_s", "%.6f", r->cpu_user, a->cpu_user) \
    REAL("cpu_sys_s", "%.6f", r->cpu_sys, a->cpu_sys) \
    REAL("rate", "%.10g", r->rate, a->rate) \
    STR("server", r->server, a->server) \
    STR("host", r->host, a->host) \
    STR("path", r->path, a->path) \
    STR("method", r->cfg->method, a->method) \
    STR("tls_info", r->tls_info, a->tls_info) \
    STR("tls_tmpkey", r->tls_tmpkey, a->tls_tmpkey) \
    STR("tls_sni", r->tls_sni, a->tls_sni) \
    STR("hostname", r->prov->hostname, a->prov.hostname) \
    STR("cpu_model", r->prov->cpu_model, a->prov.cpu_model) \
    STR("kernel", r->prov->kernel, a->prov.kernel) \
    STR("loadgen", r->prov->loadgen, a->prov.loadgen) \
    HIST("lat", r->st.lat, a->st.lat) \
    HIST("connect", r->st.connect, a->st.connect) \
    HIST("processing", r->st.processing, a->st.processing) \
    HIST("waiting", r->st.waiting, a->st.waiting) \
    HIST("total", r->st.total, a->st.total) \
    HIST("open", r->st.open, a->st.open)

void agent_log_free(struct agent_log *a);

/* ---- ledger.c: --ledger, a line per acknowledged write ---- */
#define LEDGER_BODY_MAX (64 * 1024)    /* a longer body is counted lost */
#define LEDGER_BUF (1024 * 1024)       /* per thread, written when full */
struct ledger_buf {
    int fd;                    /* the shared file, O_APPEND */
    char *buf;
    size_t len;
    int err;                   /* the first write's errno, or 0 */
};
/* Appends body (one JSON object) as one line: its CR and LF bytes (JSON's
 * whitespace, or invalid inside a string) become spaces, a trailing newline
 * is dropped. Writes the buffer first when the line would not fit. -1 when
 * a write failed (errno in lb->err). */
int ledger_add(struct ledger_buf *lb, const char *body, size_t len);
/* Writes what the buffer holds: whole lines, in one write each time. */
int ledger_flush(struct ledger_buf *lb);

/* ---- the run, as loop.c and main.c share it ---- */
struct shared {
    const struct config *cfg;
    const struct target *tgt;
    const struct request *req;
    const struct keys *keys;
    uint64_t miss_threshold;   /* miss * 2^32 */
    uint64_t start_ns;
    uint64_t end_ns;           /* time limit, 0 = none */
    uint64_t interval_ns;      /* --rate: gap between one connection's sends */
    int64_t realtime_offset_ns;/* CLOCK_REALTIME - CLOCK_MONOTONIC, for -g */
    const char *sni;
    int ledger_fd;             /* --ledger, or -1 */
    const struct mix *mix;     /* --mix, or NULL: req alone */
    const struct request *reqs;/* --mix: one prebuilt request per template */
    struct series series;
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
    _Atomic int tls_state;     /* the same for the TLS lines */
    char tls_info[128], tls_tmpkey[128];
};

struct worker {
    struct shared *sh;
    int id;
    int first_conn, nconns;    /* global ordinals of this thread's conns */
    _Atomic uint64_t progress; /* completed + failed, for the progress line */
    struct stats st;
    struct tmpl_stats *tmpl;   /* --mix: per template */
    struct sample *samples;    /* -g */
    size_t nsamples, samples_cap;
    bool setup_failed;         /* no loop: out of memory or a TLS error */
    struct zb_err err;
};

void *worker_run(void *arg);

/* series.c, for loop.c: fold the thread's interval into the series */
void series_flush(struct series *s, int thread, uint64_t idx, struct interval *iv);
void series_thread_at(struct series *s, int thread, uint64_t idx);

/* ---- report.c ---- */
/* What a report needs, from one run (main.c) or from merged logs (merge.c). */
struct result {
    const struct config *cfg;  /* the report's flags (-d -S -l -e -g, TLS) */
    const char *url, *host, *path;
    int port, concurrency, threads, agents;
    bool keepalive, tls, posted;
    bool miss_answers;         /* --miss asked for 404s: they count as answers */
    double rate;
    const char *server, *tls_info, *tls_tmpkey, *tls_sni;
    uint64_t doc_length;
    struct stats st;           /* all threads (or agents) merged */
    double seconds, start_epoch_s;
    double start_skew_s;       /* merged: the last agent's start after the first's */
    double cpu_user, cpu_sys;
    const struct point *points;
    size_t npoints;
    const struct provenance *prov;   /* the machine(s) of the run */
    const struct mix *mix;     /* --mix: its templates and their stats */
    const struct tmpl_stats *tmpl;
};

/* The report, as ab's text or as JSON, to out (stdout; stderr when
 * --csv - has stdout for its rows alone). */
void report_text(const struct result *r, FILE *out);
/* The requests that got no answer the run asked for: every non-2xx but
 * the 404s that --miss asked for, and every failed request. */
uint64_t result_errors(const struct result *r);
/* Says on stderr (prog: "loadgen") when more than 1% of the requests were
 * errors: how many, of which kinds, and the goodput beside ab's rate,
 * which counts every answer. */
void report_warn_errors(const struct result *r, const char *prog);
void report_json(const struct result *r, FILE *out);
int report_csv(const struct result *r, const char *path);
int report_percentile_csv(const struct result *r, const char *path);
/* The latency's percentile distribution as HdrHistogram prints it (its
 * .hgrm, which its plotter reads): Value (ms), Percentile, TotalCount (the
 * rank: values at or below it) and 1/(1-Percentile), five rows per halving
 * of the distance to 100%, down to the largest value; then the mean,
 * standard deviation, max and count. */
void report_hgrm(const struct result *r, FILE *out);
int report_gnuplot(const struct sample *const *rows, const size_t *nrows, int nsets,
                   const char *path);

/* series.c, for main.c and merge.c */
int series_init(struct series *s, uint64_t start_ns, uint64_t interval_ns, int nthreads);
/* Writes out the intervals every thread has left (all, when final). */
void series_collect(struct series *s, bool final);
void series_free(struct series *s);
void point_from(struct point *p, double t, double len, const struct interval *iv);

/* ---- merge.c ---- */
int merge_main(int argc, const char *const *argv);

#endif
