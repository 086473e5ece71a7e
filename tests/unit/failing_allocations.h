/* failing_allocations.h: fails the library's allocations one at a time, for the unit tests
 * whose link wraps calloc, malloc and realloc (UNIT_LDFLAGS in the Makefile), in every object
 * of the library: allocation number fail_at (from 0) fails, and allocation_failed says it did;
 * -1 fails none. Allocations inside libc and the loader are not reached. */
#ifndef GPURUN_UNIT_FAILING_ALLOCATIONS_H
#define GPURUN_UNIT_FAILING_ALLOCATIONS_H

#include <stdbool.h>
#include <stddef.h>

void *__real_calloc(size_t count, size_t size);
void *__real_malloc(size_t size);
void *__real_realloc(void *pointer, size_t size);
void *__wrap_calloc(size_t count, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_realloc(void *pointer, size_t size);

static long fail_at = -1;
static long allocations;
static bool allocation_failed;

static bool fail_this_one(void)
{
	if (fail_at < 0 || allocations++ != fail_at)
		return false;
	allocation_failed = true;
	return true;
}

void *__wrap_calloc(size_t count, size_t size)
{
	return fail_this_one() ? NULL : __real_calloc(count, size);
}

void *__wrap_malloc(size_t size)
{
	return fail_this_one() ? NULL : __real_malloc(size);
}

void *__wrap_realloc(void *pointer, size_t size)
{
	return fail_this_one() ? NULL : __real_realloc(pointer, size);
}

#endif
