/* report: what the machine looks like, for people (GPUtil's utilization table, byte for byte)
 * and for programs (one JSON object with gpustat's keys). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpurun.h"

/* ---- the table ----------------------------------------------------------------------------
 * The layout is GPUtil 1.4.0's showUtilization() (GPUtil/GPUtil.py, the attrList branch), so
 * that scripts and eyes used to it keep working:
 * - a cell is "| " + value + suffix + " "; each group of columns ends with "|", so groups are
 *   separated by "||" and every line ends with "|";
 * - a column is as wide as its header or its widest value-with-suffix, whichever is wider;
 *   numbers are right-aligned, text left-aligned, the suffix follows the padded value;
 * - numbers are Python's '{:.0f}' (round half to even, NaN as "nan"), the index is '{:d}';
 * - widths count characters (code points), as Python's len() does;
 * - the header, a line of '-' as long as the header, then one line per device; no devices
 *   leaves just the header and the dashes.
 * GPUtil prints nvidia-smi's own text for a string it could not read; what nvidia-smi prints
 * in the common case (the serial of a GeForce, say) is "[N/A]", so an unknown string shows
 * that. Leases are listed below the table so that the table stays byte-compatible. */

enum field {
	FIELD_INDEX, FIELD_NAME, FIELD_SERIAL, FIELD_UUID,
	FIELD_TEMPERATURE, FIELD_LOAD, FIELD_MEMORY_UTIL,
	FIELD_MEMORY_TOTAL, FIELD_MEMORY_USED, FIELD_MEMORY_FREE,
	FIELD_DISPLAY_MODE, FIELD_DISPLAY_ACTIVE,
	FIELD_VENDOR, FIELD_PCI_BUS_ID, FIELD_POWER,
};

struct column {
	enum field field;
	const char *header;
	const char *suffix;
	bool ends_group;
};

static const struct column default_columns[] = {
	{ FIELD_INDEX, "ID", "", false },
	{ FIELD_LOAD, "GPU", "%", false },
	{ FIELD_MEMORY_UTIL, "MEM", "%", true },
};

static const struct column all_columns[] = {
	{ FIELD_INDEX, "ID", "", false },
	{ FIELD_NAME, "Name", "", false },
	{ FIELD_SERIAL, "Serial", "", false },
	{ FIELD_UUID, "UUID", "", true },
	{ FIELD_TEMPERATURE, "GPU temp.", "C", false },
	{ FIELD_LOAD, "GPU util.", "%", false },
	{ FIELD_MEMORY_UTIL, "Memory util.", "%", true },
	{ FIELD_MEMORY_TOTAL, "Memory total", "MB", false },
	{ FIELD_MEMORY_USED, "Memory used", "MB", false },
	{ FIELD_MEMORY_FREE, "Memory free", "MB", true },
	{ FIELD_DISPLAY_MODE, "Display mode", "", false },
	{ FIELD_DISPLAY_ACTIVE, "Display active", "", true },
};

/* --wide: what GPUtil has no column for, as one more group after GPUtil's. */
static const struct column wide_columns[] = {
	{ FIELD_VENDOR, "Vendor", "", false },
	{ FIELD_PCI_BUS_ID, "PCI bus id", "", false },
	{ FIELD_POWER, "Power", "W", true },
};

#define COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))
#define MAX_COLUMNS (COUNT_OF(all_columns) + COUNT_OF(wide_columns))

/* Room for '%.0f' of the largest double (309 digits and a sign). */
#define NUMBER_SIZE 320

static const char unknown_text[] = "[N/A]";

/* One formatted value, before padding and suffix. */
struct cell {
	const char *text;
	size_t length;          /* bytes */
	size_t width;           /* characters */
	bool right_aligned;
};

static size_t utf8_width(const char *text, size_t length)
{
	size_t width = 0;

	for (size_t i = 0; i < length; i++)
		width += ((unsigned char)text[i] & 0xC0) != 0x80;
	return width;
}

