/* The committer's decisions (committer/dcommit.c, b2s_dcommit.h) as plain
 * function calls: batches, the probe and gap timers, the window, END, the
 * probe before the close, the wait for a lease held elsewhere. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "b2s_dcommit.h"
#include "b2s_errors.h"
#include "ts.h"

#define TIMEOUT 1000

/* A record whose bytes name its index, so batches can be checked. */
static size_t rec_of(int64_t i, uint8_t *buf) {
  return (size_t)snprintf((char *)buf, 32, "rec-%lld", (long long)i);
}

static int put(b2s_dcommit *dc, int64_t i) {
  uint8_t buf[32];
  size_t n = rec_of(i, buf);
  return b2s_dcommit_written(dc, i, buf, n);
}

static b2s_dcommit *tracker(int64_t h, int32_t ranks, int64_t window) {
  b2s_dcommit_opts o = {.ranks = ranks, .window = window,
                        .gap_timeout_ms = TIMEOUT};
  b2s_dcommit *dc;
  assert_int_equal(b2s_dcommit_new(h, &o, &dc), 0);
  return dc;
}

static b2s_dcommit_decision next(b2s_dcommit *dc, int64_t now, int64_t max) {
  b2s_dcommit_decision d;
  b2s_dcommit_next(dc, now, max, &d);
  return d;
}

/* Expect COMMIT of n at the current H, check the records, advance. */
static void commit(b2s_dcommit *dc, int64_t now, int64_t max, int64_t n) {
  b2s_dcommit_decision d = next(dc, now, max);
  assert_int_equal(d.kind, B2S_DCOMMIT_COMMIT);
  int64_t h = b2s_dcommit_committed(dc);
  assert_int_equal(d.index, h);
  assert_int_equal(d.n, n);
  const uint8_t **recs = calloc((size_t)n, sizeof *recs);
  size_t *lens = calloc((size_t)n, sizeof *lens);
  assert_int_equal(b2s_dcommit_batch(dc, n, recs, lens), n);
  for (int64_t k = 0; k < n; k++) {
    uint8_t want[32];
    size_t wl = rec_of(h + k, want);
    assert_int_equal(lens[k], wl);
    assert_memory_equal(recs[k], want, wl);
  }
  free(recs);
  free(lens);
  assert_int_equal(b2s_dcommit_advance(dc, n), 0);
  assert_int_equal(b2s_dcommit_committed(dc), h + n);
}

static void test_in_order_batches(void **state) {
  (void)state;
  b2s_dcommit *dc = tracker(5, 1, 0);
  assert_int_equal(next(dc, 0, 64).kind, B2S_DCOMMIT_NONE);
  assert_int_equal(next(dc, 0, 64).wait_ms, -1);
  for (int64_t i = 5; i < 15; i++)
    assert_int_equal(put(dc, i), 0);
  assert_int_equal(b2s_dcommit_pending(dc), 10);
  commit(dc, 0, 4, 4);
  commit(dc, 0, 4, 4);
  commit(dc, 0, 4, 2);
  assert_int_equal(b2s_dcommit_committed(dc), 15);
  assert_int_equal(b2s_dcommit_pending(dc), 0);
  b2s_dcommit_decision d = next(dc, 0, 4);
  assert_int_equal(d.kind, B2S_DCOMMIT_NONE);
  assert_int_equal(d.wait_ms, -1);
  /* advancing past what is there is refused and changes nothing */
  assert_int_equal(b2s_dcommit_advance(dc, 1), B2S_E_ARG);
  assert_int_equal(b2s_dcommit_committed(dc), 15);
  b2s_dcommit_free(dc);
}

static void test_repeats(void **state) {
  (void)state;
  b2s_dcommit *dc = tracker(0, 1, 0);
  assert_int_equal(put(dc, 0), 0);
  assert_int_equal(put(dc, 0), 1);
  assert_int_equal(put(dc, 3), 0);
  assert_int_equal(put(dc, 3), 1);
  assert_int_equal(b2s_dcommit_pending(dc), 2);
  commit(dc, 0, 64, 1);
  assert_int_equal(put(dc, 0), 1);      /* below H */
  assert_int_equal(b2s_dcommit_pending(dc), 1);
  assert_int_equal(b2s_dcommit_written(dc, 1, (const uint8_t *)"x", 0),
                   B2S_E_ARG);
  assert_int_equal(b2s_dcommit_written(dc, -1, (const uint8_t *)"x", 1),
                   B2S_E_ARG);
  assert_int_equal(b2s_dcommit_written(dc, 1, NULL, 1), B2S_E_ARG);
  b2s_dcommit_free(dc);
}

