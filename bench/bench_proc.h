/* Processes of the benchmarks (bench_e2e, bench_rados): finding the
 * build's executables, starting them with their output in a log, waiting
 * for their socket, stopping them.  The caller owns the pids it gets and
 * must reap them (bench_stop does). */
#ifndef B2S_BENCH_PROC_H
#define B2S_BENCH_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* `built` (the path meson gave) when it can run, else `sub` (e.g.
 * "daemon/b2streamd") beside this benchmark's build directory, written to
 * buf; NULL when neither can. */
const char *bench_exe_locate(const char *built, const char *sub, char *buf,
                             size_t cap);

/* Fork and exec argv[0] with argv, stdout and stderr appended to log.
 * The pid, or -errno. */
pid_t bench_spawn(char *const argv[], const char *log);

/* Wait up to ms for path (a socket the process makes) to exist: 0, or
 * -ECHILD when the process ended first (it is reaped), or B2S_E_TIMEOUT. */
int bench_wait_path(pid_t pid, const char *path, int ms);

/* SIGTERM, then SIGKILL after ms; reaps.  0 when it exited with 0, -ECHILD
 * for any other end, B2S_E_TIMEOUT when it had to be killed. */
int bench_stop(pid_t pid, int ms);

/* Each thread's CPU time of a process (schedstat: time on a CPU) and its
 * minor page faults. */
#define BENCH_MAX_THREADS 1024
typedef struct bench_threads {
  int n;
  int tid[BENCH_MAX_THREADS];
  char comm[BENCH_MAX_THREADS][16];
  double cpu[BENCH_MAX_THREADS];       /* seconds */
  double minflt[BENCH_MAX_THREADS];    /* minor page faults */
} bench_threads;

/* pid 0: this process. */
void bench_threads_sample(pid_t pid, bench_threads *t);

/* Fold sample b into acc: a thread's latest figure, threads that have
 * ended kept at their last. */
void bench_threads_merge(bench_threads *acc, const bench_threads *b);

/* The most CPU seconds one thread used from a to b (a thread not in a
 * counts from 0), among threads whose name does not start with skip
 * (NULL: all); its name in comm (16 bytes) when not NULL. */
double bench_threads_busiest(const bench_threads *a, const bench_threads *b,
                             const char *skip, char *comm);

/* How many threads of b have a name that starts with prefix. */
int bench_threads_count(const bench_threads *b, const char *prefix);

/* The CPU seconds all threads whose name starts with prefix used. */
double bench_threads_sum(const bench_threads *a, const bench_threads *b,
                         const char *prefix);

/* Remove dir and everything under it (what a benchmark made); 0 or
 * -errno, said on stderr. */
int bench_rmtree(const char *dir);

/* Remove the entries of dir whose names start with prefix (a finished
 * round's frames), with everything under them. */
int bench_rm_prefix(const char *dir, const char *prefix);

#endif
