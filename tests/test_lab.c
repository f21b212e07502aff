/* The lab (scripts/lab): tiers as hosts of their own, each a network
 * namespace. One lab with two clients is brought up for the whole suite,
 * under the test's own directory ($ZB_BUILD/test/lab, so a lab of yours in
 * build/lab is never touched), with a generated set loaded into its
 * backends and zipbench's server on its app host. Every request starts on
 * a client host (ab, or bash's /dev/tcp, through scripts/lab exec) and
 * reaches the app host, which reaches the db hosts; the test itself sends
 * nothing anywhere.
 *
 * The namespaces are made from wherever the tests run (the root namespace
 * or an `ip netns exec`); where that is not allowed (not root, no
 * CAP_SYS_ADMIN) every test passes after one line saying it was skipped.
 * The last tests take the lab down and check that nothing is left:
 * processes, namespaces, links; then an up that fails half way must leave
 * nothing either. The fixture's teardown takes the lab down whatever
 * happened. */
#include <check.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "util.h"

#define ROWS 2000

static char dir[1024], csv[1100];
static char setup_error[4096];
static bool skipped;
static char code[8];              /* a code of the set */
static char nets[16][64];         /* the hosts' namespaces, "net:[inode]" */
static int nnets;
static int links_before = -1;     /* links in the tests' own namespace before up */
static char out[1 << 16];

/* scripts/lab ARGS (a format and its values): its exit status, its output
 * in out. */
#define lab(...) run_cmd(out, sizeof out, "scripts/lab " __VA_ARGS__)

/* The links of the namespace the tests run in. */
static int count_links(void)
{
    char buf[8192];
    if (run_cmd(buf, sizeof buf, "ip -o link show | wc -l") != 0)
        return -1;
    return atoi(buf);
}

static void record_nets(void)
{
    nnets = 0;
    FILE *p = popen("cat \"$ZB_LAB_DIR\"/hosts/*.net 2>/dev/null", "r");
    if (!p)
        return;
    while (nnets < 16 && fgets(nets[nnets], sizeof nets[0], p)) {
        nets[nnets][strcspn(nets[nnets], "\n")] = 0;
        nnets++;
    }
    pclose(p);
}

/* What of the lab is still there, in words ("" when nothing). */
static const char *leftovers(void)
{
    static char what[8192];
    char buf[8192];
    what[0] = 0;
    for (int i = 0; i < nnets; i++) {
        run_cmd(buf, sizeof buf, "ls -l /proc/[0-9]*/ns/net 2>/dev/null | grep -F '%s' | wc -l",
                nets[i]);
        if (atoi(buf) > 0)
            snprintf(what + strlen(what), sizeof what - strlen(what),
                     "%d processes in %.60s; ", atoi(buf), nets[i]);
    }
    /* The holders, by name, and any process naming the lab's directory
     * (postgres -D, mariadbd, pgbouncer, pgpool-II, the server). */
    run_cmd(buf, sizeof buf, "pgrep -af \"^zblab-$(printf %%s \"$ZB_LAB_DIR\" | md5sum | cut -c1-6)-\"; "
            "pgrep -af -- \"$ZB_LAB_DIR/\"; true");
    if (buf[0])
        snprintf(what + strlen(what), sizeof what - strlen(what), "processes: %.2000s; ", buf);
    run_cmd(buf, sizeof buf, "ip -o link show | grep zblab || true");
    if (buf[0])
        snprintf(what + strlen(what), sizeof what - strlen(what), "links here: %.2000s; ", buf);
    if (links_before >= 0 && count_links() != links_before)
        snprintf(what + strlen(what), sizeof what - strlen(what), "%d links here, %d before; ",
                 count_links(), links_before);
    run_cmd(buf, sizeof buf, "ip netns list | grep zblab || true");
    if (buf[0])
        snprintf(what + strlen(what), sizeof what - strlen(what), "ip netns: %.1000s; ", buf);
    return what;
}

