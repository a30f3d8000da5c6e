/* Sources: the daemon pulls images from DECTRIS detectors itself, over
 * Stream V2 (docs/SOURCES.md).  I/O thread only.
 *
 * Each source connects a PULL socket to the detector.  A start message
 * opens a series: one stream per channel, made from the source's template
 * with the series' image layout (a b2nd array of flattened images, see
 * series_cfg), named so that no other series' frame is ever reopened
 * (source_name.h).  The streams are made at the start when it gives the
 * dtype and image size, else at the series' first image, whose typed
 * array gives them (the start is held until then).  Each image message
 * becomes one job per channel that the workers convert from the
 * detector's compressed framing (b2s_h5lz4.h) instead of compressing, at
 * chunk index image_id - first image_id through the stream's frame-number
 * order (gaps filled); an end message, a new start or the timeout closes
 * the series.  Broken messages are counted and logged once per kind; they
 * never stop the source or other streams. */
#define _GNU_SOURCE
#include "source_s2.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fdheadroom.h"
#include "progress.h"
#include "b2s_msgpack.h"
#include "retire.h"
#include "segment.h"
#include "source_meta.h"
#include "source_name.h"
#include "b2s_wire.h"
#include "chunkpool.h"
#include "order.h"
#include "handoff.h"
#include "stream.h"
#include "workers.h"

#define RECV_BATCH 64

typedef struct source {
  b2s_source_cfg cfg;
  void *sock;
  b2s_s2_msg *m;                   /* the message being handled */
  b2s_mpbuf mp;
  /* the open series */
  bool open;                       /* its images are taken */
  bool made;                       /* its streams exist */
  b2s_s2_msg *start;               /* its start, until its streams exist */
  zmq_msg_t start_msg;             /* the bytes start points into */
  bool have_start;
  uint64_t series_id, first;
  bool have_first;
  uint64_t nimages;                /* declared by the start (0: unknown) */
  uint64_t max_frame;              /* highest frame number queued + 1 */
  uint32_t nch;
  char ch[B2S_S2_MAX_CHANNELS][B2S_S2_MAX_NAME + 1];
  b2sd_stream *st[B2S_S2_MAX_CHANNELS];
  /* the series' companion streams (flatfield, pixel_mask, countrate) */
  b2sd_stream *comp[3 * B2S_S2_MAX_CHANNELS];
  uint32_t ncomp;
  char dtype[8];                   /* NumPy dtype of the series' images */
  bool layout_from_image[3];       /* image_dtype, image_size_x, _y */
  int32_t ts, block, chunk_nbytes;
  int64_t img_nbytes;
  int64_t ny, nx, rows;            /* image rows, columns; rows per block */
  uint64_t last_ns;
  /* statistics */
  uint64_t messages, images, failures, unknown_series, series, timeouts;
  uint64_t renamed, arrays_as_meta;
  uint64_t logged;                 /* bit k: kind k was logged */
} source;

typedef struct b2sd_sources {
  size_t n;
  source s[B2S_CONFIG_MAX_SOURCES];
} b2sd_sources;

