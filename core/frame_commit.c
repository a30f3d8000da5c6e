/* Frame commits: layout, slots, moves, compaction, and the writes of the
 * chunk data into the data region (the protocol of docs/FRAME_COMMIT.md;
 * the records themselves are frame_record.c's).  This file owns the
 * writer's layout (w->lay), its commit state (w->c) and its scratch
 * buffer, and is the one that writes chunk data through the direct-I/O
 * stage and tells the drop-behind helper how far the data got.
 *
 * Invariant: the slot of the committed state (w->lay.active) is never
 * written.  A commit writes the inactive slot (index header invalidated
 * first, then the entries that changed since that slot was last written,
 * the trailer, and the index header), then the commit record, then the
 * 87-byte header that makes the new state current.  With B2S_SYNC_FULL,
 * fdatasync separates the data and slot from the record and header, and
 * follows the header. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fwriter_internal.h"

/* ---- state, scratch, changes ------------------------------------------- */

void b2s_fw_commit_init(b2s_fwriter *w) {
  w->lay.active = -1;
  w->c.trailer_dirty = true;
}

void b2s_fw_commit_fini(b2s_fwriter *w) {
  b2s_mpbuf_fini(&w->c.trailer);
  free(w->buf);
  w->buf = NULL;
  w->bufcap = 0;
}

uint8_t *b2s_fw_scratch(b2s_fwriter *w, size_t n) {
  if (n <= w->bufcap && w->buf != NULL)
    return w->buf;
  uint8_t *p = realloc(w->buf, n > 0 ? n : 1);
  if (p == NULL)
    return NULL;
  w->buf = p;
  w->bufcap = n > 0 ? n : 1;
  return p;
}

void b2s_fw_touch(b2s_fwriter *w, int64_t pos) {
  for (int s = 0; s < 2; s++)
    if (w->lay.valid[s] > pos)
      w->lay.valid[s] = pos;
  w->c.dirty = true;
}

void b2s_fw_touch_metas(b2s_fwriter *w) {
  w->c.metas_dirty = w->c.dirty = true;
}

void b2s_fw_touch_trailer(b2s_fwriter *w) {
  w->c.trailer_dirty = w->c.dirty = true;
}

/* fdatasync of the writer's file under B2S_SYNC_FULL, else nothing. */
static int sync_data(b2s_fwriter *w) {
  if (w->opts.sync != B2S_SYNC_FULL)
    return 0;
  return fdatasync(w->f.fd) < 0 ? -errno : 0;
}

/* ---- slots ------------------------------------------------------------------ */

/* The 32-byte header of an index stored memcpy'ed, as c-blosc2's memcpy
 * fallback for an index writes it (flags 0x17, typesize 8). */
void b2s_fw_index_header(uint8_t out[B2S_HEADER_LEN], int64_t n) {
  memset(out, 0, B2S_HEADER_LEN);
  out[0] = 5;
  out[1] = 1;
  out[2] = 0x17;
  out[3] = 8;
  b2s_fw_st32(out + 4, (uint32_t)(8 * n));
  b2s_fw_st32(out + 8, FW_INDEX_BLOCKSIZE);
  b2s_fw_st32(out + 12, (uint32_t)(8 * n + B2S_HEADER_LEN));
  out[16 + 5] = B2S_FILTER_SHUFFLE;
}

static int encode_trailer(b2s_fwriter *w) {
  if (!w->c.trailer_dirty)
    return 0;
  w->c.trailer.len = 0;
  int rc = b2s_frame_trailer_write(&w->m.vlmetas, &w->c.trailer);
  if (rc >= 0)
    w->c.trailer_dirty = false;
  return rc < 0 ? rc : 0;
}

int64_t b2s_fw_slot_need(const b2s_fwriter *w, int64_t n) {
  return (n > 0 ? B2S_HEADER_LEN + 8 * n : 0) + (int64_t)w->c.trailer.len;
}

