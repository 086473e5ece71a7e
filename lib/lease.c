/* lease: per-GPU reservations as flock()ed files in a shared lock directory. The kernel drops
 * a lock when the last descriptor on it closes, so a lease lives exactly as long as the job
 * that inherited it, and needs no daemon and no cleanup. (The directory is lock_dir.c's, the
 * record of who holds a lease holder.c's.) */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpurun.h"
#include "in_flight_internal.h"
#include "lease_internal.h"

/* A lock file that vanishes under a claimant (removed between our look and our create, or
 * between our open and our lock) is tried again; each try needs another removal in the same
 * microseconds, so one that keeps vanishing is removed on purpose, and we say so, not spin. */
#define LOCK_FILE_TRIES 8
/* How long a claimant waits out observers' instant shared locks: 100 pauses of 100 µs. */
#define OBSERVER_RETRIES 100
#define OBSERVER_PAUSE_NS 100000

/* The lock file's name: the UUID, which is stable across reboots and driver reloads and the
 * same for every user, with anything that is not safe in a file name replaced. A GPU without
 * one (an AMD board without unique_id) is named by its PCI address, which is as stable. */
void lease_file_name(const struct gpurun_device *device, char *name, size_t size)
{
	const char *key = device->uuid;
	char fallback[48];

	if (!*key && device->pci_bus_id[0]) {
		snprintf(fallback, sizeof(fallback), "pci-%s", device->pci_bus_id);
		key = fallback;
	} else if (!*key) {
		snprintf(fallback, sizeof(fallback), "index-%d", device->index);
		key = fallback;
	}
	size_t length = 0;
	for (; key[length] && length + sizeof(".lock") < size; length++) {
		char c = key[length];
		int safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			   c == '-' || c == '_' || c == '.';
		name[length] = safe && !(length == 0 && c == '.') ? c : '_';
	}
	memcpy(name + length, ".lock", sizeof(".lock"));
}

/* Opens an existing lock file for writing, or creates it. A lease is always held through a
 * writable descriptor: its holder record can be written, and its release (the close) is the
 * IN_CLOSE_WRITE that waiters wake on; a read-only one would leave a dead holder's record
 * for --show and release its GPU unseen. O_CREAT is only used for a file that does not exist:
 * on kernels with fs.protected_regular, O_CREAT on another user's file in a sticky directory
 * fails even when its mode allows writing. The descriptor is registered as one in flight. */
static int open_lock_file(int dir_fd, const char *name)
{
	const int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
	struct stat st;

	for (int tries = 0; tries < LOCK_FILE_TRIES; tries++) {
		int fd = in_flight_openat(dir_fd, name, flags, 0);
		if (fd >= 0) {
			/* Our own file that the umask or a hand narrowed: others must write it too. */
			if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
			    (st.st_mode & 0666) != 0666)
				fchmod(fd, 0666);
			return fd;
		}
		if (errno != ENOENT)
			return -1;
		fd = in_flight_openat(dir_fd, name, flags | O_CREAT | O_EXCL, 0666);
		if (fd >= 0) {
			fchmod(fd, 0666);       /* the umask must not lock other users out */
			return fd;
		}
		if (errno != EEXIST)
			return -1;
	}
	errno = EAGAIN;
	return -1;
}

/* Takes a shared lock without blocking and drops it at once: 0 when granted (nobody holds the
 * lease; observers may), 1 when an exclusive lock (a lease) refuses it, -1 with errno. */
static int probe_shared(int fd)
{
	if (flock(fd, LOCK_SH | LOCK_NB) != 0)
		return errno == EWOULDBLOCK ? 1 : -1;
	flock(fd, LOCK_UN);
	return 0;
}

/* A shared lock succeeds exactly when nobody holds the lease. It is held for an instant, and
 * a claimant that meets it waits that instant out (lock_exclusive). */
bool lease_is_held(int fd)
{
	return probe_shared(fd) == 1;
}

/* Refuses what an attacker may plant where a lock file belongs: a symlink (ELOOP from
 * O_NOFOLLOW) or anything but a regular file (a FIFO would hang a reader, a device would be
 * worse). fd is what opening it gave (-1 and errno on failure); the caller closes it. */
static int check_lock_file(int fd, const char *lock_dir, const char *name,
			   struct gpurun_error *err)
{
	struct stat st;

	if (fd < 0) {
		if (errno == ELOOP)
			return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR,
					   "lock file %s/%s is a symlink; refusing to follow it "
					   "(fix: remove it)", lock_dir, name);
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR, "cannot open lock file %s/%s: %s",
				   lock_dir, name, strerror(errno));
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR,
				   "lock file %s/%s is not a regular file (fix: remove it)", lock_dir,
				   name);
	return 0;
}

