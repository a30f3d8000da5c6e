/* Shared-memory slot transport (proto/shm): layout and names, the slot
 * state machine and its error paths, blocking acquire with timeout and
 * wake-up, a forked producer streaming tens of thousands of buffers through
 * a few slots while this process plays the daemon, a producer SIGKILLed
 * while holding slots, stale-segment cleanup, hostile notices and corrupt
 * headers, and a two-thread variant on one mapping (for ThreadSanitizer).
 *
 * Every segment is named "/b2s-ut<pid>...", and the group teardown unlinks
 * whatever a failed test left behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "b2s_errors.h"
#include "b2s_shm.h"
#include "ts.h"

#define MIB ((size_t)1 << 20)

static char prefix[32];
static unsigned name_seq;

/* ---- helpers ---------------------------------------------------------------- */

static void seg_name(char *buf, size_t cap) {
  assert_true(b2s_shm_name_make(buf, cap, prefix, getpid(), name_seq++) > 0);
}

static b2s_shm *make_seg(char *name, uint32_t nslots, size_t slot_size) {
  b2s_shm *seg = NULL;
  seg_name(name, 64);
  assert_int_equal(b2s_shm_create(name, nslots, slot_size, 64 * MIB, &seg), 0);
  assert_non_null(seg);
  return seg;
}

static void expect_counts(const b2s_shm *seg, uint32_t free_, uint32_t filling,
                          uint32_t submitted, uint32_t taken) {
  b2s_shm_counts c;
  assert_int_equal(b2s_shm_account(seg, &c), 0);
  assert_int_equal(c.total, b2s_shm_nslots(seg));
  assert_int_equal(c.free, free_);
  assert_int_equal(c.filling, filling);
  assert_int_equal(c.submitted, submitted);
  assert_int_equal(c.taken, taken);
  assert_int_equal(c.invalid, 0);
  assert_int_equal(b2s_shm_check(seg), 0);
}

static void sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* A second, raw read-write mapping of a segment, to play a hostile peer. */
static unsigned char *raw_map(const char *name, size_t *size) {
  int fd = shm_open(name, O_RDWR, 0);
  assert_true(fd >= 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  *size = (size_t)st.st_size;
  void *p = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  assert_true(p != MAP_FAILED);
  return p;
}

static b2s_shm_desc *raw_desc(unsigned char *base, uint32_t slot) {
  return (b2s_shm_desc *)(base + sizeof(b2s_shm_header) +
                          slot * sizeof(b2s_shm_desc));
}

static bool shm_exists(const char *name) {
  int fd = shm_open(name, O_RDONLY, 0);
  if (fd >= 0)
    close(fd);
  return fd >= 0;
}

/* Test data: buffer i is its 8-byte index followed by a window of a fixed
 * pseudo-random table, so every buffer differs and checking is a memcmp. */
#define PAT_LEN (64 * 1024)
static unsigned char pattern[2 * PAT_LEN];

static void pattern_init(void) {
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (size_t i = 0; i < sizeof pattern; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    pattern[i] = (unsigned char)(x >> 24);
  }
}

static size_t buf_len(uint64_t i, size_t slot_size) {
  if (i % 17 == 0)
    return slot_size;                       /* exactly full */
  return 8 + (size_t)((i * 2654435761u) % (slot_size - 7));
}

static void buf_fill(unsigned char *dst, uint64_t i, size_t len) {
  memcpy(dst, &i, 8);
  memcpy(dst + 8, pattern + (i * 7919) % PAT_LEN, len - 8);
}

static bool buf_ok(const unsigned char *src, uint64_t i, size_t len) {
  return memcmp(src, &i, 8) == 0 &&
         memcmp(src + 8, pattern + (i * 7919) % PAT_LEN, len - 8) == 0;
}

/* The submit notice that travels over ZeroMQ in the real system. */
typedef struct {
  uint32_t slot;
  uint32_t len;
  uint64_t id;
} notice;

#define ACQUIRE_TIMEOUT_MS 5000
#define LOST_WAKE_MS 3000

static bool read_full(int fd, void *buf, size_t n) {
  unsigned char *p = buf;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    p += r, n -= (size_t)r;
  }
  return true;
}

static bool write_notice(int fd, uint32_t slot, size_t len, uint64_t id) {
  notice m = {.slot = slot, .len = (uint32_t)len, .id = id};
  return write(fd, &m, sizeof m) == (ssize_t)sizeof m;   /* < PIPE_BUF */
}

/* How notices travel: a pipe between processes, or, between threads, a
 * ring of relaxed atomics.  Relaxed accesses create no happens-before for
 * ThreadSanitizer (a pipe does: it models fd reads and writes), so in the
 * threaded test only the segment's own atomics order the slot bytes. */
#define RING 8   /* > the slot count: a producer is at most nslots ahead */
typedef struct {
  int fd;                     /* pipe, or -1 for the ring */
  _Atomic uint64_t ring[RING];
} channel;

static bool chan_send(channel *ch, uint32_t slot, size_t len, uint64_t id) {
  if (ch->fd >= 0)
    return write_notice(ch->fd, slot, len, id);
  /* Relaxed: deliberately pairs with nothing (see above); the tag id + 1
   * tells the reader the entry is new. */
  atomic_store_explicit(&ch->ring[id % RING],
                        (id + 1) << 32 | (uint64_t)slot << 16 | len,
                        memory_order_relaxed);
  return true;
}

static bool chan_recv(channel *ch, uint64_t id, notice *m) {
  if (ch->fd >= 0)
    return read_full(ch->fd, m, sizeof *m);
  int64_t t0 = ts_now_ms();
  uint64_t v;
  /* Relaxed: pairs with nothing, see chan_send. */
  while ((v = atomic_load_explicit(&ch->ring[id % RING],
                                   memory_order_relaxed)) >> 32 != id + 1) {
    if (ts_now_ms() - t0 > 2 * ACQUIRE_TIMEOUT_MS)
      return false;           /* the producer gave up */
    sched_yield();
  }
  *m = (notice){.slot = (uint32_t)(v >> 16 & 0xffff),
                .len = (uint32_t)(v & 0xffff), .id = id};
  return true;
}

/* Producer loop shared by the forked and the threaded stream tests; the
 * return value says where it failed (0 = all submitted).  The daemon side
 * never holds a slot for more than a few milliseconds, so an acquire that
 * sleeps for seconds slept through a release: a lost wake-up (the rescan
 * after the futex timeout would otherwise hide it). */
