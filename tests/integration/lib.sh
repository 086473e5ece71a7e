# lib.sh: what every integration test sources: paths to the built tree and the fakes, a private
# scratch directory, and TAP assertions (ok / not ok / # SKIP) that tests/run.sh counts.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# GPURUN_BUILD: another build tree (`make SANITIZE=1 check` uses build-asan).
BUILD=${GPURUN_BUILD:-$ROOT/build}
GPURUN=$BUILD/gpurun
# GPURUN_UNDER: a command prefix every gpurun the tests start runs under (`make VALGRIND=1
# check`: memcheck). $GPURUN is then a script that execs it, so the PID, the exit status and
# stderr are still gpurun's own, plus whatever the tool reports.
if [ -n "${GPURUN_UNDER:-}" ]; then
	mkdir -p "$BUILD/under"
	printf '#!/bin/sh\nexec %s %q "$@"\n' "$GPURUN_UNDER" "$GPURUN" >"$BUILD/under/gpurun.$$"
	chmod 755 "$BUILD/under/gpurun.$$"
	mv -f "$BUILD/under/gpurun.$$" "$BUILD/under/gpurun"
	GPURUN=$BUILD/under/gpurun
fi
FAKES=$BUILD/fakes
FIXTURES=$ROOT/tests/fixtures
# What the preload library may export (nm -D --defined-only, sorted): its hooks, nothing else.
PRELOAD_HOOKS="cuGetProcAddress cuGetProcAddress_v2 cuInit dlopen "
EXPECTED=$ROOT/tests/integration/expected
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-test.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT

# Every test runs against the fakes only, with its own lock directory, and never sees the
# caller's GPU environment.
unset CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER NVIDIA_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES \
	HIP_VISIBLE_DEVICES GPU_DEVICE_ORDINAL SLURM_JOB_GPUS SLURM_STEP_GPUS GPURUN_OPTIONS LD_PRELOAD \
	SLURM_JOB_ID GPURUN_FAKE_CUDA_RECORD
export GPURUN_NVML_LIB=$FAKES/libnvidia-ml.so.1
export GPURUN_NVIDIA_SMI=$FAKES/nvidia-smi
# The fake driver answers from the same fixture, so CUDA's order matches the simulated machine.
export GPURUN_CUDA_LIB=$FAKES/libcuda.so.1
export GPURUN_LOCK_DIR=$SCRATCH/locks
# No AMD GPU and no /proc to look processes up in, unless a test points at a fixture tree.
export GPURUN_SYSFS_ROOT=$SCRATCH/no-machine

TEST_NUMBER=0

ok() { TEST_NUMBER=$((TEST_NUMBER + 1)); printf 'ok %d - %s\n' "$TEST_NUMBER" "$1"; }
not_ok() {
	TEST_NUMBER=$((TEST_NUMBER + 1))
	printf 'not ok %d - %s\n' "$TEST_NUMBER" "$1"
	shift
	local detail
	for detail in "$@"; do printf '# %s\n' "$detail"; done
}
skip() { TEST_NUMBER=$((TEST_NUMBER + 1)); printf 'not ok %d # SKIP %s: %s\n' "$TEST_NUMBER" "$1" "$2"; }

