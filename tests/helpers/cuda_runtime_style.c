/* cuda_runtime_style: reaches the CUDA driver the way libcudart does (dlopen "libcuda.so.1",
 * cuGetProcAddress_v2, cuInit through it), for preload_test.sh. Prints CUDA_VISIBLE_DEVICES
 * right after the dlopen, then what cuInit gave it.
 * usage: cuda_runtime_style [--gate PATH] [--hold PATH]   (see gate.h) */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"

typedef int CUresult;
typedef CUresult get_proc_address_fn(const char *symbol, void **pfn, int cuda_version,
				     uint64_t flags, int *symbol_status);
typedef CUresult init_fn(unsigned flags);
typedef CUresult count_fn(int *count);

static const char *variable(const char *name)
{
	const char *value = getenv(name);

	return value ? value : "<unset>";
}

int main(int argc, char **argv)
{
	const char *gate = NULL, *hold = NULL;
	void *init = NULL, *count = NULL;
	int devices = -1;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--gate") == 0)
			gate = argv[i + 1];
		else if (strcmp(argv[i], "--hold") == 0)
			hold = argv[i + 1];
	}
	wait_at_gate(gate);
	void *driver = dlopen("libcuda.so.1", RTLD_NOW);
	if (!driver) {
		printf("dlopen: %s\n", dlerror());
		return 1;
	}
	printf("loaded=%s ", variable("CUDA_VISIBLE_DEVICES"));
	get_proc_address_fn *get_proc_address = (get_proc_address_fn *)dlsym(driver,
									      "cuGetProcAddress_v2");
	if (!get_proc_address || get_proc_address("cuInit", &init, 12000, 0, NULL) || !init ||
	    get_proc_address("cuDeviceGetCount", &count, 12000, 0, NULL) || !count) {
		printf("cuGetProcAddress_v2: missing\n");
		return 1;
	}
	CUresult status = ((init_fn *)init)(0);
	if (status == 0)
		((count_fn *)count)(&devices);
	printf("init=%d count=%d visible=%s\n", status, devices, variable("CUDA_VISIBLE_DEVICES"));
	fflush(stdout);
	wait_at_gate(hold);
	return 0;
}
