/* probe_nvml: the main data source. Loads NVML with dlopen (so that gpurun runs, and falls back
 * to nvidia-smi, where the driver is absent) and reads every GPU into a snapshot. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpurun.h"

/* NVML's own declarations: no nvml.h exists here. Layouts and codes are those of
 * shared/reference/nvml-cuda-abi.md (NVML 12.0 to 13.3, x86-64). */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
};
enum { NVML_INIT_FLAG_NO_GPUS = 1 };

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

#define NVML_MEMORY_V2_VERSION ((unsigned)(sizeof(nvmlMemory_v2_t) | 2u << 24))

typedef struct {
	unsigned gpu, memory;
} nvmlUtilization_t;

/* nvmlDeviceGetTemperatureV's argument. The call came with R565 and replaces
 * nvmlDeviceGetTemperature, deprecated in CUDA 13: NVML's removal notice says that a removed
 * function stays exported and answers DEPRECATED. */
typedef struct {
	unsigned version;
	unsigned sensorType;
	int temperature;
} nvmlTemperature_v1_t;

#define NVML_TEMPERATURE_V1_VERSION ((unsigned)(sizeof(nvmlTemperature_v1_t) | 1u << 24))

/* v1 is a prefix of v2: both start with pid and usedGpuMemory. */
typedef struct {
	unsigned pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
	unsigned pid;
	unsigned long long usedGpuMemory;
	unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;

/* v1 and v3 agree up to busId; v1 has no busId there, so the v1 fallback formats it. */
typedef struct {
	char busIdLegacy[16];
	unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t");
_Static_assert(NVML_MEMORY_V2_VERSION == 0x02000028, "nvmlMemory_v2 version");
_Static_assert(sizeof(nvmlTemperature_v1_t) == 12, "nvmlTemperature_v1_t");
_Static_assert(NVML_TEMPERATURE_V1_VERSION == 0x0100000C, "nvmlTemperature_v1 version");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t");
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t");

#define NVML_TEMPERATURE_GPU 0
#define NVML_VALUE_NOT_AVAILABLE ((unsigned long long)-1)
#define BYTES_PER_MIB 1048576ull
#define MAX_PROCESSES 65536u    /* more than any GPU runs; a count above it is garbage */
/* A bound on what nvmlDeviceGetMaxMigDeviceCount may claim (an H100 has 7 slots): a broken
 * driver's huge count must not become a long loop of failing calls. */
#define MIG_SLOTS_MAX 1024u

typedef nvmlReturn_t text_getter(nvmlDevice_t, char *, unsigned);
typedef nvmlReturn_t unsigned_getter(nvmlDevice_t, unsigned *);
typedef nvmlReturn_t flag_getter(nvmlDevice_t, int *);

/* The library and its entry points, resolved once per probe. NULL optional entries make
 * their fields unknown. */
struct nvml {
	const char *path;
	void *library;
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*init_with_flags)(unsigned);      /* optional: drivers since 2018 */
	nvmlReturn_t (*shutdown)(void);
	nvmlReturn_t (*get_count)(unsigned *);
	nvmlReturn_t (*get_handle)(unsigned, nvmlDevice_t *);
	text_getter *get_uuid;
	nvmlReturn_t (*get_memory_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
	nvmlReturn_t (*get_memory)(nvmlDevice_t, nvmlMemory_t *);
	/* optional */
	nvmlReturn_t (*get_driver_version)(char *, unsigned);
	text_getter *get_name;
	text_getter *get_serial;
	nvmlReturn_t (*get_pci)(nvmlDevice_t, nvmlPciInfo_t *);
	bool pci_is_v3;
	nvmlReturn_t (*get_utilization)(nvmlDevice_t, nvmlUtilization_t *);
	nvmlReturn_t (*get_temperature_v)(nvmlDevice_t, nvmlTemperature_v1_t *);
	nvmlReturn_t (*get_temperature)(nvmlDevice_t, int, unsigned *);
	unsigned_getter *get_power;
	flag_getter *get_display_mode;
	flag_getter *get_display_active;
	nvmlReturn_t (*get_mig_mode)(nvmlDevice_t, unsigned *current, unsigned *pending);
	unsigned_getter *get_max_mig_count;
	nvmlReturn_t (*get_mig_handle)(nvmlDevice_t, unsigned, nvmlDevice_t *);
	unsigned_getter *get_gpu_instance_id;
	unsigned_getter *get_compute_instance_id;
	nvmlReturn_t (*get_processes)(nvmlDevice_t, unsigned *, void *);
	size_t process_entry_size;
	/* scratch for process lists, reused from GPU to GPU */
	void *process_buffer;
	size_t process_capacity;        /* entries */
};

static const char *error_name(nvmlReturn_t code)
{
	static const char *const names[] = {
		[0] = "SUCCESS", [1] = "UNINITIALIZED", [2] = "INVALID_ARGUMENT",
		[3] = "NOT_SUPPORTED", [4] = "NO_PERMISSION", [5] = "ALREADY_INITIALIZED",
		[6] = "NOT_FOUND", [7] = "INSUFFICIENT_SIZE", [8] = "INSUFFICIENT_POWER",
		[9] = "DRIVER_NOT_LOADED", [10] = "TIMEOUT", [11] = "IRQ_ISSUE",
		[12] = "LIBRARY_NOT_FOUND", [13] = "FUNCTION_NOT_FOUND", [14] = "CORRUPTED_INFOROM",
		[15] = "GPU_IS_LOST", [16] = "RESET_REQUIRED", [17] = "OPERATING_SYSTEM",
		[18] = "LIB_RM_VERSION_MISMATCH", [19] = "IN_USE", [20] = "MEMORY",
		[21] = "NO_DATA", [22] = "VGPU_ECC_NOT_SUPPORTED", [23] = "INSUFFICIENT_RESOURCES",
		[24] = "FREQ_NOT_SUPPORTED", [25] = "ARGUMENT_VERSION_MISMATCH",
		[26] = "DEPRECATED", [27] = "NOT_READY", [28] = "GPU_NOT_FOUND",
		[29] = "INVALID_STATE",
	};

	if (code == 999)
		return "UNKNOWN";
	if (code >= 0 && (size_t)code < sizeof(names) / sizeof(names[0]))
		return names[code];
	return "an unlisted error";
}

/* What an nvmlInit failure means for the user. */
static const char *init_failure_cause(nvmlReturn_t code)
{
	switch (code) {
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "the NVIDIA driver is not loaded";
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
		return "driver/library version mismatch: the loaded kernel module differs from the "
		       "NVML library (reboot, or reload the nvidia module)";
	case NVML_ERROR_NO_PERMISSION:
		return "no permission to open the NVIDIA devices";
	default:
		return "NVML cannot start";
	}
}

/* The suffixed entry point where the driver has it, else the original one (old drivers). */
static void *versioned_symbol(void *library, const char *suffixed, const char *plain)
{
	void *found = dlsym(library, suffixed);

	return found ? found : dlsym(library, plain);
}

static int missing_symbol(const struct nvml *nvml, const char *name, struct gpurun_error *err)
{
	return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO,
			   "NVML: %s has no %s (not NVML, or a driver too old for gpurun)",
			   nvml->path, name);
}

static int open_library(struct nvml *nvml, struct gpurun_error *err)
{
	const char *path = getenv("GPURUN_NVML_LIB");

	nvml->path = path && *path ? path : "libnvidia-ml.so.1";
	nvml->library = dlopen(nvml->path, RTLD_NOW | RTLD_LOCAL);
	if (!nvml->library) {
		const char *reason = dlerror();

		if (!reason)
			reason = "unknown reason";
		return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "NVML: %s %s (%.300s)", nvml->path,
				   strstr(reason, "No such file") ? "not found" : "cannot be loaded",
				   reason);
	}

	void *library = nvml->library;
	nvml->init = versioned_symbol(library, "nvmlInit_v2", "nvmlInit");
	nvml->init_with_flags = dlsym(library, "nvmlInitWithFlags");
	nvml->shutdown = dlsym(library, "nvmlShutdown");
	nvml->get_count = versioned_symbol(library, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
	nvml->get_handle = versioned_symbol(library, "nvmlDeviceGetHandleByIndex_v2",
					    "nvmlDeviceGetHandleByIndex");
	nvml->get_uuid = dlsym(library, "nvmlDeviceGetUUID");
	nvml->get_memory_v2 = dlsym(library, "nvmlDeviceGetMemoryInfo_v2");
	nvml->get_memory = dlsym(library, "nvmlDeviceGetMemoryInfo");
	if (!nvml->init)
		return missing_symbol(nvml, "nvmlInit_v2", err);
	if (!nvml->shutdown)
		return missing_symbol(nvml, "nvmlShutdown", err);
	if (!nvml->get_count)
		return missing_symbol(nvml, "nvmlDeviceGetCount_v2", err);
	if (!nvml->get_handle)
		return missing_symbol(nvml, "nvmlDeviceGetHandleByIndex_v2", err);
	if (!nvml->get_uuid)
		return missing_symbol(nvml, "nvmlDeviceGetUUID", err);
	if (!nvml->get_memory_v2 && !nvml->get_memory)
		return missing_symbol(nvml, "nvmlDeviceGetMemoryInfo", err);

	nvml->get_driver_version = dlsym(library, "nvmlSystemGetDriverVersion");
	nvml->get_name = dlsym(library, "nvmlDeviceGetName");
	nvml->get_serial = dlsym(library, "nvmlDeviceGetSerial");
	nvml->get_pci = dlsym(library, "nvmlDeviceGetPciInfo_v3");
	nvml->pci_is_v3 = nvml->get_pci != NULL;
	if (!nvml->get_pci)
		nvml->get_pci = dlsym(library, "nvmlDeviceGetPciInfo");
	nvml->get_utilization = dlsym(library, "nvmlDeviceGetUtilizationRates");
	nvml->get_temperature_v = dlsym(library, "nvmlDeviceGetTemperatureV");
	nvml->get_temperature = dlsym(library, "nvmlDeviceGetTemperature");
	nvml->get_power = dlsym(library, "nvmlDeviceGetPowerUsage");
	nvml->get_display_mode = dlsym(library, "nvmlDeviceGetDisplayMode");
	nvml->get_display_active = dlsym(library, "nvmlDeviceGetDisplayActive");
	nvml->get_mig_mode = dlsym(library, "nvmlDeviceGetMigMode");
	nvml->get_max_mig_count = dlsym(library, "nvmlDeviceGetMaxMigDeviceCount");
	nvml->get_mig_handle = dlsym(library, "nvmlDeviceGetMigDeviceHandleByIndex");
	nvml->get_gpu_instance_id = dlsym(library, "nvmlDeviceGetGpuInstanceId");
	nvml->get_compute_instance_id = dlsym(library, "nvmlDeviceGetComputeInstanceId");
	/* _v2, not _v3: some 535 drivers wrote _v3 entries of another size (see the ABI notes). */
	nvml->get_processes = dlsym(library, "nvmlDeviceGetComputeRunningProcesses_v2");
	nvml->process_entry_size = sizeof(nvmlProcessInfo_v2_t);
	if (!nvml->get_processes) {
		nvml->get_processes = dlsym(library, "nvmlDeviceGetComputeRunningProcesses");
		nvml->process_entry_size = sizeof(nvmlProcessInfo_v1_t);
	}
	return 0;
}

/* True when the call answered; GPU_IS_LOST from any call makes the whole device unusable. */
static bool answered(nvmlReturn_t code, struct gpurun_device *device)
{
	if (code == NVML_ERROR_GPU_IS_LOST)
		device->lost = true;
	return code == NVML_SUCCESS;
}

static double mib(unsigned long long bytes)
{
	/* Floored. nvidia-smi may round up instead (a 575 driver's memory figures add up to more
	 * than the total): the two sources can differ by 1 MiB, which the device script allows. */
	return (double)(bytes / BYTES_PER_MIB);
}

static void read_text(text_getter *get, nvmlDevice_t handle, char *text, size_t size,
		      struct gpurun_device *device)
{
	if (get && !device->lost && answered(get(handle, text, (unsigned)size), device))
		text[size - 1] = '\0';
	else
		text[0] = '\0';
}

static void read_flag(flag_getter *get, nvmlDevice_t handle, char *text, size_t size,
		      struct gpurun_device *device)
{
	int enabled = -1;

	text[0] = '\0';
	if (get && !device->lost && answered(get(handle, &enabled), device) &&
	    (enabled == 0 || enabled == 1))
		snprintf(text, size, "%s", enabled ? "Enabled" : "Disabled");
}

static void read_pci_bus_id(const struct nvml *nvml, nvmlDevice_t handle,
			    struct gpurun_device *device)
{
	nvmlPciInfo_t pci;

	memset(&pci, 0, sizeof(pci));
	if (!nvml->get_pci || device->lost || !answered(nvml->get_pci(handle, &pci), device))
		return;
	if (nvml->pci_is_v3) {
		pci.busId[sizeof(pci.busId) - 1] = '\0';
		snprintf(device->pci_bus_id, sizeof(device->pci_bus_id), "%s", pci.busId);
	} else {
		snprintf(device->pci_bus_id, sizeof(device->pci_bus_id), "%08X:%02X:%02X.0",
			 pci.domain, pci.bus, pci.device);
	}
}

/* v2 first: its "used" leaves out what the driver reserves, as nvidia-smi does. Real drivers
 * answer v2 with FUNCTION_NOT_FOUND, NOT_SUPPORTED or ARGUMENT_VERSION_MISMATCH where they
 * lack it, and some answer only v2, so every v2 failure tries v1. */
static void read_memory(const struct nvml *nvml, nvmlDevice_t handle, struct gpurun_device *device)
{
	if (nvml->get_memory_v2 && !device->lost) {
		nvmlMemory_v2_t memory = { .version = NVML_MEMORY_V2_VERSION };

		if (answered(nvml->get_memory_v2(handle, &memory), device)) {
			device->memory_total = mib(memory.total);
			device->memory_used = mib(memory.used);
			device->memory_free = mib(memory.free);
			return;
		}
	}
	if (nvml->get_memory && !device->lost) {
		nvmlMemory_t memory;

		if (answered(nvml->get_memory(handle, &memory), device)) {
			device->memory_total = mib(memory.total);
			device->memory_used = mib(memory.used);
			device->memory_free = mib(memory.free);
		}
	}
}

/* The versioned call first, where the driver has it (R565 on); any failure of it tries the
 * deprecated one, as read_memory does for memory. */
static void read_temperature(const struct nvml *nvml, nvmlDevice_t handle,
			     struct gpurun_device *device)
{
	nvmlTemperature_v1_t reading = { .version = NVML_TEMPERATURE_V1_VERSION,
					 .sensorType = NVML_TEMPERATURE_GPU };
	unsigned celsius;

	if (nvml->get_temperature_v && !device->lost &&
	    answered(nvml->get_temperature_v(handle, &reading), device)) {
		device->temperature = reading.temperature;
		return;
	}
	if (nvml->get_temperature && !device->lost &&
	    answered(nvml->get_temperature(handle, NVML_TEMPERATURE_GPU, &celsius), device))
		device->temperature = celsius;
}

static void read_sensors(const struct nvml *nvml, nvmlDevice_t handle, struct gpurun_device *device)
{
	nvmlUtilization_t utilization;
	unsigned value;

	if (nvml->get_utilization && !device->lost &&
	    answered(nvml->get_utilization(handle, &utilization), device))
		device->load = utilization.gpu / 100.0;
	read_temperature(nvml, handle, device);
	if (nvml->get_power && !device->lost && answered(nvml->get_power(handle, &value), device))
		device->power_draw = value / 1000.0;
}

static int grow_process_buffer(struct nvml *nvml, size_t entries, struct gpurun_error *err)
{
	if (entries <= nvml->process_capacity)
		return 0;
	void *grown = realloc(nvml->process_buffer, entries * nvml->process_entry_size);
	if (!grown)
		return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory for %zu processes",
				   entries);
	nvml->process_buffer = grown;
	nvml->process_capacity = entries;
	return 0;
}

