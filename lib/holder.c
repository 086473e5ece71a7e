/* holder: who holds a lease, as its lock file records it (pid, user, host, start time, command),
 * so that --show can say who holds what. The record is best effort: the lock alone is the lease,
 * and a record is believed only while its lock is held. */
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpurun.h"
#include "lease_internal.h"

#define HOLDER_RECORD_SIZE 1024

/* Appends `word` to the record, replacing characters that would break its line format. */
static size_t append_word(char *record, size_t used, size_t size, const char *word)
{
	for (; *word && used + 1 < size; word++)
		record[used++] = (*word == '\n' || *word == '\r') ? ' ' : *word;
	return used;
}

static size_t append_own_command_line(char *record, size_t used, size_t size)
{
	char text[512];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return used;
	ssize_t length = read(fd, text, sizeof(text) - 1);
	close(fd);
	for (ssize_t i = 0; i < length; i++)
		if (text[i] == '\0')
			text[i] = ' ';
	while (length > 0 && text[length - 1] == ' ')
		length--;
	text[length > 0 ? length : 0] = '\0';
	return append_word(record, used, size, text);
}

void gpurun_lease_write_holder(int fd, char *const *command, int command_count)
{
	char record[HOLDER_RECORD_SIZE];
	char host[GPURUN_HOST_SIZE] = "";

	/* The user's name is left to the reader (gpurun_lease_inspect): looking it up here
	 * would cost every job a trip through NSS. */
	gethostname(host, sizeof(host) - 1);
	int used = snprintf(record, sizeof(record), "pid=%ld\nuid=%u\nstart=%lld\nhost=%s\ncommand=",
			    (long)getpid(), (unsigned)getuid(), (long long)time(NULL), host);
	if (used < 0 || (size_t)used >= sizeof(record))
		return;
	size_t length = (size_t)used;
	if (command) {
		for (int i = 0; i < command_count; i++) {
			if (i > 0)
				length = append_word(record, length, sizeof(record) - 1, " ");
			length = append_word(record, length, sizeof(record) - 1, command[i]);
		}
	} else {
		length = append_own_command_line(record, length, sizeof(record) - 1);
	}
	record[length++] = '\n';
	/* Overwrite, then cut what is left of a longer record: truncating to zero first costs a
	 * quarter of a millisecond on ext4, which flushes a file rewritten that way at close.
	 * A failed write (a full disk) leaves the previous holder's record: --show then names a
	 * holder that is gone, a known limit of a best-effort record. */
	struct stat st;
	if (pwrite(fd, record, length, 0) != (ssize_t)length || fstat(fd, &st) != 0)
		return;
	/* Should the cut fail, the old record's tail stays after ours, read as noise. */
	if (st.st_size > (off_t)length)
		(void)!ftruncate(fd, (off_t)length);
}

/* A number is read from the first HOLDER_NUMBER_SIZE - 1 characters of its value, more than any
 * pid, uid or time has. */
#define HOLDER_NUMBER_SIZE 32

/* A number's value as an integer from min to max; false when it is none (empty, not all digits,
 * out of range). It is read from the first HOLDER_NUMBER_SIZE - 1 characters. */
static bool integer_value(const char *value, size_t length, long long min, long long max,
			  long long *integer)
{
	char number[HOLDER_NUMBER_SIZE], *stop;
	size_t kept = length < HOLDER_NUMBER_SIZE - 1 ? length : HOLDER_NUMBER_SIZE - 1;

	snprintf(number, sizeof(number), "%.*s", (int)kept, value);
	if (!*number)
		return false;
	long long parsed = strtoll(number, &stop, 10);
	if (*stop || parsed < min || parsed > max)
		return false;
	*integer = parsed;
	return true;
}

/* Only a valid pid is stored: a record is a holder's exactly when holder->pid ends up set. */
static void parse_pid(struct gpurun_holder *holder, const char *value, size_t length)
{
	long long pid;

	if (integer_value(value, length, 1, INT_MAX, &pid))
		holder->pid = (pid_t)pid;
}

