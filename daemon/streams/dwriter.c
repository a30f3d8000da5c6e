/* The writer thread of a distributed stream (dwriter.h): chunks in
 * sequence order, each stored as an object of the distributed frame and
 * reported to the committer, then progress published for the I/O thread
 * to acknowledge. */
#define _GNU_SOURCE
#include "dwriter.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "b2s_dframe.h"
#include "b2s_dmsg.h"
#include "b2s_store.h"
#include "chunkpool.h"
#include "clock.h"
#include "progress.h"
#include "b2s_wire.h"
#include "handoff.h"
#include "streamobj.h"

/* How long a report may wait for room in the PUSH queue: a committer far
 * behind or absent must not stop the stores; a report lost here is found
 * again by the committer's probe of the store. */
#define DW_SEND_TIMEOUT_MS 200
/* How long the socket may still deliver END and reports at close. */
#define DW_LINGER_MS 2000
/* END again after this long without the committer confirming it. */
#define DW_END_EVERY_MS 1000

typedef struct dw {
  b2sd_stream *st;
  const b2sd_dist *d;
  b2s_stream_cfg cfg;            /* copy at start; the dframe borrows dtype */
  b2s_store *store;
  b2s_dframe *df;
  void *push;
  void *sub;                     /* COMMITTED of this frame, or NULL */
  bool end_pending;              /* END sent, not yet confirmed */
  bool check_closed;             /* at start and after an END: the frame
                                    may be closed in the store by now */
  bool closed;                   /* it is: nothing more is stored */
  bool misconfigured;            /* NAME.meta has other parameters */
  uint64_t end_sent_ns;
  bool durable_store;            /* rados, or local with full sync */
  uint64_t next_seq, written, durable;
  int64_t stored;                /* chunks this writer stored */
  int64_t end;                   /* one past the highest frame stored */
  uint64_t lost_reports;
  int failed;
  b2s_mpbuf rec;                 /* the record of the chunk just stored */
  uint8_t msg[B2S_DMSG_NAME_MAX + B2S_DMSG_REC_MAX + 64];
} dw;

b2sd_dist *b2sd_dist_new(const b2s_cluster_cfg *k) {
  b2sd_dist *d = calloc(1, sizeof *d);
  if (!d)
    return NULL;
  d->rank = (b2sd_rank){.rank = k->rank, .nranks = k->nranks,
                        .frames_per_block = k->frames_per_block};
  snprintf(d->storage, sizeof d->storage, "%s", k->storage);
  snprintf(d->ceph_conf, sizeof d->ceph_conf, "%s", k->ceph_conf);
  snprintf(d->committer, sizeof d->committer, "%s", k->committer);
  snprintf(d->committer_pub, sizeof d->committer_pub, "%s", k->committer_pub);
  return d;
}

static void dw_fail(dw *w, int rc, const char *what) {
  if (w->failed)
    return;
  w->failed = rc;
  const char *why = b2s_store_last_error();
  LOG_E("stream %s: %s failed: %s%s%s; the stream stops writing",
        w->st->name, what, b2s_strerror(rc), why[0] ? ": " : "", why);
  b2sd_progress_fail(w->st, rc);
  b2sd_wake(w->st->srv);
}

static void slow_check(dw *w, const char *what, uint64_t t0) {
  uint64_t ms = (b2sd_now_ns() - t0) / 1000000u;
  if ((int64_t)ms < w->st->srv->dcfg.slow_disk_ms)
    return;
  /* relaxed: statistics counter, read only for STATS */
  atomic_fetch_add_explicit(&w->st->st_slow_calls, 1, memory_order_relaxed);
  LOG_W("stream %s: slow store: %s took %llu ms", w->st->name, what,
        (unsigned long long)ms);
}

/* ---- set-up and tear-down --------------------------------------------------- */

/* Configured series defaults go into a frame whose series is still empty
 * (a new one: every rank would write the same map), never over what
 * producers set. */
static int series_defaults(dw *w) {
  if (w->cfg.series_len == 0)
    return 0;
  uint8_t *map = NULL;
  size_t len = 0;
  int rc = b2s_dframe_series_get(w->df, &map, &len);
  bool empty = rc == 0 && len == 1 && map[0] == 0x80;
  free(map);
  if (rc == 0 && empty)
    rc = b2s_dframe_series_merge(w->df, w->cfg.series, w->cfg.series_len);
  return rc;
}

