#!/usr/bin/env bash
# visible_test.sh: inherited masks end to end, against the fake NVML and the fake libcuda:
# CUDA_VISIBLE_DEVICES of every form on a one-model machine (four.fixture), indices in CUDA's
# order on a mixed one (eight.fixture: CUDA numbers the H100s 4-7 first), Slurm and container
# variables, and MIG (mig.fixture).
. "$(dirname "$0")/lib.sh"
use_fixture four.fixture
uuid_of() { awk -v want="$1" '/^gpu/ { n++ } /^uuid / && n == want + 1 { print $2; exit }' "$GPURUN_FAKE_FIXTURE"; }
UUID2=$(uuid_of 2)
UUID3=$(uuid_of 3)
SHOW_ENV='printf "%s|%s\n" "${CUDA_VISIBLE_DEVICES-unset}" "${CUDA_DEVICE_ORDER-unset}"'
CUDA_DIRECT=$BUILD/helpers/fake_cuda_direct

# --- CUDA_VISIBLE_DEVICES on a machine of one model (GPU0 busy, GPU1 over half full) -------
CUDA_VISIBLE_DEVICES=0,3 run "$GPURUN" --print
expect "indices" 0 "3"

CUDA_VISIBLE_DEVICES=$UUID3 run "$GPURUN" --print
expect "a full UUID" 0 "3"

CUDA_VISIBLE_DEVICES=${UUID2:0:8} run "$GPURUN" --print
expect "a unique UUID prefix" 0 "2"

CUDA_VISIBLE_DEVICES="${UUID3:0:9},${UUID2:0:7}" run "$GPURUN" --print --limit 2
expect "UUID prefixes, in any order" 0 "2,3"

CUDA_VISIBLE_DEVICES="3,GPU-,2" run "$GPURUN" --print --limit all
expect "a UUID among indices ends the list" 0 "3"

CUDA_VISIBLE_DEVICES="${UUID3:0:9},GPU-,${UUID2}" run "$GPURUN" --print --limit all
expect "an ambiguous prefix ends the list" 0 "3"

CUDA_VISIBLE_DEVICES="3,-1,2" run "$GPURUN" --print --limit all
expect "a negative index ends the list" 0 "3"

CUDA_VISIBLE_DEVICES=" 2, 3" run "$GPURUN" --print --limit all
expect "blanks before an index are skipped, as strtoul does" 0 "2,3"

CUDA_VISIBLE_DEVICES="3gpu,2ampere" run "$GPURUN" --print --limit all
expect "anything after an index's digits is ignored" 0 "2,3"

CUDA_VISIBLE_DEVICES="2,7,3" run "$GPURUN" --print --limit all
expect "an index past the last GPU ends the list" 0 "2"

CUDA_VISIBLE_DEVICES=$UUID3 run "$GPURUN" sh -c "$SHOW_ENV"
expect "the hand-off names the same GPU, by its PCI index" 0 "3|PCI_BUS_ID"

CUDA_VISIBLE_DEVICES= run_timed "$GPURUN" --print --wait
expect_error "empty: no GPU, exit 75 at once, also with --wait" 75 \
	"^gpurun: no GPU may be chosen: CUDA_VISIBLE_DEVICES is empty, which gives a program no GPU$"
expect_took "an empty mask does not wait" 0 2

CUDA_VISIBLE_DEVICES= run "$GPURUN" --cpu-fallback sh -c "$SHOW_ENV"
if [ "$STATUS" = 0 ] && [ "$OUT_TEXT" = "|unset" ] && grep -q 'running on the CPU' <<<"$ERR_TEXT"; then
	ok "empty with --cpu-fallback runs the command on the CPU"
else
	not_ok "empty with --cpu-fallback runs the command on the CPU" "$STATUS $OUT_TEXT $ERR_TEXT"
fi

CUDA_VISIBLE_DEVICES=garbage run "$GPURUN" --print
expect_error "garbage: no GPU, and the message quotes it" 75 "CUDA_VISIBLE_DEVICES=garbage names no GPU: CUDA stops at its first entry 'garbage' \(not a number\)"

CUDA_VISIBLE_DEVICES=3,2,3 run "$GPURUN" --print
expect_error "a GPU named twice: CUDA shows none, and neither does gpurun" 75 "names a GPU twice"

