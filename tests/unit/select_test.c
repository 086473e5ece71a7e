/* select_test: GPUtil's availability rules at their edges, the orders and their stability,
 * exclusion, lost and leased GPUs, all on literal snapshots. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#define MAX_GPUS 1024

static struct gpurun_request request;
static struct gpurun_device devices[MAX_GPUS];
static struct gpurun_snapshot snapshot = { .devices = devices };
static size_t candidates[MAX_GPUS];

static int reset(void **state)
{
	(void)state;
	gpurun_request_init(&request);
	snapshot.count = 0;
	return 0;
}

static int free_request(void **state)
{
	(void)state;
	gpurun_request_free(&request);
	return 0;
}

/* An idle 1000 MiB GPU; tests change what they are about. */
static struct gpurun_device *add_gpu(int index)
{
	struct gpurun_device *gpu = &devices[snapshot.count++];

	gpurun_device_init_unknown(gpu);
	gpu->index = index;
	snprintf(gpu->uuid, sizeof(gpu->uuid), "GPU-%08d-1111-2222-3333-444444444444", index);
	gpu->load = 0;
	gpu->memory_total = 1000;
	gpu->memory_used = 0;
	gpu->memory_free = 1000;
	return gpu;
}

static void set_memory_used(struct gpurun_device *gpu, double used)
{
	gpu->memory_used = used;
	gpu->memory_free = gpu->memory_total - used;
}

static void assert_reason(const struct gpurun_device *gpu, const char *expected)
{
	char reason[128];

	assert_int_equal(gpurun_unavailable_reason(gpu, &request, reason, sizeof(reason)), 1);
	assert_string_equal(reason, expected);
	assert_false(gpurun_device_available(gpu, &request));
}

static void assert_available(const struct gpurun_device *gpu)
{
	char reason[128] = "untouched";

	if (gpurun_unavailable_reason(gpu, &request, reason, sizeof(reason)) != 0)
		fail_msg("not available: %s", reason);
	assert_string_equal(reason, "");
	assert_true(gpurun_device_available(gpu, &request));
}

static void assert_selected(const size_t *expected, size_t count)
{
	size_t got = gpurun_select(&snapshot, NULL, &request, candidates);

	assert_int_equal(got, count);
	for (size_t i = 0; i < count; i++)
		if (candidates[i] != expected[i])
			fail_msg("position %zu holds device %zu, expected %zu", i, candidates[i],
				 expected[i]);
}

#define SELECTED(...)                                                                     \
	do {                                                                              \
		const size_t expected[] = { __VA_ARGS__ };                                \
		assert_selected(expected, sizeof(expected) / sizeof(expected[0]));        \
	} while (0)

/* ---- load ------------------------------------------------------------------------------------ */

static void idle_gpu_is_available(void **state)
{
	(void)state;
	assert_available(add_gpu(0));
}

static void load_exactly_at_max_is_excluded(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->load = 0.5;
	assert_reason(gpu, "load 50% is not below 50%");
}

static void load_just_below_max_is_available(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->load = 0.499;
	assert_available(gpu);
}

static void load_above_max_names_both(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->load = 0.85;
	assert_reason(gpu, "load 85% is not below 50%");
}

static void max_load_one_still_excludes_full_load(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	request.max_load = 1.0;
	gpu->load = 1.0;
	assert_reason(gpu, "load 100% is not below 100%");
	gpu->load = 0.99;
	assert_available(gpu);
}

static void nan_load_is_excluded_by_default(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->load = NAN;
	assert_reason(gpu, "load unknown (see --include-nan)");
}

static void nan_load_is_available_with_include_nan(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->load = NAN;
	request.include_nan = true;
	assert_available(gpu);
}

static void include_nan_does_not_relax_a_known_load(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->load = 0.7;
	request.include_nan = true;
	assert_reason(gpu, "load 70% is not below 50%");
}

/* ---- memory --------------------------------------------------------------------------------- */

static void memory_exactly_at_max_is_excluded(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	set_memory_used(gpu, 500);
	assert_reason(gpu, "memory 50% used is not below 50%");
}

