#include "helpers.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

const char *build_path(const char *rest)
{
    static char bufs[8][1024];
    static int next;
    char *b = bufs[next++ % 8];
    const char *build = getenv("ZB_BUILD");
    snprintf(b, sizeof bufs[0], "%s/%s", build && *build ? build : "build", rest);
    return b;
}

const char *prog(const char *name)
{
    static char bufs[8][1200];
    static int next;
    char *b = bufs[next++ % 8];
    char rest[128];
    snprintf(rest, sizeof rest, "bin/%s", name);
    const char *wrap = getenv("ZB_WRAP");
    snprintf(b, sizeof bufs[0], "%s%s%s", wrap && *wrap ? wrap : "", wrap && *wrap ? " " : "",
             build_path(rest));
    return b;
}

const char *data_path(const char *rest)
{
    static char buf[1024];
    const char *data = getenv("ZB_DATA");
    snprintf(buf, sizeof buf, "%s/%s", data && *data ? data : "build", rest);
    return buf;
}

const char *test_dir(const char *name)
{
    static char dir[1024];
    char rest[256];
    snprintf(rest, sizeof rest, "test/%s", name);
    snprintf(dir, sizeof dir, "%s", build_path(rest));
    char cmd[2100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    return dir;
}

int run_cmd(char *out, size_t outlen, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    strncat(cmd, " 2>&1", sizeof cmd - strlen(cmd) - 1);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = 0;
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, p)) > 0) {
        if (out && n + 1 < outlen) {
            size_t take = got < outlen - 1 - n ? got : outlen - 1 - n;
            memcpy(out + n, buf, take);
            n += take;
        }
    }
    if (out && outlen)
        out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

const char *conf_path(void)
{
    const char *c = getenv("ZB_CONF");
    return c && *c ? c : "conf/zipbench.conf";
}
