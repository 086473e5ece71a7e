/* visible: which devices the inherited environment allows. CUDA_VISIBLE_DEVICES is read exactly
 * as the CUDA driver reads it; a Slurm allocation and NVIDIA_VISIBLE_DEVICES limit it further. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpurun.h"

/* cuInit can take many seconds on a large machine without persistence mode. */
#define CUDA_ORDER_TIMEOUT_S 30.0

/*
 * How the driver reads CUDA_VISIBLE_DEVICES. NVIDIA documents the forms (integers, "GPU-" UUIDs
 * and unique prefixes of them, "MIG-<uuid>" and, before R470, "MIG-GPU-<uuid>/<gi>/<ci>") and
 * that the first invalid entry ends the list; the details come from two parsers whose authors
 * checked them against the driver:
 *  - PyTorch's torch.cuda._parse_visible_devices and _transform_uuid_to_ordinals, "validated
 *    to match the 525.60.13 driver" (pytorch/pytorch#92315), with the cases of
 *    test/test_cuda_nvml_based_avail.py: integers are read like strtoul, so leading blanks and
 *    a '+' are accepted and anything after the digits is ignored ("1gpu2,2ampere" is 1,2;
 *    "0, 1, 2, -1, 3" is 0,1,2; "2, +3, -0, 5" is 2,3,0,5); a negative number or an entry
 *    without digits ends the list ("4,3,two,one" is 4,3; "one,two,3,4" is none); a device named
 *    twice gives no device at all ("0, 1, 2, 1" is none, and so are two prefixes of one UUID);
 *    the first entry decides between integers and UUIDs ("GPU-123, 2" is GPU-123 only); a UUID
 *    entry is not trimmed; an unknown or ambiguous prefix ends the list; an integer past the
 *    last GPU ends it too ("1, 5, 0" is one GPU on a two-GPU machine).
 *  - nvitop's parse_cuda_visible_devices (which asks the driver in a child process and mimics
 *    it when it cannot): GPU- and MIG- entries may be mixed, MIG-GPU-<prefix>/<gi>/<ci> takes
 *    an abbreviated GPU UUID, and UUIDs are lower-case hex.
 * Case: both compare UUIDs as written (startswith, a lower-case-only pattern), so an upper-case
 * UUID names nothing here. Where the evidence is thin, this reading allows fewer GPUs, never
 * more: gpurun must not leave its allocation.
 *
 * What the mask means: the GPUs this job may use. An entry naming a MIG-enabled GPU (by index
 * or GPU UUID) allows all of its instances; a MIG entry allows that instance. CUDA's own limit,
 * one MIG instance per process and no whole GPU beside it, applies to the hand-off
 * (gpurun_visible_whole_first), not to the mask: a Slurm job given two MIG instances packs two
 * one-instance programs into them.
 */

enum stop {
	STOP_NONE,                      /* the whole list was read */
	STOP_INVALID,                   /* not an index (integers) or not a GPU-/MIG- UUID */
	STOP_NEGATIVE,
	STOP_OTHER_KIND,                /* an integer among UUIDs, or the other way round */
	STOP_NO_DEVICE,                 /* an index past the last GPU, or an unknown UUID */
	STOP_AMBIGUOUS,                 /* a UUID prefix of several GPUs */
};

enum order_used {
	ORDER_PCI_ASKED,                /* CUDA_DEVICE_ORDER=PCI_BUS_ID */
	ORDER_PCI_SAME_MODEL,           /* FASTEST_FIRST, but the GPUs are all alike */
	ORDER_DRIVER,                   /* the driver said */
	ORDER_PCI_GUESSED,              /* GPUs differ in model and the driver could not say */
};

/* One CUDA_VISIBLE_DEVICES value as CUDA reads it. */
struct visible_list {
	bool integers;
	size_t *targets;                /* snapshot positions, in the order the value names them */
	size_t target_count;
	bool duplicate;                 /* a device named twice: CUDA shows none */
	enum stop stop;
	const char *stop_text;          /* the entry that ended the list */
	size_t stop_length;
	enum order_used order;
	size_t driver_unmatched;        /* devices the driver shows that NVML does not */
};

/* Appends to a fixed buffer; what does not fit is cut, with "..." to say so. */
struct text {
	char *buffer;
	size_t size;
	size_t used;
};

__attribute__((format(printf, 2, 3)))
static void text_add(struct text *text, const char *fmt, ...)
{
	va_list args;
	int written;

	if (text->size == 0 || text->used + 1 >= text->size)
		return;
	va_start(args, fmt);
	written = vsnprintf(text->buffer + text->used, text->size - text->used, fmt, args);
	va_end(args);
	if (written < 0)
		return;
	if ((size_t)written >= text->size - text->used) {
		text->used = text->size - 1;
		if (text->size > 4)
			memcpy(text->buffer + text->size - 4, "...", 4);
		return;
	}
	text->used += (size_t)written;
}

static size_t count_entries(const char *value)
{
	size_t count = 1;

	for (; *value; value++)
		count += *value == ',';
	return count;
}

/* A variable's value as an error message quotes it: whole when short, else its start, so that
 * the reason after it still fits on the line. */
static const char *quoted(const char *value, char *buffer, size_t size)
{
	if (strlen(value) <= 64)
		return value;
	snprintf(buffer, size, "%.48s... (%zu entries)", value, count_entries(value));
	return buffer;
}

/* ---- the snapshot, as CUDA counts it --------------------------------------------------- */

static bool is_nvidia(const struct gpurun_device *device)
{
	return device->vendor == GPURUN_VENDOR_NVIDIA;
}

/* A GPU CUDA can number: an NVIDIA device that is not a MIG instance. */
static bool is_physical(const struct gpurun_device *device)
{
	return is_nvidia(device) && device->mig_parent < 0;
}

static bool is_instance(const struct gpurun_device *device)
{
	return is_nvidia(device) && device->mig_parent >= 0;
}

static long physical_with_index(const struct gpurun_snapshot *snapshot, unsigned long long index)
{
	for (size_t i = 0; i < snapshot->count; i++)
		if (is_physical(&snapshot->devices[i]) && snapshot->devices[i].index >= 0 &&
		    (unsigned long long)snapshot->devices[i].index == index)
			return (long)i;
	return -1;
}

static bool machine_has_mig(const struct gpurun_snapshot *snapshot)
{
	for (size_t i = 0; i < snapshot->count; i++)
		if (is_physical(&snapshot->devices[i]) && snapshot->devices[i].mig_enabled)
			return true;
	return false;
}

