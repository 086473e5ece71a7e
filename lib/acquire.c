/* acquire: the attempt loop. Each look probes the machine, applies the inherited mask, orders
 * the available GPUs and leases the first ones it can; between looks it sleeps until the next
 * scheduled attempt, or until a lease is released or the waiter ahead of it leaves. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "clock_internal.h"
#include "gpurun.h"
#include "in_flight_internal.h"
#include "lease_internal.h"
#include "queue_internal.h"

/* The shortest time between attempts, whatever --interval says: GPUtil's interval=0 means
 * "again at once", and a waiter doing that for hours would burn a core of a shared machine.
 * (A release wakes a waiter at once anyway: the interval is for load and memory.) */
#define ATTEMPT_GAP_MIN_S 0.01

/* How often a waiter without inotify checks for its news (poll_for_news). */
#define NEWS_POLL_NS (50 * 1000 * 1000)

/* Everything a waiter keeps between looks. */
struct waiter {
	const struct gpurun_request *request;
	const char *lock_dir;
	int lock_dir_fd;                /* -1 with --no-lease */
	struct queue queue;
	bool queue_open;
	int notify_fd;                  /* inotify, or -1 when we never wait */
	int lock_watch;                 /* the lock directory, while at the head of the line */
	int ahead_watch;                /* the ticket just ahead of ours, while behind someone */
	char watched_ahead[QUEUE_TICKET_SIZE];
	bool look_again;                /* news arrived before its watch did */
	bool at_head;
	/* Without inotify: the GPUs our last look found leased by others (positions in its
	 * snapshot), to watch by polling. */
	size_t *leased_seen;
	size_t leased_seen_count;
	struct gpurun_inherited inherited;      /* the masks: read once, they cannot change */
	struct gpurun_cuda_order cuda_order;    /* the driver's answer, asked at most once */
	bool sized_up;                  /* size_up_pool has run: the pool is known */
	bool hopeless;                  /* the masks allow no GPU: waiting cannot help */
	bool never_enough;              /* the masks and --exclude leave too few: nor here */
	size_t possible;                /* how many they leave (whole GPUs for several) */
};

static unsigned wanted_count(const struct gpurun_request *request, size_t available)
{
	if (request->limit == GPURUN_LIMIT_ALL)
		return available > 0 ? (unsigned)available : 1;
	return request->limit;
}

/* Whether the job could ever take the device: inside the masks (allowed), of the job's vendor,
 * and eligible. The waiting line, "waiting cannot help" and the busy count all
 * speak of these devices. */
static bool within_reach(const struct gpurun_device *device, bool allowed,
			 enum gpurun_vendor vendor, const struct gpurun_request *request)
{
	return allowed && device->vendor == vendor && gpurun_device_eligible(device, request);
}

/* Busy: within reach (not excluded, no MIG instance without a UUID), yet not available now (a
 * lost GPU among them). */
static void count_devices(const struct gpurun_snapshot *snapshot, const struct gpurun_mask *mask,
			  const struct gpurun_request *request, size_t available,
			  struct gpurun_progress *progress)
{
	enum gpurun_vendor vendor = gpurun_job_vendor(snapshot, mask, request);
	size_t in_play = 0;

	for (size_t i = 0; i < snapshot->count; i++)
		in_play += within_reach(&snapshot->devices[i], mask->allowed[i], vendor, request);
	progress->available = available;
	progress->busy = in_play > available ? in_play - available : 0;
}

/* inotify_init1 for a waiter, listed as in flight. */
static int open_notify(void)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	if (fd >= 0)
		in_flight_add(fd);
	return fd;
}

/* ---- waiting for news -------------------------------------------------------------------- */

/* Watches what can end our wait, so that each waiter is woken only by its own news: at the
 * head of the line, leases being released; behind someone, that waiter leaving or dying. */
