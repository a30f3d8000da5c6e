/* The daemon's decisions, without a daemon: a producer handle's ledger
 * (credits and acknowledgement levels, daemon/sessions/ledger.c), the stream
 * writer's group commits (daemon/streams/groupcommit.c), read admission and its
 * byte budget (daemon/sessions/readbudget.c), and the configuration-to-wire maps
 * (daemon/ingest/wiremap.c), the escaping of log lines (daemon/base/log.c), the
 * ownership of frame numbers among ranks (daemon/streams/rank.c).  Plain
 * data in, decisions out: every case sets up
 * the numbers the daemon would see and checks the exact outcome. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "b2s_config.h"
#include "drain.h"
#include "fdheadroom.h"
#include "groupcommit.h"
#include "ledger.h"
#include "log.h"
#include "order.h"
#include "rank.h"
#include "readbudget.h"
#include "b2s_wire.h"
#include "wiremap.h"
#include "ts.h"

#define MS (UINT64_C(1000000))

/* ---- ledger: credits ------------------------------------------------------ */

/* Push n buffers as the accept path does: spend a credit, record it. */
static void push_queued(b2sd_ledger *l, uint64_t first_seq, int n) {
  for (int i = 0; i < n; i++) {
    assert_true(b2sd_ledger_spend(l));
    assert_int_equal(b2sd_ledger_push(l, B2SD_ENTRY_QUEUED, first_seq + i), 0);
  }
}

static void test_ledger_spend(void **state) {
  (void)state;
  b2sd_ledger l;
  b2sd_ledger_init(&l, B2S_WIRE_LEVEL_RECEIVED, B2S_WIRE_POLICY_BLOCK, 2);
  assert_true(b2sd_ledger_spend(&l));
  assert_true(b2sd_ledger_spend(&l));
  assert_false(b2sd_ledger_spend(&l));   /* no credit: the handle closes */
  assert_int_equal(l.avail, 0);
  b2sd_ledger_fini(&l);
}

static void test_ledger_block_credits_follow_taken(void **state) {
  (void)state;
  b2sd_ledger l;
  b2sd_ledger_init(&l, B2S_WIRE_LEVEL_WRITTEN, B2S_WIRE_POLICY_BLOCK, 4);
  push_queued(&l, 10, 3);              /* ids 0..2, seqs 10..12 */
  assert_int_equal(l.next_id, 3);
  assert_int_equal(l.avail, 1);
  b2sd_ledger_credit(&l, 10, true);    /* nothing taken yet */
  assert_int_equal(l.owed, 0);
  assert_false(b2sd_ledger_receipt_due(&l, false));
  b2sd_ledger_credit(&l, 11, true);    /* seq 10 taken */
  assert_int_equal(l.ncredited, 1);
  assert_int_equal(l.owed, 1);
  assert_true(b2sd_ledger_receipt_due(&l, false));
  b2sd_ledger_receipt_sent(&l, 3);
  assert_int_equal(l.owed, 0);
  assert_int_equal(l.avail, 2);
  assert_int_equal(l.acked[B2S_WIRE_LEVEL_RECEIVED], 3);
  /* taken, but memory has no room: the credits wait */
  b2sd_ledger_credit(&l, 13, false);
  assert_int_equal(l.owed, 0);
  b2sd_ledger_credit(&l, 13, true);
  assert_int_equal(l.ncredited, 3);
  assert_int_equal(l.owed, 2);
  b2sd_ledger_fini(&l);
}

static void test_ledger_drop_policies_credit_at_once(void **state) {
  (void)state;
  b2sd_ledger l;
  b2sd_ledger_init(&l, B2S_WIRE_LEVEL_RECEIVED, B2S_WIRE_POLICY_DROP_NEWEST,
                   8);
  push_queued(&l, 0, 2);
  b2sd_ledger_credit(&l, 0, false);    /* neither taken nor memory */
  assert_int_equal(l.owed, 2);
  b2sd_ledger_fini(&l);
}

