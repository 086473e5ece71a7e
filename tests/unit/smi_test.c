/* smi_test: the nvidia-smi CSV parser against every kind of output real drivers print, and the
 * ways GPUtil's parser broke on them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "unit.h"

static struct gpurun_snapshot snapshot;
static struct gpurun_error err;

/* One record, field by field, in the query's column order. */
enum {
	INDEX, UUID, UTILIZATION, MEMORY_TOTAL, MEMORY_USED, MEMORY_FREE, DRIVER, NAME, SERIAL,
	DISPLAY_ACTIVE, DISPLAY_MODE, TEMPERATURE, PCI_BUS_ID, POWER, COLUMNS,
};

static const char *const good_fields[COLUMNS] = {
	"2", "GPU-12345678-1234-1234-1234-123456789abc", "37", "81920", "1024", "80896",
	"550.54.15", "NVIDIA A100-SXM4-80GB", "1320000000002", "Disabled", "Enabled", "45",
	"00000000:12:00.0", "61.25",
};

static const char four_gpus[] =
	"0, GPU-0a1b2c3d-0000-0000-0000-000000000000, 0, 81920, 0, 81920, 550.54.15, NVIDIA H100 80GB HBM3, 1652022000000, Disabled, Disabled, 31, 00000000:18:00.0, 69.53\n"
	"1, GPU-0a1b2c3d-0000-0000-0000-000000000001, 100, 81920, 80000, 1920, 550.54.15, NVIDIA H100 80GB HBM3, 1652022000001, Disabled, Disabled, 67, 00000000:2A:00.0, 698.10\n"
	"2, GPU-0a1b2c3d-0000-0000-0000-000000000002, 45, 81920, 40960, 40960, 550.54.15, NVIDIA H100 80GB HBM3, 1652022000002, Enabled, Enabled, 52, 00000000:3A:00.0, 312.00\n"
	"3, GPU-0a1b2c3d-0000-0000-0000-000000000003, 3, 81920, 512, 81408, 550.54.15, NVIDIA H100 80GB HBM3, 1652022000003, Disabled, Disabled, 29, 00000000:5D:00.0, 70.01\n";

static int free_snapshot(void **state)
{
	(void)state;
	gpurun_snapshot_free(&snapshot);
	memset(&err, 0, sizeof(err));
	return 0;
}

static int parse(const char *text)
{
	memset(&err, 0, sizeof(err));
	return gpurun_smi_parse(text, strlen(text), &snapshot, &err);
}

/* Joins fields with ", " into one line (with "\n"); NULL keeps the good field. */
static const char *record(const char *const replaced[COLUMNS])
{
	static char line[8192];
	size_t used = 0;

	for (int column = 0; column < COLUMNS; column++) {
		const char *field = replaced && replaced[column] ? replaced[column] : good_fields[column];
		used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s", field,
					 column + 1 < COLUMNS ? ", " : "\n");
	}
	return line;
}

static const char *record_with(int column, const char *field)
{
	const char *replaced[COLUMNS] = { 0 };

	replaced[column] = field;
	return record(replaced);
}

static void assert_parse_fails_quoting(const char *text, const char *quoted)
{
	assert_int_equal(parse(text), GPURUN_EXIT_NO_GPU_INFO);
	assert_int_equal(err.status, GPURUN_EXIT_NO_GPU_INFO);
	assert_non_null(strstr(err.message, "nvidia-smi"));
	if (quoted && !strstr(err.message, quoted))
		fail_msg("message \"%s\" does not quote \"%s\"", err.message, quoted);
	/* never a partial answer */
	assert_int_equal(snapshot.count, 0);
	assert_null(snapshot.devices);
}

