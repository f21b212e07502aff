/* gen: a deterministic KEN_ALL-layout postal-code file for tests and
 * benchmarks that must not need the network.
 *
 * The same --rows and --seed give the same bytes on every machine. Like
 * Japan Post's file it has quoted text fields, codes shared by several
 * towns, and long town names split over consecutive lines; unlike it, some
 * towns carry an ASCII comma or a double quote so the quoting is tested. */
#include <apr_general.h>
#include <iconv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kenall.h"
#include "util.h"

struct name { const char *kanji, *kana; };

static const struct name prefs[] = {
    { "北海道", "ﾎｯｶｲﾄﾞｳ" }, { "青森県", "ｱｵﾓﾘｹﾝ" },   { "宮城県", "ﾐﾔｷﾞｹﾝ" },
    { "東京都", "ﾄｳｷｮｳﾄ" },   { "神奈川県", "ｶﾅｶﾞﾜｹﾝ" }, { "愛知県", "ｱｲﾁｹﾝ" },
    { "京都府", "ｷｮｳﾄﾌ" },    { "大阪府", "ｵｵｻｶﾌ" },     { "広島県", "ﾋﾛｼﾏｹﾝ" },
    { "福岡県", "ﾌｸｵｶｹﾝ" },   { "沖縄県", "ｵｷﾅﾜｹﾝ" },
};
static const int pref_jis[] = { 1, 2, 4, 13, 14, 23, 26, 27, 34, 40, 47 };

static const struct name cities[] = {
    { "中央区", "ﾁｭｳｵｳｸ" }, { "北区", "ｷﾀｸ" },     { "南市", "ﾐﾅﾐｼ" },   { "東町", "ﾋｶﾞｼﾁｮｳ" },
    { "西村", "ﾆｼﾑﾗ" },     { "緑区", "ﾐﾄﾞﾘｸ" },   { "港区", "ﾐﾅﾄｸ" },   { "桜市", "ｻｸﾗｼ" },
    { "青葉区", "ｱｵﾊﾞｸ" },  { "富士見市", "ﾌｼﾞﾐｼ" },
};

static const struct name towns[] = {
    { "本町", "ﾎﾝﾏﾁ" },   { "栄", "ｻｶｴ" },       { "旭町", "ｱｻﾋﾏﾁ" },   { "若葉", "ﾜｶﾊﾞ" },
    { "緑町", "ﾐﾄﾞﾘﾁｮｳ" }, { "大通", "ｵｵﾄﾞｵﾘ" }, { "中島", "ﾅｶｼﾞﾏ" },   { "新田", "ｼﾝﾃﾞﾝ" },
    { "春日", "ｶｽｶﾞ" },   { "宮前", "ﾐﾔﾏｴ" },     { "松原", "ﾏﾂﾊﾞﾗ" },   { "平和", "ﾍｲﾜ" },
    { "以下に掲載がない場合", "ｲｶﾆｹｲｻｲｶﾞﾅｲﾊﾞｱｲ" },
};

static const char *const digits_fw[] = { "０", "１", "２", "３", "４", "５", "６", "７", "８", "９" };

struct out {
    FILE *f;
    iconv_t cd;         /* to CP932 with --sjis, else (iconv_t)-1 */
    const char *eol;
    long lines;
};

static void put(struct out *o, const char *s)
{
    if (o->cd == (iconv_t)-1) {
        fputs(s, o->f);
        return;
    }
    char buf[4096], *in = (char *)s, *outp = buf;
    size_t inleft = strlen(s), outleft = sizeof buf;
    if (iconv(o->cd, &in, &inleft, &outp, &outleft) == (size_t)-1) {
        fprintf(stderr, "gen: cannot convert to Shift_JIS: %s\n", s);
        exit(ZB_EXIT_FAIL);
    }
    fwrite(buf, 1, sizeof buf - outleft, o->f);
}

/* A text field, quoted as Japan Post does, with "" for a quote inside. */
static void put_quoted(struct out *o, const char *s)
{
    char buf[2048], *b = buf;
    *b++ = '"';
    for (; *s && b < buf + sizeof buf - 3; s++) {
        if (*s == '"')
            *b++ = '"';
        *b++ = *s;
    }
    *b++ = '"';
    *b = 0;
    put(o, buf);
}

struct row {
    char jis[16], old[16], zip[16];
    const char *pref_kana, *city_kana, *pref, *city;
    char town_kana[512], town[1024];
    int flag[6];
};

static void put_line(struct out *o, const struct row *r, const char *town_kana, const char *town)
{
    const char *text[] = { r->jis, r->old, r->zip, r->pref_kana, r->city_kana, town_kana,
                           r->pref, r->city, town };
    for (int i = 0; i < 9; i++) {
        if (i)
            put(o, ",");
        put_quoted(o, text[i]);
    }
    char flags[32];
    snprintf(flags, sizeof flags, ",%d,%d,%d,%d,%d,%d", r->flag[0], r->flag[1], r->flag[2],
             r->flag[3], r->flag[4], r->flag[5]);
    put(o, flags);
    put(o, o->eol);
    o->lines++;
}

