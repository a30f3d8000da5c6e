/* The answers of the acquisition API read for a person: error bodies
 * (docs/ACQUISITIONS.md 9.3), acquisition objects (9.5), the list.  Every
 * body goes through acq/'s strict reader first; a member of the wrong
 * type is shown as absent, never trusted. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "b2s_acq_json.h"
#include "b2s_acq_names.h"
#include "cli_acq.h"

bool cli_acq_token_valid(const char *s, size_t n) {
  if (n < CLI_ACQ_TOKEN_MIN || n > CLI_ACQ_TOKEN_MAX)
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || strchr("-._~+/=", c) != NULL;
    if (!ok || c == '\0')
      return false;
  }
  return true;
}

void cli_acq_put_text(FILE *out, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    fputc(c < 0x20 || c == 0x7f ? '?' : c, out);
  }
}

/* The same into a buffer, cut to fit. */
static void text_into(char *out, size_t cap, size_t *pos, const char *s,
                      size_t n) {
  for (size_t i = 0; i < n && *pos + 1 < cap; i++) {
    unsigned char c = (unsigned char)s[i];
    out[(*pos)++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
  }
  out[*pos < cap ? *pos : cap - 1] = '\0';
}

static void fmt_into(char *out, size_t cap, size_t *pos, const char *fmt,
                     const char *a, size_t an) {
  /* fmt has one %s, which takes a[0..an) cleaned */
  const char *p = strstr(fmt, "%s");
  text_into(out, cap, pos, fmt, p ? (size_t)(p - fmt) : strlen(fmt));
  if (p) {
    text_into(out, cap, pos, a, an);
    text_into(out, cap, pos, p + 2, strlen(p + 2));
  }
}

static json_object *parse(const char *body, size_t len) {
  json_object *o = NULL;
  b2s_acq_err e;
  b2s_acq_err_clear(&e);
  if (body == NULL || b2s_acq_json_parse(body, len, B2S_ACQ_JSON_DEPTH, &o, &e) != 0)
    return NULL;
  return o;
}

static json_object *member(json_object *o, const char *key, json_type t) {
  json_object *v = NULL;
  if (o == NULL || !json_object_is_type(o, json_type_object) ||
      !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, t))
    return NULL;
  return v;
}

static const char *str_member(json_object *o, const char *key, size_t *n) {
  json_object *v = member(o, key, json_type_string);
  if (v == NULL)
    return NULL;
  *n = (size_t)json_object_get_string_len(v);
  return json_object_get_string(v);
}

/* An unsigned integer member; false when absent or not one. */
static bool uint_member(json_object *o, const char *key, uint64_t *out) {
  json_object *v = member(o, key, json_type_int);
  bool neg;
  if (v == NULL || !b2s_acq_json_int(v, &neg, out) || neg)
    return false;
  return true;
}

int cli_acq_err_text(long status, const char *body, size_t len, char *out,
                     size_t cap, char code[65]) {
  size_t pos = 0;
  out[0] = '\0';
  code[0] = '\0';
  json_object *o = parse(body, len);
  json_object *err = member(o, "error", json_type_object);
  size_t cn = 0, mn = 0, fn = 0;
  const char *c = str_member(err, "code", &cn);
  if (c == NULL || cn == 0 || cn > 64) {
    char head[64];
    snprintf(head, sizeof head, "HTTP %ld", status);
    text_into(out, cap, &pos, head, strlen(head));
    if (len > 0) {
      size_t show = len > 120 ? 120 : len;
      fmt_into(out, cap, &pos, ", not an error of the acquisition API: %s",
               body, show);
      if (show < len)
        text_into(out, cap, &pos, "...", 3);
    } else {
      text_into(out, cap, &pos, ", no body", 9);
    }
    json_object_put(o);
    return 0;
  }
  memcpy(code, c, cn);
  code[cn] = '\0';
  text_into(out, cap, &pos, c, cn);
  char st[32];
  snprintf(st, sizeof st, " (%ld)", status);
  text_into(out, cap, &pos, st, strlen(st));
  const char *m = str_member(err, "message", &mn);
  if (m != NULL && mn > 0)
    fmt_into(out, cap, &pos, ": %s", m, mn);
  const char *f = str_member(err, "field", &fn);
  if (f != NULL && fn > 0)
    fmt_into(out, cap, &pos, " (field %s)", f, fn);
  /* a wait's error body has the acquisition beside "error" (OpenAPI
   * WaitError) */
  json_object *acq = member(o, "acquisition", json_type_object);
  size_t sn = 0;
  const char *state = str_member(acq, "state", &sn);
  uint64_t committed;
  if (state != NULL) {
    fmt_into(out, cap, &pos, "; the acquisition is %s", state, sn);
    if (uint_member(member(acq, "counters", json_type_object),
                    "frames_committed", &committed)) {
      char num[48];
      snprintf(num, sizeof num, ", %" PRIu64 " frames committed", committed);
      text_into(out, cap, &pos, num, strlen(num));
    }
  }
  json_object_put(o);
  return (int)cn;
}

