/* Streams and their writer threads: opening a stream's frame (with the
 * frame writer's drop-behind for buffered contiguous frames) and the writer
 * that appends and commits its chunks.
 *
 * One writer thread per stream owns the stream's b2s_pair (its data frame
 * and the records frame beside it, chunk i <-> record i).  Workers hand
 * it chunks in any order; it keeps them in a list sorted by sequence number
 * (the reorder buffer: out-of-order completion is bounded by the number of
 * workers plus drop-oldest tombstones), appends them strictly in order and
 * commits in groups (group_count chunks or group_interval_ms, earlier when
 * a flush or the drain asks; groupcommit.c decides when).  Only after a
 * commit does it publish the new committed count and sequence levels
 * (progress.h), then wake the I/O thread, which acknowledges and
 * notifies: nothing is announced before it is true.
 *
 * Durability: a stream with ack fsync opens its writer with B2S_SYNC_FULL.
 * For the other streams a FLUSH (or the drain) makes the committed state
 * durable with syncfs(2) on the frame's filesystem, which covers the frame
 * file, a sparse frame's chunk files and their directory entries. */
#define _GNU_SOURCE
#include "b2s_assert.h"
#include "chunkpool.h"
#include "clock.h"
#include "dirlock.h"
#include "acqfile.h"
#include "dwriter.h"
#include "groupcommit.h"
#include "progress.h"
#include "b2s_wire.h"
#include "fscheck.h"
#include "handoff.h"
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void ingest_publish(b2sd_stream *st);

static int mkdir_parents(const char *path) {
  char buf[B2S_CONFIG_PATH_MAX];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, 0750) < 0 && errno != EEXIST)
      return -errno;
    *p = '/';
  }
  return 0;
}

static int sync_fs_of(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  int rc = syncfs(fd) < 0 ? -errno : 0;
  close(fd);
  return rc;
}

static int create_frame(b2sd_stream *st, const b2s_stream_cfg *cfg,
                        const b2s_fwriter_opts *opts) {
  b2s_frame_metas metas;
  b2s_frame_metas_init(&metas);
  int rc = 0;
  if (cfg->b2nd.enabled) {
    b2s_b2nd nd;
    b2s_stream_cfg_b2nd(cfg, &nd);
    rc = b2s_frame_metas_add_b2nd(&metas, &nd);
  }
  if (rc >= 0)
    rc = b2s_pair_create(st->path, cfg->format == B2S_FORMAT_SPARSE, opts,
                         &metas, &st->fw);
  b2s_frame_metas_fini(&metas);
  /* Configured series defaults, committed now so that readers see them
   * before any chunk; a frame opened again keeps its own map. */
  if (rc >= 0 && cfg->series_len > 0) {
    rc = b2s_fwriter_series_set(b2s_pair_data(st->fw), cfg->series,
                                cfg->series_len);
    if (rc >= 0)
      rc = b2s_pair_commit(st->fw);
    if (rc < 0) {
      b2s_pair_free(st->fw);
      st->fw = NULL;
    }
  }
  return rc < 0 ? rc : 0;
}

/* Direct I/O keeps two stages per writer (b2s_fwriter_stage_bytes), which
 * count against memory_limit.  A stream whose stages would leave less than
 * half of it for buffers in flight writes through the page cache instead:
 * stages that starve ingest would stop every stream. */
static bool stage_fits(b2sd_server *srv, const char *name) {
  /* relaxed: see b2sd_memory_headroom; streams open on the I/O thread */
  int64_t used = atomic_load_explicit(&srv->stage_bytes, memory_order_relaxed);
  int64_t more = (int64_t)B2S_FWRITER_STAGE_BYTES;
  if (used + more <= srv->dcfg.memory_limit / 2)
    return true;
  LOG_W("stream %s: memory_limit %lld leaves no room for %lld more bytes of "
        "direct-I/O stages; chunk data goes through the page cache",
        name, (long long)srv->dcfg.memory_limit, (long long)more);
  return false;
}

static void stage_account(b2sd_stream *st) {
  st->stage_bytes = (int64_t)b2s_fwriter_stage_bytes(b2s_pair_data(st->fw)) +
                    (int64_t)b2s_fwriter_stage_bytes(b2s_pair_records(st->fw));
  /* relaxed: see b2sd_memory_headroom */
  atomic_fetch_add_explicit(&st->srv->stage_bytes, st->stage_bytes,
                            memory_order_relaxed);
}

/* The writer options of a stream's configuration. */
static b2s_fwriter_opts writer_opts(b2sd_stream *st, const b2s_stream_cfg *cfg) {
  b2s_fwriter_opts opts = B2S_FWRITER_OPTS_DEFAULTS;
  opts.cparams = cfg->cparams;
  opts.sync = cfg->durability.ack == B2S_ACK_FSYNC ? B2S_SYNC_FULL
                                                   : B2S_SYNC_NONE;
  opts.compact_on_close = true;
  opts.direct_io = cfg->io == B2S_IO_DIRECT &&
                   cfg->format == B2S_FORMAT_CONTIGUOUS &&
                   stage_fits(st->srv, st->name);
  /* the writer paces write-out of data that goes through the page cache */
  opts.drop_behind = true;
  return opts;
}

/* An existing frame: both frames back to their last commit and aligned
 * (no chunk without its record), then open for appending (a frame written
 * before records gets its records frame). */
