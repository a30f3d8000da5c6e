/* Client library (libclient/b2stream_client.h) against a fake daemon.
 *
 * The fake is a thread with a ZeroMQ ROUTER on an ipc:// socket that
 * speaks docs/PROTOCOL.md through the wire codec: WELCOME, OPENED with a
 * configurable number of credits, ACKs (credit withheld on demand),
 * DROPPED, FLUSHED, CLOSED, SHM_ATTACHED (a real segment it takes slots
 * from), FOLLOWING, NOTIFY, CHUNK (pushed and read), UNFOLLOWED,
 * STATS_REPLY, PONG and ERROR, plus injected errors, silence, and actions
 * scheduled for later (credit grants, commits, raw messages).  It records
 * every message it receives, so the tests check the exact headers and
 * payloads the library sends as well as its behaviour on each reply.
 * By default it is a daemon of protocol version 1 (it refuses a version-2
 * HELLO as PROTOCOL.md 8 says, without recording it); with v2 set it
 * speaks version 2 too: META, OPEN with metadata, records on DATA and
 * SHM_SUBMIT, and records of its chunks (rec_of) on NOTIFY, CHUNK, READ. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "b2s_chunk.h"
#include "b2stream_client.h"
#include "b2s_shm.h"
#include "b2s_wire.h"
#include "ts.h"

#define CHUNK_NBYTES 4096
#define LOG_MAX 512
#define LATER_MAX 32
#define REC_PAYLOAD 64
#define REC_RECORD 128

/* ---- the fake daemon ------------------------------------------------------- */

typedef struct rec {
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  size_t hdr_len;
  b2s_wire_msg m;                  /* decoded; strings point into hdr */
  size_t payload_len;
  uint8_t payload[REC_PAYLOAD];    /* first bytes (of the slot for SHM) */
  size_t record_len;               /* version 2: the record frame, 0: none */
  uint8_t record[REC_RECORD];      /* its first bytes */
} rec;

enum later_kind { L_RAW, L_GRANT, L_COMMIT };

typedef struct later {
  int64_t due;
  int kind;
  uint32_t n;                      /* credits to grant / chunks to commit */
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  size_t hdr_len;
} later;

typedef struct fake {
  void *zctx, *router;
  pthread_t thread;
  char endpoint[128];
  pthread_mutex_t mu;              /* everything below */
  bool stop;
  /* behaviour */
  uint32_t credits, max_buffer, timeout_ms;
  uint8_t ack_level, policy;
  bool withhold, shm;
  bool v2;                         /* speaks protocol version 2 */
  bool records_always;             /* NOTIFY records even when not asked */
  bool bad_record;                 /* records with an undefined present bit */
  int version;                     /* of the session */
  int refused;                     /* HELLOs refused for their version */
  uint32_t drop_every;             /* drop buffer id when (id+1) % n == 0 */
  uint8_t err_type, mute_type;
  int32_t err_code;
  uint16_t err_flags;
  uint64_t committed;
  /* state */
  uint8_t rid[256];
  size_t rid_len;
  uint32_t next_handle, next_follow;
  uint64_t ids, dropped;           /* of the last opened handle */
  uint32_t handle;
  uint32_t follow_id;              /* the live follow, 0 when none */
  uint16_t follow_flags;
  uint64_t follow_next;            /* next index to announce or push */
  b2s_shm *seg;
  char seg_name[64];
  b2s_ctx *ctx;
  rec log[LOG_MAX];
  int nlog;
  later later[LATER_MAX];
  int nlater;
} fake;

static unsigned fake_seq;

static void sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Decompressed content of chunk i. */
static void chunk_pattern(uint64_t i, uint8_t *out) {
  for (size_t j = 0; j < CHUNK_NBYTES; j++)
    out[j] = (uint8_t)((i * 7 + j / 512) & 0xff);
}

/* Send m in the session's version with up to two more frames. */
static void fsend_rec(fake *f, const b2s_wire_msg *m, const void *payload,
                      size_t plen, const void *record, size_t rlen) {
  uint8_t buf[B2S_WIRE_HEADER_MAX];
  int n = b2s_wire_encode_v(m, f->version ? f->version : 1, buf, sizeof buf);
  assert_true(n > 0);
  zmq_send(f->router, f->rid, f->rid_len, ZMQ_SNDMORE);
  zmq_send(f->router, buf, (size_t)n, payload || record ? ZMQ_SNDMORE : 0);
  if (payload)
    zmq_send(f->router, payload, plen, record ? ZMQ_SNDMORE : 0);
  if (record)
    zmq_send(f->router, record, rlen, 0);
}

static void fsend(fake *f, const b2s_wire_msg *m, const void *payload,
                  size_t plen) {
  fsend_rec(f, m, payload, plen, NULL, 0);
}

/* The record the fake stores with chunk i: frame 1000 + i, ts, a made-up
 * checksum, and a user part: map {"i": i} for even i, 3 raw bytes for odd
 * i; chunk 5 is a gap without user part. */
static size_t rec_of(uint64_t i, uint8_t *out) {
  uint8_t user[8];
  b2s_wire_rec r = {.frame = 1000 + i, .ts_ns = (int64_t)i * 10 - 5,
                    .xxh64 = UINT64_C(0xABCD000000000000) + i, .user = user};
  r.present = B2S_WIRE_REC_FRAME | B2S_WIRE_REC_TS | B2S_WIRE_REC_XXH64;
  if (i == 5) {
    r.flags = B2S_WIRE_REC_GAP | B2S_WIRE_REC_DROPPED;
  } else if (i % 2 == 0) {
    user[0] = 0x81, user[1] = 0xa1, user[2] = 'i', user[3] = (uint8_t)i;
    r.user_len = 4;
    r.present |= B2S_WIRE_REC_USER_MAP;
  } else {
    user[0] = 1, user[1] = 2, user[2] = (uint8_t)i;
    r.user_len = 3;
  }
  int n = b2s_wire_rec_encode(&r, out, B2S_WIRE_REC_MAX);
  assert_true(n > 0);
  return (size_t)n;
}

/* rec_of, spoilt when the fake is told to send bad records. */
static size_t rec_of_fake(const fake *f, uint64_t i, uint8_t *out) {
  size_t n = rec_of(i, out);
  if (f->bad_record)
    out[25] = 0x80;                  /* present bit 0x8000: undefined */
  return n;
}

static bool follow_records(const fake *f) {
  return (f->follow_flags & B2S_WIRE_FOLLOW_RECORDS) || f->records_always;
}

static void send_error(fake *f, uint32_t tag, int type, uint32_t ref_id,
                       uint64_t ref_index, int32_t code, uint16_t flags,
                       const char *text) {
  b2s_wire_msg e;
  b2s_wire_init(&e, B2S_WIRE_ERROR);
  e.tag = tag;
  e.flags = flags;
  e.error.code = code;
  e.error.ref_type = (uint8_t)type;
  e.error.ref_id = ref_id;
  e.error.ref_index = ref_index;
  e.error.message = b2s_wire_cstr(text);
  fsend(f, &e, NULL, 0);
}

static void send_ack(fake *f, uint8_t level, uint32_t credits) {
  b2s_wire_msg a;
  b2s_wire_init(&a, B2S_WIRE_ACK);
  a.ack.upto = f->ids;
  a.ack.dropped = f->dropped;
  a.ack.handle = f->handle;
  a.ack.credits = credits;
  a.ack.level = level;
  fsend(f, &a, NULL, 0);
}

/* Announce or push chunks [follow_next, committed) to the live follow. */
static void deliver(fake *f) {
  if (f->follow_id == 0 || f->follow_next >= f->committed)
    return;
  if (!(f->follow_flags & (B2S_WIRE_FOLLOW_PUSH_COMPRESSED |
                           B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED))) {
    b2s_wire_msg n;
    b2s_wire_init(&n, B2S_WIRE_NOTIFY);
    n.notify.first = f->follow_next;
    n.notify.count = (uint32_t)(f->committed - f->follow_next);
    n.notify.committed = f->committed;
    n.notify.follow_id = f->follow_id;
    static uint8_t recs[B2S_WIRE_NOTIFY_RECS_MAX * B2S_WIRE_REC_MAX];
    size_t len = 0;
    if (follow_records(f)) {
      assert_true(n.notify.count <= B2S_WIRE_NOTIFY_RECS_MAX);
      n.flags = B2S_WIRE_NOTIFY_RECORDS;
      for (uint64_t i = n.notify.first; i < f->committed; i++)
        len += rec_of_fake(f, i, recs + len);
    }
    fsend(f, &n, len ? recs : NULL, len);
    f->follow_next = f->committed;
    return;
  }
  bool dec = f->follow_flags & B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED;
  for (; f->follow_next < f->committed; f->follow_next++) {
    uint8_t raw[CHUNK_NBYTES], comp[CHUNK_NBYTES + B2S_MAX_OVERHEAD];
    chunk_pattern(f->follow_next, raw);
    b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
    int cb = b2s_compress(f->ctx, &cp, raw, CHUNK_NBYTES, comp, sizeof comp);
    assert_true(cb > 0);
    b2s_wire_msg c;
    b2s_wire_init(&c, B2S_WIRE_CHUNK);
    c.flags = B2S_WIRE_CHUNK_PUSHED | (dec ? B2S_WIRE_CHUNK_DECOMPRESSED : 0);
    c.chunk.index = f->follow_next;
    c.chunk.follow_id = f->follow_id;
    c.chunk.nbytes = CHUNK_NBYTES;
    c.chunk.cbytes = (uint32_t)cb;
    uint8_t r[B2S_WIRE_REC_MAX];
    size_t rlen = follow_records(f) ? rec_of_fake(f, f->follow_next, r) : 0;
    if (rlen)
      c.flags |= B2S_WIRE_CHUNK_RECORD;
    fsend_rec(f, &c, dec ? (void *)raw : (void *)comp,
              dec ? CHUNK_NBYTES : (size_t)cb, rlen ? r : NULL, rlen);
  }
}

static bool is_stream(b2s_wire_str s) {
  return s.len == 4 && memcmp(s.ptr, "det1", 4) == 0;
}

static void on_data(fake *f, const rec *r) {
  uint64_t id = r->m.type == B2S_WIRE_DATA ? r->m.data.buffer_id
                                           : r->m.shm_submit.buffer_id;
  assert_int_equal(id, f->ids);   /* the library numbers without gaps */
  f->ids = id + 1;
  if (f->drop_every && (id + 1) % f->drop_every == 0) {
    b2s_wire_msg d;
    b2s_wire_init(&d, B2S_WIRE_DROPPED);
    d.dropped.buffer_id = id;
    d.dropped.handle = f->handle;
    d.dropped.reason = f->policy;
    fsend(f, &d, NULL, 0);
    f->dropped++;
  }
  send_ack(f, B2S_WIRE_LEVEL_RECEIVED, f->withhold ? 0 : 1);
  send_ack(f, f->ack_level, 0);
}

static void on_shm_submit(fake *f, rec *r) {
  const void *data;
  uint64_t bid;
  int rc = b2s_shm_take_submitted(f->seg, r->m.shm_submit.slot,
                                  r->m.shm_submit.length, &data, &bid);
  assert_int_equal(rc, 0);
  assert_int_equal(bid, r->m.shm_submit.buffer_id);
  r->payload_len = r->m.shm_submit.length;
  memcpy(r->payload, data, r->payload_len < REC_PAYLOAD ? r->payload_len
                                                        : REC_PAYLOAD);
  assert_int_equal(b2s_shm_release(f->seg, r->m.shm_submit.slot), 0);
  on_data(f, r);
}

static void on_follow(fake *f, const rec *r) {
  const b2s_wire_msg *m = &r->m;
  if (!is_stream(m->follow.target)) {
    send_error(f, m->tag, m->type, 0, 0, B2S_E_NOSTREAM, 0, "no stream");
    return;
  }
  uint64_t start = (m->flags & B2S_WIRE_FOLLOW_FROM_END) ? f->committed
                                                         : m->follow.start;
  if (start > f->committed) {
    send_error(f, m->tag, m->type, 0, start, B2S_E_NCHUNK, 0, "beyond");
    return;
  }
  b2s_wire_msg o;
  b2s_wire_init(&o, B2S_WIRE_FOLLOWING);
  o.tag = m->tag;
  o.following.start = start;
  o.following.committed = f->committed;
  o.following.follow_id = f->follow_id = ++f->next_follow;
  f->follow_flags = m->flags;
  f->follow_next = start;
  fsend(f, &o, NULL, 0);
  deliver(f);
}

