/* Shared-memory ingest of the real b2streamd: producers fill slots through
 * the client library (and a raw client for hostile notices), workers
 * compress straight from the slots; slots always come back, a producer
 * SIGKILLed mid-slot is reclaimed, segments never outlive their handle or
 * a daemon that died.  Frames are checked byte for byte. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "b2s_errors.h"
#include "b2stream_client.h"
#include "b2s_frame.h"
#include "daemon_harness.h"
#include "b2s_shm.h"

#include <zmq.h>

/* Segments of daemon pid in /dev/shm ("b2s-d-<pid>-<n>"). */
static int segments_of(pid_t pid) {
  char prefix[64];
  int n = snprintf(prefix, sizeof prefix, "b2s-d-%d-", (int)pid);
  DIR *d = opendir("/dev/shm");
  assert_non_null(d);
  int count = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    count += strncmp(de->d_name, prefix, (size_t)n) == 0;
  closedir(d);
  return count;
}

/* Wait until the daemon holds `want` segments (sweeps run every 200 ms). */
static void wait_segments(pid_t pid, int want) {
  for (int i = 0; i < WAIT_MS / 10 && segments_of(pid) != want; i++)
    usleep(10000);
  assert_int_equal(segments_of(pid), want);
}

static b2sc_session *connect_env(env *e) {
  b2sc_session *s = NULL;
  assert_int_equal(b2sc_connect(e->sock, "shm-test", &s), 0);
  b2sc_session_info info;
  assert_int_equal(b2sc_session_info_get(s, &info), 0);
  assert_true(info.shm);         /* offered on ipc:// */
  return s;
}

/* Send buffers [from, to) of content seed+i: through a slot, or every
 * `every`-th one as DATA when every > 0. */
static void shm_send_range(b2sc_producer *p, int from, int to, size_t base,
                           int every) {
  for (int i = from; i < to; i++) {
    size_t len = buf_len(i, base);
    if (every > 0 && i % every == 0) {
      uint8_t *b = malloc(len);
      buf_fill(b, len, i);
      assert_int_equal(b2sc_send(p, b, len, WAIT_MS), 0);
      free(b);
      continue;
    }
    uint32_t slot;
    void *ptr;
    size_t cap;
    assert_int_equal(b2sc_shm_acquire(p, WAIT_MS, &slot, &ptr, &cap), 0);
    assert_true(cap >= len);
    buf_fill(ptr, len, i);
    assert_int_equal(b2sc_shm_submit(p, slot, len), 0);
  }
}

static void expect_frame(env *e, const char *stream, int n, size_t base) {
  prod want = {.n = n, .base = base};
  char path[400];
  frame_path(e, stream, path, sizeof path);
  check_frame(path, &want, n);
}

/* Many buffers through 3 slots, mixed with DATA on the same handle: every
 * slot comes back (or the producer would wait forever), all bytes land in
 * order, and the segment is gone once the handle closes. */
static void test_shm_stream(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  b2sc_session *s = connect_env(&e);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "w", NULL, &p), 0);
  assert_int_equal(b2sc_shm_attach(p, 3, 4096), 0);
  wait_segments(e.pid, 1);
  shm_send_range(p, 0, 250, 1000, 7);
  assert_int_equal(b2sc_flush(p, WAIT_MS), 0);
  b2sc_producer_stats ps;
  assert_int_equal(b2sc_producer_stats_get(p, &ps), 0);
  assert_int_equal(ps.sent, 250);
  assert_int_equal(ps.durable, 250);
  assert_int_equal(ps.rejected, 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  wait_segments(e.pid, 0);
  b2sc_close(s);
  expect_frame(&e, "w", 250, 1000);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  expect_frame(&e, "w", 250, 1000);
  env_fini(&e);
}

/* Two shared-memory producers on one stream each get their own segment;
 * drop-newest over shared memory frees the dropped buffers' slots. */