/* H missing, a higher index there: no store read before half the
 * timeout, one probe, a gap at the timeout, then the batch. */
static void test_gap_after_timeout(void **state) {
  (void)state;
  b2s_dcommit *dc = tracker(0, 1, 0);
  assert_int_equal(put(dc, 0), 0);
  assert_int_equal(put(dc, 2), 0);
  assert_int_equal(put(dc, 3), 0);
  commit(dc, 100, 64, 1);
  b2s_dcommit_decision d = next(dc, 100, 64);   /* timer starts */
  assert_int_equal(d.kind, B2S_DCOMMIT_NONE);
  assert_int_equal(d.wait_ms, TIMEOUT / 2);
  d = next(dc, 100 + TIMEOUT / 2 - 1, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_NONE);
  assert_int_equal(d.wait_ms, 1);
  d = next(dc, 100 + TIMEOUT / 2, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_PROBE);
  assert_int_equal(d.index, 1);
  /* the probe found nothing: wait for the rest of the timeout */
  d = next(dc, 100 + TIMEOUT / 2, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_NONE);
  assert_int_equal(d.wait_ms, TIMEOUT - TIMEOUT / 2);
  d = next(dc, 100 + TIMEOUT - 1, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_NONE);
  d = next(dc, 100 + TIMEOUT, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_GAP);
  assert_int_equal(d.index, 1);
  /* until the caller reports what is stored at 1, the gap stays due */
  assert_int_equal(next(dc, 100 + TIMEOUT + 5, 64).kind, B2S_DCOMMIT_GAP);
  assert_int_equal(put(dc, 1), 0);
  commit(dc, 100 + TIMEOUT, 64, 3);
  assert_int_equal(b2s_dcommit_committed(dc), 4);
  b2s_dcommit_free(dc);
}

/* The chunk arrives before its timeout: no gap. */
static void test_late_arrival(void **state) {
  (void)state;
  b2s_dcommit *dc = tracker(0, 1, 0);
  assert_int_equal(put(dc, 1), 0);
  assert_int_equal(next(dc, 0, 64).kind, B2S_DCOMMIT_NONE);
  assert_int_equal(put(dc, 0), 0);
  commit(dc, TIMEOUT * 10, 64, 2);
  /* a new missing index gets its own timer, started when first seen */
  assert_int_equal(put(dc, 3), 0);
  b2s_dcommit_decision d = next(dc, TIMEOUT * 20, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_NONE);
  assert_int_equal(d.wait_ms, TIMEOUT / 2);
  b2s_dcommit_free(dc);
}

/* A probe that finds a record makes the next missing index be probed at
 * once: a run of lost messages costs one store read each, no timeout. */
static void test_probe_streak(void **state) {
  (void)state;
  b2s_dcommit *dc = tracker(10, 1, 0);
  assert_int_equal(put(dc, 20), 0);
  assert_int_equal(next(dc, 0, 64).kind, B2S_DCOMMIT_NONE);
  b2s_dcommit_decision d = next(dc, TIMEOUT / 2, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_PROBE);
  assert_int_equal(d.index, 10);
  assert_int_equal(put(dc, 10), 0);     /* found in the store */
  commit(dc, TIMEOUT / 2, 64, 1);
  for (int64_t i = 11; i < 15; i++) {
    d = next(dc, TIMEOUT / 2, 64);
    assert_int_equal(d.kind, B2S_DCOMMIT_PROBE);
    assert_int_equal(d.index, i);
    assert_int_equal(put(dc, i), 0);
    commit(dc, TIMEOUT / 2, 64, 1);
  }
  /* 15 is not in the store: the streak ends; its gap timer started when
   * it was first seen missing */
  d = next(dc, TIMEOUT / 2, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_PROBE);
  assert_int_equal(d.index, 15);
  d = next(dc, TIMEOUT / 2, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_NONE);
  assert_int_equal(d.wait_ms, TIMEOUT);
  d = next(dc, TIMEOUT / 2 + TIMEOUT, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_GAP);
  assert_int_equal(put(dc, 15), 0);     /* the gap's record */
  commit(dc, TIMEOUT * 2, 64, 1);
  /* after a gap the next missing index is probed at once */
  d = next(dc, TIMEOUT * 2, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_PROBE);
  assert_int_equal(d.index, 16);
  b2s_dcommit_free(dc);
}

