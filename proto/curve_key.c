/* See b2s_curve_key.h. */
#include "b2s_curve_key.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "b2s_errors.h"

/* isspace() in the C locale, whatever locale the program set. */
#define SPACE " \t\n\v\f\r"

/* ---- lines ------------------------------------------------------------------ */

typedef struct line_reader {
  const char *p, *end;
  char line[B2S_CURVE_KEY_LINE_MAX];
} line_reader;

/* The next line as fgets() would read it, NUL-terminated in r->line: up to
 * and including a '\n', at most B2S_CURVE_KEY_LINE_MAX - 1 bytes.  The
 * parsers handle it as a C string, so a NUL byte ends it early. */
static bool line_next(line_reader *r) {
  if (r->p == r->end)
    return false;
  size_t n = (size_t)(r->end - r->p);
  if (n > sizeof r->line - 1)
    n = sizeof r->line - 1;
  const char *nl = memchr(r->p, '\n', n);
  if (nl != NULL)
    n = (size_t)(nl - r->p) + 1;
  memcpy(r->line, r->p, n);
  r->line[n] = '\0';
  r->p += n;
  return true;
}

/* Wipe the copy: key files hold secret keys. */
static void line_done(line_reader *r) {
  explicit_bzero(r->line, sizeof r->line);
}

/* ---- the first key ---------------------------------------------------------- */

int b2s_curve_key_parse(const char *text, size_t len,
                        char z85[B2S_CURVE_KEY_Z85_LEN + 1]) {
  if ((text == NULL && len > 0) || z85 == NULL)
    return B2S_E_ARG;
  line_reader r = {.p = text, .end = len ? text + len : text};
  int rc = B2S_E_ARG;
  while (line_next(&r)) {
    char *p = r.line + strspn(r.line, " \t\r\n");
    size_t n = strcspn(p, " \t\r\n");
    p[n] = '\0';
    uint8_t bin[B2S_CURVE_KEY_LEN];
    if (n == B2S_CURVE_KEY_Z85_LEN && zmq_z85_decode(bin, p) != NULL) {
      memcpy(z85, p, n + 1);
      explicit_bzero(bin, sizeof bin);
      rc = 0;
      break;
    }
    if (n > 0 && p[0] != '#')
      break;                 /* neither a key, a comment nor blank */
  }
  line_done(&r);
  return rc;
}

/* ---- authorized keys -------------------------------------------------------- */

/* Trim s in place; returns the first non-blank character. */
static char *trim(char *s) {
  s += strspn(s, SPACE);
  size_t n = strlen(s);
  while (n > 0 && strchr(SPACE, s[n - 1]) != NULL)
    s[--n] = '\0';
  return s;
}

/* A Z85 key as the first word of s (words end at a space or tab). */
static bool key_decode(const char *s, uint8_t out[B2S_CURVE_KEY_LEN]) {
  char z[B2S_CURVE_KEY_Z85_LEN + 1];
  if (strcspn(s, " \t") != B2S_CURVE_KEY_Z85_LEN)
    return false;
  memcpy(z, s, B2S_CURVE_KEY_Z85_LEN);
  z[B2S_CURVE_KEY_Z85_LEN] = '\0';
  return zmq_z85_decode(out, z) != NULL;
}

typedef struct key_array {
  uint8_t (*v)[B2S_CURVE_KEY_LEN];
  size_t n, cap;
} key_array;

static int key_array_push(key_array *a, const uint8_t key[B2S_CURVE_KEY_LEN]) {
  if (a->n == a->cap) {
    size_t ncap = a->cap ? a->cap * 2 : 16;
    void *nv = realloc(a->v, ncap * sizeof *a->v);
    if (nv == NULL)
      return B2S_E_NOMEM;
    a->v = nv;
    a->cap = ncap;
  }
  memcpy(a->v[a->n++], key, B2S_CURVE_KEY_LEN);
  return 0;
}

