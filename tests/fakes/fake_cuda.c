/* fake_cuda: a libcuda.so.1 that records the CUDA_VISIBLE_DEVICES it sees at cuInit and then
 * applies it the way the driver does, so tests can check what a program's CUDA would use. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fixture.h"

/* Only the driver entry points leave this library. */
#pragma GCC visibility push(hidden)
#define CUDA_EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef struct {
	char bytes[16];
} CUuuid;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
};

enum { CU_GET_PROC_ADDRESS_SUCCESS = 0, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1 };

CUDA_EXPORT CUresult cuInit(unsigned flags);
CUDA_EXPORT CUresult cuDriverGetVersion(int *version);
CUDA_EXPORT CUresult cuDeviceGetCount(int *count);
CUDA_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUDA_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice device);
CUDA_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice device);
CUDA_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cuda_version,
				      uint64_t flags);
CUDA_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version,
					 uint64_t flags, int *symbol_status);

#define DEFAULT_CUDA_VERSION 13000

/* Like the real driver, the first cuInit decides everything; later ones repeat its answer.
 * pthread_once, not a mutex: a child forked while another thread initializes (a test forks at
 * the preload library's hand-off, just before the driver's cuInit) initializes again itself
 * rather than waiting for a lock no thread of its own holds. */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static bool init_done;
static CUresult init_result;
static int driver_version;
static CUuuid *visible_uuids;           /* CUDA device N is visible_uuids[N] */
static int visible_count;

static bool ready(void)
{
	return __atomic_load_n(&init_done, __ATOMIC_ACQUIRE) && init_result == CUDA_SUCCESS;
}

/* One line per cuInit, in one write on an O_APPEND descriptor, so that lines from concurrent
 * processes never interleave. */
