/* process_test: who uses each GPU. AMD processes and every process's user and command line
 * from the /proc trees in tests/fixtures/amd; NVML process lists through the fake NVML
 * (build/fakes), as they grow between calls, fail, or name PIDs of another PID namespace. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture_file.h"
#include "unit.h"

#define TREES "tests/fixtures/amd"
#define FAKE_NVML "build/fakes/libnvidia-ml.so.1"

static struct gpurun_snapshot snapshot;
static struct gpurun_error err;

static int start_group(void **state)
{
	(void)state;
	if (access(FAKE_NVML, R_OK) != 0 || access(TREES "/four/proc", R_OK) != 0) {
		fprintf(stderr, "process_test: run from the repository root after make (%s)\n",
			FAKE_NVML);
		return -1;
	}
	if (fixture_file_start() != 0)
		return -1;
	setenv("GPURUN_NVML_LIB", FAKE_NVML, 1);
	return 0;
}

static int end_group(void **state)
{
	(void)state;
	fixture_file_end();
	return 0;
}

static int free_snapshot(void **state)
{
	(void)state;
	gpurun_snapshot_free(&snapshot);
	unsetenv("GPURUN_SYSFS_ROOT");
	return 0;
}

static void use_root(const char *root)
{
	setenv("GPURUN_SYSFS_ROOT", root, 1);
}

static void collect(void)
{
	memset(&err, 0, sizeof(err));
	assert_int_equal(gpurun_processes_collect(&snapshot, &err), 0);
}

static void assert_process(const struct gpurun_process *process, unsigned pid, double mib,
			   const char *user, const char *command)
{
	assert_int_equal(process->pid, pid);
	if (isnan(mib))
		assert_true(isnan(process->used_mib));
	else if (process->used_mib != mib)
		fail_msg("pid %u: %g MiB, wanted %g", pid, process->used_mib, mib);
	assert_string_equal(process->user, user);
	assert_string_equal(process->command, command);
}

/* ---- AMD: /proc/PID/fdinfo -------------------------------------------------------------------- */

static void amd_processes_from_fdinfo(void **state)
{
	(void)state;
	use_root(TREES "/four");
	assert_int_equal(gpurun_probe_amdgpu(&snapshot, &err), 0);
	collect();
	for (size_t i = 0; i < snapshot.count; i++)
		assert_true(snapshot.devices[i].processes_known);

	/* Two descriptors of one DRM client count once. */
	assert_int_equal(snapshot.devices[0].process_count, 1);
	assert_process(&snapshot.devices[0].processes[0], 4242, 58 * 1024, "root",
		       "python3 train.py --lr 3e-4");
	/* One process on two GPUs; a uid without a name; no command line, so its name. */
	assert_int_equal(snapshot.devices[1].process_count, 1);
	assert_process(&snapshot.devices[1].processes[0], 5151, 512, "4242", "[worker]");
	/* Two clients of one process on one GPU, in MiB and in bytes, add up. */
	assert_int_equal(snapshot.devices[2].process_count, 1);
	assert_process(&snapshot.devices[2].processes[0], 5151, 39000 + 900, "4242", "[worker]");
	/* Nothing on the fourth: not the unreadable process, not the i915 client. */
	assert_int_equal(snapshot.devices[3].process_count, 0);
}

static void amd_without_proc_stays_unknown(void **state)
{
	(void)state;
	use_root(TREES "/one");         /* sys only */
	assert_int_equal(gpurun_probe_amdgpu(&snapshot, &err), 0);
	collect();
	assert_false(snapshot.devices[0].processes_known);
	assert_int_equal(snapshot.devices[0].process_count, 0);
}

/* ---- NVML processes: host PIDs ------------------------------------------------------------------ */

/* four.fixture's NVIDIA processes, as the NVML probe leaves them: pid and MiB only. */
static void nvidia_snapshot(void)
{
	static const unsigned pids[] = { 48211, 48377, 49102, 49233 };

	assert_int_equal(gpurun_snapshot_init(&snapshot, 4, &err), 0);
	for (size_t i = 0; i < 4; i++) {
		struct gpurun_device *device = &snapshot.devices[i];

		device->index = (int)i;
		device->processes = calloc(1, sizeof(*device->processes));
		assert_non_null(device->processes);
		device->processes[0].pid = pids[i];
		device->processes[0].used_mib = 1000.0 * (double)(i + 1);
		device->process_count = 1;
		device->processes_known = true;
	}
}

static void host_pids_are_described_where_visible(void **state)
{
	(void)state;
	use_root(TREES "/host-proc");
	nvidia_snapshot();
	collect();
	assert_process(&snapshot.devices[0].processes[0], 48211, 1000, "root",
		       "python train.py --epochs 90");
	assert_process(&snapshot.devices[1].processes[0], 48377, 2000, "4242", "[nccl-worker]");
	/* Exited (no /proc entry), and unreadable status: unknown, not an error. */
	assert_process(&snapshot.devices[2].processes[0], 49102, 3000, "", "");
	assert_process(&snapshot.devices[3].processes[0], 49233, 4000, "", "");
}

