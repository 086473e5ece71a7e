/* probe: takes a snapshot from the source the user asked for; "auto" is NVML, then nvidia-smi,
 * and when both fail the one message says what each tried and why it failed. */
#include <string.h>

#include "gpurun.h"

#define DEFAULT_SMI_TIMEOUT_S 10.0

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
	return gpurun_fail(err, GPURUN_EXIT_NO_GPU_INFO, "no GPU information: %.250s; %.230s",
			   nvml_reason, smi_reason);
}

int gpurun_probe(const struct gpurun_request *request, struct gpurun_snapshot *snapshot,
		 struct gpurun_error *err)
{
	enum gpurun_source source = request ? request->source : GPURUN_SOURCE_AUTO;
	double smi_timeout_s = request ? request->smi_timeout_s : DEFAULT_SMI_TIMEOUT_S;
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