static void memory_just_below_max_is_available(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	set_memory_used(gpu, 499);
	assert_available(gpu);
}

static void memory_above_max_names_both(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	set_memory_used(gpu, 730);
	assert_reason(gpu, "memory 73% used is not below 50%");
}

static void max_memory_one_still_excludes_full_memory(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	request.max_memory = 1.0;
	request.min_free_mib = 0;
	set_memory_used(gpu, 1000);
	assert_reason(gpu, "memory 100% used is not below 100%");
}

static void nan_memory_is_excluded_by_default(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->memory_used = NAN;
	assert_reason(gpu, "memory use unknown (see --include-nan)");
}

static void nan_memory_is_available_with_include_nan(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->memory_used = NAN;
	request.include_nan = true;
	assert_available(gpu);
}

/* GPUtil divides by zero here; gpurun treats the utilization as unknown. */
static void zero_total_memory_is_unknown_memory(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->memory_total = 0;
	gpu->memory_used = 0;
	gpu->memory_free = 0;
	assert_reason(gpu, "memory use unknown (see --include-nan)");
	request.include_nan = true;
	assert_available(gpu);
}

/* ---- free memory ---------------------------------------------------------------------------- */

static void nan_free_memory_is_always_excluded(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->memory_free = NAN;
	request.include_nan = true;
	request.min_free_mib = 0;
	assert_reason(gpu, "free memory unknown");
}

static void free_memory_equal_to_min_is_available(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	request.min_free_mib = 1000;
	assert_available(gpu);
}

static void free_memory_below_min_is_excluded(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->memory_total = 24000;
	set_memory_used(gpu, 22000);
	request.max_memory = 1;
	request.min_free_mib = 20480;
	assert_reason(gpu, "free 2000 MiB is below 20480 MiB");
}

/* ---- exclusion, lost, leased ---------------------------------------------------------------- */

static void excluded_by_index(void **state)
{
	(void)state;
	add_gpu(0);
	add_gpu(1);
	add_gpu(2);
	request.exclude = strdup("1");
	SELECTED(0, 2);
	assert_reason(&devices[1], "excluded");
}

static void excluded_by_uuid(void **state)
{
	(void)state;
	add_gpu(0);
	add_gpu(1);
	add_gpu(2);
	request.exclude = strdup("GPU-00000002-1111-2222-3333-444444444444");
	SELECTED(0, 1);
}

static void excluded_by_index_and_uuid(void **state)
{
	(void)state;
	add_gpu(0);
	add_gpu(1);
	add_gpu(2);
	add_gpu(3);
	request.exclude = strdup("3,GPU-00000000-1111-2222-3333-444444444444");
	SELECTED(1, 2);
}

static void exclusion_by_index_is_numeric(void **state)
{
	(void)state;
	add_gpu(0);
	add_gpu(10);
	request.exclude = strdup("010");
	SELECTED(0);
}

static void exclusion_by_uuid_prefix_in_any_case(void **state)
{
	(void)state;
	add_gpu(0);
	add_gpu(1);
	add_gpu(2);
	request.exclude = strdup("GPU-00000001");
	SELECTED(0, 2);
	free(request.exclude);
	request.exclude = strdup("gpu-00000002-1111-2222-3333-444444444444");
	SELECTED(0, 1);
	free(request.exclude);
	/* The beginning of several UUIDs excludes them all: more than meant is the safe side. */
	request.exclude = strdup("GPU-0000000");
	assert_int_equal(gpurun_select(&snapshot, NULL, &request, candidates), 0);
}

static void lost_gpu_is_excluded(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->lost = true;
	assert_reason(gpu, "lost (GPU_IS_LOST)");
}

static void mig_gpu_is_never_chosen_itself(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->mig_enabled = true;
	assert_reason(gpu, "MIG enabled: its MIG instances are chosen instead");
	gpu->mig_mode_unknown = true;
	assert_reason(gpu, "MIG mode unknown: it may be split, so only MIG instances NVML lists "
			   "can be chosen");
}

