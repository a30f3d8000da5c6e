/* The NeXus NXmx layout of b2stream export: /entry (NXentry, definition
 * NXmx), the images at /entry/data/data, the beam, detector and sample
 * fields filled from the series metadata where its keys have a known
 * meaning (the table in docs/EXPORT.md), every other key an attribute of
 * /entry/series, and the records as datasets of /entry/records. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cmd_export.h"


/* hc / e in eV * angstrom: wavelength from photon energy. */
#define HC_EV_A 12398.419843320026

/* A series key with a meaning, and the factor to its NeXus units. */
typedef struct known {
  const char *key;
  int field;
  double scale;
} known;

enum {
  F_WAVELENGTH, F_ENERGY, F_PIXEL, F_PIXEL_X, F_PIXEL_Y, F_BEAM_X, F_BEAM_Y,
  F_DISTANCE, F_COUNT_TIME, F_FRAME_TIME, F_THICKNESS, F_SATURATION,
  F_OMEGA0, F_OMEGA_INC, F_PHI0, F_PHI_INC, F_CHI0, F_CHI_INC, F_KAPPA0,
  F_KAPPA_INC, F_NUMERIC_END,
  F_DETECTOR = F_NUMERIC_END, F_SENSOR, F_SAMPLE, F_NFIELDS
};

static const known KNOWN[] = {
  {"wavelength_A", F_WAVELENGTH, 1}, {"wavelength", F_WAVELENGTH, 1},
  {"incident_wavelength", F_WAVELENGTH, 1},
  {"energy_eV", F_ENERGY, 1}, {"photon_energy_eV", F_ENERGY, 1},
  {"energy", F_ENERGY, 1}, {"incident_energy", F_ENERGY, 1},
  {"energy_keV", F_ENERGY, 1000}, {"photon_energy_keV", F_ENERGY, 1000},
  {"pixel_size_m", F_PIXEL, 1}, {"pixel_size_um", F_PIXEL, 1e-6},
  {"pixel_size", F_PIXEL, 1},
  {"x_pixel_size", F_PIXEL_X, 1}, {"x_pixel_size_m", F_PIXEL_X, 1},
  {"y_pixel_size", F_PIXEL_Y, 1}, {"y_pixel_size_m", F_PIXEL_Y, 1},
  {"beam_center_x", F_BEAM_X, 1}, {"beam_centre_x", F_BEAM_X, 1},
  {"beam_center_y", F_BEAM_Y, 1}, {"beam_centre_y", F_BEAM_Y, 1},
  {"detector_distance_m", F_DISTANCE, 1}, {"detector_distance", F_DISTANCE, 1},
  {"detector_distance_mm", F_DISTANCE, 1e-3},
  {"count_time_s", F_COUNT_TIME, 1}, {"count_time", F_COUNT_TIME, 1},
  {"exposure_s", F_COUNT_TIME, 1}, {"exposure_time", F_COUNT_TIME, 1},
  {"exposure_time_s", F_COUNT_TIME, 1}, {"exposure_ms", F_COUNT_TIME, 1e-3},
  {"frame_time_s", F_FRAME_TIME, 1}, {"frame_time", F_FRAME_TIME, 1},
  {"sensor_thickness_m", F_THICKNESS, 1}, {"sensor_thickness", F_THICKNESS, 1},
  {"saturation_value", F_SATURATION, 1}, {"count_cutoff", F_SATURATION, 1},
  {"omega_start", F_OMEGA0, 1}, {"omega_increment", F_OMEGA_INC, 1},
  {"phi_start", F_PHI0, 1}, {"phi_increment", F_PHI_INC, 1},
  {"chi_start", F_CHI0, 1}, {"chi_increment", F_CHI_INC, 1},
  {"kappa_start", F_KAPPA0, 1}, {"kappa_increment", F_KAPPA_INC, 1},
  {"detector", F_DETECTOR, 0}, {"detector_name", F_DETECTOR, 0},
  {"sensor_material", F_SENSOR, 0},
  {"sample", F_SAMPLE, 0}, {"sample_name", F_SAMPLE, 0},
};

typedef struct series {
  bool has[F_NFIELDS];
  double num[F_NUMERIC_END];
  char *str[F_NFIELDS];
} series;

