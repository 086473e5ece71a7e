/* handoff: the choice, handed to the program through its environment (the last step of the
 * data flow, shared by the launcher and the preload library), and the inverse: whether this
 * process's environment still carries a choice an ancestor handed off. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "descriptors_internal.h"
#include "gpurun.h"

const char *gpurun_choice_variable(const struct gpurun_choice *choice)
{
	if (choice && choice->count > 0 &&
	    choice->snapshot.devices[choice->chosen[0]].vendor == GPURUN_VENDOR_AMD)
		return "ROCR_VISIBLE_DEVICES";
	return "CUDA_VISIBLE_DEVICES";
}

/* Whether --uuid can name every chosen GPU by its UUID. */
static bool every_uuid_known(const struct gpurun_choice *choice)
{
	for (size_t i = 0; i < choice->count; i++)
		if (!choice->snapshot.devices[choice->chosen[i]].uuid[0])
			return false;
	return true;
}

int gpurun_choice_format(const struct gpurun_choice *choice, const struct gpurun_request *request,
			 char *buffer, size_t size)
{
	/* The first entry decides whether CUDA reads the list as UUIDs or as indices, and an
	 * entry of the other kind ends it: one GPU without a readable UUID puts all by index. */
	bool uuids = request->hand_out_uuids && every_uuid_known(choice);
	size_t used = 0;

	if (size == 0)
		return -1;
	buffer[0] = '\0';
	for (size_t i = 0; i < choice->count; i++) {
		const struct gpurun_device *device = &choice->snapshot.devices[choice->chosen[i]];
		/* A MIG instance has no index CUDA understands; its UUID is its only name (and
		 * it is handed out alone, with a UUID: gpurun_visible_whole_first, select.c). */
		bool by_uuid = uuids || device->mig_parent >= 0;
		int written = by_uuid && device->uuid[0]
			? snprintf(buffer + used, size - used, "%s%s", i ? "," : "", device->uuid)
			: snprintf(buffer + used, size - used, "%s%d", i ? "," : "",
				   gpurun_device_vendor_index(&choice->snapshot, choice->chosen[i]));
		if (written < 0 || (size_t)written >= size - used)
			return -1;
		used += (size_t)written;
	}
	return 0;
}

/* True when the list holds an index: --uuid hands out one too, for a GPU whose UUID could not
 * be read. */
static bool names_an_index(const char *visible)
{
	for (const char *entry = visible; *entry; entry += strcspn(entry, ",")) {
		entry += *entry == ',';
		if (*entry && strncmp(entry, "GPU-", 4) != 0 && strncmp(entry, "MIG-", 4) != 0)
			return true;
	}
	return false;
}

static bool snapshot_has_vendor(const struct gpurun_snapshot *snapshot, enum gpurun_vendor vendor)
{
	for (size_t i = 0; i < snapshot->count; i++)
		if (snapshot->devices[i].vendor == vendor)
			return true;
	return false;
}

/* HIP's own lists (CUDA_VISIBLE_DEVICES is HIP's too) index into the GPUs that
 * ROCR_VISIBLE_DEVICES leaves: kept beside a hand-off that names exactly the chosen GPUs, a
 * Slurm job's CUDA_VISIBLE_DEVICES=1,3 would filter them a second time, down to none. */
static const char *const hip_device_lists[] = {
	"HIP_VISIBLE_DEVICES",
	"CUDA_VISIBLE_DEVICES",
	"GPU_DEVICE_ORDINAL",
};

bool gpurun_choice_needs_pci_order(const struct gpurun_choice *choice, const char *visible)
{
	return strcmp(gpurun_choice_variable(choice), "CUDA_VISIBLE_DEVICES") == 0 &&
	       names_an_index(visible);
}

int gpurun_choice_export(const struct gpurun_choice *choice, const char *visible)
{
	const char *variable = gpurun_choice_variable(choice);

	if (setenv(variable, visible, 1) != 0 || setenv("GPURUN_CHOSEN", visible, 1) != 0)
		return -1;
	if (gpurun_choice_needs_pci_order(choice, visible) &&
	    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1) != 0)
		return -1;
	if (strcmp(variable, "ROCR_VISIBLE_DEVICES") == 0)
		for (size_t i = 0; i < sizeof(hip_device_lists) / sizeof(hip_device_lists[0]); i++)
			if (unsetenv(hip_device_lists[i]) != 0)
				return -1;
	/* No GPU at all: an empty ROCR_VISIBLE_DEVICES leaves ROCr none either. */
	if (choice->count == 0 && snapshot_has_vendor(&choice->snapshot, GPURUN_VENDOR_AMD) &&
	    setenv("ROCR_VISIBLE_DEVICES", "", 1) != 0)
		return -1;
	return 0;
}

/* Whether the comma list holds `entry` (length bytes) as one of its entries. */
static bool list_holds(const char *list, const char *entry, size_t length)
{
	for (const char *item = list;; item += strcspn(item, ",") + 1) {
		size_t item_length = strcspn(item, ",");

		if (item_length == length && strncmp(item, entry, length) == 0)
			return true;
		if (item[item_length] == '\0')
			return false;
	}
}

/* Whether every entry of `visible` is an entry of `chosen`: the choice itself, or a part of it
 * that the program handed to one of its workers. */
static bool part_of(const char *visible, const char *chosen)
{
	for (const char *entry = visible; *entry;) {
		size_t length = strcspn(entry, ",");

		if (!list_holds(chosen, entry, length))
			return false;
		entry += length + (entry[length] == ',');
	}
	return true;
}

/* The variable that carries a hand-off's choice: CUDA_VISIBLE_DEVICES, which an AMD hand-off
 * unsets, else ROCR_VISIBLE_DEVICES. A CUDA_VISIBLE_DEVICES set since (by Slurm) decides alone,
 * even where an older AMD hand-off's ROCR_VISIBLE_DEVICES still matches. */
const char *gpurun_choice_carrier(void)
{
	return getenv("CUDA_VISIBLE_DEVICES") || !getenv("ROCR_VISIBLE_DEVICES")
		       ? "CUDA_VISIBLE_DEVICES" : "ROCR_VISIBLE_DEVICES";
}

const char *gpurun_inherited_choice(void)
{
	const char *chosen = getenv("GPURUN_CHOSEN");
	const char *visible = getenv(gpurun_choice_carrier());

	return chosen && visible && part_of(visible, chosen) ? visible : NULL;
}

void gpurun_choice_close_watch_detached(struct gpurun_choice *choice)
{
	int fd = choice->watch_fd;

	if (fd < 0)
		return;
	choice->watch_fd = -1;
	/* As the init of a PID namespace we would inherit the orphan ourselves. */
	pid_t child = getpid() == 1 ? -1 : fork();
	if (child == 0) {
		if (fork() == 0) {
			/* Nothing of the program's (a lease, a pipe) may outlive it in here. */
			close_all_but(fd);
			close(fd);
		}
		_exit(0);
	}
	close(fd);      /* not the last reference when the grandchild holds one: quick */
	if (child > 0)
		waitpid(child, NULL, 0);
}
