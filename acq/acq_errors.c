/* The error and failure code tables (b2s_acq_errors.h) and the error
 * body of docs/ACQUISITIONS.md section 9.3. */
#include "b2s_acq_errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

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
