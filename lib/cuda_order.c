/* cuda_order: asks the CUDA driver which devices it shows for a CUDA_VISIBLE_DEVICES value, and
 * in what order, from a short-lived child process that reports their UUIDs through a pipe. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child_internal.h"
#include "clock_internal.h"
#include "gpurun.h"

/* The driver ABI (shared/reference/nvml-cuda-abi.md): CUresult is an int, 0 is success. */
typedef int CUresult;
typedef int CUdevice;
typedef struct {
	unsigned char bytes[16];
} CUuuid;

enum { CUDA_SUCCESS = 0, CUDA_ERROR_NO_DEVICE = 100 };

#define REPORT_MAX (1u << 20)   /* thousands of devices fit; more is not a driver talking */
#define CHILD_EXIT_GRACE_S 2.0

static void say(int out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(int out, const char *fmt, ...)
{
	char line[512];
	va_list args;
	int length;

	va_start(args, fmt);
	length = vsnprintf(line, sizeof(line), fmt, args);
	va_end(args);
	if (length > 0)
		(void)!write(out, line, (size_t)length < sizeof(line) ? (size_t)length : sizeof(line) - 1);
}

/* The child's whole life. The driver is loaded here only: it reads CUDA_VISIBLE_DEVICES at
 * cuInit and keeps what it read, so the parent, which hands a different value to its program,
 * must never load it. Lines: "uuid <32 hex>" per device, then "end <cuInit result>", or
 * "error <why>". */
static void report(int out, const char *library, const char *visible)
{
	CUresult (*init)(unsigned);
	CUresult (*get_count)(int *);
	CUresult (*get_device)(CUdevice *, int);
	CUresult (*get_uuid)(CUuuid *, CUdevice);
	void *handle;
	int count = 0;
	CUresult result;

	if (setenv("CUDA_VISIBLE_DEVICES", visible, 1) != 0) {
		say(out, "error cannot set CUDA_VISIBLE_DEVICES\n");
		return;
	}
	handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		const char *why = dlerror();

		say(out, "error %s: %s\n", library,
		    why && strstr(why, "No such file") ? "not found (no CUDA driver)"
						       : why ? why : "cannot be loaded");
		return;
	}
	init = (CUresult (*)(unsigned))dlsym(handle, "cuInit");
	get_count = (CUresult (*)(int *))dlsym(handle, "cuDeviceGetCount");
	get_device = (CUresult (*)(CUdevice *, int))dlsym(handle, "cuDeviceGet");
	/* _v2 names a MIG instance by its own UUID; the first version by its GPU's. */
	get_uuid = (CUresult (*)(CUuuid *, CUdevice))dlsym(handle, "cuDeviceGetUuid_v2");
	if (!get_uuid)
		get_uuid = (CUresult (*)(CUuuid *, CUdevice))dlsym(handle, "cuDeviceGetUuid");
	if (!init || !get_count || !get_device || !get_uuid) {
		say(out, "error %s lacks cuInit, cuDeviceGetCount, cuDeviceGet or cuDeviceGetUuid\n",
		    library);
		return;
	}
	result = init(0);
	if (result == CUDA_ERROR_NO_DEVICE) {
		say(out, "end %d\n", result);
		return;
	}
	if (result != CUDA_SUCCESS) {
		say(out, "error cuInit answered %d\n", result);
		return;
	}
	result = get_count(&count);
	if (result != CUDA_SUCCESS) {
		say(out, "error cuDeviceGetCount answered %d\n", result);
		return;
	}
	for (int i = 0; i < count; i++) {
		CUdevice device;
		CUuuid uuid;
		char hex[33];

		result = get_device(&device, i);
		if (result == CUDA_SUCCESS)
			result = get_uuid(&uuid, device);
		if (result != CUDA_SUCCESS) {
			say(out, "error device %d: cuDeviceGet/cuDeviceGetUuid answered %d\n", i, result);
			return;
		}
		for (int b = 0; b < 16; b++)
			snprintf(hex + 2 * b, 3, "%02x", uuid.bytes[b]);
		say(out, "uuid %s\n", hex);
	}
	say(out, "end 0\n");
}

/* Reads what the child says until it closes the pipe, the time is up, or it has said more than
 * a driver would (what it said so far then stands). NULL when out of memory. */