static struct cell number_cell(double value, char *scratch)
{
	/* C would print a NaN with its sign bit as "-nan"; Python prints every NaN as "nan". */
	int length = isnan(value) ? snprintf(scratch, NUMBER_SIZE, "nan")
				  : snprintf(scratch, NUMBER_SIZE, "%.0f", value);

	return (struct cell){ scratch, (size_t)length, (size_t)length, true };
}

static struct cell text_cell(const char *text, size_t size)
{
	size_t length = strnlen(text, size);

	if (length == 0) {
		text = unknown_text;
		length = sizeof(unknown_text) - 1;
	}
	return (struct cell){ text, length, utf8_width(text, length), false };
}

/* The value GPUtil's transform gives for the field, formatted as its format spec would. */
static struct cell device_cell(const struct gpurun_device *device, enum field field,
			       char *scratch)
{
	switch (field) {
	case FIELD_INDEX: {
		int length = snprintf(scratch, NUMBER_SIZE, "%d", device->index);

		return (struct cell){ scratch, (size_t)length, (size_t)length, true };
	}
	case FIELD_NAME:
		return text_cell(device->name, sizeof(device->name));
	case FIELD_SERIAL:
		return text_cell(device->serial, sizeof(device->serial));
	case FIELD_UUID:
		return text_cell(device->uuid, sizeof(device->uuid));
	case FIELD_TEMPERATURE:
		return number_cell(device->temperature, scratch);
	case FIELD_LOAD:
		return number_cell(device->load * 100, scratch);
	case FIELD_MEMORY_UTIL:
		return number_cell(gpurun_device_memory_util(device) * 100, scratch);
	case FIELD_MEMORY_TOTAL:
		return number_cell(device->memory_total, scratch);
	case FIELD_MEMORY_USED:
		return number_cell(device->memory_used, scratch);
	case FIELD_MEMORY_FREE:
		return number_cell(device->memory_free, scratch);
	case FIELD_DISPLAY_MODE:
		return text_cell(device->display_mode, sizeof(device->display_mode));
	case FIELD_DISPLAY_ACTIVE:
		return text_cell(device->display_active, sizeof(device->display_active));
	case FIELD_VENDOR:
		return device->vendor == GPURUN_VENDOR_AMD ? text_cell("AMD", sizeof("AMD"))
							   : text_cell("NVIDIA", sizeof("NVIDIA"));
	case FIELD_PCI_BUS_ID:
		return text_cell(device->pci_bus_id, sizeof(device->pci_bus_id));
	case FIELD_POWER:
		return number_cell(device->power_draw, scratch);
	}
	return text_cell("", 1);
}

static void put_spaces(FILE *out, size_t count)
{
	static const char spaces[] = "                                ";

	while (count > 0) {
		size_t chunk = count < sizeof(spaces) - 1 ? count : sizeof(spaces) - 1;

		fwrite(spaces, 1, chunk, out);
		count -= chunk;
	}
}

static void put_cell_end(FILE *out, const struct column *column)
{
	fputc(' ', out);
	if (column->ends_group)
		fputc('|', out);
}

static void put_header(FILE *out, const struct column *columns, size_t column_count,
		       const size_t *widths)
{
	size_t length = 0;

	for (size_t c = 0; c < column_count; c++) {
		size_t header_length = strlen(columns[c].header);

		fputs("| ", out);
		fputs(columns[c].header, out);
		put_spaces(out, widths[c] - header_length);
		put_cell_end(out, &columns[c]);
		length += 2 + widths[c] + 1 + columns[c].ends_group;
	}
	fputc('\n', out);
	for (size_t i = 0; i < length; i++)
		fputc('-', out);
	fputc('\n', out);
}

static void put_row(FILE *out, const struct gpurun_device *device, const struct column *columns,
		    size_t column_count, const size_t *widths)
{
	char scratch[NUMBER_SIZE];

	for (size_t c = 0; c < column_count; c++) {
		struct cell cell = device_cell(device, columns[c].field, scratch);
		size_t padding = widths[c] - strlen(columns[c].suffix) - cell.width;

		fputs("| ", out);
		if (cell.right_aligned)
			put_spaces(out, padding);
		fwrite(cell.text, 1, cell.length, out);
		if (!cell.right_aligned)
			put_spaces(out, padding);
		fputs(columns[c].suffix, out);
		put_cell_end(out, &columns[c]);
	}
	fputc('\n', out);
}