CUDA_VISIBLE_DEVICES=${UUID3^^} run "$GPURUN" --print
expect_error "an upper-case UUID names no GPU" 75 "names no GPU"

CUDA_VISIBLE_DEVICES=0,3 run "$GPURUN" --print --explain
if [ "$OUT_TEXT" = 3 ] && grep -q '^gpurun: mask: CUDA_VISIBLE_DEVICES=0,3 (inherited): GPU 0, GPU 3; indices in PCI order (the GPUs are all one model' <<<"$ERR_TEXT" \
	&& grep -q '^gpurun: GPU 1 (GPU-[0-9a-f-]*): not named by CUDA_VISIBLE_DEVICES$' <<<"$ERR_TEXT" \
	&& grep -q '^gpurun: GPU 0 (GPU-[0-9a-f-]*): load 85% is not below 50%$' <<<"$ERR_TEXT" \
	&& grep -q '^gpurun: GPU 3 (GPU-[0-9a-f-]*): chosen$' <<<"$ERR_TEXT"; then
	ok "--explain says which mask applied and why each GPU was or was not chosen"
else
	not_ok "--explain says which mask applied and why each GPU was or was not chosen" "$ERR_TEXT"
fi

CUDA_VISIBLE_DEVICES=2 run "$GPURUN" --print -v
has_line "-v says which mask applied too" '^gpurun: mask: CUDA_VISIBLE_DEVICES=2 \(inherited\): GPU 2'

: >"$SCRATCH/cuda.record"
CUDA_VISIBLE_DEVICES=1,3 GPURUN_FAKE_CUDA_RECORD=$SCRATCH/cuda.record run "$GPURUN" --print
if [ "$OUT_TEXT" = 3 ] && [ ! -s "$SCRATCH/cuda.record" ]; then
	ok "one model: indices need no driver (libcuda is not asked)"
else
	not_ok "one model: indices need no driver (libcuda is not asked)" "$OUT_TEXT" "$(cat "$SCRATCH/cuda.record")"
fi

# --- a mixed machine: CUDA numbers the H100s (PCI 4-7) first ---------------------------------
# eight.fixture: available are GPU 0, 2, 4, 5, 7; cuda_order 4 5 6 7 0 1 2 3.
# What is said of the mask, without --print's own line on the order of the indices it prints
# (checked at the end).
mask_lines() { grep -v "^gpurun: --print gives nvidia-smi's indices" "$@"; }
use_fixture eight.fixture
: >"$SCRATCH/cuda.record"
CUDA_VISIBLE_DEVICES=0 GPURUN_FAKE_CUDA_RECORD=$SCRATCH/cuda.record "$GPURUN" --print >"$SCRATCH/out" 2>"$SCRATCH/err" &
gpurun_pid=$!
wait "$gpurun_pid"
STATUS=$?
if [ "$STATUS" = 0 ] && [ "$(cat "$SCRATCH/out")" = 4 ] && [ -z "$(mask_lines "$SCRATCH/err")" ]; then
	ok "mixed models: index 0 is CUDA's first GPU, PCI 4, as the driver says"
else
	not_ok "mixed models: index 0 is CUDA's first GPU, PCI 4, as the driver says" "status $STATUS" "$(cat "$SCRATCH/out" "$SCRATCH/err")"
fi
if grep -Eq '^pid=[0-9]+ CUDA_VISIBLE_DEVICES=0 CUDA_DEVICE_ORDER=<unset>$' "$SCRATCH/cuda.record" \
	&& ! grep -q "^pid=$gpurun_pid " "$SCRATCH/cuda.record" && [ "$(wc -l <"$SCRATCH/cuda.record")" = 1 ]; then
	ok "the driver is asked once, in a child process: gpurun never loads libcuda itself"
else
	not_ok "the driver is asked once, in a child process: gpurun never loads libcuda itself" "gpurun pid $gpurun_pid" "$(cat "$SCRATCH/cuda.record")"
fi

CUDA_VISIBLE_DEVICES=2,1 run "$GPURUN" --print --limit all
expect "mixed models: indices 2,1 are PCI 6 (busy) and 5" 0 "5"

