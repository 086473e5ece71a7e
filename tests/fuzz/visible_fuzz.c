/* visible_fuzz: libFuzzer target for the inherited masks (CUDA_VISIBLE_DEVICES,
 * CUDA_DEVICE_ORDER, the Slurm variables, NVIDIA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES) against
 * a fixed machine: four NVIDIA GPUs of two models, one of them MIG-enabled with two instances,
 * and two AMD GPUs. The input is the variables' values separated by NUL bytes, after one byte
 * that says which are unset and how the CUDA driver answered (the driver itself is never run). */
#include "fuzz.h"
#include "gpurun.h"

enum { NVIDIA_GPUS = 4, MIG_INSTANCES = 2, AMD_GPUS = 2 };
#define DEVICE_COUNT (NVIDIA_GPUS + MIG_INSTANCES + AMD_GPUS)
enum { VARIABLES = 7 };

static struct gpurun_device devices[DEVICE_COUNT];
static struct gpurun_snapshot snapshot = { .devices = devices, .count = DEVICE_COUNT };

static void set_device(size_t position, int index, enum gpurun_vendor vendor, const char *uuid,
		       const char *name)
{
	gpurun_device_init_unknown(&devices[position]);
	devices[position].index = index;
	devices[position].vendor = vendor;
	snprintf(devices[position].uuid, sizeof(devices[position].uuid), "%s", uuid);
	snprintf(devices[position].name, sizeof(devices[position].name), "%s", name);
}

static void build_machine(void)
{
	static bool built;

	if (built)
		return;
	built = true;
	set_device(0, 0, GPURUN_VENDOR_NVIDIA, "GPU-11111111-0000-4000-8000-000000000000",
		   "NVIDIA H100 PCIe");
	set_device(1, 1, GPURUN_VENDOR_NVIDIA, "GPU-22222222-0000-4000-8000-000000000001",
		   "NVIDIA A100-SXM4-40GB");
	set_device(2, 2, GPURUN_VENDOR_NVIDIA, "GPU-2222abcd-0000-4000-8000-000000000002",
		   "NVIDIA A100-SXM4-40GB");
	set_device(3, 3, GPURUN_VENDOR_NVIDIA, "GPU-c0ffee00-0000-4000-8000-000000000003",
		   "NVIDIA A100-SXM4-40GB");
	devices[3].mig_enabled = true;
	for (int i = 0; i < MIG_INSTANCES; i++) {
		size_t at = NVIDIA_GPUS + (size_t)i;

		set_device(at, 3, GPURUN_VENDOR_NVIDIA, i ? "MIG-bbbb2222-0000-4000-8000-000000000005"
			   : "MIG-aaaa1111-0000-4000-8000-000000000004",
			   "NVIDIA A100-SXM4-40GB MIG 3g.20gb");
		devices[at].mig_parent = 3;
		devices[at].mig_instance = i;
		devices[at].mig_gpu_instance = i + 1;
		devices[at].mig_compute_instance = 0;
	}
	set_device(6, 4, GPURUN_VENDOR_AMD, "GPU-4f2a8b3c1d0e5f60", "AMD Instinct MI210");
	set_device(7, 5, GPURUN_VENDOR_AMD, "GPU-0123456789abcdef", "AMD Instinct MI210");
}

/* What the CUDA driver would have shown: some of the snapshot's UUIDs (without dashes, as
 * cuDeviceGetUuid gives them) in an order chosen by the input, or one it does not know. */