/* Write the entries [from, n) of the model into slot s, then its trailer
 * and index header.  An index header of zeros goes first so that a cut
 * write never leaves something that parses as the slot's older state. */
static int write_slot(b2s_fwriter *w, int s) {
  fw_layout *L = &w->lay;
  int64_t p = L->pos[s], n = w->m.n;
  uint8_t ih[B2S_HEADER_LEN] = {0};
  int rc = 0;
  if (n > 0)
    rc = b2s_fio_write(&w->io, w->f.fd, ih, sizeof ih, p);
  int64_t from = n > 0 ? L->valid[s] : 0;
  size_t len = (size_t)(8 * (n - from)) + w->c.trailer.len;
  uint8_t *buf = rc == 0 ? b2s_fw_scratch(w, len) : NULL;
  if (rc == 0 && buf == NULL)
    rc = B2S_E_NOMEM;
  if (rc < 0)
    return rc;
  for (int64_t i = from; i < n; i++)
    b2s_fw_st64(buf + 8 * (i - from), (uint64_t)w->m.index[i]);
  memcpy(buf + 8 * (n - from), w->c.trailer.data, w->c.trailer.len);
  int64_t at = n > 0 ? p + B2S_HEADER_LEN + 8 * from : p;
  rc = b2s_fio_write(&w->io, w->f.fd, buf, len, at);
  if (rc == 0 && n > 0) {
    b2s_fw_index_header(ih, n);
    rc = b2s_fio_write(&w->io, w->f.fd, ih, sizeof ih, p);
  }
  if (rc < 0)
    return rc;
  L->valid[s] = n;
  L->slot_len[s] = b2s_fw_slot_need(w, n);
  if (p + L->slot_len[s] > L->file_end)
    L->file_end = p + L->slot_len[s];
  return 0;
}

/* Header of the state whose index + trailer (slot_len bytes) are at
 * slot_pos. */
static void state_header(const b2s_fwriter *w, b2s_frame_header *h,
                         int64_t slot_pos, int64_t slot_len) {
  *h = w->m.hdr;
  h->has_vlmeta = w->m.vlmetas.n > 0;
  if (w->f.sparse) {
    h->header_len = (int32_t)slot_pos;
    h->cbytes = w->m.stored_bytes;
  } else {
    h->header_len = (int32_t)w->m.base;
    h->cbytes = slot_pos - w->m.base;
  }
  h->frame_len = slot_pos + slot_len;
}

/* Record and header for the state at slot_pos; the header write is the
 * commit point. */
static int publish(b2s_fwriter *w, const b2s_frame_header *h, int64_t slot_pos,
                   int64_t slot_len, int64_t nchunks) {
  const fw_layout *L = &w->lay;
  int64_t base = w->m.base;
  /* An empty cframe's trailer starts right after the header; when it is
   * large enough to reach the records, the records are left out (recovery
   * then treats the frame like one written elsewhere: the header decides). */
  bool with_record = !(!w->f.sparse && slot_pos == base &&
                       slot_pos + slot_len > base + FW_REC_OFF);
  fw_record r = {.seq = w->c.seq + 1, .slot_pos = slot_pos,
                 .slot_len = slot_len, .nchunks = nchunks,
                 .data_region = L->data_region, .pos0 = L->pos[0],
                 .cap0 = L->cap0, .pos1 = L->pos[1], .data_end = L->data_end,
                 .fresh_from = w->c.fresh_from,
                 .stored_bytes = w->m.stored_bytes};
  b2s_frame_header_encode(h, r.header);
  uint8_t raw[FW_REC_SIZE];
  b2s_fw_record_encode(&r, raw);
  int rc = sync_data(w);
  if (rc == 0 && with_record)
    rc = b2s_fio_write(&w->io, w->f.fd, raw, FW_REC_USED,
                       b2s_fw_record_pos(base, r.seq));
  if (rc == 0)
    rc = b2s_fio_write(&w->io, w->f.fd, r.header, B2S_FRAME_HEADER_FIXED, 0);
  if (rc == 0)
    rc = sync_data(w);
  if (rc < 0)
    return rc;
  w->c.seq = r.seq;
  w->c.committed = *h;
  w->c.committed_n = nchunks;
  return 0;
}

