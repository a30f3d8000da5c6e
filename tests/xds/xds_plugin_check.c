/* XDS's side of its plugin interface (XDS reads HDF5 only through a
 * plugin: Durin, neggia), driven as XDS drives it: dlopen(RTLD_NOW |
 * RTLD_GLOBAL), plugin_open(MASTER), plugin_get_header, plugin_get_data
 * for frames 1..N, plugin_close.  Each frame is compared with the
 * expected pixels (a .npy of (images, y, x), the dataset's dtype) turned
 * into the ints the reader documents (--rule), with the pixel mask the
 * reader must apply (--mask, a .npy of (y, x)).
 *
 *   xds_plugin_check [--rule durin|neggia|exact] [--mask MASK.npy]
 *                    [--pixel-size X[,Y]] PLUGIN.so MASTER [EXPECTED.npy]
 *
 * PLUGIN "-" takes $XDS_PLUGIN.  The rule defaults to the plugin's file
 * name (durin, neggia), else exact.  The session runs in a child, so a
 * reader that aborts is a verdict too.  Exit 0: the header matches and
 * every frame is equal; 1: a refusal, a difference or a crash; 2: usage. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xds_npy.h"

typedef void (*open_fn)(const char *, int *, int *);
typedef void (*header_fn)(int *, int *, int *, float *, float *, int *, int *,
                          int *);
typedef void (*data_fn)(int *, int *, int *, int *, int *, int *);
typedef void (*close_fn)(int *);

enum rule { RULE_EXACT, RULE_DURIN, RULE_NEGGIA };

typedef struct opts {
  enum rule rule;
  const char *plugin, *master, *expected, *mask;
  double qx, qy;                   /* metres; 0: not checked */
} opts;

/* Where the child is, for the parent to say where a reader died. */
typedef struct progress {
  volatile int phase;              /* 0 dlopen, 1 open, 2 header, 3 data, 4 close */
  volatile int frame;
} progress;

static const char *const PHASE[] = {"dlopen", "plugin_open",
                                    "plugin_get_header", "plugin_get_data",
                                    "plugin_close"};

static int usage(void) {
  fprintf(stderr, "usage: xds_plugin_check [--rule durin|neggia|exact] "
                  "[--mask MASK.npy] [--pixel-size X[,Y]] PLUGIN.so MASTER "
                  "[EXPECTED.npy]\n");
  return 2;
}

/* The low `bits` of v, sign-extended. */
static int64_t sext(uint64_t v, int bits) {
  uint64_t m = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  v &= m;
  if (bits < 64 && (v >> (bits - 1)) & 1)
    v |= ~m;
  return (int64_t)v;
}

/* The int the reader gives for stored value raw (a w-byte item) with
 * mask word m (the mask's item, sign-extended when its type is signed).
 * Durin (src/plugin.c): the item read as a signed int of its width (4
 * and 8 bytes: the low 32 bits); the mask read through HDF5 as a native
 * int (which clamps an unsigned word above INT32_MAX to INT32_MAX), then
 * -1 where it & 0xFF, -2 where it & 30.  neggia (plugin/H5ToXds.cpp): -1
 * where m & 1, else -2 where m & 0x1e, else the item unsigned, with 0xFF,
 * 0xFFFF (the NODATA values) and anything above INT32_MAX turned into
 * -1. */
static int64_t as_read(enum rule r, uint64_t raw, int w, bool is_signed,
                       int64_t m) {
  if (r == RULE_DURIN) {
    int64_t v = sext(raw, w >= 4 ? 32 : 8 * w);
    int64_t mi = m > INT32_MAX ? INT32_MAX : m < INT32_MIN ? INT32_MIN : m;
    if (mi & 0xFF)
      v = -1;
    if (mi & 30)
      v = -2;
    return v;
  }
  if (r == RULE_NEGGIA) {
    if (m & 1)
      return -1;
    if (m & 0x1e)
      return -2;
    uint64_t u = w >= 8 ? raw : raw & ((1ull << (8 * w)) - 1);
    if ((w == 1 && u == 0xFF) || (w == 2 && u == 0xFFFF) || u > INT32_MAX)
      return -1;
    return (int64_t)u;
  }
  return is_signed ? sext(raw, 8 * w) : (int64_t)raw;
}

static void print_info(const char *what, int err, const int *info) {
  printf("%s: error_flag %d, info %d %d %d %d %d\n", what, err, info[0],
         info[1], info[2], info[3], info[4]);
}

