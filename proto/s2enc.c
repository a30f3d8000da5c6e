/* CBOR / Stream V2 message builder for tests; see b2s_s2enc.h. */
#include "b2s_s2enc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void put(b2s_s2enc *e, const void *p, size_t n) {
  if (e->n + n > e->cap) {
    size_t cap = e->cap ? e->cap : 256;
    while (cap < e->n + n)
      cap *= 2;
    uint8_t *b = realloc(e->b, cap);
    if (!b)
      abort();
    e->b = b;
    e->cap = cap;
  }
  memcpy(e->b + e->n, p, n);
  e->n += n;
}

void b2s_s2e_reset(b2s_s2enc *e) { e->n = 0; }
void b2s_s2e_free(b2s_s2enc *e) { free(e->b); *e = (b2s_s2enc){0}; }

void b2s_s2e_head(b2s_s2enc *e, int major, uint64_t v) {
  uint8_t h[9];
  size_t n;
  h[0] = (uint8_t)(major << 5);
  if (v < 24) { h[0] |= (uint8_t)v; n = 1; }
  else if (v <= 0xff) { h[0] |= 24; h[1] = (uint8_t)v; n = 2; }
  else if (v <= 0xffff) { h[0] |= 25; n = 3; }
  else if (v <= 0xffffffffu) { h[0] |= 26; n = 5; }
  else { h[0] |= 27; n = 9; }
  for (size_t i = 1; n > 2 && i < n; i++)
    h[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
  put(e, h, n);
}

void b2s_s2e_uint(b2s_s2enc *e, uint64_t v) { b2s_s2e_head(e, 0, v); }
void b2s_s2e_text(b2s_s2enc *e, const char *s) {
  b2s_s2e_head(e, 3, strlen(s));
  put(e, s, strlen(s));
}
void b2s_s2e_bytes(b2s_s2enc *e, const void *p, size_t n) {
  b2s_s2e_head(e, 2, n);
  put(e, p, n);
}
void b2s_s2e_raw(b2s_s2enc *e, const void *p, size_t n) { put(e, p, n); }
void b2s_s2e_map(b2s_s2enc *e, uint64_t n) { b2s_s2e_head(e, 5, n); }
void b2s_s2e_array(b2s_s2enc *e, uint64_t n) { b2s_s2e_head(e, 4, n); }
void b2s_s2e_tag(b2s_s2enc *e, uint64_t t) { b2s_s2e_head(e, 6, t); }
void b2s_s2e_bool(b2s_s2enc *e, int v) {
  uint8_t b = v ? 0xf5 : 0xf4;
  put(e, &b, 1);
}
void b2s_s2e_f64(b2s_s2enc *e, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  uint8_t h[9] = {0xfb};
  for (int i = 0; i < 8; i++)
    h[1 + i] = (uint8_t)(u >> (56 - 8 * i));
  put(e, h, 9);
}
void b2s_s2e_rational(b2s_s2enc *e, uint64_t num, uint64_t den) {
  b2s_s2e_array(e, 2);
  b2s_s2e_uint(e, num);
  b2s_s2e_uint(e, den);
}

void b2s_s2e_mdarray(b2s_s2enc *e, const b2s_s2e_part *p) {
  b2s_s2e_tag(e, 40);
  b2s_s2e_array(e, 2);
  b2s_s2e_array(e, 2);
  b2s_s2e_uint(e, p->ny);
  b2s_s2e_uint(e, p->nx);
  b2s_s2e_tag(e, p->tag ? p->tag : p->elem_size == 1 ? 64 : p->elem_size == 2 ? 69 : 70);
  if (p->comp) {
    b2s_s2e_tag(e, 56500);
    b2s_s2e_array(e, 3);
    b2s_s2e_text(e, p->comp);
    b2s_s2e_uint(e, strcmp(p->comp, "bslz4") ? 0 : p->elem_size);
  }
  b2s_s2e_bytes(e, p->data, p->len);
}

void b2s_s2e_selfdescribe(b2s_s2enc *e) { b2s_s2e_tag(e, 55799); }

void b2s_s2e_start(b2s_s2enc *e, uint64_t series_id, const char *uid,
              const char *const *channels, int nch, const char *dtype,
              uint64_t ny, uint64_t nx, uint64_t nimages, int extra) {
  bool sizes = ny || nx;
  b2s_s2e_selfdescribe(e);
  b2s_s2e_map(e, 12 + (dtype ? 1u : 0u) + (sizes ? 2u : 0u) + (uint64_t)extra);
  b2s_s2e_text(e, "type"); b2s_s2e_text(e, "start");
  b2s_s2e_text(e, "series_id"); b2s_s2e_uint(e, series_id);
  b2s_s2e_text(e, "series_unique_id"); b2s_s2e_text(e, uid);
  b2s_s2e_text(e, "arm_date"); b2s_s2e_tag(e, 0); b2s_s2e_text(e, "2026-11-28T10:00:00.000+00:00");
  b2s_s2e_text(e, "beam_center_x"); b2s_s2e_f64(e, 512.5);
  b2s_s2e_text(e, "beam_center_y"); b2s_s2e_f64(e, 256.25);
  b2s_s2e_text(e, "channels"); b2s_s2e_array(e, (uint64_t)nch);
  for (int i = 0; i < nch; i++)
    b2s_s2e_text(e, channels[i]);
  b2s_s2e_text(e, "count_time"); b2s_s2e_f64(e, 0.001);
  b2s_s2e_text(e, "detector_description"); b2s_s2e_text(e, "Dectris EIGER2 Si 500K");
  b2s_s2e_text(e, "goniometer"); b2s_s2e_map(e, 1); b2s_s2e_text(e, "omega");
  b2s_s2e_map(e, 2); b2s_s2e_text(e, "increment"); b2s_s2e_f64(e, 0.1);
  b2s_s2e_text(e, "start"); b2s_s2e_f64(e, 90.0);
  if (dtype) {
    b2s_s2e_text(e, "image_dtype"); b2s_s2e_text(e, dtype);
  }
  if (sizes) {
    b2s_s2e_text(e, "image_size_x"); b2s_s2e_uint(e, nx);
    b2s_s2e_text(e, "image_size_y"); b2s_s2e_uint(e, ny);
  }
  b2s_s2e_text(e, "number_of_images"); b2s_s2e_uint(e, nimages);
  b2s_s2e_text(e, "threshold_energy"); b2s_s2e_map(e, (uint64_t)nch);
  for (int i = 0; i < nch; i++) {
    b2s_s2e_text(e, channels[i]);
    b2s_s2e_f64(e, 4000.0 + 1000.0 * i);
  }
}

void b2s_s2e_image(b2s_s2enc *e, uint64_t series_id, const char *uid, uint64_t image_id,
              const b2s_s2e_part *parts, int nparts, uint64_t t_start,
              uint64_t t_stop, uint64_t t_real, uint64_t timebase,
              const char *user_data_text) {
  b2s_s2e_selfdescribe(e);
  b2s_s2e_map(e, user_data_text ? 10 : 9);
  b2s_s2e_text(e, "type"); b2s_s2e_text(e, "image");
  b2s_s2e_text(e, "series_id"); b2s_s2e_uint(e, series_id);
  b2s_s2e_text(e, "series_unique_id"); b2s_s2e_text(e, uid);
  b2s_s2e_text(e, "image_id"); b2s_s2e_uint(e, image_id);
  b2s_s2e_text(e, "series_date"); b2s_s2e_tag(e, 0); b2s_s2e_text(e, "2026-11-28T10:00:01.000+00:00");
  b2s_s2e_text(e, "start_time"); b2s_s2e_rational(e, t_start, timebase);
  b2s_s2e_text(e, "stop_time"); b2s_s2e_rational(e, t_stop, timebase);
  b2s_s2e_text(e, "real_time"); b2s_s2e_rational(e, t_real, timebase);
  if (user_data_text) {
    b2s_s2e_text(e, "user_data"); b2s_s2e_map(e, 1);
    b2s_s2e_text(e, "note"); b2s_s2e_text(e, user_data_text);
  }
  b2s_s2e_text(e, "data"); b2s_s2e_map(e, (uint64_t)nparts);
  for (int i = 0; i < nparts; i++) {
    b2s_s2e_text(e, parts[i].channel);
    b2s_s2e_mdarray(e, &parts[i]);
  }
}

void b2s_s2e_end(b2s_s2enc *e, uint64_t series_id, const char *uid) {
  b2s_s2e_selfdescribe(e);
  b2s_s2e_map(e, 3);
  b2s_s2e_text(e, "type"); b2s_s2e_text(e, "end");
  b2s_s2e_text(e, "series_id"); b2s_s2e_uint(e, series_id);
  b2s_s2e_text(e, "series_unique_id"); b2s_s2e_text(e, uid);
}
