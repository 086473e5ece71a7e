/* probe_test: the NVML and nvidia-smi probes against the fakes in build/fakes (run from the repo
 * root), driven by fixture files written here; and both sources agreeing on the same machine. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture_file.h"
#include "unit.h"

#define FAKE_NVML "build/fakes/libnvidia-ml.so.1"
#define OLD_FAKE_NVML "build/fakes/old/libnvidia-ml.so.1"
#define FAKE_SMI "build/fakes/nvidia-smi"

static struct gpurun_snapshot snapshot, other;
static struct gpurun_error err;

static const char four_gpus[] =
	"driver 550.54.15\n"
	"gpu\n"
	"util 0\n"
	"memory 81920 0\n"
	"gpu\n"
	"name NVIDIA H100 80GB HBM3\n"
	"util 100\n"
	"memory 81920 80000\n"
	"temperature 71\n"
	"power 698.5\n"
	"gpu\n"
	"name Tesla V100, PCIe, 32GB\n"
	"util 45\n"
	"memory 32768 16384\n"
	"display_mode on\n"
	"display_active on\n"
	"gpu\n"
	"util 3\n"
	"memory 81920 512\n"
	"power 70.01\n";

static int start_group(void **state)
{
	(void)state;
	const char *fakes[] = { FAKE_NVML, OLD_FAKE_NVML, FAKE_SMI };

	for (size_t i = 0; i < sizeof(fakes) / sizeof(fakes[0]); i++) {
		if (access(fakes[i], R_OK) != 0) {
			fprintf(stderr, "probe_test: %s is missing: run `make %s` first, from the "
				"repository root\n", fakes[i], fakes[i]);
			return -1;
		}
	}
	if (fixture_file_start() != 0)
		return -1;
	/* The machine's own AMD GPUs, if any, must not join the snapshots. */
	setenv("GPURUN_SYSFS_ROOT", scratch, 1);
	return 0;
}

static int end_group(void **state)
{
	(void)state;
	fixture_file_end();
	return 0;
}

static int start_test(void **state)
{
	(void)state;
	setenv("GPURUN_NVML_LIB", FAKE_NVML, 1);
	setenv("GPURUN_NVIDIA_SMI", FAKE_SMI, 1);
	memset(&err, 0, sizeof(err));
	return 0;
}

static int end_test(void **state)
{
	(void)state;
	gpurun_snapshot_free(&snapshot);
	gpurun_snapshot_free(&other);
	return 0;
}

static void assert_message_has(const char *part)
{
	if (!strstr(err.message, part))
		fail_msg("message \"%s\" lacks \"%s\"", err.message, part);
}

static void assert_message_lacks(const char *part)
{
	if (strstr(err.message, part))
		fail_msg("message \"%s\" has \"%s\"", err.message, part);
}

static void assert_probe_fails(int status)
{
	if (status != GPURUN_EXIT_NO_GPU_INFO)
		fail_msg("status %d, wanted %d (%s)", status, GPURUN_EXIT_NO_GPU_INFO, err.message);
	assert_int_equal(err.status, GPURUN_EXIT_NO_GPU_INFO);
	assert_int_equal(snapshot.count, 0);
	assert_null(snapshot.devices);
}

static int probe_nvml(const char *fixture)
{
	use_fixture(fixture);
	int status = gpurun_probe_nvml(&snapshot, &err);
	if (status == 0)
		assert_string_equal(snapshot.source, "nvml");
	return status;
}

static void assert_all_unknown_but_index(const struct gpurun_device *device)
{
	assert_string_equal(device->uuid, "");
	assert_string_equal(device->name, "");
	assert_string_equal(device->serial, "");
	assert_string_equal(device->pci_bus_id, "");
	assert_true(isnan(device->load));
	assert_true(isnan(device->memory_total));
	assert_true(isnan(device->memory_used));
	assert_true(isnan(device->memory_free));
	assert_true(isnan(device->temperature));
	assert_true(isnan(device->power_draw));
	assert_string_equal(device->display_mode, "");
	assert_string_equal(device->display_active, "");
	assert_false(device->processes_known);
}

