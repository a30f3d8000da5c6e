/* A small CBOR encoder and DECTRIS Stream V2 message builder, written from
 * RFC 8949 / RFC 8746 and DECTRIS's stream_v2 README, for tests and
 * benchmarks (an independent implementation of what a detector sends). */
#ifndef B2S_S2ENC_H
#define B2S_S2ENC_H

#include <stddef.h>
#include <stdint.h>

typedef struct s2enc {
  uint8_t *b;
  size_t n, cap;
} s2enc;

void s2_reset(s2enc *e);
void s2_free(s2enc *e);
void s2_head(s2enc *e, int major, uint64_t v);
void s2_uint(s2enc *e, uint64_t v);
void s2_text(s2enc *e, const char *s);
void s2_bytes(s2enc *e, const void *p, size_t n);
void s2_raw(s2enc *e, const void *p, size_t n);   /* pre-encoded CBOR */
void s2_map(s2enc *e, uint64_t n);
void s2_array(s2enc *e, uint64_t n);
void s2_tag(s2enc *e, uint64_t t);
void s2_f64(s2enc *e, double d);
void s2_bool(s2enc *e, int v);
void s2_rational(s2enc *e, uint64_t num, uint64_t den);

/* One channel's image: elem_size 1/2/4 (uint, LE tags 64/69/70), payload
 * raw (comp NULL), or compressed with "bslz4"/"lz4" framing bytes. */
typedef struct s2_image_part {
  const char *channel;
  uint32_t elem_size;
  uint64_t ny, nx;
  const char *comp;                /* NULL, "bslz4" or "lz4" */
  const void *data;
  size_t len;
} s2_image_part;

void s2_start(s2enc *e, uint64_t series_id, const char *uid,
              const char *const *channels, int nch, const char *dtype,
              uint64_t ny, uint64_t nx, uint64_t nimages);
void s2_image(s2enc *e, uint64_t series_id, const char *uid, uint64_t image_id,
              const s2_image_part *parts, int nparts, uint64_t t_start,
              uint64_t t_stop, uint64_t t_real, uint64_t timebase,
              const char *user_data_text);
void s2_end(s2enc *e, uint64_t series_id, const char *uid);
/* A multi-dimensional typed array (tag 40 + tag 64/69/70 [+ 56500]). */
void s2_mdarray(s2enc *e, const s2_image_part *p);

#endif
