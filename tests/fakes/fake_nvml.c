/* fake_nvml: a libnvidia-ml.so.1 that answers from a fixture file, with the real entry points,
 * layouts and return codes, so that gpurun's NVML probe runs unchanged without a GPU. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

/* Only the NVML entry points leave this library. */
#pragma GCC visibility push(hidden)
#define NVML_EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
/* A handle is a pointer into the fake's GPU array; callers only ever see it as opaque. */
typedef struct fixture_gpu *nvmlDevice_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

typedef struct {
	unsigned gpu, memory;
} nvmlUtilization_t;

typedef struct {
	unsigned version;
	unsigned sensorType;
	int temperature;
} nvmlTemperature_v1_t;

typedef struct {
	unsigned pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
	unsigned pid;
	unsigned long long usedGpuMemory;
	unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;

typedef struct {
	char busIdLegacy[16];
	unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t");
_Static_assert(sizeof(nvmlTemperature_v1_t) == 12, "nvmlTemperature_v1_t");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t");
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t");

#define NVML_MEMORY_V2 ((unsigned)(sizeof(nvmlMemory_v2_t) | (2u << 24)))
#define NVML_TEMPERATURE_V1 ((unsigned)(sizeof(nvmlTemperature_v1_t) | (1u << 24)))
#define NVML_VALUE_NOT_AVAILABLE 0xFFFFFFFFu
#define NVML_INIT_FLAG_NO_GPUS 1u
#define MIB (1024ULL * 1024ULL)

/* Entry points of every driver, old ones included. */
NVML_EXPORT nvmlReturn_t nvmlInit(void);
NVML_EXPORT nvmlReturn_t nvmlShutdown(void);
NVML_EXPORT const char *nvmlErrorString(nvmlReturn_t result);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned *count);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t *device);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned length);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);

#ifndef FAKE_NVML_OLD_DRIVER
NVML_EXPORT nvmlReturn_t nvmlInit_v2(void);
NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned flags);
NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned length);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *device);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned length);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned length);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
						       nvmlUtilization_t *utilization);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor,
						  unsigned *celsius);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device,
						   nvmlTemperature_v1_t *temperature);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned *milliwatts);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t device, int *enabled);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t device, int *enabled);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
							      unsigned *count,
							      nvmlProcessInfo_v1_t *infos);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
								 unsigned *count,
								 nvmlProcessInfo_v2_t *infos);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned *current,
					      unsigned *pending);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned *count);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned index,
							     nvmlDevice_t *mig);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned *id);
NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned *id);
#endif

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fixture machine;
/* nvmlInit/nvmlShutdown nest, like the real library's reference count. */
static unsigned init_count;

static bool initialized(void)
{
	return __atomic_load_n(&init_count, __ATOMIC_ACQUIRE) > 0;
}

static void complain(const char *why)
{
	char line[600];
	int n = snprintf(line, sizeof(line), "fake libnvidia-ml: %s\n", why);

	if (n > 0)
		(void)!write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line));
}

/* Re-reads the fixture at every init, so that tests can change the machine between calls. */
/* NVML's documentation says plain nvmlInit fails where no GPU is found, without naming the
 * error: the fake answers UNKNOWN. NVML_INIT_FLAG_NO_GPUS lets it start. */