/* ---- NVML ------------------------------------------------------------------------------ */

static void nvml_reads_every_field(void **state)
{
	(void)state;
	assert_int_equal(probe_nvml("driver 555.42.06\n"
				    "gpu\n"
				    "gpu\n"
				    "uuid GPU-11111111-2222-3333-4444-555555555555\n"
				    "name NVIDIA A100-SXM4-80GB, rev 2\n"
				    "serial 1563221001234\n"
				    "pci 00000001:3B:00.0\n"
				    "util 37\n"
				    "memory 81920 20480\n"
				    "temperature 54\n"
				    "power 245.5\n"
				    "display_mode on\n"
				    "display_active off\n"), 0);
	assert_int_equal(snapshot.count, 2);
	assert_string_equal(snapshot.driver_version, "555.42.06");
	const struct gpurun_device *device = &snapshot.devices[1];
	assert_int_equal(device->index, 1);
	assert_string_equal(device->uuid, "GPU-11111111-2222-3333-4444-555555555555");
	assert_string_equal(device->name, "NVIDIA A100-SXM4-80GB, rev 2");
	assert_string_equal(device->serial, "1563221001234");
	assert_string_equal(device->pci_bus_id, "00000001:3B:00.0");
	assert_true(device->load == 0.37);
	assert_true(device->memory_total == 81920);
	assert_true(device->memory_used == 20480);
	assert_true(device->memory_free == 61440);
	assert_true(device->temperature == 54);
	assert_true(device->power_draw == 245.5);
	assert_string_equal(device->display_mode, "Enabled");
	assert_string_equal(device->display_active, "Disabled");
	assert_false(device->lost);
	assert_true(device->processes_known);
	assert_int_equal(device->process_count, 0);
	assert_int_equal(device->mig_parent, -1);
	/* the fixture's defaults, for the other GPU */
	assert_string_equal(snapshot.devices[0].uuid, "GPU-00000000-0000-0000-0000-000000000000");
	assert_string_equal(snapshot.devices[0].pci_bus_id, "00000000:10:00.0");
}

static void nvml_memory_comes_from_v2_without_the_reserved_part(void **state)
{
	(void)state;
	assert_int_equal(probe_nvml("gpu\nmemory 81920 1024\nreserved 512\n"), 0);
	assert_true(snapshot.devices[0].memory_used == 1024);
	assert_true(snapshot.devices[0].memory_free == 80384);
}

static void nvml_memory_falls_back_to_v1_when_v2_fails(void **state)
{
	(void)state;
	static const char *const v2_failures[] = {
		"NOT_SUPPORTED", "FUNCTION_NOT_FOUND", "ARGUMENT_VERSION_MISMATCH", "UNKNOWN",
	};
	char fixture[256];

	for (size_t i = 0; i < sizeof(v2_failures) / sizeof(v2_failures[0]); i++) {
		snprintf(fixture, sizeof(fixture),
			 "gpu\nmemory 81920 1024\nreserved 512\nerror memory_v2 %s\n", v2_failures[i]);
		assert_int_equal(probe_nvml(fixture), 0);
		/* v1's "used" includes the reserved part */
		if (snapshot.devices[0].memory_used != 1536)
			fail_msg("v2 answering %s: used %g MiB", v2_failures[i],
				 snapshot.devices[0].memory_used);
		assert_true(snapshot.devices[0].memory_total == 81920);
		assert_true(snapshot.devices[0].memory_free == 80384);
		gpurun_snapshot_free(&snapshot);
	}
}

/* A driver after CUDA 14 answers the deprecated call DEPRECATED; the versioned one, asked with
 * the version the fake insists on, still reads the sensor. */
static void nvml_temperature_comes_from_the_versioned_call(void **state)
{
	(void)state;
	assert_int_equal(probe_nvml("gpu\ntemperature 63\nerror temperature_legacy DEPRECATED\n"), 0);
	assert_true(snapshot.devices[0].temperature == 63);
}

