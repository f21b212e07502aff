/* loader: bulk-loads a dataset (the KEN_ALL postal list, or any CSV) into
 * each configured backend, in one of four modes, and reports rows, seconds
 * and rows/s. */
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "conf.h"
#include "kenall.h"
#include "keys.h"
#include "load.h"
#include "overlay.h"

static const char usage[] =
    "Usage: loader [OPTIONS] [--dataset NAME|FILE]\n"
    "       loader [OPTIONS] --csv FILE --key COLUMN [--name NAME]\n"
    "       loader --dataset NAME --write-keys FILE\n"
    "\n"
    "Loads a dataset into each chosen backend and reports how long it took. A\n"
    "dataset is a [dataset NAME] of the config: a file in Japan Post's KEN_ALL.CSV\n"
    "layout (format kenall) or any CSV (format csv: RFC 4180, with header,\n"
    "delimiter, quote and encoding options, its columns' types given or inferred\n"
    "from a sample). The table is (re)created: rows go into a fresh <table>$load,\n"
    "which replaces <table> only once its row count matches the file, so a failed\n"
    "or interrupted load never leaves a table that looks complete. A file with no\n"
    "rows never replaces a table, and one with fewer rows than the table holds\n"
    "only with --allow-shrink or --limit.\n"
    "\n"
    "Options:\n"
    "  -f, --dataset NAME|FILE  a [dataset NAME] of the config, or a file read as the\n"
    "                       postal dataset (KEN_ALL layout); default: the postal\n"
    "                       dataset, build/ken_all.csv\n"
    "      --csv FILE       a CSV of one's own, its first line naming the columns:\n"
    "                       every column's type is inferred from every row, and its\n"
    "                       section goes into an overlay, DIR/NAME.conf, where DIR\n"
    "                       is the directory of the config's include\n"
    "                       (build/conf.d), with its keys in DIR/NAME.keys; then it\n"
    "                       is loaded. The server serves it with --datasets NAME\n"
    "                       (GET /NAME/BACKEND/KEY), and ./zipbench run --csv FILE\n"
    "                       --key COLUMN benchmarks it. The delimiter is a comma,\n"
    "                       or a tab or ';' when the first line holds one of those\n"
    "                       and no comma\n"
    "      --key COLUMN     with --csv: the column lookups go by, its header's text\n"
    "                       byte for byte (its values must be there, at most 255\n"
    "                       bytes). The answers name each field by the header's\n"
    "                       text and give each value as the file has it (a real as\n"
    "                       the shortest text of its double: docs/LOADER.md)\n"
    "      --name NAME      with --csv: the dataset's name (default: the file's\n"
    "                       base name, products.csv is products)\n"
    "  -b, --backend NAMES  comma-separated backend names from the config, or 'all'\n"
    "                       (default: all)\n"
    "  -m, --mode MODE      autocommit   one INSERT per row, each its own transaction\n"
    "                                    (what the 2008 benchmark did)\n"
    "                       transaction  one INSERT per row inside one BEGIN/COMMIT\n"
    "                       prepared     a prepared INSERT of --batch rows, bound per\n"
    "                                    batch, inside one transaction\n"
    "                       bulk         the backend's own fastest path: PostgreSQL COPY\n"
    "                                    FROM STDIN, MariaDB LOAD DATA LOCAL INFILE\n"
    "                                    (multi-row INSERT where LOCAL is off), SQLite\n"
    "                                    prepared inserts in one transaction\n"
    "                       (default: bulk)\n"
    "      --batch N        rows per statement in prepared mode (default 100)\n"
    "      --no-index       load first, build the indexes after; their time is\n"
    "                       reported apart (default: indexes exist before the load)\n"
    "      --sync LEVEL     full, normal or off, mapped to each backend's own knob\n"
    "                       (SQLite synchronous, PostgreSQL synchronous_commit,\n"
    "                       InnoDB innodb_flush_log_at_trx_commit 1/2/0; restored\n"
    "                       afterwards); default: leave the server as it is. The\n"
    "                       setting in force is always shown in the report.\n"
    "      --raw            kenall: one row per line, as Japan Post splits long town\n"
    "                       names (default: split records are merged)\n"
    "      --encoding ENC   auto, utf-8, sjis or any encoding iconv knows (default:\n"
    "                       the dataset's; auto is UTF-8 when the first 64 KiB hold\n"
    "                       more UTF-8 characters than bytes that are not, else\n"
    "                       Shift_JIS if they read as CP932 with Japanese words\n"
    "                       (runs of kana and kanji), else an error naming the\n"
    "                       line; the report says which was chosen and why)\n"
    "      --limit N        load only the first N rows (to time slow modes on a\n"
    "                       sample; the row check then expects N, and the sample\n"
    "                       may replace a bigger table)\n"
    "      --allow-shrink   replace a table even if the file has fewer rows than\n"
    "                       it holds (default: an error, the table is kept)\n"
    "      --describe       print the dataset's columns, types (and which were\n"
    "                       inferred), key and tables, and load nothing\n"
    "      --write-keys FILE  write each distinct value of the dataset's key column\n"
    "                       (of the first --limit rows), one a line, sorted\n"
    "                       (integers as numbers), to FILE for `loadgen --keys\n"
    "                       FILE`, and load nothing; a key holding a newline or\n"
    "                       carriage return is an error naming file:line\n"
    "  -c, --conf FILE      config file (default conf/zipbench.conf)\n"
    "      --set S.KEY=VAL  override a config key: of backend S (pg.port=5433), or\n"
    "                       of a dataset (dataset.NAME.file=other.csv)\n"
    "      --json           one JSON object per run on stdout instead of the table\n"
    "  -q, --quiet          no progress bar, no note of inferred types\n"
    "  -h, --help           this text\n"
    "\n"
    "Every bad row fails the load with the file, line and column and what is\n"
    "wrong (a value that is not of its column's type, a missing key, a value the\n"
    "database would have cut); nothing is skipped.\n"
    "\n"
    "Two loads of one table take turns: the second says \"waiting for another load\n"
    "of TABLE\" and starts when the first ends. SIGINT, SIGTERM and SIGHUP stop a\n"
    "load at its next row: the old table is kept and a global setting --sync\n"
    "changed is put back (one a killed loader left changed is put back by the\n"
    "next loader and by scripts/db start, which say so).\n"
    "\n"
    "Exit status: 0 when every load succeeded and matched the file's row count,\n"
    "1 when a load failed or was refused (the message names the file and line of\n"
    "a bad row; the old table is kept),\n"
    "2 on bad usage or a bad config (a table name too long for a backend, or one\n"
    "that is also another dataset's table on the same database),\n"
    "128+N when stopped by signal N.\n";

