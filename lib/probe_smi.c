/* probe_smi: the fallback data source. Runs nvidia-smi with GPUtil's query (plus pci.bus_id and
 * power.draw) under a timeout and parses its CSV strictly: a clear error, never a partial list. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child_internal.h"
#include "clock_internal.h"
#include "gpurun.h"

extern char **environ;

/* The arguments after the program name; the program is $GPURUN_NVIDIA_SMI or nvidia-smi. */
const char *const gpurun_smi_arguments[] = {
	"--query-gpu=index,uuid,utilization.gpu,memory.total,memory.used,memory.free,"
	"driver_version,name,gpu_serial,display_active,display_mode,temperature.gpu,"
	"pci.bus_id,power.draw",
	"--format=csv,noheader,nounits",
	NULL,
};

/* Columns in query order. The name is the only free text (it may contain ", "), so the
 * columns before it are split from the left and those after it from the right. */
enum smi_column {
	COLUMN_INDEX, COLUMN_UUID, COLUMN_UTILIZATION, COLUMN_MEMORY_TOTAL, COLUMN_MEMORY_USED,
	COLUMN_MEMORY_FREE, COLUMN_DRIVER, COLUMN_NAME, COLUMN_SERIAL, COLUMN_DISPLAY_ACTIVE,
	COLUMN_DISPLAY_MODE, COLUMN_TEMPERATURE, COLUMN_PCI_BUS_ID, COLUMN_POWER, COLUMN_COUNT,
};

#define SMI_DEFAULT_TIMEOUT_S 10.0
#define SMI_MAX_OUTPUT (64u << 20)      /* 1024 GPUs print about 200 KiB */
#define SMI_QUOTE_MAX 200               /* of nvidia-smi's text in one error message */

