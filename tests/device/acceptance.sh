#!/usr/bin/env bash
# acceptance.sh: gpurun against a real NVIDIA driver. Builds gpurun from this tree, checks what it
# reports, chooses, leases and hands over against nvidia-smi, libcuda and PyTorch, times it, and
# ends with a table (check | result | detail). `--dry-run` runs the same script against the fakes.
#
# ---- On a device machine (the `run` tool: one NVIDIA H200, 15 minutes of device time in all) ----
#   command:    bash tests/device/acceptance.sh
#   carry:      none (it builds there, with make, or with gcc alone where make is missing;
#               build/ is ignored and does not travel)
#   timeout_s:  240
# Check `status` first (can_start_another). The checks should take one to two minutes there
# (an estimate: no device has run them yet; the first `import torch` on a cold machine is likely
# the largest part) and no new check starts after --budget seconds (default 180), so the command
# ends well inside its 240 s; with the machine's cold start (a minute or two) one run should cost
# about 4 minutes of device time, 6 at worst, which leaves room for a rerun within the 15.
# What comes back under $OUT: results.tsv (written as the checks finish, so a run cut short
# still says how far it got), table.txt, and acceptance-logs.tar.gz (every command's output).
# Give the machine back (give_back) unless you rerun at once.
#
# ---- Here, without a GPU ----
#   tests/device/acceptance.sh --dry-run [--gpus N]
# runs every check against the fake NVML, nvidia-smi and libcuda (tests/fakes) on a fixture this
# script writes (N simulated H200s, default 1). PyTorch is not needed: its two jobs are played by
# tests/device/cuda_uuid.c (the hand-off) and by a placeholder job while the fixture's memory is
# rewritten (the memory hog). tests/integration/device_dryrun_test.sh runs it from `make check`.
#
# Agreement (tests/device/compare.py): identity fields (index, uuid, name, serial, pci.bus_id,
# driver, display modes) must be equal; each number must lie between two nvidia-smi readings
# taken just before and just after gpurun's (the noise of a second query), widened by a floor
# for rounding and sampling: load 5 points, memory 2 MiB (total 1 MiB, the table's percentage 1
# point), temperature 2 °C, power 10 W or 10 %. compare.py says why for each.
#
# The fakes against the driver: tests/helpers/nvml_dump asks the real NVML library the questions
# whose answers the fake NVML gives (error codes for wrong versions, short buffers, calls out of
# order), so that one run also says whether the doubles every other test runs on are true.
#
# The script never changes the GPU's settings (clocks, persistence, MIG, compute mode) and never
# resets it; every wait is bounded by timeout, and every job it starts in the background is killed
# on exit. Leases go to a private lock directory, never to /tmp/gpurun.
set -u

usage() {
	cat <<EOF
usage: tests/device/acceptance.sh [--dry-run [--gpus N]] [--budget SECONDS]
                                  [--build-dir DIR] [--without-make]
  --dry-run       against the fakes (tests/fakes) instead of the real driver
  --gpus N        GPUs on the simulated machine (dry run only; default 1)
  --budget S      start no new check after S seconds (default 180, dry run 120)
  --build-dir D   build there (default build/ in this tree)
  --without-make  build with gcc alone, as on a machine without make
Logs go to \$OUT when it is set (the device tool's output folder).
EOF
}

DRY_RUN=false
DRY_GPUS=1
BUDGET=
BUILD_DIR=
WITH_MAKE=true
while [ $# -gt 0 ]; do
	case $1 in
	--dry-run) DRY_RUN=true ;;
	--gpus) DRY_GPUS=${2:?--gpus needs a number}; shift ;;
	--budget) BUDGET=${2:?--budget needs seconds}; shift ;;
	--build-dir) BUILD_DIR=${2:?--build-dir needs a directory}; shift ;;
	--without-make) WITH_MAKE=false ;;
	-h | --help) usage; exit 0 ;;
	*) echo "acceptance.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
	shift
done
case $DRY_GPUS in '' | *[!0-9]* | 0) echo "acceptance.sh: --gpus wants a positive number" >&2; exit 2 ;; esac
$DRY_RUN && BUDGET=${BUDGET:-120} || BUDGET=${BUDGET:-180}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
mkdir -p "${BUILD_DIR:-$ROOT/build}" && B=$(cd "${BUILD_DIR:-$ROOT/build}" && pwd) || exit 1
command -v make >/dev/null || WITH_MAKE=false
GPURUN=$B/gpurun
CUDA_UUID=$B/device/cuda_uuid
NVML_DUMP=$B/device/nvml_dump
COMPARE=$ROOT/tests/device/compare.py
OUT=${OUT:-}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-acceptance.XXXXXX") || exit 1
LOG=$WORK/logs
mkdir -p "$LOG"
export GPURUN_LOCK_DIR=$WORK/locks
if [ -n "$OUT" ]; then
	mkdir -p "$OUT" && : >"$OUT/results.tsv"
fi

# ---- results -------------------------------------------------------------------------------
NAMES=() RESULTS=() DETAILS=()
# Every check the table must end with a verdict on: one the script never reached (a fault of
# the script itself, which its stderr shows) is a failure, not a missing row.
CHECKS=("build" "machine" "show --all vs nvidia-smi" "show --json vs nvidia-smi"
	"NVML path vs nvidia-smi path" "NVML: the fake answers as the driver"
	"hand-off: C program" "hand-off --lazy: C program" "hand-off: PyTorch" "hand-off --lazy: PyTorch"
	"lease: a second gpurun waits" "lease: the waiter starts at release"
	"memory: --print exits 75 under the job" "memory: --wait starts when the job ends"
	"time: one look, NVML" "time: one look, nvidia-smi" "time: nvidia-smi --query-gpu"
	"time: gpurun -- /bin/true")
START=$EPOCHREALTIME

say() { printf '%s\n' "$*" | tee -a "$LOG/console.log"; }

