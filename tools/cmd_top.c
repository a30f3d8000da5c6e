/* b2stream top: the daemon's streams as a refreshing table (STATS over
 * the wire every interval), for operators on a terminal; keys sort and
 * quit.  The table itself is cli_top.c's. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli_client.h"
#include "cli_top.h"

static const char help[] =
    "usage: b2stream top [OPTIONS]\n"
    "\n"
    "Show b2streamd's streams as a table refreshed every interval: rate\n"
    "in (MB/s, buffers or images/s), compression ratio, buffers queued,\n"
    "drops, errors, chunks committed.  Keys: n, r, u, d sort by name,\n"
    "rate, queue, drops; q quits.\n"
    "\n"
    "  --interval S       seconds between samples (default 1, 0.1..60)\n"
    "  --once             print one table (two samples an interval apart)\n"
    "                     and exit, without taking the terminal\n"
    CLI_ENDPOINT_HELP;

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One sample; rates from prev.  0 or negative (printed). */
static int sample(b2sc_session *s, cli_top_sample *cur, const cli_top_sample *prev,
                  double dt) {
  char *json;
  size_t len;
  int rc = b2sc_stats(s, NULL, &json, &len);
  if (rc < 0) {
    cli_client_err(s, "stats", rc);
    return rc;
  }
  rc = cli_top_parse(json, len, cur);
  free(json);
  if (rc < 0) {
    fprintf(stderr, "b2stream: top: the daemon's statistics do not parse\n");
    return rc;
  }
  cli_top_rates(cur, prev, dt);
  return 0;
}

static size_t screen_rows(void) {
  struct winsize w;
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_row > 3)
    return (size_t)w.ws_row - 3;
  return CLI_TOP_MAX_STREAMS;
}

static cli_top_sort key_sort(int c, cli_top_sort cur) {
  switch (c) {
  case 'n': return CLI_TOP_SORT_NAME;
  case 'r': return CLI_TOP_SORT_RATE;
  case 'u': return CLI_TOP_SORT_QUEUE;
  case 'd': return CLI_TOP_SORT_DROPS;
  default: return cur;
  }
}

/* Wait up to `secs` for a key: its character, 0 when none, -1 on EOF. */
static int wait_key(double secs, bool tty) {
  struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
  int n = poll(&p, tty ? 1 : 0, (int)(secs * 1000));
  if (n <= 0)
    return 0;
  unsigned char c;
  return read(STDIN_FILENO, &c, 1) == 1 ? c : -1;
}

static int loop(b2sc_session *s, double interval, bool once) {
  static cli_top_sample a, b;
  cli_top_sample *cur = &a, *prev = &b;
  static char screen[256 * 1024];
  bool tty = !once && isatty(STDIN_FILENO);
  struct termios saved, raw;
  if (tty && tcgetattr(STDIN_FILENO, &saved) == 0) {
    raw = saved;
    raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
    tcsetattr(STDIN_FILENO, TCSANOW, &raw);
  } else {
    tty = false;
  }
  cli_top_sort by = CLI_TOP_SORT_NAME;
  double t_prev = 0;
  bool have_prev = false;
  int rc = 0, rounds = 0;
  while (!stop) {
    double t = now_s();
    if ((rc = sample(s, cur, have_prev ? prev : NULL, t - t_prev)) < 0)
      break;
    cli_top_sort_rows(cur, by);
    if (!once || rounds == 1) {
      cli_top_render(cur, by, once ? CLI_TOP_MAX_STREAMS : screen_rows(), screen,
                 sizeof screen);
      fputs(once ? "" : "\x1b[H\x1b[2J", stdout);   /* home, clear */
      fputs(screen, stdout);
      fflush(stdout);
      if (once)
        break;
    }
    cli_top_sample *x = prev;
    prev = cur;
    cur = x;
    t_prev = t;
    have_prev = true;
    rounds++;
    int key = wait_key(interval, tty);
    if (key == 'q' || key < 0)
      break;
    if (key > 0)
      by = key_sort(key, by);    /* the next screen shows the new order */
  }
  if (tty)
    tcsetattr(STDIN_FILENO, TCSANOW, &saved);
  return rc;
}

static int top_run(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv);
  const char *endpoint = NULL, *operand, *v;
  double interval = 1;
  bool once = false;
  for (int t; (t = cli_args_next(&a, &operand)) != 0;) {
    if (t == 2)
      return cli_usage(&a, "unexpected argument '%s'", operand);
    if (strcmp(a.opt, "once") == 0) {
      once = true;
    } else if (strcmp(a.opt, "interval") == 0) {
      if (!(v = cli_args_value(&a)))
        return CLI_EXIT_USAGE;
      char *end;
      interval = strtod(v, &end);
      if (*end || !(interval >= 0.1 && interval <= 60))
        return cli_usage(&a, "--interval: seconds, 0.1 to 60");
    } else if (strcmp(a.opt, "endpoint") == 0) {
      if (!(endpoint = cli_args_value(&a)))
        return CLI_EXIT_USAGE;
    } else {
      return cli_unknown_option(&a);
    }
  }
  b2sc_session *s;
  if (cli_client_connect(endpoint, 0, &s) < 0)
    return CLI_EXIT_FAIL;
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGINT, &sa, NULL);     /* no SA_RESTART: the wait ends */
  sigaction(SIGTERM, &sa, NULL);
  int rc = loop(s, interval, once);
  b2sc_close(s);
  return rc < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

const cli_cmd cli_cmd_top = {"top", "b2streamd's streams, refreshing", help,
                             top_run};
