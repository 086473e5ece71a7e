/* sysfs_fuzz: libFuzzer target for what gpurun reads from /sys and /proc: the amdgpu probe
 * (gpurun_probe_amdgpu) and the process lists (gpurun_processes_collect) run against a machine
 * written from the input under GPURUN_SYSFS_ROOT: one AMD card and one process using it, each
 * file's text a NUL-separated piece of the input. The first piece is also handed straight to
 * sysfs_parse_integer, the parser under every number. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "gpurun.h"
#include "sysfs_internal.h"

#define DEVICE "sys/devices/pci0000:00/0000:03:00.0"

/* The files the input fills, in the order of its pieces. */
static const char *const files[] = {
	DEVICE "/vendor",
	DEVICE "/device",
	DEVICE "/uevent",
	DEVICE "/mem_info_vram_total",
	DEVICE "/mem_info_vram_used",
	DEVICE "/gpu_busy_percent",
	DEVICE "/unique_id",
	DEVICE "/product_name",
	DEVICE "/serial_number",
	DEVICE "/hwmon/hwmon0/temp1_input",
	DEVICE "/hwmon/hwmon0/power1_average",
	"sys/module/amdgpu/version",
	"proc/100/fdinfo/3",
	"proc/100/status",
	"proc/100/cmdline",
	"proc/100/comm",
};
#define FILE_COUNT (sizeof(files) / sizeof(files[0]))

static char root[400];

static void must(bool done, const char *what)
{
	if (!done) {
		perror(what);
		abort();
	}
}

static void make_directories(const char *relative)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, relative);
	for (char *slash = path + strlen(root) + 1; (slash = strchr(slash, '/')); slash++) {
		*slash = '\0';
		must(mkdir(path, 0755) == 0 || errno == EEXIST, path);
		*slash = '/';
	}
	must(mkdir(path, 0755) == 0 || errno == EEXIST, path);
}

static void make_link(const char *target, const char *relative)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, relative);
	must(symlink(target, path) == 0 || errno == EEXIST, path);
}

/* The parts of the machine the input does not change: directories and links. */
static void build_skeleton(void)
{
	/* Under $TMPDIR, which tests/fuzz/run.sh points at a scratch directory it removes. */
	const char *tmp = getenv("TMPDIR");

	snprintf(root, sizeof(root), "%.300s/gpurun-sysfs-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	must(mkdtemp(root) != NULL, "mkdtemp");
	make_directories(DEVICE "/drm/card0");
	make_directories(DEVICE "/hwmon/hwmon0");
	make_directories("sys/bus/pci/drivers/amdgpu");
	make_directories("sys/class/drm");
	make_directories("sys/module/amdgpu");
	make_directories("proc/100/fd");
	make_directories("proc/100/fdinfo");
	make_directories("proc/self/ns");
	make_link("../../devices/pci0000:00/0000:03:00.0/drm/card0", "sys/class/drm/card0");
	make_link("../../../0000:03:00.0", DEVICE "/drm/card0/device");
	make_link("../../../bus/pci/drivers/amdgpu", DEVICE "/driver");
	make_link("/dev/dri/renderD128", "proc/100/fd/3");
	make_link("pid:[4026531836]", "proc/self/ns/pid");
	must(setenv("GPURUN_SYSFS_ROOT", root, 1) == 0, "setenv");
}

static void write_file(const char *relative, const char *text, size_t length)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, relative);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	must(fd >= 0, path);
	must(length == 0 || write(fd, text, length) == (ssize_t)length, path);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *pieces[FILE_COUNT];
	char *storage;
	struct gpurun_snapshot snapshot;
	struct gpurun_error err;
	long long value;

	if (!root[0])
		build_skeleton();
	size_t count = fuzz_split(data, size, pieces, FILE_COUNT, &storage);
	for (size_t i = 0; i < FILE_COUNT; i++) {
		const char *text = i < count ? pieces[i] : "";
		write_file(files[i], text, strlen(text));
	}

	long long low = size > 1 ? (long long)(int8_t)data[size - 1] * 1000 : 0;
	if (sysfs_parse_integer(pieces[0], low, low + 100000, &value))
		fuzz_require(value >= low && value <= low + 100000);

	int status = gpurun_probe_amdgpu(&snapshot, &err);
	if (status != 0) {
		fuzz_require(status == GPURUN_EXIT_NO_GPU_INFO || status == GPURUN_EXIT_SOFTWARE);
		fuzz_require_terminated(err.message);
	} else {
		fuzz_require(snapshot.count == 1);
		const struct gpurun_device *device = &snapshot.devices[0];
		fuzz_require(device->vendor == GPURUN_VENDOR_AMD);
		fuzz_require(isnan(device->load) || (device->load >= 0 && device->load <= 1));
		fuzz_require(isnan(device->memory_total) || device->memory_total >= 0);
		fuzz_require(isnan(device->memory_used) || device->memory_used >= 0);
		fuzz_require_terminated(device->uuid);
		fuzz_require_terminated(device->name);
		fuzz_require_terminated(device->serial);
		fuzz_require_terminated(snapshot.driver_version);
		status = gpurun_processes_collect(&snapshot, &err);
		fuzz_require(status == 0 || status == GPURUN_EXIT_SOFTWARE);
		for (size_t p = 0; p < device->process_count; p++) {
			fuzz_require(device->processes[p].pid == 100);
			fuzz_require_terminated(device->processes[p].user);
			fuzz_require_terminated(device->processes[p].command);
		}
		gpurun_snapshot_free(&snapshot);
	}
	free(storage);
	return 0;
}
