/* Messages, command-line walking, value parsing, names and output for the
 * b2stream tool (see cli.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "b2s_frame_lock.h"

/* ---- messages ---------------------------------------------------------- */

void cli_err(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("b2stream: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void cli_err_frame(const char *path, const b2s_frame_error *e, int code,
                   int64_t chunk_id) {
  if (e == NULL || e->code == 0) {
    cli_err("%s: %s", path, b2s_strerror(code));
    return;
  }
  char where[160] = "";
  int n = 0;
  if (e->offset >= 0 && e->in_chunk_file && chunk_id >= 0)
    n = snprintf(where, sizeof where, "at byte %lld of %08X.chunk",
                 (long long)e->offset, (unsigned)chunk_id);
  else if (e->offset >= 0)
    n = snprintf(where, sizeof where, "at byte %lld", (long long)e->offset);
  if (e->nchunk >= 0)
    snprintf(where + n, sizeof where - (size_t)n, "%schunk %lld",
             n > 0 ? ", " : "", (long long)e->nchunk);
  const char *reason = e->reason ? e->reason : "error";
  if (where[0])
    cli_err("%s: %s: %s (%s)", path, reason, b2s_strerror(e->code), where);
  else
    cli_err("%s: %s: %s", path, reason, b2s_strerror(e->code));
}

void cli_err_locked(const char *path) {
  pid_t pid = b2s_lock_holder(path);
  if (pid > 0)
    cli_err("%s: a writer holds this frame (PID %d); try again once it has "
            "stopped", path, (int)pid);
  else
    cli_err("%s: a writer holds this frame; try again once it has stopped",
            path);
}

/* ---- command line ------------------------------------------------------ */

void cli_args_init(cli_args *a, int argc, char **argv) {
  memset(a, 0, sizeof *a);
  a->argc = argc;
  a->argv = argv;
  a->cmd = argv[0];
  a->i = 1;
}

int cli_args_next(cli_args *a, const char **operand) {
  while (a->i < a->argc) {
    const char *s = a->argv[a->i++];
    if (a->only_operands || s[0] != '-' || s[1] == '\0') {
      *operand = s;
      return 2;
    }
    if (!strcmp(s, "--")) {
      a->only_operands = true;
      continue;
    }
    /* options are long only: "-x" matches none and is reported as given */
    const char *body = s[1] == '-' ? s + 2 : "";
    const char *eq = strchr(body, '=');
    size_t len = eq ? (size_t)(eq - body) : strlen(body);
    if (len >= sizeof a->optbuf)
      len = sizeof a->optbuf - 1;
    memcpy(a->optbuf, body, len);
    a->optbuf[len] = '\0';
    a->opt = a->optbuf;
    a->raw = s;
    a->inline_val = eq ? eq + 1 : NULL;
    return 1;
  }
  return 0;
}

const char *cli_args_value(cli_args *a) {
  if (a->inline_val != NULL)
    return a->inline_val;
  if (a->i < a->argc)
    return a->argv[a->i++];
  cli_usage(a, "option --%s needs a value", a->opt);
  return NULL;
}

bool cli_args_no_value(cli_args *a) {
  if (a->inline_val == NULL)
    return true;
  cli_usage(a, "option --%s takes no value", a->opt);
  return false;
}

int cli_usage(const cli_args *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "b2stream: %s: ", a->cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (see b2stream %s --help)\n", a->cmd);
  va_end(ap);
  return CLI_EXIT_USAGE;
}

int cli_unknown_option(const cli_args *a) {
  return cli_usage(a, "unknown option '%s'", a->raw);
}

bool cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--"))
      return false;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
      return true;
  }
  return false;
}

/* ---- value parsing ------------------------------------------------------- */

int cli_parse_int(const char *s, int64_t min, int64_t max, int64_t *out) {
  if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
    return B2S_E_ARG;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno == ERANGE || *end != '\0' || v < min || v > max)
    return B2S_E_ARG;
  *out = v;
  return 0;
}

int cli_parse_size(const char *s, int64_t min, int64_t max, int64_t *out) {
  int64_t bytes;
  if (b2s_size_parse(s, &bytes) < 0 || bytes < min || bytes > max)
    return B2S_E_ARG;
  *out = bytes;
  return 0;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

int cli_parse_hex(const char *s, uint8_t **out, int32_t *len) {
  size_t n = strlen(s);
  if (n % 2 != 0 || n / 2 > INT32_MAX)
    return B2S_E_ARG;
  uint8_t *p = malloc(n / 2 + 1);
  if (p == NULL)
    return B2S_E_NOMEM;
  for (size_t i = 0; i < n / 2; i++) {
    int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      free(p);
      return B2S_E_ARG;
    }
    p[i] = (uint8_t)(hi << 4 | lo);
  }
  *out = p;
  *len = (int32_t)(n / 2);
  return 0;
}

