/* XDS reads the export: series of a detector (8-, 16- and 32-bit, a
 * pixel mask, a gap, NODATA and saturated pixels) pushed as Stream V2 to
 * the real daemon, exported by the real b2stream in the dectris and nxmx
 * layouts with either codec, and read through the XDS plugin interface
 * (xds_plugin_check) by Durin ($B2S_DURIN_PLUGIN) and neggia
 * ($B2S_NEGGIA_PLUGIN), built outside the tree (docs/TESTING.md); each
 * frame must equal the pixels sent, as the reader turns them into XDS's
 * ints, masked.  bslz4 is read with no HDF5 filter plugin at all
 * (HDF5_PLUGIN_PATH an empty directory) where the reader's own decoder
 * serves; elsewhere through hdf5plugin's filters ($B2S_VENV).  Skipped
 * when neither reader is given. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <zmq.h>

#include "b2s_frame.h"
#include "b2s_h5lz4.h"
#include "b2s_s2enc.h"
#include "daemon_harness.h"
#include "venv_python.h"
#include "xds_npy.h"

static const char *const CH[] = {"threshold_1", "threshold_2"};
#define PIXEL_SIZE 75e-6

typedef struct series {
  uint64_t id;
  int nch, ts;
  uint64_t ny, nx;
  int nimages;
  uint64_t skip;                   /* an image id never sent (a gap) */
} series;

/* A 16-bit EIGER2 500K module with a dropped image; 32-bit of two
 * channels and odd sizes; 8-bit. */
static const series SERIES[] = {
  {.id = 11, .nch = 1, .ts = 2, .ny = 514, .nx = 1030, .nimages = 6, .skip = 4},
  {.id = 12, .nch = 2, .ts = 4, .ny = 37, .nx = 91, .nimages = 4},
  {.id = 13, .nch = 1, .ts = 1, .ny = 64, .nx = 96, .nimages = 5},
};
#define NSERIES (sizeof SERIES / sizeof SERIES[0])

/* Pixel k of image id, channel c: sparse counts, and at k = 1, 2, 3 the
 * NODATA value (all ones), a saturated count and the sign bit. */
static uint64_t pixel(const series *s, uint64_t k, uint64_t id, int c) {
  uint64_t top = s->ts == 8 ? ~0ull : (1ull << (8 * s->ts)) - 1;
  if (k == 1)
    return top;
  if (k == 2)
    return top - 1;
  if (k == 3)
    return 1ull << (8 * s->ts - 1);
  uint64_t v = (k * 7 + id * 13 + (uint64_t)c * 5) % 29 == 0
                   ? k + id * 31 + (uint64_t)c : k % 3;
  return v & top;
}

/* The detector's mask word of pixel k: gap, dead, noisy, bit 5 (which the
 * readers treat differently) and bit 31 (not a masking bit for either). */
static uint32_t mask_word(uint64_t k, int c) {
  k += (uint64_t)c * 3;
  return k % 97 == 5 ? 1 : k % 89 == 7 ? 2 : k % 83 == 11 ? 16
       : k % 79 == 13 ? 32 : k % 73 == 17 ? 1u << 31 : 0;
}

static void fill_image(const series *s, uint8_t *p, uint64_t id, int c) {
  for (uint64_t k = 0; k < s->ny * s->nx; k++) {
    uint64_t v = pixel(s, k, id, c);
    memcpy(p + k * (size_t)s->ts, &v, (size_t)s->ts);   /* little endian */
  }
}

static void send_msg(void *push, const b2s_s2enc *e) {
  assert_int_equal(zmq_send(push, e->b, e->n, 0), (int)e->n);
}

/* bslz4 as the detector frames it. */
static size_t bslz4(const void *raw, size_t n, int ts, uint8_t **out) {
  b2s_h5_params p = {.kind = B2S_H5_BSLZ4, .elem_size = ts, .typesize = ts,
                     .clevel = 5};
  size_t cap = b2s_h5_compress_bound(&p, 0, n);
  *out = malloc(cap);
  assert_non_null(*out);
  int64_t len = b2s_h5_compress(&p, 0, raw, n, *out, cap);
  assert_true(len > 0);
  return (size_t)len;
}

