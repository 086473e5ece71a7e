/* amdgpu_test: the AMD probe against the sysfs trees in tests/fixtures/amd (run from the repo
 * root): the fields of every card, and every way a card's files can be missing, unreadable,
 * garbage or gone. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"

#define TREES "tests/fixtures/amd"

static struct gpurun_snapshot snapshot;
static struct gpurun_error err;

static int probe_tree(const char *tree)
{
	setenv("GPURUN_SYSFS_ROOT", tree, 1);
	memset(&err, 0, sizeof(err));
	return gpurun_probe_amdgpu(&snapshot, &err);
}

static int free_snapshot(void **state)
{
	(void)state;
	gpurun_snapshot_free(&snapshot);
	unsetenv("GPURUN_SYSFS_ROOT");
	return 0;
}

static int start_group(void **state)
{
	(void)state;
	if (access(TREES "/four/sys/class/drm", R_OK) != 0) {
		fprintf(stderr, "amdgpu_test: run from the repository root (%s is missing)\n", TREES);
		return -1;
	}
	return 0;
}

static void assert_unknown(double value)
{
	if (!isnan(value))
		fail_msg("expected unknown (NaN), got %g", value);
}

/* ---- a machine of four MI210s --------------------------------------------------------------- */

static void four_cards_in_pci_order_without_the_bmc(void **state)
{
	(void)state;
	static const char *const buses[] = { "0000:03:00.0", "0000:43:00.0", "0000:83:00.0",
					     "0000:c1:00.0" };

	assert_int_equal(probe_tree(TREES "/four"), 0);
	assert_int_equal(snapshot.count, 4);
	assert_string_equal(snapshot.source, "amdgpu");
	assert_string_equal(snapshot.driver_version, "6.7.0");
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(snapshot.devices[i].index, (int)i);
		assert_int_equal(snapshot.devices[i].vendor, GPURUN_VENDOR_AMD);
		assert_string_equal(snapshot.devices[i].pci_bus_id, buses[i]);
		assert_int_equal(snapshot.devices[i].mig_parent, -1);
		assert_false(snapshot.devices[i].processes_known);
	}
}

static void four_every_field(void **state)
{
	(void)state;
	assert_int_equal(probe_tree(TREES "/four"), 0);
	const struct gpurun_device *busy = &snapshot.devices[0];

	assert_string_equal(busy->name, "AMD Instinct MI210");
	assert_string_equal(busy->uuid, "GPU-b39adaf836600b31");
	assert_string_equal(busy->serial, "692243000123");
	assert_true(busy->load == 0.97);
	assert_true(busy->memory_total == 65536);
	assert_true(busy->memory_used == 61440);
	assert_true(busy->memory_free == 4096);
	assert_true(busy->temperature == 71);
	assert_true(busy->power_draw == 287.5);
	assert_string_equal(busy->display_mode, "");
	assert_false(busy->lost);

	const struct gpurun_device *idle = &snapshot.devices[3];
	assert_string_equal(idle->uuid, "GPU-3a90a60dbaf2e93f");
	assert_string_equal(idle->serial, "");
	assert_true(idle->load == 0);
	assert_true(idle->memory_used == 10);
	assert_true(idle->memory_free == 65526);
	assert_true(idle->temperature == 35);
	assert_true(idle->power_draw == 43);
}

/* ---- one consumer card, the minimum ----------------------------------------------------------- */

static void one_card_without_ids_or_sensors(void **state)
{
	(void)state;
	assert_int_equal(probe_tree(TREES "/one"), 0);
	assert_int_equal(snapshot.count, 1);
	const struct gpurun_device *device = &snapshot.devices[0];

	/* No product_name: the PCI ids; no unique_id: no UUID; the address from uevent alone. */
	assert_string_equal(device->name, "AMD GPU [1002:744c]");
	assert_string_equal(device->uuid, "");
	assert_string_equal(device->pci_bus_id, "0000:0b:00.0");
	/* gpu_busy_percent cannot be read (read() fails): the load is unknown, nothing else. */
	assert_unknown(device->load);
	assert_true(device->memory_total == 24576);
	assert_true(device->memory_used == 2048);
	assert_true(device->memory_free == 22528);
	assert_unknown(device->temperature);
	assert_unknown(device->power_draw);
	assert_string_equal(snapshot.driver_version, "");
}

