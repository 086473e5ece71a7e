/* visible_test: an inherited CUDA_VISIBLE_DEVICES as a mask on a literal four-GPU snapshot. */
#include <stdio.h>
#include <string.h>

#include "unit.h"

#define GPUS 4

static struct gpurun_device devices[GPUS];
static struct gpurun_snapshot snapshot = { .devices = devices, .count = GPUS };
static bool allowed[GPUS];
static struct gpurun_error error;

/* Indices 10..13 at positions 0..3, so that an index is never mistaken for a position. */
static int four_gpus(void **state)
{
	(void)state;
	for (int i = 0; i < GPUS; i++) {
		gpurun_device_init_unknown(&devices[i]);
		devices[i].index = 10 + i;
		snprintf(devices[i].uuid, sizeof(devices[i].uuid),
			 "GPU-%08x-aaaa-bbbb-cccc-0123456789ab", 10 + i);
	}
	memset(&error, 0, sizeof(error));
	return 0;
}

static const char *uuid(int position)
{
	return devices[position].uuid;
}

/* Runs the mask over an all-true and an all-false array: a device it forgets to write shows
 * up as a difference. */
static int mask(const char *value)
{
	bool from_true[GPUS];
	int status;

	memset(from_true, true, sizeof(from_true));
	status = gpurun_visible_mask(&snapshot, value, from_true, &error);
	memset(allowed, false, sizeof(allowed));
	assert_int_equal(gpurun_visible_mask(&snapshot, value, allowed, &error), status);
	if (status == 0)
		assert_memory_equal(from_true, allowed, sizeof(allowed));
	return status;
}

static void assert_mask(bool a, bool b, bool c, bool d)
{
	const bool expected[GPUS] = { a, b, c, d };

	for (int i = 0; i < GPUS; i++)
		if (allowed[i] != expected[i])
			fail_msg("position %d: allowed is %d, expected %d", i, allowed[i],
				 expected[i]);
}

static void assert_not_understood(const char *value, const char *entry)
{
	char expected[sizeof(error.message)];

	snprintf(expected, sizeof(expected),
		 "CUDA_VISIBLE_DEVICES='%s': only indices and full GPU UUIDs are understood, not '%s'",
		 value, entry);
	assert_int_equal(mask(value), GPURUN_EXIT_USAGE);
	assert_int_equal(error.status, GPURUN_EXIT_USAGE);
	assert_string_equal(error.message, expected);
}

static void unset_allows_every_gpu(void **state)
{
	(void)state;
	assert_int_equal(mask(NULL), 0);
	assert_mask(true, true, true, true);
}

static void empty_allows_none(void **state)
{
	(void)state;
	assert_int_equal(mask(""), 0);
	assert_mask(false, false, false, false);
}

static void indices_match_the_device_index(void **state)
{
	(void)state;
	assert_int_equal(mask("13,11"), 0);
	assert_mask(false, true, false, true);
}

static void index_is_not_a_position(void **state)
{
	(void)state;
	assert_int_equal(mask("1"), 0);
	assert_mask(false, false, false, false);
}

static void uuids_match_exactly(void **state)
{
	char value[256];

	(void)state;
	snprintf(value, sizeof(value), "%s,%s", uuid(2), uuid(0));
	assert_int_equal(mask(value), 0);
	assert_mask(true, false, true, false);
}

static void uuid_hex_case_must_match(void **state)
{
	char value[GPURUN_UUID_SIZE];

	(void)state;
	snprintf(value, sizeof(value), "%s", uuid(1));
	for (char *c = value + 4; *c; c++)
		if (*c >= 'a' && *c <= 'f')
			*c = (char)(*c - 'a' + 'A');
	assert_int_equal(mask(value), 0);
	assert_mask(false, false, false, false);
}

static void indices_and_uuids_mixed(void **state)
{
	char value[256];

	(void)state;
	snprintf(value, sizeof(value), "10,%s,12", uuid(3));
	assert_int_equal(mask(value), 0);
	assert_mask(true, false, true, true);
}