/* What loader --csv wrote, for the report (NULL: not --csv). */
static const char *overlay_path, *overlay_keys;

static void report(const struct backend_conf *bc, const struct load_opts *o,
                   const struct load_result *r, bool json)
{
    double rate = r->seconds > 0 ? (double)r->rows / r->seconds : 0;
    if (json) {
        printf("{\"backend\":");
        zb_json_string(bc->name);
        printf(",\"driver\":");
        zb_json_string(bc->driver);
        printf(",\"engine\":");
        if (conf_option(bc, "engine"))
            zb_json_string(conf_option(bc, "engine"));
        else
            printf("null");
        printf(",\"mode\":\"%s\",\"batch\":%d,\"rows\":%lld,\"lines\":%ld,\"seconds\":%.6f,"
               "\"rows_per_s\":%.1f,\"index_after\":%s,\"index_seconds\":%.6f,"
               "\"table_bytes\":%lld,\"replaced_rows\":",
               load_mode_name(o->mode), o->mode == MODE_PREPARED ? o->batch : 1, r->rows, r->lines,
               r->seconds, rate, o->index_after ? "true" : "false", r->index_seconds,
               r->table_bytes);
        if (r->replaced_rows >= 0)
            printf("%lld", r->replaced_rows);
        else
            printf("null");
        printf(",\"sync\":");
        zb_json_string(r->sync);
        printf(",\"encoding\":");
        zb_json_string(r->encoding);
        printf(",\"version\":");
        zb_json_string(r->version);
        printf(",\"dataset\":");
        zb_json_string(o->data->conf->name);
        printf(",\"file\":");
        zb_json_string(o->data->conf->file);
        printf(",\"table\":");
        zb_json_string(r->table);
        char columns[4096];
        dataset_columns_text(o->data, false, columns, sizeof columns);
        printf(",\"columns\":");
        zb_json_string(columns);
        printf(",\"types_inferred_from_rows\":%ld", o->data->sampled);
        printf(",\"text_widths_from\":");
        if (r->widths_from)
            zb_json_string(r->widths_from);
        else
            printf("null");
        if (overlay_path) {
            printf(",\"overlay\":");
            zb_json_string(overlay_path);
            printf(",\"keys_file\":");
            zb_json_string(overlay_keys);
        }
        printf("}\n");
    } else {
        printf("%-8s %-7s %-11s %8lld %9.3f %10.0f %8.3f %9.1f  %s; %s; %s\n", bc->name,
               conf_option(bc, "engine") ? conf_option(bc, "engine") : "-", load_mode_name(o->mode), r->rows, r->seconds, rate,
               r->index_seconds, (double)r->table_bytes / (1024.0 * 1024.0), r->version, r->sync,
               r->encoding);
    }
    fflush(stdout);
}