static void test_ledger_settled_entries_credit_under_block(void **state) {
  (void)state;
  b2sd_ledger l;
  b2sd_ledger_init(&l, B2S_WIRE_LEVEL_WRITTEN, B2S_WIRE_POLICY_BLOCK, 8);
  assert_int_equal(b2sd_ledger_push(&l, B2SD_ENTRY_DROPPED, 0), 0);
  assert_int_equal(b2sd_ledger_push(&l, B2SD_ENTRY_REJECTED, 0), 0);
  assert_int_equal(b2sd_ledger_push(&l, B2SD_ENTRY_QUEUED, 5), 0);
  assert_int_equal(b2sd_ledger_push(&l, B2SD_ENTRY_DROPPED, 0), 0);
  b2sd_ledger_credit(&l, 0, true);
  /* in entry order: the queued one holds back the dropped one behind it */
  assert_int_equal(l.owed, 2);
  assert_int_equal(l.ncredited, 2);
  b2sd_ledger_credit(&l, 6, true);
  assert_int_equal(l.owed, 4);
  b2sd_ledger_fini(&l);
}

static void test_ledger_drop_oldest_marks_entry(void **state) {
  (void)state;
  b2sd_ledger l;
  b2sd_ledger_init(&l, B2S_WIRE_LEVEL_WRITTEN, B2S_WIRE_POLICY_BLOCK, 8);
  push_queued(&l, 7, 2);               /* ids 0, 1 */
  assert_null(b2sd_ledger_entry(&l, 2));
  b2sd_entry *e = b2sd_ledger_entry(&l, 0);
  assert_non_null(e);
  assert_int_equal(e->seq, 7);
  e->state = B2SD_ENTRY_DROPPED;       /* stolen from the queue */
  b2sd_ledger_credit(&l, 0, true);
  assert_int_equal(l.owed, 1);
  /* settled at level written although seq 7 was never written */
  assert_int_equal(b2sd_ledger_upto(&l, 0, 0), 1);
  b2sd_ledger_fini(&l);
}

/* ---- ledger: acknowledgement levels ---------------------------------------- */

static void test_ledger_receipt_due(void **state) {
  (void)state;
  b2sd_ledger l;
  b2sd_ledger_init(&l, B2S_WIRE_LEVEL_RECEIVED, B2S_WIRE_POLICY_BLOCK, 8);
  push_queued(&l, 0, 1);
  /* level received: new buffers are news even without credits */
  assert_true(b2sd_ledger_receipt_due(&l, false));
  b2sd_ledger_receipt_sent(&l, 1);
  assert_false(b2sd_ledger_receipt_due(&l, false));
  b2sd_ledger_fini(&l);

  b2sd_ledger_init(&l, B2S_WIRE_LEVEL_DURABLE, B2S_WIRE_POLICY_BLOCK, 8);
  push_queued(&l, 0, 1);
  /* above it the producer waits for nothing a bare receipt says... */
  assert_false(b2sd_ledger_receipt_due(&l, false));
  /* ...unless it closes */
  assert_true(b2sd_ledger_receipt_due(&l, true));
  b2sd_ledger_fini(&l);
}

static void test_ledger_upto_by_level(void **state) {
  (void)state;
  b2sd_ledger l;
  b2sd_ledger_init(&l, B2S_WIRE_LEVEL_WRITTEN, B2S_WIRE_POLICY_BLOCK, 8);
  push_queued(&l, 0, 2);               /* ids 0, 1: seqs 0, 1 */
  assert_int_equal(b2sd_ledger_push(&l, B2SD_ENTRY_REJECTED, 0), 0);
  push_queued(&l, 2, 1);               /* id 3: seq 2 */
  assert_int_equal(b2sd_ledger_upto(&l, 0, 0), 0);
  assert_int_equal(b2sd_ledger_upto(&l, 1, 0), 1);
  assert_int_equal(b2sd_ledger_upto(&l, 2, 0), 3);  /* the rejected one too */
  assert_int_equal(b2sd_ledger_upto(&l, 3, 0), 4);
  l.ack_level = B2S_WIRE_LEVEL_DURABLE;
  assert_int_equal(b2sd_ledger_upto(&l, 3, 1), 1);
  l.ack_level = B2S_WIRE_LEVEL_RECEIVED;
  assert_int_equal(b2sd_ledger_upto(&l, 0, 0), 4);
  b2sd_ledger_fini(&l);
}

