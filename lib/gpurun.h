/* gpurun.h: the public C API of libgpurun. Probe the GPUs, choose among them by GPUtil's rules,
 * lease the chosen ones, hand them to a program, report what the machine looks like. */
#ifndef GPURUN_H
#define GPURUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPURUN_VERSION "0.3.1"

/* Exit statuses of the gpurun command; library calls report the same numbers in
 * struct gpurun_error so that a front end can exit with them unchanged. */
enum gpurun_exit {
	GPURUN_EXIT_OK = 0,
	GPURUN_EXIT_USAGE = 2,          /* bad option or value */
	GPURUN_EXIT_NO_GPU_INFO = 69,   /* EX_UNAVAILABLE: no NVML, no nvidia-smi, no driver */
	GPURUN_EXIT_SOFTWARE = 70,      /* EX_SOFTWARE: out of memory, an impossible state */
	GPURUN_EXIT_BUSY = 75,          /* EX_TEMPFAIL: not enough GPUs available */
	GPURUN_EXIT_LOCK_DIR = 77,      /* EX_NOPERM: the lock directory is unsafe or unwritable */
	GPURUN_EXIT_CANNOT_EXEC = 126,
	GPURUN_EXIT_NOT_FOUND = 127,
};

/* Every failing call fills one of these: the exit status and one line (no "gpurun: " prefix,
 * no newline) for the user. */
struct gpurun_error {
	int status;
	char message[512];
};

/* Formats the message (printf-style) and sets the status; returns status, so that callers can
 * write `return gpurun_fail(err, GPURUN_EXIT_USAGE, "...")`. err may be NULL. */