static void on_read(fake *f, const rec *r) {
  const b2s_wire_msg *m = &r->m;
  if (m->read.chunk >= f->committed) {
    send_error(f, m->tag, m->type, m->read.follow_id, m->read.chunk,
               B2S_E_NCHUNK, 0, "not committed");
    return;
  }
  uint8_t raw[CHUNK_NBYTES], comp[CHUNK_NBYTES + B2S_MAX_OVERHEAD];
  chunk_pattern(m->read.chunk, raw);
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  int cb = b2s_compress(f->ctx, &cp, raw, CHUNK_NBYTES, comp, sizeof comp);
  bool dec = m->flags & B2S_WIRE_READ_DECOMPRESS;
  b2s_wire_msg c;
  b2s_wire_init(&c, B2S_WIRE_CHUNK);
  c.tag = m->tag;
  c.flags = dec ? B2S_WIRE_CHUNK_DECOMPRESSED : 0;
  c.chunk.index = m->read.chunk;
  c.chunk.follow_id = m->read.follow_id;
  c.chunk.nbytes = CHUNK_NBYTES;
  c.chunk.cbytes = (uint32_t)cb;
  uint8_t rb[B2S_WIRE_REC_MAX];
  size_t rlen = (m->flags & B2S_WIRE_READ_RECORD) ? rec_of(m->read.chunk, rb)
                                                  : 0;
  if (rlen)
    c.flags |= B2S_WIRE_CHUNK_RECORD;
  fsend_rec(f, &c, dec ? (void *)raw : (void *)comp,
            dec ? CHUNK_NBYTES : (size_t)cb, rlen ? rb : NULL, rlen);
}

static void on_shm_attach(fake *f, const rec *r) {
  const b2s_wire_msg *m = &r->m;
  snprintf(f->seg_name, sizeof f->seg_name, "/b2sc-ut%d-%u", (int)getpid(),
           fake_seq);
  assert_int_equal(b2s_shm_create(f->seg_name, m->shm_attach.slot_count,
                                  m->shm_attach.slot_size, (size_t)1 << 26,
                                  &f->seg), 0);
  b2s_wire_msg a;
  b2s_wire_init(&a, B2S_WIRE_SHM_ATTACHED);
  a.tag = m->tag;
  a.shm_attached.handle = m->shm_attach.handle;
  a.shm_attached.segment = 9;
  a.shm_attached.slot_count = m->shm_attach.slot_count;
  a.shm_attached.slot_size = m->shm_attach.slot_size;
  a.shm_attached.shm_name = b2s_wire_cstr(f->seg_name);
  fsend(f, &a, NULL, 0);
}

static void on_open(fake *f, const rec *r) {
  const b2s_wire_msg *m = &r->m;
  if (!is_stream(m->open.stream) && m->open.tmpl.len == 0) {
    send_error(f, m->tag, m->type, 0, 0, B2S_E_NOSTREAM, 0,
               "no stream 'nope'");
    return;
  }
  b2s_wire_msg o;
  b2s_wire_init(&o, B2S_WIRE_OPENED);
  o.tag = m->tag;
  o.opened.handle = f->handle = ++f->next_handle;
  o.opened.credits = f->credits;
  o.opened.max_buffer = f->max_buffer;
  o.opened.ack_level = f->ack_level;
  o.opened.policy = f->policy;
  f->ids = f->dropped = 0;
  fsend(f, &o, NULL, 0);
}

static void on_simple(fake *f, const rec *r) {
  const b2s_wire_msg *m = &r->m;
  b2s_wire_msg o;
  switch (m->type) {
  case B2S_WIRE_HELLO:
    b2s_wire_init(&o, B2S_WIRE_WELCOME);
    o.flags = f->shm ? B2S_WIRE_WELCOME_SHM : 0;
    o.welcome.max_buffer = f->max_buffer;
    o.welcome.timeout_ms = f->timeout_ms;
    o.welcome.session_id = 77;
    o.welcome.version_min = 1;
    o.welcome.version_max = f->v2 ? 2 : 1;
    o.welcome.server = b2s_wire_cstr("fake-b2streamd 0.1.0");
    break;
  case B2S_WIRE_FLUSH:
    b2s_wire_init(&o, B2S_WIRE_FLUSHED);
    o.flushed.upto = f->ids;
    o.flushed.handle = m->flush.handle;
    break;
  case B2S_WIRE_CLOSE:
    b2s_wire_init(&o, B2S_WIRE_CLOSED);
    o.closed.upto = f->ids;
    o.closed.dropped = f->dropped;
    o.closed.handle = m->close.handle;
    break;
  case B2S_WIRE_UNFOLLOW:
    b2s_wire_init(&o, B2S_WIRE_UNFOLLOWED);
    o.unfollowed.next = f->follow_next;
    o.unfollowed.follow_id = m->unfollow.follow_id;
    f->follow_id = 0;
    break;
  case B2S_WIRE_PING:
    b2s_wire_init(&o, B2S_WIRE_PONG);
    o.pong.nonce = m->ping.nonce;
    o.pong.time_ns = 1;
    break;
  case B2S_WIRE_META:
    b2s_wire_init(&o, B2S_WIRE_META_OK);
    o.meta_ok.upto = f->ids;
    o.meta_ok.handle = m->meta.handle;
    break;
  default:
    return;
  }
  o.tag = m->tag;
  fsend(f, &o, NULL, 0);
}

static void on_stats(fake *f, const rec *r) {
  const b2s_wire_msg *m = &r->m;
  if (m->stats.stream.len && !is_stream(m->stats.stream)) {
    send_error(f, m->tag, m->type, 0, 0, B2S_E_NOSTREAM, 0, "no stream");
    return;
  }
  const char *json = m->stats.stream.len ? "{\"det1\":{\"buffers\":3}}"
                                         : "{\"streams\":{}}";
  b2s_wire_msg o;
  b2s_wire_init(&o, B2S_WIRE_STATS_REPLY);
  o.tag = m->tag;
  fsend(f, &o, json, strlen(json));
}

/* The ref_id an injected ERROR names. */
static uint32_t ref_of(const b2s_wire_msg *m) {
  switch (m->type) {
  case B2S_WIRE_DATA: return m->data.handle;
  case B2S_WIRE_FLUSH: return m->flush.handle;
  case B2S_WIRE_CLOSE: return m->close.handle;
  case B2S_WIRE_SHM_SUBMIT: return m->shm_submit.handle;
  case B2S_WIRE_META: return m->meta.handle;
  case B2S_WIRE_UNFOLLOW: return m->unfollow.follow_id;
  case B2S_WIRE_READ: return m->read.follow_id;
  default: return 0;
  }
}

static void handle(fake *f, rec *r) {
  const b2s_wire_msg *m = &r->m;
  if (m->type == f->mute_type)
    return;
  if (m->type == f->err_type) {
    f->err_type = 0;
    uint64_t idx = m->type == B2S_WIRE_DATA ? m->data.buffer_id : 0;
    send_error(f, m->tag, m->type, ref_of(m), idx, f->err_code, f->err_flags,
               "injected failure");
    if (m->type == B2S_WIRE_DATA) {
      f->ids = m->data.buffer_id + 1;   /* settled; credit comes back */
      if (!(f->err_flags & B2S_WIRE_ERROR_CLOSED_REF))
        send_ack(f, B2S_WIRE_LEVEL_RECEIVED, 1);
    }
    return;
  }
  switch (m->type) {
  case B2S_WIRE_OPEN: on_open(f, r); break;
  case B2S_WIRE_DATA: on_data(f, r); break;
  case B2S_WIRE_SHM_ATTACH: on_shm_attach(f, r); break;
  case B2S_WIRE_SHM_SUBMIT: on_shm_submit(f, r); break;
  case B2S_WIRE_FOLLOW: on_follow(f, r); break;
  case B2S_WIRE_READ: on_read(f, r); break;
  case B2S_WIRE_STATS: on_stats(f, r); break;
  default: on_simple(f, r); break;
  }
}

/* A version-1 daemon's answer to a HELLO of version 2 (PROTOCOL.md 8). */
static void refuse_version(fake *f, const b2s_wire_msg *m) {
  int v = f->version;
  f->version = 1;
  send_error(f, m->tag, m->type, 0, 1 + 256, B2S_E_PROTO_VERSION,
             B2S_WIRE_ERROR_CLOSED_SESSION,
             "protocol version 2 not supported; this daemon speaks 1 to 1");
  f->version = v;
  f->refused++;
}

/* Record the payload and record frames of r (parts after the header). */
static void keep_frames(rec *r, zmq_msg_t *part, int n) {
  int k = 2;
  if (b2s_wire_msg_has_payload(&r->m) && k < n) {
    r->payload_len = zmq_msg_size(&part[k]);
    memcpy(r->payload, zmq_msg_data(&part[k]),
           r->payload_len < REC_PAYLOAD ? r->payload_len : REC_PAYLOAD);
    k++;
  }
  if (b2s_wire_msg_has_record(&r->m) && k < n) {
    r->record_len = zmq_msg_size(&part[k]);
    memcpy(r->record, zmq_msg_data(&part[k]),
           r->record_len < REC_RECORD ? r->record_len : REC_RECORD);
  }
}

static void receive(fake *f) {
  zmq_msg_t part[4];
  int n = 0, more = 1;
  while (more && n < 4) {
    zmq_msg_init(&part[n]);
    assert_true(zmq_msg_recv(&part[n], f->router, 0) >= 0);
    more = zmq_msg_more(&part[n]);
    n++;
  }
  assert_false(more);   /* the library never sends more than 3 frames */
  f->rid_len = zmq_msg_size(&part[0]);
  memcpy(f->rid, zmq_msg_data(&part[0]), f->rid_len);
  assert_true(f->nlog < LOG_MAX);
  rec *r = &f->log[f->nlog++];
  memset(r, 0, sizeof *r);
  r->hdr_len = zmq_msg_size(&part[1]);
  assert_true(r->hdr_len <= sizeof r->hdr);
  memcpy(r->hdr, zmq_msg_data(&part[1]), r->hdr_len);
  assert_int_equal(b2s_wire_decode_v(r->hdr, r->hdr_len, 2, &r->m), 0);
  bool refused = r->m.type == B2S_WIRE_HELLO && r->m.version == 2 && !f->v2;
  if (refused) {
    refuse_version(f, &r->m);
    f->nlog--;
  } else {
    if (r->m.type == B2S_WIRE_HELLO)
      f->version = r->m.version;
    /* every message in the session's version, with its frames */
    assert_int_equal(r->m.version, f->version);
    assert_int_equal(b2s_wire_msg_frames(&r->m) + 1, n);
    keep_frames(r, part, n);
  }
  for (int k = 0; k < n; k++)
    zmq_msg_close(&part[k]);
  if (!refused)
    handle(f, r);
}

static void run_later(fake *f) {
  int64_t now = ts_now_ms();
  for (int k = 0; k < f->nlater;) {
    later *l = &f->later[k];
    if (l->due > now) {
      k++;
      continue;
    }
    if (l->kind == L_RAW) {
      zmq_send(f->router, f->rid, f->rid_len, ZMQ_SNDMORE);
      zmq_send(f->router, l->hdr, l->hdr_len, 0);
    } else if (l->kind == L_GRANT) {
      send_ack(f, B2S_WIRE_LEVEL_RECEIVED, l->n);
    } else {
      f->committed += l->n;
      deliver(f);
    }
    f->later[k] = f->later[--f->nlater];
  }
}

static void *fake_main(void *arg) {
  fake *f = arg;
  for (;;) {
    zmq_pollitem_t it = {.socket = f->router, .events = ZMQ_POLLIN};
    zmq_poll(&it, 1, 5);
    pthread_mutex_lock(&f->mu);
    bool stop = f->stop;
    if (!stop && (it.revents & ZMQ_POLLIN))
      receive(f);
    if (!stop && f->rid_len)
      run_later(f);
    pthread_mutex_unlock(&f->mu);
    if (stop)
      return NULL;
  }
}

