/* The Stream V2 start fields NXmx has a place for, as one table, and
 * their values read from a frame's series map (cli_nxmeta.h).  Keys are
 * compared exactly: a start field is a series key of the same name
 * (docs/SOURCES.md 4); any other key stays an attribute of /entry/series. */
#include "cli_nxmeta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_errors.h"
#include "b2s_msgpack.h"

#define DET "instrument/detector/"

/* One row per enum cli_nx_field, in its order (docs/EXPORT.md 2.4 is this
 * table).  A NULL field is placed by the layout (geometry, times). */
const cli_nx_row cli_nx_table[NXF_COUNT] = {
  [NXF_ARM_DATE] = {"arm_date", NXK_DATE, NULL, NULL},
  [NXF_SERIES_DATE] = {"series_date", NXK_DATE, NULL, NULL},
  [NXF_BEAM_CENTER_X] = {"beam_center_x", NXK_FLOAT, DET "beam_center_x", "pixel"},
  [NXF_BEAM_CENTER_Y] = {"beam_center_y", NXK_FLOAT, DET "beam_center_y", "pixel"},
  [NXF_BIT_DEPTH_READOUT] = {"bit_depth_readout", NXK_INT, DET "bit_depth_readout", NULL},
  [NXF_CHANNEL] = {"channel", NXK_TEXT, NULL, NULL},
  [NXF_COUNT_TIME] = {"count_time", NXK_FLOAT, DET "count_time", "s"},
  [NXF_COUNTRATE_ENABLED] = {"countrate_correction_enabled", NXK_BOOL,
                             DET "countrate_correction_applied", NULL},
  [NXF_DESCRIPTION] = {"detector_description", NXK_TEXT, DET "description", NULL},
  [NXF_SERIAL_NUMBER] = {"detector_serial_number", NXK_TEXT, DET "serial_number", NULL},
  [NXF_DETECTOR_DISTANCE] = {"detector_distance", NXK_FLOAT, NULL, NULL},
  [NXF_DETECTOR_TRANSLATION] = {"detector_translation", NXK_VEC3, NULL, NULL},
  [NXF_FLATFIELD_ENABLED] = {"flatfield_enabled", NXK_BOOL, DET "flatfield_applied", NULL},
  [NXF_FRAME_TIME] = {"frame_time", NXK_FLOAT, DET "frame_time", "s"},
  [NXF_GONIOMETER] = {"goniometer", NXK_AXES, NULL, NULL},
  [NXF_IMAGE_SIZE_X] = {"image_size_x", NXK_INT, NULL, NULL},
  [NXF_IMAGE_SIZE_Y] = {"image_size_y", NXK_INT, NULL, NULL},
  [NXF_INCIDENT_ENERGY] = {"incident_energy", NXK_FLOAT, "instrument/beam/incident_energy", "eV"},
  [NXF_INCIDENT_WAVELENGTH] = {"incident_wavelength", NXK_FLOAT,
                               "instrument/beam/incident_wavelength", "angstrom"},
  [NXF_NUMBER_OF_IMAGES] = {"number_of_images", NXK_INT, NULL, NULL},
  [NXF_PIXEL_MASK_ENABLED] = {"pixel_mask_enabled", NXK_BOOL, DET "pixel_mask_applied", NULL},
  [NXF_PIXEL_SIZE_X] = {"pixel_size_x", NXK_FLOAT, DET "x_pixel_size", "m"},
  [NXF_PIXEL_SIZE_Y] = {"pixel_size_y", NXK_FLOAT, DET "y_pixel_size", "m"},
  [NXF_SATURATION_VALUE] = {"saturation_value", NXK_INT, DET "saturation_value", NULL},
  [NXF_SENSOR_MATERIAL] = {"sensor_material", NXK_TEXT, DET "sensor_material", NULL},
  [NXF_SENSOR_THICKNESS] = {"sensor_thickness", NXK_FLOAT, DET "sensor_thickness", "m"},
  [NXF_THRESHOLD_ENERGY] = {"threshold_energy", NXK_CHANNEL, DET "threshold_energy", "eV"},
  [NXF_VIRTUAL_PIXEL_ENABLED] = {"virtual_pixel_interpolation_enabled", NXK_BOOL,
                                 DET "virtual_pixel_interpolation_applied", NULL},
  [NXF_BEAMLINE] = {"beamline", NXK_BEAMLINE, NULL, NULL},
};