/* NVML's two-call protocol: ask with room for none to learn the count, then again with room
 * to spare, since processes can start between the two calls. */
static int read_processes(struct nvml *nvml, nvmlDevice_t handle, struct gpurun_device *device,
			  struct gpurun_error *err)
{
	unsigned count = 0;
	nvmlReturn_t code;

	if (!nvml->get_processes || device->lost)
		return 0;
	code = nvml->get_processes(handle, &count, NULL);
	if (code == NVML_SUCCESS)
		count = 0;
	for (int attempt = 0; code == NVML_ERROR_INSUFFICIENT_SIZE && attempt < 4; attempt++) {
		if (count > MAX_PROCESSES)
			return 0;
		unsigned room = count + count / 4 + 4;
		int status = grow_process_buffer(nvml, room, err);
		if (status)
			return status;
		count = room;
		code = nvml->get_processes(handle, &count, nvml->process_buffer);
	}
	if (!answered(code, device) || count > nvml->process_capacity)
		return 0;

	if (count > 0) {
		device->processes = calloc(count, sizeof(*device->processes));
		if (!device->processes)
			return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory for %u processes",
					   count);
	}
	for (unsigned i = 0; i < count; i++) {
		const char *entry = (const char *)nvml->process_buffer + i * nvml->process_entry_size;
		nvmlProcessInfo_v1_t process;

		memcpy(&process, entry, sizeof(process));
		device->processes[i].pid = process.pid;
		device->processes[i].used_mib = process.usedGpuMemory == NVML_VALUE_NOT_AVAILABLE
						? NAN : mib(process.usedGpuMemory);
	}
	device->process_count = count;
	device->processes_known = true;
	return 0;
}