/* Indices `window` or more beyond H are refused; the ring grows to hold
 * any order inside the window. */
static void test_window(void **state) {
  (void)state;
  const int64_t window = 5000;
  b2s_dcommit *dc = tracker(100, 1, window);
  assert_int_equal(put(dc, 100 + window), B2S_E_BUSY);
  assert_int_equal(put(dc, INT64_C(1) << 61), B2S_E_BUSY);
  /* every index of the window, in a scrambled order (7 is prime to 5000) */
  for (int64_t k = 0; k < window; k++)
    assert_int_equal(put(dc, 100 + (k * 7 + 3) % window), 0);
  assert_int_equal(b2s_dcommit_pending(dc), window);
  assert_int_equal(b2s_dcommit_high(dc), 100 + window);
  commit(dc, 0, 4096, 4096);
  /* the window moved with H */
  assert_int_equal(put(dc, 100 + window + 4095), 0);
  assert_int_equal(put(dc, 100 + window + 4096), B2S_E_BUSY);
  commit(dc, 0, 4096, window - 4096);
  assert_int_equal(b2s_dcommit_committed(dc), 100 + window);
  assert_int_equal(next(dc, 0, 4096).kind, B2S_DCOMMIT_NONE);
  b2s_dcommit_free(dc);

  /* the default window is 2^20 */
  dc = tracker(0, 1, 0);
  assert_int_equal(put(dc, B2S_DCOMMIT_WINDOW_DEFAULT), B2S_E_BUSY);
  assert_int_equal(put(dc, B2S_DCOMMIT_WINDOW_DEFAULT - 1), 0);
  b2s_dcommit_free(dc);
}

/* END from every rank: what is missing up to max(END) becomes gaps at
 * once, then DONE. */
static void test_end_of_run(void **state) {
  (void)state;
  b2s_dcommit *dc = tracker(0, 3, 0);
  assert_int_equal(put(dc, 0), 0);
  assert_int_equal(put(dc, 2), 0);
  assert_int_equal(b2s_dcommit_end(dc, 0, 3), 0);
  assert_int_equal(b2s_dcommit_end(dc, 2, 0), 0);
  assert_int_equal(b2s_dcommit_end(dc, 2, 0), 0);   /* repeated END */
  assert_int_equal(b2s_dcommit_ended(dc), 2);
  commit(dc, 0, 64, 1);
  /* one rank still runs: ordinary timers */
  assert_int_equal(next(dc, 0, 64).kind, B2S_DCOMMIT_NONE);
  assert_int_equal(b2s_dcommit_end(dc, 1, 6), 0);
  assert_int_equal(b2s_dcommit_ended(dc), 3);
  assert_int_equal(b2s_dcommit_high(dc), 6);
  b2s_dcommit_decision d = next(dc, 0, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_GAP);
  assert_int_equal(d.index, 1);
  assert_int_equal(put(dc, 1), 0);
  commit(dc, 0, 64, 2);
  for (int64_t i = 3; i < 6; i++) {
    d = next(dc, 0, 64);
    assert_int_equal(d.kind, B2S_DCOMMIT_GAP);
    assert_int_equal(d.index, i);
    assert_int_equal(put(dc, i), 0);
    commit(dc, 0, 64, 1);
  }
  /* one look at 6 before closing: nothing there */
  d = next(dc, 0, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_PROBE);
  assert_int_equal(d.index, 6);
  d = next(dc, 0, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_DONE);
  assert_int_equal(d.index, 6);
  assert_int_equal(b2s_dcommit_end(dc, 3, 1), B2S_E_ARG);
  assert_int_equal(b2s_dcommit_end(dc, -1, 1), B2S_E_ARG);
  b2s_dcommit_free(dc);
}