static const known *lookup(const uint8_t *k, uint32_t n) {
  for (size_t i = 0; i < sizeof KNOWN / sizeof KNOWN[0]; i++)
    if (strlen(KNOWN[i].key) == n && !strncasecmp(KNOWN[i].key, (const char *)k, n))
      return &KNOWN[i];
  return NULL;
}

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

/* Walk the series map: known keys into s, the others onto g. */
static int read_series(cli_src *src, series *s, hid_t g) {
  uint8_t *map;
  b2s_mpreader r;
  uint32_t n = 0;
  int rc = cli_exp_series_open(src, &map, &r, &n);
  if (rc <= 0) {
    free(map);
    return rc;
  }
  rc = 0;
  for (uint32_t k = 0; rc == 0 && k < n; k++) {
    b2s_mpval key, v;
    if (b2s_mp_read_any(&r, &key) < 0 || key.type != B2S_MPT_STR) {
      rc = -1;
      break;
    }
    const known *kn = lookup(key.p, key.n);
    b2s_mpreader at = r;
    if (kn && b2s_mp_read_any(&at, &v) == 0) {
      double x;
      if (kn->field < F_NUMERIC_END && number(&v, &x)) {
        s->has[kn->field] = true;
        s->num[kn->field] = x * kn->scale;
        r = at;
        continue;
      }
      if (kn->field >= F_NUMERIC_END && v.type == B2S_MPT_STR) {
        s->has[kn->field] = true;
        free(s->str[kn->field]);
        s->str[kn->field] = strndup((const char *)v.p, v.n);
        r = at;
        continue;
      }
    }
    char name[80];
    snprintf(name, sizeof name, "%.*s", (int)key.n, (const char *)key.p);
    rc = other_attr(g, name, &r);
  }
  free(map);
  return rc;
}

static int num_field(hid_t g, const series *s, int f, const char *name,
                     const char *units) {
  return s->has[f] ? cli_exp_h5_scalar_double(g, name, s->num[f], units) : 0;
}

static int beam(hid_t inst, series *s) {
  if (s->has[F_ENERGY] && !s->has[F_WAVELENGTH] && s->num[F_ENERGY] > 0) {
    s->has[F_WAVELENGTH] = true;
    s->num[F_WAVELENGTH] = HC_EV_A / s->num[F_ENERGY];
  } else if (s->has[F_WAVELENGTH] && !s->has[F_ENERGY] && s->num[F_WAVELENGTH] > 0) {
    s->has[F_ENERGY] = true;
    s->num[F_ENERGY] = HC_EV_A / s->num[F_WAVELENGTH];
  }
  hid_t g = cli_exp_h5_group(inst, "beam", "NXbeam");
  int rc = g < 0 ? -1 : 0;
  if (rc == 0)
    rc = num_field(g, s, F_WAVELENGTH, "incident_wavelength", "angstrom");
  if (rc == 0)
    rc = num_field(g, s, F_ENERGY, "incident_energy", "eV");
  if (g >= 0)
    H5Gclose(g);
  return rc;
}

static int detector(hid_t inst, series *s) {
  if (s->has[F_PIXEL]) {
    for (int f = F_PIXEL_X; f <= F_PIXEL_Y; f++)
      if (!s->has[f])
        s->has[f] = true, s->num[f] = s->num[F_PIXEL];
  }
  hid_t g = cli_exp_h5_group(inst, "detector", "NXdetector");
  int rc = g < 0 ? -1 : 0;
  static const struct { int f; const char *name, *units; } F[] = {
    {F_PIXEL_X, "x_pixel_size", "m"}, {F_PIXEL_Y, "y_pixel_size", "m"},
    {F_BEAM_X, "beam_center_x", "pixel"}, {F_BEAM_Y, "beam_center_y", "pixel"},
    {F_DISTANCE, "distance", "m"}, {F_COUNT_TIME, "count_time", "s"},
    {F_FRAME_TIME, "frame_time", "s"}, {F_THICKNESS, "sensor_thickness", "m"},
    {F_SATURATION, "saturation_value", NULL},
  };
  for (size_t k = 0; rc == 0 && k < sizeof F / sizeof F[0]; k++)
    rc = num_field(g, s, F[k].f, F[k].name, F[k].units);
  if (rc == 0 && s->str[F_DETECTOR])
    rc = cli_exp_h5_scalar_str(g, "description", s->str[F_DETECTOR]);
  if (rc == 0 && s->str[F_SENSOR])
    rc = cli_exp_h5_scalar_str(g, "sensor_material", s->str[F_SENSOR]);
  if (rc == 0)
    rc = cli_exp_h5_scalar_str(g, "depends_on", ".");
  if (g >= 0)
    H5Gclose(g);
  return rc;
}

