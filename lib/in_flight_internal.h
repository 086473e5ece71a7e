/* in_flight_internal.h: the descriptors an acquisition holds open (queue ticket, claimed lock
 * files, lock directory, inotify) and those it looks through for a moment (a lock file or a
 * ticket it tests, the line it reads), listed so that a child forked meanwhile by another thread
 * (a program under the preload library) closes its copies: a copy of a ticket or of a claimed
 * lock file holds that lock as well, and would keep a dead parent's place in line or a GPU. */
#ifndef GPURUN_IN_FLIGHT_INTERNAL_H
#define GPURUN_IN_FLIGHT_INTERNAL_H

#include <dirent.h>
#include <sys/types.h>


/* Registers (once) the fork handlers that close the listed descriptors in a child. Called at
 * the first acquisition, not at load: a program under the preload library without
 * GPURUN_OPTIONS must see no allocation from us. */
void in_flight_watch_forks(void);
/* Opens and lists at once, so that no fork falls between: every descriptor an acquisition
 * opens in the lock directory, even for an instant (a test of a lock takes it for that long). */
int in_flight_openat(int dir_fd, const char *name, int flags, mode_t mode);
/* Lists a descriptor opened otherwise (after the fact). */
void in_flight_add(int fd);
/* Closes a descriptor, listed or not, and takes it off the list. */
void in_flight_close(int fd);
/* The same for a directory stream over a listed descriptor (fdopendir). */
void in_flight_closedir(DIR *dir);
/* Takes descriptors off the list without closing them: the caller keeps them. publish, when
 * not NULL, runs in the same hold of the list's lock, which a fork takes too. */
void in_flight_hand_over(const int *fds, size_t count, void (*publish)(void *), void *context);

#endif
