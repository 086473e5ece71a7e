/* process: who uses each GPU. AMD GPUs' processes come from /proc/PID/fdinfo (the DRM usage
 * statistics amdgpu publishes per open device file, kernel 5.14 on); the user and command line
 * of every listed process, whichever probe found it, come from /proc/PID. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gpurun.h"
#include "sysfs_internal.h"

/* PROC_PID_INIT_INO: the inode of the host's (initial) PID namespace, fixed since Linux 3.8. */
#define HOST_PID_NAMESPACE_INODE 4026531836ul
#define BYTES_PER_MIB 1048576.0
#define STATUS_SIZE 4096                /* Uid: comes early in /proc/PID/status */
#define FDINFO_SIZE 4096

/* ---- user and command line --------------------------------------------------------------- */

/* NVML names processes by their host PID. Inside another PID namespace (a container) the same
 * number in our /proc is another process or none, so only a host-namespace /proc can say who
 * it is. When we cannot tell, each PID is still looked up and is unknown if absent. */
static bool host_pids_are_ours(void)
{
	char path[PATH_MAX], link[64];
	unsigned long inode;
	ssize_t length;

	if (sysfs_path(path, sizeof(path), "proc", "/self/ns/pid") != 0)
		return true;
	length = readlink(path, link, sizeof(link) - 1);
	if (length <= 0)
		return true;
	link[length] = '\0';
	/* An overflowing number fails the comparison below, which is all it is for. */
	if (sscanf(link, "pid:[%lu]", &inode) != 1) /* NOLINT(cert-err34-c) */
		return true;
	return inode == HOST_PID_NAMESPACE_INODE;
}

/* User names by uid: a lookup can go to LDAP, so each uid is asked once per collection. */
struct user_names {
	uid_t uids[32];
	char names[32][GPURUN_USER_SIZE];
	size_t count;
};

static void user_name(struct user_names *cache, uid_t uid, char *name, size_t size)
{
	struct passwd entry, *found = NULL;
	char buffer[2048];

	for (size_t i = 0; i < cache->count; i++) {
		if (cache->uids[i] == uid) {
			snprintf(name, size, "%s", cache->names[i]);
			return;
		}
	}
	if (getpwuid_r(uid, &entry, buffer, sizeof(buffer), &found) == 0 && found)
		snprintf(name, size, "%s", found->pw_name);
	else
		snprintf(name, size, "%lu", (unsigned long)uid);  /* as ps shows an unknown uid */
	if (cache->count < sizeof(cache->uids) / sizeof(cache->uids[0])) {
		cache->uids[cache->count] = uid;
		snprintf(cache->names[cache->count], sizeof(cache->names[0]), "%s", name);
		cache->count++;
	}
}

/* The real uid from the Uid: line of /proc/PID/status. */
static bool process_uid(int pid_fd, uid_t *uid)
{
	char status[STATUS_SIZE];
	unsigned long value;
	const char *line;

	if (sysfs_read_prefix_at(pid_fd, "status", status, sizeof(status)) <= 0)
		return false;
	line = strstr(status, "\nUid:");
	/* The kernel writes a uid here; it cannot overflow an unsigned long. */
	if (!line || sscanf(line + 5, "%lu", &value) != 1) /* NOLINT(cert-err34-c) */
		return false;
	*uid = (uid_t)value;
	return true;
}

/* The command line with its arguments joined by spaces, as ps shows it; a process without one
 * (a kernel thread, a zombie) shows its name in brackets. */
static void process_command(int pid_fd, char *command, size_t size)
{
	ssize_t length = sysfs_read_prefix_at(pid_fd, "cmdline", command, size);

	while (length > 0 && command[length - 1] == '\0')
		length--;
	if (length > 0) {
		for (ssize_t i = 0; i < length; i++)
			if (command[i] == '\0')
				command[i] = ' ';
		command[length] = '\0';
		return;
	}
	char name[64];
	if (sysfs_read_text_at(pid_fd, "comm", name, sizeof(name)))
		snprintf(command, size, "[%s]", name);
	else
		command[0] = '\0';
}

static void describe(struct gpurun_process *process, struct user_names *users)
{
	char path[PATH_MAX];
	int pid_fd;
	uid_t uid;

	if (process->user[0] || process->command[0])
		return;
	if (process->pid == 0 ||
	    sysfs_path(path, sizeof(path), "proc", "/%u", process->pid) != 0)
		return;
	pid_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pid_fd < 0)
		return;
	/* Both or neither: a process that exits between the two reads stays unknown. */
	if (process_uid(pid_fd, &uid)) {
		process_command(pid_fd, process->command, sizeof(process->command));
		user_name(users, uid, process->user, sizeof(process->user));
	}
	close(pid_fd);
}

/* ---- AMD GPUs' processes ------------------------------------------------------------------- */

/* What one fdinfo file says about a DRM client. */
struct drm_client {
	char driver[32];
	char pdev[GPURUN_BUS_ID_SIZE];
	unsigned long long id;
	bool has_id;
	double vram_bytes;              /* NaN when not stated */
};