static int open_existing(b2sd_stream *st, const b2s_fwriter_opts *opts) {
  b2s_frame_error ferr = {0};
  b2s_pair_report pr = {0};
  int rc = b2s_pair_recover(st->path, false, &pr, &ferr);
  if (rc < 0) {
    snprintf(st->fail_reason, sizeof st->fail_reason,
             "recovering the frame failed: %s (%s at offset %lld)",
             b2s_strerror(rc), ferr.reason ? ferr.reason : "?",
             (long long)ferr.offset);
    return rc;
  }
  const b2s_recover_report *rep = &pr.data;
  if (rep->was_clean && (!pr.has_records || pr.records.was_clean) &&
      pr.records_cut == 0 && pr.records_filled == 0)
    LOG_I("stream %s: %s is clean, %lld chunks", st->name, st->path,
          (long long)rep->nchunks);
  else
    LOG_W("stream %s: recovered %s to commit %lld: %lld chunks kept, "
          "%lld dropped, %lld checked, %lld orphan files removed, %lld "
          "entries of missing chunk files removed; %lld records past the "
          "data cut, %lld chunks without a record given a no-record record",
          st->name, st->path, (long long)rep->commit,
          (long long)rep->nchunks, (long long)rep->dropped_chunks,
          (long long)rep->chunks_checked, (long long)rep->orphan_files,
          (long long)rep->missing_files, (long long)pr.records_cut,
          (long long)pr.records_filled);
  rc = b2s_pair_open(st->path, opts, &st->fw, &ferr);
  if (rc < 0)
    snprintf(st->fail_reason, sizeof st->fail_reason,
             "cannot open the frame: %s%s%.160s", b2s_strerror(rc),
             ferr.reason ? ": " : "", ferr.reason ? ferr.reason : "");
  return rc;
}

/* Rename from to `to`, never replacing what is there (EEXIST then). */
static int rename_noreplace(const char *from, const char *to) {
  if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
    return 0;
  if (errno != EINVAL && errno != ENOSYS)
    return -errno;
  struct stat sb;   /* no RENAME_NOREPLACE on this file system */
  if (lstat(to, &sb) == 0)
    return -EEXIST;
  return rename(from, to) < 0 ? -errno : 0;
}

/* A records frame whose data frame is gone (moved aside by an operator)
 * describes chunks that are not there: it goes aside too, renamed with a
 * ".orphan" suffix (".orphan.N" when that is taken: an earlier orphan is
 * never replaced), so that the new data frame gets its own. */
static int orphan_records_aside(b2sd_stream *st) {
  char rpath[B2S_CONFIG_PATH_MAX], aside[B2S_CONFIG_PATH_MAX + 16];
  int rc = b2s_records_path(st->path, rpath, sizeof rpath);
  struct stat sb;
  if (rc < 0 || lstat(rpath, &sb) < 0)
    return 0;
  rc = -EEXIST;
  for (int n = 0; rc == -EEXIST && n < 1000; n++) {
    if (n == 0)
      snprintf(aside, sizeof aside, "%s.orphan", rpath);
    else
      snprintf(aside, sizeof aside, "%s.orphan.%d", rpath, n);
    rc = rename_noreplace(rpath, aside);
  }
  if (rc < 0)
    return rc;
  LOG_W("stream %s: %s had no data frame; moved to %s", st->name, rpath,
        aside);
  return 0;
}

/* Open or create the stream's frame writer (st->fw). */
static int open_frame(b2sd_stream *st, const b2s_stream_cfg *cfg) {
  b2s_fwriter_opts opts = writer_opts(st, cfg);
  struct stat sb;
  int rc;
  st->fail_reason[0] = '\0';
  if (lstat(st->path, &sb) == 0) {
    rc = open_existing(st, &opts);
  } else if (errno == ENOENT) {
    rc = mkdir_parents(st->path);
    if (rc == 0)
      rc = orphan_records_aside(st);
    if (rc == 0)
      rc = create_frame(st, cfg, &opts);
    if (rc == 0)
      LOG_I("stream %s: created %s", st->name, st->path);
  } else {
    rc = -errno;
  }
  if (rc == B2S_E_LOCKED)
    b2sd_log_locked(st->name, st->path);
  if (rc < 0) {
    if (!st->fail_reason[0])
      snprintf(st->fail_reason, sizeof st->fail_reason,
               "cannot open the frame: %s", b2s_strerror(rc));
    return rc;
  }
  stage_account(st);
  if (!b2s_fwriter_locked(b2s_pair_data(st->fw)))
    LOG_W("stream %s: the file system of %s cannot lock it; nothing keeps "
          "another writer out of this frame", st->name, st->path);
  if (opts.direct_io && !b2s_fwriter_direct_io(b2s_pair_data(st->fw)))
    LOG_W("stream %s: the file system of %s takes no direct I/O; chunk data "
          "goes through the page cache", st->name, st->path);
  return 0;
}

/* The I/O thread's copy of the series map, from the frame just opened. */
static int series_load(b2sd_stream *st) {
  free(st->series);
  st->series = NULL;
  st->series_len = 0;
  return b2s_fwriter_series_get(b2s_pair_data(st->fw), &st->series,
                                &st->series_len);
}

/* order: frame_number on a frame that has chunks: both windows go on after
 * the last chunk's frame number, so chunk index = frame number - the
 * first one across restarts. */
