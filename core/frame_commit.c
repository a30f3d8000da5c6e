/* Frame commits: slots, commit records, moves and compaction (the protocol
 * of docs/FRAME_COMMIT.md).
 *
 * Invariant: the slot of the committed state (w->active) is never written.
 * A commit writes the inactive slot (index header invalidated first, then
 * the entries that changed since that slot was last written, the trailer,
 * and the index header), then the commit record, then the 87-byte header
 * that makes the new state current.  With B2S_SYNC_FULL, fdatasync
 * separates the data and slot from the record and header, and follows the
 * header. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "frame_helper.h"
#include "frame_io.h"
#include "fwriter_internal.h"

/* ---- buffers ------------------------------------------------------------ */

int b2s_fw_buf(b2s_fwriter *w, size_t n) {
  if (n <= w->bufcap)
    return 0;
  uint8_t *p = realloc(w->buf, n);
  if (p == NULL)
    return B2S_E_NOMEM;
  w->buf = p;
  w->bufcap = n;
  return 0;
}

/* New sparse chunk files and the directory entries that name them. */
static int sync_sparse_files(b2s_fwriter *w) {
  int rc = 0;
  for (int i = 0; i < w->nsync; i++) {
    if (rc == 0 && w->opts.sync == B2S_SYNC_FULL && fdatasync(w->sync_fds[i]) < 0)
      rc = -errno;
    close(w->sync_fds[i]);
  }
  w->nsync = 0;
  if (rc == 0 && w->sparse && w->opts.sync == B2S_SYNC_FULL && fsync(w->dirfd) < 0)
    rc = -errno;
  return rc;
}

/* ---- little-endian fields ------------------------------------------------- */

static void st64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t ld64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static void st32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- records ----------------------------------------------------------------- */

void b2s_fw_record_encode(const fw_record *r, uint8_t out[FW_REC_SIZE]) {
  memset(out, 0, FW_REC_SIZE);
  memcpy(out, FW_REC_MAGIC, 8);
  st32(out + 8, FW_REC_VERSION);
  st32(out + 12, FW_REC_USED);
  const int64_t f[FW_REC_NFIELDS] = {
      (int64_t)r->seq, r->slot_pos, r->slot_len, r->nchunks, r->data_region,
      r->pos0, r->cap0, r->pos1, r->data_end, r->fresh_from, r->stored_bytes};
  for (int i = 0; i < FW_REC_NFIELDS; i++)
    st64(out + 16 + 8 * i, (uint64_t)f[i]);
  memcpy(out + FW_REC_HDR, r->header, B2S_FRAME_HEADER_FIXED);
  st32(out + FW_REC_CRC, (uint32_t)crc32(0L, out, FW_REC_CRC));
}

bool b2s_fw_record_decode(const uint8_t in[FW_REC_SIZE], fw_record *r) {
  if (memcmp(in, FW_REC_MAGIC, 8) != 0 || ld64(in + 8) !=
      ((uint64_t)FW_REC_USED << 32 | FW_REC_VERSION))
    return false;
  uint32_t crc = (uint32_t)in[FW_REC_CRC] | (uint32_t)in[FW_REC_CRC + 1] << 8 |
                 (uint32_t)in[FW_REC_CRC + 2] << 16 |
                 (uint32_t)in[FW_REC_CRC + 3] << 24;
  if (crc != (uint32_t)crc32(0L, in, FW_REC_CRC))
    return false;
  int64_t f[FW_REC_NFIELDS];
  for (int i = 0; i < FW_REC_NFIELDS; i++)
    f[i] = (int64_t)ld64(in + 16 + 8 * i);
  *r = (fw_record){.seq = (uint64_t)f[0], .slot_pos = f[1], .slot_len = f[2],
                   .nchunks = f[3], .data_region = f[4], .pos0 = f[5],
                   .cap0 = f[6], .pos1 = f[7], .data_end = f[8],
                   .fresh_from = f[9], .stored_bytes = f[10]};
  memcpy(r->header, in + FW_REC_HDR, B2S_FRAME_HEADER_FIXED);
  return r->slot_pos > 0 && r->slot_len > 0 && r->nchunks >= 0;
}