/* How many GPUs of the vendor the snapshot has (MIG instances are not GPUs). */
static size_t gpus_of(const struct gpurun_snapshot *snapshot, enum gpurun_vendor vendor)
{
	size_t count = 0;

	for (size_t i = 0; i < snapshot->count; i++)
		count += snapshot->devices[i].vendor == vendor && !is_instance(&snapshot->devices[i]);
	return count;
}

/* FASTEST_FIRST can only reorder GPUs that differ; an unknown name might differ. */
bool gpurun_cuda_order_may_differ(const struct gpurun_snapshot *snapshot)
{
	const char *first = NULL;

	for (size_t i = 0; i < snapshot->count; i++) {
		const struct gpurun_device *device = &snapshot->devices[i];

		if (!is_physical(device))
			continue;
		if (!device->name[0])
			return gpus_of(snapshot, GPURUN_VENDOR_NVIDIA) > 1;
		if (!first)
			first = device->name;
		else if (strcmp(first, device->name) != 0)
			return true;
	}
	return false;
}

/* ---- entries ------------------------------------------------------------------------------ */

/* strtoul's blanks. */
static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* An integer entry as strtoul reads it: blanks, a sign, decimal digits, then anything. Returns
 * false without digits; *negative for a '-' before a non-zero number ("-0" is 0). Values past
 * the range saturate, which no GPU index reaches. */
static bool read_integer(const char *text, size_t length, unsigned long long *value,
			 bool *negative)
{
	size_t i = 0;
	bool minus = false;

	*value = 0;
	while (i < length && is_blank(text[i]))
		i++;
	if (i < length && (text[i] == '+' || text[i] == '-'))
		minus = text[i++] == '-';
	if (i >= length || !is_digit(text[i]))
		return false;
	for (; i < length && is_digit(text[i]); i++) {
		unsigned digit = (unsigned)(text[i] - '0');

		*value = *value > (~0ull - digit) / 10 ? ~0ull : *value * 10 + digit;
	}
	*negative = minus && *value != 0;
	return true;
}

static bool starts_with(const char *text, size_t length, const char *prefix)
{
	size_t n = strlen(prefix);

	return length >= n && memcmp(text, prefix, n) == 0;
}

/* An entry CUDA reads as a UUID, not an index. */
static bool is_uuid_entry(const char *text, size_t length)
{
	return starts_with(text, length, "GPU-") || starts_with(text, length, "MIG-");
}

/* The one physical GPU whose UUID starts with the prefix; -1 none, -2 several. */
static long gpu_by_prefix(const struct gpurun_snapshot *snapshot, const char *prefix, size_t length)
{
	long found = -1;

	for (size_t i = 0; i < snapshot->count; i++) {
		const struct gpurun_device *device = &snapshot->devices[i];

		if (!is_physical(device) || strlen(device->uuid) < length ||
		    memcmp(device->uuid, prefix, length) != 0)
			continue;
		if (found >= 0)
			return -2;
		found = (long)i;
	}
	return found;
}

/* "MIG-GPU-<uuid or prefix>/<gi>/<ci>": the instance of that GPU with those ids. */
static long instance_by_ids(const struct gpurun_snapshot *snapshot, const char *text, size_t length,
			    enum stop *stop)
{
	const char *gpu = text + 4, *end = text + length;
	const char *slash = memchr(gpu, '/', (size_t)(end - gpu));
	unsigned long long ids[2];
	const char *at;

	*stop = STOP_INVALID;
	if (!slash)
		return -1;
	at = slash;
	for (int n = 0; n < 2; n++) {
		size_t digits = 0;

		if (at >= end || *at != '/')
			return -1;
		at++;
		ids[n] = 0;
		for (; at + digits < end && is_digit(at[digits]); digits++)
			ids[n] = ids[n] > 100000 ? ids[n] : ids[n] * 10 + (unsigned)(at[digits] - '0');
		if (digits == 0)
			return -1;
		at += digits;
	}
	if (at != end)
		return -1;
	long parent = gpu_by_prefix(snapshot, gpu, (size_t)(slash - gpu));
	if (parent < 0) {
		*stop = parent == -2 ? STOP_AMBIGUOUS : STOP_NO_DEVICE;
		return -1;
	}
	for (size_t i = 0; i < snapshot->count; i++) {
		const struct gpurun_device *device = &snapshot->devices[i];

		if (is_instance(device) && device->mig_parent == snapshot->devices[parent].index &&
		    device->mig_gpu_instance >= 0 && device->mig_compute_instance >= 0 &&
		    (unsigned long long)device->mig_gpu_instance == ids[0] &&
		    (unsigned long long)device->mig_compute_instance == ids[1])
			return (long)i;
	}
	*stop = STOP_NO_DEVICE;
	return -1;
}

/* A UUID entry: the device it names, or -1 with *stop saying why not. */
static long resolve_uuid(const struct gpurun_snapshot *snapshot, const char *text, size_t length,
			 enum stop *stop)
{
	if (starts_with(text, length, "GPU-")) {
		long found = gpu_by_prefix(snapshot, text, length);

		*stop = found == -2 ? STOP_AMBIGUOUS : STOP_NO_DEVICE;
		return found;
	}
	/* MIG UUIDs are matched whole: nothing says the driver takes a prefix of one. The
	 * drivers before R470 name instances "MIG-GPU-<uuid>/<gi>/<ci>" themselves. */
	for (size_t i = 0; i < snapshot->count; i++) {
		const struct gpurun_device *device = &snapshot->devices[i];

		if (is_instance(device) && strlen(device->uuid) == length &&
		    memcmp(device->uuid, text, length) == 0)
			return (long)i;
	}
	if (starts_with(text, length, "MIG-GPU-"))
		return instance_by_ids(snapshot, text, length, stop);
	*stop = STOP_NO_DEVICE;
	return -1;
}

/* ---- CUDA_VISIBLE_DEVICES ------------------------------------------------------------------ */

static void stop_at(struct visible_list *list, enum stop stop, const char *text, size_t length)
{
	list->stop = stop;
	list->stop_text = text;
	list->stop_length = length;
}

static bool add_target(struct visible_list *list, size_t position)
{
	for (size_t i = 0; i < list->target_count; i++) {
		if (list->targets[i] == position) {
			list->duplicate = true;
			return false;
		}
	}
	list->targets[list->target_count++] = position;
	return true;
}

/* Whether an entry is written twice among the UUID entries, up to the first entry that is not
 * one: PyTorch's reading of the driver gives no device then, even when an entry between the
 * two would have ended the list. */
static bool uuid_written_twice(const char *value)
{
	for (const char *entry = value;;) {
		size_t length = strcspn(entry, ",");

		if (!is_uuid_entry(entry, length))
			return false;
		for (const char *later = entry + length; *later == ',';) {
			later++;
			size_t later_length = strcspn(later, ",");
			if (!is_uuid_entry(later, later_length))
				break;
			if (later_length == length && memcmp(later, entry, length) == 0)
				return true;
			later += later_length;
		}
		if (entry[length] == '\0')
			return false;
		entry += length + 1;
	}
}

