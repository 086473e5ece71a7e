/* gpurun: the command-line front end. argv → request → acquire → exec the program (or print
 * the choice, or show the machine). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "gpurun.h"
#include "show.h"

#define PRELOAD_NAME "libgpurun-preload.so"

static const char usage_text[] =
	"usage: gpurun [options] [--] command [args...]   choose GPUs, lease them, run command\n"
	"       gpurun --print [options]                  print the choice (holds no lease)\n"
	"       gpurun --show [--all] [--json]            show the GPUs (GPUtil's table)\n"
	"       gpurun --show --processes --watch [S]     who uses them, refreshed every S seconds\n"
	"\n"
	"selection (GPUtil's rules):\n"
	"  --limit N|all        how many GPUs (default 1)\n"
	"  --min-count M        accept as few as M when N cannot be had (default N)\n"
	"  --max-load F         available when load < F (0.5, or 50%; default 0.5)\n"
	"  --max-memory F       available when memory used/total < F (default 0.5)\n"
	"  --min-free SIZE      available when free memory >= SIZE (MiB, or 20G, 512MiB)\n"
	"  --include-nan        an unknown load or memory use does not disqualify\n"
	"  --exclude LIST       never these GPUs (indices and/or UUIDs, comma separated)\n"
	"  --order ORDER        first, last, random, load, memory, free (default first)\n"
	"  --seed N             seed for --order random\n"
	"waiting:\n"
	"  --attempts N         look N times (default 1)\n"
	"  --interval DURATION  between attempts (default 10s; 90s, 15m, 2h)\n"
	"  --wait               look until GPUs are free (a released lease wakes at once)\n"
	"  --timeout DURATION   give up after DURATION (implies --wait)\n"
	"hand-off:\n"
	"  --uuid               CUDA_VISIBLE_DEVICES gets UUIDs instead of indices\n"
	"  --cpu-fallback       run with CUDA_VISIBLE_DEVICES= instead of failing\n"
	"  --no-lease           do not reserve the GPUs (share them on purpose)\n"
	"  --lock-dir PATH      where leases live (default $GPURUN_LOCK_DIR or /tmp/gpurun)\n"
	"  --lazy               choose when the program initializes CUDA (preload library)\n"
	"  --preload-lib PATH   the preload library to use with --lazy\n"
	"data source:\n"
	"  --source SOURCE      auto, nvml, nvidia-smi or amdgpu (default auto: NVML, else\n"
	"                       nvidia-smi, plus AMD GPUs from amdgpu's sysfs files)\n"
	"  --vendor VENDOR      nvidia, amd or any: only that vendor's GPUs (default any)\n"
	"  --smi-timeout DURATION  kill a hung nvidia-smi after this (default 10s)\n"
	"reports:\n"
	"  --print              print the chosen list and exit; it reserves nothing, so prefer\n"
	"                       `gpurun [options] command` to keep the GPUs reserved\n"
	"  --show, --all, --json   the utilization table, GPUtil's full table, or JSON\n"
	"  --processes          with --show: each GPU's processes (pid, user, MiB, command) and lease\n"
	"  --wide               with --show: vendor, PCI bus id and power columns too\n"
	"  --watch [SECONDS]    with --show: redraw every SECONDS (default 2) until Ctrl-C\n"
	"  -v, --verbose        progress on every attempt\n"
	"  --explain            why each GPU was or was not chosen\n"
	"  -h, --help           this text;   -V, --version   the version\n"
	"\n"
	"exit status: the command's own; 2 bad usage; 69 no GPU information; 70 internal error;\n"
	"75 not enough GPUs available; 77 lock directory unusable; 126 command not executable;\n"
	"127 command not found.\n"
	"See gpurun(1).\n";

static int fail_with(const struct gpurun_error *err)
{
	fprintf(stderr, "gpurun: %s\n", err->message);
	return err->status;
}

/* ---- progress while waiting ------------------------------------------------------------- */

struct status_line {
	bool terminal;                  /* stderr is a TTY: one self-updating line */
	bool verbose;                   /* a log: one line per attempt */
	bool drawn;
	unsigned logged_attempt;
};

