/* Shared-memory slot transport; the model, states and trust rules are in
 * b2s_shm.h.  This file: layout arithmetic and header checks, create/attach,
 * the slot state machine, the futex wait, reclaim and stale cleanup.
 *
 * Wake-up protocol.  A producer never polls; it sleeps on free_seq, which
 * every path that frees a slot (release, cancel, reclaim, destroy, detach)
 * bumps after making the slot FREE:
 *
 *   producer, b2s_shm_acquire           daemon, wake_producers()
 *   A1 s = load(free_seq)   acquire     R1 slot state -> FREE  (CAS)
 *   A2 closed/generation check          R2 fetch_add(free_seq)  seq_cst
 *   A3 scan: CAS FREE -> FILLING        R3 if load(waiters) > 0 seq_cst
 *   A4 fetch_add(waiters)   seq_cst           futex_wake(free_seq, all)
 *   A5 futex_wait(free_seq, s)
 *   A6 fetch_sub(waiters)
 *
 * If R2 precedes A1 in free_seq's modification order, A1 synchronizes with
 * R2 and the scan A3 sees the FREE slot.  Otherwise the kernel compares
 * free_seq with s in A5: a difference returns at once and the loop scans
 * again; equality means the kernel's read came before R2, so A4 (and the
 * full barrier of the syscall) precede R3 in the single seq_cst order and
 * R3 sees the waiter and wakes it.  Hence no release is lost; a stale
 * waiter count only costs a spurious wake.
 *
 * Geometry (nslots, sizes, offsets) is copied into the process-private
 * handle once, when it is created or checked, and never read back from the
 * shared header, which the other side can write. */
#include "b2s_shm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "b2s_errors.h"

/* Shared atomics must work across processes: lock-free, and plain words. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics must be lock-free");
_Static_assert(ATOMIC_LONG_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2,
               "64-bit atomics must be lock-free");
_Static_assert(sizeof(_Atomic uint32_t) == 4, "futex word is 32 bits");
_Static_assert(sizeof(_Atomic uint64_t) == 8, "counters are 64 bits");
_Static_assert(sizeof(b2s_shm_header) == 256, "header layout");
_Static_assert(offsetof(b2s_shm_header, creator_pid) == 64, "header line 1");
_Static_assert(offsetof(b2s_shm_header, free_seq) == 128, "header line 2");
_Static_assert(offsetof(b2s_shm_header, submitted) == 192, "header line 3");
_Static_assert(sizeof(b2s_shm_desc) == 64, "descriptor layout");

#define SHM_DIR "/dev/shm"
#define NAME_HEAD "b2s-"

struct b2s_shm {
  bool daemon;           /* created it: unlinks on destroy */
  bool borrowed;         /* the mapping belongs to another handle */
  void *base;
  size_t size;
  b2s_shm_header *hdr;
  b2s_shm_desc *desc;
  unsigned char *data;
  uint32_t nslots;
  size_t slot_size;
  size_t stride;
  pid_t creator_pid;
  uint32_t pid;          /* producer: our pid as recorded in the header */
  uint32_t generation;   /* producer: the generation we attached in */
  atomic_uint cursor;    /* producer: where the next scan starts (a hint) */
  char name[B2S_SHM_NAME_MAX + 1];
  atomic_uchar mine[];   /* producer: slots this handle holds FILLING */
};

/* ---- layout ---------------------------------------------------------------- */

static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

int b2s_shm_geometry_compute(uint32_t nslots, size_t slot_size,
                             b2s_shm_geometry *out) {
  if (out == NULL || nslots == 0 || nslots > B2S_SHM_MAX_SLOTS ||
      slot_size == 0 || slot_size > B2S_SHM_MAX_SLOT_SIZE)
    return B2S_E_ARG;
  uint64_t stride = round_up(slot_size, B2S_SHM_ALIGN);
  uint64_t desc_off = sizeof(b2s_shm_header);
  uint64_t data_off = round_up(desc_off + (uint64_t)nslots *
                               sizeof(b2s_shm_desc), B2S_SHM_ALIGN);
  uint64_t total = data_off + (uint64_t)nslots * stride;   /* < 2^43 */
  if (total > SIZE_MAX || total > (uint64_t)INT64_MAX)
    return B2S_E_ARG;
  *out = (b2s_shm_geometry){
      .nslots = nslots, .slot_size = slot_size, .slot_stride = stride,
      .desc_offset = desc_off, .data_offset = data_off, .total_size = total};
  return 0;
}

