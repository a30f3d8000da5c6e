/* Service-manager notifications: the sd_notify(3) protocol, written here so
 * the daemon needs no libsystemd.
 *
 * Protocol.  One datagram per call, sent to the AF_UNIX socket named by
 * $NOTIFY_SOCKET: a filesystem path when it starts with '/', a name in
 * Linux's abstract namespace when it starts with '@' (the '@' stands for
 * the leading NUL byte).  The payload is newline-separated KEY=VALUE
 * assignments such as "READY=1\nSTATUS=serving 3 streams".  The kernel
 * attaches our credentials; systemd (NotifyAccess=main) accepts datagrams
 * from the main pid, which includes every thread of the daemon.
 *
 * Results.  0 when sent, and 0 without doing anything when $NOTIFY_SOCKET
 * is unset or empty (not run by a service manager); a negative errno when
 * the variable names something unusable (-EAFNOSUPPORT for neither '/' nor
 * '@', -ENAMETOOLONG), when the message is too long (-EMSGSIZE) or when the
 * send fails (-ENOENT, -ECONNREFUSED, ...).  A failed notification only
 * means the service manager did not hear it; callers log it and go on.
 *
 * Threads.  Every function may be called from any thread at any time: they
 * keep no state, use only the stack (no allocation) and a socket of their
 * own per call.  They read the environment, so the process must not change
 * it (setenv/unsetenv/putenv) while other threads run.
 *
 * Ownership.  Strings are only read during the call. */
#ifndef B2S_NOTIFY_H
#define B2S_NOTIFY_H

#include <stdint.h>

/* The service manager's receive buffer; longer datagrams are ignored. */
#define B2S_NOTIFY_MSG_MAX 4096

/* Send `state` (one or more KEY=VALUE lines, not empty) as it is.
 * -EINVAL for NULL or empty. */
int b2s_notify(const char *state);

/* "READY=1", plus "\nSTATUS=<status>" when status is not NULL.  Sent once
 * startup is complete, and again after a reload has finished. */
int b2s_notify_ready(const char *status);

/* "STATUS=<printf-formatted text>": the line `systemctl status` shows.  A
 * newline in the text becomes a space (it would start a new assignment),
 * and text that does not fit is cut at a UTF-8 character boundary. */
int b2s_notify_status(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* "STOPPING=1": shutdown has begun (drain, commit, close). */
int b2s_notify_stopping(void);

/* "RELOADING=1\nMONOTONIC_USEC=<CLOCK_MONOTONIC in microseconds>": a reload
 * (SIGHUP) has begun; send b2s_notify_ready() when it is done.  The
 * timestamp is what Type=notify-reload (systemd >= 253) requires; older
 * managers and Type=notify ignore it. */
int b2s_notify_reloading(void);

/* "WATCHDOG=1": the keep-alive ping, to be sent at least every half of the
 * interval b2s_notify_watchdog_usec() reports. */
int b2s_notify_watchdog(void);

/* "EXTEND_TIMEOUT_USEC=<usec>": ask for `usec` more microseconds from now
 * before the current start, stop or reload timeout fires (a long drain). */
int b2s_notify_extend_timeout(uint64_t usec);

/* Whether the service manager expects watchdog pings from this process.
 * Returns 1 and sets *usec to $WATCHDOG_USEC (> 0) when it does; returns 0
 * and sets *usec to 0 when $WATCHDOG_USEC is unset or $WATCHDOG_PID names
 * another process (an inherited environment); -EINVAL when either variable
 * is malformed or WATCHDOG_USEC is 0, -ERANGE when it overflows, -EINVAL
 * for a NULL usec. */
int b2s_notify_watchdog_usec(uint64_t *usec);

#endif
