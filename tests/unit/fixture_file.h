/* fixture_file.h: the fixture file a unit test writes for the fakes (tests/fixtures/README.md),
 * in a scratch directory of the test program's own, named by GPURUN_FAKE_FIXTURE. */
#ifndef GPURUN_UNIT_FIXTURE_FILE_H
#define GPURUN_UNIT_FIXTURE_FILE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "unit.h"

static char scratch[] = "/tmp/gpurun-unit-test.XXXXXX";
static char fixture_path[128];

/* For a group's setup: makes the directory and points GPURUN_FAKE_FIXTURE into it. */
static inline int fixture_file_start(void)
{
	if (!mkdtemp(scratch))
		return -1;
	snprintf(fixture_path, sizeof(fixture_path), "%s/fixture", scratch);
	setenv("GPURUN_FAKE_FIXTURE", fixture_path, 1);
	return 0;
}

/* For a group's teardown. */
static inline void fixture_file_end(void)
{
	unlink(fixture_path);
	rmdir(scratch);
}

/* The simulated machine, from now on. */
static inline void use_fixture(const char *text)
{
	FILE *file = fopen(fixture_path, "w");

	assert_non_null(file);
	assert_true(fputs(text, file) >= 0);
	assert_int_equal(fclose(file), 0);
}

#endif