/* ---- layout ------------------------------------------------------------------ */

static int64_t align4k(int64_t v) { return (v + 4095) & ~INT64_C(4095); }

static int64_t reserve(const b2s_fwriter *w) {
  int64_t r = w->opts.reserve_min > 0 ? w->opts.reserve_min : FW_RESERVE_MIN;
  return w->lay.data_end / 8 > r ? w->lay.data_end / 8 : r;
}

/* Room for slot 0 to absorb growth before it must move again. */
static int64_t slot0_capacity(int64_t need) {
  return align4k(need + need / 8 + 8 * 1024 + 4096);
}

/* First layout of a new frame.  Empty cframe: the trailer follows the
 * header (c-blosc2 reads it there) and the data region starts after the
 * commit area. */
static int layout_init(b2s_fwriter *w) {
  fw_layout *L = &w->lay;
  int rc = encode_trailer(w);
  if (rc < 0)
    return rc;
  int64_t need = b2s_fw_slot_need(w, 0);
  if (w->f.sparse) {
    L->data_region = 0;
    L->pos[0] = w->m.base + FW_AREA;
  } else {
    L->data_end = FW_AREA;
    L->data_region = align4k(FW_AREA + reserve(w));
    L->pos[0] = w->m.base + L->data_region;
  }
  L->cap0 = slot0_capacity(need);
  L->pos[1] = L->pos[0] + L->cap0;
  w->c.fresh_from = L->data_end;
  return 0;
}

/* Copy len bytes of the file from src to dst in pieces (see
 * FW_WRITE_PIECE). */
static int copy_range(b2s_fwriter *w, int64_t src, int64_t dst, int64_t len) {
  enum { PIECE = FW_WRITE_PIECE };
  uint8_t *buf = b2s_fw_scratch(w, PIECE);
  int rc = buf != NULL ? 0 : B2S_E_NOMEM;
  for (int64_t done = 0; rc == 0 && done < len; done += PIECE) {
    size_t k = (size_t)(len - done < PIECE ? len - done : PIECE);
    rc = b2s_fio_pread(w->f.fd, buf, k, src + done);
    if (rc == 0)
      rc = b2s_fio_write(&w->io, w->f.fd, buf, k, dst + done);
  }
  return rc;
}

/* Write the committed slot a (at src) again at dst.  While the model
 * still starts with the committed entries, they come from memory and only
 * the committed trailer is read back. */
static int copy_slot(b2s_fwriter *w, int a, int64_t src, int64_t dst) {
  int64_t n = w->c.committed_n, len = w->lay.slot_len[a];
  if (n == 0 || w->lay.valid[a] < n)
    return copy_range(w, src, dst, len);
  enum { PER = FW_WRITE_PIECE / 8 };
  uint8_t *buf = b2s_fw_scratch(w, FW_WRITE_PIECE);
  int rc = buf != NULL ? 0 : B2S_E_NOMEM;
  uint8_t ih[B2S_HEADER_LEN];
  b2s_fw_index_header(ih, n);
  if (rc == 0)
    rc = b2s_fio_write(&w->io, w->f.fd, ih, sizeof ih, dst);
  for (int64_t i = 0; rc == 0 && i < n; i += PER) {
    int64_t k = n - i < PER ? n - i : PER;
    for (int64_t j = 0; j < k; j++)
      b2s_fw_st64(buf + 8 * j, (uint64_t)w->m.index[i + j]);
    rc = b2s_fio_write(&w->io, w->f.fd, buf, (size_t)(8 * k),
                       dst + B2S_HEADER_LEN + 8 * i);
  }
  int64_t idx = B2S_HEADER_LEN + 8 * n;
  return rc < 0 ? rc : copy_range(w, src + idx, dst + idx, len - idx);
}