/* The holder wrote its command line itself; a newline in it must not fake another line. */
static void put_printable(FILE *out, const char *text, size_t size)
{
	size_t length = strnlen(text, size);

	for (size_t i = 0; i < length; i++) {
		unsigned char byte = (unsigned char)text[i];

		fputc(byte < 0x20 || byte == 0x7F ? '?' : byte, out);
	}
}

/* "leased by pid ... (user@host) since ...: command" and the newline. An unknown user shows as
 * the numeric uid, an unknown host or command as "?". */
static void put_holder(FILE *out, const struct gpurun_holder *holder)
{
	time_t start = (time_t)holder->start_time;
	struct tm local;
	char since[32] = "?";

	if (localtime_r(&start, &local))
		strftime(since, sizeof(since), "%Y-%m-%d %H:%M:%S", &local);
	fprintf(out, "leased by pid %ld (", (long)holder->pid);
	if (holder->user[0])
		put_printable(out, holder->user, sizeof(holder->user));
	else
		fprintf(out, "%lu", (unsigned long)holder->uid);
	fputc('@', out);
	if (holder->host[0])
		put_printable(out, holder->host, sizeof(holder->host));
	else
		fputc('?', out);
	fprintf(out, ") since %s: ", since);
	if (holder->command[0])
		put_printable(out, holder->command, sizeof(holder->command));
	else
		fputc('?', out);
	fputc('\n', out);
}

/* One line per leased device, below the table. */
static void put_lease(FILE *out, const struct gpurun_device *device)
{
	fprintf(out, "GPU %d ", device->index);
	put_holder(out, &device->holder);
}

/* ---- --processes: each GPU's processes under its row ----------------------------------------
 * Indented, so that the rows of the table still stand out; pid, user and MiB are aligned over
 * the whole table. An unknown user, memory or command is "?". */

#define PROCESS_INDENT "    "

struct process_widths {
	size_t pid, user, memory;
};

static size_t memory_text(const struct gpurun_process *process, char *scratch)
{
	return (size_t)(isnan(process->used_mib) ? snprintf(scratch, NUMBER_SIZE, "?")
			: snprintf(scratch, NUMBER_SIZE, "%.0f", process->used_mib));
}

static struct process_widths measure_processes(const struct gpurun_snapshot *snapshot)
{
	struct process_widths widths = { 1, 1, 1 };
	char scratch[NUMBER_SIZE];

	for (size_t d = 0; d < snapshot->count; d++) {
		const struct gpurun_device *device = &snapshot->devices[d];

		for (size_t p = 0; p < device->process_count; p++) {
			const struct gpurun_process *process = &device->processes[p];
			size_t pid = (size_t)snprintf(scratch, NUMBER_SIZE, "%u", process->pid);
			size_t user = utf8_width(process->user, strnlen(process->user,
									sizeof(process->user)));
			size_t memory = memory_text(process, scratch);

			widths.pid = pid > widths.pid ? pid : widths.pid;
			widths.user = user > widths.user ? user : widths.user;
			widths.memory = memory > widths.memory ? memory : widths.memory;
		}
	}
	return widths;
}