static void test_ledger_level_ack_prune_settle(void **state) {
  (void)state;
  b2sd_ledger l;
  b2sd_ledger_init(&l, B2S_WIRE_LEVEL_WRITTEN, B2S_WIRE_POLICY_BLOCK, 8);
  push_queued(&l, 0, 3);
  uint64_t u = b2sd_ledger_upto(&l, 2, 0);
  assert_int_equal(u, 2);
  assert_true(b2sd_ledger_level_due(&l, u));
  b2sd_ledger_level_sent(&l, u);
  assert_int_equal(l.acked[B2S_WIRE_LEVEL_WRITTEN], 2);
  assert_false(b2sd_ledger_level_due(&l, u));
  /* no credit came back yet: nothing may be forgotten */
  b2sd_ledger_prune(&l, u);
  assert_int_equal(l.first_id, 0);
  assert_int_equal(l.qlen, 3);
  b2sd_ledger_credit(&l, 3, true);
  b2sd_ledger_prune(&l, u);
  assert_int_equal(l.first_id, 2);
  assert_int_equal(l.qlen, 1);
  assert_int_equal(l.ncredited, 1);
  assert_null(b2sd_ledger_entry(&l, 1));
  assert_int_equal(b2sd_ledger_entry(&l, 2)->seq, 2);
  assert_false(b2sd_ledger_settled(&l, u));
  u = b2sd_ledger_upto(&l, 3, 0);
  assert_int_equal(u, 3);
  assert_true(b2sd_ledger_settled(&l, u));
  /* level received never sends a second ACK */
  l.ack_level = B2S_WIRE_LEVEL_RECEIVED;
  assert_false(b2sd_ledger_level_due(&l, 100));
  b2sd_ledger_fini(&l);
}

static void test_ledger_ring_wraps_and_grows(void **state) {
  (void)state;
  b2sd_ledger l;
  b2sd_ledger_init(&l, B2S_WIRE_LEVEL_RECEIVED, B2S_WIRE_POLICY_DROP_OLDEST,
                   100);
  push_queued(&l, 1000, 10);
  b2sd_ledger_credit(&l, 0, true);
  b2sd_ledger_prune(&l, b2sd_ledger_upto(&l, 0, 0));
  assert_int_equal(l.qlen, 0);
  assert_int_equal(l.first_id, 10);
  push_queued(&l, 2000, 30);           /* wraps the ring of 16, then grows */
  assert_int_equal(l.qlen, 30);
  assert_true(l.qcap >= 30);
  for (uint64_t id = 10; id < 40; id++)
    assert_int_equal(b2sd_ledger_entry(&l, id)->seq, 2000 + id - 10);
  b2sd_ledger_fini(&l);
}

/* ---- configuration to wire ----------------------------------------------- */

static void test_wiremap(void **state) {
  (void)state;
  assert_int_equal(b2sd_wire_ack_level(B2S_ACK_RECEIPT), 1);
  assert_int_equal(b2sd_wire_ack_level(B2S_ACK_WRITE), 2);
  assert_int_equal(b2sd_wire_ack_level(B2S_ACK_FSYNC), 3);
  assert_int_equal(b2sd_wire_ack_level(77), B2S_WIRE_LEVEL_DURABLE);
  assert_int_equal(b2sd_wire_policy(B2S_BP_BLOCK), 1);
  assert_int_equal(b2sd_wire_policy(B2S_BP_DROP_NEWEST), 2);
  assert_int_equal(b2sd_wire_policy(B2S_BP_DROP_OLDEST), 3);
  assert_int_equal(b2sd_wire_policy(-1), B2S_WIRE_POLICY_BLOCK);
}

