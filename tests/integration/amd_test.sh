#!/usr/bin/env bash
# amd_test.sh: gpurun on AMD GPUs described by the sysfs/procfs trees in tests/fixtures/amd, alone
# and next to the fake NVIDIA machine: selection, leases, ROCR_VISIBLE_DEVICES (and nothing in
# HIP_VISIBLE_DEVICES), the inherited ROCR mask, and the reports.
. "$(dirname "$0")/lib.sh"
AMD=$FIXTURES/amd
# four: AMD 0 = 03:00.0 busy, 1 = 43:00.0 free (1 GiB used), 2 = 83:00.0 memory nearly full,
# 3 = c1:00.0 free (10 MiB used).
export GPURUN_SYSFS_ROOT=$AMD/four
# No NVIDIA GPU at all: the AMD ones alone.
export GPURUN_NVML_LIB=$SCRATCH/no-nvml.so GPURUN_NVIDIA_SMI=$SCRATCH/no-nvidia-smi
SHOW_ENV='printf "%s|%s|%s|%s|%s\n" "${ROCR_VISIBLE_DEVICES-unset}" "${HIP_VISIBLE_DEVICES-unset}" "${CUDA_VISIBLE_DEVICES-unset}" "${CUDA_DEVICE_ORDER-unset}" "${GPURUN_CHOSEN-unset}"'

# Waits (up to 5 s) until `gpurun --print ARGS` answers $1.
await_print() {
	local want=$1 i
	shift
	for i in $(seq 100); do
		[ "$("$GPURUN" --print "$@" 2>/dev/null)" = "$want" ] && return 0
		sleep 0.05
	done
	return 1
}

compare_table() { # NAME EXPECTED-FILE
	if [ "$STATUS" = 0 ] && cmp -s "$SCRATCH/stdout" "$2"; then ok "$1"; else not_ok "$1" "status $STATUS" "$(diff "$SCRATCH/stdout" "$2")"; fi
}

# --- choosing ---------------------------------------------------------------------------------------
run "$GPURUN" --print
expect "an AMD-only machine: the first free AMD GPU, in ROCr's numbering" 0 "1"
run "$GPURUN" --print --order memory
expect "--order memory picks the emptiest" 0 "3"
run "$GPURUN" --print --limit all
expect "--limit all: every free one" 0 "1,3"
run "$GPURUN" --print --limit 3
expect_error "not enough free AMD GPUs: exit 75" 75 "wanted 3 GPUs, found 2 available"
run "$GPURUN" --print --max-memory 0.7 --max-load 0.1 --limit 3
expect "thresholds apply to AMD GPUs as to NVIDIA ones" 0 "1,2,3"
run "$GPURUN" --print --exclude 1
expect "--exclude by index" 0 "3"
run "$GPURUN" --print --exclude GPU-0c5e61f7a9b0d4e2
expect "--exclude by AMD UUID" 0 "3"
run "$GPURUN" --print --uuid --limit 2
expect "--uuid hands out ROCr's UUIDs (GPU-<unique_id>)" 0 "GPU-0c5e61f7a9b0d4e2,GPU-3a90a60dbaf2e93f"
run "$GPURUN" --print --vendor amd --source amdgpu
expect "--vendor amd --source amdgpu" 0 "1"
run "$GPURUN" --print --vendor nvidia
expect_error "--vendor nvidia on an AMD-only machine: no GPU information" 69 "NVML"

# --- the hand-off ---------------------------------------------------------------------------------
run "$GPURUN" --limit 2 sh -c "$SHOW_ENV"
expect "ROCR_VISIBLE_DEVICES gets the choice; HIP, CUDA and CUDA_DEVICE_ORDER stay unset" 0 \
	"1,3|unset|unset|unset|1,3"
# A stale choice on an AMD machine: ROCR_VISIBLE_DEVICES carries it, and -v names that variable.
run env GPURUN_CHOSEN=2 ROCR_VISIBLE_DEVICES=2 "$GPURUN" --print
expect "a job's AMD choice is kept (GPU 2, busy: choosing would fail)" 0 "2"
run env GPURUN_CHOSEN=1,3 ROCR_VISIBLE_DEVICES=3 "$GPURUN" --print
expect "a worker handed a part of the job's AMD GPUs keeps it" 0 "3"
run env GPURUN_CHOSEN=1 ROCR_VISIBLE_DEVICES=0,3 "$GPURUN" --print -v
has_line "a stale AMD choice: -v names ROCR_VISIBLE_DEVICES" \
	"^gpurun: GPURUN_CHOSEN=1 is stale: ROCR_VISIBLE_DEVICES=0,3 is not that choice"