static void put_processes(FILE *out, const struct gpurun_device *device,
			  const struct process_widths *widths)
{
	char scratch[NUMBER_SIZE];

	if (!device->processes_known)
		fputs(PROCESS_INDENT "processes unknown\n", out);
	else if (device->process_count == 0)
		fputs(PROCESS_INDENT "no processes\n", out);
	for (size_t p = 0; p < device->process_count; p++) {
		const struct gpurun_process *process = &device->processes[p];
		size_t user_length = strnlen(process->user, sizeof(process->user));
		size_t memory = memory_text(process, scratch);

		fprintf(out, PROCESS_INDENT "%*u  ", (int)widths->pid, process->pid);
		if (user_length)
			put_printable(out, process->user, sizeof(process->user));
		else
			fputc('?', out);
		put_spaces(out, widths->user - (user_length ? utf8_width(process->user, user_length)
							    : 1));
		put_spaces(out, 2 + widths->memory - memory);
		fprintf(out, "%s MiB  ", scratch);
		if (process->command[0])
			put_printable(out, process->command, sizeof(process->command));
		else
			fputc('?', out);
		fputc('\n', out);
	}
	if (device->leased) {
		fputs(PROCESS_INDENT, out);
		put_holder(out, &device->holder);
	}
}

int gpurun_report_table(FILE *out, const struct gpurun_snapshot *snapshot, bool all)
{
	struct gpurun_table_options options = { .all = all };

	return gpurun_report_table_with(out, snapshot, &options);
}