/* The setup's failure, with the end of what the command said. */
static void setup_failed(const char *what)
{
    size_t n = strlen(out);
    snprintf(setup_error, sizeof setup_error, "%s: %.2500s", what, out + (n > 2500 ? n - 2500 : 0));
}

static void setup(void)
{
    /* Absolute: the lab is named after its directory's path. */
    build_path_absolute("test/lab", dir, sizeof dir);
    char labdir[1100];
    snprintf(labdir, sizeof labdir, "%s/lab", dir);
    setenv("ZB_LAB_DIR", labdir, 1);
    /* 32 pgpool-II children are enough for these tests and start faster. */
    setenv("ZB_PGPOOL_CHILDREN", "32", 1);
    char why[4096];
    if (geteuid() != 0 || run_cmd(why, sizeof why, "unshare --net true") != 0) {
        skipped = true;
        printf("lab: skipped: network namespaces cannot be made here (%s)\n",
               geteuid() ? "not root" : why);
        fflush(stdout);
        return;
    }
    snprintf(csv, sizeof csv, "%s/g.csv", dir);
    if (run_cmd(out, sizeof out, "mkdir -p '%s' && %s --rows %d --seed 14 -o %s", dir,
                prog("gen"), ROWS, csv)) {
        setup_failed("gen");
        return;
    }
    if (first_code(csv, code, sizeof code, setup_error, sizeof setup_error) < 0)
        return;
    lab("down");                 /* what a killed run may have left */
    links_before = count_links();
    if (lab("up --clients 2 --cpus app=0 --cpus client=1") != 0) {
        setup_failed("scripts/lab up");
        return;
    }
    record_nets();
    if (lab("load --dataset %s", csv) != 0) {
        setup_failed("scripts/lab load");
        return;
    }
    if (lab("server start") != 0)
        setup_failed("scripts/lab server start");
}

static char clone[1200];           /* a fresh copy of the tree (the last test) */

static void teardown(void)
{
    if (skipped)
        return;
    lab("down");
    if (clone[0])
        run_cmd(out, sizeof out, "[ ! -d '%s' ] || { cd '%s' && env -u ZB_LAB_DIR scripts/lab down --purge; "
                "cd / && rm -rf '%s'; }", clone, clone, clone);
}

#define SETUP_OK()                                                                   \
    do {                                                                             \
        if (skipped)                                                                 \
            return;                                                                  \
        ck_assert_msg(!setup_error[0], "%s", setup_error);                          \
    } while (0)

/* A shell command, on a client host, that GETs path from the app's server
 * (bash's /dev/tcp) and prints the whole response. */
#define GET_CMD "exec 3<>/dev/tcp/$ZB_LAB_APP/$ZB_LAB_APP_PORT && " \
                "printf \"GET %s HTTP/1.0\\r\\n\\r\\n\" >&3 && timeout 15 cat <&3"

/* GET path from HOST: the whole response in out, its status (-1: none). */
static int get_from(const char *host, const char *path)
{
    lab("exec %s bash -c 'source \"$ZB_LAB_DIR/lab.env\"; " GET_CMD "'", host, path);
    return http_status(out);
}

/* ab or loadgen from a client host against the app's server: its exit
 * status, the counts of its report, and (loadgen_from) how many answers
 * had another status than 200 or 503. */
struct ab {
    int exit, non503;
    struct ab_report r;
};

static struct ab ab_parse(int exit)
{
    return (struct ab){ .exit = exit, .r = ab_report(out) };
}

static struct ab ab_from(const char *host, const char *args, const char *path)
{
    return ab_parse(lab("exec %s bash -c 'source \"$ZB_LAB_DIR/lab.env\"; ab -s 10 %s \"$ZB_LAB_URL%s\"'",
                        host, args, path));
}

