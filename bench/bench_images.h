/* Test images of the benchmarks (bench_e2e, bench_rados): 16-bit frames
 * of IMG_WIDTH pixels per row, made deterministically from their number.
 * Nothing is allocated: the caller hands in npx pixels. */
#ifndef B2S_BENCH_IMAGES_H
#define B2S_BENCH_IMAGES_H

#include <stddef.h>
#include <stdint.h>

#define IMG_WIDTH 1024            /* pixels per row of the test images */

/* A detector image: a smooth background (gradient plus a broad ring) with
 * shot noise and a few bright peaks; frame k shifts the pattern. */
void bench_detector_image(uint16_t *px, size_t npx, int k);

/* A photon-counting frame: mostly zeros, a diffuse ring, Bragg spots. */
void bench_counting_image(uint16_t *px, size_t npx, int k);

#endif
