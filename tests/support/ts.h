/* The test support library every test binary links (tests/meson.build
 * adds it to cmocka_dep): one main, temporary directories, clocks, and
 * (textfile.h, venv_python.h) file reading and the reference venv.
 *
 * Every binary's main ends in ts_run_tests (daemon tests: harness_run,
 * which calls it), so B2S_TEST_FILTER=NAME runs the cases whose names
 * match NAME (cmocka's pattern: * and ?) in any binary:
 *   B2S_TEST_FILTER=test_grow_rows meson test -C build test_b2nd_grow */
#ifndef TS_H
#define TS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "textfile.h"
#include "venv_python.h"

struct CMUnitTest;   /* cmocka.h */
typedef int (*ts_fixture)(void **state);

/* Run the group (setup and teardown may be NULL) under its name, only the
 * cases B2S_TEST_FILTER names when it is set; cmocka's exit status. */
int ts_run_group(const char *name, const struct CMUnitTest *tests, size_t n,
                 ts_fixture setup, ts_fixture teardown);
#define ts_run_tests(tests, setup, teardown)                                   \
  ts_run_group(#tests, tests, sizeof tests / sizeof tests[0], setup, teardown)
#define ts_run_named(name, tests, setup, teardown)                             \
  ts_run_group(name, tests, sizeof tests / sizeof tests[0], setup, teardown)

/* Remove dir (made with mkdtemp) and everything under it, without a shell: symbolic links are
 * removed, never followed, and no other file system is entered, so
 * nothing outside dir goes.  A missing dir is no error.  0, or -1 with
 * errno of the first failure (the rest is still removed). */
int ts_rmtree(const char *dir);

/* CLOCK_MONOTONIC in milliseconds: deadlines of waits, never a timed
 * assertion. */
static inline int64_t ts_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

#endif