static void host_pids_in_a_container_are_unknown(void **state)
{
	(void)state;
	/* The container's /proc has a pid 48211 too, but it is another process. */
	use_root(TREES "/container-proc");
	nvidia_snapshot();
	collect();
	for (size_t i = 0; i < 4; i++) {
		assert_string_equal(snapshot.devices[i].processes[0].user, "");
		assert_string_equal(snapshot.devices[i].processes[0].command, "");
	}
}

static void no_proc_at_all_is_unknown(void **state)
{
	(void)state;
	use_root("/nonexistent-root");
	nvidia_snapshot();
	collect();
	assert_string_equal(snapshot.devices[0].processes[0].user, "");
}

static void this_very_process_on_the_real_proc(void **state)
{
	(void)state;
	unsetenv("GPURUN_SYSFS_ROOT");
	nvidia_snapshot();
	snapshot.devices[0].processes[0].pid = (unsigned)getpid();
	collect();
	/* In a container the host PID namespace is not ours, and NVML's PIDs mean nothing here. */
	if (snapshot.devices[0].processes[0].command[0] == '\0')
		skip();
	assert_non_null(strstr(snapshot.devices[0].processes[0].command, "process_test"));
	assert_true(snapshot.devices[0].processes[0].user[0] != '\0');
}

/* ---- NVML process lists through the fake ------------------------------------------------------ */

static void nvml_lists_then_collect(const char *fixture)
{
	use_fixture(fixture);
	use_root(TREES "/host-proc");
	assert_int_equal(gpurun_probe_nvml(&snapshot, &err), 0);
	collect();
}

static void nvml_process_appearing_between_the_calls(void **state)
{
	(void)state;
	nvml_lists_then_collect("gpu\nprocess 48211 100\nprocess_race 48377 200\n");
	assert_int_equal(snapshot.devices[0].process_count, 2);
	assert_process(&snapshot.devices[0].processes[0], 48211, 100, "root",
		       "python train.py --epochs 90");
	assert_process(&snapshot.devices[0].processes[1], 48377, 200, "4242", "[nccl-worker]");
}

static void nvml_list_growing_a_little(void **state)
{
	(void)state;
	/* 1 at the first call, 4 at the second: within the room asked for. */
	nvml_lists_then_collect("gpu\nprocess 48211 100\nprocess_growth 3\n");
	assert_true(snapshot.devices[0].processes_known);
	assert_int_equal(snapshot.devices[0].process_count, 4);
	assert_int_equal(snapshot.devices[0].processes[3].pid, 900002);
}

static void nvml_list_growing_past_the_room_is_asked_again(void **state)
{
	(void)state;
	/* 1, 11, 21, 31, 41 processes at successive calls: each answer is too small until the
	 * fifth call, which has room for 42. */
	nvml_lists_then_collect("gpu\nprocess 48211 100\nprocess_growth 10\n");
	assert_true(snapshot.devices[0].processes_known);
	assert_int_equal(snapshot.devices[0].process_count, 41);
	assert_process(&snapshot.devices[0].processes[0], 48211, 100, "root",
		       "python train.py --epochs 90");
	assert_int_equal(snapshot.devices[0].processes[40].pid, 900039);
}

static void nvml_list_that_never_settles_is_unknown(void **state)
{
	(void)state;
	nvml_lists_then_collect("gpu\nprocess 48211 100\nprocess_growth 1000\nutil 7\ngpu\n");
	assert_false(snapshot.devices[0].processes_known);
	assert_int_equal(snapshot.devices[0].process_count, 0);
	assert_true(snapshot.devices[0].load == 0.07);     /* the rest of the GPU is still read */
	assert_true(snapshot.devices[1].processes_known);
}

static void nvml_list_errors_leave_the_list_unknown(void **state)
{
	(void)state;
	nvml_lists_then_collect("gpu\nprocess 48211 100\nerror processes NO_PERMISSION\n"
				"gpu\nprocess 48377 5\n");
	assert_false(snapshot.devices[0].processes_known);
	assert_true(snapshot.devices[1].processes_known);
	assert_process(&snapshot.devices[1].processes[0], 48377, 5, "4242", "[nccl-worker]");
}

static void nvml_pids_from_a_container(void **state)
{
	(void)state;
	use_fixture("gpu\nprocess 48211 100\n");
	use_root(TREES "/container-proc");
	assert_int_equal(gpurun_probe_nvml(&snapshot, &err), 0);
	collect();
	assert_process(&snapshot.devices[0].processes[0], 48211, 100, "", "");
}

#define TEST(f) cmocka_unit_test_teardown(f, free_snapshot)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(amd_processes_from_fdinfo),
		TEST(amd_without_proc_stays_unknown),
		TEST(host_pids_are_described_where_visible),
		TEST(host_pids_in_a_container_are_unknown),
		TEST(no_proc_at_all_is_unknown),
		TEST(this_very_process_on_the_real_proc),
		TEST(nvml_process_appearing_between_the_calls),
		TEST(nvml_list_growing_a_little),
		TEST(nvml_list_growing_past_the_room_is_asked_again),
		TEST(nvml_list_that_never_settles_is_unknown),
		TEST(nvml_list_errors_leave_the_list_unknown),
		TEST(nvml_pids_from_a_container),
	};

	return cmocka_run_group_tests(tests, start_group, end_group);
}
