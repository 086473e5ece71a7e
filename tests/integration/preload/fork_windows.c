/* fork_windows: preloaded ahead of libgpurun-preload.so, holds the library at a moment where a
 * fork from another thread used to copy a half-finished step, and makes that fork happen there.
 * FORK_WINDOW says which moment:
 *   hand-off   the library has put GPURUN_CHOSEN into the environment: the thread making the
 *              choice waits inside setenv until some other thread has begun a fork (the host
 *              forks once it sees the variable: preload_direct --fork-at-hand-off).
 *   configure  the library has registered its fork handlers: another thread forks right then.
 *              The child starts CUDA (dlopen) and forks once more; it prints what happened.
 *              A hang is ended by alarm(10) and reported.
 *   registering  the library is about to register its fork handlers: another thread forks
 *              just before they are in place, and its child goes on as above.
 *   keep       the library makes a lease its own (F_SETFD on a lock file's descriptor): another
 *              thread forks then, and its child starts CUDA as above. The thread making the
 *              choice waits until that fork is done, or a second at most: a library that
 *              holds its lock there makes the fork wait for it instead. */
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
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

static void fork_from_another_thread(void)
{
	pthread_t other;

	pthread_create(&other, NULL, fork_now, NULL);
	pthread_join(other, NULL);
}

int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
		      void *dso_handle)
{
	static bool forked;
	register_atfork_fn *real = (register_atfork_fn *)dlsym(RTLD_NEXT, "__register_atfork");

	if (!forked && window_is("registering")) {
		forked = true;
		fork_from_another_thread();
	}
	int result = real(prepare, parent, child, dso_handle);
	if (!forked && window_is("configure")) {
		forked = true;
		fork_from_another_thread();
	}
	return result;
}

/* ---- keep ---- */

typedef int fcntl_fn(int fd, int cmd, ...);

static pthread_t keep_forker;
static bool keep_forker_started;
static int fork_done[2] = { -1, -1 };

static void say_fork_done(void)
{
	(void)!write(fork_done[1], "d", 1);
}

static bool is_lock_file(int fd)
{
	char link[64], target[4096];
	ssize_t length;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	length = readlink(link, target, sizeof(target) - 1);
	if (length < 5)
		return false;
	target[length] = '\0';
	return strcmp(target + length - 5, ".lock") == 0;
}

int fcntl(int fd, int cmd, ...)
{
	va_list args;
	char byte;

	va_start(args, cmd);
	void *argument = va_arg(args, void *);      /* an int or a pointer: passed on as it came */
	va_end(args);
	if (cmd == F_SETFD && !keep_forker_started && window_is("keep") && is_lock_file(fd) &&
	    pipe(fork_begun) == 0 && pipe(fork_done) == 0 &&
	    pthread_atfork(say_fork_begun, say_fork_done, NULL) == 0) {
		struct pollfd done = { .fd = fork_done[0], .events = POLLIN };

		keep_forker_started = true;
		pthread_create(&keep_forker, NULL, fork_now, NULL);
		(void)!read(fork_begun[0], &byte, 1);
		poll(&done, 1, 1000);
	}
	return ((fcntl_fn *)dlsym(RTLD_NEXT, "fcntl"))(fd, cmd, argument);
}

/* The forking thread reports its child before the program ends. */
__attribute__((destructor)) static void join_keep_forker(void)
{
	if (keep_forker_started)
		pthread_join(keep_forker, NULL);
}