/* A file read as KEN_ALL whose first line does not have its 15 fields is
 * some other CSV: said once, with what to do, instead of a line per row.
 * 0 when it may be KEN_ALL (or cannot be read: the load says why). */
static int not_kenall(const struct dataset_conf *dc)
{
    struct zb_err err = { 0 };
    struct kenall_opts ko = { .encoding = KENALL_AUTO };
    if (dc->encoding && strcasecmp(dc->encoding, "auto"))
        ko.encoding_name = dc->encoding;
    int n = kenall_first_line_fields(dc->file, &ko, &err);
    if (n <= 1 || n == KENALL_COLS)
        return 0;
    fprintf(stderr, "loader: %s looks like a generic CSV (%d columns), not KEN_ALL (%d "
            "columns): use --csv %s --key COLUMN\n", dc->file, n, KENALL_COLS, dc->file);
    return -1;
}

/* --describe's key and (when the header's texts are not the columns'
 * names) the answers' field names. */
static void print_fields(const struct dataset *data)
{
    const char *key = data->col[data->key].name, *field = dataset_field(data, data->key);
    if (strcmp(key, field))
        printf("key      '%s' (%s)\n", field, key);
    else
        printf("key      %s\n", key);
    char fields[ZB_MAX_COLUMNS * (ZB_FIELD_MAX + 72)];
    dataset_fields_text(data, fields, sizeof fields);
    if (fields[0])
        printf("fields   %s\n", fields);
}

/* loader --csv FILE --key COLUMN [--name NAME]: the dataset described
 * (every type inferred from every row), its overlay written into the
 * config's include directory, the config read again (conf, from the same
 * path and --set) so the dataset is the one the server will read, and its
 * keys file written beside the overlay. With describe, only the
 * description is printed. data ends up described from the config read
 * again. Returns an exit status. */