static void test_shm_two_producers_and_drops(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  b2sc_session *s1 = connect_env(&e), *s2 = connect_env(&e);
  b2sc_producer *p1, *p2, *pd;
  assert_int_equal(b2sc_producer_open(s1, "w", NULL, &p1), 0);
  assert_int_equal(b2sc_producer_open(s2, "f", NULL, &p2), 0);
  assert_int_equal(b2sc_shm_attach(p1, 2, 8192), 0);
  assert_int_equal(b2sc_shm_attach(p2, 2, 8192), 0);
  assert_int_equal(b2sc_shm_attach(p2, 2, 8192), B2S_E_BUSY);
  wait_segments(e.pid, 2);
  for (int r = 0; r < 10; r++) {   /* interleaved */
    shm_send_range(p1, r * 20, r * 20 + 20, 3000, 0);
    shm_send_range(p2, r * 20, r * 20 + 20, 3000, 0);
  }
  assert_int_equal(b2sc_producer_close(p1), 0);
  assert_int_equal(b2sc_producer_close(p2), 0);
  /* drop-newest with queue_depth 1: some buffers are dropped, and each
   * dropped slot is free again or the loop would stall */
  assert_int_equal(b2sc_producer_open(s1, "dn", NULL, &pd), 0);
  assert_int_equal(b2sc_shm_attach(pd, 4, 256 * 1024), 0);
  shm_send_range(pd, 0, 60, 200000, 0);
  int rc = b2sc_flush(pd, WAIT_MS);
  assert_true(rc == 0 || rc == B2S_E_DROPPED);
  b2sc_producer_stats ps;
  assert_int_equal(b2sc_producer_stats_get(pd, &ps), 0);
  assert_int_equal(ps.sent, 60);
  assert_int_equal(ps.acked, 60);
  assert_int_equal(ps.rejected, 0);
  b2sc_producer_close(pd);
  wait_segments(e.pid, 0);
  b2sc_close(s1);
  b2sc_close(s2);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  expect_frame(&e, "w", 200, 3000);
  expect_frame(&e, "f", 200, 3000);
  b2s_frame *f;
  b2s_frame_error err;
  char path[400];
  frame_path(&e, "dn", path, sizeof path);
  assert_int_equal(b2s_frame_open(path, &f, &err), 0);
  assert_int_equal(b2s_frame_nchunks(f), (int64_t)(60 - ps.dropped));
  b2s_frame_free(f);
  env_fini(&e);
}

/* Child: write `done` buffers durably, then die with a slot half filled. */
static void child_produce_and_die(env *e, int done) {
  b2sc_session *s;
  b2sc_producer *p;
  if (b2sc_connect(e->sock, "victim", &s) < 0 ||
      b2sc_producer_open(s, "w", NULL, &p) < 0 || b2sc_shm_attach(p, 4, 4096) < 0)
    _exit(2);
  for (int i = 0; i < done; i++) {
    uint32_t slot;
    void *ptr;
    size_t len = buf_len(i, 1000);
    if (b2sc_shm_acquire(p, WAIT_MS, &slot, &ptr, NULL) < 0)
      _exit(3);
    buf_fill(ptr, len, i);
    if (b2sc_shm_submit(p, slot, len) < 0)
      _exit(4);
  }
  if (b2sc_flush(p, WAIT_MS) < 0)
    _exit(5);
  uint32_t slot;
  void *ptr;
  if (b2sc_shm_acquire(p, WAIT_MS, &slot, &ptr, NULL) < 0)
    _exit(6);
  memset(ptr, 0xAB, 500);          /* mid-slot */
  raise(SIGKILL);
  _exit(7);
}

/* A producer SIGKILLed while filling a slot: the daemon notices, reclaims
 * its slots and removes its segment, keeps what it flushed, and serves the
 * next producer. */
static void test_shm_producer_killed(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0)
    child_produce_and_die(&e, 40);
  int st;
  assert_int_equal(waitpid(child, &st, 0), child);
  assert_true(WIFSIGNALED(st));
  assert_int_equal(WTERMSIG(st), SIGKILL);
  wait_segments(e.pid, 0);
  b2sc_session *s = connect_env(&e);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "w", NULL, &p), 0);
  assert_int_equal(b2sc_shm_attach(p, 2, 4096), 0);
  shm_send_range(p, 40, 70, 1000, 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  expect_frame(&e, "w", 70, 1000);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  expect_frame(&e, "w", 70, 1000);
  char line[512];
  bool logged = false;
  FILE *lf = fopen(e.log, "r");
  assert_non_null(lf);
  while (fgets(line, sizeof line, lf))
    logged |= strstr(line, "died") != NULL;
  fclose(lf);
  assert_true(logged);
  env_fini(&e);
}

/* ---- a raw client: hostile notices ---------------------------------------- */

typedef struct raw {
  void *z;
  uint32_t handle, segment;
  uint64_t next_id;
  b2s_shm *seg;
} raw;

static void raw_submit(raw *r, uint32_t segment, uint32_t slot, uint32_t len) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_SHM_SUBMIT);
  m.shm_submit.buffer_id = r->next_id++;
  m.shm_submit.handle = r->handle;
  m.shm_submit.segment = segment;
  m.shm_submit.slot = slot;
  m.shm_submit.length = len;
  cli_send(r->z, &m, NULL, 0);
}

