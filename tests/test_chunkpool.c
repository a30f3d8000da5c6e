/* The chunk-buffer pool (daemon/buffers/chunkpool.c): the idle budget, the lazy
 * list past it, release at a stream's end, trim. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "chunkpool.h"
#include "ts.h"

#define CAP ((size_t)1 << 20)
#define N 16

static bool in_set(b2sd_chunk *c, b2sd_chunk *const *set, int n) {
  for (int i = 0; i < n; i++)
    if (set[i] == c)
      return true;
  return false;
}

/* Buffers past the budget wait on the lazy list and come back from it:
 * a pool with room for 3 idle buffers gives back all 6 it was given. */
static void test_past_budget_buffers_come_back(void **state) {
  (void)state;
  b2sd_chunkpool *cp;
  assert_int_equal(b2sd_chunkpool_new(3 * (int64_t)CAP, &cp), 0);
  b2sd_chunk *got[6];
  for (int i = 0; i < 6; i++) {
    assert_non_null(got[i] = b2sd_chunkpool_get(cp, CAP));
    memset(got[i]->data, 0xa5, CAP);
  }
  for (int i = 0; i < 6; i++)
    b2sd_chunkpool_put(cp, got[i]);
  assert_int_equal(b2sd_chunkpool_idle_bytes(cp), 3 * (int64_t)CAP);
  assert_int_equal(b2sd_chunkpool_lazy_bytes(cp), 3 * (int64_t)CAP);
  b2sd_chunk *again[6];
  for (int i = 0; i < 6; i++) {
    assert_non_null(again[i] = b2sd_chunkpool_get(cp, CAP));
    assert_true(in_set(again[i], got, 6));
    memset(again[i]->data, i, CAP);       /* a lazy buffer is writable */
    assert_int_equal(again[i]->data[CAP - 1], i);
  }
  /* the idle ones first (the first three put, which filled the budget),
   * newest first */
  assert_ptr_equal(again[0], got[2]);
  assert_ptr_equal(again[2], got[0]);
  assert_int_equal(b2sd_chunkpool_idle_bytes(cp), 0);
  assert_int_equal(b2sd_chunkpool_lazy_bytes(cp), 0);
  for (int i = 0; i < 6; i++)
    b2sd_chunkpool_put(cp, again[i]);
  b2sd_chunkpool_free(cp);
}

/* The lazy list holds at most three times the budget; the rest is freed. */
static void test_lazy_list_is_bounded(void **state) {
  (void)state;
  b2sd_chunkpool *cp;
  assert_int_equal(b2sd_chunkpool_new(2 * (int64_t)CAP, &cp), 0);
  b2sd_chunk *got[N];
  for (int i = 0; i < N; i++)
    assert_non_null(got[i] = b2sd_chunkpool_get(cp, CAP));
  for (int i = 0; i < N; i++)
    b2sd_chunkpool_put(cp, got[i]);
  assert_int_equal(b2sd_chunkpool_idle_bytes(cp), 2 * (int64_t)CAP);
  assert_int_equal(b2sd_chunkpool_lazy_bytes(cp), 6 * (int64_t)CAP);
  /* a lower budget frees what no longer fits, the lazy list too */
  b2sd_chunkpool_set_max(cp, (int64_t)CAP);
  assert_int_equal(b2sd_chunkpool_idle_bytes(cp), 0);
  assert_int_equal(b2sd_chunkpool_lazy_bytes(cp), 0);
  b2sd_chunkpool_free(cp);
}

/* A stream's end hands the idle buffers to the lazy list, where the next
 * stream finds them; trim frees both lists. */