int b2s_shm_header_check(const void *map, size_t map_size,
                         b2s_shm_geometry *out) {
  if (map == NULL)
    return B2S_E_ARG;
  if (map_size < sizeof(b2s_shm_header))
    return B2S_E_SHM_HEADER;
  /* One copy, so every field is read once even if the mapping changes. */
  b2s_shm_header h;
  memcpy(&h, map, sizeof h);
  if (h.magic != B2S_SHM_MAGIC)
    return B2S_E_SHM_HEADER;
  if (h.version != B2S_SHM_VERSION)
    return B2S_E_PROTO_VERSION;
  if (h.header_size != sizeof(b2s_shm_header) ||
      h.desc_size != sizeof(b2s_shm_desc) ||
      h.slot_size > B2S_SHM_MAX_SLOT_SIZE || h.creator_pid <= 0)
    return B2S_E_SHM_HEADER;
  b2s_shm_geometry g;
  if (b2s_shm_geometry_compute(h.nslots, (size_t)h.slot_size, &g) != 0)
    return B2S_E_SHM_HEADER;
  if (h.slot_stride != g.slot_stride || h.desc_offset != g.desc_offset ||
      h.data_offset != g.data_offset || h.total_size != g.total_size ||
      g.total_size != map_size)
    return B2S_E_SHM_HEADER;
  g.creator_pid = h.creator_pid;
  if (out != NULL)
    *out = g;
  return 0;
}

/* ---- names ----------------------------------------------------------------- */

static int prefix_check(const char *prefix) {
  if (prefix == NULL)
    return B2S_E_ARG;
  size_t n = strlen(prefix);
  if (n == 0 || n > B2S_SHM_PREFIX_MAX)
    return B2S_E_ARG;
  for (size_t i = 0; i < n; i++) {
    char c = prefix[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.';
    if (!ok)
      return B2S_E_ARG;
  }
  return 0;
}

static int name_check(const char *name) {
  if (name == NULL || name[0] != '/')
    return B2S_E_ARG;
  size_t n = strlen(name);
  if (n < 2 || n > B2S_SHM_NAME_MAX || strchr(name + 1, '/') != NULL)
    return B2S_E_ARG;
  return 0;
}

int b2s_shm_name_make(char *buf, size_t cap, const char *prefix, pid_t pid,
                      unsigned n) {
  if (buf == NULL || pid <= 0 || prefix_check(prefix) != 0)
    return B2S_E_ARG;
  int len = snprintf(buf, cap, "/" NAME_HEAD "%s-%ld-%u", prefix, (long)pid, n);
  if (len < 0)
    return B2S_E_ARG;
  if ((size_t)len >= cap)
    return B2S_E_DEST_SMALL;
  return len;
}

/* Decimal digits without sign or leading zero, up to `max`; advances *p. */
static bool parse_decimal(const char **p, unsigned long max,
                          unsigned long *out) {
  const char *s = *p;
  if (*s < '0' || *s > '9' || (*s == '0' && s[1] >= '0' && s[1] <= '9'))
    return false;
  unsigned long v = 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    v = v * 10 + (unsigned long)(*s - '0');
    if (v > max)
      return false;
  }
  *p = s;
  *out = v;
  return true;
}

/* The creator pid of "b2s-<prefix>-<pid>-<n>" (no leading '/'), or 0. */
static pid_t stale_name_pid(const char *entry, const char *head, size_t hl) {
  if (strncmp(entry, head, hl) != 0)
    return 0;
  const char *p = entry + hl;
  unsigned long pid, n;
  if (!parse_decimal(&p, INT32_MAX, &pid) || *p++ != '-' ||
      !parse_decimal(&p, UINT_MAX, &n) || *p != '\0' || pid == 0)
    return 0;
  return (pid_t)pid;
}

/* 1 when pid exists (possibly owned by someone else), 0 when not. */
static int pid_exists(pid_t pid) {
  if (kill(pid, 0) == 0 || errno == EPERM)
    return 1;
  return errno == ESRCH ? 0 : -errno;
}