/* ---- every way a card can be wrong -------------------------------------------------------------- */

static void broken_cards_are_skipped_or_unknown(void **state)
{
	(void)state;
	assert_int_equal(probe_tree(TREES "/broken"), 0);
	/* card0 (garbage), card6 (inconsistent) and card2 (only its vendor file left) are AMD
	 * GPUs; card1 vanished, card3 is NVIDIA's, card4 is radeon's, card5's vendor cannot be
	 * read, and card9-HDMI-A-1, renderD200 and cardinal are not cards. */
	assert_int_equal(snapshot.count, 3);
	assert_string_equal(snapshot.devices[0].pci_bus_id, "0000:10:00.0");
	assert_string_equal(snapshot.devices[1].pci_bus_id, "0000:16:00.0");
	assert_string_equal(snapshot.devices[2].pci_bus_id, "");
	for (size_t i = 0; i < snapshot.count; i++)
		assert_int_equal(snapshot.devices[i].index, (int)i);
}

static void garbage_is_unknown_never_a_number(void **state)
{
	(void)state;
	assert_int_equal(probe_tree(TREES "/broken"), 0);
	const struct gpurun_device *garbage = &snapshot.devices[0];

	assert_unknown(garbage->load);                  /* "abc" */
	assert_unknown(garbage->memory_total);          /* "-5" */
	assert_unknown(garbage->memory_used);           /* "12x" */
	assert_unknown(garbage->memory_free);
	assert_unknown(garbage->temperature);           /* 99999 C */
	assert_unknown(garbage->power_draw);            /* "lots" */
	assert_string_equal(garbage->uuid, "");         /* "zz" */
	assert_string_equal(garbage->name, "AMD GPU [1002:740f]"); /* an empty product_name */
}

static void inconsistent_values_are_not_believed(void **state)
{
	(void)state;
	assert_int_equal(probe_tree(TREES "/broken"), 0);
	const struct gpurun_device *device = &snapshot.devices[1];

	assert_string_equal(device->name, "AMD Radeon PRO W7600");
	assert_unknown(device->load);                   /* 101 % */
	assert_unknown(device->memory_used);            /* more used than there is */
	assert_unknown(device->memory_total);
	assert_unknown(device->memory_free);
	assert_string_equal(device->uuid, "");          /* an all-zero unique_id */
}

static void card_left_with_only_its_vendor_file(void **state)
{
	(void)state;
	assert_int_equal(probe_tree(TREES "/broken"), 0);
	const struct gpurun_device *device = &snapshot.devices[2];

	assert_string_equal(device->name, "AMD GPU");
	assert_unknown(device->load);
	assert_unknown(device->memory_total);
	assert_unknown(device->memory_used);
	assert_string_equal(device->uuid, "");
}

static void eight_cards(void **state)
{
	(void)state;
	assert_int_equal(probe_tree(TREES "/eight"), 0);
	assert_int_equal(snapshot.count, 8);
	for (size_t i = 0; i < 8; i++) {
		char uuid[32];

		snprintf(uuid, sizeof(uuid), "GPU-%016zx", 0xa1000 + i);
		assert_string_equal(snapshot.devices[i].uuid, uuid);
		assert_true(snapshot.devices[i].load == i * 11 / 100.0);
		assert_true(snapshot.devices[i].memory_used == (double)((i * 7) % 8) * 20 * 1024);
		assert_true(snapshot.devices[i].temperature == 40 + (double)i);
	}
}

/* ---- no AMD GPU --------------------------------------------------------------------------------- */

static void no_drm_directory_is_no_gpu_information(void **state)
{
	(void)state;
	assert_int_equal(probe_tree("/nonexistent-root"), GPURUN_EXIT_NO_GPU_INFO);
	assert_int_equal(err.status, GPURUN_EXIT_NO_GPU_INFO);
	assert_string_equal(err.message, "amdgpu: cannot read /nonexistent-root/sys/class/drm "
			    "(No such file or directory)");
	assert_int_equal(snapshot.count, 0);
}

