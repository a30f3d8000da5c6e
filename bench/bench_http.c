/* The cost of watching the daemon: ingest throughput while Prometheus
 * scrapes /metrics every second and the status page is open (its
 * /status.json every second, the thumbnail every two), against the same
 * ingest with nobody watching, in the same run on the same daemon,
 * alternating which side goes first.  Target: >= 0.98x.
 *
 * One b2nd stream of 16-bit detector images (1024 x 1024 by default, lz4
 * clevel 5 shuffle, ack write); a round sends --count images with
 * b2sc_send and waits until all are durable (b2sc_flush).  A warm-up
 * round, then --rounds rounds; prints each side's median rate and the
 * min/median/max of the per-round ratio.  Nothing asserts on time.
 *
 *   bench_http [--count N] [--side PIXELS] [--rounds N] [--workers N]
 *              [--daemon PATH] [--dir DIR] */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "b2stream_client.h"
#include "bench_images.h"
#include "bench_proc.h"

#define NIMAGES 8

typedef struct opts {
  int count, side, rounds, workers;
  const char *daemon, *dir;
} opts;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- HTTP: one GET per connection, as Prometheus and a browser do -------- */

static struct sockaddr_in loopback(int port) {
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = loopback(0);
  socklen_t n = sizeof a;
  int port = -1;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &n) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

/* GET path; the status code, 0 when there was no answer in 5 s.  The
 * body is read and dropped. */
static int http_get(int port, const char *path) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = loopback(port);
  if (fd < 0)
    return 0;
  char buf[65536];
  int n = snprintf(buf, sizeof buf, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Connection: close\r\n\r\n", path);
  int status = 0;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      send(fd, buf, (size_t)n, MSG_NOSIGNAL) == n) {
    bool first = true;
    for (;;) {
      struct pollfd p = {.fd = fd, .events = POLLIN};
      if (poll(&p, 1, 5000) <= 0)
        break;
      ssize_t k = recv(fd, buf, sizeof buf - 1, 0);
      if (k <= 0)
        break;
      if (first) {
        buf[k] = '\0';
        if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
          status = 0;
        first = false;
      }
    }
  }
  close(fd);
  return status;
}

/* ---- the watcher: Prometheus and the page, as threads of requests --------- */

typedef struct watcher {
  int port;
  atomic_bool stop;
  long requests, failures;
} watcher;

static void get(watcher *w, const char *path) {
  w->requests++;
  if (http_get(w->port, path) != 200)
    w->failures++;
}

static void *watch(void *arg) {
  watcher *w = arg;
  get(w, "/");                   /* the page is opened */
  for (int tick = 0; !atomic_load(&w->stop); tick++) {
    double t0 = now_s();
    get(w, "/metrics");          /* the scrape */
    get(w, "/status.json");      /* the page's poll */
    if (tick % 2 == 0)
      get(w, "/thumb/img.png");
    while (!atomic_load(&w->stop) && now_s() - t0 < 1.0)
      usleep(10000);
  }
  return NULL;
}

/* ---- ingest ------------------------------------------------------------------ */

/* Send count images and wait until they are durable: MB/s of input. */
static double ingest(b2sc_producer *p, uint16_t *const img[], size_t bytes,
                     int count) {
  double t0 = now_s();
  for (int i = 0; i < count; i++) {
    int rc = b2sc_send(p, img[i % NIMAGES], bytes, 60000);
    if (rc < 0) {
      fprintf(stderr, "bench_http: send: %s\n", b2sc_strerror(rc));
      exit(1);
    }
  }
  int rc = b2sc_flush(p, 120000);
  if (rc < 0) {
    fprintf(stderr, "bench_http: flush: %s\n", b2sc_strerror(rc));
    exit(1);
  }
  return (double)bytes * count / (now_s() - t0) / 1e6;
}

static double watched_s;           /* wall time of the watched sides */

