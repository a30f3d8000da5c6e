/* .npy files: the magic, a version, the header's length and a Python
 * dict literal ('descr', 'fortran_order', 'shape'), then the items. */
#include "xds_npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(const char *path, const char *why) {
  fprintf(stderr, "%s: %s\n", path, why);
  return -1;
}

/* The value after 'key': in the header dict, or NULL. */
static const char *field(const char *h, const char *key) {
  char k[32];
  snprintf(k, sizeof k, "'%s':", key);
  const char *p = strstr(h, k);
  if (!p)
    return NULL;
  p += strlen(k);
  while (*p == ' ')
    p++;
  return p;
}

static int parse_descr(const char *path, const char *p, xds_npy *a) {
  if (!p || p[0] != '\'' || !strchr("<>|=", p[1]) || !strchr("ui", p[2]) ||
      !strchr("1248", p[3]) || p[4] != '\'')
    return bad(path, "not an array of integers (descr)");
  a->big_endian = p[1] == '>';
  a->is_signed = p[2] == 'i';
  a->itemsize = p[3] - '0';
  return 0;
}

static int parse_shape(const char *path, const char *p, xds_npy *a, int ndim) {
  if (!p || *p++ != '(')
    return bad(path, "no shape");
  a->ndim = 0;
  while (*p && *p != ')') {
    char *end;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p || a->ndim == 3)
      return bad(path, "shape not of up to three numbers");
    a->shape[a->ndim++] = (size_t)v;
    p = end;
    while (*p == ',' || *p == ' ')
      p++;
  }
  if (a->ndim != ndim) {
    fprintf(stderr, "%s: %d dimensions, not %d\n", path, a->ndim, ndim);
    return -1;
  }
  return 0;
}

static int parse_header(const char *path, FILE *f, xds_npy *a, int ndim) {
  unsigned char m[12];
  if (fread(m, 1, 10, f) != 10 || memcmp(m, "\x93NUMPY", 6))
    return bad(path, "not a .npy file");
  size_t hlen = m[8] | (size_t)m[9] << 8;
  if (m[6] >= 2) {
    if (fread(m + 10, 1, 2, f) != 2)
      return bad(path, "short header");
    hlen |= (size_t)m[10] << 16 | (size_t)m[11] << 24;
  }
  if (hlen > 65536)
    return bad(path, "header too long");
  char *h = calloc(1, hlen + 1);
  if (!h || fread(h, 1, hlen, f) != hlen) {
    free(h);
    return bad(path, "short header");
  }
  const char *fo = field(h, "fortran_order");
  int rc = parse_descr(path, field(h, "descr"), a);
  if (rc == 0 && (!fo || strncmp(fo, "False", 5)))
    rc = bad(path, "not in C order");
  if (rc == 0)
    rc = parse_shape(path, field(h, "shape"), a, ndim);
  free(h);
  return rc;
}

int xds_npy_read(const char *path, xds_npy *a, int ndim) {
  memset(a, 0, sizeof *a);
  FILE *f = fopen(path, "rb");
  if (!f)
    return bad(path, "cannot open");
  int rc = parse_header(path, f, a, ndim);
  size_t n = 1;
  for (int d = 0; rc == 0 && d < a->ndim; d++)
    n *= a->shape[d];
  if (rc == 0 && !(a->data = malloc(n * (size_t)a->itemsize + 1)))
    rc = bad(path, "out of memory");
  if (rc == 0 && fread(a->data, (size_t)a->itemsize, n, f) != n)
    rc = bad(path, "fewer items than its shape says");
  fclose(f);
  if (rc)
    xds_npy_free(a);
  return rc;
}

void xds_npy_free(xds_npy *a) {
  free(a->data);
  a->data = NULL;
}

uint64_t xds_npy_item(const xds_npy *a, size_t i) {
  const uint8_t *p = a->data + i * (size_t)a->itemsize;
  uint64_t v = 0;
  for (int k = 0; k < a->itemsize; k++) {
    int at = a->big_endian ? k : a->itemsize - 1 - k;
    v = v << 8 | p[at];
  }
  return v;
}

int xds_npy_write(const char *path, const char *descr, const size_t *shape,
                  int ndim, const void *data) {
  char dims[96] = "", h[256];
  size_t n = 1;
  for (int d = 0; d < ndim; d++) {
    size_t l = strlen(dims);
    snprintf(dims + l, sizeof dims - l, "%zu,%s", shape[d],
             d + 1 < ndim ? " " : "");
    n *= shape[d];
  }
  if (ndim > 1)
    dims[strlen(dims) - 1] = '\0';      /* (a,) only for one dimension */
  int hl = snprintf(h, sizeof h,
                    "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                    descr, dims);
  int total = (10 + hl + 1 + 63) / 64 * 64;     /* padded, '\n' last */
  memset(h + hl, ' ', (size_t)(total - 10 - hl));
  h[total - 10 - 1] = '\n';
  unsigned char m[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                         (unsigned char)((total - 10) & 0xff),
                         (unsigned char)((total - 10) >> 8)};
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  size_t isz = (size_t)(descr[2] - '0');
  int rc = fwrite(m, 1, 10, f) == 10 &&
                   fwrite(h, 1, (size_t)(total - 10), f) == (size_t)(total - 10) &&
                   fwrite(data, isz, n, f) == n
               ? 0 : -1;
  return fclose(f) == 0 ? rc : -1;
}
