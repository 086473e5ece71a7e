/* gate.h: lets a test stop a helper at a chosen moment: the helper creates NAME.waiting, then
 * waits until the test creates NAME (30 s at most, so that a broken test never hangs). */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static void wait_at_gate(const char *gate)
{
	char waiting[4096];
	struct timespec pause = { 0, 5 * 1000 * 1000 };

	if (!gate)
		return;
	snprintf(waiting, sizeof(waiting), "%s.waiting", gate);
	int fd = open(waiting, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 6000 && access(gate, F_OK) != 0; i++)
		nanosleep(&pause, NULL);
}
