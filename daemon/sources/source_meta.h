/* The series metadata of a Stream V2 series' channel streams (docs/
 * SOURCES.md section 4): the start message's fields, the layout the series
 * is stored in, the beamline facts of the source's configuration.  Plain
 * functions of the decoded start; I/O thread only. */
#ifndef B2SD_SOURCE_META_H
#define B2SD_SOURCE_META_H

#include <stdbool.h>
#include <stdint.h>

#include "b2s_config.h"
#include "b2s_msgpack.h"
#include "b2s_stream2.h"

/* The start's arrays that go to companion streams when they have the
 * spec's shape: 0 flatfield, 1 pixel_mask (maps of channel -> array),
 * 2 countrate_correction_lookup_table (one array).  key: the start field,
 * stream: the companion stream's suffix. */
#define B2SD_S2_NARRAYS 3
extern const char *const b2sd_s2_array_key[B2SD_S2_NARRAYS];
extern const char *const b2sd_s2_array_stream[B2SD_S2_NARRAYS];

/* Whether the start has array field k; whether it has the spec's shape
 * (then it is stored in companion streams, else kept as metadata). */
bool b2sd_s2_array_given(const b2s_s2_msg *start, int k);
bool b2sd_s2_array_ok(const b2s_s2_msg *start, int k);

/* How the series is stored: from_image[k] says image_dtype (0),
 * image_size_x (1), image_size_y (2) came from the first image, not from
 * the start, and so are written from here. */
typedef struct b2sd_s2_layout {
  const char *dtype;                 /* NumPy dtype, "<u2" */
  int64_t ny, nx;
  bool from_image[3];
} b2sd_s2_layout;

/* The spec's name of a NumPy dtype: "<u2" -> "uint16", "<f4" -> "float32". */
void b2sd_s2_dtype_name(const char *np, char *out, size_t cap);

/* Channel `channel`'s series metadata, one msgpack map, into out (reset
 * first).  Returns how many start fields were left out (a value over the
 * metadata's 64 KiB, or CBOR msgpack cannot hold), the first one's key in
 * *dropped. */
uint32_t b2sd_s2_series_meta(const b2s_s2_msg *start, const char *channel,
                             const b2sd_s2_layout *lay,
                             const b2s_source_beamline *bl, b2s_mpbuf *out,
                             b2s_s2_str *dropped);

#endif