static int produce(b2s_shm *p, uint64_t count, channel *ch) {
  size_t ss = b2s_shm_slot_size(p);
  for (uint64_t i = 0; i < count; i++) {
    uint32_t slot;
    void *ptr;
    int64_t t0 = ts_now_ms();
    int rc = b2s_shm_acquire(p, ACQUIRE_TIMEOUT_MS, &slot, &ptr);
    if (rc == B2S_E_TIMEOUT || ts_now_ms() - t0 >= LOST_WAKE_MS)
      return 2;
    if (rc != 0)
      return 3;
    size_t len = buf_len(i, ss);
    buf_fill(ptr, i, len);
    if (b2s_shm_submit(p, slot, len, i) != 0)
      return 4;
    if (!chan_send(ch, slot, len, i))
      return 5;
  }
  return 0;
}

/* Daemon loop: take each notice, check the bytes and the accounting after
 * every step, release.  Every `pause_every` buffers it sleeps briefly so
 * the producer runs out of slots and has to block. */
static void consume(b2s_shm *seg, uint64_t count, channel *ch,
                    uint64_t pause_every) {
  for (uint64_t i = 0; i < count; i++) {
    notice m;
    assert_true(chan_recv(ch, i, &m));   /* false: the producer failed */
    assert_int_equal(m.id, i);
    const void *data;
    uint64_t id;
    assert_int_equal(b2s_shm_take_submitted(seg, m.slot, m.len, &data, &id), 0);
    assert_int_equal(id, i);
    assert_ptr_equal(data, b2s_shm_slot_ptr(seg, m.slot));
    assert_int_equal(m.len, buf_len(i, b2s_shm_slot_size(seg)));
    assert_true(buf_ok(data, i, m.len));
    b2s_shm_counts c;
    assert_int_equal(b2s_shm_check(seg), 0);
    assert_int_equal(b2s_shm_account(seg, &c), 0);
    assert_int_equal(c.taken, 1);
    if (pause_every != 0 && i % pause_every == pause_every - 1)
      sleep_ms(2);
    assert_int_equal(b2s_shm_release(seg, m.slot), 0);
    assert_int_equal(b2s_shm_check(seg), 0);
    assert_int_equal(b2s_shm_account(seg, &c), 0);
    assert_int_equal(c.taken, 0);
  }
}

/* ---- group setup ------------------------------------------------------------- */

static int group_setup(void **state) {
  (void)state;
  snprintf(prefix, sizeof prefix, "ut%ld", (long)getpid());
  pattern_init();
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  char head[48];
  int hl = snprintf(head, sizeof head, "b2s-%s", prefix);
  DIR *dir = opendir("/dev/shm");
  if (dir == NULL)
    return 0;
  const struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    char path[300];
    if (strncmp(e->d_name, head, (size_t)hl) != 0)
      continue;
    snprintf(path, sizeof path, "/%s", e->d_name);
    shm_unlink(path);
  }
  closedir(dir);
  return 0;
}

/* ---- layout and names ---------------------------------------------------------- */

static void test_geometry(void **state) {
  (void)state;
  b2s_shm_geometry g;
  assert_int_equal(b2s_shm_geometry_compute(3, 5000, &g), 0);
  assert_int_equal(g.nslots, 3);
  assert_int_equal(g.slot_size, 5000);
  assert_int_equal(g.slot_stride, 8192);
  assert_int_equal(g.desc_offset, 256);
  assert_int_equal(g.data_offset, 4096);
  assert_int_equal(g.total_size, 4096 + 3 * 8192);
  /* 4096 descriptors of 64 bytes after the header: data at 256 KiB + 4 KiB */
  assert_int_equal(b2s_shm_geometry_compute(4096, 1, &g), 0);
  assert_int_equal(g.data_offset, 256 * 1024 + 4096);
  assert_int_equal(g.slot_stride, 4096);
  assert_int_equal(b2s_shm_geometry_compute(4096, B2S_SHM_MAX_SLOT_SIZE, &g), 0);
  assert_int_equal(g.total_size, 266240 + ((uint64_t)4096 << 30));
  assert_int_equal(b2s_shm_geometry_compute(0, 4096, &g), B2S_E_ARG);
  assert_int_equal(b2s_shm_geometry_compute(4097, 4096, &g), B2S_E_ARG);
  assert_int_equal(b2s_shm_geometry_compute(1, 0, &g), B2S_E_ARG);
  assert_int_equal(b2s_shm_geometry_compute(1, B2S_SHM_MAX_SLOT_SIZE + 1, &g),
                   B2S_E_ARG);
}

static void test_names(void **state) {
  (void)state;
  char buf[80];
  assert_int_equal(b2s_shm_name_make(buf, sizeof buf, "run_1.a", 42, 7), 17);
  assert_string_equal(buf, "/b2s-run_1.a-42-7");
  assert_int_equal(b2s_shm_name_make(buf, 17, "run_1.a", 42, 7),
                   B2S_E_DEST_SMALL);
  assert_int_equal(b2s_shm_name_make(buf, sizeof buf, "a-b", 42, 7), B2S_E_ARG);
  assert_int_equal(b2s_shm_name_make(buf, sizeof buf, "a/b", 42, 7), B2S_E_ARG);
  assert_int_equal(b2s_shm_name_make(buf, sizeof buf, "", 42, 7), B2S_E_ARG);
  assert_int_equal(b2s_shm_name_make(buf, sizeof buf, "ok", 0, 7), B2S_E_ARG);
  char longp[B2S_SHM_PREFIX_MAX + 2];
  memset(longp, 'x', sizeof longp - 1);
  longp[sizeof longp - 1] = '\0';
  assert_int_equal(b2s_shm_name_make(buf, sizeof buf, longp, 1, 0), B2S_E_ARG);
  longp[B2S_SHM_PREFIX_MAX] = '\0';
  assert_true(b2s_shm_name_make(buf, sizeof buf, longp, 1, 0) > 0);
  assert_int_equal(b2s_shm_cleanup_stale("a/b"), B2S_E_ARG);
  assert_int_equal(b2s_shm_cleanup_stale(NULL), B2S_E_ARG);
}

/* ---- create / attach ------------------------------------------------------------ */

