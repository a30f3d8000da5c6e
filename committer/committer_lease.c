/* A frame's lease in the store (committer.h): one committer per frame.
 * Taken before the frame is opened (and, for --frame names, before the
 * endpoints are bound, so a second committer takes nothing over), renewed
 * every heartbeat, given up at exit.  While another holds it, tries come
 * on the committer's own clock (b2s_dcommit_lease), not on messages. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "committer.h"

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

void cm_lease_init(cm_frame *f, int64_t expire_ms) {
  b2s_dcommit_lease_init(&f->lease_wait, expire_ms);
}

/* Another holds it: said at the first refusal and when it shows it is
 * alive (then this committer stands by). */
static void refused(cm_frame *f, const char *name, const char *who,
                    int64_t now_ms) {
  bool first = f->lease_wait.first < 0;
  bool alive = b2s_dcommit_lease_refused(&f->lease_wait, now_ms);
  if (first && !alive)
    cm_log(CM_WARN, "frame %s: its lease is held: %s (lease %s in the "
           "store); tried again every %d ms until it is free or its holder "
           "renews it", f->name, who[0] ? who : "holder unknown", name,
           B2S_DCOMMIT_LEASE_FAST_MS);
  else if (alive)
    cm_log(CM_ERR, "frame %s: committed by another committer: %s (lease %s "
           "in the store); not committed here (standing by: tried every "
           "%d ms)", f->name, who[0] ? who : "holder unknown", name,
           B2S_DCOMMIT_LEASE_SLOW_MS);
}

int cm_lease_try(cm_frame *f, b2s_store *s, const cm_opts *o, int64_t now_ms) {
  if (f->lease)
    return 0;
  if (b2s_dcommit_lease_wait(&f->lease_wait, now_ms) > 0)
    return B2S_E_BUSY;
  char name[B2S_DMSG_NAME_MAX + 16], holder[256], who[512];
  lease_name(f, name, sizeof name);
  holder_text(o, holder, sizeof holder);
  int rc = b2s_store_lease_take(s, name, holder, (int)o->lease_ms, &f->lease,
                                who, sizeof who);
  if (rc == 0) {
    if (f->lease_wait.first >= 0)
      cm_log(CM_INFO, "frame %s: lease taken over after %lld ms (its holder "
             "is gone)", f->name, (long long)(now_ms - f->lease_wait.first));
    b2s_dcommit_lease_taken(&f->lease_wait);
  } else if (rc == B2S_E_BUSY) {
    refused(f, name, who, now_ms);
  } else {
    b2s_dcommit_lease_failed(&f->lease_wait, now_ms);
    cm_log(CM_ERR, "frame %s: cannot take its lease: %s: %s", f->name,
           b2s_strerror(rc), b2s_store_last_error());
  }
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
