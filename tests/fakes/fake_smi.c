/* fake_smi: an nvidia-smi that answers `--query-gpu=... --format=csv,...` from a fixture file,
 * with the real tool's formatting, error texts and exit statuses. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

enum column {
	COLUMN_TIMESTAMP, COLUMN_DRIVER, COLUMN_COUNT, COLUMN_INDEX, COLUMN_NAME, COLUMN_SERIAL,
	COLUMN_UUID, COLUMN_BUS_ID, COLUMN_DISPLAY_MODE, COLUMN_DISPLAY_ACTIVE, COLUMN_UTILIZATION,
	COLUMN_MEMORY_UTILIZATION, COLUMN_MEMORY_TOTAL, COLUMN_MEMORY_RESERVED, COLUMN_MEMORY_USED,
	COLUMN_MEMORY_FREE, COLUMN_TEMPERATURE, COLUMN_POWER,
};

/* The query fields the fake knows, with nvidia-smi's aliases; every other name is refused as
 * the real tool refuses a name it does not know. */
static const struct query_field {
	const char *name, *alias;
	enum column column;
	const char *unit;               /* printed unless nounits */
} query_fields[] = {
	{ "timestamp", NULL, COLUMN_TIMESTAMP, NULL },
	{ "driver_version", NULL, COLUMN_DRIVER, NULL },
	{ "count", NULL, COLUMN_COUNT, NULL },
	{ "index", NULL, COLUMN_INDEX, NULL },
	{ "name", "gpu_name", COLUMN_NAME, NULL },
	{ "serial", "gpu_serial", COLUMN_SERIAL, NULL },
	{ "uuid", "gpu_uuid", COLUMN_UUID, NULL },
	{ "pci.bus_id", "gpu_bus_id", COLUMN_BUS_ID, NULL },
	{ "display_mode", NULL, COLUMN_DISPLAY_MODE, NULL },
	{ "display_active", NULL, COLUMN_DISPLAY_ACTIVE, NULL },
	{ "utilization.gpu", NULL, COLUMN_UTILIZATION, "%" },
	{ "utilization.memory", NULL, COLUMN_MEMORY_UTILIZATION, "%" },
	{ "memory.total", NULL, COLUMN_MEMORY_TOTAL, "MiB" },
	{ "memory.reserved", NULL, COLUMN_MEMORY_RESERVED, "MiB" },
	{ "memory.used", NULL, COLUMN_MEMORY_USED, "MiB" },
	{ "memory.free", NULL, COLUMN_MEMORY_FREE, "MiB" },
	{ "temperature.gpu", NULL, COLUMN_TEMPERATURE, NULL },
	{ "power.draw", NULL, COLUMN_POWER, "W" },
};

#define MAX_QUERY 64

struct query {
	const struct query_field *fields[MAX_QUERY];
	size_t count;
	bool header, units;
};

/* Everything goes to stdout through one buffer, so that line endings can be rewritten at the
 * end (smi_crlf, smi_no_final_newline) and the output leaves in few writes. */
static struct {
	char *data;
	size_t length, capacity;
} out;

__attribute__((format(printf, 1, 2)))
static void emit(const char *fmt, ...)
{
	va_list args;
	int needed;

	va_start(args, fmt);
	needed = vsnprintf(NULL, 0, fmt, args);
	va_end(args);
	if (needed < 0)
		return;
	if (out.length + (size_t)needed + 1 > out.capacity) {
		size_t capacity = 2 * (out.length + (size_t)needed + 1) + 4096;
		char *data = realloc(out.data, capacity);

		if (!data) {
			fputs("fake nvidia-smi: out of memory\n", stderr);
			exit(255);
		}
		out.data = data;
		out.capacity = capacity;
	}
	va_start(args, fmt);
	vsnprintf(out.data + out.length, (size_t)needed + 1, fmt, args);
	va_end(args);
	out.length += (size_t)needed;
}

static void write_all(const char *data, size_t length)
{
	while (length > 0) {
		ssize_t written = write(STDOUT_FILENO, data, length);

		if (written <= 0)
			return;
		data += written;
		length -= (size_t)written;
	}
}