CUDA_VISIBLE_DEVICES=0 CUDA_DEVICE_ORDER=PCI_BUS_ID run "$GPURUN" --print
expect "CUDA_DEVICE_ORDER=PCI_BUS_ID: indices are PCI indices" 0 "0"

CUDA_VISIBLE_DEVICES=0 CUDA_DEVICE_ORDER=FASTEST_FIRST run "$GPURUN" --print
expect "CUDA_DEVICE_ORDER=FASTEST_FIRST asks the driver too" 0 "4"

# A driver whose process goes quiet without an answer and does not exit (stuck in its
# teardown): gpurun kills it after a short grace, and reads the indices in PCI order.
{ cat "$FIXTURES/eight.fixture"; echo cuda_lingers; } >"$SCRATCH/lingers.fixture"
CUDA_VISIBLE_DEVICES=0 GPURUN_FAKE_FIXTURE=$SCRATCH/lingers.fixture run_timed timeout 20 "$GPURUN" --print
expect "a driver that goes quiet but does not exit: PCI order, with a warning" 0 "0"
has_line "... the warning says the driver gave no answer" "the CUDA driver could not say: its process gave no answer"
expect_took "... after a grace of 2 s, not a hang" 1.9 6

CUDA_VISIBLE_DEVICES=0,9 run "$GPURUN" --print --limit all
expect "mixed models: the driver ends the list at an index past the last GPU" 0 "4"

CUDA_VISIBLE_DEVICES=1 run "$GPURUN" --explain --print
has_line "--explain says the indices were read in CUDA's order" "^gpurun: mask: CUDA_VISIBLE_DEVICES=1 \(inherited\): GPU 5; indices in CUDA's order as the CUDA driver reports it"

# The program then sees exactly that GPU through CUDA.
CUDA_VISIBLE_DEVICES=1 run "$GPURUN" env LD_LIBRARY_PATH="$FAKES" "$CUDA_DIRECT"
if [ "$STATUS" = 0 ] && grep -q '^count: 1$' <<<"$OUT_TEXT" && grep -q "^device 0: $(uuid_of 5)$" <<<"$OUT_TEXT"; then
	ok "the program's CUDA sees the GPU the mask meant (PCI 5) and no other"
else
	not_ok "the program's CUDA sees the GPU the mask meant (PCI 5) and no other" "$OUT_TEXT" "$ERR_TEXT"
fi

GPURUN_CUDA_LIB=$SCRATCH/no-libcuda.so.1 CUDA_VISIBLE_DEVICES=0 run "$GPURUN" --print
if [ "$STATUS" = 0 ] && [ "$OUT_TEXT" = 0 ] && [ "$(mask_lines <<<"$ERR_TEXT" | wc -l)" = 1 ] \
	&& grep -q '^gpurun: CUDA_VISIBLE_DEVICES=0: the GPUs differ in model and CUDA_DEVICE_ORDER is not PCI_BUS_ID, .*not found (no CUDA driver); reading the indices in PCI order' <<<"$ERR_TEXT"; then
	ok "no driver: PCI order, with one warning line"
else
	not_ok "no driver: PCI order, with one warning line" "status $STATUS" "stdout: $OUT_TEXT" "stderr: $ERR_TEXT"
fi

# A driver that shows more devices than the list names has not applied it: its answer cannot
# place the indices (and must not widen the mask, or overrun it).
{ cat "$GPURUN_FAKE_FIXTURE"; echo cuda_ignores_visible; } >"$SCRATCH/broken-driver.fixture"
GPURUN_FAKE_FIXTURE=$SCRATCH/broken-driver.fixture CUDA_VISIBLE_DEVICES=0 run "$GPURUN" --print --limit all
if [ "$STATUS" = 0 ] && [ "$OUT_TEXT" = 0 ] &&
	grep -q 'the CUDA driver showed 8 devices for 1 entries; reading the indices in PCI order' <<<"$ERR_TEXT"; then
	ok "a driver that ignores the list: PCI order with a warning, never more GPUs than asked"
else
	not_ok "a driver that ignores the list: PCI order with a warning, never more GPUs than asked" \
		"status $STATUS" "stdout: $OUT_TEXT" "stderr: $ERR_TEXT"
