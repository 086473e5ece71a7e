/* snapshot_bench: the cost of one look at the machine (probe, mask, select) through the
 * library, as the median of many, for the fixture in GPURUN_FAKE_FIXTURE. Prints microseconds. */
#include <stdio.h>
#include <stdlib.h>

#include "timing.h"

#include "gpurun.h"

int main(int argc, char **argv)
{
	struct gpurun_request request;
	struct gpurun_error err;
	int runs = argc > 1 ? atoi(argv[1]) : 200;
	double *times = calloc((size_t)(runs > 0 ? runs : 1), sizeof(*times));

	gpurun_request_init(&request);
	request.source = argc > 2 && argv[2][0] == 's' ? GPURUN_SOURCE_SMI : GPURUN_SOURCE_NVML;
	request.limit = GPURUN_LIMIT_ALL;
	for (int r = 0; r < runs; r++) {
		struct gpurun_snapshot snapshot;
		double start = now_us();

		if (gpurun_probe(&request, &snapshot, &err) != 0) {
			fprintf(stderr, "snapshot_bench: %s\n", err.message);
			return 1;
		}
		bool *allowed = malloc(snapshot.count * sizeof(*allowed) + 1);
		size_t *candidates = malloc(snapshot.count * sizeof(*candidates) + 1);
		if (!allowed || !candidates ||
		    gpurun_visible_mask(&snapshot, NULL, allowed, &err) != 0)
			return 1;
		gpurun_select(&snapshot, allowed, &request, candidates);
		times[r] = now_us() - start;
		free(allowed);
		free(candidates);
		gpurun_snapshot_free(&snapshot);
	}
	qsort(times, (size_t)runs, sizeof(*times), compare_doubles);
	printf("%.1f\n", times[runs / 2]);
	free(times);
	gpurun_request_free(&request);
	return 0;
}
