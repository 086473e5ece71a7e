/* libgpurun-preload.so: gpurun's choice made inside an unmodified program, as GPURUN_OPTIONS asks:
 * before main (eager), or at the moment the program starts CUDA (--lazy). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "gpurun.h"

/* This file is compiled with -fvisibility=hidden: only what is marked HOOK leaves the library. */
#define HOOK __attribute__((visibility("default")))

typedef int CUresult;
typedef CUresult cuinit_fn(unsigned int flags);
typedef CUresult get_proc_address_fn(const char *symbol, void **pfn, int cuda_version,
				     uint64_t flags);
typedef CUresult get_proc_address_v2_fn(const char *symbol, void **pfn, int cuda_version,
					uint64_t flags, int *symbol_status);
typedef void *dlopen_fn(const char *file, int mode);

/* The hooks below stand in for a driver that may not be there: without one they answer what
 * the toolkit's stub libcuda.so answers to everything. */
enum { CUDA_ERROR_STUB_LIBRARY = 34 };

HOOK CUresult cuInit(unsigned int flags);
HOOK CUresult cuGetProcAddress(const char *symbol, void **pfn, int cuda_version, uint64_t flags);
HOOK CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, uint64_t flags,
				  int *symbol_status);
/* Called by the dlopen hook below (assembly), hence not static; never exported. */
void *prepare_dlopen(const char *file, int mode) __attribute__((used, visibility("hidden")));

/* ---- talking to the user: one line on stderr, no stdio (this may run before main) ---------- */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	char line[1024] = "gpurun: ";            /* room for a struct gpurun_error message */
	size_t used = strlen(line);
	va_list args;

	va_start(args, fmt);
	vsnprintf(line + used, sizeof(line) - used - 1, fmt, args);
	va_end(args);
	used = strlen(line);
	line[used++] = '\n';
	(void)!write(STDERR_FILENO, line, used);
}

/* _exit, not exit: the host's atexit handlers and half-written buffers are not ours to run. */
static void __attribute__((noreturn)) die(int status, const char *message)
{
	say("%s", message);
	_exit(status);
}

/* ---- configuration and the choice ------------------------------------------------------------ */

/* Where this process stands. It moves forward only, except in a fork child, which takes again
 * a step that another thread of its parent was in the middle of. */
enum stage {
	UNSTARTED,      /* GPURUN_OPTIONS not read yet */
	STARTING,       /* reading it */
	WAITING,        /* configured; the choice is still to be made */
	CHOOSING,
	CHOSEN,         /* done: the environment holds the choice, the lease is held */
	INERT,          /* nothing to do, ever: no GPURUN_OPTIONS, an inherited choice, setuid */
};

static pthread_mutex_t stage_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stage_changed = PTHREAD_COND_INITIALIZER;
static enum stage stage = UNSTARTED;    /* written under stage_lock; read atomically outside it */
static pthread_t busy_thread;           /* the thread in STARTING or CHOOSING */
static struct gpurun_request request;   /* valid from WAITING on; written once, with WAITING */
/* The fork handlers are registered once per process, and a child inherits them: a second
 * registration would make prepare_fork lock stage_lock twice. pthread_once serializes threads
 * without a lock that a fork could leave held, and starts over in a child forked while it ran
 * (glibc counts forks); the flag tells such a child whether the handlers were in place already. */
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;
static bool fork_handlers_in_place;

static void prepare_fork(void)
{
	pthread_mutex_lock(&stage_lock);
}

static void after_fork_in_parent(void)
{
	pthread_mutex_unlock(&stage_lock);
}

/* A fork while another thread is configuring or choosing copies a step that no thread in the
 * child will finish: the child takes that step again itself (it has not chosen anything). */
static void after_fork_in_child(void)
{
	fork_handlers_in_place = true;      /* it runs: they are */
	if (!pthread_equal(busy_thread, pthread_self())) {
		if (stage == STARTING)
			stage = UNSTARTED;
		else if (stage == CHOOSING)
			stage = WAITING;
	}
	pthread_cond_init(&stage_changed, NULL);  /* its waiters stayed in the parent */
	pthread_mutex_unlock(&stage_lock);
}

/* Moves the process to `next`; the caller holds stage_lock. A step publishes what it made (the
 * request, the hand-off) in the same hold, so that a fork, which takes stage_lock too, copies
 * both that and the stage that says it is there, or neither. */
static void enter(enum stage next)
{
	__atomic_store_n(&stage, next, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&stage_changed);
}