static void order_resume(b2sd_stream *st) {
  int64_t n = b2s_pair_nchunks(st->fw);
  b2s_records *rs = NULL;
  b2s_record rec;
  st->ord_resume = false;
  if (!st->ordered || n <= 0 || b2s_records_open(st->path, &rs, NULL) < 0)
    return;
  /* gaps of passed frame numbers carry none: the last chunk's is that of
   * the newest record with one plus the chunks after it (a crash may come
   * between a run of gaps and the buffer that moved the window) */
  int64_t i = n - 1;
  while (i >= 0 && b2s_records_get(rs, i, &rec) == 0 && !rec.has_frame &&
         (rec.flags & B2S_RECORD_GAP))
    i--;
  if (i >= 0 && rec.has_frame) {
    uint64_t last = rec.frame + (uint64_t)(n - 1 - i);
    st->ord_resume = true;
    st->ord_last = last;
    st->win.known = true;
    st->win.next = last + 1;
    st->win.max = last;
    memset(st->win.state, 0, 2 * (size_t)st->win.w);
  }
  b2s_records_free(rs);
}

int b2sd_stream_meta(b2sd_stream *st, const void *upd, size_t len) {
  b2s_mpbuf out;
  b2s_mpbuf_init(&out);
  int rc = b2s_series_merge(st->series, st->series_len, upd, len, &out);
  /* a distributed stream's writer merges the update into the series all
   * ranks share, not this rank's view of it */
  const void *give = st->dist ? upd : out.data;
  size_t give_len = st->dist ? len : out.len;
  b2sd_chunk *c = rc >= 0 ? calloc(1, sizeof *c) : NULL;
  uint8_t *copy = c ? malloc(give_len ? give_len : 1) : NULL;
  if (rc >= 0 && !copy) {
    free(c);
    rc = B2S_E_NOMEM;
  }
  if (rc < 0) {
    b2s_mpbuf_fini(&out);
    return rc;
  }
  memcpy(copy, give, give_len);
  free(st->series);
  st->series = out.data;         /* the buffer moves to the stream */
  st->series_len = out.len;
  c->series = copy;
  c->series_len = give_len;
  c->seq = st->seq_next++;
  b2sd_stream_put(st, c);
  return 0;
}

void b2sd_stream_drain_mark(b2sd_stream *st) {
  if (!st->ordered)
    return;
  b2sd_chunk *c = calloc(1, sizeof *c);
  if (!c)
    abort();                     /* a few bytes: nothing sane left */
  b2sd_window_drain(&st->win);
  c->drain = true;
  c->seq = st->seq_next++;
  b2sd_stream_put(st, c);
}

void b2sd_stream_end_mark(b2sd_stream *st) {
  if (!st->dist)
    return;
  b2sd_chunk *c = calloc(1, sizeof *c);
  if (!c)
    abort();                     /* a few bytes: nothing sane left */
  c->end = true;
  c->seq = st->seq_next++;
  b2sd_stream_put(st, c);
}

int b2sd_stream_acq_admit(b2sd_stream *st) {
  if (!st->acq_only)
    return 0;
  if (st->acq_taking &&
      (st->acq_limit == 0 || st->acq_admitted < st->acq_limit)) {
    if (++st->acq_admitted == st->acq_limit)
      st->acq_taking = false;    /* frames reached (7.3) */
    return 0;
  }
  /* relaxed: a statistic */
  atomic_fetch_add_explicit(&st->st_refused_unarmed, 1, memory_order_relaxed);
  if (st->acq_plan)
    st->acq_refused_after++;
  return B2S_E_NOT_ARMED;
}

int b2sd_stream_acq_mark(b2sd_stream *st, struct b2sd_acqplan *begin) {
  b2sd_chunk *c = calloc(1, sizeof *c);
  if (!c)
    return B2S_E_NOMEM;
  c->acq_begin = begin;
  c->acq_end = begin == NULL;
  c->seq = st->seq_next++;
  b2sd_stream_put(st, c);
  return 0;
}

/* A distributed stream has no local frame: its writer opens the store
 * and the frame in its own thread (dwriter.h). */
static int open_distributed(b2sd_server *srv, b2sd_stream *st) {
  st->dist = b2sd_dist_new(b2s_config_cluster(srv->cfg));
  if (!st->dist)
    return B2S_E_NOMEM;
  st->ordered = false;           /* chunk index = frame number anyway */
  ingest_publish(st);
  b2sd_progress_init(st, 0);
  return 0;
}