fi

GPURUN_CUDA_LIB=$SCRATCH/no-libcuda.so.1 CUDA_VISIBLE_DEVICES=$(uuid_of 0) run "$GPURUN" --print
expect "no driver, UUIDs: no warning (a UUID is right in any order)" 0 "0"
[ -z "$(mask_lines <<<"$ERR_TEXT")" ] && ok "... and nothing on stderr about the mask" ||
	not_ok "... and nothing on stderr about the mask" "$ERR_TEXT"

# --- Slurm and containers (the variables only; slurm_test.sh runs a real Slurm) ----------------
use_fixture four.fixture
SLURM_JOB_ID=7 SLURM_STEP_GPUS=2,3 CUDA_VISIBLE_DEVICES=2,3 run "$GPURUN" --print --limit all
expect "Slurm: the step's GPUs" 0 "2,3"

SLURM_JOB_ID=7 SLURM_STEP_GPUS=2 SLURM_JOB_GPUS=1,2,3 CUDA_VISIBLE_DEVICES=2,3 run "$GPURUN" --print --limit all --explain
if [ "$OUT_TEXT" = 2 ] && grep -q '^gpurun: GPU 3 (.*): outside the Slurm allocation$' <<<"$ERR_TEXT" \
	&& grep -q '^gpurun: mask: SLURM_STEP_GPUS=2 (the Slurm step' <<<"$ERR_TEXT"; then
	ok "Slurm: CUDA_VISIBLE_DEVICES cannot take a job outside SLURM_STEP_GPUS"
else
	not_ok "Slurm: CUDA_VISIBLE_DEVICES cannot take a job outside SLURM_STEP_GPUS" "$OUT_TEXT" "$ERR_TEXT"
fi

SLURM_JOB_ID=7 SLURM_JOB_GPUS=0,1 run "$GPURUN" --print
expect_error "Slurm: busy allocated GPUs are waited for, never swapped for free ones" 75 "wanted 1 GPU, found 0 available"

SLURM_JOB_ID=7 run "$GPURUN" --print --explain
has_line "Slurm: a job without a GPU allocation is not limited, and --explain says so" "^gpurun: mask: Slurm job 7 has no GPU allocation"

# A confined job: its cgroup shows it two GPUs (the fixture's two), Slurm's numbers are the node's.
cat >"$SCRATCH/two.fixture" <<EOF
gpu
uuid $(uuid_of 2)
gpu
uuid $(uuid_of 3)
EOF
use_fixture "$SCRATCH/two.fixture"
SLURM_JOB_ID=7 SLURM_STEP_GPUS=5,6 CUDA_VISIBLE_DEVICES=0,1 run "$GPURUN" --print --limit all
expect "Slurm with cgroup confinement: local indices in CUDA_VISIBLE_DEVICES" 0 "0,1"
use_fixture four.fixture

NVIDIA_VISIBLE_DEVICES=none run "$GPURUN" --print
expect_error "NVIDIA_VISIBLE_DEVICES=none: no GPU, exit 75" 75 "no GPU may be chosen: NVIDIA_VISIBLE_DEVICES=none: this container was given no GPU"

NVIDIA_VISIBLE_DEVICES=none run "$GPURUN" --cpu-fallback sh -c "$SHOW_ENV"
expect "NVIDIA_VISIBLE_DEVICES=none with --cpu-fallback: the CPU" 0 "|unset"

# "void": the runtime injected nothing itself; CDI specs set it where the GPUs came in by CDI.
NVIDIA_VISIBLE_DEVICES=void run "$GPURUN" --print
expect "NVIDIA_VISIBLE_DEVICES=void (CDI): what NVML sees is what the container has" 0 "2"

NVIDIA_VISIBLE_DEVICES=$(tr 'a-f' 'A-F' <<<"$UUID3" | sed 's/^GPU-/gpu-/') run "$GPURUN" --print
expect "NVIDIA_VISIBLE_DEVICES: UUIDs match in any case, as the toolkit matches them" 0 "3"

NVIDIA_VISIBLE_DEVICES=all run "$GPURUN" --print
expect "NVIDIA_VISIBLE_DEVICES=all" 0 "2"

