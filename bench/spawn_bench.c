/* spawn_bench: times whole commands. Runs each command (separated by "::") RUNS times, round
 * robin so that drift of the machine hits all of them alike, and prints each one's median,
 * 10th and 90th percentile wall time in microseconds. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "timing.h"

extern char **environ;

static double run_once(char **command)
{
	pid_t pid;
	int status;
	double start = now_us();

	if (posix_spawnp(&pid, command[0], NULL, NULL, command, environ) != 0 ||
	    waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "spawn_bench: '%s' failed\n", command[0]);
		exit(1);
	}
	return now_us() - start;
}

int main(int argc, char **argv)
{
	char **commands[16];
	int count = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: spawn_bench RUNS command... [:: command...]...\n");
		return 2;
	}
	int runs = atoi(argv[1]);
	commands[count++] = &argv[2];
	for (int i = 2; i < argc && count < 16; i++) {
		if (strcmp(argv[i], "::") == 0) {
			argv[i] = NULL;
			commands[count++] = &argv[i + 1];
		}
	}
	double *times = calloc((size_t)(runs * count), sizeof(*times));
	if (!times || runs < 1)
		return 2;
	for (int c = 0; c < count; c++)
		run_once(commands[c]);  /* warm the page cache */
	for (int r = 0; r < runs; r++)
		for (int c = 0; c < count; c++)
			times[c * runs + r] = run_once(commands[c]);
	for (int c = 0; c < count; c++) {
		double *mine = &times[c * runs];
		qsort(mine, (size_t)runs, sizeof(*mine), compare_doubles);
		printf("%.1f %.1f %.1f\n", mine[runs / 2], mine[runs / 10], mine[runs * 9 / 10]);
	}
	free(times);
	return 0;
}