/* Writes the buffer with the fixture's line endings and exits with status. */
static __attribute__((noreturn)) void finish(const struct fixture *machine, int status)
{
	size_t length = out.length;

	if (machine && machine->smi_no_final_newline && length > 0 && out.data[length - 1] == '\n')
		length--;
	for (size_t start = 0, end; start < length; start = end + 1) {
		const char *newline = memchr(out.data + start, '\n', length - start);

		end = newline ? (size_t)(newline - out.data) : length;
		write_all(out.data + start, end - start);
		if (newline)
			write_all(machine && machine->smi_crlf ? "\r\n" : "\n",
				  machine && machine->smi_crlf ? 2 : 1);
	}
	exit(status);
}

/* nvidia-smi exits with the NVML error code, or 255 for the ones its manual does not list. */
static int exit_status(int error)
{
	return error > 0 && error < 255 ? error : 255;
}

static int parse_query(struct query *query, const char *list)
{
	const char *start = list;

	for (;;) {
		const char *end = strchr(start, ',');
		size_t length = end ? (size_t)(end - start) : strlen(start);
		const struct query_field *found = NULL;

		for (size_t i = 0; i < sizeof(query_fields) / sizeof(query_fields[0]); i++) {
			const struct query_field *field = &query_fields[i];

			if ((strlen(field->name) == length && !strncmp(field->name, start, length))
			    || (field->alias && strlen(field->alias) == length
				&& !strncmp(field->alias, start, length)))
				found = field;
		}
		if (!found || query->count == MAX_QUERY) {
			emit("Field \"%.*s\" is not a valid field to query.\n\n", (int)length, start);
			return -1;
		}
		query->fields[query->count++] = found;
		if (!end)
			return 0;
		start = end + 1;
	}
}

static int parse_format(struct query *query, const char *list)
{
	char copy[256], *word, *rest;
	bool csv = false;

	snprintf(copy, sizeof(copy), "%s", list);
	query->header = true;
	query->units = true;
	for (word = strtok_r(copy, ",", &rest); word; word = strtok_r(NULL, ",", &rest)) {
		if (!strcmp(word, "csv"))
			csv = true;
		else if (!strcmp(word, "noheader"))
			query->header = false;
		else if (!strcmp(word, "nounits"))
			query->units = false;
		else {
			emit("\"%s\" is not a valid format option.\n", word);
			return -1;
		}
	}
	if (!csv) {
		emit("CSV format must be requested with --format=csv.\n");
		return -1;
	}
	return 0;
}

/* Returns 0, or the exit status when the arguments are not what nvidia-smi accepts. */
static int parse_arguments(int argc, char **argv, struct query *query)
{
	const char *fields = NULL, *format = NULL;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (!strncmp(arg, "--query-gpu=", 12))
			fields = arg + 12;
		else if (!strcmp(arg, "--query-gpu") && i + 1 < argc)
			fields = argv[++i];
		else if (!strncmp(arg, "--format=", 9))
			format = arg + 9;
		else if (!strcmp(arg, "--format") && i + 1 < argc)
			format = argv[++i];
		else if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			emit("fake nvidia-smi: --query-gpu=FIELD,... --format=csv[,noheader][,nounits]\n");
			finish(NULL, 0);
		} else {
			emit("ERROR: Option %s is not recognized. Please run 'nvidia-smi -h'.\n\n", arg);
			return 2;
		}
	}
	if (!fields) {
		fputs("fake nvidia-smi: only --query-gpu is simulated\n", stderr);
		return 2;
	}
	if (!format) {
		emit("The --format option must be given with --query-gpu.\n");
		return 2;
	}
	return parse_format(query, format) || parse_query(query, fields) ? 2 : 0;
}

/* What nvidia-smi prints in place of a value it could not read. Unsupported identity fields
 * read "[N/A]" (a GeForce serial), unsupported measurements "[Not Supported]"; a query NVML
 * has retired (display_mode since the 575 drivers) reads as NVML says it. */
static const char *failure_text(int error, bool measurement)
{
	switch (error) {
	case NVML_ERROR_NOT_SUPPORTED:
		return measurement ? "[Not Supported]" : "[N/A]";
	case NVML_ERROR_NO_PERMISSION:
		return "[Insufficient Permissions]";
	case NVML_ERROR_DEPRECATED:
		return "[Requested functionality has been deprecated]";
	case NVML_ERROR_FUNCTION_NOT_FOUND:
		return "[Function Not Found]";
	default:
		return "[Unknown Error]";
	}
}

