/* No one in where they don't belong: the project's
 * PostgreSQL and MariaDB (scripts/db) let in only the account that holds
 * the passwords scripts/db wrote (PostgreSQL's socket: peer auth, for the
 * account that runs the servers), and zipbench holds only the rights the
 * benchmarks need. Logins are tried with the real clients, psql and
 * mariadb, as another OS user (nobody, through runuser, when the tests run
 * as root; as a normal user, this account without the password files,
 * which is all another account could have). Where to connect comes from
 * the tests' config ($ZB_CONF), as every program reads it. */
#include <check.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "helpers.h"

static struct zb_conf zc;
static const struct backend_conf *pg, *my;
static char pg_socket[PATH_MAX], my_socket[PATH_MAX];
static char setup_error[1024];
static bool as_root;

static void setup(void)
{
    struct zb_err err = { 0 };
    as_root = geteuid() == 0;
    if (run_cmd(setup_error, sizeof setup_error, "scripts/db start > /dev/null") != 0)
        return;
    setup_error[0] = 0;
    if (conf_load(&zc, conf_path(), &err) < 0) {
        snprintf(setup_error, sizeof setup_error, "%s", err.msg);
        return;
    }
    pg = conf_backend(&zc, "pg");
    my = conf_backend(&zc, "innodb");
    /* Real paths: a socket under a symlinked build/db (data in /var/tmp when
     * the tree is in a private home) is reached by nobody only that way. */
    if (!pg || !my || !pg->socket || !my->socket || !pg->password_file || !my->password_file ||
        !realpath(pg->socket, pg_socket) || !realpath(my->socket, my_socket))
        snprintf(setup_error, sizeof setup_error, "%s: [backend pg] and [backend innodb] need "
                 "socket and password_file, and the sockets must exist", conf_path());
}

static void teardown(void) { conf_free(&zc); }

#define SETUP_OK() ck_assert_msg(!setup_error[0], "%s", setup_error)

/* Runs a client command as the other user: nobody (as root), or this
 * account with no password file and no home to find one in. */
static int as_other(char *out, size_t len, const char *cmd)
{
    if (as_root)
        return run_cmd(out, len, "cd / && runuser -u nobody -- env -i PATH=/usr/bin:/bin %s", cmd);
    return run_cmd(out, len, "cd / && env -i PATH=/usr/bin:/bin HOME=/nonexistent %s", cmd);
}

/* Denied, and denied for want of credentials (not a wrong path or port). */
static void assert_refused(const char *cmd, const char *const *reasons)
{
    char out[2048];
    int rc = as_other(out, sizeof out, cmd);
    bool named = false;
    for (; *reasons; reasons++)
        named |= strstr(out, *reasons) != NULL;
    ck_assert_msg(rc != 0 && named, "%s as %s: exit %d: %s", cmd, as_root ? "nobody" : "another",
                  rc, out);
}

/* Runs sql as zipbench over TCP with its password file; the exit status. */
static int as_zipbench(char *out, size_t len, const struct backend_conf *b, const char *sql)
{
    if (b == pg)
        return run_cmd(out, len, "PGPASSFILE=%s psql -X -w -h 127.0.0.1 -p %d -U zipbench -d zipbench "
                       "-tAc \"%s\"", b->password_file, b->port, sql);
    return run_cmd(out, len, "mariadb --defaults-file=%s --protocol=TCP -h 127.0.0.1 -P %d -N -e \"%s\" "
                   "zipbench", b->password_file, b->port, sql);
}

/* sql as zipbench: its output is want (refused: NULL, and the error names why). */
static void zipbench_gets(const struct backend_conf *b, const char *sql, const char *want, const char *why)
{
    char out[4096];
    int rc = as_zipbench(out, sizeof out, b, sql);
    if (want)
        ck_assert_msg(rc == 0 && !strcmp(out, want), "%s: exit %d: %s", sql, rc, out);
    else
        ck_assert_msg(rc != 0 && strstr(out, why), "%s: exit %d: %s", sql, rc, out);
}

