/* unruly_direct: a program, linked against libcuda, that does what daemons and launchers do to
 * their own process, for preload_host_test.sh: --close-all closes every descriptor (stdin
 * too, stdout and stderr kept) before or after cuInit; --exec-after-init calls cuInit, then
 * execve's itself, and the new image calls cuInit again. Prints what each cuInit saw; with
 * --hold PATH waits at that gate (gate.h) before exiting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate.h"

typedef int CUresult;

CUresult cuInit(unsigned flags);

extern char **environ;

static const char *visible_devices(void)
{
	const char *visible = getenv("CUDA_VISIBLE_DEVICES");

	return visible ? visible : "<unset>";
}

/* As closefrom(3) would, but stdout and stderr stay for the report. */
static void close_everything(void)
{
	long limit = sysconf(_SC_OPEN_MAX);

	close(STDIN_FILENO);
	for (long fd = 3; fd < (limit > 0 && limit < 65536 ? limit : 65536); fd++)
		close((int)fd);
}

int main(int argc, char **argv)
{
	const char *hold = NULL;
	int close_before = 0, close_after = 0, exec_after = 0, again = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--close-before") == 0)
			close_before = 1;
		else if (strcmp(argv[i], "--close-after") == 0)
			close_after = 1;
		else if (strcmp(argv[i], "--exec-after-init") == 0)
			exec_after = 1;
		else if (strcmp(argv[i], "--again") == 0)
			again = 1;
		else if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc)
			hold = argv[++i];
	}
	if (close_before)
		close_everything();
	CUresult result = cuInit(0);
	printf("%sinit=%d visible=%s\n", again ? "exec'd " : "", result, visible_devices());
	fflush(stdout);
	if (close_after)
		close_everything();
	if (exec_after) {
		char *next[] = { argv[0], "--again", hold ? "--hold" : NULL, (char *)hold, NULL };
		execve("/proc/self/exe", next, environ);
		perror("execve");
		return 1;
	}
	wait_at_gate(hold);
	return 0;
}
