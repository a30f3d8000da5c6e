/* The events ring of GET /api/v1/events (daemon/ops/events.c) without the
 * daemon: ids, replay after a Last-Event-ID, events_lost when what was
 * asked for is gone (evicted, or of another run), a reader that falls
 * behind, the acquisition filter, and posts that break a rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "b2s_errors.h"
#include "events.h"
#include "ts.h"

#define EPOCH 0x5f0c2a9e4b7d1c3aull

static char out[64 * B2SD_EVENT_TEXT_MAX];

/* Post n progress events of acquisition acq, data {"n":i}. */
static void post_n(b2sd_events *ev, int from, int n, const char *acq) {
  for (int i = from; i < from + n; i++) {
    char d[32];
    snprintf(d, sizeof d, "{\"n\":%d}", i);
    assert_true(b2sd_events_post(ev, "progress", acq, d) > 0);
  }
}

/* How often s occurs in out. */
static int count(const char *s) {
  int n = 0;
  for (const char *p = strstr(out, s); p; p = strstr(p + 1, s))
    n++;
  return n;
}

static void test_ids(void **state) {
  (void)state;
  uint64_t e, q;
  assert_int_equal(b2sd_events_id_parse("5f0c2a9e4b7d1c3a-1043", &e, &q), 0);
  assert_true(e == EPOCH && q == 1043);
  assert_int_equal(b2sd_events_id_parse("5F0C2A9E4B7D1C3A-0", &e, &q), 0);
  assert_true(e == EPOCH && q == 0);
  const char *bad[] = {"", "5f0c2a9e4b7d1c3a", "5f0c2a9e4b7d1c3a-",
                       "5f0c2a9e4b7d1c3a-01", "5f0c2a9e4b7d1c3-1",
                       "5f0c2a9e4b7d1c3ag-1", "5f0c2a9e4b7d1c3a-1 ",
                       "5f0c2a9e4b7d1c3a--1", "5f0c2a9e4b7d1c3a-9223372036854775808",
                       "5f0c2a9e4b7d1c3a-12345678901234567890", "x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (b2sd_events_id_parse(bad[i], &e, &q) == 0)
      fail_msg("%s was taken as an id", bad[i]);
  char t[B2SD_EVENT_ID_MAX];
  b2sd_events_id_text(EPOCH, 7, t);
  assert_string_equal(t, "5f0c2a9e4b7d1c3a-7");
}

/* Without an id a stream starts with the next event; with one, every
 * held event after it comes, in order, exactly once. */
static void test_replay(void **state) {
  (void)state;
  b2sd_events *ev = b2sd_events_new(8, EPOCH);
  assert_non_null(ev);
  assert_int_equal(b2sd_events_post(ev, "started", "", "{}"), 1);
  post_n(ev, 0, 4, "a");
  b2sd_events_cursor c;
  b2sd_events_cursor_init(ev, &c, NULL, NULL);
  assert_int_equal(b2sd_events_read(ev, &c, out, sizeof out), 0);
  post_n(ev, 4, 1, "a");
  size_t n = b2sd_events_read(ev, &c, out, sizeof out);
  out[n] = '\0';
  assert_string_equal(out, "id: 5f0c2a9e4b7d1c3a-6\nevent: progress\n"
                           "data: {\"n\":4}\n\n");
  b2sd_events_cursor_init(ev, &c, "5f0c2a9e4b7d1c3a-2", NULL);
  n = b2sd_events_read(ev, &c, out, sizeof out);
  out[n] = '\0';
  assert_int_equal(count("event: "), 4);
  assert_true(strstr(out, "-3\n") < strstr(out, "-4\n"));
  assert_non_null(strstr(out, "-6\nevent: progress\ndata: {\"n\":4}"));
  assert_null(strstr(out, "events_lost"));
  assert_int_equal(b2sd_events_read(ev, &c, out, sizeof out), 0);
  /* the newest id: nothing to replay; one beyond it: the same */
  b2sd_events_cursor_init(ev, &c, "5f0c2a9e4b7d1c3a-6", NULL);
  assert_int_equal(b2sd_events_read(ev, &c, out, sizeof out), 0);
  b2sd_events_free(ev);
}

/* An id older than the oldest held, or of another run: events_lost
 * first, then everything held; a reader that falls behind while reading
 * is told so too, and goes on from the oldest held. */
static void test_lost(void **state) {
  (void)state;
  b2sd_events *ev = b2sd_events_new(4, EPOCH);
  post_n(ev, 0, 10, "a");         /* 7..10 held */
  b2sd_events_cursor c;
  b2sd_events_cursor_init(ev, &c, "5f0c2a9e4b7d1c3a-5", NULL);
  size_t n = b2sd_events_read(ev, &c, out, sizeof out);
  out[n] = '\0';
  assert_non_null(strstr(out, "event: events_lost\ndata: {\"last_event_id\":"
                              "\"5f0c2a9e4b7d1c3a-5\",\"first_held\":"
                              "\"5f0c2a9e4b7d1c3a-7\",\"reason\":\"evicted\"}"));
  assert_int_equal(count("id: "), 4);
  /* the one just before the oldest held misses nothing */
  b2sd_events_cursor_init(ev, &c, "5f0c2a9e4b7d1c3a-6", NULL);
  n = b2sd_events_read(ev, &c, out, sizeof out);
  out[n] = '\0';
  assert_null(strstr(out, "events_lost"));
  assert_int_equal(count("id: "), 4);
  b2sd_events_cursor_init(ev, &c, "0000000000000001-9", NULL);
  n = b2sd_events_read(ev, &c, out, sizeof out);
  out[n] = '\0';
  assert_non_null(strstr(out, "\"reason\":\"restarted\""));
  assert_int_equal(count("id: "), 4);
  /* a slow reader: ten posts while it read nothing */
  post_n(ev, 10, 10, "a");
  n = b2sd_events_read(ev, &c, out, sizeof out);
  out[n] = '\0';
  assert_non_null(strstr(out, "\"last_event_id\":\"5f0c2a9e4b7d1c3a-10\","
                              "\"first_held\":\"5f0c2a9e4b7d1c3a-17\","
                              "\"reason\":\"evicted\""));
  assert_int_equal(count("id: "), 4);
  b2sd_events_free(ev);
}

/* ?acquisition=ID: that acquisition's events and those of none. */
static void test_filter(void **state) {
  (void)state;
  b2sd_events *ev = b2sd_events_new(16, EPOCH);
  b2sd_events_post(ev, "started", "", "{}");
  post_n(ev, 0, 3, "a");
  post_n(ev, 3, 2, "b");
  b2sd_events_cursor c;
  b2sd_events_cursor_init(ev, &c, "5f0c2a9e4b7d1c3a-0", "b");
  size_t n = b2sd_events_read(ev, &c, out, sizeof out);
  out[n] = '\0';
  assert_int_equal(count("event: "), 3);
  assert_non_null(strstr(out, "event: started"));
  assert_null(strstr(out, "\"n\":2"));
  b2sd_events_free(ev);
}

/* A read fills whole events up to its room; the rest come next. */
static void test_room(void **state) {
  (void)state;
  b2sd_events *ev = b2sd_events_new(64, EPOCH);
  static char big[B2SD_EVENT_DATA_MAX + 1];
  memset(big, 'x', B2SD_EVENT_DATA_MAX);
  for (int i = 0; i < 5; i++)
    assert_int_equal(b2sd_events_post(ev, "progress", "", big), i + 1);
  b2sd_events_cursor c;
  b2sd_events_cursor_init(ev, &c, "5f0c2a9e4b7d1c3a-0", NULL);
  int events = 0;
  size_t n;
  while ((n = b2sd_events_read(ev, &c, out, B2SD_EVENT_TEXT_MAX)) > 0) {
    assert_true(n <= B2SD_EVENT_TEXT_MAX);
    out[n] = '\0';
    events += count("id: ");
  }
  assert_int_equal(events, 5);
  /* posts that break a rule change nothing */
  char over[B2SD_EVENT_DATA_MAX + 2];
  memset(over, 'x', sizeof over - 1);
  over[sizeof over - 1] = '\0';
  assert_int_equal(b2sd_events_post(ev, "progress", "", over), B2S_E_ARG);
  assert_int_equal(b2sd_events_post(ev, "progress", "", "{\n}"), B2S_E_ARG);
  assert_int_equal(b2sd_events_post(ev, "Progress", "", "{}"), B2S_E_ARG);
  assert_int_equal(b2sd_events_post(ev, "", "", "{}"), B2S_E_ARG);
  assert_int_equal(b2sd_events_newest(ev), 5);
  b2sd_events_free(ev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ids),    cmocka_unit_test(test_replay),
      cmocka_unit_test(test_lost),   cmocka_unit_test(test_filter),
      cmocka_unit_test(test_room),
  };
  return ts_run_tests(tests, NULL, NULL);
}