/* The goniometer axes NXmx has a place for (docs/EXPORT.md 2.5). */
static const char *const AXES[CLI_NX_MAX_AXES] = {"omega", "kappa", "chi",
                                                  "phi", "two_theta"};

const cli_nx_row *cli_nx_lookup(const char *key, size_t n) {
  for (int f = 0; f < NXF_COUNT; f++)
    if (strlen(cli_nx_table[f].key) == n && !memcmp(cli_nx_table[f].key, key, n))
      return &cli_nx_table[f];
  return NULL;
}

bool cli_nx_source_value_ok(const char *v, bool probe) {
  static const char *const types[] = {
    "Spallation Neutron Source", "Pulsed Reactor Neutron Source",
    "Reactor Neutron Source", "Synchrotron X-ray Source", "Pulsed Muon Source",
    "Rotating Anode X-ray", "Fixed Tube X-ray", "UV Laser", "Free-Electron Laser",
    "Optical Laser", "Ion Source", "UV Plasma Source", "Metal Jet X-ray", "Laser",
    "Dye Laser", "Broadband Tunable Light Source", "Halogen Lamp", "LED",
    "Mercury Cadmium Telluride Lamp", "Deuterium Lamp", "Xenon Lamp", "Globar",
    NULL};
  static const char *const probes[] = {"neutron", "photon", "x-ray", "muon",
                                       "electron", "ultraviolet", "visible light",
                                       "positron", "proton", NULL};
  for (const char *const *p = probe ? probes : types; *p; p++)
    if (!strcmp(*p, v))
      return true;
  return false;
}

/* ---- dates ---------------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  int64_t era = y / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static bool digits(const char *s, size_t n, size_t at, int count, int64_t *v) {
  if (at + (size_t)count > n)
    return false;
  *v = 0;
  for (int k = 0; k < count; k++) {
    char c = s[at + (size_t)k];
    if (c < '0' || c > '9')
      return false;
    *v = *v * 10 + (c - '0');
  }
  return true;
}

int cli_nx_parse_date(const char *s, size_t n, int64_t *ns) {
  int64_t y, mo, d, h, mi, se, frac = 0, oh = 0, om = 0;
  if (!digits(s, n, 0, 4, &y) || n < 19 || s[4] != '-' || !digits(s, n, 5, 2, &mo) ||
      s[7] != '-' || !digits(s, n, 8, 2, &d) ||
      (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(s, n, 11, 2, &h) ||
      s[13] != ':' || !digits(s, n, 14, 2, &mi) || s[16] != ':' ||
      !digits(s, n, 17, 2, &se))
    return -1;
  size_t at = 19;
  if (at < n && s[at] == '.') {
    int k = 0;
    for (at++; at < n && s[at] >= '0' && s[at] <= '9'; at++, k++)
      if (k < 9)
        frac = frac * 10 + (s[at] - '0');
    if (k == 0)
      return -1;
    for (; k < 9; k++)
      frac *= 10;
  }
  int sign = 0;
  if (at < n && (s[at] == 'Z' || s[at] == 'z')) {
    at++;
  } else if (at < n && (s[at] == '+' || s[at] == '-')) {
    sign = s[at] == '+' ? 1 : -1;
    if (!digits(s, n, at + 1, 2, &oh) || at + 3 >= n || s[at + 3] != ':' ||
        !digits(s, n, at + 4, 2, &om))
      return -1;
    at += 6;
  } else {
    return -1;                     /* RFC 3339 requires the offset */
  }
  static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (at != n || y < 1970 || y > 2261 || mo < 1 || mo > 12 || d < 1 ||
      d > mdays[mo - 1] || h > 23 || mi > 59 || se > 60 || oh > 23 || om > 59)
    return -1;
  if (mo == 2 && d == 29 && (y % 4 || (y % 100 == 0 && y % 400)))
    return -1;
  int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se -
                 sign * (oh * 3600 + om * 60);
  if (secs < 0 || secs > INT64_MAX / 1000000000 - 1)
    return -1;
  *ns = secs * 1000000000 + frac;
  return 0;
}

