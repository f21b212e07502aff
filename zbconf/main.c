/* zbconf: the config's values as the programs read them (lib/conf.c), for
 * the scripts, which ask it instead of parsing the config themselves. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "conf.h"

static const char usage[] =
    "Usage: zbconf [-c FILE] [--set NAME.KEY=VALUE]... NAME.KEY...\n"
    "Prints each NAME.KEY's value on a line of its own, as the programs read\n"
    "the config: ${VAR:-DEFAULT} taken from the environment, defaults filled\n"
    "in, an unset string as an empty line, booleans as yes or no.\n"
    "NAME.KEY is BACKEND.KEY, server.KEY or dataset.NAME.KEY, as --set names\n"
    "it: zbconf pg.socket innodb.port server.port dataset.postal.file\n"
    "\n"
    "  -c, --conf FILE      config file (default conf/zipbench.conf)\n"
    "      --set N.K=V      a value instead of the file's (as every program's --set)\n"
    "  -h, --help           this text\n"
    "  -V, --version        the version\n"
    "\n"
    "Exit status: 0, 1 when the config does not load, 2 on bad usage or an\n"
    "unknown backend, dataset or key.\n";

int main(int argc, char **argv)
{
    const char *conf_path = "conf/zipbench.conf";
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
    if (first == argc) {
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