static void parse_uuids(const struct gpurun_snapshot *snapshot, const char *value,
			struct visible_list *list)
{
	if (uuid_written_twice(value)) {
		list->duplicate = true;
		return;
	}
	for (const char *entry = value;;) {
		size_t length = strcspn(entry, ",");
		enum stop stop = STOP_NONE;
		long position;

		if (!is_uuid_entry(entry, length)) {
			unsigned long long number;
			bool negative;

			stop_at(list, read_integer(entry, length, &number, &negative)
					       ? STOP_OTHER_KIND : STOP_INVALID, entry, length);
			return;
		}
		position = resolve_uuid(snapshot, entry, length, &stop);
		if (position < 0) {
			stop_at(list, stop, entry, length);
			return;
		}
		if (!add_target(list, (size_t)position))
			return;
		if (entry[length] == '\0')
			return;
		entry += length + 1;
	}
}

/* An integer entry: its number, and where the value writes it (a message quotes the entry that
 * ended the list). */
struct integer_entry {
	unsigned long long number;
	const char *text;
	size_t length;
};

static bool number_read_before(const struct integer_entry *entries, size_t count,
			       unsigned long long number)
{
	for (size_t i = 0; i < count; i++)
		if (entries[i].number == number)
			return true;
	return false;
}

/* Reads the integer entries up to the first that ends the list (list->stop says which, and
 * why) and returns how many there are. The syntax first, the devices later: a repeated index
 * empties the list even when an index between the two is past the last GPU (PyTorch's reading
 * of the driver). */
static size_t read_integer_entries(const char *value, struct integer_entry *entries,
				   struct visible_list *list)
{
	size_t count = 0;

	for (const char *entry = value;;) {
		size_t length = strcspn(entry, ",");
		unsigned long long number;
		bool negative;

		if (!read_integer(entry, length, &number, &negative)) {
			stop_at(list, is_uuid_entry(entry, length) ? STOP_OTHER_KIND : STOP_INVALID,
				entry, length);
			return count;
		}
		if (negative) {
			stop_at(list, STOP_NEGATIVE, entry, length);
			return count;
		}
		if (number_read_before(entries, count, number)) {
			list->duplicate = true;
			return count;
		}
		entries[count++] = (struct integer_entry){ number, entry, length };
		if (entry[length] == '\0')
			return count;
		entry += length + 1;
	}
}

/* How CUDA numbers the GPUs: in PCI order when asked to, or when the GPUs are all alike; else
 * fastest first, which only the driver can tell (PCI order is then a guess). */
static enum order_used order_to_read(const struct gpurun_snapshot *snapshot,
				     const struct gpurun_inherited *inherited)
{
	if (inherited->cuda_device_order && strcmp(inherited->cuda_device_order, "PCI_BUS_ID") == 0)
		return ORDER_PCI_ASKED;
	return gpurun_cuda_order_may_differ(snapshot) ? ORDER_PCI_GUESSED : ORDER_PCI_SAME_MODEL;
}

/* Asks the driver which devices it shows for the entries, written as plain numbers. False
 * when out of memory. */
static bool ask_driver(const struct integer_entry *entries, size_t count,
		       struct gpurun_cuda_order *order)
{
	char *written = calloc(count, 24);      /* 20 digits and a comma per entry */
	struct text text = { written, count * 24, 0 };
	int status;

	if (!written)
		return false;
	for (size_t i = 0; i < count; i++)
		text_add(&text, "%s%llu", i ? "," : "", entries[i].number);
	status = gpurun_cuda_order_read(written, CUDA_ORDER_TIMEOUT_S, order);
	free(written);
	/* Out of memory is no answer: a later look asks again. */
	order->asked = status == 0;
	return status == 0;
}

/* Whether the driver's answer can place the entries. A driver that shows more devices than
 * were asked for did not apply the list: its failure then says so. */
static bool driver_answer_fits(struct gpurun_cuda_order *order, size_t count)
{
	if (!order->answered)
		return false;
	if (order->count > count) {
		snprintf(order->failure, sizeof(order->failure),
			 "the CUDA driver showed %zu devices for %zu entries", order->count, count);
		return false;
	}
	return true;
}

/* The device whose UUID the driver reported. The answer writes "GPU-" before every UUID, a MIG
 * instance's too, so the prefix is not compared. */
static long nvidia_with_uuid(const struct gpurun_snapshot *snapshot, const char *uuid)
{
	for (size_t i = 0; i < snapshot->count; i++) {
		const struct gpurun_device *device = &snapshot->devices[i];

		if (is_nvidia(device) && strlen(device->uuid) > 4 &&
		    strcasecmp(device->uuid + 4, uuid + 4) == 0)
			return (long)i;
	}
	return -1;
}

/* Places the integers through the driver's answer: the devices it showed, which an integer
 * names as a whole GPU even where the driver showed one of its MIG instances. The answer has
 * no more devices than the entries (driver_answer_fits checks). */
static void place_by_driver(const struct gpurun_snapshot *snapshot,
			    const struct gpurun_cuda_order *order, const struct integer_entry *entries,
			    size_t count, struct visible_list *list)
{
	for (size_t k = 0; k < order->count && list->target_count < count; k++) {
		long found = nvidia_with_uuid(snapshot, order->uuids[k]);

		if (found < 0) {
			list->driver_unmatched++;
			continue;
		}
		if (is_instance(&snapshot->devices[found]))
			found = physical_with_index(snapshot,
						    (unsigned long long)snapshot->devices[found].mig_parent);
		if (found >= 0)
			add_target(list, (size_t)found);
	}
	list->duplicate = false;        /* the driver already applied CUDA's rules */
	/* Which entry a missing device came from, the answer does not say. */
	if (list->target_count < count && list->driver_unmatched == 0)
		stop_at(list, STOP_NO_DEVICE, entries[list->target_count].text,
			entries[list->target_count].length);
}

/* Places the integers as NVML's indices, which are CUDA's in PCI order. */
static void place_by_pci(const struct gpurun_snapshot *snapshot,
			 const struct integer_entry *entries, size_t count, struct visible_list *list)
{
	for (size_t i = 0; i < count; i++) {
		long position = physical_with_index(snapshot, entries[i].number);

		if (position < 0) {
			stop_at(list, STOP_NO_DEVICE, entries[i].text, entries[i].length);
			return;
		}
		add_target(list, (size_t)position);
	}
}

/* Places the integers in CUDA's order, asking the driver for it where only the driver knows.
 * False when out of memory. */
