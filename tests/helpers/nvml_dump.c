/* nvml_dump: dlopens an NVML library the way gpurun does and prints every answer as "key: value"
 * lines; given NEXT_FIXTURE, it then renames it over $GPURUN_FAKE_FIXTURE and inits again. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

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

#define MIB (1024ULL * 1024ULL)
#define MEMORY_V2_VERSION ((unsigned)(sizeof(nvmlMemory_v2_t) | (2u << 24)))
#define TEMPERATURE_V1_VERSION ((unsigned)(sizeof(nvmlTemperature_v1_t) | (1u << 24)))

static void *library;
static const char *(*error_string)(nvmlReturn_t);

/* Looks a symbol up, saying so when the library lacks it. */
static void *need(const char *name)
{
	void *symbol = dlsym(library, name);

	if (!symbol)
		printf("%s: missing\n", name);
	return symbol;
}

static void print_error(const char *key, nvmlReturn_t status)
{
	printf("%s: error %d (%s)\n", key, status, error_string ? error_string(status) : "?");
}

static void dump_strings(const char *prefix, nvmlDevice_t device)
{
	static const char *const names[] = { "nvmlDeviceGetUUID", "nvmlDeviceGetName",
					     "nvmlDeviceGetSerial" };
	static const char *const keys[] = { "uuid", "name", "serial" };
	char buffer[96], key[64];

	for (size_t i = 0; i < 3; i++) {
		nvmlReturn_t (*get)(nvmlDevice_t, char *, unsigned) = need(names[i]);
		nvmlReturn_t status;

		if (!get)
			continue;
		snprintf(key, sizeof(key), "%s.%s", prefix, keys[i]);
		status = get(device, buffer, sizeof(buffer));
		if (status)
			print_error(key, status);
		else
			printf("%s: %s\n", key, buffer);
		/* A buffer one byte too short must be refused, not truncated. */
		if (status == 0) {
			snprintf(key, sizeof(key), "%s.%s[short]", prefix, keys[i]);
			status = get(device, buffer, (unsigned)strlen(buffer));
			if (status)
				print_error(key, status);
			else
				printf("%s: %s\n", key, buffer);
		}
	}
}

static void dump_pci(const char *prefix, nvmlDevice_t device)
{
	static const char *const names[] = { "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo" };
	char key[64];

	for (size_t i = 0; i < 2; i++) {
		nvmlReturn_t (*get)(nvmlDevice_t, nvmlPciInfo_t *) = need(names[i]);
		nvmlPciInfo_t pci;
		nvmlReturn_t status;

		if (!get)
			continue;
		memset(&pci, 0, sizeof(pci));
		snprintf(key, sizeof(key), "%s.%s", prefix, i == 0 ? "pci_v3" : "pci");
		status = get(device, &pci);
		if (status) {
			print_error(key, status);
			continue;
		}
		printf("%s: busId=%s legacy=%s domain=0x%x bus=0x%x device=0x%x id=0x%08X sub=0x%08X\n",
		       key, pci.busId, pci.busIdLegacy, pci.domain, pci.bus, pci.device,
		       pci.pciDeviceId, pci.pciSubSystemId);
	}
}

static void dump_memory(const char *prefix, nvmlDevice_t device)
{
	nvmlReturn_t (*get_v1)(nvmlDevice_t, nvmlMemory_t *) = need("nvmlDeviceGetMemoryInfo");
	nvmlReturn_t (*get_v2)(nvmlDevice_t, nvmlMemory_v2_t *) = need("nvmlDeviceGetMemoryInfo_v2");
	nvmlReturn_t status;
	char key[64];

	if (get_v1) {
		nvmlMemory_t memory;

		snprintf(key, sizeof(key), "%s.memory", prefix);
		status = get_v1(device, &memory);
		if (status)
			print_error(key, status);
		else
			printf("%s: total=%llu free=%llu used=%llu\n", key, memory.total / MIB,
			       memory.free / MIB, memory.used / MIB);
	}
	if (get_v2) {
		nvmlMemory_v2_t memory = { .version = MEMORY_V2_VERSION };

		snprintf(key, sizeof(key), "%s.memory_v2", prefix);
		status = get_v2(device, &memory);
		if (status)
			print_error(key, status);
		else
			printf("%s: total=%llu reserved=%llu free=%llu used=%llu\n", key,
			       memory.total / MIB, memory.reserved / MIB, memory.free / MIB,
			       memory.used / MIB);
		/* The bug nvtop has: version 2 instead of sizeof | 2 << 24. */
		memset(&memory, 0, sizeof(memory));
		memory.version = 2;
		snprintf(key, sizeof(key), "%s.memory_v2[version=2]", prefix);
		status = get_v2(device, &memory);
		if (status)
			print_error(key, status);
		else
			printf("%s: accepted\n", key);
	}
}

