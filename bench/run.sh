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
# env(1) is the cheapest wrapper that execs a program: two execs and nothing else. What gpurun
# costs beyond it is gpurun's own work.
mapfile -t launch < <($B/bench/spawn_bench "$RUNS" /bin/true :: $B/gpurun --no-lease -- /bin/true \
	:: $B/gpurun -- /bin/true :: $B/gpurun --source nvidia-smi -- /bin/true :: env /bin/true | median)

declare -A look
for n in 1 8 64 1024; do
	export GPURUN_FAKE_FIXTURE=$PWD/$F/scale-$n.fixture
	look[$n]=$($B/bench/snapshot_bench 200)
done
export GPURUN_FAKE_FIXTURE=$PWD/$F/eight.fixture
look_smi=$($B/bench/snapshot_bench 50 smi)

# 200 jobs of 50 ms through `gpurun --wait` on 8 idle GPUs, all started at once: the ideal is
# 200 × 50 ms / 8.
export GPURUN_FAKE_FIXTURE=$PWD/$F/idle-8.fixture
throughput_s=$($B/bench/burst 200 $B/gpurun --wait --limit 1 $B/helpers/record_job \
	"$GPURUN_LOCK_DIR/jobs.log" 50)
# The hand-off: 64 jobs of 0 ms through `gpurun --wait` on one GPU, one after another; the time
# from one job's start to the next is a lease released, a waiter woken, a look, an exec.
printf 'gpu\n' >"$GPURUN_LOCK_DIR/one.fixture"
GPURUN_FAKE_FIXTURE=$GPURUN_LOCK_DIR/one.fixture $B/bench/burst 64 $B/gpurun --wait --limit 1 \
	$B/helpers/record_job "$GPURUN_LOCK_DIR/handoff.log" 0 >/dev/null
handoff_us=$(sort -n "$GPURUN_LOCK_DIR/handoff.log" | awk '{ if (NR > 1) print ($1 - last) / 1000; last = $1 }' |
	sort -n | awk '{ v[NR] = $1 } END { printf "%.0f", v[int((NR + 1) / 2)] }')
# What starting that many processes costs on this machine, whoever schedules them: 200 jobs of
# 0 ms, and 200 gpurun that only print their version.
spawn_jobs_s=$($B/bench/burst 200 $B/helpers/record_job "$GPURUN_LOCK_DIR/spawn.log" 0)
spawn_gpurun_s=$($B/bench/burst 200 $B/gpurun --version | tail -n 1)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
us() { awk -v a="$1" 'BEGIN { printf "%.0f µs", a }'; }
ms() { awk -v a="$1" 'BEGIN { printf "%.2f ms", a / 1000 }'; }
added_nvml=$(awk -v a="${launch[2]}" -v b="${launch[0]}" 'BEGIN { printf "%.0f", a - b }')
own_nvml=$(awk -v a="${launch[2]}" -v b="${launch[4]}" 'BEGIN { printf "%.0f", a - b }')
extra_exec=$(awk -v a="${launch[4]}" -v b="${launch[0]}" 'BEGIN { printf "%.0f", a - b }')
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
	echo "| \`env /bin/true\` (a wrapper that only execs) | $(us "${launch[4]}") | $(ratio "${launch[4]}" "${launch[0]}") |"
	echo "| \`gpurun --no-lease -- /bin/true\` (NVML) | $(us "${launch[1]}") | $(ratio "${launch[1]}" "${launch[0]}") |"
	echo "| \`gpurun -- /bin/true\` (NVML, with lease) | $(us "${launch[2]}") | $(ratio "${launch[2]}" "${launch[0]}") |"
	echo "| \`gpurun --source nvidia-smi -- /bin/true\` | $(us "${launch[3]}") | $(ratio "${launch[3]}" "${launch[0]}") |"
	echo
	echo "gpurun's added cost on the NVML path, with its lease: **$(us "$added_nvml")** over \`/bin/true\`,"
	echo "of which one extra exec (what \`env\` costs) is $(us "$extra_exec") on this machine and gpurun's own"
	echo "work (start, probe, select, lease) is **$(us "$own_nvml")** (goal: the total within about one extra"
	echo "exec, ≤ 1 ms where an exec costs that)."
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
	echo
	echo "The ideal counts no process creation. On this machine, in the same run, merely starting"
	echo "200 jobs of 0 ms takes $spawn_jobs_s s and starting 200 \`gpurun --version\` takes"
	echo "$spawn_gpurun_s s: the ratio against the ideal plus those two floors is"
	echo "**$(awk -v t="$throughput_s" -v a="$spawn_jobs_s" -v b="$spawn_gpurun_s" 'BEGIN { printf "%.2f", (1.25 + a + b) / t }')**."
	echo
	echo "One hand-off (a lease released, the next waiter woken, its look, the exec of its job),"
	echo "median over 64 jobs of 0 ms queued on one GPU: **$(us "$handoff_us")**."
} >"$out"

