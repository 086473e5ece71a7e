/* record_job: a stand-in for a training job. Appends "<start> <end> <CUDA_VISIBLE_DEVICES>" (ns,
 * CLOCK_REALTIME) to the file named by its first argument after sleeping for the milliseconds in
 * its second, so tests can check that no two overlapping jobs shared a GPU. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (long long)now.tv_sec * 1000000000ll + now.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: record_job LOG MILLISECONDS\n");
		return 2;
	}
	const char *visible = getenv("CUDA_VISIBLE_DEVICES");
	long long start = now_ns();
	long milliseconds = strtol(argv[2], NULL, 10);
	struct timespec pause = { milliseconds / 1000, (milliseconds % 1000) * 1000000L };

	nanosleep(&pause, NULL);
	char line[512];
	int length = snprintf(line, sizeof(line), "%lld %lld %s\n", start, now_ns(),
			      visible ? visible : "<unset>");
	int fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT, 0644);
	/* One write on O_APPEND: concurrent jobs never interleave their lines. */
	if (fd < 0 || length <= 0 || write(fd, line, (size_t)length) != length)
		return 1;
	close(fd);
	return 0;
}