static nvmlReturn_t init(bool without_gpus_too)
{
	struct fixture next;
	char why[512];
	nvmlReturn_t status = NVML_SUCCESS;

	pthread_mutex_lock(&init_lock);
	if (fixture_load(getenv("GPURUN_FAKE_FIXTURE"), &next, why, sizeof(why))) {
		/* No fixture is a machine without the driver; a broken one is the test's bug. */
		if (why[0])
			complain(why);
		status = why[0] ? NVML_ERROR_UNKNOWN : NVML_ERROR_DRIVER_NOT_LOADED;
	} else if (next.init_error) {
		status = next.init_error;
		fixture_free(&next);
	} else if (next.gpu_count == 0 && !without_gpus_too) {
		status = NVML_ERROR_UNKNOWN;
		fixture_free(&next);
	} else {
		/* A nested init must not invalidate the handles the outer user holds. */
		if (init_count && next.gpu_count == machine.gpu_count && next.gpu_count) {
			memcpy(machine.gpus, next.gpus, next.gpu_count * sizeof(*next.gpus));
			free(next.gpus);
			next.gpus = machine.gpus;
			machine.gpus = NULL;
		}
		if (init_count && next.instance_total == machine.instance_total &&
		    next.instance_total) {
			memcpy(machine.instances, next.instances,
			       next.instance_total * sizeof(*next.instances));
			free(next.instances);
			next.instances = machine.instances;
			machine.instances = NULL;
		}
		fixture_free(&machine);
		machine = next;
		__atomic_add_fetch(&init_count, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&init_lock);
	return status;
}

/* What every per-device call checks first: NVML is up, the handle is one of ours, there is
 * somewhere to write the answer. */
static bool in_array(nvmlDevice_t device, const struct fixture_gpu *array, size_t count)
{
	uintptr_t at = (uintptr_t)device, first = (uintptr_t)array;

	return array && at >= first && at < first + count * sizeof(*array) &&
	       (at - first) % sizeof(*array) == 0;
}

/* A GPU's handle, or a MIG instance's (which every per-device call takes too). */
static nvmlReturn_t check_handle(nvmlDevice_t device, const void *out)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!in_array(device, machine.gpus, machine.gpu_count) &&
	    !in_array(device, machine.instances, machine.instance_total))
		return NVML_ERROR_INVALID_ARGUMENT;
	return out ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

/* Then what the fixture says about this GPU: lost, or this one call failing. */
static nvmlReturn_t check_device(nvmlDevice_t device, enum fixture_field field, const void *out)
{
	nvmlReturn_t status = check_handle(device, out);

	if (status)
		return status;
	return device->lost ? NVML_ERROR_GPU_IS_LOST : device->errors[field];
}

static nvmlReturn_t copy_string(char *buffer, unsigned length, const char *text)
{
	size_t size = strlen(text) + 1;

	if (size > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buffer, text, size);
	return NVML_SUCCESS;
}

static nvmlReturn_t get_count(unsigned *count)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (machine.count_error)
		return machine.count_error;
	*count = (unsigned)machine.gpu_count;
	return NVML_SUCCESS;
}

static nvmlReturn_t get_handle(unsigned index, nvmlDevice_t *device)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!device || index >= machine.gpu_count)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* A lost GPU still has a handle: it is there, it just does not answer. */
	if (machine.gpus[index].errors[FIELD_HANDLE])
		return machine.gpus[index].errors[FIELD_HANDLE];
	*device = &machine.gpus[index];
	return NVML_SUCCESS;
}

