/* probe_amdgpu: AMD GPUs from the amdgpu driver's sysfs files, with no ROCm library: load,
 * VRAM, temperature, power, name and ids of every AMD card under /sys/class/drm. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gpurun.h"
#include "sysfs_internal.h"

#define AMD_PCI_VENDOR "0x1002"
#define BYTES_PER_MIB 1048576ll
/* Bounds that no real card exceeds: a value outside them is garbage, not a measurement. */
#define MAX_VRAM_BYTES (1ll << 50)              /* 1 PiB */
#define MIN_MILLIDEGREES (-60000ll)
#define MAX_MILLIDEGREES 200000ll
#define MAX_MICROWATTS 10000000000ll            /* 10 kW */

/* One AMD card found in the listing, before its fields are read. */
struct card {
	unsigned number;                /* N of cardN */
	char bus_id[GPURUN_BUS_ID_SIZE]; /* empty when unknown */
};

/* "card" followed by digits only: card0-DP-1 (a connector) and renderD128 are not cards. */
static bool card_number(const char *name, unsigned *number)
{
	unsigned long value;
	char *end;

	if (strncmp(name, "card", 4) != 0 || !isdigit((unsigned char)name[4]))
		return false;
	errno = 0;
	value = strtoul(name + 4, &end, 10);
	if (*end != '\0' || errno == ERANGE || value > INT_MAX)
		return false;
	*number = (unsigned)value;
	return true;
}

/* A PCI address as the kernel names devices: "0000:03:00.0" (lower-case hex). */
static bool is_bus_id(const char *text)
{
	static const char shape[] = "xxxx:xx:xx.x";

	if (strlen(text) != sizeof(shape) - 1)
		return false;
	for (size_t i = 0; shape[i]; i++) {
		if (shape[i] == 'x' ? !isxdigit((unsigned char)text[i]) : text[i] != shape[i])
			return false;
	}
	return true;
}

/* The device's PCI address: PCI_SLOT_NAME in its uevent, else the name the device link
 * points to (…/0000:03:00.0). */
static void read_bus_id(int drm_fd, unsigned card_number, int device_fd, char *bus_id,
			size_t size)
{
	char text[1024];
	char link[PATH_MAX];
	char device_link[64];
	ssize_t length;

	bus_id[0] = '\0';
	if (sysfs_read_at(device_fd, "uevent", text, sizeof(text)) > 0) {
		char *saved;

		for (char *line = strtok_r(text, "\n", &saved); line;
		     line = strtok_r(NULL, "\n", &saved)) {
			if (strncmp(line, "PCI_SLOT_NAME=", 14) == 0 && is_bus_id(line + 14)) {
				snprintf(bus_id, size, "%.12s", line + 14);
				break;
			}
		}
	}
	if (bus_id[0])
		goto lower;
	snprintf(device_link, sizeof(device_link), "card%u/device", card_number);
	length = readlinkat(drm_fd, device_link, link, sizeof(link) - 1);
	if (length > 0) {
		link[length] = '\0';
		const char *base = strrchr(link, '/');

		base = base ? base + 1 : link;
		if (is_bus_id(base))
			snprintf(bus_id, size, "%.12s", base);
	}
lower:
	for (char *c = bus_id; *c; c++)
		*c = (char)tolower((unsigned char)*c);
}

/* An amdgpu card: the PCI vendor is AMD's and the device is not bound to another driver
 * (radeon, vfio-pci). A card without a driver link (some test trees) is taken at its word. */
static bool is_amdgpu(int device_fd)
{
	char text[32];
	char driver[PATH_MAX];
	ssize_t length;

	if (!sysfs_read_text_at(device_fd, "vendor", text, sizeof(text)) ||
	    strcasecmp(text, AMD_PCI_VENDOR) != 0)
		return false;
	length = readlinkat(device_fd, "driver", driver, sizeof(driver) - 1);
	if (length <= 0)
		return true;
	driver[length] = '\0';
	const char *base = strrchr(driver, '/');
	return strcmp(base ? base + 1 : driver, "amdgpu") == 0;
}

static double mib(long long bytes)
{
	return (double)(bytes / BYTES_PER_MIB);    /* floored, as nvidia-smi and rocm-smi print */
}