/* The start's fields beyond b2s_s2e_start's: geometry, beam, sensor,
 * and a pixel mask per channel (uint32, bslz4). */
static void start_extra(b2s_s2enc *e, const series *s) {
  b2s_s2e_text(e, "pixel_size_x"); b2s_s2e_f64(e, PIXEL_SIZE);
  b2s_s2e_text(e, "pixel_size_y"); b2s_s2e_f64(e, PIXEL_SIZE);
  b2s_s2e_text(e, "detector_translation"); b2s_s2e_array(e, 3);
  b2s_s2e_f64(e, 0.0); b2s_s2e_f64(e, 0.0); b2s_s2e_f64(e, 0.125);
  b2s_s2e_text(e, "frame_time"); b2s_s2e_f64(e, 0.002);
  b2s_s2e_text(e, "incident_energy"); b2s_s2e_f64(e, 12398.42);
  b2s_s2e_text(e, "incident_wavelength"); b2s_s2e_f64(e, 1.0);
  b2s_s2e_text(e, "saturation_value");
  b2s_s2e_uint(e, s->ts == 1 ? 254 : s->ts == 2 ? 65534 : 4000000);
  b2s_s2e_text(e, "sensor_material"); b2s_s2e_text(e, "Si");
  b2s_s2e_text(e, "sensor_thickness"); b2s_s2e_f64(e, 450e-6);
  b2s_s2e_text(e, "detector_serial_number"); b2s_s2e_text(e, "E-32-0123");
  b2s_s2e_text(e, "countrate_correction_enabled"); b2s_s2e_bool(e, 1);
  b2s_s2e_text(e, "flatfield_enabled"); b2s_s2e_bool(e, 0);
  b2s_s2e_text(e, "pixel_mask_enabled"); b2s_s2e_bool(e, 1);
  b2s_s2e_text(e, "virtual_pixel_interpolation_enabled"); b2s_s2e_bool(e, 0);
  b2s_s2e_text(e, "pixel_mask");
  b2s_s2e_map(e, (uint64_t)s->nch);
  size_t npix = s->ny * s->nx;
  uint32_t *m = malloc(npix * 4);
  assert_non_null(m);
  for (int c = 0; c < s->nch; c++) {
    for (size_t k = 0; k < npix; k++)
      m[k] = mask_word(k, c);
    uint8_t *z;
    size_t len = bslz4(m, npix * 4, 4, &z);
    b2s_s2e_part part = {CH[c], 4, s->ny, s->nx, "bslz4", z, len, 0};
    b2s_s2e_text(e, CH[c]);
    b2s_s2e_mdarray(e, &part);
    free(z);
  }
  free(m);
}
#define START_EXTRA 15

static void send_series(void *push, const series *s) {
  static const char *const dt[] = {NULL, "uint8", "uint16", NULL, "uint32"};
  char uid[32];
  snprintf(uid, sizeof uid, "xds-%llu", (unsigned long long)s->id);
  b2s_s2enc e = {0};
  b2s_s2e_start(&e, s->id, uid, CH, s->nch, dt[s->ts], s->ny, s->nx,
                (uint64_t)s->nimages, START_EXTRA);
  start_extra(&e, s);
  send_msg(push, &e);
  size_t n = s->ny * s->nx * (size_t)s->ts;
  uint8_t *pix = malloc(n);
  assert_non_null(pix);
  for (uint64_t id = 1; id <= (uint64_t)s->nimages; id++) {
    if (id == s->skip)
      continue;
    b2s_s2e_part parts[2];
    uint8_t *bufs[2];
    for (int c = 0; c < s->nch; c++) {
      fill_image(s, pix, id, c);
      size_t len = bslz4(pix, n, s->ts, &bufs[c]);
      parts[c] = (b2s_s2e_part){CH[c], (uint32_t)s->ts, s->ny, s->nx,
                                "bslz4", bufs[c], len, 0};
    }
    b2s_s2e_reset(&e);
    b2s_s2e_image(&e, s->id, uid, id, parts, s->nch, id * 2000000,
                  id * 2000000 + 1990000, 1990000, 100000000, NULL);
    send_msg(push, &e);
    for (int c = 0; c < s->nch; c++)
      free(bufs[c]);
  }
  b2s_s2e_reset(&e);
  b2s_s2e_end(&e, s->id, uid);
  send_msg(push, &e);
  free(pix);
  b2s_s2e_free(&e);
}

