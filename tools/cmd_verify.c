/* b2stream verify: open, decode everything, check the sizes against the
 * header; report the first problem with its byte offset. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: b2stream verify PATH [--offset N | --ceph-conf FILE]\n"
    "\n"
    "Open PATH (frame file, sparse frame directory or chunk file), decode\n"
    "every chunk, every vlmetalayer and the b2nd metalayer, and check the\n"
    "chunk sizes against the frame header (and, for a b2nd array, that every\n"
    "chunk is padded to whole blocks of the array's block shape, as c-blosc2\n"
    "reads it).  Prints 'ok: N chunks, X bytes'\n"
    "and exits 0, or prints the first problem with its byte offset and\n"
    "chunk number on stderr and exits 1.  When the frame has a records frame\n"
    "(NAME.records.b2frame), first check that it holds one record per chunk\n"
    "and that every stored chunk's xxh64 matches its record (so a flipped\n"
    "bit is found even where the codec still decodes the chunk); the line\n"
    "then ends with ', N checksums'.\n"
    "\n"
    "  --offset N   the contiguous frame starts at byte N of the file PATH\n"
    "               (a frame inside a larger file; units as pack's\n"
    "               --chunk-bytes)\n"
    CLI_DIST_HELP
    "For a distributed frame, every committed chunk against the xxh64 of its\n"
    "record in the index, then that it decodes.\n";

static int check_b2nd(cli_src *src) {
  b2s_b2nd nd;
  int rc = b2s_frame_b2nd_get(src->frame, &nd);
  if (rc < 0 && rc != B2S_E_NOTFOUND) {
    cli_src_frame_err(src, rc);
    return rc;
  }
  return 0;
}

static int check_vlmetas(cli_src *src) {
  const b2s_frame_metas *m = b2s_frame_vlmetalayers(src->frame);
  for (int32_t k = 0; k < m->n; k++) {
    uint8_t *content;
    int32_t len;
    int rc = b2s_frame_vlmeta_get(src->frame, m->items[k].name, src->ctx,
                                  &content, &len);
    if (rc < 0) {
      cli_src_frame_err(src, rc);
      return rc;
    }
    free(content);
  }
  return 0;
}

/* The chunk and block bytes a b2nd array's chunks must have: c-blosc2
 * pads every chunk to whole blocks and reads slices through a mask of the
 * array's blocks, so a chunk of other sizes is one it cannot read
 * (docs/BLOSC2_FORMAT.md, the b2nd data layout).  0 when the frame has no
 * b2nd (or it does not parse: check_b2nd reports that). */
static int b2nd_sizes(cli_src *src, int64_t *chunk, int64_t *block) {
  b2s_b2nd nd;
  *chunk = *block = 0;
  if (!src->frame || b2s_frame_b2nd_get(src->frame, &nd) != 0 || nd.ndim < 1)
    return 0;
  int64_t ts = b2s_frame_header_get(src->frame)->typesize;
  *chunk = *block = ts;
  for (int d = 0; d < nd.ndim; d++) {
    if (nd.blockshape[d] <= 0 || nd.chunkshape[d] <= 0)
      return *chunk = 0, 0;
    *chunk *= (nd.chunkshape[d] + nd.blockshape[d] - 1) / nd.blockshape[d] *
              (int64_t)nd.blockshape[d];
    *block *= nd.blockshape[d];
  }
  return 1;
}

static int check_layout(cli_src *src, int64_t i, int64_t chunk, int64_t block) {
  cli_chunk d;
  int rc = cli_src_chunk(src, i, &d);
  if (rc < 0)
    return rc;
  /* an index entry stands for a chunk c-blosc2 makes in the frame's blocks */
  if (!d.stored || (d.nbytes == chunk && d.info.blocksize == block))
    return 0;
  cli_err("%s: chunk %lld: %d bytes in blocks of %d, where the b2nd array's "
          "chunks are %lld bytes in blocks of %lld: c-blosc2 cannot read it",
          src->path, (long long)i, (int)d.nbytes, (int)d.info.blocksize,
          (long long)chunk, (long long)block);
  return B2S_E_B2ND;
}

