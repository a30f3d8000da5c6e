/* The msgpack subset used by Blosc2 frame headers, trailers and the b2nd
 * metalayer.
 *
 * c-blosc2 never writes the shortest msgpack form: it always picks a fixed
 * width (int32 for header_len, uint64 for frame_len, ...) so that fields sit
 * at fixed offsets.  The readers below therefore each accept exactly one
 * encoding and reject any other marker; they never read past the end of the
 * buffer.  All multi-byte values are big endian (msgpack rule).
 *
 * Reader errors: B2S_E_MSGPACK when the marker is not the expected one,
 * B2S_E_TRUNCATED when the value runs past the end of the buffer.  On error
 * the cursor is left on the offending marker, so r->pos is the byte offset
 * to report.
 *
 * Ownership: a reader borrows its buffer; pointers it hands out (strings,
 * binary contents) point into that buffer.  A b2s_mpbuf owns its data; the
 * writers append to it and grow it as needed. */
#ifndef B2S_MSGPACK_H
#define B2S_MSGPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Markers of the fixed-width encodings c-blosc2 writes. */
enum {
  B2S_MP_FIXINT_MAX = 0x7f,
  B2S_MP_FIXMAP = 0x80,
  B2S_MP_FIXARRAY = 0x90,
  B2S_MP_FIXSTR = 0xa0,
  B2S_MP_FALSE = 0xc2,
  B2S_MP_TRUE = 0xc3,
  B2S_MP_BIN32 = 0xc6,
  B2S_MP_UINT16 = 0xcd,
  B2S_MP_UINT32 = 0xce,
  B2S_MP_UINT64 = 0xcf,
  B2S_MP_INT16 = 0xd1,
  B2S_MP_INT32 = 0xd2,
  B2S_MP_INT64 = 0xd3,
  B2S_MP_FIXEXT16 = 0xd8,
  B2S_MP_STR8 = 0xd9,
  B2S_MP_STR32 = 0xdb,
  B2S_MP_ARRAY16 = 0xdc,
  B2S_MP_MAP16 = 0xde,
};

typedef struct b2s_mpreader {
  const uint8_t *buf;
  size_t len;
  size_t pos;                      /* next byte to read */
} b2s_mpreader;

void b2s_mpreader_init(b2s_mpreader *r, const void *buf, size_t len);

/* Bytes left after the cursor. */
size_t b2s_mpreader_left(const b2s_mpreader *r);

/* Big-endian loads without a marker (for fields located by offset). */
uint16_t b2s_mp_load_be16(const uint8_t *p);
uint32_t b2s_mp_load_be32(const uint8_t *p);
uint64_t b2s_mp_load_be64(const uint8_t *p);
void b2s_mp_store_be16(uint8_t *p, uint16_t v);
void b2s_mp_store_be32(uint8_t *p, uint32_t v);
void b2s_mp_store_be64(uint8_t *p, uint64_t v);

/* Readers.  Each consumes marker + payload and returns 0, or a negative
 * error without moving the cursor. */
int b2s_mp_read_fixarray(b2s_mpreader *r, uint8_t *n);        /* 0x90..0x9f */
int b2s_mp_read_fixint(b2s_mpreader *r, uint8_t *v);          /* 0x00..0x7f */
/* fixstr: *s points at the n bytes of the string (not NUL-terminated). */
int b2s_mp_read_fixstr(b2s_mpreader *r, const uint8_t **s, uint8_t *n);
int b2s_mp_read_str8(b2s_mpreader *r, const uint8_t **s, uint8_t *n);
int b2s_mp_read_str32(b2s_mpreader *r, const uint8_t **s, uint32_t *n);
int b2s_mp_read_bin32(b2s_mpreader *r, const uint8_t **s, uint32_t *n);
int b2s_mp_read_int16(b2s_mpreader *r, int16_t *v);
int b2s_mp_read_int32(b2s_mpreader *r, int32_t *v);
int b2s_mp_read_int64(b2s_mpreader *r, int64_t *v);
int b2s_mp_read_uint16(b2s_mpreader *r, uint16_t *v);
int b2s_mp_read_uint32(b2s_mpreader *r, uint32_t *v);
int b2s_mp_read_uint64(b2s_mpreader *r, uint64_t *v);
int b2s_mp_read_map16(b2s_mpreader *r, uint16_t *n);
int b2s_mp_read_array16(b2s_mpreader *r, uint16_t *n);
/* fixext16: the type byte and a pointer to the 16 data bytes. */
int b2s_mp_read_fixext16(b2s_mpreader *r, int8_t *type, const uint8_t **data);
int b2s_mp_read_bool(b2s_mpreader *r, bool *v);
/* n raw bytes without a marker. */
int b2s_mp_read_raw(b2s_mpreader *r, size_t n, const uint8_t **p);

/* Growable output buffer.  Zero-initialised (or b2s_mpbuf_init) is empty. */
typedef struct b2s_mpbuf {
  uint8_t *data;
  size_t len, cap;
} b2s_mpbuf;

void b2s_mpbuf_init(b2s_mpbuf *b);
void b2s_mpbuf_fini(b2s_mpbuf *b);
/* Make room for `extra` more bytes; B2S_E_NOMEM on failure. */
int b2s_mpbuf_reserve(b2s_mpbuf *b, size_t extra);