/* END below what was written: the run ends at the highest write. */
static void test_end_below_written(void **state) {
  (void)state;
  b2s_dcommit *dc = tracker(0, 1, 0);
  assert_int_equal(put(dc, 0), 0);
  assert_int_equal(put(dc, 4), 0);
  assert_int_equal(b2s_dcommit_end(dc, 0, 2), 0);
  commit(dc, 0, 64, 1);
  for (int64_t i = 1; i < 4; i++) {
    b2s_dcommit_decision d = next(dc, 0, 64);
    assert_int_equal(d.kind, B2S_DCOMMIT_GAP);
    assert_int_equal(d.index, i);
    assert_int_equal(put(dc, i), 0);
    commit(dc, 0, 64, i == 3 ? 2 : 1);
  }
  assert_int_equal(next(dc, 0, 64).kind, B2S_DCOMMIT_PROBE);
  assert_int_equal(next(dc, 0, 64).kind, B2S_DCOMMIT_DONE);
  b2s_dcommit_free(dc);
  /* no chunk at all */
  dc = tracker(7, 2, 0);
  assert_int_equal(b2s_dcommit_end(dc, 0, 0), 0);
  assert_int_equal(b2s_dcommit_end(dc, 1, 0), 0);
  b2s_dcommit_decision d = next(dc, 0, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_PROBE);
  assert_int_equal(d.index, 7);
  assert_int_equal(next(dc, 0, 64).kind, B2S_DCOMMIT_DONE);
  b2s_dcommit_free(dc);
}

/* Every rank ended below chunks that are stored: a rank restarted since
 * its chunks were stored counts only what it stored after (END 0 here),
 * and their WRITTEN died with an earlier committer.  The probes before
 * the close find them one by one; the close comes at the first index
 * with nothing stored, and a DONE is not probed again. */
static void test_close_probe(void **state) {
  (void)state;
  b2s_dcommit *dc = tracker(0, 2, 0);
  for (int64_t i = 0; i < 4; i++)
    assert_int_equal(put(dc, i), 0);
  assert_int_equal(b2s_dcommit_end(dc, 0, 4), 0);
  assert_int_equal(b2s_dcommit_end(dc, 1, 0), 0);
  commit(dc, 0, 64, 4);
  for (int64_t i = 4; i < 7; i++) {
    b2s_dcommit_decision d = next(dc, 0, 64);
    assert_int_equal(d.kind, B2S_DCOMMIT_PROBE);
    assert_int_equal(d.index, i);
    assert_int_equal(put(dc, i), 0);     /* found in the store */
    commit(dc, 0, 64, 1);
  }
  b2s_dcommit_decision d = next(dc, 0, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_PROBE);
  assert_int_equal(d.index, 7);
  for (int k = 0; k < 3; k++) {             /* nothing at 7 */
    d = next(dc, 0, 64);
    assert_int_equal(d.kind, B2S_DCOMMIT_DONE);
    assert_int_equal(d.index, 7);
  }
  /* a rank writing again makes its END stale: no close; 7 was looked
   * at already, so its gap timer runs */
  assert_int_equal(b2s_dcommit_wrote(dc, 1, 9), 0);
  assert_int_equal(put(dc, 9), 0);
  d = next(dc, 0, 64);
  assert_int_equal(d.kind, B2S_DCOMMIT_NONE);
  assert_int_equal(d.wait_ms, TIMEOUT);
  assert_int_equal(next(dc, TIMEOUT, 64).kind, B2S_DCOMMIT_GAP);
  b2s_dcommit_free(dc);
}

/* The wait for a lease another committer holds: tried every FAST ms
 * while the holder may be one that died (its lease runs out within
 * expire_ms), shown alive by a refusal that late, then tried every SLOW
 * ms; a store failure waits SLOW ms and proves nothing. */