/* Compare frame f (from 1) with want; prints its verdict. */
static bool frame_equal(const opts *o, int f, const int *got,
                        const xds_npy *want, const xds_npy *mask) {
  size_t npix = want->shape[1] * want->shape[2];
  size_t bad = 0, first = 0;
  int64_t fg = 0, fw = 0;
  uint64_t fr = 0;
  for (size_t k = 0; k < npix; k++) {
    uint64_t raw = xds_npy_item(want, (size_t)(f - 1) * npix + k);
    int64_t m = 0;
    if (mask) {
      uint64_t mr = xds_npy_item(mask, k);
      m = mask->is_signed ? sext(mr, 8 * mask->itemsize)
          : mr > INT64_MAX ? INT64_MAX : (int64_t)mr;
    }
    int64_t w = as_read(o->rule, raw, want->itemsize, want->is_signed, m);
    if ((int64_t)got[k] != w) {
      if (!bad++) {
        first = k;
        fg = got[k];
        fw = w;
        fr = raw;
      }
    }
  }
  if (!bad) {
    printf("frame %d: equal\n", f);
    return true;
  }
  printf("frame %d: %zu of %zu pixels differ; first at (y %zu, x %zu): "
         "got %lld, expected %lld (stored %llu)\n",
         f, bad, npix, first / want->shape[2], first % want->shape[2],
         (long long)fg, (long long)fw, (unsigned long long)fr);
  return false;
}

static bool near(double got, double want) {
  return fabs(got - want) <= 1e-6 * fabs(want);
}

/* The header against the expected pixels; prints what differs. */
static bool header_ok(const opts *o, const xds_npy *want, int nx, int ny,
                      int nbytes, float qx, float qy, int nframes) {
  bool ok = true;
  if (want && ((size_t)nx != want->shape[2] || (size_t)ny != want->shape[1] ||
               (size_t)nframes != want->shape[0] || nbytes != want->itemsize)) {
    printf("header: expected nx %zu ny %zu nbytes %d frames %zu\n",
           want->shape[2], want->shape[1], want->itemsize, want->shape[0]);
    ok = false;
  }
  if (o->qx > 0 && (!near(qx, o->qx) || !near(qy, o->qy))) {
    printf("header: expected qx %g qy %g\n", o->qx, o->qy);
    ok = false;
  }
  return ok;
}

