/* DECTRIS Stream V2 decoder: messages from the test encoder and from
 * python3-cbor2 (the fuzz seeds) decode to the values sent, with and
 * without the self-described tag 55799; fields kept only as metadata may
 * have any shape; hostile messages give the expected error and never read
 * out of bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "b2s_h5lz4.h"
#include "b2s_msgpack.h"
#include "b2s_stream2.h"
#include "b2s_s2enc.h"
#include "ts.h"

static const char *const CH[] = {"threshold_1", "threshold_2", "threshold_3"};

static int str_is(b2s_s2_str s, const char *c) {
  return s.len == strlen(c) && !memcmp(s.p, c, s.len);
}

static void test_start(void **state) {
  (void)state;
  b2s_s2enc e = {0};
  b2s_s2e_start(&e, 42, "uid-42", CH, 2, "uint16", 514, 1030, 100, 0);
  b2s_s2_msg *m = malloc(sizeof *m);
  assert_int_equal(b2s_s2_decode(e.b, e.n, m), 0);
  assert_int_equal(m->type, B2S_S2_START);
  assert_true(m->has_series_id);
  assert_int_equal(m->series_id, 42);
  assert_true(str_is(m->series_unique_id, "uid-42"));
  assert_int_equal(m->nchannels, 2);
  assert_true(str_is(m->channels[1], "threshold_2"));
  assert_true(str_is(m->image_dtype, "uint16"));
  assert_int_equal(m->image_size_x, 1030);
  assert_int_equal(m->image_size_y, 514);
  assert_int_equal(m->number_of_images, 100);
  assert_true(str_is(m->arm_date, "2026-11-28T10:00:00.000+00:00"));
  assert_int_equal(m->nfields, 15);
  const b2s_s2_field *g = b2s_s2_field_get(m, "goniometer");
  assert_non_null(g);
  assert_int_equal(g->value.p[0], 0xa1);        /* map(1) */
  assert_null(b2s_s2_field_get(m, "flatfield"));
  free(m);
  b2s_s2e_free(&e);
}

static void test_image(void **state) {
  (void)state;
  enum { NY = 37, NX = 91 };
  uint16_t pix[NY * NX];
  for (int i = 0; i < NY * NX; i++)
    pix[i] = (uint16_t)(i % 13 == 0 ? i : 0);
  b2s_h5_params hp = {.kind = B2S_H5_BSLZ4, .elem_size = 2, .typesize = 2,
                      .clevel = 5};
  uint8_t framed[16384];
  int64_t fl = b2s_h5_compress(&hp, 0, pix, sizeof pix, framed, sizeof framed);
  assert_true(fl > 12);
  b2s_s2e_part parts[2] = {
    {"threshold_1", 2, NY, NX, "bslz4", framed, (size_t)fl, 0},
    {"threshold_2", 2, NY, NX, NULL, pix, sizeof pix, 0},
  };
  b2s_s2enc e = {0};
  b2s_s2e_image(&e, 7, "u7", 1234, parts, 2, 3 * 10000000ull, 3 * 10000000ull + 9999999,
           9999999, 10000000, "hello");
  b2s_s2_msg *m = malloc(sizeof *m);
  assert_int_equal(b2s_s2_decode(e.b, e.n, m), 0);
  assert_int_equal(m->type, B2S_S2_IMAGE);
  assert_int_equal(m->image_id, 1234);
  assert_int_equal(m->ndata, 2);
  const b2s_s2_array *a = &m->data[0].a;
  assert_true(str_is(m->data[0].name, "threshold_1"));
  assert_int_equal(a->ndim, 2);
  assert_int_equal(a->dim[0], NY);
  assert_int_equal(a->dim[1], NX);
  assert_string_equal(a->dtype, "<u2");
  assert_int_equal(a->comp, B2S_S2_BSLZ4);
  assert_int_equal(a->comp_elem, 2);
  assert_int_equal(a->nbytes, sizeof pix);
  assert_int_equal(a->data.len, (size_t)fl);
  assert_memory_equal(a->data.p, framed, (size_t)fl);
  assert_true(a->data.p > e.b && a->data.p < e.b + e.n);   /* no copy */
  a = &m->data[1].a;
  assert_int_equal(a->comp, B2S_S2_RAW);
  assert_memory_equal(a->data.p, pix, sizeof pix);
  int64_t ns;
  assert_true(b2s_s2_rational_ns(m->start_time, &ns));
  assert_int_equal(ns, 3000000000);
  assert_true(b2s_s2_rational_ns(m->real_time, &ns));
  assert_int_equal(ns, 999999900);
  assert_int_equal(m->real_time.num, 9999999);
  assert_int_equal(m->real_time.den, 10000000);
  /* user_data is the raw CBOR of the item. */
  static const uint8_t ud[] = {0xa1, 0x64, 'n', 'o', 't', 'e', 0x65, 'h', 'e', 'l', 'l', 'o'};
  assert_int_equal(m->user_data.len, sizeof ud);
  assert_memory_equal(m->user_data.p, ud, sizeof ud);
  /* Every prefix is an error, never an overread (ASan). */
  for (size_t cut = 0; cut < e.n; cut++)
    assert_true(b2s_s2_decode(e.b, cut, m) < 0);
  free(m);
  b2s_s2e_free(&e);
}