/* NAME.meta once a majority of the ranks propose the same parameters
 * (b2s_dframe_create_agreed), waiting a second at a time, until the
 * stream stops.  Parameters other than the frame's leave this writer
 * refusing every buffer (B2S_E_CONFIG): a misconfigured rank says so to
 * its producers instead of failing the stream again at every OPEN. */
static int create_agreed(dw *w, const b2s_dframe_params *p) {
  b2s_errdetail ed;
  char said[B2S_ERRDETAIL_TEXT] = "";
  for (;;) {
    int rc = b2s_dframe_create_agreed(w->store, w->st->name, w->d->rank.rank,
                                      p, &w->df, &ed);
    const char *why = ed.text;
    if (rc == B2S_E_OBJ_CONFLICT) {
      w->misconfigured = true;
      LOG_E("stream %s: this rank's parameters differ from the frame's: %s; "
            "every buffer is refused until its configuration is fixed",
            w->st->name, why);
    }
    if (rc != B2S_E_BUSY)
      return rc;
    if (strcmp(why, said) != 0)
      LOG_W("stream %s: waiting for a majority of the ranks before "
            "creating the frame: %s", w->st->name, why);
    snprintf(said, sizeof said, "%s", why);
    pthread_mutex_lock(&w->st->lock);
    bool stop = w->st->stop;
    if (!stop) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);   /* the cond's clock */
      ts.tv_sec += 1;
      pthread_cond_timedwait(&w->st->cond, &w->st->lock, &ts);
      stop = w->st->stop;
    }
    pthread_mutex_unlock(&w->st->lock);
    if (stop)
      return B2S_E_CLOSED;
  }
}

static int open_frame(dw *w) {
  b2s_store_opts so = {
      .ceph_conf = w->d->ceph_conf[0] ? w->d->ceph_conf : NULL,
      .sync = w->cfg.durability.ack == B2S_ACK_FSYNC ? B2S_SYNC_FULL
                                                     : B2S_SYNC_NONE};
  uint64_t t0 = b2sd_now_ns();
  int rc = b2s_store_open(w->d->storage, &so, &w->store);
  if (rc < 0) {
    dw_fail(w, rc, "opening the store");
    return rc;
  }
  w->durable_store = strcmp(b2s_store_kind(w->store), "rados") == 0 ||
                     so.sync == B2S_SYNC_FULL;
  b2s_dframe_params p = {.cparams = w->cfg.cparams,
                         .chunk_nbytes = (int32_t)w->cfg.chunk_nbytes,
                         .ranks = w->d->rank.nranks,
                         .frames_per_block = w->d->rank.frames_per_block,
                         .has_b2nd = w->cfg.b2nd.enabled};
  if (p.has_b2nd)
    b2s_stream_cfg_b2nd(&w->cfg, &p.b2nd);
  rc = create_agreed(w, &p);
  if (rc == 0)
    rc = series_defaults(w);
  slow_check(w, "opening the frame", t0);
  if (rc == B2S_E_OBJ_CONFLICT)
    return 0;                    /* refusing every buffer, said */
  if (rc < 0)
    dw_fail(w, rc, "opening the frame");
  return rc;
}

/* COMMITTED messages of this frame: their prefix is the fixed header and
 * the name.  Without them END is simply repeated. */
static void open_sub(dw *w) {
  uint8_t prefix[8 + B2S_DMSG_NAME_MAX];
  size_t n = strlen(w->st->name);
  memcpy(prefix, "B2DM", 4);
  prefix[4] = 1;
  prefix[5] = B2S_DMSG_COMMITTED;
  prefix[6] = (uint8_t)n;
  prefix[7] = (uint8_t)(n >> 8);
  memcpy(prefix + 8, w->st->name, n);
  w->sub = zmq_socket(w->st->srv->zctx, ZMQ_SUB);
  int linger = 0;
  if (w->sub && zmq_setsockopt(w->sub, ZMQ_LINGER, &linger, sizeof linger) == 0 &&
      zmq_setsockopt(w->sub, ZMQ_SUBSCRIBE, prefix, 8 + n) == 0 &&
      zmq_connect(w->sub, w->d->committer_pub) == 0)
    return;
  LOG_W("stream %s: cannot follow the committer at %s (%s); END is "
        "repeated without its confirmation", w->st->name,
        w->d->committer_pub, zmq_strerror(errno));
  if (w->sub)
    zmq_close(w->sub);
  w->sub = NULL;
}

