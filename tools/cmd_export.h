/* b2stream export: a frame as an HDF5 file the field's readers open
 * (docs/EXPORT.md).  cmd_export.c drives it; cmd_export_wrap.c turns a
 * stored chunk into what the HDF5 Blosc2 filter decodes,
 * cmd_export_bslz4.c into the bitshuffle filter's framing, cmd_export_h5.c
 * holds the HDF5 calls and cmd_export_nxmx.c the NeXus layout. */
#ifndef B2S_CMD_EXPORT_H
#define B2S_CMD_EXPORT_H

#include <hdf5.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "cli_nxmeta.h"
#include "b2s_frame_format.h"

/* HDF5 filter ids registered with The HDF Group. */
#define EXP_FILTER_BLOSC2 32026
#define EXP_FILTER_BSLZ4 32008

enum cli_exp_codec { EXP_CODEC_BLOSC2, EXP_CODEC_BSLZ4 };
enum cli_exp_layout { EXP_LAYOUT_PLAIN, EXP_LAYOUT_NXMX, EXP_LAYOUT_DECTRIS };

/* How the frame's chunks map onto the HDF5 dataset. */
typedef struct cli_exp_shape {
  int ndim;                        /* dataset rank */
  hsize_t dims[B2S_B2ND_MAX_DIM];  /* current extent */
  hsize_t chunk[B2S_B2ND_MAX_DIM]; /* one frame chunk per HDF5 chunk */
  int64_t grid[B2S_B2ND_MAX_DIM];  /* chunks along each dimension */
  int32_t typesize;
  int64_t chunk_nbytes;            /* bytes of one full chunk */
  bool b2nd;                       /* frame has a b2nd metalayer */
  bool unflat;                     /* b2nd (images, pixels) made (images,
                                      y, x) by the series' image_size_y/x */
  b2s_b2nd img;                    /* unflat: one image's b2nd, blocks of
                                      whole rows, for the Blosc2 filter */
  int64_t img_nbytes;              /* unflat: its chunk, padded to blocks */
  b2s_b2nd nd;                     /* its content when b2nd */
  char dtype_text[16];             /* nd's (and img's) dtype: the frame's
                                      copy goes when --follow reopens it */
  hid_t dtype;                     /* HDF5 type of an item (not owned) */
} cli_exp_shape;

/* One export: the source, the HDF5 file and its image dataset, buffers. */
typedef struct cli_exp_job {
  cli_src src;
  const char *out;
  int codec, layout;
  bool follow;                     /* --follow: SWMR, growing with the frame */
  int64_t idle_ms;                 /* --idle */
  cli_exp_shape sh;
  hid_t file, ds;
  int fd;                          /* a contiguous frame's file, or -1 */
  b2s_mpbuf buf;                   /* the HDF5 chunk being written */
  uint8_t *pad;                    /* chunk_nbytes: a decoded chunk */
  uint8_t *tmp;                    /* chunk_nbytes + 32 bytes */
  /* NXmx */
  cli_nx_beamline opt;             /* --source-name ... --beam-flux */
  const char *pixel_mask;          /* --pixel-mask FRAME */
  int64_t per_file;                /* dectris: images per data file */
  int nds;                         /* dectris: its data files, */
  hid_t *dfile, *dds;              /* their files and image datasets */
  char **dname;                    /* and names (to remove on failure) */
} cli_exp_job;

/* ---- cmd_export_wrap.c ---- */

/* One-chunk contiguous Blosc2 frame holding the stored chunk as it is
 * (plus the b2nd metalayer of one chunk when nd is not NULL), which the
 * Blosc2 filter's decompress path opens; appended to out. */
/* The same in two steps, for a caller that reads the chunk straight into
 * out between them: the header (for a chunk of cbytes), then the index
 * and trailer. */
int cli_exp_wrap_head(const b2s_frame_header *src, const b2s_b2nd *nd,
                      int32_t cbytes, int32_t nbytes, b2s_mpbuf *out);
int cli_exp_wrap_tail(b2s_mpbuf *out);
int cli_exp_wrap_cframe(const b2s_frame_header *src, const b2s_b2nd *nd,
                    const uint8_t *chunk, int32_t cbytes, int32_t nbytes,
                    b2s_mpbuf *out);

/* ---- cmd_export_bslz4.c ---- */

/* Chunk i (described by d) in bitshuffle+LZ4 framing into j->buf:
 * re-encoded from its decoded items in C order, or, when the stored chunk
 * already is bitshuffle+LZ4 in blocks the framing can hold, the same LZ4
 * blocks re-framed.  Prints the error. */