static void test_release_then_trim(void **state) {
  (void)state;
  b2sd_chunkpool *cp;
  assert_int_equal(b2sd_chunkpool_new(4 * (int64_t)CAP, &cp), 0);
  b2sd_chunk *a = b2sd_chunkpool_get(cp, CAP), *b = b2sd_chunkpool_get(cp, CAP);
  assert_non_null(a);
  assert_non_null(b);
  b2sd_chunkpool_put(cp, a);
  b2sd_chunkpool_put(cp, b);
  b2sd_chunkpool_release(cp);
  assert_int_equal(b2sd_chunkpool_idle_bytes(cp), 0);
  assert_int_equal(b2sd_chunkpool_lazy_bytes(cp), 2 * (int64_t)CAP);
  b2sd_chunk *c = b2sd_chunkpool_get(cp, CAP);
  assert_true(c == a || c == b);
  assert_int_equal(b2sd_chunkpool_lazy_bytes(cp), (int64_t)CAP);
  /* a bigger request than any lazy buffer takes a new one */
  b2sd_chunk *big = b2sd_chunkpool_get(cp, 2 * CAP);
  assert_non_null(big);
  assert_true(big != a && big != b);
  assert_true(big->cap >= 2 * CAP);
  b2sd_chunkpool_put(cp, c);
  b2sd_chunkpool_put(cp, big);
  b2sd_chunkpool_trim(cp);
  assert_int_equal(b2sd_chunkpool_idle_bytes(cp), 0);
  assert_int_equal(b2sd_chunkpool_lazy_bytes(cp), 0);
  b2sd_chunkpool_free(cp);
}

/* Workers and writers share the pool: threads taking and giving back
 * buffers of several sizes, one now and then releasing the idle ones as a
 * stream's end does, never get a buffer another holds, and the pool's
 * bounds hold after.  (Run under ThreadSanitizer in CI.) */
#define THREADS 4
#define ROUNDS 3000

typedef struct racer {
  b2sd_chunkpool *cp;
  int id;
  int bad;
} racer;

static void *race_main(void *arg) {
  racer *r = arg;
  uint32_t x = (uint32_t)r->id * 2654435761u + 1;
  b2sd_chunk *held[3] = {0};
  for (int i = 0; i < ROUNDS; i++) {
    x = x * 1103515245u + 12345u;
    int k = (int)(x >> 16) % 3;
    if (held[k]) {
      b2sd_chunk *c = held[k];
      if (c->data[0] != (uint8_t)r->id || c->data[c->cap - 1] != (uint8_t)r->id)
        r->bad++;
      b2sd_chunkpool_put(r->cp, c);
      held[k] = NULL;
    } else {
      size_t cap = (size_t)(64 << 10) << (x >> 24) % 3;
      b2sd_chunk *c = b2sd_chunkpool_get(r->cp, cap);
      if (!c || c->cap < cap) {
        r->bad++;
        continue;
      }
      c->data[0] = (uint8_t)r->id;       /* another holder would overwrite */
      c->data[c->cap - 1] = (uint8_t)r->id;
      held[k] = c;
    }
    if (i % 500 == 499 && r->id == 0)
      b2sd_chunkpool_release(r->cp);
  }
  for (int j = 0; j < 3; j++)
    if (held[j])
      b2sd_chunkpool_put(r->cp, held[j]);
  return NULL;
}

static void test_threads_share_the_pool(void **state) {
  (void)state;
  b2sd_chunkpool *cp;
  int64_t max = 1 << 20;
  assert_int_equal(b2sd_chunkpool_new(max, &cp), 0);
  pthread_t th[THREADS];
  racer r[THREADS];
  for (int t = 0; t < THREADS; t++) {
    r[t] = (racer){.cp = cp, .id = t + 1};
    assert_int_equal(pthread_create(&th[t], NULL, race_main, &r[t]), 0);
  }
  for (int t = 0; t < THREADS; t++) {
    pthread_join(th[t], NULL);
    assert_int_equal(r[t].bad, 0);
  }
  assert_true(b2sd_chunkpool_idle_bytes(cp) <= max);
  assert_true(b2sd_chunkpool_lazy_bytes(cp) <= 3 * max);
  assert_true(b2sd_chunkpool_idle_bytes(cp) + b2sd_chunkpool_lazy_bytes(cp) > 0);
  b2sd_chunkpool_free(cp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_past_budget_buffers_come_back),
      cmocka_unit_test(test_lazy_list_is_bounded),
      cmocka_unit_test(test_release_then_trim),
      cmocka_unit_test(test_threads_share_the_pool),
  };
  return ts_run_tests(tests, NULL, NULL);
}
