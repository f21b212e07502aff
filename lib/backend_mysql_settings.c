/* The MariaDB driver's crash-safe change of a global setting:
 * innodb_flush_log_at_trx_commit, which a load's --sync sets (set_sync),
 * which close() puts back (my_release_sync), and which recover() puts back
 * for a load that was killed before it could. How: below. */
#include <mysql.h>
#include <mysqld_error.h>
#include <errno.h>
#include <signal.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_mysql.h"

/* ---- the global durability knob, put back whatever happens ----
 *
 * innodb_flush_log_at_trx_commit is server-wide and outlives the session
 * that set it, so a session that changes it first records, in
 * SETTINGS_TABLE of its database, the value to put back (the one found
 * when no record was there: the server's own), under a GET_LOCK name that
 * it holds until it ends, and who changed it ("pid N on HOST"). close()
 * deletes its record and puts the value back unless another live record
 * still needs the change. A record is abandoned when its lock is free (its
 * session ended without close(): a loader killed with SIGKILL, a server
 * restart) or when its process is gone from this host while MariaDB still
 * ends its session (rolling back a big transaction can take seconds, the
 * lock held all along): no one will put its value back but the next
 * loader's recover() (and `scripts/db start`, for free locks), which do,
 * and say so. A record of a process on another host counts as live while
 * its lock is held: there is no telling whether that process is gone. */
#define SETTINGS_TABLE "zipbench_global_settings"
#define FLUSH_KNOB "innodb_flush_log_at_trx_commit"

/* innodb_flush_log_at_trx_commit is global: scripts/db lets zipbench change
 * it only through a procedure that runs with root's rights (zipbench has
 * no SUPER). A server without that procedure gets SET GLOBAL, which works
 * for an account that has SUPER. */
static int set_flush_log(struct db *db, int value, struct zb_err *err)
{
    char sql[96];
    snprintf(sql, sizeof sql, "CALL zipbench_admin.set_innodb_flush_log_at_trx_commit(%d)", value);
    struct zb_err call_err = { 0 };
    if (my_exec(db, sql, &call_err) == 0)
        return 0;
    unsigned e = mysql_errno(db->h);
    if (e != ER_SP_DOES_NOT_EXIST && e != ER_BAD_DB_ERROR && e != ER_DBACCESS_DENIED_ERROR &&
        e != ER_PROCACCESS_DENIED_ERROR) {
        if (err)
            *err = call_err;
        return -1;
    }
    snprintf(sql, sizeof sql, "SET GLOBAL innodb_flush_log_at_trx_commit = %d", value);
    return my_exec(db, sql, err);
}

/* Records and releases of the knob take turns (GET_LOCK as a mutex), so
 * that two sessions starting at once cannot both take the other's changed
 * value for the server's own. */
#define SYNC_MUTEX "'zipbench.sync.records'"

static int record_sync_locked(struct db *db, struct zb_err *err);

static int record_sync(struct db *db, struct zb_err *err)
{
    struct text_out t = { 0 };
    if (my_query(db, "SELECT GET_LOCK(" SYNC_MUTEX ", 30)", 0, NULL, first_text, &t, NULL, err) < 0)
        return -1;
    if (strcmp(t.v, "1"))
        return zb_fail(err, ZB_ERR_BUSY, "mysql: another session held %s for 30 s", SYNC_MUTEX);
    int rc = record_sync_locked(db, err);
    my_exec(db, "DO RELEASE_LOCK(" SYNC_MUTEX ")", NULL);
    return rc;
}