bool cli_acq_state(const char *body, size_t len, char state[16]) {
  json_object *o = parse(body, len);
  size_t n = 0;
  const char *s = str_member(o, "state", &n);
  bool ok = s != NULL && n > 0 && n < 16;
  if (ok) {
    memcpy(state, s, n);
    state[n] = '\0';
  }
  json_object_put(o);
  return ok;
}

static void line_str(FILE *out, const char *key, json_object *o,
                     const char *member_name) {
  size_t n = 0;
  const char *s = str_member(o, member_name, &n);
  if (s == NULL)
    return;
  fprintf(out, "%-18s", key);
  cli_acq_put_text(out, s, n);
  fputc('\n', out);
}

static void line_when(FILE *out, const char *key, json_object *o,
                      const char *at, const char *by) {
  size_t n = 0, bn = 0;
  const char *s = str_member(o, at, &n);
  if (s == NULL)
    return;
  fprintf(out, "%-18s", key);
  cli_acq_put_text(out, s, n);
  const char *who = by ? str_member(o, by, &bn) : NULL;
  if (who != NULL) {
    fputs(" by ", out);
    cli_acq_put_text(out, who, bn);
  }
  fputc('\n', out);
}

static void line_uint(FILE *out, const char *key, json_object *o,
                      const char *name) {
  uint64_t v;
  if (uint_member(o, name, &v))
    fprintf(out, "%-18s%" PRIu64 "\n", key, v);
}

static void print_input(FILE *out, json_object *req) {
  json_object *in = member(req, "input", json_type_object);
  size_t n = 0;
  const char *s;
  if ((s = str_member(in, "stream", &n)) != NULL)
    fputs("stream ", out);
  else if ((s = str_member(in, "source", &n)) != NULL)
    fputs("source ", out);
  if (s != NULL)
    cli_acq_put_text(out, s, n);
}

int cli_acq_summary(FILE *out, const char *body, size_t len) {
  json_object *o = parse(body, len);
  size_t idn = 0;
  const char *id = str_member(o, "id", &idn);
  if (id == NULL) {
    json_object_put(o);
    return -1;
  }
  json_object *req = member(o, "request", json_type_object);
  json_object *cnt = member(o, "counters", json_type_object);
  line_str(out, "id:", o, "id");
  line_str(out, "state:", o, "state");
  if (member(req, "input", json_type_object) != NULL) {
    fprintf(out, "%-18s", "input:");
    print_input(out, req);
    fputc('\n', out);
  }
  line_str(out, "directory:", req, "directory");
  line_str(out, "file template:", req, "file_template");
  line_uint(out, "frames expected:", req, "frames");
  line_uint(out, "frames per file:", req, "frames_per_file");
  static const char *const counters[] = {
      "frames_committed", "frames_written", "frames_received",
      "frames_dropped", "frames_gaps", "frames_refused", "frames_discarded",
      "frames_refused_after_end", "bytes_received", "bytes_written", "files"};
  for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++) {
    char key[40];
    snprintf(key, sizeof key, "%s:", counters[i]);
    line_uint(out, key, cnt, counters[i]);
  }
  json_object *loss = member(cnt, "loss", json_type_boolean);
  if (loss != NULL)
    fprintf(out, "%-18s%s\n", "loss:", json_object_get_boolean(loss) ? "yes" : "no");
  json_object *chans = member(o, "channels", json_type_array);
  size_t nch = chans ? json_object_array_length(chans) : 0;
  for (size_t i = 0; i < nch; i++) {
    json_object *ch = json_object_array_get_idx(chans, i);
    json_object *cf = member(ch, "current_file", json_type_object);
    size_t nn = 0, pn = 0;
    const char *name = str_member(ch, "name", &nn);
    const char *path = str_member(cf, "path", &pn);
    if (name == NULL || path == NULL)
      continue;
    fputs("current file:     ", out);
    cli_acq_put_text(out, name, nn);
    fputs(" ", out);
    cli_acq_put_text(out, path, pn);
    fputc('\n', out);
  }
  line_when(out, "armed:", o, "armed_at", "armed_by");
  line_when(out, "writing:", o, "writing_at", NULL);
  line_when(out, "closing:", o, "closing_at", NULL);
  line_when(out, "ended:", o, "ended_at", NULL);
  line_str(out, "stopped by:", o, "stopped_by");
  line_str(out, "aborted by:", o, "aborted_by");
  line_str(out, "end reason:", o, "end_reason");
  json_object *err = member(o, "error", json_type_object);
  size_t cn = 0, mn = 0;
  const char *c = str_member(err, "code", &cn);
  const char *m = str_member(err, "message", &mn);
  if (c != NULL) {
    fputs("error:            ", out);
    cli_acq_put_text(out, c, cn);
    if (m != NULL) {
      fputs(": ", out);
      cli_acq_put_text(out, m, mn);
    }
    fputc('\n', out);
  }
  line_str(out, "last event id:", o, "last_event_id");
  json_object_put(o);
  return 0;
}