static void watch_for_turn(struct waiter *waiter)
{
	if (waiter->notify_fd < 0)
		return;
	if (waiter->at_head) {
		if (waiter->ahead_watch >= 0)
			inotify_rm_watch(waiter->notify_fd, waiter->ahead_watch);
		waiter->ahead_watch = -1;
		waiter->watched_ahead[0] = '\0';
		if (waiter->lock_watch < 0)
			waiter->lock_watch = inotify_add_watch(waiter->notify_fd, waiter->lock_dir,
							       IN_CLOSE_WRITE | IN_ONLYDIR |
							       IN_DONT_FOLLOW);
		return;
	}
	if (strcmp(waiter->watched_ahead, waiter->queue.ahead) == 0)
		return;
	if (waiter->ahead_watch >= 0)
		inotify_rm_watch(waiter->notify_fd, waiter->ahead_watch);
	char path[sizeof(waiter->queue.path) + QUEUE_TICKET_SIZE + 1];
	snprintf(path, sizeof(path), "%s/%s", waiter->queue.path, waiter->queue.ahead);
	waiter->ahead_watch = inotify_add_watch(waiter->notify_fd, path,
						IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF |
						IN_DONT_FOLLOW);
	snprintf(waiter->watched_ahead, sizeof(waiter->watched_ahead), "%s", waiter->queue.ahead);
	/* The waiter ahead may have left between our look and the watch. */
	if (waiter->ahead_watch < 0 || !queue_ticket_is_live(&waiter->queue, waiter->queue.ahead))
		waiter->look_again = true;
}

/* Reads what inotify has queued; true when it is news worth another look: a lease released
 * (a lock file closed after writing) at the head of the line, or the waiter ahead of us
 * leaving. Looks use read-only descriptors, whose close is no event; a claim lost in a race or
 * given back closes a writable one, and costs its own waiter one more look. */
