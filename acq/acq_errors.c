/* The error and failure code tables (b2s_acq_errors.h) and the error
 * body of docs/ACQUISITIONS.md section 9.3. */
#include "b2s_acq_errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "b2s_msgpack.h"

static const struct {
  const char *name;
  int status;
  const char *meaning;
} codes[] = {
#define B2S_ACQ_ROW_(name, code, status, meaning) {code, status, meaning},
    B2S_ACQ_ERROR_LIST(B2S_ACQ_ROW_)
#undef B2S_ACQ_ROW_
};

static const char *const failures[] = {
#define B2S_ACQ_FROW_(name, code) code,
    B2S_ACQ_FAILURE_LIST(B2S_ACQ_FROW_)
#undef B2S_ACQ_FROW_
};

bool b2s_acq_code_valid(int v) {
  return v > B2S_ACQ_E_BASE_ && v < B2S_ACQ_E_END_;
}

const char *b2s_acq_code_name(int v) {
  return b2s_acq_code_valid(v) ? codes[v - B2S_ACQ_E_BASE_ - 1].name : NULL;
}

int b2s_acq_code_status(int v) {
  return b2s_acq_code_valid(v) ? codes[v - B2S_ACQ_E_BASE_ - 1].status : 0;
}

const char *b2s_acq_code_meaning(int v) {
  return b2s_acq_code_valid(v) ? codes[v - B2S_ACQ_E_BASE_ - 1].meaning
                               : NULL;
}

int b2s_acq_code_by_name(const char *name) {
  for (int v = B2S_ACQ_E_BASE_ + 1; name && v < B2S_ACQ_E_END_; v++)
    if (strcmp(b2s_acq_code_name(v), name) == 0)
      return v;
  return 0;
}

const char *b2s_acq_failure_name(int f) {
  return f > B2S_ACQ_FAIL_NONE && f < B2S_ACQ_FAIL_END_ ? failures[f - 1]
                                                        : NULL;
}

int b2s_acq_failure_by_name(const char *name) {
  for (int f = 1; name && f < B2S_ACQ_FAIL_END_; f++)
    if (strcmp(failures[f - 1], name) == 0)
      return f;
  return 0;
}

size_t b2s_acq_utf8_fit(const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t k = b2s_utf8_seq((const uint8_t *)s + i, n - i);
    if (k == 0)
      break;
    i += k;
  }
  return i;
}

/* Text cut by a buffer's size may end inside a character; member names
 * and paths in it are the client's own UTF-8.  The error body must stay
 * UTF-8 (RFC 8259): an incomplete character at the end is cut, any other
 * byte that does not start a character becomes '?'. */
static void utf8_mend(char *s) {
  size_t n = strlen(s), i = 0;
  while (i < n) {
    i += b2s_acq_utf8_fit(s + i, n - i);
    if (i >= n)
      break;
    unsigned char c = (unsigned char)s[i];
    size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    bool prefix = need && n - i < need;
    for (size_t j = i + 1; prefix && j < n; j++)
      prefix = ((unsigned char)s[j] & 0xc0) == 0x80;
    if (prefix) {
      s[i] = '\0';
      break;
    }
    s[i++] = '?';
  }
}

void b2s_acq_err_clear(b2s_acq_err *e) {
  if (!e)
    return;
  memset(e, 0, sizeof *e);
  e->offset = -1;
}

int b2s_acq_err_set(b2s_acq_err *e, int code, const char *field,
                    const char *fmt, ...) {
  if (!e)
    return code;
  b2s_acq_err_clear(e);
  e->code = code;
  snprintf(e->field, sizeof e->field, "%s", field ? field : "");
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
  } else {
    const char *m = b2s_acq_code_meaning(code);
    snprintf(e->message, sizeof e->message, "%s", m ? m : "");
  }
  utf8_mend(e->field);
  utf8_mend(e->message);
  return code;
}

char *b2s_acq_err_json(const b2s_acq_err *e) {
  int code = e && b2s_acq_code_valid(e->code) ? e->code : B2S_ACQ_E_INTERNAL;
  json_object *err = json_object_new_object();
  json_object *top = json_object_new_object();
  if (!err || !top) {
    json_object_put(err);
    json_object_put(top);
    return NULL;
  }
  const char *msg = e && e->message[0] ? e->message : b2s_acq_code_meaning(code);
  json_object_object_add(err, "code",
                         json_object_new_string(b2s_acq_code_name(code)));
  json_object_object_add(err, "message", json_object_new_string(msg));
  json_object_object_add(err, "status",
                         json_object_new_int(b2s_acq_code_status(code)));
  if (e && e->field[0])
    json_object_object_add(err, "field", json_object_new_string(e->field));
  json_object_object_add(top, "error", err);
  const char *s = json_object_to_json_string_ext(
      top, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  char *out = s ? strdup(s) : NULL;
  json_object_put(top);
  return out;
}