static fake *fake_start(void) {
  fake *f = calloc(1, sizeof *f);
  assert_non_null(f);
  pthread_mutex_init(&f->mu, NULL);
  f->credits = 8;
  f->max_buffer = 1 << 20;
  f->ack_level = B2S_WIRE_LEVEL_DURABLE;
  f->policy = B2S_WIRE_POLICY_BLOCK;
  f->committed = 3;
  f->ctx = b2s_ctx_new();
  snprintf(f->endpoint, sizeof f->endpoint, "ipc:///tmp/b2sc-ut-%d-%u.sock",
           (int)getpid(), ++fake_seq);
  f->zctx = zmq_ctx_new();
  f->router = zmq_socket(f->zctx, ZMQ_ROUTER);
  int zero = 0;
  zmq_setsockopt(f->router, ZMQ_LINGER, &zero, sizeof zero);
  assert_int_equal(zmq_bind(f->router, f->endpoint), 0);
  assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
  return f;
}

static void fake_stop(fake *f) {
  pthread_mutex_lock(&f->mu);
  f->stop = true;
  pthread_mutex_unlock(&f->mu);
  pthread_join(f->thread, NULL);
  zmq_close(f->router);
  zmq_ctx_term(f->zctx);
  unlink(f->endpoint + 6);
  b2s_shm_destroy(f->seg);
  b2s_ctx_free(f->ctx);
  pthread_mutex_destroy(&f->mu);
  free(f);
}

static void fake_later(fake *f, int delay_ms, int kind, uint32_t n,
                       const b2s_wire_msg *m) {
  pthread_mutex_lock(&f->mu);
  assert_true(f->nlater < LATER_MAX);
  later *l = &f->later[f->nlater++];
  l->due = ts_now_ms() + delay_ms;
  l->kind = kind;
  l->n = n;
  if (m != NULL) {
    int len = b2s_wire_encode(m, l->hdr, sizeof l->hdr);
    assert_true(len > 0);
    l->hdr_len = (size_t)len;
  }
  pthread_mutex_unlock(&f->mu);
}

/* Messages of type received so far (0: all). */
static int fake_count(fake *f, int type) {
  pthread_mutex_lock(&f->mu);
  int n = 0;
  for (int k = 0; k < f->nlog; k++)
    n += type == 0 || f->log[k].m.type == type;
  pthread_mutex_unlock(&f->mu);
  return n;
}

/* Wait until n messages of type arrived; returns how many did. */
static int fake_wait(fake *f, int type, int n) {
  int64_t end = ts_now_ms() + 3000;
  int got;
  while ((got = fake_count(f, type)) < n && ts_now_ms() < end)
    sleep_ms(2);
  return got;
}

/* A copy of the k-th received message of type (k from 0), strings
 * re-pointed into the copy. */
static rec fake_get(fake *f, int type, int k) {
  rec out;
  memset(&out, 0, sizeof out);
  pthread_mutex_lock(&f->mu);
  for (int i = 0; i < f->nlog; i++)
    if (f->log[i].m.type == type && k-- == 0) {
      out = f->log[i];
      break;
    }
  pthread_mutex_unlock(&f->mu);
  assert_int_not_equal(out.hdr_len, 0);
  assert_int_equal(b2s_wire_decode_v(out.hdr, out.hdr_len, 2, &out.m), 0);
  return out;
}

static void fake_set_error(fake *f, int type, int32_t code, uint16_t flags) {
  pthread_mutex_lock(&f->mu);
  f->err_type = (uint8_t)type;
  f->err_code = code;
  f->err_flags = flags;
  pthread_mutex_unlock(&f->mu);
}

/* Change the fake's behaviour while its thread runs. */
#define FSET(f, field, value)                                                  \
  do {                                                                         \
    pthread_mutex_lock(&(f)->mu);                                              \
    (f)->field = (value);                                                      \
    pthread_mutex_unlock(&(f)->mu);                                            \
  } while (0)

static bool wstr_is(b2s_wire_str w, const char *s) {
  return w.len == strlen(s) && memcmp(w.ptr, s, w.len) == 0;
}

static b2sc_session *connect_fake(fake *f) {
  b2sc_session *s = NULL;
  assert_int_equal(b2sc_connect(f->endpoint, "t", &s), 0);
  assert_non_null(s);
  return s;
}

static b2sc_producer *open_det1(b2sc_session *s) {
  b2sc_producer *p = NULL;
  assert_int_equal(b2sc_producer_open(s, "det1", NULL, &p), 0);
  assert_non_null(p);
  return p;
}

/* ---- session ------------------------------------------------------------------ */

static void test_connect_hello_bye(void **state) {
  (void)state;
  fake *f = fake_start();
  FSET(f, shm, true);
  b2sc_session *s = connect_fake(f);
  rec h = fake_get(f, B2S_WIRE_HELLO, 0);
  assert_int_equal(h.m.flags, B2S_WIRE_HELLO_PRODUCER | B2S_WIRE_HELLO_CONSUMER);
  assert_int_equal(h.m.hello.pid, (uint32_t)getpid());
  assert_int_equal(h.m.hello.ping_ms, 0);
  assert_true(wstr_is(h.m.hello.name, "t"));
  assert_int_not_equal(h.m.tag, 0);
  b2sc_session_info info;
  assert_int_equal(b2sc_session_info_get(s, &info), 0);
  assert_string_equal(info.server, "fake-b2streamd 0.1.0");
  assert_int_equal(info.session_id, 77);
  assert_int_equal(info.max_buffer, 1 << 20);
  assert_int_equal(info.timeout_ms, 0);
  assert_true(info.shm);
  assert_string_equal(b2sc_last_error(s), "");
  b2sc_close(s);
  assert_int_equal(fake_wait(f, B2S_WIRE_BYE, 1), 1);
  assert_int_equal(fake_get(f, B2S_WIRE_BYE, 0).hdr_len, 16);
  fake_stop(f);
}

static void test_connect_roles_and_name(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_options o = {.client_name = "stats-only", .roles = 0, .timeout_ms = 500};
  b2sc_session *s;
  assert_int_equal(b2sc_connect_opts(f->endpoint, &o, &s), 0);
  rec h = fake_get(f, B2S_WIRE_HELLO, 0);
  assert_int_equal(h.m.flags, 0);
  assert_true(wstr_is(h.m.hello.name, "stats-only"));
  b2sc_close(s);
  char longname[300];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  o.client_name = longname;
  assert_int_equal(b2sc_connect_opts(f->endpoint, &o, &s), B2S_E_ARG);
  assert_null(s);
  o.client_name = NULL;
  o.timeout_ms = -1;
  assert_int_equal(b2sc_connect_opts(f->endpoint, &o, &s), B2S_E_ARG);
  assert_int_equal(b2sc_connect_opts(f->endpoint, NULL, NULL), B2S_E_ARG);
  fake_stop(f);
}

static void test_connect_failures(void **state) {
  (void)state;
  b2sc_session *s = (b2sc_session *)1;
  assert_int_equal(b2sc_connect("ipc:///nonexistent/b2sc.sock", "t", &s),
                   -ENOENT);
  assert_null(s);
  assert_int_equal(b2sc_connect("udp://x", "t", &s), B2S_E_ARG);
  assert_int_equal(b2sc_connect("tcp://", "t", &s), B2S_E_ARG);

  fake *f = fake_start();
  FSET(f, mute_type, B2S_WIRE_HELLO);   /* a daemon that never answers */
  b2sc_options o = {.timeout_ms = 150};
  int64_t t0 = ts_now_ms();
  assert_int_equal(b2sc_connect_opts(f->endpoint, &o, &s), B2S_E_TIMEOUT);
  assert_true(ts_now_ms() - t0 >= 140);
  FSET(f, mute_type, 0);
  fake_set_error(f, B2S_WIRE_HELLO, B2S_E_PROTO_VERSION,
                 B2S_WIRE_ERROR_CLOSED_SESSION);
  assert_int_equal(b2sc_connect(f->endpoint, "t", &s), B2S_E_PROTO_VERSION);
  fake_set_error(f, B2S_WIRE_HELLO, B2S_E_AUTH, B2S_WIRE_ERROR_CLOSED_SESSION);
  assert_int_equal(b2sc_connect(f->endpoint, "t", &s), B2S_E_AUTH);
  assert_null(s);
  fake_stop(f);
}

static void test_default_endpoint(void **state) {
  (void)state;
  char buf[256];
  setenv(B2SC_ENDPOINT_ENV, "tcp://10.0.0.1:5555", 1);
  setenv("RUNTIME_DIRECTORY", "/run/b2stream", 1);
  assert_int_equal(b2sc_default_endpoint(buf, sizeof buf), 19);
  assert_string_equal(buf, "tcp://10.0.0.1:5555");
  unsetenv(B2SC_ENDPOINT_ENV);
  assert_true(b2sc_default_endpoint(buf, sizeof buf) > 0);
  assert_string_equal(buf, "ipc:///run/b2stream/b2streamd.sock");
  unsetenv("RUNTIME_DIRECTORY");
  assert_true(b2sc_default_endpoint(buf, sizeof buf) > 0);
  assert_string_equal(buf, "ipc://run/b2streamd.sock");
  assert_int_equal(b2sc_default_endpoint(buf, 8), B2S_E_DEST_SMALL);

  /* b2sc_connect(NULL, ...) goes to the default endpoint */
  fake *f = fake_start();
  setenv(B2SC_ENDPOINT_ENV, f->endpoint, 1);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(NULL, "t", &s), 0);
  assert_int_equal(fake_count(f, B2S_WIRE_HELLO), 1);
  b2sc_close(s);
  unsetenv(B2SC_ENDPOINT_ENV);
  fake_stop(f);
}

static void test_strerror_and_args(void **state) {
  (void)state;
  assert_string_equal(b2sc_strerror(B2S_E_TIMEOUT), "timed out");
  assert_string_equal(b2sc_strerror(B2S_E_NOSTREAM), "no such stream");
  assert_string_equal(b2sc_strerror(-ENOENT), strerror(ENOENT));
  assert_string_equal(b2sc_strerror(0), "success");
  assert_string_equal(b2sc_last_error(NULL), "");
  assert_int_equal(b2sc_last_error_code(NULL), 0);
  assert_int_equal(b2sc_set_timeout(NULL, 5), B2S_E_ARG);
  assert_int_equal(b2sc_session_info_get(NULL, NULL), B2S_E_ARG);
  assert_int_equal(b2sc_ping(NULL, 10), B2S_E_ARG);
  char *json;
  assert_int_equal(b2sc_stats(NULL, NULL, &json, NULL), B2S_E_ARG);
  assert_int_equal(b2sc_send(NULL, "x", 1, 0), B2S_E_ARG);
  assert_int_equal(b2sc_flush(NULL, 0), B2S_E_ARG);
  assert_int_equal(b2sc_producer_close(NULL), 0);
  assert_int_equal(b2sc_unfollow(NULL), 0);
  assert_int_equal(b2sc_next(NULL, 0, NULL), B2S_E_ARG);
  assert_int_equal(b2sc_position(NULL), 0);
  assert_int_equal(b2sc_shm_attach(NULL, 1, 1), B2S_E_ARG);
  b2sc_close(NULL);
}

static void test_ping_and_stats(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  int rtt = b2sc_ping(s, 1000);
  assert_true(rtt >= 0);
  rec p = fake_get(f, B2S_WIRE_PING, 0);
  assert_int_not_equal(p.m.tag, 0);
  char *json = NULL;
  size_t len = 0;
  assert_int_equal(b2sc_stats(s, NULL, &json, &len), 0);
  assert_string_equal(json, "{\"streams\":{}}");
  assert_int_equal(len, strlen(json));
  free(json);
  assert_int_equal(fake_get(f, B2S_WIRE_STATS, 0).m.stats.stream.len, 0);
  assert_int_equal(b2sc_stats(s, "det1", &json, NULL), 0);
  assert_string_equal(json, "{\"det1\":{\"buffers\":3}}");
  free(json);
  assert_true(wstr_is(fake_get(f, B2S_WIRE_STATS, 1).m.stats.stream, "det1"));
  assert_int_equal(b2sc_stats(s, "nope", &json, NULL), B2S_E_NOSTREAM);
  assert_null(json);
  assert_int_equal(b2sc_last_error_code(s), B2S_E_NOSTREAM);
  assert_string_equal(b2sc_last_error(s), "no stream");
  /* a daemon that stops answering */
  FSET(f, mute_type, B2S_WIRE_PING);
  assert_int_equal(b2sc_ping(s, 50), B2S_E_TIMEOUT);
  assert_int_equal(b2sc_set_timeout(s, 60), 0);
  FSET(f, mute_type, B2S_WIRE_STATS);
  assert_int_equal(b2sc_stats(s, NULL, &json, NULL), B2S_E_TIMEOUT);
  b2sc_close(s);
  fake_stop(f);
}

