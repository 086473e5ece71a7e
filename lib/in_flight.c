/* in_flight: the descriptors of acquisitions in flight (in_flight_internal.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpurun.h"
#include "in_flight_internal.h"

/* The list's lock is held across fork (pthread_atfork), so a child finds the list whole, and
 * no descriptor that will hold a lock exists unlisted (in_flight_openat). */
static pthread_mutex_t in_flight_lock = PTHREAD_MUTEX_INITIALIZER;
static int *in_flight;
static size_t in_flight_count, in_flight_room;

static void lock_in_flight_before_fork(void)
{
	pthread_mutex_lock(&in_flight_lock);
}

static void unlock_in_flight_after_fork(void)
{
	pthread_mutex_unlock(&in_flight_lock);
}

static void forget_in_flight_in_child(void)
{
	gpurun_acquire_forget_in_child();
	pthread_mutex_unlock(&in_flight_lock);
}

static void register_fork_handlers(void)
{
	pthread_atfork(lock_in_flight_before_fork, unlock_in_flight_after_fork,
		       forget_in_flight_in_child);
}

void in_flight_watch_forks(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, register_fork_handlers);
}

/* Under in_flight_lock. A list that cannot grow leaves the descriptor unlisted: a child
 * would keep its copy, as before there was a list. */
static void list_in_flight(int fd)
{
	if (in_flight_count == in_flight_room) {
		size_t room = in_flight_room ? in_flight_room * 2 : 16;
		int *bigger = realloc(in_flight, room * sizeof(*bigger));
		if (!bigger)
			return;
		in_flight = bigger;
		in_flight_room = room;
	}
	in_flight[in_flight_count++] = fd;
}

static void unlist_in_flight(int fd)
{
	for (size_t i = 0; i < in_flight_count; i++) {
		if (in_flight[i] == fd) {
			in_flight[i] = in_flight[--in_flight_count];
			return;
		}
	}
}

/* A lease or a ticket is held for the job's whole life, and a program started with its
 * standard descriptors closed would take one on fd 0-2 for a standard stream: its writes would
 * land in a lock file, and its close would drop the lease. Moves fd above them (keeping
 * close-on-exec as it was); -1 stays -1, with errno. */
static int above_standard_descriptors(int fd)
{
	if (fd < 0 || fd > STDERR_FILENO)
		return fd;
	int flags = fcntl(fd, F_GETFD);
	int moved = fcntl(fd, (flags & FD_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, STDERR_FILENO + 1);
	int cause = errno;

	close(fd);
	errno = cause;
	return moved;
}

int in_flight_openat(int dir_fd, const char *name, int flags, mode_t mode)
{
	pthread_mutex_lock(&in_flight_lock);
	int fd = above_standard_descriptors(openat(dir_fd, name, flags, mode));
	int cause = errno;
	if (fd >= 0)
		list_in_flight(fd);
	pthread_mutex_unlock(&in_flight_lock);
	errno = cause;
	return fd;
}

void in_flight_add(int fd)
{
	pthread_mutex_lock(&in_flight_lock);
	list_in_flight(fd);
	pthread_mutex_unlock(&in_flight_lock);
}

/* Closed under the lock: a number closed but still listed could be another thread's next
 * descriptor, which a child would close. */
void in_flight_close(int fd)
{
	pthread_mutex_lock(&in_flight_lock);
	unlist_in_flight(fd);
	close(fd);
	pthread_mutex_unlock(&in_flight_lock);
}

void in_flight_closedir(DIR *dir)
{
	pthread_mutex_lock(&in_flight_lock);
	unlist_in_flight(dirfd(dir));
	closedir(dir);
	pthread_mutex_unlock(&in_flight_lock);
}

void in_flight_hand_over(const int *fds, size_t count, void (*publish)(void *), void *context)
{
	pthread_mutex_lock(&in_flight_lock);
	if (publish)
		publish(context);
	for (size_t i = 0; i < count; i++)
		unlist_in_flight(fds[i]);
	pthread_mutex_unlock(&in_flight_lock);
}

void gpurun_acquire_forget_in_child(void)
{
	for (size_t i = 0; i < in_flight_count; i++)
		close(in_flight[i]);
	in_flight_count = 0;
}
