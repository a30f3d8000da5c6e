/* Test images of the benchmarks (bench_images.h). */
#include <math.h>

#include "bench_images.h"

static uint64_t xs(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static double unit(uint64_t *s) {
  return (double)(xs(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* A 16-bit detector image: a smooth background (gradient plus a broad ring)
 * with shot noise (normal approximation of Poisson, sd = sqrt(level)) and a
 * few bright peaks; frame k shifts the pattern and reseeds the noise. */
void bench_detector_image(uint16_t *px, size_t npx, int k) {
  uint64_t s = 0x9e3779b97f4a7c15u ^ (uint64_t)(k + 1) * 0x2545f4914f6cdd1du;
  double cx = 512 + 7 * k, cy = 400 - 5 * k;
  for (size_t i = 0; i < npx; i++) {
    double x = (double)(i % IMG_WIDTH), y = (double)(i / IMG_WIDTH);
    double r = sqrt((x - cx) * (x - cx) + (y - cy) * (y - cy));
    double bg = 40 + 0.02 * x + 0.01 * y + 30 * exp(-(r - 300) * (r - 300) / 800);
    double g = (unit(&s) + unit(&s) + unit(&s) + unit(&s) - 2.0) * 1.7320508;
    double v = bg + sqrt(bg) * g;
    if ((i * 2654435761u + (size_t)k) % 50021 == 0)
      v += 5000 + 3000 * unit(&s);
    px[i] = (uint16_t)(v < 0 ? 0 : v > 65535 ? 65535 : v);
  }
}

/* A photon-counting detector frame (hybrid pixel detectors at
 * crystallography beamlines): most pixels see no photon in one exposure, a
 * diffuse ring and Bragg spots see a few.  Counts are Poisson, drawn by
 * inversion, so the frame is mostly zeros as real ones are. */
void bench_counting_image(uint16_t *px, size_t npx, int k) {
  uint64_t s = 0x94d049bb133111ebu ^ (uint64_t)(k + 1) * 0x2545f4914f6cdd1du;
  double cx = 512 + 3 * k, cy = 512 - 2 * k;
  for (size_t i = 0; i < npx; i++) {
    double x = (double)(i % IMG_WIDTH), y = (double)(i / IMG_WIDTH);
    double r = sqrt((x - cx) * (x - cx) + (y - cy) * (y - cy));
    double lam = 0.05 + 0.4 * exp(-(r - 250) * (r - 250) / 600);
    if ((i * 2654435761u + (size_t)k) % 9973 == 0)
      lam += 200;                       /* a Bragg spot */
    double u = unit(&s), p = exp(-lam), c = p;
    unsigned n = 0;
    while (u > c && n < 65535) {
      p *= lam / ++n;
      c += p;
      if (p < 1e-12 && n > lam)
        break;
    }
    px[i] = (uint16_t)n;
  }
}
