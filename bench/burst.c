/* burst: starts N copies of a command at once (posix_spawn, no shell in between), waits for all
 * of them, and prints the wall time in seconds; fails if any copy failed. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "timing.h"

extern char **environ;

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: burst N command [args...]\n");
		return 2;
	}
	int count = atoi(argv[1]);
	int failures = 0;
	double start = now_us() / 1e6;

	for (int i = 0; i < count; i++) {
		pid_t pid;
		if (posix_spawnp(&pid, argv[2], NULL, NULL, &argv[2], environ) != 0)
			failures++;
	}
	for (int status; wait(&status) > 0;)
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failures++;
	printf("%.3f\n", now_us() / 1e6 - start);
	if (failures)
		fprintf(stderr, "burst: %d of %d copies failed\n", failures, count);
	return failures != 0;
}