static void record(void)
{
	const char *path = getenv("GPURUN_FAKE_CUDA_RECORD");
	const char *visible = getenv("CUDA_VISIBLE_DEVICES");
	const char *order = getenv("CUDA_DEVICE_ORDER");
	char line[4096];
	int length, fd;

	if (!path || !*path)
		return;
	length = snprintf(line, sizeof(line), "pid=%ld CUDA_VISIBLE_DEVICES=%s CUDA_DEVICE_ORDER=%s\n",
			  (long)getpid(), visible ? visible : "<unset>", order ? order : "<unset>");
	if (length < 0)
		return;
	if ((size_t)length >= sizeof(line)) {
		length = sizeof(line) - 1;
		line[length - 1] = '\n';
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	(void)!write(fd, line, (size_t)length);
	close(fd);
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* CUuuid is the 16 raw bytes that "GPU-xxxxxxxx-xxxx-..." spells in hex. */
static void uuid_bytes(const char *text, CUuuid *uuid)
{
	size_t n = 0;

	memset(uuid, 0, sizeof(*uuid));
	if (!strncmp(text, "GPU-", 4))
		text += 4;
	for (; *text && n < 32; text++) {
		int value = hex_value(*text);

		if (value < 0)
			continue;
		uuid->bytes[n / 2] = (char)(uuid->bytes[n / 2] | value << (n % 2 ? 0 : 4));
		n++;
	}
}

/* The GPU a `GPU-` entry names: a unique case-insensitive prefix of one UUID, else -1. */
static long find_uuid(const struct fixture *machine, const char *prefix, size_t length)
{
	long found = -1;

	for (size_t i = 0; i < machine->gpu_count; i++) {
		if (strncasecmp(machine->gpus[i].uuid, prefix, length) == 0) {
			if (found >= 0)
				return -1;
			found = (long)i;
		}
	}
	return found;
}

/* CUDA_VISIBLE_DEVICES as the driver reads it (lib/visible.c has the sources), in a simple
 * form: integers (positions in CUDA's order) or GPU- UUID prefixes, separated by commas. The
 * first entry decides which: an entry of the other kind ends the list, as does an invalid or
 * unknown one; a GPU named twice leaves none. Fills physical[] and returns how many. */
static size_t parse_visible(const struct fixture *machine, const unsigned *order,
			    const char *list, unsigned *physical)
{
	size_t count = 0;
	bool *taken = calloc(machine->gpu_count + 1, sizeof(*taken));
	int integers = -1;              /* the first entry's kind: 1 integers, 0 UUIDs */

	while (taken && *list) {
		const char *end = strchr(list, ',');
		size_t length = end ? (size_t)(end - list) : strlen(list);
		const char *entry = list;
		long index = -1;

		while (length && (*entry == ' ' || *entry == '\t'))
			entry++, length--;
		while (length && (entry[length - 1] == ' ' || entry[length - 1] == '\t'))
			length--;
		bool integer = length && strspn(entry, "0123456789") >= length;

		if (integers < 0)
			integers = integer;
		if (integer && integers) {
			unsigned long position = strtoul(entry, NULL, 10);

			if (position < machine->gpu_count)
				index = order[position];
		} else if (!integer && !integers && length > 4 && !strncmp(entry, "GPU-", 4)) {
			index = find_uuid(machine, entry, length);
		}
		if (index < 0)
			break;
		if (taken[index]) {
			count = 0;
			break;
		}
		taken[index] = true;
		physical[count++] = (unsigned)index;
		if (!end)
			break;
		list = end + 1;
	}
	free(taken);
	return count;
}

static CUresult initialize(void)
{
	struct fixture machine;
	char why[512];
	const char *order_name = getenv("CUDA_DEVICE_ORDER");
	const char *visible = getenv("CUDA_VISIBLE_DEVICES");
	unsigned *physical;
	size_t count;

	driver_version = DEFAULT_CUDA_VERSION;
	if (fixture_load(getenv("GPURUN_FAKE_FIXTURE"), &machine, why, sizeof(why))) {
		if (why[0])
			fprintf(stderr, "fake libcuda: %s\n", why);
		return CUDA_ERROR_NO_DEVICE;
	}
	driver_version = machine.cuda_version;
	if (machine.cuda_lingers) {
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		for (;;)
			pause();
	}
	if (machine.init_error) {
		bool mismatch = machine.init_error == NVML_ERROR_LIB_RM_VERSION_MISMATCH;

		fixture_free(&machine);
		return mismatch ? CUDA_ERROR_SYSTEM_DRIVER_MISMATCH : CUDA_ERROR_NO_DEVICE;
	}
	physical = malloc((machine.gpu_count + 1) * sizeof(*physical));
	visible_uuids = malloc((machine.gpu_count + 1) * sizeof(*visible_uuids));
	if (!physical || !visible_uuids) {
		free(physical);
		fixture_free(&machine);
		return CUDA_ERROR_NO_DEVICE;
	}
	/* Without PCI_BUS_ID, integers count in FASTEST_FIRST order, and so do the devices. */
	if (order_name && !strcmp(order_name, "PCI_BUS_ID")) {
		for (size_t i = 0; i < machine.gpu_count; i++)
			physical[i] = (unsigned)i;
	} else {
		memcpy(physical, machine.cuda_order, machine.gpu_count * sizeof(*physical));
	}
	count = machine.gpu_count;
	if (visible && !machine.cuda_ignores_visible) {
		unsigned *chosen = malloc((machine.gpu_count + 1) * sizeof(*chosen));

		count = chosen ? parse_visible(&machine, physical, visible, chosen) : 0;
		if (chosen)
			memcpy(physical, chosen, count * sizeof(*physical));
		free(chosen);
	}
	for (size_t i = 0; i < count; i++)
		uuid_bytes(machine.gpus[physical[i]].uuid, &visible_uuids[i]);
	visible_count = (int)count;
	free(physical);
	fixture_free(&machine);
	/* The driver refuses to initialize when it has no device to show, as with
	 * CUDA_VISIBLE_DEVICES="" or "-1". */
	return count ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

static void initialize_once(void)
{
	init_result = initialize();
	__atomic_store_n(&init_done, true, __ATOMIC_RELEASE);
}

CUresult cuInit(unsigned flags)
{
	record();
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_once(&init_once, initialize_once);
	return init_result;
}

/* Answers before cuInit too, as the real driver does. */
CUresult cuDriverGetVersion(int *version)
{
	struct fixture machine;
	char why[512];

	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	if (__atomic_load_n(&init_done, __ATOMIC_ACQUIRE)) {
		*version = driver_version;
	} else if (fixture_load(getenv("GPURUN_FAKE_FIXTURE"), &machine, why, sizeof(why)) == 0) {
		*version = machine.cuda_version;
		fixture_free(&machine);
	} else {
		*version = DEFAULT_CUDA_VERSION;
	}
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	if (!ready())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = visible_count;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	if (!ready())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal < 0 || ordinal >= visible_count)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice device)
{
	if (!ready())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	if (device < 0 || device >= visible_count)
		return CUDA_ERROR_INVALID_DEVICE;
	*uuid = visible_uuids[device];
	return CUDA_SUCCESS;
}

/* v2 differs only for MIG instances, which the fake does not have. */
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice device)
{
	return cuDeviceGetUuid(uuid, device);
}

/* The runtime finds every entry point here, cuGetProcAddress itself first. Unknown names
 * answer success with a NULL pointer, which the runtime accepts. */
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, uint64_t flags,
			     int *symbol_status)
{
	const struct {
		const char *name;
		void *function;
	} table[] = {
		{ "cuInit", (void *)cuInit },
		{ "cuDriverGetVersion", (void *)cuDriverGetVersion },
		{ "cuDeviceGetCount", (void *)cuDeviceGetCount },
		{ "cuDeviceGet", (void *)cuDeviceGet },
		{ "cuDeviceGetUuid",
		  cuda_version >= 11040 ? (void *)cuDeviceGetUuid_v2 : (void *)cuDeviceGetUuid },
		{ "cuGetProcAddress",
		  cuda_version >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress },
	};

	(void)flags;
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(symbol, table[i].name))
			*pfn = table[i].function;
	if (symbol_status)
		*symbol_status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS
				      : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cuda_version, uint64_t flags)
{
	return cuGetProcAddress_v2(symbol, pfn, cuda_version, flags, NULL);
}
