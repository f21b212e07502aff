/* Fuzz target: the config reader (lib/conf.c over inih) on arbitrary
 * bytes as a config file. It must load or fail cleanly, never crash, leak
 * or read out of bounds; every error names the file (or, for a file its
 * include read, says so: "read by FILE:LINE"); a config that loads
 * holds no empty value, every backend a driver and a table that is a plain
 * name no SQL reserves. The bytes are the file as they are (a memfd, read
 * through /proc/self/fd as any path is). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conf.h"
#include "fuzz.h"
#include "sqlwords.h"

static void check_str(const char *s)
{
    if (s && !*s)
        __builtin_trap();  /* an empty value is refused, never kept */
}

int fuzz_conf(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz.conf", 0);
    if (fd < 0)
        return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    struct zb_conf c;
    struct zb_err err = { 0 };
    if (conf_load(&c, path, &err) < 0) {
        char read_by[80];
        snprintf(read_by, sizeof read_by, "(read by %s:", path);
        if (strncmp(err.msg, path, strlen(path)) && !strstr(err.msg, read_by))
            __builtin_trap();  /* every error names the file, or the file it read */
    } else {
        for (int i = 0; i < c.nbackends; i++) {
            const struct backend_conf *b = &c.backend[i];
            if (!b->driver || !b->table || !*b->table || sql_reserved(b->table))
                __builtin_trap();
            check_str(b->path), check_str(b->host), check_str(b->socket), check_str(b->user);
            check_str(b->password), check_str(b->password_file), check_str(b->database);
            for (int k = 0; k < b->nopts; k++)
                check_str(b->opt[k].value);
        }
        for (int i = 0; i < c.ndatasets; i++)
            check_str(c.dataset[i].file), check_str(c.dataset[i].null);
        check_str(c.server.bind);
    }
    conf_free(&c);
    close(fd);
    return 0;
}

FUZZ_ENTRY(fuzz_conf)
