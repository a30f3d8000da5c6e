/* The dectris layout of b2stream export (docs/EXPORT.md 2.3): the master
 * file OUT holds the NXmx metadata and /entry/data/data_NNNNNN, external
 * links to the data files NAME_data_NNNNNN.h5 beside it, each with a
 * fixed-shape /entry/data/data of at most --images-per-file images, as a
 * DECTRIS detector writes them.  Durin's own bitshuffle+LZ4 decoder serves
 * only such datasets. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd_export.h"

/* NAME_data_NNNNNN.h5 for OUT NAME_master.h5 (else OUT without its .h5,
 * .hdf5 or .nxs). */
static char *data_name(const char *out, int k) {
  size_t n = strlen(out);
  static const char *const ends[] = {"_master.h5", ".h5", ".hdf5", ".nxs"};
  for (size_t e = 0; e < sizeof ends / sizeof ends[0]; e++) {
    size_t m = strlen(ends[e]);
    if (n > m && !strcmp(out + n - m, ends[e])) {
      n -= m;
      break;
    }
  }
  char *s = malloc(n + 32);
  if (s)
    snprintf(s, n + 32, "%.*s_data_%06d.h5", (int)n, out, k);
  return s;
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* Data file k of images [first, first + count). */
static int data_file(cli_exp_job *j, int k, int64_t first, int64_t count,
                     const cli_chunk *c) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110);
  j->dfile[k] = H5Fcreate(j->dname[k], H5F_ACC_EXCL, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  if (j->dfile[k] < 0) {
    cli_err("%s: cannot create the HDF5 file (it must not exist)", j->dname[k]);
    return -1;
  }
  cli_exp_shape sh = j->sh;
  sh.dims[0] = (hsize_t)count;
  hid_t entry = cli_exp_h5_group(j->dfile[k], "entry", "NXentry");
  hid_t data = entry >= 0 ? cli_exp_h5_group(entry, "data", "NXdata") : -1;
  int rc = data >= 0 && cli_exp_h5_attr_str(data, "signal", "data") == 0 ? 0 : -1;
  if (rc == 0)
    j->dds[k] = cli_exp_h5_dataset(data, "data", &sh, j->codec, c, false);
  /* as DECTRIS numbers them: the first and last image, from 1 */
  if (rc == 0 && (j->dds[k] < 0 ||
                  cli_exp_h5_attr_int(j->dds[k], "image_nr_low", first + 1) < 0 ||
                  cli_exp_h5_attr_int(j->dds[k], "image_nr_high", first + count) < 0))
    rc = -1;
  if (data >= 0)
    H5Gclose(data);
  if (entry >= 0)
    H5Gclose(entry);
  if (rc < 0)
    cli_err("%s: cannot create the image dataset", j->dname[k]);
  return rc;
}

int cli_exp_dectris_begin(cli_exp_job *j, hid_t data, const cli_chunk *first,
                          int64_t n) {
  const cli_exp_shape *sh = &j->sh;
  if (sh->ndim != 3 || sh->chunk[0] != 1 || sh->grid[1] != 1 || sh->grid[2] != 1) {
    cli_err("%s: --layout dectris needs one image per chunk (a dataset of "
            "(images, y, x) chunked (1, y, x))", j->src.path);
    return -1;
  }
  int64_t per = j->per_file;
  int nf = (int)((n + per - 1) / per);
  j->dfile = malloc(sizeof(hid_t) * (size_t)(nf ? nf : 1));
  j->dds = malloc(sizeof(hid_t) * (size_t)(nf ? nf : 1));
  j->dname = calloc((size_t)(nf ? nf : 1), sizeof(char *));
  if (!j->dfile || !j->dds || !j->dname) {
    cli_err("out of memory");
    return -1;
  }
  for (int k = 0; k < nf; k++) {
    j->dfile[k] = j->dds[k] = -1;
    j->dname[k] = data_name(j->out, k + 1);
    if (!j->dname[k]) {
      cli_err("out of memory");
      return -1;
    }
    j->nds = k + 1;
    int64_t from = (int64_t)k * per, count = n - from < per ? n - from : per;
    if (data_file(j, k, from, count, first) < 0)
      return -1;
    char link[16];
    snprintf(link, sizeof link, "data_%06d", k + 1);
    /* the file's name alone: HDF5 and neggia look for it beside the
     * master, so the set can move as a whole */
    if (H5Lcreate_external(base_name(j->dname[k]), "/entry/data/data", data,
                           link, H5P_DEFAULT, H5P_DEFAULT) < 0) {
      cli_err("%s: cannot link %s", j->out, link);
      return -1;
    }
    uint8_t *map = NULL;
    size_t len = 0;
    if (b2s_frame_series_get(j->src.frame, &map, &len) == 0 && map && len &&
        cli_exp_h5_attr_bytes(j->dds[k], EXP_ATTR_SERIES, map, len) < 0) {
      free(map);
      cli_err("%s: cannot write the series metadata", j->dname[k]);
      return -1;
    }
    free(map);
  }
  return 0;
}

hid_t cli_exp_chunk_target(const cli_exp_job *j, int64_t i, hsize_t *off) {
  if (j->layout != EXP_LAYOUT_DECTRIS) {
    cli_exp_shape_offset(&j->sh, i, off);
    return j->ds;
  }
  off[0] = (hsize_t)(i % j->per_file);
  off[1] = off[2] = 0;
  return j->dds[i / j->per_file];
}

int cli_exp_dectris_end(cli_exp_job *j, bool failed) {
  int rc = 0;
  for (int k = 0; k < j->nds; k++) {
    if (j->dds[k] >= 0)
      H5Dclose(j->dds[k]);
    if (j->dfile[k] >= 0 && H5Fclose(j->dfile[k]) < 0 && !failed) {
      cli_err("%s: cannot close the HDF5 file", j->dname[k]);
      rc = -1;
    }
  }
  for (int k = 0; k < j->nds; k++) {
    if ((failed || rc < 0) && j->dfile[k] >= 0)
      unlink(j->dname[k]);          /* ours: created with H5F_ACC_EXCL */
    free(j->dname[k]);
  }
  free(j->dfile), free(j->dds), free(j->dname);
  j->dfile = j->dds = NULL;
  j->dname = NULL;
  j->nds = 0;
  return rc;
}