static bool read_events(struct waiter *waiter)
{
	char buffer[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool news = false;
	ssize_t length;

	while ((length = read(waiter->notify_fd, buffer, sizeof(buffer))) > 0) {
		for (char *p = buffer; p < buffer + length;) {
			const struct inotify_event *event = (const struct inotify_event *)p;

			/* A lost event (overflow) may have been any of them: look again. */
			if (event->mask & IN_Q_OVERFLOW || event->wd == waiter->ahead_watch ||
			    (event->wd == waiter->lock_watch && waiter->at_head))
				news = true;
			p += sizeof(*event) + event->len;
		}
	}
	return news;
}

/* Whether inotify will tell us our news: it may be missing, as each user may hold only so
 * many instances (128 by default) and watches, and a burst of waiters can take them all. */
static bool is_watched(const struct waiter *waiter)
{
	return waiter->notify_fd >= 0 &&
	       (waiter->at_head ? waiter->lock_watch >= 0 : waiter->ahead_watch >= 0);
}

/* Without inotify, a waiter polls for its own news, cheaply, every NEWS_POLL_NS: behind
 * someone, whether that waiter is still there; at the head of the line, whether a GPU our last
 * look found leased has been released. It also asks for inotify again, as the waiters that
 * took the instances get their GPUs and go. */
static void poll_for_news(struct waiter *waiter, const struct gpurun_snapshot *last_look,
			  double until)
{
	const struct timespec pause = { .tv_nsec = NEWS_POLL_NS };
	struct gpurun_error ignored;

	while (monotonic_seconds() < until) {
		nanosleep(&pause, NULL);
		if (waiter->notify_fd < 0) {
			waiter->notify_fd = open_notify();
			if (waiter->notify_fd >= 0)
				return;         /* the next look sets the watches */
		}
		if (!waiter->at_head) {
			if (!queue_ticket_is_live(&waiter->queue, waiter->queue.ahead))
				return;
			continue;
		}
		for (size_t i = 0; i < waiter->leased_seen_count; i++) {
			const struct gpurun_device *device =
				&last_look->devices[waiter->leased_seen[i]];
			if (gpurun_lease_observe(waiter->lock_dir_fd, waiter->lock_dir, device,
						 &ignored) != 1)
				return;
		}
	}
}

/* Sleeps until `until` (monotonic seconds) or until there is news. last_look: the snapshot
 * of our last look. */
static void wait_for_news(struct waiter *waiter, const struct gpurun_snapshot *last_look,
			  double until)
{
	if (waiter->look_again) {
		waiter->look_again = false;
		return;
	}
	for (;;) {
		double left = until - monotonic_seconds();
		if (left <= 0)
			return;
		if (waiter->queue_open && !is_watched(waiter)) {
			poll_for_news(waiter, last_look, until);
			return;
		}
		/* An hour at a time: poll's int milliseconds cannot hold every --timeout. */
		int timeout_ms = left > 3600 ? 3600 * 1000 : (int)ceil(left * 1000);
		if (waiter->notify_fd < 0) {
			poll(NULL, 0, timeout_ms);      /* --no-lease: no news but the interval */
			continue;
		}
		struct pollfd readable = { .fd = waiter->notify_fd, .events = POLLIN };
		int ready = poll(&readable, 1, timeout_ms);
		if (ready < 0 && errno != EINTR)
			return;
		if (ready > 0 && read_events(waiter))
			return;
	}
}

/* ---- one look ---------------------------------------------------------------------------- */

/* Notes a candidate another job holds: for progress, and for poll_for_news to watch. */
static void note_leased(struct waiter *waiter, size_t position, struct gpurun_progress *progress)
{
	progress->leased_by_others++;
	waiter->leased_seen[waiter->leased_seen_count++] = position;
}

/* Puts into choice->chosen the first `wanted` candidates that no one holds, as a look sees
 * them (gpurun_lease_observe: a shared lock on a read-only descriptor, whose close wakes no
 * waiter). Returns how many. */
static size_t look_for_free(struct waiter *waiter, const size_t *candidates, size_t count,
			    unsigned wanted, struct gpurun_choice *choice,
			    struct gpurun_progress *progress, int *status, struct gpurun_error *err)
{
	const struct gpurun_snapshot *snapshot = &choice->snapshot;
	size_t seen_free = 0;

	for (size_t i = 0; i < count && seen_free < wanted; i++) {
		int result = waiter->lock_dir_fd < 0 ? 0
			: gpurun_lease_observe(waiter->lock_dir_fd, waiter->lock_dir,
					       &snapshot->devices[candidates[i]], err);
		if (result == 1) {
			note_leased(waiter, candidates[i], progress);
			continue;
		}
		if (result != 0) {
			*status = result;
			return 0;
		}
		choice->chosen[seen_free++] = candidates[i];
	}
	return seen_free;
}

/* Claims the `count` GPUs in choice->chosen in turn, keeping there those it got (a race lost
 * leaves one out). Returns how many it holds. */
static size_t claim_chosen(struct waiter *waiter, size_t count, struct gpurun_choice *choice,
			   struct gpurun_progress *progress, int *status, struct gpurun_error *err)
{
	const struct gpurun_snapshot *snapshot = &choice->snapshot;
	size_t taken = 0;

	for (size_t i = 0; i < count; i++) {
		int fd = -1;
		int result = gpurun_lease_try(waiter->lock_dir_fd, waiter->lock_dir,
					      &snapshot->devices[choice->chosen[i]], &fd, err);
		if (result == 1) {
			note_leased(waiter, choice->chosen[i], progress);
			continue;
		}
		if (result != 0) {
			*status = result;
			break;
		}
		choice->lease.fds[choice->lease.count++] = fd;
		choice->chosen[taken++] = choice->chosen[i];
	}
	return taken;
}

/* Takes candidates in order until `wanted` are taken, and only when at least `needed` can be:
 * they are claimed only when enough look free, since a claim that fails or is given back
 * closes a writable descriptor, which every waiter takes for a release and wakes on (two
 * waiters that could not be served would wake each other without end). --print only looks,
 * and --no-lease takes what the thresholds allow. Returns how many the choice holds. */
static size_t take_in_order(struct waiter *waiter, const size_t *candidates, size_t count,
			    unsigned wanted, unsigned needed, struct gpurun_choice *choice,
			    struct gpurun_progress *progress, int *status, struct gpurun_error *err)
{
	size_t seen_free = look_for_free(waiter, candidates, count, wanted, choice, progress,
					 status, err);

	if (*status != 0 || waiter->lock_dir_fd < 0 || waiter->request->action == GPURUN_ACTION_PRINT ||
	    seen_free < needed)
		return seen_free;
	return claim_chosen(waiter, seen_free, choice, progress, status, err);
}

/* The GPUs this look may hand out, best first, into candidates (*available of them): inside
 * the inherited masks, available by the request's thresholds, of one vendor. */
static int find_candidates(struct waiter *waiter, struct gpurun_choice *choice,
			   size_t *candidates, size_t *available, struct gpurun_progress *progress,
			   struct gpurun_error *err)
{
	const struct gpurun_snapshot *snapshot = &choice->snapshot;
	int status = gpurun_mask_apply(snapshot, &waiter->inherited, &waiter->cuda_order,
				       &choice->mask, err);
	if (status != 0)
		return status;
	if (choice->mask.nothing_allowed[0]) {
		waiter->hopeless = true;
		return gpurun_fail(err, GPURUN_EXIT_BUSY, "no GPU may be chosen: %s",
				   choice->mask.nothing_allowed);
	}
	*available = gpurun_select(snapshot, choice->mask.allowed, waiter->request, candidates);
	*available = gpurun_select_vendor(snapshot, &choice->mask, waiter->request, candidates,
					  *available);
	count_devices(snapshot, &choice->mask, waiter->request, *available, progress);
	return 0;
}

/* Takes the first candidates that can be had. CUDA shows a process one MIG instance at most,
 * and no whole GPU beside it: a job that wants several GPUs gets whole ones, or (when one is
 * enough) a single instance. What cannot be completed goes back at once: no hoarding. */
static int take_candidates(struct waiter *waiter, struct gpurun_choice *choice,
			   size_t *candidates, size_t available, struct gpurun_progress *progress,
			   struct gpurun_error *err)
{
	const struct gpurun_request *request = waiter->request;
	size_t whole = 0;
	int status = 0;

	for (size_t i = 0; i < available; i++)
		whole += choice->snapshot.devices[candidates[i]].mig_parent < 0;
	/* What --limit all means here: every whole GPU, or one MIG instance when there is none. */
	size_t all_usable = whole > 0 ? whole : (available > 0 ? 1 : 0);
	unsigned wanted = wanted_count(request, all_usable);
	unsigned needed = gpurun_request_needed(request);
	size_t usable = wanted > 1
		? gpurun_visible_whole_first(&choice->snapshot, candidates, available) : available;
	progress->wanted = needed;
	progress->mig_left_out = available - usable;
	progress->leased_by_others = 0;

	choice->count = take_in_order(waiter, candidates, usable, wanted, needed, choice, progress,
				      &status, err);
	if (status == 0 && choice->count == 0 && needed <= 1 && usable < available)
		choice->count = take_in_order(waiter, candidates + usable, available - usable, 1,
					      needed, choice, progress, &status, err);
	if (status == 0 && choice->count < needed) {
		gpurun_lease_release(&choice->lease);
		choice->count = 0;
		status = GPURUN_EXIT_BUSY;
	}
	return status;
}

/* The masks are read once and the devices do not come and go: the devices within reach decide,
 * at the first look, the waiter's pool (every waiter for exactly these devices shares one line)
 * and whether waiting could ever help. */
static int size_up_pool(struct waiter *waiter, const struct gpurun_choice *choice,
			struct gpurun_error *err)
{
	const struct gpurun_snapshot *snapshot = &choice->snapshot;
	size_t room = snapshot->count > 0 ? snapshot->count : 1;
	const bool *allowed = choice->mask.allowed;
	char **keys = calloc(room, sizeof(*keys));
	char (*names)[LEASE_FILE_NAME_SIZE] = malloc(room * sizeof(*names));
	size_t key_count = 0, whole = 0;
	int status = 0;

	if (!keys || !names) {
		status = gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory");
		goto done;
	}
	enum gpurun_vendor vendor = gpurun_job_vendor(snapshot, &choice->mask, waiter->request);
	for (size_t i = 0; i < snapshot->count; i++) {
		const struct gpurun_device *device = &snapshot->devices[i];

		if (!within_reach(device, allowed[i], vendor, waiter->request))
			continue;
		lease_file_name(device, names[key_count], sizeof(names[key_count]));
		keys[key_count] = names[key_count];
		key_count++;
		whole += device->mig_parent < 0;
	}
	if (waiter->queue_open)
		queue_set_pool(&waiter->queue, keys, key_count);
	/* Several GPUs are whole GPUs (take_candidates). */
	unsigned needed = gpurun_request_needed(waiter->request);
	waiter->possible = needed > 1 ? whole : key_count;
	waiter->never_enough = needed > waiter->possible;
done:
	free(keys);
	free(names);
	return status;
}

/* At the head of the line, or not in one (--no-lease): true. Behind someone: false, and the
 * waiter watches that one. */
static bool our_turn(struct waiter *waiter, struct gpurun_progress *progress)
{
	if (!waiter->queue_open)
		return true;
	progress->waiting_ahead = queue_waiting_ahead(&waiter->queue);
	waiter->at_head = progress->waiting_ahead == 0;
	watch_for_turn(waiter);
	return waiter->at_head;
}

/* The first look sizes the line up, and only then takes a turn in it: a request that can
 * never be served is measured and fails at once, waiting behind no one. */
static int join_line(struct waiter *waiter, const struct gpurun_choice *choice,
		     struct gpurun_progress *progress, struct gpurun_error *err)
{
	int status = size_up_pool(waiter, choice, err);

	if (status != 0)
		return status;
	waiter->sized_up = true;
	if (!waiter->never_enough && !our_turn(waiter, progress))
		return GPURUN_EXIT_BUSY;
	return 0;
}

/* One look. Returns 0 with choice filled, GPURUN_EXIT_BUSY, or an error status. */
static int look(struct waiter *waiter, struct gpurun_choice *choice,
		struct gpurun_progress *progress, struct gpurun_error *err)
{
	bool pool_known = waiter->sized_up;

	/* Cheap, and first: a waiter behind others does not even probe. */
	progress->measured = false;
	if (pool_known && !our_turn(waiter, progress))
		return GPURUN_EXIT_BUSY;

	gpurun_lease_release(&choice->lease);
	gpurun_snapshot_free(&choice->snapshot);
	free(choice->chosen);
	choice->chosen = NULL;
	choice->count = 0;
	int status = gpurun_probe(waiter->request, &choice->snapshot, err);
	if (status != 0)
		return status;

	size_t room = choice->snapshot.count > 0 ? choice->snapshot.count : 1;
	size_t *candidates = malloc(room * sizeof(*candidates));
	size_t available = 0;
	choice->chosen = malloc(room * sizeof(*choice->chosen));
	choice->lease.fds = malloc(room * sizeof(*choice->lease.fds));
	size_t *leased_seen = realloc(waiter->leased_seen, room * sizeof(*leased_seen));
	if (leased_seen)
		waiter->leased_seen = leased_seen;
	waiter->leased_seen_count = 0;
	if (!candidates || !choice->chosen || !choice->lease.fds || !leased_seen)
		status = gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory");
	if (status == 0)
		status = find_candidates(waiter, choice, candidates, &available, progress, err);
	if (status == 0 && !pool_known)
		status = join_line(waiter, choice, progress, err);
	if (status == 0) {
		progress->measured = true;
		status = take_candidates(waiter, choice, candidates, available, progress, err);
	}
	free(candidates);
	return status;
}

/* ---- the attempt loop -------------------------------------------------------------------- */

static void write_holders(const struct gpurun_request *request, const struct gpurun_lease *lease)
{
	for (size_t i = 0; i < lease->count; i++)
		gpurun_lease_write_holder(lease->fds[i], request->command, request->command_count);
}

static int fail_busy(const struct waiter *waiter, const struct gpurun_progress *progress,
		     struct gpurun_error *err)
{
	char elapsed[32], never[160] = "";

	gpurun_format_duration(progress->elapsed_s, elapsed, sizeof(elapsed));
	if (waiter->never_enough)
		snprintf(never, sizeof(never), "; waiting cannot help: the masks and --exclude leave "
			 "%zu%s GPU%s on this machine", waiter->possible,
			 progress->wanted > 1 ? " whole" : "", waiter->possible == 1 ? "" : "s");
	if (!progress->measured)
		return gpurun_fail(err, GPURUN_EXIT_BUSY,
				   "wanted %zu GPU%s, %zu waiting ahead for the same GPUs after %u "
				   "attempt%s in %s", progress->wanted, progress->wanted == 1 ? "" : "s",
				   progress->waiting_ahead, progress->attempt,
				   progress->attempt == 1 ? "" : "s", elapsed);
	return gpurun_fail(err, GPURUN_EXIT_BUSY,
			   "wanted %zu GPU%s, found %zu available (%zu leased by other jobs, %zu busy, "
			   "%zu waiting ahead) after %u attempt%s in %s%s%s",
			   progress->wanted, progress->wanted == 1 ? "" : "s",
			   progress->available - progress->leased_by_others, progress->leased_by_others,
			   progress->busy, progress->waiting_ahead, progress->attempt,
			   progress->attempt == 1 ? "" : "s", elapsed, never,
			   progress->mig_left_out
				   ? "; MIG instances do not count: CUDA shows a process only one MIG "
				     "instance and no whole GPU beside it, so a job that needs several "
				     "GPUs gets whole GPUs (run one process per instance instead)"
				   : "");
}

/* Ends the wait; a successful one hands its inotify descriptor on (see watch_fd). Its leases
 * stay in flight until the caller keeps them (gpurun_lease_keep_across_exec): a child forked
 * before the caller has published its choice must not hold them. */
static void close_waiter(struct waiter *waiter, struct gpurun_choice *choice, int status)
{
	if (waiter->queue_open)
		queue_close(&waiter->queue);
	if (waiter->notify_fd >= 0 && status == 0) {
		in_flight_hand_over(&waiter->notify_fd, 1, NULL, NULL);
		choice->watch_fd = waiter->notify_fd;
	} else if (waiter->notify_fd >= 0) {
		in_flight_close(waiter->notify_fd);
	}
	if (waiter->lock_dir_fd >= 0)
		in_flight_close(waiter->lock_dir_fd);
	gpurun_cuda_order_free(&waiter->cuda_order);
	free(waiter->leased_seen);
}

int gpurun_acquire(const struct gpurun_request *request, gpurun_progress_fn *progress_fn,
		   void *progress_context, struct gpurun_choice *choice, struct gpurun_error *err)
{
	struct waiter waiter = { .request = request, .lock_dir = gpurun_lock_dir(request),
				 .lock_dir_fd = -1, .notify_fd = -1, .lock_watch = -1,
				 .ahead_watch = -1 };
	struct gpurun_progress progress = { .attempts = request->attempts };
	/* A timeout alone means "wait, but not longer than this". */
	unsigned attempts = request->timeout_s > 0 && request->attempts == 1
				    ? GPURUN_ATTEMPTS_UNLIMITED : request->attempts;
	bool may_wait = attempts != 1;
	double start = monotonic_seconds();
	double deadline = request->timeout_s > 0 ? start + request->timeout_s : INFINITY;
	double next_attempt = start;
	int status;

	memset(choice, 0, sizeof(*choice));
	choice->watch_fd = -1;
	gpurun_inherited_read(&waiter.inherited);
	progress.attempts = attempts;
	progress.wanted = gpurun_request_needed(request);
	if (!request->no_lease) {
		in_flight_watch_forks();
		status = gpurun_lock_dir_open(waiter.lock_dir, &waiter.lock_dir_fd, err);
		if (status == 0) {
			in_flight_add(waiter.lock_dir_fd);
			status = queue_open(&waiter.queue, waiter.lock_dir_fd, waiter.lock_dir, err);
		}
		if (status != 0) {
			close_waiter(&waiter, choice, status);
			return status;
		}
		waiter.queue_open = true;
		/* Watches are set before each look that needs them: no release goes unseen. */
		if (may_wait)
			waiter.notify_fd = open_notify();
	}
	for (;;) {
		double now = monotonic_seconds();
		if (now >= next_attempt || now >= deadline) {
			progress.attempt++;
			next_attempt = now + (request->interval_s > ATTEMPT_GAP_MIN_S
						      ? request->interval_s : ATTEMPT_GAP_MIN_S);
		}
		status = look(&waiter, choice, &progress, err);
		progress.elapsed_s = monotonic_seconds() - start;
		bool last = attempts != GPURUN_ATTEMPTS_UNLIMITED && progress.attempt >= attempts;
		if (status != GPURUN_EXIT_BUSY || last || monotonic_seconds() >= deadline ||
		    waiter.hopeless || waiter.never_enough)
			break;
		if (progress_fn)
			progress_fn(&progress, progress_context);
		if (waiter.queue_open && waiter.queue.ticket_fd < 0) {
			status = queue_join(&waiter.queue, err);
			if (status != 0)
				break;
			continue;  /* look again at once: who is ahead of us changed as we joined */
		}
		wait_for_news(&waiter, &choice->snapshot,
			      next_attempt < deadline ? next_attempt : deadline);
	}
	choice->attempts_made = progress.attempt;
	progress.final = true;
	choice->last = progress;
	if (status == 0)
		write_holders(request, &choice->lease);
	else if (status == GPURUN_EXIT_BUSY && !waiter.hopeless)
		fail_busy(&waiter, &progress, err);
	if (progress_fn)
		progress_fn(&progress, progress_context);
	close_waiter(&waiter, choice, status);
	return status;
}

bool gpurun_cpu_fallback_applies(int status)
{
	return status == GPURUN_EXIT_BUSY || status == GPURUN_EXIT_NO_GPU_INFO;
}

void gpurun_choice_free(struct gpurun_choice *choice)
{
	gpurun_lease_release(&choice->lease);
	gpurun_snapshot_free(&choice->snapshot);
	gpurun_mask_free(&choice->mask);
	free(choice->chosen);
	if (choice->watch_fd >= 0)
		close(choice->watch_fd);
	memset(choice, 0, sizeof(*choice));
	choice->watch_fd = -1;
}