/* Whether the device's field for a column holds a value. */
static bool is_known(const struct gpurun_device *device, int column)
{
	switch (column) {
	case UUID: return device->uuid[0] != '\0';
	case UTILIZATION: return !isnan(device->load);
	case MEMORY_TOTAL: return !isnan(device->memory_total);
	case MEMORY_USED: return !isnan(device->memory_used);
	case MEMORY_FREE: return !isnan(device->memory_free);
	case DRIVER: return snapshot.driver_version[0] != '\0';
	case NAME: return device->name[0] != '\0';
	case SERIAL: return device->serial[0] != '\0';
	case DISPLAY_ACTIVE: return device->display_active[0] != '\0';
	case DISPLAY_MODE: return device->display_mode[0] != '\0';
	case TEMPERATURE: return !isnan(device->temperature);
	case PCI_BUS_ID: return device->pci_bus_id[0] != '\0';
	case POWER: return !isnan(device->power_draw);
	default: return true;
	}
}

/* Puts marker into each column but the index in turn: that column alone becomes unknown. */
static void assert_marker_is_unknown_everywhere(const char *marker)
{
	for (int column = UUID; column < COLUMNS; column++) {
		if (parse(record_with(column, marker)) != 0)
			fail_msg("\"%s\" in column %d: %s", marker, column, err.message);
		assert_int_equal(snapshot.count, 1);
		for (int other = UUID; other < COLUMNS; other++)
			if (is_known(&snapshot.devices[0], other) != (other != column))
				fail_msg("\"%s\" in column %d: column %d is %s", marker, column, other,
					 other == column ? "known" : "unknown");
		assert_int_equal(snapshot.devices[0].index, 2);
		gpurun_snapshot_free(&snapshot);
	}
}

static void four_gpus_are_read(void **state)
{
	(void)state;
	assert_int_equal(parse(four_gpus), 0);
	assert_int_equal(snapshot.count, 4);
	assert_string_equal(snapshot.source, "nvidia-smi");
	assert_string_equal(snapshot.driver_version, "550.54.15");
	for (int i = 0; i < 4; i++)
		assert_int_equal(snapshot.devices[i].index, i);
	const struct gpurun_device *device = &snapshot.devices[1];
	assert_string_equal(device->uuid, "GPU-0a1b2c3d-0000-0000-0000-000000000001");
	assert_true(device->load == 1.0);
	assert_true(device->memory_used == 80000 && device->memory_free == 1920);
	assert_string_equal(device->pci_bus_id, "00000000:2A:00.0");
	assert_true(device->power_draw == 698.10);
	assert_string_equal(snapshot.devices[2].display_active, "Enabled");
	assert_false(device->lost);
	assert_false(device->processes_known);
}

static void every_field_lands_in_its_place(void **state)
{
	(void)state;
	assert_int_equal(parse(record(NULL)), 0);
	assert_int_equal(snapshot.count, 1);
	const struct gpurun_device *device = &snapshot.devices[0];
	assert_int_equal(device->index, 2);
	assert_string_equal(device->uuid, good_fields[UUID]);
	assert_true(device->load == 37 / 100.0);
	assert_true(device->memory_total == 81920);
	assert_true(device->memory_used == 1024);
	assert_true(device->memory_free == 80896);
	assert_string_equal(snapshot.driver_version, "550.54.15");
	assert_string_equal(device->name, "NVIDIA A100-SXM4-80GB");
	assert_string_equal(device->serial, "1320000000002");
	assert_string_equal(device->display_active, "Disabled");
	assert_string_equal(device->display_mode, "Enabled");
	assert_true(device->temperature == 45);
	assert_string_equal(device->pci_bus_id, "00000000:12:00.0");
	/* the same double NVML's 61250 mW / 1000 gives */
	assert_true(device->power_draw == 61250 / 1000.0);
	assert_int_equal(device->mig_parent, -1);
}

static void not_supported_is_unknown_in_every_field(void **state)
{
	(void)state;
	assert_marker_is_unknown_everywhere("[Not Supported]");
}

static void not_available_is_unknown_in_every_field(void **state)
{
	(void)state;
	assert_marker_is_unknown_everywhere("[N/A]");
}

static void empty_is_unknown_in_every_field(void **state)
{
	(void)state;
	assert_marker_is_unknown_everywhere("");
}

static void any_bracketed_text_is_unknown_in_every_field(void **state)
{
	(void)state;
	assert_marker_is_unknown_everywhere("[GPU requires reset]");
	assert_marker_is_unknown_everywhere("[Unknown Error]");
}