static void register_fork_handlers(void)
{
	if (!fork_handlers_in_place)
		pthread_atfork(prepare_fork, after_fork_in_parent, after_fork_in_child);
	fork_handlers_in_place = true;
}

/* GPURUN_OPTIONS, when it asks anything of this process; else NULL. Without it the library does
 * nothing at all: no other getenv, no allocation, no output, so that it is safe in
 * /etc/ld.so.preload. */
static const char *options_for_this_process(void)
{
	/* A setuid program must not be steered by the environment of whoever started it. */
	if (getauxval(AT_SECURE))
		return NULL;
	const char *options = getenv("GPURUN_OPTIONS");
	if (!options || !*options)
		return NULL;
	/* An ancestor chose (gpurun, or this library in a parent): this process keeps its GPUs. */
	if (gpurun_inherited_choice())
		return NULL;
	return options;
}

static enum stage configure(void)
{
	struct gpurun_request parsed;
	struct gpurun_error err;
	const char *options = options_for_this_process();

	if (!options)
		return INERT;
	gpurun_request_init(&parsed);
	if (gpurun_request_parse_string(&parsed, options, &err) != 0)
		die(err.status, err.message);
	if (parsed.action != GPURUN_ACTION_RUN)
		die(GPURUN_EXIT_USAGE, "GPURUN_OPTIONS: --print, --show, --help and --version are for "
		    "the gpurun command, not the preload library");
	/* CUDA's initialization asks for NVIDIA GPUs: a lazy choice never hands out an AMD one
	 * (the parser refuses --lazy with --vendor amd; HIP programs never reach the hooks). */
	if (parsed.lazy)
		parsed.vendor = GPURUN_VENDOR_ONLY_NVIDIA;
	pthread_mutex_lock(&stage_lock);
	request = parsed;
	enter(WAITING);
	pthread_mutex_unlock(&stage_lock);
	return WAITING;
}

struct hand_off {
	const struct gpurun_choice *choice;
	const char *visible;
};

/* The environment says the choice is made, and the stage too, in one hold of stage_lock. */
static void hand_off(void *context)
{
	const struct hand_off *hand_off = context;

	pthread_mutex_lock(&stage_lock);
	if (gpurun_choice_export(hand_off->choice, hand_off->visible) != 0)
		die(GPURUN_EXIT_SOFTWARE, "cannot set the environment: out of memory");
	enter(CHOSEN);
	pthread_mutex_unlock(&stage_lock);
}

/* The lease stays with this process for its whole life: its descriptors are never closed, and
 * they lose close-on-exec so that exec'd children hold it too. A child forked by another
 * thread gets the lease and the hand-off together (libgpurun holds its fork lock around both:
 * this library's handlers, registered first, take stage_lock after it), or neither, and then
 * chooses itself. */
static void keep_lease_and_hand_off(struct gpurun_choice *choice, const char *visible)
{
	struct hand_off hand_off_context = { choice, visible };

	gpurun_lease_keep_and_publish(&choice->lease, hand_off, &hand_off_context);
	free(choice->lease.fds);
	choice->lease = (struct gpurun_lease){ 0 };
}

static enum stage choose(void)
{
	struct gpurun_choice choice;
	struct gpurun_error err;
	char visible[8192] = "";

	/* The environment says so when this process has its GPUs already (a fork child of a
	 * process that chose, or a program that handed itself a part of an inherited choice). */
	if (gpurun_inherited_choice())
		return CHOSEN;
	int status = gpurun_acquire(&request, NULL, NULL, &choice, &err);
	if (request.cpu_fallback && gpurun_cpu_fallback_applies(status)) {
		say("%s; running on the CPU (--cpu-fallback)", err.message);
		gpurun_lease_release(&choice.lease);
		choice.count = 0;
	} else if (status != 0) {
		die(status, err.message);
	} else if (gpurun_choice_format(&choice, &request, visible, sizeof(visible)) != 0) {
		die(GPURUN_EXIT_SOFTWARE, "the chosen list does not fit in CUDA_VISIBLE_DEVICES");
	}
	keep_lease_and_hand_off(&choice, visible);
	/* After a wait, closing its inotify watch waits for the kernel (5-20 ms): after the
	 * hand-off, so that no fork waits for it. Not in a grandchild as the launcher does it:
	 * a fork inside the host would run every library's fork handlers and signal the host. */
	gpurun_choice_free(&choice);
	return CHOSEN;
}

