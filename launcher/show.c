/* show: gpurun --show. One look at the machine as a table (GPUtil's, plus what was asked for) or
 * JSON; with --watch, a look every interval, redrawn in place on a terminal, until interrupted. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "show.h"

/* The terminal controls --watch uses: no clear-screen, so nothing blinks. Each frame starts at
 * the top-left corner, every line erases what is left of the previous frame's line, and the
 * frame ends by erasing whatever the previous, longer frame had below it. */
#define CURSOR_HOME "\033[H"
#define ERASE_LINE_END "\033[K"
#define ERASE_SCREEN_END "\033[J"
#define CURSOR_HIDE "\033[?25l"
#define CURSOR_SHOW "\033[?25h"
#define WRAP_OFF "\033[?7l"     /* a line wider than the terminal is cut, not wrapped */
#define WRAP_ON "\033[?7h"

static volatile sig_atomic_t stop_signal;

static void stop(int signal_number)
{
	stop_signal = signal_number;
}

/* One look at the machine, written to out. Returns 0, or an error status with err filled. */
static int render(const struct gpurun_request *request, FILE *out, struct gpurun_error *err)
{
	struct gpurun_table_options options = {
		.all = request->show_all, .wide = request->wide, .processes = request->processes,
	};
	struct gpurun_snapshot snapshot;
	struct timeval now;
	char host[256] = "";
	int status;

	gettimeofday(&now, NULL);
	status = gpurun_probe(request, &snapshot, err);
	if (status != 0)
		return status;
	if (!request->no_lease)
		gpurun_lease_inspect(gpurun_lock_dir(request), &snapshot);
	/* gpustat's JSON names each process's user and command, so JSON always has them. */
	if (request->processes || request->json)
		status = gpurun_processes_collect(&snapshot, err);
	if (status == 0) {
		gethostname(host, sizeof(host) - 1);
		int written = request->json
			? gpurun_report_json(out, &snapshot, host, (double)now.tv_sec + now.tv_usec / 1e6)
			: gpurun_report_table_with(out, &snapshot, &options);
		if (written != 0)
			status = gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "cannot write the report: %s",
					     strerror(errno));
	}
	gpurun_snapshot_free(&snapshot);
	return status;
}

static int show_once(const struct gpurun_request *request)
{
	struct gpurun_error err;
	int status = render(request, stdout, &err);

	if (status == 0 && fflush(stdout) != 0)
		status = gpurun_fail(&err, GPURUN_EXIT_SOFTWARE, "cannot write the report: %s",
				     strerror(errno));
	if (status != 0)
		fprintf(stderr, "gpurun: %s\n", err.message);
	return status;
}

/* ---- --watch ------------------------------------------------------------------------------- */

static double monotonic_seconds(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* Sleeps until `until` (monotonic seconds), or until a stop signal arrives. The signals are
 * blocked between the check of the flag and the sleep, which unblocks them atomically, so a
 * Ctrl-C cannot slip in between and wait out a whole interval. */
static void sleep_until(double until)
{
	sigset_t stops, unblocked;

	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	sigprocmask(SIG_BLOCK, &stops, &unblocked);
	for (;;) {
		double left = until - monotonic_seconds();
		struct timespec timeout;

		if (stop_signal || left <= 0)
			break;
		/* An hour at a time: --watch takes any duration, and a time_t cannot hold them all. */
		if (left > 3600)
			left = 3600;
		timeout.tv_sec = (time_t)left;
		timeout.tv_nsec = (long)((left - (double)timeout.tv_sec) * 1e9);
		ppoll(NULL, 0, &timeout, &unblocked);
	}
	sigprocmask(SIG_SETMASK, &unblocked, NULL);
}

/* Without SA_RESTART, so that the signal also cuts the sleep short. */
static void catch_stop_signals(void)
{
	struct sigaction action;

	memset(&action, 0, sizeof(action));
	action.sa_handler = stop;
	sigemptyset(&action.sa_mask);
	sigaction(SIGINT, &action, NULL);
	sigaction(SIGTERM, &action, NULL);
	sigaction(SIGHUP, &action, NULL);
}

static unsigned terminal_rows(void)
{
	struct winsize size;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0)
		return 0;
	return size.ws_row;
}