int b2sd_stream_open(b2sd_server *srv, const b2s_stream_cfg *cfg,
                     b2sd_stream **out) {
  b2sd_stream *st = calloc(1, sizeof *st);
  if (!st)
    return B2S_E_NOMEM;
  st->srv = srv;
  static _Atomic uint64_t uids;
  st->uid = atomic_fetch_add_explicit(&uids, 1, memory_order_relaxed) + 1;
  st->cfg = *cfg;
  snprintf(st->name, sizeof st->name, "%s", cfg->name);
  snprintf(st->path, sizeof st->path, "%s", cfg->full_path);
  st->ordered = cfg->order == B2S_ORDER_FRAME_NUMBER;
  st->acq_only = cfg->acquisitions == B2S_ACQ_MODE_ONLY &&
                 cfg->format != B2S_FORMAT_DISTRIBUTED;
  ingest_publish(st);
  b2s_errdetail why;
  int brc = cfg->b2nd.enabled
                ? b2s_blockorder_init(&st->blocks, cfg->b2nd.ndim,
                                      cfg->b2nd.chunkshape, cfg->b2nd.blockshape,
                                      cfg->cparams.typesize, &why)
                : 0;
  if (brc < 0) {
    /* the configuration refuses such blocks; a frame's own never get here */
    LOG_E("stream %s: b2nd: %s", st->name, why.text);
    free(st);
    return B2S_E_CONFIG;
  }
  if (b2sd_window_init(&st->win, (uint32_t)cfg->reorder_window) < 0) {
    free(st);
    return B2S_E_NOMEM;
  }
  pthread_mutex_init(&st->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&st->cond, &ca);
  pthread_condattr_destroy(&ca);
  if (st->acq_only) {
    /* its frames are its acquisitions' files, which its writer makes */
    b2sd_progress_init(st, 0);
    b2sd_life_move(&st->life, B2SD_LIFE_READY, st->name);
    *out = st;
    return 0;
  }
  if (cfg->format == B2S_FORMAT_DISTRIBUTED) {
    int drc = open_distributed(srv, st);
    if (drc < 0) {
      b2sd_stream_free(st);
      return drc;
    }
    b2sd_life_move(&st->life, B2SD_LIFE_READY, st->name);
    *out = st;
    return 0;
  }
  int rc = open_frame(st, cfg);
  if (rc == 0)
    order_resume(st);
  if (rc == 0 && (rc = series_load(st)) < 0) {
    b2s_pair_free(st->fw);
    st->fw = NULL;
    snprintf(st->fail_reason, sizeof st->fail_reason,
             "cannot read the series metadata: %s", b2s_strerror(rc));
  }
  if (rc < 0) {
    /* one bad frame must not stop the others: the stream stays, failed,
     * and says why to whoever opens it (OPEN retries) */
    LOG_E("stream %s: failed: %s: %s; the other streams serve", st->name,
          st->path, st->fail_reason);
    b2sd_progress_fail(st, rc);
    b2sd_life_move(&st->life, B2SD_LIFE_FAILED, st->name);
  } else {
    b2sd_progress_init(st, b2s_pair_nchunks(st->fw));
    b2sd_life_move(&st->life, B2SD_LIFE_READY, st->name);
  }
  *out = st;
  return 0;
}

b2sd_stream *b2sd_stream_find(b2sd_server *srv, const char *name) {
  for (b2sd_stream *st = srv->streams; st; st = st->next)
    if (strcmp(st->name, name) == 0)
      return st;
  return NULL;
}

void b2sd_stream_cfg_get(b2sd_stream *st, b2s_stream_cfg *out) {
  pthread_mutex_lock(&st->lock);
  *out = st->cfg;
  pthread_mutex_unlock(&st->lock);
}

void b2sd_stream_cp_get(b2sd_stream *st, b2s_cparams *cp, int *queue_depth) {
  const b2sd_ingest_cfg *in = b2sd_stream_ingest(st);
  if (cp)
    *cp = in->cparams;
  if (queue_depth)
    *queue_depth = in->queue_depth;
}

/* Publish the ingest path's snapshot of st->cfg in the slot not in use.
 * Reclamation: every reader of a snapshot runs on the I/O thread and
 * keeps no pointer past its return to the loop, and this runs on the I/O
 * thread too (open, reload), so no reader is left on the slot it writes,
 * which the swap before last retired.  A reader on another thread would
 * need a reference count. */
static void ingest_publish(b2sd_stream *st) {
  const b2sd_ingest_cfg *cur =
      atomic_load_explicit(&st->ingest, memory_order_relaxed);
  b2sd_ingest_cfg *next =
      cur == &st->ingest_slot[0] ? &st->ingest_slot[1] : &st->ingest_slot[0];
  *next = (b2sd_ingest_cfg){
      .cparams = st->cfg.cparams, .queue_depth = st->cfg.queue_depth,
      .backpressure = st->cfg.backpressure,
      .fills = st->ordered || st->acq_only ||
               b2s_stream_cfg_fill_gaps(&st->cfg)};
  /* release: pairs with the acquire load of b2sd_stream_ingest */
  atomic_store_explicit(&st->ingest, next, memory_order_release);
}

void b2sd_stream_reconfigure(b2sd_stream *st, const b2s_stream_cfg *cfg) {
  pthread_mutex_lock(&st->lock);
  st->cfg = *cfg;
  pthread_cond_signal(&st->cond);
  pthread_mutex_unlock(&st->lock);
  ingest_publish(st);
}

/* ---- the writer thread ------------------------------------------------------ */

/* The writer's side of order: frame_number (order.h): chunks held back
 * by frame number, ring[f % w] for frames next .. next + w - 1. */
typedef struct wheld {
  b2sd_chunk **ring;
  uint32_t w;
  int nheld;
  bool known;
  uint64_t next, max;
  int32_t nbytes;           /* size of the last chunk: a gap's size */
  int32_t run_nbytes;       /* > 0: the last chunk is a passed frame's gap
                               of this size, which the next one shares */
} wheld;

typedef struct wstate {
  b2sd_group g;             /* sequence and pending group (groupcommit.h) */
  int64_t appended;         /* chunks appended by this writer */
  int failed;
  bool grows;               /* b2nd shape[0] 0 in the configuration: the
                               metalayer's follows the chunks */
  wheld o;                  /* order: frame_number only */
  b2sd_acqw acq;            /* acquisitions: only: the files it writes */
  b2s_stream_cfg *acq_cfg;  /* the settings its files are made with */
  b2s_fwriter_opts acq_opts;
} wstate;

