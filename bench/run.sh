#!/usr/bin/env bash
# run.sh: gpurun's own cost, measured in one run on the fake machines, written to
# bench/RESULTS.md. Every figure is a ratio against a baseline measured in the same run, or a
# median of many; nothing here is a pass/fail test.
set -eu
cd "$(dirname "$0")/.."
B=build
RUNS=${RUNS:-300}
export GPURUN_NVML_LIB=$PWD/$B/fakes/libnvidia-ml.so.1
export GPURUN_NVIDIA_SMI=$PWD/$B/fakes/nvidia-smi
GPURUN_LOCK_DIR=$(mktemp -d /tmp/gpurun-bench.XXXXXX)
export GPURUN_LOCK_DIR
trap 'rm -rf "$GPURUN_LOCK_DIR"' EXIT
unset CUDA_VISIBLE_DEVICES GPURUN_OPTIONS LD_PRELOAD
F=tests/fixtures
out=bench/RESULTS.md
median() { cut -d' ' -f1; }

export GPURUN_FAKE_FIXTURE=$PWD/$F/eight.fixture
mapfile -t launch < <($B/bench/spawn_bench "$RUNS" /bin/true :: $B/gpurun --no-lease -- /bin/true \
	:: $B/gpurun -- /bin/true :: $B/gpurun --source nvidia-smi -- /bin/true | median)

declare -A look
for n in 1 8 64 1024; do
	export GPURUN_FAKE_FIXTURE=$PWD/$F/scale-$n.fixture
	look[$n]=$($B/bench/snapshot_bench 200)
done
export GPURUN_FAKE_FIXTURE=$PWD/$F/eight.fixture
look_smi=$($B/bench/snapshot_bench 50 smi)

# 200 jobs of 50 ms through `gpurun --wait` on 8 GPUs: the ideal is 200 × 50 ms / 8.
export GPURUN_FAKE_FIXTURE=$PWD/$F/scale-8.fixture
start=$EPOCHREALTIME
for i in $(seq 200); do
	$B/gpurun --wait --limit 1 $B/helpers/record_job "$GPURUN_LOCK_DIR/jobs.log" 50 &
done
wait
throughput_s=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
us() { awk -v a="$1" 'BEGIN { printf "%.0f µs", a }'; }
ms() { awk -v a="$1" 'BEGIN { printf "%.2f ms", a / 1000 }'; }
added_nvml=$(awk -v a="${launch[2]}" -v b="${launch[0]}" 'BEGIN { printf "%.0f", a - b }')
{
	echo "# gpurun benchmark results"
	echo
	echo "Measured by \`make bench\` on $(date -u +%Y-%m-%d), $(nproc) CPU(s): $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo),"
	echo "$(uname -sr), against the fake NVML library and fake nvidia-smi (tests/fakes). Medians of $RUNS"
	echo "runs, interleaved; ratios are against the baseline of the same run."
	echo
	echo "## Launching a program (fake 8-GPU machine)"
	echo
	echo "| command | median | ratio to /bin/true |"
	echo "|---|---|---|"
	echo "| \`/bin/true\` | $(us "${launch[0]}") | 1.00 |"
	echo "| \`gpurun --no-lease -- /bin/true\` (NVML) | $(us "${launch[1]}") | $(ratio "${launch[1]}" "${launch[0]}") |"
	echo "| \`gpurun -- /bin/true\` (NVML, with lease) | $(us "${launch[2]}") | $(ratio "${launch[2]}" "${launch[0]}") |"
	echo "| \`gpurun --source nvidia-smi -- /bin/true\` | $(us "${launch[3]}") | $(ratio "${launch[3]}" "${launch[0]}") |"
	echo
	echo "gpurun's added cost on the NVML path, with its lease: **$(us "$added_nvml")** (goal: ≤ 1 ms)."
	echo
	echo "## One look: probe + mask + select, in the library"
	echo
	echo "| GPUs | median | per GPU |"
	echo "|---|---|---|"
	for n in 1 8 64 1024; do
		echo "| $n | $(us "${look[$n]}") | $(awk -v a="${look[$n]}" -v n="$n" 'BEGIN { printf "%.2f µs", a / n }') |"
	done
	echo "| 8 (nvidia-smi) | $(us "$look_smi") | ratio to NVML: $(ratio "$look_smi" "${look[8]}") |"
	echo
	echo "## Throughput of leases: 200 jobs of 50 ms through \`gpurun --wait\` on 8 GPUs"
	echo
	echo "Wall time $throughput_s s; ideal 200 × 50 ms / 8 = 1.25 s; ratio ideal/actual:"
	echo "**$(awk -v t="$throughput_s" 'BEGIN { printf "%.2f", 1.25 / t }')** (goal ≥ 0.8)."
} >"$out"
cat "$out"