int b2s_shm_cleanup_stale(const char *prefix) {
  if (prefix_check(prefix) != 0)
    return B2S_E_ARG;
  char head[sizeof NAME_HEAD + B2S_SHM_PREFIX_MAX + 1];
  int hl = snprintf(head, sizeof head, NAME_HEAD "%s-", prefix);
  DIR *dir = opendir(SHM_DIR);
  if (dir == NULL)
    return -errno;
  int removed = 0, first_err = 0;
  const struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    pid_t pid = stale_name_pid(e->d_name, head, (size_t)hl);
    if (pid == 0 || pid == getpid() || pid_exists(pid) != 0)
      continue;
    char path[B2S_SHM_NAME_MAX + 2];
    if (snprintf(path, sizeof path, "/%s", e->d_name) >= (int)sizeof path)
      continue;
    if (shm_unlink(path) == 0)
      removed++;
    else if (errno != ENOENT && first_err == 0)   /* ENOENT: raced, gone */
      first_err = -errno;
  }
  closedir(dir);
  return first_err != 0 ? first_err : removed;
}

/* ---- handles --------------------------------------------------------------- */

static b2s_shm *handle_new(const char *name, uint32_t nslots) {
  b2s_shm *seg = calloc(1, sizeof *seg + nslots * sizeof(atomic_uchar));
  if (seg == NULL)
    return NULL;
  snprintf(seg->name, sizeof seg->name, "%s", name);
  return seg;
}

static void handle_map(b2s_shm *seg, void *base, const b2s_shm_geometry *g) {
  seg->base = base;
  seg->size = g->total_size;
  seg->hdr = base;
  seg->desc = (b2s_shm_desc *)((unsigned char *)base + g->desc_offset);
  seg->data = (unsigned char *)base + g->data_offset;
  seg->nslots = g->nslots;
  seg->slot_size = g->slot_size;
  seg->stride = g->slot_stride;
  seg->creator_pid = g->creator_pid;
}

static void header_init(b2s_shm_header *h, const b2s_shm_geometry *g) {
  /* The object is new, hence zero: every slot FREE, every counter 0. */
  h->version = B2S_SHM_VERSION;
  h->header_size = sizeof *h;
  h->nslots = g->nslots;
  h->desc_size = sizeof(b2s_shm_desc);
  h->slot_size = g->slot_size;
  h->slot_stride = g->slot_stride;
  h->desc_offset = g->desc_offset;
  h->data_offset = g->data_offset;
  h->total_size = g->total_size;
  h->creator_pid = g->creator_pid;
  /* Magic last: a header with the magic is complete.  The name reaches the
   * producer only after create returns, which orders the rest anyway. */
  h->magic = B2S_SHM_MAGIC;
}

/* Size the new object and reserve its memory; -errno on failure. */
static int object_size(int fd, size_t total) {
  if (ftruncate(fd, (off_t)total) != 0)
    return -errno;
  int rc;
  do
    rc = posix_fallocate(fd, 0, (off_t)total);
  while (rc == EINTR);
  return -rc;
}

int b2s_shm_create(const char *name, uint32_t nslots, size_t slot_size,
                   size_t max_total, b2s_shm **out) {
  if (out == NULL)
    return B2S_E_ARG;
  *out = NULL;
  b2s_shm_geometry g;
  int rc = name_check(name);
  if (rc == 0)
    rc = b2s_shm_geometry_compute(nslots, slot_size, &g);
  if (rc != 0)
    return rc;
  if (g.total_size > max_total)
    return B2S_E_OVERSIZE;
  g.creator_pid = getpid();
  b2s_shm *seg = handle_new(name, 0);
  if (seg == NULL)
    return B2S_E_NOMEM;
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    rc = -errno;
    free(seg);
    return rc;
  }
  void *base = MAP_FAILED;
  rc = object_size(fd, g.total_size);
  if (rc == 0) {
    base = mmap(NULL, g.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
      rc = -errno;
  }
  close(fd);
  if (rc != 0) {
    shm_unlink(name);
    free(seg);
    return rc;
  }
  header_init(base, &g);
  handle_map(seg, base, &g);
  seg->daemon = true;
  *out = seg;
  return 0;
}

