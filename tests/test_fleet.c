/* The fleet (scripts/fleet, the playbooks of fleet/, bench/fleet.mjs) over real SSH
 * against the lab's hosts: `scripts/lab up --ssh --no-replica --clients 2`
 * (db with its poolers, app, client1, client2: sshd in each, keys made for
 * that lab; no replica, which the fleet's checks do not need and whose
 * pg_basebackup is slow), then the real playbooks through the lab's
 * inventory: setup (then again on one host: it changes nothing, copies
 * nothing), up, load (a generated set), run (an agent on each client host,
 * merged), down; then nothing is left. Each step's time is printed.
 * Every request goes from a client host to app to the db hosts, inside
 * the lab's namespaces; SSH reaches the hosts through the wire (nc in its
 * namespace), so no link or address of the lab is ever on this side.
 * Skipped (one line) where network namespaces cannot be made. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

#define ROWS 2000

static char dir[1024], csv[1100], inv[1200], state[1100];
static char setup_error[4096];
static bool skipped;
static char code[8];
static char out[1 << 17];
static char timings[512];          /* "setup 41 s, up 20 s, ..." */

#define lab(...) run_cmd(out, sizeof out, "scripts/lab " __VA_ARGS__)
/* scripts/fleet VERB -i the lab's inventory, then ARGS (a format and its
 * values): its exit status, its output in out. */