struct text {
	const char *start;
	size_t length;
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static bool is_blank(struct text text)
{
	for (size_t i = 0; i < text.length; i++)
		if (!is_space(text.start[i]))
			return false;
	return true;
}

/* Takes the next line off *rest, without its "\n" or "\r\n"; the last line counts even without
 * a newline. Trailing blanks stay: an empty last field ends the line in ", ". */
static bool next_line(struct text *rest, struct text *line)
{
	if (rest->length == 0)
		return false;
	const char *newline = memchr(rest->start, '\n', rest->length);
	size_t length = newline ? (size_t)(newline - rest->start) : rest->length;
	size_t taken = newline ? length + 1 : length;

	line->start = rest->start;
	line->length = length;
	if (line->length > 0 && line->start[line->length - 1] == '\r')
		line->length--;
	rest->start += taken;
	rest->length -= taken;
	return true;
}

static bool is_separator(struct text line, size_t at)
{
	return at + 1 < line.length && line.start[at] == ',' && line.start[at + 1] == ' ';
}

static bool split_columns(struct text line, struct text columns[COLUMN_COUNT])
{
	size_t start = 0, end = line.length;

	for (int column = 0; column < COLUMN_NAME; column++) {
		size_t at = start;
		while (at < end && !is_separator(line, at))
			at++;
		if (at == end)
			return false;
		columns[column] = (struct text){ line.start + start, at - start };
		start = at + 2;
	}
	for (int column = COLUMN_COUNT - 1; column > COLUMN_NAME; column--) {
		if (end < start + 2)
			return false;
		size_t at = end - 2;
		while (at > start && !is_separator(line, at))
			at--;
		if (!is_separator(line, at))
			return false;
		columns[column] = (struct text){ line.start + at + 2, end - at - 2 };
		end = at;
	}
	columns[COLUMN_NAME] = (struct text){ line.start + start, end - start };
	return true;
}

/* "[Not Supported]", "[N/A]", any other bracketed remark, or nothing at all. */
static bool is_unknown(struct text field)
{
	return field.length == 0 ||
	       (field.start[0] == '[' && field.start[field.length - 1] == ']');
}

static void copy_text(struct text field, char *buffer, size_t size)
{
	size_t length = is_unknown(field) ? 0 : field.length;

	if (length > size - 1)
		length = size - 1;
	memcpy(buffer, field.start, length);
	buffer[length] = '\0';
}

/* Plain decimals only ("81920", "60.25"): strtod would accept "inf", hex and exponents, and
 * reads "60.25" as 60 under a host program's comma-decimal locale. Up to 15 digits, so that
 * the value is exact and matches the one NVML gives for the same reading. */
static bool parse_decimal(struct text field, double *value)
{
	static const double powers_of_ten[] = {
		1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
	};
	uint64_t mantissa = 0;
	int digits = 0, fraction_digits = 0;
	bool seen_point = false;

	for (size_t i = 0; i < field.length; i++) {
		char c = field.start[i];

		if (c == '.' && !seen_point && digits > 0) {
			seen_point = true;
		} else if (c >= '0' && c <= '9' && digits < 15) {
			mantissa = mantissa * 10 + (uint64_t)(c - '0');
			digits++;
			fraction_digits += seen_point;
		} else {
			return false;
		}
	}
	if (digits == 0 || (seen_point && fraction_digits == 0))
		return false;
	*value = (double)mantissa / powers_of_ten[fraction_digits];
	return true;
}

static bool parse_number(struct text field, double *value)
{
	if (is_unknown(field)) {
		*value = NAN;
		return true;
	}
	return parse_decimal(field, value);
}

/* The index is what CUDA_VISIBLE_DEVICES will name: a plain non-negative integer, never unknown. */
static bool parse_index(struct text field, int *index)
{
	if (field.length == 0 || field.length > 6)
		return false;
	*index = 0;
	for (size_t i = 0; i < field.length; i++) {
		if (field.start[i] < '0' || field.start[i] > '9')
			return false;
		*index = *index * 10 + (field.start[i] - '0');
	}
	return true;
}

static bool parse_record(struct text line, struct gpurun_device *device,
			 char driver_version[GPURUN_DRIVER_SIZE])
{
	struct text columns[COLUMN_COUNT];
	double utilization;

	if (!split_columns(line, columns) || !parse_index(columns[COLUMN_INDEX], &device->index))
		return false;
	if (!parse_number(columns[COLUMN_UTILIZATION], &utilization) ||
	    !parse_number(columns[COLUMN_MEMORY_TOTAL], &device->memory_total) ||
	    !parse_number(columns[COLUMN_MEMORY_USED], &device->memory_used) ||
	    !parse_number(columns[COLUMN_MEMORY_FREE], &device->memory_free) ||
	    !parse_number(columns[COLUMN_TEMPERATURE], &device->temperature) ||
	    !parse_number(columns[COLUMN_POWER], &device->power_draw))
		return false;
	/* Over 100 % is no reading: the columns are not where they should be (found by
	 * tests/fuzz/smi_fuzz.c: a line with two fields too many passed as utilization 40920 %). */
	if (utilization > 100)
		return false;
	device->load = utilization / 100;
	copy_text(columns[COLUMN_UUID], device->uuid, sizeof(device->uuid));
	copy_text(columns[COLUMN_NAME], device->name, sizeof(device->name));
	copy_text(columns[COLUMN_SERIAL], device->serial, sizeof(device->serial));
	copy_text(columns[COLUMN_PCI_BUS_ID], device->pci_bus_id, sizeof(device->pci_bus_id));
	copy_text(columns[COLUMN_DISPLAY_ACTIVE], device->display_active,
		  sizeof(device->display_active));
	copy_text(columns[COLUMN_DISPLAY_MODE], device->display_mode, sizeof(device->display_mode));
	copy_text(columns[COLUMN_DRIVER], driver_version, GPURUN_DRIVER_SIZE);
	return true;
}

/* The first line of text that is not blank, shortened for an error message. */
static struct text first_words(const char *text, size_t length)
{
	struct text rest = { text, length }, line = { text, 0 };

	while (next_line(&rest, &line) && is_blank(line))
		line.length = 0;
	if (line.length > SMI_QUOTE_MAX)
		line.length = SMI_QUOTE_MAX;
	return line;
}

/* Whether devices[last] has the index or the UUID of one before it: the same GPU twice, which
 * a job would be handed twice (and CUDA would then show it none). */
static bool repeats_an_earlier_gpu(const struct gpurun_device *devices, size_t last)
{
	for (size_t i = 0; i < last; i++)
		if (devices[i].index == devices[last].index ||
		    (devices[i].uuid[0] && strcmp(devices[i].uuid, devices[last].uuid) == 0))
			return true;
	return false;
}

int gpurun_smi_parse(const char *text, size_t length, struct gpurun_snapshot *snapshot,
		     struct gpurun_error *err)
{
	struct text rest = { text, length }, line;
	size_t records = 0, line_number = 0;
	int status;

	while (next_line(&rest, &line))
		records += !is_blank(line);
	if (records == 0) {
		memset(snapshot, 0, sizeof(*snapshot));
		return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "nvidia-smi: printed no GPU records");
	}
	status = gpurun_snapshot_init(snapshot, records, err);
	if (status)
		return status;
	snapshot->source = "nvidia-smi";

