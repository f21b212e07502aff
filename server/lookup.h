/* A lookup's way to its database: the outage gate, then by where the
 * database runs and by strategy.
 *
 * Contract: lookup_start takes a struct lookup (lb.h) from the HTTP side
 * and ends it, sooner or later, with its done() callback, exactly once.
 * An in-process database (SQLite) is looked up inline; any other goes to
 * its strategy through the one table of strategies (lookup.c), by
 * pointer. The rest serves the loop's turns: deadlines, wake-ups, the end
 * of an iteration, shutdown. Calls only down: strategies, lb, served. */
#ifndef ZB_LOOKUP_H
#define ZB_LOOKUP_H

#include "lb.h"

/* Runs lk (lb, strategy, key, on_row, done set): inline for an in-process
 * database, else on a connection of lk's loop; done() may come before
 * this returns. health: a real round trip even while down (/health). */
void lookup_start(struct lookup *lk, bool health);
/* Can lookups on sb take strategy st? (pipelined needs a driver that can.) */
bool lookup_strategy_ok(const struct srv_backend *sb, enum zb_strategy st);
/* Every strategy's part of lb set up (after lb_init). */
void lookup_init(struct lb *lb);
/* Every strategy's deadlines on lb due by now; returns the next (0: none). */
uint64_t lookup_deadlines(struct lb *lb, uint64_t now);
/* The loop was woken: each strategy's turn on lb (connections given by
 * other loops, budget asked for). */
void lookup_woken(struct lb *lb);
/* The end of a loop iteration: the read transactions its in-process
 * lookups shared are committed. */
void inline_commit(struct loop *l);
/* Shutdown: every connection and waiting lookup of lb fails with err. */
void lookup_wind_down(struct lb *lb, const struct zb_err *err);
/* After the loop stopped: lb's in-process connection closed. */
void lookup_close(struct lb *lb);

#endif