static void mig_instance_without_uuid_is_excluded(void **state)
{
	struct gpurun_device *instance = add_gpu(1);

	(void)state;
	instance->mig_parent = 0;
	strcpy(instance->uuid, "MIG-3c9f0a41-0e8a-5a5b-b7f3-1f7e3e0d2a11");
	assert_available(instance);
	instance->uuid[0] = '\0';
	assert_reason(instance, "MIG instance without a UUID: CUDA could not be told which instance");
}

static void leased_gpu_is_excluded(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->leased = true;
	gpu->holder.pid = 123;
	strcpy(gpu->holder.user, "alice");
	assert_reason(gpu, "leased by pid 123 (alice)");
}

static void leased_by_unknown_user(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->leased = true;
	gpu->holder.pid = 77;
	assert_reason(gpu, "leased by pid 77");
}

static void reason_buffer_may_be_null(void **state)
{
	struct gpurun_device *gpu = add_gpu(0);

	(void)state;
	gpu->lost = true;
	assert_int_equal(gpurun_unavailable_reason(gpu, &request, NULL, 0), 1);
}

/* ---- select: filtering ---------------------------------------------------------------------- */

static void select_returns_every_available_gpu(void **state)
{
	(void)state;
	add_gpu(0);
	add_gpu(1)->load = 0.9;
	add_gpu(2);
	request.limit = 5;
	SELECTED(0, 2);
}

static void select_with_nothing_available(void **state)
{
	(void)state;
	add_gpu(0)->load = 0.9;
	assert_int_equal(gpurun_select(&snapshot, NULL, &request, candidates), 0);
}

static void select_honours_allowed(void **state)
{
	const bool allowed[] = { true, false, true, false };

	(void)state;
	add_gpu(0);
	add_gpu(1);
	add_gpu(2);
	add_gpu(3)->load = 0.9;
	assert_int_equal(gpurun_select(&snapshot, allowed, &request, candidates), 2);
	assert_int_equal(candidates[0], 0);
	assert_int_equal(candidates[1], 2);
}

/* ---- select: orders ------------------------------------------------------------------------- */

static void order_first_is_ascending_index(void **state)
{
	(void)state;
	add_gpu(2);
	add_gpu(0);
	add_gpu(1);
	SELECTED(1, 2, 0);
}

static void order_first_ties_keep_snapshot_order(void **state)
{
	(void)state;
	add_gpu(1);
	add_gpu(0);
	add_gpu(0);
	SELECTED(1, 2, 0);
}

static void order_last_is_descending_index(void **state)
{
	(void)state;
	add_gpu(0);
	add_gpu(2);
	add_gpu(1);
	request.order = GPURUN_ORDER_LAST;
	SELECTED(1, 2, 0);
}

static void order_last_ties_keep_snapshot_order(void **state)
{
	(void)state;
	add_gpu(0);
	add_gpu(1);
	add_gpu(1);
	request.order = GPURUN_ORDER_LAST;
	SELECTED(1, 2, 0);
}

static void order_load_ascending_nan_last(void **state)
{
	(void)state;
	add_gpu(0)->load = NAN;
	add_gpu(1)->load = 0.3;
	add_gpu(2)->load = 0.1;
	add_gpu(3)->load = 0.2;
	request.include_nan = true;
	request.order = GPURUN_ORDER_LOAD;
	SELECTED(2, 3, 1, 0);
}

static void order_load_ties_keep_index_order(void **state)
{
	(void)state;
	add_gpu(0)->load = 0.2;
	add_gpu(1)->load = NAN;
	add_gpu(2)->load = 0.1;
	add_gpu(3)->load = 0.2;
	add_gpu(4)->load = NAN;
	add_gpu(5)->load = 0.1;
	request.include_nan = true;
	request.order = GPURUN_ORDER_LOAD;
	SELECTED(2, 5, 0, 3, 1, 4);
}

