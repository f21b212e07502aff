/* The server's log: one line per event on stderr, each opening with the
 * time it was written, ISO 8601 in UTC to the millisecond
 * ("2025-01-31T23:59:59.123Z server: ..."), as PostgreSQL's and nginx's
 * logs carry theirs.
 *
 * Contract: any thread may log; a line goes out in one write(2), so lines
 * of several threads never mix, and a message's own line breaks become
 * spaces, so every line of the log has its timestamp. A line is cut at
 * SRV_LOG_MAX bytes. Calls nothing of the server. */
#ifndef ZB_LOG_H
#define ZB_LOG_H

#define SRV_LOG_MAX 4096

void srv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
