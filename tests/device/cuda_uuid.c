/* cuda_uuid: prints which GPU CUDA device 0 is, as NVML spells its UUID ("GPU-..."), for the
 * acceptance script (tests/device/acceptance.sh). It reaches the driver the way libcudart does,
 * by dlopen("libcuda.so.1"), so it works against the real driver and the fake one alike and
 * needs no CUDA toolkit: build it with plain `gcc cuda_uuid.c -ldl`.
 *
 * Output, one line: uuid=GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx count=N visible=VALUE
 * where VALUE is CUDA_VISIBLE_DEVICES as it stands after cuInit (a preload library may have set
 * it during the dlopen or the cuInit), or <unset>. Exit 1, with one line on stderr, on failure. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct {
	unsigned char bytes[16];
} CUuuid;

typedef CUresult init_fn(unsigned flags);
typedef CUresult count_fn(int *count);
typedef CUresult get_fn(CUdevice *device, int ordinal);
typedef CUresult uuid_fn(CUuuid *uuid, CUdevice device);

static int fail(const char *what, CUresult status)
{
	fprintf(stderr, "cuda_uuid: %s failed: CUresult %d\n", what, status);
	return 1;
}

int main(void)
{
	void *driver = dlopen("libcuda.so.1", RTLD_NOW);
	init_fn *cu_init;
	count_fn *cu_count;
	get_fn *cu_get;
	uuid_fn *cu_uuid;
	const char *visible;
	CUdevice device;
	CUuuid uuid;
	CUresult status;
	int count = 0;

	if (!driver) {
		fprintf(stderr, "cuda_uuid: %s\n", dlerror());
		return 1;
	}
	cu_init = (init_fn *)dlsym(driver, "cuInit");
	cu_count = (count_fn *)dlsym(driver, "cuDeviceGetCount");
	cu_get = (get_fn *)dlsym(driver, "cuDeviceGet");
	/* _v2 answers the MIG instance's own UUID where the old entry point answers its parent's;
	 * on a whole GPU both are the GPU's UUID. */
	cu_uuid = (uuid_fn *)dlsym(driver, "cuDeviceGetUuid_v2");
	if (!cu_uuid)
		cu_uuid = (uuid_fn *)dlsym(driver, "cuDeviceGetUuid");
	if (!cu_init || !cu_count || !cu_get || !cu_uuid) {
		fprintf(stderr, "cuda_uuid: libcuda.so.1 lacks an entry point this program needs\n");
		return 1;
	}
	if ((status = cu_init(0)) != 0)
		return fail("cuInit", status);
	if ((status = cu_count(&count)) != 0)
		return fail("cuDeviceGetCount", status);
	if ((status = cu_get(&device, 0)) != 0)
		return fail("cuDeviceGet(0)", status);
	if ((status = cu_uuid(&uuid, device)) != 0)
		return fail("cuDeviceGetUuid", status);

	/* CUuuid is the 16 raw bytes that NVML's "GPU-8-4-4-4-12" text spells in lowercase hex. */
	printf("uuid=GPU-");
	for (int i = 0; i < 16; i++)
		printf("%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", uuid.bytes[i]);
	visible = getenv("CUDA_VISIBLE_DEVICES");
	printf(" count=%d visible=%s\n", count, visible ? visible : "<unset>");
	return 0;
}
