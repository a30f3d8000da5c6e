/* A stand-in XDS plugin for the driver's own test: "opens" a .npy of
 * int32 (frames, y, x) and gives its frames as they are, or, by
 * $XDS_FAKE_MODE, refuses to open (refuse), changes pixel (1, 2) of frame 2
 * (flip), or aborts in frame 2 (abort), as a reader may. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xds_npy.h"

void plugin_open(const char *filename, int info[1024], int *error_flag);
void plugin_get_header(int *nx, int *ny, int *nbytes, float *qx, float *qy,
                       int *number_of_frames, int info[1024], int *error_flag);
void plugin_get_data(int *frame_number, int *nx, int *ny, int *data_array,
                     int info[1024], int *error_flag);
void plugin_close(int *error_flag);

static xds_npy a;

static const char *mode(void) {
  const char *m = getenv("XDS_FAKE_MODE");
  return m ? m : "";
}

void plugin_open(const char *filename, int info[1024], int *error_flag) {
  info[0] = 0;
  *error_flag = strcmp(mode(), "refuse") && xds_npy_read(filename, &a, 3) == 0 &&
                a.itemsize == 4 ? 0 : -4;
}

void plugin_get_header(int *nx, int *ny, int *nbytes, float *qx, float *qy,
                       int *number_of_frames, int info[1024], int *error_flag) {
  (void)info;
  *nx = (int)a.shape[2];
  *ny = (int)a.shape[1];
  *nbytes = 2;
  *qx = *qy = 75e-6f;
  *number_of_frames = (int)a.shape[0];
  *error_flag = 0;
}

void plugin_get_data(int *frame_number, int *nx, int *ny, int *data_array,
                     int info[1024], int *error_flag) {
  (void)info;
  int f = *frame_number;
  if (f < 1 || (size_t)f > a.shape[0] || *nx != (int)a.shape[2] ||
      *ny != (int)a.shape[1]) {
    *error_flag = -2;
    return;
  }
  if (f == 2 && !strcmp(mode(), "abort"))
    abort();
  size_t n = a.shape[1] * a.shape[2];
  for (size_t k = 0; k < n; k++)
    data_array[k] = (int)(int32_t)(uint32_t)xds_npy_item(&a, (size_t)(f - 1) * n + k);
  if (f == 2 && !strcmp(mode(), "flip"))
    data_array[1 * a.shape[2] + 2] += 1;
  *error_flag = 0;
}

void plugin_close(int *error_flag) {
  xds_npy_free(&a);
  *error_flag = 0;
}