/* A server's count of committed transactions (every lookup is one). */
static long long commits(const char *host)
{
    char buf[4096];
    run_cmd(buf, sizeof buf, "scripts/lab exec %s bash -c 'eval \"$(ZB_DB_DIR=$ZB_LAB_DIR/%s "
            "scripts/db env)\"; psql -X -h 127.0.0.1 -tA -c \"SELECT xact_commit FROM "
            "pg_stat_database WHERE datname = current_database()\"'", host, host);
    return atoll(buf);
}

/* Waits (up to 5 s: statistics are flushed about once a second) until
 * host's commits exceed before. */
static bool commits_rise(const char *host, long long before, long long *now)
{
    for (int i = 0; i < 50; i++) {
        if ((*now = commits(host)) > before)
            return true;
        usleep(100 * 1000);
    }
    return false;
}

/* ---- the lab as made ---- */

START_TEST(hosts_as_asked)
{
    SETUP_OK();
    ck_assert_msg(lab("status") == 0, "%s", out);
    static const char *const want[] = { "wire", "198.18.0.1 ", "db ", "198.18.0.10 ", "db2",
                                        "198.18.0.11", "app", "198.18.0.20", "client1",
                                        "198.18.0.101", "client2", "198.18.0.102", "postgres",
                                        "mariadbd", "pgbouncer", "pgpool", "server (1)" };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(out, want[i]), "no '%s' in: %s", want[i], out);
    /* The CPUs asked for, and the rest on all. */
    ck_assert_msg(lab("env") == 0 && strstr(out, "ZB_LAB_CPUS_APP=0\n") &&
                  strstr(out, "ZB_LAB_CPUS_CLIENT2=1\n"), "%s", out);
    ck_assert_msg(lab("exec client1 bash -c 'taskset -pc $$'") == 0 && strstr(out, "list: 1\n"),
                  "%s", out);
    /* Each host: its link to the wire, no route but the lab's subnet, no
     * default one. */
    static const char *const hosts[] = { "wire", "db", "db2", "app", "client1", "client2" };
    for (int i = 0; i < 6; i++) {
        lab("exec %s bash -c 'ip -o link show | grep -c zblab; ip route show table all | "
            "grep -c ^default'", hosts[i]);
        int links = -1, defaults = -1;
        ck_assert_msg(sscanf(out, "%d %d", &links, &defaults) == 2 && links >= 1 && !defaults,
                      "%s: %d lab links, %d default routes: %s", hosts[i], links, defaults, out);
    }
    /* The caller's namespace got no link. */
    ck_assert_int_eq(count_links(), links_before);
    ck_assert_msg(lab("exec nosuch true") == 1 && strstr(out, "no host 'nosuch'"), "%s", out);
    ck_assert_msg(lab("up") == 1 && strstr(out, "already up"), "%s", out);
}
END_TEST

/* ---- lookups: client host -> app host -> db hosts ---- */

START_TEST(lookups_every_backend_and_strategy)
{
    SETUP_OK();
    static const char *const backends[] = { "sqlite", "pg", "innodb", "myisam", "pg_bouncer",
                                            "pg_pool", "pg_pool_lb", "pg_spread" };
    static const char *const strategies[] = { "pooled", "per-request", "pipelined" };
    char path[256], rnd[256], want[8192] = "";
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++)
        for (int s = 0; s < 3; s++) {
            /* Pipelined where the driver has it: pg, through the poolers too. */
            bool pg = !strncmp(backends[b], "pg", 2);
            if (s == 2 && !pg)
                continue;
            bool per_request = s == 1;
            /* The rows of one code, the same from every backend; then a
             * short load, every answer whole and 200. One trip to the
             * client host for both. */
            snprintf(path, sizeof path, "/zip/%s/%s?strategy=%s", backends[b], code, strategies[s]);
            snprintf(rnd, sizeof rnd, "/zip/%s/random?strategy=%s", backends[b], strategies[s]);
            int n = per_request ? 40 : 300;
            int rc = lab("exec %s bash -c 'source \"$ZB_LAB_DIR/lab.env\"; (" GET_CMD "); echo; "
                         "echo =====; ab -s 10 -n %d -c %d \"$ZB_LAB_URL%s\"'",
                         per_request ? "client2" : "client1", path, n, per_request ? 4 : 8, rnd);
            char *sep = strstr(out, "\n=====\n");
            ck_assert_msg(http_status(out) == 200 && sep, "%s: %s", path, out);
            *sep = 0;
            const char *rows = strstr(out, "\"code\":");
            ck_assert_msg(rows, "%s: %s", path, out);
            if (!want[0])
                snprintf(want, sizeof want, "%s", rows);
            ck_assert_msg(!strcmp(rows, want), "%s: %s\nsqlite: %s", path, rows, want);
            memmove(out, sep + 7, strlen(sep + 7) + 1);
            struct ab a = ab_parse(rc);
            ck_assert_msg(a.exit == 0 && a.r.complete == n && !a.r.non2xx && !a.r.connect &&
                          !a.r.receive && !a.r.exceptions, "%s: %s", rnd, out);
        }
    /* MariaDB's client cannot pipeline: refused, clearly. */
    snprintf(path, sizeof path, "/zip/innodb/%s?strategy=pipelined", code);
    ck_assert_msg(get_from("client1", path) == 400 && strstr(out, "cannot pipeline"), "%s", out);
}
END_TEST

