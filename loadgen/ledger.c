/* --ledger FILE: one line per 2xx answer to a POST, its body: the
 * acknowledged writes a crash experiment checks the database against.
 * Each thread gathers whole lines in a buffer of its own (no lock per
 * answer) and appends them with one write() each time to a file opened
 * O_APPEND, so threads never interleave within a line. The loop writes
 * its buffer every 10 ms and when it ends (SIGINT included), so an
 * interrupted run loses no acknowledged line and tears none. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "loadgen.h"

int ledger_flush(struct ledger_buf *lb)
{
    size_t off = 0;
    while (off < lb->len) {
        ssize_t k = write(lb->fd, lb->buf + off, lb->len - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (!lb->err)
                lb->err = k < 0 ? errno : EIO;
            /* Keep the unwritten lines: a later flush tries again. */
            memmove(lb->buf, lb->buf + off, lb->len - off);
            lb->len -= off;
            return -1;
        }
        off += (size_t)k;
    }
    lb->len = 0;
    return 0;
}

int ledger_add(struct ledger_buf *lb, const char *body, size_t len)
{
    while (len && (body[len - 1] == '\n' || body[len - 1] == '\r'))
        len--;                  /* PHP's json_encode line ends in one */
    if (len + 1 > LEDGER_BUF - lb->len && ledger_flush(lb) < 0)
        return -1;
    if (len + 1 > LEDGER_BUF - lb->len)
        return -1;
    char *o = lb->buf + lb->len;
    for (size_t i = 0; i < len; i++)
        o[i] = body[i] == '\n' || body[i] == '\r' ? ' ' : body[i];
    o[len] = '\n';
    lb->len += len + 1;
    return 0;
}