static void slow_check(b2sd_stream *st, const char *what, uint64_t t0) {
  uint64_t ms = (b2sd_now_ns() - t0) / 1000000u;
  if ((int64_t)ms >= st->srv->dcfg.slow_disk_ms) {
    /* relaxed: statistics counter, read only for STATS */
    atomic_fetch_add_explicit(&st->st_slow_calls, 1, memory_order_relaxed);
    LOG_W("stream %s: slow disk: %s took %llu ms", st->name, what,
          (unsigned long long)ms);
  }
}

static void writer_fail(b2sd_stream *st, wstate *w, int rc, const char *what) {
  if (w->failed)
    return;
  w->failed = rc;
  if (w->acq.p)
    b2sd_acqw_fail(&w->acq, rc);
  LOG_E("stream %s: %s failed: %s; the stream stops writing", st->name, what,
        b2s_strerror(rc));
  b2sd_progress_fail(st, rc);
  b2sd_wake(st->srv);
}

/* Append chunk c with its record, or the gap a tombstone leaves; a
 * tombstone without gap flags leaves nothing. */
static int64_t store(b2sd_stream *st, const b2sd_chunk *c) {
  b2s_record rec;
  b2sd_rec_record(&c->rec, &rec);
  if (c->cbytes > 0)
    return b2s_pair_append_hashed(st->fw, c->data, (size_t)c->cbytes, &rec,
                                  c->xxh64);
  return b2s_pair_append_gap(st->fw, c->nbytes, c->gap & ~B2S_RECORD_GAP,
                             &rec);
}

/* A new series map (META): in the frame with the next commit, which it
 * asks for like a chunk. */
static void writer_series(b2sd_stream *st, wstate *w, b2sd_chunk *c) {
  if (!w->failed) {
    uint64_t t0 = b2sd_now_ns();
    int rc = b2s_fwriter_series_set(b2s_pair_data(st->fw), c->series,
                                    c->series_len);
    if (rc < 0)
      writer_fail(st, w, rc, "series metadata");
    else
      b2sd_group_appended(&w->g, t0);
  }
  b2sd_chunk_done(st->srv, c);
}

/* acquisitions: only: whether c goes to the acquisition's file (rolled
 * over first when full); false when there is none or it aborted (c is
 * counted as discarded) or its file failed. */
static bool acq_take(b2sd_stream *st, wstate *w) {
  if (!st->acq_only)
    return true;
  if (!w->acq.p)
    return false;
  if (b2sd_acqw_discarding(&w->acq)) {
    b2sd_acqw_discarded(&w->acq);
    return false;
  }
  return b2sd_acqw_before(&w->acq, w->acq_cfg, &w->acq_opts, &st->fw) == 0;
}

/* Append c (or its gap) and give it back. */
static void writer_store(b2sd_stream *st, wstate *w, b2sd_chunk *c) {
  bool gap = c->cbytes == 0 && c->gap && c->nbytes > 0;
  w->o.run_nbytes = 0;      /* the last chunk is another one now */
  if (!w->failed && (c->cbytes > 0 || gap) && acq_take(st, w)) {
    uint64_t t0 = b2sd_now_ns();
    int64_t rc = store(st, c);
    slow_check(st, "append", t0);
    if (rc < 0) {
      writer_fail(st, w, (int)rc, "append");
    } else {
      b2sd_group_appended(&w->g, t0);
      w->appended++;
      if (w->acq.p)
        b2sd_acqw_appended(&w->acq, c->cbytes);
      /* relaxed: statistics counters */
      atomic_fetch_add_explicit(&st->st_bytes_out, (uint64_t)c->cbytes,
                                memory_order_relaxed);
      atomic_fetch_add_explicit(&st->st_chunks, 1, memory_order_relaxed);
      if (gap)
        atomic_fetch_add_explicit(&st->st_gaps, 1, memory_order_relaxed);
    }
  }
  if (c->err) {
    /* relaxed: statistics counter */
    atomic_fetch_add_explicit(&st->st_errors, 1, memory_order_relaxed);
  }
  b2sd_chunk_done(st->srv, c);
}

/* The window's first frame number goes to the frame: its chunk, or a gap
 * (no buffer came for it). */
static void order_pass(b2sd_stream *st, wstate *w) {
  wheld *o = &w->o;
  b2sd_chunk **slot = &o->ring[o->next % o->w];
  b2sd_chunk *c = *slot;
  if (c) {
    *slot = NULL;
    o->nheld--;
    writer_store(st, w, c);
  } else if (!w->failed && acq_take(st, w)) {
    /* Every gap of a run is the same placeholder and the same record (no
     * frame number: chunk index tells it), stored once: a jump costs two
     * chunk files, not two per frame number passed. */
    int32_t nb = o->nbytes > 0 ? o->nbytes : 1;
    uint64_t t0 = b2sd_now_ns();
    int64_t rc = o->run_nbytes == nb
                     ? b2s_pair_append_again(st->fw)
                     : b2s_pair_append_gap(st->fw, nb, 0, NULL);
    o->run_nbytes = rc < 0 ? 0 : nb;
    if (rc < 0) {
      writer_fail(st, w, (int)rc, "append");
    } else {
      b2sd_group_appended(&w->g, t0);
      if (w->acq.p)
        b2sd_acqw_appended(&w->acq, 0);
    }
  }
  o->next++;
}