static double watched(b2sc_producer *p, uint16_t *const img[], size_t bytes,
                      int count, watcher *w) {
  atomic_store(&w->stop, false);
  pthread_t t;
  double t0 = now_s();
  pthread_create(&t, NULL, watch, w);
  double r = ingest(p, img, bytes, count);
  atomic_store(&w->stop, true);
  pthread_join(t, NULL);
  watched_s += now_s() - t0;
  return r;
}

/* CPU seconds (user + system) of the daemon's thread named `name`, from
 * /proc; -1 when not found. */
static double thread_cpu(pid_t pid, const char *name) {
  char path[400];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  double cpu = -1;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char stat[512], comm[64] = "";
    snprintf(path, sizeof path, "/proc/%d/task/%s/comm", (int)pid, e->d_name);
    FILE *f = fopen(path, "r");
    if (f) {
      if (!fgets(comm, sizeof comm, f))
        comm[0] = '\0';
      fclose(f);
    }
    comm[strcspn(comm, "\n")] = '\0';
    if (strcmp(comm, name) != 0)
      continue;
    snprintf(path, sizeof path, "/proc/%d/task/%s/stat", (int)pid, e->d_name);
    f = fopen(path, "r");
    unsigned long ut = 0, st = 0;
    if (f && fgets(stat, sizeof stat, f)) {
      /* fields 14 and 15, after the ")" that ends the name */
      const char *p = strrchr(stat, ')');
      if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                             "%lu %lu", &ut, &st) == 2)
        cpu = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
    }
    if (f)
      fclose(f);
  }
  if (d)
    closedir(d);
  return cpu;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmpd);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- setup ------------------------------------------------------------------- */

static void parse(int argc, char **argv, opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "bench_http: %s needs a value\n", a);
      exit(2);
    }
    i++;
    if (!strcmp(a, "--count")) o->count = atoi(v);
    else if (!strcmp(a, "--side")) o->side = atoi(v);
    else if (!strcmp(a, "--rounds")) o->rounds = atoi(v);
    else if (!strcmp(a, "--workers")) o->workers = atoi(v);
    else if (!strcmp(a, "--daemon")) o->daemon = v;
    else if (!strcmp(a, "--dir")) o->dir = v;
    else {
      fprintf(stderr, "bench_http: unknown option %s\n", a);
      exit(2);
    }
  }
  if (o->count < 1 || o->side < 16 || o->side > 4096 || o->rounds < 1 ||
      o->rounds > 100) {
    fprintf(stderr, "bench_http: bad --count, --side or --rounds\n");
    exit(2);
  }
}

static pid_t start_daemon(const opts *o, const char *dir, int port) {
  char path[700], sock[700], log[700];
  snprintf(path, sizeof path, "%s/b2streamd.yaml", dir);
  FILE *f = fopen(path, "w");
  if (!f) {
    perror("bench_http: config");
    exit(1);
  }
  fprintf(f, "listen: [ipc://d.sock]\nrun_dir: run\ndata_dir: data\n"
             "workers: %d\nmemory_limit: 1GiB\nmax_buffer: 32MiB\n"
             "log_level: warning\n"
             "http: {listen: \"127.0.0.1:%d\"}\n"
             "streams:\n  img:\n    codec: lz4\n    clevel: 5\n"
             "    b2nd: {shape: [0, %d, %d], chunkshape: [1, %d, %d], "
             "dtype: \"<u2\"}\n"
             "    queue_depth: 16\n"
             "    durability: {ack: write, group_count: 64, "
             "group_interval_ms: 50}\n", o->workers, port, o->side, o->side,
          o->side, o->side);
  fclose(f);
  snprintf(sock, sizeof sock, "%s/run/d.sock", dir);
  snprintf(log, sizeof log, "%s/daemon.log", dir);
  char *argv[] = {(char *)o->daemon, "--config", path, NULL};
  pid_t pid = bench_spawn(argv, log);
  if (pid < 0 || bench_wait_path(pid, sock, 20000) < 0) {
    fprintf(stderr, "bench_http: the daemon did not start (see %s)\n", log);
    exit(1);
  }
  return pid;
}

