/* b2stream info: what a frame or a chunk file holds, as text or JSON.
 * The JSON keys are documented in tools/README.md; keep the two in step
 * (keys may be added, never renamed or removed). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: b2stream info PATH [--json] [--offset N | --ceph-conf FILE]\n"
    "\n"
    "Describe a contiguous frame (file), a sparse frame (directory) or a\n"
    "single chunk file: chunk count, typesize, compression defaults, sizes\n"
    "and ratio, chunksize, metalayers (the b2nd array layout decoded),\n"
    "vlmetalayers, unreferenced bytes (holes) and the size on disk.\n"
    "\n"
    "  --json       print one JSON object (keys documented in tools/README.md)\n"
    "  --offset N   the contiguous frame starts at byte N of the file PATH\n"
    "               (a frame inside a larger file; units as pack's\n"
    "               --chunk-bytes)\n"
    CLI_DIST_HELP
    "A distributed frame shows its parameters, the committed count, whether\n"
    "it is closed, how many committed chunks are gaps and the series map.\n";

typedef struct frame_facts {
  const b2s_frame_header *h;
  int64_t nchunks, file_size, stored, holes;
  int64_t index_offset, trailer_offset, trailer_len;
  int32_t index_cbytes;
  bool has_b2nd;
  b2s_b2nd nd;
  uint8_t *series;                 /* the series map (empty: 0x80) */
  size_t series_len;
  char filters[96];
} frame_facts;

static const char *chunksize_kind(int32_t chunksize) {
  return chunksize > 0 ? "fixed" : chunksize == 0 ? "variable" : "unset";
}

/* Decoded size of a vlmetalayer from its stored chunk's header, or -1. */
static int64_t vlmeta_size(const b2s_frame_meta *m) {
  b2s_chunk_info info;
  if (b2s_chunk_info_get(m->content, (size_t)m->len, &info) < 0)
    return -1;
  return info.nbytes;
}

/* ---- chunk file ---------------------------------------------------------- */

static void chunk_json(const cli_src *src, const b2s_chunk_info *ci) {
  char filters[96];
  cli_filters_str(ci->filters, ci->filters_meta, filters, sizeof filters);
  cli_json j;
  cj_init(&j, stdout);
  cj_obj_open(&j, NULL);
  cj_str(&j, "path", src->path);
  cj_str(&j, "kind", "chunk");
  cj_int(&j, "version", ci->version);
  cj_int(&j, "versionlz", ci->versionlz);
  cj_int(&j, "flags", ci->flags);
  cj_int(&j, "header_len", ci->header_len);
  cj_int(&j, "nbytes", ci->nbytes);
  cj_int(&j, "cbytes", ci->cbytes);
  cj_ratio(&j, "ratio", ci->nbytes, ci->cbytes);
  cj_int(&j, "typesize", ci->typesize);
  cj_int(&j, "blocksize", ci->blocksize);
  cj_int(&j, "nblocks", ci->nblocks);
  cj_str(&j, "codec", cli_codec_name(ci->codec));
  cj_int(&j, "compcode", ci->codec);
  cj_int(&j, "compformat", ci->compformat);
  cj_bool(&j, "dont_split", ci->dont_split);
  cj_bool(&j, "memcpyed", ci->memcpyed);
  cj_str(&j, "special", cli_special_name(ci->special));
  cj_bool(&j, "use_dict", ci->use_dict);
  cj_bool(&j, "vl_blocks", ci->vl_blocks);
  cj_arr_open(&j, "filters", true);
  for (int k = 0; k < B2S_MAX_FILTERS; k++)
    cj_int(&j, NULL, ci->filters[k]);
  cj_arr_close(&j);
  cj_arr_open(&j, "filters_meta", true);
  for (int k = 0; k < B2S_MAX_FILTERS; k++)
    cj_int(&j, NULL, ci->filters_meta[k]);
  cj_arr_close(&j);
  cj_str(&j, "filters_str", filters);
  cj_int(&j, "blosc2_flags", ci->blosc2_flags);
  cj_int(&j, "blosc2_flags2", ci->blosc2_flags2);
  cj_int(&j, "file_size", (int64_t)src->chunk_len);
  cj_obj_close(&j);
  cj_end(&j);
}