# HIP's own lists index into what ROCR_VISIBLE_DEVICES leaves: a Slurm job's
# CUDA_VISIBLE_DEVICES=1,3 and GPU_DEVICE_ORDINAL=1,3 would leave a one-GPU choice nothing.
HIP_VISIBLE_DEVICES=0 CUDA_VISIBLE_DEVICES=1,3 GPU_DEVICE_ORDINAL=1,3 run "$GPURUN" \
	sh -c "$SHOW_ENV; echo \"\${GPU_DEVICE_ORDINAL-unset}\""
expect "HIP's own lists (HIP_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL) are unset" 0 \
	"1|unset|unset|unset|1
unset"
run "$GPURUN" --uuid sh -c "$SHOW_ENV"
expect "--uuid: a UUID in ROCR_VISIBLE_DEVICES" 0 "GPU-0c5e61f7a9b0d4e2|unset|unset|unset|GPU-0c5e61f7a9b0d4e2"
run "$GPURUN" --limit 3 --cpu-fallback sh -c "$SHOW_ENV"
if [ "$STATUS" = 0 ] && [ "$OUT_TEXT" = "|unset||unset|" ] && grep -q "running on the CPU" <<<"$ERR_TEXT"; then
	ok "--cpu-fallback hides the AMD GPUs with an empty ROCR_VISIBLE_DEVICES"
else
	not_ok "--cpu-fallback hides the AMD GPUs with an empty ROCR_VISIBLE_DEVICES" "status $STATUS" "$OUT_TEXT" "$ERR_TEXT"
fi

# --- an inherited ROCR_VISIBLE_DEVICES is a mask -------------------------------------------------
ROCR_VISIBLE_DEVICES=0,3 run "$GPURUN" --print
expect "an inherited index mask restricts the choice" 0 "3"
ROCR_VISIBLE_DEVICES=GPU-3A90A60DBAF2E93F,1 run "$GPURUN" --print --limit 2
expect "an inherited UUID mask (any case), in mask order of GPUs" 0 "1,3"
ROCR_VISIBLE_DEVICES=0,2 run "$GPURUN" --print
expect_error "nothing free inside the mask: exit 75" 75 "wanted 1 GPU"
ROCR_VISIBLE_DEVICES= run "$GPURUN" --print
expect_error "an empty mask permits none, and the message says which variable" 75 \
	"no GPU may be chosen: ROCR_VISIBLE_DEVICES is empty"
ROCR_VISIBLE_DEVICES=1,7 run "$GPURUN" --print --explain --limit 2
if [ "$STATUS" = 75 ] &&
	grep -q "^gpurun: mask: ROCR_VISIBLE_DEVICES=1,7 (inherited): AMD GPU 1$" <<<"$ERR_TEXT" &&
	grep -q "^gpurun: GPU 0 (.*): not named by ROCR_VISIBLE_DEVICES$" <<<"$ERR_TEXT" &&
	grep -q "^gpurun: GPU 1 (.*): available, but too few GPUs were (all or nothing)$" <<<"$ERR_TEXT"; then
	ok "--explain: the ROCR_VISIBLE_DEVICES rule, and each AMD GPU it leaves out"
else
	not_ok "--explain: the ROCR_VISIBLE_DEVICES rule, and each AMD GPU it leaves out" \
		"status $STATUS" "$ERR_TEXT"
fi
ROCR_VISIBLE_DEVICES=0,9,3 run "$GPURUN" --print
expect_error "an entry naming no GPU ends the mask (3 is after it)" 75 "wanted 1 GPU"
ROCR_VISIBLE_DEVICES=3 run "$GPURUN" sh -c "$SHOW_ENV"
expect "the program gets the chosen physical index in place of the inherited mask" 0 "3|unset|unset|unset|3"

# --- leases ------------------------------------------------------------------------------------------
"$GPURUN" sleep 600 &
job=$!
check "a running AMD job's GPU is skipped by the next gpurun" await_print 3
check "its lock file is named by ROCr's UUID" test -f "$GPURUN_LOCK_DIR/GPU-0c5e61f7a9b0d4e2.lock"
run "$GPURUN" --show
if grep -Eq "^GPU 1 leased by pid $job \(.*\) since .*: sleep 600$" <<<"$OUT_TEXT"; then
	ok "--show names the holder of an AMD GPU"
