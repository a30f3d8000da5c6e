/* Names of codecs and filters, and byte sizes with units: the one spelling
 * that the configuration, the b2stream tool, the benchmarks and the tests
 * share.
 *
 * Sizes are a decimal number of bytes with an optional unit right after
 * it or after one space.  Binary units: k, K, KiB = 1024; M, MiB = 1024^2;
 * G, GiB = 1024^3; T, TiB = 1024^4.  Decimal units: kB, KB = 1000; MB =
 * 1000^2; GB = 1000^3; TB = 1000^4.  B is 1.  Nothing else: no sign, no
 * fraction, no other whitespace, case as written here.
 *
 * Pure functions on static tables; every string returned is static. */
#ifndef B2S_NAMES_H
#define B2S_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "b2s_chunk.h"

/* X(name, code) for every codec name (blosclz is decoded only, but named
 * so that a file's codec can be shown and asked for). */
#define B2S_CODEC_NAMES(X)                                                     \
  X("blosclz", B2S_CODEC_BLOSCLZ)                                              \
  X("lz4", B2S_CODEC_LZ4)                                                      \
  X("lz4hc", B2S_CODEC_LZ4HC)                                                  \
  X("zlib", B2S_CODEC_ZLIB)                                                    \
  X("zstd", B2S_CODEC_ZSTD)

/* X(name, code) for every filter of a pipeline ("none", the empty slot,
 * is not one of them). */
#define B2S_FILTER_NAMES(X)                                                    \
  X("shuffle", B2S_FILTER_SHUFFLE)                                             \
  X("bitshuffle", B2S_FILTER_BITSHUFFLE)                                       \
  X("delta", B2S_FILTER_DELTA)                                                 \
  X("truncprec", B2S_FILTER_TRUNC_PREC)

/* X(name, code) for every split mode (enum b2s_splitmode). */
#define B2S_SPLIT_NAMES(X)                                                     \
  X("always", B2S_SPLIT_ALWAYS)                                                \
  X("never", B2S_SPLIT_NEVER)                                                  \
  X("auto", B2S_SPLIT_AUTO)                                                    \
  X("forward_compat", B2S_SPLIT_FORWARD_COMPAT)

/* The name of a split mode, or NULL. */
const char *b2s_split_name(int splitmode);

/* enum b2s_codec of name, or B2S_E_CODEC (also for NULL). */
int b2s_codec_from_name(const char *name);
/* The name of codec, or NULL when it has none. */
const char *b2s_codec_name(int codec);

/* enum b2s_filter of name, B2S_FILTER_NONE for "none", or B2S_E_FILTER
 * (also for NULL). */
int b2s_filter_from_name(const char *name);
/* The name of filter ("none" for B2S_FILTER_NONE), or NULL. */
const char *b2s_filter_name(int filter);

/* The size syntax in words, for messages. */
#define B2S_SIZE_SYNTAX                                                        \
  "a number of bytes, with an optional unit: k, K, KiB, M, MiB, G, GiB, T, "  \
  "TiB (powers of 1024) or kB, KB, MB, GB, TB (powers of 1000)"

/* The whole string s as a size (above) into *out: 0, or B2S_E_ARG when s
 * is NULL, malformed, or more than INT64_MAX bytes. */
int b2s_size_parse(const char *s, int64_t *out);

/* v in the largest binary unit that divides it exactly ("64MiB", "12KiB",
 * "1000", "0"), as snprintf into buf[n]; returns snprintf's result. */
int b2s_size_format(int64_t v, char *buf, size_t n);

#endif