int gpurun_fail(struct gpurun_error *err, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#ifdef __clang_analyzer__
/* Static analysis (make lint) sees one file at a time: this tells it that gpurun_fail returns
 * its status, which every `return gpurun_fail(...)` relies on being non-zero. */
#define gpurun_fail(err, status, ...) (gpurun_fail((err), (status), __VA_ARGS__), (status))
#endif

/* ---- the device record ----------------------------------------------------------------- */

#define GPURUN_UUID_SIZE 96
#define GPURUN_NAME_SIZE 96
#define GPURUN_SERIAL_SIZE 32
#define GPURUN_BUS_ID_SIZE 32
#define GPURUN_DRIVER_SIZE 80
#define GPURUN_FLAG_SIZE 16     /* "Enabled" / "Disabled" */
#define GPURUN_USER_SIZE 33
#define GPURUN_COMMAND_SIZE 256
#define GPURUN_HOST_SIZE 65

enum gpurun_vendor { GPURUN_VENDOR_NVIDIA, GPURUN_VENDOR_AMD };

struct gpurun_process {
	unsigned pid;                   /* host PID, as NVML reports it */
	double used_mib;                /* NaN when unknown */
	char user[GPURUN_USER_SIZE];    /* empty when unknown (another PID namespace) */
	char command[GPURUN_COMMAND_SIZE];
};

/* Who holds a lease, as written into the lock file by the holder. */
struct gpurun_holder {
	pid_t pid;
	uid_t uid;
	char user[GPURUN_USER_SIZE];
	long long start_time;           /* seconds since the epoch */
	char host[GPURUN_HOST_SIZE];
	char command[GPURUN_COMMAND_SIZE];
};

/* One selectable device: a whole GPU, or one MIG instance of a MIG-enabled GPU.
 * A number that could not be read is NaN; a string that could not be read is empty. */
struct gpurun_device {
	int index;                      /* NVML / nvidia-smi index: PCI-bus order */
	enum gpurun_vendor vendor;
	char uuid[GPURUN_UUID_SIZE];    /* "GPU-..." or "MIG-..." */
	char name[GPURUN_NAME_SIZE];
	char serial[GPURUN_SERIAL_SIZE];
	char pci_bus_id[GPURUN_BUS_ID_SIZE];
	double load;                    /* 0..1 */
	double memory_total;            /* MiB */
	double memory_used;             /* MiB */
	double memory_free;             /* MiB */
	double temperature;             /* degrees C */
	double power_draw;              /* W */
	char display_mode[GPURUN_FLAG_SIZE];
	char display_active[GPURUN_FLAG_SIZE];
	bool lost;                      /* GPU_IS_LOST: never available */
	int mig_parent;                 /* index of the parent GPU, -1 for a whole GPU */
	int mig_instance;               /* position among the parent's instances, -1 for a whole GPU */
	bool mig_enabled;               /* a MIG-enabled GPU: never chosen itself; its instances
					 * follow it in the snapshot and are the devices */
	bool mig_mode_unknown;          /* the MIG mode could not be read: mig_enabled is set */
	int mig_gpu_instance;           /* a MIG instance's GPU instance id, -1 when unknown */
	int mig_compute_instance;       /* its compute instance id, -1 when unknown */
	struct gpurun_process *processes;
	size_t process_count;
	bool processes_known;
	bool leased;                    /* a live lease is held on it (filled by gpurun_lease_inspect) */
	struct gpurun_holder holder;    /* valid when leased */
};

/* GPUtil's memoryUtil: used / total, NaN when either is unknown or total is 0. */
double gpurun_device_memory_util(const struct gpurun_device *device);

struct gpurun_snapshot {
	struct gpurun_device *devices;
	size_t count;
	char driver_version[GPURUN_DRIVER_SIZE];
	const char *source;             /* "nvml", "nvidia-smi", "amdgpu", "nvml+amdgpu" or
					 * "nvidia-smi+amdgpu" (a static string) */
	size_t processes_unseen;        /* processes whose GPU use could not be read (for AMD GPUs,
					 * other users' without root): in no device's list */
};

/* Allocates room for count zeroed-then-unknown devices (NaN numbers, empty strings, no MIG). */
int gpurun_snapshot_init(struct gpurun_snapshot *snapshot, size_t count, struct gpurun_error *err);
void gpurun_device_init_unknown(struct gpurun_device *device);
void gpurun_snapshot_free(struct gpurun_snapshot *snapshot);
/* How --explain and the masks name a device: "GPU 2", or "GPU 1 MIG 0" for a MIG instance. */
void gpurun_device_label(const struct gpurun_device *device, char *label, size_t size);
/* Moves every device of *more to the end of *snapshot (*more is left empty). Their indices
 * continue after the highest index already there, so that one table can show NVIDIA GPUs
 * 0..n-1 and then AMD GPUs n, n+1, ...; each vendor's own numbering is
 * gpurun_device_vendor_index. */
int gpurun_snapshot_append(struct gpurun_snapshot *snapshot, struct gpurun_snapshot *more,
			   struct gpurun_error *err);
/* "nvidia" or "amd". */
const char *gpurun_vendor_name(enum gpurun_vendor vendor);
/* The number the device's own runtime knows it by: the NVML index for NVIDIA GPUs, the
 * position among the AMD GPUs (PCI-bus order, as ROCR_VISIBLE_DEVICES counts) for AMD ones. */
int gpurun_device_vendor_index(const struct gpurun_snapshot *snapshot, size_t position);

/* ---- the request: everything the user asked for ----------------------------------------- */

enum gpurun_action {
	GPURUN_ACTION_RUN, GPURUN_ACTION_PRINT, GPURUN_ACTION_SHOW, GPURUN_ACTION_HELP,
	GPURUN_ACTION_VERSION,
};
enum gpurun_order {
	GPURUN_ORDER_FIRST, GPURUN_ORDER_LAST, GPURUN_ORDER_RANDOM,
	GPURUN_ORDER_LOAD, GPURUN_ORDER_MEMORY, GPURUN_ORDER_FREE,
};
enum gpurun_source { GPURUN_SOURCE_AUTO, GPURUN_SOURCE_NVML, GPURUN_SOURCE_SMI, GPURUN_SOURCE_AMDGPU };
/* --vendor: which vendors' GPUs --source auto reads (the zero value is every vendor). */
enum gpurun_vendor_filter { GPURUN_VENDOR_ANY, GPURUN_VENDOR_ONLY_NVIDIA, GPURUN_VENDOR_ONLY_AMD };

#define GPURUN_LIMIT_ALL ((unsigned)-1)
#define GPURUN_ATTEMPTS_UNLIMITED 0u

struct gpurun_request {
	enum gpurun_action action;
	/* selection: GPUtil's getAvailability / getAvailable */
	double max_load;                /* strict <, default 0.5 */
	double max_memory;              /* strict <, default 0.5 */
	double min_free_mib;            /* >=, default 0 */
	bool include_nan;
	char *exclude;                  /* comma list of indices and/or UUIDs, or NULL */
	enum gpurun_order order;
	unsigned limit;                 /* default 1; GPURUN_LIMIT_ALL */
	unsigned min_count;             /* fewest acceptable; default = limit */
	bool min_count_set;
	unsigned random_seed;           /* for order random; 0 = seed from time and pid */
	/* waiting */
	unsigned attempts;              /* default 1; GPURUN_ATTEMPTS_UNLIMITED with --wait */
	double interval_s;              /* default 10 */
	double timeout_s;               /* 0 = none */
	/* data source */
	enum gpurun_source source;
	enum gpurun_vendor_filter vendor;
	double smi_timeout_s;           /* default 10 */
	/* hand-off */
	bool hand_out_uuids;            /* --uuid: UUIDs instead of indices */
	bool cpu_fallback;              /* run with CUDA_VISIBLE_DEVICES= instead of failing */
	bool no_lease;
	bool lazy;                      /* choose at CUDA initialization, through the preload library */
	char *preload_lib;              /* --preload-lib PATH, or NULL */
	char *lock_dir;                 /* --lock-dir PATH, else GPURUN_LOCK_DIR, else /tmp/gpurun */
	/* reports */
	bool show_all;                  /* --show --all: GPUtil's full table */
	bool json;
	bool processes;                 /* --processes: each GPU's processes under its row */
	bool wide;                      /* --wide: vendor, PCI bus id and power columns */
	double watch_s;                 /* --watch: refresh interval; 0 = show once */
	bool verbose;
	bool explain;
	/* the program to run: points into the argv given to gpurun_request_parse */
	char **command;
	int command_count;
};

/* Defaults as documented in the README and gpurun(1). */
void gpurun_request_init(struct gpurun_request *request);
/* Parses gpurun's command line (argv[0] is the program name and is skipped). Options stop at
 * "--" or at the first non-option word, which starts the command. */
int gpurun_request_parse(struct gpurun_request *request, int argc, char **argv,
			 struct gpurun_error *err);
/* Parses GPURUN_OPTIONS-style text ("--limit 1 --order memory"); words are split on blanks,
 * with '...' and "..." quoting. A command is not allowed there. */
int gpurun_request_parse_string(struct gpurun_request *request, const char *options,
				struct gpurun_error *err);
/* Frees what parsing allocated (the --exclude list, --preload-lib, --lock-dir), also after a
 * failed parse; command points into argv and is not freed. */
void gpurun_request_free(struct gpurun_request *request);
/* The fewest GPUs the request accepts: --min-count, else 1 with --limit all, else --limit. */
unsigned gpurun_request_needed(const struct gpurun_request *request);
/* The option words for an order and a source ("memory", "nvidia-smi"), as --order and --source
 * take them; "unknown" for a value outside the enum. */
const char *gpurun_order_name(enum gpurun_order order);
const char *gpurun_source_name(enum gpurun_source source);

/* Value parsers shared by the options: all reject trailing garbage, negatives and NaN. */
int gpurun_parse_fraction(const char *text, double *fraction);      /* "0.3" or "30%" */
int gpurun_parse_size_mib(const char *text, double *mib);           /* "512", "20G", "1.5TiB" */
int gpurun_parse_duration(const char *text, double *seconds);       /* "90", "90s", "15m", "2h" */
int gpurun_parse_count(const char *text, unsigned *count);          /* non-negative integer */
/* A duration for people: "45s", "1m05s", "2h10m" (minutes and hours drop the smaller unit). */
void gpurun_format_duration(double seconds, char *text, size_t size);

/* ---- probing ------------------------------------------------------------------------------ */

/* Takes a snapshot from the requested source. AUTO: NVML, else nvidia-smi, and the AMD GPUs
 * amdgpu's sysfs files show beside either. On failure the error names what was tried and why it
 * failed (status GPURUN_EXIT_NO_GPU_INFO). */
int gpurun_probe(const struct gpurun_request *request, struct gpurun_snapshot *snapshot,
		 struct gpurun_error *err);
int gpurun_probe_nvml(struct gpurun_snapshot *snapshot, struct gpurun_error *err);
/* Runs nvidia-smi, killed after timeout_s seconds (0 or less: 10). */
int gpurun_probe_smi(double timeout_s, struct gpurun_snapshot *snapshot, struct gpurun_error *err);
/* The nvidia-smi CSV parser on its own (GPUtil's query plus pci.bus_id, noheader, nounits). */
int gpurun_smi_parse(const char *text, size_t length, struct gpurun_snapshot *snapshot,
		     struct gpurun_error *err);
/* The exact argument list gpurun passes to nvidia-smi, NULL-terminated. */
extern const char *const gpurun_smi_arguments[];
/* AMD GPUs from the amdgpu driver's sysfs files under $GPURUN_SYSFS_ROOT/sys/class/drm
 * (default /sys/class/drm). A file that is missing, unreadable or garbage leaves its field
 * unknown; a card that disappears while being read is left out. No AMD GPU at all is
 * GPURUN_EXIT_NO_GPU_INFO. Process lists are left unknown (see gpurun_processes_collect). */
int gpurun_probe_amdgpu(struct gpurun_snapshot *snapshot, struct gpurun_error *err);
/* Completes the process lists from /proc ($GPURUN_SYSFS_ROOT/proc when set): the processes
 * using each AMD GPU (from /proc/PID/fdinfo, with their VRAM), and the user and command line of
 * every listed process. A process that cannot be seen (gone, not ours to read, or a host PID
 * from NVML while we run in another PID namespace) keeps an empty user and command. Once per
 * snapshot. */
int gpurun_processes_collect(struct gpurun_snapshot *snapshot, struct gpurun_error *err);

/* ---- visibility masks -------------------------------------------------------------------- */

/* The inherited variables that limit which NVIDIA devices may be chosen; NULL where unset.
 * The rules (README, "Masks"): CUDA_VISIBLE_DEVICES is read exactly as CUDA reads it, the Slurm
 * allocation and NVIDIA_VISIBLE_DEVICES=none|void further limit it, and a device must pass all. */
struct gpurun_inherited {
	const char *cuda_visible_devices;
	const char *cuda_device_order;
	const char *slurm_step_gpus;
	const char *slurm_job_gpus;
	const char *slurm_job_id;
	const char *nvidia_visible_devices;
	const char *rocr_visible_devices;
};

/* Points every field at this process's environment. */
void gpurun_inherited_read(struct gpurun_inherited *inherited);

/* The devices CUDA shows for one CUDA_VISIBLE_DEVICES value, in CUDA's order, as the driver
 * itself reported them. Asked at most once per process, since the answer cannot change. */
struct gpurun_cuda_order {
	bool asked;
	bool answered;                  /* else failure says why */
	size_t count;
	char (*uuids)[GPURUN_UUID_SIZE]; /* "GPU-" and cuDeviceGetUuid's 16 bytes in hex */
	char failure[256];
};

/* Asks the CUDA driver ($GPURUN_CUDA_LIB, else libcuda.so.1) which devices it shows with
 * CUDA_VISIBLE_DEVICES=visible, in a short-lived child process: this process never loads the
 * driver, which reads CUDA_VISIBLE_DEVICES once at cuInit and keeps it for good. order is
 * zeroed, or from an earlier call (whose answer it frees). Returns 0, with the answer or why
 * there is none in order, or GPURUN_EXIT_SOFTWARE when out of memory. */
int gpurun_cuda_order_read(const char *visible, double timeout_s, struct gpurun_cuda_order *order);
void gpurun_cuda_order_free(struct gpurun_cuda_order *order);

/* Why the inherited variables keep a device out of the choice. */
enum gpurun_mask_verdict {
	GPURUN_MASK_ALLOWED,
	GPURUN_MASK_NO_GPU,             /* NVIDIA_VISIBLE_DEVICES=none */
	GPURUN_MASK_OUTSIDE_CONTAINER,  /* NVIDIA_VISIBLE_DEVICES names other GPUs */
	GPURUN_MASK_OUTSIDE_SLURM,      /* outside the Slurm allocation */
	GPURUN_MASK_NOT_VISIBLE,        /* CUDA_VISIBLE_DEVICES does not name it */
	GPURUN_MASK_NOT_IN_ROCR,        /* ROCR_VISIBLE_DEVICES does not name it (AMD) */
	GPURUN_MASK_MIG_ENABLED,        /* a MIG-enabled GPU: its instances are the devices */
	GPURUN_MASK_MIG_MODE_UNKNOWN,   /* a GPU that may be split: only listed instances count */
};

struct gpurun_mask {
	bool *allowed;                  /* one per snapshot device */
	enum gpurun_mask_verdict *verdicts;
	size_t count;
	size_t allowed_count;
	char rules[2048];               /* for --explain: what each variable did, "\n"-ended lines */
	char warning[512];              /* one line for stderr (no "gpurun: "), or empty */
	char nothing_allowed[512];      /* when the variables allow no existing device: why */
};

/* Applies the inherited variables to the snapshot. order keeps the driver's answer between
 * calls with the same inherited values (start from a zeroed one for others): it is asked on
 * first need (integers in CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER not PCI_BUS_ID, GPUs of
 * different models); NULL never asks, and integers are then read in PCI order with a warning
 * where that can be wrong. AMD devices are subject to the Slurm allocation and
 * ROCR_VISIBLE_DEVICES. mask is zeroed, or from an earlier call (it is freed and refilled);
 * gpurun_mask_free releases it. */
int gpurun_mask_apply(const struct gpurun_snapshot *snapshot, const struct gpurun_inherited *inherited,
		      struct gpurun_cuda_order *order, struct gpurun_mask *mask,
		      struct gpurun_error *err);
void gpurun_mask_free(struct gpurun_mask *mask);
/* "not named by CUDA_VISIBLE_DEVICES", ...: a verdict as --explain says it. */
const char *gpurun_mask_verdict_text(enum gpurun_mask_verdict verdict);
/* Whether the inherited masks leave the device to the job: allowed, or a MIG-enabled GPU (never
 * chosen itself: its instances are). */
bool gpurun_mask_leaves(const struct gpurun_mask *mask, size_t position);

/* Whether CUDA's default order (fastest first) may number the NVIDIA GPUs otherwise than
 * nvidia-smi does: their models differ, or a name is unknown. */
bool gpurun_cuda_order_may_differ(const struct gpurun_snapshot *snapshot);

/* Marks in allowed[] (one per snapshot device) the devices an inherited CUDA_VISIBLE_DEVICES
 * value permits, integers in PCI order. NULL value: every device that can be chosen (not a
 * MIG-enabled GPU, whose instances are chosen instead); empty value: none. */
int gpurun_visible_mask(const struct gpurun_snapshot *snapshot, const char *cuda_visible_devices,
			bool *allowed, struct gpurun_error *err);

/* CUDA shows a process at most one MIG instance, and no whole GPU beside it, so one hand-off
 * is whole GPUs or a single MIG instance. Moves the whole GPUs among candidates[] to the front
 * (both groups keep their order) and returns how many there are. */
size_t gpurun_visible_whole_first(const struct gpurun_snapshot *snapshot, size_t *candidates,
				  size_t count);

/* Narrows allowed[] to the AMD devices an inherited ROCR_VISIBLE_DEVICES value permits (indices
 * in AMD numbering, or GPU-<unique id> UUIDs; the first entry naming no GPU ends the list, and
 * an empty value permits none): it never allows a device another rule left out (a Slurm
 * allocation). NULL value: no narrowing. Other vendors' entries are left as they are. */
void gpurun_rocr_visible_mask(const struct gpurun_snapshot *snapshot,
			      const char *rocr_visible_devices, bool *allowed);

/* ---- selection ---------------------------------------------------------------------------- */

/* --exclude names it, by the table's index or by UUID. */
bool gpurun_device_excluded(const struct gpurun_device *device,
			    const struct gpurun_request *request);
/* Whether the request could ever take the device, whatever its load, memory and lease: not a
 * MIG-enabled GPU, not a MIG instance without a UUID, not excluded. */
bool gpurun_device_eligible(const struct gpurun_device *device,
			    const struct gpurun_request *request);
/* GPUtil's getAvailability for one device, plus gpurun's extensions (exclusion by UUID,
 * lost devices, leases held by others). */
bool gpurun_device_available(const struct gpurun_device *device,
			     const struct gpurun_request *request);
/* Why a device is not available ("load 85% is not below 50%"), written into buffer (which may
 * be NULL); returns 0 when it is available, 1 when it is not. gpurun_device_available is this. */
int gpurun_unavailable_reason(const struct gpurun_device *device,
			      const struct gpurun_request *request, char *buffer, size_t size);
/* Writes into candidates[] the positions (into snapshot->devices) of every available device
 * that `allowed` permits (NULL: all), in the requested order; returns how many. candidates
 * must have room for snapshot->count entries. */
size_t gpurun_select(const struct gpurun_snapshot *snapshot, const bool *allowed,
		     const struct gpurun_request *request, size_t *candidates);

/* One hand-off names one vendor's GPUs: NVIDIA's where the inherited masks (NULL: none; see
 * gpurun_mask_leaves) and --exclude leave any NVIDIA GPU at all, busy or not; else AMD's. */
enum gpurun_vendor gpurun_job_vendor(const struct gpurun_snapshot *snapshot,
				      const struct gpurun_mask *mask,
				      const struct gpurun_request *request);
/* Keeps in candidates[] (as gpurun_select ordered them) only the devices of the job's vendor.
 * Returns how many are left. */
size_t gpurun_select_vendor(const struct gpurun_snapshot *snapshot, const struct gpurun_mask *mask,
			    const struct gpurun_request *request, size_t *candidates, size_t count);

/* ---- leases ------------------------------------------------------------------------------- */

#define GPURUN_DEFAULT_LOCK_DIR "/tmp/gpurun"

struct gpurun_lease {
	int *fds;                       /* one open, locked lock file per leased device */
	size_t count;
};

/* The lock directory to use: request->lock_dir, else $GPURUN_LOCK_DIR, else the default. */
const char *gpurun_lock_dir(const struct gpurun_request *request);
/* Opens the lock directory, creating it when missing (mode 1777 whatever the umask). Refuses a
 * symlink, a non-directory, a world-writable directory without the sticky bit and one this user
 * cannot write, with a message naming the path and the fix (status GPURUN_EXIT_LOCK_DIR). */
int gpurun_lock_dir_open(const char *lock_dir, int *dir_fd, struct gpurun_error *err);
/* Tries to lease one device without blocking (it waits out, for a few milliseconds at most,
 * an observer's instant look). Returns 0 and the locked descriptor (close-on-exec) in *fd, 1
 * when another holder has it, or an error status (a symlink or a non-regular file where the
 * lock file should be). */
int gpurun_lease_try(int dir_fd, const char *lock_dir, const struct gpurun_device *device,
		     int *fd, struct gpurun_error *err);
/* Looks whether a device is leased without claiming it, so that it never makes a claimant
 * skip a free GPU, and without creating its lock file: 0 when free, 1 when leased, or an
 * error status as gpurun_lease_try. For an answer nobody will hold (gpurun --print). */
int gpurun_lease_observe(int dir_fd, const char *lock_dir, const struct gpurun_device *device,
			 struct gpurun_error *err);
/* Records the holder (this process, about to run `command`; NULL: this process's own command
 * line) in a leased lock file. Best effort: a lease without a record is still a lease. */
void gpurun_lease_write_holder(int fd, char *const *command, int command_count);
/* Makes the leases the process's own for good: they are kept across exec (FD_CLOEXEC cleared)
 * and by children forked from now on. Until then a child forked by another thread closes its
 * copies, as it does those of an acquisition still in progress. */
void gpurun_lease_keep_across_exec(const struct gpurun_lease *lease);
/* The same, with publish(context) run in the same step as far as a fork by another thread is
 * concerned: a child forked meanwhile has both the leases and what publish made (the
 * environment that says the choice is made), or neither. publish may take a lock that the
 * caller's own fork handlers take, if those were registered before the first gpurun_acquire:
 * a fork then takes libgpurun's lock first too. */
void gpurun_lease_keep_and_publish(const struct gpurun_lease *lease, void (*publish)(void *),
				   void *context);
void gpurun_lease_release(struct gpurun_lease *lease);
/* Fills leased/holder for every device whose lock is held by a live holder. Never blocks;
 * a record whose lock is not held is stale and ignored. A device already marked leased is
 * left alone: mark the caller's own leases so, as looking at one with a lock of its own would
 * drop it where flock is emulated with POSIX locks (NFS). */
void gpurun_lease_inspect(const char *lock_dir, struct gpurun_snapshot *snapshot);
/* Parses a holder record (the lock file's text); 0 when it has at least a pid. */
int gpurun_holder_parse(const char *text, size_t length, struct gpurun_holder *holder);

/* ---- acquisition: probe → mask → select → lease, with attempts/interval/timeout ---------- */

/* What one look at the machine found, for progress lines. */
struct gpurun_progress {
	unsigned attempt;               /* counted attempts so far */
	unsigned attempts;              /* GPURUN_ATTEMPTS_UNLIMITED when waiting without limit */
	size_t wanted;                  /* min_count */
	size_t available;               /* available by the thresholds (leased or not) */
	size_t leased_by_others;        /* available but leased by another job */
	size_t busy;                    /* in the mask but not available by the thresholds */
	size_t waiting_ahead;           /* older waiters for the same GPUs (0: our turn) */
	bool measured;                  /* this look counted the GPUs (not when behind others) */
	size_t mig_left_out;            /* available MIG instances a multi-GPU job cannot use */
	double elapsed_s;
	bool final;                     /* the last look: success or giving up */
};

typedef void gpurun_progress_fn(const struct gpurun_progress *progress, void *context);

struct gpurun_choice {
	struct gpurun_snapshot snapshot; /* the snapshot the choice was made from */
	size_t *chosen;                 /* positions into snapshot.devices, in hand-off order */
	size_t count;
	struct gpurun_lease lease;
	unsigned attempts_made;
	struct gpurun_progress last;    /* the last look, also when acquisition failed */
	struct gpurun_mask mask;        /* what the inherited variables allowed, and why */
	/* The inotify descriptor a successful wait watched with, or -1. Closing one that had
	 * watches waits for the kernel to retire them (an SRCU grace period: 5 to 20 ms on a busy
	 * machine), time a job would lose between its GPU coming free and its start; so it is
	 * left open here, for gpurun_choice_free or gpurun_choice_close_watch_detached. */
	int watch_fd;
};

/* Runs the attempt loop. Returns 0 with a choice, GPURUN_EXIT_BUSY when not enough devices
 * were available after every attempt, or another error status. progress may be NULL. */
int gpurun_acquire(const struct gpurun_request *request, gpurun_progress_fn *progress,
		   void *progress_context, struct gpurun_choice *choice, struct gpurun_error *err);
/* For a child forked while another thread of its parent is in gpurun_acquire: closes the
 * child's copies of that acquisition's descriptors (its place in line, its claims), which
 * would otherwise outlive the parent. Only close(): safe in a pthread_atfork child handler.
 * gpurun_acquire sets such a handler itself at its first call; calling this again is
 * harmless. */
void gpurun_acquire_forget_in_child(void);
/* True when --cpu-fallback turns this gpurun_acquire failure into a run on the CPU: the GPUs
 * are busy, or there is no GPU at all (the same script on a laptop and on a GPU node). */
bool gpurun_cpu_fallback_applies(int status);
/* Releases a choice's leases and frees it; also after a failed gpurun_acquire. */
void gpurun_choice_free(struct gpurun_choice *choice);

/* ---- the hand-off (handoff.c) ---------------------------------------------------------- */

/* Writes the CUDA_VISIBLE_DEVICES value for the choice (indices, or UUIDs with --uuid; indices
 * for every GPU when one has no readable UUID, since CUDA ends a list at its first entry of the
 * other kind). Returns 0, or -1 when it does not fit. */
int gpurun_choice_format(const struct gpurun_choice *choice, const struct gpurun_request *request,
			 char *buffer, size_t size);
/* Whether `visible` (gpurun_choice_format's) names a CUDA device by index, which means the GPU
 * nvidia-smi shows only under CUDA_DEVICE_ORDER=PCI_BUS_ID. */
bool gpurun_choice_needs_pci_order(const struct gpurun_choice *choice, const char *visible);
/* Puts a choice into this process's environment for the program about to run: the vendor's
 * variable (gpurun_choice_variable) gets `visible`, CUDA_DEVICE_ORDER=PCI_BUS_ID is set when
 * gpurun_choice_needs_pci_order says so, and GPURUN_CHOSEN tells descendants the choice is
 * made. An AMD hand-off unsets HIP's own
 * lists (HIP_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL), which would index into
 * the chosen GPUs and filter them again. A choice of no device (--cpu-fallback) gives the
 * program no GPU of any vendor the snapshot has. Returns 0, or -1 with errno. One hand-off for
 * the launcher and the preload library. */
int gpurun_choice_export(const struct gpurun_choice *choice, const char *visible);
/* The variable that carries an inherited choice: CUDA_VISIBLE_DEVICES when it is set (or when
 * neither is), else ROCR_VISIBLE_DEVICES (an AMD hand-off unsets CUDA_VISIBLE_DEVICES). */
const char *gpurun_choice_carrier(void);
/* The GPUs an ancestor's hand-off gave this process, as the variable that carries them
 * (gpurun_choice_carrier) says now; "" for a --cpu-fallback job. NULL when no choice is in
 * effect: GPURUN_CHOSEN is unset, or that variable names a GPU it does not list. That is a
 * stale GPURUN_CHOSEN, for example in a Slurm job submitted from a shell that gpurun started
 * (sbatch copies the environment, then sets CUDA_VISIBLE_DEVICES to the allocation). A part of
 * the choice is still the choice: a program may hand its GPUs out among its workers. */
const char *gpurun_inherited_choice(void);
/* For a caller about to exec: closes watch_fd in a short-lived grandchild (it forks twice),
 * which pays for the close while the program starts, and leaves no child behind for it. */
void gpurun_choice_close_watch_detached(struct gpurun_choice *choice);
/* The variable the choice is handed off in: "ROCR_VISIBLE_DEVICES" for AMD GPUs (never
 * HIP_VISIBLE_DEVICES, which indexes into what ROCr left), else "CUDA_VISIBLE_DEVICES". */
const char *gpurun_choice_variable(const struct gpurun_choice *choice);

/* ---- reports ------------------------------------------------------------------------------ */

/* GPUtil.showUtilization() byte for byte; all = showUtilization(all=True). */
int gpurun_report_table(FILE *out, const struct gpurun_snapshot *snapshot, bool all);
/* What a table shows beyond GPUtil's. All false is GPUtil's table, byte for byte. */
struct gpurun_table_options {
	bool all;                       /* GPUtil's full table */
	bool wide;                      /* then vendor, PCI bus id and power columns */
	bool processes;                 /* each GPU's processes and lease holder under its row */
};
int gpurun_report_table_with(FILE *out, const struct gpurun_snapshot *snapshot,
			     const struct gpurun_table_options *options);
/* One JSON object: {hostname, driver_version, query_time, gpus: [...]}, gpustat's keys. */
int gpurun_report_json(FILE *out, const struct gpurun_snapshot *snapshot, const char *hostname,
		       double query_time);

#ifdef __cplusplus
}
#endif

#endif