/* --rtt through the relay: a request on a new connection from a client
 * costs at least the setup and one round trip, a pooled pg lookup one more
 * (app to db). Lower bounds only: the box is shared. rtt changes the
 * addresses the server reaches the databases by: rtt restarts it itself,
 * so lookups work at once after each change (rtt off once left every pg
 * lookup waiting 2,004 ms for the relay's address, gone, until a restart
 * by hand). */
START_TEST(rtt_puts_a_delay_on_both_links)
{
    SETUP_OK();
    ck_assert_msg(lab("rtt 20") == 0, "%s", out);
    /* Through the relay, the tiers reach each other at the delayed addresses. */
    ck_assert_msg(lab("env") == 0 && strstr(out, "ZB_LAB_RTT_MS=20\n"), "%s", out);
    ck_assert_msg(!strstr(out, "ZB_LAB_DELAY=relay") || strstr(out, "ZB_LAB_DB=198.18.1.10\n"),
                  "%s", out);
    char path[128];
    snprintf(path, sizeof path, "/zip/pg/%s", code);
    get_from("client1", path);   /* the pool's first use */
    uint64_t t0 = zb_now_ns();
    ck_assert_msg(get_from("client1", path) == 200, "%s", out);
    double ms = (double)(zb_now_ns() - t0) / 1e6;
    ck_assert_msg(ms >= 60, "client -> app -> db with rtt 20 ms took %.1f ms (want >= 60: "
                  "setup, request, lookup)", ms);
    t0 = zb_now_ns();
    ck_assert_msg(get_from("client1", "/health") >= 200, "%s", out);
    ms = (double)(zb_now_ns() - t0) / 1e6;
    ck_assert_msg(ms >= 40, "/health with rtt 20 ms took %.1f ms (want >= 40)", ms);
    ck_assert_msg(lab("rtt off") == 0, "%s", out);
    /* The best of three (the first also fills the restarted pool): each
     * took 2,004 ms when the server still dialled the relay's address. */
    double best = 1e9;
    for (int i = 0; i < 3; i++) {
        t0 = zb_now_ns();
        ck_assert_msg(get_from("client1", path) == 200, "%s", out);
        ms = (double)(zb_now_ns() - t0) / 1e6;
        best = ms < best ? ms : best;
    }
    ck_assert_msg(best < 1000, "pg lookups right after rtt off took %.1f ms at best (want < 1000: "
                  "the server must reach the direct addresses)", best);
}
END_TEST

/* ---- PHP on app: nginx + PHP-FPM, the databases and poolers by TCP ---- */

/* zip.php on app, from client1: the rows of the code the C server gives,
 * directly, per request and through each pooler, also after rtt moved
 * every address (rtt restarts PHP, whose environment names them). */
