/* The HTTP side of `b2stream acq`: libcurl's easy interface (a kept,
 * well-tested HTTP/1.1 client, instead of one written here), the token
 * file, bounded answers. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cli.h"
#include "cli_acq.h"

#define TOKEN_FILE_MAX (1u << 20)
#define ERROR_BODY_MAX (64u << 10)
#define CONNECT_MS 5000L

/* ---- the token file -------------------------------------------------------- */

int cli_acq_token_read(const char *path, char tok[CLI_ACQ_TOKEN_MAX + 1]) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    cli_err("%s: %s", path, strerror(errno));
    return -errno;
  }
  char *buf = malloc(TOKEN_FILE_MAX + 1);
  size_t len = 0;
  int rc = buf ? 0 : -ENOMEM;
  while (rc == 0 && len < TOKEN_FILE_MAX) {
    ssize_t r = read(fd, buf + len, TOKEN_FILE_MAX - len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      rc = -errno;
    else if (r == 0)
      break;
    else
      len += (size_t)r;
  }
  close(fd);
  if (rc < 0) {
    cli_err("%s: %s", path, strerror(-rc));
    free(buf);
    return rc;
  }
  buf[len] = '\0';
  rc = -ENOENT;
  size_t lineno = 0;
  for (char *line = buf, *end; line < buf + len; line = end + 1) {
    lineno++;
    end = memchr(line, '\n', (size_t)(buf + len - line));
    if (end == NULL)
      end = buf + len;
    char *p = line;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
      p++;
    if (p == end || *p == '#')
      continue;
    size_t n = strcspn(p, " \t\r\n");
    if (!cli_acq_token_valid(p, n)) {
      cli_err("%s: line %zu: not a token (32 to 512 of A-Z a-z 0-9 - . _ ~ "
              "+ / =)", path, lineno);
      rc = -EINVAL;
      break;
    }
    memcpy(tok, p, n);
    tok[n] = '\0';
    rc = 0;
    break;
  }
  if (rc == -ENOENT)
    cli_err("%s: no token in the file", path);
  explicit_bzero(buf, len);
  free(buf);
  return rc;
}

/* ---- requests --------------------------------------------------------------- */

typedef struct sink_buf {
  cli_http_answer *a;
  size_t cap, max;
  bool over;
  cli_http_sink sink;          /* streaming: bytes of a 200 go here */
  void *arg;
  bool stopped;
  CURL *c;
} sink_buf;

static bool buf_add(sink_buf *b, const char *p, size_t n) {
  cli_http_answer *a = b->a;
  if (a->len + n > b->max) {
    b->over = true;
    return false;
  }
  if (a->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < a->len + n + 1)
      cap *= 2;
    char *nb = realloc(a->body, cap);
    if (nb == NULL)
      return false;
    a->body = nb;
    b->cap = cap;
  }
  memcpy(a->body + a->len, p, n);
  a->len += n;
  a->body[a->len] = '\0';
  return true;
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg) {
  sink_buf *b = arg;
  size_t n = size * nmemb;
  if (b->sink != NULL) {
    long status = 0;
    curl_easy_getinfo(b->c, CURLINFO_RESPONSE_CODE, &status);
    if (status == 200) {
      if (!b->sink(b->arg, p, n)) {
        b->stopped = true;
        return 0;
      }
      return n;
    }
  }
  return buf_add(b, p, n) ? n : 0;
}

static struct curl_slist *headers(const cli_http *h, bool body, bool events) {
  struct curl_slist *l = NULL, *t;
  char line[CLI_ACQ_TOKEN_MAX + 64];
  l = curl_slist_append(l, events ? "Accept: text/event-stream"
                                  : "Accept: application/json");
  if (l && body && (t = curl_slist_append(l, "Content-Type: application/json")))
    l = t;
  if (l && h->token) {
    snprintf(line, sizeof line, "Authorization: Bearer %s", h->token);
    if ((t = curl_slist_append(l, line)))
      l = t;
    explicit_bzero(line, sizeof line);
  }
  if (l && events && h->last_event_id && h->last_event_id[0]) {
    snprintf(line, sizeof line, "Last-Event-ID: %s", h->last_event_id);
    if ((t = curl_slist_append(l, line)))
      l = t;
  }
  /* libcurl would send "Expect: 100-continue" for larger bodies, which
   * waits a round trip for nothing. */
  if (l && body && (t = curl_slist_append(l, "Expect:")))
    l = t;
  return l;
}

static int perform(const cli_http *h, const char *method, const char *path,
                   const char *body, long timeout_ms, cli_http_answer *a,
                   sink_buf *b) {
  memset(a, 0, sizeof *a);
  b->a = a;
  static bool global;
  if (!global) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      snprintf(a->transport, sizeof a->transport, "libcurl did not start");
      return -ENOMEM;
    }
    global = true;
  }
  size_t ulen = strlen(h->base) + strlen(path) + 1;
  char *url = malloc(ulen);
  CURL *c = curl_easy_init();
  struct curl_slist *hl = headers(h, body != NULL, b->sink != NULL);
  if (url == NULL || c == NULL || hl == NULL) {
    free(url);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    snprintf(a->transport, sizeof a->transport, "out of memory");
    return -ENOMEM;
  }
  snprintf(url, ulen, "%s%s", h->base, path);
  b->c = c;
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_MS);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "b2stream/" B2S_VERSION);
  if (timeout_ms > 0)
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  if (b->sink != NULL) {
    /* The daemon sends a comment every 5 s on an idle event stream
     * (section 10): 30 s without a byte is a dead connection. */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 30L);
  }
  if (!strcmp(method, "POST")) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                     (curl_off_t)(body ? strlen(body) : 0));
  }
  CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
  char *ct = NULL;
  curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
  a->json = ct != NULL && !strncasecmp(ct, "application/json", 16) &&
            (ct[16] == '\0' || ct[16] == ';');
  int ret = 0;
  if (b->stopped) {
    ret = 1;
  } else if (b->over) {
    snprintf(a->transport, sizeof a->transport,
             "the answer is over %zu bytes", b->max);
    ret = -E2BIG;
  } else if (rc != CURLE_OK) {
    snprintf(a->transport, sizeof a->transport, "%s",
             errbuf[0] ? errbuf : curl_easy_strerror(rc));
    ret = -EIO;
  }
  if (a->body == NULL && ret >= 0) {
    a->body = calloc(1, 1);
    if (a->body == NULL)
      ret = -ENOMEM;
  }
  curl_slist_free_all(hl);
  curl_easy_cleanup(c);
  free(url);
  return ret;
}

int cli_http_call(const cli_http *h, const char *method, const char *path,
                  const char *body, long timeout_ms, cli_http_answer *a) {
  sink_buf b = {.max = CLI_ACQ_ANSWER_MAX};
  int rc = perform(h, method, path, body, timeout_ms, a, &b);
  if (rc < 0)
    a->status = 0;
  return rc;
}

int cli_http_stream(const cli_http *h, const char *path, cli_http_sink sink,
                    void *arg, cli_http_answer *a) {
  sink_buf b = {.max = ERROR_BODY_MAX, .sink = sink, .arg = arg};
  return perform(h, "GET", path, NULL, 0, a, &b);
}

void cli_http_answer_free(cli_http_answer *a) {
  free(a->body);
  a->body = NULL;
  a->len = 0;
}
