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

#endif