/* ---- group commit ---------------------------------------------------------- */

static const b2s_stream_durability dur_write = {
    .ack = B2S_ACK_WRITE, .group_count = 4, .group_interval_ms = 10};
static const b2s_stream_durability dur_fsync = {
    .ack = B2S_ACK_FSYNC, .group_count = 4, .group_interval_ms = 10};

static void test_group_append_full_deadline(void **state) {
  (void)state;
  b2sd_group g = {0};
  b2sd_group_appended(&g, 1000);
  b2sd_group_appended(&g, 5000);
  assert_int_equal(g.pending, 2);
  assert_int_equal(g.pending_since, 1000);   /* the first of the group */
  assert_int_equal(b2sd_group_deadline(&g, &dur_write), 1000 + 10 * MS);
  assert_false(b2sd_group_full(&g, &dur_write));
  b2sd_group_appended(&g, 6000);
  b2sd_group_appended(&g, 7000);
  assert_true(b2sd_group_full(&g, &dur_write));
  assert_false(b2sd_group_fsync(&dur_write));
  assert_true(b2sd_group_fsync(&dur_fsync));
}

static void test_group_waits_for_interval(void **state) {
  (void)state;
  b2sd_group g = {.next_seq = 5, .written = 3, .durable = 3, .pending = 2,
                  .pending_since = 1000};
  b2sd_commit c = b2sd_group_decide(&g, &dur_write, 0, false,
                                    1000 + 10 * MS - 1);
  assert_false(c.commit);
  c = b2sd_group_decide(&g, &dur_write, 0, false, 1000 + 10 * MS);
  assert_true(c.commit);
  assert_false(c.durable);
  c = b2sd_group_decide(&g, &dur_fsync, 0, false, 1000 + 10 * MS);
  assert_true(c.commit);
  assert_true(c.durable);
}

static void test_group_tombstones_publish_at_once(void **state) {
  (void)state;
  b2sd_group g = {.next_seq = 5, .written = 3, .durable = 3};
  b2sd_commit c = b2sd_group_decide(&g, &dur_write, 0, false, 0);
  assert_true(c.commit);
  assert_false(c.durable);
  g.written = 5;                       /* nothing new at all */
  c = b2sd_group_decide(&g, &dur_write, 0, false, UINT64_MAX);
  assert_false(c.commit);
}

static void test_group_flush(void **state) {
  (void)state;
  b2sd_group g = {.next_seq = 5, .written = 3, .durable = 3, .pending = 2,
                  .pending_since = 1000};
  /* every seq below 5 is here: commit durably before the deadline */
  b2sd_commit c = b2sd_group_decide(&g, &dur_write, 5, false, 1000);
  assert_true(c.commit);
  assert_true(c.durable);
  /* seq 5 not appended yet: wait for it */
  c = b2sd_group_decide(&g, &dur_write, 6, false, 1000);
  assert_false(c.commit);
  /* written already, not durable: sync only */
  b2sd_group w = {.next_seq = 5, .written = 5, .durable = 3};
  c = b2sd_group_decide(&w, &dur_write, 5, false, 0);
  assert_true(c.commit);
  assert_true(c.durable);
  w.durable = 5;                       /* durable already */
  c = b2sd_group_decide(&w, &dur_write, 5, false, 0);
  assert_false(c.commit);
}

static void test_group_stop_commits_durably(void **state) {
  (void)state;
  b2sd_group g = {.next_seq = 4, .written = 3, .durable = 3, .pending = 1,
                  .pending_since = 1000};
  b2sd_commit c = b2sd_group_decide(&g, &dur_write, 0, true, 1000);
  assert_true(c.commit);
  assert_true(c.durable);
}

