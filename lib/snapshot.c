/* snapshot: the plain-data picture of the machine that every step after probe works on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpurun.h"

void gpurun_device_init_unknown(struct gpurun_device *device)
{
	memset(device, 0, sizeof(*device));
	device->index = -1;
	device->load = NAN;
	device->memory_total = NAN;
	device->memory_used = NAN;
	device->memory_free = NAN;
	device->temperature = NAN;
	device->power_draw = NAN;
	device->mig_parent = -1;
	device->mig_instance = -1;
	device->mig_gpu_instance = -1;
	device->mig_compute_instance = -1;
}

void gpurun_device_label(const struct gpurun_device *device, char *label, size_t size)
{
	if (device->vendor == GPURUN_VENDOR_NVIDIA && device->mig_parent >= 0)
		snprintf(label, size, "GPU %d MIG %d", device->mig_parent, device->mig_instance);
	else
		snprintf(label, size, "GPU %d", device->index);
}

int gpurun_snapshot_init(struct gpurun_snapshot *snapshot, size_t count, struct gpurun_error *err)
{
	memset(snapshot, 0, sizeof(*snapshot));
	if (count > 0) {
		snapshot->devices = calloc(count, sizeof(*snapshot->devices));
		if (!snapshot->devices)
			return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory for %zu devices",
					   count);
	}
	for (size_t i = 0; i < count; i++)
		gpurun_device_init_unknown(&snapshot->devices[i]);
	snapshot->count = count;
	return 0;
}

void gpurun_snapshot_free(struct gpurun_snapshot *snapshot)
{
	for (size_t i = 0; i < snapshot->count; i++)
		free(snapshot->devices[i].processes);
	free(snapshot->devices);
	memset(snapshot, 0, sizeof(*snapshot));
}

double gpurun_device_memory_util(const struct gpurun_device *device)
{
	/* GPUtil divides by zero here; an unknown utilization is the honest answer. */
	if (!(device->memory_total > 0) || isnan(device->memory_used))
		return NAN;
	return device->memory_used / device->memory_total;
}

int gpurun_snapshot_append(struct gpurun_snapshot *snapshot, struct gpurun_snapshot *more,
			   struct gpurun_error *err)
{
	int next_index = 0;
	struct gpurun_device *devices;

	if (more->count == 0)
		return 0;
	devices = realloc(snapshot->devices, (snapshot->count + more->count) * sizeof(*devices));
	if (!devices)
		return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory for %zu devices",
				   snapshot->count + more->count);
	snapshot->devices = devices;
	for (size_t i = 0; i < snapshot->count; i++)
		if (devices[i].index >= next_index)
			next_index = devices[i].index + 1;
	for (size_t i = 0; i < more->count; i++) {
		devices[snapshot->count + i] = more->devices[i];
		devices[snapshot->count + i].index = next_index + more->devices[i].index;
		if (more->devices[i].mig_parent >= 0)
			devices[snapshot->count + i].mig_parent += next_index;
	}
	snapshot->count += more->count;
	/* The devices (and their process lists) now belong to snapshot. */
	free(more->devices);
	memset(more, 0, sizeof(*more));
	return 0;
}
