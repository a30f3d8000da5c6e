/* File name templates, their expansion and matching, and the rollover
 * arithmetic (b2s_acq_names.h). */
#include "b2s_acq_names.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "b2s_msgpack.h"

static bool lit_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
         c == '+';
}

static bool id_char(unsigned char c) { return lit_char(c) && c != '+'; }

bool b2s_acq_id_valid(const char *s, size_t n) {
  if (!s || n < 1 || n > B2S_ACQ_NAME_PART_MAX || s[0] == '.')
    return false;
  for (size_t i = 0; i < n; i++)
    if (!id_char((unsigned char)s[i]))
      return false;
  return true;
}

int b2s_acq_channel_fs_name(const char *channel, char *out, size_t cap) {
  size_t n = 0, i = 0, len = channel ? strlen(channel) : 0;
  if (cap < 2)
    return -ENAMETOOLONG;
  while (i < len && n < B2S_ACQ_NAME_PART_MAX && n + 1 < cap) {
    unsigned char c = (unsigned char)channel[i];
    size_t k = c < 0x80 ? 1 : b2s_utf8_seq((const uint8_t *)channel + i,
                                           len - i);
    bool keep = lit_char(c) && !(n == 0 && c == '.');
    out[n] = (char)(keep ? c : '_');
    n++;
    i += k ? k : 1;                  /* one '_' per character */
  }
  if (n == 0)
    out[n++] = '_';
  out[n] = '\0';
  return (int)n;
}

static bool ends_with(const char *s, size_t n, const char *suf) {
  size_t k = strlen(suf);
  return n >= k && memcmp(s + n - k, suf, k) == 0;
}

static int bad(b2s_acq_err *e, const char *fmt, const char *a) {
  return b2s_acq_err_set(e, B2S_ACQ_E_BAD_TEMPLATE, "file_template", fmt, a);
}

int b2s_acq_template_parse(const char *text, b2s_acq_template *t,
                           b2s_acq_err *e) {
  memset(t, 0, sizeof *t);
  size_t n = text ? strlen(text) : 0;
  if (n < B2S_ACQ_TEMPLATE_MIN || n > B2S_ACQ_TEMPLATE_MAX)
    return bad(e, "file_template must be %s9 to 255 bytes", "");
  if (!ends_with(text, n, B2S_ACQ_SUFFIX) ||
      ends_with(text, n, B2S_ACQ_RECORDS_SUFFIX))
    return bad(e, "file_template must end with .b2frame%s and not with "
                  ".records.b2frame", "");
  memcpy(t->text, text, n + 1);
  size_t i = 0;
  while (i < n) {
    b2s_acq_seg *s = &t->seg[t->nseg];
    if (text[i] == '{') {
      size_t j = i + 1;
      while (j < n && text[j] != '}' && text[j] != '{')
        j++;
      if (j >= n || text[j] != '}')
        return bad(e, "file_template has a '{' without its '}'%s", "");
      const char *p = text + i + 1;
      size_t k = j - i - 1;
      if (k == 2 && memcmp(p, "id", 2) == 0) {
        s->kind = B2S_ACQ_SEG_ID;
        t->has_id = true;
      } else if (k == 6 && memcmp(p, "stream", 6) == 0) {
        s->kind = B2S_ACQ_SEG_STREAM;
        t->has_stream = true;
      } else if (k == 7 && memcmp(p, "channel", 7) == 0) {
        s->kind = B2S_ACQ_SEG_CHANNEL;
        t->has_channel = true;
      } else if (k == 4 && memcmp(p, "file", 4) == 0) {
        s->kind = B2S_ACQ_SEG_FILE;
        t->has_file = true;
      } else if (k >= 7 && k <= 8 && memcmp(p, "file:0", 6) == 0 &&
                 p[6] >= '0' && p[6] <= '9' &&
                 (k == 7 || (p[7] >= '0' && p[7] <= '9'))) {
        int w = k == 7 ? p[6] - '0' : (p[6] - '0') * 10 + (p[7] - '0');
        if (w < 1 || w > B2S_ACQ_FILE_WIDTH_MAX || (k == 8 && p[6] == '0'))
          return bad(e, "file_template: {file:0N} takes N from 1 to 12%s", "");
        s->kind = B2S_ACQ_SEG_FILE;
        s->width = (uint8_t)w;
        t->has_file = true;
      } else {
        char ph[B2S_ACQ_TEMPLATE_MAX + 3];
        snprintf(ph, sizeof ph, "{%.*s}", (int)k, p);
        return bad(e, "file_template: %s is not a placeholder (those are "
                      "{id} {stream} {channel} {file} {file:0N})", ph);
      }
      i = j + 1;
    } else if (lit_char((unsigned char)text[i])) {
      s->kind = B2S_ACQ_SEG_LIT;
      s->off = (uint16_t)i;
      while (i < n && lit_char((unsigned char)text[i]))
        i++;
      s->len = (uint16_t)(i - s->off);
    } else {
      char c[8];
      unsigned char u = (unsigned char)text[i];
      if (u >= 0x21 && u < 0x7f)
        snprintf(c, sizeof c, "'%c'", u);
      else
        snprintf(c, sizeof c, "0x%02x", u);
      return bad(e, "file_template: %s is not allowed (literal text is "
                    "A-Z a-z 0-9 . _ - +)", c);
    }
    t->nseg++;
  }
  return 0;
}