static void format_attempts(const struct gpurun_progress *progress, char *text, size_t size)
{
	if (progress->attempts == GPURUN_ATTEMPTS_UNLIMITED)
		snprintf(text, size, "%u", progress->attempt);
	else
		snprintf(text, size, "%u/%u", progress->attempt, progress->attempts);
}

/* What one look found. A waiter behind others did not look at the GPUs: it says so. */
static void describe_look(const struct gpurun_progress *progress, char *text, size_t size)
{
	if (!progress->measured)
		snprintf(text, size, "%zu waiting ahead for the same GPUs", progress->waiting_ahead);
	else
		snprintf(text, size, "wanted %zu GPU%s, %zu available (%zu leased by others, "
			 "%zu busy, %zu waiting ahead)", progress->wanted,
			 progress->wanted == 1 ? "" : "s",
			 progress->available - progress->leased_by_others,
			 progress->leased_by_others, progress->busy, progress->waiting_ahead);
}

/* On a terminal one line that redraws itself, gone at the end; in a log (-v) a line per
 * attempt, the last one too. */
static void show_progress(const struct gpurun_progress *progress, void *context)
{
	struct status_line *line = context;
	char attempts[32], look[256];

	format_attempts(progress, attempts, sizeof(attempts));
	describe_look(progress, look, sizeof(look));
	if (line->terminal && progress->final) {
		if (line->drawn)
			fputs("\r\033[K", stderr);
	} else if (line->terminal) {
		fprintf(stderr, "\r\033[Kgpurun: waiting: %s, %.0fs elapsed (attempt %s)", look,
			progress->elapsed_s, attempts);
		line->drawn = true;
	} else if (line->verbose && progress->attempt != line->logged_attempt) {
		fprintf(stderr, "gpurun: attempt %s: %s\n", attempts, look);
		line->logged_attempt = progress->attempt;
	}
	fflush(stderr);
}

/* ---- --explain ---------------------------------------------------------------------------- */

static bool is_chosen(const struct gpurun_choice *choice, size_t position)
{
	for (size_t i = 0; i < choice->count; i++)
		if (choice->chosen[i] == position)
			return true;
	return false;
}

/* Why a device the masks allow was not chosen. */
static void availability(const struct gpurun_request *request, const struct gpurun_choice *choice,
			 const struct gpurun_device *device, char *reason, size_t size)
{
	if (gpurun_unavailable_reason(device, request, reason, size) != 0)
		return;
	if (device->mig_parent >= 0 && choice->last.mig_left_out > 0)
		snprintf(reason, size, "available, but a job that needs several GPUs gets whole GPUs: "
			 "CUDA shows a process only one MIG instance");
	else if (choice->count > 0)
		snprintf(reason, size, "available, not needed");
	else if (!choice->last.measured || choice->last.waiting_ahead > 0)
		snprintf(reason, size, "available, but %zu waiting ahead for the same GPUs come first",
			 choice->last.waiting_ahead);
	else
		snprintf(reason, size, "available, but too few GPUs were (all or nothing)");
}

