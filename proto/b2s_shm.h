/* Shared-memory transport: a POSIX shared-memory segment of fixed-size
 * slots that a producer fills and the daemon compresses from in place.
 *
 * Roles.  The daemon creates a segment per attached producer
 * (b2s_shm_create), sends its name to the producer (over ZeroMQ, not here),
 * and destroys it when done (unmap + unlink).  The producer maps it
 * (b2s_shm_attach), acquires a FREE slot, fills it, submits it and sends a
 * notice carrying the slot index and length; a daemon worker takes the slot
 * (b2s_shm_take_submitted), compresses straight from it and releases it.
 *
 *     FREE --acquire (producer)--> FILLING --submit (producer)--> SUBMITTED
 *       ^                            |                               |
 *       |     reclaim (daemon, dead producer)      take (daemon) ----+
 *       +----------------------------+                               v
 *       +------------------- release (daemon) ------------------- TAKEN
 *
 * Every transition is a compare-and-swap on the slot's 32-bit state in the
 * shared mapping, so a slot is in exactly one state at any instant and a
 * duplicated or forged notice cannot hand one slot to two workers.
 * Accounting: free + filling + submitted + taken == total, always
 * (b2s_shm_account, b2s_shm_check).  "In flight" is everything not FREE.
 *
 * Waiting.  A producer with no FREE slot sleeps on a process-shared futex
 * (a counter in the header that every release bumps) with a timeout; the
 * daemon wakes it only when a waiter is registered, and no release can be
 * lost (see shm.c for the protocol).
 *
 * Trust.  The daemon never trusts the producer: the geometry it uses comes
 * from its own handle, never from the shared header; slot indexes, lengths
 * and states are checked on every call; a producer that scribbles over the
 * shared mapping can only spoil its own buffers.  The producer checks the
 * header it maps against the mapping size before using anything in it.
 * Known limit: a producer running as the daemon's user can ftruncate the
 * object, and the daemon would then fault on the missing pages; only a
 * sealed memfd passed over a Unix socket closes that.
 *
 * Threads.  No threads, sockets or logging of its own.  A handle may be
 * used by several threads of its process at once (acquire/submit on the
 * producer side, take/release/reclaim on the daemon side), except that
 * b2s_shm_destroy and b2s_shm_detach must be the last call on it.
 *
 * Ownership.  Handles are heap objects released by destroy/detach (both
 * accept NULL).  Slot pointers stay valid until then; a slot's bytes belong
 * to the producer between acquire and submit, and to the daemon between
 * take and release. */
#ifndef B2S_SHM_H
#define B2S_SHM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- limits -------------------------------------------------------------- */

#define B2S_SHM_MAX_SLOTS     4096u
#define B2S_SHM_MAX_SLOT_SIZE ((size_t)1 << 30)   /* 1 GiB */
#define B2S_SHM_ALIGN         4096u                /* slot start and stride */
#define B2S_SHM_NAME_MAX      255                  /* NAME_MAX of /dev/shm */
#define B2S_SHM_PREFIX_MAX    64

/* ---- shared layout (the contract between daemon and producer) ------------
 *
 * [header: 256 bytes][descriptors: nslots x 64 bytes][pad to 4096]
 * [slot 0: stride bytes][slot 1] ...            stride = slot_size rounded
 *                                               up to B2S_SHM_ALIGN
 * Multi-byte fields are in the host's byte order (one machine).  Geometry
 * fields are written once by the daemon before the name is published.  The
 * atomics must be lock-free (asserted in shm.c): a lock-based atomic would
 * lock a table private to one process. */

#define B2S_SHM_MAGIC   UINT64_C(0x314d485353324230)   /* "0B2SSHM1" */
#define B2S_SHM_VERSION 1u

enum b2s_shm_state {
  B2S_SLOT_FREE = 0,
  B2S_SLOT_FILLING = 1,
  B2S_SLOT_SUBMITTED = 2,
  B2S_SLOT_TAKEN = 3,
};

typedef struct b2s_shm_header {
  /* line 0: geometry, immutable after create */
  uint64_t magic;
  uint32_t version;
  uint32_t header_size;            /* sizeof(b2s_shm_header) */
  uint32_t nslots;
  uint32_t desc_size;              /* sizeof(b2s_shm_desc) */
  uint64_t slot_size;              /* usable bytes per slot */
  uint64_t slot_stride;            /* distance between slots */
  uint64_t desc_offset;
  uint64_t data_offset;
  uint64_t total_size;             /* equals the object's size */
  /* line 1: ownership */
  int32_t creator_pid;             /* the daemon that created it */
  _Atomic uint32_t producer_pid;   /* 0 = no producer attached */
  _Atomic uint32_t generation;     /* bumped when a producer is reclaimed */
  _Atomic uint32_t closed;         /* set by the daemon on destroy */
  uint32_t reserved1[12];
  /* line 2: the futex word and its waiter count, alone on their line */
  _Atomic uint32_t free_seq;       /* bumped on every slot freed */
  _Atomic uint32_t waiters;        /* producers between register and wake */
  uint32_t reserved2[14];
  /* line 3: statistics; informative only (a producer can write them) */
  _Atomic uint64_t submitted;
  _Atomic uint64_t taken;
  _Atomic uint64_t released;
  _Atomic uint64_t reclaimed;
  _Atomic uint64_t waits;
  _Atomic uint64_t timeouts;
  uint64_t reserved3[2];
} b2s_shm_header;