static unsigned digits_of(uint64_t v) {
  unsigned d = 1;
  while (v >= 10) {
    v /= 10;
    d++;
  }
  return d;
}

uint64_t b2s_acq_file_max(uint64_t frames, uint32_t frames_per_file) {
  uint64_t last = frames ? frames - 1 : (uint64_t)INT64_MAX - 1;
  uint64_t file, chunk;
  b2s_acq_place(frames_per_file, last, &file, &chunk);
  return file;
}

int b2s_acq_template_check(const b2s_acq_template *t, bool source_input,
                           uint64_t frames, uint32_t frames_per_file,
                           const b2s_acq_namevals *v, b2s_acq_err *e) {
  if (frames_per_file && !t->has_file)
    return bad(e, "file_template needs {file} or {file:0N} when "
                  "frames_per_file is not 0%s", "");
  if (source_input && !t->has_channel)
    return bad(e, "file_template needs {channel} for a source input (its "
                  "channels would share a name)%s", "");
  if (t->seg[0].kind == B2S_ACQ_SEG_LIT && t->text[t->seg[0].off] == '.')
    return bad(e, "file_template gives names starting with '.'%s", "");
  unsigned fd = digits_of(b2s_acq_file_max(frames, frames_per_file));
  size_t len = 0;
  for (int i = 0; i < t->nseg; i++) {
    const b2s_acq_seg *s = &t->seg[i];
    const char *val = NULL;
    switch (s->kind) {
    case B2S_ACQ_SEG_LIT:
      len += s->len;
      continue;
    case B2S_ACQ_SEG_FILE:
      len += fd > s->width ? fd : s->width;
      continue;
    case B2S_ACQ_SEG_ID:
      val = v ? v->id : NULL;
      break;
    case B2S_ACQ_SEG_STREAM:
      val = v ? v->stream : NULL;
      break;
    default:
      val = v ? v->channel : NULL;
      break;
    }
    len += val ? strlen(val) : B2S_ACQ_NAME_PART_MAX;
  }
  if (len > B2S_ACQ_FILE_NAME_MAX) {
    char m[32];
    snprintf(m, sizeof m, "%zu", len);
    return bad(e, "file_template can give names of %s bytes; the limit is "
                  "255", m);
  }
  return 0;
}

int b2s_acq_template_expand(const b2s_acq_template *t,
                            const b2s_acq_namevals *v, uint64_t file,
                            char *out, size_t cap) {
  size_t n = 0;
  if (file < 1 || !v || cap == 0)
    return B2S_E_ARG;
  for (int i = 0; i < t->nseg; i++) {
    const b2s_acq_seg *s = &t->seg[i];
    char num[288];
    const char *p;
    size_t k;
    switch (s->kind) {
    case B2S_ACQ_SEG_LIT:
      p = t->text + s->off;
      k = s->len;
      break;
    case B2S_ACQ_SEG_FILE:
      snprintf(num, sizeof num, "%0*" PRIu64, (int)s->width, file);
      p = num;
      k = strlen(num);
      break;
    default:
      p = s->kind == B2S_ACQ_SEG_ID       ? v->id
          : s->kind == B2S_ACQ_SEG_STREAM ? v->stream
                                          : v->channel;
      if (!p)
        return B2S_E_ARG;
      k = strlen(p);
      if (k < 1 || k > B2S_ACQ_NAME_PART_MAX)
        return B2S_E_ARG;
      for (size_t j = 0; j < k; j++)
        if (!lit_char((unsigned char)p[j]))
          return B2S_E_ARG;
      break;
    }
    if (n + k >= cap || n + k > B2S_ACQ_FILE_NAME_MAX)
      return -ENAMETOOLONG;
    memcpy(out + n, p, k);
    n += k;
  }
  out[n] = '\0';
  if (out[0] == '.')
    return B2S_E_ARG;
  return (int)n;
}

/* ---- matching ------------------------------------------------------------ */

