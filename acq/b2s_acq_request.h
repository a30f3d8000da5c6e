/* An arm request (docs/ACQUISITIONS.md 3.1): parsed from its JSON body,
 * checked member by member (check 2 of 6.1), with every default applied;
 * its canonical form, so that a repeated arm is recognised (6.2); its
 * series as the msgpack map the files get (3.5).
 *
 * What needs the daemon's configuration or the file system is left to the
 * caller, in the order of 6.1: whether a stream input has `order:
 * frame_number` (b2s_acq_request_check_order), the directory as written
 * (check 7, b2s_acq_request_check_directory, after the input's checks),
 * the directory resolved (check 8), and the merge of `series` over the
 * input's defaults.
 *
 * Ownership: a request owns its series buffers; _fini frees them. */
#ifndef B2S_ACQ_REQUEST_H
#define B2S_ACQ_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "b2s_acq_errors.h"
#include "b2s_acq_names.h"

#define B2S_ACQ_ID_MAX 64
#define B2S_ACQ_ENDPOINT_MAX 1024
#define B2S_ACQ_DIR_MAX 4095
#define B2S_ACQ_SERIES_MAX (64 << 10)        /* encoded as msgpack */
#define B2S_ACQ_DEFAULT_TEMPLATE "{id}_{channel}_{file:06}.b2frame"
#define B2S_ACQ_SERIES_KEY "b2stream_acquisition"

enum b2s_acq_input { B2S_ACQ_INPUT_STREAM = 1, B2S_ACQ_INPUT_SOURCE = 2 };
enum b2s_acq_overwrite { B2S_ACQ_REFUSE = 0, B2S_ACQ_REPLACE = 1 };
enum b2s_acq_on_loss { B2S_ACQ_LOSS_FAIL = 0, B2S_ACQ_LOSS_COUNT = 1 };

typedef struct b2s_acq_request {
  char id[B2S_ACQ_ID_MAX + 1];
  int input;                         /* enum b2s_acq_input */
  char input_name[B2S_ACQ_ENDPOINT_MAX + 1];  /* stream name or endpoint */
  char template_name[B2S_ACQ_ID_MAX + 1];     /* stream's template, "" */
  char directory[B2S_ACQ_DIR_MAX + 1];  /* as written, trailing '/' cut */
  bool create_directory;
  char file_template[B2S_ACQ_TEMPLATE_MAX + 1];
  b2s_acq_template tmpl;             /* file_template parsed */
  uint64_t frames;                   /* 0 .. 2^63-1; 0: until stopped */
  uint32_t frames_per_file;          /* 0 .. 2^31-1 */
  bool has_first_frame;
  uint64_t first_frame;
  char *series;                      /* canonical JSON of `series` */
  uint8_t *series_mp;                /* the same as a msgpack map */
  size_t series_mp_len;
  int overwrite;                     /* enum b2s_acq_overwrite */
  int on_loss;                       /* enum b2s_acq_on_loss */
} b2s_acq_request;

void b2s_acq_request_init(b2s_acq_request *r);
void b2s_acq_request_fini(b2s_acq_request *r);
/* A deep copy into dst, which is initialised (b2s_acq_request_init) or a
 * request, whose buffers are freed; copying a request onto itself does
 * nothing.  0 or -ENOMEM (dst unchanged). */
int b2s_acq_request_copy(b2s_acq_request *dst, const b2s_acq_request *src);

/* The body text of an arm: b2s_acq_json_parse, then
 * b2s_acq_request_from_json.  0 or the refusal (bad_json, unknown_field,
 * bad_field, bad_id, bad_template, bad_series) with e filled; -ENOMEM. */
int b2s_acq_request_parse(const char *body, size_t len, b2s_acq_request *out,
                          b2s_acq_err *e);
/* The same from a parsed object (the journal's `request` too).  Members
 * are checked in the order of 3.1 after the unknown ones. */
int b2s_acq_request_from_json(json_object *o, b2s_acq_request *out,
                              b2s_acq_err *e);

/* first_frame is for `order: frame_number` streams only (check 2):
 * 0 or B2S_ACQ_E_BAD_FIELD. */
int b2s_acq_request_check_order(const b2s_acq_request *r,
                                bool frame_number_order, b2s_acq_err *e);

/* Check 7 of 6.1, the directory as written: absolute, no empty, `.` or
 * `..` component (refused even where it would stay inside a root), valid
 * UTF-8, and not the file system's root (no root may be `/`: it holds
 * `data_dir`); the trailing '/' the parse cut does not count.  0 or
 * B2S_ACQ_E_BAD_DIRECTORY (field directory). */
int b2s_acq_request_check_directory(const b2s_acq_request *r, b2s_acq_err *e);

/* The request as the object's `request` member: every member, defaults
 * applied, in the order of 3.1; with_series false leaves `series` out (the
 * lists, the `armed` event).  NULL: no memory. */
json_object *b2s_acq_request_json(const b2s_acq_request *r, bool with_series);
/* The canonical form: that object with series, as one line (malloc'ed).
 * Two requests are the same arm exactly when their canonical forms are
 * equal. */
char *b2s_acq_request_canonical(const b2s_acq_request *r);

/* 0 when a and b are the same arm (6.2); else 1 and *member names the
 * first member of 3.1 that differs. */
int b2s_acq_request_compare(const b2s_acq_request *a,
                            const b2s_acq_request *b, const char **member);

#endif