static void test_create_attach(void **state) {
  (void)state;
  char name[64];
  b2s_shm *seg = NULL, *p = NULL, *p2 = NULL;
  seg_name(name, sizeof name);
  assert_int_equal(b2s_shm_create("noslash", 2, 4096, MIB, &seg), B2S_E_ARG);
  assert_int_equal(b2s_shm_create("/a/b", 2, 4096, MIB, &seg), B2S_E_ARG);
  assert_int_equal(b2s_shm_create("/", 2, 4096, MIB, &seg), B2S_E_ARG);
  assert_int_equal(b2s_shm_create(name, 0, 4096, MIB, &seg), B2S_E_ARG);
  assert_int_equal(b2s_shm_create(name, 4097, 4096, 1u << 30, &seg), B2S_E_ARG);
  assert_int_equal(b2s_shm_create(name, 2, (1u << 30) + 1, SIZE_MAX, &seg),
                   B2S_E_ARG);
  /* 2 x 8 KiB slots + one page of header: 20 KiB; ask for less */
  assert_int_equal(b2s_shm_create(name, 2, 8000, 20479, &seg), B2S_E_OVERSIZE);
  assert_null(seg);
  assert_false(shm_exists(name));
  assert_int_equal(b2s_shm_create(name, 2, 8000, 20480, &seg), 0);
  assert_int_equal(b2s_shm_create(name, 2, 8000, 20480, &p), -EEXIST);

  assert_string_equal(b2s_shm_name(seg), name);
  assert_int_equal(b2s_shm_nslots(seg), 2);
  assert_int_equal(b2s_shm_slot_size(seg), 8000);
  unsigned char *s0 = b2s_shm_slot_ptr(seg, 0), *s1 = b2s_shm_slot_ptr(seg, 1);
  assert_int_equal((uintptr_t)s0 % B2S_SHM_ALIGN, 0);
  assert_int_equal(s1 - s0, 8192);
  assert_null(b2s_shm_slot_ptr(seg, 2));
  assert_int_equal(b2s_shm_slot_state(seg, 2), B2S_E_SHM_SLOT);
  expect_counts(seg, 2, 0, 0, 0);

  b2s_shm_stats st;
  assert_int_equal(b2s_shm_stats_get(seg, &st), 0);
  assert_int_equal(st.creator_pid, getpid());
  assert_int_equal(st.producer_pid, 0);
  assert_int_equal(b2s_shm_producer_alive(seg), 0);

  char missing[64];
  seg_name(missing, sizeof missing);
  assert_int_equal(b2s_shm_attach(missing, &p), -ENOENT);
  assert_int_equal(b2s_shm_attach(name, &p), 0);
  assert_int_equal(b2s_shm_nslots(p), 2);
  assert_int_equal(b2s_shm_slot_size(p), 8000);
  assert_int_equal(b2s_shm_stats_get(p, &st), 0);
  assert_int_equal(st.producer_pid, getpid());
  assert_int_equal(st.creator_pid, getpid());
  assert_int_equal(b2s_shm_producer_alive(seg), 1);
  assert_int_equal(b2s_shm_attach(name, &p2), B2S_E_BUSY);
  assert_null(p2);

  /* Both mappings see the same bytes. */
  unsigned char *ps0 = b2s_shm_slot_ptr(p, 0);
  assert_ptr_not_equal(ps0, s0);
  memcpy(ps0 + 8000 - 5, "hello", 5);
  assert_memory_equal(s0 + 8000 - 5, "hello", 5);

  b2s_shm_detach(p);
  assert_int_equal(b2s_shm_producer_alive(seg), 0);
  assert_int_equal(b2s_shm_attach(name, &p2), 0);   /* free to attach again */
  b2s_shm_detach(p2);
  b2s_shm_destroy(seg);
  assert_false(shm_exists(name));
  b2s_shm_destroy(NULL);
  b2s_shm_detach(NULL);
}

/* ---- state machine ---------------------------------------------------------------- */

static void test_state_machine(void **state) {
  (void)state;
  char name[64];
  b2s_shm *seg = make_seg(name, 3, 4096), *p;
  assert_int_equal(b2s_shm_attach(name, &p), 0);
  expect_counts(seg, 3, 0, 0, 0);

  uint32_t a, b;
  void *pa, *pb;
  assert_int_equal(b2s_shm_acquire(p, 0, &a, &pa), 0);
  assert_int_equal(b2s_shm_slot_state(seg, a), B2S_SLOT_FILLING);
  expect_counts(seg, 2, 1, 0, 0);
  assert_int_equal(b2s_shm_acquire(p, 0, &b, &pb), 0);
  assert_int_not_equal(a, b);
  expect_counts(seg, 1, 2, 0, 0);

  buf_fill(pa, 1001, 3000);
  buf_fill(pb, 1002, 4096);
  assert_int_equal(b2s_shm_submit(p, b, 4096, 1002), 0);
  expect_counts(seg, 1, 1, 1, 0);
  assert_int_equal(b2s_shm_submit(p, a, 3000, 1001), 0);
  expect_counts(seg, 1, 0, 2, 0);

  const void *data;
  uint64_t id;
  assert_int_equal(b2s_shm_take_submitted(seg, a, 3000, &data, &id), 0);
  assert_int_equal(b2s_shm_slot_state(seg, a), B2S_SLOT_TAKEN);
  assert_int_equal(id, 1001);
  assert_true(buf_ok(data, 1001, 3000));
  expect_counts(seg, 1, 0, 1, 1);
  assert_int_equal(b2s_shm_take_submitted(seg, b, 4096, &data, NULL), 0);
  assert_true(buf_ok(data, 1002, 4096));
  expect_counts(seg, 1, 0, 0, 2);
  assert_int_equal(b2s_shm_release(seg, a), 0);
  expect_counts(seg, 2, 0, 0, 1);
  assert_int_equal(b2s_shm_release(seg, b), 0);
  expect_counts(seg, 3, 0, 0, 0);

  /* cancel gives a slot back without the daemon */
  assert_int_equal(b2s_shm_acquire(p, 0, &a, NULL), 0);
  expect_counts(seg, 2, 1, 0, 0);
  assert_int_equal(b2s_shm_cancel(p, a), 0);
  expect_counts(seg, 3, 0, 0, 0);
  assert_int_equal(b2s_shm_cancel(p, a), B2S_E_SHM_STATE);

  b2s_shm_stats st;
  assert_int_equal(b2s_shm_stats_get(seg, &st), 0);
  assert_int_equal(st.submitted, 2);
  assert_int_equal(st.taken, 2);
  assert_int_equal(st.released, 2);
  assert_int_equal(st.timeouts, 0);

  /* detach returns the producer's FILLING slots */
  assert_int_equal(b2s_shm_acquire(p, 0, &a, NULL), 0);
  assert_int_equal(b2s_shm_acquire(p, 0, &b, NULL), 0);
  assert_int_equal(b2s_shm_submit(p, b, 10, 7), 0);
  expect_counts(seg, 1, 1, 1, 0);
  b2s_shm_detach(p);
  expect_counts(seg, 2, 0, 1, 0);
  assert_int_equal(b2s_shm_take_submitted(seg, b, 10, NULL, &id), 0);
  assert_int_equal(id, 7);
  assert_int_equal(b2s_shm_release(seg, b), 0);
  expect_counts(seg, 3, 0, 0, 0);
  b2s_shm_destroy(seg);
}