/* Positions after segment s can end when it starts at pos: set in next. */
static void seg_ends(const b2s_acq_template *t, const b2s_acq_seg *s,
                     const b2s_acq_namevals *v, const char *name, size_t n,
                     size_t pos, bool *next) {
  const char *val = NULL;
  switch (s->kind) {
  case B2S_ACQ_SEG_LIT:
    if (n - pos >= s->len && memcmp(name + pos, t->text + s->off, s->len) == 0)
      next[pos + s->len] = true;
    return;
  case B2S_ACQ_SEG_FILE: {
    size_t k = 0;
    bool nonzero = false;
    uint64_t num = 0;
    /* file numbers stop at 2^63 - 1 (b2s_acq_file_max): a longer number
     * is no name of ours */
    while (pos + k < n && name[pos + k] >= '0' && name[pos + k] <= '9' &&
           k < 19) {
      nonzero |= name[pos + k] != '0';
      num = num * 10 + (uint64_t)(name[pos + k] - '0');
      k++;
      if (num > (uint64_t)INT64_MAX)
        return;
      /* {file}: no leading zero; {file:0N}: N digits, more only without
       * a leading zero; never the number 0 */
      bool ok = nonzero && (s->width == 0 ? name[pos] != '0'
                            : k == s->width || (k > s->width && name[pos] != '0'));
      if (ok)
        next[pos + k] = true;
    }
    return;
  }
  case B2S_ACQ_SEG_ID:
    val = v ? v->id : NULL;
    break;
  case B2S_ACQ_SEG_STREAM:
    val = v ? v->stream : NULL;
    break;
  default:
    val = v ? v->channel : NULL;
    break;
  }
  if (val) {
    size_t k = strlen(val);
    if (n - pos >= k && memcmp(name + pos, val, k) == 0)
      next[pos + k] = true;
    return;
  }
  for (size_t k = 1; k <= B2S_ACQ_NAME_PART_MAX && pos + k <= n; k++) {
    if (!lit_char((unsigned char)name[pos + k - 1]))
      return;
    next[pos + k] = true;
  }
}

static bool match_data(const b2s_acq_template *t, const b2s_acq_namevals *v,
                       const char *name, size_t n) {
  bool cur[B2S_ACQ_FILE_NAME_MAX + 2], nxt[B2S_ACQ_FILE_NAME_MAX + 2];
  if (n > B2S_ACQ_FILE_NAME_MAX)
    return false;
  memset(cur, 0, sizeof cur);
  cur[0] = true;
  for (int i = 0; i < t->nseg; i++) {
    memset(nxt, 0, sizeof nxt);
    bool any = false;
    for (size_t pos = 0; pos <= n; pos++)
      if (cur[pos]) {
        seg_ends(t, &t->seg[i], v, name, n, pos, nxt);
        any = true;
      }
    if (!any)
      return false;
    memcpy(cur, nxt, sizeof cur);
  }
  return cur[n];
}

bool b2s_acq_template_match(const b2s_acq_template *t,
                            const b2s_acq_namevals *v, const char *name) {
  size_t n = strlen(name);
  if (match_data(t, v, name, n))
    return true;
  size_t rs = strlen(B2S_ACQ_RECORDS_SUFFIX), ds = strlen(B2S_ACQ_SUFFIX);
  if (!ends_with(name, n, B2S_ACQ_RECORDS_SUFFIX) || n - rs + ds > 255)
    return false;
  char data[B2S_ACQ_FILE_NAME_MAX + 1];
  memcpy(data, name, n - rs);
  memcpy(data + (n - rs), B2S_ACQ_SUFFIX, ds + 1);
  return match_data(t, v, data, n - rs + ds);
}

int b2s_acq_records_name(const char *data, char *out, size_t cap) {
  size_t n = strlen(data), ds = strlen(B2S_ACQ_SUFFIX);
  size_t base = ends_with(data, n, B2S_ACQ_SUFFIX) ? n - ds : n;
  int k = snprintf(out, cap, "%.*s%s", (int)base, data,
                   B2S_ACQ_RECORDS_SUFFIX);
  return k > 0 && (size_t)k < cap ? k : -ENAMETOOLONG;
}

/* ---- rollover ------------------------------------------------------------ */

void b2s_acq_place(uint32_t frames_per_file, uint64_t f, uint64_t *file,
                   uint64_t *chunk) {
  if (frames_per_file == 0) {
    *file = 1;
    *chunk = f;
  } else {
    *file = f / frames_per_file + 1;
    *chunk = f % frames_per_file;
  }
}

uint64_t b2s_acq_file_first(uint32_t frames_per_file, uint64_t file) {
  return frames_per_file && file ? (file - 1) * frames_per_file : 0;
}

int b2s_acq_frame_number(uint64_t first_frame, uint64_t producer_frame,
                         uint64_t *f) {
  if (producer_frame < first_frame)
    return B2S_E_FRAME_LATE;
  *f = producer_frame - first_frame;
  return 0;
}