static void duplicates_are_harmless(void **state)
{
	char value[256];

	(void)state;
	snprintf(value, sizeof(value), "11,11,%s", uuid(1));
	assert_int_equal(mask(value), 0);
	assert_mask(false, true, false, false);
}

static void negative_entry_ends_the_list(void **state)
{
	(void)state;
	assert_int_equal(mask("10,12,-1,11"), 0);
	assert_mask(true, false, true, false);
}

static void minus_one_hides_every_gpu(void **state)
{
	(void)state;
	assert_int_equal(mask("-1"), 0);
	assert_mask(false, false, false, false);
}

static void unknown_index_ends_the_list(void **state)
{
	(void)state;
	assert_int_equal(mask("11,7,12"), 0);
	assert_mask(false, true, false, false);
}

static void huge_index_ends_the_list(void **state)
{
	(void)state;
	assert_int_equal(mask("13,99999999999999999999,10"), 0);
	assert_mask(false, false, false, true);
}

static void unknown_uuid_ends_the_list(void **state)
{
	(void)state;
	assert_int_equal(mask("12,GPU-ffffffff-aaaa-bbbb-cccc-0123456789ab,10"), 0);
	assert_mask(false, false, true, false);
}

static void empty_entry_ends_the_list(void **state)
{
	(void)state;
	assert_int_equal(mask("10,,11"), 0);
	assert_mask(true, false, false, false);
	assert_int_equal(mask("11,"), 0);
	assert_mask(false, true, false, false);
}

/* CUDA never reads past the first invalid entry, so neither does the mask. */
static void nothing_after_the_end_is_read(void **state)
{
	(void)state;
	assert_int_equal(mask("10,-1,GPU-12ab,garbage"), 0);
	assert_mask(true, false, false, false);
}

static void uuid_prefix_is_not_understood(void **state)
{
	(void)state;
	assert_not_understood("GPU-12ab", "GPU-12ab");
}

static void uuid_prefix_after_indices_is_not_understood(void **state)
{
	(void)state;
	assert_not_understood("10,GPU-0000000b", "GPU-0000000b");
}

static void mig_entry_is_not_understood(void **state)
{
	(void)state;
	assert_not_understood("MIG-4f3e2d1c-aaaa-bbbb-cccc-0123456789ab",
			      "MIG-4f3e2d1c-aaaa-bbbb-cccc-0123456789ab");
	assert_not_understood("MIG-GPU-0000000a-aaaa-bbbb-cccc-0123456789ab/1/0",
			      "MIG-GPU-0000000a-aaaa-bbbb-cccc-0123456789ab/1/0");
}

static void garbage_is_not_understood(void **state)
{
	(void)state;
	assert_not_understood("abc", "abc");
	assert_not_understood("10, 11", " 11");
	assert_not_understood("1x", "1x");
	assert_not_understood("+1", "+1");
}

#define TEST(name) cmocka_unit_test_setup(name, four_gpus)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(unset_allows_every_gpu),
		TEST(empty_allows_none),
		TEST(indices_match_the_device_index),
		TEST(index_is_not_a_position),
		TEST(uuids_match_exactly),
		TEST(uuid_hex_case_must_match),
		TEST(indices_and_uuids_mixed),
		TEST(duplicates_are_harmless),
		TEST(negative_entry_ends_the_list),
		TEST(minus_one_hides_every_gpu),
		TEST(unknown_index_ends_the_list),
		TEST(huge_index_ends_the_list),
		TEST(unknown_uuid_ends_the_list),
		TEST(empty_entry_ends_the_list),
		TEST(nothing_after_the_end_is_read),
		TEST(uuid_prefix_is_not_understood),
		TEST(uuid_prefix_after_indices_is_not_understood),
		TEST(mig_entry_is_not_understood),
		TEST(garbage_is_not_understood),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