/* ---- once per process -------------------------------------------------------------------------- */

/* Takes one step of the process at most once: the first thread that finds the process at stage
 * `from` moves it to `during`, runs `step` without the lock, and moves it to the stage the step
 * returns, unless the step has entered that stage itself (see enter: other threads may have
 * moved on from it since); other threads wait for that. The stepping thread itself may come back
 * here through a hook (the probe loads NVML with dlopen) and then returns at once instead of
 * waiting for itself. */
static void step_once(enum stage from, enum stage during, enum stage (*step)(void))
{
	enum stage now = __atomic_load_n(&stage, __ATOMIC_ACQUIRE);

	if (now != from && now != during)
		return;
	pthread_mutex_lock(&stage_lock);
	while (stage == during && !pthread_equal(busy_thread, pthread_self()))
		pthread_cond_wait(&stage_changed, &stage_lock);
	if (stage == from) {
		__atomic_store_n(&stage, during, __ATOMIC_RELEASE);
		busy_thread = pthread_self();
		pthread_mutex_unlock(&stage_lock);
		enum stage next = step();
		pthread_mutex_lock(&stage_lock);
		if (stage == during)
			enter(next);
	}
	pthread_mutex_unlock(&stage_lock);
}

/* Reads GPURUN_OPTIONS, once per process. The fork handlers are in place before that step
 * begins: a fork in the middle of it must find them, or its child waits for ever for a step that
 * a thread left behind in the parent is taking. */
static void configure_once(void)
{
	if (__atomic_load_n(&stage, __ATOMIC_ACQUIRE) == UNSTARTED && options_for_this_process())
		pthread_once(&fork_handlers_once, register_fork_handlers);
	step_once(UNSTARTED, STARTING, configure);
}

/* Eager mode chooses here, before main. */
__attribute__((constructor)) static void start(void)
{
	configure_once();
	if (!request.lazy)
		step_once(WAITING, CHOOSING, choose);
}

/* The program is about to start CUDA: the driver reads CUDA_VISIBLE_DEVICES now, so the choice
 * must be made by now, in either mode (a hook may even run before the constructor). */
static void cuda_starting(void)
{
	configure_once();
	step_once(WAITING, CHOOSING, choose);
}

/* ---- the hooks ------------------------------------------------------------------------------------ */

static bool is_in_this_library(void *address)
{
	Dl_info self, other;

	return dladdr((void *)is_in_this_library, &self) && dladdr(address, &other) &&
	       self.dli_fbase == other.dli_fbase;
}

static void __attribute__((noreturn)) circular_reference(const char *name)
{
	say("circular reference: the real %s is libgpurun-preload.so's own", name);
	_exit(GPURUN_EXIT_SOFTWARE);
}

/* The next definition of `name` after this library, or NULL. One that is this library's own
 * would make the hook call itself forever. */
static void *find_next(const char *name)
{
	void *found = dlsym(RTLD_NEXT, name);

	if (found && is_in_this_library(found))
		circular_reference(name);
	return found;
}

/* The next definition of `name`, looked up once and kept in *cache; NULL when there is none.
 * (A failed lookup is not kept: it is cheap next to the choice that precedes it.) */
static void *next_cached(void **cache, const char *name)
{
	void *next = __atomic_load_n(cache, __ATOMIC_ACQUIRE);

	if (!next) {
		next = find_next(name);
		__atomic_store_n(cache, next, __ATOMIC_RELEASE);
	}
	return next;
}

static dlopen_fn *real_dlopen(void)
{
	static void *cached;
	dlopen_fn *real = (dlopen_fn *)next_cached(&cached, "dlopen");

	if (!real)
		die(GPURUN_EXIT_SOFTWARE, "cannot find the C library's dlopen");
	return real;
}

/* For programs linked against libcuda: they reach the driver through these symbols, and the
 * driver's own definitions come next after this library. The driver hands out its own entry
 * points, so these hooks see only a program's first steps into CUDA, which are enough. Without
 * a driver next (none linked, or one loaded with dlopen, which only a dlsym(RTLD_DEFAULT) can
 * lead here from), they answer as the toolkit's stub library would. */
CUresult cuInit(unsigned int flags)
{
	static void *cached;

	cuda_starting();
	cuinit_fn *real = (cuinit_fn *)next_cached(&cached, "cuInit");
	return real ? real(flags) : CUDA_ERROR_STUB_LIBRARY;
}