int gpurun_report_table_with(FILE *out, const struct gpurun_snapshot *snapshot,
			     const struct gpurun_table_options *options)
{
	const struct column *base = options->all ? all_columns : default_columns;
	size_t base_count = options->all ? COUNT_OF(all_columns) : COUNT_OF(default_columns);
	struct column columns[MAX_COLUMNS];
	size_t column_count = base_count;
	size_t widths[MAX_COLUMNS];
	char scratch[NUMBER_SIZE];
	struct process_widths process_widths = { 1, 1, 1 };

	memcpy(columns, base, base_count * sizeof(*columns));
	if (options->wide) {
		memcpy(columns + column_count, wide_columns, sizeof(wide_columns));
		column_count += COUNT_OF(wide_columns);
	}
	if (options->processes)
		process_widths = measure_processes(snapshot);

	for (size_t c = 0; c < column_count; c++)
		widths[c] = strlen(columns[c].header);
	for (size_t d = 0; d < snapshot->count; d++) {
		for (size_t c = 0; c < column_count; c++) {
			struct cell cell = device_cell(&snapshot->devices[d], columns[c].field,
						       scratch);
			size_t width = cell.width + strlen(columns[c].suffix);

			if (width > widths[c])
				widths[c] = width;
		}
	}

	put_header(out, columns, column_count, widths);
	for (size_t d = 0; d < snapshot->count; d++) {
		put_row(out, &snapshot->devices[d], columns, column_count, widths);
		if (options->processes)
			put_processes(out, &snapshot->devices[d], &process_widths);
	}
	for (size_t d = 0; d < snapshot->count && !options->processes; d++)
		if (snapshot->devices[d].leased)
			put_lease(out, &snapshot->devices[d]);
	if (options->processes && snapshot->processes_unseen > 0)
		fprintf(out, "%zu process%s of other users could not be looked at (their descriptors "
			     "need root): any AMD GPU use of %s is not listed\n",
			snapshot->processes_unseen, snapshot->processes_unseen == 1 ? "" : "es",
			snapshot->processes_unseen == 1 ? "it" : "theirs");
	return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

/* ---- JSON ---------------------------------------------------------------------------------
 * gpustat's keys and integer conventions, plus what gpurun knows beyond them (serial, display,
 * lost, MIG parent, lease). Unknown values are null; the output is valid JSON whatever bytes
 * the driver or a lock file handed us. */

static const char replacement_character[] = "\xEF\xBF\xBD";

/* Length of the well-formed UTF-8 sequence at text[0] (Unicode table 3-7), or 0 and in
 * *consumed the maximal ill-formed prefix to replace with one U+FFFD, as Python's
 * decode('utf-8', 'replace') does. */
static size_t utf8_sequence(const unsigned char *text, size_t length, size_t *consumed)
{
	unsigned char lead = text[0];
	unsigned char low = 0x80, high = 0xBF;
	size_t needed;

	if (lead < 0x80)
		return 1;
	if (lead >= 0xC2 && lead <= 0xDF)
		needed = 1;
	else if (lead >= 0xE0 && lead <= 0xEF)
		needed = 2;
	else if (lead >= 0xF0 && lead <= 0xF4)
		needed = 3;
	else
		needed = 0;
	if (lead == 0xE0)
		low = 0xA0;
	else if (lead == 0xED)
		high = 0x9F;
	else if (lead == 0xF0)
		low = 0x90;
	else if (lead == 0xF4)
		high = 0x8F;

	*consumed = 1;
	if (needed == 0)
		return 0;
	for (size_t i = 1; i <= needed; i++) {
		if (i >= length || text[i] < low || text[i] > high)
			return 0;
		*consumed = i + 1;
		low = 0x80;
		high = 0xBF;
	}
	return needed + 1;
}

static void json_string(FILE *out, const char *text, size_t length)
{
	const unsigned char *bytes = (const unsigned char *)text;
	size_t plain = 0;       /* start of the run of bytes that need no escaping */
	size_t i = 0;

	fputc('"', out);
	while (i < length) {
		unsigned char byte = bytes[i];
		size_t consumed;
		size_t sequence;

		if (byte >= 0x20 && byte != '"' && byte != '\\' && byte < 0x80) {
			i++;
			continue;
		}
		if (byte >= 0x80) {
			sequence = utf8_sequence(bytes + i, length - i, &consumed);
			if (sequence > 0) {
				i += sequence;
				continue;
			}
		}
		fwrite(text + plain, 1, i - plain, out);
		if (byte == '"' || byte == '\\') {
			fputc('\\', out);
			fputc(byte, out);
			i++;
		} else if (byte < 0x20) {
			fprintf(out, "\\u%04x", byte);
			i++;
		} else {
			fputs(replacement_character, out);
			i += consumed;
		}
		plain = i;
	}
	fwrite(text + plain, 1, i - plain, out);
	fputc('"', out);
}

/* A string field of a record (a char array of that size): empty means unknown. */
static void json_text(FILE *out, const char *text, size_t size)
{
	size_t length = strnlen(text, size);

	if (length == 0)
		fputs("null", out);
	else
		json_string(out, text, length);
}

static void json_optional_string(FILE *out, const char *text)
{
	if (!text || !*text)
		fputs("null", out);
	else
		json_string(out, text, strlen(text));
}

/* Rounded half to even, like the table; never "-0". */
static void json_integer(FILE *out, double value)
{
	if (!isfinite(value)) {
		fputs("null", out);
		return;
	}
	value = nearbyint(value);
	fprintf(out, "%.0f", value == 0 ? 0.0 : value);
}

/* At most two decimals, without trailing zeros: 60, 61.5, 61.25. */
static void json_decimal(FILE *out, double value)
{
	char text[NUMBER_SIZE];
	int length;

	if (!isfinite(value)) {
		fputs("null", out);
		return;
	}
	length = snprintf(text, sizeof(text), "%.2f", value);
	while (length > 0 && text[length - 1] == '0')
		length--;
	if (length > 0 && text[length - 1] == '.')
		length--;
	text[length] = '\0';
	fputs(strcmp(text, "-0") == 0 ? "0" : text, out);
}

/* ISO 8601 local time with its UTC offset, as Python's datetime.astimezone().isoformat(),
 * with microseconds when asked for. */
static void json_time(FILE *out, double seconds, bool microseconds)
{
	double whole;
	long fraction;
	time_t when;
	struct tm local;
	char text[64];
	long offset;

	if (!isfinite(seconds)) {
		fputs("null", out);
		return;
	}
	whole = floor(seconds);
	fraction = lround((seconds - whole) * 1e6);
	if (fraction >= 1000000) {
		whole += 1;
		fraction -= 1000000;
	}
	when = (time_t)whole;
	if (!localtime_r(&when, &local)) {
		fputs("null", out);
		return;
	}
	strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &local);
	fprintf(out, "\"%s", text);
	if (microseconds)
		fprintf(out, ".%06ld", fraction);
	offset = local.tm_gmtoff;
	fprintf(out, "%c%02ld:%02ld\"", offset < 0 ? '-' : '+', labs(offset) / 3600,
		labs(offset) % 3600 / 60);
}

