/* select: GPUtil's getAvailability and getAvailable, exactly (strict < for load and memory, >=
 * for free MiB, NaN through include_nan, stable orders), plus exclusion, lost and leased GPUs. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "gpurun.h"

/* ---- availability --------------------------------------------------------------------------- */

/* An --exclude word names a device by its index ("3", "03"), or by its UUID in any case, whole
 * or its beginning (as CUDA_VISIBLE_DEVICES takes one): a short one may name several devices,
 * and excluding more than meant is the safe side. */
static bool word_names_device(const char *word, size_t length, const struct gpurun_device *device)
{
	char text[16];
	unsigned index;

	if (length < sizeof(text)) {
		memcpy(text, word, length);
		text[length] = '\0';
		if (gpurun_parse_count(text, &index) == 0)
			return device->index >= 0 && index == (unsigned)device->index;
	}
	return strlen(device->uuid) >= length && strncasecmp(device->uuid, word, length) == 0;
}

bool gpurun_device_excluded(const struct gpurun_device *device,
			    const struct gpurun_request *request)
{
	const char *word = request->exclude;

	if (!word)
		return false;
	for (;;) {
		size_t length = strcspn(word, ",");

		if (length > 0 && word_names_device(word, length, device))
			return true;
		if (word[length] == '\0')
			return false;
		word += length + 1;
	}
}

/* GPUtil's "value < maximum or (includeNan and value is NaN)". */
static bool below(double value, double maximum, bool include_nan)
{
	return value < maximum || (include_nan && isnan(value));
}