/* cuGetProcAddress hands out cuInit itself: the choice is made before anything it hands out
 * can run. */
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cuda_version, uint64_t flags)
{
	static void *cached;

	cuda_starting();
	get_proc_address_fn *real = (get_proc_address_fn *)next_cached(&cached, "cuGetProcAddress");
	return real ? real(symbol, pfn, cuda_version, flags) : CUDA_ERROR_STUB_LIBRARY;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, uint64_t flags,
			     int *symbol_status)
{
	static void *cached;

	cuda_starting();
	get_proc_address_v2_fn *real =
		(get_proc_address_v2_fn *)next_cached(&cached, "cuGetProcAddress_v2");
	return real ? real(symbol, pfn, cuda_version, flags, symbol_status) : CUDA_ERROR_STUB_LIBRARY;
}

static bool names_libcuda(const char *file)
{
	if (!file)
		return false;
	const char *slash = strrchr(file, '/');
	const char *base = slash ? slash + 1 : file;
	return strcmp(base, "libcuda.so.1") == 0 || strcmp(base, "libcuda.so") == 0;
}

/* Acts on a dlopen that loads the CUDA driver (how libcudart, PyTorch and JAX reach it), then
 * returns the real dlopen for the hook to jump to. RTLD_NOLOAD only asks whether the driver is
 * loaded already: that starts nothing. */
void *prepare_dlopen(const char *file, int mode)
{
	if (names_libcuda(file) && !(mode & RTLD_NOLOAD))
		cuda_starting();
	return (void *)real_dlopen();
}

/* The dlopen hook. glibc's dlopen resolves a relative name through the RUNPATH and $ORIGIN of
 * the object that called it, which it finds from its return address. A C wrapper keeps the
 * caller's return address only if the compiler turns the forward into a tail call, and nothing
 * guarantees that (-O0, -fno-optimize-sibling-calls, stack protectors and profilers prevent it).
 * So the hook is a trampoline: keep the arguments, let prepare_dlopen act and name the real
 * dlopen, restore the arguments and the stack exactly as they were, and jump: the real dlopen
 * sees the original caller's return address. */
#if defined(__x86_64__)
#if defined(__CET__)
#define BRANCH_TARGET "	endbr64\n"
#else
#define BRANCH_TARGET ""
#endif
__asm__(".pushsection .text\n"
	".globl dlopen\n"
	".type dlopen, @function\n"
	"dlopen:\n"
	"	.cfi_startproc\n"
	BRANCH_TARGET
	"	push %rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	push %rsi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	sub $8, %rsp\n"                 /* calls need a 16-byte aligned stack */
	"	.cfi_adjust_cfa_offset 8\n"
	"	call prepare_dlopen\n"
	"	add $8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	pop %rsi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	pop %rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	jmp *%rax\n"
	"	.cfi_endproc\n"
	".size dlopen, .-dlopen\n"
	".popsection\n");
#elif defined(__aarch64__)
#if defined(__ARM_FEATURE_BTI_DEFAULT)
#define BRANCH_TARGET "	hint 34\n"              /* bti c */
#else
#define BRANCH_TARGET ""
#endif
__asm__(".pushsection .text\n"
	".globl dlopen\n"
	".type dlopen, %function\n"
	".p2align 2\n"
	"dlopen:\n"
	"	.cfi_startproc\n"
	BRANCH_TARGET
	"	stp x29, x30, [sp, #-32]!\n"
	"	.cfi_def_cfa_offset 32\n"
	"	.cfi_offset 29, -32\n"
	"	.cfi_offset 30, -24\n"
	"	mov x29, sp\n"
	"	stp x0, x1, [sp, #16]\n"
	"	bl prepare_dlopen\n"
	"	mov x16, x0\n"
	"	ldp x0, x1, [sp, #16]\n"
	"	ldp x29, x30, [sp], #32\n"      /* x30: the caller's return address again */
	"	.cfi_restore 30\n"
	"	.cfi_restore 29\n"
	"	.cfi_def_cfa_offset 0\n"
	"	br x16\n"
	"	.cfi_endproc\n"
	".size dlopen, .-dlopen\n"
	".popsection\n");
#else
/* Elsewhere: a C wrapper that relies on the compiler's tail call; preload_test.sh checks it. */
HOOK __attribute__((optimize("optimize-sibling-calls"))) void *dlopen(const char *file, int mode)
{
	dlopen_fn *real = (dlopen_fn *)prepare_dlopen(file, mode);

	return real(file, mode);
}
#endif