static char *read_report(int in, double timeout_s, bool *timed_out)
{
	size_t size = 4096, used = 0;
	char *text = malloc(size);
	double deadline = monotonic_seconds() + timeout_s;

	*timed_out = false;
	while (text) {
		struct pollfd readable = { .fd = in, .events = POLLIN };
		double left = deadline - monotonic_seconds();
		int ready;
		ssize_t got;

		if (left <= 0) {
			*timed_out = true;
			break;
		}
		ready = poll(&readable, 1, (int)ceil(left * 1000));
		if (ready < 0 && errno != EINTR)
			break;
		if (ready <= 0)
			continue;
		if (used + 1 >= size) {
			if (size >= REPORT_MAX)
				break;
			char *grown = realloc(text, size * 2);

			if (!grown) {
				free(text);
				return NULL;
			}
			text = grown;
			size *= 2;
		}
		got = read(in, text + used, size - used - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		used += (size_t)got;
	}
	if (text)
		text[used] = '\0';
	return text;
}

/* False when out of memory. */
static bool parse_report(char *text, struct gpurun_cuda_order *order)
{
	size_t lines = 1;

	for (const char *c = text; *c; c++)
		lines += *c == '\n';
	order->uuids = calloc(lines, sizeof(*order->uuids));
	if (!order->uuids)
		return false;
	char *rest = NULL;

	for (char *line = strtok_r(text, "\n", &rest); line; line = strtok_r(NULL, "\n", &rest)) {
		const char *hex = line + 5;

		if (strncmp(line, "uuid ", 5) == 0 && strlen(hex) == 32) {
			snprintf(order->uuids[order->count++], GPURUN_UUID_SIZE,
				 "GPU-%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16,
				 hex + 20);
		} else if (strncmp(line, "end ", 4) == 0) {
			order->answered = true;
			if (strtol(line + 4, NULL, 10) == CUDA_ERROR_NO_DEVICE)
				order->count = 0;
			return true;
		} else if (strncmp(line, "error ", 6) == 0) {
			snprintf(order->failure, sizeof(order->failure), "the CUDA driver could not say: %s",
				 line + 6);
			return true;
		}
	}
	snprintf(order->failure, sizeof(order->failure),
		 "the CUDA driver could not say: its process gave no answer");
	return true;
}

int gpurun_cuda_order_read(const char *visible, double timeout_s, struct gpurun_cuda_order *order)
{
	const char *library = getenv("GPURUN_CUDA_LIB");
	int pipe_fds[2], ignored;
	bool timed_out, out_of_memory = false;
	char *text;
	pid_t child;

	gpurun_cuda_order_free(order);
	order->asked = true;
	if (!library || !*library)
		library = "libcuda.so.1";
	if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
		snprintf(order->failure, sizeof(order->failure), "cannot ask the CUDA driver: pipe: %s",
			 strerror(errno));
		return 0;
	}
	child = fork();
	if (child < 0) {
		snprintf(order->failure, sizeof(order->failure), "cannot ask the CUDA driver: fork: %s",
			 strerror(errno));
		close(pipe_fds[0]);
		close(pipe_fds[1]);
		return 0;
	}
	if (child == 0) {
		/* What the driver prints must not end up in `gpurun --print`'s output. */
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		close(pipe_fds[0]);
		report(pipe_fds[1], library, visible);
		_exit(0);
	}
	close(pipe_fds[1]);
	text = read_report(pipe_fds[0], timeout_s, &timed_out);
	close(pipe_fds[0]);
	/* Once it has said all (or failed to), it has nothing left to do but exit; one that lingers
	 * in the driver's teardown is not waited for past a short grace. */
	if (timed_out || !child_wait_until(child, monotonic_seconds() + CHILD_EXIT_GRACE_S, &ignored))
		child_kill_and_reap(child, false);
	if (timed_out)
		snprintf(order->failure, sizeof(order->failure),
			 "the CUDA driver (%s) did not answer within %.0f s", library, timeout_s);
	else
		out_of_memory = !text || !parse_report(text, order);
	free(text);
	if (out_of_memory)
		snprintf(order->failure, sizeof(order->failure), "out of memory");
	if (!order->answered) {
		free(order->uuids);
		order->uuids = NULL;
		order->count = 0;
	}
	return out_of_memory ? GPURUN_EXIT_SOFTWARE : 0;
}

void gpurun_cuda_order_free(struct gpurun_cuda_order *order)
{
	free(order->uuids);
	memset(order, 0, sizeof(*order));
}