typedef struct b2s_shm_desc {
  _Atomic uint32_t state;          /* enum b2s_shm_state */
  _Atomic uint32_t owner_pid;      /* pid that last acquired it */
  _Atomic uint64_t length;         /* written before submit */
  _Atomic uint64_t buffer_id;      /* the producer's id, written before submit */
  _Atomic uint64_t uses;           /* acquire count, for diagnostics */
  uint64_t reserved[4];
} b2s_shm_desc;

/* Geometry read from a header by b2s_shm_header_check. */
typedef struct b2s_shm_geometry {
  uint32_t nslots;
  size_t slot_size;
  size_t slot_stride;
  size_t desc_offset;
  size_t data_offset;
  size_t total_size;
  pid_t creator_pid;
} b2s_shm_geometry;

/* Layout of a segment of nslots x slot_size, or B2S_E_ARG when outside the
 * limits.  Pure arithmetic; creator_pid is left 0. */
int b2s_shm_geometry_compute(uint32_t nslots, size_t slot_size,
                             b2s_shm_geometry *out);

/* Check a mapped header: magic, version (B2S_E_PROTO_VERSION), structure
 * sizes, limits and every offset and size consistent with map_size, which
 * must equal the total size (B2S_E_SHM_HEADER otherwise).  Reads only the
 * first sizeof(b2s_shm_header) bytes, and none when map_size is smaller.
 * `map` must be 8-byte aligned.  out may be NULL. */
int b2s_shm_header_check(const void *map, size_t map_size,
                         b2s_shm_geometry *out);

/* ---- names --------------------------------------------------------------- */

/* "/b2s-<prefix>-<pid>-<n>" into buf.  The prefix is 1..B2S_SHM_PREFIX_MAX
 * characters of [A-Za-z0-9_.] (B2S_E_ARG otherwise); B2S_E_DEST_SMALL when
 * cap is too small.  Returns the name's length. */
int b2s_shm_name_make(char *buf, size_t cap, const char *prefix, pid_t pid,
                      unsigned n);

/* Unlink every segment named "/b2s-<prefix>-<pid>-<n>" whose <pid> no
 * longer exists (kill(pid, 0) fails with ESRCH), i.e. those left by a daemon
 * that died; call it at start.  Names that do not parse are left alone.
 * Returns how many were removed, or a negative error (e.g. -ENOENT when
 * /dev/shm is missing). */
int b2s_shm_cleanup_stale(const char *prefix);

/* ---- handles --------------------------------------------------------------- */

typedef struct b2s_shm b2s_shm;

/* ---- daemon side ----------------------------------------------------------- */

/* Create, size (with the memory reserved up front, so a full /dev/shm is
 * -ENOSPC here rather than SIGBUS later) and map a new segment:
 * shm_open(O_CREAT | O_EXCL, 0600).  nslots 1..B2S_SHM_MAX_SLOTS, slot_size
 * 1..B2S_SHM_MAX_SLOT_SIZE (B2S_E_ARG); B2S_E_OVERSIZE when the total size
 * would exceed max_total; -EEXIST when the name is taken.  The name is
 * "/" followed by 1..B2S_SHM_NAME_MAX-1 characters without '/'. */
int b2s_shm_create(const char *name, uint32_t nslots, size_t slot_size,
                   size_t max_total, b2s_shm **out);

/* Let members of group gid map the segment too (mode 0660, group gid), for
 * producers running as other users.  Call before publishing the name. */
int b2s_shm_share_group(b2s_shm *seg, gid_t gid);

/* Wake every waiting producer with B2S_E_CLOSED, unmap and unlink.
 * Slots still TAKEN must not be used afterwards.  Accepts NULL. */
void b2s_shm_destroy(b2s_shm *seg);

/* Take a slot named by a submit notice: `slot` and `len` come from the
 * notice and are checked here.  B2S_E_SHM_SLOT when slot >= nslots,
 * B2S_E_OVERSIZE when len > slot size, B2S_E_SHM_STATE when the slot is not
 * SUBMITTED (free, still filling, or already taken by a duplicate notice),
 * B2S_E_PROTO when len differs from the length the producer recorded at
 * submit (the slot stays SUBMITTED).  On success the slot is TAKEN and
 * *data points at its len bytes; buffer_id may be NULL. */
int b2s_shm_take_submitted(b2s_shm *seg, uint32_t slot, size_t len,
                           const void **data, uint64_t *buffer_id);

/* Return a TAKEN slot to FREE once its bytes are no longer read, and wake a
 * waiting producer.  B2S_E_SHM_SLOT / B2S_E_SHM_STATE when not TAKEN. */