static void explain(const struct gpurun_request *request, struct gpurun_choice *choice)
{
	struct gpurun_snapshot *snapshot = &choice->snapshot;
	const struct gpurun_mask *mask = &choice->mask;
	bool applied = mask->allowed && mask->count == snapshot->count;

	if (!mask->rules[0])
		fprintf(stderr, "gpurun: mask: not applied: gpurun did not get to look at the GPUs\n");
	for (const char *line = mask->rules; *line;) {
		size_t length = strcspn(line, "\n");

		fprintf(stderr, "gpurun: mask: %.*s\n", (int)length, line);
		line += length + (line[length] == '\n');
	}
	/* Our own leases are marked, not looked at: on NFS a look (a lock and an unlock by this
	 * process) would drop them (gpurun_lease_inspect). */
	for (size_t i = 0; i < choice->count; i++)
		snapshot->devices[choice->chosen[i]].leased = choice->lease.count > 0;
	if (!request->no_lease)
		gpurun_lease_inspect(gpurun_lock_dir(request), snapshot);
	enum gpurun_vendor vendor = gpurun_job_vendor(snapshot, applied ? mask : NULL, request);
	for (size_t i = 0; i < snapshot->count; i++) {
		const struct gpurun_device *device = &snapshot->devices[i];
		enum gpurun_mask_verdict verdict = applied ? mask->verdicts[i] : GPURUN_MASK_ALLOWED;
		char reason[256], label[64];

		if (is_chosen(choice, i))
			snprintf(reason, sizeof(reason), "chosen");
		else if (verdict != GPURUN_MASK_ALLOWED)
			snprintf(reason, sizeof(reason), "%s", gpurun_mask_verdict_text(verdict));
		else if (!applied)
			snprintf(reason, sizeof(reason), "not looked at: the masks were not applied");
		else if (device->vendor != vendor)
			snprintf(reason, sizeof(reason), "%s GPU: this job gets %s GPUs%s",
				 vendor == GPURUN_VENDOR_NVIDIA ? "an AMD" : "an NVIDIA",
				 vendor == GPURUN_VENDOR_NVIDIA ? "NVIDIA" : "AMD",
				 vendor == GPURUN_VENDOR_NVIDIA ? " (--vendor amd for a ROCm job)" : "");
		else
			availability(request, choice, device, reason, sizeof(reason));
		gpurun_device_label(device, label, sizeof(label));
		fprintf(stderr, "gpurun: %s (%s): %s\n", label, device->uuid, reason);
	}
}

/* ---- the three actions (--show: show.c) ---------------------------------------------------- */

static int exec_command(const struct gpurun_request *request)
{
	execvp(request->command[0], request->command);
	int cause = errno;
	fprintf(stderr, "gpurun: cannot run '%s': %s\n", request->command[0], strerror(cause));
	return cause == ENOENT || cause == ENOTDIR ? GPURUN_EXIT_NOT_FOUND : GPURUN_EXIT_CANNOT_EXEC;
}

/* Hands the choice to the program through its environment, then becomes the program. */
static int hand_off(const struct gpurun_request *request, struct gpurun_choice *choice,
		    const char *visible)
{
	if (gpurun_choice_export(choice, visible) != 0) {
		fprintf(stderr, "gpurun: cannot set the environment: %s\n", strerror(errno));
		return GPURUN_EXIT_SOFTWARE;
	}
	gpurun_lease_keep_across_exec(&choice->lease);
	gpurun_choice_close_watch_detached(choice);
	return exec_command(request);
}

/* What gpurun prints on stdout is the answer itself: one that cannot be written is an error. */
static int flush_output(void)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "gpurun: cannot write to standard output: %s\n", strerror(errno));
		return GPURUN_EXIT_SOFTWARE;
	}
	return 0;
}

/* An index names the GPU nvidia-smi shows only under CUDA_DEVICE_ORDER=PCI_BUS_ID, which the
 * hand-off sets but a printed list cannot carry: where CUDA's own order differs, a caller that
 * does not set it too runs on other GPUs (outside a Slurm allocation, even). */
static void warn_if_indices_need_pci_order(const struct gpurun_choice *choice, const char *visible)
{
	const char *order = getenv("CUDA_DEVICE_ORDER");

	if (!gpurun_choice_needs_pci_order(choice, visible) ||
	    (order && strcmp(order, "PCI_BUS_ID") == 0) ||
	    !gpurun_cuda_order_may_differ(&choice->snapshot))
		return;
	fprintf(stderr, "gpurun: --print gives nvidia-smi's indices (%s): CUDA numbers this "
			"machine's GPUs otherwise unless the program gets CUDA_DEVICE_ORDER=PCI_BUS_ID "
			"too (or use --uuid)\n", visible);
}