# record NAME RESULT DETAIL: RESULT is ok, FAIL, skip or info. Written at once to results.tsv
# (under $OUT too), so that a run cut short by its time limit still brings back what it saw.
record() {
	local detail=${3//|//}
	detail=${detail//$'\n'/; }
	detail=${detail//$'\t'/ }
	NAMES+=("$1") RESULTS+=("$2") DETAILS+=("$detail")
	printf '%s\t%s\t%s\n' "$1" "$2" "$detail" >>"$LOG/results.tsv"
	[ -n "$OUT" ] && printf '%s\t%s\t%s\n' "$1" "$2" "$detail" >>"$OUT/results.tsv"
	say "$(printf '[%6.1fs] %-4s %s: %s' "$(seconds_since "$START")" "$2" "$1" "$detail")"
}

seconds_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
difference() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
below() { awk -v x="$1" -v limit="$2" 'BEGIN { exit !(x < limit) }'; }

# enough SECONDS NAME...: true when SECONDS more fit in the budget; else records the named
# checks as skipped, so that the table still lists them.
enough() {
	local need=$1 name
	shift
	if [ $((SECONDS + need)) -le "$BUDGET" ]; then
		return 0
	fi
	for name in "$@"; do record "$name" skip "out of time: ${SECONDS}s used of a ${BUDGET}s budget"; done
	return 1
}

# first_line FILE / last_line FILE: a line of a command's output for a table's detail (the last
# one of a Python traceback names the error).
first_line() { grep -m1 -v '^[[:space:]]*$' "$1" 2>/dev/null | cut -c1-160; }
last_line() { grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -n1 | cut -c1-160; }

# ---- background jobs -----------------------------------------------------------------------
# Each runs under timeout(1), which puts it in a process group of its own; the exit trap ends
# every group still recorded here, and stop_job forgets a job once it is reaped (a reaped pid can
# be reused by someone else's process).
JOBS=()

# background NAME LIMIT COMMAND...: starts it, output in $LOG/NAME.out/.err; sets JOB.
background() {
	local name=$1 limit=$2
	shift 2
	timeout -k 2 "$limit" "$@" </dev/null >"$LOG/$name.out" 2>"$LOG/$name.err" &
	JOB=$!
	JOBS+=("$JOB")
}

forget_job() {
	local kept=() pid
	for pid in "${JOBS[@]}"; do [ "$pid" = "$1" ] || kept+=("$pid"); done
	JOBS=("${kept[@]}")
}

# stop_job PID: SIGTERM (timeout passes it on to the job), then reap it.
stop_job() {
	kill -TERM "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	forget_job "$1"
}

alive() { kill -0 "$1" 2>/dev/null; }

# wait_for_file FILE SECONDS [PID]: true once FILE is non-empty; false after SECONDS, or as
# soon as PID (the job that should write it) is gone.
wait_for_file() {
	local deadline
	deadline=$(awk -v now="$EPOCHREALTIME" -v s="$2" 'BEGIN { printf "%.3f", now + s }')
	while [ ! -s "$1" ]; do
		below "$EPOCHREALTIME" "$deadline" || return 1
		if [ -n "${3:-}" ] && ! alive "$3"; then
			[ -s "$1" ]
			return
		fi
		sleep 0.02
	done
}

cleanup() {
	local pid
	for pid in "${JOBS[@]}"; do kill -TERM -- "-$pid" "$pid" 2>/dev/null; done
	for pid in "${JOBS[@]}"; do
		# bounded: timeout -k kills what ignores SIGTERM
		timeout 5 tail --pid="$pid" -f /dev/null 2>/dev/null
		kill -KILL -- "-$pid" "$pid" 2>/dev/null
	done
	JOBS=()
	save_logs
	if [ -n "$OUT" ] || ! grep -q "	FAIL	" "$LOG/results.tsv" 2>/dev/null; then
		rm -rf "$WORK"
	else
		echo "acceptance.sh: logs kept in $LOG" >&2
	fi
}

save_logs() {
	[ -n "$OUT" ] || return 0
	mkdir -p "$OUT"
	tar czf "$OUT/acceptance-logs.tar.gz" -C "$WORK" logs 2>/dev/null
}

trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the machine: real, or the fakes on a fixture this script writes ---------------------------
unset CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER GPURUN_OPTIONS GPURUN_CHOSEN LD_PRELOAD
FIXTURE=$WORK/machine.fixture
if $DRY_RUN; then
	export GPURUN_NVML_LIB=$B/fakes/libnvidia-ml.so.1
	export GPURUN_NVIDIA_SMI=$B/fakes/nvidia-smi
	export GPURUN_FAKE_FIXTURE=$FIXTURE
	export LD_LIBRARY_PATH=$B/fakes${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	SMI=$B/fakes/nvidia-smi
	NVML=$GPURUN_NVML_LIB
	MODE="dry run: fakes, $DRY_GPUS simulated H200(s)"
else
	unset GPURUN_NVML_LIB GPURUN_NVIDIA_SMI GPURUN_FAKE_FIXTURE
	SMI=$(command -v nvidia-smi || echo nvidia-smi)
	NVML=libnvidia-ml.so.1
	MODE="real driver"
fi

# write_fixture [HOG]: the simulated machine, rewritten whole and renamed into place so that a
# fake never reads half a file. GPU HOG, when given, has 60 % of its memory in use (the memory
# hog's allocation). With several GPUs, GPU 0 is busy, so the choice is not simply GPU 0.
DRY_TOTAL=143771
write_fixture() {
	local hog=${1:--1} i used util
	{
		echo "# written by tests/device/acceptance.sh --dry-run: $DRY_GPUS simulated H200(s)"
		echo "driver 580.159.04"
		for ((i = 0; i < DRY_GPUS; i++)); do
			case "$DRY_GPUS:$i" in
			1:0) util=0 used=1 ;;
			*:0) util=87 used=100000 ;;
			*:1) util=5 used=9000 ;;
			*:2) util=0 used=600 ;;
			*) util=10 used=20000 ;;
			esac
			[ "$i" = "$hog" ] && used=$((DRY_TOTAL * 6 / 10))
			echo "gpu"
			printf 'uuid GPU-5f0e3c2a-9b1d-4c7e-8a6f-%012x\n' $((0x3e1d00 + i))
			echo "name NVIDIA H200"
			echo "serial $((1654923012345 + i))"
			printf 'pci 00000000:%02X:00.0\n' $((0x19 + 0x10 * i))
			echo "util $util"
			echo "memory $DRY_TOTAL $used"
			echo "reserved 578"
			echo "error display_mode DEPRECATED"    # as on drivers since 575
			echo "temperature $((31 + i))"
			echo "power 76.5$i"
		done
	} >"$FIXTURE.new" && mv -f "$FIXTURE.new" "$FIXTURE"
}
$DRY_RUN && write_fixture