/* Wait until the frame at path holds n chunks. */
static void frame_wait(const char *path, int64_t n) {
  for (int t = 0; t < WAIT_MS / 50; t++) {
    b2s_frame *f = NULL;
    int64_t got = -1;
    if (b2s_frame_open(path, &f, NULL) == 0) {
      got = b2s_frame_nchunks(f);
      b2s_frame_free(f);
    }
    if (got == n)
      return;
    usleep(50000);
  }
  fail_msg("%s never held %lld chunks", path, (long long)n);
}

/* The frames, made once: the daemon's directory, each channel's frame
 * path, its expected pixels and mask as .npy files. */
static env E;
static bool env_made;              /* E's directory exists */
static int made;                   /* 1 made, -1 failed to */
static char *frame[NSERIES][2];
static char want_npy[NSERIES][2][600], mask_npy[NSERIES][2][600];

static void write_expected(const series *s, int c, const char *want,
                           const char *mask) {
  size_t n = s->ny * s->nx * (size_t)s->ts;
  uint8_t *all = calloc((size_t)s->nimages, n);   /* a gap: zeros */
  assert_non_null(all);
  for (uint64_t id = 1; id <= (uint64_t)s->nimages; id++)
    if (id != s->skip)
      fill_image(s, all + (id - 1) * n, id, c);
  static const char *const descr[] = {NULL, "|u1", "<u2", NULL, "<u4"};
  size_t shape[3] = {(size_t)s->nimages, s->ny, s->nx};
  assert_int_equal(xds_npy_write(want, descr[s->ts], shape, 3, all), 0);
  free(all);
  uint32_t *m = malloc(s->ny * s->nx * 4);
  assert_non_null(m);
  for (size_t k = 0; k < s->ny * s->nx; k++)
    m[k] = mask_word(k, c);
  assert_int_equal(xds_npy_write(mask, "<u4", shape + 1, 2, m), 0);
  free(m);
}

static void make_frames(void) {
  if (made == 1)
    return;
  if (made < 0)
    fail_msg("the frames could not be made (the first test says why)");
  made = -1;
  char yaml[1200];
  env_init_config(&E, "");
  env_made = true;
  snprintf(yaml, sizeof yaml,
           "listen: [ipc://d.sock]\nrun_dir: run\ndata_dir: data\nworkers: 2\n"
           "templates:\n  eiger: {}\n"
           "sources:\n"
           "  - kind: dectris-stream2\n"
           "    endpoint: 'ipc://%s/det.sock'\n"
           "    template: eiger\n"
           "    name: 'det-{series_id}-{channel}'\n"
           "    series_timeout_ms: 2000\n", E.dir);
  env_write_config(&E, yaml);
  void *push = zmq_socket(zctx, ZMQ_PUSH);
  char ep[400];
  snprintf(ep, sizeof ep, "ipc://%s/det.sock", E.dir);
  assert_int_equal(zmq_bind(push, ep), 0);
  env_start(&E);
  for (size_t k = 0; k < NSERIES; k++)
    send_series(push, &SERIES[k]);
  for (size_t k = 0; k < NSERIES; k++) {
    const series *s = &SERIES[k];
    for (int c = 0; c < s->nch; c++) {
      char name[128], path[600];
      snprintf(name, sizeof name, "det-%llu-%s", (unsigned long long)s->id,
               CH[c]);
      frame_path(&E, name, path, sizeof path);
      frame_wait(path, s->nimages);
      frame[k][c] = strdup(path);
      strncat(name, ".pixel_mask", sizeof name - strlen(name) - 1);
      frame_path(&E, name, path, sizeof path);
      frame_wait(path, 1);
      snprintf(want_npy[k][c], sizeof want_npy[k][c], "%s/want-%zu-%d.npy",
               E.dir, k, c);
      snprintf(mask_npy[k][c], sizeof mask_npy[k][c], "%s/mask-%zu-%d.npy",
               E.dir, k, c);
      write_expected(s, c, want_npy[k][c], mask_npy[k][c]);
    }
  }
  zmq_close(push);
  /* the series have ended: the frames are final once the daemon is down */
  assert_int_equal(env_stop(&E, SIGTERM), 0);
  made = 1;
}