/* The layout before _v3: a 16-byte bus id and the numbers, nothing after them. */
static nvmlReturn_t get_pci_legacy(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	nvmlReturn_t status = check_device(device, FIELD_PCI, pci);

	if (status)
		return status;
	memcpy(pci->busIdLegacy, device->bus_id_legacy, sizeof(pci->busIdLegacy));
	pci->domain = device->domain;
	pci->bus = device->bus;
	pci->device = device->device;
	pci->pciDeviceId = FIXTURE_PCI_DEVICE_ID;
	pci->pciSubSystemId = FIXTURE_PCI_SUBSYSTEM_ID;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit(void)
{
	return init(false);
}

nvmlReturn_t nvmlShutdown(void)
{
	nvmlReturn_t status = NVML_SUCCESS;

	pthread_mutex_lock(&init_lock);
	if (!init_count)
		status = NVML_ERROR_UNINITIALIZED;
	else if (__atomic_sub_fetch(&init_count, 1, __ATOMIC_RELEASE) == 0)
		fixture_free(&machine);
	pthread_mutex_unlock(&init_lock);
	return status;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
	return fixture_error_string(result);
}

nvmlReturn_t nvmlDeviceGetCount(unsigned *count)
{
	return get_count(count);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t *device)
{
	return get_handle(index, device);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned length)
{
	nvmlReturn_t status = check_device(device, FIELD_UUID, uuid);

	return status ? status : copy_string(uuid, length, device->uuid);
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	return get_pci_legacy(device, pci);
}

/* v1: "used" includes what the driver reserved, as on real drivers. */
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	nvmlReturn_t status = check_device(device, FIELD_MEMORY, memory);

	if (status)
		return status;
	memory->total = device->memory_total * MIB;
	memory->used = (device->memory_used + device->memory_reserved) * MIB;
	memory->free = memory->total - memory->used;
	return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER

nvmlReturn_t nvmlInit_v2(void)
{
	return init(false);
}

nvmlReturn_t nvmlInitWithFlags(unsigned flags)
{
	return init(flags & NVML_INIT_FLAG_NO_GPUS);
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned length)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!version)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (machine.driver_error)
		return machine.driver_error;
	return copy_string(version, length, machine.driver);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count)
{
	return get_count(count);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *device)
{
	return get_handle(index, device);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned length)
{
	nvmlReturn_t status = check_device(device, FIELD_NAME, name);

	return status ? status : copy_string(name, length, device->name);
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned length)
{
	nvmlReturn_t status = check_device(device, FIELD_SERIAL, serial);

	return status ? status : copy_string(serial, length, device->serial);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	return get_pci_legacy(device, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	nvmlReturn_t status = get_pci_legacy(device, pci);

	if (status)
		return status;
	memcpy(pci->busId, device->bus_id, sizeof(pci->busId));
	return NVML_SUCCESS;
}

/* Real drivers answer FUNCTION_NOT_FOUND, not a version error, to a wrong struct version:
 * callers that pass plain 2 (nvtop) must see exactly that. */
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	nvmlReturn_t status = check_handle(device, memory);

	if (status == NVML_SUCCESS && memory->version != NVML_MEMORY_V2)
		status = NVML_ERROR_FUNCTION_NOT_FOUND;
	if (status == NVML_SUCCESS)
		status = check_device(device, FIELD_MEMORY, memory);
	if (status == NVML_SUCCESS)
		status = device->errors[FIELD_MEMORY_V2];
	if (status)
		return status;
	memory->total = device->memory_total * MIB;
	memory->reserved = device->memory_reserved * MIB;
	memory->used = device->memory_used * MIB;
	memory->free = memory->total - memory->reserved - memory->used;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
	nvmlReturn_t status = check_device(device, FIELD_UTILIZATION, utilization);

	if (status)
		return status;
	utilization->gpu = device->utilization;
	utilization->memory = 0;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor, unsigned *celsius)
{
	nvmlReturn_t status = check_device(device, FIELD_TEMPERATURE, celsius);

	if (status == NVML_SUCCESS && sensor != 0)
		status = NVML_ERROR_INVALID_ARGUMENT;
	if (status == NVML_SUCCESS)
		status = device->errors[FIELD_TEMPERATURE_LEGACY];
	if (status)
		return status;
	*celsius = device->temperature;
	return NVML_SUCCESS;
}

/* A struct of another version is ARGUMENT_VERSION_MISMATCH, NVML's answer for versioned
 * arguments. */
nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_v1_t *temperature)
{
	nvmlReturn_t status = check_handle(device, temperature);

	if (status == NVML_SUCCESS && temperature->version != NVML_TEMPERATURE_V1)
		status = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	if (status == NVML_SUCCESS)
		status = check_device(device, FIELD_TEMPERATURE, temperature);
	if (status == NVML_SUCCESS && temperature->sensorType != 0)
		status = NVML_ERROR_INVALID_ARGUMENT;
	if (status == NVML_SUCCESS)
		status = device->errors[FIELD_TEMPERATURE_V];
	if (status)
		return status;
	temperature->temperature = (int)device->temperature;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned *milliwatts)
{
	nvmlReturn_t status = check_device(device, FIELD_POWER, milliwatts);

	if (status)
		return status;
	*milliwatts = device->power_mw;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t device, int *enabled)
{
	nvmlReturn_t status = check_device(device, FIELD_DISPLAY_MODE, enabled);

	if (status)
		return status;
	*enabled = device->display_mode;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t device, int *enabled)
{
	nvmlReturn_t status = check_device(device, FIELD_DISPLAY_ACTIVE, enabled);

	if (status)
		return status;
	*enabled = device->display_active;
	return NVML_SUCCESS;
}