# What the two PyTorch jobs do. PyTorch's uuid has no "GPU-" prefix; normalize() compares hex
# digits only. CUDA_VISIBLE_DEVICES is read through libc: os.environ is a copy taken when Python
# started, and under --lazy the preload library sets the variable later, inside the process.
PY_UUID='
import ctypes, sys
try:
    import torch
except ImportError as e:
    print("no PyTorch:", e, file=sys.stderr)
    sys.exit(3)
props = torch.cuda.get_device_properties(0)
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
visible = libc.getenv(b"CUDA_VISIBLE_DEVICES")
# The count of the CUDA runtime itself: torch.cuda.device_count() may count through NVML,
# filtered by the copy of CUDA_VISIBLE_DEVICES in os.environ, which misses what --lazy set.
count = getattr(torch._C, "_cuda_getDeviceCount", torch.cuda.device_count)()
print("uuid=%s count=%d visible=%s torch=%s" % (props.uuid, count,
      visible.decode() if visible is not None else "<unset>", torch.__version__))
'
# Takes FRACTION of the GPU memory with a plain allocation (cudaMalloc through the caching
# allocator, never managed memory), says so, and holds it for SECONDS.
PY_HOG='
import sys, time
try:
    import torch
except ImportError as e:
    print("no PyTorch:", e, file=sys.stderr)
    sys.exit(3)
fraction, seconds = float(sys.argv[1]), float(sys.argv[2])
free, total = torch.cuda.mem_get_info()
block = torch.empty(int(total * fraction), dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("ready: %.0f of %.0f MiB allocated" % (block.numel() / 2**20, total / 2**20), flush=True)
time.sleep(seconds)
'

# The program whose CUDA device 0 is checked: PyTorch on the device, cuda_uuid in the dry run.
torch_or_stand_in() {
	if $DRY_RUN; then
		TORCH_CMD=("$CUDA_UUID")
		STAND_IN="dry run, cuda_uuid stands in for PyTorch: "
	else
		TORCH_CMD=(python3 -c "$PY_UUID")
		STAND_IN=
	fi
}

# ---- readings ------------------------------------------------------------------------------
# acceptance's own nvidia-smi query (compare.py's SMI_FIELDS, name last because it may hold
# ", "), and the display fields apart: recent drivers may refuse a field, and that must not lose
# the rest. gpurun's own query is its business (lib/probe_smi.c); its exact words are timed below.
SMI_FIELDS=index,uuid,serial,pci.bus_id,driver_version,utilization.gpu,memory.total,memory.used
SMI_FIELDS+=,memory.free,temperature.gpu,power.draw,name
GPURUN_SMI_QUERY=index,uuid,utilization.gpu,memory.total,memory.used,memory.free,driver_version
GPURUN_SMI_QUERY+=,name,gpu_serial,display_active,display_mode,temperature.gpu,pci.bus_id,power.draw

smi_query() {
	timeout 30 "$SMI" --query-gpu=$SMI_FIELDS --format=csv,noheader,nounits >"$1" 2>"$1.err" || return 1
	timeout 30 "$SMI" --query-gpu=index,display_mode,display_active --format=csv,noheader,nounits \
		>"$1.display" 2>>"$1.err" || mv -f "$1.display" "$1.display-refused"
	return 0
}
# Fields of a reading, by index: uuid_of FILE INDEX; used_percent FILE INDEX.
uuid_of() { awk -F', ' -v i="$2" '$1 == i { print $2 }' "$1"; }
used_percent() { awk -F', ' -v i="$2" '$1 == i && $7 > 0 { printf "%.0f", 100 * $8 / $7 }' "$1"; }
normalize() { tr 'A-F' 'a-f' <<<"$1" | sed 's/^gpu-//; s/[^0-9a-f]//g'; }

# compare_check NAME SLUG REF1 REF2 CANDIDATE...: compare.py's verdict as a row; $EXTRA is
# appended to the detail of a success.
compare_check() {
	local name=$1 log=$LOG/compare-$2
	shift 2
	python3 "$COMPARE" "$@" >"$log.txt" 2>&1
	case $? in
	0) record "$name" ok "$(first_line "$log.txt")$EXTRA" ;;
	*) record "$name" FAIL "$(first_line "$log.txt") ($(grep -c . "$log.txt") line(s) in logs/$(basename "$log").txt)" ;;
	esac
}

