/* Processes of the benchmarks: bench_proc.h. */
#define _XOPEN_SOURCE 700   /* nftw */
#include "bench_proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "b2s_errors.h"

const char *bench_exe_locate(const char *built, const char *sub, char *buf,
                             size_t cap) {
  if (built && built[0] && access(built, X_OK) == 0)
    return built;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return NULL;
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  if (slash)
    *slash = '\0';
  if (snprintf(buf, cap, "%s/../%s", self, sub) >= (int)cap)
    return NULL;
  return access(buf, X_OK) == 0 ? buf : NULL;
}

pid_t bench_spawn(char *const argv[], const char *log) {
  pid_t pid = fork();
  if (pid < 0)
    return -errno;
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execv(argv[0], argv);
    _exit(127);
  }
  return pid;
}

int bench_wait_path(pid_t pid, const char *path, int ms) {
  for (int i = 0; i < ms / 10; i++) {
    struct stat sb;
    if (stat(path, &sb) == 0)
      return 0;
    if (waitpid(pid, NULL, WNOHANG) == pid)
      return -ECHILD;
    usleep(10000);
  }
  return B2S_E_TIMEOUT;
}

int bench_stop(pid_t pid, int ms) {
  if (pid <= 0)
    return 0;
  kill(pid, SIGTERM);
  for (int i = 0; i < ms / 10; i++) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid)
      return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -ECHILD;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return B2S_E_TIMEOUT;
}

/* A file's first line, or "" (/proc files may vanish with their thread). */
static void first_line(const char *path, char *buf, size_t cap) {
  buf[0] = '\0';
  FILE *fp = fopen(path, "r");
  if (!fp)
    return;
  if (!fgets(buf, (int)cap, fp))
    buf[0] = '\0';
  fclose(fp);
  buf[strcspn(buf, "\n")] = '\0';
}

void bench_threads_sample(pid_t pid, bench_threads *t) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/task", pid ? (int)pid : (int)getpid());
  t->n = 0;
  DIR *d = opendir(dir);
  if (!d)
    return;
  for (struct dirent *e; (e = readdir(d)) && t->n < BENCH_MAX_THREADS;) {
    if (e->d_name[0] == '.')
      continue;
    char f[400], line[128];
    snprintf(f, sizeof f, "%s/%s/schedstat", dir, e->d_name);
    first_line(f, line, sizeof line);
    unsigned long long ns;
    if (sscanf(line, "%llu", &ns) != 1)
      continue;
    int k = t->n++;
    t->tid[k] = atoi(e->d_name);
    t->cpu[k] = (double)ns * 1e-9;
    snprintf(f, sizeof f, "%s/%s/comm", dir, e->d_name);
    first_line(f, line, sizeof line);
    line[sizeof t->comm[k] - 1] = '\0';   /* names are 15 bytes at most */
    memcpy(t->comm[k], line, sizeof t->comm[k]);
    /* stat's field 10, after the parenthesised name (which may hold
     * spaces and parentheses) */
    char st[1024];
    snprintf(f, sizeof f, "%s/%s/stat", dir, e->d_name);
    first_line(f, st, sizeof st);
    const char *p = strrchr(st, ')');
    unsigned long long flt = 0;
    if (p)
      sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %llu", &flt);
    t->minflt[k] = (double)flt;
  }
  closedir(d);
}

void bench_threads_merge(bench_threads *acc, const bench_threads *b) {
  for (int i = 0; i < b->n; i++) {
    int j = 0;
    while (j < acc->n && acc->tid[j] != b->tid[i])
      j++;
    if (j == acc->n) {
      if (acc->n == BENCH_MAX_THREADS)
        continue;
      acc->n++;
    }
    acc->tid[j] = b->tid[i];
    acc->cpu[j] = b->cpu[i];
    acc->minflt[j] = b->minflt[i];
    memcpy(acc->comm[j], b->comm[i], sizeof b->comm[i]);
  }
}

/* Thread i of b's CPU seconds since a. */
static double used(const bench_threads *a, const bench_threads *b, int i) {
  for (int j = 0; j < a->n; j++)
    if (a->tid[j] == b->tid[i])
      return b->cpu[i] - a->cpu[j];
  return b->cpu[i];
}

static bool named(const bench_threads *b, int i, const char *prefix) {
  return prefix && strncmp(b->comm[i], prefix, strlen(prefix)) == 0;
}

double bench_threads_busiest(const bench_threads *a, const bench_threads *b,
                             const char *skip, char *comm) {
  double best = 0;
  for (int i = 0; i < b->n; i++) {
    double u = used(a, b, i);
    if (named(b, i, skip) || u <= best)
      continue;
    best = u;
    if (comm)
      memcpy(comm, b->comm[i], sizeof b->comm[i]);
  }
  return best;
}

int bench_threads_count(const bench_threads *b, const char *prefix) {
  int n = 0;
  for (int i = 0; i < b->n; i++)
    n += named(b, i, prefix);
  return n;
}

double bench_threads_sum(const bench_threads *a, const bench_threads *b,
                         const char *prefix) {
  double sum = 0;
  for (int i = 0; i < b->n; i++)
    if (named(b, i, prefix))
      sum += used(a, b, i);
  return sum;
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path) < 0 ? -1 : 0;
}

int bench_rmtree(const char *dir) {
  if (nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0) {
    int e = errno;
    fprintf(stderr, "cannot remove %s: %s\n", dir, strerror(e));
    return -e;
  }
  return 0;
}

int bench_rm_prefix(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  if (!d)
    return -errno;
  size_t n = strlen(prefix);
  int rc = 0;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, prefix, n))
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (bench_rmtree(path) < 0)
      rc = -1;
  }
  closedir(d);
  return rc;
}