static int explain(char *buffer, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int explain(char *buffer, size_t size, const char *fmt, ...)
{
	va_list args;

	if (buffer && size > 0) {
		va_start(args, fmt);
		vsnprintf(buffer, size, fmt, args);
		va_end(args);
	}
	return 1;
}

/* What keeps a device out whatever its state: what it is, and --exclude. */
static int ineligible_reason(const struct gpurun_device *device,
			     const struct gpurun_request *request, char *buffer, size_t size)
{
	if (device->mig_enabled)
		return explain(buffer, size, "%s",
			       gpurun_mask_verdict_text(device->mig_mode_unknown
							? GPURUN_MASK_MIG_MODE_UNKNOWN
							: GPURUN_MASK_MIG_ENABLED));
	/* CUDA knows a MIG instance by its UUID alone: without one, the hand-off would name the
	 * parent GPU, and CUDA would pick an instance itself, perhaps one leased by another job. */
	if (device->mig_parent >= 0 && !device->uuid[0])
		return explain(buffer, size, "MIG instance without a UUID: CUDA could not be told "
					     "which instance");
	if (gpurun_device_excluded(device, request))
		return explain(buffer, size, "excluded");
	return 0;
}

bool gpurun_device_eligible(const struct gpurun_device *device,
			    const struct gpurun_request *request)
{
	return ineligible_reason(device, request, NULL, 0) == 0;
}

int gpurun_unavailable_reason(const struct gpurun_device *device,
			      const struct gpurun_request *request, char *buffer, size_t size)
{
	double memory_util = gpurun_device_memory_util(device);

	if (buffer && size > 0)
		buffer[0] = '\0';
	if (device->lost)
		return explain(buffer, size, "lost (GPU_IS_LOST)");
	if (ineligible_reason(device, request, buffer, size))
		return 1;
	if (device->leased)
		return explain(buffer, size, "leased by pid %ld%s%s%s", (long)device->holder.pid,
			       device->holder.user[0] ? " (" : "", device->holder.user,
			       device->holder.user[0] ? ")" : "");
	/* NaN free memory fails even against 0, and include_nan does not rescue it (GPUtil). */
	if (isnan(device->memory_free))
		return explain(buffer, size, "free memory unknown");
	if (!(device->memory_free >= request->min_free_mib))
		return explain(buffer, size, "free %.0f MiB is below %.0f MiB", device->memory_free,
			       request->min_free_mib);
	if (!below(device->load, request->max_load, request->include_nan))
		return isnan(device->load)
			       ? explain(buffer, size, device->mig_parent >= 0
						? "load unknown: NVML reports no utilization for MIG "
						  "instances (see --include-nan)"
						: "load unknown (see --include-nan)")
			       : explain(buffer, size, "load %g%% is not below %g%%",
					 device->load * 100, request->max_load * 100);
	if (!below(memory_util, request->max_memory, request->include_nan))
		return isnan(memory_util)
			       ? explain(buffer, size, "memory use unknown (see --include-nan)")
			       : explain(buffer, size, "memory %g%% used is not below %g%%",
					 memory_util * 100, request->max_memory * 100);
	return 0;
}

bool gpurun_device_available(const struct gpurun_device *device,
			     const struct gpurun_request *request)
{
	return gpurun_unavailable_reason(device, request, NULL, 0) == 0;
}

/* ---- order ---------------------------------------------------------------------------------- */

static int compare_numbers(double a, double b)
{
	return (a > b) - (a < b);
}

/* GPUtil sorts NaN as +inf: after every number, NaNs tied among themselves. */
static int compare_nan_last(double a, double b)
{
	bool a_nan = isnan(a), b_nan = isnan(b);

	if (a_nan || b_nan)
		return (int)a_nan - (int)b_nan;
	return compare_numbers(a, b);
}

/* < 0 when a goes before b; 0 for a tie, which the stable sort leaves in snapshot order. */
static int compare_devices(const struct gpurun_device *a, const struct gpurun_device *b,
			   enum gpurun_order order)
{
	switch (order) {
	case GPURUN_ORDER_LAST:
		return compare_numbers(b->index, a->index);
	case GPURUN_ORDER_LOAD:
		return compare_nan_last(a->load, b->load);
	case GPURUN_ORDER_MEMORY:
		return compare_nan_last(gpurun_device_memory_util(a), gpurun_device_memory_util(b));
	case GPURUN_ORDER_FREE:
		return compare_nan_last(-a->memory_free, -b->memory_free);
	case GPURUN_ORDER_FIRST:
	case GPURUN_ORDER_RANDOM:
	default:
		return compare_numbers(a->index, b->index);
	}
}

struct sort {
	const struct gpurun_device *devices;
	enum gpurun_order order;
};

static bool goes_after(const struct sort *sort, size_t a, size_t b)
{
	return compare_devices(&sort->devices[a], &sort->devices[b], sort->order) > 0;
}

/* Stable: an element moves only past elements that strictly go after it. */
static void insertion_sort(const struct sort *sort, size_t *items, size_t count)
{
	for (size_t i = 1; i < count; i++) {
		size_t item = items[i];
		size_t j = i;

		for (; j > 0 && goes_after(sort, items[j - 1], item); j--)
			items[j] = items[j - 1];
		items[j] = item;
	}
}

/* Stable: on a tie the left run's element comes first. */
static void merge_sort(const struct sort *sort, size_t *items, size_t *scratch, size_t count)
{
	size_t half = count / 2;
	size_t left = 0, right = half, out = 0;

	if (count <= 16) {
		insertion_sort(sort, items, count);
		return;
	}
	merge_sort(sort, items, scratch, half);
	merge_sort(sort, items + half, scratch, count - half);
	while (left < half && right < count)
		scratch[out++] = goes_after(sort, items[left], items[right]) ? items[right++]
									      : items[left++];
	while (left < half)
		scratch[out++] = items[left++];
	while (right < count)
		scratch[out++] = items[right++];
	memcpy(items, scratch, count * sizeof(*items));
}

static void sort_stable(const struct sort *sort, size_t *items, size_t count)
{
	size_t *scratch = count > 16 ? malloc(count * sizeof(*scratch)) : NULL;

	/* Out of memory only costs time: insertion sort is as stable, just quadratic. */
	if (!scratch) {
		insertion_sort(sort, items, count);
		return;
	}
	merge_sort(sort, items, scratch, count);
	free(scratch);
}

/* splitmix64: small, seedable, good enough to spread jobs over GPUs; not for secrets. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static uint64_t fresh_seed(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (uint64_t)now.tv_sec * 1000000007u ^ (uint64_t)now.tv_nsec ^
	       (uint64_t)getpid() << 32;
}

/* Fisher-Yates over the candidates, which arrive in snapshot order. */
static void shuffle(size_t *items, size_t count, unsigned seed)
{
	uint64_t state = seed != 0 ? seed : fresh_seed();

	for (size_t i = count; i > 1; i--) {
		size_t j = (size_t)(next_random(&state) % i);
		size_t item = items[i - 1];

		items[i - 1] = items[j];
		items[j] = item;
	}
}

size_t gpurun_select(const struct gpurun_snapshot *snapshot, const bool *allowed,
		     const struct gpurun_request *request, size_t *candidates)
{
	size_t count = 0;

	for (size_t i = 0; i < snapshot->count; i++)
		if ((!allowed || allowed[i]) &&
		    gpurun_device_available(&snapshot->devices[i], request))
			candidates[count++] = i;

	if (request->order == GPURUN_ORDER_RANDOM) {
		shuffle(candidates, count, request->random_seed);
	} else {
		struct sort sort = { snapshot->devices, request->order };

		sort_stable(&sort, candidates, count);
	}
	return count;
}
