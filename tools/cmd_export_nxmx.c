/* The NeXus NXmx layouts of b2stream export (docs/EXPORT.md 2.2-2.9):
 * /entry (NXentry, definition NXmx) with the images, the instrument,
 * detector, beam, source and sample from the series metadata through the
 * table of cli_nxmeta.c (Stream V2 start fields), the geometry in NeXus's
 * McStas frame (z along the beam, y up), the beamline facts from the
 * series key `beamline` or the options, every series key as an attribute
 * of /entry/series and the records as datasets of /entry/records. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd_export.h"

#ifndef B2S_VERSION
#define B2S_VERSION "unknown"
#endif

/* hc / e in eV * angstrom: wavelength from photon energy. */
#define HC_EV_A 12398.419843320026

#define DET_PATH "/entry/instrument/detector"
#define TRANSLATION DET_PATH "/transformations/translation"
#define MODULE_OFFSET DET_PATH "/module/module_offset"

typedef struct nx {
  cli_exp_job *j;
  cli_nxmeta m;
  int64_t n;                       /* images */
  hsize_t ny, nx;                  /* image shape, 0 when not (images, y, x) */
} nx;

/* ---- begin: the file, /entry, the image dataset(s) ----------------------- */

static int root_attrs(cli_exp_job *j) {
  unsigned maj, min, rel;
  char ver[32], now[40];
  H5get_libversion(&maj, &min, &rel);
  snprintf(ver, sizeof ver, "%u.%u.%u", maj, min, rel);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  cli_nx_format_date((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, now);
  /* NXroot: silx follows @default from here to the NXdata's @signal */
  if (cli_exp_h5_attr_str(j->file, "NX_class", "NXroot") < 0 ||
      cli_exp_h5_attr_str(j->file, "default", "entry") < 0 ||
      cli_exp_h5_attr_str(j->file, "file_name", j->out) < 0 ||
      cli_exp_h5_attr_str(j->file, "file_time", now) < 0 ||
      cli_exp_h5_attr_str(j->file, "HDF5_Version", ver) < 0 ||
      cli_exp_h5_attr_str(j->file, "creator", "b2stream export " B2S_VERSION) < 0)
    return -1;
  return 0;
}

int cli_exp_nxmx_begin(cli_exp_job *j, const cli_chunk *first) {
  if (root_attrs(j) < 0)
    return -1;
  hid_t entry = cli_exp_h5_group(j->file, "entry", "NXentry");
  if (entry < 0)
    return -1;
  hid_t data = cli_exp_h5_group(entry, "data", "NXdata");
  int64_t n = cli_src_nchunks(&j->src);
  bool dectris = j->layout == EXP_LAYOUT_DECTRIS;
  int rc = data >= 0 && cli_exp_h5_attr_str(entry, "default", "data") == 0 &&
                   cli_exp_h5_scalar_str(entry, "definition", "NXmx") == 0
               ? 0 : -1;
  if (rc == 0 && dectris) {
    rc = cli_exp_dectris_begin(j, data, first, n);
    if (rc == 0 && n > 0)
      rc = cli_exp_h5_attr_str(data, "signal", "data_000001");
  } else if (rc == 0) {
    j->ds = cli_exp_h5_dataset(data, "data", &j->sh, j->codec, first, false);
    rc = j->ds >= 0 && cli_exp_h5_attr_str(data, "signal", "data") == 0 ? 0 : -1;
    /* a stack of images for the viewers (silx), not one 3-d volume */
    if (rc == 0 && j->sh.ndim == 3)
      rc = cli_exp_h5_attr_str(j->ds, "interpretation", "image");
  }
  char *json = rc == 0 ? cli_exp_series_json(&j->src) : NULL;
  if (json && cli_exp_h5_attr_str(entry, "series", json) < 0)
    rc = -1;
  free(json);
  if (data >= 0)
    H5Gclose(data);
  H5Gclose(entry);
  if (rc < 0)
    cli_err("%s: cannot write the NXmx file", j->out);
  return rc;
}

/* ---- the series map as attributes of /entry/series ----------------------- */

static bool number(const b2s_mpval *v, double *out) {
  switch (v->type) {
  case B2S_MPT_UINT: *out = (double)v->u; return true;
  case B2S_MPT_INT: *out = (double)v->i; return true;
  case B2S_MPT_FLOAT: *out = v->f; return true;
  default: return false;
  }
}

/* The value at r as an attribute of g named name (numbers as numbers,
 * strings as strings, anything else as its JSON), consuming it. */
static int other_attr(hid_t g, const char *name, b2s_mpreader *r) {
  b2s_mpreader at = *r;
  b2s_mpval v;
  if (b2s_mp_read_any(&at, &v) < 0)
    return -1;
  double x;
  if (v.type == B2S_MPT_STR) {
    char *s = strndup((const char *)v.p, v.n);
    int rc = s ? cli_exp_h5_attr_str(g, name, s) : -1;
    free(s);
    *r = at;
    return rc;
  }
  if (v.type == B2S_MPT_UINT || v.type == B2S_MPT_INT) {
    *r = at;
    return cli_exp_h5_attr_int(g, name, v.type == B2S_MPT_UINT ? (int64_t)v.u : v.i);
  }
  if (number(&v, &x)) {
    *r = at;
    return cli_exp_h5_attr_double(g, name, x);
  }
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  int rc = f ? cli_mp_json(f, r, B2S_MP_MAX_DEPTH) : -1;
  if (f)
    fclose(f);
  if (rc >= 0)
    rc = cli_exp_h5_attr_str(g, name, text);
  free(text);
  return rc;
}

/* Every key of the series map onto g; the map itself into nx->m. */
static int read_series(nx *x, hid_t g) {
  uint8_t *map = NULL;
  size_t len = 0;
  if (b2s_frame_series_get(x->j->src.frame, &map, &len) < 0 || map == NULL)
    return 0;
  b2s_mpreader r;
  b2s_mpval hdr;
  b2s_mpreader_init(&r, map, len);
  int rc = b2s_mp_read_any(&r, &hdr) == 0 && hdr.type == B2S_MPT_MAP ? 0 : -1;
  for (uint32_t k = 0; rc == 0 && k < hdr.n; k++) {
    b2s_mpval key;
    if (b2s_mp_read_any(&r, &key) < 0 || key.type != B2S_MPT_STR) {
      rc = -1;
      break;
    }
    char name[80];
    snprintf(name, sizeof name, "%.*s", (int)key.n, (const char *)key.p);
    rc = other_attr(g, name, &r);
  }
  if (rc == 0 && cli_nxmeta_read(map, len, &x->m) < 0)
    rc = -1;
  free(map);
  return rc;
}

/* ---- fields straight from the table -------------------------------------- */

/* Each row of the table with a NeXus field and a value, written to it. */
static int table_fields(hid_t entry, const cli_nxmeta *m) {
  for (int f = 0; f < NXF_COUNT; f++) {
    const cli_nx_row *row = &cli_nx_table[f];
    if (!row->field || !m->has[f])
      continue;
    const char *slash = strrchr(row->field, '/');
    char parent[96];
    snprintf(parent, sizeof parent, "%.*s", (int)(slash - row->field), row->field);
    hid_t g = H5Gopen2(entry, parent, H5P_DEFAULT);
    if (g < 0)
      return -1;
    const char *name = slash + 1;
    int rc;
    switch (row->kind) {
    case NXK_INT:
      rc = cli_exp_h5_scalar_int(g, name, m->i[f], row->units);
      break;
    case NXK_BOOL:
      rc = cli_exp_h5_scalar_bool(g, name, m->i[f] != 0);
      break;
    case NXK_TEXT:
      rc = cli_exp_h5_scalar_str(g, name, m->text[f]);
      break;
    default:                       /* FLOAT, CHANNEL */
      rc = cli_exp_h5_scalar_double(g, name, m->num[f], row->units);
      break;
    }
    H5Gclose(g);
    if (rc < 0)
      return -1;
  }
  return 0;
}

/* ---- transformations ------------------------------------------------------ */

/* A NXtransformations axis: values (one, or one per image), its units,
 * type, vector, offset (m; NULL: zero) and what it depends on. */
typedef struct axis_def {
  const char *name, *type, *units, *depends_on;
  const double *values;
  hsize_t n;                       /* 0: a scalar */
  double vector[3];
  const double *offset;
} axis_def;

static int axis(hid_t g, const axis_def *a) {
  if (cli_exp_h5_vector(g, a->name, H5T_NATIVE_DOUBLE, a->values, a->n, a->units) < 0)
    return -1;
  hid_t d = H5Dopen2(g, a->name, H5P_DEFAULT);
  int rc = d >= 0 && cli_exp_h5_attr_str(d, "transformation_type", a->type) == 0 &&
                   cli_exp_h5_attr_vec(d, "vector", a->vector, 3) == 0 &&
                   cli_exp_h5_attr_str(d, "depends_on", a->depends_on) == 0
               ? 0 : -1;
  /* an offset on every axis, zero when none: cnxvalidate requires one */
  static const double none[3] = {0, 0, 0};
  const char *ou = strcmp(a->type, "rotation") ? a->units : "m";
  if (rc == 0 && (cli_exp_h5_attr_vec(d, "offset", a->offset ? a->offset : none, 3) < 0 ||
                  cli_exp_h5_attr_str(d, "offset_units", ou) < 0))
    rc = -1;
  if (d >= 0)
    H5Dclose(d);
  return rc;
}

/* Vectors of the goniometer axes NXmx has a place for, in the McStas
 * frame: omega (and phi at omega = 0) about the horizontal axis, right-
 * handed along -x as at most single-axis beamlines (and DLS's files), chi
 * along the beam at omega = 0, kappa 50 degrees from omega in the x-y
 * plane, two_theta (the detector arm) about -x too.  A beamline of
 * another geometry keeps its own numbers: the goniometer map stays in
 * /entry/series. */
static const struct {
  const char *name;
  double vector[3];
  bool detector;
} AXIS_VECTORS[] = {
  {"phi", {-1, 0, 0}, false}, {"chi", {0, 0, 1}, false},
  {"kappa", {-0.642788, -0.766044, 0}, false}, {"omega", {-1, 0, 0}, false},
  {"two_theta", {-1, 0, 0}, true},
};
enum { NAXIS_VECTORS = sizeof AXIS_VECTORS / sizeof AXIS_VECTORS[0] };

static const cli_nx_axis *find_axis(const cli_nxmeta *m, const char *name) {
  for (int k = 0; k < m->naxes; k++)
    if (!strcmp(m->axes[k].name, name))
      return &m->axes[k];
  return NULL;
}

/* A goniometer axis: its angle at each image from start + increment, and
 * for a scanned axis its _end and _increment_set, as DIALS reads them. */
static int gonio_axis(hid_t g, const nx *x, const cli_nx_axis *ax,
                      const double vec[3], const char *depends_on) {
  hsize_t n = (hsize_t)(x->n > 0 ? x->n : 1);
  double *v = malloc(sizeof *v * n * 2);
  if (v == NULL)
    return -1;
  for (hsize_t i = 0; i < n; i++) {
    v[i] = ax->start + ax->increment * (double)i;
    v[n + i] = v[i] + ax->increment;
  }
  axis_def a = {ax->name, "rotation", "deg", depends_on, v, n,
                {vec[0], vec[1], vec[2]}, NULL};
  int rc = axis(g, &a);
  if (rc == 0 && ax->increment != 0) {
    char name[64];
    snprintf(name, sizeof name, "%s_end", ax->name);
    rc = cli_exp_h5_vector(g, name, H5T_NATIVE_DOUBLE, v + n, n, "deg");
    snprintf(name, sizeof name, "%s_increment_set", ax->name);
    if (rc == 0)
      rc = cli_exp_h5_scalar_double(g, name, ax->increment, "deg");
  }
  free(v);
  return rc;
}

/* The sample's axes, innermost first: phi on chi or kappa on omega. */
static int sample(hid_t entry, const nx *x) {
  hid_t g = cli_exp_h5_group(entry, "sample", "NXsample");
  if (g < 0)
    return -1;
  const char *name = x->j->opt.sample_name ? x->j->opt.sample_name
                                           : x->m.bl.sample_name;
  int rc = name ? cli_exp_h5_scalar_str(g, "name", name) : 0;
  int present[NAXIS_VECTORS], np = 0;
  for (int k = 0; k < NAXIS_VECTORS; k++)
    if (!AXIS_VECTORS[k].detector && find_axis(&x->m, AXIS_VECTORS[k].name))
      present[np++] = k;
  hid_t tr = np && rc == 0 ? cli_exp_h5_group(g, "transformations", "NXtransformations") : -1;
  if (np && tr < 0)
    rc = -1;
  for (int k = 0; rc == 0 && k < np; k++) {
    char next[96] = ".";
    if (k + 1 < np)
      snprintf(next, sizeof next, "/entry/sample/transformations/%s",
               AXIS_VECTORS[present[k + 1]].name);
    rc = gonio_axis(tr, x, find_axis(&x->m, AXIS_VECTORS[present[k]].name),
                    AXIS_VECTORS[present[k]].vector, next);
  }
  if (rc == 0) {
    char dep[96] = ".";
    if (np)
      snprintf(dep, sizeof dep, "/entry/sample/transformations/%s",
               AXIS_VECTORS[present[0]].name);
    rc = cli_exp_h5_scalar_str(g, "depends_on", dep);
  }
  if (tr >= 0)
    H5Gclose(tr);
  H5Gclose(g);
  return rc;
}

/* The detector's distance (m): detector_translation's z (its x and y are
 * not used: the beam centre places the detector across the beam), else
 * detector_distance. */
static bool distance(const cli_nxmeta *m, double *d) {
  if (m->has[NXF_DETECTOR_TRANSLATION])
    return *d = m->vec[2], true;
  if (m->has[NXF_DETECTOR_DISTANCE])
    return *d = m->num[NXF_DETECTOR_DISTANCE], true;
  return false;
}

/* detector/transformations: [two_theta,] translation along the beam by the
 * distance; detector/depends_on names the translation. */
static int detector_chain(hid_t det, const nx *x, bool *has) {
  double d;
  *has = distance(&x->m, &d);
  if (!*has)
    return cli_exp_h5_scalar_str(det, "depends_on", ".");
  hid_t tr = cli_exp_h5_group(det, "transformations", "NXtransformations");
  if (tr < 0)
    return -1;
  const cli_nx_axis *tt = find_axis(&x->m, "two_theta");
  int rc = 0;
  if (tt)
    rc = gonio_axis(tr, x, tt, AXIS_VECTORS[NAXIS_VECTORS - 1].vector, ".");
  axis_def t = {"translation", "translation", "m",
                tt ? DET_PATH "/transformations/two_theta" : ".", &d, 0,
                {0, 0, 1}, NULL};
  if (rc == 0)
    rc = axis(tr, &t);
  H5Gclose(tr);
  if (rc == 0)
    rc = cli_exp_h5_scalar_double(det, "distance", d, "m");
  /* the start message gives the distance; the axis chain is made from it */
  if (rc == 0)
    rc = cli_exp_h5_scalar_bool(det, "distance_derived", false);
  if (rc == 0)
    rc = cli_exp_h5_scalar_str(det, "depends_on", TRANSLATION);
  return rc;
}

/* NXdetector_module: the whole image, its pixels along -x (fast) and -y
 * (slow) as seen from the sample, pixel (0, 0) placed so that the beam
 * (the z axis) meets the detector at (beam_center_x, beam_center_y). */
static int module(hid_t det, const nx *x, bool chain) {
  const cli_nxmeta *m = &x->m;
  if (x->ny == 0)
    return 0;
  hid_t g = cli_exp_h5_group(det, "module", "NXdetector_module");
  if (g < 0)
    return -1;
  int32_t origin[2] = {0, 0}, size[2] = {(int32_t)x->ny, (int32_t)x->nx};
  int32_t stride[2] = {1, 1};
  int rc = cli_exp_h5_vector(g, "data_origin", H5T_NATIVE_INT32, origin, 2, NULL);
  if (rc == 0)
    rc = cli_exp_h5_vector(g, "data_size", H5T_NATIVE_INT32, size, 2, NULL);
  if (rc == 0)
    rc = cli_exp_h5_vector(g, "data_stride", H5T_NATIVE_INT32, stride, 2, NULL);
  bool px = m->has[NXF_PIXEL_SIZE_X] && m->has[NXF_PIXEL_SIZE_Y];
  /* the same for the beam centre, which places the module */
  if (rc == 0 && m->has[NXF_BEAM_CENTER_X] && m->has[NXF_BEAM_CENTER_Y])
    rc = cli_exp_h5_scalar_bool(det, "beam_center_derived", false);
  if (rc == 0 && px) {
    double sx = m->num[NXF_PIXEL_SIZE_X], sy = m->num[NXF_PIXEL_SIZE_Y];
    double bx = m->has[NXF_BEAM_CENTER_X] ? m->num[NXF_BEAM_CENTER_X] : 0;
    double by = m->has[NXF_BEAM_CENTER_Y] ? m->num[NXF_BEAM_CENTER_Y] : 0;
    double zero = 0, off[3] = {bx * sx, by * sy, 0}, none[3] = {0, 0, 0};
    axis_def mo = {"module_offset", "translation", "m", chain ? TRANSLATION : ".",
                   &zero, 0, {1, 0, 0}, off};
    axis_def fast = {"fast_pixel_direction", "translation", "m", MODULE_OFFSET,
                     &sx, 0, {-1, 0, 0}, none};
    axis_def slow = {"slow_pixel_direction", "translation", "m", MODULE_OFFSET,
                     &sy, 0, {0, -1, 0}, none};
    rc = axis(g, &mo);
    if (rc == 0)
      rc = axis(g, &fast);
    if (rc == 0)
      rc = axis(g, &slow);
  }
  H5Gclose(g);
  return rc;
}

/* ---- companion frames: pixel mask, flatfield, count-rate table ------------ */

/* The frame of a companion stream <stream>.<kind> beside the channel's
 * frame (the daemon's default path pattern, {name}.b2frame), or the one
 * named; its one chunk decoded into *out (malloc'ed), b2nd in *nd.  0 when
 * there is none, 1 when read, -1 on error (reported). */
static int companion(const nx *x, const char *kind, const char *named,
                     uint8_t **out, size_t *len, b2s_b2nd *nd, char dtype[16]) {
  char path[4200];
  const char *p = x->j->src.path;
  if (named) {
    snprintf(path, sizeof path, "%s", named);
  } else {
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
      n--;
    if (n > 8 && !memcmp(p + n - 8, ".b2frame", 8))
      n -= 8;
    snprintf(path, sizeof path, "%.*s.%s.b2frame", (int)n, p, kind);
    if (access(path, F_OK) != 0)
      return 0;
  }
  cli_src s;
  if (cli_src_open(path, &s) < 0)
    return -1;
  int rc = -1;
  const uint8_t *dec;
  int got;
  if (s.frame && b2s_frame_b2nd_get(s.frame, nd) == 0 && nd->ndim >= 1 &&
      cli_src_nchunks(&s) == 1 && (got = cli_src_decode(&s, 0, &dec)) > 0 &&
      (*out = malloc((size_t)got)) != NULL) {
    memcpy(*out, dec, (size_t)got);
    *len = (size_t)got;
    rc = 1;
    /* the dtype points into the frame, closed below */
    nd->dtype_len = nd->has_dtype && nd->dtype_len < 16 ? nd->dtype_len : 0;
    memcpy(dtype, nd->dtype, nd->dtype_len);
    nd->dtype = dtype;
  } else {
    cli_err("%s: not a companion frame of one b2nd chunk", path);
  }
  cli_src_close(&s);
  return rc;
}

/* The HDF5 type of a companion's dtype (NumPy string), or -1. */
static hid_t companion_type(const b2s_b2nd *nd) {
  if (!nd->has_dtype || nd->dtype_len != 3 || nd->dtype[0] == '>')
    return -1;
  char k = nd->dtype[1], s = nd->dtype[2];
  if (k == 'u')
    return s == '1' ? H5T_STD_U8LE : s == '2' ? H5T_STD_U16LE
         : s == '4' ? H5T_STD_U32LE : s == '8' ? H5T_STD_U64LE : -1;
  if (k == 'i')
    return s == '1' ? H5T_STD_I8LE : s == '2' ? H5T_STD_I16LE
         : s == '4' ? H5T_STD_I32LE : s == '8' ? H5T_STD_I64LE : -1;
  if (k == 'f')
    return s == '4' ? H5T_IEEE_F32LE : s == '8' ? H5T_IEEE_F64LE : -1;
  return -1;
}

/* A contiguous dataset of the companion's array (neggia reads the pixel
 * mask only uncompressed and unchunked). */
static int array_dataset(hid_t g, const char *name, const b2s_b2nd *nd,
                         hid_t type, const void *v) {
  hsize_t dims[B2S_B2ND_MAX_DIM];
  for (int d = 0; d < nd->ndim; d++)
    dims[d] = (hsize_t)nd->shape[d];
  hid_t s = H5Screate_simple(nd->ndim, dims, NULL);
  hid_t ds = H5Dcreate2(g, name, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int rc = ds >= 0 && H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0 ? 0 : -1;
  if (ds >= 0)
    H5Dclose(ds);
  H5Sclose(s);
  return rc;
}

static bool image_shaped(const nx *x, const b2s_b2nd *nd) {
  return x->ny && nd->ndim == 2 && (hsize_t)nd->shape[0] == x->ny &&
         (hsize_t)nd->shape[1] == x->nx;
}

/* pixel_mask (also detectorSpecific/pixel_mask, zeros when the detector
 * sent none: neggia needs one), flatfield, countrate table. */
static int companions(hid_t det, hid_t spec, const nx *x) {
  static const struct { const char *kind, *field; bool image; } K[] = {
    {"pixel_mask", "pixel_mask", true}, {"flatfield", "flatfield", true},
    {"countrate", "countrate_correction_lookup_table", false},
  };
  bool mask = false;
  for (size_t k = 0; k < sizeof K / sizeof K[0]; k++) {
    uint8_t *v = NULL;
    size_t len = 0;
    b2s_b2nd nd;
    char dtype[16];
    int got = companion(x, K[k].kind, k == 0 ? x->j->pixel_mask : NULL, &v, &len,
                        &nd, dtype);
    if (got < 0)
      return -1;
    hid_t t = got ? companion_type(&nd) : -1;
    int64_t items = 1;
    for (int d = 0; got && d < nd.ndim; d++)
      items *= nd.shape[d];
    if (got && (t < 0 || (K[k].image && !image_shaped(x, &nd)) ||
                (int64_t)len < items * (int64_t)H5Tget_size(t) ||
                (k == 0 && H5Tget_class(t) != H5T_INTEGER))) {
      cli_err("%s: %s companion of another dtype or shape than the images: "
              "left out", x->j->src.path, K[k].kind);
      got = 0;
    }
    int rc = got ? array_dataset(det, K[k].field, &nd, t, v) : 0;
    free(v);
    if (rc < 0)
      return -1;
    if (got && k == 0) {
      mask = true;
      if (H5Lcreate_hard(det, "pixel_mask", spec, "pixel_mask", H5P_DEFAULT,
                         H5P_DEFAULT) < 0)
        return -1;
    }
  }
  if (!mask && x->ny) {
    b2s_b2nd nd = {.ndim = 2, .shape = {(int64_t)x->ny, (int64_t)x->nx}};
    uint32_t *z = calloc(x->ny * x->nx, sizeof *z);
    int rc = z ? array_dataset(spec, "pixel_mask", &nd, H5T_STD_U32LE, z) : -1;
    free(z);
    return rc;
  }
  return 0;
}

/* ---- detector, beam, source ------------------------------------------------- */

/* What neggia and Durin read from a DECTRIS master (docs/EXPORT.md 2.6). */
static int detector_specific(hid_t spec, const nx *x) {
  const cli_nxmeta *m = &x->m;
  int rc = cli_exp_h5_scalar_int(spec, "nimages", x->n, NULL);
  if (rc == 0)
    rc = cli_exp_h5_scalar_int(spec, "ntrigger", 1, NULL);
  if (rc == 0 && x->ny) {
    rc = cli_exp_h5_scalar_int(spec, "x_pixels_in_detector", (int64_t)x->nx, NULL);
    if (rc == 0)
      rc = cli_exp_h5_scalar_int(spec, "y_pixels_in_detector", (int64_t)x->ny, NULL);
  }
  if (rc == 0 && m->has[NXF_SATURATION_VALUE]) {
    rc = cli_exp_h5_scalar_int(spec, "saturation_value", m->i[NXF_SATURATION_VALUE], NULL);
    if (rc == 0)
      rc = cli_exp_h5_scalar_int(spec, "countrate_correction_count_cutoff",
                                 m->i[NXF_SATURATION_VALUE], NULL);
  }
  if (rc == 0)
    rc = cli_exp_h5_scalar_int(spec, "bit_depth_image", 8 * x->j->sh.typesize, NULL);
  if (rc == 0 && m->has[NXF_ARM_DATE]) {
    char d[40];
    cli_nx_format_date(m->i[NXF_ARM_DATE], d);
    rc = cli_exp_h5_scalar_str(spec, "data_collection_date", d);
  }
  return rc;
}

static int detector(hid_t inst, const nx *x) {
  hid_t det = H5Gopen2(inst, "detector", H5P_DEFAULT);
  if (det < 0)
    return -1;
  bool chain = false;
  int rc = detector_chain(det, x, &chain);
  if (rc == 0)
    rc = module(det, x, chain);
  hid_t spec = rc == 0 ? cli_exp_h5_group(det, "detectorSpecific", "NXcollection") : -1;
  if (spec < 0)
    rc = -1;
  if (rc == 0)
    rc = detector_specific(spec, x);
  if (rc == 0)
    rc = companions(det, spec, x);
  if (spec >= 0)
    H5Gclose(spec);
  H5Gclose(det);
  return rc;
}

static int beam(hid_t inst, nx *x) {
  cli_nxmeta *m = &x->m;
  double *e = &m->num[NXF_INCIDENT_ENERGY], *w = &m->num[NXF_INCIDENT_WAVELENGTH];
  /* either from the other, as the start message may carry one */
  if (m->has[NXF_INCIDENT_ENERGY] && !m->has[NXF_INCIDENT_WAVELENGTH] && *e > 0)
    m->has[NXF_INCIDENT_WAVELENGTH] = true, *w = HC_EV_A / *e;
  else if (m->has[NXF_INCIDENT_WAVELENGTH] && !m->has[NXF_INCIDENT_ENERGY] && *w > 0)
    m->has[NXF_INCIDENT_ENERGY] = true, *e = HC_EV_A / *w;
  bool flux = x->j->opt.has_flux || m->bl.has_flux;
  if (!flux)
    return 0;
  hid_t g = H5Gopen2(inst, "beam", H5P_DEFAULT);
  double f = x->j->opt.has_flux ? x->j->opt.beam_flux : m->bl.beam_flux;
  int rc = g >= 0 && cli_exp_h5_scalar_double(g, "total_flux", f, "Hz") == 0 &&
                   cli_exp_h5_attr_str(g, "flux", "total_flux") == 0
               ? 0 : -1;
  if (g >= 0)
    H5Gclose(g);
  return rc;
}

/* An option's value, else the series' beamline map's (only NXsource's
 * enumerated values for its type and probe). */
static const char *fact(const char *opt, const char *series, const char *what,
                        int enumerated, const cli_exp_job *j) {
  if (opt)
    return opt;
  if (series && enumerated >= 0 && !cli_nx_source_value_ok(series, enumerated)) {
    cli_err("%s: beamline %s '%s' is not one of NXsource's: left out",
            j->src.path, what, series);
    return NULL;
  }
  return series;
}

static int source(hid_t entry, hid_t inst, const nx *x) {
  const cli_nx_beamline *o = &x->j->opt, *b = &x->m.bl;
  const char *name = fact(o->source_name, b->source_name, "source_name", -1, x->j);
  const char *type = fact(o->source_type, b->source_type, "source_type", 0, x->j);
  const char *probe = fact(o->source_probe, b->source_probe, "source_probe", 1, x->j);
  const char *iname = fact(o->instrument_name, b->instrument_name, "", -1, x->j);
  int rc = iname ? cli_exp_h5_scalar_str(inst, "name", iname) : 0;
  if (rc < 0 || (!name && !type && !probe))
    return rc;
  hid_t g = cli_exp_h5_group(entry, "source", "NXsource");
  if (g < 0)
    return -1;
  if (name)
    rc = cli_exp_h5_scalar_str(g, "name", name);
  if (rc == 0 && type)
    rc = cli_exp_h5_scalar_str(g, "type", type);
  if (rc == 0 && probe)
    rc = cli_exp_h5_scalar_str(g, "probe", probe);
  H5Gclose(g);
  return rc;
}

/* ---- records and times ---------------------------------------------------- */

typedef struct recs {
  int64_t *frame, *ts, *stop;      /* stop: user map's stop_time_ns, or -1 */
  uint32_t *flags;
  uint64_t *xxh;
  uint8_t *gap;
  char **user;
} recs;

static char *user_json(const b2s_record *r) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f == NULL)
    return NULL;
  if (r->user_kind == B2S_RECORD_USER_MAP) {
    b2s_mpreader mr;
    b2s_mpreader_init(&mr, r->user, r->user_len);
    if (cli_mp_json(f, &mr, B2S_MP_MAX_DEPTH) < 0)
      fputs("null", f);
  } else if (r->user_kind == B2S_RECORD_USER_BIN) {
    fputc('"', f);
    for (uint32_t k = 0; k < r->user_len; k++)
      fprintf(f, "%02x", r->user[k]);
    fputc('"', f);
  }
  fclose(f);
  return text;
}