static void test_session_ended_by_daemon(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p = open_det1(s);
  b2s_wire_msg e;
  b2s_wire_init(&e, B2S_WIRE_ERROR);
  e.flags = B2S_WIRE_ERROR_CLOSED_SESSION;
  e.error.code = B2S_E_CLOSED;
  e.error.message = b2s_wire_cstr("daemon stopping");
  fake_later(f, 0, L_RAW, 0, &e);
  sleep_ms(30);   /* sent before the PING below is answered */
  /* the ERROR arrives while waiting: the session is over */
  assert_int_equal(b2sc_ping(s, 2000), B2S_E_CLOSED);
  assert_string_equal(b2sc_last_error(s), "daemon stopping");
  assert_int_equal(b2sc_send(p, "abc", 3, 0), B2S_E_CLOSED);
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(s, "det1", 0, 0, &c), B2S_E_CLOSED);
  assert_int_equal(fake_wait(f, B2S_WIRE_PING, 1), 1);
  int before = fake_count(f, 0);
  b2sc_close(s);   /* frees p; no BYE on a dead session */
  sleep_ms(50);
  assert_int_equal(fake_count(f, 0), before);
  fake_stop(f);
}

static void test_malformed_from_daemon(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  /* a CLOSED with handle 0 does not decode (ids are nonzero) */
  pthread_mutex_lock(&f->mu);
  uint8_t bad[36] = {'B', '2', 'S', 'W', 1, B2S_WIRE_CLOSED};
  assert_true(f->nlater < LATER_MAX);
  later *l = &f->later[f->nlater++];
  l->due = 0;
  l->kind = L_RAW;
  memcpy(l->hdr, bad, sizeof bad);
  l->hdr_len = sizeof bad;
  pthread_mutex_unlock(&f->mu);
  sleep_ms(30);
  assert_true(b2sc_ping(s, 1000) >= 0);   /* ignored, session goes on */
  assert_int_equal(b2sc_last_error_code(s), B2S_E_PROTO);
  b2sc_close(s);
  fake_stop(f);
}

static void test_ping_while_waiting(void **state) {
  (void)state;
  fake *f = fake_start();
  FSET(f, timeout_ms, 90);   /* PING every 30 ms while the library waits */
  b2sc_session *s = connect_fake(f);
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(s, "det1", 3, 0, &c), 0);
  b2sc_chunk_info ci;
  assert_int_equal(b2sc_next(c, 250, &ci), B2S_E_TIMEOUT);
  int pings = fake_count(f, B2S_WIRE_PING);
  assert_true(pings >= 4 && pings <= 12);
  assert_int_equal(fake_get(f, B2S_WIRE_PING, 0).m.tag, 0);
  b2sc_unfollow(c);
  b2sc_close(s);
  fake_stop(f);
}

/* ---- producer ----------------------------------------------------------------- */

static void test_open(void **state) {
  (void)state;
  fake *f = fake_start();
  FSET(f, credits, 5);
  FSET(f, ack_level, B2S_WIRE_LEVEL_WRITTEN);
  FSET(f, policy, B2S_WIRE_POLICY_DROP_OLDEST);
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "new", "tmpl", &p), 0);
  rec o = fake_get(f, B2S_WIRE_OPEN, 0);
  assert_true(wstr_is(o.m.open.stream, "new"));
  assert_true(wstr_is(o.m.open.tmpl, "tmpl"));
  b2sc_producer_stats st;
  assert_int_equal(b2sc_producer_stats_get(p, &st), 0);
  assert_int_equal(st.credits, 5);
  assert_int_equal(st.max_buffer, 1 << 20);
  assert_int_equal(st.ack_level, B2S_WIRE_LEVEL_WRITTEN);
  assert_int_equal(st.policy, B2S_WIRE_POLICY_DROP_OLDEST);
  assert_int_equal(st.sent, 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  assert_int_equal(fake_get(f, B2S_WIRE_CLOSE, 0).m.close.handle, 1);

  assert_int_equal(b2sc_producer_open(s, "nope", NULL, &p), B2S_E_NOSTREAM);
  assert_null(p);
  assert_int_equal(fake_get(f, B2S_WIRE_OPEN, 1).m.open.tmpl.len, 0);
  assert_string_equal(b2sc_last_error(s), "no stream 'nope'");
  assert_int_equal(b2sc_producer_open(s, "", NULL, &p), B2S_E_ARG);
  assert_int_equal(b2sc_producer_open(s, NULL, NULL, &p), B2S_E_ARG);
  assert_int_equal(fake_count(f, B2S_WIRE_OPEN), 2);   /* nothing sent */
  b2sc_close(s);
  fake_stop(f);
}

static void test_send_flush_bytes(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p = open_det1(s);
  uint8_t buf[300];
  for (int b = 0; b < 3; b++) {
    memset(buf, 'a' + b, sizeof buf);
    assert_int_equal(b2sc_send(p, buf, 100 + (size_t)b, 1000), 0);
  }
  assert_int_equal(b2sc_flush(p, 2000), 0);
  for (int b = 0; b < 3; b++) {
    rec d = fake_get(f, B2S_WIRE_DATA, b);
    assert_int_equal(d.m.data.buffer_id, (uint64_t)b);
    assert_int_equal(d.m.data.handle, 1);
    assert_int_equal(d.m.tag, 0);
    assert_int_equal(d.hdr_len, 28);
    assert_int_equal(d.payload_len, 100 + (size_t)b);
    memset(buf, 'a' + b, REC_PAYLOAD);
    assert_memory_equal(d.payload, buf, REC_PAYLOAD);
  }
  rec fl = fake_get(f, B2S_WIRE_FLUSH, 0);
  assert_int_equal(fl.m.flush.handle, 1);
  assert_int_not_equal(fl.m.tag, 0);
  b2sc_producer_stats st;
  b2sc_producer_stats_get(p, &st);
  assert_int_equal(st.sent, 3);
  assert_int_equal(st.bytes, 100 + 101 + 102);
  assert_int_equal(st.received, 3);
  assert_int_equal(st.written, 3);
  assert_int_equal(st.durable, 3);
  assert_int_equal(st.acked, 3);
  assert_int_equal(st.dropped, 0);
  assert_int_equal(st.credits, 8);   /* every credit came back */
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  fake_stop(f);
}

/* b2sc_send copies into message buffers the producer reuses once ZeroMQ
 * let them go: more sends than it keeps, sizes that shrink and grow, the
 * caller's buffer scribbled on right after each send; every payload must
 * still be the bytes of its own send. */
static void test_send_reuses_buffers(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p = open_det1(s);
  static const size_t sizes[] = {64, 48, 200};
  uint8_t buf[200], want[REC_PAYLOAD];
  for (int b = 0; b < 48; b++) {
    memset(buf, 'A' + b, sizeof buf);
    assert_int_equal(b2sc_send(p, buf, sizes[b % 3], 1000), 0);
    memset(buf, 0xee, sizeof buf);   /* the caller's again at once */
  }
  assert_int_equal(b2sc_flush(p, 2000), 0);
  for (int b = 0; b < 48; b++) {
    rec d = fake_get(f, B2S_WIRE_DATA, b);
    size_t n = sizes[b % 3] < REC_PAYLOAD ? sizes[b % 3] : REC_PAYLOAD;
    assert_int_equal(d.payload_len, sizes[b % 3]);
    memset(want, 'A' + b, n);
    assert_memory_equal(d.payload, want, n);
  }
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  fake_stop(f);
}

static void test_send_limits(void **state) {
  (void)state;
  fake *f = fake_start();
  FSET(f, max_buffer, 1000);
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p = open_det1(s);
  static uint8_t big[1001];
  assert_int_equal(b2sc_send(p, big, 1001, 0), B2S_E_OVERSIZE);
  assert_int_equal(b2sc_send(p, big, 0, 0), B2S_E_ARG);
  assert_int_equal(b2sc_send(p, NULL, 10, 0), B2S_E_ARG);
  assert_int_equal(b2sc_send(p, big, 1000, 0), 0);
  assert_int_equal(fake_wait(f, B2S_WIRE_DATA, 1), 1);
  assert_int_equal(fake_get(f, B2S_WIRE_DATA, 0).payload_len, 1000);
  assert_int_equal(b2sc_flush(p, 1000), 0);
  assert_int_equal(fake_count(f, B2S_WIRE_DATA), 1);
  b2sc_producer_close(p);
  b2sc_close(s);
  fake_stop(f);
}

static void test_credits_respected(void **state) {
  (void)state;
  fake *f = fake_start();
  FSET(f, credits, 2);
  FSET(f, withhold, true);   /* policy block with a full queue */
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p = open_det1(s);
  assert_int_equal(b2sc_send(p, "a", 1, 0), 0);
  assert_int_equal(b2sc_send(p, "b", 1, 0), 0);
  int64_t t0 = ts_now_ms();
  assert_int_equal(b2sc_send(p, "c", 1, 100), B2S_E_TIMEOUT);
  assert_true(ts_now_ms() - t0 >= 95);
  assert_int_equal(b2sc_send(p, "c", 1, 0), B2S_E_TIMEOUT);
  assert_int_equal(b2sc_wait_credit(p, 0), B2S_E_TIMEOUT);
  assert_int_equal(fake_count(f, B2S_WIRE_DATA), 2);   /* never without credit */
  b2sc_producer_stats st;
  b2sc_producer_stats_get(p, &st);
  assert_int_equal(st.credits, 0);
  assert_int_equal(st.sent, 2);
  assert_int_equal(st.received, 2);
  /* a pure credit grant later lets the blocked send through */
  fake_later(f, 120, L_GRANT, 1, NULL);
  t0 = ts_now_ms();
  assert_int_equal(b2sc_send(p, "c", 1, 3000), 0);
  int64_t waited = ts_now_ms() - t0;
  assert_true(waited >= 100 && waited < 2000);
  assert_int_equal(fake_wait(f, B2S_WIRE_DATA, 3), 3);
  assert_int_equal(fake_get(f, B2S_WIRE_DATA, 2).m.data.buffer_id, 2);
  fake_later(f, 20, L_GRANT, 2, NULL);
  assert_int_equal(b2sc_wait_credit(p, 2000), 2);
  b2sc_producer_close(p);
  b2sc_close(s);
  fake_stop(f);
}

