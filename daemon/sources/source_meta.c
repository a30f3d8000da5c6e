/* Series metadata of a Stream V2 series; see source_meta.h. */
#include "source_meta.h"

#include <stdio.h>
#include <string.h>

#include "b2s_meta.h"

const char *const b2sd_s2_array_key[B2SD_S2_NARRAYS] = {
  "flatfield", "pixel_mask", "countrate_correction_lookup_table"};
const char *const b2sd_s2_array_stream[B2SD_S2_NARRAYS] = {
  "flatfield", "pixel_mask", "countrate"};

/* The keys the series is stored by, written from the layout when they
 * came from the first image. */
static const char *const layout_key[3] = {"image_dtype", "image_size_x",
                                          "image_size_y"};

static bool key_is(b2s_s2_str k, const char *c) {
  return k.len == strlen(c) && !memcmp(k.p, c, k.len);
}

bool b2sd_s2_array_given(const b2s_s2_msg *start, int k) {
  return b2s_s2_field_get(start, b2sd_s2_array_key[k]) != NULL;
}

bool b2sd_s2_array_ok(const b2s_s2_msg *start, int k) {
  const b2s_s2_field *f = b2s_s2_field_get(start, b2sd_s2_array_key[k]);
  b2s_s2_named named[B2S_S2_MAX_CHANNELS];
  b2s_s2_array one;
  uint32_t n;
  if (!f)
    return false;
  return k < 2 ? b2s_s2_array_map(f->value, named, B2S_S2_MAX_CHANNELS, &n) == 0
               : b2s_s2_array_parse(f->value, &one) == 0;
}

void b2sd_s2_dtype_name(const char *np, char *out, size_t cap) {
  const char *kind = np[1] == 'u' ? "uint" : np[1] == 'i' ? "int" : "float";
  snprintf(out, cap, "%s%d", kind, (np[2] - '0') * 8);
}

/* A start field that is not written as it came: "type"; "channel",
 * "beamline" and the layout keys the daemon writes itself; the arrays that
 * go to companion streams; a key longer than metadata keys may be. */
static bool skipped(const b2s_s2_msg *start, const b2s_s2_field *f,
                    const b2sd_s2_layout *lay, bool beamline) {
  if (f->key.len > B2S_SERIES_KEY_MAX || key_is(f->key, "type") ||
      key_is(f->key, "channel") || (beamline && key_is(f->key, "beamline")))
    return true;
  for (int k = 0; k < 3; k++)
    if (lay->from_image[k] && key_is(f->key, layout_key[k]))
      return true;
  for (int k = 0; k < B2SD_S2_NARRAYS; k++)
    if (key_is(f->key, b2sd_s2_array_key[k]))
      return b2sd_s2_array_ok(start, k);
  return false;
}

static void put_key(b2s_mpbuf *b, const char *k) {
  b2s_mp_put_str(b, k, strlen(k));
}

/* The "beamline" map of the configured facts; 0 entries when none. */
static uint32_t put_beamline(const b2s_source_beamline *bl, b2s_mpbuf *b) {
  const struct { const char *key, *v; } text[] = {
    {"source_name", bl->source_name}, {"source_type", bl->source_type},
    {"source_probe", bl->source_probe},
    {"instrument_name", bl->instrument_name},
    {"sample_name", bl->sample_name}};
  uint32_t n = bl->beam_flux > 0;
  for (size_t i = 0; i < sizeof text / sizeof *text; i++)
    n += text[i].v[0] != '\0';
  if (n == 0)
    return 0;
  put_key(b, "beamline");
  b2s_mp_put_map(b, n);
  for (size_t i = 0; i < sizeof text / sizeof *text; i++)
    if (text[i].v[0]) {
      put_key(b, text[i].key);
      put_key(b, text[i].v);
    }
  if (bl->beam_flux > 0) {
    put_key(b, "beam_flux");
    b2s_mp_put_float64(b, bl->beam_flux);
  }
  return 1;
}

uint32_t b2sd_s2_series_meta(const b2s_s2_msg *start, const char *channel,
                             const b2sd_s2_layout *lay,
                             const b2s_source_beamline *bl, b2s_mpbuf *out,
                             b2s_s2_str *dropped) {
  b2s_mpbuf body;
  b2s_mpbuf_init(&body);
  bool beamline = bl->beam_flux > 0 || bl->source_name[0] ||
                  bl->source_type[0] || bl->source_probe[0] ||
                  bl->instrument_name[0] || bl->sample_name[0];
  uint32_t kept = 0, left = 0;
  for (uint32_t i = 0; i < start->nfields; i++) {
    const b2s_s2_field *f = &start->fields[i];
    if (skipped(start, f, lay, beamline))
      continue;
    size_t at = body.len;
    b2s_mp_put_str(&body, f->key.p, f->key.len);
    if (b2s_s2_to_msgpack(f->value, &body, B2S_SERIES_VALUE_MAX) < 0) {
      body.len = at;
      if (left++ == 0)
        *dropped = f->key;
      continue;
    }
    kept++;
  }
  put_key(&body, "channel");
  put_key(&body, channel);
  kept++;
  if (lay->from_image[0]) {
    char name[16];
    b2sd_s2_dtype_name(lay->dtype, name, sizeof name);
    put_key(&body, layout_key[0]);
    put_key(&body, name);
    kept++;
  }
  for (int k = 1; k < 3; k++)
    if (lay->from_image[k]) {
      put_key(&body, layout_key[k]);
      b2s_mp_put_uint(&body, (uint64_t)(k == 1 ? lay->nx : lay->ny));
      kept++;
    }
  kept += put_beamline(bl, &body);
  out->len = 0;
  b2s_mp_put_map(out, kept);
  b2s_mp_write_raw(out, body.data, body.len);
  b2s_mpbuf_fini(&body);
  return left;
}
