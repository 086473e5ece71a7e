/* fixture.h: the simulated machine that every fake (NVML, nvidia-smi, libcuda) answers from,
 * parsed from the file named by GPURUN_FAKE_FIXTURE (format: tests/fixtures/README.md). */
#ifndef GPURUN_FAKE_FIXTURE_H
#define GPURUN_FAKE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

/* The fakes are shared libraries loaded into programs under test: none of this is exported. */
#pragma GCC visibility push(hidden)

/* NVML return codes the fakes use (shared/reference/nvml-cuda-abi.md). */
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_ERROR_DEPRECATED = 26,
	NVML_ERROR_UNKNOWN = 999,
};

/* A100 SXM4 80GB: the PCI ids every fake GPU reports. */
#define FIXTURE_PCI_DEVICE_ID 0x20B210DEu
#define FIXTURE_PCI_SUBSYSTEM_ID 0x147F10DEu

/* Calls that `error FIELD ERROR` can make fail on one GPU. */
enum fixture_field {
	FIELD_HANDLE,
	FIELD_UUID,
	FIELD_NAME,
	FIELD_SERIAL,
	FIELD_PCI,
	FIELD_MEMORY,
	FIELD_MEMORY_V2,
	FIELD_UTILIZATION,
	FIELD_TEMPERATURE,              /* the sensor: both temperature calls */
	FIELD_TEMPERATURE_V,            /* nvmlDeviceGetTemperatureV alone */
	FIELD_TEMPERATURE_LEGACY,       /* the deprecated nvmlDeviceGetTemperature alone */
	FIELD_POWER,
	FIELD_DISPLAY_MODE,
	FIELD_DISPLAY_ACTIVE,
	FIELD_PROCESSES,
	/* MIG calls, for fault injection (tests/integration/faults_test.sh) */
	FIELD_MIG_MODE,
	FIELD_MIG_MAX,
	FIELD_MIG_HANDLE,
	FIELD_GPU_INSTANCE_ID,
	FIELD_COMPUTE_INSTANCE_ID,
	FIELD_COUNT
};

struct fixture_process {
	unsigned pid;
	unsigned long long used_mib;
};

struct fixture_gpu {
	char uuid[96];
	char name[96];
	char serial[32];
	char bus_id[32];                /* "00000000:17:00.0", NVML's busId */
	char bus_id_legacy[16];         /* "0000:17:00.0" */
	unsigned domain, bus, device;
	unsigned utilization;           /* percent */
	unsigned long long memory_total, memory_used, memory_reserved; /* MiB, v2 meaning */
	unsigned temperature;           /* C */
	unsigned power_mw;
	bool display_mode, display_active;
	bool lost;
	int errors[FIELD_COUNT];        /* NVML_SUCCESS, or the error that call answers */
	size_t first_process;           /* into fixture.processes */
	size_t process_count;
	/* `process_race`: one more process that appears once the list has been asked for. */
	bool has_race;
	struct fixture_process race;
	/* `process_growth N`: N more processes at every process-list call after the first. */
	unsigned growth;
	unsigned list_calls;            /* process-list calls since the fixture was loaded */
	/* MIG. A GPU: its mode and instances. An instance is a fixture_gpu too, in
	 * fixture.instances, so every per-GPU directive and call works on it unchanged. */
	int mig_mode;                   /* -1: no MIG support (NOT_SUPPORTED), 0: off, 1: on */
	unsigned mig_max;               /* nvmlDeviceGetMaxMigDeviceCount */
	size_t first_instance, instance_count;  /* into fixture.instances */
	long mig_parent;                /* an instance's GPU (its index); -1 for a GPU */
	unsigned mig_slot;              /* an instance's nvmlDeviceGetMigDeviceHandleByIndex index */
	unsigned gpu_instance_id, compute_instance_id;
};

struct fixture {
	char driver[80];
	int cuda_version;
	int init_error;                 /* NVML_SUCCESS unless `init_error` */
	int count_error;                /* `error count ERROR` */
	int driver_error;               /* `error driver ERROR` */
	bool smi_error;
	int smi_status;
	char smi_text[512];             /* `\n` in the fixture already turned into newlines */
	bool smi_hang, smi_crlf, smi_no_final_newline;
	struct fixture_gpu *gpus;
	size_t gpu_count;
	struct fixture_process *processes;
	size_t process_total;
	unsigned *cuda_order;           /* physical indices, fastest first; gpu_count entries */
	bool cuda_ignores_visible;      /* a broken driver: shows every GPU whatever the mask */
	bool cuda_lingers;              /* cuInit closes the caller's descriptors and never returns */
	struct fixture_gpu *instances;  /* MIG instances, each GPU's together */
	size_t instance_total;
};

/* Reads and parses the fixture file. Returns 0, or -1 when the file cannot be read (errno
 * set, *why empty) or is ill-formed (*why says where and what). The fixture is zeroed on
 * failure; fixture_free is safe either way. */
int fixture_load(const char *path, struct fixture *fixture, char *why, size_t why_size);
void fixture_free(struct fixture *fixture);

/* "NOT_SUPPORTED" or "3" → 3; -1 when not an NVML error name or number. */
int fixture_error_code(const char *name);
/* What nvmlErrorString answers for an NVML return code. */
const char *fixture_error_string(int code);

#pragma GCC visibility pop

#endif