# The preload library: its cost on a program that never starts CUDA (goal: within noise), and
# what a lazy choice adds to cuInit in a program linked against the (fake) driver.
PRELOAD=$PWD/$B/libgpurun-preload.so
mapfile -t untouched < <($B/bench/spawn_bench "$RUNS" env /bin/true \
	:: env LD_PRELOAD="$PRELOAD" /bin/true :: env LD_PRELOAD="$PRELOAD" GPURUN_OPTIONS=--lazy /bin/true)
export GPURUN_FAKE_FIXTURE=$PWD/$F/eight.fixture
: >"$GPURUN_LOCK_DIR/cuinit.plain"
: >"$GPURUN_LOCK_DIR/cuinit.lazy"
for i in $(seq "$RUNS"); do
	LD_LIBRARY_PATH=$B/fakes $B/helpers/preload_direct --time >>"$GPURUN_LOCK_DIR/cuinit.plain"
	LD_LIBRARY_PATH=$B/fakes LD_PRELOAD=$PRELOAD GPURUN_OPTIONS=--lazy $B/helpers/preload_direct --time \
		>>"$GPURUN_LOCK_DIR/cuinit.lazy"
done
median_us() { cut -d= -f2 "$1" | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] / 1000 }'; }
cuinit_plain=$(median_us "$GPURUN_LOCK_DIR/cuinit.plain")
cuinit_lazy=$(median_us "$GPURUN_LOCK_DIR/cuinit.lazy")
spread() { awk '{ printf "%.0f–%.0f µs", $2, $3 }' <<<"$1"; }
{
	echo
	echo "## The preload library"
	echo
	echo "A program that never starts CUDA (\`/bin/true\`, through \`env\` in every row so that"
	echo "only the library differs):"
	echo
	echo "| command | median | p10–p90 | ratio |"
	echo "|---|---|---|---|"
	echo "| \`env /bin/true\` | $(us "$(median <<<"${untouched[0]}")") | $(spread "${untouched[0]}") | 1.00 |"
	echo "| \`env LD_PRELOAD=libgpurun-preload.so /bin/true\` (no GPURUN_OPTIONS) | $(us "$(median <<<"${untouched[1]}")") | $(spread "${untouched[1]}") | $(ratio "$(median <<<"${untouched[1]}")" "$(median <<<"${untouched[0]}")") |"
	echo "| \`env LD_PRELOAD=libgpurun-preload.so GPURUN_OPTIONS=--lazy /bin/true\` | $(us "$(median <<<"${untouched[2]}")") | $(spread "${untouched[2]}") | $(ratio "$(median <<<"${untouched[2]}")" "$(median <<<"${untouched[0]}")") |"
	echo
	echo "cuInit in a program linked against the fake libcuda (8 GPUs), median of $RUNS runs: without"
	echo "the library $cuinit_plain µs; with it in lazy mode, which chooses and leases a GPU inside"
	echo "cuInit, $cuinit_lazy µs: the lazy choice adds **$(awk -v a="$cuinit_lazy" -v b="$cuinit_plain" 'BEGIN { printf "%.0f µs", a - b }')** to CUDA initialization."
} >>"$out"
# The hardening figures (fuzzing, fault injection) come from `make fuzz`, which writes them to
# bench/hardening.md: too long a run for a benchmark, so they are carried over as they are.
if [ -f bench/hardening.md ]; then
	{ echo; cat bench/hardening.md; } >>"$out"
fi
cat "$out"