static void test_drops_reported(void **state) {
  (void)state;
  fake *f = fake_start();
  FSET(f, policy, B2S_WIRE_POLICY_DROP_NEWEST);
  FSET(f, drop_every, 2);
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p = open_det1(s);
  for (int b = 0; b < 4; b++)
    assert_int_equal(b2sc_send(p, "xyz", 3, 1000), 0);
  assert_int_equal(b2sc_flush(p, 2000), B2S_E_DROPPED);
  b2sc_producer_stats st;
  b2sc_producer_stats_get(p, &st);
  assert_int_equal(st.dropped, 2);
  assert_int_equal(st.sent, 4);
  assert_int_equal(st.acked, 4);
  /* reported once: the next flush covers only the new buffers */
  FSET(f, drop_every, 0);
  assert_int_equal(b2sc_send(p, "xyz", 3, 1000), 0);
  assert_int_equal(b2sc_flush(p, 2000), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  fake_stop(f);
}

static void test_rejected_buffer(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p = open_det1(s);
  fake_set_error(f, B2S_WIRE_DATA, B2S_E_OVERSIZE, 0);
  assert_int_equal(b2sc_send(p, "a", 1, 1000), 0);
  assert_int_equal(b2sc_send(p, "b", 1, 1000), 0);
  assert_int_equal(b2sc_flush(p, 2000), B2S_E_OVERSIZE);
  assert_int_equal(b2sc_last_error_code(s), B2S_E_OVERSIZE);
  assert_string_equal(b2sc_last_error(s), "injected failure");
  b2sc_producer_stats st;
  b2sc_producer_stats_get(p, &st);
  assert_int_equal(st.rejected, 1);
  assert_int_equal(st.credits, 8);
  assert_int_equal(b2sc_send(p, "c", 1, 1000), 0);   /* the handle goes on */
  assert_int_equal(b2sc_flush(p, 2000), 0);
  b2sc_producer_close(p);
  b2sc_close(s);
  fake_stop(f);
}

static void test_handle_closed_by_daemon(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p = open_det1(s);
  fake_set_error(f, B2S_WIRE_DATA, B2S_E_BUSY, B2S_WIRE_ERROR_CLOSED_REF);
  assert_int_equal(b2sc_send(p, "a", 1, 1000), 0);
  assert_int_equal(fake_wait(f, B2S_WIRE_DATA, 1), 1);
  int64_t end = ts_now_ms() + 2000;
  int rc;
  while ((rc = b2sc_send(p, "b", 1, 0)) == 0 && ts_now_ms() < end)
    sleep_ms(5);
  assert_int_equal(rc, B2S_E_BUSY);   /* the reason, not a bare "closed" */
  assert_int_equal(b2sc_flush(p, 100), B2S_E_BUSY);
  assert_int_equal(b2sc_last_error_code(s), B2S_E_BUSY);
  int closes = fake_count(f, B2S_WIRE_CLOSE);
  assert_int_equal(b2sc_producer_close(p), B2S_E_BUSY);
  assert_int_equal(fake_count(f, B2S_WIRE_CLOSE), closes);   /* no CLOSE */
  /* other handles of the session are unaffected */
  p = open_det1(s);
  assert_int_equal(b2sc_send(p, "c", 1, 1000), 0);
  assert_int_equal(b2sc_flush(p, 1000), 0);
  b2sc_producer_close(p);
  b2sc_close(s);
  fake_stop(f);
}

static void test_flush_close_errors(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p = open_det1(s);
  FSET(f, mute_type, B2S_WIRE_FLUSH);
  assert_int_equal(b2sc_flush(p, 80), B2S_E_TIMEOUT);
  FSET(f, mute_type, 0);
  fake_set_error(f, B2S_WIRE_FLUSH, -EIO, B2S_WIRE_ERROR_CLOSED_REF);
  assert_int_equal(b2sc_flush(p, 1000), -EIO);
  assert_int_equal(b2sc_send(p, "a", 1, 0), -EIO);
  assert_int_equal(b2sc_producer_close(p), -EIO);
  p = open_det1(s);
  assert_int_equal(b2sc_set_timeout(s, 80), 0);
  FSET(f, mute_type, B2S_WIRE_CLOSE);
  assert_int_equal(b2sc_producer_close(p), B2S_E_TIMEOUT);   /* still freed */
  b2sc_close(s);
  fake_stop(f);
}

static atomic_int zc_freed;

static void zc_free(void *buf, void *hint) {
  assert_ptr_equal(hint, (void *)0x5a);
  free(buf);
  /* pairs with the atomic_load in test_send_zero_copy */
  atomic_fetch_add(&zc_freed, 1);
}

static void test_send_zero_copy(void **state) {
  (void)state;
  fake *f = fake_start();
  FSET(f, credits, 1);
  FSET(f, withhold, true);
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p = open_det1(s);
  atomic_store(&zc_freed, 0);   /* pairs with the fetch_add in zc_free */
  char *a = malloc(40);
  memset(a, 'Z', 40);
  assert_int_equal(b2sc_send_zc(p, a, 40, zc_free, (void *)0x5a), 0);
  assert_int_equal(fake_wait(f, B2S_WIRE_DATA, 1), 1);
  rec d = fake_get(f, B2S_WIRE_DATA, 0);
  assert_int_equal(d.payload_len, 40);
  assert_int_equal(d.payload[39], 'Z');
  int64_t end = ts_now_ms() + 2000;
  /* pairs with the fetch_add in zc_free */
  while (atomic_load(&zc_freed) == 0 && ts_now_ms() < end)
    sleep_ms(2);
  assert_int_equal(atomic_load(&zc_freed), 1);
  /* no credit: refused at once, the buffer stays ours */
  char *b = malloc(40);
  assert_int_equal(b2sc_send_zc(p, b, 40, zc_free, (void *)0x5a), B2S_E_BUSY);
  assert_int_equal(b2sc_send_zc(p, b, 0, zc_free, (void *)0x5a), B2S_E_ARG);
  static char keep[8] = "static";
  fake_later(f, 0, L_GRANT, 1, NULL);
  assert_int_equal(b2sc_wait_credit(p, 2000), 1);
  assert_int_equal(b2sc_send_zc(p, keep, 6, NULL, NULL), 0);   /* no free fn */
  assert_int_equal(fake_wait(f, B2S_WIRE_DATA, 2), 2);
  assert_memory_equal(fake_get(f, B2S_WIRE_DATA, 1).payload, "static", 6);
  free(b);
  /* pairs with the fetch_add in zc_free */
  assert_int_equal(atomic_load(&zc_freed), 1);
  b2sc_producer_close(p);
  b2sc_close(s);
  fake_stop(f);
}

static void test_shm_producer(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p = open_det1(s);
  assert_int_equal(b2sc_shm_attach(p, 4, 4096), -EOPNOTSUPP);
  assert_int_equal(fake_count(f, B2S_WIRE_SHM_ATTACH), 0);
  uint32_t slot;
  assert_int_equal(b2sc_shm_acquire(p, 0, &slot, NULL, NULL), B2S_E_ARG);
  b2sc_producer_close(p);
  b2sc_close(s);

  FSET(f, shm, true);
  s = connect_fake(f);
  p = open_det1(s);
  assert_int_equal(b2sc_shm_attach(p, 0, 4096), B2S_E_ARG);
  assert_int_equal(b2sc_shm_attach(p, 4, 4096), 0);
  rec a = fake_get(f, B2S_WIRE_SHM_ATTACH, 0);
  assert_int_equal(a.m.shm_attach.handle, 2);
  assert_int_equal(a.m.shm_attach.slot_count, 4);
  assert_int_equal(a.m.shm_attach.slot_size, 4096);
  assert_int_equal(b2sc_shm_attach(p, 4, 4096), B2S_E_BUSY);

  void *ptr;
  size_t cap;
  assert_int_equal(b2sc_shm_acquire(p, 1000, &slot, &ptr, &cap), 0);
  assert_int_equal(cap, 4096);
  memcpy(ptr, "slot bytes", 10);
  assert_int_equal(b2sc_shm_submit(p, slot, 4097), B2S_E_OVERSIZE);
  assert_int_equal(b2sc_shm_submit(p, slot, 10), 0);
  assert_int_equal(b2sc_send(p, "sock", 4, 1000), 0);   /* ids shared */
  assert_int_equal(b2sc_flush(p, 2000), 0);
  rec sub = fake_get(f, B2S_WIRE_SHM_SUBMIT, 0);
  assert_int_equal(sub.m.shm_submit.buffer_id, 0);
  assert_int_equal(sub.m.shm_submit.handle, 2);
  assert_int_equal(sub.m.shm_submit.segment, 9);
  assert_int_equal(sub.m.shm_submit.slot, slot);
  assert_int_equal(sub.m.shm_submit.length, 10);
  assert_memory_equal(sub.payload, "slot bytes", 10);
  assert_int_equal(fake_get(f, B2S_WIRE_DATA, 0).m.data.buffer_id, 1);

  /* acquire reserves a credit; cancel gives it back */
  b2sc_producer_stats st;
  b2sc_producer_stats_get(p, &st);
  assert_int_equal(st.credits, 8);
  assert_int_equal(st.sent, 2);
  uint32_t held[4];
  for (int k = 0; k < 4; k++)
    assert_int_equal(b2sc_shm_acquire(p, 0, &held[k], NULL, NULL), 0);
  b2sc_producer_stats_get(p, &st);
  assert_int_equal(st.credits, 4);
  assert_int_equal(b2sc_shm_acquire(p, 30, &slot, NULL, NULL), B2S_E_TIMEOUT);
  b2sc_producer_stats_get(p, &st);
  assert_int_equal(st.credits, 4);   /* a failed acquire keeps no credit */
  for (int k = 0; k < 4; k++)
    assert_int_equal(b2sc_shm_cancel(p, held[k]), 0);
  assert_int_equal(b2sc_shm_cancel(p, held[0]), B2S_E_SHM_STATE);
  b2sc_producer_stats_get(p, &st);
  assert_int_equal(st.credits, 8);
  assert_int_equal(b2sc_shm_submit(p, held[0], 5), B2S_E_SHM_STATE);
  assert_int_equal(fake_count(f, B2S_WIRE_SHM_SUBMIT), 1);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  fake_stop(f);
}

/* ---- consumer ------------------------------------------------------------------ */

static void test_follow_notify(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(s, "det1", 1, B2SC_FOLLOW_NOTIFY, &c), 0);
  rec fo = fake_get(f, B2S_WIRE_FOLLOW, 0);
  assert_int_equal(fo.m.flags, 0);
  assert_int_equal(fo.m.follow.start, 1);
  assert_true(wstr_is(fo.m.follow.target, "det1"));
  assert_int_equal(b2sc_position(c), 1);
  b2sc_chunk_info ci;
  for (uint64_t i = 1; i < 3; i++) {
    assert_int_equal(b2sc_next(c, 1000, &ci), 0);
    assert_int_equal(ci.index, i);
    assert_int_equal(ci.committed, 3);
    assert_null(ci.data);
    assert_int_equal(ci.nbytes, 0);
  }
  assert_int_equal(b2sc_next(c, 0, &ci), B2S_E_TIMEOUT);
  int64_t t0 = ts_now_ms();
  assert_int_equal(b2sc_next(c, 60, &ci), B2S_E_TIMEOUT);
  assert_true(ts_now_ms() - t0 >= 55);
  /* blocks until the commit, then each new chunk once */
  fake_later(f, 100, L_COMMIT, 2, NULL);
  t0 = ts_now_ms();
  assert_int_equal(b2sc_next(c, 3000, &ci), 0);
  assert_true(ts_now_ms() - t0 >= 90);
  assert_int_equal(ci.index, 3);
  assert_int_equal(ci.committed, 5);
  assert_int_equal(b2sc_next(c, 1000, &ci), 0);
  assert_int_equal(ci.index, 4);
  assert_int_equal(b2sc_next(c, 30, &ci), B2S_E_TIMEOUT);
  assert_int_equal(b2sc_position(c), 5);
  assert_int_equal(b2sc_unfollow(c), 0);
  assert_int_equal(fake_get(f, B2S_WIRE_UNFOLLOW, 0).m.unfollow.follow_id, 1);
  b2sc_close(s);
  fake_stop(f);
}

static void test_follow_push(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_consumer *c;
  uint8_t want[CHUNK_NBYTES], got[CHUNK_NBYTES];
  assert_int_equal(b2sc_follow(s, "det1", 0, B2SC_FOLLOW_PUSH_DECOMPRESSED, &c), 0);
  assert_int_equal(fake_get(f, B2S_WIRE_FOLLOW, 0).m.flags,
                   B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED);
  b2sc_chunk_info ci;
  for (uint64_t i = 0; i < 3; i++) {
    assert_int_equal(b2sc_next(c, 1000, &ci), 0);
    assert_int_equal(ci.index, i);
    assert_int_equal(ci.len, CHUNK_NBYTES);
    assert_int_equal(ci.nbytes, CHUNK_NBYTES);
    assert_true(ci.cbytes > 0 && ci.cbytes < CHUNK_NBYTES);
    chunk_pattern(i, want);
    assert_memory_equal(ci.data, want, CHUNK_NBYTES);
  }
  b2sc_unfollow(c);

  assert_int_equal(b2sc_follow(s, "det1", 0, B2SC_FOLLOW_PUSH_COMPRESSED, &c), 0);
  fake_later(f, 50, L_COMMIT, 1, NULL);
  b2s_ctx *ctx = b2s_ctx_new();
  for (uint64_t i = 0; i < 4; i++) {
    assert_int_equal(b2sc_next(c, 2000, &ci), 0);
    assert_int_equal(ci.index, i);
    assert_int_equal(ci.len, ci.cbytes);
    assert_int_equal(b2s_decompress(ctx, ci.data, ci.len, got, sizeof got),
                     CHUNK_NBYTES);
    chunk_pattern(i, want);
    assert_memory_equal(got, want, CHUNK_NBYTES);
  }
  b2s_ctx_free(ctx);
  assert_int_equal(b2sc_next(c, 0, &ci), B2S_E_TIMEOUT);
  b2sc_unfollow(c);
  b2sc_close(s);
  fake_stop(f);
}

