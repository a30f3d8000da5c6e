/* The I/O thread's reorder window (order.h). */
#include "order.h"

#include <stdlib.h>

#include "b2s_errors.h"

enum { EMPTY = 0, PENDING = 1, STORED = 2 };

int b2sd_window_init(b2sd_window *win, uint32_t w) {
  *win = (b2sd_window){.w = w ? w : 1};
  win->state = calloc(2 * (size_t)win->w, 1);
  return win->state ? 0 : B2S_E_NOMEM;
}

void b2sd_window_fini(b2sd_window *win) {
  free(win->state);
  win->state = NULL;
}

static uint8_t *slot(const b2sd_window *win, uint64_t f) {
  return &win->state[f % (2 * (uint64_t)win->w)];
}

int b2sd_window_check(const b2sd_window *win, uint64_t f) {
  if (!win->known)
    return 0;
  if (f < win->next) {
    bool recent = win->next - f <= win->w;
    return recent && *slot(win, f) == STORED ? B2S_E_FRAME_DUP
                                             : B2S_E_FRAME_LATE;
  }
  /* window + JUMP_MAX ahead is the farthest allowed (METADATA.md 4) */
  if (f - win->next > (uint64_t)win->w + B2SD_ORDER_JUMP_MAX)
    return B2S_E_ARG;
  if (f - win->next < win->w && *slot(win, f) == PENDING)
    return B2S_E_FRAME_DUP;
  return 0;
}

/* The window passes its first frame number: stored when it came, a gap
 * otherwise; the slot of the frame entering at the far end is cleared. */
static void pass(b2sd_window *win) {
  uint8_t *s = slot(win, win->next);
  *s = *s == PENDING ? STORED : EMPTY;
  *slot(win, win->next + win->w) = EMPTY;   /* = next - w: leaves */
  win->next++;
}

void b2sd_window_take(b2sd_window *win, uint64_t f) {
  if (!win->known) {
    win->known = true;
    win->next = win->max = f;
  }
  while (f - win->next >= win->w)
    pass(win);
  *slot(win, f) = PENDING;
  if (f > win->max)
    win->max = f;
  while (*slot(win, win->next) == PENDING && win->next <= win->max)
    pass(win);
}

void b2sd_window_drain(b2sd_window *win) {
  while (win->known && win->next <= win->max)
    pass(win);
}
