/* Frame-number order (order: frame_number, docs/METADATA.md section 5):
 * the reorder window.
 *
 * The same window runs twice on the same input.  The I/O thread runs it
 * (b2sd_window, in the stream) to answer a late or duplicate frame number
 * at once; the writer runs it (in its own state, stream.c) to hold chunks
 * back and append them in frame order, placing a gap where a frame number
 * was passed without a buffer.  Both see the frame numbers in seq order,
 * start alike and drain at the same seqs (drain markers), so they decide
 * alike.  Each is owned by its one thread. */
#ifndef B2SD_ORDER_H
#define B2SD_ORDER_H

#include <stdbool.h>
#include <stdint.h>

/* Frame numbers further ahead than window + this are refused (B2S_E_ARG):
 * every frame number passed becomes a gap chunk. */
#define B2SD_ORDER_JUMP_MAX 65536

typedef struct b2sd_window {
  bool known;                  /* a first frame number was seen */
  uint64_t next;               /* the next frame number to store */
  uint64_t max;                /* the highest frame number given */
  uint32_t w;                  /* window: next .. next + w - 1 held */
  uint8_t *state;              /* 2w slots, frame f at f % 2w: frames
                                  next - w .. next + w - 1 */
} b2sd_window;

int b2sd_window_init(b2sd_window *win, uint32_t w);
void b2sd_window_fini(b2sd_window *win);
/* 0, or why frame f is refused: B2S_E_FRAME_LATE (behind the window or
 * passed as a gap), B2S_E_FRAME_DUP (stored or waiting), B2S_E_ARG (too
 * far ahead). */
int b2sd_window_check(const b2sd_window *win, uint64_t f);
/* Frame f goes to the writer (checked before). */
void b2sd_window_take(b2sd_window *win, uint64_t f);
/* Everything taken is stored or passed: the window moves past the highest
 * frame number taken. */
void b2sd_window_drain(b2sd_window *win);

#endif
