#!/usr/bin/env bash
# preload_test.sh: libgpurun-preload.so inside programs, against the fake NVML, nvidia-smi and
# libcuda on the demo machine (four.fixture: GPU2 has the least memory in use, GPU3 is next,
# GPU0 and GPU1 are busy). The fake libcuda records the CUDA_VISIBLE_DEVICES each cuInit saw.
. "$(dirname "$0")/lib.sh"
PRELOAD=$BUILD/libgpurun-preload.so
HOST=$BUILD/helpers/host_program
DIRECT=$BUILD/helpers/preload_direct
RUNTIME_STYLE=$BUILD/helpers/cuda_runtime_style
PROC_ADDRESS=$BUILD/helpers/procaddress_direct
PROBE=$BUILD/helpers/cuda_probe
SOURCES=$ROOT/tests/integration/preload
RECORD=$SCRATCH/cuda-record
export GPURUN_FAKE_CUDA_RECORD=$RECORD
export LD_LIBRARY_PATH=$FAKES${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cp "$FIXTURES/four.fixture" "$SCRATCH/machine.fixture"
use_fixture "$SCRATCH/machine.fixture"
uuid_of() { awk -v want="$1" '/^gpu/ { n++ } /^uuid / && n == want + 1 { print $2 }' "$GPURUN_FAKE_FIXTURE"; }
UUID2=$(uuid_of 2)

for built in "$PRELOAD" "$HOST" "$DIRECT" "$RUNTIME_STYLE" "$PROC_ADDRESS" "$PROBE" \
	"$BUILD/helpers/dlopen_relative"; do
	if [ ! -e "$built" ]; then
		not_ok "built: $built" "run make check (it builds the library and the helpers)"
		exit 1
	fi
done

# with OPTIONS CMD...: runs CMD (through `run`) under the preload library with GPURUN_OPTIONS.
# env sets them for CMD alone: the test's own tools must never run under the library.
with() {
	local options=$1
	shift
	: >"$RECORD"
	run env LD_PRELOAD="$PRELOAD" GPURUN_OPTIONS="$options" "$@"
}

# The machine as the tests expect it; `make_gpu3_best` makes GPU3 the least used instead.
reset_machine() { cp "$FIXTURES/four.fixture" "$SCRATCH/machine.fixture"; }
make_gpu3_best() { sed -i 's/^memory 81920 2000$/memory 81920 30000/' "$SCRATCH/machine.fixture"; }

# Waits (up to 10 s) for a file to appear.
await_file() {
	local i
	for i in $(seq 200); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

# in_background GATE OPTIONS CMD...: starts CMD under the library, with its output in
# $SCRATCH/background.{out,err}, and waits until it stops at GATE (see tests/helpers/gate.h).
in_background() {
	local gate=$1 options=$2
	shift 2
	rm -f "$gate" "$gate.waiting"
	: >"$RECORD"
	env LD_PRELOAD="$PRELOAD" GPURUN_OPTIONS="$options" "$@" \
		>"$SCRATCH/background.out" 2>"$SCRATCH/background.err" &
	BACKGROUND=$!
	await_file "$gate.waiting"
}

# finish_background GATE: lets it go on and waits for it; its output goes to OUT_TEXT/ERR_TEXT.
finish_background() {
	touch "$1"
	wait "$BACKGROUND"
	STATUS=$?
	OUT_TEXT=$(cat "$SCRATCH/background.out")
	ERR_TEXT=$(cat "$SCRATCH/background.err")
}

record() { cat "$RECORD"; }
# How many GPUs pid $1 holds a lease on, as `gpurun --show` names the holders.
leases_of() { "$GPURUN" --show | grep -c "leased by pid $1 "; }
print_now() { "$GPURUN" --print 2>&1; }

# expect_clean NAME STATUS STDOUT RECORD: the status and stdout, nothing on stderr, and the fake
# driver's record (its lines without the pid, counted: "1 CUDA_VISIBLE_DEVICES=2 ...").
expect_clean() {
	local name=$1 status=$2 stdout=$3 wanted_record=$4 seen
	seen=$(record_values)
	if [ "$STATUS" != "$status" ] || [ "$OUT_TEXT" != "$stdout" ] || [ -n "$ERR_TEXT" ] ||
		[ "$seen" != "$wanted_record" ]; then
		not_ok "$name" "status $STATUS (wanted $status)" "stdout: '$OUT_TEXT' (wanted '$stdout')" \
			"stderr: '$ERR_TEXT'" "record: '$seen' (wanted '$wanted_record')"
	else
		ok "$name"
	fi
}
CHOSEN_2='CUDA_VISIBLE_DEVICES=2 CUDA_DEVICE_ORDER=PCI_BUS_ID'
CHOSEN_3='CUDA_VISIBLE_DEVICES=3 CUDA_DEVICE_ORDER=PCI_BUS_ID'

# --- what the library exports -------------------------------------------------------------------
exported=$(nm -D --defined-only "$PRELOAD" | awk '{ print $NF }' | sort | tr '\n' ' ')
if [ "$exported" = "$PRELOAD_HOOKS" ]; then
	ok "the library exports only its hooks ($PRELOAD_HOOKS)"
else
	not_ok "the library exports only its hooks ($PRELOAD_HOOKS)" "exports: $exported"
fi
# Each library it needs is loaded into every program it is preloaded into (a sanitizer build
# brings its runtimes too).
needed=$(readelf -d "$PRELOAD" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
allowed_needed='libc|libdl|libpthread'
[ -n "${GPURUN_SANITIZED:-}" ] && allowed_needed="$allowed_needed|libasan|libubsan"
check "it loads nothing into its host but the C library (and libdl and libpthread before glibc 2.34): $needed" \
	test -z "$(tr ' ' '\n' <<<"$needed" | grep -Ev "^($allowed_needed)\.so\.[0-9]+\$|^\$")"

# --- without GPURUN_OPTIONS: nothing at all -------------------------------------------------------
env | grep -v '^LD_PRELOAD=' | sort >"$SCRATCH/env.plain"
env LD_PRELOAD="$PRELOAD" env | grep -v '^LD_PRELOAD=' | sort >"$SCRATCH/env.preloaded"
check "inert without GPURUN_OPTIONS: the environment is unchanged" \
	cmp -s "$SCRATCH/env.plain" "$SCRATCH/env.preloaded"
run env LD_PRELOAD="$PRELOAD" sh -c 'echo out; exit 42'
[ -z "$ERR_TEXT" ] || STATUS="$STATUS, stderr not empty"
expect "inert without GPURUN_OPTIONS: output and exit status unchanged, nothing on stderr" 42 "out"
: >"$RECORD"
run env LD_PRELOAD="$PRELOAD" "$DIRECT"
expect_clean "inert without GPURUN_OPTIONS: cuInit sees every GPU" 0 \
	"init=0 count=4 visible=<unset>" "1 CUDA_VISIBLE_DEVICES=<unset> CUDA_DEVICE_ORDER=<unset>"
with "" "$DIRECT"
expect_clean "an empty GPURUN_OPTIONS is the same as none" 0 \
	"init=0 count=4 visible=<unset>" "1 CUDA_VISIBLE_DEVICES=<unset> CUDA_DEVICE_ORDER=<unset>"
check "inert: the lock directory was never touched" test ! -e "$GPURUN_LOCK_DIR"

# --- eager: chosen before main ---------------------------------------------------------------------
with "--order memory" "$HOST"
expect "eager: the program starts with its GPU chosen" 0 "2|PCI_BUS_ID|2"
with "--uuid" "$HOST"
expect "eager --uuid: UUIDs, CUDA_DEVICE_ORDER left alone" 0 "$UUID2|<unset>|$UUID2"
if command -v python3 >/dev/null; then
	with "--limit 2" python3 -c 'import os; print(os.environ["CUDA_VISIBLE_DEVICES"])'
	expect "eager: a Python interpreter starts with CUDA_VISIBLE_DEVICES set" 0 "2,3"
else
	skip "eager: a Python interpreter starts with CUDA_VISIBLE_DEVICES set" "no python3"
fi

in_background "$SCRATCH/gate" "--order memory" "$DIRECT" --gate "$SCRATCH/gate"
make_gpu3_best
finish_background "$SCRATCH/gate"
expect_clean "eager: chosen at start (the best GPU then), not at cuInit" 0 \
	"init=0 count=1 visible=2" "1 $CHOSEN_2"
reset_machine

# --- lazy: chosen when the program starts CUDA -----------------------------------------------------
# The machine changes between program start and CUDA initialization: the choice must be the
# GPU that is best at cuInit, and nothing may be leased before.
for helper in "$RUNTIME_STYLE" "$DIRECT"; do
	name=$(basename "$helper")
	in_background "$SCRATCH/gate" "--lazy --order memory" "$helper" --gate "$SCRATCH/gate"
	before=$(print_now)
	make_gpu3_best
	finish_background "$SCRATCH/gate"
	want="init=0 count=1 visible=3"
	[ "$name" = cuda_runtime_style ] && want="loaded=3 $want"   # chosen by the dlopen itself
	expect_clean "lazy ($name): the choice is made at CUDA initialization, on the machine as it is then" \
		0 "$want" "1 $CHOSEN_3"
	check "lazy ($name): nothing was chosen or leased before CUDA started" test "$before" = 2
	reset_machine
done

with "--lazy" "$HOST"
expect_clean "lazy: a program that never starts CUDA is left alone" 0 "<unset>|<unset>|<unset>" ""

# Every way a program reaches the driver. Like the real driver, the fake hands out its own
# entry points: a cuInit found through cuGetProcAddress is never the library's hook.
run env LD_PRELOAD="$PRELOAD" "$PROC_ADDRESS" v2
expect "the fake driver's cuGetProcAddress hands out its own cuInit, as the real driver's does" 0 \
	"proc=0 init=0 count=4 visible=<unset> from=libcuda.so.1"
for version in v1 v2; do
	with "--lazy --order memory" "$PROC_ADDRESS" $version
	expect_clean "lazy: a program that finds cuInit through cuGetProcAddress ($version) gets its GPU" 0 \
		"proc=0 init=0 count=1 visible=2 from=libcuda.so.1" "1 $CHOSEN_2"
done
with "--lazy" "$PROBE" noload
expect_clean "lazy: asking whether the driver is loaded (dlopen RTLD_NOLOAD) chooses nothing" 0 \
	"loaded=no visible=<unset>" ""
# Without a driver the hooks answer what the toolkit's stub library answers:
# CUDA_ERROR_STUB_LIBRARY (34).
with "--lazy --order memory" "$PROBE" cuinit
expect_clean "lazy, no driver: the hook's cuInit answers CUDA_ERROR_STUB_LIBRARY" 0 \
	"cuInit=34 visible=2" ""
with "--lazy --order memory" "$PROBE" procaddress
expect_clean "lazy, no driver: the hook's cuGetProcAddress_v2 answers CUDA_ERROR_STUB_LIBRARY" 0 \
	"cuGetProcAddress_v2=34 visible=2" ""

# CUDA's initialization is a choice of NVIDIA GPUs: next to a better AMD GPU too.
GPURUN_SYSFS_ROOT=$FIXTURES/amd/four with "--lazy --order memory" "$DIRECT"
expect_clean "lazy on a machine with AMD GPUs too: CUDA gets an NVIDIA GPU" 0 \
	"init=0 count=1 visible=2" "1 $CHOSEN_2"
for options in "--vendor amd" "--source amdgpu"; do
	GPURUN_SYSFS_ROOT=$FIXTURES/amd/four with "--lazy $options" "$DIRECT"
	expect_error "lazy with $options: a usage error, one line" 2 "^gpurun: GPURUN_OPTIONS: --lazy .*NVIDIA"
	GPURUN_SYSFS_ROOT=$FIXTURES/amd/four run "$GPURUN" --lazy $options "$SCRATCH/never-run"
	expect_error "gpurun --lazy $options: a usage error before anything runs" 2 "^gpurun: --lazy .*NVIDIA"
done

# The real CUDA runtime reaches the fake driver through dlopen("libcuda.so.1").
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ -e "$CUDA_HOME/include/cuda_runtime_api.h" ] && [ -e "$CUDA_HOME/lib64/libcudart.so" ]; then
	if cc -I"$CUDA_HOME/include" -o "$SCRATCH/cudart_count" "$SOURCES/cudart_count.c" \
		-L"$CUDA_HOME/lib64" -lcudart -Wl,-rpath,"$CUDA_HOME/lib64" 2>"$SCRATCH/cc.err"; then
		: >"$RECORD"
		"$SCRATCH/cudart_count" >/dev/null 2>&1
		unpreloaded=$(record_values)
		with "--lazy --order memory" "$SCRATCH/cudart_count"
		if [ "$unpreloaded" = "1 CUDA_VISIBLE_DEVICES=<unset> CUDA_DEVICE_ORDER=<unset>" ] &&
			[ "$(record_values)" = "1 $CHOSEN_2" ] && [ -z "$ERR_TEXT" ]; then
			ok "lazy under the real libcudart: the driver's cuInit saw the chosen GPU"
		else
			not_ok "lazy under the real libcudart: the driver's cuInit saw the chosen GPU" \
				"without the library: $unpreloaded" "with it: $(record_values)" "$OUT_TEXT $ERR_TEXT"
		fi
	else
		not_ok "a program builds against the CUDA toolkit" "$(cat "$SCRATCH/cc.err")"
	fi
else
	skip "lazy under the real libcudart" "no CUDA toolkit at $CUDA_HOME"
fi

# --- once per process, and inherited -------------------------------------------------------------------
# Every choice leaves its lease held for the life of the process, and a second choice could not
# take the first one's GPU: so the leases a process holds count the choices it made.
threads_ok=0
for try in 1 2 3 4 5; do
	in_background "$SCRATCH/hold" "--lazy --order memory" "$DIRECT" --threads 8 --hold "$SCRATCH/hold"
	held=$(leases_of "$BACKGROUND")
	finish_background "$SCRATCH/hold"
	if [ "$held" = 1 ] && [ "$STATUS" = 0 ] && [ -z "$ERR_TEXT" ] &&
		[ "$OUT_TEXT" = "init=0,0,0,0,0,0,0,0 count=1 visible=2" ] &&
		[ "$(record_values)" = "8 $CHOSEN_2" ]; then
		threads_ok=$((threads_ok + 1))
	else
		not_ok "8 threads calling cuInit at once: one choice, seen by all (try $try)" \
			"leases: $held" "status $STATUS" "stdout: $OUT_TEXT" "stderr: $ERR_TEXT" "record: $(record)"
	fi
done
[ "$threads_ok" = 5 ] && ok "8 threads calling cuInit at once: one choice, every thread waited for it (5 tries)"

in_background "$SCRATCH/hold" "--lazy" "$DIRECT" --fork --hold "$SCRATCH/hold"
held=$(leases_of "$BACKGROUND")
finish_background "$SCRATCH/hold"
expect_clean "a forked child's cuInit keeps its parent's choice" 0 \
	"init=0 count=1 visible=2
child init=0 visible=2" "2 $CHOSEN_2"
check "... and makes no choice of its own (one lease)" test "$held" = 1

# A fork while another thread is still choosing: the child must not wait for a choice that no
# thread of its own will ever finish; it makes its own (here: none to be had, CPU fallback).
with "--lazy --limit 3 --timeout 0.5 --interval 0.1 --cpu-fallback" timeout 10 "$DIRECT" --fork-during-init
if [ "$STATUS" = 0 ] && [ "$OUT_TEXT" = "child init=100 visible=
init=100 count=-1 visible=" ] && [ "$(grep -c 'cpu-fallback' <<<"$ERR_TEXT")" = 2 ]; then
	ok "a fork while a thread is choosing: the child chooses for itself, no deadlock"
else
	not_ok "a fork while a thread is choosing: the child chooses for itself, no deadlock" \
		"status $STATUS" "stdout: $OUT_TEXT" "stderr: $ERR_TEXT"
fi

# The environment says whether this process has its GPUs: GPURUN_CHOSEN, while the variable
# that carries the choice still names only GPUs it lists (a program may hand itself a part).
if command -v python3 >/dev/null; then
	with "--lazy" env GPURUN_CHOSEN=0,1 CUDA_VISIBLE_DEVICES=0,1 python3 -c 'import ctypes, os
os.environ["CUDA_VISIBLE_DEVICES"] = "1"
print(ctypes.CDLL("libcuda.so.1").cuInit(0))'
	expect_clean "lazy: a program that hands itself a part of its inherited choice keeps it" 0 \
		"0" "1 CUDA_VISIBLE_DEVICES=1 CUDA_DEVICE_ORDER=<unset>"
else
	skip "lazy: a program that hands itself a part of its inherited choice keeps it" "no python3"
fi
# A program started with its standard descriptors closed: its lease must not take fd 0-2, where
# the program's own next open would land on a lock file (and a close drop the lease).
env LD_PRELOAD="$PRELOAD" GPURUN_OPTIONS="--order memory" sleep 600 <&- >&- 2>&- &
job=$!
for i in $(seq 100); do [ "$(leases_of "$job")" = 1 ] && break; sleep 0.05; done
check "a program started with fds 0-2 closed: its lease is above them" \
	test "$(leases_of "$job")" = 1 -a -z "$(ls /proc/"$job"/fd | grep -x '[012]')"
kill "$job"
wait "$job" 2>/dev/null
# A stale GPURUN_CHOSEN, as in a Slurm job submitted from a shell that gpurun started: sbatch
# copies the environment, then sets CUDA_VISIBLE_DEVICES to the allocation.
with "--order memory" env GPURUN_CHOSEN=0 CUDA_VISIBLE_DEVICES=3 "$HOST"
expect "a stale GPURUN_CHOSEN: the library chooses, inside CUDA_VISIBLE_DEVICES" 0 "3|PCI_BUS_ID|3"

# Forks at the moments a fork from another thread used to copy a half-finished step (see
# tests/integration/preload/fork_windows.c: a library preloaded ahead of ours holds it there).
if cc -shared -fPIC -o "$SCRATCH/fork_windows.so" "$SOURCES/fork_windows.c" -ldl -lpthread; then
	# The hand-off and the end of the choice are one step to a fork: the child has its
	# parent's GPU, not a choice of its own (which could only find that GPU leased, or wait
	# for it forever with --wait).
	: >"$RECORD"
	run timeout 10 env FORK_WINDOW=hand-off LD_PRELOAD="$SCRATCH/fork_windows.so $PRELOAD" \
		GPURUN_OPTIONS="--lazy --order memory" "$DIRECT" --fork-at-hand-off
	OUT_TEXT=$(sort <<<"$OUT_TEXT")
	expect_clean "a fork as the choice is handed off: the child keeps its parent's choice" 0 \
		"child init=0 visible=2
init=0 count=1 visible=2" "2 $CHOSEN_2"
	# The leases become the process's own in the same step: a child forked while they were
	# being kept held its parent's lease and chose a GPU of its own as well.
	: >"$RECORD"
	run timeout 20 env FORK_WINDOW=keep LD_PRELOAD="$SCRATCH/fork_windows.so $PRELOAD" \
		GPURUN_OPTIONS="--lazy --order memory" "$DIRECT"
	OUT_TEXT=$(sort <<<"$OUT_TEXT")      # parent and child write at once
	expect "a fork as the leases are kept: the child keeps its parent's choice" 0 \
		"child: cuda loaded, CUDA_VISIBLE_DEVICES=2, forked again
init=0 count=1 visible=2"
	# configure: right after the fork handlers are registered; they are registered once (a
	# second registration in the child would make its next fork lock the library's lock twice).
	# registering: just before they are in place, when the library has not begun to configure
	# (the child waited for ever for its parent's thread). Either way the child configures,
	# chooses and forks.
	for window in "configure:configures itself" "registering:registers its fork handlers"; do
		: >"$RECORD"
		run timeout 20 env FORK_WINDOW="${window%%:*}" \
			LD_PRELOAD="$SCRATCH/fork_windows.so $PRELOAD" \
			GPURUN_OPTIONS="--lazy --order memory" "$HOST"
		expect "a fork as the library ${window#*:}: the child configures, chooses and forks" 0 \
			"child: cuda loaded, CUDA_VISIBLE_DEVICES=2, forked again
<unset>|<unset>|<unset>"
	done
else
	not_ok "the fork-window test library builds"
fi

with "--order memory" sh -c "\"$HOST\"; \"$HOST\"; \"$GPURUN\" --show | grep -c 'leased by pid'"
expect "children inherit the choice and choose nothing themselves (one lease)" 0 \
	"2|PCI_BUS_ID|2
2|PCI_BUS_ID|2
1"

run env GPURUN_CHOSEN=1 CUDA_VISIBLE_DEVICES=1 LD_PRELOAD="$PRELOAD" GPURUN_OPTIONS="--order memory" \
	sh -c "\"$HOST\"; \"$GPURUN\" --show | grep -c 'leased by pid' || true"
expect "a process whose ancestor chose (GPURUN_CHOSEN) keeps that choice, leases nothing" 0 \
	"1|<unset>|1
0"

# --- the lease ----------------------------------------------------------------------------------------
in_background "$SCRATCH/hold" "--lazy" "$DIRECT" --hold "$SCRATCH/hold"
while_running=$(print_now)
holder=$("$GPURUN" --show | grep "^GPU 2 leased by pid $BACKGROUND ")
finish_background "$SCRATCH/hold"
check "lazy: while the program runs its GPU is leased: gpurun picks another" test "$while_running" = 3
if [[ "$holder" == *": $DIRECT --hold $SCRATCH/hold" ]]; then
	ok "the holder record names the program's own command line"
else
	not_ok "the holder record names the program's own command line" "$holder"
fi
check "once the program has exited its GPU is free again" test "$(print_now)" = 2

run env LD_PRELOAD="$PRELOAD" GPURUN_OPTIONS="--order memory" sh -c 'sleep 30 & echo $!'
sleeper=$OUT_TEXT
check "an exec'd child holds the lease after the process that chose has exited" \
	test "$(print_now)" = 3
kill "$sleeper" 2>/dev/null
for i in $(seq 100); do [ "$(print_now)" = 2 ] && break; sleep 0.05; done
check "... until that child exits too" test "$(print_now)" = 2

# --- failures -----------------------------------------------------------------------------------------
with "--limit 3" "$HOST"
expect_error "eager, not enough GPUs: one line, exit 75, the program never runs" 75 "wanted 3 GPUs"
with "--lazy --limit 3" "$DIRECT"
expect_error "lazy, not enough GPUs: one line, exit 75 at cuInit" 75 "wanted 3 GPUs"
with "--limit 3 --cpu-fallback" "$HOST"
if [ "$STATUS" = 0 ] && [ "$OUT_TEXT" = "|<unset>|" ] && [ "$(wc -l <<<"$ERR_TEXT")" = 1 ] &&
	[[ "$ERR_TEXT" == "gpurun: "*"cpu-fallback"* ]]; then
	ok "eager --cpu-fallback: one line, and the program runs with CUDA_VISIBLE_DEVICES empty"
else
	not_ok "eager --cpu-fallback: one line, and the program runs with CUDA_VISIBLE_DEVICES empty" \
		"status $STATUS" "stdout: $OUT_TEXT" "stderr: $ERR_TEXT"
fi
with "--lazy --limit 3 --cpu-fallback" "$DIRECT"
if [ "$STATUS" = 0 ] && [ "$OUT_TEXT" = "init=100 count=-1 visible=" ] &&
	[ "$(record_values)" = "1 CUDA_VISIBLE_DEVICES= CUDA_DEVICE_ORDER=<unset>" ] &&
	[ "$(wc -l <<<"$ERR_TEXT")" = 1 ]; then
	ok "lazy --cpu-fallback: cuInit sees no GPU and the program goes on"
else
	not_ok "lazy --cpu-fallback: cuInit sees no GPU and the program goes on" "status $STATUS" \
		"stdout: $OUT_TEXT" "stderr: $ERR_TEXT" "record: $(record)"
fi
# --uuid, and the chosen GPU's UUID cannot be read: it is handed out by index, which is right
# only in PCI_BUS_ID order, so that order is set as the launcher sets it.
reset_machine
awk '/^gpu/ { n++ } { print } /^gpu/ && n == 3 { print "error uuid NOT_SUPPORTED" }' \
	"$FIXTURES/four.fixture" >"$SCRATCH/machine.fixture"
with "--uuid --order memory" "$HOST"
expect "--uuid with an unreadable UUID: the index, in PCI_BUS_ID order" 0 "2|PCI_BUS_ID|2"
reset_machine
with "--limit 1 --bogus" "$HOST"
expect_error "a bad GPURUN_OPTIONS: one line naming it, exit 2" 2 "GPURUN_OPTIONS: unknown option '--bogus'"
with "--print" "$HOST"
expect_error "command-only actions in GPURUN_OPTIONS: exit 2" 2 "GPURUN_OPTIONS"
GPURUN_NVML_LIB=$SCRATCH/none.so GPURUN_NVIDIA_SMI=$SCRATCH/no-smi with "--lazy" "$DIRECT"
expect_error "no GPU information: one line, exit 69" 69 "no GPU information"
GPURUN_NVML_LIB=$SCRATCH/none.so GPURUN_NVIDIA_SMI=$SCRATCH/no-smi with "--cpu-fallback" "$HOST"
if [ "$STATUS" = 0 ] && [ "$OUT_TEXT" = "|<unset>|" ] && [ "$(wc -l <<<"$ERR_TEXT")" = 1 ] &&
	[[ "$ERR_TEXT" == "gpurun: no GPU information"*"cpu-fallback"* ]]; then
	ok "no GPU at all with --cpu-fallback: one line, and the program runs on the CPU"
else
	not_ok "no GPU at all with --cpu-fallback: one line, and the program runs on the CPU" \
		"status $STATUS" "stdout: $OUT_TEXT" "stderr: $ERR_TEXT"
fi

# --- nvidia-smi as the source: it must not choose again inside nvidia-smi ---------------------------
# A static stand-in (no preload runs in it) fails if nvidia-smi inherits GPURUN_OPTIONS; without
# the static toolchain, the fake itself runs under a timeout.
smi=$FAKES/nvidia-smi
if cc -static -DFAKE_NVIDIA_SMI="\"$FAKES/nvidia-smi\"" -o "$SCRATCH/smi_guard" \
	"$SOURCES/smi_guard.c" 2>/dev/null; then
	smi=$SCRATCH/smi_guard
fi
GPURUN_NVIDIA_SMI=$smi with "--source nvidia-smi --order memory --smi-timeout 5" timeout 20 "$HOST"
expect "--source nvidia-smi: nvidia-smi runs without GPURUN_OPTIONS, and the choice is made" 0 \
	"2|PCI_BUS_ID|2"
GPURUN_NVIDIA_SMI=$smi with "--lazy --source nvidia-smi" timeout 20 "$DIRECT"
expect_clean "lazy --source nvidia-smi" 0 "init=0 count=1 visible=2" "1 $CHOSEN_2"

# --- the dlopen hook keeps the caller: RUNPATH and $ORIGIN still resolve ---------------------------
mkdir -p "$SCRATCH/runpath/sub"
if cc -shared -fPIC -o "$SCRATCH/runpath/sub/libsibling.so" "$SOURCES/runpath_sibling.c" &&
	cc -shared -fPIC -Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/sub' \
		-o "$SCRATCH/runpath/libloader.so" "$SOURCES/runpath_loader.c" -ldl; then
	LOADER=$SCRATCH/runpath/libloader.so
	run "$BUILD/helpers/dlopen_relative" "$LOADER" libsibling.so
	expect "control: the loader's RUNPATH resolves its sibling" 0 "loaded"
	run env LD_PRELOAD="$PRELOAD" "$BUILD/helpers/dlopen_relative" "$LOADER" libsibling.so
	expect "under the library: a dlopen still resolves through its caller's RUNPATH" 0 "loaded"
	with "--lazy" "$BUILD/helpers/dlopen_relative" "$LOADER" libsibling.so
	expect "... also when the library is active (lazy)" 0 "loaded"
	with "--lazy" "$BUILD/helpers/dlopen_relative" "$LOADER" '$ORIGIN/sub/libsibling.so'
	expect "... and \$ORIGIN still names the caller's directory" 0 "loaded"
else
	not_ok "the RUNPATH test libraries build"
fi

# --- gpurun --lazy ------------------------------------------------------------------------------------
SHOW_PRELOAD='printf "%s|%s\n" "$LD_PRELOAD" "$GPURUN_OPTIONS"'
: >"$RECORD"
run "$GPURUN" --lazy --order memory sh -c "$SHOW_PRELOAD; exec \"\$0\"" "$DIRECT"
expect_clean "gpurun --lazy: preloads the library, passes the options, the program chooses at cuInit" 0 \
	"$PRELOAD|--lazy --order memory
init=0 count=1 visible=2" "1 $CHOSEN_2"

rm -f "$SCRATCH/gate" "$SCRATCH/gate.waiting"
"$GPURUN" --lazy "$DIRECT" --gate "$SCRATCH/gate" >"$SCRATCH/background.out" 2>&1 &
BACKGROUND=$!
await_file "$SCRATCH/gate.waiting"
before=$(print_now)
finish_background "$SCRATCH/gate"
check "gpurun --lazy chooses nothing itself (nothing leased before cuInit)" test "$before" = 2

LD_PRELOAD=$SCRATCH/runpath/sub/libsibling.so run "$GPURUN" --lazy sh -c "$SHOW_PRELOAD"
expect "gpurun --lazy prepends the library to an existing LD_PRELOAD" 0 \
	"$PRELOAD:$SCRATCH/runpath/sub/libsibling.so|--lazy"
# An LD_PRELOAD longer than any path buffer is kept whole (it was cut at 8191 bytes, and the
# loader warned about the broken name at the cut).
long_preload=$(printf '/nonexistent/%0200d.so:' $(seq 60))$SCRATCH/runpath/sub/libsibling.so
LD_PRELOAD=$long_preload run "$GPURUN" --lazy sh -c 'printf "%s\n" "${#LD_PRELOAD}"'
check "gpurun --lazy keeps a long LD_PRELOAD whole (${#long_preload} bytes)" \
	test "$OUT_TEXT" = "$((${#PRELOAD} + 1 + ${#long_preload}))"

mkdir -p "$SCRATCH/elsewhere"
cp "$PRELOAD" "$SCRATCH/elsewhere/libgpurun-preload.so"
run "$GPURUN" --lazy --preload-lib "$SCRATCH/elsewhere/libgpurun-preload.so" sh -c "$SHOW_PRELOAD"
expect "--preload-lib PATH picks the library" 0 "$SCRATCH/elsewhere/libgpurun-preload.so|--lazy"
(cd "$SCRATCH" && run "$GPURUN" --lazy --preload-lib elsewhere/libgpurun-preload.so \
	sh -c "cd /; $SHOW_PRELOAD"; printf '%s\n' "$OUT_TEXT" >"$SCRATCH/relative.out")
check "a relative --preload-lib is made absolute (children may change directory)" \
	test "$(cat "$SCRATCH/relative.out")" = "$SCRATCH/elsewhere/libgpurun-preload.so|--lazy"
run "$GPURUN" --lazy --preload-lib "$SCRATCH/none.so" true
expect_error "--preload-lib: a missing library is a usage error" 2 "none.so"
mkdir -p "$SCRATCH/with space"
cp "$PRELOAD" "$SCRATCH/with space/"
run "$GPURUN" --lazy --preload-lib "$SCRATCH/with space/libgpurun-preload.so" true
expect_error "--preload-lib: a path LD_PRELOAD cannot hold is refused" 2 "space or a colon"
for not_a_library in "$SCRATCH" /etc/passwd "$(type -P true)"; do
	run "$GPURUN" --lazy --preload-lib "$not_a_library" true
	expect_error "--preload-lib $not_a_library: not a shared library, a usage error" 2 \
		"is not a shared library"
done

# The library resolves the lock directory when CUDA starts, perhaps elsewhere: made absolute.
mkdir -p "$SCRATCH/cwd"
cd "$SCRATCH/cwd" || exit 1
run "$GPURUN" --lazy --lock-dir rel-locks sh -c "$SHOW_PRELOAD"
expect "a relative --lock-dir reaches the library absolute" 0 \
	"$PRELOAD|--lazy --lock-dir rel-locks --lock-dir $SCRATCH/cwd/rel-locks"
GPURUN_LOCK_DIR=rel-locks run "$GPURUN" --lazy sh -c "$SHOW_PRELOAD"
expect "a relative GPURUN_LOCK_DIR reaches the library absolute" 0 \
	"$PRELOAD|--lazy --lock-dir $SCRATCH/cwd/rel-locks"
mkdir "$SCRATCH/gone" && cd "$SCRATCH/gone" && rmdir "$SCRATCH/gone"
run "$GPURUN" --lazy --lock-dir rel-locks true
# (has_line: under GPURUN_UNDER the wrapper's shell adds a line of its own about the directory)
expect "... and one that cannot be made absolute is a usage error" 2
has_line "... said so" "^gpurun: --lazy: cannot make the lock directory 'rel-locks' absolute"
cd "$ROOT" || exit 1

mkdir -p "$SCRATCH/lock dir"
: >"$RECORD"
run "$GPURUN" --lazy --lock-dir "$SCRATCH/lock dir" "$DIRECT"
if [ "$STATUS" = 0 ] && [ "$OUT_TEXT" = "init=0 count=1 visible=2" ] &&
	[ -e "$SCRATCH/lock dir/$UUID2.lock" ]; then
	ok "gpurun --lazy passes an option value with a blank intact"
else
	not_ok "gpurun --lazy passes an option value with a blank intact" \
		"status $STATUS" "stdout: $OUT_TEXT" "stderr: $ERR_TEXT"
fi

# --- hosts that fork, use threads, exec; static programs ------------------------------------------
for options in "" "--order memory" "--lazy"; do
	case "$options" in
	"") want="<unset>|<unset>|<unset>" label="inert" ;;
	--lazy) want="<unset>|<unset>|<unset>" label="lazy" ;;
	*) want="2|PCI_BUS_ID|2" label="eager" ;;
	esac
	with "$options" "$HOST" --busy
	expect "a program that runs threads, forks and execs itself keeps working ($label)" 0 \
		"threads=14 fork=7
$want"
done
if cc -static -pthread -o "$SCRATCH/host_static" "$ROOT/tests/helpers/host_program.c" 2>/dev/null; then
	with "--order memory" "$SCRATCH/host_static" --busy
	expect "a static program runs as usual (no preload reaches it)" 0 "threads=14 fork=7
<unset>|<unset>|<unset>"
else
	skip "a static program runs as usual" "the toolchain cannot link -static here"
fi
