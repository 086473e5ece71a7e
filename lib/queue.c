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

#include "lease_internal.h"
#include "queue_internal.h"

/* FNV-1a: the pool only has to tell different masks apart in file names. */
static uint64_t pool_hash(const char *key)
{
	uint64_t hash = 0xcbf29ce484222325ull;

	for (; *key; key++) {
		hash ^= (unsigned char)*key;
		hash *= 0x100000001b3ull;
	}
	return hash;
}

int queue_open(struct queue *queue, int lock_dir_fd, const char *lock_dir, const char *pool_key,
	       struct gpurun_error *err)
{
	struct stat st;

	memset(queue, 0, sizeof(*queue));
	queue->ticket_fd = -1;
	snprintf(queue->pool, sizeof(queue->pool), "%016llx",
		 (unsigned long long)pool_hash(pool_key));
	snprintf(queue->path, sizeof(queue->path), "%s/queue", lock_dir);
	queue->dir_fd = lease_shared_dir_open(lock_dir_fd, "queue");
	if (queue->dir_fd < 0)
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR,
				   "cannot open queue directory %s: %s (fix: remove it)", queue->path,
				   errno == ELOOP ? "it is a symlink" : strerror(errno));
	if (fstat(queue->dir_fd, &st) != 0 || ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))) {
		close(queue->dir_fd);
		queue->dir_fd = -1;
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR,
				   "queue directory %s is world-writable without the sticky bit; "
				   "fix: chmod 1777 %s", queue->path, queue->path);
	}
	return 0;
}

/* A ticket is live while its waiter holds it: a shared lock succeeds only on a dead one. */
bool queue_ticket_is_live(const struct queue *queue, const char *name)
{
	int fd = openat(queue->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	bool live;

	if (fd < 0)
		return false;
	live = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	close(fd);
	if (!live)
		unlinkat(queue->dir_fd, name, 0);  /* its waiter died; only its owner may remove it */
	return live;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t queue_waiting_ahead(struct queue *queue)
{
	size_t count = 0, capacity = 0, live = 0;
	char **older = NULL;
	struct dirent *entry;
	/* A fresh open, not dup(): a duplicate would share the directory's read position. */
	int fd = openat(queue->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;

	queue->ahead[0] = '\0';
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((entry = readdir(dir)) != NULL) {
		const char *name = entry->d_name;

		if (strncmp(name, queue->pool, 16) != 0 || name[16] != '-')
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
	closedir(dir);
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
	struct timespec now;
	char draft[QUEUE_TICKET_SIZE];

	clock_gettime(CLOCK_REALTIME, &now);
	/* Zero-padded nanoseconds sort in arrival order; the pid makes the name unique. */
	snprintf(queue->ticket, sizeof(queue->ticket), "%s-%020llu-%010ld", queue->pool,
		 (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec,
		 (long)getpid());
	/* The ticket is locked under a draft name and renamed into the line, so that no one
	 * ever sees it unlocked and removes it as a dead waiter's. */
	snprintf(draft, sizeof(draft), "draft-%010ld", (long)getpid());
	unlinkat(queue->dir_fd, draft, 0);
	int fd = openat(queue->dir_fd, draft, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0644);
	if (fd < 0)
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR, "cannot join the queue in %s: %s",
				   queue->path, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) != 0 ||
	    renameat(queue->dir_fd, draft, queue->dir_fd, queue->ticket) != 0) {
		int cause = errno;

		close(fd);
		unlinkat(queue->dir_fd, draft, 0);
		return gpurun_fail(err, GPURUN_EXIT_LOCK_DIR, "cannot join the queue in %s: %s",
				   queue->path, strerror(cause));
	}
	queue->ticket_fd = fd;
	return 0;
}

void queue_close(struct queue *queue)
{
	if (queue->ticket_fd >= 0) {
		/* Unlink first: the waiter behind us wakes on the deletion. */
		unlinkat(queue->dir_fd, queue->ticket, 0);
		close(queue->ticket_fd);
		queue->ticket_fd = -1;
	}
	if (queue->dir_fd >= 0)
		close(queue->dir_fd);
	queue->dir_fd = -1;
}