/* Writers.  Each appends one value and returns 0, B2S_E_NOMEM, or B2S_E_ARG
 * when the value does not fit the encoding (fixarray > 15 elements, fixstr
 * > 31 bytes, fixint > 127, lengths > UINT32_MAX). */
int b2s_mp_write_raw(b2s_mpbuf *b, const void *p, size_t n);
int b2s_mp_write_fixarray(b2s_mpbuf *b, uint8_t n);
int b2s_mp_write_fixint(b2s_mpbuf *b, uint8_t v);
int b2s_mp_write_fixstr(b2s_mpbuf *b, const void *s, size_t n);
int b2s_mp_write_str8(b2s_mpbuf *b, const void *s, size_t n);
int b2s_mp_write_str32(b2s_mpbuf *b, const void *s, size_t n);
int b2s_mp_write_bin32(b2s_mpbuf *b, const void *s, size_t n);
int b2s_mp_write_int16(b2s_mpbuf *b, int16_t v);
int b2s_mp_write_int32(b2s_mpbuf *b, int32_t v);
int b2s_mp_write_int64(b2s_mpbuf *b, int64_t v);
int b2s_mp_write_uint16(b2s_mpbuf *b, uint16_t v);
int b2s_mp_write_uint32(b2s_mpbuf *b, uint32_t v);
int b2s_mp_write_uint64(b2s_mpbuf *b, uint64_t v);
int b2s_mp_write_map16(b2s_mpbuf *b, uint16_t n);
int b2s_mp_write_array16(b2s_mpbuf *b, uint16_t n);
int b2s_mp_write_fixext16(b2s_mpbuf *b, int8_t type, const uint8_t data[16]);
int b2s_mp_write_bool(b2s_mpbuf *b, bool v);

/* ---- any value, shortest form (series metadata, chunk records) ---------
 *
 * Series metadata and chunk records are read by python-blosc2 with
 * msgpack.unpackb and may be written by it with packb(use_bin_type=True),
 * so here every encoding is accepted on read, and the writers pick the
 * shortest form, as packb does. */

enum b2s_mptype {
  B2S_MPT_NIL, B2S_MPT_BOOL, B2S_MPT_UINT, B2S_MPT_INT, B2S_MPT_FLOAT,
  B2S_MPT_STR, B2S_MPT_BIN, B2S_MPT_ARRAY, B2S_MPT_MAP, B2S_MPT_EXT,
};

/* One value's header.  UINT: every unsigned encoding and the signed ones
 * holding a value >= 0 (u); INT: negative values (i).  STR, BIN, EXT: p
 * points at the n payload bytes (EXT: ext_type).  ARRAY, MAP: n elements
 * (pairs) follow; b2s_mp_read_any consumed only the header. */
typedef struct b2s_mpval {
  int type;                        /* enum b2s_mptype */
  bool b;
  uint64_t u;
  int64_t i;
  double f;
  const uint8_t *p;
  uint32_t n;
  int8_t ext_type;
} b2s_mpval;

/* Containers nested inside a value that b2s_mp_skip accepts: a map holding
 * at most 32 levels of containers (so 33 with the map itself), exactly
 * what the wire's map check accepts (docs/PROTOCOL.md section 2.4), so that
 * what the daemon acknowledges it can store.  Hostile input cannot
 * recurse deeper. */
#define B2S_MP_MAX_DEPTH 32

/* Read one value's header (and a string's, bin's or ext's payload).
 * B2S_E_MSGPACK for the never-used marker 0xc1, B2S_E_TRUNCATED when the
 * value runs past the end; the cursor does not move on error. */
int b2s_mp_read_any(b2s_mpreader *r, b2s_mpval *v);
/* Skip one whole value (containers included) with at most max_depth levels
 * of containers inside it (B2S_E_MSGPACK for a container deeper, even an
 * empty one; scalars inside the deepest ones are fine); every element count is checked against the
 * bytes left, so hostile counts cost no more than the input's length. */
int b2s_mp_skip(b2s_mpreader *r, int max_depth);

int b2s_mp_put_nil(b2s_mpbuf *b);
int b2s_mp_put_uint(b2s_mpbuf *b, uint64_t v);
int b2s_mp_put_int(b2s_mpbuf *b, int64_t v);  /* >= 0 is written as uint */
int b2s_mp_put_float64(b2s_mpbuf *b, double v);
int b2s_mp_put_str(b2s_mpbuf *b, const void *s, size_t n);
int b2s_mp_put_bin(b2s_mpbuf *b, const void *s, size_t n);
int b2s_mp_put_array(b2s_mpbuf *b, uint32_t n);
int b2s_mp_put_map(b2s_mpbuf *b, uint32_t n);

/* Whether s[0..n) is valid UTF-8 (no overlong forms, no surrogates). */
bool b2s_utf8_valid(const uint8_t *s, size_t n);
/* Length of the well-formed UTF-8 sequence at s (at most n bytes, n > 0):
 * 1 for ASCII, 2-4 for a multi-byte one, 0 when there is none. */
size_t b2s_utf8_seq(const uint8_t *s, size_t n);

#endif
