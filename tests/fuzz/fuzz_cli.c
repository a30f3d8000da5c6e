/* libFuzzer target: the b2stream tool's parsers of command-line values
 * (integers, sizes, hex, codec names, filter lists, distributed frames'
 * URLs) and its JSON string escaper, which is fed bytes straight from
 * frame files (metalayer names, dtypes).
 *
 * Properties checked: parsed values respect their bounds; a filter list
 * printed by cli_filters_str parses back to the same slots, and a size
 * printed by b2s_size_format to the same bytes; a URL taken apart into
 * store and frame name gives the URL back, the name within the name rule;
 * the escaper's
 * output is valid UTF-8, a well-formed JSON string, and decodes back to the
 * input bytes (invalid UTF-8 bytes read as Latin-1 code points). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_seq(const uint8_t *s, size_t n) {
  size_t len = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
                             : s[0] >= 0xe0 && s[0] <= 0xef   ? 3
                             : s[0] >= 0xf0 && s[0] <= 0xf4   ? 4
                                                              : 0;
  if (len == 0 || len > n)
    return 0;
  uint32_t cp = len == 1 ? s[0] : s[0] & (0x7f >> len);
  for (size_t k = 1; k < len; k++) {
    if ((s[k] & 0xc0) != 0x80)
      return 0;
    cp = cp << 6 | (s[k] & 0x3f);
  }
  static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return len;
}

static int hexval(uint8_t c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                                : -1;
}

/* Decode the JSON string out[0..n) into dec (Latin-1 \u escapes become one
 * byte each, since the escaper only emits \u00XX); abort if malformed. */
static size_t json_decode(const uint8_t *out, size_t n, uint8_t *dec) {
  if (n < 2 || out[0] != '"' || out[n - 1] != '"')
    abort();
  size_t d = 0;
  for (size_t i = 1; i < n - 1;) {
    uint8_t c = out[i];
    if (c < 0x20 || c == '"')
      abort();
    if (c != '\\') {
      size_t len = utf8_seq(out + i, n - 1 - i);
      if (len == 0)
        abort();
      memcpy(dec + d, out + i, len);
      d += len;
      i += len;
      continue;
    }
    if (i + 1 >= n - 1)
      abort();
    uint8_t e = out[i + 1];
    const char *simple = strchr("\"\\ntr", e);
    if (e != 0 && simple != NULL) {
      static const char map[] = "\"\\\n\t\r";
      dec[d++] = (uint8_t)map[simple - "\"\\ntr"];
      i += 2;
    } else if (e == 'u' && i + 5 < n - 1 && out[i + 2] == '0' &&
               out[i + 3] == '0' && hexval(out[i + 4]) >= 0 &&
               hexval(out[i + 5]) >= 0) {
      dec[d++] = (uint8_t)(hexval(out[i + 4]) << 4 | hexval(out[i + 5]));
      i += 6;
    } else {
      abort();
    }
  }
  return d;
}

static void check_json(const uint8_t *data, size_t size) {
  char *out = NULL;
  size_t olen = 0;
  FILE *f = open_memstream(&out, &olen);
  if (f == NULL)
    return;
  cli_json_string(f, (const char *)data, size);
  fclose(f);
  uint8_t *dec = malloc(olen + 1);
  if (dec == NULL)
    abort();
  size_t dlen = json_decode((const uint8_t *)out, olen, dec);
  if (dlen != size || memcmp(dec, data, size) != 0)
    abort();
  free(dec);
  free(out);
}

static void check_values(const char *s) {
  int64_t v;
  if (cli_parse_int(s, -1000, 1000, &v) == 0 && (v < -1000 || v > 1000))
    abort();
  if (cli_parse_size(s, 1, INT32_MAX, &v) == 0 && (v < 1 || v > INT32_MAX))
    abort();
  uint8_t *hex;
  int32_t len;
  if (cli_parse_hex(s, &hex, &len) == 0) {
    if ((size_t)len * 2 != strlen(s))
      abort();
    free(hex);
  }
  int codec = b2s_codec_from_name(s);
  if (codec >= 0 && strcmp(cli_codec_name(codec), s) != 0)
    abort();
  /* a size printed back parses to the same bytes */
  char sz[32];
  int64_t v2;
  if (b2s_size_parse(s, &v) == 0 &&
      (b2s_size_format(v, sz, sizeof sz) >= (int)sizeof sz ||
       b2s_size_parse(sz, &v2) != 0 || v2 != v))
    abort();
  uint8_t f[B2S_MAX_FILTERS], m[B2S_MAX_FILTERS];
  if (cli_parse_filters(s, f, m) == 0) {
    char text[128];
    uint8_t f2[B2S_MAX_FILTERS], m2[B2S_MAX_FILTERS];
    cli_filters_str(f, m, text, sizeof text);
    if (cli_parse_filters(text, f2, m2) != 0 || memcmp(f, f2, sizeof f) ||
        memcmp(m, m2, sizeof m))
      abort();
  }
}

/* rados://POOL/NAME and dir:///DIR/NAME: store and name put back together
 * are the URL again; the name is 1..160 bytes and starts with no '.'. */
static void check_dist_url(const char *s) {
  cli_dist_url u;
  if (cli_dist_parse(s, &u) != 1)
    return;
  size_t n = strlen(u.name);
  if (n == 0 || n > B2S_DMSG_NAME_MAX || u.name[0] == '.' ||
      strchr(u.name, '/') != NULL)
    abort();
  char back[sizeof u.store + sizeof u.name + 8];
  bool rados = !strncmp(u.store, "rados://", 8);
  snprintf(back, sizeof back, "%s%s/%s", rados ? "" : "dir://", u.store,
           u.name);
  if (strcmp(back, s) != 0)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (s == NULL)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  check_values(s);
  check_dist_url(s);
  free(s);
  check_json(data, size);
  return 0;
}
