/* Fuzz target: the generic CSV reader on arbitrary bytes. The first byte
 * picks the options: delimiter (bits 0-1), quotes as text (bit 2), one
 * line per record (bit 3), encoding (bits 4-5). Every record must come out
 * as NUL-terminated UTF-8 fields, an unquoted field may hold neither the
 * delimiter, nor a quote, nor a carriage return (a CR is data only inside
 * quotes), and every error must name fuzz.csv:LINE. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "fuzz.h"

static int valid_utf8(const unsigned char *s)
{
    while (*s) {
        int len = *s < 0x80 ? 1 : (*s >> 5) == 6 ? 2 : (*s >> 4) == 14 ? 3 : (*s >> 3) == 30 ? 4 : 0;
        if (!len)
            return 0;
        for (int k = 1; k < len; k++)
            if ((s[k] & 0xC0) != 0x80)
                return 0;
        s += len;
    }
    return 1;
}

int fuzz_csv(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const char delimiters[] = { ',', ';', '\t', '|' };
    static const char *const encodings[] = { NULL, "utf-8", "sjis", "latin1" };
    struct csv_opts o = { .delimiter = delimiters[data[0] & 3], .no_quotes = data[0] & 4,
                          .one_line = data[0] & 8, .encoding = encodings[(data[0] >> 4) & 3] };
    FILE *f = fmemopen((void *)(data + 1), size - 1, "rb");
    if (!f)
        return 0;
    struct zb_err err = { 0 };
    struct csv_reader *r = csv_open_stream(f, "fuzz.csv", &o, &err);
    if (!r) {
        /* Every option set here is one the reader knows: only "auto" may
         * refuse, a file that reads as neither UTF-8 nor Shift_JIS, and it
         * names the line. */
        if (o.encoding || err.kind != ZB_ERR_INPUT || strncmp(err.msg, "fuzz.csv:", 9) ||
            err.msg[9] < '1' || err.msg[9] > '9')
            __builtin_trap();
        return 0;
    }
    int n, rc;
    const char *const *fields;
    while ((rc = csv_next(r, &n, &fields, &err)) == 1) {
        if (csv_line(r) < 1 || csv_line(r) > csv_lines(r))
            __builtin_trap();
        for (int i = 0; i < n; i++) {
            if (!fields[i] || !valid_utf8((const unsigned char *)fields[i]))
                __builtin_trap();
            if (!csv_quoted(r, i) && (strchr(fields[i], o.delimiter) || strchr(fields[i], '\r') ||
                                      (!o.no_quotes && strchr(fields[i], '"'))))
                __builtin_trap();
        }
    }
    if (rc < 0 && strncmp(err.msg, "fuzz.csv:", 9))
        __builtin_trap();  /* every error names the file and line */
    if (rc < 0 && (err.msg[9] < '1' || err.msg[9] > '9'))
        __builtin_trap();
    csv_close(r);
    return 0;
}

FUZZ_ENTRY(fuzz_csv)