static int open_push(dw *w) {
  w->push = zmq_socket(w->st->srv->zctx, ZMQ_PUSH);
  if (!w->push) {
    dw_fail(w, -errno, "the committer socket");
    return -1;
  }
  int timeout = DW_SEND_TIMEOUT_MS, linger = DW_LINGER_MS;
  zmq_setsockopt(w->push, ZMQ_SNDTIMEO, &timeout, sizeof timeout);
  zmq_setsockopt(w->push, ZMQ_LINGER, &linger, sizeof linger);
  if (zmq_connect(w->push, w->d->committer) < 0) {
    int e = errno;
    LOG_E("stream %s: cannot connect to the committer at %s: %s",
          w->st->name, w->d->committer, zmq_strerror(e));
    dw_fail(w, -e, "connecting to the committer");
    return -1;
  }
  if (w->d->committer_pub[0])
    open_sub(w);
  return 0;
}

/* ---- messages to the committer ------------------------------------------- */

static void report(dw *w, b2s_dmsg *m) {
  m->name = w->st->name;
  m->name_len = (uint16_t)strlen(w->st->name);
  m->rank = w->d->rank.rank;
  int n = b2s_dmsg_encode(m, w->msg, sizeof w->msg);
  if (n < 0) {
    LOG_E("stream %s: report of frame %lld not encoded: %s", w->st->name,
          (long long)m->index, b2s_strerror(n));
    return;
  }
  if (zmq_send(w->push, w->msg, (size_t)n, 0) == n)
    return;
  /* the committer finds the object when it probes the store */
  if (w->lost_reports++ % 1000 == 0)
    LOG_W("stream %s: the committer at %s takes no reports (%s); %llu "
          "lost so far", w->st->name, w->d->committer, zmq_strerror(errno),
          (unsigned long long)w->lost_reports);
}

static void send_end(dw *w, bool again) {
  if (!w->push || w->misconfigured)   /* not a rank of this frame */
    return;
  b2s_dmsg m = {.type = B2S_DMSG_END, .index = w->end};
  report(w, &m);
  w->end_pending = true;
  w->check_closed = true;
  w->end_sent_ns = b2sd_now_ns();
  if (again)
    LOG_D("stream %s: end sent again (frames below %lld)", w->st->name,
          (long long)w->end);
  else
    LOG_I("stream %s: end sent to the committer (%lld chunks stored, "
          "frames below %lld)", w->st->name, (long long)w->stored,
          (long long)w->end);
}

/* The committer's COMMITTED messages so far: END is confirmed once the
 * frame is closed.  H at or past END is no confirmation: the committer
 * closes only with every rank's END, and one restarted after H passed
 * this END (before closing) would never learn it again. */
static void end_confirm(dw *w) {
  uint8_t buf[B2S_DMSG_NAME_MAX + 64];
  int n;
  while (w->sub && (n = zmq_recv(w->sub, buf, sizeof buf, ZMQ_DONTWAIT)) > 0) {
    b2s_dmsg m;
    if ((size_t)n > sizeof buf || b2s_dmsg_decode(buf, (size_t)n, &m) < 0 ||
        m.type != B2S_DMSG_COMMITTED)
      continue;
    if (m.closed)
      w->end_pending = false, w->closed = true;
  }
}

/* While END waits for its confirmation: again every DW_END_EVERY_MS. */
static void end_tick(dw *w) {
  if (!w->end_pending || w->failed)
    return;
  end_confirm(w);
  if (w->end_pending &&
      b2sd_now_ns() - w->end_sent_ns >= DW_END_EVERY_MS * UINT64_C(1000000))
    send_end(w, true);
}

/* ---- chunks ------------------------------------------------------------------ */

/* The record as put_chunk stores it in the object's attribute: what the
 * committer commits at index f. */
static int encode_record(dw *w, const b2sd_chunk *c, uint64_t f) {
  b2s_record r;
  b2sd_rec_record(&c->rec, &r);
  r.has_frame = true;
  r.frame = f;
  r.xxh64 = c->xxh64;
  w->rec.len = 0;
  return b2s_record_encode(&r, &w->rec);
}

/* Tell the I/O thread that c's buffer was not stored: its producer gets
 * an ERROR instead of an acknowledgement. */
