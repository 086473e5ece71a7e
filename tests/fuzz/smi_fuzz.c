/* smi_fuzz: libFuzzer target for the nvidia-smi CSV parser (gpurun_smi_parse), which reads
 * whatever another program printed: every input is parsed or refused, never misread. */
#include "fuzz.h"
#include "gpurun.h"

static bool unknown_or_within(double value, double low, double high)
{
	return isnan(value) || (value >= low && value <= high);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gpurun_snapshot snapshot;
	struct gpurun_error err;

	err.message[0] = '\0';
	/* The parser takes a length: the text need not be NUL-terminated, so it is not. */
	char *copy = malloc(size ? size : 1);
	if (!copy)
		abort();
	if (size)
		memcpy(copy, data, size);
	int status = gpurun_smi_parse(copy, size, &snapshot, &err);
	free(copy);
	if (status != 0) {
		fuzz_require(status == GPURUN_EXIT_NO_GPU_INFO || status == GPURUN_EXIT_SOFTWARE);
		fuzz_require_terminated(err.message);
		fuzz_require(err.message[0] != '\0');
		return 0;
	}
	fuzz_require(snapshot.count == 0 || snapshot.devices != NULL);
	fuzz_require_terminated(snapshot.driver_version);
	for (size_t i = 0; i < snapshot.count; i++) {
		const struct gpurun_device *device = &snapshot.devices[i];

		fuzz_require_terminated(device->uuid);
		fuzz_require_terminated(device->name);
		fuzz_require_terminated(device->serial);
		fuzz_require_terminated(device->pci_bus_id);
		fuzz_require_terminated(device->display_mode);
		fuzz_require_terminated(device->display_active);
		fuzz_require(unknown_or_within(device->load, 0, 1));
		fuzz_require(unknown_or_within(device->memory_total, 0, INFINITY));
		fuzz_require(unknown_or_within(device->memory_used, 0, INFINITY));
		fuzz_require(unknown_or_within(device->memory_free, 0, INFINITY));
		fuzz_require(device->mig_parent == -1);
		(void)gpurun_device_memory_util(device);
	}
	gpurun_snapshot_free(&snapshot);
	return 0;
}