/* Both records of the commit area, newest first; *nvalid says how many
 * checked out. */
int b2s_fw_records_read(int fd, int64_t base, fw_record rec[2], int *nvalid) {
  uint8_t raw[FW_REC_SIZE];
  *nvalid = 0;
  for (int i = 0; i < 2; i++) {
    /* the file may end right after the used part of a record */
    memset(raw, 0, sizeof raw);
    int rc = b2s_fw_pread(fd, raw, FW_REC_USED, base + FW_REC_OFF + i * FW_REC_SIZE);
    if (rc < 0 && rc != B2S_E_TRUNCATED)
      return rc;
    if (rc == 0 && b2s_fw_record_decode(raw, &rec[*nvalid]))
      (*nvalid)++;
  }
  if (*nvalid == 2 && rec[1].seq > rec[0].seq) {
    fw_record t = rec[0];
    rec[0] = rec[1];
    rec[1] = t;
  }
  return 0;
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
  st32(out + 4, (uint32_t)(8 * n));
  st32(out + 8, FW_INDEX_BLOCKSIZE);
  st32(out + 12, (uint32_t)(8 * n + B2S_HEADER_LEN));
  out[16 + 5] = B2S_FILTER_SHUFFLE;
}

static int encode_trailer(b2s_fwriter *w) {
  if (!w->trailer_dirty)
    return 0;
  w->trailer.len = 0;
  int rc = b2s_frame_trailer_write(&w->vlmetas, &w->trailer);
  if (rc >= 0)
    w->trailer_dirty = false;
  return rc < 0 ? rc : 0;
}

int64_t b2s_fw_slot_need(const b2s_fwriter *w, int64_t n) {
  return (n > 0 ? B2S_HEADER_LEN + 8 * n : 0) + (int64_t)w->trailer.len;
}

/* Write the entries [from, n) of the model into slot s, then its trailer
 * and index header.  An index header of zeros goes first so that a cut
 * write never leaves something that parses as the slot's older state. */
static int write_slot(b2s_fwriter *w, int s) {
  int64_t p = w->pos[s], n = w->n;
  uint8_t ih[B2S_HEADER_LEN] = {0};
  int rc = 0;
  if (n > 0)
    rc = b2s_fw_pwrite(w, w->fd, ih, sizeof ih, p);
  int64_t from = n > 0 ? w->valid[s] : 0;
  size_t len = (size_t)(8 * (n - from)) + w->trailer.len;
  if (rc == 0)
    rc = b2s_fw_buf(w, len);
  if (rc < 0)
    return rc;
  for (int64_t i = from; i < n; i++)
    st64(w->buf + 8 * (i - from), (uint64_t)w->index[i]);
  memcpy(w->buf + 8 * (n - from), w->trailer.data, w->trailer.len);
  int64_t at = n > 0 ? p + B2S_HEADER_LEN + 8 * from : p;
  rc = b2s_fw_pwrite(w, w->fd, w->buf, len, at);
  if (rc == 0 && n > 0) {
    b2s_fw_index_header(ih, n);
    rc = b2s_fw_pwrite(w, w->fd, ih, sizeof ih, p);
  }
  if (rc < 0)
    return rc;
  w->valid[s] = n;
  w->slot_len[s] = b2s_fw_slot_need(w, n);
  if (p + w->slot_len[s] > w->file_end)
    w->file_end = p + w->slot_len[s];
  return 0;
}

/* Header of the state whose index + trailer (slot_len bytes) are at
 * slot_pos. */
static void state_header(const b2s_fwriter *w, b2s_frame_header *h,
                         int64_t slot_pos, int64_t slot_len) {
  *h = w->hdr;
  h->has_vlmeta = w->vlmetas.n > 0;
  if (w->sparse) {
    h->header_len = (int32_t)slot_pos;
    h->cbytes = w->stored_bytes;
  } else {
    h->header_len = (int32_t)w->base;
    h->cbytes = slot_pos - w->base;
  }
  h->frame_len = slot_pos + slot_len;
}

/* Record and header for the state at slot_pos; the header write is the
 * commit point. */