static int choose(const struct gpurun_request *request)
{
	struct status_line line = { .terminal = isatty(STDERR_FILENO) && !request->verbose,
				    .verbose = request->verbose };
	struct gpurun_choice choice;
	struct gpurun_error err;
	char visible[8192];

	int status = gpurun_acquire(request, show_progress, &line, &choice, &err);
	if (choice.mask.warning[0])
		fprintf(stderr, "gpurun: %s\n", choice.mask.warning);
	if ((request->explain || request->verbose) && (status == 0 || status == GPURUN_EXIT_BUSY))
		explain(request, &choice);
	if (request->cpu_fallback && gpurun_cpu_fallback_applies(status)) {
		fprintf(stderr, "gpurun: %s; running on the CPU (--cpu-fallback)\n", err.message);
		if (request->action == GPURUN_ACTION_PRINT) {
			gpurun_choice_free(&choice);
			puts("");
			return flush_output();
		}
		gpurun_lease_release(&choice.lease);
		choice.count = 0;
		status = hand_off(request, &choice, "");
		gpurun_choice_free(&choice);
		return status;
	}
	if (status != 0) {
		gpurun_choice_free(&choice);
		return fail_with(&err);
	}
	if (gpurun_choice_format(&choice, request, visible, sizeof(visible)) != 0) {
		gpurun_choice_free(&choice);
		fprintf(stderr, "gpurun: the chosen list does not fit in CUDA_VISIBLE_DEVICES\n");
		return GPURUN_EXIT_SOFTWARE;
	}
	if (request->verbose)
		fprintf(stderr, "gpurun: chose %s after %u attempt%s\n", visible, choice.attempts_made,
			choice.attempts_made == 1 ? "" : "s");
	if (request->action == GPURUN_ACTION_PRINT) {
		warn_if_indices_need_pci_order(&choice, visible);
		puts(visible);
		gpurun_choice_free(&choice);
		return flush_output();
	}
	/* Back here only when the command could not be run. */
	status = hand_off(request, &choice, visible);
	gpurun_choice_free(&choice);
	return status;
}

/* ---- --lazy: let the preload library choose inside the program ------------------------- */

/* Writes directory/name into path; true when it fits and names a readable file. */
static bool readable_file_at(char *path, size_t size, const char *directory, const char *name)
{
	int length = snprintf(path, size, "%s/%s", directory, name);

	return length > 0 && (size_t)length < size && access(path, R_OK) == 0;
}

/* Next to this binary (a build tree or bin/ beside lib/), then the install tree; never ".". */
static bool find_preload_library(char *path, size_t size)
{
	char self[PATH_MAX];
	ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (length > 0) {
		self[length] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			if (readable_file_at(path, size, self, PRELOAD_NAME) ||
			    readable_file_at(path, size, self, "../lib/" PRELOAD_NAME))
				return true;
		}
	}
	return readable_file_at(path, size, GPURUN_LIBDIR, PRELOAD_NAME);
}

/* Appends one word to an option string, escaped for its parser; false when it does not fit. */
static bool append_word(char *text, size_t size, size_t *used, const char *word)
{
	if (*used && *used + 1 < size)
		text[(*used)++] = ' ';
	for (const char *c = word; *c; c++) {
		bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			     (*c >= '0' && *c <= '9') || strchr("-_=.,:/%+", *c);
		if (*used + 3 >= size)
			return false;
		if (!plain)
			text[(*used)++] = '\\';
		text[(*used)++] = *c;
	}
	text[*used] = '\0';
	return true;
}

/* The library resolves the lock directory when the program starts CUDA, perhaps after it has
 * changed directory: a relative one is made absolute now, or two jobs started in two places
 * would lease in two directories and could share a GPU. Writes "" for an absolute one. */
static int absolute_lock_dir(const struct gpurun_request *request, char *absolute, size_t size)
{
	const char *lock_dir = gpurun_lock_dir(request);
	char here[PATH_MAX];

	absolute[0] = '\0';
	if (lock_dir[0] == '/')
		return 0;
	if (!getcwd(here, sizeof(here))) {
		fprintf(stderr, "gpurun: --lazy: cannot make the lock directory '%s' absolute: %s\n",
			lock_dir, strerror(errno));
		return GPURUN_EXIT_USAGE;
	}
	snprintf(absolute, size, "%s/%s", here, lock_dir);
	return 0;
}

/* GPURUN_OPTIONS gets the selection options exactly as given, each word escaped for the
 * option-string parser, then the lock directory made absolute (the parser keeps the last);
 * --preload-lib is the launcher's own business. */