int b2s_shm_share_group(b2s_shm *seg, gid_t gid) {
  if (seg == NULL || !seg->daemon)
    return B2S_E_ARG;
  /* the name is not published yet, so nobody else has opened it */
  int fd = shm_open(seg->name, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    return -errno;
  int rc = fchown(fd, (uid_t)-1, gid) == 0 && fchmod(fd, 0660) == 0 ? 0 : -errno;
  close(fd);
  return rc;
}

/* Make every freed slot visible to waiting producers (R2, R3 above). */
static void wake_producers(b2s_shm_header *h) {
  /* R2: pairs with A1's acquire load, which then sees the FREE state, and
   * (seq_cst) orders this bump against A4's waiter registration. */
  atomic_fetch_add_explicit(&h->free_seq, 1, memory_order_seq_cst);
  /* R3: pairs with A4 (seq_cst); sees every waiter whose futex check read
   * the value before R2. */
  if (atomic_load_explicit(&h->waiters, memory_order_seq_cst) > 0)
    syscall(SYS_futex, (void *)&h->free_seq, FUTEX_WAKE, INT_MAX, NULL, NULL,
            0);
}

void b2s_shm_destroy(b2s_shm *seg) {
  if (seg == NULL)
    return;
  if (!seg->daemon) {
    b2s_shm_detach(seg);
    return;
  }
  /* Release: pairs with the acquire load of closed in still_ours(), which
   * the free_seq bump below guarantees a waiter performs after waking. */
  atomic_store_explicit(&seg->hdr->closed, 1, memory_order_release);
  wake_producers(seg->hdr);
  munmap(seg->base, seg->size);
  shm_unlink(seg->name);
  free(seg);
}

/* Largest object any valid header can describe. */
static size_t max_object_size(void) {
  b2s_shm_geometry g;
  b2s_shm_geometry_compute(B2S_SHM_MAX_SLOTS, B2S_SHM_MAX_SLOT_SIZE, &g);
  return g.total_size;
}

/* Map the whole object read-write after a size sanity check. */
static int map_existing(const char *name, void **base, size_t *size) {
  int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    return -errno;
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) != 0)
    rc = -errno;
  else if (st.st_size < (off_t)sizeof(b2s_shm_header) ||
           (uint64_t)st.st_size > max_object_size())
    rc = B2S_E_SHM_HEADER;
  if (rc == 0) {
    *size = (size_t)st.st_size;
    *base = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (*base == MAP_FAILED)
      rc = -errno;
  }
  close(fd);
  return rc;
}

/* Become the recorded producer of a mapped segment. */
static int producer_claim(b2s_shm *seg) {
  b2s_shm_header *h = seg->hdr;
  /* Acquire: pairs with the release store of closed in destroy. */
  if (atomic_load_explicit(&h->closed, memory_order_acquire) != 0)
    return B2S_E_CLOSED;
  uint32_t none = 0, me = (uint32_t)getpid();
  /* Acquire: pairs with the release stores of 0 in reclaim and detach, so
   * the generation read below is the one reclaim bumped. */
  if (!atomic_compare_exchange_strong_explicit(&h->producer_pid, &none, me,
                                               memory_order_acquire,
                                               memory_order_relaxed))
    return B2S_E_BUSY;
  seg->pid = me;
  /* Acquire: pairs with the fetch_add in reclaim (ordered by the above). */
  seg->generation = atomic_load_explicit(&h->generation, memory_order_acquire);
  return 0;
}

int b2s_shm_attach(const char *name, b2s_shm **out) {
  if (out == NULL)
    return B2S_E_ARG;
  *out = NULL;
  int rc = name_check(name);
  if (rc != 0)
    return rc;
  void *base = NULL;
  size_t size = 0;
  rc = map_existing(name, &base, &size);
  if (rc != 0)
    return rc;
  b2s_shm_geometry g;
  rc = b2s_shm_header_check(base, size, &g);
  b2s_shm *seg = rc == 0 ? handle_new(name, g.nslots) : NULL;
  if (rc == 0 && seg == NULL)
    rc = B2S_E_NOMEM;
  if (rc == 0) {
    handle_map(seg, base, &g);
    rc = producer_claim(seg);
  }
  if (rc != 0) {
    munmap(base, size);
    free(seg);
    return rc;
  }
  *out = seg;
  return 0;
}

int b2s_shm_attach_local(b2s_shm *daemon_seg, b2s_shm **out) {
  if (out == NULL)
    return B2S_E_ARG;
  *out = NULL;
  if (daemon_seg == NULL || !daemon_seg->daemon)
    return B2S_E_ARG;
  b2s_shm *seg = handle_new(daemon_seg->name, daemon_seg->nslots);
  if (seg == NULL)
    return B2S_E_NOMEM;
  b2s_shm_geometry g = {
      .nslots = daemon_seg->nslots, .slot_size = daemon_seg->slot_size,
      .slot_stride = daemon_seg->stride, .total_size = daemon_seg->size,
      .desc_offset = (size_t)((unsigned char *)daemon_seg->desc -
                              (unsigned char *)daemon_seg->base),
      .data_offset = (size_t)(daemon_seg->data -
                              (unsigned char *)daemon_seg->base),
      .creator_pid = daemon_seg->creator_pid};
  handle_map(seg, daemon_seg->base, &g);
  seg->borrowed = true;
  int rc = producer_claim(seg);
  if (rc != 0) {
    free(seg);
    return rc;
  }
  *out = seg;
  return 0;
}