static bool place_integers(const struct gpurun_snapshot *snapshot,
			   const struct gpurun_inherited *inherited, struct gpurun_cuda_order *order,
			   const struct integer_entry *entries, size_t count,
			   struct visible_list *list)
{
	list->order = order_to_read(snapshot, inherited);
	if (list->order == ORDER_PCI_GUESSED && order) {
		if (!order->asked && !ask_driver(entries, count, order))
			return false;
		if (driver_answer_fits(order, count)) {
			list->order = ORDER_DRIVER;
			place_by_driver(snapshot, order, entries, count, list);
			return true;
		}
	}
	place_by_pci(snapshot, entries, count, list);
	return true;
}

/* Reads the integer entries and places them in CUDA's order. False when out of memory. */
static bool parse_integers(const struct gpurun_snapshot *snapshot,
			   const struct gpurun_inherited *inherited, struct gpurun_cuda_order *order,
			   const char *value, size_t entry_count, struct visible_list *list)
{
	struct integer_entry *entries = calloc(entry_count, sizeof(*entries));
	size_t count;
	bool placed = true;

	if (!entries)
		return false;
	count = read_integer_entries(value, entries, list);
	if (count > 0 && !list->duplicate)
		placed = place_integers(snapshot, inherited, order, entries, count, list);
	free(entries);
	return placed;
}

/* Reads the value as CUDA does. list->targets must have room for one per entry. False when
 * out of memory. */
static bool parse_visible(const struct gpurun_snapshot *snapshot,
			  const struct gpurun_inherited *inherited, struct gpurun_cuda_order *order,
			  const char *value, size_t entry_count, struct visible_list *list)
{
	list->integers = !is_uuid_entry(value, strlen(value));
	if (!list->integers)
		parse_uuids(snapshot, value, list);
	else if (!parse_integers(snapshot, inherited, order, value, entry_count, list))
		return false;
	if (list->duplicate)
		list->target_count = 0;
	return true;
}

/* Marks the devices a named device stands for: itself, and a MIG-enabled GPU's instances (it
 * stays named, though never chosen itself). */
static void mark_named(const struct gpurun_snapshot *snapshot, size_t position, bool *named)
{
	const struct gpurun_device *device = &snapshot->devices[position];

	named[position] = true;
	if (!device->mig_enabled)
		return;
	for (size_t i = 0; i < snapshot->count; i++)
		if (is_instance(&snapshot->devices[i]) &&
		    snapshot->devices[i].mig_parent == device->index)
			named[i] = true;
}

static size_t instance_count(const struct gpurun_snapshot *snapshot, int parent)
{
	size_t count = 0;

	for (size_t i = 0; i < snapshot->count; i++)
		count += is_instance(&snapshot->devices[i]) && snapshot->devices[i].mig_parent == parent;
	return count;
}

static void describe_targets(const struct gpurun_snapshot *snapshot,
			     const struct visible_list *list, struct text *rules)
{
	char label[64];

	if (list->target_count == 0) {
		text_add(rules, "no GPU");
		return;
	}
	for (size_t i = 0; i < list->target_count; i++) {
		const struct gpurun_device *device = &snapshot->devices[list->targets[i]];

		gpurun_device_label(device, label, sizeof(label));
		text_add(rules, "%s%s", i ? ", " : "", label);
		if (device->mig_enabled)
			text_add(rules, " (MIG %s: its %zu instance%s)",
				 device->mig_mode_unknown ? "mode unknown" : "enabled",
				 instance_count(snapshot, device->index),
				 instance_count(snapshot, device->index) == 1 ? "" : "s");
	}
}

static const char *stop_reason(enum stop stop, bool integers)
{
	switch (stop) {
	case STOP_INVALID:
		return integers ? "not a number" : "not a GPU- or MIG- UUID";
	case STOP_NEGATIVE:
		return "negative";
	case STOP_OTHER_KIND:
		return integers ? "a UUID among indices" : "an index among UUIDs";
	case STOP_NO_DEVICE:
		return integers ? "no such GPU" : "no GPU has that UUID";
	case STOP_AMBIGUOUS:
		return "a prefix of several GPUs' UUIDs";
	case STOP_NONE:
	default:
		return "";
	}
}

static void describe_order(const struct visible_list *list, const struct gpurun_cuda_order *order,
			   struct text *rules)
{
	switch (list->order) {
	case ORDER_PCI_ASKED:
		text_add(rules, "; indices in PCI order (CUDA_DEVICE_ORDER=PCI_BUS_ID)");
		break;
	case ORDER_PCI_SAME_MODEL:
		text_add(rules, "; indices in PCI order (the GPUs are all one model, so CUDA's "
				"fastest-first order is the same)");
		break;
	case ORDER_DRIVER:
		text_add(rules, "; indices in CUDA's order as the CUDA driver reports it (the GPUs differ "
				"in model and CUDA_DEVICE_ORDER is not PCI_BUS_ID)");
		if (list->driver_unmatched)
			text_add(rules, "; %zu device%s the driver shows %s not in NVML's list",
				 list->driver_unmatched, list->driver_unmatched == 1 ? "" : "s",
				 list->driver_unmatched == 1 ? "is" : "are");
		break;
	case ORDER_PCI_GUESSED:
		text_add(rules, "; indices assumed in PCI order: the GPUs differ in model and "
				"CUDA_DEVICE_ORDER is not PCI_BUS_ID, but %s",
			 order && order->asked ? order->failure : "the CUDA driver was not asked");
		break;
	}
}

/* ---- the mask ------------------------------------------------------------------------------ */

static bool is_mig_verdict(enum gpurun_mask_verdict verdict)
{
	return verdict == GPURUN_MASK_MIG_ENABLED || verdict == GPURUN_MASK_MIG_MODE_UNKNOWN;
}

/* The first rule that leaves a device out names the reason. A MIG-enabled GPU is never chosen
 * itself, but only a rule leaves it out of the job altogether: that verdict replaces its own. */
static void mask_out(struct gpurun_mask *mask, size_t position, enum gpurun_mask_verdict verdict)
{
	if (mask->verdicts[position] == GPURUN_MASK_ALLOWED || is_mig_verdict(mask->verdicts[position]))
		mask->verdicts[position] = verdict;
	mask->allowed[position] = false;
}

/* Leaves out every device of the vendor, for the same reason. */
static void mask_out_vendor(const struct gpurun_snapshot *snapshot, enum gpurun_vendor vendor,
			    struct gpurun_mask *mask, enum gpurun_mask_verdict verdict)
{
	for (size_t i = 0; i < snapshot->count; i++)
		if (snapshot->devices[i].vendor == vendor)
			mask_out(mask, i, verdict);
}