int b2s_curve_authorized_parse(const char *text, size_t len,
                               uint8_t (**keys)[B2S_CURVE_KEY_LEN],
                               int *bad_line) {
  if (keys != NULL)
    *keys = NULL;
  if ((text == NULL && len > 0) || keys == NULL || bad_line == NULL)
    return B2S_E_ARG;
  *bad_line = 0;
  line_reader r = {.p = text, .end = len ? text + len : text};
  key_array a = {0};
  int lineno = 0, rc = 0;
  while (rc == 0 && line_next(&r)) {
    lineno++;
    char *s = trim(r.line);
    uint8_t key[B2S_CURVE_KEY_LEN];
    if (*s == '\0')
      continue;
    if (key_decode(s, key))
      rc = key_array_push(&a, key);
    else if (*s != '#') {
      *bad_line = lineno;
      rc = B2S_E_ARG;
    }
  }
  line_done(&r);
  if (rc < 0) {
    free(a.v);
    return rc;
  }
  if (a.n == 0) {
    free(a.v);
    a.v = NULL;
  }
  *keys = a.v;
  return (int)a.n;
}

/* ---- files ------------------------------------------------------------------ */

/* The whole file at path in a malloc'd buffer (*text, *len); -errno, or
 * -EFBIG beyond B2S_CURVE_KEY_FILE_MAX bytes.  Read to the end rather than
 * sized with fstat, so pipes and /dev/stdin work as with stdio. */
static int file_slurp(const char *path, char **text, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  size_t n = 0, cap = 4096;
  char *buf = malloc(cap);
  int rc = buf ? 0 : B2S_E_NOMEM;
  while (rc == 0) {
    if (n == cap) {
      if (cap > B2S_CURVE_KEY_FILE_MAX) {
        rc = -EFBIG;
        break;
      }
      /* one byte past the limit tells a file of exactly the limit apart */
      size_t ncap = cap * 2 > B2S_CURVE_KEY_FILE_MAX
                        ? (size_t)B2S_CURVE_KEY_FILE_MAX + 1
                        : cap * 2;
      char *nb = malloc(ncap);
      if (nb == NULL) {
        rc = B2S_E_NOMEM;
        break;
      }
      memcpy(nb, buf, n);
      explicit_bzero(buf, n);  /* a secret key may be in it */
      free(buf);
      buf = nb;
      cap = ncap;
    }
    ssize_t got = read(fd, buf + n, cap - n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      rc = -errno;
    else if (got == 0)
      break;
    else
      n += (size_t)got;
  }
  close(fd);
  if (rc < 0) {
    if (buf != NULL)
      explicit_bzero(buf, n);
    free(buf);
    return rc;
  }
  *text = buf;
  *len = n;
  return 0;
}

static void file_free(char *text, size_t len) {
  explicit_bzero(text, len);
  free(text);
}

int b2s_curve_key_read(const char *path, char z85[B2S_CURVE_KEY_Z85_LEN + 1]) {
  if (path == NULL || z85 == NULL)
    return B2S_E_ARG;
  char *text;
  size_t len;
  int rc = file_slurp(path, &text, &len);
  if (rc < 0)
    return rc;
  rc = b2s_curve_key_parse(text, len, z85);
  file_free(text, len);
  return rc;
}

int b2s_curve_authorized_read(const char *path,
                              uint8_t (**keys)[B2S_CURVE_KEY_LEN],
                              int *bad_line) {
  if (keys != NULL)
    *keys = NULL;
  if (bad_line != NULL)
    *bad_line = 0;
  if (path == NULL || keys == NULL || bad_line == NULL)
    return B2S_E_ARG;
  char *text;
  size_t len;
  int rc = file_slurp(path, &text, &len);
  if (rc < 0)
    return rc;
  rc = b2s_curve_authorized_parse(text, len, keys, bad_line);
  file_free(text, len);
  return rc;
}
