/* libFuzzer target for the configuration loader: whatever the text, parsing
 * must not crash, leak or grow without bound, and every configuration that
 * loads must dump to YAML that loads back to an equal configuration. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_equal(const b2s_config *a, const b2s_config *b) {
  if (!b2s_daemon_cfg_equal(b2s_config_daemon(a), b2s_config_daemon(b)))
    abort();
  size_t na, nb;
  const b2s_stream_cfg *sa = b2s_config_streams(a, &na);
  const b2s_stream_cfg *sb = b2s_config_streams(b, &nb);
  if (na != nb)
    abort();
  for (size_t i = 0; i < na; i++)
    if (!b2s_stream_cfg_equal(&sa[i], &sb[i]))
      abort();
  sa = b2s_config_templates(a, &na);
  sb = b2s_config_templates(b, &nb);
  if (na != nb)
    abort();
  for (size_t i = 0; i < na; i++)
    if (!b2s_stream_cfg_equal(&sa[i], &sb[i]))
      abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  b2s_errdetail ed;
  b2s_config *cfg = NULL;
  if (b2s_config_parse((const char *)data, size, "fuzz.yaml", "/base/dir",
                       &cfg, &ed) != 0) {
    if (!ed.text[0] || ed.code >= 0)
      abort();   /* every failure explains itself */
    return 0;
  }
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f || b2s_config_dump(cfg, f, B2S_DUMP_HELP) != 0)
    abort();
  fclose(f);
  b2s_config *back = NULL;
  if (b2s_config_parse(text, len, "dump.yaml", "/base/dir", &back, &ed) != 0) {
    fprintf(stderr, "dump does not load: %s\n%s\n", ed.text, text);
    abort();
  }
  check_equal(cfg, back);
  /* Streams made at run time from every template. */
  size_t nt;
  const b2s_stream_cfg *t = b2s_config_templates(cfg, &nt);
  for (size_t i = 0; i < nt; i++) {
    b2s_stream_cfg s;
    int rc = b2s_config_stream_from_template(cfg, t[i].name, "fz", &s);
    if (rc != 0 && rc != B2S_E_CONFIG)
      abort();
  }
  free(text);
  b2s_config_free(back);
  b2s_config_free(cfg);
  return 0;
}
