/* File names of an acquisition (docs/ACQUISITIONS.md 3.3, 3.4): the
 * template, its expansion and its match against a directory's entries,
 * and which file and chunk a frame goes to.  Pure functions.
 *
 * A template is literal text (A-Z a-z 0-9 . _ - +) and the placeholders
 * {id} {stream} {channel} {file} {file:0N} (N 1..12).  Values: the id and
 * a stream's name follow the id rule (at most 64 bytes of A-Z a-z 0-9 . _
 * -, not starting with '.'); a channel's name is made file-safe by
 * b2s_acq_channel_fs_name (at most 64 bytes). */
#ifndef B2S_ACQ_NAMES_H
#define B2S_ACQ_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b2s_acq_errors.h"

#define B2S_ACQ_TEMPLATE_MAX 255
#define B2S_ACQ_TEMPLATE_MIN 9               /* "x.b2frame" */
#define B2S_ACQ_NAME_PART_MAX 64             /* id, stream, channel */
#define B2S_ACQ_FILE_WIDTH_MAX 12
#define B2S_ACQ_FILE_NAME_MAX 255
#define B2S_ACQ_SUFFIX ".b2frame"
#define B2S_ACQ_RECORDS_SUFFIX ".records.b2frame"

enum b2s_acq_seg_kind {
  B2S_ACQ_SEG_LIT, B2S_ACQ_SEG_ID, B2S_ACQ_SEG_STREAM, B2S_ACQ_SEG_CHANNEL,
  B2S_ACQ_SEG_FILE,
};

typedef struct b2s_acq_seg {
  uint8_t kind;                      /* enum b2s_acq_seg_kind */
  uint8_t width;                     /* FILE: 0 (none) or 1..12 */
  uint16_t off, len;                 /* LIT: its bytes in text */
} b2s_acq_seg;

typedef struct b2s_acq_template {
  char text[B2S_ACQ_TEMPLATE_MAX + 1];
  b2s_acq_seg seg[B2S_ACQ_TEMPLATE_MAX + 1];
  int nseg;
  bool has_id, has_stream, has_channel, has_file;
} b2s_acq_template;

/* The values of the placeholders; NULL: not known yet (a source's stream
 * and channel at arm), which b2s_acq_template_match takes as any name. */
typedef struct b2s_acq_namevals {
  const char *id, *stream, *channel;
} b2s_acq_namevals;

/* Parse text by the syntax of 3.3: its length (9..255), literal
 * characters, placeholders, the .b2frame ending (not .records.b2frame).
 * 0 or B2S_ACQ_E_BAD_TEMPLATE (field file_template). */
int b2s_acq_template_parse(const char *text, b2s_acq_template *t,
                           b2s_acq_err *e);

/* The rules that depend on the arm: {file when frames_per_file is not 0,
 * {channel} for a source input, no name that starts with '.', and every
 * name at most 255 bytes with the longest values it can have (known ones
 * as given, unknown ones 64 bytes) and the longest file number the
 * acquisition can reach (b2s_acq_file_max).  0 or B2S_ACQ_E_BAD_TEMPLATE. */
int b2s_acq_template_check(const b2s_acq_template *t, bool source_input,
                           uint64_t frames, uint32_t frames_per_file,
                           const b2s_acq_namevals *v, b2s_acq_err *e);

/* The name of file number `file` (>= 1) into out[cap]: its length, or
 * B2S_E_ARG (a value missing or not a safe name part), -ENAMETOOLONG. */
int b2s_acq_template_expand(const b2s_acq_template *t,
                            const b2s_acq_namevals *v, uint64_t file,
                            char *out, size_t cap);

/* Whether `name` is a name the template can give (any file number from 1
 * to 2^63 - 1, unknown values any name part), or the records companion
 * of one.  Each placeholder is matched on its own: a template that has
 * one twice also matches names where the two differ, never fewer names
 * than it can give. */
bool b2s_acq_template_match(const b2s_acq_template *t,
                            const b2s_acq_namevals *v, const char *name);

/* The records companion's name of a data file's name ("X.b2frame" ->
 * "X.records.b2frame"): its length, or -ENAMETOOLONG. */
int b2s_acq_records_name(const char *data, char *out, size_t cap);

/* Whether s[0..n) is an id (or a stream name): 1..64 bytes of A-Z a-z
 * 0-9 . _ -, not starting with '.'. */
bool b2s_acq_id_valid(const char *s, size_t n);

/* A channel's name made safe for a file name: characters other than
 * A-Z a-z 0-9 . _ - + become '_', a leading '.' too, cut at 64 bytes
 * (at a character boundary); "" becomes "_".  Returns the length. */
int b2s_acq_channel_fs_name(const char *channel, char *out, size_t cap);

/* ---- frames, files and chunks (3.4) ------------------------------------ */

/* Where frame f (the acquisition's number, from 0) goes: file number
 * (from 1) and chunk index within it. */
void b2s_acq_place(uint32_t frames_per_file, uint64_t f, uint64_t *file,
                   uint64_t *chunk);
/* The first frame of file number `file` (>= 1). */
uint64_t b2s_acq_file_first(uint32_t frames_per_file, uint64_t file);
/* The largest file number the acquisition can reach: frames > 0, the file
 * of frame frames - 1; frames 0 (until stopped), the file of frame
 * 2^63 - 2. */
uint64_t b2s_acq_file_max(uint64_t frames, uint32_t frames_per_file);

/* The acquisition's frame number of a producer frame number: 0 and *f, or
 * B2S_E_FRAME_LATE when it is below first_frame.  Without first_frame the
 * caller numbers frames by arrival. */
int b2s_acq_frame_number(uint64_t first_frame, uint64_t producer_frame,
                         uint64_t *f);

#endif
