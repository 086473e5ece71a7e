/* fork_while_waiting: forks while another thread waits in gpurun_acquire, as a program under
 * the preload library may, and reports what of that acquisition the child still holds: the
 * descriptors that point into the lock directory, and inotify ones. The child either relies on
 * libgpurun's own fork handler ("auto") or also calls gpurun_acquire_forget_in_child
 * ("explicit"); "in-a-test" is "auto" with the fork made while the waiting thread is inside
 * its next test of a lock (a flock it may not block on, as a look takes on each lock file),
 * where it holds a descriptor for that instant. Exits 0 when the child holds none, 1 when it
 * holds some (listed on stderr).
 * usage: fork_while_waiting LIBGPURUN LOCK_DIR auto|explicit|in-a-test ACQUIRE-OPTIONS */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpurun.h"

static int (*acquire)(const struct gpurun_request *, gpurun_progress_fn *, void *,
		      struct gpurun_choice *, struct gpurun_error *);
static struct gpurun_request request;

/* "in-a-test": the waiting thread, once armed, stops in its next test of a lock until the
 * main thread has forked. This flock is exported (the Makefile), so libgpurun's calls reach
 * it. */
enum stop { STOP_OFF, STOP_ARMED, STOP_IN_A_TEST, STOP_FORKED };
static pthread_t waiting_thread;
static pthread_mutex_t stop_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stop_changed = PTHREAD_COND_INITIALIZER;
static enum stop stop = STOP_OFF;
static int (*real_flock)(int, int);     /* libc's, found before any thread starts */

int flock(int fd, int operation);

static void set_stop(enum stop next)
{
	pthread_mutex_lock(&stop_lock);
	stop = next;
	pthread_cond_broadcast(&stop_changed);
	pthread_mutex_unlock(&stop_lock);
}

/* Waits for the stop to reach `awaited`; false after `seconds`. */
static bool await_stop(enum stop awaited, int seconds)
{
	struct timespec deadline;
	int status = 0;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += seconds;
	pthread_mutex_lock(&stop_lock);
	while (stop != awaited && status == 0)
		status = pthread_cond_timedwait(&stop_changed, &stop_lock, &deadline);
	bool reached = stop == awaited;
	pthread_mutex_unlock(&stop_lock);
	return reached;
}

int flock(int fd, int operation)
{
	int result = real_flock(fd, operation);
	int cause = errno;

	pthread_mutex_lock(&stop_lock);
	if (stop == STOP_ARMED && operation == (LOCK_SH | LOCK_NB) &&
	    pthread_equal(pthread_self(), waiting_thread)) {
		stop = STOP_IN_A_TEST;
		pthread_cond_broadcast(&stop_changed);
		while (stop != STOP_FORKED)
			pthread_cond_wait(&stop_changed, &stop_lock);
	}
	pthread_mutex_unlock(&stop_lock);
	errno = cause;
	return result;
}

static void *wait_for_gpus(void *unused)
{
	struct gpurun_choice choice;
	struct gpurun_error err;

	(void)unused;
	acquire(&request, NULL, NULL, &choice, &err);
	return NULL;
}

/* True once a live ticket (locked, not a draft) is in the queue: the waiter holds its place in
 * line. A dead waiter's ticket, not yet removed, does not count. */
static int has_ticket(const char *lock_dir)
{
	char path[PATH_MAX];
	struct dirent *entry;
	int found = 0;

	snprintf(path, sizeof(path), "%s/queue", lock_dir);
	DIR *dir = opendir(path);
	if (!dir)
		return 0;
	while (!found && (entry = readdir(dir)) != NULL) {
		if (entry->d_name[0] == '.' || strncmp(entry->d_name, "draft-", 6) == 0)
			continue;
		int fd = openat(dirfd(dir), entry->d_name, O_RDONLY | O_CLOEXEC);
		found = fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) != 0;
		if (fd >= 0)
			close(fd);
	}
	closedir(dir);
	return found;
}

/* The child's descriptors that belong to the acquisition; listed on stderr. */
static int count_inherited(const char *lock_dir)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *entry;
	int count = 0;

	while (dir && (entry = readdir(dir)) != NULL) {
		char link[PATH_MAX + 32], target[PATH_MAX];
		snprintf(link, sizeof(link), "/proc/self/fd/%s", entry->d_name);
		ssize_t length = readlink(link, target, sizeof(target) - 1);
		if (length <= 0)
			continue;
		target[length] = '\0';
		if (strncmp(target, lock_dir, strlen(lock_dir)) == 0 || strstr(target, "inotify")) {
			fprintf(stderr, "fork_while_waiting: the child holds %s -> %s\n", entry->d_name,
				target);
			count++;
		}
	}
	if (dir)
		closedir(dir);
	return count;
}

int main(int argc, char **argv)
{
	struct gpurun_error err;
	pthread_t waiter;

	real_flock = (int (*)(int, int))dlsym(RTLD_NEXT, "flock");
	if (!real_flock) {
		fprintf(stderr, "fork_while_waiting: no flock after this program's own\n");
		return 2;
	}
	if (argc != 5) {
		fprintf(stderr, "usage: fork_while_waiting LIBGPURUN LOCK_DIR auto|explicit|in-a-test "
			"OPTIONS\n");
		return 2;
	}
	void *library = dlopen(argv[1], RTLD_NOW);
	if (!library) {
		fprintf(stderr, "fork_while_waiting: %s\n", dlerror());
		return 2;
	}
	void (*init)(struct gpurun_request *) = (void (*)(struct gpurun_request *))dlsym(library, "gpurun_request_init");
	int (*parse)(struct gpurun_request *, const char *, struct gpurun_error *) =
		(int (*)(struct gpurun_request *, const char *, struct gpurun_error *))dlsym(library, "gpurun_request_parse_string");
	void (*forget)(void) = (void (*)(void))dlsym(library, "gpurun_acquire_forget_in_child");
	acquire = (int (*)(const struct gpurun_request *, gpurun_progress_fn *, void *,
			   struct gpurun_choice *, struct gpurun_error *))dlsym(library, "gpurun_acquire");
	if (!init || !parse || !acquire || (!forget && strcmp(argv[3], "explicit") == 0)) {
		fprintf(stderr, "fork_while_waiting: %s lacks the API\n", argv[1]);
		return 2;
	}
	init(&request);
	if (parse(&request, argv[4], &err) != 0) {
		fprintf(stderr, "fork_while_waiting: %s\n", err.message);
		return 2;
	}
	pthread_create(&waiter, NULL, wait_for_gpus, NULL);
	waiting_thread = waiter;
	const struct timespec pause = { .tv_nsec = 10 * 1000 * 1000 };
	for (int i = 0; !has_ticket(argv[2]); i++) {
		if (i == 3000) {
			fprintf(stderr, "fork_while_waiting: the waiter never joined the queue\n");
			return 2;
		}
		nanosleep(&pause, NULL);
	}
	bool in_a_test = strcmp(argv[3], "in-a-test") == 0;
	if (in_a_test) {
		set_stop(STOP_ARMED);
		if (!await_stop(STOP_IN_A_TEST, 30)) {
			fprintf(stderr, "fork_while_waiting: the waiter tested no lock in 30 s\n");
			return 2;
		}
	}
	pid_t child = fork();
	if (child == 0) {
		if (strcmp(argv[3], "explicit") == 0)
			forget();
		_exit(count_inherited(argv[2]) == 0 ? 0 : 1);
	}
	if (in_a_test)
		set_stop(STOP_FORKED);
	int status = 1;
	waitpid(child, &status, 0);
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);   /* the waiting thread goes with us */
}