/* ---- the readers --------------------------------------------------------- */

typedef struct reader {
  const char *name, *env;
} reader;
static const reader DURIN = {"durin", "B2S_DURIN_PLUGIN"};
static const reader NEGGIA = {"neggia", "B2S_NEGGIA_PLUGIN"};

static const char *plugin_of(const reader *r) {
  const char *p = getenv(r->env);
  return p && *p ? p : NULL;
}

static void need_a_reader(void) {
  if (!plugin_of(&DURIN) && !plugin_of(&NEGGIA)) {
    printf("XDS readers skipped: neither $B2S_DURIN_PLUGIN nor "
           "$B2S_NEGGIA_PLUGIN names a plugin (docs/TESTING.md builds them)\n");
    skip();
  }
}

/* Where HDF5 finds filter plugins for a run: an empty directory (none at
 * all), or hdf5plugin's (Blosc2 and bitshuffle filters). */
static const char *no_filters(void) {
  static char dir[400];
  snprintf(dir, sizeof dir, "%s/no-filter-plugins", E.dir);
  mkdir(dir, 0755);
  return dir;
}

static const char *hdf5plugin_dir(void) {
  static char dir[600];
  static int tried;
  if (tried++)
    return dir[0] ? dir : NULL;
  char py[400], cmd[600];
  if (!ts_venv_python(py, sizeof py))
    return NULL;
  snprintf(cmd, sizeof cmd,
           "'%s' -c 'import hdf5plugin; print(hdf5plugin.PLUGIN_PATH)'", py);
  FILE *p = popen(cmd, "r");
  if (p && fgets(dir, sizeof dir, p))
    dir[strcspn(dir, "\n")] = '\0';
  if (p)
    pclose(p);
  return dir[0] ? dir : NULL;
}

static void print_file(const char *path, const char *indent) {
  FILE *f = fopen(path, "r");
  char line[512];
  while (f && fgets(line, sizeof line, f))
    printf("%s%s", indent, line);
  if (f)
    fclose(f);
}

/* Export frame (k, c) in layout and codec, once; the master's path. */
static void export(size_t k, int c, const char *layout, const char *codec,
                   char *master, size_t cap) {
  const char *cli = getenv("B2S_CLI");
  assert_non_null(cli);
  char dir[400], cmd[4000], log[800];
  snprintf(dir, sizeof dir, "%s/x-%s-%s", E.dir, layout, codec);
  mkdir(dir, 0755);
  snprintf(master, cap, "%s/s%llu_%s_master.h5", dir,
           (unsigned long long)SERIES[k].id, CH[c]);
  if (access(master, F_OK) == 0)
    return;                        /* exported for the other reader */
  snprintf(log, sizeof log, "%s.log", master);
  /* dectris: data files of 4 images, so that the readers go across files
   * (the first series: 4 + 2) */
  snprintf(cmd, sizeof cmd,
           "'%s' export '%s' '%s' --layout %s --codec %s%s >'%s' 2>&1", cli,
           frame[k][c], master, layout, codec,
           strcmp(layout, "dectris") ? "" : " --images-per-file 4", log);
  if (system(cmd) != 0) {
    print_file(log, "  ");
    fail_msg("b2stream export --layout %s --codec %s of %s failed", layout,
             codec, frame[k][c]);
  }
}

/* Reader r on the master through the driver, filters from plugin_dir;
 * prints its verdict (its last lines), true when every frame is equal. */
static bool reader_reads(const reader *r, const char *master, size_t k, int c,
                         const char *plugin_dir) {
  const char *check = getenv("B2S_XDS_CHECK");
  assert_non_null(check);
  char cmd[5000], log[800];
  snprintf(log, sizeof log, "%s.%s.log", master, r->name);
  snprintf(cmd, sizeof cmd,
           "HDF5_PLUGIN_PATH='%s' '%s' --rule %s --mask '%s' --pixel-size %g "
           "'%s' '%s' '%s' >'%s' 2>&1",
           plugin_dir, check, r->name, mask_npy[k][c], PIXEL_SIZE,
           plugin_of(r), master, want_npy[k][c], log);
  bool ok = system(cmd) == 0;
  printf("%s %s: %s\n", r->name, master + strlen(E.dir) + 1,
         ok ? "every frame equal" : "FAILED:");
  if (!ok)
    print_file(log, "  ");
  return ok;
}

