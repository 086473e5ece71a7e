/* vendor: what differs between NVIDIA and AMD GPUs once they are in one snapshot: each
 * vendor's own numbering, the inherited ROCR_VISIBLE_DEVICES mask, and keeping a hand-off to
 * one vendor. */
#include <string.h>
#include <strings.h>

#include "gpurun.h"

const char *gpurun_vendor_name(enum gpurun_vendor vendor)
{
	return vendor == GPURUN_VENDOR_AMD ? "amd" : "nvidia";
}

/* AMD GPUs are appended to a snapshot in PCI-bus order, so their position among the AMD
 * devices is ROCr's index. */
int gpurun_device_vendor_index(const struct gpurun_snapshot *snapshot, size_t position)
{
	const struct gpurun_device *device = &snapshot->devices[position];
	int amd_before = 0;

	if (device->vendor != GPURUN_VENDOR_AMD)
		return device->index;
	for (size_t i = 0; i < position; i++)
		amd_before += snapshot->devices[i].vendor == GPURUN_VENDOR_AMD;
	return amd_before;
}

/* The snapshot position of the AMD device an entry names: its AMD index, or its UUID. */
static long rocr_entry_device(const struct gpurun_snapshot *snapshot, const char *text,
			      size_t length)
{
	bool digits = length > 0 && length < 10;
	unsigned index = 0;

	for (size_t i = 0; digits && i < length; i++) {
		digits = text[i] >= '0' && text[i] <= '9';
		index = index * 10 + (unsigned)(text[i] - '0');
	}
	for (size_t i = 0, amd = 0; i < snapshot->count; i++) {
		const struct gpurun_device *device = &snapshot->devices[i];

		if (device->vendor != GPURUN_VENDOR_AMD)
			continue;
		if (digits ? amd == index
			   : device->uuid[0] && strlen(device->uuid) == length &&
				     strncasecmp(device->uuid, text, length) == 0)
			return (long)i;
		amd++;
	}
	return -1;
}

/* Whether the value names the device at position. Like CUDA_VISIBLE_DEVICES, an entry that
 * names no GPU ends the list: a mask is never read as wider than it could be. Asked device by
 * device, so that reading a mask needs no memory (there are a few AMD GPUs, not thousands). */
static bool rocr_names(const struct gpurun_snapshot *snapshot, const char *text, size_t position)
{
	while (*text) {
		size_t length = strcspn(text, ",");
		long named = rocr_entry_device(snapshot, text, length);

		if (named < 0)
			return false;
		if ((size_t)named == position)
			return true;
		if (text[length] == '\0')
			return false;
		text += length + 1;
	}
	return false;
}

void gpurun_rocr_visible_mask(const struct gpurun_snapshot *snapshot,
			      const char *rocr_visible_devices, bool *allowed)
{
	if (rocr_visible_devices == NULL)
		return;
	for (size_t i = 0; i < snapshot->count; i++)
		if (snapshot->devices[i].vendor == GPURUN_VENDOR_AMD)
			allowed[i] = allowed[i] && rocr_names(snapshot, rocr_visible_devices, i);
}

/* A program is built for one vendor's runtime, and gpurun cannot tell which: on a machine with
 * both, the vendor must not depend on which GPUs happen to be free, or a CUDA job would be
 * handed an AMD GPU while it goes on to use a busy NVIDIA one. NVIDIA, as for every CUDA
 * program, unless this job may use none; --vendor amd asks for AMD outright. */
enum gpurun_vendor gpurun_job_vendor(const struct gpurun_snapshot *snapshot,
				      const struct gpurun_mask *mask,
				      const struct gpurun_request *request)
{
	for (size_t i = 0; i < snapshot->count; i++)
		if (snapshot->devices[i].vendor == GPURUN_VENDOR_NVIDIA &&
		    (!mask || gpurun_mask_leaves(mask, i)) &&
		    !gpurun_device_excluded(&snapshot->devices[i], request))
			return GPURUN_VENDOR_NVIDIA;
	return GPURUN_VENDOR_AMD;
}

size_t gpurun_select_vendor(const struct gpurun_snapshot *snapshot, const struct gpurun_mask *mask,
			    const struct gpurun_request *request, size_t *candidates, size_t count)
{
	enum gpurun_vendor chosen = gpurun_job_vendor(snapshot, mask, request);
	size_t kept = 0;

	for (size_t i = 0; i < count; i++)
		if (snapshot->devices[candidates[i]].vendor == chosen)
			candidates[kept++] = candidates[i];
	return kept;
}
