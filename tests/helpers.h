/* What several test files need: paths under the build tree, running a
 * program, writing a file. */
#ifndef ZB_TEST_HELPERS_H
#define ZB_TEST_HELPERS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "util.h"   /* FORMAT_INTO */

/* "$ZB_BUILD/rest" (ZB_BUILD defaults to "build"), in a static buffer
 * per call site's slot: copy it if you need it long. */
const char *build_path(const char *rest);
/* build_path(rest) made absolute (a lab is named after its directory's path). */
void build_path_absolute(const char *rest, char *out, size_t len);
/* The command that runs program NAME of the build: "$ZB_WRAP $ZB_BUILD/bin/NAME",
 * so `make valgrind` can run every program the tests start under valgrind. */
const char *prog(const char *name);
/* "$ZB_DATA/rest" (default "build"): where make dataset puts the real list. */
const char *data_path(const char *rest);
/* A fresh directory build/test/NAME, emptied. */
const char *test_dir(const char *name);
/* Runs a shell command, returns its exit status (or -1). Output to
 * out/outlen if given (stdout and stderr together). */
int run_cmd(char *out, size_t outlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void write_file(const char *path, const char *text);
/* The config the tests use: $ZB_CONF, or conf/zipbench.conf. */
const char *conf_path(void);
/* One change to the shipped config in a copy (write_conf_copy). section
 * is a name as it stands between the brackets, or a prefix ending in '*'
 * ("backend *": every backend, "*": every section), or "" for the keys
 * before the first section (include). key NULL: the whole section is left
 * out. Otherwise the key's line goes, and value (if not NULL) takes its
 * place as "key = value" right after the section's header (section "":
 * at the top of the file). */
struct conf_change {
    const char *section, *key, *value;
};
/* conf_path() copied to path with changes (NULL: none; else ended by an
 * entry whose section is NULL; new lines in the order of the list), then
 * extra (NULL: nothing) added at the end. 0, or -1 with why. */
int write_conf_copy(const char *path, const struct conf_change *changes, const char *extra,
                    char *why, size_t whylen);
/* The tests' config at path, as a CSV of one's own needs it: the
 * overlays loader --csv writes read from the *.conf files of dir/conf.d
 * (include), and
 * SQLite's file dir/SQLITE_NAME. 0, or -1 with why. */
int write_conf_for_csv(const char *path, const char *dir, const char *sqlite_name, char *why,
                       size_t whylen);
/* The tests' config at path, with a text-keyed dataset of their own:
 * text written to the CSV file words, served as [dataset words] keyed by
 * its column word, with columns ("word text, meaning text"). 0, or -1
 * with why. */
int write_conf_with_words(const char *path, const char *words, const char *text,
                          const char *columns, char *why, size_t whylen);
/* The tests' config at path, with databases that refuse: pg's socket
 * directory and innodb's socket file are in dir, where nothing listens
 * (tcp: pg on 127.0.0.1 instead, where nothing listens on the port
 * either), and both ports are ${var:-port}. SQLite's file is in dir. 0, or
 * -1 with why. */
int write_refusing_conf(const char *path, const char *dir, const char *var, int port, bool tcp,
                        char *why, size_t whylen);
/* The postal code of the first row of a KEN_ALL-layout file (a generated
 * set) into code: 0, or -1 with why filled. */
/* Every postal code of a KEN_ALL-layout file into keys, one a line (a
 * file for loadgen --keys; NULL: none), and its first into code (NULL:
 * not wanted): 0, or -1 with why filled. */
int write_codes(const char *csv, const char *keys, char *code, size_t len, char *why, size_t whylen);
int first_code(const char *csv, char *code, size_t len, char *why, size_t whylen);

/* The counts of an ab report in text (loadgen's is the same); a line
 * that is not there counts 0. found: the text holds a report at all (ab
 * that aborted prints none). Held to the recorded reports of tests/data/ab
 * (test_abreport.c), as bench/lib/clients.mjs's parser is. */
struct ab_report {
    bool found;
    int complete, failed, non2xx;
    int connect, receive, length, exceptions;   /* ab's "Failed requests" split */
    double rps;
};
struct ab_report ab_report(const char *text);

/* The number after the first "key": in s (JSON text such as /stats or a
 * --json report), or -1 when s is NULL or has no such key. */
double json_num(const char *s, const char *key);


/* ---- a server under test: spawned as a child, spoken to over loopback ---- */
#include <sys/types.h>

/* Connects to 127.0.0.1:port, sends req (whole, or as much as the server
 * takes), reads until the server closes or timeout_ms passes with nothing
 * new. Returns the bytes read into out (NUL-terminated), or -1 if it could
 * not connect. */
int http_exchange(int port, const char *req, size_t reqlen, char *out, size_t outlen,
                  int timeout_ms);
/* req on the keep-alive connection *fd to 127.0.0.1:port (opened first if
 * *fd < 0), one whole answer read (its head and Content-Length bytes of
 * body) into out, NUL-terminated; the connection stays open. Returns the
 * bytes read, or -1 (*fd closed and -1 then). */
int http_kept_exchange(int port, int *fd, const char *req, char *out, size_t outlen,
                       int timeout_ms);
/* The HTTP status of a response in buf ("HTTP/1.x NNN"), -1 if none. */
int http_status(const char *buf);
/* Starts "$ZB_WRAP build/bin/server --conf conf --port port ARGS" with its
 * output in log; returns its pid (the server's own: exec through sh). It
 * gets SIGTERM when the process that started it dies. */
pid_t spawn_server(const char *conf, int port, const char *log, const char *args);
/* Waits up to 15 s until it answers /health (any status); false if it
 * exited first. */
bool await_server(pid_t pid, int port);
/* SIGTERM and the exit status (-1 if it had to be SIGKILLed). */
int term_server(pid_t pid);
/* A suite's fixture server: spawn_server, then await_server. Returns its
 * pid (term_server it in the teardown, whether or not it came up); when
 * it did not come up, why gets "server did not start: " and its log. */
pid_t fixture_server(const char *conf, int port, const char *log, const char *args, char *why,
                     size_t whylen);
/* The first step of a fixture that serves generated rows: dir made afresh
 * (what an earlier run left is removed) and ROWS rows of the KEN_ALL
 * layout from SEED written to csv by build/bin/gen. 0, or -1 with
 * "gen: " and gen's output in why. */
int fresh_generated_set(const char *dir, const char *csv, int rows, int seed, char *why,
                        size_t whylen);

/* ---- ports: tests pick free ones, so two trees' runs do not collide ---- */
/* The port of a service the scripts start (scripts/nginx, db, pooler...):
 * the variable that moves it (ZB_NGINX_TLS_PORT...), else its default, as
 * the script reads it; a test dials no port literally. */
int env_port(const char *var, int fallback);
/* Nothing holds 127.0.0.1:port, not even a connection in TIME-WAIT. */
bool port_is_free(int port);
/* The first free port from `from` up, below the ephemeral range (32768); -1 if none. */
int free_port(int from);
/* The port a test's server should use: preferred if it is free the first
 * time it is asked for, else the next free one; the same answer for the
 * rest of the process (ask first in the fixture, before Check forks the
 * tests, and they inherit it). */
int test_port(int preferred);

/* ---- Ctrl-C: a command in a session of its own, as a terminal runs it ---- */
/* Starts `sh -c cmd` in a new session (setsid: its pid is the session's
 * and its first process group's, which a terminal's Ctrl-C would reach;
 * Check's forked tests make groups of their own within it). */
pid_t start_in_group(const char *cmd);
/* How many processes of session sid still run (zombies not counted: one
 * whose parent ended waits for init to reap it, which may take a while). */
int session_running(pid_t sid);
/* Whether pid runs: true while it exists and is not a zombie (an ended
 * child of someone else's is reaped when its parent gets to it, which on
 * a busy machine takes a while; kill(pid, 0) counts it until then). */
bool process_running(pid_t pid);
/* How many processes of session sid (not zombies) have text in their
 * command line: what a command started, not another tree's like it. */
int session_has(pid_t sid, const char *text);
/* How many processes but this one have text in their command line. */
int processes_with(const char *text);
/* Ctrl-C as a terminal sends it: SIGINT to the process group of pid,
 * then waits for pid. Its exit status (128 + signal when killed), the ms
 * it took in *ms, and the processes of its session still running then in
 * *left (those are killed). The bound a stop must keep on this machine
 * now: 2 s, plus ten times what starting node takes here (a busy
 * machine's slowness). */
int ctrl_c(pid_t pid, double *ms, int *left);
double ctrl_c_bound_ms(void);
/* A whole Ctrl-C test: cmd started in a session of its own, ready(sid,
 * arg) polled every 20 ms until true (5 minutes at most; cmd ending
 * first, or the time passing, fails the test with log's tail), then
 * ctrl_c. Fails the test unless the session is gone within
 * ctrl_c_bound_ms. Returns cmd's exit status; *ms the stop's time, log's
 * tail (2,000 bytes) in out. */
int interrupt_when(const char *cmd, bool (*ready)(pid_t sid, void *arg), void *arg, const char *log,
                   double *ms, char *out, size_t outlen);

/* ---- a second tree, for the runs of make test and the README's journeys ---- */
/* The tree's files as they are now (tracked and untracked, not ignored:
 * uncommitted work is what is tested) copied into dir. 0, or the copy's
 * exit status with its output in why. */
int copy_tree(const char *dir, char *why, size_t whylen);
/* Free ports for a second tree's PostgreSQL and MariaDB: the first free
 * ones from the config's own plus offset. */
void second_tree_db_ports(int offset, int *pg_port, int *my_port);

/* ---- Check suites: every tests/test_NAME.c builds its suite with these ---- */
#include <check.h>

/* The tests of one case, in the order they run, as the NULL-terminated
 * array test_case takes: TESTS(first, second, ...). Each name is what
 * START_TEST defined (a const TTest *). */
#define TESTS(...) ((const TTest *const[]){ __VA_ARGS__, NULL })
/* A Check test case NAME holding tests (NULL-terminated, see TESTS) in
 * order. setup and teardown (either may be NULL; both NULL: no fixture)
 * run once around the whole case, in the runner (an unchecked fixture),
 * so what setup starts is shared by the case's forked tests. timeout_s
 * is each test's limit in seconds; 0 keeps Check's default
 * (CK_DEFAULT_TIMEOUT). */
TCase *test_case(const char *name, SFun setup, SFun teardown, double timeout_s,
                 const TTest *const *tests);
/* A suite NAME of the cases given, in the order given; the list ends
 * with NULL. */
Suite *suite_of(const char *name, TCase *first, ...);

/* The tiers of the tests: `make check` runs the cases tagged TIER_UNIT,
 * which need no database, web server, network or fetched dataset (the
 * programs of build/bin only), in under 30 s on a quiet machine; `make test-slow` the
 * cases tagged TIER_SLOW (lifecycle, bench, lab); `make test` every case,
 * untagged ones (end to end against the real servers) included. */
#define TIER_UNIT "unit"
#define TIER_SLOW "slow"
/* tc, tagged with its tier. */
TCase *tier(TCase *tc, const char *tag);

#endif