static void emit_timestamp(void)
{
	struct timeval now;
	struct tm local;
	char text[32];

	gettimeofday(&now, NULL);
	localtime_r(&now.tv_sec, &local);
	strftime(text, sizeof(text), "%Y/%m/%d %H:%M:%S", &local);
	emit("%s.%03ld", text, (long)(now.tv_usec / 1000));
}

static void emit_cell(const struct fixture *machine, const struct fixture_gpu *gpu, size_t index,
		      const struct query_field *field, bool units)
{
	unsigned long long free_mib = gpu->memory_total - gpu->memory_used - gpu->memory_reserved;
	const char *unit = units && field->unit ? field->unit : NULL;
	int error = 0;

	switch (field->column) {
	case COLUMN_DRIVER:
		error = machine->driver_error;
		break;
	case COLUMN_NAME:
		error = gpu->errors[FIELD_NAME];
		break;
	case COLUMN_SERIAL:
		error = gpu->errors[FIELD_SERIAL];
		break;
	case COLUMN_UUID:
		error = gpu->errors[FIELD_UUID];
		break;
	case COLUMN_BUS_ID:
		error = gpu->errors[FIELD_PCI];
		break;
	case COLUMN_DISPLAY_MODE:
		error = gpu->errors[FIELD_DISPLAY_MODE];
		break;
	case COLUMN_DISPLAY_ACTIVE:
		error = gpu->errors[FIELD_DISPLAY_ACTIVE];
		break;
	case COLUMN_UTILIZATION:
	case COLUMN_MEMORY_UTILIZATION:
		error = gpu->errors[FIELD_UTILIZATION];
		break;
	case COLUMN_MEMORY_TOTAL:
	case COLUMN_MEMORY_RESERVED:
	case COLUMN_MEMORY_USED:
	case COLUMN_MEMORY_FREE:
		error = gpu->errors[FIELD_MEMORY];
		break;
	case COLUMN_TEMPERATURE:
		error = gpu->errors[FIELD_TEMPERATURE];
		break;
	case COLUMN_POWER:
		error = gpu->errors[FIELD_POWER];
		break;
	default:
		break;
	}
	if (error) {
		emit("%s", failure_text(error, field->unit || field->column == COLUMN_TEMPERATURE));
		return;
	}
	switch (field->column) {
	case COLUMN_TIMESTAMP:
		emit_timestamp();
		break;
	case COLUMN_DRIVER:
		emit("%s", machine->driver);
		break;
	case COLUMN_COUNT:
		emit("%zu", machine->gpu_count);
		break;
	case COLUMN_INDEX:
		emit("%zu", index);
		break;
	case COLUMN_NAME:
		emit("%s", gpu->name);
		break;
	case COLUMN_SERIAL:
		emit("%s", gpu->serial);
		break;
	case COLUMN_UUID:
		emit("%s", gpu->uuid);
		break;
	case COLUMN_BUS_ID:
		emit("%s", gpu->bus_id);
		break;
	case COLUMN_DISPLAY_MODE:
		emit("%s", gpu->display_mode ? "Enabled" : "Disabled");
		break;
	case COLUMN_DISPLAY_ACTIVE:
		emit("%s", gpu->display_active ? "Enabled" : "Disabled");
		break;
	case COLUMN_UTILIZATION:
		emit("%u", gpu->utilization);
		break;
	case COLUMN_MEMORY_UTILIZATION:
		emit("0");
		break;
	case COLUMN_MEMORY_TOTAL:
		emit("%llu", gpu->memory_total);
		break;
	case COLUMN_MEMORY_RESERVED:
		emit("%llu", gpu->memory_reserved);
		break;
	case COLUMN_MEMORY_USED:
		/* A driver that cannot answer the v2 query cannot tell reserved memory apart
		 * either: like NVML's v1 answer, "used" then includes it. */
		emit("%llu", gpu->memory_used +
			     (gpu->errors[FIELD_MEMORY_V2] ? gpu->memory_reserved : 0));
		break;
	case COLUMN_MEMORY_FREE:
		emit("%llu", free_mib);
		break;
	case COLUMN_TEMPERATURE:
		emit("%u", gpu->temperature);
		break;
	case COLUMN_POWER:
		emit("%.2f", gpu->power_mw / 1000.0);
		break;
	}
	if (unit)
		emit(" %s", unit);
}

