/* b2stream ls: one line (or JSON object) per chunk.  The JSON keys are
 * documented in tools/README.md. */
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: b2stream ls PATH [--json] [--offset N | --ceph-conf FILE]\n"
    "\n"
    "List the chunks of a frame (or the one chunk of a chunk file): index,\n"
    "nbytes, cbytes, ratio, special kind (none/zeros/nan/uninit/value) and,\n"
    "for stored chunks, codec and filters.  Special index entries (chunks\n"
    "that occupy no space) show '-' as codec.  When the frame has a records\n"
    "frame (NAME.records.b2frame), each line also shows the producer's frame\n"
    "number, the timestamp (ns), the chunk's xxh64 checksum and whether the\n"
    "chunk is a gap ('-' for what the record does not give).\n"
    "\n"
    "  --json       print one JSON object (keys documented in tools/README.md)\n"
    "  --offset N   the contiguous frame starts at byte N of the file PATH\n"
    "               (a frame inside a larger file; units as pack's\n"
    "               --chunk-bytes)\n"
    CLI_DIST_HELP
    "For a distributed frame, one line per committed chunk with the record\n"
    "its index holds.\n";

static void record_json(cli_json *j, const b2s_record *r) {
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)r->xxh64);
  cj_obj_open(j, "record");
  if (r->has_frame)
    cj_raw_keyn(j, "frame", 5), fprintf(j->out, "%llu",
                                        (unsigned long long)r->frame);
  else
    cj_null(j, "frame");
  if (r->has_ts)
    cj_int(j, "ts", r->ts);
  else
    cj_null(j, "ts");
  cj_str(j, "xxh64", hex);
  cj_int(j, "flags", r->flags);
  cj_bool(j, "gap", r->flags & B2S_RECORD_GAP);
  cj_bool(j, "dropped", r->flags & B2S_RECORD_DROPPED);
  cj_bool(j, "rejected", r->flags & B2S_RECORD_REJECTED);
  if (r->user_kind == B2S_RECORD_USER_NONE) {
    cj_null(j, "user");
  } else {
    b2s_mpreader mr;
    /* a map as JSON; raw bytes as a string of hex digits */
    if (r->user_kind == B2S_RECORD_USER_MAP)
      b2s_mpreader_init(&mr, r->user, r->user_len);
    cj_raw_keyn(j, "user", 4);
    if (r->user_kind == B2S_RECORD_USER_MAP)
      cli_mp_json(j->out, &mr, B2S_MP_MAX_DEPTH);
    else {
      fputc('"', j->out);
      for (uint32_t k = 0; k < r->user_len; k++)
        fprintf(j->out, "%02x", r->user[k]);
      fputc('"', j->out);
    }
  }
  cj_obj_close(j);
}

static void chunk_json(cli_json *j, const cli_chunk *d, const b2s_record *r) {
  cj_obj_open(j, NULL);
  cj_int(j, "index", d->index);
  cj_int(j, "index_value", d->entry);
  cj_bool(j, "stored", d->stored);
  cj_int(j, "nbytes", d->nbytes);
  cj_int(j, "cbytes", d->cbytes);
  cj_ratio(j, "ratio", d->nbytes, d->nbytes ? d->cbytes : 0);
  cj_str(j, "special", cli_special_name(d->special));
  if (d->stored) {
    char filters[96];
    cli_filters_str(d->info.filters, d->info.filters_meta, filters,
                    sizeof filters);
    cj_str(j, "codec", cli_codec_name(d->info.codec));
    cj_int(j, "compcode", d->info.codec);
    cj_arr_open(j, "filters", true);
    for (int k = 0; k < B2S_MAX_FILTERS; k++)
      cj_int(j, NULL, d->info.filters[k]);
    cj_arr_close(j);
    cj_arr_open(j, "filters_meta", true);
    for (int k = 0; k < B2S_MAX_FILTERS; k++)
      cj_int(j, NULL, d->info.filters_meta[k]);
    cj_arr_close(j);
    cj_str(j, "filters_str", filters);
  }
  if (r != NULL)
    record_json(j, r);
  cj_obj_close(j);
}

static void record_text(const b2s_record *r) {
  char frame[24] = "-", ts[24] = "-";
  if (r->has_frame)
    snprintf(frame, sizeof frame, "%llu", (unsigned long long)r->frame);
  if (r->has_ts)
    snprintf(ts, sizeof ts, "%lld", (long long)r->ts);
  printf("  %10s %20s %016llx %s", frame, ts, (unsigned long long)r->xxh64,
         r->flags & B2S_RECORD_GAP ? "gap" : "-");
}