/* NVML_DEVICE_MIG_ENABLE is 1; a GPU without MIG answers NOT_SUPPORTED. */
static void read_mig_mode(const struct nvml *nvml, nvmlDevice_t handle, struct gpurun_device *device)
{
	unsigned current = 0, pending = 0;

	device->mig_enabled = false;
	if (!nvml->get_mig_mode || device->lost)
		return;
	nvmlReturn_t code = nvml->get_mig_mode(handle, &current, &pending);
	/* NOT_SUPPORTED is a GPU without MIG. Any other failure leaves the mode unknown, and a GPU
	 * that may be split must not be handed out whole: it is treated as MIG-enabled, so that
	 * only the instances NVML does list can be chosen. */
	device->mig_enabled = answered(code, device) ? current == 1
			      : code != NVML_ERROR_NOT_SUPPORTED && !device->lost;
	device->mig_mode_unknown = device->mig_enabled && code != NVML_SUCCESS;
}

/* One MIG instance: a device of its own (UUID "MIG-...", memory, processes), named after its
 * GPU. NVML has no utilization for instances, so their load stays unknown (NaN). */
static int read_instance(struct nvml *nvml, nvmlDevice_t handle, const struct gpurun_device *gpu,
			 int position, struct gpurun_device *device, struct gpurun_error *err)
{
	unsigned id;

	device->index = gpu->index;
	device->vendor = gpu->vendor;
	device->mig_parent = gpu->index;
	device->mig_instance = position;
	read_text(nvml->get_uuid, handle, device->uuid, sizeof(device->uuid), device);
	read_text(nvml->get_name, handle, device->name, sizeof(device->name), device);
	read_memory(nvml, handle, device);
	read_sensors(nvml, handle, device);
	if (nvml->get_gpu_instance_id && !device->lost &&
	    answered(nvml->get_gpu_instance_id(handle, &id), device) && id <= 0xffffff)
		device->mig_gpu_instance = (int)id;
	if (nvml->get_compute_instance_id && !device->lost &&
	    answered(nvml->get_compute_instance_id(handle, &id), device) && id <= 0xffffff)
		device->mig_compute_instance = (int)id;
	/* The board's identity is its GPU's. */
	memcpy(device->serial, gpu->serial, sizeof(device->serial));
	memcpy(device->pci_bus_id, gpu->pci_bus_id, sizeof(device->pci_bus_id));
	memcpy(device->display_mode, gpu->display_mode, sizeof(device->display_mode));
	memcpy(device->display_active, gpu->display_active, sizeof(device->display_active));
	return read_processes(nvml, handle, device, err);
}