static void read_memory(int device_fd, struct gpurun_device *device)
{
	long long total, used;
	bool total_known = sysfs_read_integer_at(device_fd, "mem_info_vram_total", 0,
						 MAX_VRAM_BYTES, &total);
	bool used_known = sysfs_read_integer_at(device_fd, "mem_info_vram_used", 0,
						MAX_VRAM_BYTES, &used);

	if (total_known)
		device->memory_total = mib(total);
	/* More used than there is cannot be right, so neither number is believed. */
	if (used_known && (!total_known || used <= total))
		device->memory_used = mib(used);
	if (total_known && used_known && used <= total)
		device->memory_free = mib(total - used);
	if (total_known && used_known && used > total)
		device->memory_total = NAN;
}

/* ROCr's UUID for the device is "GPU-" and the 16 hex digits of unique_id (rocminfo shows
 * the same), so it is also what ROCR_VISIBLE_DEVICES accepts. Boards without one have none. */
static void read_uuid(int device_fd, struct gpurun_device *device)
{
	char text[40];
	size_t length;
	bool all_zero = true;

	if (!sysfs_read_text_at(device_fd, "unique_id", text, sizeof(text)))
		return;
	length = strlen(text);
	if (length == 0 || length > 16)
		return;
	for (size_t i = 0; i < length; i++) {
		if (!isxdigit((unsigned char)text[i]))
			return;
		text[i] = (char)tolower((unsigned char)text[i]);
		all_zero = all_zero && text[i] == '0';
	}
	if (!all_zero)
		snprintf(device->uuid, sizeof(device->uuid), "GPU-%016llx", strtoull(text, NULL, 16));
}

/* product_name where the board has one (Instinct and most workstation boards), else what
 * the PCI ids say, so that the name is never empty for a card that is certainly an AMD GPU. */
static void read_name(int device_fd, struct gpurun_device *device)
{
	char product[GPURUN_NAME_SIZE];
	char pci_device[32];
	long id;
	char *end;

	if (sysfs_read_text_at(device_fd, "product_name", product, sizeof(product))) {
		snprintf(device->name, sizeof(device->name), "%s", product);
		return;
	}
	if (sysfs_read_text_at(device_fd, "device", pci_device, sizeof(pci_device)) &&
	    strncmp(pci_device, "0x", 2) == 0) {
		id = strtol(pci_device + 2, &end, 16);
		if (*end == '\0' && end != pci_device + 2 && id >= 0 && id <= 0xFFFF) {
			snprintf(device->name, sizeof(device->name), "AMD GPU [1002:%04lx]", id);
			return;
		}
	}
	snprintf(device->name, sizeof(device->name), "AMD GPU");
}

/* The first hwmon directory of the device that answers: amdgpu registers exactly one. */
static void read_sensors(int device_fd, struct gpurun_device *device)
{
	DIR *hwmon = sysfs_open_dir_at(device_fd, "hwmon");
	struct dirent *entry;

	if (!hwmon)
		return;
	while ((entry = readdir(hwmon))) {
		long long value;
		int sensor_fd;

		if (strncmp(entry->d_name, "hwmon", 5) != 0)
			continue;
		sensor_fd = openat(dirfd(hwmon), entry->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sensor_fd < 0)
			continue;
		if (isnan(device->temperature) &&
		    sysfs_read_integer_at(sensor_fd, "temp1_input", MIN_MILLIDEGREES,
					  MAX_MILLIDEGREES, &value))
			device->temperature = value / 1000.0;
		/* power1_average until kernel 6.x, power1_input on newer boards. */
		if (isnan(device->power_draw) &&
		    (sysfs_read_integer_at(sensor_fd, "power1_average", 0, MAX_MICROWATTS, &value) ||
		     sysfs_read_integer_at(sensor_fd, "power1_input", 0, MAX_MICROWATTS, &value)))
			device->power_draw = value / 1e6;
		close(sensor_fd);
	}
	closedir(hwmon);
}

/* Reads one card into device. False when the card is gone (its device directory cannot be
 * opened any more): it is then left out rather than shown with nothing known. */
