/* File descriptors (fdheadroom.c): the daemon's limit, how many are left, and
 * whether a new session or stream fits.
 *
 * Running out of descriptors inside libzmq (a signaler, a connection)
 * aborts the process, so the daemon keeps reserves: a connection is
 * closed at once (acceptguard.c), a HELLO or a stream made from a
 * template refused (B2S_E_LIMIT), while it would leave fewer descriptors
 * than its reserve below for what is already there (libzmq, readers
 * opening frames, segments). */
#ifndef B2SD_FDROOM_H
#define B2SD_FDROOM_H

#include <stdbool.h>

#include "b2sd.h"

/* Descriptors that must stay free after each kind of new thing: a
 * connection (acceptguard.c) leaves the most room for the sessions
 * already there, a session for streams, a stream for the daemon's
 * running needs. */
#define B2SD_FD_RESERVE 48       /* after a stream from a template */
#define B2SD_FD_RESERVE_SESSION 32 /* after a session (HELLO) */
#define B2SD_FD_RESERVE_ACCEPT 16  /* after a connection */
#define B2SD_FD_PER_STREAM 7     /* its data and records frames, their locks,
                                    the readers' handles */

/* Raise the soft RLIMIT_NOFILE to the hard one and log both.  Before the
 * first thread. */
void b2sd_fd_raise_limit(void);
/* The soft limit, and the descriptors open now (0 and -1 when unknown). */
long b2sd_fd_limit(void);
long b2sd_fd_open(void);
/* Start refusing connections that would leave fewer than
 * B2SD_FD_RESERVE_ACCEPT descriptors (acceptguard.c).  After
 * b2sd_fd_raise_limit, before the first socket. */
void b2sd_accept_guard_init(void);

/* Whether one more session, or one more stream from a template, fits the
 * configured maximum (max_sessions, max_streams) and the descriptors:
 * 0, or B2S_E_LIMIT with the reason in why[n], counted in
 * srv->limit_refused and logged (the first time, then at every power of
 * two).  I/O thread. */
int b2sd_headroom_session(b2sd_server *srv, b2s_errdetail *ed);
int b2sd_headroom_stream(b2sd_server *srv, b2s_errdetail *ed);

/* Whether `need` more descriptors leave `reserve` free, with `open` open
 * of `limit` (an unknown count leaves no room). */
static inline bool b2sd_fd_headroom(long limit, long open, long need,
                                long reserve) {
  return open >= 0 && limit - open - need >= reserve;
}

#endif