/* The ERROR about buffer `id`, skipping ACKs. */
static int raw_error(raw *r, uint64_t id) {
  for (;;) {
    rx x;
    cli_recv(r->z, &x);
    if (x.m.type == B2S_WIRE_ERROR) {
      assert_int_equal(x.m.error.ref_type, B2S_WIRE_SHM_SUBMIT);
      assert_int_equal(x.m.error.ref_index, id);
      assert_int_equal(x.m.flags & B2S_WIRE_ERROR_CLOSED_REF, 0);
      return x.m.error.code;
    }
    assert_int_equal(x.m.type, B2S_WIRE_ACK);
  }
}

static int raw_attach(raw *r, uint32_t count, uint32_t size) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_SHM_ATTACH);
  m.tag = 9;
  m.shm_attach.handle = r->handle;
  m.shm_attach.slot_count = count;
  m.shm_attach.slot_size = size;
  cli_send(r->z, &m, NULL, 0);
  rx x;
  cli_recv(r->z, &x);
  assert_int_equal(x.m.tag, 9);
  if (x.m.type == B2S_WIRE_ERROR)
    return x.m.error.code;
  assert_int_equal(x.m.type, B2S_WIRE_SHM_ATTACHED);
  assert_int_equal(x.m.shm_attached.slot_count, count);
  r->segment = x.m.shm_attached.segment;
  char name[300];
  memcpy(name, x.m.shm_attached.shm_name.ptr, x.m.shm_attached.shm_name.len);
  name[x.m.shm_attached.shm_name.len] = 0;
  assert_int_equal(b2s_shm_attach(name, &r->seg), 0);
  return 0;
}

/* Fill and mark a slot SUBMITTED with buffer `id` (the producer's half). */
static uint32_t raw_fill(raw *r, uint64_t id, size_t len) {
  uint32_t slot;
  void *ptr;
  assert_int_equal(b2s_shm_acquire(r->seg, 0, &slot, &ptr), 0);
  buf_fill(ptr, len, (int)id);
  assert_int_equal(b2s_shm_submit(r->seg, slot, len, id), 0);
  return slot;
}

static void test_shm_hostile_notices(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  raw r = {.z = cli_connect(&e)};
  cli_hello(r.z, 0);
  b2s_wire_msg o;
  assert_int_equal(cli_open(r.z, "w", "", &o), 0);
  r.handle = o.opened.handle;
  assert_int_equal(raw_attach(&r, 4, 2u << 20), B2S_E_OVERSIZE); /* > 1 MiB */
  assert_int_equal(raw_attach(&r, 4, 4096), 0);
  assert_int_equal(raw_attach(&r, 4, 4096), B2S_E_BUSY);

  /* id 0: a good buffer in a slot */
  uint32_t good = raw_fill(&r, 0, 1200);
  raw_submit(&r, r.segment, good, 1200);
  /* id 1: the same slot again (already taken or freed) */
  raw_submit(&r, r.segment, good, 1200);
  assert_int_equal(raw_error(&r, 1), B2S_E_SHM_STATE);
  /* id 2: slot index out of range; id 3: unknown segment */
  raw_submit(&r, r.segment, 4, 100);
  assert_int_equal(raw_error(&r, 2), B2S_E_SHM_SLOT);
  raw_submit(&r, r.segment + 77, 0, 100);
  assert_int_equal(raw_error(&r, 3), B2S_E_ARG);
  /* id 4: a slot filled for id 4 but announced with another length */
  uint32_t sl = raw_fill(&r, 4, 900);
  raw_submit(&r, r.segment, sl, 901);
  assert_int_equal(raw_error(&r, 4), B2S_E_PROTO);
  /* id 5: the slot the producer recorded as id 4, announced as id 5 */
  raw_submit(&r, r.segment, sl, 900);
  assert_int_equal(raw_error(&r, 5), B2S_E_PROTO);
  /* id 6: length beyond the slot */
  raw_submit(&r, r.segment, 0, 5000);
  assert_int_equal(raw_error(&r, 6), B2S_E_OVERSIZE);
  /* id 7: good again */
  uint32_t g2 = raw_fill(&r, 7, 1500);
  raw_submit(&r, r.segment, g2, 1500);

  prod p = {.s = r.z, .handle = r.handle, .n = 8, .base = 1000};
  while (p.acked[B2S_WIRE_LEVEL_WRITTEN] < 8) {
    rx x;
    cli_recv(r.z, &x);
    if (x.m.type == B2S_WIRE_ERROR)
      fail_msg("unexpected ERROR %d", x.m.error.code);
    prod_handle(&p, &x);
    rx_free(&x);
  }
  /* every slot is free again, the accounting holds */
  b2s_shm_counts c;
  assert_int_equal(b2s_shm_check(r.seg), 0);
  assert_int_equal(b2s_shm_account(r.seg, &c), 0);
  assert_int_equal(c.free, 4);
  assert_int_equal(c.total, 4);
  b2s_shm_detach(r.seg);
  zmq_close(r.z);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  /* only ids 0 and 7 were written */
  b2s_frame *f;
  b2s_frame_error err;
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  assert_int_equal(b2s_frame_open(path, &f, &err), 0);
  assert_int_equal(b2s_frame_nchunks(f), 2);
  uint8_t got[1500], want[1500];
  assert_int_equal(b2s_frame_chunk_decompress(f, 0, NULL, got, 1200), 1200);
  buf_fill(want, 1200, 0);
  assert_memory_equal(got, want, 1200);
  assert_int_equal(b2s_frame_chunk_decompress(f, 1, NULL, got, 1500), 1500);
  buf_fill(want, 1500, 7);
  assert_memory_equal(got, want, 1500);
  b2s_frame_free(f);
  env_fini(&e);
}