int b2s_shm_release(b2s_shm *seg, uint32_t slot);

/* The producer is gone (its pid no longer exists or its connection
 * dropped): return every FILLING slot to FREE, forget the producer (so a
 * new one may attach) and bump the generation, so the old producer's
 * library, should it still run, gets B2S_E_CLOSED.  SUBMITTED and TAKEN
 * slots stay with the daemon.  Returns how many slots were freed.  Only
 * safe once the producer can no longer write: a live producer keeps
 * writing into the slots it thinks it holds. */
int b2s_shm_reclaim(b2s_shm *seg);

/* After b2s_shm_reclaim and once every notice that producer sent has been
 * handled: return the SUBMITTED slots whose notice never arrived to FREE.
 * TAKEN slots are untouched.  Returns how many. */
int b2s_shm_reclaim_submitted(b2s_shm *seg);

/* 1 when a producer is recorded and its pid exists (kill(pid, 0) succeeds
 * or fails with EPERM), 0 when none is recorded or it is gone (a killed
 * child counts as alive until it is reaped), negative on error.  The pid
 * is what the producer wrote at attach. */
int b2s_shm_producer_alive(const b2s_shm *seg);

/* ---- producer side --------------------------------------------------------- */

/* Map an existing segment and check its header against the object's size
 * (B2S_E_SHM_HEADER, B2S_E_PROTO_VERSION; -ENOENT when there is none);
 * records this process as the producer (B2S_E_BUSY when one is recorded;
 * B2S_E_CLOSED when the daemon has destroyed it). */
int b2s_shm_attach(const char *name, b2s_shm **out);

/* A producer handle on a daemon handle's own mapping, for a producer living
 * in the daemon's process (in-process sources, tests).  The daemon handle
 * must outlive it. */
int b2s_shm_attach_local(b2s_shm *daemon_seg, b2s_shm **out);

/* Acquire a FREE slot for filling.  timeout_ms < 0 waits without limit,
 * 0 does not wait.  B2S_E_TIMEOUT when none came free in time,
 * B2S_E_CLOSED when the daemon destroyed the segment or reclaimed this
 * producer.  *slot gets the index, *ptr (may be NULL) its first byte. */
int b2s_shm_acquire(b2s_shm *seg, int timeout_ms, uint32_t *slot, void **ptr);

/* Hand a filled slot to the daemon: records len and buffer_id and makes
 * the slot SUBMITTED; the caller then sends the notice (slot, len).
 * B2S_E_SHM_SLOT, B2S_E_SHM_STATE when this handle did not acquire it,
 * B2S_E_OVERSIZE when len > slot size (the slot stays FILLING),
 * B2S_E_CLOSED as for acquire (the slot is then no longer ours). */
int b2s_shm_submit(b2s_shm *seg, uint32_t slot, size_t len,
                   uint64_t buffer_id);

/* Give back an acquired slot without submitting it (B2S_E_SHM_STATE when
 * this handle does not hold it, B2S_E_CLOSED as for submit). */
int b2s_shm_cancel(b2s_shm *seg, uint32_t slot);

/* Return this handle's FILLING slots, stop being the recorded producer and
 * unmap.  Accepts NULL. */
void b2s_shm_detach(b2s_shm *seg);

/* ---- both sides ------------------------------------------------------------- */

typedef struct b2s_shm_counts {
  uint32_t total;
  uint32_t free;
  uint32_t filling;
  uint32_t submitted;
  uint32_t taken;
  uint32_t invalid;    /* states outside the enum: a corrupted segment */
} b2s_shm_counts;

/* Count the slots per state (one load per slot; each slot is counted once,
 * in the state it had at that load).  Returns 0. */
int b2s_shm_account(const b2s_shm *seg, b2s_shm_counts *out);

/* The invariant: every state valid and free + filling + submitted + taken
 * == total.  0, or B2S_E_SHM_ACCOUNT (the producer wrote garbage into the
 * segment, or a bug). */
int b2s_shm_check(const b2s_shm *seg);

typedef struct b2s_shm_stats {
  uint64_t submitted, taken, released, reclaimed, waits, timeouts;
  uint32_t generation;
  pid_t creator_pid;
  pid_t producer_pid;   /* 0 when none */
} b2s_shm_stats;

/* Snapshot of the shared counters (informative: a producer can write them). */
int b2s_shm_stats_get(const b2s_shm *seg, b2s_shm_stats *out);

const char *b2s_shm_name(const b2s_shm *seg);
uint32_t b2s_shm_nslots(const b2s_shm *seg);
size_t b2s_shm_slot_size(const b2s_shm *seg);
/* First byte of a slot (B2S_SHM_ALIGN-aligned), NULL when out of range. */
void *b2s_shm_slot_ptr(const b2s_shm *seg, uint32_t slot);
/* State of one slot, or B2S_E_SHM_SLOT. */
int b2s_shm_slot_state(const b2s_shm *seg, uint32_t slot);

#endif