hid_t cli_exp_nxmx_begin(hid_t file, cli_src *src, const cli_exp_shape *sh,
                     int codec, const cli_chunk *first) {
  hid_t entry = cli_exp_h5_group(file, "entry", "NXentry");
  if (entry < 0)
    return -1;
  hid_t data = cli_exp_h5_group(entry, "data", "NXdata");
  hid_t ds = -1;
  if (data >= 0 && cli_exp_h5_attr_str(entry, "default", "data") == 0 &&
      cli_exp_h5_scalar_str(entry, "definition", "NXmx") == 0 &&
      cli_exp_h5_attr_str(data, "signal", "data") == 0)
    ds = cli_exp_h5_dataset(data, "data", sh, codec, first);
  char *json = ds >= 0 ? cli_exp_series_json(src) : NULL;
  if (json && cli_exp_h5_attr_str(entry, "series", json) < 0) {
    H5Dclose(ds);
    ds = -1;
  }
  free(json);
  if (data >= 0)
    H5Gclose(data);
  H5Gclose(entry);
  return ds;
}

/* One goniometer axis from <axis>_start and <axis>_increment: its angle
 * for each of n images. */
static int axis(hid_t tr, const series *s, int f0, const char *name,
                const double vec[3], const char *next, int64_t n) {
  double *a = malloc(sizeof *a * (size_t)(n > 0 ? n : 1));
  if (a == NULL)
    return -1;
  double inc = s->has[f0 + 1] ? s->num[f0 + 1] : 0;
  for (int64_t i = 0; i < n; i++)
    a[i] = s->num[f0] + inc * (double)i;
  int rc = cli_exp_h5_vector(tr, name, H5T_NATIVE_DOUBLE, a, (hsize_t)n, "deg");
  free(a);
  hid_t d = rc == 0 ? H5Dopen2(tr, name, H5P_DEFAULT) : -1;
  if (d < 0)
    return -1;
  hsize_t three = 3;
  hid_t sp = H5Screate_simple(1, &three, NULL);
  hid_t at = H5Acreate2(d, "vector", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT);
  rc = at >= 0 && H5Awrite(at, H5T_NATIVE_DOUBLE, vec) >= 0 ? 0 : -1;
  if (at >= 0)
    H5Aclose(at);
  H5Sclose(sp);
  if (rc == 0)
    rc = cli_exp_h5_attr_str(d, "transformation_type", "rotation");
  if (rc == 0)
    rc = cli_exp_h5_attr_str(d, "depends_on", next);
  H5Dclose(d);
  return rc;
}

static int sample(hid_t entry, const series *s, int64_t n) {
  hid_t g = cli_exp_h5_group(entry, "sample", "NXsample");
  if (g < 0)
    return -1;
  int rc = s->str[F_SAMPLE] ? cli_exp_h5_scalar_str(g, "name", s->str[F_SAMPLE]) : 0;
  /* the axes present, outermost first; each depends on the next */
  static const struct { int f0; const char *name; double vec[3]; } AX[] = {
    {F_OMEGA0, "omega", {-1, 0, 0}}, {F_KAPPA0, "kappa", {-0.642788, -0.766044, 0}},
    {F_CHI0, "chi", {0, 0, 1}}, {F_PHI0, "phi", {-1, 0, 0}},
  };
  int present[4], np = 0;
  for (int k = 0; k < 4; k++)
    if (s->has[AX[k].f0])
      present[np++] = k;
  hid_t tr = np && rc == 0 ? cli_exp_h5_group(g, "transformations", "NXtransformations") : -1;
  if (np && tr < 0)
    rc = -1;
  for (int k = np - 1; rc == 0 && k >= 0; k--) {
    char next[96];
    if (k == np - 1)
      snprintf(next, sizeof next, ".");
    else
      snprintf(next, sizeof next, "/entry/sample/transformations/%s", AX[present[k + 1]].name);
    rc = axis(tr, s, AX[present[k]].f0, AX[present[k]].name, AX[present[k]].vec, next, n);
  }
  if (rc == 0) {
    char dep[96] = ".";
    if (np)
      snprintf(dep, sizeof dep, "/entry/sample/transformations/%s", AX[present[0]].name);
    rc = cli_exp_h5_scalar_str(g, "depends_on", dep);
  }
  if (tr >= 0)
    H5Gclose(tr);
  H5Gclose(g);
  return rc;
}