static void conflict(dw *w, const b2sd_chunk *c, int code) {
  b2sd_stream *st = w->st;
  pthread_mutex_lock(&st->lock);
  if (st->nconflicts == st->capconflicts) {
    size_t cap = st->capconflicts ? st->capconflicts * 2 : 16;
    b2sd_conflict *n = realloc(st->conflicts, cap * sizeof *n);
    if (n) {
      st->conflicts = n;
      st->capconflicts = cap;
    }
  }
  bool kept = st->nconflicts < st->capconflicts;
  if (kept)
    st->conflicts[st->nconflicts++] =
        (b2sd_conflict){.seq = c->seq, .frame = c->rec.frame, .code = code};
  pthread_mutex_unlock(&st->lock);
  if (!kept)                     /* never acknowledge what is not stored */
    dw_fail(w, B2S_E_NOMEM, "noting a buffer not stored");
}

/* Whether the committer has closed the frame in the store.  Asked at
 * the writer's start and after each END this writer sent (the committer
 * closes only with every rank's END), for the first chunk stored after
 * it, before that chunk is acknowledged: a closed frame stays closed. */
static bool frame_closed(dw *w) {
  if (w->closed || w->misconfigured)
    return true;
  if (!w->check_closed)
    return false;
  bool closed = false;
  int64_t h = 0;
  int rc = b2s_dframe_refresh(w->df, &h, &closed);
  if (rc < 0) {
    dw_fail(w, rc, "reading whether the frame is closed");
    return true;
  }
  if (closed) {
    w->closed = true;
    LOG_E("stream %s: the distributed frame is closed in the store at %lld "
          "chunks; buffers written to it are refused (a closed frame is "
          "not written again: use a new name)", w->st->name, (long long)h);
  }
  return closed;
}

static void store_chunk(dw *w, const b2sd_chunk *c) {
  b2sd_stream *st = w->st;
  uint64_t f = c->rec.frame;
  if (!(c->rec.present & B2S_WIRE_REC_FRAME)) {   /* refused at ingest */
    LOG_E("stream %s: a chunk without frame number; not stored", st->name);
    return;
  }
  if (frame_closed(w)) {
    if (!w->failed)
      conflict(w, c, w->misconfigured ? B2S_E_CONFIG : B2S_E_CLOSED);
    return;
  }
  b2s_record rec;
  b2sd_rec_record(&c->rec, &rec);
  uint64_t t0 = b2sd_now_ns();
  int rc = b2s_dframe_put_chunk(w->df, (int64_t)f, c->data,
                                (size_t)c->cbytes, &rec);
  slow_check(w, "storing a chunk", t0);
  if (rc == B2S_E_OBJ_CONFLICT) {
    /* the committer made it a gap meanwhile, or another writer stored
     * other bytes: what is there stays */
    LOG_E("stream %s: frame %llu is in the store with other bytes (a gap "
          "by now?); this buffer is not stored", st->name,
          (unsigned long long)f);
    /* relaxed: statistics counter */
    atomic_fetch_add_explicit(&st->st_errors, 1, memory_order_relaxed);
    conflict(w, c, B2S_E_OBJ_CONFLICT);
    return;
  }
  if (rc < 0) {
    dw_fail(w, rc, "storing a chunk");
    return;
  }
  /* closed while it was stored: not acknowledged, and never committed */
  if (frame_closed(w)) {
    if (!w->failed)
      conflict(w, c, B2S_E_CLOSED);
    return;
  }
  w->check_closed = false;
  w->stored++;
  if ((int64_t)f + 1 > w->end)
    w->end = (int64_t)f + 1;
  /* relaxed: statistics counters */
  atomic_fetch_add_explicit(&st->st_bytes_out, (uint64_t)c->cbytes,
                            memory_order_relaxed);
  atomic_fetch_add_explicit(&st->st_chunks, 1, memory_order_relaxed);
  if (encode_record(w, c, f) < 0)
    return;                      /* stored; the committer's probe finds it */
  b2s_dmsg m = {.type = B2S_DMSG_WRITTEN, .index = (int64_t)f,
                .rec = w->rec.data, .rec_len = (uint32_t)w->rec.len};
  report(w, &m);
}

/* One chunk or marker in sequence; nothing is stored once failed (the
 * I/O thread ends the handles, producers resend to the next writer).  A
 * tombstone or a refused buffer leaves nothing: the committer makes a gap
 * of a frame number nobody stored. */