static void driver_answer(unsigned choice, char (*uuids)[GPURUN_UUID_SIZE], size_t *count)
{
	static const size_t shown[] = { 2, 0, 1, 4, 3, 5 };

	*count = choice % 5;
	for (size_t i = 0; i < *count; i++) {
		const char *uuid = devices[shown[(i + choice / 5) % 6]].uuid;
		size_t n = 0;

		n += (size_t)snprintf(uuids[i], GPURUN_UUID_SIZE, "%.4s", uuid);
		for (const char *c = uuid + 4; *c && n + 1 < GPURUN_UUID_SIZE; c++)
			if (*c != '-')
				uuids[i][n++] = *c;
		uuids[i][n] = '\0';
	}
	if (choice & 0x80 && *count > 0)
		snprintf(uuids[0], GPURUN_UUID_SIZE, "GPU-00000000000000000000000000000000");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *values[VARIABLES] = { 0 };
	char *storage;
	struct gpurun_inherited inherited;
	struct gpurun_mask mask = { 0 };
	struct gpurun_error err;
	char answer[6][GPURUN_UUID_SIZE];
	struct gpurun_cuda_order order = { .asked = true, .uuids = answer };
	bool allowed[DEVICE_COUNT];

	if (size < 2)
		return 0;
	build_machine();
	unsigned unset = data[0], driver = data[1];
	size_t count = fuzz_split(data + 2, size - 2, values, VARIABLES, &storage);
	for (size_t i = 0; i < VARIABLES; i++)
		if (i >= count || unset & (1u << i))
			values[i] = NULL;

	inherited = (struct gpurun_inherited){
		.cuda_visible_devices = values[0],
		.cuda_device_order = values[1],
		.slurm_step_gpus = values[2],
		.slurm_job_gpus = values[3],
		.slurm_job_id = values[4],
		.nvidia_visible_devices = values[5],
	};
	order.answered = driver & 0x40;
	driver_answer(driver, answer, &order.count);
	if (!order.answered)
		snprintf(order.failure, sizeof(order.failure), "the fuzzer's driver did not answer");

	/* With the driver's answer, and never asking it (NULL), as gpurun's callers do. */
	for (int pass = 0; pass < 2; pass++) {
		int status = gpurun_mask_apply(&snapshot, &inherited, pass ? NULL : &order, &mask, &err);

		fuzz_require(status == 0 || status == GPURUN_EXIT_SOFTWARE);
		if (status)
			continue;
		size_t allowed_count = 0;
		fuzz_require(mask.count == snapshot.count);
		for (size_t i = 0; i < snapshot.count; i++) {
			allowed_count += mask.allowed[i];
			fuzz_require(mask.verdicts[i] <= GPURUN_MASK_MIG_MODE_UNKNOWN);
			fuzz_require(strcmp(gpurun_mask_verdict_text(mask.verdicts[i]), "unknown"));
			/* A MIG-enabled GPU is never a device itself, whatever the variables say. */
			if (devices[i].mig_enabled)
				fuzz_require(!mask.allowed[i]);
			/* Of these variables only a Slurm allocation limits AMD devices, and on
			 * this machine, which has NVIDIA GPUs too, it cannot be matched to them. */
			bool slurm = inherited.slurm_step_gpus || inherited.slurm_job_gpus;
			if (devices[i].vendor == GPURUN_VENDOR_AMD)
				fuzz_require(mask.allowed[i] == !slurm);
		}
		fuzz_require(allowed_count == mask.allowed_count);
		fuzz_require_terminated(mask.rules);
		fuzz_require_terminated(mask.warning);
		fuzz_require_terminated(mask.nothing_allowed);
	}
	gpurun_mask_free(&mask);

	if (gpurun_visible_mask(&snapshot, values[0], allowed, &err) == 0) {
		/* NULL (unset) permits every device but a MIG-enabled GPU; empty permits none. */
		for (size_t i = 0; i < snapshot.count; i++) {
			if (!values[0] && devices[i].vendor == GPURUN_VENDOR_NVIDIA)
				fuzz_require(allowed[i] == !devices[i].mig_enabled);
			if (values[0] && !values[0][0] && devices[i].vendor == GPURUN_VENDOR_NVIDIA)
				fuzz_require(!allowed[i]);
		}
	}

	/* ROCR_VISIBLE_DEVICES leaves the NVIDIA entries as they are, and only narrows. */
	for (size_t i = 0; i < snapshot.count; i++)
		allowed[i] = i % 2;
	gpurun_rocr_visible_mask(&snapshot, values[6], allowed);
	for (size_t i = 0; i < snapshot.count; i++) {
		if (devices[i].vendor == GPURUN_VENDOR_NVIDIA)
			fuzz_require(allowed[i] == i % 2);
		else if (i % 2 == 0)
			fuzz_require(!allowed[i]);
	}
	free(storage);
	return 0;
}