/* ISO 8601 (UTC) of a timestamp in ns. */
static void iso8601(int64_t ns, char out[40]) {
  time_t t = (time_t)(ns / 1000000000);
  struct tm tm;
  gmtime_r(&t, &tm);
  size_t k = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out + k, 40 - k, ".%09lldZ", (long long)(ns % 1000000000));
}

typedef struct recs {
  int64_t *frame, *ts;
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
    R->frame[i] = R->ts[i] = -1;
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
    R->flags[i] = r.flags;
    R->xxh[i] = r.xxh64;
    R->gap[i] = (r.flags & B2S_RECORD_GAP) != 0;
    R->user[i] = user_json(&r);
  }
  cli_recs_close(&cr);
  fill_gap_frames(R, *have);
  return rc;
}

static int write_records(hid_t entry, recs *R, int64_t n, int64_t have) {
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

static int times(hid_t entry, const recs *R, int64_t n) {
  int64_t first = -1, last = -1;
  for (int64_t i = 0; i < n; i++)
    if (R->ts[i] >= 0) {
      if (first < 0)
        first = R->ts[i];
      last = R->ts[i];
    }
  if (first < 0)
    return 0;
  char a[40], b[40];
  iso8601(first, a);
  iso8601(last, b);
  int rc = cli_exp_h5_scalar_str(entry, "start_time", a);
  return rc == 0 ? cli_exp_h5_scalar_str(entry, "end_time", b) : rc;
}

int cli_exp_nxmx_finish(hid_t file, cli_src *src, const cli_exp_shape *sh,
                    int64_t n) {
  (void)sh;
  series s;
  memset(&s, 0, sizeof s);
  hid_t entry = H5Gopen2(file, "entry", H5P_DEFAULT);
  hid_t inst = entry >= 0 ? cli_exp_h5_group(entry, "instrument", "NXinstrument") : -1;
  hid_t other = entry >= 0 ? cli_exp_h5_group(entry, "series", "NXcollection") : -1;
  int rc = inst >= 0 && other >= 0 ? read_series(src, &s, other) : -1;
  if (rc == 0)
    rc = beam(inst, &s);
  if (rc == 0)
    rc = detector(inst, &s);
  if (rc == 0)
    rc = sample(entry, &s, n);
  size_t m = (size_t)(n > 0 ? n : 1);
  recs R = {malloc(8 * m), malloc(8 * m), malloc(4 * m), malloc(8 * m),
            malloc(m), calloc(m, sizeof(char *))};
  int64_t have = 0;
  if (rc == 0 && !(R.frame && R.ts && R.flags && R.xxh && R.gap && R.user))
    rc = -1;
  if (rc == 0)
    rc = read_records(src, &R, n, &have);
  if (rc == 0)
    rc = write_records(entry, &R, n, have);
  if (rc == 0)
    rc = times(entry, &R, n);
  for (int64_t i = 0; R.user && i < n; i++)
    free(R.user[i]);
  free(R.frame), free(R.ts), free(R.flags), free(R.xxh), free(R.gap), free(R.user);
  for (int f = 0; f < F_NFIELDS; f++)
    free(s.str[f]);
  if (other >= 0)
    H5Gclose(other);
  if (inst >= 0)
    H5Gclose(inst);
  if (entry >= 0)
    H5Gclose(entry);
  if (rc < 0)
    cli_err("%s: cannot write the NXmx metadata", src->path);
  return rc;
}
