/* child: waiting on the short-lived helper processes with a deadline (child_internal.h). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "child_internal.h"
#include "clock_internal.h"

/* How long a killed child may take to go. */
#define CHILD_KILL_GRACE_S 2.0

bool child_wait_until(pid_t pid, double deadline, int *wait_status)
{
	for (;;) {
		pid_t got = waitpid(pid, wait_status, WNOHANG);

		if (got == pid)
			return true;
		if (got < 0 && errno == ECHILD) {
			*wait_status = 0;
			return true;
		}
		if (monotonic_seconds() >= deadline)
			return false;
		poll(NULL, 0, 1);
	}
}

void child_kill_and_reap(pid_t pid, bool group)
{
	int ignored;

	kill(group ? -pid : pid, SIGKILL);
	child_wait_until(pid, monotonic_seconds() + CHILD_KILL_GRACE_S, &ignored);
}