/* ---- hostile notices and misuse --------------------------------------------------- */

static void test_daemon_rejects(void **state) {
  (void)state;
  char name[64];
  b2s_shm *seg = make_seg(name, 4, 4096), *p;
  assert_int_equal(b2s_shm_attach(name, &p), 0);
  uint32_t a, b;
  void *pa;
  assert_int_equal(b2s_shm_acquire(p, 0, &a, &pa), 0);   /* FILLING */
  assert_int_equal(b2s_shm_acquire(p, 0, &b, NULL), 0);
  memset(pa, 0xab, 100);
  assert_int_equal(b2s_shm_submit(p, b, 100, 5), 0);     /* SUBMITTED */
  uint32_t free_slot = 0;
  while (free_slot == a || free_slot == b)
    free_slot++;

  const void *data = NULL;
  assert_int_equal(b2s_shm_take_submitted(seg, 4, 1, &data, NULL),
                   B2S_E_SHM_SLOT);
  assert_int_equal(b2s_shm_take_submitted(seg, UINT32_MAX, 1, &data, NULL),
                   B2S_E_SHM_SLOT);
  assert_int_equal(b2s_shm_take_submitted(seg, free_slot, 1, &data, NULL),
                   B2S_E_SHM_STATE);
  assert_int_equal(b2s_shm_take_submitted(seg, a, 1, &data, NULL),
                   B2S_E_SHM_STATE);
  assert_int_equal(b2s_shm_take_submitted(seg, b, 4097, &data, NULL),
                   B2S_E_OVERSIZE);
  assert_int_equal(b2s_shm_take_submitted(seg, b, SIZE_MAX, &data, NULL),
                   B2S_E_OVERSIZE);
  assert_int_equal(b2s_shm_take_submitted(seg, b, 99, &data, NULL),
                   B2S_E_PROTO);
  assert_null(data);
  expect_counts(seg, 2, 1, 1, 0);           /* nothing moved */
  assert_int_equal(b2s_shm_release(seg, b), B2S_E_SHM_STATE);
  assert_int_equal(b2s_shm_release(seg, a), B2S_E_SHM_STATE);
  assert_int_equal(b2s_shm_release(seg, free_slot), B2S_E_SHM_STATE);
  assert_int_equal(b2s_shm_release(seg, 4), B2S_E_SHM_SLOT);
  expect_counts(seg, 2, 1, 1, 0);

  assert_int_equal(b2s_shm_take_submitted(seg, b, 100, &data, NULL), 0);
  /* a duplicated notice cannot hand the slot to a second worker */
  assert_int_equal(b2s_shm_take_submitted(seg, b, 100, &data, NULL),
                   B2S_E_SHM_STATE);
  assert_int_equal(b2s_shm_release(seg, b), 0);
  assert_int_equal(b2s_shm_release(seg, b), B2S_E_SHM_STATE);
  expect_counts(seg, 3, 1, 0, 0);

  /* each side's calls refuse the other side's handle */
  assert_int_equal(b2s_shm_take_submitted(p, b, 1, &data, NULL), B2S_E_ARG);
  assert_int_equal(b2s_shm_release(p, b), B2S_E_ARG);
  assert_int_equal(b2s_shm_reclaim(p), B2S_E_ARG);
  assert_int_equal(b2s_shm_reclaim_submitted(p), B2S_E_ARG);
  assert_int_equal(b2s_shm_acquire(seg, 0, &b, NULL), B2S_E_ARG);
  assert_int_equal(b2s_shm_submit(seg, a, 1, 0), B2S_E_ARG);
  assert_int_equal(b2s_shm_cancel(seg, a), B2S_E_ARG);
  assert_int_equal(b2s_shm_acquire(NULL, 0, &b, NULL), B2S_E_ARG);
  assert_int_equal(b2s_shm_acquire(p, 0, NULL, NULL), B2S_E_ARG);
  assert_int_equal(b2s_shm_take_submitted(NULL, 0, 1, &data, NULL), B2S_E_ARG);
  assert_int_equal(b2s_shm_account(NULL, NULL), B2S_E_ARG);
  expect_counts(seg, 3, 1, 0, 0);

  /* A producer that scribbles over the slot states. */
  size_t sz;
  unsigned char *raw = raw_map(name, &sz);
  b2s_shm_desc *d = raw_desc(raw, free_slot);
  atomic_store(&d->state, 9);
  b2s_shm_counts c;
  assert_int_equal(b2s_shm_account(seg, &c), 0);
  assert_int_equal(c.invalid, 1);
  assert_int_equal(c.free, 2);
  assert_int_equal(b2s_shm_check(seg), B2S_E_SHM_ACCOUNT);
  assert_int_equal(b2s_shm_take_submitted(seg, free_slot, 1, &data, NULL),
                   B2S_E_SHM_STATE);
  assert_int_equal(b2s_shm_release(seg, free_slot), B2S_E_SHM_STATE);
  /* acquire skips the broken slot */
  uint32_t got[2];
  assert_int_equal(b2s_shm_acquire(p, 0, &got[0], NULL), 0);
  assert_int_equal(b2s_shm_acquire(p, 0, &got[1], NULL), 0);
  assert_int_not_equal(got[0], free_slot);
  assert_int_not_equal(got[1], free_slot);
  assert_int_equal(b2s_shm_acquire(p, 0, &b, NULL), B2S_E_TIMEOUT);
  atomic_store(&d->state, B2S_SLOT_FREE);
  assert_int_equal(b2s_shm_check(seg), 0);
  /* A forged SUBMITTED state with a length the notice disagrees with. */
  atomic_store(&d->length, 50);
  atomic_store(&d->state, B2S_SLOT_SUBMITTED);
  assert_int_equal(b2s_shm_take_submitted(seg, free_slot, 4096, &data, NULL),
                   B2S_E_PROTO);
  assert_int_equal(b2s_shm_slot_state(seg, free_slot), B2S_SLOT_SUBMITTED);
  assert_int_equal(b2s_shm_check(seg), 0);
  munmap(raw, sz);
  b2s_shm_detach(p);
  b2s_shm_destroy(seg);
}