static void test_follow_errors(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(s, "nope", 0, 0, &c), B2S_E_NOSTREAM);
  assert_null(c);
  assert_int_equal(b2sc_follow(s, "det1", 4, 0, &c), B2S_E_NCHUNK);
  int follows = fake_count(f, B2S_WIRE_FOLLOW);
  assert_int_equal(b2sc_follow(s, "det1", 0, B2SC_FOLLOW_PUSH_COMPRESSED |
                                                B2SC_FOLLOW_PUSH_DECOMPRESSED,
                               &c), B2S_E_ARG);
  assert_int_equal(b2sc_follow(s, "det1", 0, 0x100, &c), B2S_E_ARG);
  assert_int_equal(b2sc_follow(s, "det1", 2, B2SC_FOLLOW_FROM_END, &c),
                   B2S_E_ARG);
  assert_int_equal(b2sc_follow(s, "", 0, 0, &c), B2S_E_ARG);
  assert_int_equal(fake_count(f, B2S_WIRE_FOLLOW), follows);
  /* from the end: nothing old is delivered */
  assert_int_equal(b2sc_follow(s, "det1", 0, B2SC_FOLLOW_FROM_END, &c), 0);
  assert_int_equal(fake_get(f, B2S_WIRE_FOLLOW, follows).m.flags,
                   B2S_WIRE_FOLLOW_FROM_END);
  assert_int_equal(b2sc_position(c), 3);
  b2sc_chunk_info ci;
  assert_int_equal(b2sc_next(c, 20, &ci), B2S_E_TIMEOUT);
  b2sc_unfollow(c);
  b2sc_close(s);
  fake_stop(f);
}

static void test_follow_ended_by_daemon(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(s, "det1", 0, 0, &c), 0);
  b2s_wire_msg e;
  b2s_wire_init(&e, B2S_WIRE_ERROR);
  e.flags = B2S_WIRE_ERROR_CLOSED_REF;
  e.error.code = B2S_E_CLOSED;
  e.error.ref_type = B2S_WIRE_FOLLOW;
  e.error.ref_id = 1;
  e.error.message = b2s_wire_cstr("stream removed");
  fake_later(f, 30, L_RAW, 0, &e);
  b2sc_chunk_info ci;
  for (uint64_t i = 0; i < 3; i++) {   /* what was announced still comes */
    assert_int_equal(b2sc_next(c, 1000, &ci), 0);
    assert_int_equal(ci.index, i);
  }
  assert_int_equal(b2sc_next(c, 2000, &ci), B2S_E_CLOSED);
  assert_string_equal(b2sc_last_error(s), "stream removed");
  int unfollows = fake_count(f, B2S_WIRE_UNFOLLOW);
  assert_int_equal(b2sc_unfollow(c), 0);
  assert_int_equal(fake_count(f, B2S_WIRE_UNFOLLOW), unfollows);
  b2sc_close(s);
  fake_stop(f);
}

static void test_notify_gap_is_protocol_error(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(s, "det1", 3, 0, &c), 0);
  b2s_wire_msg n;
  b2s_wire_init(&n, B2S_WIRE_NOTIFY);
  n.notify.first = 5;   /* skips 3 and 4 */
  n.notify.count = 1;
  n.notify.committed = 6;
  n.notify.follow_id = 1;
  fake_later(f, 0, L_RAW, 0, &n);
  b2sc_chunk_info ci;
  assert_int_equal(b2sc_next(c, 2000, &ci), B2S_E_PROTO);
  assert_int_equal(b2sc_last_error_code(s), B2S_E_PROTO);
  b2sc_unfollow(c);
  b2sc_close(s);
  fake_stop(f);
}

static void test_read(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(s, "det1", 0, 0, &c), 0);
  uint8_t want[CHUNK_NBYTES], buf[CHUNK_NBYTES];
  chunk_pattern(1, want);
  assert_int_equal(b2sc_read(c, 1, true, NULL, 0), CHUNK_NBYTES);
  assert_int_equal(fake_count(f, B2S_WIRE_READ), 1);
  rec r = fake_get(f, B2S_WIRE_READ, 0);
  assert_int_equal(r.m.read.chunk, 1);
  assert_int_equal(r.m.read.follow_id, 1);
  assert_int_equal(r.m.read.stream.len, 0);
  assert_int_equal(r.m.flags, B2S_WIRE_READ_DECOMPRESS);
  /* served from the kept chunk, no second READ */
  assert_int_equal(b2sc_read(c, 1, true, buf, 10), CHUNK_NBYTES);
  assert_int_equal(b2sc_read(c, 1, true, buf, sizeof buf), CHUNK_NBYTES);
  assert_memory_equal(buf, want, CHUNK_NBYTES);
  assert_int_equal(fake_count(f, B2S_WIRE_READ), 1);
  /* as stored: a chunk the core decodes */
  int cb = b2sc_read(c, 2, false, buf, sizeof buf);
  assert_true(cb > 0 && cb < CHUNK_NBYTES);
  assert_int_equal(fake_get(f, B2S_WIRE_READ, 1).m.flags, 0);
  uint8_t out[CHUNK_NBYTES];
  b2s_ctx *ctx = b2s_ctx_new();
  assert_int_equal(b2s_decompress(ctx, buf, (size_t)cb, out, sizeof out),
                   CHUNK_NBYTES);
  b2s_ctx_free(ctx);
  chunk_pattern(2, want);
  assert_memory_equal(out, want, CHUNK_NBYTES);
  assert_int_equal(b2sc_read(c, 7, true, buf, sizeof buf), B2S_E_NCHUNK);
  assert_int_equal(b2sc_read(c, 0, true, NULL, 5), B2S_E_ARG);
  /* an UNFOLLOW left unanswered */
  assert_int_equal(b2sc_seek(c, 0), 0);   /* a fresh follow: id 2 */
  FSET(f, mute_type, B2S_WIRE_UNFOLLOW);
  assert_int_equal(b2sc_set_timeout(s, 50), 0);
  assert_int_equal(b2sc_unfollow(c), B2S_E_TIMEOUT);
  FSET(f, mute_type, 0);
  assert_int_equal(b2sc_set_timeout(s, 2000), 0);
  b2sc_close(s);
  fake_stop(f);
}

static void test_read_after_follow_closed(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(s, "det1", 0, 0, &c), 0);
  fake_set_error(f, B2S_WIRE_READ, -EIO, B2S_WIRE_ERROR_CLOSED_REF);
  uint8_t buf[CHUNK_NBYTES];
  assert_int_equal(b2sc_read(c, 0, true, buf, sizeof buf), -EIO);
  b2sc_chunk_info ci;
  for (int i = 0; i < 3; i++)
    assert_int_equal(b2sc_next(c, 1000, &ci), 0);
  assert_int_equal(b2sc_next(c, 1000, &ci), -EIO);
  assert_int_equal(b2sc_read(c, 0, true, buf, sizeof buf), CHUNK_NBYTES);
  rec r = fake_get(f, B2S_WIRE_READ, 1);
  assert_int_equal(r.m.read.follow_id, 0);
  assert_true(wstr_is(r.m.read.stream, "det1"));
  b2sc_unfollow(c);
  b2sc_close(s);
  fake_stop(f);
}

static void test_seek(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(s, "det1", 0, B2SC_FOLLOW_PUSH_DECOMPRESSED, &c), 0);
  b2sc_chunk_info ci;
  assert_int_equal(b2sc_next(c, 1000, &ci), 0);
  assert_int_equal(ci.index, 0);
  assert_int_equal(b2sc_seek(c, 2), 0);
  assert_int_equal(fake_get(f, B2S_WIRE_UNFOLLOW, 0).m.unfollow.follow_id, 1);
  rec fo = fake_get(f, B2S_WIRE_FOLLOW, 1);
  assert_int_equal(fo.m.follow.start, 2);
  assert_int_equal(fo.m.flags, B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED);
  assert_int_equal(b2sc_position(c), 2);
  assert_int_equal(b2sc_next(c, 1000, &ci), 0);
  assert_int_equal(ci.index, 2);   /* 1 was pushed before the seek: gone */
  uint8_t want[CHUNK_NBYTES];
  chunk_pattern(2, want);
  assert_memory_equal(ci.data, want, CHUNK_NBYTES);
  assert_int_equal(b2sc_seek(c, 0), 0);   /* backwards too */
  assert_int_equal(b2sc_next(c, 1000, &ci), 0);
  assert_int_equal(ci.index, 0);
  assert_int_equal(b2sc_seek(c, 9), B2S_E_NCHUNK);
  assert_int_equal(b2sc_next(c, 0, &ci), B2S_E_NCHUNK);
  assert_int_equal(b2sc_seek(c, 1), 0);   /* recovers */
  assert_int_equal(b2sc_next(c, 1000, &ci), 0);
  assert_int_equal(ci.index, 1);
  assert_int_equal(b2sc_seek(NULL, 1), B2S_E_ARG);
  b2sc_close(s);   /* frees the consumer still open */
  fake_stop(f);
}

/* ---- protocol version 2: negotiation, records, metadata ------------------------ */

static fake *fake_start_v2(void) {
  fake *f = fake_start();
  FSET(f, v2, true);
  return f;
}

/* What rec_of(i) stores, as the library hands it out. */
static void expect_rec_of(uint64_t i, const b2sc_record *r) {
  assert_int_equal(r->frame, 1000 + i);
  assert_true(r->ts_ns == (int64_t)i * 10 - 5);
  assert_true(r->xxh64 == UINT64_C(0xABCD000000000000) + i);
  unsigned base = B2SC_REC_FRAME | B2SC_REC_TS | B2SC_REC_XXH64;
  if (i == 5) {
    assert_int_equal(r->present, base);
    assert_int_equal(r->flags, B2SC_REC_GAP | B2SC_REC_DROPPED);
    assert_int_equal(r->user_len, 0);
    assert_null(r->user);
  } else if (i % 2 == 0) {
    const uint8_t map[] = {0x81, 0xa1, 'i', (uint8_t)i};
    assert_int_equal(r->present, base | B2SC_REC_USER_MAP);
    assert_int_equal(r->flags, 0);
    assert_int_equal(r->user_len, 4);
    assert_memory_equal(r->user, map, 4);
  } else {
    const uint8_t raw[] = {1, 2, (uint8_t)i};
    assert_int_equal(r->present, base);
    assert_int_equal(r->user_len, 3);
    assert_memory_equal(r->user, raw, 3);
  }
}

static void test_v2_negotiated(void **state) {
  (void)state;
  fake *f = fake_start_v2();
  b2sc_session *s = connect_fake(f);
  assert_int_equal(b2sc_protocol_version(s), 2);
  assert_int_equal(b2sc_protocol_version(NULL), B2S_E_ARG);
  assert_int_equal(fake_count(f, B2S_WIRE_HELLO), 1);
  rec h = fake_get(f, B2S_WIRE_HELLO, 0);
  assert_int_equal(h.hdr[4], 2);
  assert_int_equal(h.hdr_len, 27);                  /* name "t" */
  assert_string_equal(b2sc_last_error(s), "");
  /* every later message is version 2 too (the fake asserts it) */
  assert_true(b2sc_ping(s, 1000) >= 0);
  assert_int_equal(fake_get(f, B2S_WIRE_PING, 0).hdr[4], 2);
  b2sc_close(s);
  assert_int_equal(fake_wait(f, B2S_WIRE_BYE, 1), 1);
  assert_int_equal(fake_get(f, B2S_WIRE_BYE, 0).hdr[4], 2);
  pthread_mutex_lock(&f->mu);
  assert_int_equal(f->refused, 0);
  pthread_mutex_unlock(&f->mu);
  fake_stop(f);
}