/* Log a message of kind `kind` the first time only. */
static void note_once(source *s, unsigned kind, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static void note_once(source *s, unsigned kind, const char *fmt, va_list ap) {
  if (kind < 64 && (s->logged & (UINT64_C(1) << kind)))
    return;
  s->logged |= kind < 64 ? UINT64_C(1) << kind : 0;
  char why[256];
  vsnprintf(why, sizeof why, fmt, ap);
  LOG_W("source %s: %s (logged once; see stats)", s->cfg.endpoint, why);
}

/* Count a broken message, logging its kind the first time. */
static void failure(source *s, unsigned kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void failure(source *s, unsigned kind, const char *fmt, ...) {
  s->failures++;
  va_list ap;
  va_start(ap, fmt);
  note_once(s, kind, fmt, ap);
  va_end(ap);
}

/* What is not a failure but worth saying once (counted by the caller). */
static void notice(source *s, unsigned kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void notice(source *s, unsigned kind, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  note_once(s, kind, fmt, ap);
  va_end(ap);
}

/* Kinds of what is logged once (bits of `logged`).  F_DECODE + n: decode
 * error -n; F_ARRAYS + k: start array k (source_meta.h). */
enum { F_DECODE = 1, F_SERIES = 20, F_UNKNOWN, F_IMAGE, F_STREAM, F_META,
       F_COMPANION, F_IMAGE_REFUSED, F_ARRAYS = 40, F_NAME = 43, F_SHAPE,
       F_FIRST };

static void free_buf(void *data, void *hint) {
  (void)hint;
  free(data);
}

/* The template's settings with the series' layout: a b2nd array of one
 * image per chunk, placed by frame number, gaps filled.  flat: (images,
 * pixels) in bitshuffle's default blocks, so bslz4 images are stored by
 * rewriting (the chunk padded to whole blocks); images: (images, y, x) in
 * blocks of whole rows, which bslz4's blocks match only when such a block
 * is 8 KiB (else compressed again). */
static void series_cfg(const source *s, b2s_stream_cfg *sc, const char *dtype) {
  sc->cparams.typesize = s->ts;
  /* the b2nd block, whatever the template says: the frame's gap chunks
   * take it (b2s_fwriter_create fills it in only when it is 0) */
  sc->cparams.blocksize = s->block;
  b2s_stream_b2nd *nd = &sc->b2nd;
  *nd = (b2s_stream_b2nd){.enabled = true};
  /* a growing array: the writer keeps the shape in step with the chunks,
   * and series_close fills the frame up to number_of_images rows */
  nd->shape[0] = 0;
  nd->chunkshape[0] = 1;
  nd->blockshape[0] = 1;
  if (s->cfg.layout == B2S_SOURCE_IMAGES) {
    nd->ndim = 3;
    nd->shape[1] = s->ny;
    nd->shape[2] = s->nx;
    nd->chunkshape[1] = (int32_t)s->ny;
    nd->chunkshape[2] = (int32_t)s->nx;
    nd->blockshape[1] = (int32_t)s->rows;
    nd->blockshape[2] = (int32_t)s->nx;
  } else {
    nd->ndim = 2;
    nd->shape[1] = s->img_nbytes / s->ts;
    nd->chunkshape[1] = (int32_t)nd->shape[1];
    nd->blockshape[1] = s->block / s->ts;
  }
  nd->nshape = nd->nchunkshape = nd->nblockshape = (uint8_t)nd->ndim;
  snprintf(nd->dtype, sizeof nd->dtype, "%s", dtype);
  sc->order = B2S_ORDER_FRAME_NUMBER;
  sc->gaps = B2S_GAPS_FILL;
}

/* The series' block and padded chunk size: false when they do not fit.
 * The block is the one the detector's framing uses, so its LZ4 blocks are
 * the chunk's: bitshuffle's 8 KiB (whole rows of them in `images`), or
 * the HDF5 LZ4 filter's one block per image. */
static bool series_blocks(source *s) {
  int64_t row = s->nx * s->ts, n = s->img_nbytes;
  int64_t block = B2S_BSLZ4_DEFAULT_BLOCK;
  s->rows = 0;
  if (s->cfg.compression == B2S_SOURCE_LZ4 && n <= B2S_MAX_BLOCKSIZE) {
    block = n;
    s->rows = s->ny;
  } else if (s->cfg.layout == B2S_SOURCE_IMAGES) {
    s->rows = b2s_rows_per_block(row, s->ny);
    block = s->rows * row;
  }
  int64_t chunk = (n + block - 1) / block * block;
  if (block > B2S_MAX_BLOCKSIZE || chunk > B2S_MAX_BUFFERSIZE)
    return false;
  s->block = (int32_t)block;
  s->chunk_nbytes = (int32_t)chunk;
  return true;
}

/* A companion stream of one start-message array: one chunk, the array's
 * b2nd shape as chunk and block (one Blosc2 block), in arrival order. */
static void companion_cfg(b2s_stream_cfg *sc, const b2s_s2_array *a) {
  sc->cparams.typesize = (int32_t)a->elem_size;
  sc->cparams.blocksize = (int32_t)a->nbytes;
  sc->b2nd = (b2s_stream_b2nd){.enabled = true, .ndim = (int8_t)a->ndim,
                               .nshape = (uint8_t)a->ndim,
                               .nchunkshape = (uint8_t)a->ndim,
                               .nblockshape = (uint8_t)a->ndim};
  for (uint32_t i = 0; i < a->ndim; i++) {
    sc->b2nd.shape[i] = (int64_t)a->dim[i];
    sc->b2nd.chunkshape[i] = (int32_t)a->dim[i];
    sc->b2nd.blockshape[i] = (int32_t)a->dim[i];
  }
  snprintf(sc->b2nd.dtype, sizeof sc->b2nd.dtype, "%s", a->dtype);
  sc->order = B2S_ORDER_ARRIVAL;
  sc->gaps = B2S_GAPS_SKIP;
}

/* arr NULL: a channel's image stream (series_cfg), else a companion. */
static int open_stream(b2sd_server *srv, source *s, const char *name,
                       const char *dtype, const b2s_s2_array *arr,
                       b2sd_stream **out) {
  b2s_stream_cfg sc;
  int rc = b2s_config_stream_from_template(srv->cfg, s->cfg.template_name,
                                           name, &sc);
  if (rc < 0)
    return rc;
  /* never another stream's frame, nor a file we did not make (the
   * series' names were chosen free: this holds whatever happened since) */
  if (b2sd_s2_name_taken(srv, s->cfg.template_name, name))
    return B2S_E_CONFIG;
  if ((rc = b2sd_headroom_stream(srv, NULL)) < 0)
    return rc;
  if (arr)
    companion_cfg(&sc, arr);
  else
    series_cfg(s, &sc, dtype);
  b2sd_stream *st;
  if ((rc = b2sd_stream_open(srv, &sc, &st)) < 0)
    return rc;
  /* a frame that cannot be opened (say, no room) takes no images: the
   * series goes on without this stream, counted as a failure */
  if ((rc = b2sd_progress_failed(st)) < 0 ||
      (rc = b2sd_stream_start(st)) < 0) {
    b2sd_stream_free(st);
    return rc;
  }
  st->next = srv->streams;
  srv->streams = st;
  srv->nstreams++;
  srv->streams_made++;
  LOG_I("stream %s: series %llu from %s", name,
        (unsigned long long)s->series_id, s->cfg.endpoint);
  *out = st;
  return 0;
}

/* Channel i's series metadata (source_meta.h). */
static void series_meta(source *s, b2sd_stream *st, uint32_t i) {
  b2sd_s2_layout lay = {.dtype = s->dtype, .ny = s->ny, .nx = s->nx};
  memcpy(lay.from_image, s->layout_from_image, sizeof lay.from_image);
  b2s_s2_str dropped = {"", 0};
  if (b2sd_s2_series_meta(s->start, s->ch[i], &lay, &s->cfg.beamline, &s->mp,
                          &dropped) > 0)
    failure(s, F_META, "start field %.*s is not kept (too large or "
            "indefinite-length CBOR)", (int)dropped.len, dropped.p);
  int rc = b2sd_stream_meta(st, s->mp.data, s->mp.len);
  if (rc < 0)
    failure(s, F_META, "series metadata refused: %s", b2s_strerror(rc));
}

/* A gap chunk at frame number f (the writer fills the ones before it). */
static void gap_at(source *s, b2sd_stream *st, uint64_t f) {
  if (b2sd_window_check(&st->win, f) < 0)
    return;
  b2sd_chunk *c = calloc(1, sizeof *c);
  if (!c)
    return;
  c->seq = st->seq_next++;
  c->gap = B2S_RECORD_GAP | B2S_RECORD_DROPPED;
  c->nbytes = s->chunk_nbytes;
  c->rec.present = B2S_WIRE_REC_FRAME;
  c->rec.frame = f;
  b2sd_window_take(&st->win, f);
  b2sd_stream_put(st, c);
}

/* The start's bytes are held until the series' streams exist. */
static void start_release(source *s) {
  if (s->have_start)
    zmq_msg_close(&s->start_msg);
  s->have_start = false;
}

/* retire: the series' streams close for good once written (retire.h);
 * false when the daemon stops, which closes every stream anyway. */
static void series_close(b2sd_server *srv, source *s, const char *why,
                         bool retire) {
  (void)srv;
  if (!s->open)
    return;
  for (uint32_t i = 0; i < s->nch; i++)
    if (s->st[i] && s->nimages > s->max_frame)
      gap_at(s, s->st[i], s->nimages - 1);    /* as many rows as declared */
  for (uint32_t i = 0; i < s->nch; i++)
    if (s->st[i]) {
      b2sd_stream_drain_mark(s->st[i]);       /* held frames are stored */
      b2sd_stream_flush(s->st[i], s->st[i]->seq_next);
    }
  for (uint32_t i = 0; retire && i < s->nch; i++)
    if (s->st[i])
      b2sd_stream_retire(s->st[i]);
  for (uint32_t i = 0; retire && i < s->ncomp; i++)
    b2sd_stream_retire(s->comp[i]);    /* flushed when stored */
  s->ncomp = 0;
  LOG_I("source %s: series %llu closed (%s)%s", s->cfg.endpoint,
        (unsigned long long)s->series_id, why,
        s->made ? "" : "; no image came, so it has no streams");
  s->open = false;
  s->made = false;
  start_release(s);
}

static int dtype_of(b2s_s2_str t, char *np, int32_t *ts) {
  static const struct { const char *n, *np; int32_t ts; } k[] = {
    {"uint8", "|u1", 1}, {"uint16", "<u2", 2}, {"uint32", "<u4", 4}};
  for (size_t i = 0; i < 3; i++)
    if (t.len == strlen(k[i].n) && !memcmp(t.p, k[i].n, t.len)) {
      strcpy(np, k[i].np);
      *ts = k[i].ts;
      return 0;
    }
  return -1;
}

/* Where p, a pointer into msg's bytes, is in copy (a zmq_msg_copy of msg,
 * which shares the bytes except for the smallest messages). */
static const void *in_copy(zmq_msg_t *copy, zmq_msg_t *msg, const void *p) {
  return (const uint8_t *)zmq_msg_data(copy) +
         ((const uint8_t *)p - (const uint8_t *)zmq_msg_data(msg));
}

/* Store array a as the one chunk of a new stream `name`: the bytes as
 * sent (raw) or decoded (tag 56500), compressed by a worker like any
 * buffer, then the stream is flushed. */
static int store_array(b2sd_server *srv, source *s, const char *name,
                       const b2s_s2_array *a, zmq_msg_t *msg) {
  if (a->nbytes < 1 || a->nbytes > srv->dcfg.max_buffer ||
      a->nbytes > B2S_MAX_BLOCKSIZE || a->ndim > B2S_CONFIG_MAX_DIM)
    return B2S_E_RANGE;
  for (uint32_t i = 0; i < a->ndim; i++)
    if (a->dim[i] > INT32_MAX)
      return B2S_E_RANGE;
  b2sd_job *j = calloc(1, sizeof *j);
  if (!j)
    return B2S_E_NOMEM;
  if (a->comp == B2S_S2_RAW) {
    zmq_msg_init(&j->msg);
    zmq_msg_copy(&j->msg, msg);
    j->data = in_copy(&j->msg, msg, a->data.p);
  } else {
    b2s_h5_params p = {
      .kind = a->comp == B2S_S2_BSLZ4 ? B2S_H5_BSLZ4 : B2S_H5_LZ4,
      .elem_size = (int32_t)(a->comp_elem ? a->comp_elem : a->elem_size),
      .typesize = (int32_t)a->elem_size, .clevel = 5};
    uint8_t *buf = malloc((size_t)a->nbytes);
    if (!buf || b2s_h5_decompress(&p, a->data.p, a->data.len, buf,
                                  (size_t)a->nbytes) < 0) {
      free(buf);
      free(j);
      return B2S_E_DECODE;
    }
    zmq_msg_init_data(&j->msg, buf, (size_t)a->nbytes, free_buf, NULL);
    j->data = buf;
  }
  j->len = (size_t)a->nbytes;
  b2sd_stream *st;
  int rc = open_stream(srv, s, name, NULL, a, &st);
  if (rc < 0) {
    zmq_msg_close(&j->msg);
    free(j);
    return rc;
  }
  b2s_stream_cfg cfg;
  b2sd_stream_cfg_get(st, &cfg);
  j->st = st;
  j->seq = st->seq_next++;
  j->cparams = cfg.cparams;
  /* relaxed: the memory bound; pairs with the fetch_sub in b2sd_job_free */
  atomic_fetch_add_explicit(&srv->inflight_bytes, (int64_t)j->len,
                            memory_order_relaxed);
  atomic_fetch_add_explicit(&st->st_buffers_in, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&st->st_bytes_in, j->len, memory_order_relaxed);
  b2sd_pool_push(srv->pool, &j);
  b2sd_stream_flush(st, st->seq_next);
  if (s->ncomp < sizeof s->comp / sizeof s->comp[0])
    s->comp[s->ncomp++] = st;
  return 0;
}

/* The start message's large arrays of channel i as companion streams
 * "<stream>.flatfield", ".pixel_mask" and ".countrate" (docs), those that
 * have the spec's shape (the others are series metadata). */
static void companions(b2sd_server *srv, source *s, uint32_t i,
                       const char *stream) {
  b2s_s2_named named[B2S_S2_MAX_CHANNELS];
  char name[B2S_STREAM_NAME_MAX + 64];
  for (int k = 0; k < B2SD_S2_NARRAYS; k++) {
    const b2s_s2_array *a = NULL;
    b2s_s2_array one;
    const b2s_s2_field *f = b2s_s2_field_get(s->start, b2sd_s2_array_key[k]);
    uint32_t n;
    if (!f)
      continue;
    if (k < 2 && b2s_s2_array_map(f->value, named, B2S_S2_MAX_CHANNELS, &n) == 0) {
      for (uint32_t c = 0; c < n; c++)
        if (named[c].name.len == strlen(s->ch[i]) &&
            !memcmp(named[c].name.p, s->ch[i], named[c].name.len))
          a = &named[c].a;
    } else if (k == 2 && b2s_s2_array_parse(f->value, &one) == 0) {
      a = &one;
    }
    if (!a)
      continue;
    snprintf(name, sizeof name, "%s.%s", stream, b2sd_s2_array_stream[k]);
    int rc = b2s_stream_name_check(name);
    if (rc == 0)
      rc = store_array(srv, s, name, a, &s->start_msg);
    if (rc < 0)
      failure(s, F_COMPANION, "series %llu: %s not kept as stream %s: %s",
              (unsigned long long)s->series_id, b2sd_s2_array_key[k], name,
              b2s_strerror(rc));
  }
}

/* The start's arrays that are not of the spec's shape (a detector's
 * start must not lose the series for them): kept as series metadata,
 * without companion streams; counted and said once. */
static void arrays_as_metadata(source *s) {
  for (int k = 0; k < B2SD_S2_NARRAYS; k++)
    if (b2sd_s2_array_given(s->start, k) && !b2sd_s2_array_ok(s->start, k)) {
      s->arrays_as_meta++;
      notice(s, F_ARRAYS + (unsigned)k, "series %llu: start field %s is not "
             "%s: kept as series metadata, without companion streams",
             (unsigned long long)s->series_id, b2sd_s2_array_key[k],
             k < 2 ? "a map of channel names to arrays" : "a typed array");
    }
}

/* The series' streams, once its dtype and image size are known: names
 * free of every stream and file there is (source_name.h), one stream per
 * channel with its metadata and companions.  Then the start's bytes are
 * let go (the jobs hold what they still need). */
static int series_make(b2sd_server *srv, source *s, const char *dtype,
                       int32_t ts, uint64_t ny, uint64_t nx) {
  const b2s_s2_msg *m = s->start;
  if (!ny || !nx || ny > INT32_MAX || nx > INT32_MAX / ny ||
      (int64_t)(ny * nx) * ts > srv->dcfg.max_buffer) {
    failure(s, F_SERIES, "series %llu: images of %llux%llu %s are larger "
            "than max_buffer", (unsigned long long)s->series_id,
            (unsigned long long)ny, (unsigned long long)nx, dtype);
    return B2S_E_OVERSIZE;
  }
  s->ts = ts;
  s->img_nbytes = (int64_t)(ny * nx) * ts;
  s->ny = (int64_t)ny;
  s->nx = (int64_t)nx;
  if (!series_blocks(s)) {
    failure(s, F_SERIES, "series %llu: images larger than a frame's chunk",
            (unsigned long long)s->series_id);
    return B2S_E_OVERSIZE;
  }
  snprintf(s->dtype, sizeof s->dtype, "%s", dtype);
  uint32_t sfx = b2sd_s2_suffix(srv, s->cfg.name, s->cfg.template_name, m);
  if (sfx == 0) {
    failure(s, F_NAME, "series %llu: its names are taken up to suffix .%d: "
            "not stored", (unsigned long long)s->series_id, B2SD_S2_SUFFIX_MAX);
    return B2S_E_LIMIT;
  }
  if (sfx > 1) {
    s->renamed++;
    LOG_I("source %s: series %llu: its names are taken (a series id seen "
          "before): stored with suffix .%u", s->cfg.endpoint,
          (unsigned long long)s->series_id, sfx);
  }
  arrays_as_metadata(s);
  for (uint32_t i = 0; i < s->nch; i++) {
    char name[B2S_STREAM_NAME_MAX + 64];
    int rc = b2sd_s2_name(s->cfg.name, m, m->channels[i], sfx, name,
                          sizeof name);
    if (rc == 0)
      rc = open_stream(srv, s, name, s->dtype, NULL, &s->st[i]);
    if (rc < 0) {
      failure(s, F_STREAM, "series %llu channel %s: no stream %s: %s",
              (unsigned long long)s->series_id, s->ch[i], name,
              b2s_strerror(rc));
      continue;
    }
    series_meta(s, s->st[i], i);
    companions(srv, s, i, name);
  }
  s->made = true;
  start_release(s);
  return 0;
}

static void on_start(b2sd_server *srv, source *s, zmq_msg_t *msg) {
  series_close(srv, s, "a new series started", true);
  /* the series keeps its start (decoded again from a copy that shares
   * the bytes): its streams may be made only at its first image */
  zmq_msg_init(&s->start_msg);
  if (zmq_msg_copy(&s->start_msg, msg) < 0 ||
      b2s_s2_decode(zmq_msg_data(&s->start_msg), zmq_msg_size(&s->start_msg),
                    s->start) < 0) {
    zmq_msg_close(&s->start_msg);
    failure(s, F_SERIES, "start of series %llu: cannot be kept",
            (unsigned long long)s->m->series_id);
    return;
  }
  s->have_start = true;
  const b2s_s2_msg *m = s->start;
  s->series_id = m->series_id;
  s->nch = m->nchannels;
  for (uint32_t i = 0; i < s->nch; i++)
    snprintf(s->ch[i], sizeof s->ch[i], "%.*s", (int)m->channels[i].len,
             m->channels[i].p);
  s->have_first = false;
  s->nimages = m->number_of_images <= (uint64_t)INT32_MAX ? m->number_of_images : 0;
  s->max_frame = 0;
  s->made = false;
  memset(s->st, 0, sizeof s->st);
  memset(s->layout_from_image, 0, sizeof s->layout_from_image);
  char dtype[8];
  int32_t ts;
  bool known = dtype_of(m->image_dtype, dtype, &ts) == 0;
  if (known && m->image_size_x && m->image_size_y) {
    if (series_make(srv, s, dtype, ts, m->image_size_y, m->image_size_x) < 0) {
      start_release(s);
      return;
    }
  } else {
    LOG_I("source %s: series %llu: its start gives no %s: its streams are "
          "made at its first image", s->cfg.endpoint,
          (unsigned long long)s->series_id,
          known ? "image_size_x/y" : "image_dtype (uint8/16/32)");
  }
  s->open = true;
  s->series++;
}

/* The data of channel ch in image message m, NULL when absent. */
static const b2s_s2_array *channel_data(const b2s_s2_msg *m, const char *ch) {
  for (uint32_t k = 0; k < m->ndata; k++)
    if (m->data[k].name.len == strlen(ch) &&
        !memcmp(m->data[k].name.p, ch, m->data[k].name.len))
      return &m->data[k].a;
  return NULL;
}

/* The streams of a series whose start lacked the dtype or the image size,
 * from its first image: the typed array of the first of the series'
 * channels the image holds gives the dtype (its RFC 8746 tag) and y, x
 * (its shape), for what the start did not give. */
static int series_from_image(b2sd_server *srv, source *s) {
  const b2s_s2_msg *st = s->start, *m = s->m;
  const b2s_s2_array *a = NULL;
  for (uint32_t i = 0; i < s->nch && !a; i++)
    a = channel_data(m, s->ch[i]);
  const char *why = !a ? "holds none of the series' channels"
                  : a->ndim != 2 ? "is not a two-dimensional array"
                  : a->dtype[0] == '>' ? "is big-endian"
                  : NULL;
  if (why) {
    failure(s, F_FIRST, "series %llu: image %llu %s: the series' "
            "streams are not made from it", (unsigned long long)s->series_id,
            (unsigned long long)m->image_id, why);
    return B2S_E_CHUNK_SIZE;
  }
  char dtype[8];
  int32_t ts;
  s->layout_from_image[0] = dtype_of(st->image_dtype, dtype, &ts) < 0;
  if (s->layout_from_image[0]) {
    snprintf(dtype, sizeof dtype, "%s", a->dtype);
    ts = (int32_t)a->elem_size;
  }
  s->layout_from_image[1] = !st->image_size_x;
  s->layout_from_image[2] = !st->image_size_y;
  uint64_t nx = st->image_size_x ? st->image_size_x : a->dim[1];
  uint64_t ny = st->image_size_y ? st->image_size_y : a->dim[0];
  LOG_I("source %s: series %llu: streams made at image %llu: %llux%llu %s",
        s->cfg.endpoint, (unsigned long long)s->series_id,
        (unsigned long long)m->image_id, (unsigned long long)ny,
        (unsigned long long)nx, dtype);
  return series_make(srv, s, dtype, ts, ny, nx);
}

/* The image's record: frame number, start time, and the Stream V2 fields
 * (times exact in ns and as the detector's rationals, user_data). */
static int image_record(source *s, uint64_t frame, b2sd_rec *rec) {
  const b2s_s2_msg *m = s->m;
  b2s_mpbuf *b = &s->mp;
  b->len = 0;
  int64_t t[3] = {0, 0, 0};
  const b2s_s2_rational *q[3] = {&m->start_time, &m->stop_time, &m->real_time};
  static const char *const names[3] = {"start_time_ns", "stop_time_ns",
                                       "real_time_ns"};
  uint32_t n = 2 + (m->has_times ? 4 : 0) + (m->user_data.len ? 1 : 0);
  b2s_mp_put_map(b, n);
  b2s_mp_put_str(b, "image_id", 8);
  b2s_mp_put_uint(b, m->image_id);
  b2s_mp_put_str(b, "series_id", 9);
  b2s_mp_put_uint(b, m->series_id);
  if (m->has_times) {
    for (int i = 0; i < 3; i++) {
      if (!b2s_s2_rational_ns(*q[i], &t[i]))
        return B2S_E_RANGE;
      b2s_mp_put_str(b, names[i], strlen(names[i]));
      b2s_mp_put_int(b, t[i]);
    }
    /* the exact times: numerators over this time base */
    b2s_mp_put_str(b, "time_base", 9);
    b2s_mp_put_uint(b, m->start_time.den);
  }
  if (m->user_data.len) {
    b2s_mp_put_str(b, "user_data", 9);
    /* a record holds B2S_RECORD_USER_MAX bytes: larger user data is nil */
    size_t left = B2S_RECORD_USER_MAX - 16 - b->len;
    if (b2s_s2_to_msgpack(m->user_data, b, left) < 0) {
      failure(s, F_META, "image user_data larger than a record holds "
              "(%d bytes) or not convertible: stored as nil",
              B2S_RECORD_USER_MAX);
      b2s_mp_put_nil(b);
    }
  }
  if (b->len > B2S_RECORD_USER_MAX)
    return B2S_E_RANGE;
  rec->user = malloc(b->len);
  if (!rec->user)
    return B2S_E_NOMEM;
  memcpy(rec->user, b->data, b->len);
  rec->user_len = (uint16_t)b->len;
  rec->present = B2S_WIRE_REC_FRAME | B2S_WIRE_REC_USER_MAP |
                 (m->has_times ? B2S_WIRE_REC_TS : 0);
  rec->frame = frame;
  rec->ts = t[0];
  return 0;
}

/* Whether array a is an image of the series: its dtype, its pixel count,
 * and with layout images its y, x. */
static bool image_fits(const source *s, const b2s_s2_array *a) {
  return a->ndim == 2 && strcmp(a->dtype, s->dtype) == 0 &&
         a->dim[0] * a->dim[1] * a->elem_size == (uint64_t)s->img_nbytes &&
         (s->cfg.layout != B2S_SOURCE_IMAGES ||
          (a->dim[0] == (uint64_t)s->ny && a->dim[1] == (uint64_t)s->nx));
}

static int queue_channel(b2sd_server *srv, source *s, b2sd_stream *st,
                         const b2s_s2_array *a, uint64_t frame,
                         zmq_msg_t *msg) {
  int rc = b2sd_progress_failed(st);    /* its frame stores no more */
  if (rc == 0)
    rc = b2sd_window_check(&st->win, frame);
  if (rc < 0)
    return rc;
  b2s_cparams cp;
  b2sd_stream_cp_get(st, &cp, NULL);
  b2sd_job *j = calloc(1, sizeof *j);
  if (!j)
    return B2S_E_NOMEM;
  if ((rc = image_record(s, frame, &j->rec)) < 0) {
    free(j);
    return rc;
  }
  j->st = st;
  j->seq = st->seq_next++;
  j->cparams = cp;
  if (a->comp == B2S_S2_RAW) {
    /* an uncompressed image: padded to the frame's chunk, compressed by the
     * worker like any buffer (LZ4 + bitshuffle in the frame's blocks) */
    uint8_t *buf = malloc((size_t)s->chunk_nbytes);
    if (!buf) {
      b2sd_rec_clear(&j->rec);
      free(j);
      return B2S_E_NOMEM;
    }
    memcpy(buf, a->data.p, (size_t)a->nbytes);
    memset(buf + a->nbytes, 0, (size_t)(s->chunk_nbytes - a->nbytes));
    zmq_msg_init_data(&j->msg, buf, (size_t)s->chunk_nbytes, free_buf, NULL);
    j->data = buf;
    j->len = (size_t)s->chunk_nbytes;
    j->cparams.codec = B2S_CODEC_LZ4;
    j->cparams.typesize = s->ts;
    j->cparams.blocksize = s->block;
    j->cparams.splitmode = B2S_SPLIT_NEVER;
    memset(j->cparams.filters, 0, sizeof j->cparams.filters);
    memset(j->cparams.filters_meta, 0, sizeof j->cparams.filters_meta);
    j->cparams.filters[5] = B2S_FILTER_BITSHUFFLE;
    j->fill_gaps = true;
    atomic_fetch_add_explicit(&srv->inflight_bytes, (int64_t)j->len,
                              memory_order_relaxed);
    b2sd_window_take(&st->win, frame);
    atomic_fetch_add_explicit(&st->st_buffers_in, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->st_bytes_in, (uint64_t)a->nbytes,
                              memory_order_relaxed);
    b2sd_pool_push(srv->pool, &j);
    return 0;
  }
  zmq_msg_init(&j->msg);
  zmq_msg_copy(&j->msg, msg);   /* shares the buffer, no copy */
  j->data = in_copy(&j->msg, msg, a->data.p);
  j->len = a->data.len;
  /* relaxed: the memory bound; pairs with the fetch_sub in b2sd_job_free */
  atomic_fetch_add_explicit(&srv->inflight_bytes, (int64_t)j->len,
                            memory_order_relaxed);
  j->fill_gaps = true;
  j->h5 = true;
  j->h5p = (b2s_h5_params){
    .kind = a->comp == B2S_S2_BSLZ4 ? B2S_H5_BSLZ4 : B2S_H5_LZ4,
    .elem_size = (int32_t)(a->comp_elem ? a->comp_elem : a->elem_size),
    .typesize = s->ts, .clevel = cp.clevel ? cp.clevel : 5,
    .verify = s->cfg.verify != 0, .pad_blocks = true, .want_block = s->block};
  j->h5_nbytes = a->nbytes;
  j->h5_chunk_nbytes = s->chunk_nbytes;
  b2sd_window_take(&st->win, frame);
  /* relaxed: statistics counters */
  atomic_fetch_add_explicit(&st->st_buffers_in, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&st->st_bytes_in, (uint64_t)a->nbytes,
                            memory_order_relaxed);
  b2sd_pool_push(srv->pool, &j);
  return 0;
}

/* The first image's series_date joins each channel's series metadata:
 * the images' times count from it (SOURCES.md 4), and the start message
 * does not carry it. */
static void series_date(source *s) {
  const b2s_s2_msg *m = s->m;
  if (!m->series_date.len)
    return;
  b2s_mpbuf *b = &s->mp;
  b->len = 0;
  b2s_mp_put_map(b, 1);
  b2s_mp_put_str(b, "series_date", 11);
  b2s_mp_put_str(b, m->series_date.p, m->series_date.len);
  for (uint32_t i = 0; i < s->nch; i++) {
    if (!s->st[i])
      continue;
    int rc = b2sd_stream_meta(s->st[i], b->data, b->len);
    if (rc < 0)
      failure(s, F_META, "series_date not kept: %s", b2s_strerror(rc));
  }
}

static void on_image(b2sd_server *srv, source *s, zmq_msg_t *msg) {
  const b2s_s2_msg *m = s->m;
  if (!s->open || m->series_id != s->series_id) {
    s->unknown_series++;
    failure(s, F_UNKNOWN, "image %llu of series %llu, which is not open",
            (unsigned long long)m->image_id, (unsigned long long)m->series_id);
    return;
  }
  if (!s->made && series_from_image(srv, s) < 0)
    return;                          /* counted; a later image may do */
  if (!s->have_first) {
    s->first = m->image_id;
    s->have_first = true;
    series_date(s);
  }
  if (m->image_id < s->first) {
    failure(s, F_IMAGE, "image %llu before the series' first image %llu",
            (unsigned long long)m->image_id, (unsigned long long)s->first);
    return;
  }
  s->images++;
  if (m->image_id - s->first + 1 > s->max_frame)
    s->max_frame = m->image_id - s->first + 1;
  for (uint32_t i = 0; i < s->nch; i++) {
    const b2s_s2_array *a = channel_data(m, s->ch[i]);
    if (!a || !s->st[i])
      continue;                      /* its place stays a gap */
    if (!image_fits(s, a)) {         /* its place stays a gap */
      failure(s, F_SHAPE, "image %llu channel %s refused: a %u-dimensional "
              "%s array of %lld bytes, where the series' images are "
              "%lldx%lld %s", (unsigned long long)m->image_id, s->ch[i],
              a->ndim, a->dtype, (long long)a->nbytes, (long long)s->ny,
              (long long)s->nx, s->dtype);
      continue;
    }
    int rc = queue_channel(srv, s, s->st[i], a, m->image_id - s->first, msg);
    if (rc < 0)
      failure(s, F_IMAGE_REFUSED, "image %llu channel %s refused: %s",
              (unsigned long long)m->image_id, s->ch[i], b2s_strerror(rc));
  }
}

/* Headroom for one more image on every stream of the series: else the
 * message waits in ZeroMQ, and the detector's PUSH holds back. */
static bool headroom(b2sd_server *srv, source *s) {
  if (!s->open || !s->made)
    return true;
  int64_t inflight =
      atomic_load_explicit(&srv->inflight_bytes, memory_order_relaxed);
  /* with nothing in flight an image is always taken: one larger than the
   * room must not stop the source for good */
  if (inflight > 0 &&
      inflight + s->img_nbytes * (int64_t)s->nch > b2sd_memory_headroom(srv))
    return false;
  for (uint32_t i = 0; i < s->nch; i++) {
    if (!s->st[i])
      continue;
    int depth;
    b2sd_stream_cp_get(s->st[i], NULL, &depth);
    if (b2sd_pool_stream_queued(srv->pool, s->st[i]) >= (size_t)depth)
      return false;
  }
  return true;
}

static void on_message(b2sd_server *srv, source *s, zmq_msg_t *msg) {
  s->messages++;
  s->last_ns = b2sd_now_ns();
  int rc = b2s_s2_decode(zmq_msg_data(msg), zmq_msg_size(msg), s->m);
  if (rc < 0) {
    failure(s, F_DECODE + (unsigned)-rc, "message refused: %s%s%s",
            b2s_s2_strerror(rc), s->m->err_field ? " in " : "",
            s->m->err_field ? s->m->err_field : "");
    return;
  }
  if (s->m->type == B2S_S2_START)
    on_start(srv, s, msg);
  else if (s->m->type == B2S_S2_IMAGE)
    on_image(srv, s, msg);
  else if (s->open && s->m->series_id == s->series_id)
    series_close(srv, s, "end", true);
  else
    failure(s, F_UNKNOWN, "end of series %llu, which is not open",
            (unsigned long long)s->m->series_id);
}

int b2sd_sources_new(b2sd_server *srv) {
  size_t n;
  const b2s_source_cfg *cfg = b2s_config_sources(srv->cfg, &n);
  if (n == 0)
    return 0;
  b2sd_sources *ss = calloc(1, sizeof *ss);
  if (!ss)
    return B2S_E_NOMEM;
  srv->sources = ss;
  for (size_t i = 0; i < n; i++) {
    source *s = &ss->s[ss->n];
    s->cfg = cfg[i];
    b2s_mpbuf_init(&s->mp);
    if (!(s->m = malloc(sizeof *s->m)) || !(s->start = malloc(sizeof *s->start)))
      return B2S_E_NOMEM;
    ss->n++;
    if (!(s->sock = zmq_socket(srv->zctx, ZMQ_PULL)))
      return -errno;
    int64_t max = (int64_t)s->cfg.max_message << 20;
    int hwm = 64, linger = 0;
    zmq_setsockopt(s->sock, ZMQ_MAXMSGSIZE, &max, sizeof max);
    zmq_setsockopt(s->sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s->sock, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect(s->sock, s->cfg.endpoint) < 0) {
      int e = errno;
      LOG_E("source %s: cannot connect: %s", s->cfg.endpoint, zmq_strerror(e));
      return -e;
    }
    LOG_I("source %s: connected (dectris-stream2, template %s)",
          s->cfg.endpoint, s->cfg.template_name);
  }
  return 0;
}

void *b2sd_sources_socket(b2sd_server *srv, size_t i) {
  return srv->sources->s[i].sock;
}

bool b2sd_sources_arm(b2sd_server *srv) {
  b2sd_sources *ss = srv->sources;
  bool held = false;
  for (size_t i = 0; ss && i < ss->n; i++)
    held |= !headroom(srv, &ss->s[i]);
  return held;
}

b2sd_source_left b2sd_sources_recv(b2sd_server *srv, size_t i) {
  source *s = &srv->sources->s[i];
  if (srv->draining)
    return B2SD_SOURCE_HELD;
  for (int k = 0; k < RECV_BATCH; k++) {
    if (!headroom(srv, s))
      return B2SD_SOURCE_HELD;
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, s->sock, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&msg);
      return B2SD_SOURCE_EMPTY;
    }
    on_message(srv, s, &msg);
    zmq_msg_close(&msg);             /* the jobs hold their own copies */
  }
  return B2SD_SOURCE_MORE;
}

void b2sd_sources_tick(b2sd_server *srv, uint64_t now_ns) {
  b2sd_sources *ss = srv->sources;
  for (size_t i = 0; ss && i < ss->n; i++) {
    source *s = &ss->s[i];
    if (s->open &&
        now_ns - s->last_ns > (uint64_t)s->cfg.series_timeout_ms * 1000000u) {
      s->timeouts++;
      series_close(srv, s, "no message within series_timeout_ms", true);
    }
  }
}

void b2sd_sources_close(b2sd_server *srv) {
  b2sd_sources *ss = srv->sources;
  for (size_t i = 0; ss && i < ss->n; i++)
    series_close(srv, &ss->s[i], "daemon stopping", false);
}

void b2sd_sources_free(b2sd_server *srv) {
  b2sd_sources *ss = srv->sources;
  if (!ss)
    return;
  for (size_t i = 0; i < ss->n; i++) {
    if (ss->s[i].sock)
      zmq_close(ss->s[i].sock);
    start_release(&ss->s[i]);
    free(ss->s[i].m);
    free(ss->s[i].start);
    b2s_mpbuf_fini(&ss->s[i].mp);
  }
  free(ss);
  srv->sources = NULL;
}

char *b2sd_sources_json(b2sd_server *srv) {
  b2sd_sources *ss = srv->sources;
  size_t cap = 64 + (ss ? ss->n : 0) * 1024;
  char *out = malloc(cap);
  if (!out)
    return NULL;
  size_t at = (size_t)snprintf(out, cap, "[");
  for (size_t i = 0; ss && i < ss->n; i++) {
    source *s = &ss->s[i];
    at += (size_t)snprintf(out + at, cap - at,
        "%s{\"kind\":\"dectris-stream2\",\"endpoint\":\"%s\",\"messages\":%llu,"
        "\"images\":%llu,\"refused\":%llu,\"unknown_series\":%llu,"
        "\"series\":%llu,\"series_timed_out\":%llu,\"series_open\":%s,"
        "\"series_renamed\":%llu,\"arrays_as_metadata\":%llu}",
        i ? "," : "", s->cfg.endpoint, (unsigned long long)s->messages,
        (unsigned long long)s->images, (unsigned long long)s->failures,
        (unsigned long long)s->unknown_series, (unsigned long long)s->series,
        (unsigned long long)s->timeouts, s->open ? "true" : "false",
        (unsigned long long)s->renamed, (unsigned long long)s->arrays_as_meta);
  }
  snprintf(out + at, cap - at, "]");
  return out;
}

size_t b2sd_sources_count(b2sd_server *srv) {
  return srv->sources ? srv->sources->n : 0;
}

void b2sd_source_counts_get(b2sd_server *srv, size_t i,
                            b2sd_source_counts *out) {
  const source *s = &srv->sources->s[i];
  *out = (b2sd_source_counts){
      .endpoint = s->cfg.endpoint, .kind = "dectris-stream2",
      .messages = s->messages, .images = s->images, .refused = s->failures,
      .unknown_series = s->unknown_series, .series = s->series,
      .series_timed_out = s->timeouts, .series_open = s->open};
}
