/* A small CBOR encoder and DECTRIS Stream V2 message builder, written from
 * RFC 8949 / RFC 8746 and DECTRIS's stream_v2 README: what a detector
 * sends, for the tests and benchmarks of the daemon's Stream V2 source
 * (an implementation independent of the decoder, proto/stream2.c).  Every
 * message begins, as a detector's does, with the self-described CBOR tag
 * 55799 (d9 d9 f7), which DECTRIS's own parser requires; the key `type`
 * comes first, as that parser also requires. */
#ifndef B2S_S2ENC_H
#define B2S_S2ENC_H

#include <stddef.h>
#include <stdint.h>

typedef struct b2s_s2enc {
  uint8_t *b;
  size_t n, cap;
} b2s_s2enc;

void b2s_s2e_reset(b2s_s2enc *e);
void b2s_s2e_free(b2s_s2enc *e);
void b2s_s2e_head(b2s_s2enc *e, int major, uint64_t v);
void b2s_s2e_uint(b2s_s2enc *e, uint64_t v);
void b2s_s2e_text(b2s_s2enc *e, const char *s);
void b2s_s2e_bytes(b2s_s2enc *e, const void *p, size_t n);
void b2s_s2e_raw(b2s_s2enc *e, const void *p, size_t n);   /* pre-encoded CBOR */
void b2s_s2e_map(b2s_s2enc *e, uint64_t n);
void b2s_s2e_array(b2s_s2enc *e, uint64_t n);
void b2s_s2e_tag(b2s_s2enc *e, uint64_t t);
void b2s_s2e_f64(b2s_s2enc *e, double d);
void b2s_s2e_bool(b2s_s2enc *e, int v);
void b2s_s2e_rational(b2s_s2enc *e, uint64_t num, uint64_t den);

/* One channel's image: elem_size 1/2/4 (uint, LE tags 64/69/70), payload
 * raw (comp NULL), or compressed with "bslz4"/"lz4" framing bytes. */
typedef struct b2s_s2e_part {
  const char *channel;
  uint32_t elem_size;
  uint64_t ny, nx;
  const char *comp;                /* NULL, "bslz4" or "lz4" */
  const void *data;
  size_t len;
  uint64_t tag;                    /* typed-array tag; 0: uint of elem_size */
} b2s_s2e_part;

/* Tag 55799 (self-described CBOR), 3 bytes. */
void b2s_s2e_selfdescribe(b2s_s2enc *e);

/* extra: key/value pairs the caller appends after the start's fields.
 * dtype NULL leaves image_dtype out, ny and nx 0 image_size_x/y (a start
 * of a spec revision without them: the first image says). */
void b2s_s2e_start(b2s_s2enc *e, uint64_t series_id, const char *uid,
              const char *const *channels, int nch, const char *dtype,
              uint64_t ny, uint64_t nx, uint64_t nimages, int extra);
void b2s_s2e_image(b2s_s2enc *e, uint64_t series_id, const char *uid, uint64_t image_id,
              const b2s_s2e_part *parts, int nparts, uint64_t t_start,
              uint64_t t_stop, uint64_t t_real, uint64_t timebase,
              const char *user_data_text);
void b2s_s2e_end(b2s_s2enc *e, uint64_t series_id, const char *uid);
/* A multi-dimensional typed array (tag 40 + tag 64/69/70 [+ 56500]). */
void b2s_s2e_mdarray(b2s_s2enc *e, const b2s_s2e_part *p);

#endif