/* Copy the committed slot to a new slot 1 beyond everything, with slot 0
 * placed at the end of a data region of `region` bytes with capacity
 * `cap0`, and make that copy current.  Afterwards the old slots are free
 * space.  Costs one copy of the index; callers grow geometrically. */
static int move_slots(b2s_fwriter *w, int64_t region, int64_t cap0) {
  fw_layout *L = &w->lay;
  int64_t base = w->m.base;
  int64_t pos0 = w->f.sparse ? base + FW_AREA : base + region;
  int64_t pos1 = pos0 + cap0;
  if (pos1 < L->file_end)
    pos1 = align4k(L->file_end);
  int a = L->active;
  L->data_region = region;
  L->pos[0] = pos0;
  L->cap0 = pos1 - pos0;
  L->pos[1] = pos1;
  if (a < 0) {          /* empty cframe: nothing in the way */
    L->valid[0] = L->valid[1] = 0;
    return 0;
  }
  int64_t src = w->c.committed.frame_len - L->slot_len[a];
  int64_t len = L->slot_len[a];
  int rc = copy_slot(w, a, src, pos1);
  if (rc < 0)
    return rc;
  b2s_frame_header h = w->c.committed;
  if (w->f.sparse)
    h.header_len = (int32_t)pos1;
  else
    h.cbytes = pos1 - base;
  h.frame_len = pos1 + len;
  if (pos1 + len > L->file_end)
    L->file_end = pos1 + len;
  rc = publish(w, &h, pos1, len, w->c.committed_n);
  if (rc < 0)
    return rc;
  L->valid[1] = L->valid[a];
  L->valid[0] = 0;
  L->slot_len[1] = len;
  L->active = 1;
  return 0;
}

/* Index entries the data region will have gained when data_end reaches
 * region, at the mean stored chunk size so far (at least a chunk header
 * per entry; special entries take no data and may still outgrow slot 0). */
static int64_t entries_until(const b2s_fwriter *w, int64_t region) {
  int64_t used = w->lay.data_end - FW_AREA;
  int64_t mean = w->m.n > 0 ? used / w->m.n : 0;
  if (mean < B2S_HEADER_LEN)
    mean = B2S_HEADER_LEN;
  return (region - w->lay.data_end) / mean;
}

/* Slot 0 is sized for the index the new region will hold, so that a move
 * for the data also covers the index's growth until the next one: one
 * copy of the index per growth step, not two. */
int b2s_fw_make_room(b2s_fwriter *w, int64_t cbytes) {
  const fw_layout *L = &w->lay;
  cbytes += b2s_dio_slack(w->dio);   /* a flush pads to the alignment */
  if (L->data_end + cbytes <= L->data_region)
    return 0;
  int64_t end = L->file_end - w->m.base;
  int64_t want = L->data_end + cbytes;
  int64_t region = align4k((want > end ? want : end) + reserve(w));
  int rc = encode_trailer(w);
  if (rc < 0)
    return rc;
  int64_t n_next = w->m.n + entries_until(w, region);
  return move_slots(w, region, slot0_capacity(b2s_fw_slot_need(w, n_next)));
}

/* ---- chunk data ---------------------------------------------------------------- */

int b2s_fw_data_append(b2s_fwriter *w, const void *p, size_t n,
                       int64_t *entry) {
  fw_layout *L = &w->lay;
  int64_t pos = w->m.base + L->data_end;
  /* the stage keeps the commit area's block in the page cache */
  int rc = w->dio != NULL ? b2s_dio_write(w->dio, p, n, pos,
                                          w->m.base + FW_AREA, &L->file_end)
                          : b2s_fio_write(&w->io, w->f.fd, p, n, pos);
  if (rc < 0)
    return rc;
  *entry = L->data_end;
  L->data_end += (int64_t)n;
  if (w->m.base + L->data_end > L->file_end)
    L->file_end = w->m.base + L->data_end;
  return 0;
}

