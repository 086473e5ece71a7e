/* timing.h: the clock and the sort that every benchmark program times with. */
#ifndef GPURUN_BENCH_TIMING_H
#define GPURUN_BENCH_TIMING_H

#include <time.h>

static inline double now_us(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)now.tv_sec * 1e6 + (double)now.tv_nsec / 1e3;
}

/* For qsort: ascending doubles, for medians and percentiles. */
static inline int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#endif