static size_t allowed_of(const struct gpurun_snapshot *snapshot, const struct gpurun_mask *mask,
			 enum gpurun_vendor vendor)
{
	size_t count = 0;

	for (size_t i = 0; i < snapshot->count; i++)
		count += snapshot->devices[i].vendor == vendor && mask->allowed[i];
	return count;
}

/* The container toolkit matches whole UUIDs regardless of case (libnvidia-container's
 * select_devices compares with strcasecmp), and no prefixes. */
static bool starts_with_any_case(const char *text, size_t length, const char *prefix)
{
	size_t prefix_length = strlen(prefix);

	return length >= prefix_length && strncasecmp(text, prefix, prefix_length) == 0;
}

/* A list of full UUIDs names GPUs in any process; indices are the host's. */
static bool all_uuids(const char *value)
{
	for (const char *entry = value;;) {
		size_t length = strcspn(entry, ",");

		if (!starts_with_any_case(entry, length, "GPU-") &&
		    !starts_with_any_case(entry, length, "MIG-"))
			return false;
		if (entry[length] == '\0')
			return true;
		entry += length + 1;
	}
}

static bool listed_exactly(const char *list, const char *uuid)
{
	size_t length = strlen(uuid);

	for (const char *entry = list; length > 0;) {
		size_t entry_length = strcspn(entry, ",");

		if (entry_length == length && strncasecmp(entry, uuid, length) == 0)
			return true;
		if (entry[entry_length] == '\0')
			return false;
		entry += entry_length + 1;
	}
	return false;
}

/* The NVIDIA container toolkit's variable: it chose the GPUs that entered the container before
 * gpurun ran, so only "no GPU" and UUIDs still mean something in here. "void" is not "no GPU":
 * it tells the runtime to inject nothing itself, and CDI specs set it in containers whose GPUs
 * came in by CDI (nvidia-container-toolkit #395); what NVML sees is what the container has. */
static void apply_container(const struct gpurun_snapshot *snapshot, const char *value,
			    struct gpurun_mask *mask, struct text *rules, struct text *why)
{
	size_t before = allowed_of(snapshot, mask, GPURUN_VENDOR_NVIDIA);

	if (!value)
		return;
	if (strcmp(value, "void") == 0) {
		text_add(rules, "NVIDIA_VISIBLE_DEVICES=void: the container runtime injected nothing "
				"itself (with CDI the GPUs came in by CDI); nothing to apply\n");
		return;
	}
	if (strcmp(value, "none") == 0) {
		text_add(rules, "NVIDIA_VISIBLE_DEVICES=%s: the container was given no GPU: no GPU\n",
			 value);
		mask_out_vendor(snapshot, GPURUN_VENDOR_NVIDIA, mask, GPURUN_MASK_NO_GPU);
		if (before > 0)
			text_add(why, "NVIDIA_VISIBLE_DEVICES=%s: this container was given no GPU", value);
		return;
	}
	if (value[0] == '\0' || strcmp(value, "all") == 0) {
		text_add(rules, "NVIDIA_VISIBLE_DEVICES=%s: %s\n", value,
			 value[0] ? "every GPU of the container" : "not a GPU container; nothing to apply");
		return;
	}
	if (!all_uuids(value)) {
		text_add(rules, "NVIDIA_VISIBLE_DEVICES=%s: applied by the container runtime when the "
				"container started (host indices; NVML numbers the GPUs it let in from 0)\n",
			 value);
		return;
	}
	text_add(rules, "NVIDIA_VISIBLE_DEVICES=%s: only the GPUs with those UUIDs\n", value);
	for (size_t i = 0; i < snapshot->count; i++) {
		const struct gpurun_device *device = &snapshot->devices[i];
		long parent = is_instance(device)
			? physical_with_index(snapshot, (unsigned long long)device->mig_parent) : -1;

		if (!is_nvidia(device) || listed_exactly(value, device->uuid) ||
		    (parent >= 0 && listed_exactly(value, snapshot->devices[parent].uuid)))
			continue;
		mask_out(mask, i, GPURUN_MASK_OUTSIDE_CONTAINER);
	}
	if (before > 0 && allowed_of(snapshot, mask, GPURUN_VENDOR_NVIDIA) == 0) {
		char shown[96];

		text_add(why, "NVIDIA_VISIBLE_DEVICES=%s names no GPU this process sees",
			 quoted(value, shown, sizeof(shown)));
	}
}

/* ROCr's variable: a mask on the AMD GPUs, in ROCr's numbering or by UUID (vendor.c reads it). */
static int apply_rocr_visible(const struct gpurun_snapshot *snapshot, const char *value,
			      struct gpurun_mask *mask, struct text *rules, struct text *why,
			      struct gpurun_error *err)
{
	size_t before = allowed_of(snapshot, mask, GPURUN_VENDOR_AMD);
	bool *named;
	char shown[96];

	if (!value || gpus_of(snapshot, GPURUN_VENDOR_AMD) == 0)
		return 0;
	named = malloc(snapshot->count * sizeof(*named));
	if (!named)
		return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory");
	for (size_t i = 0; i < snapshot->count; i++)
		named[i] = true;
	gpurun_rocr_visible_mask(snapshot, value, named);
	value = quoted(value, shown, sizeof(shown));
	text_add(rules, "ROCR_VISIBLE_DEVICES=%s (inherited): ", value);
	size_t listed = 0;
	for (size_t i = 0; i < snapshot->count; i++) {
		if (snapshot->devices[i].vendor != GPURUN_VENDOR_AMD)
			continue;
		if (named[i])
			text_add(rules, "%sAMD GPU %d", listed++ ? ", " : "", snapshot->devices[i].index);
		else
			mask_out(mask, i, GPURUN_MASK_NOT_IN_ROCR);
	}
	text_add(rules, "%s\n", listed ? "" : "no AMD GPU");
	if (before > 0 && allowed_of(snapshot, mask, GPURUN_VENDOR_AMD) == 0)
		text_add(why, "%sROCR_VISIBLE_DEVICES%s%s %s", why->used ? "; " : "", *value ? "=" : "",
			 value, !*value ? "is empty" : listed ? "names no AMD GPU the other variables allow"
							       : "names no AMD GPU");
	free(named);
	return 0;
}

/* Slurm's node-global indices of the GPUs it allocated ("0,2"); false when it is not a list. */
static bool read_slurm_list(const char *value, unsigned long long *indices, size_t *count)
{
	*count = 0;
	if (value[0] == '\0')
		return true;
	for (const char *entry = value;;) {
		size_t length = strcspn(entry, ",");
		unsigned long long index = 0;

		if (length == 0 || length > 9)
			return false;
		for (size_t i = 0; i < length; i++) {
			if (!is_digit(entry[i]))
				return false;
			index = index * 10 + (unsigned)(entry[i] - '0');
		}
		indices[(*count)++] = index;
		if (entry[length] == '\0')
			return true;
		entry += length + 1;
	}
}