/* A daemon of version 1: one refused HELLO, then exactly version 1. */
static void test_v1_fallback(void **state) {
  (void)state;
  fake *f = fake_start();
  b2sc_session *s = connect_fake(f);
  assert_int_equal(b2sc_protocol_version(s), 1);
  pthread_mutex_lock(&f->mu);
  assert_int_equal(f->refused, 1);
  pthread_mutex_unlock(&f->mu);
  assert_int_equal(fake_count(f, B2S_WIRE_HELLO), 1);
  static const uint8_t hello_v1_head[] = {0x42, 0x32, 0x53, 0x57, 0x01, 0x01,
                                          0x03, 0x00};
  rec h = fake_get(f, B2S_WIRE_HELLO, 0);
  assert_memory_equal(h.hdr, hello_v1_head, sizeof hello_v1_head);
  assert_string_equal(b2sc_last_error(s), "");
  assert_int_equal(b2sc_last_error_code(s), 0);

  b2sc_producer *p = open_det1(s);
  b2sc_record r = {.present = B2SC_REC_FRAME, .frame = 1};
  assert_int_equal(b2sc_send_rec(p, "x", 1, &r, 1000), B2S_E_PROTO_VERSION);
  assert_int_equal(b2sc_producer_set_meta_str(p, "k", "v"),
                   B2S_E_PROTO_VERSION);
  b2sc_producer *p2;
  static const uint8_t map[] = {0x80};
  assert_int_equal(b2sc_producer_open_meta(s, "det1", NULL, map, 1, &p2),
                   B2S_E_PROTO_VERSION);
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(s, "det1", 0, B2SC_FOLLOW_RECORDS, &c),
                   B2S_E_PROTO_VERSION);
  /* nothing of it reached the daemon; a plain buffer is the version-1 DATA */
  assert_int_equal(b2sc_send_rec(p, "abc", 3, NULL, 1000), 0);
  assert_int_equal(b2sc_flush(p, 2000), 0);
  assert_int_equal(fake_count(f, B2S_WIRE_DATA), 1);
  assert_int_equal(fake_count(f, B2S_WIRE_OPEN), 1);
  assert_int_equal(fake_count(f, B2S_WIRE_FOLLOW), 0);
  static const uint8_t data_v1[] = {
    0x42, 0x32, 0x53, 0x57, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00};
  rec d = fake_get(f, B2S_WIRE_DATA, 0);
  assert_int_equal(d.hdr_len, sizeof data_v1);
  assert_memory_equal(d.hdr, data_v1, sizeof data_v1);
  assert_int_equal(d.payload_len, 3);
  assert_int_equal(d.record_len, 0);
  assert_int_equal(b2sc_follow(s, "det1", 0, 0, &c), 0);
  b2sc_record got;
  b2sc_chunk_info ci;
  assert_int_equal(b2sc_next_rec(c, 1000, &ci, &got), 0);
  assert_int_equal(got.present, 0);                 /* none asked */
  uint8_t buf[CHUNK_NBYTES];
  assert_int_equal(b2sc_read_rec(c, 0, true, buf, sizeof buf, &got),
                   B2S_E_PROTO_VERSION);
  b2sc_unfollow(c);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  fake_stop(f);
}

static void test_v2_send_records(void **state) {
  (void)state;
  fake *f = fake_start_v2();
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p = open_det1(s);
  static const uint8_t umap[] = {0x81, 0xa3, 'e', 'x', 'p', 0x0a};
  b2sc_record r = {.present = B2SC_REC_FRAME | B2SC_REC_TS |
                              B2SC_REC_USER_MAP,
                   .frame = 1007, .ts_ns = INT64_C(1700000000123456789),
                   .user = umap, .user_len = sizeof umap};
  assert_int_equal(b2sc_send_rec(p, "first", 5, &r, 1000), 0);
  b2sc_record raw = {.present = B2SC_REC_FRAME, .frame = 1008,
                     .user = "\x00\xff", .user_len = 2};
  assert_int_equal(b2sc_send_rec(p, "second", 6, &raw, 1000), 0);
  assert_int_equal(b2sc_send(p, "third", 5, 1000), 0);

  /* rules checked before anything is sent */
  b2sc_record bad = r;
  bad.present |= B2SC_REC_XXH64;
  assert_int_equal(b2sc_send_rec(p, "x", 1, &bad, 1000), B2S_E_ARG);
  bad = r;
  bad.flags = B2SC_REC_GAP;
  assert_int_equal(b2sc_send_rec(p, "x", 1, &bad, 1000), B2S_E_ARG);
  bad = r;
  bad.present = B2SC_REC_TS;                        /* frame without its bit */
  assert_int_equal(b2sc_send_rec(p, "x", 1, &bad, 1000), B2S_E_ARG);
  static uint8_t big[B2SC_USER_MAX + 1];
  bad = (b2sc_record){.user = big, .user_len = sizeof big};
  assert_int_equal(b2sc_send_rec(p, "x", 1, &bad, 1000), B2S_E_ARG);
  bad.user_len = B2SC_USER_MAX;                     /* the limit: fine */
  assert_int_equal(b2sc_send_rec(p, "fourth", 6, &bad, 1000), 0);
  bad = (b2sc_record){.present = B2SC_REC_USER_MAP, .user = "\x92\x01",
                      .user_len = 2};               /* an array, cut short */
  assert_int_equal(b2sc_send_rec(p, "x", 1, &bad, 1000), B2S_E_ARG);
  assert_int_equal(b2sc_flush(p, 2000), 0);
  assert_int_equal(fake_count(f, B2S_WIRE_DATA), 4);

  static const uint8_t hdr0[] = {
    0x42, 0x32, 0x53, 0x57, 0x02, 0x03, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00};
  static const uint8_t rec0[] = {           /* PROTOCOL.md 9.3 */
    0xef, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x15, 0xcd, 0x85, 0x3d,
    0xfe, 0x9c, 0x97, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x0b, 0x00, 0x00, 0x00, 0x06, 0x00, 0x81, 0xa3, 0x65, 0x78, 0x70, 0x0a};
  rec d = fake_get(f, B2S_WIRE_DATA, 0);
  assert_memory_equal(d.hdr, hdr0, sizeof hdr0);
  assert_int_equal(d.payload_len, 5);
  assert_memory_equal(d.payload, "first", 5);
  assert_int_equal(d.record_len, sizeof rec0);
  assert_memory_equal(d.record, rec0, sizeof rec0);

  d = fake_get(f, B2S_WIRE_DATA, 1);
  assert_int_equal(d.m.flags, B2S_WIRE_DATA_RECORD);
  b2s_wire_rec w;
  assert_int_equal(b2s_wire_rec_decode(d.record, d.record_len, &w), 32);
  assert_int_equal(w.present, B2S_WIRE_REC_FRAME);
  assert_int_equal(w.frame, 1008);
  assert_int_equal(w.user_len, 2);
  assert_memory_equal(w.user, "\x00\xff", 2);

  d = fake_get(f, B2S_WIRE_DATA, 2);                 /* no record: 2 frames */
  assert_int_equal(d.m.flags, 0);
  assert_int_equal(d.hdr[4], 2);
  assert_int_equal(d.record_len, 0);
  d = fake_get(f, B2S_WIRE_DATA, 3);
  assert_int_equal(d.record_len, B2S_WIRE_REC_MAX);
  assert_int_equal(d.m.data.buffer_id, 3);

  b2sc_producer_stats st;
  b2sc_producer_stats_get(p, &st);
  assert_int_equal(st.sent, 4);
  assert_int_equal(st.bytes, 5 + 6 + 5 + 6);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  fake_stop(f);
}