static void dump_numbers(const char *prefix, nvmlDevice_t device)
{
	nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *) =
		need("nvmlDeviceGetUtilizationRates");
	nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned *) = need("nvmlDeviceGetTemperature");
	nvmlReturn_t (*power)(nvmlDevice_t, unsigned *) = need("nvmlDeviceGetPowerUsage");
	nvmlReturn_t (*display_mode)(nvmlDevice_t, int *) = need("nvmlDeviceGetDisplayMode");
	nvmlReturn_t (*display_active)(nvmlDevice_t, int *) = need("nvmlDeviceGetDisplayActive");
	nvmlReturn_t status;
	nvmlUtilization_t rates;
	unsigned value;
	int flag;
	char key[64];

	if (utilization) {
		snprintf(key, sizeof(key), "%s.utilization", prefix);
		status = utilization(device, &rates);
		if (status)
			print_error(key, status);
		else
			printf("%s: gpu=%u memory=%u\n", key, rates.gpu, rates.memory);
	}
	if (temperature) {
		snprintf(key, sizeof(key), "%s.temperature", prefix);
		status = temperature(device, 0, &value);
		if (status)
			print_error(key, status);
		else
			printf("%s: %u\n", key, value);
		snprintf(key, sizeof(key), "%s.temperature[sensor=1]", prefix);
		status = temperature(device, 1, &value);
		if (status)
			print_error(key, status);
		else
			printf("%s: %u\n", key, value);
	}
	if (power) {
		snprintf(key, sizeof(key), "%s.power_mw", prefix);
		status = power(device, &value);
		if (status)
			print_error(key, status);
		else
			printf("%s: %u\n", key, value);
	}
	if (display_mode) {
		snprintf(key, sizeof(key), "%s.display_mode", prefix);
		status = display_mode(device, &flag);
		if (status)
			print_error(key, status);
		else
			printf("%s: %d\n", key, flag);
	}
	if (display_active) {
		snprintf(key, sizeof(key), "%s.display_active", prefix);
		status = display_active(device, &flag);
		if (status)
			print_error(key, status);
		else
			printf("%s: %d\n", key, flag);
	}
}

/* The versioned temperature call: with the right version, with a plain 1 (the mistake
 * memory_v2's plain 2 is), and for a sensor other than the GPU's. */
static void dump_temperature_v(const char *prefix, nvmlDevice_t device)
{
	nvmlReturn_t (*get)(nvmlDevice_t, nvmlTemperature_v1_t *) = need("nvmlDeviceGetTemperatureV");
	static const struct {
		const char *suffix;
		unsigned version, sensor;
	} calls[] = {
		{ "", TEMPERATURE_V1_VERSION, 0 },
		{ "[version=1]", 1, 0 },
		{ "[sensor=1]", TEMPERATURE_V1_VERSION, 1 },
	};
	char key[64];

	for (size_t i = 0; get && i < sizeof(calls) / sizeof(calls[0]); i++) {
		nvmlTemperature_v1_t reading = { .version = calls[i].version,
						 .sensorType = calls[i].sensor };
		nvmlReturn_t status = get(device, &reading);

		snprintf(key, sizeof(key), "%s.temperature_v%s", prefix, calls[i].suffix);
		if (status)
			print_error(key, status);
		else
			printf("%s: %d\n", key, reading.temperature);
	}
}

/* The two-call protocol, retried while processes keep appearing between the calls. */
static void dump_processes(const char *prefix, nvmlDevice_t device, bool version_2)
{
	const char *name = version_2 ? "nvmlDeviceGetComputeRunningProcesses_v2"
				     : "nvmlDeviceGetComputeRunningProcesses";
	nvmlReturn_t (*get)(nvmlDevice_t, unsigned *, void *) = need(name);
	size_t entry = version_2 ? sizeof(nvmlProcessInfo_v2_t) : sizeof(nvmlProcessInfo_v1_t);
	unsigned count = 0;
	void *infos = NULL;
	char key[64];

	if (!get)
		return;
	for (int call = 1; call <= 4; call++) {
		nvmlReturn_t status;
		unsigned asked = count;

		snprintf(key, sizeof(key), "%s.processes%s[call %d, count %u]", prefix,
			 version_2 ? "_v2" : "", call, asked);
		status = get(device, &count, infos);
		if (status == 7) {
			printf("%s: error 7 (%s) need=%u\n", key,
			       error_string ? error_string(status) : "?", count);
			free(infos);
			infos = calloc(count + 1, entry);
			continue;
		}
		if (status) {
			print_error(key, status);
			break;
		}
		printf("%s: ok count=%u", key, count);
		for (unsigned i = 0; i < count; i++) {
			if (version_2) {
				nvmlProcessInfo_v2_t *info = (nvmlProcessInfo_v2_t *)infos + i;

				printf(" %u/%lluMiB/gi=%d/ci=%d", info->pid, info->usedGpuMemory / MIB,
				       (int)info->gpuInstanceId, (int)info->computeInstanceId);
			} else {
				nvmlProcessInfo_v1_t *info = (nvmlProcessInfo_v1_t *)infos + i;

				printf(" %u/%lluMiB", info->pid, info->usedGpuMemory / MIB);
			}
		}
		printf("\n");
		break;
	}
	free(infos);
}