static int build_options(int option_count, char **options, const char *lock_dir, char *text,
			 size_t size)
{
	size_t used = 0;

	text[0] = '\0';
	for (int i = 0; i < option_count; i++) {
		if (strcmp(options[i], "--preload-lib") == 0) {
			i++;
			continue;
		}
		if (strncmp(options[i], "--preload-lib=", 14) == 0 || strcmp(options[i], "--") == 0)
			continue;
		if (!append_word(text, size, &used, options[i]))
			return -1;
	}
	if (lock_dir[0] && (!append_word(text, size, &used, "--lock-dir") ||
			    !append_word(text, size, &used, lock_dir)))
		return -1;
	return 0;
}

/* The ELF header of an open file, or false. */
static bool read_elf_header(int fd, ElfW(Ehdr) *header)
{
	return pread(fd, header, sizeof(*header), 0) == (ssize_t)sizeof(*header) &&
	       memcmp(header->e_ident, ELFMAG, SELFMAG) == 0;
}

/* Whether the loader could preload the file into a program like this one: a shared object
 * (ET_DYN) of this process's class and machine, and no executable (which, PIE or not, names
 * an interpreter). */
static bool is_preloadable(const char *path)
{
	ElfW(Ehdr) ours, theirs;
	ElfW(Phdr) segment;
	struct stat st;
	int self = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool preloadable = self >= 0 && read_elf_header(self, &ours) && fd >= 0 &&
			   fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
			   read_elf_header(fd, &theirs) && theirs.e_type == ET_DYN &&
			   theirs.e_ident[EI_CLASS] == ours.e_ident[EI_CLASS] &&
			   theirs.e_machine == ours.e_machine;

	for (unsigned i = 0; preloadable && i < theirs.e_phnum; i++)
		preloadable = pread(fd, &segment, sizeof(segment),
				    (off_t)(theirs.e_phoff + (ElfW(Off))i * theirs.e_phentsize)) ==
				      (ssize_t)sizeof(segment) &&
			      segment.p_type != PT_INTERP;
	if (self >= 0)
		close(self);
	if (fd >= 0)
		close(fd);
	return preloadable;
}

static int run_lazy(const struct gpurun_request *request, int option_count, char **options)
{
	char library[PATH_MAX];
	char gpurun_options[8192];
	const char *inherited = getenv("LD_PRELOAD");

	if (request->preload_lib)
		snprintf(library, sizeof(library), "%s", request->preload_lib);
	else if (!find_preload_library(library, sizeof(library))) {
		fprintf(stderr, "gpurun: --lazy: cannot find %s next to gpurun or in %s "
			"(use --preload-lib PATH)\n", PRELOAD_NAME, GPURUN_LIBDIR);
		return GPURUN_EXIT_SOFTWARE;
	}
	/* LD_PRELOAD reaches children that may change directory, and splits on spaces and colons. */
	char absolute[PATH_MAX];
	if (!realpath(library, absolute) || access(absolute, R_OK) != 0) {
		fprintf(stderr, "gpurun: --preload-lib: cannot read %s: %s\n", library, strerror(errno));
		return GPURUN_EXIT_USAGE;
	}
	/* The loader would only warn, and the program would run with nothing chosen. */
	if (!is_preloadable(absolute)) {
		fprintf(stderr, "gpurun: --preload-lib: %s is not a shared library this machine can "
			"preload\n", absolute);
		return GPURUN_EXIT_USAGE;
	}
	if (strpbrk(absolute, ": ")) {
		fprintf(stderr, "gpurun: --lazy: LD_PRELOAD cannot hold a path with a space or a colon: "
			"%s\n", absolute);
		return GPURUN_EXIT_USAGE;
	}
	char lock_dir[PATH_MAX * 2];
	int status = absolute_lock_dir(request, lock_dir, sizeof(lock_dir));
	if (status != 0)
		return status;
	if (build_options(option_count, options, lock_dir, gpurun_options,
			  sizeof(gpurun_options)) != 0) {
		fprintf(stderr, "gpurun: --lazy: the options are too long for GPURUN_OPTIONS\n");
		return GPURUN_EXIT_USAGE;
	}
	/* Ours first, then whatever was preloaded already, whole however long it is. */
	size_t size = strlen(absolute) + (inherited ? strlen(inherited) + 1 : 0) + 1;
	char *preload = malloc(size);
	if (preload)
		snprintf(preload, size, "%s%s%s", absolute, inherited && *inherited ? ":" : "",
			 inherited ? inherited : "");
	if (!preload || setenv("LD_PRELOAD", preload, 1) != 0 ||
	    setenv("GPURUN_OPTIONS", gpurun_options, 1) != 0) {
		fprintf(stderr, "gpurun: cannot set the environment: %s\n", strerror(errno));
		free(preload);
		return GPURUN_EXIT_SOFTWARE;
	}
	free(preload);          /* setenv copied it */
	return exec_command(request);
}

