/* probe: takes a snapshot from the source the user asked for; "auto" is NVML, then nvidia-smi,
 * plus the AMD GPUs (amdgpu), and when all fail the one message says what each tried and why. */
#include <stdio.h>
#include <string.h>

#include "gpurun.h"

/* A reason cut to its share of one message, with "..." where it was cut. */
struct share {
	char text[300];
};

static struct share shortened(const char *reason, size_t room)
{
	struct share share;
	size_t length = strlen(reason);

	if (room > sizeof(share.text))
		room = sizeof(share.text);
	if (length < room)
		memcpy(share.text, reason, length + 1);
	else
		snprintf(share.text, room, "%.*s...", (int)(room - 4), reason);
	return share;
}

/* Each part is cut short so that both fit in one message. */
static int no_gpu_information(struct gpurun_error *err, const char *nvml_reason,
			      const char *smi_reason)
{
	if (!nvml_reason)
		return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "no GPU information: %s",
				   smi_reason);
	if (!smi_reason)
		return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "no GPU information: %s",
				   nvml_reason);
	return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "no GPU information: %s; %s",
			   shortened(nvml_reason, 240).text, shortened(smi_reason, 240).text);
}

static int probe_nvidia(enum gpurun_source source, double smi_timeout_s,
			struct gpurun_snapshot *snapshot, struct gpurun_error *err)
{
	struct gpurun_error nvml_err = { 0 }, smi_err = { 0 };
	int status;

	memset(snapshot, 0, sizeof(*snapshot));
	if (source != GPURUN_SOURCE_SMI) {
		status = gpurun_probe_nvml(snapshot, &nvml_err);
		if (status == 0)
			return 0;
		/* Out of memory is not a missing source: trying another would hide it. */
		if (status != GPURUN_EXIT_NO_GPU_INFO)
			return gpurun_fail(err, status, "%s", nvml_err.message);
		if (source == GPURUN_SOURCE_NVML)
			return no_gpu_information(err, nvml_err.message, NULL);
	}
	status = gpurun_probe_smi(smi_timeout_s, snapshot, &smi_err);
	if (status == 0)
		return 0;
	if (status != GPURUN_EXIT_NO_GPU_INFO)
		return gpurun_fail(err, status, "%s", smi_err.message);
	return no_gpu_information(err, source == GPURUN_SOURCE_SMI ? NULL : nvml_err.message,
				  smi_err.message);
}

/* NVIDIA first, AMD after: a machine with both shows NVIDIA GPUs 0..n-1, then AMD GPUs n...
 * Without AMD GPUs the answer is exactly the NVIDIA one; without NVIDIA GPUs, the AMD one. */
int gpurun_probe(const struct gpurun_request *request, struct gpurun_snapshot *snapshot,
		 struct gpurun_error *err)
{
	enum gpurun_source source = request ? request->source : GPURUN_SOURCE_AUTO;
	enum gpurun_vendor_filter vendor = request ? request->vendor : GPURUN_VENDOR_ANY;
	double smi_timeout_s = request ? request->smi_timeout_s : 0;   /* 0: probe_smi's 10 s */
	bool want_nvidia = source != GPURUN_SOURCE_AMDGPU && vendor != GPURUN_VENDOR_ONLY_AMD;
	bool want_amd = (source == GPURUN_SOURCE_AUTO || source == GPURUN_SOURCE_AMDGPU) &&
			vendor != GPURUN_VENDOR_ONLY_NVIDIA;
	struct gpurun_snapshot amd;
	struct gpurun_error amd_err = { 0 };
	int status = GPURUN_EXIT_NO_GPU_INFO, amd_status;

	memset(snapshot, 0, sizeof(*snapshot));
	if (want_nvidia) {
		status = probe_nvidia(source, smi_timeout_s, snapshot, err);
		if (status != 0 && status != GPURUN_EXIT_NO_GPU_INFO)
			return status;
	}
	if (!want_amd)
		return status;
	amd_status = gpurun_probe_amdgpu(&amd, &amd_err);
	if (amd_status == GPURUN_EXIT_NO_GPU_INFO) {
		if (!want_nvidia)
			return no_gpu_information(err, NULL, amd_err.message);
		if (status != 0) {
			char nvidia_message[sizeof(err->message)];

			snprintf(nvidia_message, sizeof(nvidia_message), "%s", err->message);
			gpurun_fail(err, status, "%s; %s", shortened(nvidia_message, 300).text,
				    shortened(amd_err.message, 200).text);
		}
		return status;
	}
	if (amd_status != 0) {
		gpurun_snapshot_free(snapshot);
		return gpurun_fail(err, amd_status, "%s", amd_err.message);
	}
	if (status != 0) {
		*snapshot = amd;
		return 0;
	}
	status = gpurun_snapshot_append(snapshot, &amd, err);
	if (status != 0) {
		gpurun_snapshot_free(&amd);
		gpurun_snapshot_free(snapshot);
		return status;
	}
	snapshot->source = strcmp(snapshot->source, "nvml") == 0 ? "nvml+amdgpu"
								  : "nvidia-smi+amdgpu";
	return 0;
}
