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

int cli_records_open(const cli_src *src, b2s_records **out) {
  *out = NULL;
  if (src->frame == NULL || src->offset > 0)
    return 0;
  b2s_frame_error err;
  b2s_frame_error_clear(&err);
  int rc = b2s_records_open(src->path, out, &err);
  if (rc == -ENOENT)
    return 0;
  if (rc < 0) {
    char rpath[4096];
    b2s_records_path(src->path, rpath, sizeof rpath);
    cli_err_frame(rpath, &err, rc, -1);
  }
  return rc;
}

void cli_record_err(const cli_src *src, int64_t i, int code) {
  cli_err("%s: record of chunk %lld: %s", src->path, (long long)i,
          b2s_strerror(code));
}