static void dump_device(unsigned index, nvmlReturn_t (*get_handle)(unsigned, nvmlDevice_t *))
{
	nvmlDevice_t device;
	nvmlReturn_t status;
	char prefix[32];

	snprintf(prefix, sizeof(prefix), "gpu%u", index);
	status = get_handle(index, &device);
	if (status) {
		char key[48];

		snprintf(key, sizeof(key), "%s.handle", prefix);
		print_error(key, status);
		return;
	}
	dump_strings(prefix, device);
	dump_pci(prefix, device);
	dump_memory(prefix, device);
	dump_numbers(prefix, device);
	dump_temperature_v(prefix, device);
	dump_processes(prefix, device, true);
	dump_processes(prefix, device, false);
}

int main(int argc, char **argv)
{
	nvmlReturn_t (*init)(void), (*shutdown)(void), (*get_count)(unsigned *);
	nvmlReturn_t (*init_with_flags)(unsigned);
	nvmlReturn_t (*get_handle)(unsigned, nvmlDevice_t *);
	nvmlReturn_t (*driver_version)(char *, unsigned);
	nvmlReturn_t status;
	unsigned count = 0;
	char text[80];

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: nvml_dump LIBRARY [NEXT_FIXTURE]\n");
		return 2;
	}
	library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!library) {
		fprintf(stderr, "nvml_dump: %s\n", dlerror());
		return 1;
	}
	error_string = need("nvmlErrorString");
	/* The suffixed names first, the old ones where they are missing, as gpurun does. */
	init = dlsym(library, "nvmlInit_v2") ? dlsym(library, "nvmlInit_v2") : need("nvmlInit");
	init_with_flags = dlsym(library, "nvmlInitWithFlags");
	shutdown = need("nvmlShutdown");
	get_count = dlsym(library, "nvmlDeviceGetCount_v2") ? dlsym(library, "nvmlDeviceGetCount_v2")
							     : need("nvmlDeviceGetCount");
	get_handle = dlsym(library, "nvmlDeviceGetHandleByIndex_v2")
			     ? dlsym(library, "nvmlDeviceGetHandleByIndex_v2")
			     : need("nvmlDeviceGetHandleByIndex");
	printf("suffixed: %s\n", dlsym(library, "nvmlInit_v2") ? "yes" : "no");
	if (!init || !shutdown || !get_count || !get_handle)
		return 1;

	status = get_count(&count);
	print_error("count[before init]", status);
	/* gpurun starts NVML with NVML_INIT_FLAG_NO_GPUS where it can; plain init is shown too. */
	if (init_with_flags) {
		status = init();
		if (status)
			print_error("init without flags", status);
		else
			shutdown();
	}
	status = init_with_flags ? init_with_flags(1) : init();
	if (status) {
		print_error("init", status);
		return 0;
	}
	printf("init: ok\n");
	driver_version = need("nvmlSystemGetDriverVersion");
	if (driver_version) {
		status = driver_version(text, sizeof(text));
		if (status)
			print_error("driver", status);
		else
			printf("driver: %s\n", text);
	}
	status = get_count(&count);
	if (status) {
		print_error("count", status);
		count = 0;
	} else {
		printf("count: %u\n", count);
	}
	for (unsigned i = 0; i < count; i++)
		dump_device(i, get_handle);
	if (count) {
		nvmlDevice_t device;

		print_error("handle[past count]", get_handle(count, &device));
	}

	/* Reference counting: a nested init needs its own shutdown. */
	printf("init[nested]: %d\n", init());
	printf("shutdown: %d\n", shutdown());
	status = get_count(&count);
	printf("count[after one shutdown]: %d\n", status);
	printf("shutdown: %d\n", shutdown());
	print_error("count[after last shutdown]", get_count(&count));
	print_error("shutdown[extra]", shutdown());

	if (argc == 3) {
		const char *fixture = getenv("GPURUN_FAKE_FIXTURE");

		if (!fixture || rename(argv[2], fixture)) {
			perror("nvml_dump: rename");
			return 1;
		}
		status = init();
		if (status == 0)
			status = get_count(&count);
		if (status)
			print_error("count[after rewrite]", status);
		else
			printf("count[after rewrite]: %u\n", count);
		shutdown();
	}
	return 0;
}
