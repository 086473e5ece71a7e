/* cuda_probe: what programs do to find out about CUDA without loading it, for preload_test.sh.
 * usage: cuda_probe noload | cuinit | procaddress
 *   noload       dlopen("libcuda.so.1", RTLD_NOLOAD): is the driver loaded already?
 *   cuinit       dlsym(RTLD_DEFAULT, "cuInit"), called when found
 *   procaddress  dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"), called when found
 * Prints the answer and CUDA_VISIBLE_DEVICES. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef CUresult init_fn(unsigned flags);
typedef CUresult get_proc_address_fn(const char *symbol, void **pfn, int cuda_version,
				     uint64_t flags, int *symbol_status);

int main(int argc, char **argv)
{
	const char *visible;
	const char *mode = argc > 1 ? argv[1] : "";

	if (strcmp(mode, "noload") == 0) {
		void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
		printf("loaded=%s", driver ? "yes" : "no");
	} else if (strcmp(mode, "cuinit") == 0) {
		init_fn *init = (init_fn *)dlsym(RTLD_DEFAULT, "cuInit");
		if (init)
			printf("cuInit=%d", init(0));
		else
			printf("cuInit=none");
	} else if (strcmp(mode, "procaddress") == 0) {
		get_proc_address_fn *find = (get_proc_address_fn *)dlsym(RTLD_DEFAULT,
									  "cuGetProcAddress_v2");
		void *pfn = NULL;
		if (find)
			printf("cuGetProcAddress_v2=%d", find("cuInit", &pfn, 13000, 0, NULL));
		else
			printf("cuGetProcAddress_v2=none");
	} else {
		fprintf(stderr, "usage: cuda_probe noload | cuinit | procaddress\n");
		return 2;
	}
	visible = getenv("CUDA_VISIBLE_DEVICES");
	printf(" visible=%s\n", visible ? visible : "<unset>");
	return 0;
}