static void order_memory_ascending_nan_last(void **state)
{
	(void)state;
	add_gpu(0)->memory_total = 0;
	set_memory_used(add_gpu(1), 400);
	set_memory_used(add_gpu(2), 100);
	request.include_nan = true;
	request.order = GPURUN_ORDER_MEMORY;
	SELECTED(2, 1, 0);
}

/* Relative use, not MiB: 100 of 1000 (10 %) goes before 100 of 400 (25 %). */
static void order_memory_is_relative(void **state)
{
	struct gpurun_device *small;

	(void)state;
	small = add_gpu(0);
	small->memory_total = 400;
	set_memory_used(small, 100);
	set_memory_used(add_gpu(1), 100);
	request.order = GPURUN_ORDER_MEMORY;
	SELECTED(1, 0);
}

static void order_memory_ties_keep_index_order(void **state)
{
	(void)state;
	set_memory_used(add_gpu(0), 300);
	set_memory_used(add_gpu(1), 100);
	set_memory_used(add_gpu(2), 300);
	set_memory_used(add_gpu(3), 100);
	request.order = GPURUN_ORDER_MEMORY;
	SELECTED(1, 3, 0, 2);
}

static void order_free_most_free_first(void **state)
{
	struct gpurun_device *big;

	(void)state;
	set_memory_used(add_gpu(0), 400);
	big = add_gpu(1);
	big->memory_total = 4000;
	set_memory_used(big, 1000);
	set_memory_used(add_gpu(2), 100);
	request.order = GPURUN_ORDER_FREE;
	SELECTED(1, 2, 0);
}

static void order_free_ties_keep_index_order(void **state)
{
	(void)state;
	set_memory_used(add_gpu(0), 200);
	set_memory_used(add_gpu(1), 100);
	set_memory_used(add_gpu(2), 200);
	set_memory_used(add_gpu(3), 100);
	request.order = GPURUN_ORDER_FREE;
	SELECTED(1, 3, 0, 2);
}

/* Past the insertion-sort cut-off, so that the merge is what keeps ties in order. */
static void order_load_is_stable_on_many_gpus(void **state)
{
	size_t count;

	(void)state;
	for (int i = 0; i < MAX_GPUS; i++)
		add_gpu(i)->load = (double)((i * 7) % 5) / 10;
	request.order = GPURUN_ORDER_LOAD;
	count = gpurun_select(&snapshot, NULL, &request, candidates);
	assert_int_equal(count, MAX_GPUS);
	for (size_t i = 1; i < count; i++) {
		const struct gpurun_device *before = &devices[candidates[i - 1]];
		const struct gpurun_device *after = &devices[candidates[i]];

		if (before->load > after->load ||
		    (before->load == after->load && before->index > after->index))
			fail_msg("device %d (load %g) before device %d (load %g)", before->index,
				 before->load, after->index, after->load);
	}
}

static void order_last_on_many_gpus(void **state)
{
	(void)state;
	for (int i = 0; i < MAX_GPUS; i++)
		add_gpu(i);
	request.order = GPURUN_ORDER_LAST;
	assert_int_equal(gpurun_select(&snapshot, NULL, &request, candidates), MAX_GPUS);
	for (size_t i = 0; i < MAX_GPUS; i++)
		assert_int_equal(candidates[i], MAX_GPUS - 1 - i);
}

static bool is_permutation(const size_t *items, size_t count)
{
	bool seen[MAX_GPUS] = { false };

	for (size_t i = 0; i < count; i++) {
		if (items[i] >= count || seen[items[i]])
			return false;
		seen[items[i]] = true;
	}
	return true;
}

static void order_random_is_a_permutation(void **state)
{
	(void)state;
	for (int i = 0; i < 8; i++)
		add_gpu(i);
	request.order = GPURUN_ORDER_RANDOM;
	assert_int_equal(gpurun_select(&snapshot, NULL, &request, candidates), 8);
	assert_true(is_permutation(candidates, 8));
}