/* "123 KiB" → bytes. The DRM usage-stats format: an integer and an optional unit. */
static double memory_value(const char *text)
{
	static const struct { const char *unit; double bytes; } units[] = {
		{ "", 1 }, { "KiB", 1024.0 }, { "MiB", BYTES_PER_MIB },
		{ "GiB", 1024.0 * BYTES_PER_MIB },
	};
	char *end;
	unsigned long long value;

	if (*text < '0' || *text > '9')
		return NAN;
	errno = 0;
	value = strtoull(text, &end, 10);
	if (errno == ERANGE)
		return NAN;
	while (*end == ' ' || *end == '\t')
		end++;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].unit) == 0)
			return (double)value * units[i].bytes;
	return NAN;
}

static bool read_drm_client(int pid_fd, const char *fd_name, struct drm_client *client)
{
	char path[sizeof("fdinfo/") + NAME_MAX];
	char text[FDINFO_SIZE];
	double resident_vram = NAN;
	char *saved;

	memset(client, 0, sizeof(*client));
	client->vram_bytes = NAN;
	snprintf(path, sizeof(path), "fdinfo/%s", fd_name);
	if (sysfs_read_prefix_at(pid_fd, path, text, sizeof(text)) <= 0)
		return false;
	for (char *line = strtok_r(text, "\n", &saved); line; line = strtok_r(NULL, "\n", &saved)) {
		char *value = strchr(line, ':');

		if (!value)
			continue;
		*value++ = '\0';
		value += strspn(value, " \t");
		if (strcmp(line, "drm-driver") == 0) {
			snprintf(client->driver, sizeof(client->driver), "%s", value);
		} else if (strcmp(line, "drm-pdev") == 0) {
			snprintf(client->pdev, sizeof(client->pdev), "%s", value);
		} else if (strcmp(line, "drm-client-id") == 0) {
			char *end;

			client->id = strtoull(value, &end, 10);
			client->has_id = end != value && *end == '\0';
		} else if (strcmp(line, "drm-memory-vram") == 0) {
			client->vram_bytes = memory_value(value);
		} else if (strcmp(line, "drm-resident-vram") == 0) {
			resident_vram = memory_value(value);
		}
	}
	/* Kernels that dropped the amdgpu-specific key still state the generic one. */
	if (isnan(client->vram_bytes))
		client->vram_bytes = resident_vram;
	return strcmp(client->driver, "amdgpu") == 0 && client->pdev[0];
}

static long amd_device_at(const struct gpurun_snapshot *snapshot, const char *pdev)
{
	for (size_t i = 0; i < snapshot->count; i++) {
		const struct gpurun_device *device = &snapshot->devices[i];

		if (device->vendor == GPURUN_VENDOR_AMD && device->pci_bus_id[0] &&
		    strcasecmp(device->pci_bus_id, pdev) == 0)
			return (long)i;
	}
	return -1;
}

/* One process's use of the AMD GPUs, summed over its DRM clients. */
struct usage {
	bool *uses;                     /* per snapshot device */
	double *vram_bytes;             /* per snapshot device; NaN once a client's is unknown */
	unsigned long long *seen_ids;   /* client ids counted already (dup'ed descriptors) */
	size_t *seen_devices;
	size_t seen_count, seen_capacity;
};

static bool seen_before(struct usage *usage, size_t device, unsigned long long id)
{
	for (size_t i = 0; i < usage->seen_count; i++)
		if (usage->seen_ids[i] == id && usage->seen_devices[i] == device)
			return true;
	if (usage->seen_count == usage->seen_capacity) {
		size_t capacity = usage->seen_capacity ? 2 * usage->seen_capacity : 16;
		unsigned long long *ids = realloc(usage->seen_ids, capacity * sizeof(*ids));

		if (ids)
			usage->seen_ids = ids;
		size_t *devices = realloc(usage->seen_devices, capacity * sizeof(*devices));
		if (devices)
			usage->seen_devices = devices;
		if (!ids || !devices)
			return false;   /* counted twice at worst */
		usage->seen_capacity = capacity;
	}
	usage->seen_ids[usage->seen_count] = id;
	usage->seen_devices[usage->seen_count++] = device;
	return false;
}

/* Looks at every open DRM file of one process. Descriptors of another user's process are
 * readable only with ptrace rights (root, or the same user): returns false for a process that
 * could not be looked at (one that has just exited has nothing to miss). */
static bool scan_process(const struct gpurun_snapshot *snapshot, int pid_fd, struct usage *usage)
{
	DIR *fds = sysfs_open_dir_at(pid_fd, "fd");
	struct dirent *entry;

	if (!fds)
		return errno == ENOENT || errno == ESRCH;
	while ((entry = readdir(fds))) {
		char target[64];
		struct drm_client client;
		ssize_t length;
		long device;

		if (entry->d_name[0] == '.')
			continue;
		/* Only DRM device files have DRM fdinfo: skip the rest without reading it. */
		length = readlinkat(dirfd(fds), entry->d_name, target, sizeof(target) - 1);
		if (length <= 0)
			continue;
		target[length] = '\0';
		if (strncmp(target, "/dev/dri/", 9) != 0)
			continue;
		if (!read_drm_client(pid_fd, entry->d_name, &client))
			continue;
		device = amd_device_at(snapshot, client.pdev);
		if (device < 0)
			continue;
		if (client.has_id && seen_before(usage, (size_t)device, client.id))
			continue;
		usage->uses[device] = true;
		usage->vram_bytes[device] += client.vram_bytes;
	}
	closedir(fds);
	return true;
}

