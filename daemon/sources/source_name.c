/* Stream names of a Stream V2 series; see source_name.h. */
#define _GNU_SOURCE
#include "source_name.h"
#include "stream.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* The start's companion arrays, as the source names their streams. */
static const char *const companion[] = {"flatfield", "pixel_mask",
                                        "countrate"};

/* Name characters allowed in stream names; others become '_'. */
static void put_clean(char *out, size_t cap, size_t *at, const char *s,
                      size_t n) {
  for (size_t i = 0; i < n && *at + 1 < cap; i++) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    out[(*at)++] = ok ? c : '_';
  }
  out[*at] = '\0';
}

static b2s_s2_str text_field(const b2s_s2_msg *m, const char *key) {
  const b2s_s2_field *f = b2s_s2_field_get(m, key);
  b2s_s2_str s = {"", 0};
  if (!f || b2s_s2_text(f->value, &s) < 0)
    return (b2s_s2_str){"", 0};
  return s;
}

/* Where the pattern's last series placeholder ends (the suffix's place). */
static const char *suffix_place(const char *pattern) {
  const char *end = NULL;
  for (const char *p = pattern; (p = strchr(p, '{')) != NULL; p++) {
    if (!strncmp(p, "{series_id}", 11))
      end = p + 11;
    else if (!strncmp(p, "{series_unique_id}", 18))
      end = p + 18;
  }
  return end;
}

int b2sd_s2_name(const char *pattern, const b2s_s2_msg *start,
                 b2s_s2_str ch, uint32_t n, char *out, size_t cap) {
  b2s_s2_str det = text_field(start, "detector_serial_number");
  if (!det.len)
    det = text_field(start, "detector_description");
  if (!det.len)
    det = (b2s_s2_str){"dectris", 7};
  char id[32], sfx[16] = "";
  snprintf(id, sizeof id, "%llu", (unsigned long long)start->series_id);
  if (n >= 2)
    snprintf(sfx, sizeof sfx, ".%u", n);
  const char *place = suffix_place(pattern);
  size_t at = 0;
  out[0] = '\0';
  for (const char *p = pattern; *p;) {
    if (!strncmp(p, "{detector}", 10)) {
      put_clean(out, cap, &at, det.p, det.len);
      p += 10;
    } else if (!strncmp(p, "{series_id}", 11)) {
      put_clean(out, cap, &at, id, strlen(id));
      p += 11;
    } else if (!strncmp(p, "{series_unique_id}", 18)) {
      put_clean(out, cap, &at, start->series_unique_id.p,
                start->series_unique_id.len);
      p += 18;
    } else if (!strncmp(p, "{channel}", 9)) {
      put_clean(out, cap, &at, ch.p, ch.len);
      p += 9;
    } else {
      put_clean(out, cap, &at, p, 1);
      p++;
    }
    if (p == place)
      put_clean(out, cap, &at, sfx, strlen(sfx));
  }
  return b2s_stream_name_check(out);
}

/* Anything at path (a file, a directory, a dangling link) counts; so does
 * a path that cannot be looked at. */
static bool exists(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0 || errno != ENOENT;
}

bool b2sd_s2_name_taken(b2sd_server *srv, const char *template_name,
                        const char *name) {
  if (b2s_stream_name_check(name) < 0)
    return false;                    /* no stream: opening it says why */
  if (b2sd_stream_find(srv, name))
    return true;
  b2s_stream_cfg sc;
  if (b2s_config_stream_from_template(srv->cfg, template_name, name, &sc) < 0)
    return false;
  char rpath[B2S_CONFIG_PATH_MAX + 32];
  return exists(sc.full_path) ||
         b2s_records_path(sc.full_path, rpath, sizeof rpath) < 0 ||
         exists(rpath);
}

static bool series_taken(b2sd_server *srv, const char *pattern,
                         const char *template_name, const b2s_s2_msg *start,
                         uint32_t n) {
  char name[B2S_STREAM_NAME_MAX + 64], comp[B2S_STREAM_NAME_MAX + 80];
  for (uint32_t i = 0; i < start->nchannels; i++) {
    if (b2sd_s2_name(pattern, start, start->channels[i], n, name,
                     sizeof name) < 0)
      continue;
    if (b2sd_s2_name_taken(srv, template_name, name))
      return true;
    for (size_t k = 0; k < sizeof companion / sizeof *companion; k++) {
      snprintf(comp, sizeof comp, "%s.%s", name, companion[k]);
      if (b2sd_s2_name_taken(srv, template_name, comp))
        return true;
    }
  }
  return false;
}

uint32_t b2sd_s2_suffix(b2sd_server *srv, const char *pattern,
                        const char *template_name, const b2s_s2_msg *start) {
  for (uint32_t n = 1; n <= B2SD_S2_SUFFIX_MAX; n++)
    if (!series_taken(srv, pattern, template_name, start, n))
      return n;
  return 0;
}
