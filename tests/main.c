/* One Check runner for every suite, so the run ends with Check's summary line.
 * Suites come from tests/test_NAME.c, each defining Suite *suite_NAME(void). */
#include <check.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
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

#define TEST_ENV_RULES "scripts/lib/test-env"

/* Whether rule file f (TEST_ENV_RULES' format) drops variable name. */
static bool env_rules_drop(FILE *f, const char *name)
{
    char line[256], rule[16], pattern[128];
    rewind(f);
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%15s %127s", rule, pattern) == 2 && rule[0] != '#' &&
            fnmatch(pattern, name, 0) == 0)
            return !strcmp(rule, "drop");
    return false;
}

/* The tests run in an environment of their own: TEST_ENV_RULES (the list
 * scripts/with-servers reads too) says which variables are dropped. */
static void own_environment(void)
{
    FILE *f = fopen(TEST_ENV_RULES, "r");
    if (!f) {
        fprintf(stderr, "zbtest: cannot read %s: run it from the tree's top\n", TEST_ENV_RULES);
        exit(2);
    }
    for (bool again = true; again;) {
        again = false;
        for (char **e = environ; *e && !again; e++) {
            size_t n = strcspn(*e, "=");
            char name[256];
            if (n >= sizeof name)
                continue;
            memcpy(name, *e, n);
            name[n] = 0;
            if (env_rules_drop(f, name)) {
                unsetenv(name);
                again = true;      /* environ changed under us: start over */
            }
        }
    }
    fclose(f);
}

/* Arguments name the suites to run (all when none): zbtest kenall conf;
 * --tier TAG runs only the cases of that tier (helpers.h: unit, slow). */
int main(int argc, char **argv)
{
    own_environment();
    /* The runs the tests make (scripts/run, ./zipbench run) are saved in
     * a directory of the tests', not among the user's (build/runs). */
    char runs[1100];
    const char *build = getenv("ZB_BUILD");
    snprintf(runs, sizeof runs, "%s/test/runs", build && *build ? build : "build");
    setenv("ZB_RUNS", runs, 1);
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
    /* A failure's message holds a command's output; past Check's default
     * 4 KiB it would exit 2 and the reason would be lost. */
    check_set_max_msg_size(1 << 16);
    srunner_run_tagged(runner, NULL, NULL, tier, NULL, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