/* Records that this session changes the knob, and what to put back. */
static int record_sync_locked(struct db *db, struct zb_err *err)
{
    struct text_out t = { 0 };
    if (my_query(db, "SELECT CONCAT('zipbench.sync.', CONNECTION_ID())", 0, NULL, first_text, &t,
                 NULL, err) < 0)
        return -1;
    snprintf(db->sync_lock, sizeof db->sync_lock, "%.63s", t.v);
    const char *lock[] = { db->sync_lock };
    t.found = false;
    if (my_query(db, "SELECT GET_LOCK(?, 0)", 1, lock, first_text, &t, NULL, err) < 0)
        return -1;
    if (strcmp(t.v, "1"))
        return zb_fail(err, ZB_ERR_SQL, "mysql: GET_LOCK(%s) refused", db->sync_lock);
    if (my_exec(db, "CREATE TABLE IF NOT EXISTS " SETTINGS_TABLE " (lock_name VARCHAR(64) "
                "PRIMARY KEY, setting VARCHAR(64) NOT NULL, restore_to VARCHAR(32) NOT NULL, "
                "changed_by VARCHAR(200) NOT NULL, since TIMESTAMP NOT NULL DEFAULT "
                "CURRENT_TIMESTAMP) ENGINE=InnoDB COMMENT 'zipbench: global settings a session "
                "changed, to put back (lib/backend_mysql_settings.c)'", err) < 0)
        return -1;
    /* The value to put back: an earlier record's (the server's own, while
     * another session has it changed), else the one in force now. */
    t.found = false;
    if (my_query(db, "SELECT restore_to FROM " SETTINGS_TABLE " WHERE setting = '" FLUSH_KNOB
                 "' LIMIT 1", 0, NULL, first_text, &t, NULL, err) < 0)
        return -1;
    if (!t.found && my_query(db, "SELECT @@global." FLUSH_KNOB, 0, NULL, first_text, &t, NULL,
                             err) < 0)
        return -1;
    char who[128], host[64] = "?";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    snprintf(who, sizeof who, "pid %ld on %s", (long)getpid(), host);
    const char *row[] = { db->sync_lock, t.v, who };
    if (my_query(db, "REPLACE INTO " SETTINGS_TABLE " (lock_name, setting, restore_to, "
                 "changed_by) VALUES (?, '" FLUSH_KNOB "', ?, ?)", 3, row, NULL, NULL, NULL,
                 err) < 0)
        return -1;
    db->saved_flush = atoi(t.v);
    return 0;
}

/* Whether "pid N on HOST" (a record's changed_by) is a process of this
 * host that no longer runs: none has the pid, or a zombie (killed, and
 * not yet reaped: an orphan's reaper may take its time). A pid that runs
 * again (reused) reads as live: its record then waits for its lock to be
 * free, which is safe. */
static bool process_gone(const char *changed_by)
{
    long pid;
    char host[256], here[256] = "";
    if (sscanf(changed_by, "pid %ld on %255s", &pid, host) != 2 || pid <= 0)
        return false;
    gethostname(here, sizeof here);
    here[sizeof here - 1] = 0;
    if (strcmp(host, here))
        return false;
    if (kill((pid_t)pid, 0) < 0)
        return errno == ESRCH;
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
    if (f)
        fclose(f);
    stat[n] = 0;
    const char *state = strrchr(stat, ')');   /* "pid (comm) S ...": comm may hold ')' */
    return state && (state[1] == ' ') && (state[2] == 'Z' || state[2] == 'X');
}

/* The records of the knob, as record_sync wrote them. */
enum { MAX_RECORDS = 64 };
struct records {
    int n, live, abandoned;   /* live: needed by a running session (its own counted apart) */
    bool own_live;
    struct record {
        char lock[72], restore_to[32], changed_by[208], since[32];
        bool abandoned;
    } r[MAX_RECORDS];
};

static int add_record(void *arg, int n, const char *const *v, const size_t *l)
{
    (void)l;
    struct records *rs = arg;
    if (n < 6 || rs->n == MAX_RECORDS)
        return 0;
    struct record *r = &rs->r[rs->n++];
    snprintf(r->lock, sizeof r->lock, "%s", v[0] ? v[0] : "");
    snprintf(r->restore_to, sizeof r->restore_to, "%s", v[1] ? v[1] : "");
    snprintf(r->changed_by, sizeof r->changed_by, "%s", v[2] ? v[2] : "");
    snprintf(r->since, sizeof r->since, "%s", v[3] ? v[3] : "");
    bool held = v[4] != NULL, own = held && !strcmp(v[5], "1");
    r->abandoned = !held || (!own && process_gone(r->changed_by));
    if (r->abandoned)
        rs->abandoned++;
    else if (own)
        rs->own_live = true;
    else
        rs->live++;
    return 0;
}

/* Reads the records, oldest first, each marked abandoned or not. */
static int read_records(struct db *db, struct records *rs, struct zb_err *err)
{
    memset(rs, 0, sizeof *rs);
    return my_query(db, "SELECT lock_name, restore_to, changed_by, since, IS_USED_LOCK(lock_name), "
                    "IS_USED_LOCK(lock_name) = CONNECTION_ID() FROM " SETTINGS_TABLE " WHERE "
                    "setting = '" FLUSH_KNOB "' ORDER BY since", 0, NULL, add_record, rs, NULL, err);
}