static int publish(b2s_fwriter *w, const b2s_frame_header *h, int64_t slot_pos,
                   int64_t slot_len, int64_t nchunks) {
  /* An empty cframe's trailer starts right after the header; when it is
   * large enough to reach the records, the records are left out (recovery
   * then treats the frame like one written elsewhere: the header decides). */
  bool with_record = !(!w->sparse && slot_pos == w->base &&
                       slot_pos + slot_len > w->base + FW_REC_OFF);
  fw_record r = {.seq = w->seq + 1, .slot_pos = slot_pos, .slot_len = slot_len,
                 .nchunks = nchunks, .data_region = w->data_region,
                 .pos0 = w->pos[0], .cap0 = w->cap0, .pos1 = w->pos[1],
                 .data_end = w->data_end, .fresh_from = w->fresh_from,
                 .stored_bytes = w->stored_bytes};
  b2s_frame_header_encode(h, r.header);
  uint8_t raw[FW_REC_SIZE];
  b2s_fw_record_encode(&r, raw);
  int rc = b2s_fw_sync(w);
  if (rc == 0 && with_record)
    rc = b2s_fw_pwrite(w, w->fd, raw, FW_REC_USED,
                   w->base + FW_REC_OFF + (int64_t)(r.seq & 1) * FW_REC_SIZE);
  if (rc == 0)
    rc = b2s_fw_pwrite(w, w->fd, r.header, B2S_FRAME_HEADER_FIXED, 0);
  if (rc == 0)
    rc = b2s_fw_sync(w);
  if (rc < 0)
    return rc;
  w->seq = r.seq;
  w->committed = *h;
  w->committed_n = nchunks;
  return 0;
}

/* ---- layout ------------------------------------------------------------------ */

static int64_t align4k(int64_t v) { return (v + 4095) & ~INT64_C(4095); }

static int64_t reserve(const b2s_fwriter *w) {
  int64_t r = w->opts.reserve_min > 0 ? w->opts.reserve_min : FW_RESERVE_MIN;
  return w->data_end / 8 > r ? w->data_end / 8 : r;
}

/* Room for slot 0 to absorb growth before it must move again. */
static int64_t slot0_capacity(int64_t need) {
  return align4k(need + need / 8 + 8 * 1024 + 4096);
}

/* First layout of a new frame.  Empty cframe: the trailer follows the
 * header (c-blosc2 reads it there) and the data region starts after the
 * commit area. */
int b2s_fw_layout_init(b2s_fwriter *w) {
  int rc = encode_trailer(w);
  if (rc < 0)
    return rc;
  int64_t need = b2s_fw_slot_need(w, 0);
  if (w->sparse) {
    w->data_region = 0;
    w->pos[0] = w->base + FW_AREA;
  } else {
    w->data_end = FW_AREA;
    w->data_region = align4k(FW_AREA + reserve(w));
    w->pos[0] = w->base + w->data_region;
  }
  w->cap0 = slot0_capacity(need);
  w->pos[1] = w->pos[0] + w->cap0;
  w->fresh_from = w->data_end;
  return 0;
}

/* Copy len bytes of the file from src to dst in pieces (see
 * FW_WRITE_PIECE). */
static int copy_range(b2s_fwriter *w, int64_t src, int64_t dst, int64_t len) {
  enum { PIECE = FW_WRITE_PIECE };
  int rc = b2s_fw_buf(w, PIECE);
  for (int64_t done = 0; rc == 0 && done < len; done += PIECE) {
    size_t k = (size_t)(len - done < PIECE ? len - done : PIECE);
    rc = b2s_fw_pread(w->fd, w->buf, k, src + done);
    if (rc == 0)
      rc = b2s_fw_pwrite(w, w->fd, w->buf, k, dst + done);
  }
  return rc;
}

/* Write the committed slot a (at src) again at dst.  While the model
 * still starts with the committed entries, they come from memory and only
 * the committed trailer is read back. */
