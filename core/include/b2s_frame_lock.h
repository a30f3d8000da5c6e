/* One writer at a time per frame.
 *
 * Whatever changes a frame (the frame writer, recovery, `b2stream convert`
 * while it copies) holds an exclusive flock(2) on the contiguous frame file
 * or on the sparse frame's directory for as long as it may write.  flock
 * rather than fcntl record locks: it belongs to the open file description,
 * so two writers conflict even inside one process, and a reader of the
 * same process closing its own descriptor of the file does not drop it.
 * Readers (b2s_frame, other processes, c-blosc2) take no lock and are
 * never blocked.
 *
 * Ownership: the caller owns the descriptor; closing it releases the lock. */
#ifndef B2S_FRAME_LOCK_H
#define B2S_FRAME_LOCK_H

#include <stdbool.h>
#include <sys/types.h>

/* Lock fd (a frame file, a sparse frame's directory, or any file used as a
 * lock) without waiting.  0; B2S_E_LOCKED when another descriptor holds
 * it; -errno otherwise.  On a file system without flock (some NFS mounts)
 * it returns 0 holding nothing: b2s_lock_held tells. */
int b2s_lock_fd(int fd);
/* Whether fd holds its lock. */
bool b2s_lock_held(int fd);

/* Open the frame at path (file or sparse frame directory) and lock it;
 * *fd gets the descriptor (-1 on failure). */
int b2s_frame_lock(const char *path, int *fd);

/* The process holding the lock of path, from /proc/locks; 0 when it is
 * not known (no /proc, another PID namespace, no holder any more). */
pid_t b2s_lock_holder(const char *path);

#endif
