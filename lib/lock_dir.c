/* lock_dir: the lock directory and the other directories in it that every user of the machine
 * shares (the queue): made with mode 1777 whatever the umask, and refused when they are not
 * what they should be. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpurun.h"
#include "lock_dir_internal.h"

const char *gpurun_lock_dir(const struct gpurun_request *request)
{
	const char *from_environment = getenv("GPURUN_LOCK_DIR");

	if (request && request->lock_dir)
		return request->lock_dir;
	if (from_environment && *from_environment)
		return from_environment;
	return GPURUN_DEFAULT_LOCK_DIR;
}

int shared_dir_check(const char *what, const char *path, int dir_fd, struct gpurun_error *err)
{
	struct stat st;

	if (fstat(dir_fd, &st) != 0)
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR, "%s %s: %s", what, path,
				   strerror(errno));
	/* Without the sticky bit anyone could delete or replace another user's files there. */
	if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR,
				   "%s %s is world-writable without the sticky bit; "
				   "fix: chmod 1777 %s", what, path, path);
	if (faccessat(dir_fd, ".", W_OK | X_OK, AT_EACCESS) != 0)
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR,
				   "cannot write %s %s (owner uid %u, mode %04o); "
				   "fix: chmod 1777 %s, set GPURUN_LOCK_DIR, or use --no-lease",
				   what, path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
				   path);
	return 0;
}

/* A name for a draft that no other process, in this PID namespace or another one sharing the
 * directory, can be using: it is made with O_EXCL (or mkdir) and tried again when taken. */
void draft_name(char *name, size_t size, const char *prefix)
{
	unsigned long long suffix;

	if (getrandom(&suffix, sizeof(suffix), GRND_NONBLOCK) != (ssize_t)sizeof(suffix)) {
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		suffix = ((unsigned long long)getpid() << 32) ^ (unsigned long long)now.tv_nsec ^
			 ((unsigned long long)now.tv_sec << 20);
	}
	snprintf(name, size, "%s%0*llx", prefix, DRAFT_SUFFIX_LENGTH, suffix);
}

int shared_dir_open(int parent_fd, const char *name)
{
	const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	char prefix[PATH_MAX], draft[PATH_MAX];
	int fd = openat(parent_fd, name, flags);

	if (fd >= 0 || errno != ENOENT)
		return fd;
	if (snprintf(prefix, sizeof(prefix), "%s.new-", name) >=
	    (int)sizeof(prefix) - DRAFT_SUFFIX_LENGTH) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* Made under a name of our own, given its mode, then moved into place: nobody sees it
	 * with the mode the umask gave it, and of two creators one wins and both use its. The
	 * mode is set through a descriptor: a path could be swapped for a symlink meanwhile. */
	int made = -1;
	for (int tries = 0; made != 0 && tries < DRAFT_NAME_TRIES; tries++) {
		draft_name(draft, sizeof(draft), prefix);
		made = mkdirat(parent_fd, draft, 0700);
		if (made != 0 && errno != EEXIST)
			return -1;
	}
	if (made != 0)
		return -1;
	fd = openat(parent_fd, draft, flags);
	if (fd >= 0 && fchmod(fd, 01777) == 0 &&
	    renameat2(parent_fd, draft, parent_fd, name, RENAME_NOREPLACE) == 0)
		return fd;
	int cause = errno;
	if (fd >= 0)
		close(fd);
	unlinkat(parent_fd, draft, AT_REMOVEDIR);
	if (cause == EINVAL || cause == ENOSYS) {
		/* A file system without RENAME_NOREPLACE: create in place, then fix the mode. */
		bool created = mkdirat(parent_fd, name, 01777) == 0;
		fd = openat(parent_fd, name, flags);
		if (created && fd >= 0)
			fchmod(fd, 01777);
		return fd;
	}
	if (cause != EEXIST) {
		errno = cause;
		return -1;
	}
	return openat(parent_fd, name, flags);  /* someone else made it first */
}

int gpurun_lock_dir_open(const char *lock_dir, int *dir_fd, struct gpurun_error *err)
{
	struct stat st;
	char path[PATH_MAX];
	size_t length = strlen(lock_dir);

	/* "/scratch/locks/" is "/scratch/locks": its draft must be made beside it, not in it. */
	while (length > 1 && lock_dir[length - 1] == '/')
		length--;
	if (length >= sizeof(path))
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR, "lock directory %s: %s", lock_dir,
				   strerror(ENAMETOOLONG));
	memcpy(path, lock_dir, length);
	path[length] = '\0';
	int fd = shared_dir_open(AT_FDCWD, path);

	if (fd < 0) {
		int cause = errno;

		if (lstat(path, &st) != 0)
			return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR,
					   "cannot create lock directory %s: %s; fix: set "
					   "GPURUN_LOCK_DIR to a writable place, or use --no-lease",
					   lock_dir, strerror(cause));
		if (S_ISLNK(st.st_mode))
			return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR,
					   "lock directory %s is a symlink; refusing to follow it "
					   "(fix: remove it, or set GPURUN_LOCK_DIR)", lock_dir);
		if (!S_ISDIR(st.st_mode))
			return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR,
					   "lock directory %s is not a directory "
					   "(fix: remove it, or set GPURUN_LOCK_DIR)", lock_dir);
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR, "cannot open lock directory %s: %s",
				   lock_dir, strerror(cause));
	}
	int status = shared_dir_check("lock directory", lock_dir, fd, err);
	if (status != 0) {
		close(fd);
		return status;
	}
	*dir_fd = fd;
	return 0;
}
