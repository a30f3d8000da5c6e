/* Processes of the benchmarks: bench_proc.h. */
#include "bench_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
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
