/* vendor_test: NVIDIA and AMD GPUs in one snapshot, on literal snapshots: the index scheme,
 * the inherited ROCR_VISIBLE_DEVICES mask, one vendor per hand-off, and the hand-off itself. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

static struct gpurun_request request;
static struct gpurun_snapshot snapshot;
static struct gpurun_error err;

static int reset(void **state)
{
	(void)state;
	gpurun_request_init(&request);
	memset(&snapshot, 0, sizeof(snapshot));
	return 0;
}

static int release(void **state)
{
	(void)state;
	gpurun_snapshot_free(&snapshot);
	gpurun_request_free(&request);
	return 0;
}

/* A snapshot of `nvidia` idle NVIDIA GPUs, then `amd` idle AMD GPUs appended as the probe
 * appends them. */
static void machine(size_t nvidia, size_t amd)
{
	struct gpurun_snapshot amd_part;

	assert_int_equal(gpurun_snapshot_init(&snapshot, nvidia, &err), 0);
	assert_int_equal(gpurun_snapshot_init(&amd_part, amd, &err), 0);
	for (size_t i = 0; i < nvidia + amd; i++) {
		struct gpurun_device *device = i < nvidia ? &snapshot.devices[i]
							  : &amd_part.devices[i - nvidia];
		bool is_amd = i >= nvidia;
		size_t own = is_amd ? i - nvidia : i;

		device->vendor = is_amd ? GPURUN_VENDOR_AMD : GPURUN_VENDOR_NVIDIA;
		device->index = (int)own;
		if (is_amd)
			snprintf(device->uuid, sizeof(device->uuid), "GPU-00000000000a10%02zx", own);
		else
			snprintf(device->uuid, sizeof(device->uuid),
				 "GPU-%08zx-1111-2222-3333-444444444444", own);
		device->load = 0;
		device->memory_total = 1000;
		device->memory_used = 0;
		device->memory_free = 1000;
	}
	assert_int_equal(gpurun_snapshot_append(&snapshot, &amd_part, &err), 0);
	assert_int_equal(amd_part.count, 0);
	assert_null(amd_part.devices);
}

/* ---- one snapshot, two numberings -------------------------------------------------------- */

static void amd_indices_follow_nvidia_ones(void **state)
{
	(void)state;
	machine(2, 3);
	assert_int_equal(snapshot.count, 5);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(snapshot.devices[i].index, (int)i);
	assert_int_equal(gpurun_device_vendor_index(&snapshot, 1), 1);
	assert_int_equal(gpurun_device_vendor_index(&snapshot, 2), 0);
	assert_int_equal(gpurun_device_vendor_index(&snapshot, 4), 2);
	assert_string_equal(gpurun_vendor_name(snapshot.devices[0].vendor), "nvidia");
	assert_string_equal(gpurun_vendor_name(snapshot.devices[4].vendor), "amd");
}

static void append_to_an_empty_snapshot_keeps_amd_numbering(void **state)
{
	(void)state;
	machine(0, 2);
	assert_int_equal(snapshot.devices[0].index, 0);
	assert_int_equal(snapshot.devices[1].index, 1);
	assert_int_equal(gpurun_device_vendor_index(&snapshot, 1), 1);
}

/* ---- ROCR_VISIBLE_DEVICES ---------------------------------------------------------------- */

static void mask(const char *value, const char *expected)
{
	bool allowed[16];
	char got[17];

	/* NVIDIA entries must come out as they went in; AMD ones start allowed. */
	for (size_t i = 0; i < snapshot.count; i++)
		allowed[i] = snapshot.devices[i].vendor == GPURUN_VENDOR_AMD || i % 2 == 0;
	gpurun_rocr_visible_mask(&snapshot, value, allowed);
	for (size_t i = 0; i < snapshot.count; i++)
		got[i] = allowed[i] ? '1' : '0';
	got[snapshot.count] = '\0';
	assert_string_equal(got, expected);
}