static void test_lease_wait(void **state) {
  (void)state;
  const int64_t expire = 3000, t0 = 100;
  b2s_dcommit_lease w;
  b2s_dcommit_lease_init(&w, expire);
  assert_int_equal(b2s_dcommit_lease_wait(&w, -5000), 0);   /* try now */
  assert_false(b2s_dcommit_lease_refused(&w, t0));
  assert_false(b2s_dcommit_lease_alive(&w));
  assert_int_equal(b2s_dcommit_lease_wait(&w, t0), B2S_DCOMMIT_LEASE_FAST_MS);
  assert_int_equal(b2s_dcommit_lease_wait(&w, t0 + 150), 50);
  assert_int_equal(b2s_dcommit_lease_wait(&w, t0 + 200), 0);
  int64_t t = t0 + B2S_DCOMMIT_LEASE_FAST_MS;
  for (; t < t0 + expire + B2S_DCOMMIT_LEASE_MARGIN_MS;
       t += B2S_DCOMMIT_LEASE_FAST_MS) {
    assert_int_equal(b2s_dcommit_lease_wait(&w, t), 0);
    assert_false(b2s_dcommit_lease_refused(&w, t));
  }
  assert_false(b2s_dcommit_lease_alive(&w));
  /* a dead holder's lease would have run out: this one was renewed */
  assert_true(b2s_dcommit_lease_refused(&w, t));
  assert_true(b2s_dcommit_lease_alive(&w));
  assert_int_equal(b2s_dcommit_lease_wait(&w, t), B2S_DCOMMIT_LEASE_SLOW_MS);
  /* said once */
  assert_false(b2s_dcommit_lease_refused(&w, t + B2S_DCOMMIT_LEASE_SLOW_MS));
  assert_true(b2s_dcommit_lease_alive(&w));
  /* taken: the next refusal is a new wait, from its own first refusal */
  b2s_dcommit_lease_taken(&w);
  assert_false(b2s_dcommit_lease_alive(&w));
  assert_int_equal(b2s_dcommit_lease_wait(&w, t), 0);
  assert_false(b2s_dcommit_lease_refused(&w, t + 50000));
  assert_int_equal(b2s_dcommit_lease_wait(&w, t + 50000),
                   B2S_DCOMMIT_LEASE_FAST_MS);
  /* a failed try waits SLOW ms and shows nothing */
  b2s_dcommit_lease_failed(&w, t + 60000);
  assert_int_equal(b2s_dcommit_lease_wait(&w, t + 60000),
                   B2S_DCOMMIT_LEASE_SLOW_MS);
  assert_false(b2s_dcommit_lease_alive(&w));

  /* the directory store: a lock held means a live holder, at once */
  b2s_dcommit_lease_init(&w, 0);
  assert_true(b2s_dcommit_lease_refused(&w, t0));
  assert_int_equal(b2s_dcommit_lease_wait(&w, t0), B2S_DCOMMIT_LEASE_SLOW_MS);
  b2s_dcommit_lease_init(&w, -1);           /* taken as 0 */
  assert_true(b2s_dcommit_lease_refused(&w, t0));
}

static void test_bad_options(void **state) {
  (void)state;
  b2s_dcommit *dc;
  b2s_dcommit_opts o = {.ranks = 0, .gap_timeout_ms = 1};
  assert_int_equal(b2s_dcommit_new(0, &o, &dc), B2S_E_ARG);
  o.ranks = 1;
  assert_int_equal(b2s_dcommit_new(-1, &o, &dc), B2S_E_ARG);
  o.gap_timeout_ms = -1;
  assert_int_equal(b2s_dcommit_new(0, &o, &dc), B2S_E_ARG);
  o.gap_timeout_ms = 0;
  o.window = -5;
  assert_int_equal(b2s_dcommit_new(0, &o, &dc), B2S_E_ARG);
  assert_int_equal(b2s_dcommit_new(0, NULL, &dc), B2S_E_ARG);
  b2s_dcommit_free(NULL);
  /* a zero timeout: probe, then gap, at once */
  o.window = 0;
  assert_int_equal(b2s_dcommit_new(0, &o, &dc), 0);
  assert_int_equal(put(dc, 1), 0);
  assert_int_equal(next(dc, 0, 64).kind, B2S_DCOMMIT_PROBE);
  assert_int_equal(next(dc, 0, 64).kind, B2S_DCOMMIT_GAP);
  b2s_dcommit_free(dc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_in_order_batches),
      cmocka_unit_test(test_repeats),
      cmocka_unit_test(test_gap_after_timeout),
      cmocka_unit_test(test_late_arrival),
      cmocka_unit_test(test_probe_streak),
      cmocka_unit_test(test_window),
      cmocka_unit_test(test_end_of_run),
      cmocka_unit_test(test_end_below_written),
      cmocka_unit_test(test_close_probe),
      cmocka_unit_test(test_lease_wait),
      cmocka_unit_test(test_bad_options),
  };
  return ts_run_tests(tests, NULL, NULL);
}