static int append_device(struct gpurun_device **devices, size_t *count, size_t *capacity,
			 struct gpurun_error *err)
{
	if (*count == *capacity) {
		size_t grown_capacity = *capacity ? 2 * *capacity : 16;
		struct gpurun_device *grown = realloc(*devices, grown_capacity * sizeof(*grown));

		if (!grown)
			return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory for MIG instances");
		*devices = grown;
		*capacity = grown_capacity;
	}
	gpurun_device_init_unknown(&(*devices)[(*count)++]);
	return 0;
}

/* A MIG-enabled GPU contributes its instances: they follow it in the snapshot, in NVML's
 * slot order (slots of destroyed instances answer NOT_FOUND and are skipped). */
static int add_mig_instances(struct nvml *nvml, struct gpurun_snapshot *snapshot,
			     struct gpurun_error *err)
{
	struct gpurun_device *devices = NULL;
	size_t count = 0, capacity = 0;
	int status = 0;
	bool any = false;

	for (size_t i = 0; i < snapshot->count; i++)
		any = any || snapshot->devices[i].mig_enabled;
	if (!any || !nvml->get_mig_handle || !nvml->get_max_mig_count)
		return 0;
	for (size_t i = 0; i < snapshot->count && status == 0; i++) {
		const struct gpurun_device *gpu = &snapshot->devices[i];
		nvmlDevice_t handle, instance;
		unsigned slots = 0;
		int position = 0;

		status = append_device(&devices, &count, &capacity, err);
		if (status)
			break;
		devices[count - 1] = *gpu;
		if (!gpu->mig_enabled || gpu->index < 0 ||
		    nvml->get_handle((unsigned)gpu->index, &handle) != NVML_SUCCESS ||
		    nvml->get_max_mig_count(handle, &slots) != NVML_SUCCESS)
			continue;
		for (unsigned slot = 0; slot < slots && slot < MIG_SLOTS_MAX && status == 0; slot++) {
			if (nvml->get_mig_handle(handle, slot, &instance) != NVML_SUCCESS)
				continue;
			status = append_device(&devices, &count, &capacity, err);
			if (status == 0)
				status = read_instance(nvml, instance, gpu, position++,
						       &devices[count - 1], err);
		}
	}
	if (status) {
		for (size_t i = 0; i < count; i++)
			if (devices[i].mig_parent >= 0)
				free(devices[i].processes);
		free(devices);
		return status;
	}
	/* The GPUs' process lists moved with them; only the old array goes. */
	free(snapshot->devices);
	snapshot->devices = devices;
	snapshot->count = count;
	return 0;
}