void cli_nx_format_date(int64_t ns, char out[40]) {
  int64_t secs = ns / 1000000000, sub = ns % 1000000000;
  if (sub < 0)
    secs--, sub += 1000000000;
  int64_t days = secs / 86400, rem = secs % 86400;
  if (rem < 0)
    days--, rem += 86400;
  /* civil from days (the inverse of days_from_civil) */
  int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
  int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp + (mp < 10 ? 3 : -9);
  int64_t y = yoe + era * 400 + (m <= 2);
  /* every field is in range (years to 2262), so it fits in 31 bytes */
  int k = snprintf(out, 40, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%09lldZ",
           (long long)y, (long long)m, (long long)d, (long long)(rem / 3600),
           (long long)(rem / 60 % 60), (long long)(rem % 60), (long long)sub);
  if (k < 0 || k >= 40)
    out[0] = '\0';
}

/* ---- values ---------------------------------------------------------------- */

static bool number(const b2s_mpval *v, double *out) {
  switch (v->type) {
  case B2S_MPT_UINT: *out = (double)v->u; return true;
  case B2S_MPT_INT: *out = (double)v->i; return true;
  case B2S_MPT_FLOAT: *out = v->f; return true;
  default: return false;
  }
}

static bool integer(const b2s_mpval *v, int64_t *out) {
  if (v->type == B2S_MPT_UINT && v->u <= INT64_MAX)
    return *out = (int64_t)v->u, true;
  if (v->type == B2S_MPT_INT)
    return *out = v->i, true;
  /* a float holding an integer, as some JSON-minded senders write them */
  if (v->type == B2S_MPT_FLOAT && v->f >= -9.2e18 && v->f <= 9.2e18 &&
      v->f == (double)(int64_t)v->f)
    return *out = (int64_t)v->f, true;
  return false;
}

static bool key_is(const b2s_mpval *k, const char *name) {
  return k->type == B2S_MPT_STR && k->n == strlen(name) && !memcmp(k->p, name, k->n);
}

/* The map at r (its header already read as m) walked pair by pair: each
 * key with its value read (scalars) into *v, r left after the value. */
typedef int (*pair_fn)(void *ctx, const b2s_mpval *k, const b2s_mpval *v,
                       b2s_mpreader *r);