START_TEST(php_on_app_answers_as_the_server)
{
    SETUP_OK();
    char path[256], want[8192];
    snprintf(path, sizeof path, "/zip/pg/%s", code);
    ck_assert_msg(get_from("client1", path) == 200 && strstr(out, "\"code\":"), "%s", out);
    snprintf(want, sizeof want, "%s", strstr(out, "\"code\":"));
    ck_assert_msg(lab("php start") == 0 && strstr(out, "static children"), "%s", out);
    static const char *const queries[] = { "backend=pg", "backend=pg&persistent=0",
                                           "backend=pg&persistent=0&via=pgbouncer",
                                           "backend=pg&persistent=0&via=pgpool",
                                           "backend=innodb", "backend=myisam&persistent=0",
                                           "backend=sqlite" };
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++) {
            lab("exec client1 bash -c 'source \"$ZB_LAB_DIR/lab.env\"; "
                "curl -s --max-time 15 \"$ZB_LAB_PHP_URL?%s&code=%s\"'", queries[i], code);
            /* The same bytes; the page ends its line, the server does not. */
            size_t n = strlen(out);
            while (n && out[n - 1] == '\n')
                out[--n] = 0;
            const char *rows = strstr(out, "\"code\":");
            ck_assert_msg(rows && !strcmp(rows, want), "%s (pass %d): %s\nserver: %s", queries[i], pass,
                          out, want);
        }
        if (pass == 0)
            ck_assert_msg(lab("rtt 0") == 0 && strstr(out, "php on app"), "%s", out);
    }
    ck_assert_msg(lab("rtt off") == 0 && lab("php stop") == 0, "%s", out);
}
END_TEST

/* ---- the replica ---- */

START_TEST(reads_reach_primary_and_replica)
{
    SETUP_OK();
    /* 2 s of load each: a busy backend flushes its statistics once a
     * second, an idle one after 10 s only. */
    static const struct { const char *backend; const char *args; } ways[] = {
        { "pg_spread", "-t 2 -n 1000000 -c 8" },      /* the pg driver's own spreading */
        { "pg_pool_lb", "-t 2 -n 1000000 -c 4" },     /* pgpool-II's load balancing */
    };
    for (int w = 0; w < 2; w++) {
        long long db0 = commits("db"), db20 = commits("db2"), db1, db21;
        char path[128];
        snprintf(path, sizeof path, "/zip/%s/random?strategy=%s", ways[w].backend,
                 w == 0 ? "pooled" : "per-request");
        struct ab a = ab_from("client1", ways[w].args, path);
        ck_assert_msg(a.exit == 0 && !a.r.non2xx && !a.r.connect && !a.r.receive, "%s", out);
        ck_assert_msg(commits_rise("db", db0, &db1) && commits_rise("db2", db20, &db21),
                      "%s: commits on the primary %lld -> %lld, on the replica %lld -> %lld",
                      ways[w].backend, db0, db1, db20, db21);
    }
}
END_TEST

/* No trust from the lab's subnet: the primary's and the replica's
 * pg_hba.conf and both poolers' hba files let in by scram-sha-256 only,
 * the replication role included; from a client host, no password or a
 * wrong one gets nobody into PostgreSQL (directly, through either pooler,
 * as the replication role) nor into MariaDB, while the password file gets
 * zipbench in. */
