/* lease_test: claiming and observing one GPU's lock file against other holders: a lease (an
 * exclusive lock) keeps others out, an observer's instant shared lock does not, and an observer
 * never claims or creates anything. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lease_internal.h"
#include "lock_dir_internal.h"
#include "unit.h"

static char lock_dir[64];
static char lock_path[sizeof(lock_dir) + GPURUN_UUID_SIZE + 8];
static int dir_fd = -1;
static struct gpurun_device device;
static struct gpurun_error err;

static int make_lock_dir(void **state)
{
	(void)state;
	snprintf(lock_dir, sizeof(lock_dir), "/tmp/gpurun-lease-test.XXXXXX");
	assert_non_null(mkdtemp(lock_dir));
	assert_int_equal(chmod(lock_dir, 01777), 0);
	assert_int_equal(gpurun_lock_dir_open(lock_dir, &dir_fd, &err), 0);
	memset(&device, 0, sizeof(device));
	snprintf(device.uuid, sizeof(device.uuid), "GPU-0c0ffee0-1111-2222-3333-444444444444");
	snprintf(lock_path, sizeof(lock_path), "%s/%s.lock", lock_dir, device.uuid);
	return 0;
}

static int remove_lock_dir(void **state)
{
	(void)state;
	unlink(lock_path);
	unlinkat(dir_fd, "queue", AT_REMOVEDIR);
	close(dir_fd);
	rmdir(lock_dir);
	return 0;
}

/* Another holder's descriptor on the lock file, locked with `operation`. */
static int hold(int operation)
{
	int fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);

	assert_true(fd >= 0);
	assert_int_equal(flock(fd, operation | LOCK_NB), 0);
	return fd;
}

static bool locked_by_someone(void)
{
	int fd = open(lock_path, O_RDONLY | O_CLOEXEC);
	bool locked = flock(fd, LOCK_SH | LOCK_NB) != 0;

	close(fd);
	return locked;
}