static int fleet(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fleet(const char *verb, const char *fmt, ...)
{
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = run_cmd(out, sizeof out, "scripts/fleet %s -i '%s' %s", verb, inv, args);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    size_t n = strlen(timings);
    snprintf(timings + n, sizeof timings - n, "%s%s %.0f s", n ? ", " : "", verb,
             (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    return rc;
}

static void setup_failed(const char *what)
{
    size_t n = strlen(out);
    snprintf(setup_error, sizeof setup_error, "%s: %.3000s", what, out + (n > 3000 ? n - 3000 : 0));
}

static void setup(void)
{
    build_path_absolute("test/fleet", dir, sizeof dir);
    char labdir[1100];
    snprintf(labdir, sizeof labdir, "%s/lab", dir);
    setenv("ZB_LAB_DIR", labdir, 1);
    snprintf(state, sizeof state, "%s/controller", dir);
    setenv("ZB_FLEET_DIR", state, 1);
    snprintf(inv, sizeof inv, "%s/inventory.ini", labdir);
    /* Fewer pgpool-II children and Apache workers start faster (the lab
     * writes them into its inventory). The test asks one at a time, but
     * the server's pools through pgpool-II (pg_pool, pg_pool_lb: pool_min
     * 2 each, opened by /health) hold children of their own: 16. */
    setenv("ZB_PGPOOL_CHILDREN", "16", 1);
    setenv("ZB_APACHE_WORKERS", "4", 1);
    char why[4096];
    if (geteuid() != 0 || run_cmd(why, sizeof why, "unshare --net true") != 0) {
        skipped = true;
        printf("fleet: skipped: network namespaces cannot be made here (%s)\n", geteuid() ? "not root" : why);
        fflush(stdout);
        return;
    }
    lab("down");
    snprintf(csv, sizeof csv, "%s/g.csv", dir);
    if (fresh_generated_set(dir, csv, ROWS, 14, setup_error, sizeof setup_error) < 0 ||
        first_code(csv, code, sizeof code, setup_error, sizeof setup_error) < 0)
        return;
    if (lab("up --ssh --no-replica --clients 2 --cpus app=0 --cpus client=1") != 0)
        setup_failed("scripts/lab up --ssh");
}

static void teardown(void)
{
    if (skipped)
        return;
    run_cmd(NULL, 0, "scripts/fleet down -i '%s' > /dev/null 2>&1", inv);
    lab("down");
}

#define SETUP_OK()                                                  \
    do {                                                            \
        if (skipped)                                                \
            return;                                                 \
        ck_assert_msg(!setup_error[0], "%s", setup_error);         \
    } while (0)

/* Every host's "changed=N" of a play recap, summed; -1 without a recap. */
static int changed_in_recap(const char *text)
{
    const char *p = strstr(text, "PLAY RECAP");
    if (!p)
        return -1;
    int sum = 0;
    while ((p = strstr(p, "changed=")))
        sum += atoi(p += 8);
    return sum;
}

/* GET url on a client host: the body (curl), in out. */
static int get_on(const char *host, const char *url)
{
    return lab("exec %s curl -s --max-time 20 '%s'", host, url);
}

START_TEST(inventory_of_the_lab)
{
    SETUP_OK();
    ck_assert_msg(run_cmd(out, sizeof out, "cat '%s'", inv) == 0, "%s", out);
    static const char *const want[] = { "[db]\nlab-db\n", "[pooler]\nlab-db\n",
                                        "[app]\nlab-app\n", "[client]\nlab-client1\nlab-client2\n",
                                        "ansible_ssh_private_key_file=", "StrictHostKeyChecking=yes",
                                        "zipbench_pgpool_children=16\n", "zipbench_apache_workers=4\n" };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(out, want[i]), "no '%s' in %s", want[i], out);
    /* --no-replica: no db2 host, an empty db_replica group. */
    ck_assert_msg(!strstr(out, "lab-db2") && strstr(out, "[db_replica]\n\n"), "%s", out);
    /* Keys only: a login without the lab's key is refused. */
    ck_assert_msg(lab("exec client1 ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                      "-o IdentitiesOnly=yes -o IdentityFile=/dev/null root@198.18.0.20 true") != 0 &&
                  strstr(out, "Permission denied"), "%s", out);
}
END_TEST

/* Exit statuses a script can act on: 2 for what the fleet refuses before
 * it asks any host (an option of its, of run's, or of ansible-playbook's),
 * 3 for a host SSH cannot reach (here: a port no sshd listens on). */
START_TEST(exit_statuses)
{
    SETUP_OK();
    ck_assert_msg(fleet("up", "--purge") == 2 && strstr(out, "--purge is down's option"), "%s", out);
    ck_assert_msg(fleet("run", "--runs 0") == 2 && strstr(out, "--runs") && !strstr(out, "PLAY"), "%s", out);
    ck_assert_msg(fleet("down", "--no-such-option") == 2, "%s", out);
    /* An inventory Ansible cannot read is refused, not an empty fleet. */
    ck_assert_msg(run_cmd(out, sizeof out, "printf '[db\\nx = = y\\n' > '%s/bad.ini' && scripts/fleet up -i '%s/bad.ini'",
                          dir, dir) == 2 && strstr(out, "refused"), "%s", out);
    ck_assert_msg(fleet("down", "-l lab-client1 -e ansible_port=2") == 3 && strstr(out, "UNREACHABLE"), "%s", out);
    timings[0] = 0;
}
END_TEST

/* setup, up, load, run, down in order: one test, since each needs the last. */
START_TEST(setup_up_load_run_down)
{
    SETUP_OK();
    ck_assert_msg(fleet("setup", "%s", "") == 0, "setup: %s", out);
    /* Idempotent: nothing changes the second time, nothing is copied (on
     * the app host, which has the most packages: every host runs the same
     * tasks). */
    ck_assert_msg(fleet("setup", "-l lab-app") == 0 && changed_in_recap(out) == 0 && strstr(out, "lab-app "),
                  "second setup: %s", out);
    ck_assert_msg(fleet("up", "%s", "") == 0, "up: %s", out);
    ck_assert_msg(fleet("load", "--dataset '%s'", csv) == 0, "load: %s", out);

    /* The answers through the fleet, from a client host, are the C server's
     * bytes: the same rows from every backend, each database and pooler on
     * db, and from PHP-FPM and Apache on app. */
    char url[512], want[8192];
    snprintf(url, sizeof url, "http://198.18.0.20:8080/zip/sqlite/%s", code);
    ck_assert_msg(get_on("client1", url) == 0 && strstr(out, "\"code\":"), "%s", out);
    /* From the rows on: the answer names its backend first. */
    snprintf(want, sizeof want, "%.8000s", strstr(out, "\"code\":"));
    static const char *const paths[] = { "/zip/pg/%s", "/zip/innodb/%s?strategy=per-request", "/zip/myisam/%s",
                                         "/zip/pg_bouncer/%s?strategy=per-request",
                                         "/zip/pg_pool/%s?strategy=per-request", "/zip/pg_pool_lb/%s",
                                         "/zip/pg_spread/%s" };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, paths[i], code);
        snprintf(url, sizeof url, "http://198.18.0.20:8080%s", path);
        ck_assert_msg(get_on(i % 2 ? "client2" : "client1", url) == 0 && strstr(out, "\"code\":") &&
                      !strcmp(strstr(out, "\"code\":"), want), "%s: %s\nsqlite: %s", path, out, want);
    }
    static const char *const php[] = { "8082/zip.php?backend=pg&persistent=0&via=pgbouncer",
                                       "8081/zip.php?backend=innodb&persistent=1" };
    for (size_t i = 0; i < sizeof php / sizeof php[0]; i++) {
        snprintf(url, sizeof url, "http://198.18.0.20:%s&code=%s", php[i], code);
        ck_assert_msg(get_on("client2", url) == 0, "%s", out);
        size_t n = strlen(out);
        while (n && out[n - 1] == '\n')
            out[--n] = 0;
        ck_assert_msg(strstr(out, "\"code\":") && !strcmp(strstr(out, "\"code\":"), want), "%s: %s\nserver: %s",
                      url, out, want);
    }

    /* The run: both agents, merged, the inventory in the provenance. */
    char json[1200];
    snprintf(json, sizeof json, "%s/run.json", dir);
    ck_assert_msg(fleet("run", "--backends pg --strategies pooled --concurrency 4 --runs 2 --duration 0.3 "
                        "--json '%s'", json) == 0, "run: %s", out);
    ck_assert_msg(strstr(out, "== clocks: largest offset between client hosts") &&
                  strstr(out, "each agent (lab-client1 / lab-client2)") &&
                  strstr(out, "Start: every agent started within "), "%s", out);
    ck_assert_msg(run_cmd(out, sizeof out, "node -e '"
                          "const j = JSON.parse(require(\"fs\").readFileSync(process.argv[1]));"
                          "const inv = j.provenance.inventory;"
                          "const ok = j.cells.length === 1 && j.cells.every(c => c.runs.length === 2 && c.runs.every(r => r > 0) &&"
                          "  c.agents.every(a => a.length === 2 && a.every(x => x.rps > 0)) &&"
                          /* The merged rate is the agents' together (their
                           * starts were apart once, losing a fifth), unless
                           * the run says it started late. */
                          "  c.runs.every((r, i) => c.start_late_ms[i] > 3 ||"
                          "    r >= 0.9 * c.agents[i].reduce((s, a) => s + a.rps, 0)));"
                          "console.log(ok, Object.keys(inv.hosts).length, inv.roles.client.length, inv.hosts[\"lab-app\"].cores > 0,"
                          "  !!inv.hosts[\"lab-db\"].cpu, Object.keys(inv.clocks).length, inv.rtt_ms.app_db[\"lab-db\"].min > 0)' '%s'",
                          json) == 0 && !strcmp(out, "true 4 2 true true 2 true\n"), "%s", out);

    /* down: nothing left on any host, no copied password. */
    ck_assert_msg(fleet("down", "%s", "") == 0, "down: %s", out);
    /* "[/]..." so that pgrep does not find the shell that runs it. */
    ck_assert_msg(run_cmd(out, sizeof out, "pgrep -af -- '[/]%s/lab/fleet/' || true; "
                          "ls '%s'/lab/fleet/*/build/fleet/db.pgpass '%s'/lab/fleet/*/build/fleet/primary.pgpass 2>/dev/null || true; "
                          "pgrep -af -- '[C]ontrolPath=%s' || true", dir + 1, dir, dir, state) == 0 && !out[0],
                  "left after down: %s", out);
    const int ports[] = { 8080, 8081, 8082, env_port("ZB_PG_PORT", 25432), env_port("ZB_MY_PORT", 23306),
                          env_port("ZB_PGBOUNCER_PORT", 16432), env_port("ZB_PGPOOL_PORT", 19999) };
    for (int i = 0; i < 2; i++) {
        static const char *const hosts[] = { "db", "app" };
        ck_assert_msg(lab("exec %s ss -Hltn", hosts[i]) == 0 && strstr(out, ":22 "), "%s", out);
        for (size_t p = 0; p < sizeof ports / sizeof ports[0]; p++) {
            char port[16];
            snprintf(port, sizeof port, ":%d ", ports[p]);
            ck_assert_msg(!strstr(out, port), "%s listens on %d after down: %s", hosts[i], ports[p], out);
        }
    }
    /* The lab's down takes its keys with it. */
    ck_assert_msg(lab("down") == 0, "%s", out);
    ck_assert_msg(run_cmd(out, sizeof out, "ls -d '%s'/lab/ssh '%s' 2>/dev/null || true; pgrep -af '[s]shd.*%s' || true",
                          dir, inv, dir) == 0 && !out[0], "left after scripts/lab down: %s", out);
    printf("fleet: %s\n", timings);
    fflush(stdout);
}
END_TEST

Suite *suite_fleet(void)
{
    TCase *t = tier(test_case("fleet", setup, teardown, 900, TESTS(inventory_of_the_lab, exit_statuses, setup_up_load_run_down)),
                    TIER_SLOW);
    return suite_of("fleet", t, NULL);
}