static void only_other_vendors_is_no_amd_gpu(void **state)
{
	(void)state;
	char root[] = "/tmp/gpurun-amdgpu-test.XXXXXX";
	char command[256];

	assert_non_null(mkdtemp(root));
	snprintf(command, sizeof(command),
		 "mkdir -p %s/sys/class/drm/card0/device && echo 0x10de > %s/sys/class/drm/card0/device/vendor",
		 root, root);
	assert_int_equal(system(command), 0);
	assert_int_equal(probe_tree(root), GPURUN_EXIT_NO_GPU_INFO);
	assert_non_null(strstr(err.message, "amdgpu: no AMD GPU in "));
	snprintf(command, sizeof(command), "rm -rf %s", root);
	assert_int_equal(system(command), 0);
}

/* ---- a card that comes and goes while the probe reads it ----------------------------------------
 * A thread keeps replacing one card's device link with a dangling one and back. Whenever the
 * probe catches it, the card is either left out or read with unknown fields: never a wrong
 * value, never a crash. */

static char race_root[] = "/tmp/gpurun-amdgpu-race.XXXXXX";
static volatile int racing;

/* Each rename replaces card4 atomically, as a hot-unplug would remove it. */
static void *flip_card(void *unused)
{
	char flip[512], card[512];

	(void)unused;
	snprintf(flip, sizeof(flip), "%s/sys/class/drm/.flip", race_root);
	snprintf(card, sizeof(card), "%s/sys/class/drm/card4", race_root);
	while (racing) {
		unlink(flip);
		if (symlink("../../devices/nowhere/drm/card4", flip) == 0)
			rename(flip, card);
		unlink(flip);
		if (symlink("../../devices/pci0000:00/0000:43:00.0/drm/card4", flip) == 0)
			rename(flip, card);
	}
	return NULL;
}

static void card_disappearing_while_read(void **state)
{
	(void)state;
	char command[512];
	pthread_t flipper;
	unsigned saw_three = 0, saw_four = 0;

	assert_non_null(mkdtemp(race_root));
	snprintf(command, sizeof(command),
		 "cp -a " TREES "/four/sys %s/", race_root);
	assert_int_equal(system(command), 0);
	racing = 1;
	assert_int_equal(pthread_create(&flipper, NULL, flip_card, NULL), 0);
	for (int i = 0; i < 1000; i++) {
		int status = probe_tree(race_root);

		assert_int_equal(status, 0);
		assert_true(snapshot.count == 3 || snapshot.count == 4);
		saw_three += snapshot.count == 3;
		saw_four += snapshot.count == 4;
		for (size_t d = 0; d < snapshot.count; d++) {
			const struct gpurun_device *device = &snapshot.devices[d];

			if (strcmp(device->pci_bus_id, "0000:43:00.0") != 0)
				continue;
			assert_true(isnan(device->memory_used) || device->memory_used == 1024);
			assert_true(isnan(device->load) || device->load == 0.02);
			assert_true(device->uuid[0] == '\0' ||
				    strcmp(device->uuid, "GPU-0c5e61f7a9b0d4e2") == 0);
		}
		gpurun_snapshot_free(&snapshot);
	}
	racing = 0;
	pthread_join(flipper, NULL);
	snprintf(command, sizeof(command), "rm -rf %s", race_root);
	assert_int_equal(system(command), 0);
	print_message("# card4 present in %u looks, absent in %u\n", saw_four, saw_three);
}

#define TEST(f) cmocka_unit_test_teardown(f, free_snapshot)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(four_cards_in_pci_order_without_the_bmc),
		TEST(four_every_field),
		TEST(one_card_without_ids_or_sensors),
		TEST(broken_cards_are_skipped_or_unknown),
		TEST(garbage_is_unknown_never_a_number),
		TEST(inconsistent_values_are_not_believed),
		TEST(card_left_with_only_its_vendor_file),
		TEST(eight_cards),
		TEST(no_drm_directory_is_no_gpu_information),
		TEST(only_other_vendors_is_no_amd_gpu),
		TEST(card_disappearing_while_read),
	};

	return cmocka_run_group_tests(tests, start_group, NULL);
}