static int copy_slot(b2s_fwriter *w, int a, int64_t src, int64_t dst) {
  int64_t n = w->committed_n, len = w->slot_len[a];
  if (n == 0 || w->valid[a] < n)
    return copy_range(w, src, dst, len);
  enum { PER = FW_WRITE_PIECE / 8 };
  int rc = b2s_fw_buf(w, FW_WRITE_PIECE);
  uint8_t ih[B2S_HEADER_LEN];
  b2s_fw_index_header(ih, n);
  if (rc == 0)
    rc = b2s_fw_pwrite(w, w->fd, ih, sizeof ih, dst);
  for (int64_t i = 0; rc == 0 && i < n; i += PER) {
    int64_t k = n - i < PER ? n - i : PER;
    for (int64_t j = 0; j < k; j++)
      st64(w->buf + 8 * j, (uint64_t)w->index[i + j]);
    rc = b2s_fw_pwrite(w, w->fd, w->buf, (size_t)(8 * k),
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
  int64_t pos0 = w->sparse ? w->base + FW_AREA : w->base + region;
  int64_t pos1 = pos0 + cap0;
  if (pos1 < w->file_end)
    pos1 = align4k(w->file_end);
  int a = w->active;
  w->data_region = region;
  w->pos[0] = pos0;
  w->cap0 = pos1 - pos0;
  w->pos[1] = pos1;
  if (a < 0) {          /* empty cframe: nothing in the way */
    w->valid[0] = w->valid[1] = 0;
    return 0;
  }
  int64_t src = w->committed.frame_len - w->slot_len[a], len = w->slot_len[a];
  int rc = copy_slot(w, a, src, pos1);
  if (rc < 0)
    return rc;
  b2s_frame_header h = w->committed;
  if (w->sparse)
    h.header_len = (int32_t)pos1;
  else
    h.cbytes = pos1 - w->base;
  h.frame_len = pos1 + len;
  if (pos1 + len > w->file_end)
    w->file_end = pos1 + len;
  rc = publish(w, &h, pos1, len, w->committed_n);
  if (rc < 0)
    return rc;
  w->valid[1] = w->valid[a];
  w->valid[0] = 0;
  w->slot_len[1] = len;
  w->active = 1;
  return 0;
}

/* Index entries the data region will have gained when data_end reaches
 * region, at the mean stored chunk size so far (at least a chunk header
 * per entry; special entries take no data and may still outgrow slot 0). */
static int64_t entries_until(const b2s_fwriter *w, int64_t region) {
  int64_t used = w->data_end - FW_AREA;
  int64_t mean = w->n > 0 ? used / w->n : 0;
  if (mean < B2S_HEADER_LEN)
    mean = B2S_HEADER_LEN;
  return (region - w->data_end) / mean;
}

/* A cframe chunk of cbytes is about to be written at data_end.  Slot 0 is
 * sized for the index the new region will hold, so that a move for the
 * data also covers the index's growth until the next one: one copy of the
 * index per growth step, not two. */
int b2s_fw_make_room(b2s_fwriter *w, int64_t cbytes) {
  if (w->data_end + cbytes <= w->data_region)
    return 0;
  int64_t end = w->file_end - w->base;
  int64_t want = w->data_end + cbytes;
  int64_t region = align4k((want > end ? want : end) + reserve(w));
  int rc = encode_trailer(w);
  if (rc < 0)
    return rc;
  int64_t n_next = w->n + entries_until(w, region);
  return move_slots(w, region, slot0_capacity(b2s_fw_slot_need(w, n_next)));
}

/* ---- commit ------------------------------------------------------------------ */

static int commit_empty_cframe(b2s_fwriter *w) {
  int rc = b2s_fw_pwrite(w, w->fd, w->trailer.data, w->trailer.len, w->base);
  if (rc < 0)
    return rc;
  b2s_frame_header h;
  state_header(w, &h, w->base, (int64_t)w->trailer.len);
  rc = publish(w, &h, w->base, (int64_t)w->trailer.len, 0);
  if (rc == 0) {
    w->active = -1;
    w->valid[0] = w->valid[1] = 0;
  }
  return rc;
}

static int commit_slot(b2s_fwriter *w) {
  int s = w->active == 0 ? 1 : 0;
  int rc0 = encode_trailer(w);
  if (rc0 < 0)
    return rc0;
  int64_t need = b2s_fw_slot_need(w, w->n);
  if (s == 0 && need > w->cap0) {
    int rc = move_slots(w, w->data_region, slot0_capacity(need));
    if (rc < 0)
      return rc;
  }
  int rc = write_slot(w, s);
  if (rc < 0)
    return rc;
  b2s_frame_header h;
  state_header(w, &h, w->pos[s], w->slot_len[s]);
  rc = publish(w, &h, w->pos[s], w->slot_len[s], w->n);
  if (rc == 0)
    w->active = s;
  return rc;
}

static void unlink_pending(b2s_fwriter *w) {
  char name[32];
  for (int64_t i = 0; i < w->nunlink; i++) {
    int64_t id = w->unlink_ids[i];
    snprintf(name, sizeof name, "%08X.chunk", (unsigned)id);
    unlinkat(w->dirfd, name, 0);   /* a leftover is only an orphan file */
    w->ids[id / 64] &= ~(UINT64_C(1) << (id % 64));
    if (id < w->id_hint)
      w->id_hint = id;
  }
  w->nunlink = 0;
}

int b2s_fwriter_commit(b2s_fwriter *w) {
  if (w == NULL)
    return B2S_E_ARG;
  if (!w->dirty)
    return 0;
  int rc = b2s_fw_dio_flush(w);
  if (rc == 0)
    rc = encode_trailer(w);
  if (rc == 0 && w->metas_dirty) {
    b2s_mpbuf hb = {0};
    rc = b2s_frame_header_write(&w->hdr, &w->metas, &hb);
    if (rc >= 0)   /* metalayer contents only: the fixed part is published */
      rc = b2s_fw_pwrite(w, w->fd, hb.data + B2S_FRAME_HEADER_FIXED,
                     (size_t)(w->base - B2S_FRAME_HEADER_FIXED),
                     B2S_FRAME_HEADER_FIXED);
    b2s_mpbuf_fini(&hb);
  }
  if (rc >= 0)
    rc = sync_sparse_files(w);
  if (rc == 0)
    /* the trailer right after the header only while the frame is built
   * under its temporary name: rewriting it in place later (new
   * vlmetalayers of an empty frame) would break the committed state */
    rc = (!w->sparse && w->n == 0 && w->seq == 0) ? commit_empty_cframe(w)
                                                  : commit_slot(w);
  if (rc < 0)
    return rc;
  w->metas_dirty = false;
  w->dirty = false;
  w->fresh_from = w->data_end;
  if (w->sparse)
    unlink_pending(w);
  b2s_fw_pace_note(w);
  return 0;
}

/* ---- compaction ------------------------------------------------------------- */

/* Leave the frame as header, commit area, data, index, trailer: the index
 * goes right after the data (cframe) or the commit area (sparse), and the
 * file ends with it. */
int b2s_fw_compact(b2s_fwriter *w) {
  int rc = b2s_fwriter_commit(w);
  b2s_fw_dio_forget(w);   /* the slots move next to the data */
  if (rc == 0)
    rc = encode_trailer(w);
  if (rc < 0)
    return rc;
  if (!w->sparse && w->n == 0 && w->active == -1) {
    /* keep the commit records, which lie after an empty frame's trailer */
    int64_t end = w->base + (int64_t)w->trailer.len;
    if (end < w->base + FW_REC_OFF + FW_REC_SIZE + FW_REC_USED)
      end = w->base + FW_REC_OFF + FW_REC_SIZE + FW_REC_USED;
    return ftruncate(w->fd, end) < 0 ? -errno : (w->file_end = end, 0);
  }
  int64_t need = b2s_fw_slot_need(w, w->n);
  int64_t region = w->sparse ? 0 : w->data_end;
  int64_t pos0 = w->sparse ? w->base + FW_AREA : w->base + region;
  if (!(w->active == 0 && w->pos[0] == pos0)) {
    if (w->active == 0 || w->pos[0] != pos0 || need > w->cap0)
      rc = move_slots(w, region, need);
    if (rc == 0) {
      w->dirty = true;
      rc = commit_slot(w);
    }
    w->dirty = false;
  }
  int64_t end = w->pos[0] + w->slot_len[0];
  if (rc == 0 && ftruncate(w->fd, end) < 0)
    rc = -errno;
  if (rc == 0) {
    w->file_end = end;
    w->cap0 = need;
    w->pos[1] = end;
    w->valid[1] = 0;
    rc = b2s_fw_sync(w);
  }
  return rc;
}