/* The whole session, as XDS runs it; 0 when everything is equal. */
static int session(const opts *o, progress *pr, const xds_npy *want,
                   const xds_npy *mask) {
  void *h = dlopen(o->plugin, RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  open_fn p_open = (open_fn)dlsym(h, "plugin_open");
  header_fn p_header = (header_fn)dlsym(h, "plugin_get_header");
  data_fn p_data = (data_fn)dlsym(h, "plugin_get_data");
  close_fn p_close = (close_fn)dlsym(h, "plugin_close");
  if (!p_open || !p_header || !p_data || !p_close) {
    printf("dlsym: %s lacks a plugin_* function\n", o->plugin);
    return 1;
  }
  int info[1024] = {1, 123456789};        /* what XDS puts there */
  int err = 0;
  pr->phase = 1;
  fflush(stdout);
  p_open(o->master, info, &err);
  fflush(stdout);
  print_info("open", err, info);
  if (err < 0)
    return 1;
  int nx = 0, ny = 0, nbytes = 0, nframes = 0;
  float qx = 0, qy = 0;
  pr->phase = 2;
  fflush(stdout);
  p_header(&nx, &ny, &nbytes, &qx, &qy, &nframes, info, &err);
  fflush(stdout);
  print_info("header", err, info);
  if (err < 0)
    return 1;
  printf("header: nx %d ny %d nbytes %d qx %g qy %g frames %d\n", nx, ny,
         nbytes, (double)qx, (double)qy, nframes);
  bool ok = header_ok(o, want, nx, ny, nbytes, qx, qy, nframes);
  if (nx <= 0 || ny <= 0 || nframes < 0) {
    printf("header: no image size\n");
    return 1;
  }
  int n = nframes;
  if (want && (size_t)n > want->shape[0])
    n = (int)want->shape[0];
  bool same_size = !want || ((size_t)nx == want->shape[2] &&
                             (size_t)ny == want->shape[1]);
  int *buf = malloc((size_t)nx * (size_t)ny * sizeof *buf);
  if (!buf)
    return 1;
  int equal = 0, read = 0;
  pr->phase = 3;
  for (int f = 1; f <= n; f++) {
    for (size_t k = 0; k < (size_t)nx * (size_t)ny; k++)
      buf[k] = 0x5A5A5A5A;                 /* what no reader writes */
    pr->frame = f;
    int fn = f, fx = nx, fy = ny;
    err = 0;
    fflush(stdout);
    p_data(&fn, &fx, &fy, buf, info, &err);
    fflush(stdout);
    if (err < 0) {
      printf("frame %d: error_flag %d\n", f, err);
      continue;
    }
    read++;
    if (!want)
      printf("frame %d: read\n", f);
    else if (same_size && frame_equal(o, f, buf, want, mask))
      equal++;
  }
  free(buf);
  pr->phase = 4;
  err = 0;
  fflush(stdout);
  p_close(&err);
  fflush(stdout);
  if (err < 0)
    printf("close: error_flag %d\n", err);
  if (want) {
    printf("read: %d of %zu frames equal\n", equal, want->shape[0]);
    ok = ok && equal == (int)want->shape[0];
  } else {
    printf("read: %d of %d frames read (nothing to compare with)\n", read,
           nframes);
    ok = ok && read == nframes;
  }
  return ok && err >= 0 ? 0 : 1;
}

static int parse(int argc, char **argv, opts *o) {
  int pos = 0;
  bool rule_given = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--rule") && i + 1 < argc) {
      const char *r = argv[++i];
      rule_given = true;
      if (!strcmp(r, "durin"))
        o->rule = RULE_DURIN;
      else if (!strcmp(r, "neggia"))
        o->rule = RULE_NEGGIA;
      else if (!strcmp(r, "exact"))
        o->rule = RULE_EXACT;
      else
        return usage();
    } else if (!strcmp(a, "--mask") && i + 1 < argc) {
      o->mask = argv[++i];
    } else if (!strcmp(a, "--pixel-size") && i + 1 < argc) {
      char *end;
      o->qx = o->qy = strtod(argv[++i], &end);
      if (*end == ',')
        o->qy = strtod(end + 1, &end);
      if (*end || o->qx <= 0 || o->qy <= 0)
        return usage();
    } else if (a[0] == '-' && a[1]) {
      return usage();
    } else if (pos == 0) {
      o->plugin = a, pos++;
    } else if (pos == 1) {
      o->master = a, pos++;
    } else if (pos == 2) {
      o->expected = a, pos++;
    } else {
      return usage();
    }
  }
  if (pos < 2)
    return usage();
  if (!strcmp(o->plugin, "-") && !(o->plugin = getenv("XDS_PLUGIN"))) {
    fprintf(stderr, "xds_plugin_check: PLUGIN is - and $XDS_PLUGIN is unset\n");
    return 2;
  }
  if (!rule_given) {
    const char *b = strrchr(o->plugin, '/');
    b = b ? b + 1 : o->plugin;
    o->rule = strstr(b, "durin") ? RULE_DURIN
              : strstr(b, "neggia") ? RULE_NEGGIA : RULE_EXACT;
  }
  return 0;
}

int main(int argc, char **argv) {
  opts o = {0};
  int rc = parse(argc, argv, &o);
  if (rc)
    return rc;
  xds_npy want = {0}, mask = {0};
  if (o.expected && xds_npy_read(o.expected, &want, 3) < 0)
    return 2;
  if (o.mask && xds_npy_read(o.mask, &mask, 2) < 0)
    return 2;
  if (o.mask && o.expected && (mask.shape[0] != want.shape[1] ||
                               mask.shape[1] != want.shape[2])) {
    fprintf(stderr, "xds_plugin_check: %s is not of the images' (y, x)\n",
            o.mask);
    return 2;
  }
  static const char *const RULE[] = {"exact", "durin", "neggia"};
  printf("plugin: %s (rule %s)\nmaster: %s\n", o.plugin, RULE[o.rule],
         o.master);
  fflush(stdout);
  progress *pr = mmap(NULL, sizeof *pr, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (pr == MAP_FAILED)
    return 2;
  pid_t pid = fork();
  if (pid < 0)
    return 2;
  if (pid == 0) {
    rc = session(&o, pr, o.expected ? &want : NULL, o.mask ? &mask : NULL);
    fflush(stdout);
    _exit(rc);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (WIFSIGNALED(st)) {
    printf("reader died of signal %d (%s) in %s", WTERMSIG(st),
           strsignal(WTERMSIG(st)), PHASE[pr->phase]);
    if (pr->phase == 3)
      printf(" (frame %d)", pr->frame);
    printf("\n");
    rc = 1;
  } else {
    rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  }
  printf("verdict: %s\n", rc == 0 ? "every frame equal" : "FAILED");
  xds_npy_free(&want);
  xds_npy_free(&mask);
  return rc;
}