static void test_end_and_rationals(void **state) {
  (void)state;
  b2s_s2enc e = {0};
  b2s_s2e_end(&e, 9, "u9");
  b2s_s2_msg *m = malloc(sizeof *m);
  assert_int_equal(b2s_s2_decode(e.b, e.n, m), 0);
  assert_int_equal(m->type, B2S_S2_END);
  assert_int_equal(m->series_id, 9);
  int64_t ns;
  assert_true(b2s_s2_rational_ns((b2s_s2_rational){UINT64_MAX / 2, UINT64_MAX}, &ns));
  assert_int_equal(ns, 499999999);
  assert_false(b2s_s2_rational_ns((b2s_s2_rational){UINT64_MAX, 1}, &ns));
  assert_false(b2s_s2_rational_ns((b2s_s2_rational){1, 0}, &ns));
  free(m);
  b2s_s2e_free(&e);
}

/* Build an image message whose single channel is given as raw CBOR. */
static int decode_with_data(const uint8_t *arr, size_t n) {
  b2s_s2enc e = {0};
  b2s_s2e_map(&e, 4);
  b2s_s2e_text(&e, "type"); b2s_s2e_text(&e, "image");
  b2s_s2e_text(&e, "series_id"); b2s_s2e_uint(&e, 1);
  b2s_s2e_text(&e, "image_id"); b2s_s2e_uint(&e, 0);
  b2s_s2e_text(&e, "data"); b2s_s2e_map(&e, 1); b2s_s2e_text(&e, "c");
  b2s_s2e_raw(&e, arr, n);
  b2s_s2_msg *m = malloc(sizeof *m);
  int rc = b2s_s2_decode(e.b, e.n, m);
  free(m);
  b2s_s2e_free(&e);
  return rc;
}

static int decode_part(const b2s_s2e_part *p) {
  b2s_s2enc a = {0};
  b2s_s2e_mdarray(&a, p);
  int rc = decode_with_data(a.b, a.n);
  b2s_s2e_free(&a);
  return rc;
}