/* Hold c until its frame number is the window's first (a mirror of
 * b2sd_window_take, which checked it). */
static void order_put(b2sd_stream *st, wstate *w, b2sd_chunk *c) {
  wheld *o = &w->o;
  uint64_t f = c->rec.frame;
  if (!o->known) {
    o->known = true;
    o->next = o->max = f;
  }
  if (c->nbytes > 0)
    o->nbytes = c->nbytes;
  if (f < o->next || (f - o->next < o->w && o->ring[f % o->w])) {
    LOG_E("stream %s: frame number %llu out of its window; not stored",
          st->name, (unsigned long long)f);
    b2sd_chunk_done(st->srv, c);
    return;
  }
  while (f - o->next >= o->w)
    order_pass(st, w);
  o->ring[f % o->w] = c;
  o->nheld++;
  if (f > o->max)
    o->max = f;
  while (o->next <= o->max && o->ring[o->next % o->w])
    order_pass(st, w);
}

static void order_drain(b2sd_stream *st, wstate *w) {
  while (w->o.known && w->o.next <= w->o.max)
    order_pass(st, w);
}

/* Every seq below this is written, or held back by the window. */
static uint64_t written_level(const wstate *w) {
  uint64_t lv = w->g.next_seq;
  for (uint32_t i = 0; w->o.nheld > 0 && i < w->o.w; i++)
    if (w->o.ring[i] && w->o.ring[i]->seq < lv)
      lv = w->o.ring[i]->seq;
  return lv;
}

static void writer_commit(b2sd_stream *st, wstate *w, bool durable,
                          bool opened_full);

/* An acquisition's files begin (its first file made) or end (everything
 * before committed and synced, every file closed and marked). */
static void writer_acq(b2sd_stream *st, wstate *w, b2sd_chunk *c) {
  if (c->acq_begin && !w->acq.p && !st->fw) {
    if (!w->acq_cfg)
      w->acq_cfg = malloc(sizeof *w->acq_cfg);
    if (!w->acq_cfg) {
      w->acq = (b2sd_acqw){.p = c->acq_begin};
      b2sd_acqw_fail(&w->acq, B2S_E_NOMEM);
      return;
    }
    b2sd_stream_cfg_get(st, w->acq_cfg);
    w->acq_opts = writer_opts(st, w->acq_cfg);
    w->acq_opts.direct_io = false;  /* stages are per frame: many files */
    b2sd_acqw_begin(&w->acq, c->acq_begin, w->acq_cfg, &w->acq_opts, &st->fw);
    return;
  }
  if (c->acq_end && w->acq.p) {
    order_drain(st, w);
    writer_commit(st, w, true, false);
    b2sd_acqw_end(&w->acq, &st->fw, &w->acq_opts);
    w->acq = (b2sd_acqw){0};
  }
}

static void writer_append(b2sd_stream *st, wstate *w, b2sd_chunk *c) {
  /* strictly in sequence order (b2sd.h: a dropped buffer still comes as a
   * tombstone with its number) */
  B2S_ASSERT(c->seq == w->g.next_seq);
  w->g.next_seq = c->seq + 1;
  if (c->acq_begin || c->acq_end) {
    writer_acq(st, w, c);
    b2sd_chunk_done(st->srv, c);
  } else if (c->series)
    writer_series(st, w, c);
  else if (c->drain) {
    order_drain(st, w);
    b2sd_chunk_done(st->srv, c);
  } else if (st->ordered && (c->rec.present & B2S_WIRE_REC_FRAME))
    order_put(st, w, c);
  else
    writer_store(st, w, c);
}

/* Commit what is pending; make it durable when `durable`. */
static void writer_commit(b2sd_stream *st, wstate *w, bool durable,
                          bool opened_full) {
  if (w->failed)
    return;
  if (st->acq_only && !st->fw) {
    /* no file: the seqs (discarded chunks, control chunks) are settled */
    w->g.pending = 0;
    w->g.written = w->g.durable = written_level(w);
    b2sd_progress_publish(st, b2sd_progress_own_committed(st), w->g.written,
                          w->g.durable);
    b2sd_wake(st->srv);
    return;
  }
  /* an acquisition's frames_committed means synced (ACQUISITIONS.md 5) */
  if (w->acq.p)
    durable = true;
  /* durable commits (flushes, fsync groups, the last one) also bring the
   * b2nd shape up to the chunks, which c-blosc2 readers go by */
  int grew = w->grows && durable ? b2s_fwriter_b2nd_grow(b2s_pair_data(st->fw))
                                 : 0;
  if (grew < 0) {
    writer_fail(st, w, grew, "b2nd shape");
    return;
  }
  if (w->g.pending > 0 || grew) {
    uint64_t t0 = b2sd_now_ns();
    int rc = b2s_pair_commit(st->fw);   /* records first, then data */
    uint64_t dt = b2sd_now_ns() - t0;
    slow_check(st, "commit", t0);
    if (rc < 0) {
      writer_fail(st, w, rc, "commit");
      return;
    }
    w->g.pending = 0;
    /* relaxed: statistics counters */
    atomic_fetch_add_explicit(&st->st_commits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->st_commit_ns_total, dt,
                              memory_order_relaxed);
    if (dt > atomic_load_explicit(&st->st_commit_ns_max, memory_order_relaxed))
      atomic_store_explicit(&st->st_commit_ns_max, dt, memory_order_relaxed);
    b2sd_hist_note(&st->st_commit_hist, dt);
    atomic_store_explicit(&st->st_last_commit_ns, b2sd_wall_ns(),
                          memory_order_relaxed);
  }
  w->g.written = written_level(w);
  if (opened_full) {
    w->g.durable = w->g.written;
  } else if (durable && w->g.durable < w->g.written) {
    uint64_t t0 = b2sd_now_ns();
    int rc = sync_fs_of(w->acq.p ? w->acq.path : st->path);
    slow_check(st, "syncfs", t0);
    if (rc < 0) {
      writer_fail(st, w, rc, "syncfs");
      return;
    }
    w->g.durable = w->g.written;
  }
  if (w->acq.p)
    b2sd_acqw_committed(&w->acq, durable || opened_full);
  /* an acquisition stream's count runs on across its files */
  int64_t nchunks = st->acq_only ? w->appended : b2s_pair_nchunks(st->fw);
  if (nchunks > b2sd_progress_own_committed(st))
    b2sd_progress_stamp(st, b2sd_now_ns());
  b2sd_progress_publish(st, nchunks, w->g.written, w->g.durable);
  b2sd_wake(st->srv);
}

