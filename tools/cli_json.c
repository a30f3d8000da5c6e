/* Hand-written JSON output for `info --json` and `ls --json` (see cli.h).
 * The tool links no JSON library; strings from files (metalayer names,
 * dtypes, paths) are arbitrary bytes, so the escaper guarantees valid UTF-8
 * output whatever it is given. */
#include <string.h>

#include "cli.h"

/* Length of the valid UTF-8 sequence at s[0..n), or 0 when s[0] does not
 * start one (overlong forms, surrogates and code points above U+10FFFF are
 * invalid). */
static size_t utf8_len(const uint8_t *s, size_t n) {
  uint8_t c = s[0];
  size_t len;
  uint32_t cp, min;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2, cp = c & 0x1f, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3, cp = c & 0x0f, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (len > n)
    return 0;
  for (size_t k = 1; k < len; k++) {
    if ((s[k] & 0xc0) != 0x80)
      return 0;
    cp = cp << 6 | (s[k] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return len;
}

void cli_json_string(FILE *out, const char *str, size_t n) {
  const uint8_t *s = (const uint8_t *)str;
  fputc('"', out);
  for (size_t i = 0; i < n;) {
    uint8_t c = s[i];
    size_t len;
    if (c == '"' || c == '\\') {
      fputc('\\', out);
      fputc(c, out);
      i++;
    } else if (c == '\n') {
      fputs("\\n", out), i++;
    } else if (c == '\t') {
      fputs("\\t", out), i++;
    } else if (c == '\r') {
      fputs("\\r", out), i++;
    } else if (c < 0x20 || c == 0x7f) {
      fprintf(out, "\\u%04x", c), i++;
    } else if (c < 0x80) {
      fputc(c, out), i++;
    } else if ((len = utf8_len(s + i, n - i)) > 0) {
      fwrite(s + i, 1, len, out);
      i += len;
    } else {
      fprintf(out, "\\u%04x", c), i++;
    }
  }
  fputc('"', out);
}

void cj_init(cli_json *j, FILE *out) {
  memset(j, 0, sizeof *j);
  j->out = out;
  j->first[0] = true;
}

static void indent(cli_json *j) {
  fputc('\n', j->out);
  for (int d = 0; d < j->depth; d++)
    fputs("  ", j->out);
}

/* Separator, indentation and key (n bytes) before a value. */
static void value_startn(cli_json *j, const char *key, size_t n) {
  bool inl = j->depth > 0 && j->inline_[j->depth];
  if (!j->first[j->depth])
    fputc(',', j->out);
  if (inl && !j->first[j->depth])
    fputc(' ', j->out);
  else if (!inl && j->depth > 0)
    indent(j);
  j->first[j->depth] = false;
  if (key != NULL) {
    cli_json_string(j->out, key, n);
    fputs(": ", j->out);
  }
}

static void value_start(cli_json *j, const char *key) {
  value_startn(j, key, key ? strlen(key) : 0);
}

void cj_raw_keyn(cli_json *j, const char *key, size_t n) {
  value_startn(j, key, n);
}

static void open_level(cli_json *j, const char *key, char c, bool inl) {
  value_start(j, key);
  fputc(c, j->out);
  if (j->depth + 1 < CLI_JSON_MAX_DEPTH)
    j->depth++;
  j->first[j->depth] = true;
  j->inline_[j->depth] = inl;
}

static void close_level(cli_json *j, char c) {
  bool empty = j->first[j->depth], inl = j->inline_[j->depth];
  if (j->depth > 0)
    j->depth--;
  if (!empty && !inl)
    indent(j);
  fputc(c, j->out);
}

void cj_obj_open(cli_json *j, const char *key) { open_level(j, key, '{', false); }
void cj_obj_close(cli_json *j) { close_level(j, '}'); }

void cj_arr_open(cli_json *j, const char *key, bool inline_items) {
  open_level(j, key, '[', inline_items);
}

void cj_arr_close(cli_json *j) { close_level(j, ']'); }

void cj_strn(cli_json *j, const char *key, const char *s, size_t n) {
  value_start(j, key);
  cli_json_string(j->out, s, n);
}

void cj_str(cli_json *j, const char *key, const char *s) {
  cj_strn(j, key, s, strlen(s));
}

void cj_int(cli_json *j, const char *key, int64_t v) {
  value_start(j, key);
  fprintf(j->out, "%lld", (long long)v);
}

void cj_bool(cli_json *j, const char *key, bool v) {
  value_start(j, key);
  fputs(v ? "true" : "false", j->out);
}

void cj_null(cli_json *j, const char *key) {
  value_start(j, key);
  fputs("null", j->out);
}

void cj_ratio(cli_json *j, const char *key, int64_t nbytes, int64_t cbytes) {
  if (cbytes <= 0) {
    cj_null(j, key);
    return;
  }
  value_start(j, key);
  fprintf(j->out, "%.3f", (double)nbytes / (double)cbytes);
}

void cj_end(cli_json *j) { fputc('\n', j->out); }