static void chunk_text(const cli_src *src, const b2s_chunk_info *ci) {
  char filters[96];
  cli_filters_str(ci->filters, ci->filters_meta, filters, sizeof filters);
  printf("path:         %s\n"
         "kind:         chunk (format version %d, %d-byte header)\n"
         "nbytes:       %d\ncbytes:       %d\n",
         src->path, ci->version, ci->header_len, ci->nbytes, ci->cbytes);
  if (ci->cbytes > 0)
    printf("ratio:        %.3f\n", (double)ci->nbytes / ci->cbytes);
  printf("typesize:     %d\nblocksize:    %d (%d blocks)\n"
         "codec:        %s (code %d)\nsplit:        %s\nmemcpy:       %s\n"
         "special:      %s\ndictionary:   %s\nvl_blocks:    %s\n"
         "filters:      %s\nfile_size:    %zu\n",
         ci->typesize, ci->blocksize, ci->nblocks, cli_codec_name(ci->codec),
         ci->codec, ci->dont_split ? "no" : "yes", ci->memcpyed ? "yes" : "no",
         cli_special_name(ci->special), ci->use_dict ? "yes" : "no",
         ci->vl_blocks ? "yes" : "no", filters, src->chunk_len);
}

/* ---- frames --------------------------------------------------------------- */

static void metas_json(cli_json *j, const b2s_frame *f) {
  const b2s_frame_metas *m = b2s_frame_metalayers(f);
  cj_arr_open(j, "metalayers", false);
  for (int32_t k = 0; k < m->n; k++) {
    cj_obj_open(j, NULL);
    cj_str(j, "name", m->items[k].name);
    cj_int(j, "size", m->items[k].len);
    cj_obj_close(j);
  }
  cj_arr_close(j);
}

static void vlmetas_json(cli_json *j, const b2s_frame *f) {
  const b2s_frame_metas *m = b2s_frame_vlmetalayers(f);
  cj_arr_open(j, "vlmetalayers", false);
  for (int32_t k = 0; k < m->n; k++) {
    int64_t size = vlmeta_size(&m->items[k]);
    cj_obj_open(j, NULL);
    cj_str(j, "name", m->items[k].name);
    if (size >= 0)
      cj_int(j, "size", size);
    else
      cj_null(j, "size");
    cj_int(j, "stored_size", m->items[k].len);
    cj_obj_close(j);
  }
  cj_arr_close(j);
}

static void frame_json(const cli_src *src, const frame_facts *ff) {
  const b2s_frame_header *h = ff->h;
  cli_json j;
  cj_init(&j, stdout);
  cj_obj_open(&j, NULL);
  cj_str(&j, "path", src->path);
  cj_str(&j, "kind", cli_kind_name(src->kind));
  cj_int(&j, "offset", src->offset);
  cj_int(&j, "format_version", h->general_flags & B2S_FRAME_GF_VERSION_MASK);
  cj_int(&j, "nchunks", ff->nchunks);
  cj_int(&j, "typesize", h->typesize);
  cj_str(&j, "codec", cli_codec_name(h->codec_flags & 0x0f));
  cj_int(&j, "compcode", h->codec_flags & 0x0f);
  cj_int(&j, "clevel", h->codec_flags >> 4);
  cj_arr_open(&j, "filters", true);
  for (int k = 0; k < B2S_FRAME_NFILTERS; k++)
    cj_int(&j, NULL, h->filters[k]);
  cj_arr_close(&j);
  cj_arr_open(&j, "filters_meta", true);
  for (int k = 0; k < B2S_FRAME_NFILTERS; k++)
    cj_int(&j, NULL, h->filters_meta[k]);
  cj_arr_close(&j);
  cj_str(&j, "filters_str", ff->filters);
  cj_str(&j, "splitmode", cli_split_name((h->other_flags & 0x07) + 1));
  cj_int(&j, "blocksize", h->blocksize);
  cj_bool(&j, "use_dict", h->other_flags2 & 1);
  cj_int(&j, "nbytes", h->nbytes);
  cj_int(&j, "cbytes", ff->stored);
  cj_ratio(&j, "ratio", h->nbytes, ff->stored);
  cj_int(&j, "chunksize", h->chunksize);
  cj_str(&j, "chunksize_kind", chunksize_kind(h->chunksize));
  cj_int(&j, "header_len", h->header_len);
  cj_int(&j, "frame_len", h->frame_len);
  cj_int(&j, "data_bytes", h->cbytes);
  cj_int(&j, "holes", ff->holes);
  cj_int(&j, "file_size", ff->file_size);
  cj_int(&j, "index_offset", ff->index_offset);
  cj_int(&j, "index_cbytes", ff->index_cbytes);
  cj_int(&j, "trailer_offset", ff->trailer_offset);
  cj_int(&j, "trailer_len", ff->trailer_len);
  metas_json(&j, src->frame);
  cli_b2nd_json(&j, ff->has_b2nd ? &ff->nd : NULL);
  vlmetas_json(&j, src->frame);
  cli_series_json(&j, "series", ff->series, ff->series_len);
  cj_obj_close(&j);
  cj_end(&j);
}