static int csv_overlay(struct zb_conf *conf, const char *conf_path, const char *const *sets,
                       int nsets, const char *csv, const char *key, const char *name_arg,
                       const char *encoding, bool describe, struct dataset *data, char *overlay,
                       size_t overlay_len, char *keys, size_t keys_len, long long limit, bool quiet)
{
    struct zb_err err = { 0 };
    static char name[64], file[4096], dir[4096];
    if (name_arg)
        snprintf(name, sizeof name, "%s", name_arg);
    else
        overlay_name(csv, name, sizeof name);
    if ((name_arg && strlen(name_arg) >= sizeof name) || overlay_check_name(name, &err) < 0) {
        fprintf(stderr, "loader: %s\n", err.msg[0] ? err.msg : "--name: too long");
        return ZB_EXIT_USAGE;
    }
    static struct dataset_conf dc;
    if (overlay_dataset(&dc, name, csv, file, sizeof file, key, &err) < 0) {
        fprintf(stderr, "loader: %s\n", err.msg);
        return ZB_EXIT_FAIL;
    }
    if (!key) {
        /* The header's names, for the message: the first row alone. */
        dc.sample_rows = 1;
        char names[4096] = "";
        if (dataset_describe(data, &dc, &err) == 0)
            for (int i = 0, n = 0; i < data->ncols && n < (int)sizeof names; i++)
                n += snprintf(names + n, sizeof names - (size_t)n, "%s%s", i ? ", " : " (one of: ",
                              dataset_field(data, i));
        fprintf(stderr, "loader: --csv %s needs --key COLUMN, the column lookups go by%s%s\n", csv,
                names, names[0] ? ")" : "");
        return ZB_EXIT_USAGE;
    }
    if (conf_overlay_dir(conf, dir, sizeof dir, &err) < 0) {
        fprintf(stderr, "loader: --csv: %s\n", err.msg);
        return ZB_EXIT_USAGE;
    }
    snprintf(overlay, overlay_len, "%s/%s.conf", dir, name);
    const struct dataset_conf *other = conf_dataset(conf, name);
    if (other && (!other->conf_file || strcmp(other->conf_file, overlay))) {
        fprintf(stderr, "loader: --csv: %s:%d already has a dataset %s: give this one another "
                "--name\n", other->conf_file ? other->conf_file : conf->file, other->line, name);
        return ZB_EXIT_USAGE;
    }
    if (encoding)
        dc.encoding = encoding;
    if (dataset_describe(data, &dc, &err) < 0) {
        fprintf(stderr, "loader: --csv %s: %s\n", csv, err.msg);
        return ZB_EXIT_FAIL;
    }
    char columns[4096];
    dataset_columns_text(data, !describe, columns, sizeof columns);
    if (describe) {
        printf("dataset  %s\nfile     %s\nformat   csv\ncolumns  %s\n", name, file, columns);
        print_fields(data);
        printf("sample   types inferred from all %ld rows\noverlay  %s (not written: --describe)\n",
               data->sampled, overlay);
        return ZB_EXIT_OK;
    }
    if (overlay_write(dir, data, overlay, overlay_len, &err) < 0) {
        fprintf(stderr, "loader: --csv: %s\n", err.msg);
        return ZB_EXIT_FAIL;
    }
    long rows = data->sampled;
    conf_free(conf);
    const struct dataset_conf *read_back = NULL;
    if (conf_open(conf, conf_path, sets, nsets, &err) < 0 ||
        !(read_back = conf_dataset(conf, name)) || !read_back->conf_file ||
        strcmp(read_back->conf_file, overlay)) {
        fprintf(stderr, "loader: --csv: the overlay %s %s; it is removed\n", overlay,
                read_back ? "is not the dataset the config reads" : err.msg[0] ? err.msg
                : "is not read by the config");
        unlink(overlay);
        return ZB_EXIT_USAGE;
    }
    conf_unbounded_queries(conf);
    long long written = 0;
    snprintf(keys, keys_len, "%s/%s.keys", dir, name);
    if (dataset_describe(data, read_back, &err) < 0 ||
        keys_write(data, limit, keys, &written, &err) < 0) {
        fprintf(stderr, "loader: dataset %s: %s\n", name, err.msg);
        return ZB_EXIT_FAIL;
    }
    if (!quiet)
        fprintf(stderr, "loader: dataset %s: %s, %ld rows; types inferred from every row: %s\n"
                "loader: dataset %s: written %s (its section) and %s (%lld distinct keys)\n",
                name, file, rows, columns, name, overlay, keys, written);
    return ZB_EXIT_OK;
}

static void on_signal(int sig) { load_interrupted = sig; }

/* --dataset NAME (NULL: the default one): a [dataset NAME] of conf, or a
 * file in the postal dataset's layout, with --raw and --encoding, described
 * into data. ZB_EXIT_OK, or the exit status after saying why. */
