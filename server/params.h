/* A route's query parameters, parsed once, by one parser, against the
 * route's own list (route.h).
 *
 * Contract: every parameter of the request is matched by its name, byte
 * for byte (case counts: `Queries` is not `queries`); one the route does
 * not take, one given twice, one with no value or a value out of its
 * rule is refused with a message for a 400 that names it. The values are
 * the request's (request.h's args), by the index of their rule in the
 * route's list. Calls nothing of the server's but the strategies' names. */
#ifndef ZB_PARAMS_H
#define ZB_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

struct MHD_Connection;

/* Most parameters one route takes. */
#define ROUTE_MAX_PARAMS 4

enum param_kind {
    PARAM_WHOLE,                   /* digits only, min..max */
    PARAM_REAL,                    /* a decimal number, min..max */
    PARAM_STRATEGY,                /* a strategy's name (strategy.h) */
};

struct param {
    const char *name;              /* NULL ends a list */
    enum param_kind kind;
    double min, max;
};

/* A request's parameters, by the index of their rule. */
struct args {
    bool given[ROUTE_MAX_PARAMS];
    union {
        long whole;
        double real;
        int strategy;              /* enum strategy_id */
    } v[ROUTE_MAX_PARAMS];
};

/* c's query parameters against rules (NULL: none taken) into *out: 0, or
 * -1 with what is wrong in msg (a 400's). */
int params_parse(struct MHD_Connection *c, const struct param *rules, struct args *out,
                 char *msg, size_t len);
/* The index of the rule of kind in rules, or -1. */
int params_find(const struct param *rules, enum param_kind kind);

#endif