/* One NAME[:META] item of s[0..n). */
static int parse_filter(const char *s, size_t n, uint8_t *filter,
                        uint8_t *meta) {
  char item[48];
  if (n == 0 || n >= sizeof item)
    return B2S_E_FILTER;
  memcpy(item, s, n);
  item[n] = '\0';
  char *colon = strchr(item, ':');
  if (colon)
    *colon = '\0';
  int code = b2s_filter_from_name(item);
  int64_t m = 0;
  if (code <= B2S_FILTER_NONE)   /* "none" is the whole list, not an item */
    return B2S_E_FILTER;
  if (code == B2S_FILTER_TRUNC_PREC) {
    /* precision in bits: positive keeps bits, negative drops them */
    if (!colon || cli_parse_int(colon + 1, -64, 64, &m) < 0 || m == 0)
      return B2S_E_FILTER;
  } else if (colon && cli_parse_int(colon + 1, 0, 255, &m) < 0) {
    return B2S_E_FILTER;
  }
  *filter = (uint8_t)code;
  *meta = (uint8_t)(int8_t)m;
  return 0;
}

int cli_parse_filters(const char *s, uint8_t filters[B2S_MAX_FILTERS],
                      uint8_t meta[B2S_MAX_FILTERS]) {
  uint8_t f[B2S_MAX_FILTERS], fm[B2S_MAX_FILTERS];
  int n = 0;
  if (strcmp(s, "none") != 0) {
    for (const char *p = s;; p++) {
      const char *end = strchr(p, ',');
      size_t len = end ? (size_t)(end - p) : strlen(p);
      if (n == B2S_MAX_FILTERS || parse_filter(p, len, &f[n], &fm[n]) < 0)
        return B2S_E_FILTER;
      n++;
      if (!end)
        break;
      p = end;
    }
  }
  memset(filters, 0, B2S_MAX_FILTERS);
  memset(meta, 0, B2S_MAX_FILTERS);
  memcpy(filters + B2S_MAX_FILTERS - n, f, (size_t)n);
  memcpy(meta + B2S_MAX_FILTERS - n, fm, (size_t)n);
  return 0;
}

/* ---- names ------------------------------------------------------------- */

const char *cli_codec_name(int code) {
  const char *name = b2s_codec_name(code);
  if (name)
    return name;
  return code == 3 ? "snappy" : "unknown";   /* c-blosc2's retired codec */
}

const char *cli_special_name(int special) {
  static const char *const names[] = {"none", "zeros", "nan", "value",
                                      "uninit"};
  return special >= 0 && special <= 4 ? names[special] : "unknown";
}

const char *cli_split_name(int splitmode) {
  const char *name = b2s_split_name(splitmode);
  return name ? name : "unknown";
}

void cli_filters_str(const uint8_t filters[B2S_MAX_FILTERS],
                     const uint8_t meta[B2S_MAX_FILTERS], char *out,
                     size_t outlen) {
  size_t n = 0;
  out[0] = '\0';
  for (int k = 0; k < B2S_MAX_FILTERS && n < outlen; k++) {
    if (filters[k] == B2S_FILTER_NONE)
      continue;
    const char *sep = n ? "," : "";
    int w;
    const char *name = b2s_filter_name(filters[k]);
    if (name == NULL)
      w = snprintf(out + n, outlen - n, "%sfilter%d", sep, filters[k]);
    else
      w = snprintf(out + n, outlen - n, "%s%s", sep, name);
    if (w > 0)
      n += (size_t)w;
    if (meta[k] != 0 && n < outlen) {
      int mv = filters[k] == B2S_FILTER_TRUNC_PREC ? (int8_t)meta[k] : meta[k];
      w = snprintf(out + n, outlen - n, ":%d", mv);
      if (w > 0)
        n += (size_t)w;
    }
  }
  if (n == 0)
    snprintf(out, outlen, "none");
}

/* ---- output ------------------------------------------------------------- */

int cli_write_all(int fd, const void *buf, size_t len) {
  const uint8_t *p = buf;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return -errno;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

bool cli_flush_stdout(void) {
  errno = 0;
  if (fflush(stdout) == 0 && !ferror(stdout))
    return true;
  cli_err("stdout: %s", strerror(errno ? errno : EIO));
  return false;
}

void cli_remove_frame(const char *path) {
  struct stat st;
  if (lstat(path, &st) < 0)
    return;
  if (!S_ISDIR(st.st_mode)) {
    unlink(path);
    return;
  }
  DIR *d = opendir(path);
  if (d == NULL)
    return;
  for (struct dirent *de; (de = readdir(d)) != NULL;)
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      unlinkat(dirfd(d), de->d_name, 0);
  closedir(d);
  rmdir(path);
}