/* Slurm numbers the GPUs of the node's gres type: on a node of one vendor, that vendor's own
 * index (NVML's, or the amdgpu cards' in PCI order). Where both vendors are present the
 * numbers are Slurm's own mix, and only the NVIDIA GPUs can be matched to them. */
static enum gpurun_vendor slurm_vendor(const struct gpurun_snapshot *snapshot)
{
	for (size_t i = 0; i < snapshot->count; i++)
		if (is_nvidia(&snapshot->devices[i]))
			return GPURUN_VENDOR_NVIDIA;
	return GPURUN_VENDOR_AMD;
}

/* A Slurm allocation: the step's GPUs, else the job's. */
struct slurm_allocation {
	const char *name;               /* the variable that gives it */
	const char *value;              /* NULL: neither variable is set */
	const char *what;               /* what the variable is, as --explain says */
	enum gpurun_vendor vendor;      /* whose GPUs Slurm numbers here */
	bool is_list;                   /* else the value is not a list of GPU indices */
	unsigned long long *indices;
	size_t count;
};

/* Which variable gives the allocation, what it is, and its indices. False when out of memory. */
static bool read_slurm_allocation(const struct gpurun_snapshot *snapshot,
				  const struct gpurun_inherited *inherited,
				  struct slurm_allocation *allocation)
{
	bool step = inherited->slurm_step_gpus != NULL;

	*allocation = (struct slurm_allocation){
		.name = step ? "SLURM_STEP_GPUS" : "SLURM_JOB_GPUS",
		.value = step ? inherited->slurm_step_gpus : inherited->slurm_job_gpus,
		.what = step ? "the Slurm step's GPUs" : "the Slurm job's GPUs",
		.vendor = slurm_vendor(snapshot),
	};
	if (!allocation->value)
		return true;
	allocation->indices = calloc(count_entries(allocation->value), sizeof(*allocation->indices));
	if (!allocation->indices)
		return false;
	allocation->is_list = read_slurm_list(allocation->value, allocation->indices,
					      &allocation->count);
	return true;
}

/* A value gpurun cannot read leaves no GPU: any other reading might leave the allocation. */
static void apply_slurm_unreadable(const struct gpurun_snapshot *snapshot,
				   const struct slurm_allocation *allocation, struct gpurun_mask *mask,
				   struct text *rules, struct text *why)
{
	size_t before = allowed_of(snapshot, mask, allocation->vendor);

	text_add(rules, "%s=%s (%s) is not a list of GPU indices: no GPU, to stay inside the "
			"allocation\n", allocation->name, allocation->value, allocation->what);
	mask_out_vendor(snapshot, allocation->vendor, mask, GPURUN_MASK_OUTSIDE_SLURM);
	if (before > 0)
		text_add(why, "%s=%s is not a list of GPU indices", allocation->name, allocation->value);
}

/* On a machine with MIG, Slurm numbers MIG instances and names them by UUID in
 * CUDA_VISIBLE_DEVICES, which then limits: without it, nothing says which GPUs are the job's. */
static void apply_slurm_mig(const struct gpurun_snapshot *snapshot,
			    const struct gpurun_inherited *inherited,
			    const struct slurm_allocation *allocation, struct gpurun_mask *mask,
			    struct text *rules, struct text *why)
{
	size_t before = allowed_of(snapshot, mask, allocation->vendor);

	if (inherited->cuda_visible_devices) {
		text_add(rules, "%s=%s (%s): not applied: on a machine with MIG, Slurm numbers MIG "
				"instances, which it names by UUID in CUDA_VISIBLE_DEVICES\n",
			 allocation->name, allocation->value, allocation->what);
		return;
	}
	text_add(rules, "%s=%s (%s): on a machine with MIG, Slurm numbers MIG instances, and "
			"CUDA_VISIBLE_DEVICES, which would name them, is not set: no GPU, to stay "
			"inside the allocation\n", allocation->name, allocation->value, allocation->what);
	mask_out_vendor(snapshot, allocation->vendor, mask, GPURUN_MASK_OUTSIDE_SLURM);
	if (before > 0)
		text_add(why, "%s=%s numbers MIG instances, and CUDA_VISIBLE_DEVICES, which would name "
			      "them, is not set", allocation->name, allocation->value);
}

/* No more GPUs seen than allocated: the job is confined to its own GPUs (cgroup devices), which
 * it sees renumbered from 0, so the indices cannot be compared, and need not be. */
static void apply_slurm_confined(const struct gpurun_snapshot *snapshot,
				 const struct slurm_allocation *allocation, struct text *rules)
{
	size_t seen = gpus_of(snapshot, allocation->vendor);

	text_add(rules, "%s=%s (%s): this process sees %zu GPU%s and %zu %s allocated: a confined "
			"job sees only its own GPUs (renumbered from 0), so every GPU seen is in the "
			"allocation\n", allocation->name, allocation->value, allocation->what, seen,
		 seen == 1 ? "" : "s", allocation->count, allocation->count == 1 ? "is" : "are");
}

/* Whether the allocation holds the device (a MIG instance: its GPU). */
static bool slurm_allocated(const struct gpurun_snapshot *snapshot,
			    const struct slurm_allocation *allocation, size_t position)
{
	const struct gpurun_device *device = &snapshot->devices[position];
	int gpu = is_instance(device) ? device->mig_parent
				      : gpurun_device_vendor_index(snapshot, position);

	if (gpu < 0)
		return false;
	for (size_t k = 0; k < allocation->count; k++)
		if (allocation->indices[k] == (unsigned long long)gpu)
			return true;
	return false;
}

/* Node-global indices: the vendor's GPUs of those indices, and their MIG instances. */
static void apply_slurm_indices(const struct gpurun_snapshot *snapshot,
				const struct slurm_allocation *allocation, struct gpurun_mask *mask,
				struct text *rules, struct text *why)
{
	size_t before = allowed_of(snapshot, mask, allocation->vendor);

	text_add(rules, "%s=%s (%s, node indices): ", allocation->name, allocation->value,
		 allocation->what);
	for (size_t i = 0; i < allocation->count; i++)
		text_add(rules, "%s%s %llu", i ? ", " : "",
			 allocation->vendor == GPURUN_VENDOR_AMD ? "AMD GPU" : "GPU",
			 allocation->indices[i]);
	text_add(rules, "%s\n", allocation->count ? "" : "no GPU");
	for (size_t i = 0; i < snapshot->count; i++)
		if (snapshot->devices[i].vendor == allocation->vendor &&
		    !slurm_allocated(snapshot, allocation, i))
			mask_out(mask, i, GPURUN_MASK_OUTSIDE_SLURM);
	if (before > 0 && allowed_of(snapshot, mask, allocation->vendor) == 0)
		text_add(why, "%s=%s: the Slurm allocation holds no GPU this process sees",
			 allocation->name, allocation->value);
}

