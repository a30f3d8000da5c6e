/* libFuzzer target for the CurveZMQ key file parsers (proto/b2s_curve_key.h):
 * the first key of a key file and the authorized keys list.  Whatever the
 * bytes, parsing must not crash, read outside the text or leak; a key
 * found is 40 valid Z85 characters, NUL-terminated, taken from the text;
 * a key list has a count that fits the text and an array exactly when it
 * is not empty; a refused list names a line that exists. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "b2s_errors.h"
#include "b2s_curve_key.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether the 40 characters of key occur in text. */
static bool in_text(const char *text, size_t size, const char *key) {
  for (size_t i = 0; i + B2S_CURVE_KEY_Z85_LEN <= size; i++)
    if (memcmp(text + i, key, B2S_CURVE_KEY_Z85_LEN) == 0)
      return true;
  return false;
}

static void check_first_key(const char *text, size_t size) {
  char z85[B2S_CURVE_KEY_Z85_LEN + 1];
  memset(z85, 'x', sizeof z85);
  int rc = b2s_curve_key_parse(text, size, z85);
  if (rc == B2S_E_ARG)
    return;
  if (rc != 0 || z85[B2S_CURVE_KEY_Z85_LEN] != '\0' ||
      strlen(z85) != B2S_CURVE_KEY_Z85_LEN)
    abort();
  uint8_t bin[B2S_CURVE_KEY_LEN];
  if (zmq_z85_decode(bin, z85) == NULL ||
      !in_text(text, size, z85))
    abort();
}

static void check_authorized(const char *text, size_t size) {
  uint8_t (*keys)[B2S_CURVE_KEY_LEN] = (void *)&keys;  /* must be reset */
  int bad_line = -1;
  int n = b2s_curve_authorized_parse(text, size, &keys, &bad_line);
  if (n == B2S_E_ARG) {
    /* a line numbered from 1 that the text has (one byte at least each) */
    if (keys != NULL || bad_line < 1 || (size_t)bad_line > size)
      abort();
    return;
  }
  if (n == B2S_E_NOMEM) {
    if (keys != NULL)
      abort();
    return;
  }
  if (n < 0 || bad_line != 0 || (n == 0) != (keys == NULL) ||
      (size_t)n * B2S_CURVE_KEY_Z85_LEN > size)
    abort();
  for (int i = 0; i < n; i++) {
    char z85[B2S_CURVE_KEY_Z85_LEN + 1];
    if (zmq_z85_encode(z85, keys[i], B2S_CURVE_KEY_LEN) == NULL ||
        !in_text(text, size, z85))
      abort();
  }
  free(keys);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_first_key((const char *)data, size);
  check_authorized((const char *)data, size);
  return 0;
}
