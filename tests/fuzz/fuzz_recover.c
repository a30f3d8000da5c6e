/* Recovery of a contiguous frame from arbitrary bytes: it must never
 * crash, and when it reports success the frame must open. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "b2s_frame.h"
#include "b2s_frame_writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/dev/shm/b2s-fuzz-recover-%d", (int)getpid());
  FILE *f = fopen(path, "wb");
  if (f == NULL)
    return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  b2s_recover_report rep;
  if (b2s_frame_recover(path, false, &rep, NULL) == 0) {
    b2s_frame *fr;
    if (b2s_frame_open(path, &fr, NULL) != 0)
      abort();
    b2s_frame_free(fr);
  }
  unlink(path);
  return 0;
}
