/* Consumers: FOLLOW / UNFOLLOW, NOTIFY and pushed CHUNKs, READ.
 *
 * The writer only publishes the committed count; the I/O thread turns it
 * into NOTIFY ranges here, so any number of followers costs the writer
 * nothing.  A follow's `next` advances only when its message was queued,
 * so every chunk is announced exactly once and in order; a peer whose queue
 * is full gets a merged range on a later turn. */
#define _GNU_SOURCE
#include "session.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PUSH_BUDGET 64           /* pushed chunks per stream per turn */

void b2sd_follow_remove(b2sd_follow *f) {
  b2sd_session *s = f->sess;
  for (b2sd_follow **pp = &s->follows; *pp; pp = &(*pp)->next_s)
    if (*pp == f) {
      *pp = f->next_s;
      break;
    }
  for (b2sd_follow **pp = &f->st->follows; *pp; pp = &(*pp)->next_st)
    if (*pp == f) {
      *pp = f->next_st;
      break;
    }
  s->nfollows--;
  free(f);
}

static b2sd_follow *follow_find(b2sd_session *s, uint32_t id) {
  for (b2sd_follow *f = s->follows; f; f = f->next_s)
    if (f->id == id)
      return f;
  return NULL;
}

static int stream_lookup(b2sd_server *srv, b2s_wire_str n, b2sd_stream **out) {
  char name[B2S_STREAM_NAME_MAX + 1];
  if (n.len == 0 || n.len > B2S_STREAM_NAME_MAX)
    return B2S_E_STREAM_NAME;
  memcpy(name, n.ptr, n.len);
  name[n.len] = '\0';
  int rc = b2s_stream_name_check(name);
  if (rc < 0)
    return rc;
  *out = b2sd_server_stream(srv, name);
  return *out ? 0 : B2S_E_NOSTREAM;
}

static int64_t committed_of(b2sd_stream *st) {
  /* acquire: pairs with the writer's release store after a commit */
  return atomic_load_explicit(&st->committed, memory_order_acquire);
}

void b2sd_follow_msg(b2sd_server *srv, b2sd_session *s,
                     const b2s_wire_msg *m) {
  b2sd_stream *st = NULL;
  int rc = 0;
  uint16_t fl = m->flags;
  if (fl & B2S_WIRE_FOLLOW_BY_PATH)
    rc = B2S_E_AUTH;             /* following by path is not offered */
  else if ((fl & B2S_WIRE_FOLLOW_FROM_END) && m->follow.start != 0)
    rc = B2S_E_PROTO;
  else if ((fl & B2S_WIRE_FOLLOW_PUSH_COMPRESSED) &&
           (fl & B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED))
    rc = B2S_E_PROTO;
  else if (s->nfollows >= B2SD_MAX_FOLLOWS)
    rc = B2S_E_BUSY;
  if (rc == 0)
    rc = stream_lookup(srv, m->follow.target, &st);
  int64_t committed = st ? committed_of(st) : 0;
  uint64_t start = (fl & B2S_WIRE_FOLLOW_FROM_END) ? (uint64_t)committed
                                                   : m->follow.start;
  if (rc == 0 && start > (uint64_t)committed)
    rc = B2S_E_NCHUNK;
  b2sd_follow *f = rc == 0 ? calloc(1, sizeof *f) : NULL;
  if (rc == 0 && !f)
    rc = B2S_E_NOMEM;
  if (rc < 0) {
    b2sd_send_error(srv, s, m->tag, rc, 0, m->type, 0, m->follow.start, NULL);
    return;
  }
  f->sess = s;
  f->st = st;
  f->id = s->next_follow++;
  f->next = start;
  f->push = fl & (B2S_WIRE_FOLLOW_PUSH_COMPRESSED |
                  B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED);
  f->next_s = s->follows;
  s->follows = f;
  f->next_st = st->follows;
  st->follows = f;
  s->nfollows++;
  b2s_wire_msg r;
  b2s_wire_init(&r, B2S_WIRE_FOLLOWING);
  r.tag = m->tag;
  r.following.start = start;
  r.following.committed = (uint64_t)committed;
  r.following.follow_id = f->id;
  b2sd_send(srv, s, &r, NULL, 0);
}

void b2sd_unfollow_msg(b2sd_server *srv, b2sd_session *s,
                       const b2s_wire_msg *m) {
  b2sd_follow *f = follow_find(s, m->unfollow.follow_id);
  if (!f) {
    b2sd_send_error(srv, s, m->tag, B2S_E_CLOSED, 0, m->type,
                    m->unfollow.follow_id, 0, NULL);
    return;
  }
  b2s_wire_msg r;
  b2s_wire_init(&r, B2S_WIRE_UNFOLLOWED);
  r.tag = m->tag;
  r.unfollowed.next = f->next;
  r.unfollowed.follow_id = f->id;
  b2sd_follow_remove(f);
  b2sd_send(srv, s, &r, NULL, 0);
}

/* Read chunk `index` of st (committed) into a malloc'ed buffer; returns
 * its length or a negative error.  nbytes and cbytes get the chunk sizes. */