static void test_producer_errors(void **state) {
  (void)state;
  char name[64];
  b2s_shm *seg = make_seg(name, 2, 5000), *p;
  assert_int_equal(b2s_shm_attach(name, &p), 0);
  uint32_t a;
  void *pa;
  assert_int_equal(b2s_shm_submit(p, 0, 1, 0), B2S_E_SHM_STATE);  /* not ours */
  assert_int_equal(b2s_shm_submit(p, 2, 1, 0), B2S_E_SHM_SLOT);
  assert_int_equal(b2s_shm_cancel(p, 2), B2S_E_SHM_SLOT);
  assert_int_equal(b2s_shm_acquire(p, 0, &a, &pa), 0);
  assert_int_equal(b2s_shm_submit(p, a, 5001, 0), B2S_E_OVERSIZE);
  assert_int_equal(b2s_shm_slot_state(seg, a), B2S_SLOT_FILLING);  /* kept */
  buf_fill(pa, 77, 5000);
  assert_int_equal(b2s_shm_submit(p, a, 5000, 77), 0);
  assert_int_equal(b2s_shm_submit(p, a, 5000, 77), B2S_E_SHM_STATE);
  assert_int_equal(b2s_shm_cancel(p, a), B2S_E_SHM_STATE);
  const void *data;
  assert_int_equal(b2s_shm_take_submitted(seg, a, 5000, &data, NULL), 0);
  assert_true(buf_ok(data, 77, 5000));
  assert_int_equal(b2s_shm_release(seg, a), 0);
  expect_counts(seg, 2, 0, 0, 0);
  b2s_shm_detach(p);
  b2s_shm_destroy(seg);
}

/* ---- waiting ------------------------------------------------------------------------ */

static void test_acquire_timeout(void **state) {
  (void)state;
  char name[64];
  b2s_shm *seg = make_seg(name, 2, 4096), *p;
  assert_int_equal(b2s_shm_attach(name, &p), 0);
  uint32_t s;
  assert_int_equal(b2s_shm_acquire(p, 0, &s, NULL), 0);
  assert_int_equal(b2s_shm_acquire(p, 0, &s, NULL), 0);
  int64_t t0 = ts_now_ms();
  assert_int_equal(b2s_shm_acquire(p, 0, &s, NULL), B2S_E_TIMEOUT);
  assert_true(ts_now_ms() - t0 < 1000);
  t0 = ts_now_ms();
  assert_int_equal(b2s_shm_acquire(p, 80, &s, NULL), B2S_E_TIMEOUT);
  int64_t took = ts_now_ms() - t0;
  assert_true(took >= 79);
  assert_true(took < 5000);
  b2s_shm_stats st;
  assert_int_equal(b2s_shm_stats_get(seg, &st), 0);
  assert_int_equal(st.timeouts, 2);
  assert_true(st.waits >= 1);
  expect_counts(seg, 0, 2, 0, 0);
  b2s_shm_detach(p);
  expect_counts(seg, 2, 0, 0, 0);
  b2s_shm_destroy(seg);
}

typedef struct {
  b2s_shm *p;
  int timeout_ms;
  _Atomic int rc;             /* read by the main thread while blocked */
  uint32_t slot;
  int64_t took_ms;
} waiter;

/* Until a producer has gone to sleep for the (waits_before + 1)-th time. */
static void await_sleeper(const b2s_shm *seg, uint64_t waits_before) {
  b2s_shm_stats st;
  int64_t t0 = ts_now_ms();
  do {
    sleep_ms(5);
    assert_int_equal(b2s_shm_stats_get(seg, &st), 0);
    assert_true(ts_now_ms() - t0 < 10000);
  } while (st.waits <= waits_before);
  sleep_ms(20);   /* from the count to the futex call itself */
}

static void *waiter_run(void *arg) {
  waiter *w = arg;
  int64_t t0 = ts_now_ms();
  w->rc = b2s_shm_acquire(w->p, w->timeout_ms, &w->slot, NULL);
  w->took_ms = ts_now_ms() - t0;
  return NULL;
}

/* A producer blocked on a full segment wakes when the daemon releases. */
static void test_release_wakes(void **state) {
  (void)state;
  char name[64];
  b2s_shm *seg = make_seg(name, 2, 4096), *p;
  assert_int_equal(b2s_shm_attach_local(seg, &p), 0);
  uint32_t a, b;
  assert_int_equal(b2s_shm_acquire(p, 0, &a, NULL), 0);
  assert_int_equal(b2s_shm_acquire(p, 0, &b, NULL), 0);
  assert_int_equal(b2s_shm_submit(p, b, 1, 0), 0);
  assert_int_equal(b2s_shm_take_submitted(seg, b, 1, NULL, NULL), 0);
  for (int timeout = -1; timeout <= 20000; timeout += 20001) {
    waiter w = {.p = p, .timeout_ms = timeout, .rc = 1};
    b2s_shm_stats st;
    assert_int_equal(b2s_shm_stats_get(seg, &st), 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, waiter_run, &w), 0);
    await_sleeper(seg, st.waits);
    assert_int_equal(w.rc, 1);         /* still blocked */
    assert_int_equal(b2s_shm_release(seg, b), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(w.rc, 0);
    assert_int_equal(w.slot, b);
    assert_true(w.took_ms < 10000);
    assert_int_equal(b2s_shm_submit(p, b, 1, 0), 0);
    assert_int_equal(b2s_shm_take_submitted(seg, b, 1, NULL, NULL), 0);
  }
  b2s_shm_stats st;
  assert_int_equal(b2s_shm_stats_get(seg, &st), 0);
  assert_true(st.waits >= 2);
  assert_int_equal(st.timeouts, 0);
  b2s_shm_detach(p);
  b2s_shm_destroy(seg);
}