static int walk_map(b2s_mpreader *r, uint32_t n, pair_fn fn, void *ctx) {
  for (uint32_t k = 0; k < n; k++) {
    b2s_mpval key, v;
    b2s_mpreader kstart = *r, at;
    if (b2s_mp_read_any(r, &key) < 0)
      return B2S_E_MSGPACK;
    if (key.type == B2S_MPT_ARRAY || key.type == B2S_MPT_MAP) {
      /* a container key means nothing here: it and its value skipped */
      *r = kstart;
      if (b2s_mp_skip(r, B2S_MP_MAX_DEPTH) < 0 || b2s_mp_skip(r, B2S_MP_MAX_DEPTH) < 0)
        return B2S_E_MSGPACK;
      continue;
    }
    at = *r;
    if (b2s_mp_read_any(&at, &v) < 0)
      return B2S_E_MSGPACK;
    int rc = fn(ctx, &key, &v, r);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* Skip the value at r (fn did not consume it). */
static int skip(b2s_mpreader *r) {
  return b2s_mp_skip(r, B2S_MP_MAX_DEPTH) < 0 ? B2S_E_MSGPACK : 0;
}

typedef struct axis_ctx {
  double start, increment;
  bool has_start;
} axis_ctx;

static int axis_pair(void *c, const b2s_mpval *k, const b2s_mpval *v,
                     b2s_mpreader *r) {
  axis_ctx *a = c;
  double x;
  if (key_is(k, "start") && number(v, &x))
    a->start = x, a->has_start = true;
  else if (key_is(k, "increment") && number(v, &x))
    a->increment = x;
  return skip(r);
}

static int gonio_pair(void *c, const b2s_mpval *k, const b2s_mpval *v,
                      b2s_mpreader *r) {
  cli_nxmeta *m = c;
  int known = -1;
  for (int a = 0; a < CLI_NX_MAX_AXES; a++)
    if (key_is(k, AXES[a]))
      known = a;
  if (known < 0 || v->type != B2S_MPT_MAP)
    return skip(r);
  b2s_mpval hdr;
  axis_ctx a = {0};
  if (b2s_mp_read_any(r, &hdr) < 0)
    return B2S_E_MSGPACK;
  int rc = walk_map(r, hdr.n, axis_pair, &a);
  if (rc < 0 || !a.has_start)
    return rc;
  for (int i = 0; i < m->naxes; i++)
    if (m->axes[i].name == AXES[known])
      return 0;                    /* a repeated key: the first one counts */
  m->axes[m->naxes++] = (cli_nx_axis){AXES[known], a.start, a.increment};
  return 0;
}

static char *dup_text(const b2s_mpval *v) {
  char *s = malloc((size_t)v->n + 1);
  if (s) {
    memcpy(s, v->p, v->n);
    s[v->n] = '\0';
    /* a NUL inside would cut the text short in HDF5: not taken */
    if (strlen(s) != v->n) {
      free(s);
      s = NULL;
    }
  }
  return s;
}

static void set_text(char **dst, const b2s_mpval *v) {
  if (v->type != B2S_MPT_STR || *dst)
    return;
  *dst = dup_text(v);
}

static int beamline_pair(void *c, const b2s_mpval *k, const b2s_mpval *v,
                         b2s_mpreader *r) {
  cli_nx_beamline *b = c;
  double x;
  if (key_is(k, "source_name"))
    set_text(&b->source_name, v);
  else if (key_is(k, "source_type"))
    set_text(&b->source_type, v);
  else if (key_is(k, "source_probe"))
    set_text(&b->source_probe, v);
  else if (key_is(k, "instrument_name"))
    set_text(&b->instrument_name, v);
  else if (key_is(k, "sample_name"))
    set_text(&b->sample_name, v);
  else if (key_is(k, "beam_flux") && number(v, &x) && !b->has_flux)
    b->has_flux = true, b->beam_flux = x;
  return skip(r);
}

/* threshold_energy: a map channel -> eV, of which the frame's channel
 * counts (read once the whole map is known: see cli_nxmeta_read). */
typedef struct channel_ctx {
  const char *want;                /* NULL: take a map of one entry */
  uint32_t n;
  bool found;
  double value;
} channel_ctx;

static int channel_pair(void *c, const b2s_mpval *k, const b2s_mpval *v,
                        b2s_mpreader *r) {
  channel_ctx *ch = c;
  double x;
  bool mine = ch->want ? key_is(k, ch->want) : ch->n == 1;
  if (mine && !ch->found && number(v, &x))
    ch->found = true, ch->value = x;
  return skip(r);
}

typedef struct read_ctx {
  cli_nxmeta *m;
  b2s_mpreader threshold;          /* where threshold_energy's map starts */
  bool has_threshold;
} read_ctx;

static int vec3(b2s_mpreader *r, double out[3]) {
  b2s_mpval hdr, x;
  b2s_mpreader at = *r;
  if (b2s_mp_read_any(&at, &hdr) < 0 || hdr.type != B2S_MPT_ARRAY || hdr.n != 3)
    return 0;
  for (int k = 0; k < 3; k++)
    if (b2s_mp_read_any(&at, &x) < 0 || !number(&x, &out[k]))
      return 0;
  *r = at;
  return 1;
}

static int top_pair(void *c, const b2s_mpval *k, const b2s_mpval *v,
                    b2s_mpreader *r) {
  read_ctx *ctx = c;
  cli_nxmeta *m = ctx->m;
  const cli_nx_row *row = k->type == B2S_MPT_STR
                              ? cli_nx_lookup((const char *)k->p, k->n) : NULL;
  if (!row)
    return skip(r);
  int f = (int)(row - cli_nx_table);
  if (m->has[f])
    return skip(r);                /* a repeated key: the first one counts */
  double x;
  int64_t i;
  switch (row->kind) {
  case NXK_FLOAT:
    if (number(v, &x))
      m->has[f] = true, m->num[f] = x;
    break;
  case NXK_INT:
    if (integer(v, &i))
      m->has[f] = true, m->i[f] = i;
    break;
  case NXK_BOOL:
    if (v->type == B2S_MPT_BOOL)
      m->has[f] = true, m->i[f] = v->b;
    break;
  case NXK_TEXT:
    if (v->type == B2S_MPT_STR && (m->text[f] = dup_text(v)) != NULL)
      m->has[f] = true;
    break;
  case NXK_DATE:
    if (v->type == B2S_MPT_STR &&
        cli_nx_parse_date((const char *)v->p, v->n, &m->i[f]) == 0)
      m->has[f] = true;
    break;
  case NXK_VEC3:
    if (vec3(r, m->vec))
      return m->has[f] = true, 0;
    break;
  case NXK_CHANNEL:
    if (v->type == B2S_MPT_MAP)
      ctx->threshold = *r, ctx->has_threshold = true;
    break;
  case NXK_AXES:
  case NXK_BEAMLINE:
    if (v->type == B2S_MPT_MAP) {
      b2s_mpval hdr;
      if (b2s_mp_read_any(r, &hdr) < 0)
        return B2S_E_MSGPACK;
      m->has[f] = true;
      return walk_map(r, hdr.n, row->kind == NXK_AXES ? gonio_pair : beamline_pair,
                      row->kind == NXK_AXES ? (void *)m : (void *)&m->bl);
    }
    break;
  }
  return skip(r);
}

int cli_nxmeta_read(const uint8_t *map, size_t len, cli_nxmeta *m) {
  memset(m, 0, sizeof *m);
  b2s_mpreader r;
  b2s_mpval hdr;
  b2s_mpreader_init(&r, map, len);
  if (b2s_mp_read_any(&r, &hdr) < 0 || hdr.type != B2S_MPT_MAP)
    return B2S_E_MSGPACK;
  read_ctx ctx = {.m = m};
  int rc = walk_map(&r, hdr.n, top_pair, &ctx);
  if (rc == 0 && ctx.has_threshold) {
    b2s_mpreader at = ctx.threshold;
    b2s_mpval th;
    if (b2s_mp_read_any(&at, &th) < 0)
      return B2S_E_MSGPACK;
    channel_ctx ch = {.want = m->text[NXF_CHANNEL], .n = th.n};
    rc = walk_map(&at, th.n, channel_pair, &ch);
    if (rc == 0 && ch.found)
      m->has[NXF_THRESHOLD_ENERGY] = true, m->num[NXF_THRESHOLD_ENERGY] = ch.value;
  }
  return rc;
}

void cli_nxmeta_fini(cli_nxmeta *m) {
  for (int f = 0; f < NXF_COUNT; f++)
    free(m->text[f]);
  free(m->bl.source_name), free(m->bl.source_type), free(m->bl.source_probe);
  free(m->bl.instrument_name), free(m->bl.sample_name);
  memset(m, 0, sizeof *m);
}
