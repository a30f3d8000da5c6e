/* A stream's life (daemon/streams/life.c): every transition the header
 * lists is taken, every other one is refused (an abort in developer
 * builds, an error with the state unchanged otherwise), and the lives a
 * stream really has (opened, written, re-opened, retired, freed) walk
 * through it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "life.h"
#include "ts.h"

#define N B2SD_LIFE_COUNT

/* The transitions of life.h's list, written out here on their own. */
static const struct {
  b2sd_life from, to;
} legal[] = {
    {B2SD_LIFE_NEW, B2SD_LIFE_READY},
    {B2SD_LIFE_NEW, B2SD_LIFE_FAILED},
    {B2SD_LIFE_READY, B2SD_LIFE_WRITING},
    {B2SD_LIFE_READY, B2SD_LIFE_FAILED},
    {B2SD_LIFE_NEW, B2SD_LIFE_ENDED},
    {B2SD_LIFE_READY, B2SD_LIFE_ENDED},
    {B2SD_LIFE_FAILED, B2SD_LIFE_ENDED},
    {B2SD_LIFE_WRITING, B2SD_LIFE_ENDED},
    {B2SD_LIFE_RETIRING, B2SD_LIFE_ENDED},
    {B2SD_LIFE_STOPPING, B2SD_LIFE_ENDED},
    {B2SD_LIFE_CLOSED, B2SD_LIFE_ENDED},
    {B2SD_LIFE_ENDED, B2SD_LIFE_READY},
    {B2SD_LIFE_ENDED, B2SD_LIFE_FAILED},
    {B2SD_LIFE_READY, B2SD_LIFE_RETIRING},
    {B2SD_LIFE_FAILED, B2SD_LIFE_RETIRING},
    {B2SD_LIFE_WRITING, B2SD_LIFE_RETIRING},
    {B2SD_LIFE_RETIRING, B2SD_LIFE_STOPPING},
    {B2SD_LIFE_RETIRING, B2SD_LIFE_CLOSED},
    {B2SD_LIFE_STOPPING, B2SD_LIFE_CLOSED},
};
#define NLEGAL (sizeof legal / sizeof legal[0])

static bool listed(b2sd_life from, b2sd_life to) {
  for (size_t i = 0; i < NLEGAL; i++)
    if (legal[i].from == from && legal[i].to == to)
      return true;
  return false;
}

/* Every listed transition moves, and b2sd_life_legal says so. */
static void test_every_transition_moves(void **state) {
  (void)state;
  for (size_t i = 0; i < NLEGAL; i++) {
    b2sd_life s = legal[i].from;
    assert_true(b2sd_life_legal(legal[i].from, legal[i].to));
    assert_int_equal(b2sd_life_move(&s, legal[i].to, "t"), 0);
    assert_int_equal(s, legal[i].to);
  }
}

/* The table has nothing more: of the 64 pairs, the listed ones alone. */
static void test_table_is_the_list(void **state) {
  (void)state;
  int n = 0;
  for (int f = 0; f < N; f++)
    for (int t = 0; t < N; t++) {
      assert_int_equal(b2sd_life_legal((b2sd_life)f, (b2sd_life)t),
                       listed((b2sd_life)f, (b2sd_life)t));
      n += b2sd_life_legal((b2sd_life)f, (b2sd_life)t);
    }
  assert_int_equal(n, (int)NLEGAL);
  assert_false(b2sd_life_legal(B2SD_LIFE_COUNT, B2SD_LIFE_READY));
  assert_false(b2sd_life_legal(B2SD_LIFE_NEW, B2SD_LIFE_COUNT));
  assert_string_equal(b2sd_life_name(B2SD_LIFE_STOPPING), "STOPPING");
  assert_string_equal(b2sd_life_name(B2SD_LIFE_COUNT), "?");
}

/* One illegal move in a child: how it ended. */
static int refused_in_child(b2sd_life from, b2sd_life to) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
      dup2(null, STDERR_FILENO);   /* the error line and the assertion */
    b2sd_life s = from;
    int rc = b2sd_life_move(&s, to, "t");
    _exit(rc == -EINVAL && s == from ? 3 : 4);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return status;
}

/* Every pair not listed is refused: in developer builds the invariant
 * aborts, in others the move returns -EINVAL and the state stays. */
static void test_illegal_refused(void **state) {
  (void)state;
  int refused = 0;
  for (int f = 0; f < N; f++)
    for (int t = 0; t < N; t++) {
      if (listed((b2sd_life)f, (b2sd_life)t))
        continue;
      int status = refused_in_child((b2sd_life)f, (b2sd_life)t);
#ifdef B2S_DEVELOPER
      assert_true(WIFSIGNALED(status));
      assert_int_equal(WTERMSIG(status), SIGABRT);
#else
      assert_true(WIFEXITED(status));
      assert_int_equal(WEXITSTATUS(status), 3);
#endif
      refused++;
    }
  assert_int_equal(refused, N * N - (int)NLEGAL);
}

static void walk(const b2sd_life *path, size_t n) {
  b2sd_life s = B2SD_LIFE_NEW;
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(b2sd_life_move(&s, path[i], "t"), 0);
    assert_int_equal(s, path[i]);
  }
}

/* The lives stream.c and retire.c give a stream. */
static void test_lives(void **state) {
  (void)state;
  /* opened, written, freed at the stop */
  walk((b2sd_life[]){B2SD_LIFE_READY, B2SD_LIFE_WRITING, B2SD_LIFE_ENDED}, 3);
  /* failed at open, re-opened twice: no room, then room again */
  walk((b2sd_life[]){B2SD_LIFE_FAILED, B2SD_LIFE_ENDED, B2SD_LIFE_FAILED,
                     B2SD_LIFE_ENDED, B2SD_LIFE_READY, B2SD_LIFE_WRITING},
       6);
  /* the writer failed, a re-open whose writer does not start */
  walk((b2sd_life[]){B2SD_LIFE_READY, B2SD_LIFE_WRITING, B2SD_LIFE_ENDED,
                     B2SD_LIFE_READY, B2SD_LIFE_FAILED},
       5);
  /* a detector's series ended: stop asked, writer exited, freed */
  walk((b2sd_life[]){B2SD_LIFE_READY, B2SD_LIFE_WRITING, B2SD_LIFE_RETIRING,
                     B2SD_LIFE_STOPPING, B2SD_LIFE_CLOSED, B2SD_LIFE_ENDED},
       6);
  /* a failed stream's series ended: no writer to stop */
  walk((b2sd_life[]){B2SD_LIFE_FAILED, B2SD_LIFE_RETIRING, B2SD_LIFE_CLOSED,
                     B2SD_LIFE_ENDED},
       4);
  assert_true(b2sd_life_retiring(B2SD_LIFE_RETIRING));
  assert_true(b2sd_life_retiring(B2SD_LIFE_STOPPING));
  assert_true(b2sd_life_retiring(B2SD_LIFE_CLOSED));
  assert_false(b2sd_life_retiring(B2SD_LIFE_WRITING));
  assert_false(b2sd_life_retiring(B2SD_LIFE_ENDED));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_transition_moves),
      cmocka_unit_test(test_table_is_the_list),
      cmocka_unit_test(test_illegal_refused),
      cmocka_unit_test(test_lives),
  };
  return ts_run_tests(tests, NULL, NULL);
}
