/* Prints the JSON the acquisition room (acq/) produces, for
 * test_acq_openapi.py to validate against docs/acquisitions.openapi.yaml:
 * one line per case, three fields separated by tabs:
 *
 *   arm      BODY  CANONICAL      an arm the parser took, and its
 *                                 canonical request
 *   refused  BODY  ERROR-BODY     an arm refused where the schema must
 *                                 refuse it too
 *   checked  BODY  ERROR-BODY     an arm refused by a rule the schema
 *                                 cannot express (its error body only)
 *   error    CODE  ERROR-BODY     every error code's body, with a field
 *                                 and without
 *   dir      DIR   ok|ERROR-BODY  a directory (as JSON text) through
 *                                 checks 2 and 7
 *
 * Bodies hold no tab or newline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_acq_errors.h"
#include "b2s_acq_request.h"

#define B "\"id\":\"scan-42\",\"input\":{\"stream\":\"det1\"},\"directory\":\"/data/p\""

static const char *const arms[] = {
    "{" B "}",
    "{" B ",\"frames\":3600,\"frames_per_file\":1000,\"series\":{\"sample\":"
    "\"lyso-3\",\"scan\":42}}",
    "{\"series\":{\"scan\":42,\"t\":[1.50,{\"z\":null,\"y\":true}],\"e\":1e2,"
    "\"w\":1e-7,\"x\":0.1,\"g\":1e300,\"h\":-0.0,\"k\":123456789.0},"
    "\"frames\":3600,\"frames_per_file\":1000,\"first_frame\":7,\"id\":"
    "\"scan-42\",\"input\":{\"template\":\"eiger\",\"stream\":\"det1\"},"
    "\"directory\":\"/data/p1234/lyso-3/\",\"create_directory\":true,"
    "\"file_template\":\"{stream}-{id}+{channel}.{file:04}.b2frame\","
    "\"overwrite\":\"replace\",\"on_loss\":\"count\"}",
    "{\"id\":\"s1\",\"input\":{\"source\":\"tcp://det:31001\"},\"directory\":"
    "\"/d/\",\"frames\":9223372036854775807,\"frames_per_file\":2147483647,"
    "\"series\":{\"big\":18446744073709551615,\"neg\":-9223372036854775808,"
    "\"s\":\"a/b\\u00e9 \\\"q\\\" \\\\ \\u0001\\n\\ud83d\\ude00\"}}",
    "{\"id\":\"_x.y-z\",\"input\":{\"stream\":\"-a.b_c\"},\"directory\":"
    "\"/a/.b/c..d/...\",\"file_template\":\"x.b2frame\",\"first_frame\":null,"
    "\"series\":{\"nested\":{\"b\":[[],{}],\"a\":\"\"}}}",
    "{" B ",\"file_template\":\"{file:012}{id}.b2frame\",\"frames_per_file\":1,"
    "\"frames\":0}",
};

static const char *const refused[] = {
    "{\"frame\":1}",
    /* a member name cut to the field's size between characters */
    "{\"a\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\":1}",
    "{" B ",\"Frames\":1}",
    "{\"id\":\"a\",\"input\":{\"stream\":\"s\",\"strem\":1},\"directory\":\"/d\"}",
    "{\"input\":{\"stream\":\"s\"},\"directory\":\"/d\"}",
    "{\"id\":42,\"input\":{\"stream\":\"s\"},\"directory\":\"/d\"}",
    "{\"id\":\".hidden\",\"input\":{\"stream\":\"s\"},\"directory\":\"/d\"}",
    "{\"id\":\"a/b\",\"input\":{\"stream\":\"s\"},\"directory\":\"/d\"}",
    "{\"id\":\"\",\"input\":{\"stream\":\"s\"},\"directory\":\"/d\"}",
    "{\"id\":\"a+b\",\"input\":{\"stream\":\"s\"},\"directory\":\"/d\"}",
    "{\"id\":\"a\",\"directory\":\"/d\"}",
    "{\"id\":\"a\",\"input\":{},\"directory\":\"/d\"}",
    "{\"id\":\"a\",\"input\":{\"stream\":\"s\",\"source\":\"x\"},\"directory\":\"/d\"}",
    "{\"id\":\"a\",\"input\":{\"source\":\"x\",\"template\":\"t\"},\"directory\":\"/d\"}",
    "{\"id\":\"a\",\"input\":{\"stream\":\"a/b\"},\"directory\":\"/d\"}",
    "{\"id\":\"a\",\"input\":{\"source\":\"\"},\"directory\":\"/d\"}",
    "{\"id\":\"a\",\"input\":{\"stream\":\"s\"}}",
    "{\"id\":\"a\",\"input\":{\"stream\":\"s\"},\"directory\":\"\"}",
    "{" B ",\"create_directory\":\"true\"}",
    "{" B ",\"file_template\":5}",
    "{" B ",\"file_template\":\"{id}.h5\"}",
    "{" B ",\"file_template\":\"../{id}.b2frame\"}",
    "{" B ",\"file_template\":\"{file:013}.b2frame\"}",
    "{" B ",\"file_template\":\"{date}.b2frame\"}",
    "{" B ",\"frames\":-1}",
    "{" B ",\"frames\":9223372036854775808}",
    "{" B ",\"frames\":\"5\"}",
    "{" B ",\"frames_per_file\":2147483648}",
    "{" B ",\"first_frame\":-1}",
    "{" B ",\"series\":[]}",
    "{" B ",\"series\":null}",
    "{" B ",\"series\":{\"\":1}}",
    "{" B ",\"series\":{\"12345678901234567890123456789012345678901234567890"
    "123456789012345\":1}}",
    "{" B ",\"overwrite\":\"Replace\"}",
    "{" B ",\"on_loss\":null}",
};

