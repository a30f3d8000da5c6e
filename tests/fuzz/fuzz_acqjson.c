/* libFuzzer target for the acquisition API's request bodies
 * (docs/ACQUISITIONS.md 9.1 and 3.1): the strict JSON reader in front of
 * json-c, then the arm request's parser.
 *
 * The input is one body.  What must hold: the reader either refuses with
 * bad_json (and an offset inside the body), or json-c agrees and gives an
 * object; an arm that parses has a canonical form that parses again to
 * the same form and compares equal to it, and its directory passes check 7
 * or is refused as bad_directory; every refusal is one of the
 * codes of check 2 and renders an error body the reader itself takes. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_acq_json.h"
#include "b2s_acq_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool check2_code(int rc) {
  return rc == B2S_ACQ_E_BAD_JSON || rc == B2S_ACQ_E_UNKNOWN_FIELD ||
         rc == B2S_ACQ_E_BAD_FIELD || rc == B2S_ACQ_E_BAD_ID ||
         rc == B2S_ACQ_E_BAD_TEMPLATE || rc == B2S_ACQ_E_BAD_DIRECTORY ||
         rc == B2S_ACQ_E_BAD_SERIES;
}

static void body_ok(const b2s_acq_err *e) {
  char *j = b2s_acq_err_json(e);
  if (!j)
    return;
  json_object *o = NULL;
  if (b2s_acq_json_parse(j, strlen(j), B2S_ACQ_JSON_DEPTH, &o, NULL) != 0)
    abort();
  json_object_put(o);
  free(j);
}

static void canonical_stable(const b2s_acq_request *r) {
  char *c = b2s_acq_request_canonical(r);
  if (!c)
    return;
  b2s_acq_request again;
  b2s_acq_request_init(&again);
  b2s_acq_err e;
  if (b2s_acq_request_parse(c, strlen(c), &again, &e) != 0)
    abort();
  char *c2 = b2s_acq_request_canonical(&again);
  if (c2 && strcmp(c, c2) != 0)
    abort();
  const char *m = NULL;
  if (b2s_acq_request_compare(r, &again, &m) != 0)
    abort();
  free(c2);
  free(c);
  b2s_acq_request_fini(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* an exact-size copy, so reading past the body is caught */
  char *body = malloc(size ? size : 1);
  if (!body)
    return 0;
  memcpy(body, data, size);
  json_object *o = NULL;
  b2s_acq_err e;
  int rc = b2s_acq_json_parse(body, size, B2S_ACQ_JSON_DEPTH, &o, &e);
  if (rc == 0) {
    if (!o || !json_object_is_type(o, json_type_object))
      abort();
  } else if (rc == B2S_ACQ_E_BAD_JSON) {
    if (o || e.offset < 0 || (size_t)e.offset > size)
      abort();
    body_ok(&e);
  } else if (rc != -ENOMEM) {
    abort();
  }
  json_object_put(o);
  b2s_acq_request r;
  b2s_acq_request_init(&r);
  rc = b2s_acq_request_parse(body, size, &r, &e);
  if (rc == 0) {
    canonical_stable(&r);
    rc = b2s_acq_request_check_directory(&r, &e);
    if (rc != 0 && (rc != B2S_ACQ_E_BAD_DIRECTORY || r.directory[0] == '\0'))
      abort();
  }
  else if (check2_code(rc))
    body_ok(&e);
  else if (rc != -ENOMEM)
    abort();
  b2s_acq_request_fini(&r);
  free(body);
  return 0;
}
