/* descriptors_test: close_all_but leaves exactly the one descriptor it keeps, through
 * close_range and through its fallback for kernels without it (Linux before 5.9, or a seccomp
 * policy that refuses the call, as some container runtimes have). Each case runs in a forked
 * child, which reports by its exit status: it closes its own standard streams. */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "descriptors_internal.h"
#include "unit.h"

/* Exit statuses of a case's child. */
enum { CHILD_RIGHT = 0, CHILD_WRONG = 1, CHILD_CANNOT_TRY = 77 };

/* Highest descriptor a case opens (more than one getdents64 buffer of /proc/self/fd entries
 * when `many` is asked for) and checks. */
#define HIGHEST_FD 600

/* Makes close_range fail with ENOSYS from now on in this process, as an older kernel would. */
static bool refuse_close_range(void)
{
#ifdef SYS_close_range
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = { sizeof(filter) / sizeof(filter[0]), filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0)
		return false;
	/* An empty range: harmless if the filter did not take. */
	return syscall(SYS_close_range, ~0U, ~0U, 0) == -1 && errno == ENOSYS;
#else
	return true;
#endif
}

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1;
}

/* The child's side of a case: opens descriptors 3..HIGHEST_FD (or a few), closes all but
 * `kept`, and checks every one from 0 to HIGHEST_FD. */
static int child_case(int kept, bool without_close_range, bool many)
{
	struct rlimit files;

	if (without_close_range && !refuse_close_range())
		return CHILD_CANNOT_TRY;
	if (many && getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur <= HIGHEST_FD) {
		files.rlim_cur = HIGHEST_FD + 1;
		if (setrlimit(RLIMIT_NOFILE, &files) != 0)
			return CHILD_CANNOT_TRY;
	}
	int source = open("/dev/null", O_RDONLY);
	for (int fd = 3; fd <= (many ? HIGHEST_FD : 9); fd++)
		if (fd != source && dup2(source, fd) != fd)
			return CHILD_WRONG;
	close_all_but(kept);
	for (int fd = 0; fd <= HIGHEST_FD; fd++)
		if (is_open(fd) != (fd == kept))
			return CHILD_WRONG;
	return CHILD_RIGHT;
}

static void run_case(int kept, bool without_close_range, bool many)
{
	int status;
	pid_t child = fork();

	assert_true(child >= 0);
	if (child == 0)
		_exit(child_case(kept, without_close_range, many));
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == CHILD_CANNOT_TRY)
		skip();
	if (WEXITSTATUS(status) != CHILD_RIGHT)
		fail_msg("kept %d%s%s: other descriptors stayed open, or the kept one was closed",
			 kept, without_close_range ? ", without close_range" : "",
			 many ? ", many open" : "");
}

static void keeps_only_the_kept_one(void **state)
{
	(void)state;
	run_case(5, false, false);
	run_case(0, false, false);
	run_case(9, false, false);
}

static void keeps_only_the_kept_one_without_close_range(void **state)
{
	(void)state;
	run_case(5, true, false);
	run_case(0, true, false);
	run_case(9, true, false);
}

/* Hundreds of entries: /proc/self/fd is read in several batches, and closed while read. */
static void closes_a_long_listing_without_close_range(void **state)
{
	(void)state;
	run_case(HIGHEST_FD / 2, true, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(keeps_only_the_kept_one),
		cmocka_unit_test(keeps_only_the_kept_one_without_close_range),
		cmocka_unit_test(closes_a_long_listing_without_close_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
