/* b2stream ls: one line (or JSON object) per chunk.  The JSON keys are
 * documented in tools/README.md. */
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: b2stream ls PATH [--json] [--offset N]\n"
    "\n"
    "List the chunks of a frame (or the one chunk of a chunk file): index,\n"
    "nbytes, cbytes, ratio, special kind (none/zeros/nan/uninit/value) and,\n"
    "for stored chunks, codec and filters.  Special index entries (chunks\n"
    "that occupy no space) show '-' as codec.\n"
    "\n"
    "  --json       print one JSON object (keys documented in tools/README.md)\n"
    "  --offset N   the contiguous frame starts at byte N of the file PATH\n"
    "               (a frame inside a larger file; units as pack's\n"
    "               --chunk-bytes)\n";

static void chunk_json(cli_json *j, const cli_chunk *d) {
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
  cj_obj_close(j);
}

static void chunk_text(const cli_chunk *d) {
  char filters[96] = "-", ratio[32] = "-";
  if (d->stored)
    cli_filters_str(d->info.filters, d->info.filters_meta, filters,
                    sizeof filters);
  if (d->nbytes > 0)
    snprintf(ratio, sizeof ratio, "%.3f", (double)d->nbytes / d->cbytes);
  printf("%8lld %11d %11d %8s  %-7s %-8s %s\n", (long long)d->index, d->nbytes,
         d->cbytes, ratio, cli_special_name(d->special),
         d->stored ? cli_codec_name(d->info.codec) : "-", filters);
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

static int list(cli_src *src, bool json) {
  int64_t n = cli_src_nchunks(src);
  cli_json j;
  if (json) {
    cj_init(&j, stdout);
    cj_obj_open(&j, NULL);
    cj_str(&j, "path", src->path);
    cj_str(&j, "kind", cli_kind_name(src->kind));
    cj_int(&j, "nchunks", n);
    cj_arr_open(&j, "chunks", false);
  } else {
    printf("%8s %11s %11s %8s  %-7s %-8s %s\n", "chunk", "nbytes", "cbytes",
           "ratio", "special", "codec", "filters");
  }
  for (int64_t i = 0; i < n; i++) {
    cli_chunk d;
    int rc = cli_src_chunk(src, i, &d);
    if (rc < 0) {             /* partial output: the error line says why */
      if (json) {
        cj_arr_close(&j);
        error_json(&j, rc, i);
        cj_obj_close(&j);
        cj_end(&j);
      }
      return CLI_EXIT_FAIL;
    }
    if (json)
      chunk_json(&j, &d);
    else
      chunk_text(&d);
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
  int status = list(&src, line.json);
  cli_src_close(&src);
  if (!cli_flush_stdout())
    status = CLI_EXIT_FAIL;
  return status;
}

const cli_cmd cli_cmd_ls = {"ls", "list the chunks", help, run};
