/* NumPy's .npy format (version 1-3; numpy/lib/format.py describes it) for
 * the XDS plugin checks: integer arrays of up to three dimensions, C
 * order, either byte order. */
#ifndef XDS_NPY_H
#define XDS_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct xds_npy {
  int ndim;
  size_t shape[3];
  int itemsize;                    /* 1, 2, 4 or 8 */
  bool is_signed, big_endian;
  uint8_t *data;
} xds_npy;

/* Read path, which must hold an integer array of ndim dimensions; 0, or
 * -1 with the reason on stderr. */
int xds_npy_read(const char *path, xds_npy *a, int ndim);
void xds_npy_free(xds_npy *a);
/* Item i (C order) as its bits, zero-extended. */
uint64_t xds_npy_item(const xds_npy *a, size_t i);
/* Write n little-endian items of itemsize bytes as a .npy of shape[ndim]
 * ("<u2", "|u1"...: descr); 0 or -1. */
int xds_npy_write(const char *path, const char *descr, const size_t *shape,
                  int ndim, const void *data);

#endif