static void order_random_is_reproducible_with_a_seed(void **state)
{
	size_t first[16];

	(void)state;
	for (int i = 0; i < 16; i++)
		add_gpu(i);
	request.order = GPURUN_ORDER_RANDOM;
	request.random_seed = 42;
	gpurun_select(&snapshot, NULL, &request, first);
	assert_true(is_permutation(first, 16));
	assert_int_equal(gpurun_select(&snapshot, NULL, &request, candidates), 16);
	assert_memory_equal(first, candidates, sizeof(first));
}

static void order_random_depends_on_the_seed(void **state)
{
	size_t first[16];
	size_t identity[16];

	(void)state;
	for (int i = 0; i < 16; i++) {
		add_gpu(i);
		identity[i] = (size_t)i;
	}
	request.order = GPURUN_ORDER_RANDOM;
	request.random_seed = 1;
	gpurun_select(&snapshot, NULL, &request, first);
	request.random_seed = 2;
	gpurun_select(&snapshot, NULL, &request, candidates);
	assert_memory_not_equal(first, candidates, sizeof(first));
	assert_memory_not_equal(identity, candidates, sizeof(identity));
}

static void order_random_skips_unavailable(void **state)
{
	(void)state;
	add_gpu(0);
	add_gpu(1)->lost = true;
	add_gpu(2);
	request.order = GPURUN_ORDER_RANDOM;
	request.random_seed = 9;
	assert_int_equal(gpurun_select(&snapshot, NULL, &request, candidates), 2);
	assert_true((candidates[0] == 0 && candidates[1] == 2) ||
		    (candidates[0] == 2 && candidates[1] == 0));
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, reset, free_request)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(idle_gpu_is_available),
		TEST(load_exactly_at_max_is_excluded),
		TEST(load_just_below_max_is_available),
		TEST(load_above_max_names_both),
		TEST(max_load_one_still_excludes_full_load),
		TEST(nan_load_is_excluded_by_default),
		TEST(nan_load_is_available_with_include_nan),
		TEST(include_nan_does_not_relax_a_known_load),
		TEST(memory_exactly_at_max_is_excluded),
		TEST(memory_just_below_max_is_available),
		TEST(memory_above_max_names_both),
		TEST(max_memory_one_still_excludes_full_memory),
		TEST(nan_memory_is_excluded_by_default),
		TEST(nan_memory_is_available_with_include_nan),
		TEST(zero_total_memory_is_unknown_memory),
		TEST(nan_free_memory_is_always_excluded),
		TEST(free_memory_equal_to_min_is_available),
		TEST(free_memory_below_min_is_excluded),
		TEST(excluded_by_index),
		TEST(excluded_by_uuid),
		TEST(excluded_by_index_and_uuid),
		TEST(exclusion_by_index_is_numeric),
		TEST(exclusion_by_uuid_prefix_in_any_case),
		TEST(lost_gpu_is_excluded),
		TEST(mig_gpu_is_never_chosen_itself),
		TEST(mig_instance_without_uuid_is_excluded),
		TEST(leased_gpu_is_excluded),
		TEST(leased_by_unknown_user),
		TEST(reason_buffer_may_be_null),
		TEST(select_returns_every_available_gpu),
		TEST(select_with_nothing_available),
		TEST(select_honours_allowed),
		TEST(order_first_is_ascending_index),
		TEST(order_first_ties_keep_snapshot_order),
		TEST(order_last_is_descending_index),
		TEST(order_last_ties_keep_snapshot_order),
		TEST(order_load_ascending_nan_last),
		TEST(order_load_ties_keep_index_order),
		TEST(order_memory_ascending_nan_last),
		TEST(order_memory_is_relative),
		TEST(order_memory_ties_keep_index_order),
		TEST(order_free_most_free_first),
		TEST(order_free_ties_keep_index_order),
		TEST(order_load_is_stable_on_many_gpus),
		TEST(order_last_on_many_gpus),
		TEST(order_random_is_a_permutation),
		TEST(order_random_is_reproducible_with_a_seed),
		TEST(order_random_depends_on_the_seed),
		TEST(order_random_skips_unavailable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
