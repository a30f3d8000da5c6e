/* The one main of the test binaries: a cmocka group, filtered by
 * B2S_TEST_FILTER. */
#define _GNU_SOURCE
#include "ts.h"

#include <fnmatch.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

int ts_run_group(const char *name, const struct CMUnitTest *tests, size_t n,
                 ts_fixture setup, ts_fixture teardown) {
  const char *filter = getenv("B2S_TEST_FILTER");
  if (filter != NULL && *filter != '\0') {
    size_t hits = 0;
    for (size_t i = 0; i < n; i++)
      hits += fnmatch(filter, tests[i].name, 0) == 0;
    /* not a failure: a binary run in parts (test_cli) holds it in one */
    if (hits == 0)
      fprintf(stderr, "%s: no case matches B2S_TEST_FILTER=%s\n", name,
              filter);
    cmocka_set_test_filter(filter);
  }
  return _cmocka_run_group_tests(name, tests, n, setup, teardown);
}