static void act(dw *w, const b2sd_chunk *c) {
  if (w->failed)
    return;
  if (c->series) {
    if (w->misconfigured)
      return;                    /* not this frame's rank: nothing merged */
    int rc = b2s_dframe_series_merge(w->df, c->series, c->series_len);
    if (rc < 0)
      dw_fail(w, rc, "series metadata");
  } else if (c->end) {
    send_end(w, false);
  } else if (c->cbytes > 0) {
    w->end_pending = false;      /* the run goes on: END is stale */
    store_chunk(w, c);
  } else if (c->err) {
    /* relaxed: statistics counter */
    atomic_fetch_add_explicit(&w->st->st_errors, 1, memory_order_relaxed);
  }
}

static void handle(dw *w, b2sd_chunk *c) {
  w->next_seq = c->seq + 1;
  act(w, c);
  b2sd_chunk_done(w->st->srv, c);
}

/* Everything handled is stored; durable too when the store says so, or
 * after a sync when a flush asks. */
static void publish(dw *w, uint64_t flush_upto) {
  if (w->failed)
    return;
  w->written = w->next_seq;
  if (w->durable_store) {
    w->durable = w->written;
  } else if (flush_upto > w->durable && w->durable < w->written) {
    uint64_t t0 = b2sd_now_ns();
    int fd = open(w->d->storage, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd < 0 ? -errno : syncfs(fd) < 0 ? -errno : 0;
    if (fd >= 0)
      close(fd);
    slow_check(w, "syncfs", t0);
    if (rc < 0) {
      dw_fail(w, rc, "syncfs of the store");
      return;
    }
    w->durable = w->written;
  }
  b2sd_progress_publish(w->st, w->stored, w->written, w->durable);
  b2sd_wake(w->st->srv);
}

/* ---- the thread -------------------------------------------------------------- */


static void run(dw *w) {
  b2sd_stream *st = w->st;
  pthread_mutex_lock(&st->lock);
  for (;;) {
    b2sd_chunk *batch = b2sd_chunk_take_ready(w->st, w->next_seq);
    uint64_t flush_upto = st->flush_upto;
    bool stop = st->stop;
    pthread_mutex_unlock(&st->lock);
    while (batch) {
      b2sd_chunk *c = batch;
      batch = c->next;
      handle(w, c);
    }
    publish(w, flush_upto);
    pthread_mutex_lock(&st->lock);
    if (st->ready && st->ready->seq == w->next_seq)
      continue;
    if (st->flush_upto > flush_upto || (st->stop && !stop))
      continue;
    if (st->stop)
      break;
    if (w->end_pending) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);   /* the cond's clock */
      ts.tv_sec += DW_END_EVERY_MS / 1000;
      pthread_cond_timedwait(&st->cond, &st->lock, &ts);
      pthread_mutex_unlock(&st->lock);
      end_tick(w);
      pthread_mutex_lock(&st->lock);
    } else {
      pthread_cond_wait(&st->cond, &st->lock);
    }
  }
  while (st->ready) {            /* only after a gap in seqs or a failure */
    b2sd_chunk *c = st->ready;
    st->ready = c->next;
    b2sd_chunk_done(st->srv, c);
  }
  pthread_mutex_unlock(&st->lock);
}

void *b2sd_dwriter_main(void *stream) {
  b2sd_stream *st = stream;
  dw *w = calloc(1, sizeof *w);
  if (!w) {
    b2sd_progress_fail(st, B2S_E_NOMEM);
    b2sd_wake(st->srv);
    return NULL;
  }
  w->st = st;
  w->d = st->dist;
  pthread_mutex_lock(&st->lock);   /* the settings, as b2sd_stream_cfg_get */
  w->cfg = st->cfg;
  pthread_mutex_unlock(&st->lock);
  w->next_seq = w->written = w->durable = st->seq_base;
  w->check_closed = true;
  b2s_mpbuf_init(&w->rec);
  if (open_frame(w) == 0 && open_push(w) == 0)
    LOG_I("stream %s: distributed frame in %s (%s), rank %d of %d, "
          "reporting to %s", st->name, w->d->storage,
          b2s_store_kind(w->store), w->d->rank.rank, w->d->rank.nranks,
          w->d->committer);
  run(w);
  if (!w->failed)
    publish(w, UINT64_MAX);      /* the stop makes everything durable */
  send_end(w, false);
  if (w->push)
    zmq_close(w->push);          /* lingers to deliver END */
  if (w->sub)
    zmq_close(w->sub);
  b2s_dframe_free(w->df);
  b2s_store_free(w->store);
  b2s_mpbuf_fini(&w->rec);
  LOG_I("stream %s: distributed writer stopped (%lld chunks stored)",
        st->name, (long long)w->stored);
  free(w);
  return NULL;
}