static void rocr_mask_applies_to_amd_only(void **state)
{
	(void)state;
	machine(2, 4);                  /* positions 0-1 NVIDIA, 2-5 AMD 0-3 */
	mask(NULL, "101111");
	mask("", "100000");
	mask("1,3", "100101");
	mask("3,0", "101001");
	mask("GPU-00000000000A1002", "100010");   /* UUIDs in any case */
	mask("0,GPU-00000000000a1003", "101001");
}

/* Another rule (a Slurm allocation) left AMD 0 out: the mask cannot bring it back. */
static void rocr_mask_narrows_and_never_widens(void **state)
{
	(void)state;
	bool allowed[4] = { false, true, true, true };

	machine(0, 4);
	gpurun_rocr_visible_mask(&snapshot, NULL, allowed);
	assert_false(allowed[0]);
	assert_true(allowed[1]);
	gpurun_rocr_visible_mask(&snapshot, "0,1", allowed);
	assert_false(allowed[0]);
	assert_true(allowed[1]);
	assert_false(allowed[2]);
}

static void rocr_mask_stops_at_an_entry_naming_no_gpu(void **state)
{
	(void)state;
	machine(0, 4);
	mask("1,7,2", "0100");
	mask("x,1", "0000");
	mask("1,,2", "0100");
	mask("GPU-ffffffffffffffff,0", "0000");
	mask("-1", "0000");
}

/* ---- one vendor per hand-off ------------------------------------------------------------------- */

/* The masks' answer: allowed[] (NULL: no mask), a device left out as not named. */
static size_t select_vendor(bool *allowed, const size_t *order, size_t count, size_t *kept)
{
	enum gpurun_mask_verdict verdicts[8];
	struct gpurun_mask mask = { .allowed = allowed, .verdicts = verdicts, .count = snapshot.count };

	for (size_t i = 0; allowed && i < snapshot.count; i++)
		verdicts[i] = allowed[i] ? GPURUN_MASK_ALLOWED : GPURUN_MASK_NOT_VISIBLE;
	memcpy(kept, order, count * sizeof(*order));
	return gpurun_select_vendor(&snapshot, allowed ? &mask : NULL, &request, kept, count);
}

static void nvidia_wherever_the_job_may_use_one(void **state)
{
	(void)state;
	size_t kept[8];
	/* Order: AMD, NVIDIA, AMD, NVIDIA, AMD: which is free first does not matter. */
	static const size_t order[] = { 3, 0, 2, 1, 4 };
	static const size_t amd_free_only[] = { 3, 2, 4 };

	machine(2, 3);
	assert_int_equal(select_vendor(NULL, order, 5, kept), 2);
	assert_int_equal(kept[0], 0);
	assert_int_equal(kept[1], 1);
	request.limit = 3;
	assert_int_equal(select_vendor(NULL, order, 5, kept), 2);
	/* The NVIDIA GPUs are busy: the job waits for them, it is not sent to AMD ones. */
	assert_int_equal(select_vendor(NULL, amd_free_only, 3, kept), 0);
	assert_int_equal(select_vendor(NULL, order, 0, kept), 0);
}

static void amd_where_masks_or_exclude_leave_no_nvidia(void **state)
{
	(void)state;
	size_t kept[8];
	static const size_t order[] = { 3, 0, 2, 1, 4 };
	bool allowed[] = { false, false, true, true, true };

	machine(2, 3);
	assert_int_equal(select_vendor(allowed, order, 5, kept), 3);
	assert_int_equal(kept[0], 3);
	assert_int_equal(kept[1], 2);
	assert_int_equal(kept[2], 4);
	allowed[1] = true;
	assert_int_equal(select_vendor(allowed, order, 5, kept), 2);
	request.exclude = strdup("1");
	assert_int_equal(select_vendor(allowed, order, 5, kept), 3);
	assert_int_equal(select_vendor(NULL, order, 5, kept), 2);   /* GPU 0 is left */
	free(request.exclude);
	request.exclude = strdup("0,GPU-00000001-1111-2222-3333-444444444444");
	assert_int_equal(select_vendor(NULL, order, 5, kept), 3);
}