# ==== 1. build ================================================================================
# Without make (the device image is not promised to have it), the Makefile's compiler lines by
# hand: libgpurun.a, gpurun, the preload library, the two benchmarks, and in the dry run the fakes.
# libgpurun.a stays a plain archive: only the installed one needs its internal names made local.
build_without_make() {
	local flags=(-std=gnu11 -Wall -Wextra -O2 -g -fPIC -Ilib -D_GNU_SOURCE
		-DGPURUN_LIBDIR="\"/usr/local/lib\"") source object hidden pids=() pid failed=0
	local lib=() launcher=() preload=()
	mkdir -p "$B/obj/lib" "$B/obj/launcher" "$B/obj/preload" "$B/bench" "$B/fakes" || return 1
	# Every source at once, as make -j would.
	for source in lib/*.c launcher/*.c preload/*.c; do
		object=$B/obj/${source%.c}.o
		case $source in
		lib/*) lib+=("$object") hidden= ;;
		launcher/*) launcher+=("$object") hidden= ;;
		preload/*) preload+=("$object") hidden=-fvisibility=hidden ;;
		esac
		gcc "${flags[@]}" $hidden -c "$source" -o "$object" &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do wait "$pid" || failed=1; done      # every compiler finishes
	[ "$failed" = 0 ] || return 1
	rm -f "$B/libgpurun.a" && ar rcs "$B/libgpurun.a" "${lib[@]}" &&
		gcc "${flags[@]}" -o "$GPURUN" "${launcher[@]}" "$B/libgpurun.a" -ldl -lm &&
		gcc "${flags[@]}" -shared -fvisibility=hidden -Wl,--exclude-libs,ALL \
			-o "$B/libgpurun-preload.so" "${preload[@]}" "$B/libgpurun.a" \
			-Wl,--as-needed -ldl -lm -lpthread &&
		gcc "${flags[@]}" -o "$B/bench/snapshot_bench" bench/snapshot_bench.c "$B/libgpurun.a" -ldl -lm &&
		gcc "${flags[@]}" -o "$B/bench/spawn_bench" bench/spawn_bench.c || return 1
	$DRY_RUN || return 0
	gcc "${flags[@]}" -shared -Wl,-soname,libnvidia-ml.so.1 -o "$B/fakes/libnvidia-ml.so.1" \
		tests/fakes/fake_nvml.c tests/fakes/fixture.c &&
		gcc "${flags[@]}" -o "$B/fakes/nvidia-smi" tests/fakes/fake_smi.c tests/fakes/fixture.c &&
		gcc "${flags[@]}" -shared -Wl,-Bsymbolic -Wl,-soname,libcuda.so.1 -o "$B/fakes/libcuda.so.1" \
			tests/fakes/fake_cuda.c tests/fakes/fixture.c &&
		ln -sf libcuda.so.1 "$B/fakes/libcuda.so"
}

say "== gpurun acceptance ($MODE), $(date -u '+%Y-%m-%d %H:%M:%S') UTC, $(uname -sr), $(nproc) CPUs"
build_start=$EPOCHREALTIME
what="gpurun, preload library, benchmarks$($DRY_RUN && echo ", fakes")"
if $WITH_MAKE; then
	targets=("$GPURUN" "$B/libgpurun-preload.so" "$B/bench/snapshot_bench" "$B/bench/spawn_bench")
	$DRY_RUN && targets+=("$B/fakes/libnvidia-ml.so.1" "$B/fakes/nvidia-smi" "$B/fakes/libcuda.so.1")
	how="make: $what"
	# A make above us (make check) must not lend this one its jobserver.
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL timeout 300 make -j"$(nproc)" B="$B" "${targets[@]}" \
		>"$LOG/build.log" 2>&1
else
	how="gcc alone: $what"
	export -f build_without_make
	export B GPURUN DRY_RUN
	timeout 300 bash -c build_without_make >"$LOG/build.log" 2>&1
fi
built=$?
if [ "$built" = 0 ] && mkdir -p "$B/device" &&
	timeout 60 gcc -std=gnu11 -Wall -Wextra -O2 -o "$CUDA_UUID" tests/device/cuda_uuid.c -ldl \
		>>"$LOG/build.log" 2>&1 &&
	timeout 60 gcc -std=gnu11 -Wall -Wextra -O2 -o "$NVML_DUMP" tests/helpers/nvml_dump.c -ldl \
		>>"$LOG/build.log" 2>&1; then
	record "build" ok "$how; cuda_uuid and nvml_dump by gcc; $(seconds_since "$build_start") s"
else
	record "build" FAIL "$(grep -m1 -E 'error:|Error [0-9]+|No rule to make' "$LOG/build.log" || tail -n1 "$LOG/build.log")"
fi

# ==== 2. the machine ==========================================================================
if ! smi_query "$LOG/smi.0" || [ ! -s "$LOG/smi.0" ]; then
	record "machine" FAIL "nvidia-smi gave no GPU: $(first_line "$LOG/smi.0") $(first_line "$LOG/smi.0.err")"
	GPUS=0
else
	GPUS=$(grep -c . "$LOG/smi.0")
	# Read, never set: the settings that change what the timings mean.
	if timeout 30 "$SMI" --query-gpu=persistence_mode,compute_mode,mig.mode.current \
		--format=csv,noheader >"$LOG/smi.settings" 2>&1; then
		settings="; persistence, compute mode, MIG: $(sort -u "$LOG/smi.settings" | paste -sd';')"
	else
		settings="; settings not reported"
	fi
	gpu_list=$(awk -F', ' '{ print $1 ": " $12 " " $7 " MiB" }' "$LOG/smi.0" | paste -sd, | sed 's/,/, /g')
	driver=$(awk -F', ' '{ print $5; exit }' "$LOG/smi.0")
	[ -e "$LOG/smi.0.display-refused" ] &&
		settings+="; display fields refused: $(first_line "$LOG/smi.0.display-refused")"
	record "machine" info "$GPUS GPU(s): $gpu_list; driver $driver$settings"
fi
{
	echo "mode: $MODE"
	echo "nvidia-smi: $SMI"
	timeout 30 "$SMI" 2>&1
	echo "--- ldconfig"
	ldconfig -p 2>/dev/null | grep -E 'libnvidia-ml|libcuda\.so'
	echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
	command -v python3
} >"$LOG/machine.txt" 2>&1

if [ ! -x "$GPURUN" ] || [ "$GPUS" = 0 ]; then
	say "no gpurun or no GPU: nothing more to check"
	ALL_CHECKS_OFF=true
else
	ALL_CHECKS_OFF=false
fi

# ==== 3. what gpurun reports, against nvidia-smi ==============================================
if ! $ALL_CHECKS_OFF && enough 20 "show --all vs nvidia-smi" "show --json vs nvidia-smi"; then
	smi_query "$LOG/smi.1"
	timeout 30 "$GPURUN" --show --all >"$LOG/show-all.txt" 2>"$LOG/show-all.err"
	all_status=$?
	timeout 30 "$GPURUN" --show --json >"$LOG/show.json" 2>"$LOG/show.err"
	json_status=$?
	smi_query "$LOG/smi.2"
	if [ "$all_status" != 0 ]; then
		record "show --all vs nvidia-smi" FAIL "exit $all_status: $(first_line "$LOG/show-all.err")"
	else
		EXTRA= compare_check "show --all vs nvidia-smi" show-all "smi:$LOG/smi.1" "smi:$LOG/smi.2" "table:$LOG/show-all.txt"
	fi
	if [ "$json_status" != 0 ]; then
		record "show --json vs nvidia-smi" FAIL "exit $json_status: $(first_line "$LOG/show.err")"
	else
		EXTRA=" (source $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["source"])' "$LOG/show.json" 2>/dev/null))" \
			compare_check "show --json vs nvidia-smi" show-json "smi:$LOG/smi.1" "smi:$LOG/smi.2" "json:$LOG/show.json"
	fi
fi

# The two data paths against each other: two NVML readings bracket one through nvidia-smi.
# Their times (a whole gpurun each) size the waits and the timing runs below: NVML and
# nvidia-smi can take a second or more where the driver keeps no persistent state.
LOOK_NVML=0.5 LOOK_SMI=1
if ! $ALL_CHECKS_OFF && enough 20 "NVML path vs nvidia-smi path"; then
	t0=$EPOCHREALTIME
	timeout 30 "$GPURUN" --show --json --source nvml >"$LOG/nvml.1.json" 2>"$LOG/nvml.1.err"
	s1=$?
	t1=$EPOCHREALTIME
	timeout 30 "$GPURUN" --show --json --source nvidia-smi >"$LOG/smi-path.json" 2>"$LOG/smi-path.err"
	s2=$?
	t2=$EPOCHREALTIME
	timeout 30 "$GPURUN" --show --json --source nvml >"$LOG/nvml.2.json" 2>"$LOG/nvml.2.err"
	s3=$?
	LOOK_NVML=$(difference "$t0" "$t1")
	LOOK_SMI=$(difference "$t1" "$t2")
	if [ "$s1$s2$s3" != 000 ]; then
		record "NVML path vs nvidia-smi path" FAIL "exit $s1/$s2/$s3: $(first_line "$LOG/nvml.1.err")$(first_line "$LOG/smi-path.err")"
	else
		EXTRA= compare_check "NVML path vs nvidia-smi path" paths "json:$LOG/nvml.1.json" "json:$LOG/nvml.2.json" "json:$LOG/smi-path.json"
	fi
fi

# The fake NVML stands for this driver in every other test: tests/helpers/nvml_dump asks the
# real library what tests/integration/fakes_test.sh asks the fake, and each answer below, the
# fake's, must be the driver's too. One that differs is a fault of the fake: fix it there.
# Lines: the dump's key, a pattern for its answer, what the answer means.
NVML_CONTRACT=$(cat <<'EOF'
count[before init]	^error 1 \(	a call before init: UNINITIALIZED
gpu0.uuid[short]	^error 7 \(	a short UUID buffer: INSUFFICIENT_SIZE
gpu0.serial[short]	^error 7 \(	a short serial buffer: INSUFFICIENT_SIZE
gpu0.memory_v2	^total=[0-9]+ reserved=[0-9]+ free=[0-9]+ used=[0-9]+$	memory v2 answers
gpu0.memory_v2[version=2]	^error 13 \(	memory v2 with a plain 2: FUNCTION_NOT_FOUND
gpu0.temperature[sensor=1]	^error 2 \(	the temperature of sensor 1: INVALID_ARGUMENT
gpu0.temperature_v	^[0-9]+$	the versioned temperature call answers
gpu0.temperature_v[version=1]	^error 25 \(	the versioned call with a plain 1: ARGUMENT_VERSION_MISMATCH
gpu0.temperature_v[sensor=1]	^error 2 \(	the versioned call for sensor 1: INVALID_ARGUMENT
gpu0.display_mode	^error 26 \(	display mode: DEPRECATED, as the dry run has it
gpu0.processes_v2[call 1, count 0]	^(ok count=0$|error 7 \([^)]*\) need=[1-9])	a process list with room for none: all of it, or the need
handle[past count]	^error 2 \(	a handle past the count: INVALID_ARGUMENT
count[after one shutdown]	^0$	init is reference counted
count[after last shutdown]	^error 1 \(	after the last shutdown: UNINITIALIZED
shutdown[extra]	^error 1 \(	an extra shutdown: UNINITIALIZED
EOF
)
# answer_of KEY: what the dump says for KEY.
answer_of() { awk -v key="$1: " 'index($0, key) == 1 { print substr($0, length(key) + 1); exit }' "$LOG/nvml-dump.txt"; }
if ! $ALL_CHECKS_OFF && enough 10 "NVML: the fake answers as the driver"; then
	timeout 30 "$NVML_DUMP" "$NVML" >"$LOG/nvml-dump.txt" 2>&1
	dump_status=$?
	differs=()
	asked=0
	while IFS=$'\t' read -r key pattern meaning; do
		asked=$((asked + 1))
		answer=$(answer_of "$key")
		[[ $answer =~ $pattern ]] || differs+=("$meaning (driver: ${answer:-no answer})")
	done <<<"$NVML_CONTRACT"
	# Both temperature calls read one sensor, which may tick between them.
	asked=$((asked + 1))
	legacy=$(answer_of gpu0.temperature) versioned=$(answer_of gpu0.temperature_v)
	awk -v a="$legacy" -v b="$versioned" 'BEGIN { exit !(a ~ /^[0-9]+$/ && b ~ /^[0-9]+$/ &&
		a - b <= 2 && b - a <= 2) }' ||
		differs+=("the two temperature calls agree (driver: '$legacy' and '$versioned')")
	if [ "$dump_status" != 0 ]; then
		record "NVML: the fake answers as the driver" FAIL "nvml_dump exit $dump_status: $(last_line "$LOG/nvml-dump.txt")"
	elif [ ${#differs[@]} = 0 ]; then
		record "NVML: the fake answers as the driver" ok "$asked answers alike (temperature: $legacy °C, and $versioned °C through the versioned call)"
	else
		detail=$(printf '%s; ' "${differs[@]}")
		record "NVML: the fake answers as the driver" FAIL "${#differs[@]} of $asked differ: ${detail%; }"
	fi
fi

# ==== 4. the hand-off: the program runs on the GPU gpurun chose ===============================
# [LABEL=text] handoff NAME SLUG [--lazy] -- PROGRAM...: runs PROGRAM under gpurun --limit 1 --order memory; the
# program prints "uuid=U count=N visible=V" for its CUDA device 0 after CUDA initialized. Right
# when exactly one GPU is visible to it, V (what gpurun handed over) is set, and U is the GPU
# that V names (by nvidia-smi's index → UUID, or V is the UUID itself). LABEL starts the detail.
handoff() {
	local name=$1 slug=$2 options=() line word uuid= count= visible= torch= expected status
	shift 2
	while [ "$1" != -- ]; do options+=("$1"); shift; done
	shift
	timeout 90 "$GPURUN" "${options[@]}" --limit 1 --order memory "$@" \
		</dev/null >"$LOG/$slug.out" 2>"$LOG/$slug.err"
	status=$?
	if [ "$status" = 3 ] && grep -q "no PyTorch" "$LOG/$slug.err"; then
		record "$name" skip "$(first_line "$LOG/$slug.err")"
		return
	fi
	line=$(grep -m1 '^uuid=' "$LOG/$slug.out")
	for word in $line; do
		case $word in
		uuid=*) uuid=${word#uuid=} ;;
		count=*) count=${word#count=} ;;
		visible=*) visible=${word#visible=} ;;
		torch=*) torch=", torch ${word#torch=}" ;;
		esac
	done
	case $visible in
	GPU-*) expected=$visible ;;
	*) expected=$(uuid_of "$LOG/smi.0" "$visible") ;;
	esac
	if [ "$status" != 0 ] || [ -z "$line" ]; then
		record "$name" FAIL "${LABEL:-}exit $status: $(last_line "$LOG/$slug.err")"
	elif [ -z "$visible" ] || [ "$visible" = "<unset>" ]; then
		record "$name" FAIL "${LABEL:-}CUDA_VISIBLE_DEVICES was not set in the program (device 0 = $uuid, $count visible)"
	elif [ "$count" != 1 ]; then
		record "$name" FAIL "${LABEL:-}the program sees $count GPUs (CUDA_VISIBLE_DEVICES=$visible)"
	elif [ -z "$expected" ] || [ "$(normalize "$uuid")" != "$(normalize "$expected")" ]; then
		record "$name" FAIL "${LABEL:-}runs on $uuid; gpurun chose $visible = ${expected:-no such GPU}"
	else
		record "$name" ok "${LABEL:-}chose $visible = $expected, CUDA device 0 is $uuid$torch (--print predicted $PREDICTED)"
	fi
}

torch_or_stand_in
if ! $ALL_CHECKS_OFF && enough 15 "hand-off: C program" "hand-off --lazy: C program"; then
	PREDICTED=$(timeout 30 "$GPURUN" --print --limit 1 --order memory 2>/dev/null)
	LABEL= handoff "hand-off: C program" handoff-c -- "$CUDA_UUID"
	LABEL= handoff "hand-off --lazy: C program" handoff-lazy-c --lazy -- "$CUDA_UUID"
fi
if ! $ALL_CHECKS_OFF && enough 60 "hand-off: PyTorch"; then
	LABEL=$STAND_IN handoff "hand-off: PyTorch" handoff-torch -- "${TORCH_CMD[@]}"
fi
if ! $ALL_CHECKS_OFF && enough 40 "hand-off --lazy: PyTorch"; then
	LABEL=$STAND_IN handoff "hand-off --lazy: PyTorch" handoff-lazy-torch --lazy -- "${TORCH_CMD[@]}"
fi

# ==== 5. leases and memory: a second gpurun waits, and starts when the first job ends =========
# Everything here runs under CUDA_VISIBLE_DEVICES=<the UUID of one free GPU>, which gpurun takes
# as a mask: with one GPU or many, the GPU under test is the only one the second gpurun may take.
TARGET= TARGET_UUID=
if ! $ALL_CHECKS_OFF; then
	TARGET=$(timeout 30 "$GPURUN" --print 2>"$LOG/target.err")
	TARGET_UUID=$(uuid_of "$LOG/smi.0" "$TARGET")
fi
STAMP='echo "$EPOCHREALTIME" >"$0"'

if $ALL_CHECKS_OFF || [ -z "$TARGET_UUID" ]; then
	for name in "lease: a second gpurun waits" "lease: the waiter starts at release" \
		"memory: --print exits 75 under the job" "memory: --wait starts when the job ends"; do
		$ALL_CHECKS_OFF || record "$name" skip "no free GPU to test on: $(first_line "$LOG/target.err")"
	done
elif enough 30 "lease: a second gpurun waits" "lease: the waiter starts at release"; then
	# A leased job that allocates nothing: the GPU stays idle and empty, and still no one else
	# may have it. Its sleep is exec'd, so that stopping it ends the lease holder itself.
	background lease-holder 60 env CUDA_VISIBLE_DEVICES="$TARGET_UUID" "$GPURUN" --limit 1 -- \
		bash -c "$STAMP"'; exec sleep 50' "$LOG/lease-holder.started"
	holder=$JOB
	if ! wait_for_file "$LOG/lease-holder.started" 15 "$holder"; then
		record "lease: a second gpurun waits" FAIL "the leased job did not start: $(first_line "$LOG/lease-holder.err")"
		record "lease: the waiter starts at release" skip "no leased job"
		stop_job "$holder"
	else
		CUDA_VISIBLE_DEVICES=$TARGET_UUID timeout 30 "$GPURUN" --print >"$LOG/lease-print.out" 2>"$LOG/lease-print.err"
		print_status=$?
		# The interval is long on purpose: a start well inside it shows that the release itself
		# woke the waiter, as the README promises.
		background lease-waiter 60 env CUDA_VISIBLE_DEVICES="$TARGET_UUID" "$GPURUN" --wait \
			--timeout 45 --interval 5 -- bash -c "$STAMP" "$LOG/lease-waiter.started"
		waiter=$JOB
		sleep 1
		smi_query "$LOG/smi.lease"
		used=$(used_percent "$LOG/smi.lease" "$TARGET")
		if [ "$print_status" = 75 ] && [ ! -e "$LOG/lease-waiter.started" ] && alive "$waiter" &&
			[ -n "$used" ] && [ "$used" -lt 50 ]; then
			record "lease: a second gpurun waits" ok "GPU $TARGET leased by an idle job ($used % memory used): --print exit 75, --wait still waiting after 1 s"
		else
			waiter_state=$([ -e "$LOG/lease-waiter.started" ] && echo started || echo waiting)
			record "lease: a second gpurun waits" FAIL "--print exit $print_status (want 75), waiter \
$waiter_state, memory used ${used:-?} %: $(first_line "$LOG/lease-print.err")"
		fi
		stop_job "$holder"
		released=$EPOCHREALTIME
		if wait_for_file "$LOG/lease-waiter.started" 10 "$waiter"; then
			delay=$(difference "$released" "$(cat "$LOG/lease-waiter.started")")
			limit=$(awk -v look="$LOOK_NVML" 'BEGIN { printf "%.2f", 1 + look }')
			if below "$delay" "$limit"; then
				record "lease: the waiter starts at release" ok "started $delay s after the holder ended (< $limit s: woken by the release, not the 5 s interval)"
			else
				record "lease: the waiter starts at release" FAIL "started $delay s after the holder ended (want < $limit s): not woken by the release (--interval 5)"
			fi
		else
			record "lease: the waiter starts at release" FAIL "did not start within 10 s: $(first_line "$LOG/lease-waiter.err")"
		fi
		stop_job "$waiter"
	fi
fi

# The memory hog: PyTorch takes 60 % of the GPU's memory and holds it (on the device); in the
# dry run a placeholder job runs while the fixture says 60 % is used. It runs without gpurun and
# holds no lease, so only its memory can keep the second gpurun out.
hog_start() {
	if $DRY_RUN; then
		# Says it is ready itself, like the real one: its output file is opened after the fork.
		write_fixture "$TARGET"
		background hog 90 sh -c 'echo "ready: fixture rewritten, GPU $1 60 % used"; exec sleep 80' \
			hog "$TARGET"
		HOG=$JOB
	else
		background hog 90 env CUDA_VISIBLE_DEVICES="$TARGET_UUID" python3 -c "$PY_HOG" 0.6 80
		HOG=$JOB
	fi
	wait_for_file "$LOG/hog.out" 60 "$HOG"
}
# Ends the hog and returns when its memory is free: the driver frees it as the process exits.
hog_stop() {
	stop_job "$HOG"
	$DRY_RUN && write_fixture
	HOG_ENDED=$EPOCHREALTIME
}

if ! $ALL_CHECKS_OFF && [ -n "$TARGET_UUID" ] &&
	enough 80 "memory: --print exits 75 under the job" "memory: --wait starts when the job ends"; then
	CUDA_VISIBLE_DEVICES=$TARGET_UUID timeout 30 "$GPURUN" --max-memory 0.5 --print >/dev/null 2>"$LOG/mem-before.err"
	before=$?
	if [ "$before" != 0 ]; then
		record "memory: --print exits 75 under the job" skip "GPU $TARGET is not free before the job (exit $before): $(first_line "$LOG/mem-before.err")"
		record "memory: --wait starts when the job ends" skip "GPU $TARGET is not free before the job"
	elif ! hog_start; then
		status=$(alive "$HOG" && echo "no word in 60 s" || echo "it ended")
		if grep -q "no PyTorch" "$LOG/hog.err"; then
			record "memory: --print exits 75 under the job" skip "$(first_line "$LOG/hog.err")"
		else
			record "memory: --print exits 75 under the job" FAIL "the memory job did not start ($status): $(last_line "$LOG/hog.err")"
		fi
		record "memory: --wait starts when the job ends" skip "no memory job"
		stop_job "$HOG"
	else
		smi_query "$LOG/smi.hog"
		used=$(used_percent "$LOG/smi.hog" "$TARGET")
		CUDA_VISIBLE_DEVICES=$TARGET_UUID timeout 30 "$GPURUN" --max-memory 0.5 --print >"$LOG/mem-print.out" 2>"$LOG/mem-print.err"
		print_status=$?
		if [ "$print_status" = 75 ] && [ ! -s "$LOG/mem-print.out" ]; then
			record "memory: --print exits 75 under the job" ok "GPU $TARGET $used % used ($(first_line "$LOG/hog.out")): exit 75, was 0 before"
		else
			record "memory: --print exits 75 under the job" FAIL "GPU $TARGET $used % used: exit \
$print_status, stdout '$(first_line "$LOG/mem-print.out")' (want 75 and nothing)"
		fi
		# Memory is not a lease: nothing wakes the waiter but its own next look, so the
		# interval is short.
		background mem-waiter 60 env CUDA_VISIBLE_DEVICES="$TARGET_UUID" "$GPURUN" --wait \
			--timeout 45 --max-memory 0.5 --interval 0.2 -- bash -c "$STAMP" "$LOG/mem-waiter.started"
		waiter=$JOB
		sleep 1
		waited=$([ ! -e "$LOG/mem-waiter.started" ] && alive "$waiter" && echo yes || echo no)
		hog_stop
		if [ "$waited" != yes ]; then
			record "memory: --wait starts when the job ends" FAIL "started while the job held $used % of the memory: $(first_line "$LOG/mem-waiter.err")"
		elif wait_for_file "$LOG/mem-waiter.started" 10 "$waiter"; then
			delay=$(difference "$HOG_ENDED" "$(cat "$LOG/mem-waiter.started")")
			# One interval, up to two looks (one may have begun just before the memory was
			# freed), and a second for the driver and the scheduler.
			limit=$(awk -v look="$LOOK_NVML" 'BEGIN { printf "%.2f", 0.2 + 2 * look + 1 }')
			if below "$delay" "$limit"; then
				record "memory: --wait starts when the job ends" ok "waited 1 s, started $delay s after the job exited (< $limit s; --interval 0.2)"
			else
				record "memory: --wait starts when the job ends" FAIL "started $delay s after the job exited (want < $limit s; --interval 0.2)"
			fi
		else
			record "memory: --wait starts when the job ends" FAIL "did not start within 10 s of the job's end: $(first_line "$LOG/mem-waiter.err")"
		fi
		stop_job "$waiter"
	fi
fi

# ==== 6. timings: medians of repeated runs =====================================================
# runs MAX SECONDS_EACH: as many runs as fit in about 12 s, at least 5 and at most MAX.
runs() {
	awk -v max="$1" -v each="$2" 'BEGIN {
		n = each > 0 ? int(12 / each) : max
		if (n < 5) n = 5
		if (n > max) n = max
		print n
	}'
}
if $DRY_RUN; then
	RUNS_NVML=30 RUNS_SMI=5 RUNS_SPAWN=20
else
	RUNS_NVML=$(runs 50 "$LOOK_NVML") RUNS_SMI=$(runs 10 "$LOOK_SMI") RUNS_SPAWN=$(runs 30 "$LOOK_NVML")
fi
us() { awk -v a="$1" 'BEGIN { printf "%.0f µs", a }'; }
if ! $ALL_CHECKS_OFF && enough 60 "time: one look, NVML" "time: one look, nvidia-smi" \
	"time: nvidia-smi --query-gpu" "time: gpurun -- /bin/true"; then
	if t=$(timeout 60 "$B/bench/snapshot_bench" "$RUNS_NVML" 2>"$LOG/time-nvml.err"); then
		record "time: one look, NVML" info "median $(us "$t") (probe + mask + select, $RUNS_NVML runs)"
	else
		record "time: one look, NVML" FAIL "$(first_line "$LOG/time-nvml.err")"
	fi
	if t=$(timeout 60 "$B/bench/snapshot_bench" "$RUNS_SMI" smi 2>"$LOG/time-smi.err"); then
		record "time: one look, nvidia-smi" info "median $(us "$t") (probe + mask + select, $RUNS_SMI runs)"
	else
		record "time: one look, nvidia-smi" FAIL "$(first_line "$LOG/time-smi.err")"
	fi
	# spawn_bench's commands share its stdout: its own figures are the last lines.
	if t=$(timeout 60 "$B/bench/spawn_bench" "$RUNS_SMI" "$SMI" --query-gpu=$GPURUN_SMI_QUERY \
		--format=csv,noheader,nounits 2>"$LOG/time-smi-query.err"); then
		read -r median p10 p90 <<<"$(tail -n1 <<<"$t")"
		record "time: nvidia-smi --query-gpu" info "median $(us "$median") (p10 $(us "$p10"), p90 $(us "$p90"), $RUNS_SMI runs; gpurun's query)"
	else
		record "time: nvidia-smi --query-gpu" FAIL "$(first_line "$LOG/time-smi-query.err")"
	fi
	if t=$(timeout 90 "$B/bench/spawn_bench" "$RUNS_SPAWN" /bin/true :: "$GPURUN" -- /bin/true \
		2>"$LOG/time-launch.err"); then
		{ read -r true_median _; read -r gpurun_median _; } <<<"$(tail -n2 <<<"$t")"
		added=$(difference "$true_median" "$gpurun_median")
		record "time: gpurun -- /bin/true" info "median $(us "$gpurun_median") vs /bin/true \
$(us "$true_median"): +$(us "$added") (NVML, with lease, $RUNS_SPAWN runs each, interleaved)"
	else
		record "time: gpurun -- /bin/true" FAIL "$(first_line "$LOG/time-launch.err")"
	fi
fi

# ==== the table ================================================================================
for name in "${CHECKS[@]}"; do
	for recorded in "${NAMES[@]}"; do [ "$recorded" = "$name" ] && continue 2; done
	if $ALL_CHECKS_OFF; then
		record "$name" skip "no gpurun or no GPU"
	else
		record "$name" FAIL "no verdict: acceptance.sh never reached it (its stderr says why)"
	fi
done
width=5
for name in "${NAMES[@]}"; do [ ${#name} -gt "$width" ] && width=${#name}; done
{
	echo
	echo "== gpurun acceptance: $MODE; $(seconds_since "$START") s"
	printf "%-${width}s | %-6s | %s\n" check result detail
	printf "%-${width}s-|-%-6s-|-%-40s\n" "" "" "" | tr ' ' -
	for i in "${!NAMES[@]}"; do
		printf "%-${width}s | %-6s | %s\n" "${NAMES[$i]}" "${RESULTS[$i]}" "${DETAILS[$i]}"
	done
} | tee "$LOG/table.txt" | tee -a "$LOG/console.log"
[ -n "$OUT" ] && cp "$LOG/table.txt" "$OUT/table.txt"
for result in "${RESULTS[@]}"; do [ "$result" = FAIL ] && exit 1; done
exit 0