NVIDIA_VISIBLE_DEVICES=$UUID3 run "$GPURUN" --print
expect "NVIDIA_VISIBLE_DEVICES with a UUID" 0 "3"

# --- MIG -------------------------------------------------------------------------------------
# mig.fixture: GPU0 and GPU2 whole and idle; GPU1 in MIG mode with instances MIG 0 (nearly
# full), MIG 1, MIG 2 (slot 3); GPU3 in MIG mode with one instance.
use_fixture mig.fixture
MIG10=$(grep -m1 '^uuid MIG-5c1e' "$GPURUN_FAKE_FIXTURE" | cut -d' ' -f2)
MIG11=$(grep -m1 '^uuid MIG-6d2f' "$GPURUN_FAKE_FIXTURE" | cut -d' ' -f2)
MIG12=$(grep -m1 '^uuid MIG-7e30' "$GPURUN_FAKE_FIXTURE" | cut -d' ' -f2)
MIG30=$(grep -m1 '^uuid MIG-8f41' "$GPURUN_FAKE_FIXTURE" | cut -d' ' -f2)

CUDA_VISIBLE_DEVICES=1 run "$GPURUN" --print
expect_error "MIG: an instance's load is unknown, so it is not chosen by default" 75 "wanted 1 GPU, found 0 available \(0 leased by other jobs, 3 busy"

CUDA_VISIBLE_DEVICES=1 run "$GPURUN" --print --explain
has_line "--explain says why: NVML has no utilization for MIG instances" "^gpurun: GPU 1 MIG 1 \(MIG-6d2f[0-9a-f-]*\): load unknown: NVML reports no utilization for MIG instances \(see --include-nan\)$"
has_line "--explain: a MIG-enabled GPU is not chosen itself" "^gpurun: GPU 1 \(GPU-1b22[0-9a-f-]*\): MIG enabled: its MIG instances are chosen instead$"

CUDA_VISIBLE_DEVICES=1 run "$GPURUN" --print --include-nan
expect "MIG: a GPU index allows its instances; the hand-off is the instance's UUID" 0 "$MIG11"

CUDA_VISIBLE_DEVICES=1 run "$GPURUN" --include-nan --order free sh -c "$SHOW_ENV"
expect "MIG: --order free picks the instance with the most free memory (by UUID: no order needed)" 0 "$MIG11|unset"

CUDA_VISIBLE_DEVICES=$MIG12 run "$GPURUN" --print --include-nan
expect "MIG: a MIG UUID mask" 0 "$MIG12"

CUDA_VISIBLE_DEVICES=MIG-GPU-1b22df11/9/0 run "$GPURUN" --print --include-nan
expect "MIG: the pre-R470 form MIG-GPU-<uuid>/<gi>/<ci>" 0 "$MIG12"

CUDA_VISIBLE_DEVICES="$MIG30,GPU-0a11" run "$GPURUN" --print --include-nan --limit all
expect "MIG: several GPUs wanted, whole ones first" 0 "0"

run "$GPURUN" --print --include-nan --limit 2
expect "MIG: --limit 2 takes whole GPUs, leaving instances out" 0 "0,2"

CUDA_VISIBLE_DEVICES=1,3 run "$GPURUN" --print --include-nan --limit 2
expect_error "MIG: two instances cannot be handed to one process: exit 75 saying why" 75 \
	"wanted 2 GPUs, found 3 available .*MIG instances do not count: CUDA shows a process only one MIG instance"

CUDA_VISIBLE_DEVICES=1,3 run "$GPURUN" --print --include-nan --limit all
expect "MIG: --limit all with only instances takes one" 0 "$MIG11"

CUDA_VISIBLE_DEVICES=1 run "$GPURUN" --print --include-nan --limit 3 --min-count 1
expect "MIG: --min-count 1 settles for one instance" 0 "$MIG11"