/* The user map's stop_time_ns (a Stream V2 image's stop time, ns after
 * series_date, docs/SOURCES.md 4), or -1. */
static int64_t stop_time(const b2s_record *r) {
  if (r->user_kind != B2S_RECORD_USER_MAP)
    return -1;
  b2s_mpreader mr;
  b2s_mpval v, key;
  b2s_mpreader_init(&mr, r->user, r->user_len);
  if (b2s_mp_read_any(&mr, &v) < 0 || v.type != B2S_MPT_MAP)
    return -1;
  for (uint32_t k = 0, n = v.n; k < n; k++) {
    if (b2s_mp_read_any(&mr, &key) < 0 || key.type != B2S_MPT_STR)
      return -1;
    if (key.n == 12 && !memcmp(key.p, "stop_time_ns", 12)) {
      b2s_mpreader at = mr;
      return b2s_mp_read_any(&at, &v) == 0 && v.type == B2S_MPT_UINT &&
                     v.u <= INT64_MAX ? (int64_t)v.u : -1;
    }
    if (b2s_mp_skip(&mr, B2S_MP_MAX_DEPTH) < 0)
      return -1;
  }
  return -1;
}

/* A gap the daemon filled for a frame number that never came carries no
 * frame number: in a frame-number stream chunk index = frame number - the
 * first, so it is the nearest numbered record's, shifted by the distance
 * (docs/METADATA.md 4). */