static void frame_text_metas(const b2s_frame *f, const frame_facts *ff) {
  const b2s_frame_metas *m = b2s_frame_metalayers(f);
  printf("metalayers:   %d\n", m->n);
  for (int32_t k = 0; k < m->n; k++)
    printf("  %-31s %d bytes\n", m->items[k].name, m->items[k].len);
  if (ff->has_b2nd)
    cli_b2nd_text(&ff->nd);
  m = b2s_frame_vlmetalayers(f);
  printf("vlmetalayers: %d\n", m->n);
  for (int32_t k = 0; k < m->n; k++)
    printf("  %-31s %lld bytes (%d stored)\n", m->items[k].name,
           (long long)vlmeta_size(&m->items[k]), m->items[k].len);
}

static void frame_text(const cli_src *src, const frame_facts *ff) {
  const b2s_frame_header *h = ff->h;
  printf("path:         %s\n", src->path);
  if (src->offset > 0)
    printf("offset:       %lld (where the frame starts in the file)\n",
           (long long)src->offset);
  printf("kind:         %s frame (format version %d)\n"
         "nchunks:      %lld\ntypesize:     %d\n"
         "codec:        %s (clevel %d)\nfilters:      %s\n"
         "splitmode:    %s\nblocksize:    %d%s\n"
         "nbytes:       %lld\ncbytes:       %lld\n",
         src->kind == CLI_KIND_SFRAME ? "sparse" : "contiguous",
         h->general_flags & B2S_FRAME_GF_VERSION_MASK, (long long)ff->nchunks,
         h->typesize, cli_codec_name(h->codec_flags & 0x0f),
         h->codec_flags >> 4, ff->filters,
         cli_split_name((h->other_flags & 0x07) + 1), h->blocksize,
         h->blocksize ? "" : " (automatic)", (long long)h->nbytes,
         (long long)ff->stored);
  if (ff->stored > 0)
    printf("ratio:        %.3f\n", (double)h->nbytes / (double)ff->stored);
  printf("chunksize:    %d (%s)\n"
         "header_len:   %d\ndata_bytes:   %lld\nholes:        %lld\n"
         "file_size:    %lld\n",
         h->chunksize, chunksize_kind(h->chunksize), h->header_len,
         (long long)h->cbytes, (long long)ff->holes,
         (long long)ff->file_size);
  frame_text_metas(src->frame, ff);
  cli_series_text(ff->series, ff->series_len);
}

static const uint8_t empty_series[1] = {B2S_MP_FIXMAP};

static void frame_facts_fini(frame_facts *ff) {
  if (ff->series != empty_series)
    free(ff->series);
}

/* Gather the facts; a malformed b2nd metalayer is reported (returns 1)
 * without stopping the rest. */
static int frame_gather(cli_src *src, frame_facts *ff) {
  b2s_frame *f = src->frame;
  memset(ff, 0, sizeof *ff);
  ff->h = b2s_frame_header_get(f);
  ff->nchunks = b2s_frame_nchunks(f);
  b2s_frame_layout(f, &ff->index_offset, &ff->index_cbytes,
                   &ff->trailer_offset, &ff->trailer_len);
  cli_filters_str(ff->h->filters, ff->h->filters_meta, ff->filters,
                  sizeof ff->filters);
  if (cli_src_space(src, &ff->file_size, &ff->stored, &ff->holes) < 0)
    return -1;
  int rc = b2s_frame_series_get(f, &ff->series, &ff->series_len);
  if (rc < 0) {
    /* shown as an empty map; the error line says why */
    cli_err("%s: series metadata: %s", src->path, b2s_strerror(rc));
    ff->series = (uint8_t *)empty_series;
    ff->series_len = 1;
    return 1;
  }
  rc = b2s_frame_b2nd_get(f, &ff->nd);
  ff->has_b2nd = rc == 0;
  if (rc < 0 && rc != B2S_E_NOTFOUND) {
    cli_src_frame_err(src, rc);
    return 1;
  }
  return 0;
}

static int run(int argc, char **argv) {
  cli_src src;
  cli_src_line line;
  int opened = cli_src_open_args(argc, argv, CLI_LINE_JSON, &src, &line);
  if (opened != CLI_EXIT_OK)
    return opened;
  bool json = line.json;
  int status = CLI_EXIT_OK;
  if (src.kind == CLI_KIND_DFRAME) {
    status = cli_info_dist(&src, json);
  } else if (src.kind == CLI_KIND_CHUNK) {
    b2s_chunk_info ci;
    b2s_chunk_info_get(src.chunk, src.chunk_len, &ci);  /* checked at open */
    (json ? chunk_json : chunk_text)(&src, &ci);
  } else {
    frame_facts ff;
    int rc = frame_gather(&src, &ff);
    if (rc >= 0)
      (json ? frame_json : frame_text)(&src, &ff);
    frame_facts_fini(&ff);
    status = rc == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
  }
  cli_src_close(&src);
  if (!cli_flush_stdout())
    status = CLI_EXIT_FAIL;
  return status;
}

const cli_cmd cli_cmd_info = {"info", "describe a frame or chunk file", help,
                              run};
