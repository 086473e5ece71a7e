/* queue: first come, first served among gpurun waiters, so that a job waiting for 4 GPUs is
 * not starved by a stream of 1-GPU jobs. Tickets are flock()ed files in <lock dir>/queue,
 * named so that they sort in arrival order. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "in_flight_internal.h"
#include "lock_dir_internal.h"
#include "queue_internal.h"

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int queue_open(struct queue *queue, int lock_dir_fd, const char *lock_dir,
	       struct gpurun_error *err)
{
	memset(queue, 0, sizeof(*queue));
	queue->dir_fd = -1;
	queue->ticket_fd = -1;
	if (snprintf(queue->path, sizeof(queue->path), "%s/queue", lock_dir) >=
	    (int)sizeof(queue->path))
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR, "lock directory %s: %s", lock_dir,
				   strerror(ENAMETOOLONG));
	queue->dir_fd = shared_dir_open(lock_dir_fd, "queue");
	if (queue->dir_fd < 0)
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR,
				   "cannot open queue directory %s: %s (fix: remove it)", queue->path,
				   errno == ELOOP ? "it is a symlink" : strerror(errno));
	in_flight_add(queue->dir_fd);
	int status = shared_dir_check("queue directory", queue->path, queue->dir_fd, err);
	if (status != 0) {
		in_flight_close(queue->dir_fd);
		queue->dir_fd = -1;
	}
	return status;
}

/* FNV-1a over the sorted keys, each ended by a newline: the same set of GPUs, in any order and
 * however the masks named it, is the same pool. */
void queue_set_pool(struct queue *queue, char **device_keys, size_t count)
{
	uint64_t hash = 0xcbf29ce484222325ull;

	if (count > 1)
		qsort(device_keys, count, sizeof(*device_keys), compare_names);
	for (size_t i = 0; i < count; i++) {
		for (const char *c = device_keys[i];; c++) {
			hash ^= (unsigned char)(*c ? *c : '\n');
			hash *= 0x100000001b3ull;
			if (!*c)
				break;
		}
	}
	snprintf(queue->pool, sizeof(queue->pool), "%016llx", (unsigned long long)hash);
}

/* A ticket is live while its waiter holds it: a shared lock succeeds only on a dead one. */
bool queue_ticket_is_live(const struct queue *queue, const char *name)
{
	int fd = in_flight_openat(queue->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
				  0);
	bool live;

	/* Every ticket is made readable by all (queue_join): one that cannot be opened is no
	 * waiter's, and a file planted to stop the line, which its planter could keep for ever. */
	if (fd < 0)
		return false;
	live = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	in_flight_close(fd);
	if (!live)
		unlinkat(queue->dir_fd, name, 0);  /* its waiter died; only its owner may remove it */
	return live;
}

size_t queue_waiting_ahead(struct queue *queue)
{
	size_t count = 0, capacity = 0, live = 0;
	char **older = NULL;
	struct dirent *entry;
	const size_t pool_length = sizeof(queue->pool) - 1;    /* a ticket's name starts with it */
	/* A fresh open, not dup(): a duplicate would share the directory's read position. */
	int fd = in_flight_openat(queue->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;

	queue->ahead[0] = '\0';
	if (!dir) {
		if (fd >= 0)
			in_flight_close(fd);
		return 0;
	}
	while ((entry = readdir(dir)) != NULL) {
		const char *name = entry->d_name;

		if (strncmp(name, queue->pool, pool_length) != 0 || name[pool_length] != '-')
			continue;
		if (queue->ticket_fd >= 0 && strcmp(name, queue->ticket) >= 0)
			continue;
		if (count == capacity) {
			size_t grown = capacity ? capacity * 2 : 16;
			char **bigger = realloc(older, grown * sizeof(*older));
			if (!bigger)
				break;
			older = bigger;
			capacity = grown;
		}
		older[count] = strdup(name);
		if (older[count])
			count++;
	}
	in_flight_closedir(dir);
	/* qsort's array must not be NULL, even for no elements. */
	if (count > 1)
		qsort(older, count, sizeof(*older), compare_names);
	/* Youngest first: the nearest live ticket is the one to watch, and the only one whose
	 * liveness matters now. Those before it are counted as they stand (a dead one among them
	 * is found and removed when it comes up as someone's nearest), so a look costs one check,
	 * not one per waiter. */
	for (size_t i = count; i-- > 0;) {
		if (!queue->ahead[0] && queue_ticket_is_live(queue, older[i])) {
			snprintf(queue->ahead, sizeof(queue->ahead), "%s", older[i]);
			live = i + 1;
		}
		free(older[i]);
	}
	free(older);
	return live;
}

int queue_join(struct queue *queue, struct gpurun_error *err)
{
	const int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	struct timespec now;
	char draft[QUEUE_TICKET_SIZE];
	int fd = -1;

	/* The ticket is locked under a draft name and renamed into the line, so that no one
	 * ever sees it unlocked and removes it as a dead waiter's. Neither name may depend on the
	 * pid alone: waiters in other PID namespaces may share the directory. */
	for (int tries = 0; fd < 0 && tries < DRAFT_NAME_TRIES; tries++) {
		draft_name(draft, sizeof(draft), "draft-");
		fd = in_flight_openat(queue->dir_fd, draft, flags, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR, "cannot join the queue in %s: %s",
				   queue->path, strerror(errno));
	clock_gettime(CLOCK_REALTIME, &now);
	/* Zero-padded nanoseconds sort in arrival order; the draft's random part makes the name
	 * unique. Readable by all whatever the umask: others tell a live ticket by a look at its
	 * lock, and take one they cannot open for a file planted in the line, not a waiter. */
	snprintf(queue->ticket, sizeof(queue->ticket), "%s-%020llu-%.*s", queue->pool,
		 (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec,
		 DRAFT_SUFFIX_LENGTH, draft + strlen("draft-"));
	if (fchmod(fd, 0644) != 0 || flock(fd, LOCK_EX | LOCK_NB) != 0 ||
	    renameat(queue->dir_fd, draft, queue->dir_fd, queue->ticket) != 0) {
		int cause = errno;

		unlinkat(queue->dir_fd, draft, 0);
		in_flight_close(fd);
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR, "cannot join the queue in %s: %s",
				   queue->path, strerror(cause));
	}
	queue->ticket_fd = fd;
	return 0;
}

void queue_close(struct queue *queue)
{
	if (queue->ticket_fd >= 0) {
		/* Out of the line first, so that no newcomer counts us; the waiter behind us wakes
		 * on the close (IN_CLOSE_WRITE). */
		unlinkat(queue->dir_fd, queue->ticket, 0);
		in_flight_close(queue->ticket_fd);
		queue->ticket_fd = -1;
	}
	if (queue->dir_fd >= 0)
		in_flight_close(queue->dir_fd);
	queue->dir_fd = -1;
}
