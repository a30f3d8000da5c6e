/* The message types of the client/daemon protocol (docs/PROTOCOL.md),
 * written once.  The list makes the enum (b2s_wire.h), each type's name
 * and the version it came in (wire.c), and the daemon's handler table
 * (daemon/server.c: a request type without its handler does not
 * compile).  tests/test_wire.c walks it; python/tests/test_wire_types.py
 * checks the Python package's constants and PROTOCOL.md's message
 * headings against it.
 *
 * X(NAME, value, since): B2S_WIRE_NAME = value, first protocol version
 * that has the type.  Values are wire ABI: never change or reuse one. */
#ifndef B2S_WIRE_TYPES_H
#define B2S_WIRE_TYPES_H

/* client -> daemon */
#define B2S_WIRE_REQUESTS(X)                                                   \
  X(HELLO, 0x01, 1)                                                            \
  X(OPEN, 0x02, 1)                                                             \
  X(DATA, 0x03, 1)                                                             \
  X(FLUSH, 0x04, 1)                                                            \
  X(CLOSE, 0x05, 1)                                                            \
  X(SHM_ATTACH, 0x06, 1)                                                       \
  X(SHM_SUBMIT, 0x07, 1)                                                       \
  X(FOLLOW, 0x08, 1)                                                           \
  X(READ, 0x09, 1)                                                             \
  X(UNFOLLOW, 0x0A, 1)                                                         \
  X(STATS, 0x0B, 1)                                                            \
  X(PING, 0x0C, 1)                                                             \
  X(BYE, 0x0D, 1)                                                              \
  X(META, 0x0E, 2)

/* daemon -> client: bit 7 set */
#define B2S_WIRE_REPLIES(X)                                                    \
  X(WELCOME, 0x81, 1)                                                          \
  X(OPENED, 0x82, 1)                                                           \
  X(ACK, 0x83, 1)                                                              \
  X(DROPPED, 0x84, 1)                                                          \
  X(FLUSHED, 0x85, 1)                                                          \
  X(CLOSED, 0x86, 1)                                                           \
  X(SHM_ATTACHED, 0x87, 1)                                                     \
  X(FOLLOWING, 0x88, 1)                                                        \
  X(NOTIFY, 0x89, 1)                                                           \
  X(CHUNK, 0x8A, 1)                                                            \
  X(UNFOLLOWED, 0x8B, 1)                                                       \
  X(STATS_REPLY, 0x8C, 1)                                                      \
  X(PONG, 0x8D, 1)                                                             \
  X(ERROR, 0x8E, 1)                                                            \
  X(META_OK, 0x8F, 2)

#define B2S_WIRE_TYPES(X) B2S_WIRE_REQUESTS(X) B2S_WIRE_REPLIES(X)

#endif
