/* pick: the C API in one page. Chooses GPUs as `gpurun --print` would (options in the same
 * syntax as GPURUN_OPTIONS), holds their lease while it prints the machine, then lets go.
 * Build against an installed libgpurun:  cc pick.c $(pkg-config --cflags --libs gpurun) */
#include <stdio.h>
#include <unistd.h>

#include <gpurun.h>

int main(int argc, char **argv)
{
	const char *options = argc > 1 ? argv[1] : "--limit 1 --order memory";
	struct gpurun_request request;
	struct gpurun_choice choice;
	struct gpurun_error err;
	char visible[1024];

	gpurun_request_init(&request);
	if (gpurun_request_parse_string(&request, options, &err) != 0) {
		fprintf(stderr, "pick: %s\n", err.message);
		gpurun_request_free(&request);
		return err.status;
	}
	/* Probe, apply CUDA_VISIBLE_DEVICES and the other masks, select, lease: what gpurun does. */
	int status = gpurun_acquire(&request, NULL, NULL, &choice, &err);
	if (status != 0) {
		fprintf(stderr, "pick: %s\n", err.message);
		gpurun_choice_free(&choice);
		gpurun_request_free(&request);
		return status;
	}
	if (gpurun_choice_format(&choice, &request, visible, sizeof(visible)) != 0) {
		fprintf(stderr, "pick: the chosen list does not fit in %zu bytes\n", sizeof(visible));
		gpurun_choice_free(&choice);
		gpurun_request_free(&request);
		return GPURUN_EXIT_SOFTWARE;
	}
	/* ROCR_VISIBLE_DEVICES for AMD GPUs, CUDA_VISIBLE_DEVICES for NVIDIA ones. */
	printf("%s=%s (%zu GPU%s, leased until this program lets go)\n",
	       gpurun_choice_variable(&choice), visible, choice.count, choice.count == 1 ? "" : "s");
	for (size_t i = 0; i < choice.count; i++) {
		const struct gpurun_device *gpu = &choice.snapshot.devices[choice.chosen[i]];

		printf("GPU %d %s: %s, load %.0f%%, %.0f of %.0f MiB used\n", gpu->index, gpu->uuid,
		       gpu->name, gpu->load * 100, gpu->memory_used, gpu->memory_total);
	}
	/* A program that runs the work itself would do it here, holding the lease; one that hands
	 * it to a child would call gpurun_lease_keep_across_exec first. */
	gpurun_choice_free(&choice);    /* releases the lease */
	gpurun_request_free(&request);
	return 0;
}