static bool read_card(int drm_fd, const struct card *card, struct gpurun_device *device)
{
	char path[64];
	long long busy;
	int device_fd;

	snprintf(path, sizeof(path), "card%u/device", card->number);
	device_fd = openat(drm_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (device_fd < 0)
		return false;
	device->vendor = GPURUN_VENDOR_AMD;
	snprintf(device->pci_bus_id, sizeof(device->pci_bus_id), "%s", card->bus_id);
	if (sysfs_read_integer_at(device_fd, "gpu_busy_percent", 0, 100, &busy))
		device->load = busy / 100.0;
	read_memory(device_fd, device);
	read_uuid(device_fd, device);
	read_name(device_fd, device);
	sysfs_read_text_at(device_fd, "serial_number", device->serial, sizeof(device->serial));
	read_sensors(device_fd, device);
	close(device_fd);
	return true;
}

/* PCI-bus order, as ROCr numbers its GPUs; cards whose address is unknown go last. */
static int compare_cards(const void *a, const void *b)
{
	const struct card *x = a, *y = b;

	if (!x->bus_id[0] != !y->bus_id[0])
		return x->bus_id[0] ? -1 : 1;
	int order = strcmp(x->bus_id, y->bus_id);
	if (order)
		return order;
	return x->number < y->number ? -1 : x->number > y->number;
}

/* The AMD cards in the listing, sorted. Returns 0 with *cards (malloc'ed) and *count. */
static int list_cards(int drm_fd, struct card **cards, size_t *count, struct gpurun_error *err)
{
	DIR *listing = sysfs_open_dir_at(drm_fd, ".");
	struct dirent *entry;
	size_t capacity = 0;

	*cards = NULL;
	*count = 0;
	if (!listing) {
		return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "amdgpu: cannot list the cards: %s",
				   strerror(errno));
	}
	while ((entry = readdir(listing))) {
		struct card card = { 0 };
		char path[64];
		int device_fd;

		if (!card_number(entry->d_name, &card.number))
			continue;
		snprintf(path, sizeof(path), "card%u/device", card.number);
		/* A card that vanished after the listing (a dangling link) is simply not there. */
		device_fd = openat(drm_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (device_fd < 0)
			continue;
		bool amd = is_amdgpu(device_fd);
		if (amd)
			read_bus_id(drm_fd, card.number, device_fd, card.bus_id, sizeof(card.bus_id));
		close(device_fd);
		if (!amd)
			continue;
		if (*count == capacity) {
			size_t grown_capacity = capacity ? 2 * capacity : 8;
			struct card *grown = realloc(*cards, grown_capacity * sizeof(*grown));

			if (!grown) {
				closedir(listing);
				free(*cards);
				*cards = NULL;
				return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory");
			}
			*cards = grown;
			capacity = grown_capacity;
		}
		(*cards)[(*count)++] = card;
	}
	closedir(listing);
	if (*count > 1)
		qsort(*cards, *count, sizeof(**cards), compare_cards);
	return 0;
}

/* The driver's version where it says one (DKMS builds); the in-kernel driver has none. */
static void read_driver_version(struct gpurun_snapshot *snapshot)
{
	char path[PATH_MAX];

	snapshot->driver_version[0] = '\0';
	if (sysfs_path(path, sizeof(path), "sys", "/module/amdgpu/version") == 0)
		sysfs_read_text_at(AT_FDCWD, path, snapshot->driver_version,
				   sizeof(snapshot->driver_version));
}

int gpurun_probe_amdgpu(struct gpurun_snapshot *snapshot, struct gpurun_error *err)
{
	char drm[PATH_MAX];
	struct card *cards;
	size_t count, kept = 0;
	int drm_fd, status;

	memset(snapshot, 0, sizeof(*snapshot));
	if (sysfs_path(drm, sizeof(drm), "sys", "/class/drm") != 0)
		return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "amdgpu: GPURUN_SYSFS_ROOT is too long");
	drm_fd = open(drm, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (drm_fd < 0)
		return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "amdgpu: cannot read %s (%s)", drm,
				   strerror(errno));
	status = list_cards(drm_fd, &cards, &count, err);
	if (status == 0 && count == 0)
		status = gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "amdgpu: no AMD GPU in %s", drm);
	if (status == 0)
		status = gpurun_snapshot_init(snapshot, count, err);
	if (status != 0) {
		free(cards);
		close(drm_fd);
		return status;
	}
	for (size_t i = 0; i < count; i++) {
		struct gpurun_device *device = &snapshot->devices[kept];

		if (read_card(drm_fd, &cards[i], device)) {
			device->index = (int)kept;
			kept++;
		} else {
			gpurun_device_init_unknown(device);
		}
	}
	snapshot->count = kept;
	snapshot->source = "amdgpu";
	read_driver_version(snapshot);
	free(cards);
	close(drm_fd);
	if (kept == 0) {
		gpurun_snapshot_free(snapshot);
		return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO,
				   "amdgpu: every AMD GPU in %s disappeared while being read", drm);
	}
	return 0;
}