int b2s_fw_data_flush(b2s_fwriter *w) {
  return b2s_dio_flush(w->dio, &w->lay.file_end);
}

/* ---- a new file, a file resumed ------------------------------------------------ */

int b2s_fw_start(b2s_fwriter *w) {
  b2s_mpbuf hb = {0};
  int rc = b2s_frame_header_write(&w->m.hdr, &w->m.metas, &hb);
  if (rc >= 0)   /* hb.len is the model's base: both are the header's size */
    rc = b2s_fio_write(&w->io, w->f.fd, hb.data, hb.len, 0);
  b2s_mpbuf_fini(&hb);
  if (rc == 0)
    rc = layout_init(w);
  w->lay.file_end = w->m.base;
  w->c.dirty = true;
  return rc < 0 ? rc : b2s_fwriter_commit(w);
}

int b2s_fw_resume(b2s_fwriter *w, const fw_record *r) {
  fw_layout *L = &w->lay;
  struct stat sb;
  if (fstat(w->f.fd, &sb) < 0)
    return -errno;
  L->file_end = (int64_t)sb.st_size;
  w->c.seq = r->seq;
  w->c.committed = w->m.hdr;
  w->c.committed_n = w->m.n;
  L->data_region = r->data_region;
  L->data_end = w->c.fresh_from = r->data_end;
  L->pos[0] = r->pos0;
  L->pos[1] = r->pos1;
  L->cap0 = r->cap0;
  L->active = r->slot_pos == r->pos0 ? 0 : r->slot_pos == r->pos1 ? 1 : -1;
  if (L->active == 0) {
    /* slot 1 may start anywhere after slot 0 and the file's end */
    int64_t p1 = r->pos0 + r->slot_len;
    L->pos[1] = align4k(p1 > L->file_end ? p1 : L->file_end);
    L->cap0 = L->pos[1] - L->pos[0];
  }
  if (L->active >= 0) {
    L->slot_len[L->active] = r->slot_len;
    L->valid[L->active] = w->m.n;
  }
  w->c.dirty = false;
  return 0;
}

/* ---- commit ------------------------------------------------------------------ */

static int commit_empty_cframe(b2s_fwriter *w) {
  int64_t base = w->m.base, len = (int64_t)w->c.trailer.len;
  int rc = b2s_fio_write(&w->io, w->f.fd, w->c.trailer.data, (size_t)len, base);
  if (rc < 0)
    return rc;
  b2s_frame_header h;
  state_header(w, &h, base, len);
  rc = publish(w, &h, base, len, 0);
  if (rc == 0) {
    w->lay.active = -1;
    w->lay.valid[0] = w->lay.valid[1] = 0;
  }
  return rc;
}

static int commit_slot(b2s_fwriter *w) {
  fw_layout *L = &w->lay;
  int s = L->active == 0 ? 1 : 0;
  int rc0 = encode_trailer(w);
  if (rc0 < 0)
    return rc0;
  int64_t need = b2s_fw_slot_need(w, w->m.n);
  if (s == 0 && need > L->cap0) {
    int rc = move_slots(w, L->data_region, slot0_capacity(need));
    if (rc < 0)
      return rc;
  }
  int rc = write_slot(w, s);
  if (rc < 0)
    return rc;
  b2s_frame_header h;
  state_header(w, &h, L->pos[s], L->slot_len[s]);
  rc = publish(w, &h, L->pos[s], L->slot_len[s], w->m.n);
  if (rc == 0)
    L->active = s;
  return rc;
}

