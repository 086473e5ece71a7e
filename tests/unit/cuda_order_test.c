/* cuda_order_test: gpurun_cuda_order_read against the fake libcuda (the build's fakes/, run from
 * the repository root): the driver's own order, a machine without the driver, and out of memory
 * while the answer is read, which is an error and never an answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "failing_allocations.h"
#include "fixture_file.h"
#include "unit.h"

#define TIMEOUT_S 30.0
/* More than the first 4 KiB of the report: its buffer grows at least once. */
#define MANY_GPUS 200

static char library[4096];
static struct gpurun_cuda_order order;

static int start_group(void **state)
{
	const char *build = getenv("GPURUN_BUILD");

	(void)state;
	snprintf(library, sizeof(library), "%s/fakes/libcuda.so.1", build && *build ? build : "build");
	if (access(library, R_OK) != 0) {
		fprintf(stderr, "cuda_order_test: %s is missing: run `make check` from the repository "
			"root\n", library);
		return -1;
	}
	if (fixture_file_start() != 0)
		return -1;
	setenv("GPURUN_CUDA_LIB", library, 1);
	unsetenv("CUDA_DEVICE_ORDER");
	return 0;
}

static int end_group(void **state)
{
	(void)state;
	fixture_file_end();
	return 0;
}

static int cleanup(void **state)
{
	(void)state;
	fail_at = -1;
	gpurun_cuda_order_free(&order);
	setenv("GPURUN_CUDA_LIB", library, 1);
	return 0;
}

/* "0,1,...,count-1" */
static void write_indices(char *text, size_t size, size_t count)
{
	size_t used = 0;

	text[0] = '\0';
	for (size_t i = 0; i < count && used < size; i++)
		used += (size_t)snprintf(text + used, size - used, "%s%zu", i ? "," : "", i);
	assert_true(used < size);
}

static void driver_reports_its_own_order(void **state)
{
	(void)state;
	use_fixture("gpu\ngpu\ngpu\ncuda_order 2 0\n");
	assert_int_equal(gpurun_cuda_order_read("0,1", TIMEOUT_S, &order), 0);
	assert_true(order.asked);
	assert_true(order.answered);
	/* CUDA's 0 and 1 are the fastest two: PCI 2, then PCI 0. */
	assert_int_equal(order.count, 2);
	assert_string_equal(order.uuids[0], "GPU-00000000-0000-0000-0000-000000000002");
	assert_string_equal(order.uuids[1], "GPU-00000000-0000-0000-0000-000000000000");
}

static void a_value_that_leaves_nothing_is_an_answer(void **state)
{
	(void)state;
	use_fixture("gpu\ngpu\n");
	assert_int_equal(gpurun_cuda_order_read("-1", TIMEOUT_S, &order), 0);
	assert_true(order.answered);
	assert_int_equal(order.count, 0);
}

static void no_driver_is_no_answer(void **state)
{
	(void)state;
	use_fixture("gpu\n");
	setenv("GPURUN_CUDA_LIB", "/nonexistent/libcuda.so.1", 1);
	assert_int_equal(gpurun_cuda_order_read("0", TIMEOUT_S, &order), 0);
	assert_true(order.asked);
	assert_false(order.answered);
	assert_null(order.uuids);
	assert_non_null(strstr(order.failure, "not found (no CUDA driver)"));
}

/* Every allocation failing in turn: out of memory, said as such, and no half an answer; then
 * with none failing, the whole answer. */
static void out_of_memory_is_an_error_not_an_answer(void **state)
{
	char fixture[64], visible[MANY_GPUS * 4];
	int status;

	(void)state;
	snprintf(fixture, sizeof(fixture), "gpus %d\n", MANY_GPUS);
	use_fixture(fixture);
	write_indices(visible, sizeof(visible), MANY_GPUS);
	for (fail_at = 0;; fail_at++) {
		allocations = 0;
		allocation_failed = false;
		status = gpurun_cuda_order_read(visible, TIMEOUT_S, &order);
		if (!allocation_failed)
			break;
		if (status != GPURUN_EXIT_SOFTWARE)
			fail_msg("allocation %ld failed, and the status is %d (%s)", fail_at, status,
				 order.failure);
		assert_string_equal(order.failure, "out of memory");
		assert_false(order.answered);
		assert_null(order.uuids);
		assert_int_equal(order.count, 0);
	}
	assert_int_equal(status, 0);
	assert_true(order.answered);
	assert_int_equal(order.count, MANY_GPUS);
	/* The report's buffer, its growth, the list of UUIDs. */
	assert_true(fail_at >= 3);
}

/* Through the mask, which asks the driver for integers on GPUs of two models: out of memory
 * anywhere fails it (exit 70), and an answer lost to it is not kept as the driver's word (a
 * later look asks again). */
static void out_of_memory_asking_the_driver_fails_the_mask(void **state)
{
	static const char *const names[] = { "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3" };
	struct gpurun_device devices[2];
	struct gpurun_snapshot snapshot = { .devices = devices, .count = 2 };
	struct gpurun_inherited inherited = { .cuda_visible_devices = "0" };
	struct gpurun_mask mask = { 0 };
	struct gpurun_error error;
	int status;

	(void)state;
	use_fixture("gpu\ngpu\ncuda_order 1\n");
	for (size_t i = 0; i < 2; i++) {
		gpurun_device_init_unknown(&devices[i]);
		devices[i].index = (int)i;
		snprintf(devices[i].uuid, sizeof(devices[i].uuid),
			 "GPU-00000000-0000-0000-0000-00000000000%zu", i);
		snprintf(devices[i].name, sizeof(devices[i].name), "%s", names[i]);
	}
	for (fail_at = 0;; fail_at++) {
		allocations = 0;
		allocation_failed = false;
		memset(&error, 0, sizeof(error));
		gpurun_cuda_order_free(&order);
		status = gpurun_mask_apply(&snapshot, &inherited, &order, &mask, &error);
		if (!allocation_failed)
			break;
		if (status != GPURUN_EXIT_SOFTWARE)
			fail_msg("allocation %ld failed, and the status is %d:\n%s", fail_at, status,
				 mask.rules);
		assert_string_equal(error.message, "out of memory");
		assert_true(!order.asked || order.answered);
	}
	assert_int_equal(status, 0);
	/* CUDA's 0 is the fastest GPU: PCI 1. */
	assert_false(mask.allowed[0]);
	assert_true(mask.allowed[1]);
	assert_non_null(strstr(mask.rules, "CUDA's order as the CUDA driver reports it"));
	gpurun_mask_free(&mask);
}

#define TEST(name) cmocka_unit_test_teardown(name, cleanup)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(driver_reports_its_own_order),
		TEST(a_value_that_leaves_nothing_is_an_answer),
		TEST(no_driver_is_no_answer),
		TEST(out_of_memory_is_an_error_not_an_answer),
		TEST(out_of_memory_asking_the_driver_fails_the_mask),
	};

	return cmocka_run_group_tests(tests, start_group, end_group);
}