/* Decode every chunk; *total gets the sum of their sizes. */
static int check_chunks(cli_src *src, int64_t *total) {
  int64_t n = cli_src_nchunks(src), chunk, block;
  bool nd = b2nd_sizes(src, &chunk, &block) > 0;
  *total = 0;
  if (nd) {
    int32_t cs = b2s_frame_header_get(src->frame)->chunksize;
    if (cs > 0 && cs != chunk) {
      cli_err("%s: the header's chunksize is %d bytes, where the b2nd array's "
              "chunks are %lld: c-blosc2 cannot read it", src->path, (int)cs,
              (long long)chunk);
      return B2S_E_B2ND;
    }
  }
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *p;
    int rc = nd ? check_layout(src, i, chunk, block) : 0;
    if (rc < 0)
      return rc;
    int got = cli_src_decode(src, i, &p);
    if (got < 0)
      return got;
    *total += got;
  }
  return 0;
}

/* Every chunk as stored against the checksum of its record. */
static int check_records(cli_src *src, cli_recs *recs) {
  int64_t n = cli_src_nchunks(src), nr = recs->count;
  if (nr != n) {
    cli_err("%s: records frame holds %lld records for %lld chunks: %s",
            src->path, (long long)nr, (long long)n, b2s_strerror(B2S_E_PAIR));
    return B2S_E_PAIR;
  }
  for (int64_t i = 0; i < n; i++) {
    cli_chunk d;
    b2s_record r;
    int rc = cli_src_chunk(src, i, &d);
    if (rc < 0)
      return rc;
    if ((rc = cli_recs_get(src, recs, i, &r)) < 0)
      return rc;
    uint64_t h = b2s_chunk_xxh64(d.bytes, (size_t)d.cbytes);
    if (h != r.xxh64) {
      cli_err("%s: chunk %lld: %s (record %016llx, chunk %016llx)", src->path,
              (long long)i, b2s_strerror(B2S_E_CHECKSUM),
              (unsigned long long)r.xxh64, (unsigned long long)h);
      return B2S_E_CHECKSUM;
    }
  }
  return 0;
}

static int verify(cli_src *src, cli_recs *recs) {
  int64_t total;
  if (cli_recs_have(recs) && check_records(src, recs) < 0)
    return CLI_EXIT_FAIL;
  if (src->frame && check_b2nd(src) < 0)
    return CLI_EXIT_FAIL;
  if (check_chunks(src, &total) < 0)
    return CLI_EXIT_FAIL;
  if (src->frame) {
    const b2s_frame_header *h = b2s_frame_header_get(src->frame);
    if (total != h->nbytes) {
      cli_err("%s: chunks hold %lld bytes but the header says %lld (at byte "
              "%d)", src->path, (long long)total, (long long)h->nbytes,
              B2S_FRAME_OFF_NBYTES);
      return CLI_EXIT_FAIL;
    }
    if (check_vlmetas(src) < 0)
      return CLI_EXIT_FAIL;
  }
  printf("ok: %lld chunks, %lld bytes", (long long)cli_src_nchunks(src),
         (long long)total);
  if (cli_recs_have(recs))
    printf(", %lld checksums", (long long)recs->count);
  printf("\n");
  return CLI_EXIT_OK;
}

static int run(int argc, char **argv) {
  cli_src src;
  cli_src_line line;
  int opened = cli_src_open_args(argc, argv, 0, &src, &line);
  if (opened != CLI_EXIT_OK)
    return opened;
  cli_recs recs;
  int status = cli_recs_open(&src, &recs) < 0 ? CLI_EXIT_FAIL
                                              : verify(&src, &recs);
  cli_recs_close(&recs);
  cli_src_close(&src);
  if (!cli_flush_stdout())
    status = CLI_EXIT_FAIL;
  return status;
}

const cli_cmd cli_cmd_verify = {"verify", "decode everything, report problems",
                                help, run};