static void *writer_main(void *arg) {
  b2sd_stream *st = arg;
  wstate w = {0};
  /* a re-opened stream starts after every seq of its failed writer */
  w.g.next_seq = w.g.written = w.g.durable = st->seq_base;
  const bool opened_full = b2sd_group_fsync(&st->cfg.durability);
  if (st->ordered) {
    w.o.w = st->win.w;
    w.o.ring = calloc(w.o.w, sizeof *w.o.ring);
    w.o.known = st->ord_resume;
    w.o.next = st->ord_last + 1;
    w.o.max = st->ord_last;
    if (!w.o.ring)
      writer_fail(st, &w, B2S_E_NOMEM, "reorder window");
  }
  pthread_mutex_lock(&st->lock);
  w.grows = st->cfg.b2nd.enabled && st->cfg.b2nd.shape[0] == 0;
  for (;;) {
    b2sd_chunk *batch = b2sd_chunk_take_ready(st, w.g.next_seq);
    b2s_stream_durability dur = st->cfg.durability;
    bool fsync_now = b2sd_group_fsync(&dur);
    uint64_t flush_upto = st->flush_upto;
    bool stop = st->stop;
    pthread_mutex_unlock(&st->lock);

    while (batch) {
      b2sd_chunk *c = batch;
      batch = c->next;
      writer_append(st, &w, c);
      if (b2sd_group_full(&w.g, &dur))
        writer_commit(st, &w, fsync_now, opened_full);
    }
    uint64_t now = b2sd_now_ns();
    uint64_t deadline = b2sd_group_deadline(&w.g, &dur);
    b2sd_commit plan = b2sd_group_decide(&w.g, &dur, flush_upto, stop, now);
    if (plan.commit)
      writer_commit(st, &w, plan.durable, opened_full);

    pthread_mutex_lock(&st->lock);
    if (st->ready && st->ready->seq == w.g.next_seq)
      continue;
    if (stop && (!st->ready || w.failed))
      break;
    if (stop) {              /* a gap at stop: cannot happen after a drain */
      LOG_E("stream %s: chunks missing at stop (next %llu)", st->name,
            (unsigned long long)w.g.next_seq);
      break;
    }
    if (st->flush_upto > flush_upto || st->stop)
      continue;
    uint64_t left;
    if (b2sd_group_wait(&w.g, deadline, now, &left)) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      uint64_t ns = (uint64_t)ts.tv_nsec + left;
      ts.tv_sec += (time_t)(ns / 1000000000u);
      ts.tv_nsec = (long)(ns % 1000000000u);
      pthread_cond_timedwait(&st->cond, &st->lock, &ts);
    } else {
      pthread_cond_wait(&st->cond, &st->lock);
    }
  }
  while (st->ready) {        /* only after a gap or a failure */
    b2sd_chunk *c = st->ready;
    st->ready = c->next;
    b2sd_chunk_done(st->srv, c);
  }
  pthread_mutex_unlock(&st->lock);
  if (w.o.ring)              /* held frames go, the missing ones as gaps */
    order_drain(st, &w);
  free(w.o.ring);
  writer_commit(st, &w, true, opened_full);
  if (w.acq.p) {
    /* the daemon stops with the acquisition unfinished (8) */
    /* relaxed: see end_code */
    atomic_store_explicit(&w.acq.p->end_code, B2SD_ACQ_END_INTERRUPTED,
                          memory_order_relaxed);
    b2sd_acqw_end(&w.acq, &st->fw, &w.acq_opts);
  }
  free(w.acq_cfg);
  int rc = st->fw ? b2s_pair_close(st->fw) : 0;  /* commits and compacts */
  st->fw = NULL;
  if (w.failed)
    LOG_I("stream %s: closed %s after its failure", st->name, st->path);
  else if (rc < 0)
    LOG_E("stream %s: closing %s: %s", st->name, st->path, b2s_strerror(rc));
  else if (sync_fs_of(st->path) == 0)
    LOG_I("stream %s: closed %s (%lld chunks)", st->name, st->path,
          (long long)b2sd_progress_own_committed(st));
  /* release: the frame is closed before the I/O thread sees this */
  atomic_store_explicit(&st->writer_exited, true, memory_order_release);
  b2sd_wake(st->srv);
  return NULL;
}