	rest = (struct text){ text, length };
	for (size_t i = 0; next_line(&rest, &line);) {
		const char *wrong = NULL;

		line_number++;
		if (is_blank(line))
			continue;
		if (!parse_record(line, &snapshot->devices[i], snapshot->driver_version))
			wrong = "is not a GPU record";
		else if (repeats_an_earlier_gpu(snapshot->devices, i))
			wrong = "repeats a GPU's index or UUID";
		i++;
		if (wrong) {
			int shown = line.length > SMI_QUOTE_MAX ? SMI_QUOTE_MAX : (int)line.length;

			gpurun_snapshot_free(snapshot);
			return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO,
					   "nvidia-smi: line %zu of its output %s: \"%.*s\"",
					   line_number, wrong, shown, line.start);
		}
	}
	return 0;
}

/* ---- running nvidia-smi ------------------------------------------------------------------ */

struct smi_output {
	char *text;                     /* stdout, whole */
	size_t length, capacity;
	char errors[1024];              /* the start of stderr, for messages */
	size_t errors_length;
	bool overflowed;                /* stdout passed SMI_MAX_OUTPUT */
};

static int milliseconds_until(double deadline)
{
	double left = deadline - monotonic_seconds();

	/* --smi-timeout takes any duration; poll's int of milliseconds holds 24 days. */
	return left <= 0 ? 0 : left > 86400 ? 86400 * 1000 : (int)ceil(left * 1000);
}

/* Reads what is there; returns false at end of file (or a read error, which ends it too). */
static bool drain(int fd, struct smi_output *output, bool is_stdout)
{
	char chunk[65536];
	ssize_t got = read(fd, chunk, sizeof(chunk));

	if (got < 0)
		return errno == EINTR || errno == EAGAIN;
	if (got == 0)
		return false;
	if (!is_stdout) {
		size_t room = sizeof(output->errors) - 1 - output->errors_length;
		size_t kept = (size_t)got < room ? (size_t)got : room;

		memcpy(output->errors + output->errors_length, chunk, kept);
		output->errors_length += kept;
		output->errors[output->errors_length] = '\0';
		return true;
	}
	if (output->length + (size_t)got > output->capacity) {
		size_t capacity = output->capacity ? output->capacity * 2 : sizeof(chunk);
		while (capacity < output->length + (size_t)got)
			capacity *= 2;
		char *grown = capacity <= SMI_MAX_OUTPUT ? realloc(output->text, capacity) : NULL;
		if (!grown) {
			output->overflowed = true;
			return false;
		}
		output->text = grown;
		output->capacity = capacity;
	}
	memcpy(output->text + output->length, chunk, (size_t)got);
	output->length += (size_t)got;
	return true;
}

/* Reads both pipes until nvidia-smi closes them; false when the deadline passed first. */
static bool read_until_closed(int out_fd, int err_fd, double deadline, struct smi_output *output)
{
	struct pollfd fds[2] = { { .fd = out_fd, .events = POLLIN }, { .fd = err_fd, .events = POLLIN } };

	while (fds[0].fd >= 0 || fds[1].fd >= 0) {
		int timeout_ms = milliseconds_until(deadline);
		if (timeout_ms == 0)
			return false;
		int ready = poll(fds, 2, timeout_ms);
		if (ready < 0 && errno != EINTR)
			return false;
		for (int i = 0; ready > 0 && i < 2; i++) {
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (!drain(fds[i].fd, output, i == 0))
				fds[i].fd = -1;
		}
		if (output->overflowed)
			return false;
	}
	return true;
}

/* Our environment without GPURUN_OPTIONS: under the preload library, an nvidia-smi that saw it
 * would choose GPUs itself, probing with another nvidia-smi, and so on forever. The strings are
 * environ's own; only the array is new. */
static char **environment_for_smi(void)
{
	size_t count = 0, kept = 0;

	while (environ[count])
		count++;
	char **environment = malloc((count + 1) * sizeof(*environment));
	if (!environment)
		return NULL;
	for (size_t i = 0; i < count; i++)
		if (strncmp(environ[i], "GPURUN_OPTIONS=", strlen("GPURUN_OPTIONS=")) != 0)
			environment[kept++] = environ[i];
	environment[kept] = NULL;
	return environment;
}

static int spawn_smi(const char *program, int out_fd, int err_fd, pid_t *pid,
		     struct gpurun_error *err)
{
	const char *argv[4] = { program, gpurun_smi_arguments[0], gpurun_smi_arguments[1], NULL };
	char **environment = environment_for_smi();
	posix_spawn_file_actions_t actions;
	posix_spawnattr_t attributes;
	int failure;