void my_release_sync(struct db *db)
{
    const char *lock[] = { db->sync_lock };
    struct records rs;
    my_exec(db, "DO GET_LOCK(" SYNC_MUTEX ", 30)", NULL);
    if (read_records(db, &rs, NULL) == 0 && rs.live == 0) {
        if (set_flush_log(db, db->saved_flush, NULL) == 0)
            my_exec(db, "DELETE FROM " SETTINGS_TABLE, NULL);
    } else {
        my_query(db, "DELETE FROM " SETTINGS_TABLE " WHERE lock_name = ?", 1, lock, NULL, NULL,
                 NULL, NULL);
    }
    my_query(db, "SELECT RELEASE_LOCK(?)", 1, lock, NULL, NULL, NULL, NULL);
    my_exec(db, "DO RELEASE_LOCK(" SYNC_MUTEX ")", NULL);
    db->saved_flush = -1;
}

/* recover() with SYNC_MUTEX held: records and releases wait, so the live
 * records it counts are all there are. */
static int recover_locked(struct db *db, char *note, size_t notelen, struct zb_err *err)
{
    struct records rs;
    struct text_out now = { 0 };
    if (read_records(db, &rs, err) < 0)
        return -1;
    const struct record *first = NULL;
    for (int i = 0; i < rs.n && !first; i++)
        if (rs.r[i].abandoned)
            first = &rs.r[i];
    if (!first)
        return 0;
    if (my_query(db, "SELECT @@global." FLUSH_KNOB, 0, NULL, first_text, &now, NULL, err) < 0)
        return -1;
    int restore_to = atoi(first->restore_to);
    bool live = rs.live > 0 || rs.own_live;
    char by[300];
    snprintf(by, sizeof by, "%s since %s%s", first->changed_by, first->since,
             rs.abandoned > 1 ? ", and others" : "");
    if (!live && atoi(now.v) != restore_to) {
        if (set_flush_log(db, restore_to, err) < 0)
            return -1;
        snprintf(note, notelen, FLUSH_KNOB " was %s, left so by a load that did not end (%s): "
                 "put back to %d", now.v, by, restore_to);
    } else {
        snprintf(note, notelen, "removed the record of a load that did not end (%s); "
                 FLUSH_KNOB " is %s%s", by, now.v, live ? ", changed by a load still running" : "");
    }
    /* By name: an abandoned record's lock may still be held by its session. */
    for (int i = 0; i < rs.n; i++) {
        const char *lock[] = { rs.r[i].lock };
        if (rs.r[i].abandoned && my_query(db, "DELETE FROM " SETTINGS_TABLE " WHERE lock_name = ?",
                                          1, lock, NULL, NULL, NULL, err) < 0)
            return -1;
    }
    return 1;
}

int my_recover(struct db *db, char *note, size_t notelen, struct zb_err *err)
{
    struct text_out t = { 0 };
    /* No table (nothing was ever changed here) is nothing to do. */
    if (my_query(db, "SELECT COUNT(*) FROM information_schema.TABLES WHERE table_schema = "
                 "DATABASE() AND table_name = '" SETTINGS_TABLE "'", 0, NULL, first_text, &t, NULL,
                 err) < 0)
        return -1;
    if (atoll(t.v) == 0)
        return 0;
    t.found = false;
    if (my_query(db, "SELECT GET_LOCK(" SYNC_MUTEX ", 30)", 0, NULL, first_text, &t, NULL, err) < 0)
        return -1;
    if (strcmp(t.v, "1"))
        return zb_fail(err, ZB_ERR_BUSY, "mysql: another session held %s for 30 s", SYNC_MUTEX);
    int rc = recover_locked(db, note, notelen, err);
    my_exec(db, "DO RELEASE_LOCK(" SYNC_MUTEX ")", NULL);
    return rc;
}

int my_set_sync(struct db *db, enum zb_sync level, char *desc, size_t desclen,
                       struct zb_err *err)
{
    char flush[16];
    bool innodb = strcasecmp(db->engine, "InnoDB") == 0;
    if (innodb && level != ZB_SYNC_DEFAULT) {
        /* The knob is global: record what to put back, and put it back on close. */
        if (db->saved_flush < 0 && record_sync(db, err) < 0)
            return -1;
        static const int value[] = { [ZB_SYNC_FULL] = 1, [ZB_SYNC_NORMAL] = 2, [ZB_SYNC_OFF] = 0 };
        if (set_flush_log(db, value[level], err) < 0)
            return -1;
    }
    my_variable(db, "innodb_flush_log_at_trx_commit", flush, sizeof flush);
    if (innodb)
        snprintf(desc, desclen, "innodb_flush_log_at_trx_commit=%s", flush);
    else
        snprintf(desc, desclen, "MyISAM: no fsync per commit%s", level != ZB_SYNC_DEFAULT
                                                                    ? " (no knob to set)" : "");
    return 0;
}
