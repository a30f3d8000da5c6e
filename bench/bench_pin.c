/* CPU sets for bench_stream2 --pin (bench_pin.h). */
#define _GNU_SOURCE
#include "bench_pin.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Take the next k CPUs of from (in order) into to. */
static void take(cpu_set_t *from, cpu_set_t *to, int k) {
  CPU_ZERO(to);
  for (int c = 0; c < CPU_SETSIZE && k > 0; c++) {
    if (CPU_ISSET(c, from)) {
      CPU_CLR(c, from);
      CPU_SET(c, to);
      k--;
    }
  }
}

bool bench_pin_plan(bench_pin *p, char *why, size_t cap) {
  cpu_set_t all;
  if (sched_getaffinity(0, sizeof all, &all) < 0) {
    snprintf(why, cap, "cannot read this process's CPUs");
    return false;
  }
  int n = CPU_COUNT(&all);
  if (n < BENCH_PIN_FIXED + 1) {
    snprintf(why, cap, "%d CPU%s here; pinning needs %d (sender 2, daemon "
             "I/O 2, writers 1, workers 1 or more)", n, n == 1 ? "" : "s",
             BENCH_PIN_FIXED + 1);
    return false;
  }
  take(&all, &p->sender, 2);
  take(&all, &p->io, 2);
  take(&all, &p->writers, 1);
  p->nworkers = n - BENCH_PIN_FIXED;
  take(&all, &p->workers, p->nworkers);
  return true;
}

/* A set as "a-b" ranges joined by commas. */
static void set_str(const cpu_set_t *s, char *out, size_t cap) {
  size_t at = 0;
  out[0] = 0;
  for (int c = 0; c < CPU_SETSIZE && at < cap; c++) {
    if (!CPU_ISSET(c, s) || (c > 0 && CPU_ISSET(c - 1, s)))
      continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, s))
      e++;
    at += (size_t)snprintf(out + at, cap - at, e > c ? "%s%d-%d" : "%s%d",
                           at ? "," : "", c, e);
  }
}

void bench_pin_describe(const bench_pin *p, char *out, size_t cap) {
  char s[64], i[64], w[256], r[64];
  set_str(&p->sender, s, sizeof s);
  set_str(&p->io, i, sizeof i);
  set_str(&p->workers, w, sizeof w);
  set_str(&p->writers, r, sizeof r);
  snprintf(out, cap, "sender %s, daemon I/O %s, %d workers %s, writers %s",
           s, i, p->nworkers, w, r);
}

void bench_pin_self(const cpu_set_t *set) {
  sched_setaffinity(0, sizeof *set, set);
}

static const cpu_set_t *set_of(const bench_pin *p, const char *comm) {
  if (!strcmp(comm, "b2streamd") || !strncmp(comm, "ZMQbg/", 6))
    return &p->io;
  if (!strncmp(comm, "b2s-work-", 9))
    return &p->workers;
  if (!strncmp(comm, "b2s-w-", 6) || !strcmp(comm, "b2s-fwriter"))
    return &p->writers;
  return NULL;                   /* the rest is idle in these rounds */
}

void bench_pin_daemon(const bench_pin *p, pid_t pid) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
  DIR *d = opendir(dir);
  if (!d)
    return;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.')
      continue;
    char path[384], comm[32] = "";
    snprintf(path, sizeof path, "%s/%s/comm", dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    if (fgets(comm, sizeof comm, f))
      comm[strcspn(comm, "\n")] = 0;
    fclose(f);
    const cpu_set_t *set = set_of(p, comm);
    if (set)
      sched_setaffinity((pid_t)atoi(e->d_name), sizeof *set, set);
  }
  closedir(d);
}