/* ---- producer side ---------------------------------------------------------- */

/* B2S_E_CLOSED once the daemon destroyed the segment or reclaimed us. */
static int still_ours(const b2s_shm *seg) {
  /* Acquire: pairs with the release store in destroy. */
  if (atomic_load_explicit(&seg->hdr->closed, memory_order_acquire) != 0)
    return B2S_E_CLOSED;
  /* Acquire: pairs with the fetch_add in reclaim. */
  if (atomic_load_explicit(&seg->hdr->generation, memory_order_acquire) !=
      seg->generation)
    return B2S_E_CLOSED;
  return 0;
}

/* A3: claim one FREE slot, scanning from the cursor; its index or -1. */
static int64_t claim_free(b2s_shm *seg) {
  uint32_t n = seg->nslots;
  /* Relaxed: the cursor is a hint private to this handle. */
  uint32_t start = atomic_load_explicit(&seg->cursor, memory_order_relaxed);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t idx = (start + i) % n;
    b2s_shm_desc *d = &seg->desc[idx];
    /* Relaxed pre-check, to skip busy slots without writing their line;
     * the CAS below does the pairing. */
    if (atomic_load_explicit(&d->state, memory_order_relaxed) != B2S_SLOT_FREE)
      continue;
    uint32_t expect = B2S_SLOT_FREE;
    /* Acquire: pairs with the release CASes to FREE in release, cancel and
     * reclaim, so the daemon's reads of the old contents happen before our
     * writes into the slot. */
    if (!atomic_compare_exchange_strong_explicit(&d->state, &expect,
                                                 B2S_SLOT_FILLING,
                                                 memory_order_acquire,
                                                 memory_order_relaxed))
      continue;
    /* Relaxed: diagnostics only, pair with nothing. */
    atomic_store_explicit(&d->owner_pid, seg->pid, memory_order_relaxed);
    atomic_fetch_add_explicit(&d->uses, 1, memory_order_relaxed);
    /* Relaxed: private to this handle; the thread that acquires hands the
     * index on to whoever submits, which orders the two. */
    atomic_store_explicit(&seg->mine[idx], 1, memory_order_relaxed);
    /* Relaxed: a hint, pairs with nothing. */
    atomic_store_explicit(&seg->cursor, (idx + 1) % n, memory_order_relaxed);
    return idx;
  }
  return -1;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A4..A6: sleep until free_seq moves away from seq or ms elapse (ms < 0:
 * no limit). */
static void wait_free(b2s_shm_header *h, uint32_t seq, int64_t ms) {
  struct timespec rel = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
  /* A4, seq_cst: pairs with R3's load in wake_producers. */
  atomic_fetch_add_explicit(&h->waiters, 1, memory_order_seq_cst);
  /* Relaxed: a statistic, pairs with nothing. */
  atomic_fetch_add_explicit(&h->waits, 1, memory_order_relaxed);
  /* A5: returns at once when free_seq != seq (EAGAIN); EINTR and spurious
   * wakes just send the caller round its loop again. */
  syscall(SYS_futex, (void *)&h->free_seq, FUTEX_WAIT, seq,
          ms < 0 ? NULL : &rel, NULL, 0);
  /* A6, relaxed: pairs with R3; a late decrement costs a spurious wake. */
  atomic_fetch_sub_explicit(&h->waiters, 1, memory_order_relaxed);
}

int b2s_shm_acquire(b2s_shm *seg, int timeout_ms, uint32_t *slot, void **ptr) {
  if (seg == NULL || seg->daemon || slot == NULL)
    return B2S_E_ARG;
  b2s_shm_header *h = seg->hdr;
  int64_t deadline = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
  for (;;) {
    /* A1, acquire: pairs with R2 (fetch_add in wake_producers), so a slot
     * freed before this bump is seen FREE by the scan below. */
    uint32_t seq = atomic_load_explicit(&h->free_seq, memory_order_acquire);
    int rc = still_ours(seg);   /* A2: after A1, so destroy can't be missed */
    if (rc != 0)
      return rc;
    int64_t idx = claim_free(seg);
    if (idx >= 0) {
      *slot = (uint32_t)idx;
      if (ptr != NULL)
        *ptr = seg->data + (size_t)idx * seg->stride;
      return 0;
    }
    int64_t left = -1;                          /* no limit */
    if (timeout_ms >= 0) {
      left = timeout_ms == 0 ? 0 : deadline - now_ms();
      if (left <= 0) {
        /* Relaxed: a statistic, pairs with nothing. */
        atomic_fetch_add_explicit(&h->timeouts, 1, memory_order_relaxed);
        return B2S_E_TIMEOUT;
      }
    }
    wait_free(h, seq, left);
  }
}