# Leases are per instance: two jobs on GPU 1 get two instances; the lock files are named by
# the MIG UUIDs.
# The first job outlives any slowness of the checks (valgrind runs each gpurun for seconds);
# it is killed explicitly, and exec makes its pid the one that holds the lease.
CUDA_VISIBLE_DEVICES=1 "$GPURUN" --include-nan sh -c 'echo "$CUDA_VISIBLE_DEVICES" >"$0"; exec sleep 600' "$SCRATCH/first" &
first_pid=$!
for _ in $(seq 1200); do [ -s "$SCRATCH/first" ] && break; sleep 0.05; done
CUDA_VISIBLE_DEVICES=1 run "$GPURUN" --include-nan sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
if [ "$(cat "$SCRATCH/first")" = "$MIG11" ] && [ "$OUT_TEXT" = "$MIG12" ] && [ -f "$GPURUN_LOCK_DIR/$MIG11.lock" ]; then
	ok "MIG: leases are per instance (lock file $MIG11.lock)"
else
	not_ok "MIG: leases are per instance" "first: $(cat "$SCRATCH/first")" "second: $OUT_TEXT $ERR_TEXT" "$(ls "$GPURUN_LOCK_DIR")"
fi
CUDA_VISIBLE_DEVICES=$MIG11 run "$GPURUN" --print --include-nan
expect_error "MIG: a leased instance is not handed out again" 75 "1 leased by other jobs"
kill "$first_pid" 2>/dev/null
wait "$first_pid" 2>/dev/null

# The nvidia-smi path sees GPUs only: a MIG-enabled GPU is one row whose load is unknown.
CUDA_VISIBLE_DEVICES=1 run "$GPURUN" --print --source nvidia-smi
expect_error "nvidia-smi: a MIG-enabled GPU has no known load and is not chosen" 75 "wanted 1 GPU"

# MIG faults. GPU 0 is busy; GPU 1 is split into two instances whose UUIDs cannot be read: CUDA
# knows an instance by its UUID alone, and the parent's index would let it pick one itself.
# GPU 2's MIG mode cannot be read: it may be split, so it is not handed out whole.
cat >"$SCRATCH/mig-faults.fixture" <<FIXTURE
gpu
util 90
memory 81920 60000
gpu
memory 81920 0
mig on
mig_instance
error uuid UNKNOWN
memory 10240 0
mig_instance
error uuid UNKNOWN
memory 10240 0
gpu
error mig_mode NO_PERMISSION
FIXTURE
use_fixture "$SCRATCH/mig-faults.fixture"
run "$GPURUN" --print --include-nan
expect_error "MIG: instances without a UUID and a GPU of unknown MIG mode are not handed out" 75 \
	"wanted 1 GPU, found 0 available"
run "$GPURUN" --print --include-nan --explain
has_line "--explain: a MIG instance without a UUID is not chosen" \
	"^gpurun: GPU 1 MIG 0 \(\): MIG instance without a UUID: CUDA could not be told which instance$"
has_line "--explain: a GPU whose MIG mode is unknown says so, not \"MIG enabled\"" \
	"^gpurun: GPU 2 \([^)]*\): MIG mode unknown: it may be split, so only MIG instances NVML lists can be chosen$"

# A printed index list is nvidia-smi's numbering: where CUDA's own order differs (GPUs of
# different models), the caller must set CUDA_DEVICE_ORDER=PCI_BUS_ID too, and is told so.
use_fixture eight.fixture
run "$GPURUN" --print --limit 2
if [ "$STATUS" = 0 ] && [ "$OUT_TEXT" = "0,2" ] &&
	grep -q "^gpurun: --print gives nvidia-smi's indices (0,2): .*CUDA_DEVICE_ORDER=PCI_BUS_ID" <<<"$ERR_TEXT"; then
	ok "--print on GPUs of different models: the list, and a line on CUDA_DEVICE_ORDER"
else
	not_ok "--print on GPUs of different models: the list, and a line on CUDA_DEVICE_ORDER" \
		"status $STATUS" "stdout: $OUT_TEXT" "stderr: $ERR_TEXT"
fi
stderr_is_empty() { [ -z "$ERR_TEXT" ]; }
CUDA_DEVICE_ORDER=PCI_BUS_ID run "$GPURUN" --print --limit 2
check "... not with CUDA_DEVICE_ORDER=PCI_BUS_ID set" stderr_is_empty
run "$GPURUN" --print --limit 2 --uuid
check "... nor with --uuid" stderr_is_empty
use_fixture four.fixture
run "$GPURUN" --print
check "... nor on GPUs of one model" stderr_is_empty