/* The allocation gpurun must never leave. Slurm's indices are node-global (gres.conf order,
 * which is PCI order with AutoDetect=nvml or /dev/nvidiaN listed in order); with cgroup device
 * confinement a job sees only its GPUs, renumbered from 0, and the indices cannot be compared,
 * but then every GPU it sees is its own. */
static int apply_slurm(const struct gpurun_snapshot *snapshot,
		       const struct gpurun_inherited *inherited, struct gpurun_mask *mask,
		       struct text *rules, struct text *why, struct gpurun_error *err)
{
	struct slurm_allocation allocation;

	if (!read_slurm_allocation(snapshot, inherited, &allocation))
		return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory");
	if (!allocation.value) {
		if (inherited->slurm_job_id)
			text_add(rules, "Slurm job %s has no GPU allocation (no SLURM_STEP_GPUS or "
					"SLURM_JOB_GPUS): gpurun cannot tell whether Slurm manages "
					"these GPUs; not limited\n", inherited->slurm_job_id);
		return 0;
	}
	if (allocation.vendor == GPURUN_VENDOR_NVIDIA &&
	    allowed_of(snapshot, mask, GPURUN_VENDOR_AMD) > 0) {
		text_add(rules, "%s=%s (%s): this node also has AMD GPUs, which Slurm's indices "
				"cannot be matched to: they are left out\n", allocation.name,
			 allocation.value, allocation.what);
		mask_out_vendor(snapshot, GPURUN_VENDOR_AMD, mask, GPURUN_MASK_OUTSIDE_SLURM);
	}
	if (!allocation.is_list)
		apply_slurm_unreadable(snapshot, &allocation, mask, rules, why);
	else if (allocation.count > 0 && allocation.vendor == GPURUN_VENDOR_NVIDIA &&
		 machine_has_mig(snapshot))
		apply_slurm_mig(snapshot, inherited, &allocation, mask, rules, why);
	else if (allocation.count > 0 && gpus_of(snapshot, allocation.vendor) <= allocation.count)
		apply_slurm_confined(snapshot, &allocation, rules);
	else
		apply_slurm_indices(snapshot, &allocation, mask, rules, why);
	free(allocation.indices);
	return 0;
}

/* The line --explain shows for the value: the devices it names, where CUDA stops reading it,
 * and how its indices are numbered. */
static void describe_visible(const struct gpurun_snapshot *snapshot, const char *value,
			     const struct visible_list *list, const struct gpurun_cuda_order *order,
			     struct text *rules)
{
	text_add(rules, "CUDA_VISIBLE_DEVICES=%s (inherited): ", value);
	if (list->duplicate) {
		text_add(rules, "a GPU is named twice, and CUDA then shows no GPU");
	} else {
		describe_targets(snapshot, list, rules);
		if (list->stop != STOP_NONE)
			text_add(rules, "; the list ends at '%.*s' (%s): CUDA ignores it and all after it",
				 (int)list->stop_length, list->stop_text,
				 stop_reason(list->stop, list->integers));
		if (list->integers && (list->target_count > 0 || list->stop == STOP_NO_DEVICE))
			describe_order(list, order, rules);
	}
	text_add(rules, "\n");
}

/* Why the value leaves no GPU where the variables before it left some: its own reading, or
 * what it names against what they allowed. */
static void explain_nothing_visible(const struct gpurun_snapshot *snapshot, const char *value,
				    const struct visible_list *list, const bool *named,
				    struct text *why)
{
	char shown[96];
	bool named_any = false;

	for (size_t i = 0; i < snapshot->count; i++)
		named_any |= named[i] && !snapshot->devices[i].mig_enabled;
	value = quoted(value, shown, sizeof(shown));
	if (list->duplicate)
		text_add(why, "CUDA_VISIBLE_DEVICES=%s names a GPU twice, and CUDA then shows no GPU",
			 value);
	else if (list->target_count == 0)
		text_add(why, "CUDA_VISIBLE_DEVICES=%s names no GPU: CUDA stops at its first entry "
			      "'%.*s' (%s)", value, (int)list->stop_length, list->stop_text,
			 stop_reason(list->stop, list->integers));
	else if (!named_any)
		text_add(why, "CUDA_VISIBLE_DEVICES=%s names only MIG-enabled GPUs that have no MIG "
			      "instance", value);
	else
		text_add(why, "CUDA_VISIBLE_DEVICES=%s and the allocation above have no GPU in "
			      "common", value);
}

/* CUDA's own variable, read as the driver reads it (the comment at the top of this file). */
static int apply_cuda_visible(const struct gpurun_snapshot *snapshot,
			      const struct gpurun_inherited *inherited,
			      struct gpurun_cuda_order *order, struct gpurun_mask *mask,
			      struct text *rules, struct text *why, struct text *warning,
			      struct gpurun_error *err)
{
	const char *value = inherited->cuda_visible_devices;
	size_t before = allowed_of(snapshot, mask, GPURUN_VENDOR_NVIDIA);
	struct visible_list list = { 0 };
	bool *named;

	if (!value) {
		text_add(rules, "CUDA_VISIBLE_DEVICES is not set: every GPU\n");
		return 0;
	}
	if (value[0] == '\0') {
		text_add(rules, "CUDA_VISIBLE_DEVICES is empty: CUDA shows no GPU\n");
		mask_out_vendor(snapshot, GPURUN_VENDOR_NVIDIA, mask, GPURUN_MASK_NOT_VISIBLE);
		if (before > 0)
			text_add(why, "CUDA_VISIBLE_DEVICES is empty, which gives a program no GPU");
		return 0;
	}
	list.targets = calloc(count_entries(value), sizeof(*list.targets));
	named = calloc(snapshot->count ? snapshot->count : 1, sizeof(*named));
	if (!list.targets || !named ||
	    !parse_visible(snapshot, inherited, order, value, count_entries(value), &list)) {
		free(list.targets);
		free(named);
		return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory");
	}

	describe_visible(snapshot, value, &list, order, rules);
	if (list.order == ORDER_PCI_GUESSED && list.target_count > 0)
		text_add(warning, "CUDA_VISIBLE_DEVICES=%s: the GPUs differ in model and "
				  "CUDA_DEVICE_ORDER is not PCI_BUS_ID, so CUDA may number them fastest "
				  "first, and %s; reading the indices in PCI order (as nvidia-smi numbers "
				  "GPUs). Set CUDA_DEVICE_ORDER=PCI_BUS_ID or use UUIDs to be sure", value,
			 order && order->asked ? order->failure : "the CUDA driver was not asked");