static int producer_slot(const b2s_shm *seg, uint32_t slot) {
  if (seg == NULL || seg->daemon)
    return B2S_E_ARG;
  return slot < seg->nslots ? 0 : B2S_E_SHM_SLOT;
}

/* Give up this handle's claim on slot; B2S_E_SHM_STATE if it had none. */
static int disown(b2s_shm *seg, uint32_t slot) {
  /* Relaxed: private to this handle (see claim_free). */
  return atomic_exchange_explicit(&seg->mine[slot], 0, memory_order_relaxed)
             ? 0
             : B2S_E_SHM_STATE;
}

int b2s_shm_submit(b2s_shm *seg, uint32_t slot, size_t len,
                   uint64_t buffer_id) {
  int rc = producer_slot(seg, slot);
  if (rc != 0)
    return rc;
  /* Relaxed peek: ownership is re-checked by disown below. */
  if (!atomic_load_explicit(&seg->mine[slot], memory_order_relaxed))
    return B2S_E_SHM_STATE;
  if (len > seg->slot_size)
    return B2S_E_OVERSIZE;      /* still ours: fix up and submit again */
  rc = still_ours(seg);
  if (rc != 0 || (rc = disown(seg, slot)) != 0)
    return rc;
  b2s_shm_desc *d = &seg->desc[slot];
  /* Relaxed: published by the release CAS below. */
  atomic_store_explicit(&d->length, len, memory_order_relaxed);
  atomic_store_explicit(&d->buffer_id, buffer_id, memory_order_relaxed);
  uint32_t expect = B2S_SLOT_FILLING;
  /* Release: pairs with the acquire CAS in take_submitted, which then sees
   * the slot's bytes, length and buffer id. */
  if (!atomic_compare_exchange_strong_explicit(&d->state, &expect,
                                               B2S_SLOT_SUBMITTED,
                                               memory_order_release,
                                               memory_order_relaxed))
    return still_ours(seg) != 0 ? B2S_E_CLOSED : B2S_E_SHM_STATE;
  /* Relaxed: a statistic, pairs with nothing. */
  atomic_fetch_add_explicit(&seg->hdr->submitted, 1, memory_order_relaxed);
  return 0;
}

/* FILLING -> FREE for a slot the caller owns; true when it was FILLING. */
static bool fill_abort(b2s_shm_desc *d) {
  uint32_t expect = B2S_SLOT_FILLING;
  /* Release: pairs with the acquire CAS in claim_free (nothing of ours is
   * read later, but the next filler starts after us). */
  return atomic_compare_exchange_strong_explicit(&d->state, &expect,
                                                 B2S_SLOT_FREE,
                                                 memory_order_release,
                                                 memory_order_relaxed);
}

int b2s_shm_cancel(b2s_shm *seg, uint32_t slot) {
  int rc = producer_slot(seg, slot);
  if (rc != 0 || (rc = disown(seg, slot)) != 0)
    return rc;
  if (still_ours(seg) != 0)
    return B2S_E_CLOSED;        /* reclaimed already: not ours to free */
  if (!fill_abort(&seg->desc[slot]))
    return B2S_E_SHM_STATE;
  wake_producers(seg->hdr);     /* other threads of ours may wait */
  return 0;
}

void b2s_shm_detach(b2s_shm *seg) {
  if (seg == NULL)
    return;
  if (seg->daemon) {
    b2s_shm_destroy(seg);
    return;
  }
  b2s_shm_header *h = seg->hdr;
  /* After a reclaim the slots and the producer record are no longer ours. */
  if (atomic_load_explicit(&h->generation, memory_order_acquire) ==
      seg->generation) {        /* acquire: pairs with reclaim's fetch_add */
    bool freed = false;
    for (uint32_t i = 0; i < seg->nslots; i++)
      if (disown(seg, i) == 0)
        freed |= fill_abort(&seg->desc[i]);
    uint32_t me = seg->pid;
    /* Release: pairs with the acquire CAS in producer_claim. */
    atomic_compare_exchange_strong_explicit(&h->producer_pid, &me, 0,
                                            memory_order_release,
                                            memory_order_relaxed);
    if (freed)
      wake_producers(h);
  }
  if (!seg->borrowed)
    munmap(seg->base, seg->size);
  free(seg);
}