static void nvml_temperature_falls_back_to_the_deprecated_call(void **state)
{
	(void)state;
	static const char *const v_failures[] = {
		"NOT_SUPPORTED", "FUNCTION_NOT_FOUND", "ARGUMENT_VERSION_MISMATCH", "UNKNOWN",
	};
	char fixture[128];

	for (size_t i = 0; i < sizeof(v_failures) / sizeof(v_failures[0]); i++) {
		snprintf(fixture, sizeof(fixture), "gpu\ntemperature 47\nerror temperature_v %s\n",
			 v_failures[i]);
		assert_int_equal(probe_nvml(fixture), 0);
		if (snapshot.devices[0].temperature != 47)
			fail_msg("the versioned call answering %s: temperature %g", v_failures[i],
				 snapshot.devices[0].temperature);
		gpurun_snapshot_free(&snapshot);
	}
}

/* GPU_IS_LOST from the versioned call ends the device: the deprecated one is not asked. */
static void nvml_temperature_lost_on_the_versioned_call_stays_lost(void **state)
{
	(void)state;
	assert_int_equal(probe_nvml("gpu\ntemperature 47\nerror temperature_v GPU_IS_LOST\n"), 0);
	assert_true(snapshot.devices[0].lost);
	assert_true(isnan(snapshot.devices[0].temperature));
}

static void nvml_field_errors_make_only_those_fields_unknown(void **state)
{
	(void)state;
	assert_int_equal(probe_nvml("gpu\n"
				    "error uuid NO_PERMISSION\n"
				    "error name NOT_SUPPORTED\n"
				    "error serial NOT_SUPPORTED\n"
				    "error pci UNKNOWN\n"
				    "error memory NO_PERMISSION\n"
				    "error utilization NOT_SUPPORTED\n"
				    "error temperature NOT_SUPPORTED\n"
				    "error power NOT_SUPPORTED\n"
				    "error display_mode NOT_SUPPORTED\n"
				    "error display_active NOT_SUPPORTED\n"
				    "error processes NO_PERMISSION\n"
				    "gpu\n"
				    "util 20\n"), 0);
	assert_int_equal(snapshot.count, 2);
	assert_all_unknown_but_index(&snapshot.devices[0]);
	assert_int_equal(snapshot.devices[0].index, 0);
	assert_false(snapshot.devices[0].lost);
	/* the next GPU is untouched */
	assert_true(snapshot.devices[1].load == 0.2);
	assert_string_equal(snapshot.devices[1].name, "NVIDIA Fake GPU");
	assert_true(snapshot.devices[1].processes_known);
}

static void nvml_handle_error_leaves_the_device_unknown(void **state)
{
	(void)state;
	assert_int_equal(probe_nvml("gpu\nerror handle NO_PERMISSION\ngpu\n"), 0);
	assert_int_equal(snapshot.count, 2);
	assert_int_equal(snapshot.devices[0].index, 0);
	assert_all_unknown_but_index(&snapshot.devices[0]);
	assert_false(snapshot.devices[0].lost);
	assert_true(snapshot.devices[1].memory_total == 81920);
}

static void nvml_driver_version_error_leaves_it_empty(void **state)
{
	(void)state;
	assert_int_equal(probe_nvml("error driver NOT_SUPPORTED\ngpu\n"), 0);
	assert_string_equal(snapshot.driver_version, "");
	assert_int_equal(snapshot.count, 1);
}

static void nvml_lost_gpu_is_marked_and_the_others_are_read(void **state)
{
	(void)state;
	assert_int_equal(probe_nvml("gpu\ngpu\nlost\ngpu\nmemory 40960 1\n"), 0);
	assert_int_equal(snapshot.count, 3);
	assert_false(snapshot.devices[0].lost);
	assert_true(snapshot.devices[1].lost);
	assert_int_equal(snapshot.devices[1].index, 1);
	assert_true(isnan(snapshot.devices[1].memory_free));
	assert_false(snapshot.devices[2].lost);
	assert_true(snapshot.devices[2].memory_free == 40959);
}

