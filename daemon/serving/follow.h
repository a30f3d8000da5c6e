/* Follows (follow.c): consumers' FOLLOW, UNFOLLOW and READ, and the NOTIFYs
 * of committed chunks.  I/O thread only.  The follow itself is in
 * session.h; its reads go through readers.h. */
#ifndef B2SD_FOLLOW_H
#define B2SD_FOLLOW_H

#include "session.h"

void b2sd_follow_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m);
void b2sd_unfollow_msg(b2sd_server *srv, b2sd_session *s,
                       const b2s_wire_msg *m);
void b2sd_read_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m);
/* Announce committed chunks to the stream's follows.  Returns true when
 * something is held back (peer queue full, push budget used). */
bool b2sd_follow_scan(b2sd_server *srv, b2sd_stream *st);
void b2sd_follow_remove(b2sd_follow *f);

#endif
