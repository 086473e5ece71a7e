/* fake_cuda_direct: a program linked straight against libcuda.so.1 (the fake, through
 * LD_LIBRARY_PATH) that prints what the driver shows it after cuInit, for fakes_test.sh. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct {
	unsigned char bytes[16];
} CUuuid;

CUresult cuInit(unsigned flags);
CUresult cuDriverGetVersion(int *version);
CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice device);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, uint64_t flags,
			     int *symbol_status);

static void print_uuid(const CUuuid *uuid)
{
	printf("GPU-");
	for (int i = 0; i < 16; i++)
		printf("%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", uuid->bytes[i]);
}

int main(void)
{
	int count = -1, version = 0, symbol_status = -1;
	CUresult status;
	CUdevice device;
	CUuuid uuid;
	void *function = NULL;

	printf("count[before init]: %d\n", cuDeviceGetCount(&count));
	cuDriverGetVersion(&version);
	printf("version: %d\n", version);
	status = cuGetProcAddress_v2("cuGetProcAddress", &function, 12000, 0, &symbol_status);
	printf("proc[cuGetProcAddress]: %d %s\n", status,
	       function == (void *)cuGetProcAddress_v2 ? "itself" : "other");
	status = cuGetProcAddress_v2("cuInit", &function, 2000, 0, &symbol_status);
	printf("proc[cuInit]: %d %s\n", status, function == (void *)cuInit ? "cuInit" : "other");
	status = cuGetProcAddress_v2("cuNoSuchThing", &function, 2000, 0, &symbol_status);
	printf("proc[unknown]: %d %s status=%d\n", status, function ? "non-null" : "null",
	       symbol_status);

	status = cuInit(0);
	printf("init: %d\n", status);
	status = cuDeviceGetCount(&count);
	if (status) {
		printf("count: error %d\n", status);
		return 0;
	}
	printf("count: %d\n", count);
	for (int i = 0; i < count; i++) {
		if (cuDeviceGet(&device, i) || cuDeviceGetUuid(&uuid, device)) {
			printf("device %d: error\n", i);
			continue;
		}
		printf("device %d: ", i);
		print_uuid(&uuid);
		printf("\n");
	}
	printf("device[past count]: %d\n", cuDeviceGet(&device, count));
	return 0;
}
