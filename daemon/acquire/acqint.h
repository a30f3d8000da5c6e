/* Inside the registry (registry.h): one held acquisition, and the files
 * that share it: registry.c (the list, the states, the routes), armcheck.c
 * (checks 7-11 of 6.1, against the file system), acqobj.c (its JSON). */
#ifndef B2SD_ACQINT_H
#define B2SD_ACQINT_H

#include "acqfile.h"
#include "b2s_acq_json.h"
#include "b2s_acq_request.h"
#include "registry.h"
#include "streamobj.h"

enum b2sd_acq_reason {
  B2SD_END_NONE = 0, B2SD_END_STOP, B2SD_END_ABORT, B2SD_END_FRAMES,
  B2SD_END_FAILURE, B2SD_END_DAEMON_STOPPED,
};

typedef struct b2sd_acq {
  struct b2sd_acq *next;             /* in arm order */
  b2s_acq_request req;
  int state;                         /* enum b2sd_acq_state */
  int reason;                        /* enum b2sd_acq_reason */
  int fail;                          /* enum b2s_acq_failure, 0 none */
  char fail_msg[256];
  int64_t t_armed, t_writing, t_closing, t_ended;   /* us, -1: not yet */
  char armed_by[64], stopped_by[64], aborted_by[64];
  char resolved[B2S_CONFIG_PATH_MAX];
  b2sd_acqplan *plan;                /* owned; its writer borrows it */
  b2sd_stream *st;                   /* the input, until another
                                        acquisition takes it */
  /* the input's figures at arm, and its counts frozen at the end */
  uint64_t bytes_in0;
  uint64_t received, refused_after, bytes_received;
  /* what the last turn reported (events) */
  uint64_t seen_committed, seen_files;
  uint64_t last_progress_ns;
  /* check 11's figures */
  int64_t disk_free, disk_needed, disk_floor, frame_bytes;
  double ratio;
} b2sd_acq;

struct b2sd_acqreg {
  b2sd_server *srv;
  b2sd_acq *list;
  size_t n;
  b2sd_acq_hook hook;
  void *hook_arg;
};

/* ---- armcheck.c ----------------------------------------------------------- */

/* Check 8: resolve a->req.directory against the roots into a->resolved;
 * *missing: the part below the deepest existing directory (created after
 * the checks with create_directory).  0 or an API code in e. */
int b2sd_acq_check_dir(const b2s_daemon_cfg *d, b2sd_acq *a, bool *missing,
                       b2s_acq_err *e);
/* Check 9: no entry of the directory is a name of the template (or its
 * records companion).  0 or B2S_ACQ_E_FILES_EXIST. */
int b2sd_acq_check_names(const b2sd_acq *a, b2s_acq_err *e);
/* Check 11: the disk estimate against free space (figures into a). */
int b2sd_acq_check_disk(const b2s_daemon_cfg *d, b2sd_acq *a, b2s_acq_err *e);
/* Make the missing directories below the root (mode 0750). */
int b2sd_acq_make_dir(const b2sd_acq *a);

/* ---- acqobj.c ------------------------------------------------------------- */

typedef struct b2sd_acq_counts {
  uint64_t received, written, committed, gaps, discarded, refused_after,
      bytes_received, bytes_written, files;
} b2sd_acq_counts;

/* The counters as they are now (5): 0 committed before writing. */
void b2sd_acq_counts_get(const b2sd_acq *a, b2sd_acq_counts *c);
/* The acquisition's object (9.5); with_series false: the lists'. */
json_object *b2sd_acq_object(const b2sd_acq *a, bool with_series);
/* Its file objects after file number `after`, at most limit; *more:
 * files past the page. */
json_object *b2sd_acq_file_list(const b2sd_acq *a, uint64_t after, int limit,
                                bool *more);
/* A reply of status with body o (consumed). */
void b2sd_acq_reply_json(int status, json_object *o, b2sd_acq_reply *out);
const char *b2sd_acq_reason_name(int reason);
int64_t b2sd_acq_now_us(void);

#endif
