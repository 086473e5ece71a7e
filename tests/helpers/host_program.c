/* host_program: a program that never touches CUDA, for preload_test.sh: prints the hand-off
 * variables as CUDA_VISIBLE_DEVICES|CUDA_DEVICE_ORDER|GPURUN_CHOSEN; with --busy it first runs
 * threads, forks a child and then execve's itself, to show that such a host keeps working. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *variable(const char *name)
{
	const char *value = getenv(name);

	return value ? value : "<unset>";
}

static void *square(void *number)
{
	long n = (long)number;

	return (void *)(n * n);
}

static int busy(char *self)
{
	pthread_t threads[4];
	long sum = 0;
	int status;

	for (long i = 0; i < 4; i++)
		pthread_create(&threads[i], NULL, square, (void *)i);
	for (int i = 0; i < 4; i++) {
		void *result;
		pthread_join(threads[i], &result);
		sum += (long)result;
	}
	pid_t child = fork();
	if (child == 0)
		_exit(7);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 7)
		return 1;
	printf("threads=%ld fork=%d\n", sum, WEXITSTATUS(status));
	fflush(stdout);
	char *again[] = { self, NULL };
	execv("/proc/self/exe", again);
	perror("execv");
	return 1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--busy") == 0)
		return busy(argv[0]);
	printf("%s|%s|%s\n", variable("CUDA_VISIBLE_DEVICES"), variable("CUDA_DEVICE_ORDER"),
	       variable("GPURUN_CHOSEN"));
	return 0;
}