START_TEST(no_trust_from_the_lab_subnet)
{
    SETUP_OK();
    ck_assert_msg(run_cmd(out, sizeof out, "cd \"$ZB_LAB_DIR\" && grep -HvE '^[[:space:]]*(#|$)' "
                          "db/pg/pg_hba.conf db2/pg/pg_hba.conf db/pooler/pgbouncer.hba "
                          "db/pooler/pool_hba.conf | grep -vE '(scram-sha-256|peer map=[a-z]+)$'; "
                          "grep -hE '^host +replication' db/pg/pg_hba.conf | grep -c scram-sha-256")
                  == 0 && !strcmp(out, "1\n"), "not scram-sha-256, or no replication line: %s", out);
    static const char *const refused[] = {
        "PGPASSFILE=/dev/null psql -X -w -h $ZB_LAB_ADDR_DB -p %1$d -U zipbench -c \"SELECT 1\" zipbench",
        "PGPASSWORD=wrong psql -X -w -h $ZB_LAB_ADDR_DB -p %1$d -U zipbench -c \"SELECT 1\" zipbench",
        "PGPASSWORD=wrong psql -X -w -h $ZB_LAB_ADDR_DB2 -p %1$d -U zipbench -c \"SELECT 1\" zipbench",
        "PGPASSWORD=wrong psql -X -w -h $ZB_LAB_ADDR_DB -p %2$d -U zipbench -c \"SELECT 1\" zipbench",
        "PGPASSWORD=wrong psql -X -w -h $ZB_LAB_ADDR_DB -p %3$d -U zipbench -c \"SELECT 1\" zipbench",
        "PGPASSFILE=/dev/null psql -X -w \"host=$ZB_LAB_ADDR_DB port=%1$d user=zipbench_replication "
        "replication=true dbname=replication\" -c IDENTIFY_SYSTEM",
        "PGPASSFILE=/dev/null psql -X -w -h $ZB_LAB_ADDR_DB -p %1$d -U postgres -c \"SELECT 1\"",
        "mariadb --no-defaults -h $ZB_LAB_ADDR_DB -P %4$d -u zipbench --password=wrong -e \"SELECT 1\"",
        "mariadb --no-defaults -h $ZB_LAB_ADDR_DB -P %4$d -u root -e \"SELECT 1\"",
    };
    int pg = env_port("ZB_PG_PORT", 25432);
    int bouncer = env_port("ZB_PGBOUNCER_PORT", 16432);
    int pgpool = env_port("ZB_PGPOOL_PORT", 19999);
    int my = env_port("ZB_MY_PORT", 23306);
    char cmd[1024];
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        snprintf(cmd, sizeof cmd, refused[i], pg, bouncer, pgpool, my);
        ck_assert_msg(lab("exec client1 bash -c 'source \"$ZB_LAB_DIR/lab.env\"; %s'", cmd) != 0,
                      "let in from client1: %s: %s", cmd, out);
    }
    /* With the password: in. */
    ck_assert_msg(lab("exec client1 bash -c 'source \"$ZB_LAB_DIR/lab.env\"; PGPASSFILE=$ZB_LAB_DIR/db/pgpass "
                      "psql -X -w -h $ZB_LAB_ADDR_DB -p %d -U zipbench -tAc \"SELECT 1\" zipbench'", pg) == 0 &&
                  !strcmp(out, "1\n"), "%s", out);
    ck_assert_msg(lab("exec client1 bash -c 'source \"$ZB_LAB_DIR/lab.env\"; mariadb "
                      "--defaults-file=$ZB_LAB_DIR/db/client.cnf --protocol=tcp -h $ZB_LAB_ADDR_DB -P %d "
                      "-NBe \"SELECT 1\"'", my) == 0 && !strcmp(out, "1\n"), "%s", out);
}
END_TEST

/* loadgen on a client host: its report's lines, then "NNN" for each
 * non-2xx status it met, counted ("  12 503"). */
static struct ab loadgen_from(const char *host, const char *args, const char *path)
{
    lab("exec %s bash -c 'source \"$ZB_LAB_DIR/lab.env\"; o=$ZB_LAB_DIR/loadgen-%s.out; "
        "%s -v 2 -s 10 %s \"$ZB_LAB_URL%s\" > $o 2>&1; echo exit=$?; "
        "grep -E \"^(Complete|Failed|Non-2xx|Requests per)\" $o; "
        "grep -o \"not 2xx ([0-9]*)\" $o | sed \"s/.*(//; s/)//\" | sort | uniq -c'",
        host, host, prog("loadgen"), args, path);
    const char *p = strstr(out, "exit=");
    struct ab g = ab_parse(p ? atoi(p + 5) : -1);
    /* The status counts, after the report's lines. */
    for (p = (p = strstr(out, "Requests per second:")) ? strchr(p, '\n') : NULL; p && *p; p = strchr(p, '\n')) {
        int n, status;
        if (sscanf(p, "%d %d", &n, &status) == 2 && status != 503)
            g.non503 += n;
        p++;
    }
    return g;
}

