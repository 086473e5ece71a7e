/* sysfs_internal.h: reading the kernel's own files (/sys and /proc) for probe_amdgpu and
 * process, where any file may be missing, unreadable, garbage, or gone by the time it is read. */
#ifndef GPURUN_SYSFS_INTERNAL_H
#define GPURUN_SYSFS_INTERNAL_H

#include <stdbool.h>
#include <dirent.h>
#include <stddef.h>
#include <sys/types.h>

/* Writes "<root>/<tree>/<fmt...>" into path: tree is "sys" or "proc", root is
 * $GPURUN_SYSFS_ROOT (tests build a machine there) or empty. Returns 0, or -1 when it does
 * not fit. */
int sysfs_path(char *path, size_t size, const char *tree, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Reads the whole file dir_fd/name (dir_fd may be AT_FDCWD) into text, NUL-terminated.
 * Returns its length, or -1 when it cannot be opened or read (missing, a directory, EIO) or
 * is longer than size - 1 bytes. */
ssize_t sysfs_read_at(int dir_fd, const char *name, char *text, size_t size);
/* The same, but a longer file is cut to size - 1 bytes instead of refused. */
ssize_t sysfs_read_prefix_at(int dir_fd, const char *name, char *text, size_t size);

/* Opens dir_fd/name (dir_fd may be AT_FDCWD; name "." for dir_fd itself) as a directory stream
 * with its own read position; NULL when it cannot. */
DIR *sysfs_open_dir_at(int dir_fd, const char *name);

/* One decimal integer in [minimum, maximum], blanks and a newline around it allowed. */
bool sysfs_parse_integer(const char *text, long long minimum, long long maximum, long long *value);
bool sysfs_read_integer_at(int dir_fd, const char *name, long long minimum, long long maximum,
			   long long *value);
/* A file of printable text, trimmed of surrounding blanks and newlines; false when it cannot
 * be read, is empty, holds a control character or does not fit. */
bool sysfs_read_text_at(int dir_fd, const char *name, char *text, size_t size);

#endif