/* Destroying the segment wakes a blocked producer with B2S_E_CLOSED. */
static void test_destroy_wakes(void **state) {
  (void)state;
  char name[64];
  b2s_shm *seg = make_seg(name, 1, 4096), *p;
  assert_int_equal(b2s_shm_attach(name, &p), 0);   /* own mapping */
  uint32_t a;
  assert_int_equal(b2s_shm_acquire(p, 0, &a, NULL), 0);
  waiter w = {.p = p, .timeout_ms = -1, .rc = 1};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, waiter_run, &w), 0);
  await_sleeper(seg, 0);
  assert_int_equal(w.rc, 1);           /* still blocked */
  b2s_shm_destroy(seg);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(w.rc, B2S_E_CLOSED);
  assert_int_equal(b2s_shm_submit(p, a, 1, 0), B2S_E_CLOSED);
  assert_int_equal(b2s_shm_attach(name, &seg), -ENOENT);
  b2s_shm_detach(p);
}

/* ---- reclaim ---------------------------------------------------------------------------- */

static void test_reclaim_generation(void **state) {
  (void)state;
  char name[64];
  b2s_shm *seg = make_seg(name, 4, 4096), *p, *q;
  assert_int_equal(b2s_shm_attach(name, &p), 0);
  uint32_t a, b, c;
  assert_int_equal(b2s_shm_acquire(p, 0, &a, NULL), 0);
  assert_int_equal(b2s_shm_acquire(p, 0, &b, NULL), 0);
  assert_int_equal(b2s_shm_acquire(p, 0, &c, NULL), 0);
  assert_int_equal(b2s_shm_submit(p, b, 8, 1), 0);
  assert_int_equal(b2s_shm_submit(p, c, 8, 2), 0);
  assert_int_equal(b2s_shm_take_submitted(seg, c, 8, NULL, NULL), 0);
  expect_counts(seg, 1, 1, 1, 1);

  assert_int_equal(b2s_shm_reclaim(seg), 1);
  expect_counts(seg, 2, 0, 1, 1);
  b2s_shm_stats st;
  assert_int_equal(b2s_shm_stats_get(seg, &st), 0);
  assert_int_equal(st.generation, 1);
  assert_int_equal(st.producer_pid, 0);
  assert_int_equal(st.reclaimed, 1);
  /* the old producer's library stops */
  assert_int_equal(b2s_shm_acquire(p, 1000, &a, NULL), B2S_E_CLOSED);
  assert_int_equal(b2s_shm_submit(p, a, 8, 0), B2S_E_CLOSED);
  assert_int_equal(b2s_shm_cancel(p, a), B2S_E_CLOSED);
  expect_counts(seg, 2, 0, 1, 1);           /* the old handle moved nothing */

  /* a new producer attaches; the old handle's detach leaves it alone */
  assert_int_equal(b2s_shm_attach(name, &q), 0);
  uint32_t d;
  assert_int_equal(b2s_shm_acquire(q, 0, &d, NULL), 0);
  b2s_shm_detach(p);
  assert_int_equal(b2s_shm_stats_get(seg, &st), 0);
  assert_int_equal(st.producer_pid, getpid());
  expect_counts(seg, 1, 1, 1, 1);

  /* the submitted slot whose notice never came is an orphan; the taken
   * one stays with its worker */
  assert_int_equal(b2s_shm_reclaim_submitted(seg), 1);
  expect_counts(seg, 2, 1, 0, 1);
  assert_int_equal(b2s_shm_release(seg, c), 0);
  assert_int_equal(b2s_shm_submit(q, d, 8, 3), 0);
  assert_int_equal(b2s_shm_take_submitted(seg, d, 8, NULL, NULL), 0);
  assert_int_equal(b2s_shm_release(seg, d), 0);
  expect_counts(seg, 4, 0, 0, 0);
  b2s_shm_detach(q);
  b2s_shm_destroy(seg);
}

/* A producer child holds two FILLING and two SUBMITTED slots (one notice
 * sent, one not) and is SIGKILLed. */
static void test_killed_producer(void **state) {
  (void)state;
  char name[64];
  b2s_shm *seg = make_seg(name, 6, 4096);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    b2s_shm *p;
    uint32_t s[4];
    void *ptr[4];
    if (b2s_shm_attach(name, &p) != 0)
      _exit(10);
    for (int i = 0; i < 4; i++) {
      if (b2s_shm_acquire(p, 0, &s[i], &ptr[i]) != 0)
        _exit(11);
      buf_fill(ptr[i], 500 + (uint64_t)i, 4096);
    }
    if (b2s_shm_submit(p, s[1], 4000, 501) != 0 ||
        b2s_shm_submit(p, s[3], 4096, 503) != 0 ||
        !write_notice(fds[1], s[1], 4000, 501))
      _exit(12);
    for (;;)
      pause();
  }
  close(fds[1]);
  notice m;
  assert_true(read_full(fds[0], &m, sizeof m));
  expect_counts(seg, 2, 2, 2, 0);
  assert_int_equal(b2s_shm_producer_alive(seg), 1);
  b2s_shm_stats st;
  assert_int_equal(b2s_shm_stats_get(seg, &st), 0);
  assert_int_equal(st.producer_pid, pid);

  assert_int_equal(kill(pid, SIGKILL), 0);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status));
  close(fds[0]);
  assert_int_equal(b2s_shm_producer_alive(seg), 0);   /* reaped: ESRCH */

  assert_int_equal(b2s_shm_reclaim(seg), 2);
  expect_counts(seg, 4, 0, 2, 0);
  assert_int_equal(b2s_shm_reclaim(seg), 0);
  /* the notice that did arrive is still served, bytes intact */
  const void *data;
  uint64_t id;
  assert_int_equal(b2s_shm_take_submitted(seg, m.slot, m.len, &data, &id), 0);
  assert_int_equal(id, 501);
  assert_true(buf_ok(data, 501, 4000));
  expect_counts(seg, 4, 0, 1, 1);
  assert_int_equal(b2s_shm_reclaim_submitted(seg), 1);
  expect_counts(seg, 5, 0, 0, 1);
  assert_int_equal(b2s_shm_release(seg, m.slot), 0);
  expect_counts(seg, 6, 0, 0, 0);

  assert_int_equal(b2s_shm_stats_get(seg, &st), 0);
  assert_int_equal(st.reclaimed, 3);
  assert_int_equal(st.producer_pid, 0);
  b2s_shm *q;                                   /* the next producer */
  assert_int_equal(b2s_shm_attach(name, &q), 0);
  b2s_shm_detach(q);
  b2s_shm_destroy(seg);
}

/* ---- streaming ------------------------------------------------------------------------ */

#define STREAM_COUNT 40000u

/* A forked producer pushes STREAM_COUNT buffers through 4 slots; it never
 * times out or oversleeps (a lost wake-up: exit code 2). */