/* Metalayer contents only: the fixed part is published with the commit. */
static int write_metas(b2s_fwriter *w) {
  b2s_mpbuf hb = {0};
  int rc = b2s_frame_header_write(&w->m.hdr, &w->m.metas, &hb);
  if (rc >= 0)
    rc = b2s_fio_write(&w->io, w->f.fd, hb.data + B2S_FRAME_HEADER_FIXED,
                       (size_t)(w->m.base - B2S_FRAME_HEADER_FIXED),
                       B2S_FRAME_HEADER_FIXED);
  b2s_mpbuf_fini(&hb);
  return rc;
}

int b2s_fwriter_commit(b2s_fwriter *w) {
  if (w == NULL)
    return B2S_E_ARG;
  if (!w->c.dirty)
    return 0;
  int rc = b2s_fw_data_flush(w);
  if (rc == 0)
    rc = encode_trailer(w);
  if (rc == 0 && w->c.metas_dirty)
    rc = write_metas(w);
  if (rc >= 0 && w->f.sparse)
    rc = b2s_fw_chunkfiles_sync(&w->cf, w->f.dirfd,
                                w->opts.sync == B2S_SYNC_FULL);
  if (rc == 0)
    /* the trailer right after the header only while the frame is built
     * under its temporary name: rewriting it in place later (new
     * vlmetalayers of an empty frame) would break the committed state */
    rc = (!w->f.sparse && w->m.n == 0 && w->c.seq == 0)
             ? commit_empty_cframe(w)
             : commit_slot(w);
  if (rc < 0)
    return rc;
  w->c.metas_dirty = false;
  w->c.dirty = false;
  w->c.fresh_from = w->lay.data_end;
  if (w->f.sparse)
    b2s_fw_chunkfiles_unlink(&w->cf, w->f.dirfd);
  b2s_fwhelper_pace_to(w->pacer, w->m.base + w->lay.data_end);
  return 0;
}

/* ---- compaction ------------------------------------------------------------- */

/* Leave the frame as header, commit area, data, index, trailer: the index
 * goes right after the data (cframe) or the commit area (sparse), and the
 * file ends with it. */
int b2s_fw_compact(b2s_fwriter *w) {
  fw_layout *L = &w->lay;
  int64_t base = w->m.base;
  int rc = b2s_fwriter_commit(w);
  b2s_dio_forget(w->dio);   /* the slots move next to the data */
  if (rc == 0)
    rc = encode_trailer(w);
  if (rc < 0)
    return rc;
  if (!w->f.sparse && w->m.n == 0 && L->active == -1) {
    /* keep the commit records, which lie after an empty frame's trailer */
    int64_t end = base + (int64_t)w->c.trailer.len;
    if (end < base + FW_REC_OFF + FW_REC_SIZE + FW_REC_USED)
      end = base + FW_REC_OFF + FW_REC_SIZE + FW_REC_USED;
    return ftruncate(w->f.fd, end) < 0 ? -errno : (L->file_end = end, 0);
  }
  int64_t need = b2s_fw_slot_need(w, w->m.n);
  int64_t region = w->f.sparse ? 0 : L->data_end;
  int64_t pos0 = w->f.sparse ? base + FW_AREA : base + region;
  if (!(L->active == 0 && L->pos[0] == pos0)) {
    if (L->active == 0 || L->pos[0] != pos0 || need > L->cap0)
      rc = move_slots(w, region, need);
    if (rc == 0) {
      w->c.dirty = true;
      rc = commit_slot(w);
    }
    w->c.dirty = false;
  }
  int64_t end = L->pos[0] + L->slot_len[0];
  if (rc == 0 && ftruncate(w->f.fd, end) < 0)
    rc = -errno;
  if (rc == 0) {
    L->file_end = end;
    L->cap0 = need;
    L->pos[1] = end;
    L->valid[1] = 0;
    rc = sync_data(w);
  }
  return rc;
}
