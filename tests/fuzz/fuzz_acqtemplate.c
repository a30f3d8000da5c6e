/* libFuzzer target for acquisition file name templates
 * (docs/ACQUISITIONS.md 3.3): b2s_acq_template_parse, _check, _expand and
 * _match.
 *
 * The input is a template, then '\n' and a name to match against it; the
 * name's first 8 bytes (if any) also give a file number.  What must hold:
 * a template that parses expands, for every file number, to a name of at
 * most 255 bytes with no '/', no NUL and no leading '.', that the
 * template matches, whose records companion it matches too, and that the
 * length check of the arm allowed; matching any name never crashes. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_acq_names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void expand_ok(const b2s_acq_template *t, const b2s_acq_namevals *v,
                      uint64_t file, bool checked) {
  char name[B2S_ACQ_FILE_NAME_MAX + 1];
  int n = b2s_acq_template_expand(t, v, file, name, sizeof name);
  if (n == -ENAMETOOLONG) {
    if (checked)
      abort();                       /* the arm's check let it through */
    return;
  }
  if (n < 0) {
    /* only a name starting with '.', which the check refuses */
    if (checked || n != B2S_E_ARG)
      abort();
    return;
  }
  if ((size_t)n != strlen(name) || n > B2S_ACQ_FILE_NAME_MAX ||
      strchr(name, '/') || name[0] == '.' || n < B2S_ACQ_TEMPLATE_MIN)
    abort();
  if (!b2s_acq_template_match(t, v, name))
    abort();
  char rec[B2S_ACQ_FILE_NAME_MAX + 16];
  if (b2s_acq_records_name(name, rec, sizeof rec) > 0 &&
      !b2s_acq_template_match(t, v, rec))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nl = memchr(data, '\n', size);
  size_t tlen = nl ? (size_t)(nl - data) : size;
  size_t nlen = nl ? size - tlen - 1 : 0;
  char *text = malloc(tlen + 1), *name = malloc(nlen + 1);
  if (!text || !name)
    goto out;
  memcpy(text, data, tlen);
  text[tlen] = '\0';
  memcpy(name, nl ? nl + 1 : data, nlen);
  name[nlen] = '\0';
  b2s_acq_template t;
  b2s_acq_err e;
  if (b2s_acq_template_parse(text, &t, &e) != 0) {
    if (e.code != B2S_ACQ_E_BAD_TEMPLATE)
      abort();
    goto out;
  }
  uint64_t file = 1;
  if (nlen >= 8) {
    memcpy(&file, name, 8);
    file = file % (uint64_t)INT64_MAX + 1;
  }
  b2s_acq_namevals v = {.id = "scan-42", .stream = "det1", .channel = "data"};
  b2s_acq_namevals src = {.id = "a"};
  bool ok = b2s_acq_template_check(&t, false, 0, 1, &v, NULL) == 0;
  expand_ok(&t, &v, 1, ok);
  expand_ok(&t, &v, file, ok);
  expand_ok(&t, &v, UINT64_C(9223372036854775807), ok);
  (void)b2s_acq_template_check(&t, true, file, 1000, &src, NULL);
  (void)b2s_acq_template_match(&t, &v, name);
  (void)b2s_acq_template_match(&t, &src, name);
out:
  free(text);
  free(name);
  return 0;
}
