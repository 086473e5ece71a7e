/* preload_direct: a program linked straight against libcuda.so.1 (the fake), for
 * preload_test.sh and the bench: calls cuInit from one or more threads at once and prints
 * what each got. usage: preload_direct [--gate PATH] [--threads N] [--fork] [--fork-during-init]
 * [--fork-at-hand-off] [--time] [--hold PATH]   (--gate/--hold: see gate.h; --time prints how
 * long cuInit took; --fork: a child calls cuInit after the parent's; --fork-during-init: while
 * another thread is still inside its cuInit; --fork-at-hand-off: the moment another thread's
 * cuInit has put GPURUN_CHOSEN into the environment) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "gate.h"

typedef int CUresult;

CUresult cuInit(unsigned flags);
CUresult cuDeviceGetCount(int *count);

#define MAX_THREADS 64

static pthread_barrier_t all_ready;
static CUresult results[MAX_THREADS];

static void *init_together(void *slot)
{
	pthread_barrier_wait(&all_ready);
	*(CUresult *)slot = cuInit(0);
	return NULL;
}

static long long now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long long)now.tv_sec * 1000000000ll + now.tv_nsec;
}

static void *init_alone(void *slot)
{
	*(CUresult *)slot = cuInit(0);
	return NULL;
}

static const char *visible_devices(void)
{
	const char *visible = getenv("CUDA_VISIBLE_DEVICES");

	return visible ? visible : "<unset>";
}

int main(int argc, char **argv)
{
	const char *gate = NULL, *hold = NULL;
	int threads = 1, devices = -1;
	int fork_child = 0, fork_during_init = 0, fork_at_hand_off = 0, timed = 0;
	pthread_t workers[MAX_THREADS];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--gate") == 0 && i + 1 < argc)
			gate = argv[++i];
		else if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc)
			hold = argv[++i];
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--fork") == 0)
			fork_child = 1;
		else if (strcmp(argv[i], "--fork-during-init") == 0)
			fork_during_init = 1;
		else if (strcmp(argv[i], "--fork-at-hand-off") == 0)
			fork_at_hand_off = 1;
		else if (strcmp(argv[i], "--time") == 0)
			timed = 1;
	}
	if (threads < 1 || threads > MAX_THREADS)
		return 2;
	wait_at_gate(gate);
	long long start = now_ns();
	if (fork_during_init || fork_at_hand_off) {
		struct timespec pause = { 0, 100 * 1000 * 1000 };

		pthread_create(&workers[0], NULL, init_alone, &results[0]);
		if (fork_during_init)
			nanosleep(&pause, NULL);
		else
			while (!getenv("GPURUN_CHOSEN"))
				;
		pid_t child = fork();
		if (child == 0) {
			CUresult mine = cuInit(0);
			printf("child init=%d visible=%s\n", mine, visible_devices());
			fflush(stdout);
			_exit(0);
		}
		waitpid(child, NULL, 0);
		pthread_join(workers[0], NULL);
	} else if (threads == 1) {
		results[0] = cuInit(0);
	} else {
		pthread_barrier_init(&all_ready, NULL, (unsigned)threads);
		for (int i = 0; i < threads; i++)
			pthread_create(&workers[i], NULL, init_together, &results[i]);
		for (int i = 0; i < threads; i++)
			pthread_join(workers[i], NULL);
	}
	long long took = now_ns() - start;
	if (timed) {
		printf("cuinit_ns=%lld\n", took);
		return results[0] == 0 ? 0 : 1;
	}
	printf("init=");
	for (int i = 0; i < threads; i++)
		printf("%s%d", i ? "," : "", results[i]);
	if (cuDeviceGetCount(&devices) != 0)
		devices = -1;
	printf(" count=%d visible=%s\n", devices, visible_devices());
	fflush(stdout);
	if (fork_child) {
		pid_t child = fork();
		if (child == 0) {
			CUresult again = cuInit(0);
			printf("child init=%d visible=%s\n", again, visible_devices());
			fflush(stdout);
			_exit(0);
		}
		waitpid(child, NULL, 0);
	}
	wait_at_gate(hold);
	return 0;
}