/* The replica stops while lookups run over both servers: the requests on
 * it at that moment get 503 (or, retried on a fresh connection, which then
 * comes from the primary, 200), none hangs, fails or is lost; then every
 * lookup is served by the primary; once the replica is back it gets
 * lookups again. */
START_TEST(replica_stops_under_load_and_comes_back)
{
    SETUP_OK();
    const char *path = "/zip/pg_spread/random";
    pid_t stopper = fork();
    if (stopper == 0) {
        usleep(1500 * 1000);
        _exit(run_cmd(NULL, 0, "scripts/lab stop replica") == 0 ? 0 : 1);
    }
    uint64_t t0 = zb_now_ns();
    struct ab g = loadgen_from("client1", "-t 5 -c 8", path);
    double s = (double)(zb_now_ns() - t0) / 1e9;
    int st;
    waitpid(stopper, &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "scripts/lab stop replica failed");
    ck_assert_msg(g.exit == 0 && g.r.complete > 0 && !g.r.failed && !g.non503,
                  "every request answered, 200 or 503: %s", out);
    ck_assert_msg(s < 20, "loadgen -t 5 took %.1f s: something hung", s);
    printf("lab: replica stopped under load: %d lookups, %d of them 503 (%.0f/s)\n", g.r.complete,
           g.r.non2xx, g.r.rps);
    /* Now the primary alone. */
    g = loadgen_from("client1", "-n 200 -c 8", path);
    ck_assert_msg(g.exit == 0 && g.r.complete == 200 && !g.r.non2xx, "%s", out);
    /* Back: the replica gets its share again (a connection that fell back
     * to the primary is replaced after a second). */
    ck_assert_msg(lab("start replica") == 0, "%s", out);
    long long before = commits("db2"), now = before;
    bool used = false;
    for (int i = 0; i < 5 && !used; i++) {
        g = loadgen_from("client1", "-t 2 -c 8", path);
        ck_assert_msg(g.exit == 0 && g.r.complete > 0 && !g.r.non2xx, "%s", out);
        used = commits_rise("db2", before, &now);
    }
    ck_assert_msg(used, "the replica's commits stayed at %lld after it came back", before);
}
END_TEST

/* ---- loadgen agents on several client hosts ---- */

START_TEST(loadgen_agents_on_two_clients)
{
    SETUP_OK();
    ck_assert_msg(lab("loadgen --clients 2 -k -c 3 -n 150 /zip/sqlite/random") == 0, "%s", out);
    /* One report for both: the sums. */
    const char *p = strstr(out, "Complete requests:");
    ck_assert_msg(p && atoi(p + 18) == 300, "%s", out);
    p = strstr(out, "Concurrency Level:");
    ck_assert_msg(p && atoi(p + 18) == 6, "%s", out);
    ck_assert_msg(!strstr(out, "Non-2xx"), "%s", out);
    /* Each agent ran on its own host, from its own address. */
    ck_assert_msg(lab("exec client2 cat \"$ZB_LAB_DIR/loadgen/client2.out\"") == 0 &&
                  strstr(out, "Complete requests:      150"), "%s", out);
    /* The merged report as JSON. */
    ck_assert_msg(lab("loadgen --clients 2 --json -c 1 -n 20 /zip/sqlite/random") == 0 &&
                  strstr(out, "\"completed\":40"), "%s", out);
    /* More agents than client hosts, or flags that would clash: refused. */
    ck_assert_msg(lab("loadgen --clients 3 -n 1 /health") == 2 && strstr(out, "1..2"), "%s", out);
    ck_assert_msg(lab("loadgen --clients 2 --hdr-log x -n 1 /health") == 2, "%s", out);
}
END_TEST