static void json_processes(FILE *out, const struct gpurun_device *device)
{
	if (!device->processes_known) {
		fputs("null", out);
		return;
	}
	fputc('[', out);
	for (size_t p = 0; p < device->process_count; p++) {
		const struct gpurun_process *process = &device->processes[p];

		fprintf(out, "%s{\"pid\": %u, \"username\": ", p ? ", " : "", process->pid);
		json_text(out, process->user, sizeof(process->user));
		fputs(", \"command\": ", out);
		json_text(out, process->command, sizeof(process->command));
		fputs(", \"gpu_memory_usage\": ", out);
		json_integer(out, process->used_mib);
		fputc('}', out);
	}
	fputc(']', out);
}

static void json_lease(FILE *out, const struct gpurun_device *device)
{
	const struct gpurun_holder *holder = &device->holder;

	if (!device->leased) {
		fputs("null", out);
		return;
	}
	fprintf(out, "{\"pid\": %ld, \"user\": ", (long)holder->pid);
	json_text(out, holder->user, sizeof(holder->user));
	fputs(", \"host\": ", out);
	json_text(out, holder->host, sizeof(holder->host));
	fputs(", \"start_time\": ", out);
	json_time(out, (double)holder->start_time, false);
	fputs(", \"command\": ", out);
	json_text(out, holder->command, sizeof(holder->command));
	fputc('}', out);
}

static void json_device(FILE *out, const struct gpurun_device *device)
{
	fprintf(out, "{\"index\": %d, \"uuid\": ", device->index);
	json_text(out, device->uuid, sizeof(device->uuid));
	fputs(", \"name\": ", out);
	json_text(out, device->name, sizeof(device->name));
	fputs(", \"serial\": ", out);
	json_text(out, device->serial, sizeof(device->serial));
	fputs(", \"pci.bus_id\": ", out);
	json_text(out, device->pci_bus_id, sizeof(device->pci_bus_id));
	fputs(", \"utilization.gpu\": ", out);
	json_integer(out, device->load * 100);
	fputs(", \"memory.used\": ", out);
	json_integer(out, device->memory_used);
	fputs(", \"memory.total\": ", out);
	json_integer(out, device->memory_total);
	fputs(", \"memory.free\": ", out);
	json_integer(out, device->memory_free);
	fputs(", \"temperature.gpu\": ", out);
	json_integer(out, device->temperature);
	fputs(", \"power.draw\": ", out);
	json_decimal(out, device->power_draw);
	fputs(", \"display_mode\": ", out);
	json_text(out, device->display_mode, sizeof(device->display_mode));
	fputs(", \"display_active\": ", out);
	json_text(out, device->display_active, sizeof(device->display_active));
	fprintf(out, ", \"lost\": %s, \"mig_parent\": ", device->lost ? "true" : "false");
	if (device->mig_parent < 0)
		fputs("null", out);
	else
		fprintf(out, "%d", device->mig_parent);
	fputs(", \"processes\": ", out);
	json_processes(out, device);
	fputs(", \"lease\": ", out);
	json_lease(out, device);
	fputc('}', out);
}

int gpurun_report_json(FILE *out, const struct gpurun_snapshot *snapshot, const char *hostname,
		       double query_time)
{
	fputs("{\"hostname\": ", out);
	json_optional_string(out, hostname);
	fputs(", \"driver_version\": ", out);
	json_text(out, snapshot->driver_version, sizeof(snapshot->driver_version));
	fputs(", \"query_time\": ", out);
	json_time(out, query_time, true);
	fputs(", \"source\": ", out);
	json_optional_string(out, snapshot->source);
	fprintf(out, ", \"processes_unseen\": %zu", snapshot->processes_unseen);
	fputs(", \"gpus\": [", out);
	for (size_t d = 0; d < snapshot->count; d++) {
		if (d)
			fputs(", ", out);
		json_device(out, &snapshot->devices[d]);
	}
	fputs("]}\n", out);
	return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