/* A daemon SIGKILLed with a live segment leaves it behind; the next start
 * removes it, and keeps every buffer flushed before the kill. */
static void test_shm_daemon_killed(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  pid_t old = e.pid;
  b2sc_session *s = connect_env(&e);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "w", NULL, &p), 0);
  assert_int_equal(b2sc_shm_attach(p, 4, 4096), 0);
  shm_send_range(p, 0, 30, 1000, 0);
  assert_int_equal(b2sc_flush(p, WAIT_MS), 0);
  assert_int_equal(env_stop(&e, SIGKILL), -1);
  assert_int_equal(segments_of(old), 1);
  b2sc_close(s);
  env_start(&e);
  wait_segments(old, 0);           /* removed at start, before serving */
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  expect_frame(&e, "w", 30, 1000);
  env_fini(&e);
}

static mode_t mode_of(const char *path, gid_t *gid) {
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  *gid = sb.st_gid;
  return sb.st_mode & 07777;
}

/* The one segment of daemon pid. */
static void segment_path(pid_t pid, char *out, size_t n) {
  char prefix[64];
  int k = snprintf(prefix, sizeof prefix, "b2s-d-%d-", (int)pid);
  DIR *d = opendir("/dev/shm");
  assert_non_null(d);
  struct dirent *de;
  out[0] = 0;
  while ((de = readdir(d)))
    if (strncmp(de->d_name, prefix, (size_t)k) == 0)
      snprintf(out, n, "/dev/shm/%s", de->d_name);
  closedir(d);
  assert_true(out[0] != 0);
}

/* Socket and segment modes: the daemon's user only by default; with
 * `group:`, that group too; an unknown group stops the start. */
static void check_access(const char *group, mode_t want) {
  char yaml[4096];
  snprintf(yaml, sizeof yaml, "%sgroup: %s\n", base_config, group);
  env e;
  env_init_config(&e, group[0] ? yaml : base_config);
  env_start(&e);
  char path[400];
  snprintf(path, sizeof path, "%s/run/d.sock", e.dir);
  gid_t gid;
  assert_int_equal(mode_of(path, &gid) & 0777, want);
  if (group[0])
    assert_int_equal(gid, getgid());
  b2sc_session *s = connect_env(&e);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "w", NULL, &p), 0);
  assert_int_equal(b2sc_shm_attach(p, 2, 4096), 0);
  segment_path(e.pid, path, sizeof path);
  assert_int_equal(mode_of(path, &gid), want);
  if (group[0])
    assert_int_equal(gid, getgid());
  b2sc_producer_close(p);
  b2sc_close(s);
  env_down(&e);
}

static void test_shm_access(void **state) {
  (void)state;
  check_access("", 0600);
  struct group *g = getgrgid(getgid());
  assert_non_null(g);
  check_access(g->gr_name, 0660);
  /* a group that does not exist: the daemon refuses to start */
  char yaml[4096];
  snprintf(yaml, sizeof yaml, "%sgroup: no_such_group_b2s\n", base_config);
  env e;
  env_init_config(&e, yaml);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(e.log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 2);
    execl(daemon_path, daemon_path, "--config", e.config, (char *)NULL);
    _exit(127);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 1);
  assert_int_equal(env_log_count(&e, "group 'no_such_group_b2s': no such group"), 1);
  env_fini(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_shm_stream),
    cmocka_unit_test(test_shm_two_producers_and_drops),
    cmocka_unit_test(test_shm_producer_killed),
    cmocka_unit_test(test_shm_hostile_notices),
    cmocka_unit_test(test_shm_daemon_killed),
    cmocka_unit_test(test_shm_access),
  };
  return harness_run(tests);
}
