#include "venv_python.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int ts_venv_python(char *py, size_t cap) {
  const char *venv = getenv("B2S_VENV");
  if (!venv)
    venv = getenv("B2S_VENV_DEFAULT");
  snprintf(py, cap, "%s/bin/python", venv ? venv : "");
  if (venv && access(py, X_OK) == 0)
    return 1;
  printf("c-blosc2 check skipped: no venv at $B2S_VENV or .venv\n");
  return 0;
}
