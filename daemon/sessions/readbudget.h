/* Read admission (readbudget.c): the bounds on reads of committed chunks
 * (READ, push follows) and the decision whether one more may be issued or
 * admitted.  Plain numbers in, decisions out; readers.c and follow.c keep
 * the counts (I/O thread) and the byte totals (under their lock). */
#ifndef B2SD_READBUDGET_H
#define B2SD_READBUDGET_H

#include <stdbool.h>
#include <stdint.h>

#define B2SD_READS_MAX 16         /* reads with result bytes, whole daemon */
#define B2SD_READS_SESSION 8      /* reads issued, per session */
#define B2SD_READS_FOLLOW 4       /* ... per push follow */
#define B2SD_READS_WAIT 1024      /* READs a session may have waiting */
/* Result bytes held by reads: memory_limit / MEMORY_DIV in the whole
 * daemon, a SESSION_DIV-th of that per session; one read at a time
 * whatever its size when nothing is held. */
#define B2SD_READS_MEMORY_DIV 4
#define B2SD_READS_SESSION_DIV 4

/* Why a read is not admitted yet (or that it is). */
typedef enum b2sd_admit {
  B2SD_ADMIT = 0,                /* reserve its bytes, read it */
  B2SD_ADMIT_WAIT_SESSION,       /* its session holds its share */
  B2SD_ADMIT_WAIT_DAEMON,        /* the daemon holds its budget */
} b2sd_admit;

/* The daemon's result bytes for a memory_limit. */
int64_t b2sd_read_budget(int64_t memory_limit);
/* The result bytes of a read: the chunk as stored or decompressed. */
int64_t b2sd_read_result_bytes(bool decompress, int32_t nbytes,
                               int32_t cbytes);
/* Room for one more read issued by a session with `issued` out, by a
 * push follow with `issued` out, admitted in the daemon with `admitted`
 * holding bytes. */
bool b2sd_read_session_headroom(int issued);
bool b2sd_read_follow_headroom(int issued);
bool b2sd_read_count_headroom(int admitted);
/* Room for `bytes` more result bytes, with `held` bytes held of `budget`
 * in the daemon and `session_held` of them by the read's session?  The
 * daemon's lack is reported first. */
b2sd_admit b2sd_read_admit_bytes(int64_t budget, int64_t held,
                                 int64_t session_held, int64_t bytes);

#endif
