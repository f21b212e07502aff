/* One Check runner for every suite, so the run ends with Check's summary line.
 * Suites come from tests/test_NAME.c, each defining Suite *suite_NAME(void). */
#include <check.h>
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

/* Arguments name the suites to run (all when none): zbtest kenall conf */
int main(int argc, char **argv)
{
    SRunner *runner = NULL;
    for (size_t i = 0; i < sizeof all_suites / sizeof all_suites[0]; i++) {
        int wanted = argc < 2;
        for (int a = 1; a < argc; a++)
            if (strcmp(argv[a], all_suites[i].name) == 0)
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
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
