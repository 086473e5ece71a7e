/* procaddress_direct: a program linked against libcuda.so.1 (the fake) that never calls cuInit
 * by name: it asks cuGetProcAddress (v1 or v2, as the first argument says) for cuInit and calls
 * what it got, for preload_test.sh. Prints the lookup's and cuInit's results, the device count,
 * CUDA_VISIBLE_DEVICES and which object the cuInit it got belongs to. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef CUresult init_fn(unsigned flags);

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cuda_version, uint64_t flags);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, uint64_t flags,
			     int *symbol_status);
CUresult cuDeviceGetCount(int *count);

int main(int argc, char **argv)
{
	void *init = NULL;
	int status = -1, devices = -1;
	CUresult found, started = -1;
	Dl_info where = { 0 };

	if (argc > 1 && strcmp(argv[1], "v1") == 0)
		found = cuGetProcAddress("cuInit", &init, 12000, 0);
	else
		found = cuGetProcAddress_v2("cuInit", &init, 13000, 0, &status);
	if (init) {
		started = ((init_fn *)init)(0);
		dladdr(init, &where);
	}
	if (cuDeviceGetCount(&devices) != 0)
		devices = -1;
	const char *visible = getenv("CUDA_VISIBLE_DEVICES");
	const char *object = where.dli_fname ? strrchr(where.dli_fname, '/') : NULL;
	printf("proc=%d init=%d count=%d visible=%s from=%s\n", found, started, devices,
	       visible ? visible : "<unset>", object ? object + 1 : "?");
	return 0;
}
