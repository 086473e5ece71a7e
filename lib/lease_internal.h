/* lease_internal.h: what lease.c, queue.c and acquire.c share about the lock directory. */
#ifndef GPURUN_LEASE_INTERNAL_H
#define GPURUN_LEASE_INTERNAL_H

#include <stddef.h>
#include <sys/types.h>

#include "gpurun.h"

/* Opens parent_fd/name (parent_fd may be AT_FDCWD) as a directory that every user shares,
 * creating it when missing with mode 1777 from its first instant, whatever the umask and
 * whoever else creates it at the same moment. Returns the descriptor (close-on-exec), or -1
 * with errno; a symlink is not followed (ELOOP). */
int lease_shared_dir_open(int parent_fd, const char *name);
/* Refuses a shared directory (`what` names it: "lock directory") that is world-writable
 * without the sticky bit, or that this user cannot write, with the fix (GPURUN_EXIT_LOCK_DIR). */
int lease_check_shared_dir(const char *what, const char *path, int dir_fd,
			   struct gpurun_error *err);
/* prefix followed by 16 random hex digits: a draft's name, unique across PID namespaces. */
void lease_draft_name(char *name, size_t size, const char *prefix);
/* The lock file's name of a device: what identifies the GPU to every user of the directory. */
void lease_file_name(const struct gpurun_device *device, char *name, size_t size);

#endif
