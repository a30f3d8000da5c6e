/* libFuzzer target for the shared-memory header check (proto/shm.c),
 * which a producer runs on the segment the daemon hands it.
 *
 * Input: 8 bytes of little-endian mapping size, then the header image
 * (zero-padded to its full size).  Whatever the check accepts must
 * describe a layout that fits exactly in that mapping size. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_shm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void accepted(const b2s_shm_geometry *g, size_t map_size) {
  size_t descs = (size_t)g->nslots * sizeof(b2s_shm_desc);
  if (g->total_size != map_size || g->nslots == 0 ||
      g->nslots > B2S_SHM_MAX_SLOTS || g->slot_size == 0 ||
      g->slot_size > g->slot_stride || g->slot_stride % B2S_SHM_ALIGN != 0 ||
      g->data_offset % B2S_SHM_ALIGN != 0 ||
      g->desc_offset < sizeof(b2s_shm_header) ||
      g->desc_offset + descs > g->data_offset ||
      g->data_offset + (size_t)g->nslots * g->slot_stride != g->total_size ||
      g->creator_pid <= 0)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8)
    return 0;
  uint64_t map_size = 0;
  for (int i = 7; i >= 0; i--)
    map_size = map_size << 8 | data[i];
  data += 8, size -= 8;
  /* The check reads the header only, so a header-sized buffer stands for
   * a mapping of any size. */
  b2s_shm_header *h = calloc(1, sizeof *h);
  if (h == NULL)
    return 0;
  memcpy(h, data, size < sizeof *h ? size : sizeof *h);
  b2s_shm_geometry g;
  if (map_size <= SIZE_MAX &&
      b2s_shm_header_check(h, (size_t)map_size, &g) == 0)
    accepted(&g, (size_t)map_size);
  free(h);
  return 0;
}
