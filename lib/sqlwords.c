/* The words SQL reserves: none of them may name a table, since the SQL
 * around an unquoted table name would not parse ("SELECT count(*) FROM
 * select"). The union of what each database here refuses as a table name:
 * PostgreSQL 15's reserved key words (pg_get_keywords(), catcode R and T),
 * MariaDB 10.11's reserved words (and VALUE, which its INSERT does not
 * take as a table name) and SQLite 3.40's keywords that its parser does
 * not take as a name. tests/test_loader.c
 * (reserved_words_match_the_databases) asks the running servers, so a new
 * version's words are found. Lower case, sorted (strcmp), for bsearch. */
#include "sqlwords.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const reserved[] = {
    "accessible", "add", "all", "alter", "analyse", "analyze", "and", "any", "array", "as", "asc",
    "asensitive", "asymmetric", "authorization", "autoincrement", "before", "between", "bigint",
    "binary", "blob", "both", "by", "call", "cascade", "case", "cast", "change", "char",
    "character", "check", "collate", "collation", "column", "commit", "concurrently", "condition",
    "constraint", "continue", "convert", "create", "cross", "current_catalog", "current_date",
    "current_role", "current_schema", "current_time", "current_timestamp", "current_user",
    "cursor", "databases", "day_hour", "day_microsecond", "day_minute", "day_second", "dec",
    "decimal", "declare", "default", "deferrable", "delayed", "delete", "delete_domain_id", "desc",
    "describe", "deterministic", "distinct", "distinctrow", "div", "do", "do_domain_ids", "double",
    "drop", "dual", "each", "else", "elseif", "enclosed", "end", "escape", "escaped", "except",
    "exists", "exit", "explain", "false", "fetch", "float", "float4", "float8", "for", "force",
    "foreign", "freeze", "from", "full", "fulltext", "grant", "group", "having", "high_priority",
    "hour_microsecond", "hour_minute", "hour_second", "if", "ignore", "ignore_domain_ids", "ilike",
    "in", "index", "infile", "initially", "inner", "inout", "insensitive", "insert", "int", "int1",
    "int2", "int3", "int4", "int8", "integer", "intersect", "interval", "into", "is", "isnull",
    "iterate", "join", "key", "keys", "kill", "lateral", "leading", "leave", "left", "like",
    "limit", "linear", "lines", "load", "localtime", "localtimestamp", "lock", "long", "longblob",
    "longtext", "loop", "low_priority", "master_demote_to_replica", "master_demote_to_slave",
    "master_ssl_verify_server_cert", "match", "maxvalue", "mediumblob", "mediumint", "mediumtext",
    "middleint", "minute_microsecond", "minute_second", "mod", "modifies", "natural",
    "no_write_to_binlog", "not", "nothing", "notnull", "null", "numeric", "offset", "on", "only",
    "optimize", "optionally", "or", "order", "out", "outer", "outfile", "over", "overlaps",
    "page_checksum", "parse_vcol_expr", "partition", "placing", "portion", "precision", "primary",
    "procedure", "purge", "range", "read", "read_write", "reads", "real", "recursive",
    "ref_system_id", "references", "regexp", "release", "rename", "repeat", "replace", "require",
    "resignal", "restrict", "return", "returning", "revoke", "right", "rlike", "row_number",
    "rows", "schemas", "second_microsecond", "select", "sensitive", "separator", "session_user",
    "set", "show", "signal", "similar", "smallint", "some", "spatial", "specific", "sql",
    "sql_big_result", "sql_calc_found_rows", "sql_small_result", "sqlexception", "sqlstate",
    "sqlwarning", "ssl", "starting", "stats_auto_recalc", "stats_persistent", "stats_sample_pages",
    "straight_join", "symmetric", "table", "tablesample", "terminated", "then", "tinyblob",
    "tinyint", "tinytext", "to", "trailing", "transaction", "trigger", "true", "undo", "union",
    "unique", "unlock", "unsigned", "update", "usage", "use", "user", "using", "utc_date",
    "utc_time", "utc_timestamp", "value", "values", "varbinary", "varchar", "varcharacter",
    "variadic", "varying", "verbose", "when", "where", "while", "window", "with", "write", "xor",
    "year_month", "zerofill",
};

static int compare(const void *key, const void *elem)
{
    return strcmp(key, *(const char *const *)elem);
}

bool sql_reserved(const char *name)
{
    char lower[32];
    size_t n = strlen(name);
    if (n >= sizeof lower)
        return false;   /* longer than any reserved word */
    for (size_t i = 0; i <= n; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    return bsearch(lower, reserved, sizeof reserved / sizeof reserved[0], sizeof reserved[0],
                   compare) != NULL;
}
