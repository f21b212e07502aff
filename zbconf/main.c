/* zbconf: the config's values as the programs read them (lib/conf.c), for
 * the scripts, which ask it instead of parsing the config themselves. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "conf.h"
#include "overlay.h"

static const char usage[] =
    "Usage: zbconf [-c FILE] [--set NAME.KEY=VALUE]... NAME.KEY...\n"
    "       zbconf [-c FILE] --overlay OVERLAY\n"
    "Prints each NAME.KEY's value on a line of its own, as the programs read\n"
    "the config: ${VAR:-DEFAULT} taken from the environment, defaults filled\n"
    "in, an unset string as an empty line, booleans as yes or no.\n"
    "NAME.KEY is BACKEND.KEY, server.KEY or dataset.NAME.KEY, as --set names\n"
    "it: zbconf pg.socket innodb.port server.port dataset.postal.file\n"
    "\n"
    "--overlay writes the config (the base) with OVERLAY's differences applied\n"
    "(- reads them from stdin), its comments kept, once it reads as the programs\n"
    "read a config: OVERLAY's lines before its first section replace the base's\n"
    "opening comment; [SECTION]'s `key = value` replaces the base's key or is\n"
    "added, `key =` drops it; [NEW < SECTION] is a new section made from the\n"
    "base's SECTION, written after the base's sections.\n"
    "\n"
    "  -c, --conf FILE      config file (default conf/zipbench.conf)\n"
    "      --set N.K=V      a value instead of the file's (as every program's --set)\n"
    "      --overlay FILE   the config with FILE's differences applied, on stdout\n"
    "  -h, --help           this text\n"
    "  -V, --version        the version\n"
    "\n"
    "Exit status: 0, 1 when the config (or --overlay's result) does not load, 2\n"
    "on bad usage or an unknown backend, dataset or key.\n";

/* --overlay: the merged text, checked by loading it as the programs do
 * (from a temporary file), then written to stdout. */
static int write_overlaid(const char *conf_path, const char *overlay_path)
{
    FILE *overlay = strcmp(overlay_path, "-") ? fopen(overlay_path, "r") : stdin;
    FILE *base = fopen(conf_path, "r");
    if (!overlay || !base) {
        fprintf(stderr, "zbconf: %s: %s\n", !overlay ? overlay_path : conf_path, strerror(errno));
        return ZB_EXIT_FAIL;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    int rc = mem && overlay_write(overlay, base, mem) == 0 ? ZB_EXIT_OK : ZB_EXIT_FAIL;
    if (mem)
        fclose(mem);
    if (overlay != stdin)
        fclose(overlay);
    fclose(base);
    char tmp[] = "/tmp/zbconf-overlay-XXXXXX";
    int fd = rc == ZB_EXIT_OK ? mkstemp(tmp) : -1;
    if (rc == ZB_EXIT_OK && (fd < 0 || write(fd, text, len) != (ssize_t)len)) {
        fprintf(stderr, "zbconf: --overlay: cannot write %s: %s\n", tmp, strerror(errno));
        rc = ZB_EXIT_FAIL;
    }
    if (fd >= 0) {
        close(fd);
        static struct zb_conf conf;
        struct zb_err err;
        if (conf_load(&conf, tmp, &err) < 0) {
            fprintf(stderr, "zbconf: --overlay: the result does not read as a config: %s\n",
                    err.msg);
            rc = ZB_EXIT_FAIL;
        }
        conf_free(&conf);
        unlink(tmp);
    }
    if (rc == ZB_EXIT_OK)
        fwrite(text, 1, len, stdout);
    free(text);
    return rc;
}

int main(int argc, char **argv)
{
    const char *conf_path = "conf/zipbench.conf";
    const char *overlay = NULL;
    const char *sets[64];
    int nsets = 0, first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        const char *a = argv[first];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return ZB_EXIT_OK;
        } else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            cli_version("zbconf", NULL);
            return ZB_EXIT_OK;
        } else if ((!strcmp(a, "-c") || !strcmp(a, "--conf")) && first + 1 < argc) {
            conf_path = argv[++first];
        } else if (!strcmp(a, "--overlay") && first + 1 < argc) {
            overlay = argv[++first];
        } else if (!strcmp(a, "--set") && first + 1 < argc &&
                   nsets < (int)(sizeof sets / sizeof sets[0])) {
            sets[nsets++] = argv[++first];
        } else if (!strcmp(a, "--")) {
            first++;
            break;
        } else {
            fprintf(stderr, "zbconf: bad option '%s'\n", a);
            return cli_usage_error("zbconf");
        }
    }
    if (overlay && first == argc && !nsets)
        return write_overlaid(conf_path, overlay);
    if (first == argc || overlay) {
        fputs(usage, stderr);
        return ZB_EXIT_USAGE;
    }
    static struct zb_conf conf;
    struct zb_err err;
    if (conf_open(&conf, conf_path, sets, nsets, &err) < 0) {
        fprintf(stderr, "zbconf: %s\n", err.msg);
        return ZB_EXIT_FAIL;
    }
    int rc = ZB_EXIT_OK;
    for (int i = first; i < argc && rc == ZB_EXIT_OK; i++) {
        char value[4096];
        if (conf_get_arg(&conf, argv[i], value, sizeof value, &err) < 0) {
            fprintf(stderr, "zbconf: %s\n", err.msg);
            rc = ZB_EXIT_USAGE;
        } else {
            printf("%s\n", value);
        }
    }
    conf_free(&conf);
    return rc;
}
