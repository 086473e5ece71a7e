/* fork_windows: preloaded ahead of libgpurun-preload.so, holds the library at a moment where a
 * fork from another thread used to copy a half-finished step, and makes that fork happen there.
 * FORK_WINDOW says which moment:
 *   hand-off   the library has put GPURUN_CHOSEN into the environment: the thread making the
 *              choice waits inside setenv until some other thread has begun a fork (the host
 *              forks once it sees the variable: preload_direct --fork-at-hand-off).
 *   configure  the library has registered its fork handlers: another thread forks right then.
 *              The child starts CUDA (dlopen) and forks once more; it prints what happened.
 *              A hang is ended by alarm(10) and reported. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int setenv_fn(const char *name, const char *value, int overwrite);
/* pthread_atfork is a static stub (libc_nonshared.a) that calls this with the caller's DSO. */
typedef int register_atfork_fn(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			       void *dso_handle);
int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
		      void *dso_handle);

static bool window_is(const char *name)
{
	const char *window = getenv("FORK_WINDOW");

	return window && strcmp(window, name) == 0;
}

/* ---- hand-off ---- */

static int fork_begun[2] = { -1, -1 };

/* Registered after the library's own handlers, so it runs before them at a fork. */
static void say_fork_begun(void)
{
	(void)!write(fork_begun[1], "f", 1);
}

/* The handler is registered before the variable appears: a fork that follows it runs it. */
int setenv(const char *name, const char *value, int overwrite)
{
	static bool held;
	bool hold = !held && strcmp(name, "GPURUN_CHOSEN") == 0 && window_is("hand-off") &&
		    pipe(fork_begun) == 0 && pthread_atfork(say_fork_begun, NULL, NULL) == 0;
	int result = ((setenv_fn *)dlsym(RTLD_NEXT, "setenv"))(name, value, overwrite);
	char byte;

	if (hold) {
		held = true;
		(void)!read(fork_begun[0], &byte, 1);
	}
	return result;
}

/* ---- configure ---- */

static void start_cuda_and_fork_again(void)
{
	alarm(10);
	void *driver = dlopen("libcuda.so.1", RTLD_NOW);
	pid_t grandchild = fork();
	if (grandchild == 0)
		_exit(0);
	waitpid(grandchild, NULL, 0);
	printf("child: cuda %s, CUDA_VISIBLE_DEVICES=%s, forked again\n", driver ? "loaded" : "missing",
	       getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "<unset>");
	fflush(stdout);
	_exit(0);
}

static void *fork_now(void *unused)
{
	int status;

	(void)unused;
	pid_t child = fork();
	if (child == 0)
		start_cuda_and_fork_again();
	waitpid(child, &status, 0);
	if (WIFSIGNALED(status))
		printf("child: killed by signal %d (%s)\n", WTERMSIG(status),
		       WTERMSIG(status) == SIGALRM ? "hung" : "crashed");
	return NULL;
}

int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
		      void *dso_handle)
{
	static bool forked;
	register_atfork_fn *real = (register_atfork_fn *)dlsym(RTLD_NEXT, "__register_atfork");
	int result = real(prepare, parent, child, dso_handle);
	pthread_t other;

	if (!forked && window_is("configure")) {
		forked = true;
		pthread_create(&other, NULL, fork_now, NULL);
		pthread_join(other, NULL);
	}
	return result;
}
