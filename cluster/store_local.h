/* The local (directory) object store, shared between its object half
 * (store_local.c), its key-log half (store_local_kv.c) and their file
 * helpers (store_local_io.c).
 *
 * Files in the directory, for object NAME (names never start with '.',
 * so these never collide with an object):
 *   NAME        the object's bytes, published by link(2) (put_once) or
 *               rename(2) (put) of a fully written temporary file
 *   .a.NAME     its attribute, published before NAME
 *   .k.NAME     its key log (store_kvlog.h), appended under flock(2)
 *   .t.*        temporary files being written
 * Publishing and removing take flock(2) on the directory (a fresh
 * descriptor per call, so threads of one process exclude each other as
 * processes do); readers take no lock. */
#ifndef B2S_STORE_LOCAL_H
#define B2S_STORE_LOCAL_H

#include <stddef.h>
#include <stdint.h>

#include "store_impl.h"

typedef struct store_local {
  b2s_store base;
  int dirfd;
  int sync;    /* enum b2s_sync */
  char *dir;   /* for messages */
} store_local;

/* Room for ".x." + a name + NUL. */
#define LOCAL_REL_MAX (STORE_NAME_MAX + 4)

/* rel = prefix + name (prefix "" for the object itself). */
void b2s_local_rel(char rel[LOCAL_REL_MAX], const char *prefix, const char *name);

/* A failed system call: records "what rel: strerror" and returns -err. */
int b2s_local_errno(const store_local *ls, int err, const char *what,
                const char *rel);

/* fsync the directory when the store syncs (B2S_SYNC_FULL). */
int b2s_local_sync_dir(store_local *ls);

/* Read all of fd (size at most max, else B2S_E_LIMIT) into a malloc'ed
 * buffer. */
int b2s_local_read_fd(store_local *ls, int fd, const char *rel, size_t max,
                  uint8_t **out, size_t *len);

/* Write, or read, all len bytes at offset off; -errno (-EIO when the
 * file is shorter). */
int b2s_local_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
int b2s_local_pread_all(int fd, void *buf, size_t len, uint64_t off);

int b2s_local_kv_set(b2s_store *s, const char *obj, const b2s_kv *kv, size_t n);
int b2s_local_kv_get(b2s_store *s, const char *obj, const char *key,
                 uint8_t **val, size_t *len);
int b2s_local_kv_list(b2s_store *s, const char *obj, const char *after,
                  size_t max, b2s_kv_cb cb, void *arg);

#endif