static void fill_gap_frames(recs *R, int64_t n) {
  int64_t last = -1;            /* index of the last numbered record */
  for (int64_t i = 0; i < n; i++) {
    if (R->frame[i] >= 0)
      last = i;
    else if (R->gap[i] && last >= 0)
      R->frame[i] = R->frame[last] + (i - last);
  }
  last = -1;                    /* leading gaps: from the first numbered */
  for (int64_t i = n - 1; i >= 0; i--) {
    if (R->frame[i] >= 0)
      last = i;
    else if (R->gap[i] && last >= 0 && R->frame[last] >= last - i)
      R->frame[i] = R->frame[last] - (last - i);
  }
}

static int read_records(cli_src *src, recs *R, int64_t n, int64_t *have) {
  cli_recs cr;
  if (cli_recs_open(src, &cr) < 0)
    return -1;
  *have = cli_recs_have(&cr) ? (cr.count < n ? cr.count : n) : 0;
  int rc = 0;
  for (int64_t i = 0; i < n; i++) {
    R->frame[i] = R->ts[i] = R->stop[i] = -1;
    R->user[i] = NULL;
    if (i >= *have)
      continue;
    b2s_record r;
    if (cli_recs_get(src, &cr, i, &r) < 0) {
      rc = -1;
      break;
    }
    if (r.has_frame)
      R->frame[i] = (int64_t)r.frame;
    if (r.has_ts)
      R->ts[i] = r.ts;
    R->stop[i] = stop_time(&r);
    R->flags[i] = r.flags;
    R->xxh[i] = r.xxh64;
    R->gap[i] = (r.flags & B2S_RECORD_GAP) != 0;
    R->user[i] = user_json(&r);
  }
  cli_recs_close(&cr);
  fill_gap_frames(R, *have);
  return rc;
}