static void unknown_index_is_an_error(void **state)
{
	(void)state;
	assert_parse_fails_quoting(record_with(INDEX, "[N/A]"), "[N/A], GPU-");
}

static void name_with_comma_space_keeps_later_fields(void **state)
{
	(void)state;
	assert_int_equal(parse(record_with(NAME, "Tesla V100, PCIe")), 0);
	assert_string_equal(snapshot.devices[0].name, "Tesla V100, PCIe");
	assert_string_equal(snapshot.devices[0].serial, "1320000000002");
	assert_string_equal(snapshot.devices[0].pci_bus_id, "00000000:12:00.0");
	assert_true(snapshot.devices[0].temperature == 45);
}

static void name_with_several_comma_spaces_keeps_later_fields(void **state)
{
	(void)state;
	assert_int_equal(parse(record_with(NAME, "A, B, , C,, D,")), 0);
	assert_string_equal(snapshot.devices[0].name, "A, B, , C,, D,");
	assert_string_equal(snapshot.devices[0].serial, "1320000000002");
	assert_string_equal(snapshot.devices[0].display_active, "Disabled");
	assert_string_equal(snapshot.driver_version, "550.54.15");
	assert_true(snapshot.devices[0].power_draw == 61.25);
}

static void last_line_without_newline_counts(void **state)
{
	(void)state;
	char text[4096];

	snprintf(text, sizeof(text), "%s", four_gpus);
	text[strlen(text) - 1] = '\0';
	assert_int_equal(parse(text), 0);
	assert_int_equal(snapshot.count, 4);
	assert_int_equal(snapshot.devices[3].index, 3);
	assert_true(snapshot.devices[3].power_draw == 70.01);
}

static void crlf_line_ends_are_read(void **state)
{
	(void)state;
	char text[4096] = "";

	for (const char *line = four_gpus; *line;) {
		const char *end = strchr(line, '\n');
		strncat(text, line, (size_t)(end - line));
		strcat(text, "\r\n");
		line = end + 1;
	}
	assert_int_equal(parse(text), 0);
	assert_int_equal(snapshot.count, 4);
	assert_true(snapshot.devices[0].power_draw == 69.53);
	assert_true(snapshot.devices[3].power_draw == 70.01);
	assert_int_equal(snapshot.devices[1].index, 1);
}

static void memory_total_zero_gives_unknown_memory_util(void **state)
{
	(void)state;
	const char *replaced[COLUMNS] = { [MEMORY_TOTAL] = "0", [MEMORY_USED] = "0",
					  [MEMORY_FREE] = "0" };

	assert_int_equal(parse(record(replaced)), 0);
	assert_true(snapshot.devices[0].memory_total == 0);
	assert_true(isnan(gpurun_device_memory_util(&snapshot.devices[0])));
}

static void blank_trailing_lines_are_ignored(void **state)
{
	(void)state;
	char text[4096];

	snprintf(text, sizeof(text), "%s\n  \n\r\n\n", four_gpus);
	assert_int_equal(parse(text), 0);
	assert_int_equal(snapshot.count, 4);
}

static void garbage_line_is_an_error_quoting_it(void **state)
{
	(void)state;
	char text[4096];

	snprintf(text, sizeof(text), "%sthis is not a GPU\n", four_gpus);
	assert_parse_fails_quoting(text, "line 5 of its output is not a GPU record: \"this is not a GPU\"");
}

