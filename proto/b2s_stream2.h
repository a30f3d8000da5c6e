/* Decoder of DECTRIS Stream V2 messages (CBOR, RFC 8949): start, image and
 * end, with RFC 8746 typed arrays (tags 64..87), multi-dimensional arrays
 * (tag 40) and the DECTRIS compression tag 56500 (bslz4, lz4).  The
 * self-described CBOR tag 55799 (d9 d9 f7), which detectors put before
 * every message, is passed over wherever it stands, so messages with and
 * without it decode the same.
 *
 * What is checked: the fields the daemon stores images by (series_id,
 * channels, image_dtype, image_size_x/y, number_of_images; image_id,
 * data, start/stop/real_time) must have the spec's CBOR type, else
 * B2S_S2_E_FIELD with err_field naming the field.  Every other field,
 * the start's arrays (flatfield, pixel_mask,
 * countrate_correction_lookup_table), threshold_energy and the dates
 * included, need only be well-formed CBOR: it is metadata, and its view
 * here (arm_date, series_date, series_unique_id) is left empty when its
 * type is not the spec's.
 *
 * Zero copy: strings, byte strings and raw CBOR spans in the decoded message
 * point into the caller's buffer, which must outlive the message.  Every
 * size is checked against the buffer and the limits below, so a hostile
 * message is an error (B2S_S2_E_*), never an out-of-bounds read. */
#ifndef B2S_STREAM2_H
#define B2S_STREAM2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define B2S_S2_MAX_CHANNELS 16
#define B2S_S2_MAX_DIMS 4
#define B2S_S2_MAX_FIELDS 128      /* top-level keys of one message */
#define B2S_S2_MAX_DEPTH 32        /* nesting inside user data and the like */
#define B2S_S2_MAX_NAME 64         /* channel name bytes */
#define B2S_S2_MAX_ID 256          /* series_unique_id, dtype, date bytes */

enum b2s_s2_type { B2S_S2_START = 1, B2S_S2_IMAGE = 2, B2S_S2_END = 3 };
enum b2s_s2_comp { B2S_S2_RAW = 0, B2S_S2_BSLZ4 = 1, B2S_S2_LZ4 = 2 };

#define B2S_S2_ERRORS(X)                                                     \
  X(B2S_S2_E_CBOR, -1, "malformed or truncated CBOR")                         \
  X(B2S_S2_E_TYPE, -2, "missing or unknown message type")                     \
  X(B2S_S2_E_FIELD, -3, "field of the wrong CBOR type")                       \
  X(B2S_S2_E_TAG, -4, "unknown or misplaced CBOR tag")                        \
  X(B2S_S2_E_SIZE, -5, "array size disagrees with its shape or limits")       \
  X(B2S_S2_E_LIMIT, -6, "too many fields, channels, dimensions or levels")    \
  X(B2S_S2_E_DUP, -7, "field given twice")                                    \
  X(B2S_S2_E_MISSING, -8, "required field missing")                           \
  X(B2S_S2_E_COMP, -9, "unknown compression or bad compressed framing")

enum b2s_s2_error {
#define B2S_S2_ENUM(name, val, msg) name = val,
  B2S_S2_ERRORS(B2S_S2_ENUM)
#undef B2S_S2_ENUM
};

const char *b2s_s2_strerror(int code);

typedef struct b2s_s2_str { const char *p; size_t len; } b2s_s2_str;
typedef struct b2s_s2_span { const uint8_t *p; size_t len; } b2s_s2_span;
typedef struct b2s_s2_rational { uint64_t num, den; } b2s_s2_rational;

/* A (multi-dimensional) typed array, row major. */
typedef struct b2s_s2_array {
  uint32_t ndim;                   /* 1 for a plain typed array */
  uint64_t dim[B2S_S2_MAX_DIMS];
  uint64_t tag;                    /* RFC 8746 tag, 64..87 */
  char dtype[5];                   /* NumPy dtype string, e.g. "<u2" */
  uint32_t elem_size;
  int comp;                        /* enum b2s_s2_comp */
  uint32_t comp_elem;              /* bslz4 modifier (element size) */
  b2s_s2_span data;                /* raw, or the compressed framing */
  int64_t nbytes;                  /* decoded size = prod(dim) * elem_size */
} b2s_s2_array;

typedef struct b2s_s2_named { b2s_s2_str name; b2s_s2_array a; } b2s_s2_named;
typedef struct b2s_s2_field { b2s_s2_str key; b2s_s2_span value; } b2s_s2_field;

typedef struct b2s_s2_msg {
  int type;                        /* enum b2s_s2_type */
  bool has_series_id;
  uint64_t series_id;
  b2s_s2_str series_unique_id;
  /* start */
  uint32_t nchannels;
  b2s_s2_str channels[B2S_S2_MAX_CHANNELS];
  b2s_s2_str image_dtype, arm_date;
  uint64_t image_size_x, image_size_y, number_of_images;
  /* image */
  bool has_image_id, has_times;
  uint64_t image_id;
  b2s_s2_rational start_time, stop_time, real_time;
  b2s_s2_str series_date;
  uint32_t ndata;
  b2s_s2_named data[B2S_S2_MAX_CHANNELS];
  b2s_s2_span user_data;           /* raw CBOR item; len 0 when absent */
  /* Every top-level field as raw CBOR, in message order (metadata). */
  uint32_t nfields;
  b2s_s2_field fields[B2S_S2_MAX_FIELDS];
  const char *err_field;           /* the field an error was found in */
} b2s_s2_msg;

/* Decode one message.  Returns 0 or a B2S_S2_E_* code. */
int b2s_s2_decode(const void *buf, size_t len, b2s_s2_msg *m);

/* Decode a raw CBOR span holding a typed or multi-dimensional array (e.g. a
 * start message's countrate table), or a map of channel name -> array
 * (flatfield, pixel_mask) into out[0..max); *n gets the count. */
int b2s_s2_array_parse(b2s_s2_span s, b2s_s2_array *a);
int b2s_s2_array_map(b2s_s2_span s, b2s_s2_named *out, uint32_t max,
                     uint32_t *n);

/* Find a top-level field of a decoded message; NULL when absent. */
const b2s_s2_field *b2s_s2_field_get(const b2s_s2_msg *m, const char *key);
/* A field's value as a text string: 0, or an error when it is not one. */
int b2s_s2_text(b2s_s2_span v, b2s_s2_str *s);

/* Append the CBOR item s as msgpack to out (tags dropped, their content
 * kept; typed arrays become bin; indefinite lengths refused), at most max
 * bytes.  0, or an error with out as it was. */
struct b2s_mpbuf;
int b2s_s2_to_msgpack(b2s_s2_span s, struct b2s_mpbuf *out, size_t max);

/* A rational time in nanoseconds, exact when den divides num * 1e9 (else
 * rounded down); false when it does not fit in int64. */
bool b2s_s2_rational_ns(b2s_s2_rational r, int64_t *ns);

#endif