/* Record times are ns after the series' date (series_date, else arm_date)
 * for a detector series, ns since the epoch otherwise: the time base. */
static bool time_base(const cli_nxmeta *m, int64_t *base) {
  if (m->has[NXF_SERIES_DATE])
    return *base = m->i[NXF_SERIES_DATE], true;
  if (m->has[NXF_ARM_DATE])
    return *base = m->i[NXF_ARM_DATE], true;
  *base = 0;
  return false;
}

static int write_records(hid_t entry, const nx *x, recs *R, int64_t n, int64_t have) {
  hid_t g = cli_exp_h5_group(entry, "records", "NXcollection");
  if (g < 0)
    return -1;
  for (int64_t i = 0; i < n; i++)
    if (R->user[i] == NULL && (R->user[i] = strdup("")) == NULL)
      return -1;
  hsize_t k = (hsize_t)n;
  int rc = cli_exp_h5_vector(g, "frame_number", H5T_NATIVE_INT64, R->frame, k, NULL);
  if (rc == 0)
    rc = cli_exp_h5_vector(g, "timestamp", H5T_NATIVE_INT64, R->ts, k, "ns");
  int64_t base;
  if (rc == 0 && time_base(&x->m, &base)) {
    /* the start those ns count from, as NXdetector's start_time says it */
    char d[40];
    cli_nx_format_date(base, d);
    hid_t ds = H5Dopen2(g, "timestamp", H5P_DEFAULT);
    rc = ds >= 0 && cli_exp_h5_attr_str(ds, "start", d) == 0 ? 0 : -1;
    if (ds >= 0)
      H5Dclose(ds);
  }
  if (rc == 0)
    rc = cli_exp_h5_vector(g, "flags", H5T_NATIVE_UINT32, R->flags, k, NULL);
  if (rc == 0)
    rc = cli_exp_h5_vector(g, "xxh64", H5T_NATIVE_UINT64, R->xxh, k, NULL);
  if (rc == 0)
    rc = cli_exp_h5_vector(g, "gap", H5T_NATIVE_UINT8, R->gap, k, NULL);
  if (rc == 0)
    rc = cli_exp_h5_strings(g, "user", R->user, k);
  if (rc == 0)
    rc = cli_exp_h5_attr_int(g, "records_present", have);
  H5Gclose(g);
  return rc;
}

