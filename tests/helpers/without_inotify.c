/* without_inotify: runs a command while this user can create no inotify instance, as on a
 * machine where many waiters (or other programs) have taken the per-user limit
 * (fs.inotify.max_user_instances, 128 by default). It holds every instance it can get, then
 * runs the command and exits with its status; 77 when it cannot reach the per-user limit
 * (its own descriptor limit comes first). Run it as a user of its own: it starves that user.
 * usage: without_inotify COMMAND [ARGS...] */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	struct rlimit files;
	int held = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: without_inotify COMMAND [ARGS...]\n");
		return 2;
	}
	if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
		files.rlim_cur = files.rlim_max;
		setrlimit(RLIMIT_NOFILE, &files);
	}
	while (inotify_init1(IN_CLOEXEC) >= 0)
		held++;
	int cause = errno;
	int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (cause != EMFILE || probe < 0) {
		fprintf(stderr, "without_inotify: stopped after %d instances (%s) before the "
			"per-user limit\n", held, cause == EMFILE ? "descriptor limit" : "error");
		return 77;
	}
	close(probe);

	pid_t child;
	int status;
	if (posix_spawnp(&child, argv[1], NULL, NULL, &argv[1], environ) != 0) {
		fprintf(stderr, "without_inotify: cannot run %s\n", argv[1]);
		return 127;
	}
	if (waitpid(child, &status, 0) != child)
		return 70;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
