/* sysfs: defensive reads of the kernel's /sys and /proc files, relocatable under
 * $GPURUN_SYSFS_ROOT so that tests can describe a machine as a directory tree. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sysfs_internal.h"

int sysfs_path(char *path, size_t size, const char *tree, const char *fmt, ...)
{
	const char *root = getenv("GPURUN_SYSFS_ROOT");
	va_list args;
	int prefix, rest;

	prefix = snprintf(path, size, "%s/%s", root ? root : "", tree);
	if (prefix < 0 || (size_t)prefix >= size)
		return -1;
	va_start(args, fmt);
	rest = vsnprintf(path + prefix, size - (size_t)prefix, fmt, args);
	va_end(args);
	return rest < 0 || (size_t)rest >= size - (size_t)prefix ? -1 : 0;
}

/* Returns the length read, -1 on error; *whole tells whether the file ended within size - 1. */
static ssize_t read_file(int dir_fd, const char *name, char *text, size_t size, bool *whole)
{
	/* O_NONBLOCK: a FIFO where a file should be must not hang the probe. */
	int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	size_t length = 0;

	*whole = false;
	if (size == 0 || fd < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (;;) {
		char spare;
		ssize_t got = length < size - 1 ? read(fd, text + length, size - 1 - length)
						: read(fd, &spare, 1);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			close(fd);
			return -1;
		}
		if (got == 0) {
			*whole = true;
			break;
		}
		if (length == size - 1)
			break;          /* there is more than fits */
		length += (size_t)got;
	}
	close(fd);
	text[length] = '\0';
	return (ssize_t)length;
}

ssize_t sysfs_read_at(int dir_fd, const char *name, char *text, size_t size)
{
	bool whole;
	ssize_t length = read_file(dir_fd, name, text, size, &whole);

	return whole ? length : -1;
}

ssize_t sysfs_read_prefix_at(int dir_fd, const char *name, char *text, size_t size)
{
	bool whole;

	return read_file(dir_fd, name, text, size, &whole);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool sysfs_parse_integer(const char *text, long long minimum, long long maximum, long long *value)
{
	char *end;
	long long number;

	while (is_blank(*text))
		text++;
	if (!(*text >= '0' && *text <= '9') && !(*text == '-' && text[1] >= '0' && text[1] <= '9'))
		return false;
	errno = 0;
	number = strtoll(text, &end, 10);
	if (errno == ERANGE)
		return false;
	while (is_blank(*end))
		end++;
	if (*end != '\0' || number < minimum || number > maximum)
		return false;
	*value = number;
	return true;
}

bool sysfs_read_integer_at(int dir_fd, const char *name, long long minimum, long long maximum,
			   long long *value)
{
	char text[64];

	return sysfs_read_at(dir_fd, name, text, sizeof(text)) > 0 &&
	       sysfs_parse_integer(text, minimum, maximum, value);
}

bool sysfs_read_text_at(int dir_fd, const char *name, char *text, size_t size)
{
	ssize_t length = sysfs_read_at(dir_fd, name, text, size);
	size_t start = 0, end;

	if (length <= 0)
		goto unknown;
	end = (size_t)length;
	while (end > 0 && is_blank(text[end - 1]))
		end--;
	while (start < end && is_blank(text[start]))
		start++;
	if (start == end)
		goto unknown;
	for (size_t i = start; i < end; i++)
		if ((unsigned char)text[i] < 0x20 || text[i] == 0x7F)
			goto unknown;
	memmove(text, text + start, end - start);
	text[end - start] = '\0';
	return true;
unknown:
	if (size > 0)
		text[0] = '\0';
	return false;
}

DIR *sysfs_open_dir_at(int dir_fd, const char *name)
{
	int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;

	if (fd >= 0 && !dir)
		close(fd);
	return dir;
}