static const char *const pg_denied[] = { "no password supplied", "password authentication failed",
                                         "no pg_hba.conf entry",
                                         "Peer authentication failed", NULL };
static const char *const my_denied[] = { "Access denied", NULL };

START_TEST(another_os_user_cannot_log_in)
{
    SETUP_OK();
    char cmd[PATH_MAX + 256], out[2048];
    /* The same logins with the password files work: the refusals below
     * are about credentials, not about reaching the servers. */
    ck_assert_msg(as_zipbench(out, sizeof out, pg, "SELECT 1") == 0, "%s", out);
    ck_assert_msg(as_zipbench(out, sizeof out, my, "SELECT 1") == 0, "%s", out);

    static const char *const pg_users[] = { "zipbench", "postgres" };
    for (int u = 0; u < 2; u++) {
        snprintf(cmd, sizeof cmd, "psql -X -w -h 127.0.0.1 -p %d -U %s -d zipbench -c 'SELECT 1'",
                 pg->port, pg_users[u]);
        assert_refused(cmd, pg_denied);
        /* Through the socket, peer auth admits the account that runs the
         * servers (and www-data, as zipbench): as a normal user "another"
         * is this account, so this is tried as root only. */
        if (as_root) {
            snprintf(cmd, sizeof cmd, "psql -X -w -h %s -p %d -U %s -d zipbench -c 'SELECT 1'", pg_socket,
                     pg->port, pg_users[u]);
            assert_refused(cmd, pg_denied);
        }
    }
    static const char *const my_users[] = { "zipbench", "root" };
    for (int u = 0; u < 2; u++) {
        snprintf(cmd, sizeof cmd, "mariadb --no-defaults --protocol=TCP -h 127.0.0.1 -P %d -u %s -e 'SELECT 1'",
                 my->port, my_users[u]);
        assert_refused(cmd, my_denied);
        /* root through the socket: unix_socket auth, only for OS root. */
        snprintf(cmd, sizeof cmd, "mariadb --no-defaults -S %s -u %s -e 'SELECT 1'", my_socket, my_users[u]);
        assert_refused(cmd, my_denied);
    }
}
END_TEST

/* MariaDB's root has no password login at all, not even for root over TCP. */
START_TEST(mariadb_root_has_no_tcp_login)
{
    SETUP_OK();
    char out[2048];
    int rc = run_cmd(out, sizeof out, "mariadb --no-defaults --protocol=TCP -h 127.0.0.1 -P %d -u root "
                     "-e 'SELECT 1'", my->port);
    ck_assert_msg(rc != 0 && strstr(out, "Access denied"), "exit %d: %s", rc, out);
}
END_TEST

/* zipbench: no superuser, no programs run by the server, no files read. */
START_TEST(pg_zipbench_is_no_superuser)
{
    SETUP_OK();
    zipbench_gets(pg, "SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user",
                  "f|f|f\n", NULL);
    zipbench_gets(pg, "COPY (SELECT 1) TO PROGRAM 'true'", NULL, "pg_execute_server_program");
    zipbench_gets(pg, "SELECT pg_read_file('/etc/passwd')", NULL, "permission denied");
    /* What the benchmarks do, it may: tables in its own database. */
    char out[4096];
    ck_assert_msg(as_zipbench(out, sizeof out, pg, "DROP TABLE IF EXISTS zt_access; CREATE TABLE zt_access (a int); "
                              "DROP TABLE zt_access") == 0, "%s", out);
}
END_TEST