else
	not_ok "--show names the holder of an AMD GPU" "$OUT_TEXT"
fi
run "$GPURUN" --print
expect "two jobs never share an AMD GPU" 0 "3"
{ kill -9 "$job"; wait "$job"; } 2>/dev/null
check "SIGKILL frees it" await_print 1

# A board without a unique id is leased by its PCI address.
GPURUN_SYSFS_ROOT=$AMD/one "$GPURUN" --include-nan sleep 600 &
job=$!
for i in $(seq 100); do [ -f "$GPURUN_LOCK_DIR/pci-0000_0b_00.0.lock" ] && break; sleep 0.05; done
check "a GPU without a UUID is leased by its PCI address" test -f "$GPURUN_LOCK_DIR/pci-0000_0b_00.0.lock"
GPURUN_SYSFS_ROOT=$AMD/one run "$GPURUN" --print --include-nan
expect_error "and the lease holds" 75 "1 leased by other jobs"
{ kill -9 "$job"; wait "$job"; } 2>/dev/null

# --- reports -------------------------------------------------------------------------------------------
run "$GPURUN" --show
compare_table "--show: GPUtil's table for AMD GPUs" "$EXPECTED/amd-four.table"
run "$GPURUN" --show --all
compare_table "--show --all: GPUtil's full table for AMD GPUs" "$EXPECTED/amd-four.all.table"
run "$GPURUN" --show --wide --processes
compare_table "--show --wide --processes: vendor, bus, power, and the fdinfo processes" \
	"$EXPECTED/amd-four.processes.table"
run "$GPURUN" --show --json
if [ "$STATUS" = 0 ] && python3 -c '
import json, sys
doc = json.load(sys.stdin)
assert doc["source"] == "amdgpu", doc["source"]
assert doc["processes_unseen"] == 1, doc["processes_unseen"]   # pid 6363: its fd cannot be read
gpus = doc["gpus"]
assert [g["index"] for g in gpus] == [0, 1, 2, 3]
assert gpus[0]["uuid"] == "GPU-b39adaf836600b31" and gpus[0]["pci.bus_id"] == "0000:03:00.0"
assert gpus[0]["utilization.gpu"] == 97 and gpus[0]["memory.used"] == 61440
assert gpus[0]["temperature.gpu"] == 71 and gpus[0]["power.draw"] == 287.5
assert gpus[0]["processes"] == [{"pid": 4242, "username": "root", "command": "python3 train.py --lr 3e-4", "gpu_memory_usage": 59392}], gpus[0]["processes"]
assert gpus[3]["processes"] == []
' <"$SCRATCH/stdout"; then ok "--show --json: AMD GPUs with gpustat keys and their processes"; else not_ok "--show --json: AMD GPUs with gpustat keys and their processes" "$OUT_TEXT"; fi
# A kernel thread (no command line) holds no DRM file: unreadable, it is not counted as unseen.
cp -a "$AMD/four" "$SCRATCH/four-kthread"
mkdir "$SCRATCH/four-kthread/proc/9999"
: >"$SCRATCH/four-kthread/proc/9999/fd"
: >"$SCRATCH/four-kthread/proc/9999/cmdline"
printf 'kworker/0:1\n' >"$SCRATCH/four-kthread/proc/9999/comm"
GPURUN_SYSFS_ROOT=$SCRATCH/four-kthread run "$GPURUN" --show --processes
if grep -q "^1 process of other users could not be looked at" <<<"$OUT_TEXT"; then
	ok "a kernel thread whose descriptors cannot be read is not counted as unseen"
else
	not_ok "a kernel thread whose descriptors cannot be read is not counted as unseen" "$OUT_TEXT"
fi
GPURUN_SYSFS_ROOT=$AMD/broken run "$GPURUN" --show --all --wide
compare_table "broken cards: the readable ones, unknown fields as nan and [N/A]" "$EXPECTED/amd-broken.table"
GPURUN_SYSFS_ROOT=$AMD/broken run "$GPURUN" --print --include-nan
expect_error "unknown free memory is never available, as in GPUtil" 75 "found 0 available"
GPURUN_SYSFS_ROOT=$AMD/one run "$GPURUN" --print
expect_error "an unknown load is not available..." 75 "found 0 available"
GPURUN_SYSFS_ROOT=$AMD/one run "$GPURUN" --print --include-nan
expect "...unless --include-nan" 0 "0"