	for (size_t i = 0; i < list.target_count; i++)
		mark_named(snapshot, list.targets[i], named);
	for (size_t i = 0; i < snapshot->count; i++)
		if (is_nvidia(&snapshot->devices[i]) && !named[i])
			mask_out(mask, i, GPURUN_MASK_NOT_VISIBLE);
	if (before > 0 && allowed_of(snapshot, mask, GPURUN_VENDOR_NVIDIA) == 0)
		explain_nothing_visible(snapshot, value, &list, named, why);
	free(list.targets);
	free(named);
	return 0;
}

void gpurun_inherited_read(struct gpurun_inherited *inherited)
{
	inherited->cuda_visible_devices = getenv("CUDA_VISIBLE_DEVICES");
	inherited->cuda_device_order = getenv("CUDA_DEVICE_ORDER");
	inherited->slurm_step_gpus = getenv("SLURM_STEP_GPUS");
	inherited->slurm_job_gpus = getenv("SLURM_JOB_GPUS");
	inherited->slurm_job_id = getenv("SLURM_JOB_ID");
	inherited->nvidia_visible_devices = getenv("NVIDIA_VISIBLE_DEVICES");
	inherited->rocr_visible_devices = getenv("ROCR_VISIBLE_DEVICES");
}

void gpurun_mask_free(struct gpurun_mask *mask)
{
	free(mask->allowed);
	free(mask->verdicts);
	memset(mask, 0, sizeof(*mask));
}

int gpurun_mask_apply(const struct gpurun_snapshot *snapshot,
		      const struct gpurun_inherited *inherited, struct gpurun_cuda_order *order,
		      struct gpurun_mask *mask, struct gpurun_error *err)
{
	size_t room = snapshot->count ? snapshot->count : 1;
	struct text rules, why, warning;
	size_t selectable = 0;
	int status;

	gpurun_mask_free(mask);
	mask->allowed = calloc(room, sizeof(*mask->allowed));
	mask->verdicts = calloc(room, sizeof(*mask->verdicts));
	if (!mask->allowed || !mask->verdicts) {
		gpurun_mask_free(mask);
		return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory");
	}
	mask->count = snapshot->count;
	rules = (struct text){ mask->rules, sizeof(mask->rules), 0 };
	why = (struct text){ mask->nothing_allowed, sizeof(mask->nothing_allowed), 0 };
	warning = (struct text){ mask->warning, sizeof(mask->warning), 0 };
	for (size_t i = 0; i < snapshot->count; i++) {
		bool parent = is_physical(&snapshot->devices[i]) && snapshot->devices[i].mig_enabled;

		mask->allowed[i] = !parent;
		mask->verdicts[i] = !parent ? GPURUN_MASK_ALLOWED
				    : snapshot->devices[i].mig_mode_unknown ? GPURUN_MASK_MIG_MODE_UNKNOWN
									    : GPURUN_MASK_MIG_ENABLED;
		selectable += !parent;
	}

	/* Every variable is described, also after one of them has left nothing. Out of memory is
	 * an error: a mask it cut short would be a verdict on GPUs that no rule left out. */
	apply_container(snapshot, inherited->nvidia_visible_devices, mask, &rules, &why);
	status = apply_slurm(snapshot, inherited, mask, &rules, &why, err);
	if (status == 0)
		status = apply_cuda_visible(snapshot, inherited, order, mask, &rules, &why, &warning,
					    err);
	if (status == 0)
		status = apply_rocr_visible(snapshot, inherited->rocr_visible_devices, mask, &rules,
					    &why, err);
	if (status != 0) {
		gpurun_mask_free(mask);
		return status;
	}

	for (size_t i = 0; i < snapshot->count; i++)
		mask->allowed_count += mask->allowed[i];
	/* Only a variable can make a machine with GPUs empty; no GPU at all is no one's rule. */
	if (mask->allowed_count > 0 || selectable == 0)
		mask->nothing_allowed[0] = '\0';
	return 0;
}

const char *gpurun_mask_verdict_text(enum gpurun_mask_verdict verdict)
{
	switch (verdict) {
	case GPURUN_MASK_ALLOWED:
		return "allowed";
	case GPURUN_MASK_NO_GPU:
		return "no GPU allowed (NVIDIA_VISIBLE_DEVICES)";
	case GPURUN_MASK_OUTSIDE_CONTAINER:
		return "not given to this container (NVIDIA_VISIBLE_DEVICES)";
	case GPURUN_MASK_OUTSIDE_SLURM:
		return "outside the Slurm allocation";
	case GPURUN_MASK_NOT_VISIBLE:
		return "not named by CUDA_VISIBLE_DEVICES";
	case GPURUN_MASK_NOT_IN_ROCR:
		return "not named by ROCR_VISIBLE_DEVICES";
	case GPURUN_MASK_MIG_ENABLED:
		return "MIG enabled: its MIG instances are chosen instead";
	case GPURUN_MASK_MIG_MODE_UNKNOWN:
		return "MIG mode unknown: it may be split, so only MIG instances NVML lists can be chosen";
	}
	return "unknown";
}

bool gpurun_mask_leaves(const struct gpurun_mask *mask, size_t position)
{
	return mask->allowed[position] || is_mig_verdict(mask->verdicts[position]);
}

int gpurun_visible_mask(const struct gpurun_snapshot *snapshot, const char *cuda_visible_devices,
			bool *allowed, struct gpurun_error *err)
{
	struct gpurun_inherited inherited = { .cuda_visible_devices = cuda_visible_devices,
					      .cuda_device_order = "PCI_BUS_ID" };
	struct gpurun_mask mask = { 0 };
	int status = gpurun_mask_apply(snapshot, &inherited, NULL, &mask, err);

	if (status == 0 && snapshot->count > 0)
		memcpy(allowed, mask.allowed, snapshot->count * sizeof(*allowed));
	gpurun_mask_free(&mask);
	return status;
}

size_t gpurun_visible_whole_first(const struct gpurun_snapshot *snapshot, size_t *candidates,
				  size_t count)
{
	size_t whole = 0;

	/* Insertion by rotation keeps both groups in order without scratch memory. */
	for (size_t i = 0; i < count; i++) {
		size_t item = candidates[i];

		if (is_instance(&snapshot->devices[item]))
			continue;
		memmove(candidates + whole + 1, candidates + whole, (i - whole) * sizeof(*candidates));
		candidates[whole++] = item;
	}
	return whole;
}
