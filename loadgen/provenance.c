/* Where and when a report was made, for the report itself: this machine
 * (host name, CPU model, kernel) and loadgen's version; the date is the
 * run's start. Which commit of what it measured is for the caller (the
 * bench) to record: loadgen cannot know it. A merged report names every
 * agent's machine. */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "cli.h"
#include "loadgen.h"

/* The value of the first "key<tabs>: value" line of /proc/cpuinfo with one
 * of the keys: x86's "model name", some ARM kernels' "Hardware" or
 * "Processor". */
static bool cpuinfo_model(char *out, size_t outlen)
{
    static const char *const keys[] = { "model name", "Hardware", "Processor" };
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char line[512], model[256] = "";
    int best = 3;                  /* the index in keys of the line taken */
    while (best > 0 && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        size_t kn = strcspn(line, "\t:");
        for (int i = 0; i < best; i++)
            if (kn == strlen(keys[i]) && !strncmp(line, keys[i], kn)) {
                char *v = colon + 1 + strspn(colon + 1, " \t");
                v[strcspn(v, "\n")] = 0;
                snprintf(model, sizeof model, "%.255s", v);
                best = i;
            }
    }
    fclose(f);
    if (!model[0])
        return false;
    snprintf(out, outlen, "%s", model);
    return true;
}

void provenance_here(struct provenance *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->loadgen, sizeof p->loadgen, "%s", zb_version);
    struct utsname u;
    bool named = uname(&u) == 0;
    if (named) {
        snprintf(p->hostname, sizeof p->hostname, "%s", u.nodename);
        snprintf(p->kernel, sizeof p->kernel, "%s %s %s", u.sysname, u.release, u.machine);
    }
    if (!cpuinfo_model(p->cpu_model, sizeof p->cpu_model) && named)
        snprintf(p->cpu_model, sizeof p->cpu_model, "%s", u.machine);
}

/* Appends v to the ", "-separated list field unless it holds it already. */
static void add_distinct(char *field, size_t len, const char *v)
{
    if (!v[0])
        return;
    size_t vn = strlen(v);
    for (const char *p = field; (p = strstr(p, v)); p += vn)
        if ((p == field || (p >= field + 2 && !strncmp(p - 2, ", ", 2))) && (!p[vn] || !strncmp(p + vn, ", ", 2)))
            return;
    size_t n = strlen(field);
    snprintf(field + n, len - n, "%s%s", n ? ", " : "", v);
}

void provenance_add(struct provenance *into, const struct provenance *p)
{
    add_distinct(into->hostname, sizeof into->hostname, p->hostname);
    add_distinct(into->cpu_model, sizeof into->cpu_model, p->cpu_model);
    add_distinct(into->kernel, sizeof into->kernel, p->kernel);
    add_distinct(into->loadgen, sizeof into->loadgen, p->loadgen);
}
