/* The server's words for a failure (see reason.h). */
#include <stdio.h>

#include "reason.h"

/* What went wrong with `what`, by the error's kind, in a client's terms. */
static void by_kind(enum zb_err_kind kind, const char *what, char *buf, size_t len)
{
    switch (kind) {
    case ZB_ERR_REFUSED:
        snprintf(buf, len, "the database refused the connection");
        break;
    case ZB_ERR_CONN:
        snprintf(buf, len, "the connection to the database failed or was lost");
        break;
    case ZB_ERR_TIMEOUT:
        snprintf(buf, len, "the database did not answer in time");
        break;
    case ZB_ERR_BUSY:
        snprintf(buf, len, "the table is locked (a load swapping it in); try again");
        break;
    case ZB_ERR_STALE:
        snprintf(buf, len, "the table was replaced under %s; try again", what);
        break;
    case ZB_ERR_SQL:
        snprintf(buf, len, "the database could not run %s: is the table loaded? (the server's "
                 "log has the database's message)", what);
        break;
    case ZB_ERR_SYS:
        snprintf(buf, len, "the server is short of memory or file descriptors");
        break;
    default:
        snprintf(buf, len, "the server could not run %s (its log says why)", what);
        break;
    }
}

const char *reason_for_client(struct served *sv, const struct zb_err *err, bool overload,
                              const char *what, char *buf, size_t len)
{
    enum zb_err_kind kind = err ? err->kind : ZB_ERR_CONN;
    bool unavailable = kind != ZB_ERR_SQL && kind != ZB_ERR_SYS && kind != ZB_ERR_INPUT;
    if (unavailable && !atomic_load(&sv->up)) {
        char why[400];
        by_kind(served_down_kind(sv), "the lookup", why, sizeof why);
        snprintf(buf, len, "backend %s is down: %s; the server tries it again on its own",
                 sv->conf.name, why);
    } else if (overload) {
        snprintf(buf, len, "no free connection to the database within %d ms "
                 "(acquire_timeout_ms): the backend is overloaded; try again",
                 sv->conf.acquire_timeout_ms);
    } else {
        by_kind(kind, what, buf, len);
    }
    return buf;
}