/* The two-call protocol: a too small *count (0 included) answers INSUFFICIENT_SIZE with the
 * count needed. A `process_race` process shows up from the second call on, as a process that
 * started between the caller's two calls would. */
static nvmlReturn_t list_processes(nvmlDevice_t device, unsigned *count, void *infos,
				   bool version_2)
{
	nvmlReturn_t status = check_device(device, FIELD_PROCESSES, count);
	const struct fixture_process *process;
	unsigned need;

	if (status)
		return status;
	unsigned listed = (unsigned)device->process_count +
			  (device->has_race && device->list_calls > 0);
	need = listed + device->growth * device->list_calls;
	__atomic_add_fetch(&device->list_calls, 1, __ATOMIC_RELAXED);
	if (*count < need) {
		*count = need;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	if (need && !infos)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < need; i++) {
		/* `process_growth` processes: pids from 900000, 1 MiB each. */
		struct fixture_process grown = { 900000 + i - listed, 1 };

		process = i < device->process_count ? &machine.processes[device->first_process + i]
			: i < listed ? &device->race : &grown;
		if (version_2) {
			nvmlProcessInfo_v2_t *info = (nvmlProcessInfo_v2_t *)infos + i;

			info->pid = process->pid;
			info->usedGpuMemory = process->used_mib * MIB;
			info->gpuInstanceId = NVML_VALUE_NOT_AVAILABLE;
			info->computeInstanceId = NVML_VALUE_NOT_AVAILABLE;
		} else {
			nvmlProcessInfo_v1_t *info = (nvmlProcessInfo_v1_t *)infos + i;

			info->pid = process->pid;
			info->usedGpuMemory = process->used_mib * MIB;
		}
	}
	*count = need;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned *count,
						  nvmlProcessInfo_v1_t *infos)
{
	return list_processes(device, count, infos, false);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned *count,
						     nvmlProcessInfo_v2_t *infos)
{
	return list_processes(device, count, infos, true);
}

/* ---- MIG ---------------------------------------------------------------------------------- */

/* A GPU without MIG support answers NOT_SUPPORTED; a MIG instance is not a GPU to ask. */
static nvmlReturn_t check_mig_gpu(nvmlDevice_t device, enum fixture_field field, const void *out)
{
	nvmlReturn_t status = check_handle(device, out);

	if (status)
		return status;
	if (device->mig_parent >= 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (device->lost)
		return NVML_ERROR_GPU_IS_LOST;
	if (device->errors[field])
		return device->errors[field];
	return device->mig_mode < 0 ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned *current, unsigned *pending)
{
	nvmlReturn_t status = check_mig_gpu(device, FIELD_MIG_MODE, current);

	if (status == NVML_SUCCESS && !pending)
		status = NVML_ERROR_INVALID_ARGUMENT;
	if (status)
		return status;
	*current = *pending = (unsigned)device->mig_mode;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned *count)
{
	nvmlReturn_t status = check_mig_gpu(device, FIELD_MIG_MAX, count);

	if (status)
		return status;
	*count = device->mig_max;
	return NVML_SUCCESS;
}

/* An index past the maximum is INVALID_ARGUMENT; a free slot below it is NOT_FOUND. */
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned index,
						 nvmlDevice_t *mig)
{
	nvmlReturn_t status = check_mig_gpu(device, FIELD_MIG_HANDLE, mig);

	if (status)
		return status;
	if (device->mig_mode != 1 || index >= device->mig_max)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (size_t i = 0; i < device->instance_count; i++) {
		struct fixture_gpu *instance = &machine.instances[device->first_instance + i];

		if (instance->mig_slot == index) {
			*mig = instance;
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t instance_id(nvmlDevice_t device, unsigned *id, bool compute)
{
	nvmlReturn_t status = check_handle(device, id);

	if (status == NVML_SUCCESS)
		status = device->errors[compute ? FIELD_COMPUTE_INSTANCE_ID : FIELD_GPU_INSTANCE_ID];
	if (status)
		return status;
	if (device->mig_parent < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	*id = compute ? device->compute_instance_id : device->gpu_instance_id;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned *id)
{
	return instance_id(device, id, false);
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned *id)
{
	return instance_id(device, id, true);
}

#endif