static void nvml_gpu_is_lost_from_any_one_call_marks_the_device(void **state)
{
	(void)state;
	static const char *const calls[] = { "handle", "uuid", "memory_v2", "power", "processes" };
	char fixture[128];

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		snprintf(fixture, sizeof(fixture), "gpu\ngpu\nerror %s GPU_IS_LOST\n", calls[i]);
		assert_int_equal(probe_nvml(fixture), 0);
		if (!snapshot.devices[1].lost || snapshot.devices[0].lost)
			fail_msg("GPU_IS_LOST from %s did not mark exactly that device", calls[i]);
		gpurun_snapshot_free(&snapshot);
	}
}

static void nvml_init_errors_name_the_cause_and_the_library(void **state)
{
	(void)state;
	static const struct {
		const char *code, *cause;
	} cases[] = {
		{ "DRIVER_NOT_LOADED", "driver is not loaded" },
		{ "LIB_RM_VERSION_MISMATCH", "version mismatch" },
		{ "NO_PERMISSION", "permission" },
	};
	char fixture[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(fixture, sizeof(fixture), "init_error %s\ngpu\n", cases[i].code);
		assert_probe_fails(probe_nvml(fixture));
		assert_message_has("NVML: ");
		assert_message_has(cases[i].code);
		assert_message_has(cases[i].cause);
		assert_message_has(FAKE_NVML);
	}
}

static void nvml_count_error_says_the_driver_failed(void **state)
{
	(void)state;
	assert_probe_fails(probe_nvml("error count UNKNOWN\ngpu\n"));
	assert_message_has("nvmlDeviceGetCount");
	assert_message_has("UNKNOWN");
	assert_message_has(FAKE_NVML);
}

