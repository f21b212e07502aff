/* A route's query parameters (see params.h). libmicrohttpd splits and
 * percent-decodes the query string; each name=value pair it found comes
 * here once, in order. */
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "params.h"
#include "strategy.h"

struct parsing {
    const struct param *rules;
    struct args *out;
    char *msg;
    size_t len;
    bool failed;
};

static void rule_text(const struct param *p, char *buf, size_t len)
{
    char names[128];
    switch (p->kind) {
    case PARAM_WHOLE:
        snprintf(buf, len, "%s must be a whole number from %.0f to %.0f", p->name, p->min, p->max);
        break;
    case PARAM_REAL:
        snprintf(buf, len, "%s must be a number in %g..%g", p->name, p->min, p->max);
        break;
    case PARAM_STRATEGY:
        conf_choice_list(strategy_names, names, sizeof names);
        snprintf(buf, len, "%s must be %s", p->name, names);
        break;
    }
}

/* value under rule p into *out's slot i: false if it breaks the rule. */
static bool take(const struct param *p, const char *value, struct args *out, int i)
{
    if (!value || !*value)
        return false;
    char *end;
    switch (p->kind) {
    case PARAM_WHOLE: {
        if (strspn(value, "0123456789") != strlen(value) || strlen(value) > 9)
            return false;
        long n = strtol(value, NULL, 10);
        out->v[i].whole = n;
        return n >= p->min && n <= p->max;
    }
    case PARAM_REAL: {
        errno = 0;
        double d = strtod(value, &end);
        out->v[i].real = d;
        return !errno && end != value && !*end && isfinite(d) && d >= p->min && d <= p->max;
    }
    case PARAM_STRATEGY:
        return (out->v[i].strategy = strategy_by_name(value)) >= 0;
    }
    return false;
}

static void names_of(const struct param *rules, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; rules && rules[i].name && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", rules[i].name);
    if (!buf[0])
        snprintf(buf, len, "none");
}

static enum MHD_Result one(void *cls, enum MHD_ValueKind kind, const char *name, const char *value)
{
    (void)kind;
    struct parsing *ps = cls;
    if (!*name && (!value || !*value))
        return MHD_YES;   /* an empty piece ("?&a=1", "a=1&&b=2", "&="): nothing said */
    int i = 0;
    while (ps->rules && ps->rules[i].name && strcmp(ps->rules[i].name, name))
        i++;
    if (!ps->rules || !ps->rules[i].name) {
        char names[160];
        names_of(ps->rules, names, sizeof names);
        snprintf(ps->msg, ps->len, "unknown parameter '%.60s' (this request takes: %s)", name,
                 names);
    } else if (ps->out->given[i]) {
        snprintf(ps->msg, ps->len, "parameter %s given twice", name);
    } else if (!take(&ps->rules[i], value, ps->out, i)) {
        rule_text(&ps->rules[i], ps->msg, ps->len);
    } else {
        ps->out->given[i] = true;
        return MHD_YES;
    }
    ps->failed = true;
    return MHD_NO;
}

int params_parse(struct MHD_Connection *c, const struct param *rules, struct args *out,
                 char *msg, size_t len)
{
    memset(out, 0, sizeof *out);
    struct parsing ps = { .rules = rules, .out = out, .msg = msg, .len = len };
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, one, &ps);
    return ps.failed ? -1 : 0;
}

int params_find(const struct param *rules, enum param_kind kind)
{
    for (int i = 0; rules && rules[i].name; i++)
        if (rules[i].kind == kind)
            return i;
    return -1;
}