static void test_hostile_arrays(void **state) {
  (void)state;
  uint8_t buf[64] = {0};
  b2s_s2e_part p = {"c", 2, 4, 8, NULL, buf, 64, 0};
  assert_int_equal(decode_part(&p), 0);
  p.len = 62;                                      /* bytes != shape */
  assert_int_equal(decode_part(&p), B2S_S2_E_SIZE);
  p.len = 64;
  p.comp = "zstd";                                 /* unknown algorithm */
  assert_int_equal(decode_part(&p), B2S_S2_E_COMP);
  p.comp = "bslz4";                                /* framing says 0 bytes */
  assert_int_equal(decode_part(&p), B2S_S2_E_SIZE);
  buf[7] = 64;                                     /* framing says 64 */
  assert_int_equal(decode_part(&p), 0);
  p.len = 11;                                      /* no room for a header */
  assert_int_equal(decode_part(&p), B2S_S2_E_COMP);
  p.len = 64;
  p.ny = 1ull << 40;                               /* absurd shape */
  assert_int_equal(decode_part(&p), B2S_S2_E_SIZE);
  p.ny = 0;
  assert_int_equal(decode_part(&p), B2S_S2_E_SIZE);
  /* tag 40 over an unknown typed-array tag (float128), and tag 76 */
  static const uint8_t f128[] = {0xd8, 0x28, 0x82, 0x81, 0x01, 0xd8, 0x53, 0x50,
                                 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  assert_int_equal(decode_with_data(f128, sizeof f128), B2S_S2_E_TAG);
  static const uint8_t t76[] = {0xd8, 0x4c, 0x41, 0x00};
  assert_int_equal(decode_with_data(t76, sizeof t76), B2S_S2_E_TAG);
  /* column-major tag 1040 is not Stream V2 */
  static const uint8_t cm[] = {0xd9, 0x04, 0x10, 0x82, 0x81, 0x01, 0xd8, 0x40, 0x41, 0x00};
  assert_int_equal(decode_with_data(cm, sizeof cm), B2S_S2_E_TAG);
  /* an array claiming 2^32 dimensions */
  static const uint8_t dims[] = {0xd8, 0x28, 0x82, 0x9a, 0xff, 0xff, 0xff, 0xff, 0x01};
  assert_true(decode_with_data(dims, sizeof dims) < 0);
  /* 5 dimensions */
  static const uint8_t d5[] = {0xd8, 0x28, 0x82, 0x85, 1, 1, 1, 1, 1, 0xd8, 0x40, 0x41, 0};
  assert_int_equal(decode_with_data(d5, sizeof d5), B2S_S2_E_LIMIT);
}

static int decode_bytes(const uint8_t *b, size_t n) {
  b2s_s2_msg *m = malloc(sizeof *m);
  int rc = b2s_s2_decode(b, n, m);
  free(m);
  return rc;
}

static void test_hostile_messages(void **state) {
  (void)state;
  b2s_s2enc e = {0};
  /* not a map; no type; unknown type; duplicate key; missing fields */
  b2s_s2e_array(&e, 0);
  assert_int_equal(decode_bytes(e.b, e.n), B2S_S2_E_TYPE);
  b2s_s2e_reset(&e); b2s_s2e_map(&e, 1); b2s_s2e_text(&e, "series_id"); b2s_s2e_uint(&e, 1);
  assert_int_equal(decode_bytes(e.b, e.n), B2S_S2_E_TYPE);
  b2s_s2e_reset(&e); b2s_s2e_map(&e, 1); b2s_s2e_text(&e, "type"); b2s_s2e_text(&e, "stop");
  assert_int_equal(decode_bytes(e.b, e.n), B2S_S2_E_TYPE);
  b2s_s2e_reset(&e); b2s_s2e_map(&e, 3); b2s_s2e_text(&e, "type"); b2s_s2e_text(&e, "end");
  b2s_s2e_text(&e, "series_id"); b2s_s2e_uint(&e, 1); b2s_s2e_text(&e, "series_id"); b2s_s2e_uint(&e, 2);
  assert_int_equal(decode_bytes(e.b, e.n), B2S_S2_E_DUP);
  b2s_s2e_reset(&e); b2s_s2e_map(&e, 1); b2s_s2e_text(&e, "type"); b2s_s2e_text(&e, "end");
  assert_int_equal(decode_bytes(e.b, e.n), B2S_S2_E_MISSING);
  b2s_s2e_reset(&e); b2s_s2e_map(&e, 3); b2s_s2e_text(&e, "type"); b2s_s2e_text(&e, "image");
  b2s_s2e_text(&e, "series_id"); b2s_s2e_uint(&e, 1); b2s_s2e_text(&e, "image_id"); b2s_s2e_uint(&e, 1);
  assert_int_equal(decode_bytes(e.b, e.n), B2S_S2_E_MISSING);
  /* wrong field types */
  b2s_s2e_reset(&e); b2s_s2e_map(&e, 2); b2s_s2e_text(&e, "type"); b2s_s2e_text(&e, "end");
  b2s_s2e_text(&e, "series_id"); b2s_s2e_text(&e, "1");
  assert_int_equal(decode_bytes(e.b, e.n), B2S_S2_E_FIELD);
  b2s_s2e_reset(&e); b2s_s2e_map(&e, 5); b2s_s2e_text(&e, "type"); b2s_s2e_text(&e, "image");
  b2s_s2e_text(&e, "series_id"); b2s_s2e_uint(&e, 1); b2s_s2e_text(&e, "image_id"); b2s_s2e_uint(&e, 1);
  b2s_s2e_text(&e, "data"); b2s_s2e_map(&e, 0);
  b2s_s2e_text(&e, "real_time"); b2s_s2e_rational(&e, 1, 0);
  assert_int_equal(decode_bytes(e.b, e.n), B2S_S2_E_FIELD);
  /* 17 channels */
  b2s_s2e_reset(&e); b2s_s2e_map(&e, 3); b2s_s2e_text(&e, "type"); b2s_s2e_text(&e, "start");
  b2s_s2e_text(&e, "series_id"); b2s_s2e_uint(&e, 1); b2s_s2e_text(&e, "channels"); b2s_s2e_array(&e, 17);
  for (int i = 0; i < 17; i++)
    b2s_s2e_text(&e, "c");
  assert_int_equal(decode_bytes(e.b, e.n), B2S_S2_E_LIMIT);
  /* nesting bomb inside user_data */
  b2s_s2e_reset(&e); b2s_s2e_map(&e, 3); b2s_s2e_text(&e, "type"); b2s_s2e_text(&e, "end");
  b2s_s2e_text(&e, "series_id"); b2s_s2e_uint(&e, 1); b2s_s2e_text(&e, "user_data");
  for (int i = 0; i < 100; i++)
    b2s_s2e_array(&e, 1);
  b2s_s2e_uint(&e, 0);
  assert_int_equal(decode_bytes(e.b, e.n), B2S_S2_E_LIMIT);
  /* trailing garbage after the map; a map claiming 2^60 entries */
  b2s_s2e_reset(&e); b2s_s2e_end(&e, 1, "u"); b2s_s2e_uint(&e, 0);
  assert_int_equal(decode_bytes(e.b, e.n), B2S_S2_E_CBOR);
  b2s_s2e_reset(&e); b2s_s2e_map(&e, 1ull << 60);
  assert_true(decode_bytes(e.b, e.n) < 0);
  /* a byte string longer than the message */
  b2s_s2e_reset(&e); b2s_s2e_map(&e, 2); b2s_s2e_text(&e, "type"); b2s_s2e_text(&e, "end");
  b2s_s2e_text(&e, "x"); b2s_s2e_head(&e, 2, 1u << 30);
  assert_int_equal(decode_bytes(e.b, e.n), B2S_S2_E_CBOR);
  assert_int_equal(decode_bytes(NULL, 0), B2S_S2_E_CBOR);
  b2s_s2e_free(&e);
}

/* Seeds written by python3-cbor2 (tests/fuzz/stream2_seeds.py). */
static uint8_t *slurp(const char *name, size_t *n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", getenv("B2S_S2_SEEDS"), name);
  return ts_read_file(path, n);
}

static void test_cbor2_seeds(void **state) {
  (void)state;
  if (!getenv("B2S_S2_SEEDS"))
    skip();
  size_t n;
  b2s_s2_msg *m = malloc(sizeof *m);
  uint8_t *b = slurp("start_full.cbor", &n);
  assert_memory_equal(b, "\xd9\xd9\xf7", 3);       /* tagged, as sent */
  assert_int_equal(b2s_s2_decode(b, n, m), 0);
  assert_int_equal(m->type, B2S_S2_START);
  assert_int_equal(m->nchannels, 2);
  b2s_s2_named ff[4];
  uint32_t nff;
  const b2s_s2_field *f = b2s_s2_field_get(m, "flatfield");
  assert_non_null(f);
  assert_int_equal(b2s_s2_array_map(f->value, ff, 4, &nff), 0);
  assert_int_equal(nff, 2);
  assert_string_equal(ff[0].a.dtype, "<f4");
  assert_int_equal(ff[0].a.dim[0], 4);
  assert_int_equal(ff[0].a.dim[1], 6);
  b2s_s2_array lut;
  f = b2s_s2_field_get(m, "countrate_correction_lookup_table");
  assert_int_equal(b2s_s2_array_parse(f->value, &lut), 0);
  assert_int_equal(lut.ndim, 1);
  assert_int_equal(lut.dim[0], 16);
  assert_string_equal(lut.dtype, "<u4");
  free(b);
  b = slurp("image_bslz4.cbor", &n);
  assert_int_equal(b2s_s2_decode(b, n, m), 0);
  assert_int_equal(m->image_id, 3);
  assert_int_equal(m->data[0].a.comp, B2S_S2_BSLZ4);
  /* The seed holds pixels i % 251 (uint16, 4 x 6): decode them. */
  uint16_t px[24];
  b2s_h5_params hp = {.kind = B2S_H5_BSLZ4, .elem_size = 2, .typesize = 2, .clevel = 5};
  assert_int_equal(b2s_h5_decompress(&hp, m->data[0].a.data.p, m->data[0].a.data.len,
                                     px, sizeof px), (int)sizeof px);
  for (int i = 0; i < 24; i++)
    assert_int_equal(px[i], i % 251);
  free(b);
  /* untagged, no dtype or size, arrays as byte strings: taken */
  b = slurp("start_bare.cbor", &n);
  assert_int_equal(b[0] >> 5, 5);                  /* a bare map */
  assert_int_equal(b2s_s2_decode(b, n, m), 0);
  assert_int_equal(m->type, B2S_S2_START);
  assert_int_equal(m->image_dtype.len, 0);
  assert_int_equal(m->image_size_x, 0);
  assert_int_equal(m->number_of_images, 2);
  assert_true(str_is(m->arm_date, "2026-11-28T11:00:00.000+01:00"));
  assert_true(b2s_s2_array_map(b2s_s2_field_get(m, "flatfield")->value, ff, 4, &nff) < 0);
  free(b);
  free(m);
}

/* Every message the sender makes begins with tag 55799 (d9 d9 f7), as a
 * detector's does; the same message without it decodes to the same
 * fields, and the tag before a value or twice at the top changes nothing. */
static void test_self_described(void **state) {
  (void)state;
  b2s_s2enc e[3] = {{0}, {0}, {0}};
  uint16_t pix[4 * 6] = {1, 2, 3};
  b2s_s2e_part part = {"threshold_1", 2, 4, 6, NULL, pix, sizeof pix, 0};
  b2s_s2e_start(&e[0], 3, "u3", CH, 2, "uint16", 4, 6, 2, 0);
  b2s_s2e_image(&e[1], 3, "u3", 1, &part, 1, 0, 1, 1, 10, "x");
  b2s_s2e_end(&e[2], 3, "u3");
  b2s_s2_msg *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  for (int k = 0; k < 3; k++) {
    assert_true(e[k].n > 3);
    assert_memory_equal(e[k].b, "\xd9\xd9\xf7", 3);
    assert_int_equal(b2s_s2_decode(e[k].b, e[k].n, a), 0);
    assert_int_equal(b2s_s2_decode(e[k].b + 3, e[k].n - 3, b), 0);
    assert_int_equal(a->type, k + 1);
    assert_int_equal(a->type, b->type);
    assert_int_equal(a->series_id, 3);
    assert_int_equal(b->series_id, 3);
    assert_true(str_is(a->series_unique_id, "u3") && str_is(b->series_unique_id, "u3"));
    assert_int_equal(a->nfields, b->nfields);
    for (uint32_t i = 0; i < a->nfields; i++) {   /* the same spans, 3 on */
      assert_int_equal(a->fields[i].value.len, b->fields[i].value.len);
      assert_ptr_equal(a->fields[i].value.p, b->fields[i].value.p);
    }
  }
  assert_int_equal(a->type, B2S_S2_END);
  /* twice at the top, and before series_id's value and a typed array */
  b2s_s2enc t = {0};
  b2s_s2e_selfdescribe(&t);
  b2s_s2e_selfdescribe(&t);
  b2s_s2e_map(&t, 4);
  b2s_s2e_text(&t, "type"); b2s_s2e_selfdescribe(&t); b2s_s2e_text(&t, "image");
  b2s_s2e_text(&t, "series_id"); b2s_s2e_selfdescribe(&t); b2s_s2e_uint(&t, 8);
  b2s_s2e_text(&t, "image_id"); b2s_s2e_uint(&t, 2);
  b2s_s2e_text(&t, "data"); b2s_s2e_map(&t, 1); b2s_s2e_text(&t, "c");
  b2s_s2e_selfdescribe(&t);
  b2s_s2e_mdarray(&t, &part);
  assert_int_equal(b2s_s2_decode(t.b, t.n, a), 0);
  assert_int_equal(a->type, B2S_S2_IMAGE);
  assert_int_equal(a->series_id, 8);
  assert_int_equal(a->ndata, 1);
  assert_memory_equal(a->data[0].a.data.p, pix, sizeof pix);
  /* a tag alone is no message; another tag at the top is not a map */
  assert_int_equal(decode_bytes((const uint8_t *)"\xd9\xd9\xf7", 3), B2S_S2_E_CBOR);
  b2s_s2e_reset(&t);
  b2s_s2e_tag(&t, 55800);
  b2s_s2e_raw(&t, e[2].b + 3, e[2].n - 3);
  assert_int_equal(decode_bytes(t.b, t.n), B2S_S2_E_TYPE);
  b2s_s2e_free(&t);
  for (int k = 0; k < 3; k++)
    b2s_s2e_free(&e[k]);
  free(a);
  free(b);
}

/* A start without image_dtype and image_size_x/y (the first image gives
 * them): taken, with those views empty. */
static void test_start_without_layout(void **state) {
  (void)state;
  b2s_s2enc e = {0};
  b2s_s2e_start(&e, 4, "u4", CH, 1, NULL, 0, 0, 9, 0);
  b2s_s2_msg *m = malloc(sizeof *m);
  assert_int_equal(b2s_s2_decode(e.b, e.n, m), 0);
  assert_int_equal(m->type, B2S_S2_START);
  assert_int_equal(m->nfields, 12);
  assert_int_equal(m->image_dtype.len, 0);
  assert_int_equal(m->image_size_x, 0);
  assert_int_equal(m->image_size_y, 0);
  assert_int_equal(m->number_of_images, 9);
  assert_null(b2s_s2_field_get(m, "image_dtype"));
  assert_null(b2s_s2_field_get(m, "image_size_x"));
  free(m);
  b2s_s2e_free(&e);
}

/* Fields kept only as metadata may have another shape than the spec's
 * (as in the start recorded from an EIGER2 Si 16M: its arrays plain 4-byte
 * byte strings, threshold_energy for a channel it does not list): the
 * start is taken, the arrays do not parse as arrays, and they convert to
 * metadata.  The fields images are stored by stay checked. */
static void test_metadata_shapes(void **state) {
  (void)state;
  b2s_s2enc e = {0};
  b2s_s2e_map(&e, 9);
  b2s_s2e_text(&e, "type"); b2s_s2e_text(&e, "start");
  b2s_s2e_text(&e, "series_id"); b2s_s2e_uint(&e, 15614);
  b2s_s2e_text(&e, "series_unique_id"); b2s_s2e_uint(&e, 7);     /* not text */
  b2s_s2e_text(&e, "arm_date"); b2s_s2e_tag(&e, 1); b2s_s2e_uint(&e, 1700000000);
  b2s_s2e_text(&e, "channels"); b2s_s2e_array(&e, 1); b2s_s2e_text(&e, "threshold_1");
  b2s_s2e_text(&e, "countrate_correction_lookup_table"); b2s_s2e_bytes(&e, "\0\0\0\0", 4);
  b2s_s2e_text(&e, "flatfield"); b2s_s2e_map(&e, 1);
  b2s_s2e_text(&e, "threshold_1"); b2s_s2e_bytes(&e, "\0\0\0\0", 4);
  b2s_s2e_text(&e, "pixel_mask"); b2s_s2e_uint(&e, 0);
  b2s_s2e_text(&e, "threshold_energy"); b2s_s2e_map(&e, 2);
  b2s_s2e_text(&e, "threshold_1"); b2s_s2e_f64(&e, 6750.15);
  b2s_s2e_text(&e, "threshold_2"); b2s_s2e_text(&e, "n/a");
  b2s_s2_msg *m = malloc(sizeof *m);
  assert_int_equal(b2s_s2_decode(e.b, e.n, m), 0);
  assert_int_equal(m->series_id, 15614);
  assert_int_equal(m->series_unique_id.len, 0);
  assert_int_equal(m->arm_date.len, 0);
  b2s_s2_named named[4];
  uint32_t n;
  b2s_s2_array a;
  assert_true(b2s_s2_array_map(b2s_s2_field_get(m, "flatfield")->value, named, 4, &n) < 0);
  assert_true(b2s_s2_array_map(b2s_s2_field_get(m, "pixel_mask")->value, named, 4, &n) < 0);
  assert_true(b2s_s2_array_parse(b2s_s2_field_get(m, "countrate_correction_lookup_table")->value, &a) < 0);
  /* as metadata: {"threshold_1": bin 4} */
  b2s_mpbuf mp;
  b2s_mpbuf_init(&mp);
  assert_int_equal(b2s_s2_to_msgpack(b2s_s2_field_get(m, "flatfield")->value, &mp, 1024), 0);
  static const uint8_t want[] = {0x81, 0xab, 't', 'h', 'r', 'e', 's', 'h', 'o', 'l',
                                 'd', '_', '1', 0xc4, 4, 0, 0, 0, 0};
  assert_int_equal(mp.len, sizeof want);
  assert_memory_equal(mp.data, want, sizeof want);
  b2s_mpbuf_fini(&mp);
  /* a field images are stored by, of the wrong type, is still refused */
  b2s_s2e_reset(&e);
  b2s_s2e_map(&e, 3);
  b2s_s2e_text(&e, "type"); b2s_s2e_text(&e, "start");
  b2s_s2e_text(&e, "series_id"); b2s_s2e_uint(&e, 1);
  b2s_s2e_text(&e, "image_size_x"); b2s_s2e_text(&e, "4148");
  assert_int_equal(b2s_s2_decode(e.b, e.n, m), B2S_S2_E_FIELD);
  assert_string_equal(m->err_field, "image_size_x");
  b2s_s2e_reset(&e);
  b2s_s2e_map(&e, 3);
  b2s_s2e_text(&e, "type"); b2s_s2e_text(&e, "start");
  b2s_s2e_text(&e, "series_id"); b2s_s2e_uint(&e, 1);
  b2s_s2e_text(&e, "image_dtype"); b2s_s2e_uint(&e, 16);
  assert_int_equal(b2s_s2_decode(e.b, e.n, m), B2S_S2_E_FIELD);
  assert_string_equal(m->err_field, "image_dtype");
  free(m);
  b2s_s2e_free(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_start),
    cmocka_unit_test(test_image),
    cmocka_unit_test(test_end_and_rationals),
    cmocka_unit_test(test_hostile_arrays),
    cmocka_unit_test(test_hostile_messages),
    cmocka_unit_test(test_cbor2_seeds),
    cmocka_unit_test(test_self_described),
    cmocka_unit_test(test_start_without_layout),
    cmocka_unit_test(test_metadata_shapes),
  };
  return ts_run_tests(tests, NULL, NULL);
}