static void test_fork_stream(void **state) {
  (void)state;
  char name[64];
  b2s_shm *seg = make_seg(name, 4, 4096 + 100);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    b2s_shm *p;
    if (b2s_shm_attach(name, &p) != 0)
      _exit(10);
    channel ch = {.fd = fds[1]};
    int rc = produce(p, STREAM_COUNT, &ch);
    b2s_shm_detach(p);
    _exit(rc);
  }
  close(fds[1]);
  channel ch = {.fd = fds[0]};
  consume(seg, STREAM_COUNT, &ch, 997);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  notice extra;
  assert_false(read_full(fds[0], &extra, sizeof extra));   /* nothing more */
  close(fds[0]);
  b2s_shm_stats st;
  assert_int_equal(b2s_shm_stats_get(seg, &st), 0);
  assert_int_equal(st.submitted, STREAM_COUNT);
  assert_int_equal(st.taken, STREAM_COUNT);
  assert_int_equal(st.released, STREAM_COUNT);
  assert_int_equal(st.timeouts, 0);
  assert_true(st.waits > 0);          /* the pauses made it block */
  assert_int_equal(st.producer_pid, 0);
  expect_counts(seg, 4, 0, 0, 0);
  b2s_shm_destroy(seg);
}

typedef struct {
  b2s_shm *p;
  uint64_t count;
  channel *ch;
  int rc;
} producer_thread;

static void *producer_thread_run(void *arg) {
  producer_thread *t = arg;
  t->rc = produce(t->p, t->count, t->ch);
  return NULL;
}

/* The same stream between two threads on one mapping: no cross-process
 * blind spot, so ThreadSanitizer checks the slot hand-over ordering. */
static void test_thread_stream(void **state) {
  (void)state;
  char name[64];
  b2s_shm *seg = make_seg(name, 3, 4096), *p;
  assert_int_equal(b2s_shm_attach_local(seg, &p), 0);
  static channel ch = {.fd = -1};   /* outlives a failed assertion */
  static producer_thread t;
  for (int i = 0; i < RING; i++)
    atomic_store(&ch.ring[i], 0);
  t = (producer_thread){.p = p, .count = 20000, .ch = &ch, .rc = -1};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, producer_thread_run, &t), 0);
  consume(seg, t.count, &ch, 1999);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(t.rc, 0);
  b2s_shm_stats st;
  assert_int_equal(b2s_shm_stats_get(seg, &st), 0);
  assert_int_equal(st.released, t.count);
  assert_int_equal(st.timeouts, 0);
  expect_counts(seg, 3, 0, 0, 0);
  b2s_shm_detach(p);
  b2s_shm_destroy(seg);
}

/* ---- stale cleanup ---------------------------------------------------------------------- */

static void raw_create(const char *name) {
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, 4096), 0);
  close(fd);
}

static void test_stale_cleanup(void **state) {
  (void)state;
  char sp[40], other[40];
  snprintf(sp, sizeof sp, "%ss", prefix);
  snprintf(other, sizeof other, "%ssx", prefix);

  /* a daemon that dies without destroying its segment */
  char stale[64];
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    b2s_shm *s;
    if (b2s_shm_name_make(stale, sizeof stale, sp, getpid(), 0) < 0 ||
        b2s_shm_create(stale, 2, 4096, MIB, &s) != 0)
      _exit(1);
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_true(b2s_shm_name_make(stale, sizeof stale, sp, pid, 0) > 0);
  assert_true(shm_exists(stale));

  /* a live daemon's (ours), another prefix's, and names that do not parse */
  char live[64], foreign[64], odd1[80], odd2[80], odd3[80];
  b2s_shm *seg;
  assert_true(b2s_shm_name_make(live, sizeof live, sp, getpid(), 1) > 0);
  assert_int_equal(b2s_shm_create(live, 1, 4096, MIB, &seg), 0);
  assert_true(b2s_shm_name_make(foreign, sizeof foreign, other, pid, 0) > 0);
  raw_create(foreign);
  snprintf(odd1, sizeof odd1, "%s-x", stale);
  snprintf(odd2, sizeof odd2, "/b2s-%s-0%ld-0", sp, (long)pid);
  snprintf(odd3, sizeof odd3, "/b2s-%s--1-0", sp);
  raw_create(odd1);
  raw_create(odd2);
  raw_create(odd3);

  assert_int_equal(b2s_shm_cleanup_stale(sp), 1);
  assert_false(shm_exists(stale));
  assert_true(shm_exists(live));
  assert_true(shm_exists(foreign));
  assert_true(shm_exists(odd1));
  assert_true(shm_exists(odd2));
  assert_true(shm_exists(odd3));
  assert_int_equal(b2s_shm_cleanup_stale(sp), 0);

  b2s_shm *p;                      /* the live one still works */
  assert_int_equal(b2s_shm_attach(live, &p), 0);
  b2s_shm_detach(p);
  b2s_shm_destroy(seg);
  assert_int_equal(b2s_shm_cleanup_stale(other), 1);
  assert_false(shm_exists(foreign));
  shm_unlink(odd1);
  shm_unlink(odd2);
  shm_unlink(odd3);
}

/* ---- corrupt headers ------------------------------------------------------------------------ */

typedef void (*corrupt_fn)(b2s_shm_header *h);
static void c_magic(b2s_shm_header *h) { h->magic ^= 1; }
static void c_version(b2s_shm_header *h) { h->version = 2; }
static void c_hsize(b2s_shm_header *h) { h->header_size = 255; }
static void c_dsize(b2s_shm_header *h) { h->desc_size = 32; }
static void c_nslots0(b2s_shm_header *h) { h->nslots = 0; }
static void c_nslots5(b2s_shm_header *h) { h->nslots = 5; }
static void c_nslots_big(b2s_shm_header *h) { h->nslots = 100000; }
static void c_slot_huge(b2s_shm_header *h) { h->slot_size = (uint64_t)1 << 40; }
static void c_slot_more(b2s_shm_header *h) { h->slot_size = 8192; }
static void c_stride(b2s_shm_header *h) { h->slot_stride = 8192; }
static void c_desc_off(b2s_shm_header *h) { h->desc_offset = 0; }
static void c_data_off(b2s_shm_header *h) { h->data_offset += 4096; }
static void c_total(b2s_shm_header *h) { h->total_size += 4096; }
static void c_creator0(b2s_shm_header *h) { h->creator_pid = 0; }
static void c_creator_neg(b2s_shm_header *h) { h->creator_pid = -5; }