static int add_process(struct gpurun_device *device, unsigned pid, double vram_bytes,
		       struct gpurun_error *err)
{
	struct gpurun_process *grown = realloc(device->processes,
					       (device->process_count + 1) * sizeof(*grown));

	if (!grown)
		return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory for processes");
	device->processes = grown;
	memset(&grown[device->process_count], 0, sizeof(*grown));
	grown[device->process_count].pid = pid;
	grown[device->process_count].used_mib = isnan(vram_bytes) ? NAN
					       : floor(vram_bytes / BYTES_PER_MIB);
	device->process_count++;
	return 0;
}

static bool is_pid(const char *name, unsigned *pid)
{
	char *end;
	unsigned long value;

	if (name[0] < '1' || name[0] > '9')
		return false;
	value = strtoul(name, &end, 10);
	if (*end != '\0' || value > 0xFFFFFFFFul)
		return false;
	*pid = (unsigned)value;
	return true;
}

/* Kernel threads (and zombies) have none, and hold no DRM file: unseen, they are not missed. */
static bool has_command_line(int pid_fd)
{
	char start[2];

	return sysfs_read_at(pid_fd, "cmdline", start, sizeof(start)) != 0;
}

static int scan_amd_processes(struct gpurun_snapshot *snapshot, struct gpurun_error *err)
{
	char path[PATH_MAX];
	int proc_fd;
	DIR *proc;
	struct dirent *entry;
	struct usage usage = { 0 };
	int status = 0;

	if (sysfs_path(path, sizeof(path), "proc", "%s", "") != 0)
		return 0;
	proc_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0)
		return 0;       /* no /proc: the lists stay unknown */
	snapshot->processes_unseen = 0;
	proc = fdopendir(proc_fd);
	usage.uses = calloc(snapshot->count, sizeof(*usage.uses));
	usage.vram_bytes = calloc(snapshot->count, sizeof(*usage.vram_bytes));
	if (!proc || !usage.uses || !usage.vram_bytes) {
		status = gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < snapshot->count; i++) {
		struct gpurun_device *device = &snapshot->devices[i];

		if (device->vendor == GPURUN_VENDOR_AMD && !device->processes_known) {
			device->processes_known = true;
			device->process_count = 0;
		}
	}
	while (status == 0 && (entry = readdir(proc))) {
		unsigned pid;
		int pid_fd;

		if (!is_pid(entry->d_name, &pid))
			continue;
		pid_fd = openat(proc_fd, entry->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pid_fd < 0)
			continue;       /* it exited since the listing */
		memset(usage.uses, 0, snapshot->count * sizeof(*usage.uses));
		memset(usage.vram_bytes, 0, snapshot->count * sizeof(*usage.vram_bytes));
		usage.seen_count = 0;
		if (!scan_process(snapshot, pid_fd, &usage) && has_command_line(pid_fd))
			snapshot->processes_unseen++;
		close(pid_fd);
		for (size_t i = 0; i < snapshot->count && status == 0; i++)
			if (usage.uses[i])
				status = add_process(&snapshot->devices[i], pid, usage.vram_bytes[i], err);
	}
done:
	if (proc)
		closedir(proc);
	else
		close(proc_fd);
	free(usage.uses);
	free(usage.vram_bytes);
	free(usage.seen_ids);
	free(usage.seen_devices);
	return status;
}

/* ---- both ------------------------------------------------------------------------------------ */

static int compare_pids(const void *a, const void *b)
{
	const struct gpurun_process *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

int gpurun_processes_collect(struct gpurun_snapshot *snapshot, struct gpurun_error *err)
{
	struct user_names users = { .count = 0 };
	bool host_pids_visible = host_pids_are_ours();
	bool has_amd = false;
	int status;

	for (size_t i = 0; i < snapshot->count; i++)
		has_amd = has_amd || snapshot->devices[i].vendor == GPURUN_VENDOR_AMD;
	if (has_amd) {
		status = scan_amd_processes(snapshot, err);
		if (status)
			return status;
	}
	for (size_t i = 0; i < snapshot->count; i++) {
		struct gpurun_device *device = &snapshot->devices[i];
		/* /proc's PIDs are ours by definition; NVML's are the host's. */
		bool visible = device->vendor == GPURUN_VENDOR_AMD || host_pids_visible;

		if (device->vendor == GPURUN_VENDOR_AMD && device->process_count > 1)
			qsort(device->processes, device->process_count, sizeof(*device->processes),
			      compare_pids);
		for (size_t p = 0; visible && p < device->process_count; p++)
			describe(&device->processes[p], &users);
	}
	return 0;
}
