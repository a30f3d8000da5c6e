/* CBOR / Stream V2 message builder for tests; see s2enc.h. */
#include "s2enc.h"

#include <stdlib.h>
#include <string.h>

static void put(s2enc *e, const void *p, size_t n) {
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

void s2_reset(s2enc *e) { e->n = 0; }
void s2_free(s2enc *e) { free(e->b); *e = (s2enc){0}; }

void s2_head(s2enc *e, int major, uint64_t v) {
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

void s2_uint(s2enc *e, uint64_t v) { s2_head(e, 0, v); }
void s2_text(s2enc *e, const char *s) {
  s2_head(e, 3, strlen(s));
  put(e, s, strlen(s));
}
void s2_bytes(s2enc *e, const void *p, size_t n) {
  s2_head(e, 2, n);
  put(e, p, n);
}
void s2_raw(s2enc *e, const void *p, size_t n) { put(e, p, n); }
void s2_map(s2enc *e, uint64_t n) { s2_head(e, 5, n); }
void s2_array(s2enc *e, uint64_t n) { s2_head(e, 4, n); }
void s2_tag(s2enc *e, uint64_t t) { s2_head(e, 6, t); }
void s2_bool(s2enc *e, int v) {
  uint8_t b = v ? 0xf5 : 0xf4;
  put(e, &b, 1);
}
void s2_f64(s2enc *e, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  uint8_t h[9] = {0xfb};
  for (int i = 0; i < 8; i++)
    h[1 + i] = (uint8_t)(u >> (56 - 8 * i));
  put(e, h, 9);
}
void s2_rational(s2enc *e, uint64_t num, uint64_t den) {
  s2_array(e, 2);
  s2_uint(e, num);
  s2_uint(e, den);
}

void s2_mdarray(s2enc *e, const s2_image_part *p) {
  s2_tag(e, 40);
  s2_array(e, 2);
  s2_array(e, 2);
  s2_uint(e, p->ny);
  s2_uint(e, p->nx);
  s2_tag(e, p->elem_size == 1 ? 64 : p->elem_size == 2 ? 69 : 70);
  if (p->comp) {
    s2_tag(e, 56500);
    s2_array(e, 3);
    s2_text(e, p->comp);
    s2_uint(e, strcmp(p->comp, "bslz4") ? 0 : p->elem_size);
  }
  s2_bytes(e, p->data, p->len);
}

void s2_start(s2enc *e, uint64_t series_id, const char *uid,
              const char *const *channels, int nch, const char *dtype,
              uint64_t ny, uint64_t nx, uint64_t nimages) {
  s2_map(e, 15);
  s2_text(e, "type"); s2_text(e, "start");
  s2_text(e, "series_id"); s2_uint(e, series_id);
  s2_text(e, "series_unique_id"); s2_text(e, uid);
  s2_text(e, "arm_date"); s2_tag(e, 0); s2_text(e, "2026-11-28T10:00:00.000+00:00");
  s2_text(e, "beam_center_x"); s2_f64(e, 512.5);
  s2_text(e, "beam_center_y"); s2_f64(e, 256.25);
  s2_text(e, "channels"); s2_array(e, (uint64_t)nch);
  for (int i = 0; i < nch; i++)
    s2_text(e, channels[i]);
  s2_text(e, "count_time"); s2_f64(e, 0.001);
  s2_text(e, "detector_description"); s2_text(e, "Dectris EIGER2 Si 500K");
  s2_text(e, "goniometer"); s2_map(e, 1); s2_text(e, "omega");
  s2_map(e, 2); s2_text(e, "increment"); s2_f64(e, 0.1);
  s2_text(e, "start"); s2_f64(e, 90.0);
  s2_text(e, "image_dtype"); s2_text(e, dtype);
  s2_text(e, "image_size_x"); s2_uint(e, nx);
  s2_text(e, "image_size_y"); s2_uint(e, ny);
  s2_text(e, "number_of_images"); s2_uint(e, nimages);
  s2_text(e, "threshold_energy"); s2_map(e, (uint64_t)nch);
  for (int i = 0; i < nch; i++) {
    s2_text(e, channels[i]);
    s2_f64(e, 4000.0 + 1000.0 * i);
  }
}

void s2_image(s2enc *e, uint64_t series_id, const char *uid, uint64_t image_id,
              const s2_image_part *parts, int nparts, uint64_t t_start,
              uint64_t t_stop, uint64_t t_real, uint64_t timebase,
              const char *user_data_text) {
  s2_map(e, user_data_text ? 10 : 9);
  s2_text(e, "type"); s2_text(e, "image");
  s2_text(e, "series_id"); s2_uint(e, series_id);
  s2_text(e, "series_unique_id"); s2_text(e, uid);
  s2_text(e, "image_id"); s2_uint(e, image_id);
  s2_text(e, "series_date"); s2_tag(e, 0); s2_text(e, "2026-11-28T10:00:01.000+00:00");
  s2_text(e, "start_time"); s2_rational(e, t_start, timebase);
  s2_text(e, "stop_time"); s2_rational(e, t_stop, timebase);
  s2_text(e, "real_time"); s2_rational(e, t_real, timebase);
  if (user_data_text) {
    s2_text(e, "user_data"); s2_map(e, 1);
    s2_text(e, "note"); s2_text(e, user_data_text);
  }
  s2_text(e, "data"); s2_map(e, (uint64_t)nparts);
  for (int i = 0; i < nparts; i++) {
    s2_text(e, parts[i].channel);
    s2_mdarray(e, &parts[i]);
  }
}

void s2_end(s2enc *e, uint64_t series_id, const char *uid) {
  s2_map(e, 3);
  s2_text(e, "type"); s2_text(e, "end");
  s2_text(e, "series_id"); s2_uint(e, series_id);
  s2_text(e, "series_unique_id"); s2_text(e, uid);
}