typedef enum { NO_FILTERS, HDF5PLUGIN } filters;

/* Every frame of every series exported in layout/codec, read by r with
 * the filters given; true when all were equal (or r is absent). */
static bool all_read(const reader *r, const char *layout, const char *codec,
                     filters fl) {
  if (!plugin_of(r)) {
    printf("%s skipped: $%s is unset\n", r->name, r->env);
    return true;
  }
  const char *dir = fl == NO_FILTERS ? no_filters() : hdf5plugin_dir();
  if (!dir) {
    printf("%s on --codec %s skipped: no hdf5plugin (its filters) in "
           "$B2S_VENV\n", r->name, codec);
    return true;
  }
  bool ok = true;
  for (size_t k = 0; k < NSERIES; k++)
    for (int c = 0; c < SERIES[k].nch; c++) {
      char master[700];
      export(k, c, layout, codec, master, sizeof master);
      ok &= reader_reads(r, master, k, c, dir);
    }
  return ok;
}

/* The DECTRIS layout, bslz4: both readers decode it themselves, with no
 * filter plugin installed. */
static void test_dectris_bslz4(void **state) {
  (void)state;
  need_a_reader();
  make_frames();
  bool ok = all_read(&DURIN, "dectris", "bslz4", NO_FILTERS);
  ok &= all_read(&NEGGIA, "dectris", "bslz4", NO_FILTERS);
  assert_true(ok);
}

/* The DECTRIS layout, Blosc2: Durin through HDF5 and hdf5plugin's
 * Blosc2 filter; neggia has no Blosc2 decoder (it knows no filter but
 * bitshuffle+LZ4 and LZ4) and cannot read it. */
static void test_dectris_blosc2(void **state) {
  (void)state;
  need_a_reader();
  make_frames();
  assert_true(all_read(&DURIN, "dectris", "blosc2", HDF5PLUGIN));
}

/* The single-file nxmx layout (/entry/data/data), bslz4: neggia decodes it
 * itself; Durin's own decoder serves only data_NNNNNN datasets, so it
 * reads this one through HDF5 and the bitshuffle filter. */
static void test_nxmx_bslz4(void **state) {
  (void)state;
  need_a_reader();
  make_frames();
  bool ok = all_read(&NEGGIA, "nxmx", "bslz4", NO_FILTERS);
  ok &= all_read(&DURIN, "nxmx", "bslz4", HDF5PLUGIN);
  assert_true(ok);
}

static void test_nxmx_blosc2(void **state) {
  (void)state;
  need_a_reader();
  make_frames();
  assert_true(all_read(&DURIN, "nxmx", "blosc2", HDF5PLUGIN));
}

/* $B2S_XDS_KEEP: copy the frames, the expected pixels and the exports
 * there (to run other judges on them). */
static void keep_exports(void) {
  const char *keep = getenv("B2S_XDS_KEEP");
  if (!env_made || !keep || !*keep)
    return;
  char cmd[1400];
  snprintf(cmd, sizeof cmd,
           "mkdir -p '%s' && cp -r '%s'/data '%s'/want-* '%s'/mask-* '%s'/ && "
           "{ cp -r '%s'/x-* '%s'/ 2>/dev/null || true; }",
           keep, E.dir, E.dir, E.dir, keep, E.dir, keep);
  if (system(cmd) != 0)
    fprintf(stderr, "keeping the exports in %s failed\n", keep);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_dectris_bslz4),
    cmocka_unit_test(test_dectris_blosc2),
    cmocka_unit_test(test_nxmx_bslz4),
    cmocka_unit_test(test_nxmx_blosc2),
  };
  int rc = harness_run(tests);
  keep_exports();
  if (env_made)
    env_fini(&E);
  for (size_t k = 0; k < NSERIES; k++)
    for (int c = 0; c < 2; c++)
      free(frame[k][c]);
  return rc;
}
