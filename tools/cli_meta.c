/* Acquisition metadata for the tool: msgpack values as JSON (series
 * metadata, record user parts) and opening a frame's records (cli.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void hex_string(FILE *out, const uint8_t *p, uint32_t n) {
  fputc('"', out);
  for (uint32_t k = 0; k < n; k++)
    fprintf(out, "%02x", p[k]);
  fputc('"', out);
}

static void float_json(FILE *out, double f) {
  if (isfinite(f))
    fprintf(out, "%.17g", f);
  else
    fputs("null", out);
}

/* A map key: a string as it is, anything else as the string of its JSON. */
static int key_json(FILE *out, b2s_mpreader *r, int depth) {
  size_t start = r->pos;
  b2s_mpval v;
  int rc = b2s_mp_read_any(r, &v);
  if (rc < 0)
    return rc;
  if (v.type == B2S_MPT_STR) {
    cli_json_string(out, (const char *)v.p, v.n);
    return 0;
  }
  r->pos = start;
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (m == NULL)
    return -errno;
  rc = cli_mp_json(m, r, depth);
  fclose(m);
  if (rc == 0)
    cli_json_string(out, text, len);
  free(text);
  return rc;
}

static int container_json(FILE *out, b2s_mpreader *r, const b2s_mpval *v,
                          int depth) {
  bool map = v->type == B2S_MPT_MAP;
  if (depth <= 1 && v->n > 0)
    return B2S_E_MSGPACK;
  fputc(map ? '{' : '[', out);
  int rc = 0;
  for (uint32_t k = 0; rc == 0 && k < v->n; k++) {
    if (k > 0)
      fputs(", ", out);
    if (map) {
      rc = key_json(out, r, depth - 1);
      if (rc < 0)
        break;
      fputs(": ", out);
    }
    rc = cli_mp_json(out, r, depth - 1);
  }
  fputc(map ? '}' : ']', out);
  return rc;
}

int cli_mp_json(FILE *out, b2s_mpreader *r, int depth) {
  b2s_mpval v;
  int rc = b2s_mp_read_any(r, &v);
  if (rc < 0)
    return rc;
  switch (v.type) {
  case B2S_MPT_NIL: fputs("null", out); break;
  case B2S_MPT_BOOL: fputs(v.b ? "true" : "false", out); break;
  case B2S_MPT_UINT: fprintf(out, "%" PRIu64, v.u); break;
  case B2S_MPT_INT: fprintf(out, "%" PRId64, v.i); break;
  case B2S_MPT_FLOAT: float_json(out, v.f); break;
  case B2S_MPT_STR: cli_json_string(out, (const char *)v.p, v.n); break;
  case B2S_MPT_BIN: hex_string(out, v.p, v.n); break;
  case B2S_MPT_EXT: fputs("null", out); break;
  default:
    /* a count beyond the bytes left cannot be real */
    if ((uint64_t)v.n > b2s_mpreader_left(r))
      return B2S_E_TRUNCATED;
    return container_json(out, r, &v, depth);
  }
  return 0;
}

int cli_recs_open(const cli_src *src, cli_recs *r) {
  *r = (cli_recs){.frame = NULL, .dframe = src->dframe, .count = -1};
  if (src->dframe != NULL) {
    r->count = src->committed;
    return 0;
  }
  if (src->frame == NULL || src->offset > 0)
    return 0;
  b2s_frame_error err;
  b2s_frame_error_clear(&err);
  int rc = b2s_records_open(src->path, &r->frame, &err);
  if (rc == -ENOENT)
    return 0;
  if (rc < 0) {
    char rpath[4096];
    b2s_records_path(src->path, rpath, sizeof rpath);
    cli_err_frame(rpath, &err, rc, -1);
    return rc;
  }
  r->count = b2s_records_count(r->frame);
  return 0;
}

int cli_recs_get(const cli_src *src, cli_recs *r, int64_t i, b2s_record *rec) {
  int rc = r->dframe ? b2s_dframe_record_get(r->dframe, i, rec)
                     : b2s_records_get(r->frame, i, rec);
  if (rc < 0)
    cli_record_err(src, i, rc);
  return rc;
}

