/* CPU sets for bench_stream2 --pin: the sender, the daemon's I/O thread,
 * its workers and its writers each on CPUs of their own, as on a server
 * with the cores (the detector's host apart), so that the figure is not
 * the scheduler's sharing of too few cores. */
#ifndef B2S_BENCH_PIN_H
#define B2S_BENCH_PIN_H

#include <sched.h>     /* cpu_set_t: the includer defines _GNU_SOURCE */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The sender and its ZeroMQ I/O thread: 2 CPUs; the daemon's I/O thread
 * and ZeroMQ's: 2; its writers: 1; its workers: the rest, at least 1. */
#define BENCH_PIN_FIXED 5

typedef struct bench_pin {
  cpu_set_t sender, io, workers, writers;
  int nworkers;
} bench_pin;

/* Split the CPUs this process may run on.  False when they are fewer
 * than BENCH_PIN_FIXED + 1, with why in why. */
bool bench_pin_plan(bench_pin *p, char *why, size_t cap);
/* The plan in one line ("sender 0-1, daemon I/O 2-3, ..."). */
void bench_pin_describe(const bench_pin *p, char *out, size_t cap);
/* The calling thread onto set (threads it starts inherit it). */
void bench_pin_self(const cpu_set_t *set);
/* Each thread of the daemon pid onto its set, by name: b2streamd and
 * ZMQbg/ (I/O), b2s-work- (workers), b2s-w- and b2s-fwriter (writers);
 * writers start with each series, so this is called again meanwhile. */
void bench_pin_daemon(const bench_pin *p, pid_t pid);

#endif
