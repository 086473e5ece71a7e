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
if timing_test "a --limit 2 waiter is served while 1-GPU jobs keep arriving (and no GPU is shared)"; then
	cat >"$SCRATCH/two.fixture" <<'EOF'
gpu
gpu
EOF
	use_fixture "$SCRATCH/two.fixture"
	stream_pids=()
	for i in $(seq 6); do
		timeout 60 "$GPURUN" --wait --limit 1 "$RECORD_JOB" "$SCRATCH/stream.log" 400 2>/dev/null &
		stream_pids+=($!)
		sleep 0.1
	done
	waiter_launch=$EPOCHREALTIME
	timeout 60 "$GPURUN" --wait --limit 2 "$RECORD_JOB" "$SCRATCH/waiter.log" 100 2>/dev/null &
	waiter=$!
	for i in $(seq 30); do  # the stream goes on: always a 1-GPU job arriving or waiting
		timeout 60 "$GPURUN" --wait --limit 1 "$RECORD_JOB" "$SCRATCH/stream.log" 400 2>/dev/null &
		stream_pids+=($!)
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
		ok "a --limit 2 waiter gets both GPUs within ${waited} s while 1-GPU jobs keep arriving"
	else
		not_ok "a --limit 2 waiter is served while 1-GPU jobs keep arriving" \
			"status $waiter_status, waited $waited s, stream ended $(awk -v a="$waiter_launch" -v b="$stream_end" 'BEGIN { print b - a }') s after launch"
	fi
	result=$(python3 "$ROOT/tests/integration/check_overlap.py" <(cat "$SCRATCH/stream.log" "$SCRATCH/waiter.log") 37 2>&1)
	if grep -q "no overlap" <<<"$result"; then ok "... and no GPU was shared meanwhile"; else not_ok "... and no GPU was shared meanwhile" "$result"; fi
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
