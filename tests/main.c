/* One Check runner for every suite, so the run ends with Check's summary line.
 * Suites come from tests/test_NAME.c, each defining Suite *suite_NAME(void). */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define SUITE(n) Suite *suite_##n(void);
#include "suites.h"
#undef SUITE

struct entry { const char *name; Suite *(*make)(void); };
static const struct entry all_suites[] = {
#define SUITE(n) { #n, suite_##n },
#include "suites.h"
#undef SUITE
};

extern char **environ;

/* The tests run in an environment of their own: variables of another
 * tree's `eval "$(scripts/db env)"` (ZB_DB_DIR, ZB_CONF, PGHOST, MYSQL_PWD
 * ...) are dropped, as scripts/with-servers does, so no test reaches a
 * database, config or directory outside this tree. Kept: the port
 * variables (ZB_*_PORT) and what make sets (ZB_BUILD, ZB_DATA, ZB_HDRJS,
 * ZB_WRAP). */
static void own_environment(void)
{
    static const char *const keep[] = { "ZB_BUILD", "ZB_DATA", "ZB_HDRJS", "ZB_WRAP" };
    static const char *const drop[] = { "ZB_", "PG", "MYSQL", "MARIADB" };
    for (bool again = true; again;) {
        again = false;
        for (char **e = environ; *e && !again; e++) {
            size_t n = strcspn(*e, "=");
            char name[256];
            if (n >= sizeof name)
                continue;
            memcpy(name, *e, n);
            name[n] = 0;
            bool dropped = false, kept = n > 5 && !strcmp(name + n - 5, "_PORT") &&
                                             !strncmp(name, "ZB_", 3);
            for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
                kept |= !strcmp(name, keep[i]);
            for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
                dropped |= !strncmp(name, drop[i], strlen(drop[i]));
            if (dropped && !kept) {
                unsetenv(name);
                again = true;      /* environ changed under us: start over */
            }
        }
    }
}

/* Arguments name the suites to run (all when none): zbtest kenall conf;
 * --tier TAG runs only the cases of that tier (helpers.h: unit, slow). */
int main(int argc, char **argv)
{
    own_environment();
    const char *tier = NULL;
    int nnames = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--tier") && a + 1 < argc) {
            tier = argv[++a];
            argv[a - 1] = argv[a] = NULL;
        } else {
            nnames++;
        }
    }
    SRunner *runner = NULL;
    for (size_t i = 0; i < sizeof all_suites / sizeof all_suites[0]; i++) {
        int wanted = nnames == 0;
        for (int a = 1; a < argc; a++)
            if (argv[a] && strcmp(argv[a], all_suites[i].name) == 0)
                wanted = 1;
        if (!wanted)
            continue;
        if (!runner)
            runner = srunner_create(all_suites[i].make());
        else
            srunner_add_suite(runner, all_suites[i].make());
    }
    if (!runner)
        return 2;
    srunner_run_tagged(runner, NULL, NULL, tier, NULL, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