/* start_time: the first image's start (else the series' date); end_time:
 * the last image's stop (its start when it has none), when records say
 * it; end_time_estimated: end_time, else start + number_of_images x
 * frame_time, else start. */
static int times(hid_t entry, const nx *x, const recs *R, int64_t n) {
  const cli_nxmeta *m = &x->m;
  int64_t base, first = -1, last = -1;
  bool detector = time_base(m, &base);
  for (int64_t i = 0; i < n; i++)
    if (R->ts[i] >= 0) {
      if (first < 0)
        first = R->ts[i];
      last = R->stop[i] >= 0 ? R->stop[i] : R->ts[i];
    }
  int64_t start, end = -1, est;
  if (first >= 0)
    start = base + first, end = base + last;
  else if (detector)
    start = base;
  else
    return 0;                      /* nothing says when */
  est = end >= 0 ? end : start;
  if (end < 0 && m->has[NXF_NUMBER_OF_IMAGES] && m->has[NXF_FRAME_TIME] &&
      m->num[NXF_FRAME_TIME] > 0 && m->num[NXF_FRAME_TIME] < 1e6)
    est = start + (int64_t)((double)m->i[NXF_NUMBER_OF_IMAGES] *
                                   m->num[NXF_FRAME_TIME] * 1e9 + 0.5);
  char a[40], b[40];
  cli_nx_format_date(start, a);
  int rc = cli_exp_h5_scalar_str(entry, "start_time", a);
  if (rc == 0 && end >= 0) {
    cli_nx_format_date(end, b);
    rc = cli_exp_h5_scalar_str(entry, "end_time", b);
  }
  if (rc == 0) {
    cli_nx_format_date(est, b);
    rc = cli_exp_h5_scalar_str(entry, "end_time_estimated", b);
  }
  return rc;
}