int b2sd_stream_start(b2sd_stream *st) {
  if (!st->fw && !st->dist && !st->acq_only)
    return 0;                /* failed at open: no writer until re-opened */
  atomic_store_explicit(&st->writer_exited, false, memory_order_relaxed);
  int rc = pthread_create(&st->thread, NULL,
                          st->dist ? b2sd_dwriter_main : writer_main, st);
  if (rc)
    return -rc;
  st->thread_started = true;
  b2sd_life_move(&st->life, B2SD_LIFE_WRITING, st->name);
  char name[16];
  snprintf(name, sizeof name, "b2s-%c-%.9s", st->dist ? 'd' : 'w', st->name);
  pthread_setname_np(st->thread, name);
  return 0;
}

/* Stop and join the writer (it closes the frame), or close a frame no
 * writer took; give back its stages. */
static void writer_end(b2sd_stream *st) {
  if (st->thread_started) {
    pthread_mutex_lock(&st->lock);
    st->stop = true;
    pthread_cond_signal(&st->cond);
    pthread_mutex_unlock(&st->lock);
    pthread_join(st->thread, NULL);
    st->thread_started = false;
    b2sd_chunkpool_release(st->srv->chunks);  /* idle buffers need not
                                               * hold memory past a stream */
  } else if (st->fw) {
    b2s_pair_close(st->fw);
  }
  st->fw = NULL;
  /* relaxed: see b2sd_memory_headroom */
  atomic_fetch_sub_explicit(&st->srv->stage_bytes, st->stage_bytes,
                            memory_order_relaxed);
  st->stage_bytes = 0;
  b2sd_life_move(&st->life, B2SD_LIFE_ENDED, st->name);
}

/* A distributed stream: a new writer after every seq given so far (it
 * opens the store again). */
static int reopen_distributed(b2sd_stream *st) {
  writer_end(st);
  pthread_mutex_lock(&st->lock);
  st->stop = false;
  pthread_mutex_unlock(&st->lock);
  st->seq_base = st->seq_next;
  b2sd_progress_reopen(st, 0, st->seq_next);
  b2sd_life_move(&st->life, B2SD_LIFE_READY, st->name);
  int rc = b2sd_stream_start(st);
  if (rc < 0) {
    b2sd_progress_fail(st, rc);
    b2sd_life_move(&st->life, B2SD_LIFE_FAILED, st->name);
  } else
    LOG_I("stream %s: distributed writer started again", st->name);
  return rc;
}

int b2sd_stream_reopen(b2sd_stream *st) {
  if (st->dist)
    return reopen_distributed(st);
  b2s_stream_cfg cfg;
  b2sd_stream_cfg_get(st, &cfg);
  writer_end(st);
  int room = b2sd_space_probe(st->path, cfg.format == B2S_FORMAT_SPARSE);
  if (room < 0) {
    bool full = room == -ENOSPC || room == -EFBIG || room == -EDQUOT;
    snprintf(st->fail_reason, sizeof st->fail_reason, "%s: %s",
             full ? "no room for more data"
                  : "cannot write in the frame's directory",
             b2s_strerror(room));
    b2sd_progress_fail(st, room);
    b2sd_life_move(&st->life, B2SD_LIFE_FAILED, st->name);
    return room;
  }
  char before[sizeof st->fail_reason];
  memcpy(before, st->fail_reason, sizeof before);
  int rc = open_frame(st, &cfg);
  if (rc == 0)
    order_resume(st);
  if (rc == 0 && (rc = series_load(st)) < 0) {
    b2s_pair_free(st->fw);
    st->fw = NULL;
  }
  if (rc < 0) {
    if (strcmp(before, st->fail_reason) != 0)  /* not once per OPEN */
      LOG_E("stream %s: still failed: %s: %s", st->name, st->path,
            st->fail_reason);
    b2sd_progress_fail(st, rc);
    b2sd_life_move(&st->life, B2SD_LIFE_FAILED, st->name);
    return rc;
  }
  pthread_mutex_lock(&st->lock);
  st->stop = false;
  pthread_mutex_unlock(&st->lock);
  /* the failed writer's seqs are settled: their handles were ended */
  st->seq_base = st->seq_next;
  int64_t n = b2s_pair_nchunks(st->fw);
  b2sd_progress_reopen(st, n, st->seq_next);
  b2sd_life_move(&st->life, B2SD_LIFE_READY, st->name);
  rc = b2sd_stream_start(st);
  if (rc < 0) {
    b2sd_progress_fail(st, rc);
    b2sd_life_move(&st->life, B2SD_LIFE_FAILED, st->name);
    return rc;
  }
  LOG_I("stream %s: re-opened %s at %lld chunks", st->name, st->path,
        (long long)n);
  return 0;
}

void b2sd_stream_free(b2sd_stream *st) {
  if (!st)
    return;
  writer_end(st);
  /* chunks the workers finished after a failed writer had ended (the
   * workers are stopped by now) */
  while (st->ready) {
    b2sd_chunk *c = st->ready;
    st->ready = c->next;
    b2sd_chunk_done(st->srv, c);
  }
  free(st->series);
  free(st->dist);
  free(st->conflicts);
  b2sd_window_fini(&st->win);
  pthread_mutex_destroy(&st->lock);
  pthread_cond_destroy(&st->cond);
  free(st);
}

