/* visible: an inherited CUDA_VISIBLE_DEVICES as a mask on the snapshot. Each entry is first
 * classified by its form, then resolved against the devices; CUDA's rule that the first
 * invalid entry ends the list applies to entries that name no device. */
#include <string.h>

#include "gpurun.h"

enum entry_kind {
	ENTRY_INDEX,                    /* "3" */
	ENTRY_UUID,                     /* "GPU-" and a full 8-4-4-4-12 UUID */
	ENTRY_INVALID,                  /* "", "-1", a too large index: CUDA stops there */
	ENTRY_NOT_UNDERSTOOD,           /* UUID prefixes, MIG entries, anything else */
};

struct entry {
	const char *text;
	size_t length;
	enum entry_kind kind;
	unsigned index;                 /* for ENTRY_INDEX */
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool all_digits(const char *text, size_t length)
{
	if (length == 0)
		return false;
	for (size_t i = 0; i < length; i++)
		if (!is_digit(text[i]))
			return false;
	return true;
}

/* "GPU-" followed by 8-4-4-4-12 hex digits, as NVML prints UUIDs. */
static bool is_full_uuid(const char *text, size_t length)
{
	static const char shape[] = "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";

	if (length != sizeof(shape) - 1)
		return false;
	for (size_t i = 0; i < length; i++)
		if (shape[i] == 'x' ? !is_hex(text[i]) : text[i] != shape[i])
			return false;
	return true;
}

static struct entry classify(const char *text, size_t length)
{
	struct entry entry = { text, length, ENTRY_NOT_UNDERSTOOD, 0 };

	if (length == 0) {
		entry.kind = ENTRY_INVALID;
	} else if (all_digits(text, length)) {
		char number[16];

		entry.kind = ENTRY_INVALID;
		if (length < sizeof(number)) {
			memcpy(number, text, length);
			number[length] = '\0';
			if (gpurun_parse_count(number, &entry.index) == 0)
				entry.kind = ENTRY_INDEX;
		}
	} else if (text[0] == '-' && all_digits(text + 1, length - 1)) {
		/* CUDA_VISIBLE_DEVICES=-1 is the well-known way to hide every GPU. */
		entry.kind = ENTRY_INVALID;
	} else if (is_full_uuid(text, length)) {
		entry.kind = ENTRY_UUID;
	}
	return entry;
}

/* The snapshot position of the device the entry names, or -1. */
static long resolve(const struct gpurun_snapshot *snapshot, const struct entry *entry)
{
	for (size_t i = 0; i < snapshot->count; i++) {
		const struct gpurun_device *device = &snapshot->devices[i];

		if (entry->kind == ENTRY_INDEX && device->index >= 0 &&
		    (unsigned)device->index == entry->index)
			return (long)i;
		if (entry->kind == ENTRY_UUID && strlen(device->uuid) == entry->length &&
		    memcmp(device->uuid, entry->text, entry->length) == 0)
			return (long)i;
	}
	return -1;
}

int gpurun_visible_mask(const struct gpurun_snapshot *snapshot, const char *cuda_visible_devices,
			bool *allowed, struct gpurun_error *err)
{
	const char *text = cuda_visible_devices;

	for (size_t i = 0; i < snapshot->count; i++)
		allowed[i] = text == NULL;
	if (text == NULL || text[0] == '\0')
		return 0;

	for (;;) {
		size_t length = strcspn(text, ",");
		struct entry entry = classify(text, length);
		long position;

		if (entry.kind == ENTRY_NOT_UNDERSTOOD)
			return gpurun_fail(err, GPURUN_EXIT_USAGE,
					   "CUDA_VISIBLE_DEVICES='%s': only indices and full GPU UUIDs are understood, not '%.*s'",
					   cuda_visible_devices, (int)length, text);
		position = entry.kind == ENTRY_INVALID ? -1 : resolve(snapshot, &entry);
		if (position < 0)
			return 0;
		allowed[position] = true;
		if (text[length] == '\0')
			return 0;
		text += length + 1;
	}
}