static int read_device(struct nvml *nvml, unsigned index, struct gpurun_device *device,
		       struct gpurun_error *err)
{
	nvmlDevice_t handle;

	device->index = (int)index;
	if (!answered(nvml->get_handle(index, &handle), device))
		return 0;
	read_text(nvml->get_uuid, handle, device->uuid, sizeof(device->uuid), device);
	read_text(nvml->get_name, handle, device->name, sizeof(device->name), device);
	read_text(nvml->get_serial, handle, device->serial, sizeof(device->serial), device);
	read_pci_bus_id(nvml, handle, device);
	read_memory(nvml, handle, device);
	read_sensors(nvml, handle, device);
	read_flag(nvml->get_display_mode, handle, device->display_mode,
		  sizeof(device->display_mode), device);
	read_flag(nvml->get_display_active, handle, device->display_active,
		  sizeof(device->display_active), device);
	read_mig_mode(nvml, handle, device);
	return read_processes(nvml, handle, device, err);
}

static int read_snapshot(struct nvml *nvml, struct gpurun_snapshot *snapshot,
			 struct gpurun_error *err)
{
	unsigned count;
	nvmlReturn_t code = nvml->get_count(&count);
	int status;

	if (code != NVML_SUCCESS)
		return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO,
				   "NVML: started, but the driver could not count the GPUs "
				   "(nvmlDeviceGetCount: %s, error %d; library %s)",
				   error_name(code), code, nvml->path);
	/* As nvidia-smi's "No devices were found": there is nothing to choose from, ever. */
	if (count == 0)
		return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO,
				   "NVML: the driver sees no GPU (library %s)", nvml->path);
	status = gpurun_snapshot_init(snapshot, count, err);
	if (status)
		return status;
	snapshot->source = "nvml";
	if (nvml->get_driver_version &&
	    nvml->get_driver_version(snapshot->driver_version,
				     sizeof(snapshot->driver_version)) == NVML_SUCCESS)
		snapshot->driver_version[sizeof(snapshot->driver_version) - 1] = '\0';
	else
		snapshot->driver_version[0] = '\0';
	for (unsigned i = 0; i < count && status == 0; i++)
		status = read_device(nvml, i, &snapshot->devices[i], err);
	if (status == 0)
		status = add_mig_instances(nvml, snapshot, err);
	if (status)
		gpurun_snapshot_free(snapshot);
	return status;
}

int gpurun_probe_nvml(struct gpurun_snapshot *snapshot, struct gpurun_error *err)
{
	struct nvml nvml;
	int status;

	memset(snapshot, 0, sizeof(*snapshot));
	memset(&nvml, 0, sizeof(nvml));
	status = open_library(&nvml, err);
	if (status == 0) {
		/* Plain nvmlInit fails on a machine whose driver sees no GPU: NO_GPUS lets it
		 * start, so that gpurun can say so rather than that NVML cannot start. */
		nvmlReturn_t code = nvml.init_with_flags ? nvml.init_with_flags(NVML_INIT_FLAG_NO_GPUS)
							 : nvml.init();

		if (code == NVML_SUCCESS) {
			status = read_snapshot(&nvml, snapshot, err);
			nvml.shutdown();
		} else {
			status = gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO,
					     "NVML: %s (nvmlInit: %s, error %d; library %s)",
					     init_failure_cause(code), error_name(code), code,
					     nvml.path);
		}
	}
	if (nvml.library)
		dlclose(nvml.library);
	free(nvml.process_buffer);
	return status;
}