/* A GPU whose handle cannot be had gets nvidia-smi's error line instead of its values. */
static int emit_gpu(const struct fixture *machine, size_t index, const struct query *query)
{
	const struct fixture_gpu *gpu = &machine->gpus[index];
	int handle_error = gpu->lost ? NVML_ERROR_GPU_IS_LOST : gpu->errors[FIELD_HANDLE];

	if (handle_error == NVML_ERROR_GPU_IS_LOST) {
		emit("Unable to determine the device handle for GPU%s: GPU is lost. "
		     "Reboot the system to recover this GPU\n", gpu->bus_id_legacy);
		return handle_error;
	}
	if (handle_error) {
		emit("Unable to determine the device handle for GPU%s: %s\n", gpu->bus_id_legacy,
		     fixture_error_string(handle_error));
		return handle_error;
	}
	for (size_t i = 0; i < query->count; i++) {
		if (i > 0)
			emit(", ");
		emit_cell(machine, gpu, index, query->fields[i], query->units);
	}
	emit("\n");
	return 0;
}

static void emit_header(const struct query *query)
{
	for (size_t i = 0; i < query->count; i++) {
		const struct query_field *field = query->fields[i];

		emit("%s%s", i > 0 ? ", " : "", field->name);
		if (field->unit)
			emit(" [%s]", field->unit);
	}
	emit("\n");
}

/* nvidia-smi's own texts for the ways NVML can fail to start. */
static int init_failure(const struct fixture *machine, int error)
{
	const char *driver = machine ? machine->driver : "550.54.15";
	const char *second_dot = strchr(driver, '.');

	second_dot = second_dot ? strchr(second_dot + 1, '.') : NULL;
	switch (error) {
	case NVML_ERROR_DRIVER_NOT_LOADED:
		emit("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
		     "Make sure that the latest NVIDIA driver is installed and running.\n");
		return 9;
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
		emit("Failed to initialize NVML: Driver/library version mismatch\n"
		     "NVML library version: %.*s\n",
		     (int)(second_dot ? (size_t)(second_dot - driver) : strlen(driver)), driver);
		return 18;
	case 28: /* NVML_ERROR_GPU_NOT_FOUND: newer drivers without a usable GPU */
		emit("Failed to initialize NVML: No supported GPUs were found\n"
		     "Unable to determine the number of GPUs\n");
		return 255;
	default:
		emit("Failed to initialize NVML: %s\n", fixture_error_string(error));
		return exit_status(error);
	}
}

int main(int argc, char **argv)
{
	struct query query = { .count = 0 };
	struct fixture machine;
	char why[512];
	int status, first_error = 0;

	status = parse_arguments(argc, argv, &query);
	if (status)
		finish(NULL, status);
	if (fixture_load(getenv("GPURUN_FAKE_FIXTURE"), &machine, why, sizeof(why))) {
		if (why[0]) {
			fprintf(stderr, "fake nvidia-smi: %s\n", why);
			return 255;
		}
		finish(NULL, init_failure(NULL, NVML_ERROR_DRIVER_NOT_LOADED));
	}
	/* A wedged driver: nothing comes out, ever. */
	while (machine.smi_hang)
		pause();
	if (machine.smi_error) {
		emit("%s\n", machine.smi_text);
		finish(&machine, machine.smi_status);
	}
	if (machine.init_error)
		finish(&machine, init_failure(&machine, machine.init_error));
	if (machine.count_error) {
		emit("Unable to determine the number of GPUs\n");
		finish(&machine, exit_status(machine.count_error));
	}
	if (machine.gpu_count == 0) {
		emit("No devices were found\n");
		finish(&machine, 6);
	}
	if (query.header)
		emit_header(&query);
	for (size_t i = 0; i < machine.gpu_count; i++) {
		int error = emit_gpu(&machine, i, &query);

		if (error && !first_error)
			first_error = error;
	}
	finish(&machine, first_error ? exit_status(first_error) : 0);
}