static void test_attach_corrupt(void **state) {
  (void)state;
  static const struct {
    corrupt_fn fn;
    int want;
  } cases[] = {
      {c_magic, B2S_E_SHM_HEADER},     {c_version, B2S_E_PROTO_VERSION},
      {c_hsize, B2S_E_SHM_HEADER},     {c_dsize, B2S_E_SHM_HEADER},
      {c_nslots0, B2S_E_SHM_HEADER},   {c_nslots5, B2S_E_SHM_HEADER},
      {c_nslots_big, B2S_E_SHM_HEADER}, {c_slot_huge, B2S_E_SHM_HEADER},
      {c_slot_more, B2S_E_SHM_HEADER}, {c_stride, B2S_E_SHM_HEADER},
      {c_desc_off, B2S_E_SHM_HEADER},  {c_data_off, B2S_E_SHM_HEADER},
      {c_total, B2S_E_SHM_HEADER},     {c_creator0, B2S_E_SHM_HEADER},
      {c_creator_neg, B2S_E_SHM_HEADER},
  };
  char name[64];
  b2s_shm *seg = make_seg(name, 4, 4096), *p = NULL;
  size_t sz;
  unsigned char *raw = raw_map(name, &sz);
  b2s_shm_header *h = (b2s_shm_header *)raw, saved;
  memcpy(&saved, h, sizeof saved);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cases[i].fn(h);
    assert_int_equal(b2s_shm_header_check(raw, sz, NULL), cases[i].want);
    assert_int_equal(b2s_shm_attach(name, &p), cases[i].want);
    assert_null(p);
    memcpy(h, &saved, sizeof saved);
    assert_int_equal(atomic_load(&h->producer_pid), 0);  /* not claimed */
  }
  /* ownership fields */
  atomic_store(&h->producer_pid, 12345);
  assert_int_equal(b2s_shm_attach(name, &p), B2S_E_BUSY);
  atomic_store(&h->producer_pid, 0);
  atomic_store(&h->closed, 1);
  assert_int_equal(b2s_shm_attach(name, &p), B2S_E_CLOSED);
  atomic_store(&h->closed, 0);

  /* the object's size must be exactly what the header says */
  int fd = shm_open(name, O_RDWR, 0);
  assert_true(fd >= 0);
  const off_t sizes[] = {(off_t)sz - 4096, (off_t)sz + 4096, 100, 0};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    assert_int_equal(ftruncate(fd, sizes[i]), 0);
    assert_int_equal(b2s_shm_attach(name, &p), B2S_E_SHM_HEADER);
    assert_null(p);
  }
  assert_int_equal(ftruncate(fd, (off_t)sz), 0);
  close(fd);
  memcpy(h, &saved, sizeof saved);      /* truncation zeroed it */
  assert_int_equal(b2s_shm_attach(name, &p), 0);
  b2s_shm_detach(p);

  /* something else entirely under a b2s name */
  char junk[64];
  seg_name(junk, sizeof junk);
  raw_create(junk);
  assert_int_equal(b2s_shm_attach(junk, &p), B2S_E_SHM_HEADER);
  shm_unlink(junk);
  assert_int_equal(b2s_shm_attach("relative", &p), B2S_E_ARG);
  munmap(raw, sz);
  b2s_shm_destroy(seg);
}

/* Random byte damage to a valid header image: always an answer, never a
 * crash, and a header that passes describes exactly the buffer. */
static void test_header_check_random(void **state) {
  (void)state;
  b2s_shm_geometry g;
  assert_int_equal(b2s_shm_geometry_compute(2, 4096, &g), 0);
  uint64_t *img = calloc(1, g.total_size);
  assert_non_null(img);
  b2s_shm_header *h = (b2s_shm_header *)img;
  h->magic = B2S_SHM_MAGIC;
  h->version = B2S_SHM_VERSION;
  h->header_size = sizeof *h;
  h->desc_size = sizeof(b2s_shm_desc);
  h->nslots = 2;
  h->slot_size = 4096;
  h->slot_stride = g.slot_stride;
  h->desc_offset = g.desc_offset;
  h->data_offset = g.data_offset;
  h->total_size = g.total_size;
  h->creator_pid = 1;
  b2s_shm_header good;
  memcpy(&good, h, sizeof good);
  b2s_shm_geometry out;
  assert_int_equal(b2s_shm_header_check(img, g.total_size, &out), 0);
  assert_int_equal(out.nslots, 2);
  assert_int_equal(out.total_size, g.total_size);
  assert_int_equal(out.creator_pid, 1);
  assert_int_equal(b2s_shm_header_check(img, g.total_size - 1, NULL),
                   B2S_E_SHM_HEADER);
  assert_int_equal(b2s_shm_header_check(img, sizeof *h - 1, NULL),
                   B2S_E_SHM_HEADER);
  assert_int_equal(b2s_shm_header_check(NULL, g.total_size, NULL), B2S_E_ARG);

  uint64_t x = 12345;
  int passed = 0;
  for (int round = 0; round < 20000; round++) {
    memcpy(h, &good, sizeof good);
    for (int k = 0; k < 1 + round % 3; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      ((unsigned char *)h)[x % 96] = (unsigned char)(x >> 32);
    }
    int rc = b2s_shm_header_check(img, g.total_size, &out);
    if (rc == 0) {
      passed++;
      assert_int_equal(out.total_size, g.total_size);
      assert_true(out.data_offset + (size_t)out.nslots * out.slot_stride <=
                  g.total_size);
      assert_true(out.slot_size <= out.slot_stride);
    } else {
      assert_true(rc == B2S_E_SHM_HEADER || rc == B2S_E_PROTO_VERSION);
    }
  }
  assert_true(passed > 0);     /* e.g. changes to reserved bytes or the pid */
  free(img);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_geometry),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_create_attach),
      cmocka_unit_test(test_state_machine),
      cmocka_unit_test(test_daemon_rejects),
      cmocka_unit_test(test_producer_errors),
      cmocka_unit_test(test_acquire_timeout),
      cmocka_unit_test(test_release_wakes),
      cmocka_unit_test(test_destroy_wakes),
      cmocka_unit_test(test_reclaim_generation),
      cmocka_unit_test(test_killed_producer),
      cmocka_unit_test(test_fork_stream),
      cmocka_unit_test(test_thread_stream),
      cmocka_unit_test(test_stale_cleanup),
      cmocka_unit_test(test_attach_corrupt),
      cmocka_unit_test(test_header_check_random),
  };
  return ts_run_named("shm", tests, group_setup, group_teardown);
}