static int chunk_load(b2sd_stream *st, uint64_t index, bool decompress,
                      uint8_t **out, int32_t *nbytes, int32_t *cbytes) {
  b2s_frame *fr;
  int rc = b2sd_stream_reader(st, (int64_t)index + 1, &fr);
  if (rc < 0)
    return rc;
  if ((int64_t)index >= b2s_frame_nchunks(fr))
    return B2S_E_NCHUNK;
  rc = b2s_frame_chunk_sizes(fr, (int64_t)index, cbytes, nbytes);
  if (rc < 0)
    return rc;
  size_t cap = (size_t)(decompress ? *nbytes : *cbytes);
  uint8_t *buf = malloc(cap ? cap : 1);
  if (!buf)
    return B2S_E_NOMEM;
  rc = decompress
           ? b2s_frame_chunk_decompress(fr, (int64_t)index, NULL, buf, cap)
           : b2s_frame_chunk_read(fr, (int64_t)index, buf, cap);
  if (rc < 0) {
    free(buf);
    return rc;
  }
  *out = buf;
  return rc;
}

void b2sd_read_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m) {
  b2sd_stream *st = NULL;
  int rc = 0;
  if (m->read.follow_id) {
    b2sd_follow *f = follow_find(s, m->read.follow_id);
    if (f)
      st = f->st;
    else
      rc = B2S_E_CLOSED;
  } else {
    rc = stream_lookup(srv, m->read.stream, &st);
  }
  if (rc == 0 && m->read.chunk >= (uint64_t)committed_of(st))
    rc = B2S_E_NCHUNK;
  bool dec = m->flags & B2S_WIRE_READ_DECOMPRESS;
  uint8_t *buf = NULL;
  int32_t nb = 0, cb = 0;
  if (rc == 0)
    rc = chunk_load(st, m->read.chunk, dec, &buf, &nb, &cb);
  if (rc < 0) {
    b2sd_send_error(srv, s, m->tag, rc, 0, m->type, m->read.follow_id,
                    m->read.chunk, NULL);
    return;
  }
  b2s_wire_msg r;
  b2s_wire_init(&r, B2S_WIRE_CHUNK);
  r.tag = m->tag;
  r.flags = dec ? B2S_WIRE_CHUNK_DECOMPRESSED : 0;
  r.chunk.index = m->read.chunk;
  r.chunk.follow_id = m->read.follow_id;
  r.chunk.nbytes = (uint32_t)nb;
  r.chunk.cbytes = (uint32_t)cb;
  b2sd_send(srv, s, &r, buf, (size_t)rc);
  free(buf);
}

/* Push committed chunks to a push follow; false when held back. */
static bool push_chunks(b2sd_server *srv, b2sd_follow *f, uint64_t committed,
                        int *budget) {
  bool dec = f->push & B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED;
  while (f->next < committed) {
    if ((*budget)-- <= 0)
      return false;
    uint8_t *buf = NULL;
    int32_t nb = 0, cb = 0;
    int rc = chunk_load(f->st, f->next, dec, &buf, &nb, &cb);
    if (rc < 0) {
      b2sd_send_error(srv, f->sess, 0, rc, B2S_WIRE_ERROR_CLOSED_REF, 0, f->id,
                      f->next, NULL);
      b2sd_follow_remove(f);
      return true;
    }
    b2s_wire_msg r;
    b2s_wire_init(&r, B2S_WIRE_CHUNK);
    r.flags = B2S_WIRE_CHUNK_PUSHED | (dec ? B2S_WIRE_CHUNK_DECOMPRESSED : 0);
    r.chunk.index = f->next;
    r.chunk.follow_id = f->id;
    r.chunk.nbytes = (uint32_t)nb;
    r.chunk.cbytes = (uint32_t)cb;
    rc = b2sd_send(srv, f->sess, &r, buf, (size_t)rc);
    free(buf);
    if (rc < 0)
      return rc == -EHOSTUNREACH;
    f->next++;
  }
  return true;
}

bool b2sd_follow_scan(b2sd_server *srv, b2sd_stream *st) {
  uint64_t committed = (uint64_t)committed_of(st);
  bool held = false;
  int budget = PUSH_BUDGET;
  for (b2sd_follow *f = st->follows, *nx; f; f = nx) {
    nx = f->next_st;
    if (f->next >= committed || f->sess->dead)
      continue;
    if (f->push) {
      held |= !push_chunks(srv, f, committed, &budget);
      continue;
    }
    uint64_t count = committed - f->next;
    if (count > UINT32_MAX)
      count = UINT32_MAX;
    b2s_wire_msg r;
    b2s_wire_init(&r, B2S_WIRE_NOTIFY);
    r.notify.first = f->next;
    r.notify.count = (uint32_t)count;
    r.notify.committed = committed;
    r.notify.follow_id = f->id;
    int rc = b2sd_send(srv, f->sess, &r, NULL, 0);
    if (rc == 0)
      f->next += count;
    else if (rc == -EAGAIN)
      held = true;
  }
  return held;
}