/* refusals by rules of 3.1, 3.3 and 9.1 that the schema does not hold:
 * JSON Schema takes 1.0 for an integer, the FileTemplate pattern does not
 * exclude .records.b2frame, and duplicates or trailing bytes never reach
 * a schema */
static const char *const checked[] = {
    "{" B ",\"frames\":1.0}",
    "{" B ",\"file_template\":\"{id}.records.b2frame\"}",
    "{" B ",\"file_template\":\"{id}.b2frame\",\"frames_per_file\":10}",
    "{\"id\":\"a\",\"input\":{\"source\":\"tcp://d:1\"},\"directory\":\"/d\","
    "\"file_template\":\"{id}_{file}.b2frame\"}",
    "{" B ",\"file_template\":\".{id}.b2frame\"}",
    "{" B ",\"series\":{\"b2stream_acquisition\":{}}}",
    "{\"a\":1,\"a\":2}",
    "{" B "} {}",
    "{" B ",\"frames\":18446744073709551616}",
    "{" B ",\"series\":{\"x\":1e400}}",
};

static void refusal(const char *kind, const char *body) {
  b2s_acq_request r;
  b2s_acq_request_init(&r);
  b2s_acq_err e;
  int rc = b2s_acq_request_parse(body, strlen(body), &r, &e);
  if (rc >= 0 || !b2s_acq_code_valid(rc)) {
    fprintf(stderr, "acq_bodies: %s was not refused (%d)\n", body, rc);
    exit(1);
  }
  char *j = b2s_acq_err_json(&e);
  printf("%s\t%s\t%s\n", kind, body, j);
  free(j);
  b2s_acq_request_fini(&r);
}

static const char *const dirs[] = {
    "/data/p", "/data/p/", "/a/.b/c..d/...", "/d", "/\\u00e9t\\u00e9",
    "/a b/c", "/a/-/_", "data/p", "./data", "~/data", "/", "//", "/a//b",
    "/a//", "/a/./b", "/.", "/a/..", "/a/../b", "/../etc", "/data/p/../../etc",
    "/a/.", "/..", "/.../x", "",
};

static void directory(const char *dir) {
  char body[256];
  snprintf(body, sizeof body,
           "{\"id\":\"a\",\"input\":{\"stream\":\"s\"},\"directory\":\"%s\"}",
           dir);
  b2s_acq_request r;
  b2s_acq_request_init(&r);
  b2s_acq_err e;
  int rc = b2s_acq_request_parse(body, strlen(body), &r, &e);
  if (rc == 0)
    rc = b2s_acq_request_check_directory(&r, &e);
  char *j = rc ? b2s_acq_err_json(&e) : NULL;
  printf("dir\t%s\t%s\n", dir, j ? j : "ok");
  free(j);
  b2s_acq_request_fini(&r);
}

int main(void) {
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
    directory(dirs[i]);
  for (size_t i = 0; i < sizeof arms / sizeof arms[0]; i++) {
    b2s_acq_request r;
    b2s_acq_request_init(&r);
    b2s_acq_err e;
    if (b2s_acq_request_parse(arms[i], strlen(arms[i]), &r, &e) != 0) {
      fprintf(stderr, "acq_bodies: %s refused: %s\n", arms[i], e.message);
      return 1;
    }
    char *c = b2s_acq_request_canonical(&r);
    printf("arm\t%s\t%s\n", arms[i], c);
    free(c);
    b2s_acq_request_fini(&r);
  }
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
    refusal("refused", refused[i]);
  for (size_t i = 0; i < sizeof checked / sizeof checked[0]; i++)
    refusal("checked", checked[i]);
  for (int v = B2S_ACQ_E_BASE_ + 1; v < B2S_ACQ_E_END_; v++) {
    b2s_acq_err e;
    b2s_acq_err_set(&e, v, "directory", "%s \"x\"\\/\t", b2s_acq_code_name(v));
    char *j = b2s_acq_err_json(&e);
    printf("error\t%s\t%s\n", b2s_acq_code_name(v), j);
    free(j);
    b2s_acq_err_set(&e, v, NULL, NULL);
    j = b2s_acq_err_json(&e);
    printf("error\t%s\t%s\n", b2s_acq_code_name(v), j);
    free(j);
  }
  return 0;
}
