/* descriptors: closing every inherited descriptor but one, for the grandchild that closes a
 * waiter's inotify descriptor (acquire.c). A lease or a pipe it kept open would outlive the job. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "descriptors_internal.h"

void close_all_but(int kept)
{
#ifdef SYS_close_range
	if ((kept == 0 || syscall(SYS_close_range, 0, kept - 1, 0) == 0) &&
	    syscall(SYS_close_range, kept + 1, ~0U, 0) == 0)
		return;
#endif
	/* getdents64 into a buffer of our own: opendir would allocate, which a child forked from a
	 * multi-threaded program must not. */
	char buffer[4096] __attribute__((aligned(8)));
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long length;

	if (dir < 0)
		return;
	/* Closing while listing: the listing is of numbers, and each is closed once. */
	while ((length = syscall(SYS_getdents64, dir, buffer, sizeof(buffer))) > 0) {
		for (long at = 0; at < length;) {
			const struct dirent64 *entry = (const struct dirent64 *)(buffer + at);
			char *end;
			long fd = strtol(entry->d_name, &end, 10);

			if (*entry->d_name >= '0' && *entry->d_name <= '9' && !*end && fd != kept &&
			    fd != dir)
				close((int)fd);
			at += entry->d_reclen;
		}
	}
	close(dir);
}
