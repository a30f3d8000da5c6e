#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "b2s_errors.h"

static const char *const b2s_messages[] = {
#define B2S_ERR_MSG_(name, value, msg) [(value) - B2S_E_BASE_ - 1] = msg,
    B2S_ERROR_LIST(B2S_ERR_MSG_)
#undef B2S_ERR_MSG_
};

const char *b2s_strerror(int code) {
  if (code >= 0)
    return "success";
  if (code > B2S_E_BASE_ && code < B2S_E_END_)
    return b2s_messages[code - B2S_E_BASE_ - 1];
  if (code > -4096)
    return strerror(-code);   /* a passed-through -errno */
  return "unknown error";
}

void b2s_errdetail_clear(b2s_errdetail *ed) {
  if (ed != NULL) {
    ed->code = 0;
    ed->text[0] = '\0';
  }
}

int b2s_errdetail_set(b2s_errdetail *ed, int code, const char *fmt, ...) {
  if (ed == NULL)
    return code;
  ed->code = code;
  ed->text[0] = '\0';
  if (fmt != NULL) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ed->text, sizeof ed->text, fmt, ap);
    va_end(ap);
  }
  return code;
}