static int records_and_times(hid_t entry, const nx *x, int64_t n) {
  size_t c = (size_t)(n > 0 ? n : 1);
  recs R = {malloc(8 * c), malloc(8 * c), malloc(8 * c), malloc(4 * c),
            malloc(8 * c), malloc(c), calloc(c, sizeof(char *))};
  int64_t have = 0;
  int rc = R.frame && R.ts && R.stop && R.flags && R.xxh && R.gap && R.user ? 0 : -1;
  if (rc == 0)
    rc = read_records(&x->j->src, &R, n, &have);
  if (rc == 0)
    rc = write_records(entry, x, &R, n, have);
  if (rc == 0)
    rc = times(entry, x, &R, n);
  for (int64_t i = 0; R.user && i < n; i++)
    free(R.user[i]);
  free(R.frame), free(R.ts), free(R.stop), free(R.flags), free(R.xxh);
  free(R.gap), free(R.user);
  return rc;
}

/* ---- finish ----------------------------------------------------------------- */

int cli_exp_nxmx_finish(cli_exp_job *j, int64_t n) {
  nx x = {.j = j, .n = n};
  if (j->sh.ndim == 3)
    x.ny = j->sh.dims[1], x.nx = j->sh.dims[2];
  hid_t entry = H5Gopen2(j->file, "entry", H5P_DEFAULT);
  hid_t inst = entry >= 0 ? cli_exp_h5_group(entry, "instrument", "NXinstrument") : -1;
  hid_t other = entry >= 0 ? cli_exp_h5_group(entry, "series", "NXcollection") : -1;
  hid_t g1 = inst >= 0 ? cli_exp_h5_group(inst, "beam", "NXbeam") : -1;
  hid_t g2 = inst >= 0 ? cli_exp_h5_group(inst, "detector", "NXdetector") : -1;
  int rc = g1 >= 0 && g2 >= 0 && other >= 0 ? read_series(&x, other) : -1;
  if (g1 >= 0)
    H5Gclose(g1);
  if (g2 >= 0)
    H5Gclose(g2);
  if (rc == 0)
    rc = beam(inst, &x);
  if (rc == 0)
    rc = table_fields(entry, &x.m);
  if (rc == 0)
    rc = detector(inst, &x);
  if (rc == 0)
    rc = source(entry, inst, &x);
  if (rc == 0)
    rc = sample(entry, &x);
  if (rc == 0)
    rc = records_and_times(entry, &x, n);
  cli_nxmeta_fini(&x.m);
  if (other >= 0)
    H5Gclose(other);
  if (inst >= 0)
    H5Gclose(inst);
  if (entry >= 0)
    H5Gclose(entry);
  if (rc < 0)
    cli_err("%s: cannot write the NXmx metadata", j->src.path);
  return rc;
}