/* Writes "１２" style full-width digits. */
static void fw_number(char *buf, size_t len, int n)
{
    char ascii[16];
    snprintf(ascii, sizeof ascii, "%d", n);
    buf[0] = 0;
    for (char *p = ascii; *p; p++)
        strncat(buf, digits_fw[*p - '0'], len - strlen(buf) - 1);
}

/* A long parenthesised list, split into parts the way Japan Post splits a
 * town name too long for one line: parts[0] opens the parenthesis, the last
 * part closes it. Returns the number of parts. */
static int split_town(uint64_t *rng, const char *base, const char *base_kana,
                      char parts[][256], char kana[][128])
{
    int nparts = 2 + (int)zb_rand_below(rng, 2);
    int n = 1 + (int)zb_rand_below(rng, 40);
    for (int p = 0; p < nparts; p++) {
        char *s = parts[p], *k = kana[p];
        snprintf(s, 256, "%s", p == 0 ? base : "");
        snprintf(k, 128, "%s", p == 0 ? base_kana : "");
        if (p == 0) {
            strcat(s, "（");
            strcat(k, "(");
        }
        for (int i = 0; i < 4; i++) {
            char num[64];
            fw_number(num, sizeof num, n);
            strcat(s, num);
            strcat(s, "番地");
            char kn[32];
            snprintf(kn, sizeof kn, "%d%s", n, i < 3 || p < nparts - 1 ? "," : "");
            strcat(k, kn);
            if (i < 3 || p < nparts - 1)
                strcat(s, "、");
            n += 1 + (int)zb_rand_below(rng, 5);
        }
        if (p == nparts - 1) {
            strcat(s, "）");
            strcat(k, "ﾊﾞﾝﾁ)");
        }
    }
    return nparts;
}

static const char usage[] =
    "Usage: gen [--rows N] [--seed S] [--sjis] [--lf] [--truth FILE] [-o FILE]\n"
    "\n"
    "Writes a deterministic postal-code file in Japan Post's KEN_ALL.CSV layout\n"
    "(15 columns, text fields quoted, CRLF line ends) to standard output.\n"
    "\n"
    "  -n, --rows N     logical rows to write (default 1000); split records take\n"
    "                   more than one line each\n"
    "  -s, --seed S     seed of the generator (default 1); same seed, same bytes\n"
    "      --sjis       write Shift_JIS (CP932) as Japan Post ships it (default UTF-8)\n"
    "      --lf         end lines with LF instead of CRLF\n"
    "      --truth FILE also write each logical row, merged, one per line, fields\n"
    "                   separated by tabs (UTF-8): what a reader must return\n"
    "  -o, --output FILE  write to FILE instead of standard output\n"
    "  -h, --help       this text\n"
    "\n"
    "A summary (rows, lines, split records) goes to standard error.\n"
    "Exit status: 0 on success, 1 on a write error, 2 on bad usage.\n";