/* ---- down ---- */

START_TEST(down_leaves_nothing)
{
    SETUP_OK();
    record_nets();
    ck_assert_int_gt(nnets, 5);
    ck_assert_msg(lab("down") == 0 && strstr(out, "down:"), "%s", out);
    ck_assert_msg(!leftovers()[0], "after down: %s", leftovers());
    ck_assert_msg(lab("status") == 1 && strstr(out, "is down"), "%s", out);
    ck_assert_msg(lab("down") == 0 && strstr(out, "not up"), "%s", out);
}
END_TEST

/* An up that fails half way (PostgreSQL cannot bind port 80 as postgres)
 * takes down what it made. */
START_TEST(failed_up_leaves_nothing)
{
    SETUP_OK();
    ck_assert_msg(run_cmd(out, sizeof out, "ZB_PG_PORT=80 scripts/lab up") == 1 &&
                  strstr(out, "up failed: taking down what it made"), "%s", out);
    record_nets();
    ck_assert_msg(!leftovers()[0], "after a failed up: %s", leftovers());
    /* Bad usage makes nothing at all. */
    ck_assert_msg(lab("up --clients 0") == 2 && strstr(out, "--clients: '0'"), "%s", out);
    ck_assert_msg(lab("up --cpus app=99") == 2 && strstr(out, "not a CPU list"), "%s", out);
    ck_assert_msg(lab("up --rtt fast") == 2, "%s", out);
    ck_assert_msg(!leftovers()[0], "after bad usage: %s", leftovers());
}
END_TEST

/* From a fresh copy of the tree (no build/, no data: new clusters, a new
 * replica), up with every service, then down: nothing left. */
START_TEST(fresh_clone_up_then_down_leaves_nothing)
{
    SETUP_OK();
    snprintf(clone, sizeof clone, "%s/clone", dir);
    ck_assert_msg(run_cmd(out, sizeof out, "rm -rf '%s' && mkdir -p '%s' && git ls-files -z --cached "
                          "--others --exclude-standard | tar --null --ignore-failed-read -T - -cf - | "
                          "tar -xf - -C '%s'", clone, clone, clone) == 0, "%s", out);
    char labdir[1300];
    snprintf(labdir, sizeof labdir, "%s/build/lab", clone);
    setenv("ZB_LAB_DIR", labdir, 1);   /* for record_nets and leftovers */
    int rc = run_cmd(out, sizeof out, "cd '%s' && env -u ZB_LAB_DIR scripts/lab up --clients 1", clone);
    record_nets();
    ck_assert_msg(rc == 0 && strstr(out, "a replica of") && strstr(out, "pgbouncer") &&
                  strstr(out, "pgpool") && strstr(out, "mariadbd"), "%s", out);
    ck_assert_int_gt(nnets, 4);
    ck_assert_msg(run_cmd(out, sizeof out, "cd '%s' && env -u ZB_LAB_DIR scripts/lab down --purge",
                          clone) == 0, "%s", out);
    ck_assert_msg(!leftovers()[0], "after up and down in a fresh copy: %s", leftovers());
    run_cmd(NULL, 0, "rm -rf '%s'", clone);
}
END_TEST

Suite *suite_lab(void)
{
    TCase *t = tier(test_case("lab", setup, teardown, 240, TESTS(
        hosts_as_asked, lookups_every_backend_and_strategy, rtt_puts_a_delay_on_both_links,
        reads_reach_primary_and_replica, replica_stops_under_load_and_comes_back,
        no_trust_from_the_lab_subnet, loadgen_agents_on_two_clients,
        php_on_app_answers_as_the_server, down_leaves_nothing, /* last two: the lab goes */
        failed_up_leaves_nothing, fresh_clone_up_then_down_leaves_nothing)), TIER_SLOW);
    return suite_of("lab", t, NULL);
}