/* ---- daemon side ------------------------------------------------------------ */

static int daemon_slot(const b2s_shm *seg, uint32_t slot) {
  if (seg == NULL || !seg->daemon)
    return B2S_E_ARG;
  return slot < seg->nslots ? 0 : B2S_E_SHM_SLOT;
}

int b2s_shm_take_submitted(b2s_shm *seg, uint32_t slot, size_t len,
                           const void **data, uint64_t *buffer_id) {
  int rc = daemon_slot(seg, slot);
  if (rc != 0)
    return rc;
  if (len > seg->slot_size)
    return B2S_E_OVERSIZE;
  b2s_shm_desc *d = &seg->desc[slot];
  uint32_t expect = B2S_SLOT_SUBMITTED;
  /* Acquire: pairs with the release CAS in submit, so the bytes, length and
   * id written before it are visible.  Only one taker can win. */
  if (!atomic_compare_exchange_strong_explicit(&d->state, &expect,
                                               B2S_SLOT_TAKEN,
                                               memory_order_acquire,
                                               memory_order_relaxed))
    return B2S_E_SHM_STATE;
  /* Relaxed: ordered by the acquire CAS above. */
  if (atomic_load_explicit(&d->length, memory_order_relaxed) != len) {
    expect = B2S_SLOT_TAKEN;
    /* Relaxed: puts back what we took without touching the slot; pairs
     * with nothing. */
    atomic_compare_exchange_strong_explicit(&d->state, &expect,
                                            B2S_SLOT_SUBMITTED,
                                            memory_order_relaxed,
                                            memory_order_relaxed);
    return B2S_E_PROTO;
  }
  if (data != NULL)
    *data = seg->data + (size_t)slot * seg->stride;
  if (buffer_id != NULL)        /* relaxed: ordered by the acquire CAS */
    *buffer_id = atomic_load_explicit(&d->buffer_id, memory_order_relaxed);
  /* Relaxed: a statistic, pairs with nothing. */
  atomic_fetch_add_explicit(&seg->hdr->taken, 1, memory_order_relaxed);
  return 0;
}

int b2s_shm_release(b2s_shm *seg, uint32_t slot) {
  int rc = daemon_slot(seg, slot);
  if (rc != 0)
    return rc;
  uint32_t expect = B2S_SLOT_TAKEN;
  /* R1, release: pairs with the acquire CAS in claim_free, so our reads of
   * the slot happen before the producer writes into it again. */
  if (!atomic_compare_exchange_strong_explicit(&seg->desc[slot].state, &expect,
                                               B2S_SLOT_FREE,
                                               memory_order_release,
                                               memory_order_relaxed))
    return B2S_E_SHM_STATE;
  /* Relaxed: a statistic, pairs with nothing. */
  atomic_fetch_add_explicit(&seg->hdr->released, 1, memory_order_relaxed);
  wake_producers(seg->hdr);
  return 0;
}

/* CAS every slot in state `from` to FREE; how many moved. */
static int free_all(b2s_shm *seg, uint32_t from) {
  int n = 0;
  for (uint32_t i = 0; i < seg->nslots; i++) {
    uint32_t expect = from;
    /* Release: pairs with the acquire CAS in claim_free (R1 for these). */
    if (atomic_compare_exchange_strong_explicit(&seg->desc[i].state, &expect,
                                                B2S_SLOT_FREE,
                                                memory_order_release,
                                                memory_order_relaxed))
      n++;
  }
  return n;
}

int b2s_shm_reclaim(b2s_shm *seg) {
  if (seg == NULL || !seg->daemon)
    return B2S_E_ARG;
  b2s_shm_header *h = seg->hdr;
  /* Release: pairs with the acquire loads in still_ours, detach and
   * producer_claim; done first so the old producer's library stops. */
  atomic_fetch_add_explicit(&h->generation, 1, memory_order_release);
  int n = free_all(seg, B2S_SLOT_FILLING);
  /* Release: pairs with the acquire CAS in producer_claim, which then reads
   * the new generation. */
  atomic_store_explicit(&h->producer_pid, 0, memory_order_release);
  /* Relaxed: a statistic, pairs with nothing. */
  atomic_fetch_add_explicit(&h->reclaimed, (uint64_t)n, memory_order_relaxed);
  wake_producers(h);   /* slots freed, and old waiters must see CLOSED */
  return n;
}