static double now_seconds(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static void claiming_a_free_gpu_locks_it(void **state)
{
	(void)state;
	int fd = -1;

	assert_int_equal(gpurun_lease_try(dir_fd, lock_dir, &device, &fd, &err), 0);
	assert_true(fd >= 0);
	assert_true(locked_by_someone());
	struct stat st;
	assert_int_equal(stat(lock_path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0666);
	close(fd);
	assert_false(locked_by_someone());
}

static void a_lease_keeps_claimants_out_at_once(void **state)
{
	(void)state;
	int lease = hold(LOCK_EX);
	int fd = -1;

	double start = now_seconds();
	assert_int_equal(gpurun_lease_try(dir_fd, lock_dir, &device, &fd, &err), 1);
	/* No waiting out a lease: that is for observers only (patience is 10 ms at most). */
	assert_true(now_seconds() - start < 0.005);
	assert_int_equal(fd, -1);
	close(lease);
}

/* The race behind a flaky job placement: `gpurun --show` or `--print` tests a lease with a
 * shared lock at the instant a job claims the GPU. The job must get the GPU. */
static void a_claimant_waits_out_an_observers_instant_look(void **state)
{
	(void)state;
	int ready[2];

	assert_int_equal(pipe(ready), 0);
	pid_t observer = fork();
	assert_true(observer >= 0);
	if (observer == 0) {
		const struct timespec instant = { .tv_nsec = 2 * 1000 * 1000 };
		int fd = open(lock_path, O_RDWR | O_CREAT, 0666);
		if (fd < 0 || flock(fd, LOCK_SH | LOCK_NB) != 0 || write(ready[1], "x", 1) != 1)
			_exit(1);
		nanosleep(&instant, NULL);
		flock(fd, LOCK_UN);
		pause();        /* exiting could take long under valgrind; the parent kills us */
		_exit(0);
	}
	char byte;
	assert_int_equal(read(ready[0], &byte, 1), 1);
	int fd = -1;
	int result = gpurun_lease_try(dir_fd, lock_dir, &device, &fd, &err);
	kill(observer, SIGKILL);
	waitpid(observer, NULL, 0);
	close(ready[0]);
	close(ready[1]);
	assert_int_equal(result, 0);
	close(fd);
}

/* Whether process `pid` has lock_path open (its /proc/PID/fd links). */
static bool has_lock_file_open(pid_t pid)
{
	char directory[64], link[320], target[sizeof(lock_path) + 16];
	struct dirent *entry;
	bool found = false;
	DIR *fds;

	snprintf(directory, sizeof(directory), "/proc/%d/fd", (int)pid);
	fds = opendir(directory);
	while (fds && !found && (entry = readdir(fds))) {
		snprintf(link, sizeof(link), "%s/%s", directory, entry->d_name);
		ssize_t length = readlink(link, target, sizeof(target) - 1);
		if (length > 0) {
			target[length] = '\0';
			found = strcmp(target, lock_path) == 0;
		}
	}
	if (fds)
		closedir(fds);
	return found;
}

/* An observer's look holds the claimant between its open and its lock; meanwhile the file is
 * unlinked (as /tmp's cleaning or the directory's owner may). A lock on the unlinked file
 * would guard nothing: the claim must end on the file the name names. A claimant that gave the
 * observer up before the unlink came is tried again. */
static void a_lock_file_unlinked_before_it_is_locked_is_claimed_anew(void **state)
{
	(void)state;
	int result = 1, fd = -1;

	for (int round = 0; round < 20 && result == 1; round++) {
		int ready[2];
		pid_t claimant = getpid();

		unlink(lock_path);
		assert_int_equal(pipe(ready), 0);
		pid_t disturber = fork();
		assert_true(disturber >= 0);
		if (disturber == 0) {
			int observer = open(lock_path, O_RDWR | O_CREAT, 0666);
			if (observer < 0 || flock(observer, LOCK_SH | LOCK_NB) != 0 ||
			    write(ready[1], "x", 1) != 1)
				_exit(1);
			while (!has_lock_file_open(claimant))
				;
			unlink(lock_path);
			flock(observer, LOCK_UN);
			pause();
			_exit(0);
		}
		char byte;
		assert_int_equal(read(ready[0], &byte, 1), 1);
		result = gpurun_lease_try(dir_fd, lock_dir, &device, &fd, &err);
		kill(disturber, SIGKILL);
		waitpid(disturber, NULL, 0);
		close(ready[0]);
		close(ready[1]);
	}
	assert_int_equal(result, 0);
	struct stat named, locked;
	assert_int_equal(stat(lock_path, &named), 0);
	assert_int_equal(fstat(fd, &locked), 0);
	assert_true(named.st_ino == locked.st_ino);
	assert_true(locked_by_someone());
	close(fd);
}

static void an_observer_that_stays_is_not_waited_for_long(void **state)
{
	(void)state;
	int observer = hold(LOCK_SH);
	int fd = -1;

	double start = now_seconds();
	assert_int_equal(gpurun_lease_try(dir_fd, lock_dir, &device, &fd, &err), 1);
	assert_true(now_seconds() - start < 1.0);
	close(observer);
}

static void observing_reports_a_lease(void **state)
{
	(void)state;
	int lease = hold(LOCK_EX);

	assert_int_equal(gpurun_lease_observe(dir_fd, lock_dir, &device, &err), 1);
	close(lease);
	assert_int_equal(gpurun_lease_observe(dir_fd, lock_dir, &device, &err), 0);
}

static void observing_counts_another_observer_as_free(void **state)
{
	(void)state;
	int observer = hold(LOCK_SH);

	assert_int_equal(gpurun_lease_observe(dir_fd, lock_dir, &device, &err), 0);
	close(observer);
}

static void observing_creates_no_lock_file(void **state)
{
	(void)state;
	assert_int_equal(gpurun_lease_observe(dir_fd, lock_dir, &device, &err), 0);
	assert_int_equal(access(lock_path, F_OK), -1);
}

static void observing_refuses_a_planted_symlink_or_fifo(void **state)
{
	(void)state;
	assert_int_equal(symlink("/etc/passwd", lock_path), 0);
	assert_int_equal(gpurun_lease_observe(dir_fd, lock_dir, &device, &err), GPURUN_EXIT_LOCK_DIR);
	assert_non_null(strstr(err.message, "is a symlink"));
	unlink(lock_path);
	assert_int_equal(mkfifo(lock_path, 0666), 0);
	assert_int_equal(gpurun_lease_observe(dir_fd, lock_dir, &device, &err), GPURUN_EXIT_LOCK_DIR);
	assert_non_null(strstr(err.message, "not a regular file"));
}

static size_t read_record(char *text, size_t size)
{
	int fd = open(lock_path, O_RDONLY | O_CLOEXEC);
	ssize_t length = read(fd, text, size - 1);

	close(fd);
	assert_true(length > 0);
	text[length] = '\0';
	return (size_t)length;
}

/* A holder record is rewritten in place: a shorter one must leave nothing of a longer one. */
static void a_new_holder_record_replaces_the_old_one_whole(void **state)
{
	(void)state;
	char *long_command[] = { "python3", "train.py", "--epochs", "100", "--data",
				 "/scratch/a/very/long/path/to/the/data/set" };
	char *short_command[] = { "sh" };
	struct gpurun_holder holder;
	char text[1024];
	int fd = -1;

	assert_int_equal(gpurun_lease_try(dir_fd, lock_dir, &device, &fd, &err), 0);
	gpurun_lease_write_holder(fd, long_command, 6);
	size_t long_length = read_record(text, sizeof(text));
	gpurun_lease_write_holder(fd, short_command, 1);
	size_t short_length = read_record(text, sizeof(text));
	close(fd);
	assert_true(short_length < long_length);
	assert_int_equal(text[short_length - 1], '\n');
	assert_null(strstr(text, "train.py"));
	assert_int_equal(gpurun_holder_parse(text, short_length, &holder), 0);
	assert_int_equal(holder.pid, getpid());
	assert_string_equal(holder.command, "sh");
}

/* On NFS, flock is emulated with POSIX locks, which belong to the process: a look at our own
 * lease (a shared lock, then an unlock) would drop it. A device marked leased is not looked at. */
static void inspecting_leaves_a_device_marked_leased_alone(void **state)
{
	(void)state;
	struct gpurun_snapshot snapshot = { .devices = &device, .count = 1 };
	int lease = hold(LOCK_EX);

	device.leased = true;
	device.holder.pid = 42;
	assert_int_equal(write(lease, "pid=7\n", 6), 6);
	gpurun_lease_inspect(lock_dir, &snapshot);
	assert_int_equal(device.holder.pid, 42);
	device.leased = false;
	gpurun_lease_inspect(lock_dir, &snapshot);
	assert_true(device.leased);
	assert_int_equal(device.holder.pid, 7);
	close(lease);
}

/* The lock directory and its queue are made by whoever comes first, often many jobs at once
 * after a reboot emptied /tmp: every one of them must get the directory, and none may see it
 * with the mode its creator's umask gave it (another user could not write it). */
static void many_creators_at_once_all_get_the_shared_directory(void **state)
{
	(void)state;
	enum { CREATORS = 16 };
	pid_t creators[CREATORS];
	int go[2];
	mode_t saved = umask(077);

	assert_int_equal(pipe(go), 0);
	for (int i = 0; i < CREATORS; i++) {
		creators[i] = fork();
		assert_true(creators[i] >= 0);
		if (creators[i] == 0) {
			char byte;
			struct stat st;

			close(go[1]);
			if (read(go[0], &byte, 1) != 0)
				_exit(2);
			int fd = shared_dir_open(dir_fd, "queue");
			_exit(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 07777) == 01777 ? 0 : 1);
		}
	}
	umask(saved);
	close(go[0]);
	close(go[1]);   /* all at once: each read returns */
	int failed = 0;
	for (int i = 0; i < CREATORS; i++) {
		int status;
		assert_int_equal(waitpid(creators[i], &status, 0), creators[i]);
		failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	}
	assert_int_equal(failed, 0);
	DIR *dir = opendir(lock_dir);
	assert_non_null(dir);
	for (struct dirent *entry; (entry = readdir(dir)) != NULL;)
		assert_null(strstr(entry->d_name, ".new-"));    /* no draft left behind */
	closedir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(claiming_a_free_gpu_locks_it, make_lock_dir,
						remove_lock_dir),
		cmocka_unit_test_setup_teardown(a_lease_keeps_claimants_out_at_once, make_lock_dir,
						remove_lock_dir),
		cmocka_unit_test_setup_teardown(a_claimant_waits_out_an_observers_instant_look,
						make_lock_dir, remove_lock_dir),
		cmocka_unit_test_setup_teardown(a_lock_file_unlinked_before_it_is_locked_is_claimed_anew,
						make_lock_dir, remove_lock_dir),
		cmocka_unit_test_setup_teardown(an_observer_that_stays_is_not_waited_for_long,
						make_lock_dir, remove_lock_dir),
		cmocka_unit_test_setup_teardown(observing_reports_a_lease, make_lock_dir,
						remove_lock_dir),
		cmocka_unit_test_setup_teardown(observing_counts_another_observer_as_free,
						make_lock_dir, remove_lock_dir),
		cmocka_unit_test_setup_teardown(observing_creates_no_lock_file, make_lock_dir,
						remove_lock_dir),
		cmocka_unit_test_setup_teardown(observing_refuses_a_planted_symlink_or_fifo,
						make_lock_dir, remove_lock_dir),
		cmocka_unit_test_setup_teardown(a_new_holder_record_replaces_the_old_one_whole,
						make_lock_dir, remove_lock_dir),
		cmocka_unit_test_setup_teardown(inspecting_leaves_a_device_marked_leased_alone,
						make_lock_dir, remove_lock_dir),
		cmocka_unit_test_setup_teardown(many_creators_at_once_all_get_the_shared_directory,
						make_lock_dir, remove_lock_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