static void nvml_missing_library_is_named(void **state)
{
	(void)state;
	setenv("GPURUN_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
	assert_probe_fails(probe_nvml("gpu\n"));
	assert_message_has("NVML: /nonexistent/libnvidia-ml.so.1 not found (");
}

static void nvml_library_without_nvml_names_the_missing_symbol(void **state)
{
	(void)state;
	setenv("GPURUN_NVML_LIB", "libm.so.6", 1);
	assert_probe_fails(probe_nvml("gpu\n"));
	assert_message_has("libm.so.6");
	assert_message_has("nvmlInit_v2");
}

static void nvml_old_driver_reads_what_it_has(void **state)
{
	(void)state;
	setenv("GPURUN_NVML_LIB", OLD_FAKE_NVML, 1);
	assert_int_equal(probe_nvml("gpu\n"
				    "gpu\n"
				    "uuid GPU-aaaaaaaa-2222-3333-4444-555555555555\n"
				    "pci 00000000:3B:00.0\n"
				    "memory 16384 2048\n"
				    "reserved 256\n"
				    "util 50\n"), 0);
	assert_int_equal(snapshot.count, 2);
	const struct gpurun_device *device = &snapshot.devices[1];
	assert_string_equal(device->uuid, "GPU-aaaaaaaa-2222-3333-4444-555555555555");
	assert_true(device->memory_total == 16384);
	assert_true(device->memory_used == 2048 + 256);
	assert_true(device->memory_free == 16384 - 2048 - 256);
	/* the pre-v3 PCI call has no long bus id: built from domain, bus and device */
	assert_string_equal(device->pci_bus_id, "00000000:3B:00.0");
	/* everything optional is missing from this driver */
	assert_string_equal(device->name, "");
	assert_true(isnan(device->load));
	assert_true(isnan(device->power_draw));
	assert_false(device->processes_known);
	assert_string_equal(snapshot.driver_version, "");
	assert_false(device->lost);
}

static void nvml_reads_1024_gpus_quickly(void **state)
{
	(void)state;
	struct timespec start, end;

	use_fixture("gpus 1024\n");
	clock_gettime(CLOCK_MONOTONIC, &start);
	assert_int_equal(gpurun_probe_nvml(&snapshot, &err), 0);
	clock_gettime(CLOCK_MONOTONIC, &end);
	assert_int_equal(snapshot.count, 1024);
	for (int i = 0; i < 1024; i += 101) {
		const struct gpurun_device *device = &snapshot.devices[i];
		assert_int_equal(device->index, i);
		assert_true(device->load == ((i * 37) % 101) / 100.0);
		assert_true(device->memory_used == ((i * 53) % 97) * 800);
	}
	assert_string_equal(snapshot.devices[1000].uuid, "GPU-00000000-0000-0000-0000-0000000003e8");
	double seconds = (double)(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
	if (seconds > 1.0)
		fail_msg("1024 GPUs took %.3f s", seconds);
}

static void nvml_process_lists_are_read(void **state)
{
	(void)state;
	assert_int_equal(probe_nvml("gpu\n"
				    "process 1234 512\n"
				    "process 99999 20480\n"
				    "gpu\n"), 0);
	const struct gpurun_device *device = &snapshot.devices[0];
	assert_true(device->processes_known);
	assert_int_equal(device->process_count, 2);
	assert_int_equal(device->processes[0].pid, 1234);
	assert_true(device->processes[0].used_mib == 512);
	assert_int_equal(device->processes[1].pid, 99999);
	assert_true(device->processes[1].used_mib == 20480);
	/* another engineer's code fills these from /proc */
	assert_string_equal(device->processes[0].user, "");
	assert_string_equal(device->processes[0].command, "");
	assert_true(snapshot.devices[1].processes_known);
	assert_int_equal(snapshot.devices[1].process_count, 0);
}

static void nvml_process_starting_between_the_two_calls_is_listed(void **state)
{
	(void)state;
	assert_int_equal(probe_nvml("gpu\nprocess 100 1\nprocess_race 200 2\n"), 0);
	const struct gpurun_device *device = &snapshot.devices[0];
	assert_true(device->processes_known);
	assert_int_equal(device->process_count, 2);
	assert_int_equal(device->processes[1].pid, 200);
	assert_true(device->processes[1].used_mib == 2);
}

/* Like nvidia-smi's "No devices were found": no GPU to choose from is no GPU information. */
static void nvml_machine_without_gpus_is_no_gpu_information(void **state)
{
	(void)state;
	assert_int_equal(probe_nvml("driver 550.54.15\n"), GPURUN_EXIT_NO_GPU_INFO);
	assert_non_null(strstr(err.message, "the driver sees no GPU"));
	assert_int_equal(snapshot.count, 0);
}

/* ---- nvidia-smi -------------------------------------------------------------------------- */

static int probe_smi(const char *fixture, double timeout_s)
{
	use_fixture(fixture);
	int status = gpurun_probe_smi(timeout_s, &snapshot, &err);
	if (status == 0)
		assert_string_equal(snapshot.source, "nvidia-smi");
	return status;
}

static void assert_no_child_left(void)
{
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static void smi_reads_the_machine(void **state)
{
	(void)state;
	assert_int_equal(probe_smi(four_gpus, 10), 0);
	assert_int_equal(snapshot.count, 4);
	assert_string_equal(snapshot.driver_version, "550.54.15");
	assert_string_equal(snapshot.devices[2].name, "Tesla V100, PCIe, 32GB");
	assert_true(snapshot.devices[1].load == 1.0);
	assert_true(snapshot.devices[1].power_draw == 698.5);
	assert_true(snapshot.devices[3].memory_used == 512);
	assert_no_child_left();
}

static void smi_crlf_and_missing_final_newline_are_read(void **state)
{
	(void)state;
	char fixture[1024];

	snprintf(fixture, sizeof(fixture), "smi_crlf\nsmi_no_final_newline\n%s", four_gpus);
	assert_int_equal(probe_smi(fixture, 10), 0);
	assert_int_equal(snapshot.count, 4);
	assert_true(snapshot.devices[3].power_draw == 70.01);
}

static void smi_error_exit_is_quoted(void **state)
{
	(void)state;
	assert_probe_fails(probe_smi("smi_error 9 NVIDIA-SMI has failed because it couldn't "
				     "communicate with the NVIDIA driver.\ngpu\n", 10));
	assert_message_has("nvidia-smi: exited with status 9: \"NVIDIA-SMI has failed because "
			   "it couldn't communicate with the NVIDIA driver.\"");
	assert_no_child_left();
}

static void smi_no_devices_is_quoted(void **state)
{
	(void)state;
	assert_probe_fails(probe_smi("smi_error 6 No devices were found\n", 10));
	assert_message_has("\"No devices were found\"");
}

static void smi_lost_gpu_fails_the_snapshot_quoting_its_line(void **state)
{
	(void)state;
	/* nvidia-smi prints the good GPUs, then the lost one's error line, and exits 15 */
	assert_probe_fails(probe_smi("gpu\ngpu\nlost\ngpu\n", 10));
	assert_message_has("nvidia-smi: exited with status 15: \"Unable to determine the device "
			   "handle for GPU0000:11:00.0: GPU is lost.");
}

static void smi_version_mismatch_quotes_the_first_line(void **state)
{
	(void)state;
	assert_probe_fails(probe_smi("init_error LIB_RM_VERSION_MISMATCH\ngpu\n", 10));
	assert_message_has("nvidia-smi: exited with status 18: \"Failed to initialize NVML: "
			   "Driver/library version mismatch\"");
}

static void smi_hang_is_killed_after_the_timeout(void **state)
{
	(void)state;
	struct timespec start, end;

	clock_gettime(CLOCK_MONOTONIC, &start);
	assert_probe_fails(probe_smi("smi_hang\ngpu\n", 0.3));
	clock_gettime(CLOCK_MONOTONIC, &end);
	double seconds = (double)(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
	if (seconds < 0.3 || seconds > 2.0)
		fail_msg("took %.3f s with a 0.3 s timeout", seconds);
	assert_message_has("nvidia-smi: did not answer within 0.3 s; killed it");
	assert_no_child_left();
}

static void smi_missing_program_is_named(void **state)
{
	(void)state;
	setenv("GPURUN_NVIDIA_SMI", "/nonexistent/nvidia-smi", 1);
	assert_probe_fails(probe_smi("gpu\n", 10));
	assert_message_has("/nonexistent/nvidia-smi");
}

static void smi_not_on_path_says_so(void **state)
{
	(void)state;
	char *path = strdup(getenv("PATH") ? getenv("PATH") : "");

	unsetenv("GPURUN_NVIDIA_SMI");
	setenv("PATH", scratch, 1);
	int status = probe_smi("gpu\n", 10);
	setenv("PATH", path, 1);
	free(path);
	assert_probe_fails(status);
	assert_message_has("nvidia-smi: not found on PATH");
}

static void smi_is_searched_on_path(void **state)
{
	(void)state;
	char *path = strdup(getenv("PATH") ? getenv("PATH") : "");
	char fakes[4096];

	assert_non_null(getcwd(fakes, sizeof(fakes) - 16));
	strcat(fakes, "/build/fakes");
	unsetenv("GPURUN_NVIDIA_SMI");
	setenv("PATH", fakes, 1);
	int status = probe_smi("gpu\ngpu\n", 10);
	setenv("PATH", path, 1);
	free(path);
	assert_int_equal(status, 0);
	assert_int_equal(snapshot.count, 2);
}

/* ---- the two sources agree ------------------------------------------------------------- */

static bool same_number(double a, double b)
{
	return (isnan(a) && isnan(b)) || a == b;
}

#define SAME_TEXT(field)                                                                    \
	if (strcmp(a->field, b->field) != 0)                                                \
		fail_msg("GPU %zu " #field ": NVML \"%s\", nvidia-smi \"%s\"", i, a->field, b->field)
#define SAME_NUMBER(field)                                                                  \
	if (!same_number(a->field, b->field))                                               \
		fail_msg("GPU %zu " #field ": NVML %.17g, nvidia-smi %.17g", i, (double)a->field, \
			 (double)b->field)

/* Field by field, NaN equal to NaN. Processes are NVML's alone: the query has none. */
static void assert_same_snapshot(const struct gpurun_snapshot *nvml,
				 const struct gpurun_snapshot *smi)
{
	assert_int_equal(nvml->count, smi->count);
	assert_string_equal(nvml->driver_version, smi->driver_version);
	for (size_t i = 0; i < nvml->count; i++) {
		const struct gpurun_device *a = &nvml->devices[i], *b = &smi->devices[i];

		SAME_NUMBER(index);
		SAME_NUMBER(vendor);
		SAME_TEXT(uuid);
		SAME_TEXT(name);
		SAME_TEXT(serial);
		SAME_TEXT(pci_bus_id);
		SAME_NUMBER(load);
		SAME_NUMBER(memory_total);
		SAME_NUMBER(memory_used);
		SAME_NUMBER(memory_free);
		SAME_NUMBER(temperature);
		SAME_NUMBER(power_draw);
		SAME_TEXT(display_mode);
		SAME_TEXT(display_active);
		SAME_NUMBER(lost);
		SAME_NUMBER(mig_parent);
		SAME_NUMBER(mig_instance);
	}
}

static char *read_fixture(const char *name)
{
	char path[256];
	FILE *file;
	static char text[65536];
	size_t length;

	snprintf(path, sizeof(path), "tests/fixtures/%s", name);
	file = fopen(path, "r");
	if (!file)
		fail_msg("cannot read %s", path);
	length = fread(text, 1, sizeof(text) - 1, file);
	fclose(file);
	text[length] = '\0';
	return text;
}

/* Drops the GPUs that make nvidia-smi fail as a whole (a lost GPU, or one without a handle):
 * for those the two sources rightly differ. */
static void drop_failing_gpus(char *text)
{
	char *out = text, *block = text;
	bool block_fails = false;

	for (char *line = text; *line;) {
		char *end = strchr(line, '\n');
		size_t length = end ? (size_t)(end - line + 1) : strlen(line);

		if (strncmp(line, "gpu\n", 4) == 0 || strcmp(line, "gpu") == 0) {
			if (block_fails)
				out = block;
			block = out;
			block_fails = false;
		}
		if (strncmp(line, "lost", 4) == 0 || strncmp(line, "error handle ", 13) == 0)
			block_fails = true;
		memmove(out, line, length);
		out += length;
		line += length;
	}
	if (block_fails)
		out = block;
	*out = '\0';
}

static void assert_sources_agree(const char *fixture)
{
	use_fixture(fixture);
	assert_int_equal(gpurun_probe_nvml(&snapshot, &err), 0);
	if (gpurun_probe_smi(10, &other, &err) != 0)
		fail_msg("nvidia-smi: %s", err.message);
	assert_same_snapshot(&snapshot, &other);
}

static void sources_agree_on_four_gpus(void **state)
{
	(void)state;
	assert_sources_agree(read_fixture("four.fixture"));
}

static void sources_agree_on_eight_gpus(void **state)
{
	(void)state;
	assert_sources_agree(read_fixture("eight.fixture"));
}

static void sources_agree_on_field_errors(void **state)
{
	(void)state;
	char *errors = read_fixture("errors.fixture");

	drop_failing_gpus(errors);
	assert_null(strstr(errors, "lost"));
	assert_non_null(strstr(errors, "error memory_v2"));
	assert_sources_agree(errors);
	assert_int_equal(snapshot.count, 3);
}

/* ---- choosing the source ----------------------------------------------------------------- */

static int probe(enum gpurun_source source)
{
	struct gpurun_request request;

	memset(&request, 0, sizeof(request));
	request.source = source;
	request.smi_timeout_s = 10;
	return gpurun_probe(&request, &snapshot, &err);
}

static void auto_prefers_nvml(void **state)
{
	(void)state;
	use_fixture(four_gpus);
	assert_int_equal(probe(GPURUN_SOURCE_AUTO), 0);
	assert_string_equal(snapshot.source, "nvml");
	assert_int_equal(snapshot.count, 4);
}

static void auto_falls_back_to_smi_without_nvml(void **state)
{
	(void)state;
	setenv("GPURUN_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
	use_fixture(four_gpus);
	assert_int_equal(probe(GPURUN_SOURCE_AUTO), 0);
	assert_string_equal(snapshot.source, "nvidia-smi");
	assert_int_equal(snapshot.count, 4);
}

static void auto_without_either_names_both(void **state)
{
	(void)state;
	setenv("GPURUN_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
	setenv("GPURUN_NVIDIA_SMI", "/nonexistent/nvidia-smi", 1);
	use_fixture(four_gpus);
	assert_probe_fails(probe(GPURUN_SOURCE_AUTO));
	assert_message_has("no GPU information: NVML: /nonexistent/libnvidia-ml.so.1 not found (");
	assert_message_has("; nvidia-smi: cannot run /nonexistent/nvidia-smi");
}

static void auto_reports_the_driver_problem_nvml_saw(void **state)
{
	(void)state;
	use_fixture("init_error DRIVER_NOT_LOADED\n"
		    "smi_error 9 NVIDIA-SMI has failed because it couldn't communicate with the "
		    "NVIDIA driver.\n");
	assert_probe_fails(probe(GPURUN_SOURCE_AUTO));
	assert_message_has("NVML: the NVIDIA driver is not loaded");
	assert_message_has("nvidia-smi: exited with status 9");
}

static void source_smi_does_not_use_nvml(void **state)
{
	(void)state;
	use_fixture(four_gpus);
	assert_int_equal(probe(GPURUN_SOURCE_SMI), 0);
	assert_string_equal(snapshot.source, "nvidia-smi");
}

static void source_nvml_does_not_fall_back(void **state)
{
	(void)state;
	setenv("GPURUN_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
	use_fixture(four_gpus);
	assert_probe_fails(probe(GPURUN_SOURCE_NVML));
	assert_message_has("no GPU information: NVML: ");
	assert_message_lacks("nvidia-smi");
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, start_test, end_test)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(nvml_reads_every_field),
		TEST(nvml_memory_comes_from_v2_without_the_reserved_part),
		TEST(nvml_memory_falls_back_to_v1_when_v2_fails),
		TEST(nvml_temperature_comes_from_the_versioned_call),
		TEST(nvml_temperature_falls_back_to_the_deprecated_call),
		TEST(nvml_temperature_lost_on_the_versioned_call_stays_lost),
		TEST(nvml_field_errors_make_only_those_fields_unknown),
		TEST(nvml_handle_error_leaves_the_device_unknown),
		TEST(nvml_driver_version_error_leaves_it_empty),
		TEST(nvml_lost_gpu_is_marked_and_the_others_are_read),
		TEST(nvml_gpu_is_lost_from_any_one_call_marks_the_device),
		TEST(nvml_init_errors_name_the_cause_and_the_library),
		TEST(nvml_count_error_says_the_driver_failed),
		TEST(nvml_missing_library_is_named),
		TEST(nvml_library_without_nvml_names_the_missing_symbol),
		TEST(nvml_old_driver_reads_what_it_has),
		TEST(nvml_reads_1024_gpus_quickly),
		TEST(nvml_process_lists_are_read),
		TEST(nvml_process_starting_between_the_two_calls_is_listed),
		TEST(nvml_machine_without_gpus_is_no_gpu_information),
		TEST(smi_reads_the_machine),
		TEST(smi_crlf_and_missing_final_newline_are_read),
		TEST(smi_error_exit_is_quoted),
		TEST(smi_no_devices_is_quoted),
		TEST(smi_lost_gpu_fails_the_snapshot_quoting_its_line),
		TEST(smi_version_mismatch_quotes_the_first_line),
		TEST(smi_hang_is_killed_after_the_timeout),
		TEST(smi_missing_program_is_named),
		TEST(smi_not_on_path_says_so),
		TEST(smi_is_searched_on_path),
		TEST(sources_agree_on_four_gpus),
		TEST(sources_agree_on_eight_gpus),
		TEST(sources_agree_on_field_errors),
		TEST(auto_prefers_nvml),
		TEST(auto_falls_back_to_smi_without_nvml),
		TEST(auto_without_either_names_both),
		TEST(auto_reports_the_driver_problem_nvml_saw),
		TEST(source_smi_does_not_use_nvml),
		TEST(source_nvml_does_not_fall_back),
	};

	return cmocka_run_group_tests_name("probe", tests, start_group, end_group);
}