static void chunk_text(const cli_chunk *d, const b2s_record *r) {
  char filters[96] = "-", ratio[32] = "-";
  if (d->stored)
    cli_filters_str(d->info.filters, d->info.filters_meta, filters,
                    sizeof filters);
  if (d->nbytes > 0)
    snprintf(ratio, sizeof ratio, "%.3f", (double)d->nbytes / d->cbytes);
  /* without records the line ends with the filters, as it always did */
  printf("%8lld %11d %11d %8s  %-7s %-8s %-*s", (long long)d->index,
         d->nbytes, d->cbytes, ratio, cli_special_name(d->special),
         d->stored ? cli_codec_name(d->info.codec) : "-", r ? 14 : 0, filters);
  if (r != NULL)
    record_text(r);
  printf("\n");
}

/* With --json an error still ends in one valid JSON object: what could
 * be listed, then "error" with its code, message and (for a chunk) index.
 * The error line on stderr says the same for people. */
static void error_json(cli_json *j, int rc, int64_t index) {
  cj_obj_open(j, "error");
  cj_int(j, "code", rc);
  cj_str(j, "message", b2s_strerror(rc));
  if (index >= 0)
    cj_int(j, "index", index);
  cj_obj_close(j);
}

/* The JSON of a listing cut short by an error at chunk index. */
static void list_error_json(cli_json *j, int rc, int64_t index) {
  cj_arr_close(j);
  error_json(j, rc, index);
  cj_obj_close(j);
  cj_end(j);
}

static void header_text(bool records) {
  printf("%8s %11s %11s %8s  %-7s %-8s %-*s", "chunk", "nbytes", "cbytes",
         "ratio", "special", "codec", records ? 14 : 0, "filters");
  if (records)
    printf("  %10s %20s %-16s %s", "frame", "ts", "xxh64", "gap");
  printf("\n");
}

/* Record i, or an error when the records frame is shorter or damaged. */
static int record_at(cli_src *src, cli_recs *recs, int64_t i, b2s_record *r) {
  if (i >= recs->count) {
    cli_record_err(src, i, B2S_E_PAIR);
    return B2S_E_PAIR;
  }
  return cli_recs_get(src, recs, i, r);
}

static int list(cli_src *src, cli_recs *recs, bool json) {
  int64_t n = cli_src_nchunks(src);
  bool has = cli_recs_have(recs);
  cli_json j;
  if (json) {
    cj_init(&j, stdout);
    cj_obj_open(&j, NULL);
    cj_str(&j, "path", src->path);
    cj_str(&j, "kind", cli_kind_name(src->kind));
    cj_int(&j, "nchunks", n);
    cj_bool(&j, "records", has);
    cj_arr_open(&j, "chunks", false);
  } else {
    header_text(has);
  }
  for (int64_t i = 0; i < n; i++) {
    cli_chunk d;
    b2s_record r;
    int rc = cli_src_chunk(src, i, &d);
    if (rc >= 0 && has)
      rc = record_at(src, recs, i, &r);
    if (rc < 0) {             /* partial output: the error line says why */
      if (json)
        list_error_json(&j, rc, i);
      return CLI_EXIT_FAIL;
    }
    if (json)
      chunk_json(&j, &d, has ? &r : NULL);
    else
      chunk_text(&d, has ? &r : NULL);
  }
  if (json) {
    cj_arr_close(&j);
    cj_obj_close(&j);
    cj_end(&j);
  }
  return CLI_EXIT_OK;
}

/* A frame that does not open, as JSON. */
static void open_error_json(const char *path, int rc) {
  cli_json j;
  cj_init(&j, stdout);
  cj_obj_open(&j, NULL);
  cj_str(&j, "path", path);
  error_json(&j, rc, -1);
  cj_obj_close(&j);
  cj_end(&j);
}

static int run(int argc, char **argv) {
  cli_src src;
  cli_src_line line;
  int opened = cli_src_open_args(argc, argv, CLI_LINE_JSON, &src, &line);
  if (opened == CLI_EXIT_FAIL && line.open_rc < 0 && line.json) {
    open_error_json(line.path, line.open_rc);
    cli_flush_stdout();
  }
  if (opened != CLI_EXIT_OK)
    return opened;
  cli_recs recs;
  int status = cli_recs_open(&src, &recs) < 0 ? CLI_EXIT_FAIL
                                              : list(&src, &recs, line.json);
  cli_recs_close(&recs);
  cli_src_close(&src);
  if (!cli_flush_stdout())
    status = CLI_EXIT_FAIL;
  return status;
}

const cli_cmd cli_cmd_ls = {"ls", "list the chunks", help, run};