START_TEST(mariadb_zipbench_has_no_file_or_super)
{
    SETUP_OK();
    char out[4096];
    ck_assert_int_eq(as_zipbench(out, sizeof out, my, "SHOW GRANTS"), 0);
    ck_assert_msg(!strstr(out, "SUPER") && !strstr(out, "FILE") && !strstr(out, "ALL PRIVILEGES"),
                  "%s", out);
    /* On *.* (the whole server): nothing but the right to log in. */
    for (const char *l = out; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0)) {
        size_t n = strcspn(l, "\n");
        if (memmem(l, n, " ON *.* ", 8))
            ck_assert_msg(!strncmp(l, "GRANT USAGE ON *.* ", 19), "%.*s", (int)n, l);
    }
    zipbench_gets(my, "SELECT load_file('/etc/passwd') IS NULL", "1\n", NULL);
    zipbench_gets(my, "SET GLOBAL innodb_flush_log_at_trx_commit = 2", NULL, "SUPER");
    /* The one global setting it may change, through scripts/db's procedure. */
    zipbench_gets(my, "CALL zipbench_admin.set_innodb_flush_log_at_trx_commit(@@innodb_flush_log_at_trx_commit)",
                  "", NULL);
}
END_TEST

/* The password files: the runner's own, mode 0600. */
START_TEST(password_files_are_private)
{
    SETUP_OK();
    const char *files[] = { pg->password_file, my->password_file };
    for (int i = 0; i < 2; i++) {
        struct stat st;
        ck_assert_msg(stat(files[i], &st) == 0, "%s missing", files[i]);
        ck_assert_msg((st.st_mode & 0777) == 0600 && st.st_uid == geteuid(), "%s: mode %o, uid %u",
                      files[i], st.st_mode & 0777, (unsigned)st.st_uid);
    }
}
END_TEST

/* The first password in a password file: pgpass's 5th field, client.cnf's
 * "password = ". Empty if none. */
static void password_in(const char *file, bool pgpass, char *pw, size_t len)
{
    pw[0] = 0;
    FILE *f = fopen(file, "r");
    if (!f)
        return;
    char line[1024];
    while (!pw[0] && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        const char *p = line;
        if (pgpass) {
            for (int i = 0; i < 4 && p; i++)
                p = strchr(p, ':') ? strchr(p, ':') + 1 : NULL;
        } else {
            p = !strncmp(line, "password", 8) ? strchr(line, '=') : NULL;
            for (p = p ? p + 1 : NULL; p && *p == ' '; p++)
                ;
        }
        if (p && *p)
            snprintf(pw, len, "%s", p);
    }
    fclose(f);
}

/* No file under build/ that others can read holds a password. The bench's
 * bulk part once wrote pgloader command files (NAME.load under build/bench) of
 * mode 0644 with postgresql://zipbench:PASSWORD@ in them: it runs first,
 * so the check sees what it writes. The passwords are matched from a 0600
 * pattern file (grep -f), never put on a command line. */
START_TEST(no_password_in_readable_files)
{
    SETUP_OK();
    char out[16384];
    int rc = run_cmd(out, sizeof out, "timeout 600 scripts/bench --quick --only bulk");
    ck_assert_msg(rc == 0, "scripts/bench --quick --only bulk: exit %d: %.3000s", rc, out);
    char pw[2][512];
    password_in(pg->password_file, true, pw[0], sizeof pw[0]);
    password_in(my->password_file, false, pw[1], sizeof pw[1]);
    ck_assert_msg(pw[0][0] && pw[1][0], "no password in %s or %s", pg->password_file,
                  my->password_file);
    char patterns[PATH_MAX];
    snprintf(patterns, sizeof patterns, "%s/passwords", test_dir("access"));
    mode_t old = umask(077);
    FILE *f = fopen(patterns, "w");
    umask(old);
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n%s\n", pw[0], pw[1]);
    fclose(f);
    rc = run_cmd(out, sizeof out, "find build -xdev -type f -perm -o=r -size -64M -print0 | "
                 "xargs -0 -r grep -lF -f '%s' --", patterns);
    unlink(patterns);
    ck_assert_msg(rc != 0 && !out[0], "files others can read hold a database password: %s", out);
}
END_TEST

Suite *suite_access(void)
{
    TCase *t = test_case("access", setup, teardown, 660, TESTS(
        another_os_user_cannot_log_in, mariadb_root_has_no_tcp_login,
        pg_zipbench_is_no_superuser, mariadb_zipbench_has_no_file_or_super,
        password_files_are_private, no_password_in_readable_files));
    return suite_of("access", t, NULL);
}