/* Draws one frame over the previous one: a title line, a blank line, then the report (or the
 * error of this look). Lines that would scroll the screen are left out: a scrolled screen
 * would put the next frame's first line in the wrong place. */
static void draw(const struct gpurun_request *request, const char *report, size_t length,
		 const char *error)
{
	unsigned rows = terminal_rows();
	unsigned room = rows > 1 ? rows - 1 : ~0u;
	unsigned lines = 0;
	char host[256] = "", when[64] = "";
	time_t now = time(NULL);
	struct tm local;

	gethostname(host, sizeof(host) - 1);
	if (localtime_r(&now, &local))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &local);
	fputs(CURSOR_HOME, stdout);
	printf("Every %gs on %s: %s   (Ctrl-C quits)" ERASE_LINE_END "\n", request->watch_s, host,
	       when);
	lines++;
	if (lines < room) {
		fputs(ERASE_LINE_END "\n", stdout);
		lines++;
	}
	if (error) {
		if (lines < room)
			printf("gpurun: %s" ERASE_LINE_END "\n", error);
	} else {
		for (size_t start = 0; start < length && lines < room; lines++) {
			const char *end = memchr(report + start, '\n', length - start);
			size_t line = end ? (size_t)(end - report) - start : length - start;

			fwrite(report + start, 1, line, stdout);
			fputs(ERASE_LINE_END "\n", stdout);
			start += line + 1;
		}
	}
	fputs(ERASE_SCREEN_END, stdout);
}

static int watch(const struct gpurun_request *request)
{
	bool terminal = !request->json && isatty(STDOUT_FILENO);
	double next = monotonic_seconds();
	int status = 0;

	catch_stop_signals();
	if (terminal)
		fputs(CURSOR_HIDE WRAP_OFF, stdout);
	for (unsigned frame = 0; !stop_signal; frame++) {
		struct gpurun_error err;
		char *report = NULL;
		size_t length = 0;
		FILE *out = open_memstream(&report, &length);
		int rendered;

		if (!out) {
			status = gpurun_fail(&err, GPURUN_EXIT_SOFTWARE, "out of memory");
			fprintf(stderr, "gpurun: %s\n", err.message);
			break;
		}
		rendered = render(request, out, &err);
		fclose(out);
		/* The first look decides as --show would; later failures are shown, then retried. */
		if (rendered != 0 && frame == 0) {
			free(report);
			status = rendered;
			fprintf(stderr, "gpurun: %s\n", err.message);
			break;
		}
		if (terminal) {
			draw(request, report, length, rendered ? err.message : NULL);
		} else if (rendered != 0) {
			fprintf(stderr, "gpurun: %s\n", err.message);
		} else {
			/* In a pipe or a file: each look in full, tables separated by a blank line. */
			if (frame > 0 && !request->json)
				putchar('\n');
			fwrite(report, 1, length, stdout);
		}
		free(report);
		/* A watch into a full disk or a closed descriptor would go on for ever, unseen. */
		if (fflush(stdout) != 0 || ferror(stdout)) {
			status = gpurun_fail(&err, GPURUN_EXIT_SOFTWARE, "cannot write the report: %s",
					     strerror(errno));
			fprintf(stderr, "gpurun: %s\n", err.message);
			break;
		}
		next += request->watch_s;
		if (next < monotonic_seconds())
			next = monotonic_seconds() + request->watch_s;  /* a slow look: no burst */
		sleep_until(next);
	}
	if (terminal) {
		fputs(CURSOR_SHOW WRAP_ON, stdout);
		fflush(stdout);
	}
	/* Ctrl-C is how a watch ends; any other signal still ends the process as it would have. */
	if (stop_signal && stop_signal != SIGINT) {
		signal(stop_signal, SIG_DFL);
		raise(stop_signal);
	}
	return status;
}

int show_machine(const struct gpurun_request *request)
{
	return request->watch_s > 0 ? watch(request) : show_once(request);
}