static int named_dataset(const struct zb_conf *conf, const char *dataset, bool raw,
                         const char *encoding, struct dataset_conf *dc, struct dataset *data)
{
    struct zb_err err = { 0 };
    const char *want = dataset ? dataset : DATASET_DEFAULT;
    const struct dataset_conf *named = conf_dataset(conf, want);
    if (!named && access(want, F_OK) != 0) {
        char known[512];
        conf_dataset_names(conf, known, sizeof known);
        fprintf(stderr, "loader: no dataset '%s' in %s (known: %s), nor a file of that name; "
                "a CSV of one's own: --csv FILE --key COLUMN\n", want, conf->file, known);
        return ZB_EXIT_USAGE;
    }
    *dc = named ? *named : *conf_dataset(conf, DATASET_DEFAULT);
    if (!named)
        dc->file = want;
    if (raw && strcmp(dc->format, "kenall")) {
        fprintf(stderr, "loader: --raw: dataset %s is not in the kenall format\n", dc->name);
        return cli_usage_error("loader");
    }
    dc->raw |= raw;
    if (encoding && dataset_check_value("encoding", encoding, "--encoding", &err) < 0) {
        fprintf(stderr, "loader: %s\n", err.msg);
        return cli_usage_error("loader");
    }
    if (encoding)
        dc->encoding = encoding;
    if (!strcmp(dc->format, "kenall") && not_kenall(dc) < 0)
        return ZB_EXIT_FAIL;
    if (dataset_describe(data, dc, &err) < 0) {
        fprintf(stderr, "loader: dataset %s: %s\n", dc->name, err.msg);
        return ZB_EXIT_FAIL;
    }
    return ZB_EXIT_OK;
}

/* --describe: the dataset and the table it becomes on each chosen backend. */
static void print_description(const struct dataset_conf *dc, const struct dataset *data,
                              const char *columns, const struct backend_conf *const *chosen,
                              int nchosen)
{
    printf("dataset  %s\nfile     %s\nformat   %s\ncolumns  %s\n", dc->name, dc->file,
           dc->format, columns);
    print_fields(data);
    if (data->sampled)
        printf("sample   types inferred from the first %ld rows\n", data->sampled);
    for (int i = 0; i < nchosen; i++) {
        char name[128];
        dataset_table(data, chosen[i], name, sizeof name);
        printf("table    %s on %s\n", name, chosen[i]->name);
    }
}

/* Loads the dataset into each chosen backend in turn, reporting each (as a
 * table, or JSON), until a signal stops it (load_interrupted); 1 if any
 * load failed, else 0. */
static int load_all(const struct backend_conf *const *chosen, int nchosen,
                    const struct load_opts *o, bool json)
{
    if (!json)
        printf("%-8s %-7s %-11s %8s %9s %10s %8s %9s  %s\n", "backend", "engine", "mode", "rows",
               "seconds", "rows/s", "index_s", "size_MiB", "version; durability; encoding");
    /* SIGINT, SIGTERM, SIGHUP: stop the load at its next row and clean up
     * as after an error (a global setting put back, the staging table
     * dropped), then exit 128 + the signal. SA_RESTART: a statement under
     * way completes first (libpq and libmariadb wait again on EINTR). */
    struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int failed = 0;
    for (int i = 0; i < nchosen && !load_interrupted; i++) {
        struct load_result res;
        struct zb_err err = { 0 };
        if (load_run(chosen[i], o, &res, &err) < 0) {
            char next[300];
            fprintf(stderr, "loader: %s: %s%s\n", chosen[i]->name, err.msg,
                    backend_next_step(chosen[i], &err, next, sizeof next));
            for (const char *l = res.more_bad_rows; *l; l = strchr(l, '\n') + 1)
                fprintf(stderr, "loader: %s: %.*s\n", chosen[i]->name, (int)strcspn(l, "\n"), l);
            failed = 1;
            continue;
        }
        report(chosen[i], o, &res, json);
    }
    return failed;
}