# --- eight cards --------------------------------------------------------------------------------------
GPURUN_SYSFS_ROOT=$AMD/eight run "$GPURUN" --print --limit all --max-load 0.6 --max-memory 0.6
expect "eight AMD GPUs: every one under both thresholds" 0 "0,3,4,5"
GPURUN_SYSFS_ROOT=$AMD/eight run "$GPURUN" --print --limit 2 --order free
expect "--order free" 0 "0,4"
GPURUN_SYSFS_ROOT=$AMD/eight ROCR_VISIBLE_DEVICES=6,7 run "$GPURUN" --print --limit all --max-load 1 --max-memory 1
expect "a mask on eight" 0 "6,7"

# Slurm's indices on an AMD node are the cards' own: the job's allocation holds here too.
GPURUN_SYSFS_ROOT=$AMD/eight SLURM_JOB_ID=7 SLURM_JOB_GPUS=0,6 run "$GPURUN" --print --limit all \
	--max-load 1 --max-memory 1
expect "Slurm on an AMD node: only the allocated cards" 0 "0,6"
GPURUN_SYSFS_ROOT=$AMD/eight SLURM_JOB_ID=7 SLURM_JOB_GPUS=0,6 run "$GPURUN" --print --explain \
	--limit all --max-load 1 --max-memory 1
has_line "... and --explain names them" "^gpurun: mask: SLURM_JOB_GPUS=0,6 \(the Slurm job's GPUs, node indices\): AMD GPU 0, AMD GPU 6$"

# --- no AMD GPU --------------------------------------------------------------------------------------
GPURUN_SYSFS_ROOT=$SCRATCH/nothing run "$GPURUN" --print --source amdgpu
expect_error "--source amdgpu without AMD GPUs: exit 69, naming the place" 69 \
	"no GPU information: amdgpu: cannot read $SCRATCH/nothing/sys/class/drm"
GPURUN_SYSFS_ROOT=$SCRATCH/nothing run "$GPURUN" --print
expect_error "nothing at all: exit 69 naming NVML, nvidia-smi and amdgpu" 69 "NVML.*nvidia-smi.*amdgpu"
GPURUN_SYSFS_ROOT=$SCRATCH/nothing/$(printf 'deep%.0s' {1..80}) run "$GPURUN" --print
expect_error "... a reason too long for the line is cut where it says so" 69 "amdgpu: cannot read .*deepdeep\.\.\.$"
run "$GPURUN" --print --source nvml --vendor amd
expect_error "--source nvml --vendor amd is a contradiction" 2 "--source nvml reads NVIDIA GPUs only"

# --- NVIDIA and AMD in one machine ------------------------------------------------------------------
# four.fixture: NVIDIA 0 busy, 1 half full, 2 and 3 free; then AMD as above, as 4..7.
export GPURUN_NVML_LIB=$FAKES/libnvidia-ml.so.1 GPURUN_NVIDIA_SMI=$FAKES/nvidia-smi
use_fixture four.fixture
run "$GPURUN" --show
compare_table "--show: NVIDIA GPUs 0-3, then AMD GPUs 4-7" "$EXPECTED/mixed.table"
run "$GPURUN" --show --json
if [ "$STATUS" = 0 ] && python3 -c '
import json, sys
doc = json.load(sys.stdin)
assert doc["source"] == "nvml+amdgpu" and doc["driver_version"] == "550.54.15"
assert [g["index"] for g in doc["gpus"]] == list(range(8))
assert doc["gpus"][4]["uuid"] == "GPU-b39adaf836600b31"
' <"$SCRATCH/stdout"; then ok "--json on a mixed machine"; else not_ok "--json on a mixed machine" "$OUT_TEXT"; fi
run "$GPURUN" --limit 2 sh -c "$SHOW_ENV"
expect "both vendors: NVIDIA GPUs, in CUDA_VISIBLE_DEVICES" 0 "unset|unset|2,3|PCI_BUS_ID|2,3"
run "$GPURUN" --limit 2 --order memory sh -c "$SHOW_ENV"
expect "both vendors: NVIDIA GPUs even where --order memory puts an AMD GPU first" 0 \
	"unset|unset|2,3|PCI_BUS_ID|2,3"