/* A MIG-enabled GPU is never chosen itself, yet it is the job's: with no instance listed, the
 * job waits for NVIDIA rather than run a CUDA program beside an AMD hand-off. */
static void a_mig_gpu_left_by_the_masks_is_nvidia_enough(void **state)
{
	(void)state;
	size_t kept[8];
	static const size_t amd_free[] = { 1, 2 };
	enum gpurun_mask_verdict verdicts[3] = { GPURUN_MASK_MIG_ENABLED, GPURUN_MASK_ALLOWED,
						 GPURUN_MASK_ALLOWED };
	bool allowed[3] = { false, true, true };
	struct gpurun_mask mask = { .allowed = allowed, .verdicts = verdicts, .count = 3 };

	machine(1, 2);
	snapshot.devices[0].mig_enabled = true;
	memcpy(kept, amd_free, sizeof(amd_free));
	assert_int_equal(gpurun_select_vendor(&snapshot, &mask, &request, kept, 2), 0);
	verdicts[0] = GPURUN_MASK_MIG_MODE_UNKNOWN;
	assert_int_equal(gpurun_job_vendor(&snapshot, &mask, &request), GPURUN_VENDOR_NVIDIA);
	verdicts[0] = GPURUN_MASK_NOT_VISIBLE;  /* CUDA_VISIBLE_DEVICES leaves it out */
	assert_int_equal(gpurun_job_vendor(&snapshot, &mask, &request), GPURUN_VENDOR_AMD);
}

/* ---- the hand-off ------------------------------------------------------------------------------- */

static void choose(struct gpurun_choice *choice, const size_t *positions, size_t count)
{
	memset(choice, 0, sizeof(*choice));
	choice->snapshot = snapshot;
	choice->chosen = (size_t *)positions;
	choice->count = count;
}

static void amd_choice_goes_to_rocr_in_amd_numbering(void **state)
{
	(void)state;
	struct gpurun_choice choice;
	char text[256];
	static const size_t amd[] = { 4, 2 };
	static const size_t nvidia[] = { 1 };

	machine(2, 3);
	choose(&choice, amd, 2);
	assert_string_equal(gpurun_choice_variable(&choice), "ROCR_VISIBLE_DEVICES");
	assert_int_equal(gpurun_choice_format(&choice, &request, text, sizeof(text)), 0);
	assert_string_equal(text, "2,0");
	request.hand_out_uuids = true;
	assert_int_equal(gpurun_choice_format(&choice, &request, text, sizeof(text)), 0);
	assert_string_equal(text, "GPU-00000000000a1002,GPU-00000000000a1000");
	/* A board without a unique id has no UUID to give: indices go instead, for all. */
	snapshot.devices[4].uuid[0] = '\0';
	choice.snapshot = snapshot;
	assert_int_equal(gpurun_choice_format(&choice, &request, text, sizeof(text)), 0);
	assert_string_equal(text, "2,0");

	choose(&choice, nvidia, 1);
	assert_string_equal(gpurun_choice_variable(&choice), "CUDA_VISIBLE_DEVICES");
	assert_string_equal(gpurun_choice_variable(NULL), "CUDA_VISIBLE_DEVICES");
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, reset, release)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(amd_indices_follow_nvidia_ones),
		TEST(append_to_an_empty_snapshot_keeps_amd_numbering),
		TEST(rocr_mask_applies_to_amd_only),
		TEST(rocr_mask_narrows_and_never_widens),
		TEST(rocr_mask_stops_at_an_entry_naming_no_gpu),
		TEST(nvidia_wherever_the_job_may_use_one),
		TEST(amd_where_masks_or_exclude_leave_no_nvidia),
		TEST(a_mig_gpu_left_by_the_masks_is_nvidia_enough),
		TEST(amd_choice_goes_to_rocr_in_amd_numbering),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
