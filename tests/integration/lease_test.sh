#!/usr/bin/env bash
# lease_test.sh: leases on the fake machines: two jobs never share a GPU, a dead job never
# holds one, waiters are served in order, and the shared lock directory is treated as hostile.
. "$(dirname "$0")/lib.sh"
use_fixture four.fixture
RECORD_JOB=$BUILD/helpers/record_job
uuid_of() { awk -v want="$1" '/^gpu/ { n++ } /^uuid / && n == want + 1 { print $2 }' "$GPURUN_FAKE_FIXTURE"; }
UUID2=$(uuid_of 2)

# Waits (100 looks, 5 s; under GPURUN_UNDER, where a look takes about a second on a busy
# machine, 300) until `gpurun --print` answers $1: a lease elsewhere has been taken or dropped.
await_print() {
	local i looks=100
	[ -n "${GPURUN_UNDER:-}" ] && looks=300
	for i in $(seq "$looks"); do
		[ "$("$GPURUN" --print 2>/dev/null)" = "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

# --- a lease lives exactly as long as the job -------------------------------------------------
run "$GPURUN" --print
run "$GPURUN" --print
expect "--print holds no lease: the same GPU again" 0 "2"

# The job outlives any slowness of the checks below (valgrind runs each gpurun for seconds);
# it is killed explicitly.
"$GPURUN" sleep 600 &
job=$!
check "a running job's GPU is skipped by the next gpurun" await_print 3
run "$GPURUN" --show
if grep -Eq "^GPU 2 leased by pid $job \(.*\) since .*: sleep 600$" <<<"$OUT_TEXT"; then
	ok "--show names the holder: pid, user, host, start, command"
else
	not_ok "--show names the holder: pid, user, host, start, command" "$OUT_TEXT"
fi
run "$GPURUN" --show --json
if python3 -c "
import json, sys
gpus = json.load(sys.stdin)['gpus']
assert gpus[2]['lease']['pid'] == $job and gpus[2]['lease']['command'] == 'sleep 600', gpus[2]
assert gpus[3]['lease'] is None
" <"$SCRATCH/stdout"; then ok "--json shows the lease holder"; else not_ok "--json shows the lease holder" "$OUT_TEXT"; fi
run "$GPURUN" --print --no-lease
expect "--no-lease ignores leases" 0 "2"
run "$GPURUN" --print --limit 3 --max-memory 0.6
expect "leased GPUs count as unavailable" 75
kill -9 "$job"
wait "$job" 2>/dev/null
run "$GPURUN" --print
expect "SIGKILL of the job frees its GPU at once" 0 "2"
run "$GPURUN" --show
if ! grep -q "leased" <<<"$OUT_TEXT"; then ok "a stale holder record is ignored"; else not_ok "a stale holder record is ignored" "$OUT_TEXT"; fi

# A job started with its standard descriptors closed: the lease must not take fd 0-2, where the
# program's first open (here: its stderr) would land on the lock file and its close drop the
# lease. The program is started with them closed, as it was given them.
if [ -n "${GPURUN_UNDER:-}" ]; then
	# valgrind started with fd 2 closed keeps that number for its log: the program cannot open
	# a file there (valgrind closes it at once), so the lock directory cannot be opened.
	for name in "a job started with fds 0-2 closed keeps its lease" \
		"... it starts with them closed, as it was started" \
		"... and its lock file holds the holder record, not the program's stderr"; do
		skip "$name" "${GPURUN_UNDER%% *} reserves a closed fd 2 for itself; the sanitizer build runs it"
	done
else
	"$GPURUN" sh -c 'echo "text for stderr" >&2; exec sleep 600' <&- >&- 2>&- &
	job=$!
	check "a job started with fds 0-2 closed keeps its lease" await_print 3
	check "... it starts with them closed, as it was started" \
		test -z "$(ls /proc/"$job"/fd | grep -x '[012]')"
	check "... and its lock file holds the holder record, not the program's stderr" \
		grep -q "^pid=$job$" "$GPURUN_LOCK_DIR/$UUID2.lock"
	kill -9 "$job"
	wait "$job" 2>/dev/null
fi

# --show and --print test a lease with a shared lock for an instant; this shell holds one for
# as long as the checks take. It is a look, not a lease.
exec 8<"$GPURUN_LOCK_DIR/$UUID2.lock"
flock --shared 8
run "$GPURUN" --print
expect "a shared lock (someone looking) is not a lease to --print" 0 "2"
run "$GPURUN" --show
if ! grep -q "leased" <<<"$OUT_TEXT"; then ok "... nor to --show"; else not_ok "... nor to --show" "$OUT_TEXT"; fi
flock --unlock 8
exec 8<&-

"$GPURUN" sh -c 'sleep 600 & echo $! >"$0"; exit 0' "$SCRATCH/child"
check "a job that forks and exits: its child keeps the lease" await_print 3
kill "$(cat "$SCRATCH/child")"
check "the lease ends when the child exits" await_print 2

# --- the lock directory and its files ---------------------------------------------------------
rm -rf "$GPURUN_LOCK_DIR"
(umask 077 && "$GPURUN" true)
check "the lock directory is created sticky and world-writable whatever the umask" \
	test "$(stat -c %a "$GPURUN_LOCK_DIR")" = 1777
check "lock files are mode 0666" test "$(stat -c %a "$GPURUN_LOCK_DIR/$UUID2.lock")" = 666

GPURUN_LOCK_DIR=$SCRATCH/slashed/ run "$GPURUN" --print
expect "a lock directory named with a trailing slash is created all the same" 0 "2"

mkdir "$SCRATCH/real"
ln -s "$SCRATCH/real" "$SCRATCH/link"
GPURUN_LOCK_DIR=$SCRATCH/link run "$GPURUN" --print
expect_error "a symlinked lock directory is refused" 77 "$SCRATCH/link is a symlink"
GPURUN_LOCK_DIR=$SCRATCH/link/ run "$GPURUN" --print
expect_error "... also when named with a trailing slash (which would follow it)" 77 "$SCRATCH/link/ is a symlink"
check "nothing was created through the symlink" test -z "$(ls -A "$SCRATCH/real")"

mkdir -m 0777 "$SCRATCH/open"
chmod 0777 "$SCRATCH/open"
GPURUN_LOCK_DIR=$SCRATCH/open run "$GPURUN" --print
expect_error "a world-writable directory without the sticky bit is refused" 77 "sticky.*chmod 1777"

printf 'precious\n' >"$SCRATCH/victim"
chmod 0600 "$SCRATCH/victim"
rm -f "$GPURUN_LOCK_DIR/$UUID2.lock"
ln -s "$SCRATCH/victim" "$GPURUN_LOCK_DIR/$UUID2.lock"
run "$GPURUN" --print
expect_error "a symlink planted as a lock file is refused" 77 "$UUID2.lock is a symlink"
check "the symlink's target is untouched" test "$(cat "$SCRATCH/victim"):$(stat -c %a "$SCRATCH/victim")" = "precious:600"
rm -f "$GPURUN_LOCK_DIR/$UUID2.lock"

mkfifo "$GPURUN_LOCK_DIR/$UUID2.lock"
run timeout 5 "$GPURUN" --print
expect_error "a lock file that is not a regular file is refused (and does not hang)" 77 "not a regular file"
rm -f "$GPURUN_LOCK_DIR/$UUID2.lock"

printf 'file\n' >"$SCRATCH/plain"
GPURUN_LOCK_DIR=$SCRATCH/plain run "$GPURUN" --print
expect_error "a lock directory that is a file is refused" 77 "not a directory"

if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ] &&
	setpriv --reuid=65534 --regid=65534 --clear-groups "$GPURUN" --version >/dev/null 2>&1; then
	chmod 0755 "$SCRATCH"
	mkdir -m 0755 "$SCRATCH/root-only"
	GPURUN_LOCK_DIR=$SCRATCH/root-only run setpriv --reuid=65534 --regid=65534 --clear-groups "$GPURUN" --print
	expect_error "a lock directory this user cannot write: a clear error" 77 "cannot write lock directory.*--no-lease"
	GPURUN_LOCK_DIR=$SCRATCH/root-only run setpriv --reuid=65534 --regid=65534 --clear-groups "$GPURUN" --print --no-lease
	expect "... and --no-lease still works" 0 "2"
else
	skip "a lock directory this user cannot write" "needs root and setpriv to run as another user, and a build tree that user can read"
	skip "... and --no-lease still works" "same"
fi

# --- what a waiter leaves to its job ----------------------------------------------------------
# A waiter's inotify descriptor is closed by a short-lived grandchild (closing it can cost the
# kernel milliseconds the job would wait for): the job must see neither that descriptor nor a
# child it did not start.
printf 'gpu\n' >"$SCRATCH/only.fixture"
GPURUN_FAKE_FIXTURE=$SCRATCH/only.fixture "$GPURUN" sleep 1 &
holder=$!
for i in $(seq 200); do
	GPURUN_FAKE_FIXTURE=$SCRATCH/only.fixture "$GPURUN" --print >/dev/null 2>&1 || break
	sleep 0.05
done
GPURUN_FAKE_FIXTURE=$SCRATCH/only.fixture run "$GPURUN" --wait --interval 30 sh -c '
	read -r children </proc/$$/task/$$/children
	echo "children: [$children] inotify: $(ls -l /proc/$$/fd/ | grep -c inotify)"'
wait "$holder"
expect "a job that waited has no child it did not start and no inotify descriptor" 0 \
	"children: [] inotify: 0"

# --- many jobs at once --------------------------------------------------------------------------
stress() { # $1: log; then "LIMIT COUNT" pairs
	local log=$1 pids=() i
	shift
	while [ $# -gt 0 ]; do
		for i in $(seq "$2"); do
			timeout 120 "$GPURUN" --wait --interval 5 --limit "$1" "$RECORD_JOB" "$log" 100 2>/dev/null &
			pids+=($!)
		done
		shift 2
	done
	local failures=0
	for i in "${pids[@]}"; do wait "$i" || failures=$((failures + 1)); done
	return "$failures"
}
if heavy_test "64 concurrent --wait --limit 1 jobs, then 32 --limit 1 and 16 --limit 2, none sharing a GPU"; then
	start_clock
	stress "$SCRATCH/stress1.log" 1 64
	status=$?
	result=$(python3 "$ROOT/tests/integration/check_overlap.py" "$SCRATCH/stress1.log" 64 2>&1)
	if [ "$status" = 0 ] && grep -q "no overlap" <<<"$result"; then
		ok "64 concurrent --wait --limit 1 jobs on 4 GPUs: all ran, none shared a GPU ($(elapsed) s)"
	else
		not_ok "64 concurrent --wait --limit 1 jobs on 4 GPUs" "$status failed" "$result"
	fi

	cat >"$SCRATCH/four-free.fixture" <<'EOF'
gpu
gpu
gpu
gpu
EOF
	use_fixture "$SCRATCH/four-free.fixture"
	stress "$SCRATCH/stress2.log" 1 32 2 16
	status=$?
	result=$(python3 "$ROOT/tests/integration/check_overlap.py" "$SCRATCH/stress2.log" 48 2>&1)
	if [ "$status" = 0 ] && grep -q "no overlap" <<<"$result"; then
		ok "32 --limit 1 and 16 --limit 2 jobs at once: all ran, none shared a GPU"
	else
		not_ok "a mix of --limit 1 and --limit 2 jobs" "$status failed" "$result"
	fi
fi

# --- fairness: a 2-GPU waiter is not starved by a stream of 1-GPU jobs -------------------------
# fairness NAME [STREAM_MASK...]: 1-GPU jobs keep arriving (with CUDA_VISIBLE_DEVICES set to
# each STREAM_MASK in turn, when given) while a --limit 2 job without a mask waits.
fairness() {
	local name=$1 i pid
	local masks=("${@:2}")
	stream_job() {
		if [ ${#masks[@]} -gt 0 ]; then
			CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=${masks[$((i % ${#masks[@]}))]} \
				timeout 60 "$GPURUN" --wait --limit 1 "$RECORD_JOB" "$SCRATCH/stream.log" 400 2>/dev/null &
		else
			timeout 60 "$GPURUN" --wait --limit 1 "$RECORD_JOB" "$SCRATCH/stream.log" 400 2>/dev/null &
		fi
		stream_pids+=($!)
	}
	rm -f "$SCRATCH/stream.log" "$SCRATCH/waiter.log"
	stream_pids=()
	for i in $(seq 6); do
		stream_job
		sleep 0.1
	done
	waiter_launch=$EPOCHREALTIME
	timeout 60 "$GPURUN" --wait --limit 2 "$RECORD_JOB" "$SCRATCH/waiter.log" 100 2>/dev/null &
	waiter=$!
	for i in $(seq 30); do  # the stream goes on: always a 1-GPU job arriving or waiting
		stream_job
		sleep 0.1
	done
	stream_end=$EPOCHREALTIME
	wait "$waiter"
	waiter_status=$?
	for pid in "${stream_pids[@]}"; do wait "$pid"; done
	waiter_start=$(awk '{ printf "%.3f", $1 / 1e9 }' "$SCRATCH/waiter.log" 2>/dev/null)
	waited=$(awk -v a="$waiter_launch" -v b="$waiter_start" 'BEGIN { printf "%.2f", b - a }')
	if [ "$waiter_status" = 0 ] && [ "$(cut -d' ' -f3 "$SCRATCH/waiter.log")" = "0,1" ] &&
		within "$waiter_start" "$waiter_launch" "$stream_end" && within "$waited" 0 2.5; then
		ok "$name (both GPUs within ${waited} s)"
	else
		not_ok "$name" \
			"status $waiter_status, waited $waited s, stream ended $(awk -v a="$waiter_launch" -v b="$stream_end" 'BEGIN { print b - a }') s after launch"
	fi
	result=$(python3 "$ROOT/tests/integration/check_overlap.py" <(cat "$SCRATCH/stream.log" "$SCRATCH/waiter.log") 37 2>&1)
	if grep -q "no overlap" <<<"$result"; then ok "... and no GPU was shared meanwhile"; else not_ok "... and no GPU was shared meanwhile" "$result"; fi
}
FAIRNESS="a --limit 2 waiter is served while 1-GPU jobs keep arriving"
FAIRNESS_MASKED="... also when they name the same GPUs in CUDA_VISIBLE_DEVICES (0,1 and 1,0)"
if timing_test "$FAIRNESS (and no GPU is shared)"; then
	printf 'gpu\ngpu\n' >"$SCRATCH/two.fixture"
	use_fixture "$SCRATCH/two.fixture"
	fairness "$FAIRNESS"
	fairness "$FAIRNESS_MASKED" "0,1" "1,0"
fi

# --- waiting without inotify ----------------------------------------------------------------------
# Each user may hold only so many inotify instances (128 by default), so a burst of waiters can
# run out. Those without one must still be served as leases end, not only at each --interval.
# Run as a user of its own (nobody), whose instances without_inotify takes, so that no one
# else on the machine is starved meanwhile.
NO_INOTIFY_TEST="waiters without inotify are served as leases end, not at each --interval"
if ! command -v setpriv >/dev/null || [ "$(id -u)" != 0 ] ||
	! setpriv --reuid=65534 --regid=65534 --clear-groups "$GPURUN" --version >/dev/null 2>&1; then
	skip "$NO_INOTIFY_TEST" "needs root and setpriv to run as a user of its own"
elif timing_test "$NO_INOTIFY_TEST"; then
	chmod 0755 "$SCRATCH"
	mkdir -m 1777 "$SCRATCH/nobody-locks"
	printf 'gpu\n' >"$SCRATCH/one.fixture"
	chmod 0644 "$SCRATCH/one.fixture"
	# One job holds the only GPU for 0.5 s; three more wait with a 10 s interval.
	GPURUN_LOCK_DIR=$SCRATCH/nobody-locks GPURUN_FAKE_FIXTURE=$SCRATCH/one.fixture run_timed \
		timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$BUILD/helpers/without_inotify" bash -c '
			"$0" sleep 0.5 &
			sleep 0.2
			for i in 1 2 3; do "$0" --wait --interval 10 sleep 0.2 & done
			failed=0
			for job in $(jobs -p); do wait "$job" || failed=$((failed + 1)); done
			exit "$failed"' "$GPURUN"
	if [ "$STATUS" = 77 ]; then
		skip "$NO_INOTIFY_TEST" "$ERR_TEXT"
	elif [ "$STATUS" = 0 ] && within "$TOOK" 0 5; then
		ok "$NO_INOTIFY_TEST (four jobs in $TOOK s)"
	else
		not_ok "$NO_INOTIFY_TEST" "status $STATUS after $TOOK s (a waiter woken only by its 10 s interval takes longer)" "$ERR_TEXT"
	fi
fi

# --- two GPUs held, waiters of different pools ----------------------------------------------------
cat >"$SCRATCH/two.fixture" <<'EOF2'
gpu
gpu
EOF2
use_fixture "$SCRATCH/two.fixture"
export CUDA_DEVICE_ORDER=PCI_BUS_ID     # integers in PCI order: no driver to ask
# Holds both GPUs until killed; returns once they are held.
hold_both() {
	"$GPURUN" --limit 2 sleep 600 &
	holder=$!
	local i
	for i in $(seq 200); do
		"$GPURUN" --print >/dev/null 2>&1 || return 0
		sleep 0.05
	done
	return 1
}
# CPU time (user + system, in clock ticks) a process has used.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# Each waiter at the head of its own line (CUDA_VISIBLE_DEVICES=0 and unset allow different
# GPUs): a waiter's failed look must not wake the other, which would look and wake it back.
if timing_test "two waiters of different pools use no CPU while the GPUs are held"; then
	rm -f "$SCRATCH/pool-a.log" "$SCRATCH/pool-b.log"
	hold_both
	timeout 60 "$GPURUN" --wait --interval 30 "$RECORD_JOB" "$SCRATCH/pool-a.log" 100 2>/dev/null &
	waiter_a=$!
	CUDA_VISIBLE_DEVICES=0 timeout 60 "$GPURUN" --wait --interval 30 "$RECORD_JOB" "$SCRATCH/pool-b.log" 100 2>/dev/null &
	waiter_b=$!
	await_tickets 2         # both in line, each at the head of its own
	pid_a=$(pgrep -P "$waiter_a") pid_b=$(pgrep -P "$waiter_b")
	before_a=$(cpu_ticks "$pid_a") before_b=$(cpu_ticks "$pid_b")
	sleep 2
	used_a=$(( $(cpu_ticks "$pid_a") - before_a )) used_b=$(( $(cpu_ticks "$pid_b") - before_b ))
	if [ "$used_a" -le 10 ] && [ "$used_b" -le 10 ]; then
		ok "two waiters of different pools use no CPU while the GPUs are held ($used_a and $used_b ticks in 2 s)"
	else
		not_ok "two waiters of different pools use no CPU while the GPUs are held" "$used_a and $used_b clock ticks in 2 s"
	fi
	start_clock
	kill "$holder"
	wait "$waiter_a" "$waiter_b"
	waited=$(elapsed)
	if [ -s "$SCRATCH/pool-a.log" ] && [ -s "$SCRATCH/pool-b.log" ] && within "$waited" 0 3; then
		ok "... and both start as soon as the GPUs are released ($waited s)"
	else
		not_ok "... and both start as soon as the GPUs are released" "after $waited s: $(cat "$SCRATCH"/pool-?.log)"
	fi
fi

# --- a request that can never be served ---------------------------------------------------------------
run_timed timeout 20 "$GPURUN" --wait --limit 3 --print
expect_error "--wait --limit 3 on a 2-GPU machine fails at once" 75 "wanted 3 GPUs, found 2 available .*waiting cannot help: the masks and --exclude leave 2 whole GPUs on this machine"
expect_took "... without waiting" 0 5
run_timed timeout 20 "$GPURUN" --wait --exclude 0,1 --print
expect_error "--wait with every GPU excluded fails at once" 75 "wanted 1 GPU, found 0 available .*leave 0 GPUs on this machine"
CUDA_VISIBLE_DEVICES=1 run timeout 20 "$GPURUN" --wait --limit 2 --print
expect_error "... as does a --limit 2 waiter that its mask allows one GPU" 75 "leave 1 whole GPU on this machine"

# A waiter behind another never counted the GPUs: its message must not say it found none.
hold_both
"$GPURUN" --wait --interval 30 true 2>/dev/null &
head_waiter=$!
await_tickets 1
run "$GPURUN" --attempts 2 --interval 0.1 --print
expect_error "a waiter behind another reports the line, not counts it never took" 75 \
	"^gpurun: wanted 1 GPU, 1 waiting ahead for the same GPUs after 2 attempts"
# The same GPUs named in another way, or not at all, are the same line.
CUDA_VISIBLE_DEVICES="1,0" run "$GPURUN" --attempts 2 --interval 0.1 --print
expect_error "CUDA_VISIBLE_DEVICES=1,0 waits in the same line as no mask at all" 75 "1 waiting ahead"
CUDA_VISIBLE_DEVICES="0" run "$GPURUN" --attempts 2 --interval 0.1 --print
expect_error "... but CUDA_VISIBLE_DEVICES=0 (other GPUs) in a line of its own" 75 "found 0 available \(1 leased by other jobs, 0 busy, 0 waiting ahead\)"
# The line is the GPUs a request could ever take: one that excludes a GPU does not wait behind
# those who want it.
run "$GPURUN" --exclude 1 --attempts 2 --interval 0.1 --print
expect_error "... and so is a waiter that --exclude keeps off GPU 1" 75 "0 waiting ahead"
kill "$holder" "$head_waiter"
wait "$holder" "$head_waiter" 2>/dev/null

# A free GPU kept for a waiter ahead: --explain says so, not "too few" (one was enough).
"$GPURUN" --exclude 1 sleep 600 &
holder=$!
check "one GPU held" await_print 1
"$GPURUN" --wait --limit 2 --interval 30 true 2>/dev/null &
head_waiter=$!
await_tickets 1
run "$GPURUN" --print --explain
has_line "--explain: a free GPU kept for the waiter ahead says so" \
	"^gpurun: GPU 1 \(.*\): available, but 1 waiting ahead for the same GPUs come first$"
kill "$holder" "$head_waiter"
wait "$holder" "$head_waiter" 2>/dev/null

# --- a child forked while its parent waits keeps nothing of the wait ------------------------------
# A program under the preload library may fork while one of its threads waits in
# gpurun_acquire; the child's copy of the parent's ticket would keep the parent's place in line
# after the parent died, and block everyone behind it.
hold_both
for how in auto explicit in-a-test; do
	# In a test of a lock: the waiter looks again every 0.2 s, and the fork falls in its next
	# look, while it holds a lock file open to test it.
	interval=30
	[ "$how" = in-a-test ] && interval=0.2
	run timeout 60 "$BUILD/helpers/fork_while_waiting" "$BUILD/libgpurun.so" "$GPURUN_LOCK_DIR" \
		"$how" "--wait --interval $interval"
	case $how in
	auto) expect "a child forked during an acquisition holds none of its descriptors" 0 ;;
	explicit) expect "... also after gpurun_acquire_forget_in_child in the child" 0 ;;
	*) expect "... also when forked while the waiter tests a lock for an instant" 0 ;;
	esac
done
kill "$holder"
wait "$holder" 2>/dev/null
unset CUDA_DEVICE_ORDER

# --- another user in the same lock directory ----------------------------------------------------------
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if command -v setpriv >/dev/null && command -v unshare >/dev/null && [ "$(id -u)" = 0 ] &&
	as_nobody "$GPURUN" --version >/dev/null 2>&1 && unshare -pf true 2>/dev/null; then
	chmod 0755 "$SCRATCH"
	chmod 0644 "$SCRATCH/two.fixture"
	use_fixture "$SCRATCH/two.fixture"
	export CUDA_DEVICE_ORDER=PCI_BUS_ID
	export GPURUN_LOCK_DIR=$SCRATCH/shared-locks
	mkdir -m 1777 "$GPURUN_LOCK_DIR"
	hold_both

	# A waiter whose umask is 077: its ticket must still tell other users it is there.
	(umask 077 && exec "$GPURUN" --wait --interval 30 true 2>/dev/null) &
	private_waiter=$!
	await_tickets 1
	run as_nobody "$GPURUN" --attempts 2 --interval 0.1 --print
	expect_error "the ticket of a waiter with umask 077 counts for other users" 75 "1 waiting ahead"
	# A file planted in the line, named as a ticket but readable by nobody: no waiter holds it,
	# and it must not stop the line for ever.
	pool=$(ls "$GPURUN_LOCK_DIR/queue" | grep -v ^draft- | head -n 1 | cut -d- -f1)
	kill "$private_waiter"
	wait "$private_waiter" 2>/dev/null
	kill "$holder"
	wait "$holder" 2>/dev/null
	install -m 000 /dev/null "$GPURUN_LOCK_DIR/queue/$pool-00000000000000000001-planted"
	run as_nobody "$GPURUN" --attempts 2 --interval 0.1 --print --limit 2
	expect "a planted ticket nobody may open is no waiter" 0 "0,1"
	rm -f "$GPURUN_LOCK_DIR/queue/$pool-00000000000000000001-planted"
	hold_both

	# Drafts named after the pid alone: in a PID namespace every gpurun is pid 1, and a draft
	# another user left under that name could neither be removed nor replaced.
	mkdir -p "$GPURUN_LOCK_DIR/queue"
	chmod 1777 "$GPURUN_LOCK_DIR/queue"
	touch "$GPURUN_LOCK_DIR/queue/draft-0000000001"
	run unshare -pf setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$GPURUN" --attempts 2 --interval 0.05 --print
	expect_error "a waiter that is pid 1 joins the line beside another user's draft of pid 1" 75 "found 0 available"
	check "... and leaves that draft alone" test -e "$GPURUN_LOCK_DIR/queue/draft-0000000001"
	mkdir -m 1777 "$SCRATCH/fresh-locks"
	mkdir "$SCRATCH/fresh-locks/queue.new-1"
	GPURUN_LOCK_DIR=$SCRATCH/fresh-locks run unshare -pf setpriv --reuid=65534 --regid=65534 \
		--clear-groups "$GPURUN" --print
	expect "... and creates the queue directory beside another user's draft of pid 1" 0 "0"
	kill "$holder"
	wait "$holder" 2>/dev/null

	# A lock file another user narrowed to 0644: a lease through a read-only descriptor would
	# leave the last holder's record and release unseen.
	uuid0=$(awk '/^uuid / { print $2; exit }' "$SCRATCH/two.fixture")
	[ -n "$uuid0" ] || uuid0=$("$GPURUN" --show --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["gpus"][0]["uuid"])')
	chmod 0644 "$GPURUN_LOCK_DIR/$uuid0.lock"
	run as_nobody "$GPURUN" --print --limit 2
	expect "--print only looks: a lock file it cannot write does not matter" 0 "0,1"
	run as_nobody "$GPURUN" true
	expect_error "a lock file this user cannot write: a clear error" 77 "$uuid0.lock is not writable by this user \(owner uid 0, mode 0644\); fix: chmod 0666"
	run "$GPURUN" true
	check "its owner's next lease makes it writable again" test "$(stat -c %a "$GPURUN_LOCK_DIR/$uuid0.lock")" = 666

	# A queue directory this user cannot write fails at once, saying so.
	mkdir -m 1777 "$SCRATCH/closed-queue"
	mkdir -m 0755 "$SCRATCH/closed-queue/queue"
	GPURUN_LOCK_DIR=$SCRATCH/closed-queue run as_nobody "$GPURUN" --wait true
	expect_error "a queue directory this user cannot write: a clear error at once" 77 "cannot write queue directory.*closed-queue/queue"
	export GPURUN_LOCK_DIR=$SCRATCH/locks
	unset CUDA_DEVICE_ORDER
else
	for name in "the ticket of a waiter with umask 077 counts for other users" \
		"drafts of pid 1 in PID namespaces" "a lock file this user cannot write" \
		"a queue directory this user cannot write"; do
		skip "$name" "needs root, setpriv and unshare to run as another user in a PID namespace"
	done
fi