run "$GPURUN" --print --limit 3
expect_error "never mixed: 2 free NVIDIA GPUs and free AMD ones are not 3" 75 "wanted 3 GPUs"
run "$GPURUN" --print --vendor amd --limit 2 --order memory
expect "--vendor amd: AMD GPUs, in ROCr's numbering" 0 "3,1"
run "$GPURUN" --print --vendor nvidia --order last
expect "--vendor nvidia" 0 "3"
# A CUDA job whose NVIDIA GPUs are busy waits for them: an AMD GPU would leave it on a busy one.
run "$GPURUN" --print --exclude 2,3
expect_error "busy NVIDIA GPUs left by --exclude: the job waits, it is not sent to AMD" 75 \
	"wanted 1 GPU"
CUDA_VISIBLE_DEVICES=0 run "$GPURUN" --print
expect_error "busy NVIDIA GPU left by CUDA_VISIBLE_DEVICES: the job waits" 75 "wanted 1 GPU"
run "$GPURUN" --print --exclude 0,1,2,3
expect "--exclude of every NVIDIA GPU leaves AMD ones" 0 "1"
run "$GPURUN" --print --exclude 0,1,2,3,5
expect "--exclude takes the table's index for AMD GPUs too" 0 "3"
CUDA_VISIBLE_DEVICES= run "$GPURUN" --print
expect "CUDA_VISIBLE_DEVICES empty: no NVIDIA GPU, so AMD ones" 0 "1"
# Only the job's vendor counts: one NVIDIA GPU is never two, however many AMD GPUs are free.
CUDA_VISIBLE_DEVICES=2 run timeout 20 "$GPURUN" --wait --limit 2 --print
expect_error "both vendors: one NVIDIA GPU in the mask, --limit 2 fails at once" 75 \
	"waiting cannot help: the masks and --exclude leave 1 whole GPU"
# And the line is the job's vendor's GPUs: --vendor nvidia and no --vendor wait in one line.
CUDA_VISIBLE_DEVICES=2 "$GPURUN" sleep 60 &
holder=$!
for i in $(seq 200); do CUDA_VISIBLE_DEVICES=2 "$GPURUN" --print >/dev/null 2>&1 || break; sleep 0.05; done
CUDA_VISIBLE_DEVICES=2 "$GPURUN" --vendor nvidia --wait --interval 30 true 2>/dev/null &
waiter=$!
await_tickets 1
CUDA_VISIBLE_DEVICES=2 run "$GPURUN" --attempts 2 --interval 0.1 --print
expect_error "both vendors: a --vendor nvidia waiter and a plain one share the NVIDIA GPU's line" 75 \
	"1 waiting ahead"
kill "$holder" "$waiter"
wait "$holder" "$waiter" 2>/dev/null
ROCR_VISIBLE_DEVICES= run "$GPURUN" --print --order memory --vendor amd
expect_error "ROCR_VISIBLE_DEVICES empty: no AMD GPU" 75 "no GPU may be chosen|wanted 1 GPU"
ROCR_VISIBLE_DEVICES= run "$GPURUN" --print --order memory
expect "ROCR_VISIBLE_DEVICES masks AMD GPUs only" 0 "2"
run "$GPURUN" --print --explain --exclude 2,3
has_line "both vendors: --explain says an AMD GPU is not this job's, not that it is not needed" \
	"^gpurun: GPU 5 \(GPU-0c5e61f7a9b0d4e2\): an AMD GPU: this job gets NVIDIA GPUs \(--vendor amd for a ROCm job\)$"
# A MIG-enabled NVIDIA GPU with no instance is still the job's: a CUDA job is not sent to AMD.
printf 'gpu\nmemory 81920 0\nmig on\n' >"$SCRATCH/mig-only.fixture"
GPURUN_FAKE_FIXTURE=$SCRATCH/mig-only.fixture run "$GPURUN" --print
expect_error "both vendors: a MIG-enabled NVIDIA GPU without instances is no reason to hand out AMD" \
	75 "wanted 1 GPU"
run "$GPURUN" --print --explain --order memory --vendor amd
if [ "$STATUS" = 0 ] && grep -q "GPU 3 (GPU-3a90a60dbaf2e93f): chosen" <<<"$ERR_TEXT" &&
	grep -q "GPU 0 (GPU-b39adaf836600b31): load 97%" <<<"$ERR_TEXT"; then
	ok "--explain covers AMD GPUs"
else
	not_ok "--explain covers AMD GPUs" "$ERR_TEXT"
fi
