/* The driver of XDS's plugin interface (xds_plugin_check) against a
 * stand-in plugin (xds_fake_plugin.c): its verdicts on equal frames, a
 * changed pixel, a refusal, an abort and a wrong header, and its rules
 * for Durin and neggia on a table worked out by hand from their sources
 * (Durin src/plugin.c, neggia plugin/H5ToXds.cpp): NODATA, the sign bit,
 * mask bits 0, 1, 4, 5 and 31. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "xds_npy.h"
#include "ts.h"

static char dir[64];
static const char *check, *fake;

/* Frame f (1..3) of 2 x 4 uint16 pixels, the mask, and what each reader
 * gives for them. */
static const uint32_t MASK[8] = {0, 1, 0, 32, 1u << 31, 2, 16, 0};
static void stored(int f, uint16_t *p) {
  const uint16_t v[8] = {65535, 5, 40000, 1234, 65534, 32768,
                         (uint16_t)(7 + f), (uint16_t)(100 * f)};
  memcpy(p, v, sizeof v);
}
static void durin(int f, int32_t *p) {
  const int32_t v[8] = {-1, -1, -25536, -1, -2, -2, -2, 100 * f};
  memcpy(p, v, sizeof v);
}
static void neggia(int f, int32_t *p) {
  const int32_t v[8] = {-1, -1, 40000, 1234, 65534, -2, -2, 100 * f};
  memcpy(p, v, sizeof v);
}
static void exact(int f, int32_t *p) {
  uint16_t s[8];
  stored(f, s);
  for (int k = 0; k < 8; k++)
    p[k] = s[k];
}

static void path(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", dir, name);
}

/* A .npy of int32 (nf, 2, 4) from fill, what the stand-in gives. */
static void gives(const char *name, void (*fill)(int, int32_t *), int nf) {
  int32_t v[4 * 8];
  for (int f = 1; f <= nf; f++)
    fill(f, v + (f - 1) * 8);
  char p[128];
  path(p, sizeof p, name);
  size_t shape[3] = {(size_t)nf, 2, 4};
  assert_int_equal(xds_npy_write(p, "<i4", shape, 3, v), 0);
}

static int setup(void **state) {
  (void)state;
  check = getenv("B2S_XDS_CHECK");
  fake = getenv("B2S_XDS_FAKE");
  snprintf(dir, sizeof dir, "/tmp/b2s-xdscheck-XXXXXX");
  if (!check || !fake || !mkdtemp(dir))
    return -1;
  for (int nf = 3; nf <= 4; nf++) {
    uint16_t v[4 * 8];
    for (int f = 1; f <= nf; f++)
      stored(f, v + (f - 1) * 8);
    char p[128];
    path(p, sizeof p, nf == 3 ? "want.npy" : "want4.npy");
    size_t shape[3] = {(size_t)nf, 2, 4};
    if (xds_npy_write(p, "<u2", shape, 3, v) < 0)
      return -1;
  }
  char p[128];
  path(p, sizeof p, "mask.npy");
  size_t ms[2] = {2, 4};
  if (xds_npy_write(p, "<u4", ms, 2, MASK) < 0)
    return -1;
  gives("durin.npy", durin, 3);
  gives("neggia.npy", neggia, 3);
  gives("exact.npy", exact, 3);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return ts_rmtree(dir);
}

/* Run the driver with args (in dir); its exit status, its output in out. */
static int run(const char *env, const char *args, char *out, size_t cap) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cd '%s' && %s '%s' %s 2>&1", dir, env ? env : "",
           check, args);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void expect(const char *env, const char *args, int rc,
                   const char *line) {
  char out[8192], a[900];
  snprintf(a, sizeof a, args, fake);
  int got = run(env, a, out, sizeof out);
  if (got != rc || (line && !strstr(out, line)))
    fail_msg("xds_plugin_check %s: exit %d (want %d), output:\n%s\n"
             "(wanted the line: %s)", a, got, rc, out, line ? line : "-");
}

static void test_rules(void **state) {
  (void)state;
  expect(NULL, "--rule durin --mask mask.npy '%s' durin.npy want.npy", 0,
         "read: 3 of 3 frames equal");
  expect(NULL, "--rule neggia --mask mask.npy '%s' neggia.npy want.npy", 0,
         "read: 3 of 3 frames equal");
  expect(NULL, "--rule exact '%s' exact.npy want.npy", 0,
         "verdict: every frame equal");
  /* the rules differ where the readers do */
  expect(NULL, "--rule neggia --mask mask.npy '%s' durin.npy want.npy", 1,
         "frame 1: 3 of 8 pixels differ; first at (y 0, x 2): got -25536, "
         "expected 40000 (stored 40000)");
  expect(NULL, "--rule durin '%s' durin.npy want.npy", 1,
         "read: 0 of 3 frames equal");
}

static void test_verdicts(void **state) {
  (void)state;
  expect("XDS_FAKE_MODE=flip", "--rule exact '%s' exact.npy want.npy", 1,
         "frame 2: 1 of 8 pixels differ; first at (y 1, x 2): got 10, "
         "expected 9 (stored 9)");
  expect("XDS_FAKE_MODE=flip", "--rule exact '%s' exact.npy want.npy", 1,
         "read: 2 of 3 frames equal");
  expect("XDS_FAKE_MODE=abort", "--rule exact '%s' exact.npy want.npy", 1,
         "reader died of signal 6 (Aborted) in plugin_get_data (frame 2)");
  expect("XDS_FAKE_MODE=refuse", "'%s' exact.npy want.npy", 1,
         "open: error_flag -4");
  /* the header: frames, qx/qy */
  expect(NULL, "--rule exact '%s' exact.npy want4.npy", 1,
         "header: expected nx 4 ny 2 nbytes 2 frames 4");
  expect(NULL, "--rule exact --pixel-size 1e-4 '%s' exact.npy want.npy", 1,
         "header: expected qx 0.0001 qy 0.0001");
  expect(NULL, "--rule exact --pixel-size 7.5e-5 '%s' exact.npy want.npy", 0,
         "header: nx 4 ny 2 nbytes 2 qx 7.5e-05 qy 7.5e-05 frames 3");
  /* no expected pixels: every frame read */
  expect(NULL, "'%s' exact.npy", 0, "read: 3 of 3 frames read");
  /* XDS_PLUGIN names the plugin for "-" */
  char env[600];
  snprintf(env, sizeof env, "XDS_PLUGIN='%s'", fake);
  expect(env, "--rule exact - exact.npy want.npy%.0s", 0,
         "read: 3 of 3 frames equal");
}

static void test_bad_use(void **state) {
  (void)state;
  expect(NULL, "%.0s", 2, "usage: xds_plugin_check");
  expect(NULL, "--rule xds '%s' exact.npy", 2, "usage:");
  expect(NULL, "./nothing.so exact.npy%.0s", 1, "dlopen: ");
  expect(NULL, "'%s' exact.npy missing.npy", 2, "missing.npy: cannot open");
  expect(NULL, "'%s' exact.npy mask.npy", 2, "mask.npy: 2 dimensions, not 3");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rules),
    cmocka_unit_test(test_verdicts),
    cmocka_unit_test(test_bad_use),
  };
  return ts_run_tests(tests, setup, teardown);
}
