/* clock_internal.h: the one clock of gpurun's deadlines and waits. */
#ifndef GPURUN_CLOCK_INTERNAL_H
#define GPURUN_CLOCK_INTERNAL_H

#include <time.h>

/* CLOCK_MONOTONIC in seconds: deadlines that a change of the wall clock cannot move. */
static inline double monotonic_seconds(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

#endif
