/* The event-stream reader (WHATWG HTML, "interpreting an event stream"),
 * bounded: what `b2stream acq events` reads from GET /api/v1/events. */
#include <stdlib.h>
#include <string.h>

#include "cli_acq.h"

int cli_sse_init(cli_sse *s) {
  memset(s, 0, sizeof *s);
  s->retry_ms = -1;
  s->line = malloc(CLI_SSE_LINE_MAX);
  s->data = malloc(CLI_SSE_DATA_MAX + 1);
  if (s->line == NULL || s->data == NULL) {
    cli_sse_fini(s);
    return -1;
  }
  return 0;
}

void cli_sse_fini(cli_sse *s) {
  free(s->line);
  free(s->data);
  s->line = s->data = NULL;
}

static int fail(cli_sse *s, const char *why) {
  s->failed = true;
  snprintf(s->error, sizeof s->error, "%s", why);
  return -1;
}

static int dispatch(cli_sse *s, cli_sse_cb cb, void *arg) {
  int rc = 0;
  if (s->data_set) {
    /* the last data line's '\n' is not part of the data */
    size_t n = s->data_len > 0 ? s->data_len - 1 : 0;
    s->data[n] = '\0';
    cli_sse_event ev = {.id = s->id,
                        .event = s->event_set ? s->event : "message",
                        .data = s->data, .data_len = n};
    if (!cb(arg, &ev))
      rc = 1;
  }
  s->data_len = 0;
  s->data_set = s->event_set = false;
  s->event[0] = '\0';
  return rc;
}

static int field(cli_sse *s, const char *name, size_t nlen, const char *v,
                 size_t vlen) {
  if (nlen == 5 && !memcmp(name, "event", 5)) {
    if (vlen >= sizeof s->event)
      return fail(s, "an event name over 64 bytes");
    memcpy(s->event, v, vlen);
    s->event[vlen] = '\0';
    s->event_set = true;
  } else if (nlen == 4 && !memcmp(name, "data", 4)) {
    if (s->data_len + vlen + 1 > CLI_SSE_DATA_MAX)
      return fail(s, "an event's data over 1 MiB");
    memcpy(s->data + s->data_len, v, vlen);
    s->data_len += vlen;
    s->data[s->data_len++] = '\n';
    s->data_set = true;
  } else if (nlen == 2 && !memcmp(name, "id", 2)) {
    if (memchr(v, '\0', vlen) != NULL)
      return 0;                  /* ignored, as the standard says */
    if (vlen >= sizeof s->id)
      return fail(s, "an event id over 128 bytes");
    memcpy(s->id, v, vlen);
    s->id[vlen] = '\0';
  } else if (nlen == 5 && !memcmp(name, "retry", 5)) {
    long ms = 0;
    for (size_t i = 0; i < vlen; i++) {
      if (v[i] < '0' || v[i] > '9' || ms > 100000000)
        return 0;                /* not all digits: ignored */
      ms = ms * 10 + (v[i] - '0');
    }
    if (vlen > 0)
      s->retry_ms = ms;
  }
  return 0;                      /* other fields are ignored */
}

static int line(cli_sse *s, cli_sse_cb cb, void *arg) {
  const char *l = s->line;
  size_t n = s->line_len;
  s->line_len = 0;
  if (n == 0)
    return dispatch(s, cb, arg);
  if (l[0] == ':')
    return 0;
  const char *colon = memchr(l, ':', n);
  if (colon == NULL)
    return field(s, l, n, "", 0);
  size_t nlen = (size_t)(colon - l);
  const char *v = colon + 1;
  size_t vlen = n - nlen - 1;
  if (vlen > 0 && v[0] == ' ') {
    v++;
    vlen--;
  }
  return field(s, l, nlen, v, vlen);
}

int cli_sse_feed(cli_sse *s, const char *p, size_t n, cli_sse_cb cb,
                 void *arg) {
  if (s->failed)
    return -1;
  for (size_t i = 0; i < n; i++) {
    char c = p[i];
    if (s->bom < 3) {
      /* a UTF-8 BOM may open the stream (in any pieces): skip it */
      static const char bom[] = "\xEF\xBB\xBF";
      if (c == bom[s->bom]) {
        s->bom++;
        continue;
      }
      s->bom = 3;
    }
    if (s->cr) {
      s->cr = false;
      if (c == '\n')
        continue;                /* CR LF: the line ended at CR */
    }
    if (c == '\r' || c == '\n') {
      s->cr = c == '\r';
      int rc = line(s, cb, arg);
      if (rc != 0)
        return rc;
      continue;
    }
    if (s->line_len >= CLI_SSE_LINE_MAX)
      return fail(s, "a line over 64 KiB");
    s->line[s->line_len++] = c;
  }
  return 0;
}
