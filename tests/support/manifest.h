/* MANIFEST.json of the reference vectors, parsed into plain structs.
 *
 * Everything is copied out of the JSON document at load time, so the tests
 * use ordinary fields and one mf_free releases it all. */
#ifndef B2S_TEST_MANIFEST_H
#define B2S_TEST_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b2s_chunk.h"
#include "vecdata.h"

/* How a chunk's expected content is generated (spec section 10). */
typedef struct mf_data {
  char formula[64];
  uint64_t seed, offset, nbytes;
  bool has_transform;              /* only kind "truncprec" exists */
  int trunc_prec_bits, trunc_typesize;
} mf_data;

typedef struct mf_chunk {
  int64_t index, nbytes, cbytes;
  char sha256[65];
  bool content_defined;
  mf_data data;
  bool has_header_hex;             /* frames: the stored 32-byte header */
  uint8_t header[32];
  bool has_index_value;
  int64_t index_value;
  bool stored_as_special_index_value;
  char made_with[48];              /* special constructor, or "" */
} mf_chunk;

typedef struct mf_params {
  char codec[16];
  int compcode, clevel;
  int32_t typesize, blocksize;
  uint8_t filters[B2S_MAX_FILTERS];
  int8_t filters_meta[B2S_MAX_FILTERS];  /* TRUNC_PREC takes negative ones */
  int splitmode;                   /* 1 always, 2 never, 3 auto, 4 fwd compat */
  bool use_dict;
  int nthreads;
} mf_params;

/* Parsed chunk header of a kind "chunk" entry. */
typedef struct mf_header {
  bool present, extended_header;
  int version, versionlz, flags, typesize, compformat;
  int32_t nbytes, blocksize, cbytes;
  bool memcpyed, dont_split;
  bool has_ext;                    /* the fields below: 32-byte header only */
  uint8_t filters[B2S_MAX_FILTERS], filters_meta[B2S_MAX_FILTERS];
  int udcompcode, compcode_meta, blosc2_flags, blosc2_flags2;
  int special;                     /* enum b2s_special */
  bool use_dict, vl_blocks;
  int32_t nblocks;
} mf_header;

typedef struct mf_b2nd {
  bool present;
  vec_b2nd nd;
  mf_data logical;
  char logical_sha256[65];
} mf_b2nd;

typedef struct mf_entry {
  char *name, *file, *kind, *api, *note;  /* never NULL ("" when absent) */
  int64_t offset;                  /* frames: start inside the file */
  mf_params params;
  mf_header header;
  mf_b2nd b2nd;
  size_t nchunks;
  mf_chunk *chunks;
} mf_entry;

typedef struct mf_manifest {
  char *dir;
  size_t nentries;
  mf_entry *entries;
} mf_manifest;

/* Load dir/MANIFEST.json.  NULL (with a message on stderr) on failure. */
mf_manifest *mf_load(const char *dir);

/* Load from $B2S_VECTORS (set by meson from the option `vectors`).  When it
 * is unset or holds no manifest, returns NULL with *missing = true and fills
 * why (if not NULL) with where the vectors were expected and how to point
 * the build at them: callers skip.  A manifest that exists but does not
 * parse gives NULL with *missing = false: callers fail. */
mf_manifest *mf_load_env(char *why, size_t whylen, bool *missing);

void mf_free(mf_manifest *m);

const mf_entry *mf_find(const mf_manifest *m, const char *name);

/* Whole file dir/relpath in a malloc'ed buffer (at least 1 byte even when
 * empty); NULL on error. */
uint8_t *mf_read_path(const mf_manifest *m, const char *relpath, size_t *len);
uint8_t *mf_read_file(const mf_manifest *m, const mf_entry *e, size_t *len);

/* Expected decoded content of chunk c of entry e (formula, b2nd layout and
 * transform applied) in a malloc'ed buffer of c->data.nbytes bytes (at
 * least 1 allocated); NULL for an unknown formula or no memory. */
uint8_t *mf_expected(const mf_entry *e, const mf_chunk *c);

/* The raw formula bytes (no transform): the input that was compressed. */
uint8_t *mf_source(const mf_entry *e, const mf_chunk *c);

/* Name mappings; -1 when unknown. */
int mf_codec_code(const char *codec);
int mf_splitmode_code(const char *splitmode);
int mf_special_code(const char *special);

/* Compression parameters of an entry as b2s_cparams. */
void mf_cparams(const mf_params *p, b2s_cparams *cp);

#endif