/* A gpurun inside a job that gpurun (or the preload library) started: the job's GPUs are
 * chosen and leased already, and choosing again would wait on the job's own lease. */
static int keep_the_choice(const struct gpurun_request *request, const char *chosen)
{
	if (request->verbose || request->explain)
		fprintf(stderr, "gpurun: GPURUN_CHOSEN=%s: this job's GPUs are chosen already, so "
				"nothing is chosen (unset GPURUN_CHOSEN to choose anew)\n",
			getenv("GPURUN_CHOSEN"));
	if (request->action == GPURUN_ACTION_PRINT) {
		puts(chosen);
		return flush_output();
	}
	return exec_command(request);
}

/* Returns only when no command was exec'd: the exit status. */
static int act(const struct gpurun_request *request, char **argv)
{
	bool chooses = request->action == GPURUN_ACTION_PRINT || request->action == GPURUN_ACTION_RUN;
	const char *chosen = gpurun_inherited_choice();

	/* Empty, it says a --cpu-fallback job got no GPU: that holds no lease to wait on, and a
	 * nested gpurun chooses (or falls back, or fails) by its own options. */
	if (chooses && chosen && *chosen)
		return keep_the_choice(request, chosen);
	/* Stale: the variable that carries the choice names other GPUs since, as Slurm's
	 * CUDA_VISIBLE_DEVICES does in a job submitted from a shell that gpurun started. */
	if (chooses && !chosen && getenv("GPURUN_CHOSEN") && (request->verbose || request->explain)) {
		const char *carrier = gpurun_choice_carrier();
		const char *visible = getenv(carrier);

		fprintf(stderr, "gpurun: GPURUN_CHOSEN=%s is stale: %s%s%s is not that choice, so "
				"gpurun chooses anew\n", getenv("GPURUN_CHOSEN"), carrier,
			visible ? "=" : " is unset and", visible ? visible : "");
	}
	switch (request->action) {
	case GPURUN_ACTION_HELP:
		fputs(usage_text, stdout);
		return flush_output();
	case GPURUN_ACTION_VERSION:
		puts("gpurun " GPURUN_VERSION);
		return flush_output();
	case GPURUN_ACTION_SHOW:
		return show_machine(request);
	case GPURUN_ACTION_PRINT:
		return choose(request);
	case GPURUN_ACTION_RUN:
		if (request->lazy) {
			int option_count = (int)(request->command - argv) - 1;
			return run_lazy(request, option_count, argv + 1);
		}
		return choose(request);
	}
	return GPURUN_EXIT_SOFTWARE;
}

/* A standard descriptor that whoever started gpurun left closed would go to the next file
 * gpurun opens: a lock directory on fd 2 would take gpurun's messages, a pipe to nvidia-smi
 * could land on its own child's stdout. /dev/null holds each such place until the exec, which
 * closes it again (close-on-exec): the program starts with what it was given. Read-only, so
 * that writing to a closed stdout still fails (--print into nothing is exit 70). */
static void hold_closed_standard_descriptors(void)
{
	for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++) {
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		int held = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (held >= 0 && held != fd)
			close(held);
	}
}

int main(int argc, char **argv)
{
	struct gpurun_request request;
	struct gpurun_error err;
	int status;

	hold_closed_standard_descriptors();
	gpurun_request_init(&request);
	if (gpurun_request_parse(&request, argc, argv, &err) != 0)
		status = fail_with(&err);
	else
		status = act(&request, argv);
	/* Freed so that leak checkers (make SANITIZE=1 / VALGRIND=1 check) see only real leaks. */
	gpurun_request_free(&request);
	return status;
}