int main(int argc, char **argv)
{
    enum { O_NO_INDEX = 256, O_SYNC, O_RAW, O_ENCODING, O_SET, O_JSON, O_LIMIT, O_SHRINK, O_DESCRIBE,
           O_WRITE_KEYS, O_CSV, O_KEY, O_NAME };
    static const struct option longopts[] = {
        { "dataset", required_argument, NULL, 'f' },  { "backend", required_argument, NULL, 'b' },
        { "mode", required_argument, NULL, 'm' },     { "batch", required_argument, NULL, 'B' },
        { "no-index", no_argument, NULL, O_NO_INDEX }, { "sync", required_argument, NULL, O_SYNC },
        { "raw", no_argument, NULL, O_RAW },          { "encoding", required_argument, NULL, O_ENCODING },
        { "conf", required_argument, NULL, 'c' },     { "set", required_argument, NULL, O_SET },
        { "json", no_argument, NULL, O_JSON },        { "quiet", no_argument, NULL, 'q' },
        { "limit", required_argument, NULL, O_LIMIT }, { "allow-shrink", no_argument, NULL, O_SHRINK },
        { "describe", no_argument, NULL, O_DESCRIBE }, { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { "write-keys", required_argument, NULL, O_WRITE_KEYS },
        { "csv", required_argument, NULL, O_CSV },    { "key", required_argument, NULL, O_KEY },
        { "name", required_argument, NULL, O_NAME },
        { NULL, 0, NULL, 0 },
    };
    struct load_opts o = { .mode = MODE_BULK, .batch = 100 };
    const char *conf_path = "conf/zipbench.conf", *backends = "all";
    const char *dataset = NULL, *encoding = NULL, *keys_file = NULL;
    const char *csv = NULL, *csv_key = NULL, *csv_name = NULL;
    bool raw = false, describe = false;
    const char *sets[32];
    int nsets = 0;
    bool json = false;
    int ch;
    long n;
    while ((ch = getopt_long(argc, argv, "f:b:m:B:c:qhV", longopts, NULL)) != -1) {
        const char *arg = optarg;
        switch (ch) {
        case 'f': dataset = arg; break;
        case O_DESCRIBE: describe = true; break;
        case O_WRITE_KEYS: keys_file = arg; break;
        case O_CSV: csv = arg; break;
        case O_KEY: csv_key = arg; break;
        case O_NAME: csv_name = arg; break;
        case 'b': backends = arg; break;
        case 'm':
            if (load_mode_parse(arg, &o.mode) < 0) {
                fprintf(stderr, "loader: --mode: '%s' is not autocommit, transaction, prepared "
                        "or bulk\n", arg);
                return cli_usage_error("loader");
            }
            break;
        case 'B':
            if (cli_long("loader", "--batch", arg, 1, 10000, &n) < 0)
                return cli_usage_error("loader");
            o.batch = (int)n;
            break;
        case O_NO_INDEX: o.index_after = true; break;
        case O_SHRINK: o.allow_shrink = true; break;
        case O_LIMIT:
            if (cli_long("loader", "--limit", arg, 1, 1L << 40, &n) < 0)
                return cli_usage_error("loader");
            o.limit = n;
            break;
        case O_SYNC: {
            int level = cli_choice("loader", "--sync", arg, zb_sync_names, 3);
            if (level < 0)
                return cli_usage_error("loader");
            o.sync = (enum zb_sync)(ZB_SYNC_FULL + level);
            break;
        }
        case O_RAW: raw = true; break;
        case O_ENCODING: encoding = arg; break;
        case 'c': conf_path = arg; break;
        case O_SET:
            if (nsets == 32) {
                fprintf(stderr, "loader: too many --set\n");
                return ZB_EXIT_USAGE;
            }
            sets[nsets++] = arg;
            break;
        case O_JSON: json = true; break;
        case 'q': o.quiet = true; break;
        case 'h': fputs(usage, stdout); return ZB_EXIT_OK;
        case 'V': cli_version("loader", NULL); return ZB_EXIT_OK;
        default: return cli_usage_error("loader");   /* getopt_long said what was wrong */
        }
    }
    if (optind < argc) {
        fprintf(stderr, "loader: unexpected argument '%s'\n", argv[optind]);
        return cli_usage_error("loader");
    }
    const char *misuse = !csv && (csv_key || csv_name) ? "--key and --name go with --csv FILE"
                       : csv && dataset ? "--csv FILE and --dataset: one or the other"
                       : csv && keys_file ? "--csv writes its keys file itself (beside the overlay)"
                       : NULL;
    if (misuse) {
        fprintf(stderr, "loader: %s\n", misuse);
        return cli_usage_error("loader");
    }

    struct zb_conf conf;
    struct zb_err err = { 0 };
    if (conf_open(&conf, conf_path, sets, nsets, &err) < 0) {
        fprintf(stderr, "loader: %s\n", err.msg);
        conf_free(&conf);
        return ZB_EXIT_USAGE;
    }
    conf_unbounded_queries(&conf);

    static struct dataset data;
    struct dataset_conf dc;
    static char overlay[4200], keys_path[4200];
    if (csv) {
        /* A CSV of one's own: described, written as an overlay, read back
         * through the config as the server will read it. */
        int rc = csv_overlay(&conf, conf_path, sets, nsets, csv, csv_key, csv_name, encoding,
                             describe, &data, overlay, sizeof overlay, keys_path, sizeof keys_path,
                             o.limit, o.quiet);
        if (rc != ZB_EXIT_OK || describe) {
            conf_free(&conf);
            return rc;
        }
        overlay_path = overlay;
        overlay_keys = keys_path;
        dc = *data.conf;
    } else {
        int rc = named_dataset(&conf, dataset, raw, encoding, &dc, &data);
        if (rc != ZB_EXIT_OK) {
            conf_free(&conf);
            return rc;
        }
    }
    o.data = &data;
    char columns[4096];
    dataset_columns_text(&data, true, columns, sizeof columns);
    if (keys_file) {
        long long written = 0;
        int rc = keys_write(&data, o.limit, keys_file, &written, &err);
        if (rc < 0)
            fprintf(stderr, "loader: dataset %s: %s\n", dc.name, err.msg);
        else if (!o.quiet)
            fprintf(stderr, "loader: dataset %s: %lld distinct keys (column %s) written to %s\n",
                    dc.name, written, data.col[data.key].name, keys_file);
        conf_free(&conf);
        return rc < 0 ? ZB_EXIT_FAIL : ZB_EXIT_OK;
    }
    if (data.sampled && !o.quiet && !describe)
        fprintf(stderr, "loader: dataset %s: types inferred from the first %ld rows of %s: %s\n",
                dc.name, data.sampled, dc.file, columns);

    /* One connect for a whole load, like the server's per-request one and
     * psql's: it waits as they do, not as a pool's refill (connect_timeout_s,
     * 2 s), which gave up on a machine busy serving (tests/test_reload.c). */
    for (int i = 0; i < conf.nbackends; i++) {
        struct backend_conf *b = &conf.backend[i];
        if (b->connect_timeout_s < b->per_request_connect_timeout_s)
            b->connect_timeout_s = b->per_request_connect_timeout_s;
    }
    /* Resolve the names first, so a typo fails before any load starts. */
    const struct backend_conf *chosen[ZB_MAX_BACKENDS];
    int nchosen = conf_select(&conf, backends, chosen, &err);
    if (nchosen < 0) {
        fprintf(stderr, "loader: %s\n", err.msg);
        conf_free(&conf);
        return ZB_EXIT_USAGE;
    }
    /* Every name a load derives must fit the backend before any load
     * starts (that it is no other table's, the config's read said). */
    for (int i = 0; i < nchosen && !describe; i++) {
        if (load_check_names(chosen[i], &o, &err) < 0) {
            fprintf(stderr, "loader: %s\n", err.msg);
            conf_free(&conf);
            return ZB_EXIT_USAGE;
        }
    }
    if (describe) {
        print_description(&dc, &data, columns, chosen, nchosen);
        conf_free(&conf);
        return ZB_EXIT_OK;
    }
    int failed = load_all(chosen, nchosen, &o, json);
    conf_free(&conf);
    if (load_interrupted)
        return 128 + load_interrupted;
    return failed ? ZB_EXIT_FAIL : ZB_EXIT_OK;
}
