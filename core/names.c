/* Codec and filter names, size units (the syntax is in b2s_names.h). */
#include <stdio.h>
#include <string.h>

#include "b2s_errors.h"
#include "b2s_names.h"

typedef struct {
  const char *name;
  int code;
} name_code;

#define ROW(name, code) {name, code},
static const name_code codecs[] = {B2S_CODEC_NAMES(ROW)};
static const name_code filters[] = {{"none", B2S_FILTER_NONE},
                                    B2S_FILTER_NAMES(ROW)};
static const name_code splits[] = {B2S_SPLIT_NAMES(ROW)};
#undef ROW

#define NROWS(t) (sizeof t / sizeof t[0])

static int code_of(const name_code *t, size_t n, const char *name) {
  for (size_t i = 0; name && i < n; i++)
    if (strcmp(name, t[i].name) == 0)
      return t[i].code;
  return -1;
}

static const char *name_of(const name_code *t, size_t n, int code) {
  for (size_t i = 0; i < n; i++)
    if (t[i].code == code)
      return t[i].name;
  return NULL;
}

int b2s_codec_from_name(const char *name) {
  int c = code_of(codecs, NROWS(codecs), name);
  return c < 0 ? B2S_E_CODEC : c;
}

const char *b2s_codec_name(int codec) {
  return name_of(codecs, NROWS(codecs), codec);
}

int b2s_filter_from_name(const char *name) {
  int f = code_of(filters, NROWS(filters), name);
  return f < 0 ? B2S_E_FILTER : f;
}

const char *b2s_filter_name(int filter) {
  return name_of(filters, NROWS(filters), filter);
}

const char *b2s_split_name(int splitmode) {
  return name_of(splits, NROWS(splits), splitmode);
}

/* ---- sizes ------------------------------------------------------------- */

#define KI INT64_C(1024)
#define KD INT64_C(1000)

static const struct {
  const char *unit;
  int64_t mult;
} units[] = {
  {"", 1}, {"B", 1},
  {"k", KI}, {"K", KI}, {"KiB", KI},
  {"M", KI * KI}, {"MiB", KI * KI},
  {"G", KI * KI * KI}, {"GiB", KI * KI * KI},
  {"T", KI * KI * KI * KI}, {"TiB", KI * KI * KI * KI},
  {"kB", KD}, {"KB", KD}, {"MB", KD * KD}, {"GB", KD * KD * KD},
  {"TB", KD * KD * KD * KD},
};

int b2s_size_parse(const char *s, int64_t *out) {
  if (s == NULL || out == NULL || *s < '0' || *s > '9')
    return B2S_E_ARG;
  const char *p = s;
  uint64_t v = 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (v > (uint64_t)INT64_MAX / 10)
      return B2S_E_ARG;
    v = v * 10 + (unsigned)(*p - '0');
  }
  /* one space may separate the unit; a space and no unit is not a size */
  if (*p == ' ' && *++p == '\0')
    return B2S_E_ARG;
  for (size_t i = 0; i < NROWS(units); i++) {
    if (strcmp(p, units[i].unit) != 0)
      continue;
    if (v > (uint64_t)(INT64_MAX / units[i].mult))
      return B2S_E_ARG;
    *out = (int64_t)v * units[i].mult;
    return 0;
  }
  return B2S_E_ARG;
}

int b2s_size_format(int64_t v, char *buf, size_t n) {
  static const char *const names[] = {"TiB", "GiB", "MiB", "KiB"};
  for (int i = 0; i < 4 && v != 0; i++) {
    int shift = 40 - 10 * i;
    if (v % (INT64_C(1) << shift) == 0)
      return snprintf(buf, n, "%lld%s", (long long)(v / (INT64_C(1) << shift)),
                      names[i]);
  }
  return snprintf(buf, n, "%lld", (long long)v);
}