/* The same GPU twice would be handed out twice: "0,0", which CUDA reads as no GPU at all. */
static void a_repeated_gpu_is_an_error(void **state)
{
	(void)state;
	char text[4096];
	const char *second = strchr(four_gpus, '\n') + 1;

	snprintf(text, sizeof(text), "%.*s%s", (int)(second - four_gpus), four_gpus, four_gpus);
	assert_parse_fails_quoting(text, "line 2 of its output repeats a GPU's index or UUID: \"0, GPU-");
	snprintf(text, sizeof(text), "%s%s", four_gpus, record_with(UUID, "GPU-0a1b2c3d-0000-0000-0000-000000000001"));
	assert_parse_fails_quoting(text, "line 5 of its output repeats a GPU's index or UUID");
	/* Unreadable UUIDs are no UUIDs: two of them are two GPUs. */
	snprintf(text, sizeof(text), "%s", record_with(UUID, "[N/A]"));
	snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s", record_with(UUID, "[N/A]"));
	*strchr(strchr(text, '\n') + 1, '2') = '3';
	assert_int_equal(parse(text), 0);
	assert_int_equal(snapshot.count, 2);
}

static void truncated_line_is_an_error(void **state)
{
	(void)state;
	char text[4096];

	/* the last record cut short: too few fields */
	snprintf(text, sizeof(text), "%s", four_gpus);
	*strstr(text, ", 00000000:5D:00.0") = '\0';
	assert_parse_fails_quoting(text, "line 4");
}

static void overlong_text_fields_are_truncated(void **state)
{
	(void)state;
	char long_text[1000];
	const char *replaced[COLUMNS];

	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	for (int column = 0; column < COLUMNS; column++)
		replaced[column] = NULL;
	replaced[UUID] = replaced[NAME] = replaced[SERIAL] = replaced[DRIVER] = long_text;
	replaced[DISPLAY_ACTIVE] = replaced[DISPLAY_MODE] = replaced[PCI_BUS_ID] = long_text;
	assert_int_equal(parse(record(replaced)), 0);
	const struct gpurun_device *device = &snapshot.devices[0];
	assert_int_equal(strlen(device->uuid), GPURUN_UUID_SIZE - 1);
	assert_int_equal(strlen(device->name), GPURUN_NAME_SIZE - 1);
	assert_int_equal(strlen(device->serial), GPURUN_SERIAL_SIZE - 1);
	assert_int_equal(strlen(device->pci_bus_id), GPURUN_BUS_ID_SIZE - 1);
	assert_int_equal(strlen(device->display_active), GPURUN_FLAG_SIZE - 1);
	assert_int_equal(strlen(device->display_mode), GPURUN_FLAG_SIZE - 1);
	assert_int_equal(strlen(snapshot.driver_version), GPURUN_DRIVER_SIZE - 1);
	/* the numbers around them are intact */
	assert_true(device->temperature == 45 && device->memory_used == 1024);
}

static void only_plain_decimals_are_numbers(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"45C", "61.25 W", " 45", "-3", "+3", "1e3", "0x10", "nan", "inf", "1.", ".5",
		"1.2.3", "1234567890123456", "N/A",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(record_with(TEMPERATURE, bad[i])) != GPURUN_EXIT_NO_GPU_INFO)
			fail_msg("temperature \"%s\" was accepted", bad[i]);
		assert_null(snapshot.devices);
	}
}

static void non_numeric_index_is_an_error(void **state)
{
	(void)state;
	static const char *const bad[] = { "a", "-1", "1.0", "0x1", "1 ", "9999999" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(record_with(INDEX, bad[i])) != GPURUN_EXIT_NO_GPU_INFO)
			fail_msg("index \"%s\" was accepted", bad[i]);
		assert_null(snapshot.devices);
	}
}

static void no_devices_were_found_is_an_error_quoting_it(void **state)
{
	(void)state;
	assert_parse_fails_quoting("No devices were found\n", "\"No devices were found\"");
}

static void smi_has_failed_is_an_error_quoting_it(void **state)
{
	(void)state;
	assert_parse_fails_quoting(
		"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
		"Make sure that the latest NVIDIA driver is installed and running.\n\n",
		"\"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.");
}

static void version_mismatch_is_an_error_quoting_its_first_line(void **state)
{
	(void)state;
	assert_parse_fails_quoting("Failed to initialize NVML: Driver/library version mismatch\n"
				   "NVML library version: 550.120\n",
				   "\"Failed to initialize NVML: Driver/library version mismatch\"");
	assert_null(strstr(err.message, "550.120"));
}