int main(int argc, char **argv) {
  opts o = {.count = 1000, .side = 1024, .rounds = 4, .workers = 2};
  parse(argc, argv, &o);
  char exe[600];
  if (!o.daemon)
    o.daemon = bench_exe_locate(B2S_BENCH_DAEMON, "daemon/b2streamd", exe,
                                sizeof exe);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/bench-http-XXXXXX", o.dir ? o.dir : "/tmp");
  if (!o.daemon || !mkdtemp(dir)) {
    fprintf(stderr, "bench_http: no daemon or no directory\n");
    return 1;
  }
  int port = free_port();
  pid_t pid = start_daemon(&o, dir, port);
  size_t npx = (size_t)o.side * (size_t)o.side, bytes = npx * 2;
  uint16_t *img[NIMAGES];
  for (int k = 0; k < NIMAGES; k++) {
    img[k] = malloc(bytes);
    bench_detector_image(img[k], npx, k);
  }
  char ep[700];
  snprintf(ep, sizeof ep, "ipc://%s/run/d.sock", dir);
  b2sc_session *s;
  b2sc_producer *p;
  if (b2sc_connect(ep, "bench_http", &s) < 0 ||
      b2sc_producer_open(s, "img", NULL, &p) < 0) {
    fprintf(stderr, "bench_http: cannot open the stream\n");
    return 1;
  }
  printf("bench_http: %d images of %dx%d u16 (%.0f MB) per side and round, "
         "%d rounds after a warm-up, %d workers\n", o.count, o.side, o.side,
         (double)bytes * o.count / 1e6, o.rounds, o.workers);
  watcher w = {.port = port};
  watched(p, img, bytes, o.count, &w);   /* warm-up, both paths */
  double *plain = calloc((size_t)o.rounds, sizeof *plain);
  double *seen = calloc((size_t)o.rounds, sizeof *seen);
  double *ratio = calloc((size_t)o.rounds, sizeof *ratio);
  long req0 = w.requests, fail0 = w.failures;
  double cpu0 = thread_cpu(pid, "MHD-single");
  watched_s = 0;
  for (int r = 0; r < o.rounds; r++) {
    if (r % 2 == 0) {
      plain[r] = ingest(p, img, bytes, o.count);
      seen[r] = watched(p, img, bytes, o.count, &w);
    } else {
      seen[r] = watched(p, img, bytes, o.count, &w);
      plain[r] = ingest(p, img, bytes, o.count);
    }
    ratio[r] = seen[r] / plain[r];
    printf("  round %d: unwatched %.0f MB/s, watched %.0f MB/s, %.3fx\n", r,
           plain[r], seen[r], ratio[r]);
  }
  double mr = median(ratio, o.rounds);
  printf("ingest unwatched  %8.0f MB/s (median)\n", median(plain, o.rounds));
  printf("ingest watched    %8.0f MB/s (median)  %.3fx  "
         "(min %.3f, max %.3f; target >= 0.98x)  %ld requests, %ld failed\n",
         median(seen, o.rounds), mr, ratio[0], ratio[o.rounds - 1],
         w.requests - req0, w.failures - fail0);
  double cpu = thread_cpu(pid, "MHD-single") - cpu0;
  printf("listener thread   %.3f CPU s over %.1f s watched = %.2f%% of one "
         "core (%.1f ms per request)\n", cpu, watched_s,
         100 * cpu / watched_s, 1e3 * cpu / (double)(w.requests - req0));
  b2sc_producer_close(p);
  b2sc_close(s);
  bench_stop(pid, 60000);
  bench_rmtree(dir);
  for (int k = 0; k < NIMAGES; k++)
    free(img[k]);
  free(plain);
  free(seen);
  free(ratio);
  return 0;
}
