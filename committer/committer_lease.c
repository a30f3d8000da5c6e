/* A frame's lease in the store (committer.h): one committer per frame.
 * Taken before the frame is opened (and, for --frame names, before the
 * endpoints are bound, so a second committer takes nothing over), renewed
 * every heartbeat, given up at exit. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "committer.h"

#define LEASE_POLL_MS 200

static void holder_text(const cm_opts *o, char *out, size_t cap) {
  char host[64] = "?";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = '\0';
  snprintf(out, cap, "b2stream-committer on %.63s pid %ld, pull %.96s", host,
           (long)getpid(), o->pull);
  for (char *p = out; *p; p++)   /* the store takes printable bytes */
    if (*p < 0x20 || *p > 0x7e)
      *p = '?';
}

static void lease_name(const cm_frame *f, char *out, size_t cap) {
  snprintf(out, cap, "%s.lease", f->name);
}

int cm_lease_take(cm_frame *f, b2s_store *s, const cm_opts *o, int64_t wait_ms) {
  if (f->lease)
    return 0;
  char name[B2S_DMSG_NAME_MAX + 16], holder[256], who[512];
  lease_name(f, name, sizeof name);
  holder_text(o, holder, sizeof holder);
  int rc;
  for (int64_t waited = 0;; waited += LEASE_POLL_MS) {
    rc = b2s_store_lease_take(s, name, holder, (int)o->lease_ms, &f->lease,
                              who, sizeof who);
    if (rc != B2S_E_BUSY || waited >= wait_ms)
      break;
    struct timespec ts = {0, LEASE_POLL_MS * 1000000L};
    nanosleep(&ts, NULL);
  }
  if (rc == 0) {
    if (f->lease_refused)
      cm_log(CM_INFO, "frame %s: lease taken over (its holder is gone)",
             f->name);
    f->lease_refused = false;
    return 0;
  }
  if (rc == B2S_E_BUSY && !f->lease_refused)
    cm_log(CM_ERR, "frame %s: committed by another committer: %s (lease %s "
           "in the store); not committed here", f->name,
           who[0] ? who : "holder unknown", name);
  else if (rc != B2S_E_BUSY)
    cm_log(CM_ERR, "frame %s: cannot take its lease: %s: %s", f->name,
           b2s_strerror(rc), b2s_store_last_error());
  f->lease_refused = rc == B2S_E_BUSY;
  return rc;
}

int cm_lease_renew(cm_frame *f) {
  if (!f->lease)
    return 0;
  int rc = b2s_store_lease_renew(f->lease);
  if (rc == B2S_E_BUSY) {
    cm_log(CM_ERR, "frame %s: lease lost (it expired and another committer "
           "took it); this one stops committing the frame", f->name);
    cm_lease_drop(f);
  } else if (rc < 0) {
    cm_log(CM_WARN, "frame %s: lease not renewed: %s: %s", f->name,
           b2s_strerror(rc), b2s_store_last_error());
    rc = 0;                      /* still ours until it expires */
  }
  return rc;
}

void cm_lease_drop(cm_frame *f) {
  b2s_store_lease_drop(f->lease);
  f->lease = NULL;
}
