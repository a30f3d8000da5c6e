/* b2stream info on a distributed frame: its parameters (NAME.meta), the
 * committed count, the closed flag, the series map and how many committed
 * chunks are gaps.  JSON keys documented in tools/README.md. */
#include <stdlib.h>

#include "cli.h"

typedef struct dist_facts {
  const b2s_dframe_params *p;
  int64_t gaps;
  uint8_t *series;
  size_t series_len;
  char filters[96];
} dist_facts;

/* Gap chunks among the committed ones, from their records. */
static int count_gaps(cli_src *src, int64_t *gaps) {
  cli_recs recs;
  int rc = cli_recs_open(src, &recs);
  *gaps = 0;
  for (int64_t i = 0; rc >= 0 && i < recs.count; i++) {
    b2s_record r;
    rc = cli_recs_get(src, &recs, i, &r);
    if (rc >= 0 && (r.flags & B2S_RECORD_GAP))
      (*gaps)++;
  }
  cli_recs_close(&recs);
  return rc < 0 ? rc : 0;
}

static int gather(cli_src *src, dist_facts *df) {
  df->p = b2s_dframe_params_get(src->dframe);
  cli_filters_str(df->p->cparams.filters, df->p->cparams.filters_meta,
                  df->filters, sizeof df->filters);
  int rc = b2s_dframe_series_get(src->dframe, &df->series, &df->series_len);
  if (rc < 0) {
    cli_err("%s: series metadata: %s", src->path, b2s_strerror(rc));
    return rc;
  }
  return count_gaps(src, &df->gaps);
}

static void params_json(cli_json *j, const dist_facts *df) {
  const b2s_cparams *cp = &df->p->cparams;
  cj_int(j, "typesize", cp->typesize);
  cj_str(j, "codec", cli_codec_name(cp->codec));
  cj_int(j, "compcode", cp->codec);
  cj_int(j, "clevel", cp->clevel);
  cj_arr_open(j, "filters", true);
  for (int k = 0; k < B2S_MAX_FILTERS; k++)
    cj_int(j, NULL, cp->filters[k]);
  cj_arr_close(j);
  cj_arr_open(j, "filters_meta", true);
  for (int k = 0; k < B2S_MAX_FILTERS; k++)
    cj_int(j, NULL, cp->filters_meta[k]);
  cj_arr_close(j);
  cj_str(j, "filters_str", df->filters);
  cj_str(j, "splitmode", cli_split_name(cp->splitmode));
  cj_int(j, "blocksize", cp->blocksize);
  cj_bool(j, "use_dict", cp->use_dict);
  cj_int(j, "chunk_nbytes", df->p->chunk_nbytes);
  cj_int(j, "ranks", df->p->ranks);
  cj_int(j, "frames_per_block", df->p->frames_per_block);
  cli_b2nd_json(j, df->p->has_b2nd ? &df->p->b2nd : NULL);
}

static void info_json(const cli_src *src, const dist_facts *df) {
  cli_json j;
  cj_init(&j, stdout);
  cj_obj_open(&j, NULL);
  cj_str(&j, "path", src->path);
  cj_str(&j, "kind", cli_kind_name(src->kind));
  cj_str(&j, "store", b2s_store_kind(src->store));
  cj_int(&j, "committed", src->committed);
  cj_bool(&j, "closed", src->closed);
  cj_int(&j, "gaps", df->gaps);
  cj_int(&j, "nbytes", src->committed * df->p->chunk_nbytes);
  params_json(&j, df);
  cli_series_json(&j, "series", df->series, df->series_len);
  cj_obj_close(&j);
  cj_end(&j);
}

static void info_text(const cli_src *src, const dist_facts *df) {
  const b2s_cparams *cp = &df->p->cparams;
  printf("path:         %s\n"
         "kind:         distributed frame (%s store)\n"
         "committed:    %lld chunks\nclosed:       %s\ngaps:         %lld\n"
         "nbytes:       %lld\nchunk_nbytes: %d\n"
         "ranks:        %d (%d frames per block)\n"
         "typesize:     %d\ncodec:        %s (clevel %d)\n"
         "filters:      %s\nsplitmode:    %s\nblocksize:    %d%s\n",
         src->path, b2s_store_kind(src->store), (long long)src->committed,
         src->closed ? "yes" : "no", (long long)df->gaps,
         (long long)(src->committed * df->p->chunk_nbytes),
         df->p->chunk_nbytes, df->p->ranks, df->p->frames_per_block,
         cp->typesize, cli_codec_name(cp->codec), cp->clevel, df->filters,
         cli_split_name(cp->splitmode), cp->blocksize,
         cp->blocksize ? "" : " (automatic)");
  if (df->p->has_b2nd)
    cli_b2nd_text(&df->p->b2nd);
  cli_series_text(df->series, df->series_len);
}

int cli_info_dist(cli_src *src, bool json) {
  dist_facts df = {0};
  int rc = gather(src, &df);
  if (rc >= 0)
    (json ? info_json : info_text)(src, &df);
  free(df.series);
  return rc < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