int main(int argc, const char *const *argv)
{
    apr_pool_t *pool;
    apr_app_initialize(&argc, &argv, NULL);
    atexit(apr_terminate);
    apr_pool_create(&pool, NULL);
    static const apr_getopt_option_t opts[] = {
        { "rows", 'n', 1, "rows" }, { "seed", 's', 1, "seed" },     { "sjis", 'J', 0, "sjis" },
        { "lf", 'L', 0, "lf" },     { "truth", 'T', 1, "truth" },   { "output", 'o', 1, "out" },
        { "help", 'h', 0, "help" }, { "version", 'V', 0, "version" }, { NULL, 0, 0, NULL },
    };
    apr_getopt_t *g;
    apr_getopt_init(&g, pool, argc, argv);
    long rows = 1000, seed = 1;
    int sjis = 0;
    const char *eol = "\r\n", *truth_path = NULL, *out_path = NULL;
    int ch;
    const char *arg;
    apr_status_t st;
    while ((st = apr_getopt_long(g, opts, &ch, &arg)) == APR_SUCCESS) {
        switch (ch) {
        case 'n': if (cli_long("gen", "--rows", arg, 0, 100000000, &rows) < 0) return ZB_EXIT_USAGE; break;
        case 's': if (cli_long("gen", "--seed", arg, 0, 0x7fffffffL, &seed) < 0) return ZB_EXIT_USAGE; break;
        case 'J': sjis = 1; break;
        case 'L': eol = "\n"; break;
        case 'T': truth_path = arg; break;
        case 'o': out_path = arg; break;
        case 'h': fputs(usage, stdout); return ZB_EXIT_OK;
        case 'V': cli_version("gen", NULL); return ZB_EXIT_OK;
        }
    }
    if (st != APR_EOF)
        return cli_usage_error("gen");
    if (g->ind < argc) {
        fprintf(stderr, "gen: unexpected argument '%s'\n", argv[g->ind]);
        return cli_usage_error("gen");
    }

    struct out o = { .f = stdout, .cd = (iconv_t)-1, .eol = eol };
    if (out_path && !(o.f = fopen(out_path, "wb"))) {
        perror(out_path);
        return ZB_EXIT_FAIL;
    }
    if (sjis && (o.cd = iconv_open("CP932", "UTF-8")) == (iconv_t)-1) {
        perror("gen: iconv UTF-8 to CP932");
        return ZB_EXIT_FAIL;
    }
    FILE *truth = truth_path ? fopen(truth_path, "w") : NULL;
    if (truth_path && !truth) {
        perror(truth_path);
        return ZB_EXIT_FAIL;
    }

    uint64_t rng = (uint64_t)seed * 0x2545F4914F6CDD1Dull + 1;
    long code = 100000 + zb_rand_below(&rng, 1000), splits = 0;
    struct row r;
    for (long i = 0; i < rows; i++) {
        /* Mostly new codes; about 3% share the previous one (flag 13). */
        bool shared = i > 0 && zb_rand_below(&rng, 100) < 3;
        if (!shared)
            code += 1 + zb_rand_below(&rng, 60);
        int p = (int)((code / 100000) % (sizeof prefs / sizeof prefs[0]));
        int c = (int)((code / 1000) % (sizeof cities / sizeof cities[0]));
        snprintf(r.jis, sizeof r.jis, "%02d%03d", pref_jis[p], 100 + c);
        snprintf(r.zip, sizeof r.zip, "%07ld", code % 10000000);
        snprintf(r.old, sizeof r.old, "%.3s%s", r.zip, memcmp(r.zip + 3, "00", 2) ? "" : "  ");
        if (memcmp(r.zip + 3, "00", 2))
            snprintf(r.old, sizeof r.old, "%.5s", r.zip);
        r.pref = prefs[p].kanji;
        r.pref_kana = prefs[p].kana;
        r.city = cities[c].kanji;
        r.city_kana = cities[c].kana;
        const struct name *t = &towns[zb_rand_below(&rng, sizeof towns / sizeof towns[0])];
        int kind = (int)zb_rand_below(&rng, 100);
        char parts[4][256], kana[4][128];
        int nparts = 1;
        memset(r.flag, 0, sizeof r.flag);
        if (kind < 2) { /* long name: a split record */
            nparts = split_town(&rng, t->kanji, t->kana, parts, kana);
            splits++;
        } else if (kind < 25) { /* chome */
            char num[64];
            fw_number(num, sizeof num, 1 + (int)zb_rand_below(&rng, 9));
            snprintf(parts[0], sizeof parts[0], "%s（%s丁目）", t->kanji, num);
            snprintf(kana[0], sizeof kana[0], "%s(%dﾁｮｳﾒ)", t->kana, 1 + (int)zb_rand_below(&rng, 9));
            r.flag[2] = 1;
        } else if (kind < 27) { /* an ASCII comma inside a quoted field */
            snprintf(parts[0], sizeof parts[0], "%s（1,2番地）", t->kanji);
            snprintf(kana[0], sizeof kana[0], "%s(1,2ﾊﾞﾝﾁ)", t->kana);
        } else if (kind < 28) { /* a double quote, escaped as "" */
            snprintf(parts[0], sizeof parts[0], "%s\"東\"", t->kanji);
            snprintf(kana[0], sizeof kana[0], "%s\"ﾋｶﾞｼ\"", t->kana);
        } else {
            snprintf(parts[0], sizeof parts[0], "%s", t->kanji);
            snprintf(kana[0], sizeof kana[0], "%s", t->kana);
        }
        r.flag[0] = zb_rand_below(&rng, 100) < 5;
        r.flag[3] = shared;
        r.town[0] = r.town_kana[0] = 0;
        for (int k = 0; k < nparts; k++) {
            put_line(&o, &r, kana[k], parts[k]);
            strcat(r.town, parts[k]);
            strcat(r.town_kana, kana[k]);
        }
        if (truth) {
            fprintf(truth, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", r.jis,
                    r.old, r.zip, r.pref_kana, r.city_kana, r.town_kana, r.pref, r.city, r.town,
                    r.flag[0], r.flag[1], r.flag[2], r.flag[3], r.flag[4], r.flag[5]);
        }
    }
    int bad = ferror(o.f) | (o.f != stdout ? fclose(o.f) : fflush(o.f));
    if (truth)
        bad |= fclose(truth);
    if (o.cd != (iconv_t)-1)
        iconv_close(o.cd);
    if (bad) {
        perror("gen: write");
        return ZB_EXIT_FAIL;
    }
    fprintf(stderr, "gen: %ld rows, %ld lines, %ld split records (seed %ld)\n", rows, o.lines,
            splits, seed);
    return ZB_EXIT_OK;
}
