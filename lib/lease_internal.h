/* lease_internal.h: what lease.c shares with the other user of the lock directory, queue.c. */
#ifndef GPURUN_LEASE_INTERNAL_H
#define GPURUN_LEASE_INTERNAL_H

/* Opens parent_fd/name (parent_fd may be AT_FDCWD) as a directory that every user shares,
 * creating it when missing with mode 1777 from its first instant, whatever the umask and
 * whoever else creates it at the same moment. Returns the descriptor (close-on-exec), or -1
 * with errno; a symlink is not followed (ELOOP). */
int lease_shared_dir_open(int parent_fd, const char *name);

#endif