static void test_group_wait(void **state) {
  (void)state;
  b2sd_group g = {0};
  uint64_t ns = 12345;
  assert_false(b2sd_group_wait(&g, 500, 200, &ns));   /* nothing pending */
  assert_int_equal(ns, 12345);
  g.pending = 1;
  assert_true(b2sd_group_wait(&g, 500, 200, &ns));
  assert_int_equal(ns, 300);
  assert_true(b2sd_group_wait(&g, 500, 600, &ns));    /* overdue */
  assert_int_equal(ns, 0);
}

/* ---- read admission -------------------------------------------------------- */

static void test_read_counts(void **state) {
  (void)state;
  assert_int_equal(b2sd_read_budget(INT64_C(1) << 30), INT64_C(1) << 28);
  assert_int_equal(b2sd_read_result_bytes(true, 4000, 900), 4000);
  assert_int_equal(b2sd_read_result_bytes(false, 4000, 900), 900);
  assert_true(b2sd_read_session_headroom(B2SD_READS_SESSION - 1));
  assert_false(b2sd_read_session_headroom(B2SD_READS_SESSION));
  assert_true(b2sd_read_follow_headroom(B2SD_READS_FOLLOW - 1));
  assert_false(b2sd_read_follow_headroom(B2SD_READS_FOLLOW));
  assert_true(b2sd_read_count_headroom(B2SD_READS_MAX - 1));
  assert_false(b2sd_read_count_headroom(B2SD_READS_MAX));
}

static void test_read_admit_bytes(void **state) {
  (void)state;
  /* budget 1000: a session's share is 250 */
  assert_int_equal(b2sd_read_admit_bytes(1000, 0, 0, 5000), B2SD_ADMIT);
  assert_int_equal(b2sd_read_admit_bytes(1000, 100, 0, 900), B2SD_ADMIT);
  assert_int_equal(b2sd_read_admit_bytes(1000, 100, 0, 901),
                   B2SD_ADMIT_WAIT_DAEMON);
  assert_int_equal(b2sd_read_admit_bytes(1000, 200, 100, 150), B2SD_ADMIT);
  assert_int_equal(b2sd_read_admit_bytes(1000, 200, 100, 151),
                   B2SD_ADMIT_WAIT_SESSION);
  /* both lack: the daemon's lack is the one reported */
  assert_int_equal(b2sd_read_admit_bytes(1000, 900, 100, 200),
                   B2SD_ADMIT_WAIT_DAEMON);
  /* a session holding nothing takes more than its share */
  assert_int_equal(b2sd_read_admit_bytes(1000, 500, 0, 400), B2SD_ADMIT);
}

/* ---- log lines ------------------------------------------------------------ */

static void expect_escaped(const char *in, size_t len, const char *want) {
  char out[256];
  size_t n = b2sd_log_escape(out, sizeof out, in, len);
  assert_string_equal(out, want);
  assert_int_equal(n, strlen(want));
}

