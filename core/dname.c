/* The frame-name rule of b2s_dname.h. */
#include "b2s_dname.h"

static bool name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

bool b2s_dname_valid(const char *name, size_t len) {
  if (name == NULL || len == 0 || len > B2S_DFRAME_NAME_MAX || name[0] == '.')
    return false;
  for (size_t i = 0; i < len; i++)
    if (!name_char(name[i]))
      return false;
  return true;
}