void cli_recs_close(cli_recs *r) {
  b2s_records_free(r->frame);
  *r = (cli_recs){.frame = NULL, .dframe = NULL, .count = -1};
}

void cli_record_err(const cli_src *src, int64_t i, int code) {
  cli_err("%s: record of chunk %lld: %s", src->path, (long long)i,
          b2s_strerror(code));
}

/* ---- series maps ------------------------------------------------------------ */

/* The entries of a series map: each key, then its value via `entry`. */
static void series_each(const uint8_t *map, size_t len, void *arg,
                        void (*entry)(void *arg, const b2s_mpval *key,
                                      b2s_mpreader *r)) {
  b2s_mpreader r;
  b2s_mpval v, key;
  b2s_mpreader_init(&r, map, len);
  if (b2s_mp_read_any(&r, &v) < 0)
    return;                        /* checked when read */
  for (uint32_t k = 0; k < v.n && b2s_mp_read_any(&r, &key) == 0; k++)
    entry(arg, &key, &r);
}

static void series_entry_json(void *arg, const b2s_mpval *key,
                              b2s_mpreader *r) {
  cli_json *j = arg;
  cj_raw_keyn(j, (const char *)key->p, key->n);
  cli_mp_json(j->out, r, B2S_MP_MAX_DEPTH);
}

static void series_entry_text(void *arg, const b2s_mpval *key,
                              b2s_mpreader *r) {
  (void)arg;
  printf("  %-31.*s ", (int)key->n, (const char *)key->p);
  cli_mp_json(stdout, r, B2S_MP_MAX_DEPTH);
  printf("\n");
}

void cli_series_json(cli_json *j, const char *key, const uint8_t *map,
                     size_t len) {
  cj_obj_open(j, key);
  series_each(map, len, j, series_entry_json);
  cj_obj_close(j);
}

void cli_series_text(const uint8_t *map, size_t len) {
  b2s_mpreader r;
  b2s_mpval v;
  b2s_mpreader_init(&r, map, len);
  printf("series:       %u keys\n", b2s_mp_read_any(&r, &v) == 0 ? v.n : 0);
  series_each(map, len, NULL, series_entry_text);
}

/* ---- the b2nd metalayer ------------------------------------------------------ */

static void ints_json(cli_json *j, const char *key, const int64_t *v64,
                      const int32_t *v32, int n) {
  cj_arr_open(j, key, true);
  for (int k = 0; k < n; k++)
    cj_int(j, NULL, v64 ? v64[k] : v32[k]);
  cj_arr_close(j);
}

void cli_b2nd_json(cli_json *j, const b2s_b2nd *nd) {
  if (nd == NULL) {
    cj_null(j, "b2nd");
    return;
  }
  cj_obj_open(j, "b2nd");
  cj_int(j, "version", nd->version);
  cj_int(j, "ndim", nd->ndim);
  ints_json(j, "shape", nd->shape, NULL, nd->ndim);
  ints_json(j, "chunkshape", NULL, nd->chunkshape, nd->ndim);
  ints_json(j, "blockshape", NULL, nd->blockshape, nd->ndim);
  if (nd->has_dtype)
    cj_strn(j, "dtype", nd->dtype, nd->dtype_len);
  else
    cj_null(j, "dtype");
  cj_int(j, "dtype_format", nd->dtype_format);
  cj_obj_close(j);
}

static void print_dims64(const char *label, const int64_t *v, int n) {
  printf("%s", label);
  for (int k = 0; k < n; k++)
    printf("%s%lld", k ? " x " : "", (long long)v[k]);
}

static void print_dims32(const char *label, const int32_t *v, int n) {
  printf("%s", label);
  for (int k = 0; k < n; k++)
    printf("%s%d", k ? " x " : "", v[k]);
}

void cli_b2nd_text(const b2s_b2nd *nd) {
  print_dims64("b2nd:         shape ", nd->shape, nd->ndim);
  print_dims32(", chunks ", nd->chunkshape, nd->ndim);
  print_dims32(", blocks ", nd->blockshape, nd->ndim);
  if (nd->has_dtype)
    printf(", dtype %.*s", (int)nd->dtype_len, nd->dtype);
  printf("\n");
}