int b2s_shm_reclaim_submitted(b2s_shm *seg) {
  if (seg == NULL || !seg->daemon)
    return B2S_E_ARG;
  int n = free_all(seg, B2S_SLOT_SUBMITTED);
  /* Relaxed: a statistic, pairs with nothing. */
  atomic_fetch_add_explicit(&seg->hdr->reclaimed, (uint64_t)n,
                            memory_order_relaxed);
  if (n > 0)
    wake_producers(seg->hdr);
  return n;
}

int b2s_shm_producer_alive(const b2s_shm *seg) {
  if (seg == NULL)
    return B2S_E_ARG;
  /* Acquire: pairs with the CAS in producer_claim. */
  uint32_t pid = atomic_load_explicit(&seg->hdr->producer_pid,
                                      memory_order_acquire);
  /* The producer wrote it: never pass 0, -1 or a group id to kill(). */
  if (pid == 0 || pid > INT32_MAX)
    return 0;
  return pid_exists((pid_t)pid);
}

/* ---- both sides --------------------------------------------------------------- */

int b2s_shm_account(const b2s_shm *seg, b2s_shm_counts *out) {
  if (seg == NULL || out == NULL)
    return B2S_E_ARG;
  b2s_shm_counts c = {.total = seg->nslots};
  for (uint32_t i = 0; i < seg->nslots; i++) {
    /* Relaxed: a count, reads no slot data; pairs with nothing. */
    switch (atomic_load_explicit(&seg->desc[i].state, memory_order_relaxed)) {
    case B2S_SLOT_FREE: c.free++; break;
    case B2S_SLOT_FILLING: c.filling++; break;
    case B2S_SLOT_SUBMITTED: c.submitted++; break;
    case B2S_SLOT_TAKEN: c.taken++; break;
    default: c.invalid++; break;
    }
  }
  *out = c;
  return 0;
}

int b2s_shm_check(const b2s_shm *seg) {
  b2s_shm_counts c;
  int rc = b2s_shm_account(seg, &c);
  if (rc != 0)
    return rc;
  if (c.invalid != 0 ||
      (uint64_t)c.free + c.filling + c.submitted + c.taken != c.total)
    return B2S_E_SHM_ACCOUNT;
  return 0;
}

int b2s_shm_stats_get(const b2s_shm *seg, b2s_shm_stats *out) {
  if (seg == NULL || out == NULL)
    return B2S_E_ARG;
  const b2s_shm_header *h = seg->hdr;
  /* Relaxed throughout: statistics, pair with nothing. */
  *out = (b2s_shm_stats){
      .submitted = atomic_load_explicit(&h->submitted, memory_order_relaxed),
      .taken = atomic_load_explicit(&h->taken, memory_order_relaxed),
      .released = atomic_load_explicit(&h->released, memory_order_relaxed),
      .reclaimed = atomic_load_explicit(&h->reclaimed, memory_order_relaxed),
      .waits = atomic_load_explicit(&h->waits, memory_order_relaxed),
      .timeouts = atomic_load_explicit(&h->timeouts, memory_order_relaxed),
      .generation = atomic_load_explicit(&h->generation, memory_order_relaxed),
      .creator_pid = seg->creator_pid,
      .producer_pid = (pid_t)atomic_load_explicit(&h->producer_pid,
                                                  memory_order_relaxed)};
  return 0;
}

const char *b2s_shm_name(const b2s_shm *seg) {
  return seg != NULL ? seg->name : NULL;
}

uint32_t b2s_shm_nslots(const b2s_shm *seg) {
  return seg != NULL ? seg->nslots : 0;
}

size_t b2s_shm_slot_size(const b2s_shm *seg) {
  return seg != NULL ? seg->slot_size : 0;
}

void *b2s_shm_slot_ptr(const b2s_shm *seg, uint32_t slot) {
  if (seg == NULL || slot >= seg->nslots)
    return NULL;
  return seg->data + (size_t)slot * seg->stride;
}

int b2s_shm_slot_state(const b2s_shm *seg, uint32_t slot) {
  if (seg == NULL)
    return B2S_E_ARG;
  if (slot >= seg->nslots)
    return B2S_E_SHM_SLOT;
  /* Relaxed: an observation for diagnostics; pairs with nothing. */
  return (int)atomic_load_explicit(&seg->desc[slot].state,
                                   memory_order_relaxed);
}