static void test_log_escape(void **state) {
  (void)state;
  expect_escaped("plain text", 10, "plain text");
  expect_escaped("a\nb\r\t", 5, "a\\x0ab\\x0d\\x09");
  expect_escaped("\x1b[31m\x7f", 6, "\\x1b[31m\\x7f");
  /* well-formed UTF-8 stays: 2, 3 and 4 byte sequences */
  expect_escaped("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9,
                 "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  /* not UTF-8: a lone byte, overlong, a surrogate, cut short, too high */
  expect_escaped("\xff", 1, "\\xff");
  expect_escaped("\xc0\xaf", 2, "\\xc0\\xaf");
  expect_escaped("\xed\xa0\x80", 3, "\\xed\\xa0\\x80");
  expect_escaped("\xe2\x82", 2, "\\xe2\\x82");
  expect_escaped("\xf4\x90\x80\x80", 4, "\\xf4\\x90\\x80\\x80");
  expect_escaped("a\0b", 3, "a\\x00b");
  /* a full buffer cuts between escapes, never inside one */
  char out[7];
  assert_int_equal(b2sd_log_escape(out, sizeof out, "\n\n", 2), 4);
  assert_string_equal(out, "\\x0a");
  assert_int_equal(b2sd_log_escape(out, sizeof out, "abc\xe2\x82\xac", 6), 6);
  assert_string_equal(out, "abc\xe2\x82\xac");
  assert_int_equal(b2sd_log_escape(out, 6, "abc\xe2\x82\xac", 6), 3);
  assert_string_equal(out, "abc");
}

/* ---- the stop after SIGTERM (drain.c) ------------------------------------- */

static void test_drain_waits_for_disk_not_peers(void **state) {
  (void)state;
  const uint64_t s = 1000000000u;
  b2sd_drain d = {0};
  /* not durable: wait, up to the disk bound */
  assert_int_equal(b2sd_drain_next(&d, 5 * s, false, false), B2SD_DRAIN_WAIT);
  assert_int_equal(b2sd_drain_next(&d, 5 * s + B2SD_DRAIN_DISK_NS, false,
                                   true), B2SD_DRAIN_WAIT);
  assert_int_equal(b2sd_drain_next(&d, 6 * s + B2SD_DRAIN_DISK_NS, false,
                                   false), B2SD_DRAIN_STUCK);
  /* durable, nothing held: done at once */
  b2sd_drain e = {0};
  assert_int_equal(b2sd_drain_next(&e, s, true, false), B2SD_DRAIN_DONE);
  /* durable with replies held: a grace counted from durability, then
   * the replies are abandoned */
  b2sd_drain f = {0};
  assert_int_equal(b2sd_drain_next(&f, s, false, true), B2SD_DRAIN_WAIT);
  assert_int_equal(b2sd_drain_next(&f, 3 * s, true, true), B2SD_DRAIN_WAIT);
  assert_int_equal(b2sd_drain_next(&f, 3 * s + B2SD_DRAIN_REPLY_NS - 1, true,
                                   true), B2SD_DRAIN_WAIT);
  assert_int_equal(b2sd_drain_next(&f, 3 * s + B2SD_DRAIN_REPLY_NS, true,
                                   true), B2SD_DRAIN_ABANDON);
  /* a peer that catches up within the grace ends it cleanly */
  b2sd_drain g = {0};
  assert_int_equal(b2sd_drain_next(&g, s, true, true), B2SD_DRAIN_WAIT);
  assert_int_equal(b2sd_drain_next(&g, s + 10, true, false), B2SD_DRAIN_DONE);
}

static void test_fd_headroom_keeps_the_reserve(void **state) {
  (void)state;
  long lim = 1024, r = B2SD_FD_RESERVE;
  assert_true(b2sd_fd_headroom(lim, 100, B2SD_FD_PER_STREAM, r));
  /* exactly the reserve left after it: still fits */
  assert_true(b2sd_fd_headroom(lim, lim - r - 4, 4, r));
  assert_false(b2sd_fd_headroom(lim, lim - r - 3, 4, r));
  assert_false(b2sd_fd_headroom(lim, lim, 1, 0));
  /* the reserves shrink from streams to sessions to connections, so a
   * connection is still taken where a stream no longer is */
  long open = lim - B2SD_FD_RESERVE_SESSION;
  assert_false(b2sd_fd_headroom(lim, open, B2SD_FD_PER_STREAM, r));
  assert_true(b2sd_fd_headroom(lim, open, 0, B2SD_FD_RESERVE_SESSION));
  assert_true(b2sd_fd_headroom(lim, open, 0, B2SD_FD_RESERVE_ACCEPT));
  /* an unknown count (no descriptor left to count them): no room */
  assert_false(b2sd_fd_headroom(lim, -1, 0, 0));
}

/* The reorder window: duplicates, late frames, frames passed as gaps,
 * the far jump bound, the drain. */
static void test_order_window(void **state) {
  (void)state;
  b2sd_window w;
  assert_int_equal(b2sd_window_init(&w, 4), 0);
  assert_int_equal(b2sd_window_check(&w, 10), 0);
  b2sd_window_take(&w, 10);                 /* the first: stored */
  assert_int_equal(b2sd_window_check(&w, 12), 0);
  b2sd_window_take(&w, 12);                 /* held: 11 missing */
  assert_int_equal(b2sd_window_check(&w, 12), B2S_E_FRAME_DUP);
  assert_int_equal(b2sd_window_check(&w, 10), B2S_E_FRAME_DUP);
  assert_int_equal(b2sd_window_check(&w, 9), B2S_E_FRAME_LATE);
  b2sd_window_take(&w, 11);                 /* 11 and 12 go */
  assert_true(w.next == 13);
  b2sd_window_take(&w, 18);                 /* passes 13, 14 */
  assert_true(w.next == 15);
  assert_int_equal(b2sd_window_check(&w, 14), B2S_E_FRAME_LATE);
  assert_int_equal(b2sd_window_check(&w, 12), B2S_E_FRAME_DUP);
  assert_int_equal(b2sd_window_check(&w, 18), B2S_E_FRAME_DUP);
  /* next 15, window 4: 15 + 4 + JUMP_MAX is the farthest allowed */
  assert_int_equal(b2sd_window_check(&w, 16 + 4 + B2SD_ORDER_JUMP_MAX),
                   B2S_E_ARG);
  assert_int_equal(b2sd_window_check(&w, 15 + 4 + B2SD_ORDER_JUMP_MAX), 0);
  b2sd_window_drain(&w);                    /* 15-17 gaps, 18 stored */
  assert_true(w.next == 19);
  assert_int_equal(b2sd_window_check(&w, 17), B2S_E_FRAME_LATE);
  assert_int_equal(b2sd_window_check(&w, 18), B2S_E_FRAME_DUP);
  assert_int_equal(b2sd_window_check(&w, 19), 0);
  b2sd_window_fini(&w);
}

/* ---- ranks of a distributed stream ------------------------------------------ */

/* A buffer the writer could not store after all: rejected by its seq, so
 * the ACK at the handle's level passes it without claiming it written. */
static void test_ledger_reject_seq(void **state) {
  (void)state;
  b2sd_ledger l;
  b2sd_ledger_init(&l, B2S_WIRE_LEVEL_WRITTEN, B2S_WIRE_POLICY_BLOCK, 8);
  push_queued(&l, 100, 4);             /* ids 0..3, seqs 100..103 */
  assert_int_equal(b2sd_ledger_reject_seq(&l, 102), 2);
  assert_int_equal(b2sd_ledger_reject_seq(&l, 102), -1);   /* once */
  assert_int_equal(b2sd_ledger_reject_seq(&l, 99), -1);
  assert_int_equal(b2sd_ledger_reject_seq(&l, 104), -1);
  assert_int_equal(b2sd_ledger_entry(&l, 2)->state, B2SD_ENTRY_REJECTED);
  /* written below 102: ids 0, 1 settled; 2 is settled by its ERROR */
  assert_int_equal(b2sd_ledger_upto(&l, 102, 100), 3);
  assert_int_equal(b2sd_ledger_upto(&l, 101, 100), 1);
  assert_int_equal(b2sd_ledger_upto(&l, 104, 100), 4);
  b2sd_ledger_fini(&l);
}


static void test_rank_owner_and_check(void **state) {
  (void)state;
  b2sd_rank k = {.rank = 1, .nranks = 3, .frames_per_block = 4};
  int32_t want[] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0};
  for (uint64_t f = 0; f < 13; f++)
    assert_int_equal(b2sd_rank_owner(&k, f), want[f]);
  b2s_errdetail ed;
  int32_t owner = -1;
  assert_int_equal(b2sd_rank_check(&k, true, 5, &owner, &ed), 0);
  assert_int_equal(owner, 1);
  assert_string_equal(ed.text, "");
  assert_int_equal(b2sd_rank_check(&k, true, 8, &owner, &ed),
                   B2S_E_WRONG_RANK);
  assert_int_equal(ed.code, B2S_E_WRONG_RANK);
  assert_int_equal(owner, 2);
  assert_string_equal(ed.text, "frame number 8 belongs to rank 2, not to this "
                           "rank 1");
  assert_int_equal(b2sd_rank_check(&k, false, 5, &owner, &ed),
                   B2S_E_NEED_FRAME);
  assert_string_equal(ed.text, "a distributed stream needs a frame number with "
                           "every buffer (rank 1 of 3)");
  assert_int_equal(b2sd_rank_check(&k, true, B2SD_RANK_FRAME_LIMIT, &owner,
                                   &ed), B2S_E_ARG);
  assert_int_equal(b2sd_rank_check(&k, true, B2SD_RANK_FRAME_LIMIT - 1,
                                   NULL, NULL),
                   b2sd_rank_owner(&k, B2SD_RANK_FRAME_LIMIT - 1) == 1
                       ? 0 : B2S_E_WRONG_RANK);
  /* one rank owns everything; blocks of one alternate */
  b2sd_rank one = {.rank = 0, .nranks = 1, .frames_per_block = 1};
  assert_int_equal(b2sd_rank_check(&one, true, 123456789, NULL, NULL), 0);
  b2sd_rank two = {.rank = 1, .nranks = 2, .frames_per_block = 1};
  assert_int_equal(b2sd_rank_check(&two, true, 3, NULL, NULL), 0);
  assert_int_equal(b2sd_rank_check(&two, true, 4, NULL, NULL),
                   B2S_E_WRONG_RANK);
  /* the largest frames_per_block keeps the first 2^31-1 frames on rank 0 */
  b2sd_rank big = {.rank = 0, .nranks = 1024, .frames_per_block = INT32_MAX};
  assert_int_equal(b2sd_rank_owner(&big, INT32_MAX - 1), 0);
  assert_int_equal(b2sd_rank_owner(&big, INT32_MAX), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ledger_spend),
      cmocka_unit_test(test_ledger_block_credits_follow_taken),
      cmocka_unit_test(test_ledger_drop_policies_credit_at_once),
      cmocka_unit_test(test_ledger_settled_entries_credit_under_block),
      cmocka_unit_test(test_ledger_drop_oldest_marks_entry),
      cmocka_unit_test(test_ledger_receipt_due),
      cmocka_unit_test(test_ledger_upto_by_level),
      cmocka_unit_test(test_ledger_level_ack_prune_settle),
      cmocka_unit_test(test_ledger_ring_wraps_and_grows),
      cmocka_unit_test(test_wiremap),
      cmocka_unit_test(test_group_append_full_deadline),
      cmocka_unit_test(test_group_waits_for_interval),
      cmocka_unit_test(test_group_tombstones_publish_at_once),
      cmocka_unit_test(test_group_flush),
      cmocka_unit_test(test_group_stop_commits_durably),
      cmocka_unit_test(test_group_wait),
      cmocka_unit_test(test_read_counts),
      cmocka_unit_test(test_read_admit_bytes),
      cmocka_unit_test(test_log_escape),
      cmocka_unit_test(test_drain_waits_for_disk_not_peers),
      cmocka_unit_test(test_fd_headroom_keeps_the_reserve),
      cmocka_unit_test(test_order_window),
      cmocka_unit_test(test_ledger_reject_seq),
      cmocka_unit_test(test_rank_owner_and_check),
  };
  return ts_run_named("daemon logic", tests, NULL, NULL);
}
