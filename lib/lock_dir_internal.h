/* lock_dir_internal.h: making and checking the directories every user of the machine shares,
 * for queue.c (the lock directory itself is opened through gpurun_lock_dir_open). */
#ifndef GPURUN_LOCK_DIR_INTERNAL_H
#define GPURUN_LOCK_DIR_INTERNAL_H

#include <stddef.h>

#include "gpurun.h"

/* Opens parent_fd/name (parent_fd may be AT_FDCWD) as a directory that every user shares,
 * creating it when missing with mode 1777 from its first instant, whatever the umask and
 * whoever else creates it at the same moment. Returns the descriptor (close-on-exec), or -1
 * with errno; a symlink is not followed (ELOOP). */
int shared_dir_open(int parent_fd, const char *name);
/* Refuses a shared directory (`what` names it: "lock directory") that is world-writable
 * without the sticky bit, or that this user cannot write, with the fix (GPURUN_EXIT_LOCK_DIR). */
int shared_dir_check(const char *what, const char *path, int dir_fd, struct gpurun_error *err);
/* A draft's name ends in a 64-bit random number, in hex. */
#define DRAFT_SUFFIX_LENGTH 16
/* Two random names meet by chance practically never, so a draft name taken again and again was
 * planted there, or names come from the time and pid (no randomness yet at boot) and another
 * process is drafting in the same instant: a few tries are plenty, and then give up (EEXIST). */
#define DRAFT_NAME_TRIES 8

/* prefix followed by DRAFT_SUFFIX_LENGTH random hex digits: a draft's name, unique across PID
 * namespaces. */
void draft_name(char *name, size_t size, const char *prefix);

#endif