/* Only an exclusive lock is a lease. Observers (gpurun --print, --show) test for one with a
 * shared lock held for an instant, so a claimant that finds the exclusive lock refused but a
 * shared one granted has met observers only: it tries again a moment later rather than count
 * a free GPU as taken. Returns 0 when locked, 1 when leased by another (or when observers
 * outlast our patience), -1 with errno on a failure. */
static int lock_exclusive(int fd)
{
	const struct timespec pause = { .tv_nsec = OBSERVER_PAUSE_NS };

	for (int tries = 0;; tries++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK)
			return -1;
		int held = probe_shared(fd);
		if (held != 0)
			return held;
		if (tries == OBSERVER_RETRIES)
			return 1;
		nanosleep(&pause, NULL);
	}
}

/* Whether dir_fd/name is still the file fd is open on. */
static bool still_named(int dir_fd, const char *name, int fd)
{
	struct stat named, opened;

	return fstatat(dir_fd, name, &named, AT_SYMLINK_NOFOLLOW) == 0 && fstat(fd, &opened) == 0 &&
	       named.st_dev == opened.st_dev && named.st_ino == opened.st_ino;
}

/* What claim_lock_file answers when the file was unlinked before we locked it. */
#define LOCK_FILE_GONE (-1)

/* One claim of the lock file `name`: 0 with *fd_out, 1 when it is leased, LOCK_FILE_GONE, or an
 * error status. */
static int claim_lock_file(int dir_fd, const char *lock_dir, const char *name, int *fd_out,
			   struct gpurun_error *err)
{
	struct stat st;
	int fd = open_lock_file(dir_fd, name);
	if (fd < 0 && errno == EACCES && fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR,
				   "lock file %s/%s is not writable by this user (owner uid %u, mode "
				   "%04o); fix: chmod 0666 it, or remove it", lock_dir, name,
				   (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	int status = check_lock_file(fd, lock_dir, name, err);
	if (status != 0) {
		if (fd >= 0)
			in_flight_close(fd);
		return status;
	}
	int locked = lock_exclusive(fd);
	if (locked != 0) {
		int cause = errno;

		in_flight_close(fd);
		if (locked == 1)
			return 1;
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR, "cannot lock %s/%s: %s", lock_dir,
				   name, strerror(cause));
	}
	/* Unlinked between our open and our lock (by /tmp's cleaning, or by the directory's
	 * owner), the file would guard nothing: the next claimant makes another. */
	if (!still_named(dir_fd, name, fd)) {
		in_flight_close(fd);
		return LOCK_FILE_GONE;
	}
	*fd_out = fd;
	return 0;
}

int gpurun_lease_try(int dir_fd, const char *lock_dir, const struct gpurun_device *device,
		     int *fd_out, struct gpurun_error *err)
{
	char name[LEASE_FILE_NAME_SIZE];
	int status = LOCK_FILE_GONE;

	lease_file_name(device, name, sizeof(name));
	for (int tries = 0; status == LOCK_FILE_GONE && tries < LOCK_FILE_TRIES; tries++)
		status = claim_lock_file(dir_fd, lock_dir, name, fd_out, err);
	if (status == LOCK_FILE_GONE)
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR, "lock file %s/%s keeps being removed "
							      "as it is locked", lock_dir, name);
	return status;
}

int gpurun_lease_observe(int dir_fd, const char *lock_dir, const struct gpurun_device *device,
			 struct gpurun_error *err)
{
	char name[LEASE_FILE_NAME_SIZE];

	lease_file_name(device, name, sizeof(name));
	/* Read-only and never created: looking must not look like a release to a waiter
	 * (inotify reports only closes of writable descriptors to it). */
	int fd = in_flight_openat(dir_fd, name,
				  O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0);
	if (fd < 0 && errno == ENOENT)
		return 0;
	int status = check_lock_file(fd, lock_dir, name, err);
	if (status != 0) {
		if (fd >= 0)
			in_flight_close(fd);
		return status;
	}
	bool held = lease_is_held(fd);
	in_flight_close(fd);
	return held ? 1 : 0;
}

void gpurun_lease_keep_across_exec(const struct gpurun_lease *lease)
{
	gpurun_lease_keep_and_publish(lease, NULL, NULL);
}

void gpurun_lease_keep_and_publish(const struct gpurun_lease *lease, void (*publish)(void *),
				   void *context)
{
	in_flight_hand_over(lease->fds, lease->count, publish, context);
	for (size_t i = 0; i < lease->count; i++) {
		int flags = fcntl(lease->fds[i], F_GETFD);
		if (flags >= 0)
			fcntl(lease->fds[i], F_SETFD, flags & ~FD_CLOEXEC);
	}
}

void gpurun_lease_release(struct gpurun_lease *lease)
{
	for (size_t i = 0; i < lease->count; i++)
		in_flight_close(lease->fds[i]);
	free(lease->fds);
	lease->fds = NULL;
	lease->count = 0;
}