static void empty_output_is_an_error(void **state)
{
	(void)state;
	assert_parse_fails_quoting("", "no GPU records");
	assert_parse_fails_quoting("\n \r\n", "no GPU records");
}

static void lost_gpu_line_among_good_lines_fails_the_snapshot(void **state)
{
	(void)state;
	char text[4096];
	const char *lost = "Unable to determine the device handle for GPU 0000:2A:00.0: GPU is lost.  "
			   "Reboot the system to recover this GPU";
	const char *second = strchr(four_gpus, '\n') + 1;

	snprintf(text, sizeof(text), "%.*s%s\n%s", (int)(second - four_gpus), four_gpus, lost,
		 strchr(second, '\n') + 1);
	assert_parse_fails_quoting(text, "line 2 of its output is not a GPU record: \"Unable to "
				   "determine the device handle for GPU 0000:2A:00.0: GPU is lost.");
}

static void long_output_is_quoted_shortened(void **state)
{
	(void)state;
	char text[3000];

	memset(text, 'y', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	assert_parse_fails_quoting(text, "\"yyyyyyyyyy");
	assert_true(strlen(err.message) < 300);
}

static void parser_stays_within_the_given_length(void **state)
{
	(void)state;
	char text[8192];
	size_t length;

	snprintf(text, sizeof(text), "%s", record(NULL));
	length = strlen(text);
	snprintf(text + length, sizeof(text) - length, "garbage after the end");
	assert_int_equal(gpurun_smi_parse(text, length, &snapshot, &err), 0);
	assert_int_equal(snapshot.count, 1);
	/* and without the newline, the end of the buffer ends the last field */
	gpurun_snapshot_free(&snapshot);
	assert_int_equal(gpurun_smi_parse(text, length - 1, &snapshot, &err), 0);
	assert_true(snapshot.devices[0].power_draw == 61.25);
}

static void arguments_are_gputil_query_plus_bus_id_and_power(void **state)
{
	(void)state;
	assert_string_equal(gpurun_smi_arguments[0],
			    "--query-gpu=index,uuid,utilization.gpu,memory.total,memory.used,"
			    "memory.free,driver_version,name,gpu_serial,display_active,display_mode,"
			    "temperature.gpu,pci.bus_id,power.draw");
	assert_string_equal(gpurun_smi_arguments[1], "--format=csv,noheader,nounits");
	assert_null(gpurun_smi_arguments[2]);
}

#define TEST(f) cmocka_unit_test_teardown(f, free_snapshot)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(four_gpus_are_read),
		TEST(every_field_lands_in_its_place),
		TEST(not_supported_is_unknown_in_every_field),
		TEST(not_available_is_unknown_in_every_field),
		TEST(empty_is_unknown_in_every_field),
		TEST(any_bracketed_text_is_unknown_in_every_field),
		TEST(unknown_index_is_an_error),
		TEST(name_with_comma_space_keeps_later_fields),
		TEST(name_with_several_comma_spaces_keeps_later_fields),
		TEST(last_line_without_newline_counts),
		TEST(crlf_line_ends_are_read),
		TEST(memory_total_zero_gives_unknown_memory_util),
		TEST(blank_trailing_lines_are_ignored),
		TEST(garbage_line_is_an_error_quoting_it),
		TEST(a_repeated_gpu_is_an_error),
		TEST(truncated_line_is_an_error),
		TEST(overlong_text_fields_are_truncated),
		TEST(only_plain_decimals_are_numbers),
		TEST(non_numeric_index_is_an_error),
		TEST(no_devices_were_found_is_an_error_quoting_it),
		TEST(smi_has_failed_is_an_error_quoting_it),
		TEST(version_mismatch_is_an_error_quoting_its_first_line),
		TEST(empty_output_is_an_error),
		TEST(lost_gpu_line_among_good_lines_fails_the_snapshot),
		TEST(long_output_is_quoted_shortened),
		TEST(parser_stays_within_the_given_length),
		TEST(arguments_are_gputil_query_plus_bus_id_and_power),
	};

	return cmocka_run_group_tests_name("smi", tests, NULL, NULL);
}