static void test_v2_send_zc_record(void **state) {
  (void)state;
  fake *f = fake_start_v2();
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p = open_det1(s);
  static char frame[16] = "zero-copy frame";
  b2sc_record r = {.present = B2SC_REC_FRAME, .frame = 77};
  b2sc_record bad = {.present = B2SC_REC_XXH64, .xxh64 = 1};
  assert_int_equal(b2sc_send_zc_rec(p, frame, 15, &bad, NULL, NULL),
                   B2S_E_ARG);
  assert_int_equal(b2sc_send_zc_rec(p, frame, 15, &r, NULL, NULL), 0);
  assert_int_equal(b2sc_send_zc_rec(p, frame, 4, NULL, NULL, NULL), 0);
  assert_int_equal(b2sc_flush(p, 2000), 0);
  assert_int_equal(fake_count(f, B2S_WIRE_DATA), 2);
  rec d = fake_get(f, B2S_WIRE_DATA, 0);
  assert_int_equal(d.m.flags, B2S_WIRE_DATA_RECORD);
  assert_int_equal(d.payload_len, 15);
  assert_memory_equal(d.payload, frame, 15);
  b2s_wire_rec w;
  assert_int_equal(b2s_wire_rec_decode(d.record, d.record_len, &w), 30);
  assert_int_equal(w.frame, 77);
  d = fake_get(f, B2S_WIRE_DATA, 1);
  assert_int_equal(d.m.flags, 0);
  assert_int_equal(d.record_len, 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  fake_stop(f);
}

static void test_v2_shm_submit_record(void **state) {
  (void)state;
  fake *f = fake_start_v2();
  FSET(f, shm, true);
  b2sc_session *s = connect_fake(f);
  b2sc_producer *p = open_det1(s);
  assert_int_equal(b2sc_shm_attach(p, 2, 4096), 0);
  uint32_t slot;
  void *ptr;
  assert_int_equal(b2sc_shm_acquire(p, 1000, &slot, &ptr, NULL), 0);
  memcpy(ptr, "slot", 4);
  b2sc_record bad = {.flags = B2SC_REC_REJECTED};
  assert_int_equal(b2sc_shm_submit_rec(p, slot, 4, &bad), B2S_E_ARG);
  b2sc_record r = {.present = B2SC_REC_FRAME | B2SC_REC_TS, .frame = 42,
                   .ts_ns = -1};
  assert_int_equal(b2sc_shm_submit_rec(p, slot, 4, &r), 0);   /* still ours */
  assert_int_equal(b2sc_flush(p, 2000), 0);
  rec sub = fake_get(f, B2S_WIRE_SHM_SUBMIT, 0);
  assert_int_equal(sub.m.flags, B2S_WIRE_SHM_SUBMIT_RECORD);
  assert_memory_equal(sub.payload, "slot", 4);
  b2s_wire_rec w;
  assert_int_equal(b2s_wire_rec_decode(sub.record, sub.record_len, &w), 30);
  assert_int_equal(w.frame, 42);
  assert_true(w.ts_ns == -1);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  fake_stop(f);
}

static void test_v2_series_metadata(void **state) {
  (void)state;
  fake *f = fake_start_v2();
  b2sc_session *s = connect_fake(f);
  static const uint8_t gain[] = {0x81, 0xa4, 'g', 'a', 'i', 'n', 0xcb,
                                 0x3f, 0xf8, 0, 0, 0, 0, 0, 0};
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open_meta(s, "det1", "tmpl", gain,
                                           sizeof gain, &p), 0);
  rec o = fake_get(f, B2S_WIRE_OPEN, 0);
  assert_int_equal(o.m.flags, B2S_WIRE_OPEN_META);
  assert_int_equal(o.payload_len, sizeof gain);
  assert_memory_equal(o.payload, gain, sizeof gain);
  /* without metadata: the plain OPEN */
  b2sc_producer *p2;
  assert_int_equal(b2sc_producer_open_meta(s, "det1", NULL, NULL, 0, &p2), 0);
  assert_int_equal(fake_get(f, B2S_WIRE_OPEN, 1).m.flags, 0);
  assert_int_equal(fake_get(f, B2S_WIRE_OPEN, 1).payload_len, 0);
  assert_int_equal(b2sc_producer_close(p2), 0);

  assert_int_equal(b2sc_send(p, "abc", 3, 1000), 0);
  static const uint8_t change[] = {0x82, 0xa4, 'g', 'a', 'i', 'n', 0xc0,
                                   0xa6, 's', 'a', 'm', 'p', 'l', 'e',
                                   0xa3, 'F', 'e', '2'};
  assert_int_equal(b2sc_producer_set_meta(p, change, sizeof change), 0);
  rec m = fake_get(f, B2S_WIRE_META, 0);
  assert_int_equal(m.hdr_len, 20);
  assert_int_equal(m.hdr[4], 2);
  assert_int_equal(m.m.meta.handle, 1);
  assert_int_not_equal(m.m.tag, 0);
  assert_int_equal(m.payload_len, sizeof change);
  assert_memory_equal(m.payload, change, sizeof change);

  assert_int_equal(b2sc_producer_set_meta_str(p, "sample", "Fe"), 0);
  static const uint8_t one[] = {0x81, 0xa6, 's', 'a', 'm', 'p', 'l', 'e',
                                0xa2, 'F', 'e'};
  m = fake_get(f, B2S_WIRE_META, 1);
  assert_int_equal(m.payload_len, sizeof one);
  assert_memory_equal(m.payload, one, sizeof one);
  assert_int_equal(b2sc_producer_set_meta_str(p, "sample", NULL), 0);
  static const uint8_t del[] = {0x81, 0xa6, 's', 'a', 'm', 'p', 'l', 'e',
                                0xc0};
  m = fake_get(f, B2S_WIRE_META, 2);
  assert_memory_equal(m.payload, del, sizeof del);
  /* longer strings take str8 */
  char key[40];
  memset(key, 'k', sizeof key - 1);
  key[sizeof key - 1] = '\0';
  assert_int_equal(b2sc_producer_set_meta_str(p, key, "v"), 0);
  m = fake_get(f, B2S_WIRE_META, 3);
  assert_int_equal(m.payload_len, 1 + 2 + 39 + 2);
  assert_int_equal(m.payload[1], 0xd9);
  assert_int_equal(m.payload[2], 39);

  /* refused before sending: not a map with string keys */
  static const uint8_t intkey[] = {0x81, 0x01, 0x02};
  assert_int_equal(b2sc_producer_set_meta(p, intkey, sizeof intkey), B2S_E_ARG);
  assert_int_equal(b2sc_producer_set_meta(p, gain, sizeof gain - 1), B2S_E_ARG);
  assert_int_equal(b2sc_producer_set_meta(p, gain, 0), B2S_E_ARG);
  assert_int_equal(b2sc_producer_set_meta(p, NULL, 3), B2S_E_ARG);
  assert_int_equal(b2sc_producer_set_meta_str(p, "", "v"), B2S_E_ARG);
  assert_int_equal(b2sc_producer_set_meta_str(p, "k", "\xff"), B2S_E_ARG);
  assert_int_equal(b2sc_producer_open_meta(s, "det1", NULL, intkey,
                                           sizeof intkey, &p2), B2S_E_ARG);
  assert_int_equal(fake_count(f, B2S_WIRE_META), 4);
  assert_int_equal(fake_count(f, B2S_WIRE_OPEN), 2);
  /* refused by the daemon: its code, the handle stays */
  fake_set_error(f, B2S_WIRE_META, B2S_E_OVERSIZE, 0);
  assert_int_equal(b2sc_producer_set_meta(p, change, sizeof change),
                   B2S_E_OVERSIZE);
  assert_string_equal(b2sc_last_error(s), "injected failure");
  assert_int_equal(b2sc_producer_set_meta(p, change, sizeof change), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  fake_stop(f);
}

static void test_v2_follow_records(void **state) {
  (void)state;
  fake *f = fake_start_v2();
  b2sc_session *s = connect_fake(f);
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(s, "det1", 0, B2SC_FOLLOW_RECORDS, &c), 0);
  assert_int_equal(fake_get(f, B2S_WIRE_FOLLOW, 0).m.flags,
                   B2S_WIRE_FOLLOW_RECORDS);
  fake_later(f, 30, L_COMMIT, 4, NULL);   /* chunks 3..6, one NOTIFY */
  b2sc_chunk_info ci;
  b2sc_record r;
  for (uint64_t i = 0; i < 7; i++) {
    assert_int_equal(b2sc_next_rec(c, 2000, &ci, &r), 0);
    assert_int_equal(ci.index, i);
    assert_null(ci.data);
    expect_rec_of(i, &r);
  }
  assert_int_equal(b2sc_next_rec(c, 0, &ci, &r), B2S_E_TIMEOUT);
  /* seek keeps the records flag */
  assert_int_equal(b2sc_seek(c, 4), 0);
  assert_int_equal(fake_get(f, B2S_WIRE_FOLLOW, 1).m.flags,
                   B2S_WIRE_FOLLOW_RECORDS);
  assert_int_equal(b2sc_next(c, 2000, &ci), 0);     /* record skipped */
  assert_int_equal(ci.index, 4);
  assert_int_equal(b2sc_next_rec(c, 2000, &ci, &r), 0);
  expect_rec_of(5, &r);
  b2sc_unfollow(c);

  /* pushed chunks carry theirs */
  assert_int_equal(b2sc_follow(s, "det1", 0,
                               B2SC_FOLLOW_PUSH_DECOMPRESSED |
                                   B2SC_FOLLOW_RECORDS, &c), 0);
  uint8_t want[CHUNK_NBYTES];
  for (uint64_t i = 0; i < 7; i++) {
    assert_int_equal(b2sc_next_rec(c, 2000, &ci, &r), 0);
    assert_int_equal(ci.index, i);
    chunk_pattern(i, want);
    assert_memory_equal(ci.data, want, CHUNK_NBYTES);
    expect_rec_of(i, &r);
  }
  b2sc_unfollow(c);
  b2sc_close(s);
  fake_stop(f);
}

/* Records the follow did not ask for are a protocol break, as a gap is. */
static void test_v2_unasked_records(void **state) {
  (void)state;
  fake *f = fake_start_v2();
  FSET(f, records_always, true);
  b2sc_session *s = connect_fake(f);
  b2sc_consumer *c;
  b2sc_chunk_info ci;
  assert_int_equal(b2sc_follow(s, "det1", 0, 0, &c), 0);
  assert_int_equal(b2sc_next(c, 1000, &ci), B2S_E_PROTO);
  b2sc_unfollow(c);
  assert_int_equal(b2sc_follow(s, "det1", 0, B2SC_FOLLOW_PUSH_COMPRESSED,
                               &c), 0);
  assert_int_equal(b2sc_next(c, 1000, &ci), B2S_E_PROTO);
  b2sc_unfollow(c);
  b2sc_close(s);
  fake_stop(f);
}

/* Malformed records end the follow; a message of another version than the
 * session's is ignored. */
static void test_v2_hostile_daemon(void **state) {
  (void)state;
  fake *f = fake_start_v2();
  FSET(f, bad_record, true);
  b2sc_session *s = connect_fake(f);
  b2sc_consumer *c;
  b2sc_chunk_info ci;
  b2sc_record r;
  assert_int_equal(b2sc_follow(s, "det1", 0, B2SC_FOLLOW_RECORDS, &c), 0);
  assert_int_equal(b2sc_next_rec(c, 1000, &ci, &r), B2S_E_PROTO);
  b2sc_unfollow(c);
  assert_int_equal(b2sc_follow(s, "det1", 0, B2SC_FOLLOW_RECORDS |
                               B2SC_FOLLOW_PUSH_COMPRESSED, &c), 0);
  assert_int_equal(b2sc_next_rec(c, 1000, &ci, &r), B2S_E_PROTO);
  b2sc_unfollow(c);

  /* a valid version-1 ACK in a version-2 session */
  b2s_wire_msg a;
  b2s_wire_init(&a, B2S_WIRE_ACK);
  a.ack.handle = 1;
  a.ack.credits = 1000;
  a.ack.level = B2S_WIRE_LEVEL_RECEIVED;
  b2sc_producer *p = open_det1(s);
  fake_later(f, 0, L_RAW, 0, &a);
  sleep_ms(30);
  assert_true(b2sc_ping(s, 1000) >= 0);   /* ignored, session goes on */
  assert_int_equal(b2sc_last_error_code(s), B2S_E_PROTO);
  b2sc_producer_stats st;
  b2sc_producer_stats_get(p, &st);
  assert_int_equal(st.credits, 8);         /* its credits were not taken */
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  fake_stop(f);
}

static void test_v2_read_record(void **state) {
  (void)state;
  fake *f = fake_start_v2();
  b2sc_session *s = connect_fake(f);
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(s, "det1", 0, 0, &c), 0);
  uint8_t want[CHUNK_NBYTES], buf[CHUNK_NBYTES];
  b2sc_record r;
  assert_int_equal(b2sc_read_rec(c, 2, true, NULL, 0, &r), CHUNK_NBYTES);
  expect_rec_of(2, &r);
  rec rd = fake_get(f, B2S_WIRE_READ, 0);
  assert_int_equal(rd.m.flags, B2S_WIRE_READ_DECOMPRESS | B2S_WIRE_READ_RECORD);
  /* the kept chunk and its record, no second READ */
  memset(&r, 0, sizeof r);
  assert_int_equal(b2sc_read_rec(c, 2, true, buf, sizeof buf, &r),
                   CHUNK_NBYTES);
  expect_rec_of(2, &r);
  chunk_pattern(2, want);
  assert_memory_equal(buf, want, CHUNK_NBYTES);
  assert_int_equal(fake_count(f, B2S_WIRE_READ), 1);
  /* a plain read asks for no record */
  assert_int_equal(b2sc_read(c, 1, false, buf, sizeof buf) > 0, 1);
  assert_int_equal(fake_get(f, B2S_WIRE_READ, 1).m.flags, 0);
  assert_int_equal(b2sc_read_rec(c, 1, false, buf, sizeof buf, &r) > 0, 1);
  expect_rec_of(1, &r);
  assert_int_equal(fake_count(f, B2S_WIRE_READ), 3);
  assert_int_equal(b2sc_read_rec(c, 9, true, buf, sizeof buf, &r),
                   B2S_E_NCHUNK);
  b2sc_unfollow(c);
  b2sc_close(s);
  fake_stop(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_connect_hello_bye),
      cmocka_unit_test(test_connect_roles_and_name),
      cmocka_unit_test(test_connect_failures),
      cmocka_unit_test(test_default_endpoint),
      cmocka_unit_test(test_strerror_and_args),
      cmocka_unit_test(test_ping_and_stats),
      cmocka_unit_test(test_session_ended_by_daemon),
      cmocka_unit_test(test_malformed_from_daemon),
      cmocka_unit_test(test_ping_while_waiting),
      cmocka_unit_test(test_open),
      cmocka_unit_test(test_send_flush_bytes),
      cmocka_unit_test(test_send_reuses_buffers),
      cmocka_unit_test(test_send_limits),
      cmocka_unit_test(test_credits_respected),
      cmocka_unit_test(test_drops_reported),
      cmocka_unit_test(test_rejected_buffer),
      cmocka_unit_test(test_handle_closed_by_daemon),
      cmocka_unit_test(test_flush_close_errors),
      cmocka_unit_test(test_send_zero_copy),
      cmocka_unit_test(test_shm_producer),
      cmocka_unit_test(test_follow_notify),
      cmocka_unit_test(test_follow_push),
      cmocka_unit_test(test_follow_errors),
      cmocka_unit_test(test_follow_ended_by_daemon),
      cmocka_unit_test(test_notify_gap_is_protocol_error),
      cmocka_unit_test(test_read),
      cmocka_unit_test(test_read_after_follow_closed),
      cmocka_unit_test(test_seek),
      cmocka_unit_test(test_v2_negotiated),
      cmocka_unit_test(test_v1_fallback),
      cmocka_unit_test(test_v2_send_records),
      cmocka_unit_test(test_v2_send_zc_record),
      cmocka_unit_test(test_v2_shm_submit_record),
      cmocka_unit_test(test_v2_series_metadata),
      cmocka_unit_test(test_v2_follow_records),
      cmocka_unit_test(test_v2_unasked_records),
      cmocka_unit_test(test_v2_hostile_daemon),
      cmocka_unit_test(test_v2_read_record),
  };
  return ts_run_tests(tests, NULL, NULL);
}