static void parse_uid(struct gpurun_holder *holder, const char *value, size_t length)
{
	long long uid;

	if (integer_value(value, length, 0, UINT_MAX, &uid))
		holder->uid = (uid_t)uid;
}

static void parse_start(struct gpurun_holder *holder, const char *value, size_t length)
{
	long long start;

	if (integer_value(value, length, LLONG_MIN, LLONG_MAX, &start))
		holder->start_time = start;
}

static void parse_user(struct gpurun_holder *holder, const char *value, size_t length)
{
	snprintf(holder->user, sizeof(holder->user), "%.*s", (int)length, value);
}

static void parse_host(struct gpurun_holder *holder, const char *value, size_t length)
{
	snprintf(holder->host, sizeof(holder->host), "%.*s", (int)length, value);
}

static void parse_command(struct gpurun_holder *holder, const char *value, size_t length)
{
	snprintf(holder->command, sizeof(holder->command), "%.*s", (int)length, value);
}

/* The record's keys (gpurun_lease_write_holder writes all but user, which older gpurun wrote);
 * a line with any other key, or none, is skipped. */
static const struct holder_field {
	const char *key;
	void (*parse)(struct gpurun_holder *holder, const char *value, size_t length);
} holder_fields[] = {
	{ "pid", parse_pid },
	{ "uid", parse_uid },
	{ "start", parse_start },
	{ "user", parse_user },
	{ "host", parse_host },
	{ "command", parse_command },
};

/* One "key=value" line, without its newline. */
static void parse_line(struct gpurun_holder *holder, const char *line, size_t length)
{
	const char *equals = memchr(line, '=', length);

	if (!equals)
		return;
	size_t key_length = (size_t)(equals - line);
	for (size_t i = 0; i < sizeof(holder_fields) / sizeof(holder_fields[0]); i++) {
		const struct holder_field *field = &holder_fields[i];

		if (strlen(field->key) == key_length && !memcmp(line, field->key, key_length)) {
			field->parse(holder, equals + 1, length - key_length - 1);
			return;
		}
	}
}

int gpurun_holder_parse(const char *text, size_t length, struct gpurun_holder *holder)
{
	memset(holder, 0, sizeof(*holder));
	while (length > 0) {
		const char *end = memchr(text, '\n', length);
		size_t line = end ? (size_t)(end - text) : length;

		parse_line(holder, text, line);
		if (!end)
			break;
		length -= line + 1;
		text = end + 1;
	}
	return holder->pid > 0 ? 0 : -1;
}

/* getpwuid_r: the library runs inside multi-threaded programs, whose other threads may look up
 * users too. */
static void name_user(struct gpurun_holder *holder)
{
	struct passwd entry, *found = NULL;
	char buffer[4096];

	if (getpwuid_r(holder->uid, &entry, buffer, sizeof(buffer), &found) == 0 && found)
		snprintf(holder->user, sizeof(holder->user), "%s", found->pw_name);
	else
		snprintf(holder->user, sizeof(holder->user), "%u", (unsigned)holder->uid);
}

void gpurun_lease_inspect(const char *lock_dir, struct gpurun_snapshot *snapshot)
{
	int dir_fd = open(lock_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (dir_fd < 0)
		return;
	for (size_t i = 0; i < snapshot->count; i++) {
		struct gpurun_device *device = &snapshot->devices[i];
		char name[LEASE_FILE_NAME_SIZE];
		char record[HOLDER_RECORD_SIZE];
		struct stat st;

		if (device->leased)
			continue;       /* the caller's own: see gpurun.h */

		lease_file_name(device, name, sizeof(name));
		int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && lease_is_held(fd)) {
			ssize_t length = pread(fd, record, sizeof(record), 0);
			device->leased = true;
			if (length <= 0 || gpurun_holder_parse(record, (size_t)length, &device->holder) != 0)
				memset(&device->holder, 0, sizeof(device->holder));
			else if (!device->holder.user[0])
				name_user(&device->holder);
		}
		close(fd);
	}
	close(dir_fd);
}