int cli_exp_bslz4_chunk(cli_exp_job *j, int64_t i, const cli_chunk *d);

/* ---- cmd_export_h5.c ---- */

/* Registers stand-ins for filters 32026 and 32008 in this process, so a
 * dataset can declare them; their filter functions fail, so HDF5 never
 * encodes through them: every chunk is written as is. */
int cli_exp_h5_register(void);

/* The dataset's shape from the frame (b2nd metalayer, else 1-d items of
 * the typesize, one chunk per frame chunk).  Prints the error. */
int cli_exp_shape_from(cli_src *src, cli_exp_shape *sh);
/* Extent for n frame chunks (dimension 0 grows). */
void cli_exp_shape_extent(cli_exp_shape *sh, int64_t n);
/* Dataset position of frame chunk i. */
void cli_exp_shape_offset(const cli_exp_shape *sh, int64_t i, hsize_t *off);

/* The image dataset at loc/name, chunked as sh, filtered by codec, its
 * first dimension unlimited when growing (--follow), else fixed. */
hid_t cli_exp_h5_dataset(hid_t loc, const char *name, const cli_exp_shape *sh,
                         int codec, const cli_chunk *first, bool growing);
/* Attributes and small datasets.  Strings are ASCII when their value is,
 * else UTF-8 (cmd_export_h5.c says why). */
int cli_exp_h5_attr_str(hid_t obj, const char *name, const char *value);
int cli_exp_h5_attr_double(hid_t obj, const char *name, double v);
int cli_exp_h5_attr_int(hid_t obj, const char *name, int64_t v);
int cli_exp_h5_attr_bytes(hid_t obj, const char *name, const void *v, size_t n);
int cli_exp_h5_attr_vec(hid_t obj, const char *name, const double *v, hsize_t n);

/* Attributes of the image dataset that let import restore the frame's
 * metadata byte for byte: the series map (msgpack) and the b2nd
 * metalayer as stored. */
#define EXP_ATTR_SERIES "b2stream_series_msgpack"
#define EXP_ATTR_B2ND "b2stream_b2nd_metalayer"
int cli_exp_h5_keep_meta(hid_t ds, cli_src *src, const cli_exp_shape *sh);
/* The frame's series map opened for reading: 1 with *map (to free), r
 * at its first key and *n entries; 0 when there is none, -1 when it is
 * not a map (*map to free all the same, NULL when none). */
int cli_exp_series_open(cli_src *src, uint8_t **map, b2s_mpreader *r,
                        uint32_t *n);
/* The frame's series map as JSON text (to free), or NULL. */
char *cli_exp_series_json(cli_src *src);
hid_t cli_exp_h5_group(hid_t loc, const char *name, const char *nx_class);
int cli_exp_h5_scalar_double(hid_t loc, const char *name, double v,
                         const char *units);
int cli_exp_h5_scalar_str(hid_t loc, const char *name, const char *v);
int cli_exp_h5_scalar_int(hid_t loc, const char *name, int64_t v,
                          const char *units);
int cli_exp_h5_scalar_bool(hid_t loc, const char *name, bool v);
int cli_exp_h5_vector(hid_t loc, const char *name, hid_t type, const void *v,
                  hsize_t n, const char *units);
int cli_exp_h5_strings(hid_t loc, const char *name, char **v, hsize_t n);

/* ---- cmd_export_nxmx.c ---- */

/* The NXmx file around the image dataset: /entry, the root attributes, and
 * the image dataset at /entry/data/data (nxmx) or, for the dectris
 * layout, the data files /entry/data/data_NNNNNN link to (j->dds).  Sets
 * j->ds (nxmx); returns 0 or -1 (reported). */
int cli_exp_nxmx_begin(cli_exp_job *j, const cli_chunk *first);
/* The instrument, sample, times and records for chunks [0, n), from the
 * series metadata (cli_nxmeta.h) and the options. */
int cli_exp_nxmx_finish(cli_exp_job *j, int64_t n);

/* ---- cmd_export_dectris.c ---- */

/* The dectris layout's data files for n images, each linked from the
 * master's group data as data_NNNNNN.  Returns 0 or -1 (reported). */
int cli_exp_dectris_begin(cli_exp_job *j, hid_t data, const cli_chunk *first,
                          int64_t n);
/* Close the data files; remove them when failed. */
int cli_exp_dectris_end(cli_exp_job *j, bool failed);
/* Dataset and position within it of frame chunk i. */
hid_t cli_exp_chunk_target(const cli_exp_job *j, int64_t i, hsize_t *off);

#endif
