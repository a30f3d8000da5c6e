/* Read admission decisions (see readbudget.h). */
#include "readbudget.h"

int64_t b2sd_read_budget(int64_t memory_limit) {
  return memory_limit / B2SD_READS_MEMORY_DIV;
}

int64_t b2sd_read_result_bytes(bool decompress, int32_t nbytes,
                               int32_t cbytes) {
  return decompress ? nbytes : cbytes;
}

bool b2sd_read_session_headroom(int issued) {
  return issued < B2SD_READS_SESSION;
}

bool b2sd_read_follow_headroom(int issued) {
  return issued < B2SD_READS_FOLLOW;
}

bool b2sd_read_count_headroom(int admitted) {
  return admitted < B2SD_READS_MAX;
}

b2sd_admit b2sd_read_admit_bytes(int64_t budget, int64_t held,
                                 int64_t session_held, int64_t bytes) {
  /* one read always goes when nothing is held, whatever its size, so a
   * chunk larger than the budget is still read */
  bool room = held == 0 || held + bytes <= budget;
  int64_t share = budget / B2SD_READS_SESSION_DIV;
  bool room_s = session_held == 0 || session_held + bytes <= share;
  if (!room)
    return B2SD_ADMIT_WAIT_DAEMON;
  return room_s ? B2SD_ADMIT : B2SD_ADMIT_WAIT_SESSION;
}