# Uses a fixture: by name from tests/fixtures, or a path.
use_fixture() {
	case "$1" in
	/*) export GPURUN_FAKE_FIXTURE=$1 ;;
	*) export GPURUN_FAKE_FIXTURE=$FIXTURES/$1 ;;
	esac
}

# run CMD...: runs it, capturing stdout in $OUT_TEXT, stderr in $ERR_TEXT, status in $STATUS.
run() {
	"$@" >"$SCRATCH/stdout" 2>"$SCRATCH/stderr"
	STATUS=$?
	OUT_TEXT=$(cat "$SCRATCH/stdout")
	ERR_TEXT=$(cat "$SCRATCH/stderr")
}

# expect NAME STATUS [STDOUT]: checks the last run's status (and stdout when given).
expect() {
	local name=$1 status=$2
	if [ "$STATUS" != "$status" ]; then
		not_ok "$name" "status $STATUS, wanted $status" "stdout: $OUT_TEXT" "stderr: $ERR_TEXT"
	elif [ $# -ge 3 ] && [ "$OUT_TEXT" != "$3" ]; then
		not_ok "$name" "stdout: '$OUT_TEXT'" "wanted: '$3'" "stderr: $ERR_TEXT"
	else
		ok "$name"
	fi
}

# expect_error NAME STATUS PATTERN: a failure with one "gpurun: " line matching PATTERN (grep -E)
# on stderr and nothing on stdout.
expect_error() {
	local name=$1 status=$2 pattern=$3
	if [ "$STATUS" != "$status" ]; then
		not_ok "$name" "status $STATUS, wanted $status" "stderr: $ERR_TEXT"
	elif [ -n "$OUT_TEXT" ]; then
		not_ok "$name" "stdout not empty: $OUT_TEXT"
	elif [ "$(printf '%s\n' "$ERR_TEXT" | wc -l)" -ne 1 ] || [[ "$ERR_TEXT" != "gpurun: "* ]]; then
		not_ok "$name" "stderr is not one 'gpurun: ' line: $ERR_TEXT"
	elif ! grep -Eq -- "$pattern" <<<"$ERR_TEXT"; then
		not_ok "$name" "stderr '$ERR_TEXT' does not match '$pattern'"
	else
		ok "$name"
	fi
}

# record_values: what the fake libcuda recorded in $GPURUN_FAKE_CUDA_RECORD, one line per
# distinct value without the pid, counted ("1 CUDA_VISIBLE_DEVICES=2 CUDA_DEVICE_ORDER=...").
record_values() { sed -E 's/^pid=[0-9]+ //' "$GPURUN_FAKE_CUDA_RECORD" | sort | uniq -c | sed -E 's/^ +//'; }

# has_line NAME PATTERN: the last run's stderr has a line matching PATTERN (grep -E).
has_line() {
	if grep -Eq -- "$2" <<<"$ERR_TEXT"; then ok "$1"; else not_ok "$1" "status $STATUS" "stdout: $OUT_TEXT" "stderr: $ERR_TEXT"; fi
}

# await_tickets N: returns once the lock directory's waiting line holds N tickets (drafts aside),
# or after 10 s (the check that follows then fails, saying what it saw).
await_tickets() {
	local i
	for i in $(seq 200); do
		[ "$(ls "$GPURUN_LOCK_DIR/queue" 2>/dev/null | grep -vc ^draft-)" -ge "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

# check NAME CMD...: ok when CMD succeeds.
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name" "failed: $*"; fi
}

# Wall-clock timing without external tools: seconds since `start_clock`, and range checks.
start_clock() { CLOCK_START=$EPOCHREALTIME; }
elapsed() { awk -v a="$CLOCK_START" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }
within() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x < hi) }'; }

# timing_test NAME: false (and the test is skipped, saying why) when gpurun runs under a tool
# or is built with sanitizers (GPURUN_SANITIZED), where a check of how long something took
# would measure the tool.
timing_test() {
	if [ -n "${GPURUN_UNDER:-}" ]; then
		skip "$1" "timing is not gpurun's under GPURUN_UNDER (${GPURUN_UNDER%% *})"
		return 1
	elif [ -n "${GPURUN_SANITIZED:-}" ]; then
		skip "$1" "timing is not gpurun's in a sanitizer build"
		return 1
	fi
}

# run_timed CMD...: `run`, and the seconds it took in $TOOK.
run_timed() {
	start_clock
	run "$@"
	TOOK=$(elapsed)
}

# expect_took NAME LOW HIGH: the last run_timed took from LOW to under HIGH seconds (skipped,
# saying why, where timing is not gpurun's).
expect_took() {
	timing_test "$1" || return 0
	if within "$TOOK" "$2" "$3"; then ok "$1 ($TOOK s)"; else not_ok "$1" "took $TOOK s, wanted $2 to $3"; fi
}

# heavy_test NAME: false (and skipped, saying why) under GPURUN_UNDER, where dozens of gpurun
# processes at once would each carry the tool (memcheck: ~20x slower, ~100 MiB each).
heavy_test() {
	if [ -n "${GPURUN_UNDER:-}" ]; then
		skip "$1" "dozens of concurrent gpurun processes under ${GPURUN_UNDER%% *} exceed the time limits; the sanitizer build runs it"
		return 1
	fi
}