	if (!environment)
		return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "nvidia-smi: out of memory");
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
	posix_spawnattr_init(&attributes);
	posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&attributes, 0);
	/* posix_spawnp searches PATH only for a name without a slash, like the shell. */
	failure = posix_spawnp(pid, program, &actions, &attributes, (char *const *)argv, environment);
	posix_spawnattr_destroy(&attributes);
	posix_spawn_file_actions_destroy(&actions);
	free(environment);
	if (failure == ENOENT && !strchr(program, '/'))
		return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "nvidia-smi: not found on PATH");
	if (failure)
		return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "nvidia-smi: cannot run %s: %s",
				   program, strerror(failure));
	return 0;
}

/* What nvidia-smi said when it failed: its first line that is not a GPU record (a lost GPU's
 * line comes after the good ones), else the start of what it wrote to stderr. */
static struct text complaint(const struct smi_output *output)
{
	struct text rest = { output->text ? output->text : "", output->length }, line;
	struct gpurun_device device;
	char driver_version[GPURUN_DRIVER_SIZE];

	while (next_line(&rest, &line)) {
		if (!is_blank(line) && !parse_record(line, &device, driver_version)) {
			if (line.length > SMI_QUOTE_MAX)
				line.length = SMI_QUOTE_MAX;
			return line;
		}
	}
	return first_words(output->errors, output->errors_length);
}

static int explain_failure(const char *program, int wait_status, const struct smi_output *output,
			   struct gpurun_error *err)
{
	struct text said = complaint(output);
	char how[64];

	/* Where posix_spawn cannot report a failed exec (glibc before 2.24, valgrind), the child
	 * exits with 127 instead, as the shell does for a command it cannot find. */
	if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 127 && said.length == 0)
		return strchr(program, '/')
		       ? gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "nvidia-smi: cannot run %s "
				     "(exited with status 127: missing or not executable)", program)
		       : gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "nvidia-smi: not found on PATH");

	if (WIFSIGNALED(wait_status))
		snprintf(how, sizeof(how), "was killed by signal %d", WTERMSIG(wait_status));
	else
		snprintf(how, sizeof(how), "exited with status %d", WEXITSTATUS(wait_status));
	if (said.length == 0)
		return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "nvidia-smi: %s without saying why",
				   how);
	return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "nvidia-smi: %s: \"%.*s\"", how,
			   (int)said.length, said.start);
}

int gpurun_probe_smi(double timeout_s, struct gpurun_snapshot *snapshot, struct gpurun_error *err)
{
	const char *program = getenv("GPURUN_NVIDIA_SMI");
	struct smi_output output = { 0 };
	int out_pipe[2], err_pipe[2], wait_status = 0, status;
	pid_t pid;

	memset(snapshot, 0, sizeof(*snapshot));
	if (!(timeout_s > 0))
		timeout_s = SMI_DEFAULT_TIMEOUT_S;
	if (!program || !*program)
		program = "nvidia-smi";
	if (pipe2(out_pipe, O_CLOEXEC) != 0)
		return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "nvidia-smi: pipe: %s", strerror(errno));
	if (pipe2(err_pipe, O_CLOEXEC) != 0) {
		status = gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "nvidia-smi: pipe: %s",
				     strerror(errno));
		close(out_pipe[0]);
		close(out_pipe[1]);
		return status;
	}
	double deadline = monotonic_seconds() + timeout_s;
	status = spawn_smi(program, out_pipe[1], err_pipe[1], &pid, err);
	close(out_pipe[1]);
	close(err_pipe[1]);
	if (status == 0) {
		bool answered = read_until_closed(out_pipe[0], err_pipe[0], deadline, &output) &&
				child_wait_until(pid, deadline, &wait_status);
		if (!answered)     /* with its process group: helpers it started go too */
			child_kill_and_reap(pid, true);
		if (output.overflowed)
			status = gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO,
					     "nvidia-smi: printed more than %u MiB; killed it",
					     SMI_MAX_OUTPUT >> 20);
		else if (!answered)
			status = gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO,
					     "nvidia-smi: did not answer within %g s; killed it",
					     timeout_s);
		else if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0)
			status = explain_failure(program, wait_status, &output, err);
		else
			status = gpurun_smi_parse(output.text ? output.text : "", output.length,
						  snapshot, err);
	}
	close(out_pipe[0]);
	close(err_pipe[0]);
	free(output.text);
	return status;
}