int cli_acq_list_text(FILE *out, const char *body, size_t len,
                      char next[65]) {
  next[0] = '\0';
  json_object *o = parse(body, len);
  json_object *arr = member(o, "acquisitions", json_type_array);
  if (arr == NULL) {
    json_object_put(o);
    return -1;
  }
  size_t n = json_object_array_length(arr);
  int printed = 0;
  for (size_t i = 0; i < n; i++) {
    json_object *a = json_object_array_get_idx(arr, i);
    size_t idn = 0, sn = 0;
    const char *id = str_member(a, "id", &idn);
    const char *st = str_member(a, "state", &sn);
    if (id == NULL || st == NULL)
      continue;
    json_object *cnt = member(a, "counters", json_type_object);
    uint64_t committed = 0, frames = 0, files = 0;
    uint_member(cnt, "frames_committed", &committed);
    uint_member(cnt, "files", &files);
    bool have_frames =
        uint_member(member(a, "request", json_type_object), "frames", &frames);
    json_object *loss = member(cnt, "loss", json_type_boolean);
    printed++;
    if (out == NULL)
      continue;
    cli_acq_put_text(out, id, idn);
    fputc(' ', out);
    cli_acq_put_text(out, st, sn);
    fprintf(out, " %" PRIu64, committed);
    if (have_frames && frames > 0)
      fprintf(out, "/%" PRIu64, frames);
    fprintf(out, " files=%" PRIu64 "%s\n", files,
            loss && json_object_get_boolean(loss) ? " loss" : "");
  }
  size_t nn = 0;
  const char *nx = str_member(o, "next", &nn);
  if (nx != NULL && nn > 0 && nn < 65) {
    memcpy(next, nx, nn);
    next[nn] = '\0';
  }
  json_object_put(o);
  return printed;
}

int cli_acq_files_text(FILE *out, const char *body, size_t len, char *next,
                       size_t next_cap) {
  next[0] = '\0';
  json_object *o = parse(body, len);
  json_object *arr = member(o, "files", json_type_array);
  if (arr == NULL) {
    json_object_put(o);
    return -1;
  }
  size_t n = json_object_array_length(arr);
  int count = 0;
  for (size_t i = 0; i < n; i++) {
    json_object *f = json_object_array_get_idx(arr, i);
    size_t cn = 0, sn = 0, pn = 0;
    const char *ch = str_member(f, "channel", &cn);
    const char *st = str_member(f, "state", &sn);
    const char *path = str_member(f, "path", &pn);
    uint64_t num = 0, frames = 0, committed = 0;
    if (ch == NULL || path == NULL || !uint_member(f, "number", &num))
      continue;
    uint_member(f, "frames", &frames);
    uint_member(f, "frames_committed", &committed);
    count++;
    if (out == NULL)
      continue;
    cli_acq_put_text(out, ch, cn);
    fprintf(out, " %" PRIu64 " ", num);
    cli_acq_put_text(out, st ? st : "-", st ? sn : 1);
    fprintf(out, " %" PRIu64 " %" PRIu64 " ", frames, committed);
    cli_acq_put_text(out, path, pn);
    fputc('\n', out);
  }
  json_object *nx = member(o, "next", json_type_object);
  size_t cn = 0;
  const char *ch = str_member(nx, "channel", &cn);
  uint64_t after;
  if (ch != NULL && cn > 0 && cn <= 64 && b2s_acq_id_valid(ch, cn) &&
      uint_member(nx, "after", &after))
    snprintf(next, next_cap, "?channel=%.*s&after=%" PRIu64, (int)cn, ch,
             after);
  json_object_put(o);
  return count;
}

bool cli_acq_end_of(const char *data, size_t len, const char *id,
                    char state[16]) {
  json_object *o = parse(data, len);
  size_t n = 0, sn = 0;
  const char *i = str_member(o, "id", &n);
  const char *s = str_member(o, "state", &sn);
  bool ok = i != NULL && id != NULL && n == strlen(id) && !memcmp(i, id, n) &&
            s != NULL && sn > 0 && sn < 16;
  if (ok) {
    memcpy(state, s, sn);
    state[sn] = '\0';
  }
  json_object_put(o);
  return ok;
}
